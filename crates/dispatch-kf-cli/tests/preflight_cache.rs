//! Writing commands trust the preflight a command kept, while it is young enough
//! (issue 19, item 2): the second writing command on a cluster probes nothing, `preflight`
//! always probes, and `--preflight-max-age 0s` trusts nothing. docs/cli.md names this
//! test; `preflight_cache::tests` covers ages, keys and what is kept.

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
