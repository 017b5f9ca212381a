//! The kustomization in `deploy/`: the checks every controller's shares
//! (`dispatch_kf_testkit::deploy`), and the ClusterRole that holds the controller to
//! reads and to creating Events; when the real control plane runs, the apiserver
//! accepts it.

use std::collections::BTreeSet;
use std::path::Path;

use dispatch_kf_testkit::deploy::{Kustomization, flag};

fn deploy() -> Kustomization {
    Kustomization::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy"))
}

#[test]
fn every_listed_manifest_parses_into_the_kinds_the_controller_needs() {
    let want = [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Namespace",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ];
    assert_eq!(deploy().kinds(), want.into_iter().collect(), "the kinds of deploy/");
}

#[test]
fn the_deployment_probes_the_port_the_controller_listens_on_and_names_its_lease() {
    let args = deploy().check_probes();
    assert_eq!(flag(&args, "--lease-name"), Some("dispatch-events"));
}

#[test]
fn the_service_account_the_roles_bind_is_the_deployment_s() {
    deploy().check_account();
}

/// Least privilege: get, list and watch of the kinds it joins into a cause (and the
/// runtime copies whose source it counts under), and
/// create of Events; nothing else, and no write of any kind it reads.
#[test]
fn the_cluster_role_reads_what_the_controller_watches_and_only_creates_events() {
    let reads: BTreeSet<String> = ["get", "list", "watch"].map(str::to_owned).into();
    let mut want = vec![
        (("trainer.kubeflow.org", "trainjobs"), reads.clone()),
        (("trainer.kubeflow.org", "trainingruntimes"), reads.clone()),
        (("jobset.x-k8s.io", "jobsets"), reads.clone()),
        (("kueue.x-k8s.io", "workloads"), reads.clone()),
        (("", "pods"), reads.clone()),
        (("", "nodes"), reads.clone()),
        (("events.k8s.io", "events"), ["create".to_owned()].into()),
    ];
    let mut rules: Vec<_> = deploy().cluster_rules();
    rules.sort();
    want.sort();
    let want: Vec<_> =
        want.into_iter().map(|((g, r), v)| ((g.to_owned(), r.to_owned()), v)).collect();
    assert_eq!(rules, want);
}

#[test]
fn the_real_apiserver_accepts_the_kustomization_in_a_server_side_dry_run() {
    deploy().dry_run_on_the_real_control_plane();
}
