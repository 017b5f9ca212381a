//! The commands a user runs, `dispatch-kf` and `kubectl`, each a process of its own
//! whose requests go through the counting proxy: its wall time, and the requests and
//! bytes of HTTP it exchanged with the apiserver. Calls are measured one at a time, so
//! the proxy's counts between two readings are one command's.

use std::path::PathBuf;
use std::process::Stdio;

use dispatch_kf_testkit::Proxy;
use tokio::process::Command;
use tokio::time::Instant;

/// What one command cost.
#[derive(Clone, Debug, Default)]
pub(crate) struct Call {
    pub(crate) seconds: f64,
    pub(crate) requests: u64,
    pub(crate) bytes: u64,
    pub(crate) stdout: String,
}

/// Where the commands are, and the files they are given.
pub(crate) struct Tools {
    /// `dispatch-kf`, built with optimizations.
    pub(crate) cli: PathBuf,
    /// A kubeconfig naming the proxy, as plain HTTP, with no credentials (the proxy
    /// presents the admin's onward).
    pub(crate) kubeconfig: PathBuf,
    /// The adapter's settings.
    pub(crate) settings: PathBuf,
    /// A folder of the bench's own for the platform's cache (the kept preflights), so
    /// that the user's is not touched.
    pub(crate) cache: PathBuf,
}

impl Tools {
    /// `dispatch-kf ARGS`, with the bench's kubeconfig and settings.
    pub(crate) fn dispatch(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.cli);
        cmd.arg(args[0]).arg("--kubeconfig").arg(&self.kubeconfig);
        cmd.arg("--settings").arg(&self.settings).args(&args[1..]);
        cmd.env("XDG_CACHE_HOME", &self.cache);
        cmd
    }

    /// `kubectl ARGS`, with the bench's kubeconfig.
    pub(crate) fn kubectl(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd
    }
}

/// Runs `cmd` to its end: what it cost, or its standard error when it fails.
pub(crate) async fn run(proxy: &Proxy, mut cmd: Command) -> Result<Call, String> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (requests, bytes) = (proxy.requests_seen(), proxy.bytes_received());
    let t0 = Instant::now();
    let out = cmd.output().await.map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let seconds = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(Call {
        seconds,
        requests: proxy.requests_seen() - requests,
        bytes: proxy.bytes_received() - bytes,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    })
}

/// `runs` runs of what `cmd` makes, after one not counted (the first run of a command
/// reads its binary from disk, and may fill the kept preflight).
pub(crate) async fn repeated(
    proxy: &Proxy,
    runs: usize,
    cmd: impl Fn() -> Command,
) -> Result<Vec<Call>, String> {
    run(proxy, cmd()).await?;
    let mut calls = Vec::with_capacity(runs);
    for _ in 0..runs {
        calls.push(run(proxy, cmd()).await?);
    }
    Ok(calls)
}

/// The median of `values`.
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.into_iter().collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
