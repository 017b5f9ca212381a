//! Invariants of classification, over arbitrary and mutated input
//! (`docs/classification.md#order-and-robustness`): no input makes the reader or the
//! classifier panic, the same input gives the same observations, the winning finding does
//! not depend on the order of pods or conditions, removing a label never makes an object
//! foreign, and whitespace around a message changes no cause kind (refinement R7).

mod conventions;

use std::sync::OnceLock;

use dispatch_kf_model::{ClassifyOptions, Detail, Mode, classify, dump};
use jiff::Timestamp;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn now() -> Timestamp {
    "2026-11-29T12:00:00Z".parse().unwrap()
}

fn options(kueue: bool, nodes_readable: bool) -> ClassifyOptions {
    ClassifyOptions {
        mode: if kueue { Mode::Kueue } else { Mode::Plain },
        nodes_readable,
        backend: "kf".to_owned(),
        detail: Detail::WithNotes,
    }
}

/// Every committed dump, parsed.
fn fixtures() -> &'static [(String, Value)] {
    static CELL: OnceLock<Vec<(String, Value)>> = OnceLock::new();
    CELL.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps");
        let mut out: Vec<(String, Value)> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    })
}

/// The options a fixture's name asks for (`conventions::options_for`).
fn options_of(name: &str, v: &Value) -> ClassifyOptions {
    let snapshot = dump::read(name, &serde_json::to_vec(v).unwrap()).unwrap();
    conventions::options_for(name, &snapshot)
}

/// Reads and classifies `v` twice; both must agree. `None` when the reader refuses.
fn run(v: &Value, options: &ClassifyOptions) -> Option<Vec<dispatch_core::ObjectObs>> {
    let bytes = serde_json::to_vec(v).unwrap();
    let first = dump::read("p.json", &bytes).ok().map(|s| classify(&s, options, now()));
    let second = dump::read("p.json", &bytes).ok().map(|s| classify(&s, options, now()));
    assert_eq!(first, second, "classification is not deterministic");
    first
}

const KEYS: &[&str] = &[
    "kind",
    "apiVersion",
    "metadata",
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "deletionTimestamp",
    "managedFields",
    "manager",
    "time",
    "fieldsV1",
    "f:spec",
    "f:suspend",
    "f:active",
    "spec",
    "suspend",
    "managedBy",
    "runtimeRef",
    "active",
    "nodeName",
    "taints",
    "key",
    "timeAdded",
    "status",
    "conditions",
    "type",
    "reason",
    "message",
    "lastTransitionTime",
    "phase",
    "containerStatuses",
    "state",
    "lastState",
    "terminated",
    "waiting",
    "exitCode",
    "finishedAt",
    "admissionChecks",
    "items",
    "capturedPods",
];

const STRINGS: &[&str] = &[
    "True",
    "False",
    "Unknown",
    "TrainJob",
    "JobSet",
    "Workload",
    "Pod",
    "Node",
    "TrainingRuntime",
    "List",
    "node",
    "Failed",
    "Complete",
    "Suspended",
    "DisruptionTarget",
    "FailedJobs",
    "OOMKilled",
    "Evicted",
    "Preempted",
    "Admitted",
    "QuotaReserved",
    "0",
    "1",
    "02",
    "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1",
    "2026-11-29T10:00:00Z",
    "not a time",
    "",
    "dispatch.phpboyscout.uk/job-id",
    "jobset.sigs.k8s.io/jobset-name",
    "Ready",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-300i64..300).prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(STRINGS).prop_map(|s| json!(s)),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

/// JSON shaped like Kubernetes objects: the keys classification reads, any values.
fn shaped() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())
            }),
        ]
    })
}

/// A List of shaped items.
fn shaped_list() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(&STRINGS[3..10]), shaped()), 0..8).prop_map(|items| {
        let items: Vec<Value> = items
            .into_iter()
            .map(|(kind, mut v)| {
                if let Value::Object(m) = &mut v {
                    m.insert("kind".into(), json!(kind));
                    m.insert("apiVersion".into(), json!("v1"));
                }
                v
            })
            .collect();
        json!({"apiVersion": "v1", "kind": "List", "items": items.clone(), "capturedPods": items})
    })
}

/// Replaces the value at a random path of `v` (picked by `picks`) with `new`, or removes it.
fn mutate(v: &mut Value, picks: &[usize], new: Value, delete: bool) {
    let mut cur = v;
    for (depth, pick) in picks.iter().enumerate() {
        let last = depth + 1 == picks.len();
        let container = match &*cur {
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty(),
            _ => false,
        };
        if !container {
            *cur = new;
            return;
        }
        let next = match cur {
            Value::Object(m) if !m.is_empty() => {
                let key = m.keys().nth(pick % m.len()).unwrap().clone();
                if last || m[&key].is_null() || !(m[&key].is_object() || m[&key].is_array()) {
                    if delete {
                        m.remove(&key);
                    } else {
                        m.insert(key, new);
                    }
                    return;
                }
                m.get_mut(&key).unwrap()
            }
            Value::Array(a) if !a.is_empty() => {
                let i = pick % a.len();
                if last || !(a[i].is_object() || a[i].is_array()) {
                    if delete {
                        a.remove(i);
                    } else {
                        a[i] = new;
                    }
                    return;
                }
                &mut a[i]
            }
            _ => return,
        };
        cur = next;
    }
}

