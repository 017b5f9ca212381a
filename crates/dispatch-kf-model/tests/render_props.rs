//! Properties of render: it reads back with no difference for any valid request; it
//! refuses exactly what the tables of `docs/render.md` refuse, with the sentinel they
//! give; every validation problem injected into a request is reported; and the settings
//! and request readers refuse a mutated document with `Invalid`, never a panic.

use std::collections::BTreeMap;

use dispatch_core::{JobId, JobSpec, Kind, StartRequest, Timespan};
use dispatch_kf_model::internal::readback;
use dispatch_kf_model::{
    Mode, Purpose, Settings, SourceRuntime, TokenSuffix, read_request, render,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn settings(mode: Mode) -> Settings {
    let mut doc = json!({"name": "kf", "namespace": "training",
        "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}]});
    if mode == Mode::Kueue {
        doc["mode"] = json!("kueue");
        doc["kueue"] = json!({"queue": "team-a"});
    }
    Settings::from_value(&doc).unwrap()
}

fn runtime(torch: bool) -> SourceRuntime {
    let policy = if torch { json!({"torch": {}}) } else { json!({"mpi": {}}) };
    SourceRuntime::from_value(&json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch-distributed"},
        "spec": {"mlPolicy": policy, "template": {"spec": {"replicatedJobs": [{"name": "node",
            "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "node"}]}}}}}]}}}}))
    .unwrap()
}

fn extensions() -> BTreeMap<String, Value> {
    BTreeMap::from([
        ("dispatch/Image".to_owned(), json!({"ref": "ghcr.io/acme/train:1.4"})),
        (
            "kubeflow/RuntimeRef".to_owned(),
            json!({"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}),
        ),
    ])
}

fn suffix() -> TokenSuffix {
    TokenSuffix::parse("0123456789abcdef").unwrap()
}

prop_compose! {
    fn job_id()(s in "[0-7][0-9A-HJKMNP-TV-Z]{25}") -> JobId { JobId::parse(&s).unwrap() }
}

prop_compose! {
    /// A request every table accepts.
    fn valid_request()(
        job in job_id(),
        generation in 0..=18_000_000i64,
        submission in 1..=999_999i64,
        attempt in 0..=1_000_000i64,
        command in prop::collection::vec("[ -~]{0,12}", 1..=124),
        env in prop::collection::btree_map("[A-Z_][A-Z0-9_]{0,8}", "[ -~]{0,8}", 0..=121),
        work_dir in prop::option::of("/[a-z/ ]{0,12}"),
        nodes in 1..=10_000i64,
        gpus in 0..=16i64,
        procs in 0..=16i64,
        limit in prop::option::of(0..=10_000_000_000_000i64),
    ) -> StartRequest {
        let env = env.into_iter().filter(|(k, _)| !k.starts_with("DISPATCH_")).collect();
        StartRequest { job, generation, submission, attempt, native: Vec::new(), spec: JobSpec {
            command, env, work_dir, nodes, gpus_per_node: gpus, procs_per_node: procs,
            time_limit: limit.map(Timespan::from_nanos), extensions: extensions(), ..JobSpec::default()
        }}
    }
}

/// What the apiserver may add to a TrainJob without it having changed.
fn as_held(written: &Value) -> Value {
    let mut held = written.clone();
    held["metadata"]["labels"]["example.com/added"] = json!("by someone else");
    held["spec"]["managedBy"] = json!("trainer.kubeflow.org/trainjob-controller");
    let patches = held["spec"]["runtimePatches"].as_array_mut().unwrap();
    patches[0]["time"] = json!("2026-11-29T10:00:00Z");
    patches.push(json!({"manager": "kueue.x-k8s.io/manager", "time": "2026-11-29T10:00:01Z"}));
    held
}

/// The oracle: the sentinel the tables give for a request, written from the pages'
/// numbers, not from the code's.
fn expected(r: &StartRequest, torch: bool) -> Option<Kind> {
    let s = &r.spec;
    let request_ok = (0..=18_000_000).contains(&r.generation)
        && (1..=999_999).contains(&r.submission)
        && r.attempt >= 0;
    let spec_ok =
        !s.command.is_empty() && s.nodes >= 1 && s.gpus_per_node >= 0 && s.procs_per_node >= 0;
    let env_limit = if s.work_dir.is_some() { 121 } else { 122 };
    if !request_ok || !spec_ok {
        Some(Kind::Invalid)
    } else if s.procs_per_node > 0 && !torch {
        Some(Kind::Unsupported)
    } else if s.command.len() > 124 || s.env.len() > env_limit {
        Some(Kind::Invalid)
    } else {
        None
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn render_then_read_back_finds_no_difference(r in valid_request(), kueue in any::<bool>()) {
        let mode = if kueue { Mode::Kueue } else { Mode::Plain };
        let rendered = render(&settings(mode), &r, Some(&runtime(true)), &suffix(), Purpose::Job).unwrap();
        let held = as_held(&rendered.train_job);
        prop_assert_eq!(readback::differences(&rendered.train_job, &held, mode), Vec::<String>::new());
    }

    #[test]
    fn render_refuses_exactly_what_the_tables_say(
        mut r in valid_request(),
        generation in -2..=18_000_002i64,
        submission in -1..=1_000_001i64,
        attempt in -2..=2i64,
        commands in 0..=127usize,
        envs in 0..=125usize,
        nodes in -1..=3i64,
        procs in -1..=3i64,
        torch in any::<bool>(),
        pick in 0..8u8,
    ) {
        // Push one or two fields to the edges of their tables; leave the rest valid.
        match pick {
            0 => r.generation = generation,
            1 => r.submission = submission,
            2 => r.attempt = attempt,
            3 => r.spec.command = (0..commands).map(|i| format!("a{i}")).collect(),
            4 => r.spec.env = (0..envs).map(|i| (format!("V{i}"), String::new())).collect(),
            5 => r.spec.nodes = nodes,
            6 => r.spec.procs_per_node = procs,
            _ => { r.spec.env = (0..envs).map(|i| (format!("V{i}"), String::new())).collect(); r.spec.procs_per_node = procs; }
        }
        let got = render(&settings(Mode::Plain), &r, Some(&runtime(torch)), &suffix(), Purpose::Job);
        prop_assert_eq!(got.err().map(|e| e.kind()), expected(&r, torch));
    }

    #[test]
    fn each_injected_validation_problem_is_reported(r in valid_request(), mask in 1u8..=127) {
        let mut r = r;
        let mut markers = Vec::new();
        // In JobSpec::validate's field order.
        let mut inject = |bit: u8, marker: &str, apply: &dyn Fn(&mut JobSpec)| {
            if mask & (1 << bit) != 0 {
                apply(&mut r.spec);
                markers.push(marker.to_owned());
            }
        };
        inject(0, "command is empty", &|s| s.command.clear());
        inject(5, "env key DISPATCH_X is reserved", &|s| { s.env.insert("DISPATCH_X".into(), "1".into()); });
        inject(1, "nodes is 0", &|s| s.nodes = 0);
        inject(2, "gpusPerNode is -1", &|s| s.gpus_per_node = -1);
        inject(3, "procsPerNode is -3", &|s| s.procs_per_node = -3);
        inject(4, "timeLimit is -1s", &|s| s.time_limit = Some(Timespan::from_secs(-1)));
        inject(6, "checkpoint \"ckpt\" is neither", &|s| s.checkpoint = Some("ckpt".into()));
        let err = render(&settings(Mode::Plain), &r, Some(&runtime(true)), &suffix(), Purpose::Job).unwrap_err();
        prop_assert_eq!(err.kind(), Kind::Invalid);
        let mut at = 0;
        for marker in &markers {
            let found = err.message()[at..].find(marker.as_str());
            prop_assert!(found.is_some(), "{} missing or out of order in {}", marker, err.message());
            at += found.unwrap_or(0);
        }
    }

    #[test]
    fn readers_refuse_mutated_documents_with_invalid_and_never_panic(
        at in 0..2000usize,
        with in prop::sample::select(vec!["", "null", "\"", "{", "]", "-1", "1e99", "true", ",", "\u{0}", "Z"]),
        which in any::<bool>(),
    ) {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/render/");
        let file = if which { "settings-kueue.json" } else { "accept-full-spec/request.json" };
        let mut text = std::fs::read_to_string(format!("{root}{file}")).unwrap();
        let at = at % text.len();
        if text.is_char_boundary(at) {
            text.replace_range(at..(at + 1).min(text.len()), with);
        }
        let kind = if which {
            Settings::read(text.as_bytes()).err().map(|e| e.kind())
        } else {
            read_request(text.as_bytes()).err().map(|e| e.kind())
        };
        prop_assert!(kind.is_none() || kind == Some(Kind::Invalid), "{:?}", kind);
    }
}
