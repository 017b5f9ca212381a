//! The client's table of kinds (`resources::ALL`) against the simulated apiserver's
//! (`dispatch_kf_sim::RESOURCES`), written independently of each other: every kind the
//! client speaks is served by the sim at the same group, version and plural, with the
//! same kind and scope, so a typo on either side fails here rather than as a 404 in a
//! scenario.

use dispatch_kf_client::resources::ALL;

#[test]
fn every_kind_the_client_speaks_is_served_by_the_sim_alike() {
    let mut wrong = Vec::new();
    for row in ALL {
        let served = dispatch_kf_sim::RESOURCES
            .iter()
            .find(|r| r.group == row.group && r.version == row.version && r.plural == row.plural);
        match served {
            None => wrong.push(format!(
                "{}: not served at {}/{}",
                row.kind,
                row.api_version(),
                row.plural
            )),
            Some(r) if (r.kind, r.namespaced) != (row.kind, row.namespaced) => wrong.push(format!(
                "{}: the sim serves {} (namespaced: {}), the client says {} (namespaced: {})",
                row.plural, r.kind, r.namespaced, row.kind, row.namespaced
            )),
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "the client's and the sim's kinds disagree:\n{}", wrong.join("\n"));
}