/// Rewrites every string `message` of `v`, at any depth, with `edit` (its index among
/// the messages, the message).
fn edit_messages(v: &mut Value, edit: &mut impl FnMut(usize, &str) -> String, seen: &mut usize) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if let (true, Value::String(text)) = (k == "message", &*child) {
                    *child = Value::String(edit(*seen, text));
                    *seen += 1;
                } else {
                    edit_messages(child, edit, seen);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| edit_messages(c, edit, seen)),
        _ => {}
    }
}

/// Each object's cause kind, in order.
fn cause_kinds(
    v: &Value,
    opts: &ClassifyOptions,
) -> Vec<(dispatch_core::ObjectRef, dispatch_core::CauseKind)> {
    run(v, opts).unwrap().into_iter().map(|o| (o.object, o.cause.kind)).collect()
}

fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut s = seed | 1;
    for i in (1..items.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        items.swap(i, (s % (i as u64 + 1)) as usize);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_shaped_json_never_panics_and_is_deterministic(
        v in shaped_list(), kueue: bool, nodes: bool
    ) {
        run(&v, &options(kueue, nodes));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_reader(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = dump::read("b.json", &bytes);
    }

    #[test]
    fn mutated_fixtures_never_panic_and_are_deterministic(
        which: prop::sample::Index,
        edits in prop::collection::vec(
            (prop::collection::vec(any::<usize>(), 1..9), leaf(), any::<bool>()), 1..6),
        kueue: bool,
        nodes: bool,
    ) {
        let all = fixtures();
        let mut v = all[which.index(all.len())].1.clone();
        for (picks, new, delete) in edits {
            mutate(&mut v, &picks, new, delete);
        }
        run(&v, &options(kueue, nodes));
    }

    #[test]
    fn winning_finding_does_not_depend_on_the_order_of_pods_or_conditions(
        which: prop::sample::Index, seed: u64
    ) {
        let all = fixtures();
        let (name, original) = &all[which.index(all.len())];
        let opts = options_of(name, original);
        let mut v = original.clone();
        for list in ["items", "capturedPods"] {
            if let Some(Value::Array(items)) = v.get_mut(list) {
                shuffle(items, seed);
                for item in items.iter_mut() {
                    if let Some(Value::Array(c)) = item.pointer_mut("/status/conditions") {
                        shuffle(c, seed.rotate_left(7));
                    }
                }
            }
        }
        prop_assert_eq!(run(&v, &opts), run(original, &opts), "{}", name);
    }

    /// Refinement R7: condition and container messages are trimmed before they are read,
    /// so whitespace around any of them, added or taken away, changes no cause kind.
    #[test]
    fn trimming_or_padding_messages_changes_no_cause_kind(
        which: prop::sample::Index,
        pads in prop::collection::vec(("[ \t\r\n]{0,3}", "[ \t\r\n]{0,3}"), 1..16),
    ) {
        let all = fixtures();
        let (name, original) = &all[which.index(all.len())];
        let opts = options_of(name, original);
        let kinds = cause_kinds(original, &opts);
        let mut padded = original.clone();
        edit_messages(
            &mut padded,
            &mut |i, m| {
                let (left, right) = &pads[i % pads.len()];
                format!("{left}{m}{right}")
            },
            &mut 0,
        );
        prop_assert_eq!(&cause_kinds(&padded, &opts), &kinds, "{} padded", name);
        let mut trimmed = original.clone();
        edit_messages(&mut trimmed, &mut |_, m| m.trim().to_owned(), &mut 0);
        prop_assert_eq!(&cause_kinds(&trimmed, &opts), &kinds, "{} trimmed", name);
    }

}

/// Every label of every object of every fixture, removed one at a time: none makes an
/// object foreign that was not (a removed label contradicts nothing). Exhaustive rather
/// than sampled, so a failure cannot hide from one run and show in the next.
#[test]
fn removing_a_label_never_makes_an_object_foreign() {
    for (name, original) in fixtures() {
        let opts = options_of(name, original);
        let before = run(original, &opts).unwrap();
        let count = original["items"].as_array().map_or(0, Vec::len);
        for i in 0..count {
            let keys: Vec<String> = original["items"][i]["metadata"]["labels"]
                .as_object()
                .map(|l| l.keys().cloned().collect())
                .unwrap_or_default();
            for key in keys {
                let mut v = original.clone();
                if let Some(Value::Object(labels)) = v["items"][i].pointer_mut("/metadata/labels") {
                    labels.remove(&key);
                }
                for obs in run(&v, &opts).unwrap() {
                    let earlier = before.iter().find(|b| b.object == obs.object);
                    assert!(
                        !obs.foreign || earlier.is_some_and(|b| b.foreign),
                        "{name}: removing {key} made {:?} foreign: {}",
                        obs.object,
                        obs.cause.detail
                    );
                }
            }
        }
    }
}
