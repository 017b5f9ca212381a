//! The table `classify`, `find`, `inspect` and `watch` print: one row per object with
//! KIND, NAME, SUB, STATE, CAUSE, PROVENANCE, EXEC (`A+J`), FLAGS, AGE and DETAIL
//! (`docs/classification.md#dispatch-kf-classify`). DETAIL is cut to the terminal's
//! width unless the format is `wide`; STATE is coloured on a terminal unless `NO_COLOR`
//! is set.

use std::ffi::OsStr;

use dispatch_core::{CauseKind, ObjectObs, ObjectState, Provenance};
use jiff::Timestamp;

/// How a table is laid out: the width DETAIL is cut to (none for `wide`), and whether
/// STATE is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The line width to fit, or `None` to show every DETAIL whole.
    pub(crate) width: Option<usize>,
    /// Whether to colour STATE with ANSI escapes.
    pub(crate) colour: bool,
    /// Whether a NAMESPACE column comes first, as `kubectl get -A` prints it.
    pub(crate) namespaces: bool,
}

impl Layout {
    /// The layout for standard output: `wide` shows the whole detail; colour only on a
    /// terminal and without `NO_COLOR`.
    pub(crate) fn stdout(wide: bool) -> Layout {
        use std::io::IsTerminal;
        let terminal = std::io::stdout().is_terminal();
        Layout {
            width: (!wide).then(terminal_width),
            colour: colour(terminal, std::env::var_os("NO_COLOR").as_deref()),
            namespaces: false,
        }
    }
}

/// Whether to colour: only on a terminal, and never when `NO_COLOR` is set to anything
/// but the empty string (<https://no-color.org>).
pub(crate) fn colour(terminal: bool, no_color: Option<&OsStr>) -> bool {
    terminal && no_color.is_none_or(OsStr::is_empty)
}

/// The ANSI colour of a state: green running, yellow waiting (pending, gated), cyan
/// held, red ended with a cause, green ended with nothing to explain.
fn state_colour(state: ObjectState, cause: CauseKind) -> &'static str {
    match state {
        ObjectState::Running => "32",
        ObjectState::Pending | ObjectState::Gated => "33",
        ObjectState::Held => "36",
        ObjectState::Ended if cause == CauseKind::None => "32",
        ObjectState::Ended => "31",
    }
}

/// How a provenance is written; `-` for none.
pub(crate) fn provenance_name(provenance: Option<Provenance>) -> &'static str {
    provenance.map_or("-", Provenance::name)
}

/// The column headers.
const HEADERS: [&str; 10] =
    ["KIND", "NAME", "SUB", "STATE", "CAUSE", "PROVENANCE", "EXEC", "FLAGS", "AGE", "DETAIL"];

/// The header of the column `-A` adds first.
const NAMESPACE_HEADER: &str = "NAMESPACE";

/// The width used when the terminal's is unknown.
const DEFAULT_WIDTH: usize = 120;

/// The narrowest DETAIL column a cut leaves.
const MIN_DETAIL: usize = 20;

/// The terminal's width: standard output's, else `COLUMNS`, else [`DEFAULT_WIDTH`].
pub(crate) fn terminal_width() -> usize {
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    let terminal = terminal_size::terminal_size().map(|(w, _)| usize::from(w.0));
    terminal.or(columns).unwrap_or(DEFAULT_WIDTH)
}

/// The widths of the columns before DETAIL, and of NAMESPACE when it is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Columns {
    widths: [usize; 9],
    namespace: usize,
}

impl Columns {
    /// As wide as the headers: a table printed whole fits its rows, and one printed a
    /// page at a time (`explain`) widens as its pages need, never back.
    pub(crate) fn fitted() -> Columns {
        let headers = HEADERS.map(str::len);
        Columns { widths: std::array::from_fn(|i| headers[i]), namespace: NAMESPACE_HEADER.len() }
    }

    /// For a stream of rows (`watch`): each column as wide as the widest value it can
    /// hold where that is known (every kind, state, cause and provenance, the longest
    /// name dispatch makes), so the columns stand still as rows come; a longer value
    /// (an orphan pod's name) widens its column from then on, never back.
    pub(crate) fn still() -> Columns {
        let widest = |names: &[&str]| names.iter().map(|n| n.len()).max().unwrap_or(0);
        let mut columns = Columns::fitted();
        let known = [
            (0, widest(&dispatch_core::ObjectKind::NAMES)),
            (1, dispatch_kf_model::names::LONGEST.len()),
            (3, widest(&ObjectState::NAMES)),
            (4, widest(&CauseKind::NAMES)),
            (5, widest(&Provenance::NAMES)),
        ];
        for (i, w) in known {
            columns.widths[i] = columns.widths[i].max(w);
        }
        columns
    }
}

