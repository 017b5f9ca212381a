//! Writing commands trust the preflight a command kept, while it is young enough: the
//! second writing command on a cluster probes nothing, `preflight` always probes, and
//! `--preflight-max-age 0s` trusts nothing. docs/cli.md names this test;
//! `preflight_cache::tests` covers ages, keys and what is kept.
//! Another context of the kubeconfig, on the same server and with no settings file, is
//! another identity and does not trust the first one's preflight.

mod common;

const JOB: &str = "01JDQ4V8Z6K3M0B7X2N5R9T1CE";

/// Runs `served`'s command `args` with `-v`; its standard error.
fn verbose(served: &common::Served, subcommand: &str, args: &[&str]) -> String {
    let out = served.command(subcommand).arg("-v").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{subcommand}: {stderr}");
    stderr
}

#[test]
fn a_writing_command_trusts_the_kept_preflight_and_preflight_always_probes() {
    let served = common::Served::start("preflight-cache");
    let first = verbose(&served, "start", &["--request", &served.request(JOB, 1)]);
    assert!(first.contains("running the preflight in full"), "{first}");
    let second = verbose(&served, "start", &["--request", &served.request(JOB, 2)]);
    assert!(second.contains("trusting the preflight kept"), "{second}");
    let probed = verbose(&served, "preflight", &[]);
    assert!(probed.contains("running the preflight in full"), "{probed}");
    let never = verbose(
        &served,
        "start",
        &["--preflight-max-age", "0s", "--request", &served.request(JOB, 3)],
    );
    assert!(never.contains("running the preflight in full"), "{never}");
}

/// With no settings file, switching the kubeconfig's current context to another user
/// on the same server changes no setting; the kept preflight is still the first
/// user's, and the second runs its own.
#[test]
fn another_user_of_the_same_server_does_not_trust_the_first_users_preflight() {
    let served = common::Served::start("preflight-cache-users");
    let start = |submission: u32| {
        let request = served.request(JOB, submission);
        let out = served
            .command_with_kubeconfig_only("start")
            .args(["-v", "--request", &request])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "start: {stderr}");
        stderr
    };
    assert!(start(1).contains("running the preflight in full"));
    assert!(start(2).contains("trusting the preflight kept"));

    // A second user with the same token (the simulated cluster knows one), and its
    // context made the current one.
    let path = served.kubeconfig();
    let mut kubeconfig: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut user = kubeconfig["users"][0].clone();
    user["name"] = "second".into();
    let mut context = kubeconfig["contexts"][0].clone();
    context["name"] = "second@sim".into();
    context["context"]["user"] = "second".into();
    kubeconfig["users"].as_sequence_mut().unwrap().push(user);
    kubeconfig["contexts"].as_sequence_mut().unwrap().push(context);
    kubeconfig["current-context"] = "second@sim".into();
    std::fs::write(&path, serde_yaml_ng::to_string(&kubeconfig).unwrap()).unwrap();

    let second = start(3);
    assert!(second.contains("running the preflight in full"), "{second}");
}
