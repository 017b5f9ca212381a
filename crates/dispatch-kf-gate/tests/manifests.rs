//! The kustomization in `deploy/`: every file it lists parses, holds the kinds the gate
//! needs, and agrees with itself and with the binary (probe paths and port, the
//! ServiceAccount the roles bind, the AdmissionCheck's controller); and, when the real
//! control plane of `cargo xtask cluster up` is running, the apiserver accepts it
//! (`kubectl apply --dry-run=server`). The checks every controller's kustomization
//! shares are `dispatch_kf_testkit::deploy`'s.

use std::path::Path;

use dispatch_kf_model::keys;
use dispatch_kf_testkit::deploy::Kustomization;

fn deploy() -> Kustomization {
    Kustomization::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy"))
}

#[test]
fn every_listed_manifest_parses_into_the_kinds_the_gate_needs() {
    let want = [
        "AdmissionCheck",
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
fn the_deployment_probes_the_port_the_gate_listens_on() {
    deploy().check_probes();
}

#[test]
fn the_service_account_the_roles_bind_is_the_deployment_s() {
    let deploy = deploy();
    deploy.check_account();
    let check = deploy.one("AdmissionCheck");
    assert_eq!(check["apiVersion"].as_str(), Some(keys::KUEUE_API_VERSION));
    assert_eq!(check["spec"]["controllerName"].as_str(), Some(keys::GATE_CONTROLLER_NAME));
}

#[test]
fn the_real_apiserver_accepts_the_kustomization_in_a_server_side_dry_run() {
    deploy().dry_run_on_the_real_control_plane();
}
