//! The arguments each process of a stack gets.

use super::super::versions::{STACKS, stack};
use super::*;

fn plane(stack: &'static Stack) -> Plane<'static> {
    let dir = Path::new("/run");
    Plane { dir, pki: Pki { dir: dir.join("pki") }, kubeconfig: dir.join("k"), stack }
}

fn kueue_args(stack: &'static Stack) -> Vec<String> {
    plane(stack).controller_args(&KUEUE, Path::new("/run/kueue/config.yaml"), "127.0.0.1:1")
}

#[test]
fn newest_stacks_apiserver_runs_without_an_endpoint_reconciler() {
    let flag = "--endpoint-reconciler-type=none".to_owned();
    assert!(plane(stack("newest").unwrap()).apiserver_args().contains(&flag));
    assert!(!plane(stack("current").unwrap()).apiserver_args().contains(&flag));
}

#[test]
fn every_stacks_apiserver_flags_come_after_the_common_ones() {
    for stack in &STACKS {
        let args = plane(stack).apiserver_args();
        assert!(args.contains(&"--advertise-address=127.0.0.1".to_owned()), "{}", stack.name);
        let own: Vec<&str> = stack.apiserver_flags.to_vec();
        let tail: Vec<&str> = args[args.len() - own.len()..].iter().map(String::as_str).collect();
        assert_eq!(tail, own, "{}", stack.name);
    }
}

#[test]
fn oldest_stacks_kueue_gets_admission_gated_by_beside_the_common_gate() {
    assert!(
        kueue_args(stack("oldest").unwrap())
            .contains(&"--feature-gates=VisibilityOnDemand=false,AdmissionGatedBy=true".to_owned())
    );
    assert!(
        kueue_args(stack("current").unwrap())
            .contains(&"--feature-gates=VisibilityOnDemand=false".to_owned())
    );
}

#[test]
fn a_stacks_kueue_gates_reach_only_kueue() {
    let oldest = plane(stack("oldest").unwrap());
    for upstream in [&JOBSET, &TRAINER] {
        let args = oldest.controller_args(upstream, Path::new("/c.yaml"), "127.0.0.1:1");
        assert!(args.iter().all(|a| !a.contains("AdmissionGatedBy")), "{args:?}");
        assert_eq!(args[0], "--config=/c.yaml");
    }
    assert!(oldest.apiserver_args().iter().all(|a| !a.contains("AdmissionGatedBy")));
}
