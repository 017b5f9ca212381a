//! Property tests: selectors never panic and agree with a plain model of equality and
//! set requirements; along any run of exits, OOMs, preemptions, evictions and clock
//! moves, JobSet's restart attempt never decreases and no completion index ever has two
//! live pods at once.

use std::collections::BTreeMap;
use std::time::Duration;

use dispatch_kf_sim::{Selector, Sim, SimOptions};
use proptest::prelude::*;
use serde_json::{Value, json};

proptest! {
    #[test]
    fn selector_parsing_never_panics(s in ".{0,40}") {
        let _ = Selector::parse(&s);
    }

    #[test]
    fn equality_and_set_selectors_match_like_the_model(
        labels in prop::collection::btree_map("[a-c]", "[x-z]", 0..3),
        key in "[a-c]",
        value in "[x-z]",
        set in prop::collection::vec("[x-z]", 1..3),
    ) {
        let obj = json!({"metadata": {"labels": labels}});
        let got = |s: &str| Selector::parse(s).unwrap().matches(&obj);
        let have = labels.get(&key);
        prop_assert_eq!(got(&format!("{key}={value}")), have == Some(&value));
        prop_assert_eq!(got(&format!("{key}!={value}")), have != Some(&value));
        prop_assert_eq!(got(&format!("{key} in ({})", set.join(","))), have.is_some_and(|v| set.contains(v)));
        prop_assert_eq!(got(&format!("{key} notin ({})", set.join(","))), have.is_none_or(|v| !set.contains(v)));
        prop_assert_eq!(got(&key), have.is_some());
        prop_assert_eq!(got(&format!("!{key}")), have.is_none());
    }
}

#[derive(Debug, Clone)]
enum Op {
    Exit(usize, i64),
    Oom(usize),
    Preempt(usize),
    Evict(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, prop_oneof![Just(0i64), Just(1), Just(137)]).prop_map(|(i, c)| Op::Exit(i, c)),
        (0..3usize).prop_map(Op::Oom),
        (0..3usize).prop_map(Op::Preempt),
        (0..3usize).prop_map(Op::Evict),
        (1..600u64).prop_map(Op::Advance),
    ]
}

fn live_pods(sim: &Sim) -> Vec<Value> {
    sim.list("pods", "default")
        .into_iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded") | Some("Failed")))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn restart_attempt_never_decreases_and_indexes_never_double(ops in prop::collection::vec(op(), 1..12)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let sim = Sim::start_demo(SimOptions::default(), 3, 8).await.unwrap();
            let mut runtime = dispatch_kf_sim::torch_distributed();
            runtime["spec"]["template"]["spec"]["failurePolicy"] = json!({"maxRestarts": 3});
            runtime["metadata"]["name"] = json!("restarting");
            sim.apply(runtime).unwrap();
            sim.apply(json!({
                "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": "job", "namespace": "default"},
                "spec": {"runtimeRef": {"name": "restarting", "kind": "ClusterTrainingRuntime"},
                         "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}}
            })).unwrap();
            let mut last = 0i64;
            for op in ops {
                let pods = live_pods(&sim);
                let name = |i: usize| pods.get(i % pods.len().max(1)).and_then(|p| p["metadata"]["name"].as_str()).unwrap_or("none").to_string();
                match op {
                    Op::Exit(i, c) => { sim.exit("default", &name(i), c); }
                    Op::Oom(i) => { sim.oom("default", &name(i)); }
                    Op::Preempt(i) => { sim.preempt("default", &name(i)); }
                    Op::Evict(i) => { sim.evict("default", &name(i)); }
                    Op::Advance(s) => sim.advance(Duration::from_secs(s)),
                }
                let attempt = sim.get("jobsets", "default", "job")
                    .and_then(|j| j.pointer("/status/restarts").and_then(Value::as_i64))
                    .unwrap_or(0);
                prop_assert!(attempt >= last, "restart attempt went from {} to {}", last, attempt);
                last = attempt;
                let mut per_index: BTreeMap<String, usize> = BTreeMap::new();
                for p in live_pods(&sim) {
                    let idx = p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"].as_str().unwrap_or("").to_string();
                    *per_index.entry(idx).or_default() += 1;
                }
                prop_assert!(per_index.values().all(|n| *n <= 1), "two live pods for one index: {:?}", per_index);
            }
            Ok(())
        })?;
    }
}
