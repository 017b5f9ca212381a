//! How a dump's file name says to classify it, shared by the snapshot test and the
//! properties: a name starting `kueue-` is classified in Kueue mode; one ending
//! `-no-nodes.json` without permission to read Nodes. A hand-made dump of real objects,
//! `real-*.json`, is classified as `dispatch-kf classify` classifies it with no flag but
//! `--mode`: the rest of its name starts `kueue-` for Kueue mode, and Nodes count as
//! readable only when it holds one (refinement R6, `dump::nodes_readable_by_default`).
//! A dump the real control plane printed, `cluster-<stack>-<scenario>.json` (`cargo
//! xtask fixtures cluster --stack NAME`), is read the same way, its scenario's name
//! taken for the rest.

use dispatch_kf_model::{ClassifyOptions, Detail, Mode, Snapshot, dump};

/// The stack and the scenario of a dump the real control plane printed
/// (`cluster-<stack>-<scenario>.json`; a stack's name has no `-`).
#[allow(dead_code, reason = "each test binary includes this module; not all use this")]
pub(crate) fn cluster_dump(file: &str) -> Option<(&str, &str)> {
    file.strip_prefix("cluster-")?.strip_suffix(".json")?.split_once('-')
}

/// The options a dump's file name (and, for a real dump, its content) asks for.
pub(crate) fn options_for(file: &str, snapshot: &Snapshot) -> ClassifyOptions {
    let as_printed =
        file.strip_prefix("real-").or_else(|| cluster_dump(file).map(|(_, scenario)| scenario));
    let (name, nodes_readable) = match as_printed {
        Some(rest) => (rest, dump::nodes_readable_by_default(snapshot)),
        None => (file, !file.ends_with("-no-nodes.json")),
    };
    ClassifyOptions {
        mode: if name.starts_with("kueue-") { Mode::Kueue } else { Mode::Plain },
        nodes_readable,
        backend: "kf".to_owned(),
        detail: Detail::WithNotes,
    }
}
