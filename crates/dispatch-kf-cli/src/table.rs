//! The table `classify` (and later `find` and `watch`) prints: one row per object with
//! KIND, NAME, SUB, STATE, CAUSE, PROVENANCE, EXEC (`A+J`), FLAGS, AGE and DETAIL
//! (spec/cli.md "Output"). DETAIL is cut to the terminal's width unless the format is
//! `wide`.

use dispatch_core::{ObjectObs, Provenance};
use jiff::Timestamp;

/// The column headers.
const HEADERS: [&str; 10] =
    ["KIND", "NAME", "SUB", "STATE", "CAUSE", "PROVENANCE", "EXEC", "FLAGS", "AGE", "DETAIL"];

/// The width used when the terminal's is unknown.
const DEFAULT_WIDTH: usize = 120;

/// The narrowest DETAIL column a cut leaves.
const MIN_DETAIL: usize = 20;

/// The terminal's width, from `COLUMNS`, else [`DEFAULT_WIDTH`].
pub(crate) fn terminal_width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(DEFAULT_WIDTH)
}

/// The table of `observations`; with `width`, each line's DETAIL is cut to fit it.
pub(crate) fn render(observations: &[ObjectObs], now: Timestamp, width: Option<usize>) -> String {
    let rows: Vec<[String; 10]> = observations.iter().map(|o| row(o, now)).collect();
    let mut widths = HEADERS.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r.iter()).take(9) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = HEADERS.map(str::to_owned);
    for r in std::iter::once(&header).chain(rows.iter()) {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate().take(9) {
            line.push_str(cell);
            line.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
        }
        let detail = match width {
            Some(w) => cut(&r[9], w.saturating_sub(line.chars().count()).max(MIN_DETAIL)),
            None => r[9].clone(),
        };
        line.push_str(&detail);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn row(o: &ObjectObs, now: Timestamp) -> [String; 10] {
    let provenance = match o.cause.provenance {
        Some(Provenance::Scheduler) => "scheduler",
        Some(Provenance::Application) => "application",
        Some(Provenance::Actor) => "actor",
        None => "-",
    };
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
    let detail = if o.cause.detail.is_empty() { "-".to_owned() } else { o.cause.detail.clone() };
    [
        o.object.kind.name().to_owned(),
        o.object.name.clone(),
        o.submission.to_string(),
        o.state.to_string(),
        o.cause.kind.to_string(),
        provenance.to_owned(),
        exec,
        flags,
        age,
        detail,
    ]
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
    fn detail_is_cut_with_an_ellipsis() {
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdefg", 6), "abc...");
    }
}