/// The table of `observations`, laid out as `layout` says.
pub(crate) fn render(observations: &[ObjectObs], now: Timestamp, layout: Layout) -> String {
    render_in(observations, now, layout, &mut Columns::fitted())
}

/// [`render`] in `columns`, widened where a row needs it.
pub(crate) fn render_in(
    observations: &[ObjectObs],
    now: Timestamp,
    layout: Layout,
    columns: &mut Columns,
) -> String {
    let rows: Vec<[String; 10]> = observations.iter().map(|o| row(o, now)).collect();
    let colours: Vec<Option<&str>> = observations
        .iter()
        .map(|o| layout.colour.then(|| state_colour(o.state, o.cause.kind)))
        .collect();
    for r in &rows {
        for (w, cell) in columns.widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for o in observations {
        columns.namespace = columns.namespace.max(o.object.namespace.chars().count());
    }
    let (widths, namespace_width) = (&columns.widths, columns.namespace);
    let mut out = String::new();
    let header = HEADERS.map(str::to_owned);
    let lines = std::iter::once((&header, None)).chain(rows.iter().zip(colours));
    let namespaces: Vec<&str> = std::iter::once(NAMESPACE_HEADER)
        .chain(observations.iter().map(|o| o.object.namespace.as_str()))
        .collect();
    for ((r, colour), namespace) in lines.zip(namespaces) {
        let mut line = String::new();
        let mut visible = 0;
        if layout.namespaces {
            line.push_str(&format!("{namespace:<namespace_width$}  "));
            visible += namespace_width + 2;
        }
        for (i, cell) in r.iter().enumerate().take(9) {
            let pad = " ".repeat(widths[i] - cell.chars().count() + 2);
            match colour.filter(|_| i == 3) {
                Some(c) => line.push_str(&format!("\x1b[{c}m{cell}\x1b[0m{pad}")),
                None => line.push_str(&format!("{cell}{pad}")),
            }
            visible += widths[i] + 2;
        }
        let detail = match layout.width {
            Some(w) => cut(&r[9], w.saturating_sub(visible).max(MIN_DETAIL)),
            None => r[9].clone(),
        };
        line.push_str(&detail);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn row(o: &ObjectObs, now: Timestamp) -> [String; 10] {
    let provenance = provenance_name(o.cause.provenance);
    let exec =
        o.execution.map_or("-".to_owned(), |e| format!("{}+{}", e.admission, e.restart_attempt));
    let mut flags = Vec::new();
    if let Some(k) = o.hold_instance {
        flags.push(format!("held:{k}"));
    }
    if o.admin_held {
        flags.push("admin".to_owned());
    }
    if o.foreign {
        flags.push("foreign".to_owned());
    }
    let flags = if flags.is_empty() { "-".to_owned() } else { flags.join(",") };
    let age = o.cause.at.map_or("-".to_owned(), |at| age(now, at));
    let detail = if o.cause.detail.is_empty() { "-" } else { o.cause.detail.as_str() };
    [
        o.object.kind.name().to_owned(),
        printable(&o.object.name),
        o.submission.to_string(),
        o.state.to_string(),
        o.cause.kind.to_string(),
        provenance.to_owned(),
        exec,
        flags,
        age,
        printable(detail),
    ]
}

/// `text` with every control character written as an escape (`\x1b`, `\u{9b}`), as
/// kubectl prints what a workload wrote: a container's termination message reaches the
/// detail, and its escape sequences must not drive the reader's terminal.
fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if !c.is_control() => out.push(c),
            c if u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    out
}

/// `45s`, `12m`, `3h`, `2d`, as kubectl writes ages; `0s` for a time after `now`.
fn age(now: Timestamp, at: Timestamp) -> String {
    let secs = now.as_second().saturating_sub(at.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7_200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3_600),
        s => format!("{}d", s / 86_400),
    }
}

/// `text` in at most `max` characters, ending `...` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        assert_eq!(age(now, at("2026-11-29T11:59:15Z")), "45s");
        assert_eq!(age(now, at("2026-11-29T11:30:00Z")), "30m");
        assert_eq!(age(now, at("2026-11-29T09:00:00Z")), "3h");
        assert_eq!(age(now, at("2026-11-25T12:00:00Z")), "4d");
        assert_eq!(age(now, at("2026-11-29T12:00:10Z")), "0s");
    }

    #[test]
    fn control_characters_a_workload_wrote_are_printed_as_escapes() {
        let written = "exit 1 \u{1b}[2J\u{1b}]0;owned\u{7}\r\tdone \u{9b}31m héllo";
        let row = row(&observation(written), Timestamp::UNIX_EPOCH);
        assert_eq!(row[9], "exit 1 \\x1b[2J\\x1b]0;owned\\x07\\x0d\\x09done \\u{9b}31m héllo");
        let text = render(&[observation(written)], Timestamp::UNIX_EPOCH, Layout::stdout(true));
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    }

    #[test]
    fn detail_is_cut_with_an_ellipsis() {
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdefg", 6), "abc...");
    }

    fn observation(detail: &str) -> ObjectObs {
        serde_json::from_value(serde_json::json!({
            "object": {"backend": "kf", "kind": "TrainJob", "namespace": "training",
                       "name": "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1", "uid": "u"},
            "submission": 1, "state": "ended", "adminHeld": false, "holdInstance": null,
            "cause": {"kind": "out-of-memory", "provenance": "scheduler", "actor": null,
                      "detail": detail, "exitCode": 137, "at": null},
            "execution": {"admission": 1, "restartAttempt": 0, "index": 1},
            "foreign": false, "seenAt": "2026-11-29T12:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn rows_fit_the_width_by_cutting_detail_and_wide_shows_it_whole() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let detail = "pod dj-x-s1-node-0-1-2e83e: node exited 137: OOMKilled; ".repeat(4);
        let obs = [observation(&detail)];
        for width in [130, 140, 160] {
            let layout = Layout { width: Some(width), colour: false, namespaces: false };
            let text = render(&obs, now, layout);
            for line in text.lines() {
                assert!(line.chars().count() <= width, "{width}: {line}");
            }
            assert!(text.lines().nth(1).unwrap().ends_with("..."), "{text}");
        }
        let narrow =
            render(&obs, now, Layout { width: Some(10), colour: false, namespaces: false });
        let row = narrow.lines().nth(1).unwrap();
        assert!(row.ends_with("..."), "{narrow}");
        assert_eq!(row.split("  ").last().unwrap().chars().count(), MIN_DETAIL, "{narrow}");
        let wide = render(&obs, now, Layout { width: None, colour: false, namespaces: false });
        assert!(wide.lines().nth(1).unwrap().ends_with(detail.trim_end()), "{wide}");
    }

    #[test]
    fn colour_marks_only_the_state_and_keeps_columns_aligned() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let obs = [observation("d")];
        let plain = render(&obs, now, Layout { width: None, colour: false, namespaces: false });
        let coloured = render(&obs, now, Layout { width: None, colour: true, namespaces: false });
        assert!(!plain.contains('\x1b'));
        assert!(coloured.contains("\x1b[31mended\x1b[0m"), "{coloured}");
        assert_eq!(coloured.replace("\x1b[31m", "").replace("\x1b[0m", ""), plain);
    }

    #[test]
    fn every_namespace_puts_a_namespace_column_first_and_still_fits_the_width() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let mut other = observation(&"long detail ".repeat(20));
        other.object.namespace = "team-a-long-name".to_owned();
        let obs = [observation("d"), other];
        let layout = Layout { width: Some(140), colour: false, namespaces: true };
        let text = render(&obs, now, layout);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("NAMESPACE         KIND "), "{text}");
        assert!(lines[1].starts_with("training          TrainJob "), "{text}");
        assert!(lines[2].starts_with("team-a-long-name  TrainJob "), "{text}");
        assert!(lines.iter().all(|l| l.chars().count() <= 140), "{text}");
        let without = render(&obs, now, Layout { namespaces: false, ..layout });
        assert!(without.starts_with("KIND "), "{without}");
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        let set = |v: &str| Some(OsStr::new(v).to_owned());
        for (terminal, no_color, want) in [
            (true, None, true),
            (true, set(""), true),
            (true, set("1"), false),
            (false, None, false),
            (false, set("1"), false),
        ] {
            assert_eq!(colour(terminal, no_color.as_deref()), want, "{terminal} {no_color:?}");
        }
    }

    #[test]
    fn watch_columns_stand_still_whatever_the_row() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let layout = Layout { width: None, colour: false, namespaces: false };
        let mut columns = Columns::still();
        let still = columns.clone();
        let first = observation("first");
        let mut second = observation("second");
        second.object.kind = "TrainingRuntime".parse().unwrap();
        second.cause.kind = "node-lost".parse().unwrap();
        second.state = "pending".parse().unwrap();
        let a = render_in(&[first], now, layout, &mut columns);
        let b = render_in(&[second], now, layout, &mut columns);
        assert_eq!(columns, still, "no value a kind, state or cause takes widens a column");
        let at = |text: &str, word: &str| text.lines().nth(1).unwrap().find(word).unwrap();
        assert_eq!(at(&a, "first"), at(&b, "second"), "DETAIL starts in the same place:\n{a}{b}");
        let fitted = render(&[observation("first")], now, layout);
        assert!(fitted.lines().nth(1).unwrap().find("first") < Some(at(&a, "first")));
    }
}
