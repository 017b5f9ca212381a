//! How the detail is written: a condition's words, one-line messages, lists of pods,
//! and the `; ` that joins the parts (`docs/classification.md`).

use crate::lenient::Str;
use crate::object::Condition;

/// The most characters of a container's message the detail keeps.
pub(crate) const MESSAGE_MAX_CHARS: usize = 256;

/// The most pods a note names before `and <k> more`.
pub(crate) const POD_LIST_MAX: usize = 8;

/// What joins the parts of a detail.
pub(crate) const JOIN: &str = "; ";

/// Refinement R7 (`docs/classification.md#refinements-from-real-clusters`): a reason or
/// message as real objects print it may start or end with spaces or line breaks (the
/// kubelet's eviction message ends with a space); every reason and message is trimmed at
/// both ends before it is tested or joined, so the detail never carries them.
pub(crate) fn trimmed(text: &str) -> &str {
    text.trim()
}

/// A condition's words: `<reason>: <message>`, the reason alone when the message is
/// empty, the message alone when the reason is.
pub(crate) fn words<S: Str>(condition: &Condition<S>) -> String {
    words_of(condition.reason.or_empty(), condition.message.or_empty())
}

/// `<reason>: <message>`, each [`trimmed`], dropping whichever is empty.
pub(crate) fn words_of(reason: &str, message: &str) -> String {
    let (reason, message) = (trimmed(reason), trimmed(message));
    match (reason.is_empty(), message.is_empty()) {
        (_, true) => reason.to_owned(),
        (true, false) => message.to_owned(),
        (false, false) => format!("{reason}: {message}"),
    }
}

/// `<prefix>: <words>`, or the prefix alone when there are no words.
pub(crate) fn with_words(prefix: &str, words: &str) -> String {
    if words.is_empty() { prefix.to_owned() } else { format!("{prefix}: {words}") }
}

/// `Workload <name> <what>: <words of c>`, as Kueue rows write a Workload's condition.
pub(crate) fn workload_words<S: Str>(workload: &str, what: &str, c: &Condition<S>) -> String {
    with_words(&format!("Workload {workload} {what}"), &words(c))
}

/// A message on one line: line breaks become spaces, and past [`MESSAGE_MAX_CHARS`]
/// characters it is cut and ends with `...`.
pub(crate) fn one_line(message: &str) -> String {
    let mut out: String = message
        .chars()
        .take(MESSAGE_MAX_CHARS)
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if message.chars().nth(MESSAGE_MAX_CHARS).is_some() {
        out.push_str("...");
    }
    out
}

/// Names sorted, at most [`POD_LIST_MAX`] of them, then `and <k> more`.
pub(crate) fn name_list(mut names: Vec<&str>) -> String {
    names.sort_unstable();
    names.dedup();
    let shown = names.len().min(POD_LIST_MAX);
    let mut out = names[..shown].join(", ");
    if names.len() > shown {
        out.push_str(&format!(" and {} more", names.len() - shown));
    }
    out
}

/// One note per pod, in pod-name order, at most [`POD_LIST_MAX`], then `and <k> more`.
pub(crate) fn per_pod_notes(mut notes: Vec<(&str, String)>, out: &mut Vec<String>) {
    notes.sort_by(|a, b| a.0.cmp(b.0).then_with(|| a.1.cmp(&b.1)));
    let total = notes.len();
    out.extend(notes.into_iter().take(POD_LIST_MAX).map(|(_, n)| n));
    if total > POD_LIST_MAX {
        out.push(format!("and {} more", total - POD_LIST_MAX));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_drop_an_empty_part() {
        assert_eq!(words_of("Preempted", ""), "Preempted");
        assert_eq!(words_of(" Preempted\n", " \t"), "Preempted");
        assert_eq!(words_of("", " lost \n"), "lost");
        assert_eq!(words_of("", "lost"), "lost");
        assert_eq!(words_of("A", "b c"), "A: b c");
    }

    #[test]
    fn messages_become_one_line_cut_at_256_characters() {
        assert_eq!(one_line("a\nb\r\nc"), "a b  c");
        let long = "é".repeat(300);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), MESSAGE_MAX_CHARS + 3);
        assert!(cut.ends_with("é..."));
        assert_eq!(one_line(&"x".repeat(256)), "x".repeat(256));
    }

    #[test]
    fn pod_lists_name_at_most_eight_sorted() {
        let names: Vec<String> = (0..11).rev().map(|i| format!("p{i:02}")).collect();
        let list = name_list(names.iter().map(String::as_str).collect());
        assert_eq!(list, "p00, p01, p02, p03, p04, p05, p06, p07 and 3 more");
    }
}
