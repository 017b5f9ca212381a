//! The narration: plain text, a few lines per event, written as it happens (to
//! standard output for the command, into a string for tests), and a record of every
//! observation the adapter gave, so that a test can check the facts behind the words.

use std::fmt::Write as _;

use dispatch_core::{Error, ObjectObs, ObjectState, Provenance, Result};
use jiff::{SignedDuration, Timestamp};

use crate::table::provenance_name;

/// The indent of everything that follows an event's first line.
pub(crate) const INDENT: &str = "           ";

/// An observation the adapter gave, with the step of the story it answered.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The step, as the scenario names it (`preempted`, `released`, ...).
    pub step: &'static str,
    /// Which call reported it: `Watch`, `Find`.
    pub call: &'static str,
    /// What the adapter reported.
    pub obs: ObjectObs,
}

/// Where the story goes.
pub struct Narration {
    text: String,
    echo: bool,
    failed: Option<Error>,
    /// Every observation reported, in order.
    pub seen: Vec<Seen>,
}

impl Narration {
    /// A narration kept in memory only (tests read [`Narration::text`]).
    pub fn quiet() -> Narration {
        Narration { text: String::new(), echo: false, failed: None, seen: Vec::new() }
    }

    /// A narration also written to standard output as it happens.
    pub(crate) fn echoing() -> Narration {
        Narration { echo: true, ..Narration::quiet() }
    }

    /// Everything narrated so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The observations reported for `step`.
    pub fn at(&self, step: &str) -> Vec<&ObjectObs> {
        self.seen.iter().filter(|s| s.step == step).map(|s| &s.obs).collect()
    }

    /// Writes one line (or several, separated by newlines).
    pub(crate) fn line(&mut self, text: &str) {
        let start = self.text.len();
        self.text.push_str(text);
        self.text.push('\n');
        if self.echo
            && self.failed.is_none()
            && let Err(e) = crate::output::write_stdout(&self.text.as_bytes()[start..])
        {
            self.failed = Some(e);
        }
    }

    /// A scenario's title and what it shows.
    pub(crate) fn heading(&mut self, name: &str, about: &str) {
        let rule = "=".repeat(88);
        self.line(&format!("{rule}\nscenario {name}: {about}\n{rule}"));
    }

    /// The first line of an event: the virtual time, who acts, and what.
    pub(crate) fn event(&mut self, elapsed: SignedDuration, who: &str, what: &str) {
        self.line(&format!("\n[{}] {who}: {what}", clock(elapsed)));
    }

    /// A line under the current event.
    pub(crate) fn under(&mut self, text: &str) {
        self.line(&format!("{INDENT}{text}"));
    }

    /// Why this matters to the supervisor.
    pub(crate) fn note(&mut self, text: &str) {
        self.line(&format!("{INDENT}=> {text}"));
    }

    /// An observation, as `call` reported it for `step`.
    pub(crate) fn report(&mut self, step: &'static str, call: &'static str, obs: &ObjectObs) {
        let text = describe(call, obs);
        self.line(&text);
        self.seen.push(Seen { step, call, obs: obs.clone() });
    }

    /// Fails if writing to standard output failed.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }
}

/// `00:30:00`: the virtual time since the scenario's cluster started.
pub(crate) fn clock(elapsed: SignedDuration) -> String {
    let s = elapsed.as_secs().max(0);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The virtual time between `start` and `now`.
pub(crate) fn since(start: Timestamp, now: Timestamp) -> SignedDuration {
    now.duration_since(start)
}

/// How a state reads after the object's name.
fn state_phrase(state: ObjectState) -> String {
    match state {
        ObjectState::Ended => "has ended".to_owned(),
        other => format!("is {other}"),
    }
}

/// Who said so: `said by the scheduler`, `said by dispatch`.
fn said_by(provenance: Provenance, actor: Option<&str>) -> String {
    match (provenance, actor) {
        (Provenance::Actor, Some(actor)) => format!("said by {actor}"),
        (Provenance::Actor, None) => "said by an actor".to_owned(),
        (p, _) => format!("said by the {}", provenance_name(Some(p))),
    }
}

/// An observation in a few lines: object, state and flags; cause and execution; detail.
pub(crate) fn describe(call: &str, o: &ObjectObs) -> String {
    let mut head = format!(
        "{INDENT}{call}: {} {} (submission {}) {}",
        o.object.kind.name(),
        o.object.name,
        o.submission,
        state_phrase(o.state)
    );
    if let Some(k) = o.hold_instance {
        let _ = write!(head, " (hold instance {k})");
    }
    if o.admin_held {
        head.push_str(" by someone else");
    }
    if o.foreign {
        head.push_str(", foreign");
    }
    let mut cause = format!("cause {}", o.cause.kind);
    if let Some(p) = o.cause.provenance {
        let _ = write!(cause, ", {}", said_by(p, o.cause.actor.as_deref()));
    }
    if let Some(code) = o.cause.exit_code {
        let _ = write!(cause, ", exit code {code}");
    }
    let execution = match o.execution {
        Some(e) => format!(
            "execution {}+{} (admission A={}, JobSet restart J={})",
            e.admission, e.restart_attempt, e.admission, e.restart_attempt
        ),
        None => "no execution yet".to_owned(),
    };
    let pad = format!("{INDENT}{}", " ".repeat(call.len() + 2));
    let mut text = format!("{head}\n{pad}{cause}; {execution}");
    if !o.cause.detail.is_empty() {
        let _ = write!(text, "\n{pad}detail: {}", o.cause.detail);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_reads_hours_minutes_seconds() {
        assert_eq!(clock(SignedDuration::from_secs(0)), "00:00:00");
        assert_eq!(clock(SignedDuration::from_secs(30 * 60 + 5)), "00:30:05");
        assert_eq!(clock(SignedDuration::from_secs(2 * 3600 + 61)), "02:01:01");
    }
}
