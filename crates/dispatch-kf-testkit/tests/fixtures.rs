//! Fixtures generated from the one definition they copy, so they cannot drift from it:
//! `fixtures/render/runtime-torch.json`, which render's tests read, is the simulated
//! cluster's `torch-distributed` (`dispatch_kf_sim::torch_distributed`), which the
//! demo and every Backend test install. Run with `DISPATCH_KF_BLESS=1` to write it anew
//! after the definition changes, then review the render snapshots that move.

#[test]
fn the_render_runtime_fixture_is_the_sims_torch_distributed() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/render/runtime-torch.json");
    let want = serde_json::to_string_pretty(&dispatch_kf_sim::torch_distributed()).unwrap() + "\n";
    if std::env::var_os("DISPATCH_KF_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap();
    assert!(
        have == want,
        "{path} is not dispatch_kf_sim::torch_distributed(): rerun with DISPATCH_KF_BLESS=1 and review"
    );
}
