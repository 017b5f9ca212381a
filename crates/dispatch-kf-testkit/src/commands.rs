//! The commands a user runs, `dispatch-kf` and `kubectl`, each a process of its own
//! whose requests go through a counting [`Proxy`]: its wall time, its peak resident
//! memory (from `/usr/bin/time`, where there is one), and the requests and bytes of
//! HTTP it exchanged with the apiserver. Calls are measured one at a time, so the
//! proxy's counts between two readings are one command's. The benches on the real
//! control plane (`big_job`, `many_jobs`) run their commands so.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;
use tokio::time::Instant;

use crate::Proxy;

/// What one command cost.
#[derive(Clone, Debug, Default)]
pub struct Call {
    /// Wall time.
    pub seconds: f64,
    /// Peak resident memory, in KiB; 0 without `/usr/bin/time`.
    pub peak_kib: u64,
    /// Requests sent.
    pub requests: u64,
    /// Bytes of HTTP received.
    pub bytes: u64,
    /// What it printed.
    pub stdout: String,
}

/// Where the commands are, and the files they are given.
pub struct Tools {
    /// `dispatch-kf`, built with optimizations.
    pub cli: PathBuf,
    /// A kubeconfig naming the proxy, as plain HTTP, with no credentials (the proxy
    /// presents the admin's onward).
    pub kubeconfig: PathBuf,
    /// The adapter's settings.
    pub settings: PathBuf,
    /// The bench's folder: the platform's cache for `dispatch-kf` (the kept
    /// preflights, so that the user's is not touched) and `/usr/bin/time`'s output.
    pub dir: PathBuf,
}

/// Writes `dir/kubeconfig.yaml`: the proxy on `port`, as plain HTTP with no credentials
/// (the proxy presents the admin's onward), `namespace` its context's.
pub fn proxy_kubeconfig(dir: &Path, port: u16, namespace: &str) -> Result<PathBuf, String> {
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster: {{server: http://127.0.0.1:{port}}}\nusers:\n- name: bench\n  user: {{}}\ncontexts:\n- name: bench\n  context: {{cluster: bench, user: bench, namespace: {namespace}}}\ncurrent-context: bench\n"
    );
    write(dir, "kubeconfig.yaml", &kubeconfig)
}

/// `/usr/bin/time`, which reports a command's peak resident memory.
const TIME: &str = "/usr/bin/time";

impl Tools {
    /// Tools whose files are under `dir`: a kubeconfig for the proxy on `port` with
    /// `namespace` as its context's, and `settings`.
    pub fn in_dir(
        dir: &Path,
        cli: PathBuf,
        port: u16,
        namespace: &str,
        settings: &serde_json::Value,
    ) -> Result<Tools, String> {
        std::fs::create_dir_all(dir.join("cache")).map_err(|e| e.to_string())?;
        Ok(Tools {
            cli,
            kubeconfig: proxy_kubeconfig(dir, port, namespace)?,
            settings: write(dir, "settings.json", &settings.to_string())?,
            dir: dir.to_owned(),
        })
    }

    /// `dispatch-kf ARGS`, with the bench's kubeconfig and settings, under
    /// `/usr/bin/time`.
    pub fn dispatch(&self, args: &[&str]) -> Command {
        self.dispatch_as(self.timed(&self.cli), args)
    }

    /// [`Tools::dispatch`] as a process of its own, not under `/usr/bin/time`: one that
    /// runs until stopped (`watch`), whose memory is read from `/proc`.
    pub fn dispatch_alone(&self, args: &[&str]) -> Command {
        self.dispatch_as(Command::new(&self.cli), args)
    }

    /// `dispatch-kf ARGS` of a command that takes no settings (`explain`), under
    /// `/usr/bin/time`.
    pub fn dispatch_without_settings(&self, args: &[&str]) -> Command {
        let mut cmd = self.timed(&self.cli);
        cmd.arg(args[0]).arg("--kubeconfig").arg(&self.kubeconfig).args(&args[1..]);
        cmd
    }

    fn dispatch_as(&self, mut cmd: Command, args: &[&str]) -> Command {
        cmd.arg(args[0]).arg("--kubeconfig").arg(&self.kubeconfig);
        cmd.arg("--settings").arg(&self.settings).args(&args[1..]);
        cmd.env("XDG_CACHE_HOME", self.dir.join("cache"));
        cmd
    }

    /// `dispatch-kf ARGS` that reads no cluster (`render`): no kubeconfig.
    pub fn dispatch_offline(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.cli);
        cmd.arg(args[0]).arg("--settings").arg(&self.settings).args(&args[1..]);
        cmd
    }

    /// `kubectl ARGS`, with the bench's kubeconfig, under `/usr/bin/time`.
    pub fn kubectl(&self, args: &[&str]) -> Command {
        let mut cmd = self.timed(Path::new("kubectl"));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd
    }

    /// `program`, under `/usr/bin/time` where there is one.
    fn timed(&self, program: &Path) -> Command {
        if !Path::new(TIME).exists() {
            return Command::new(program);
        }
        let mut cmd = Command::new(TIME);
        cmd.args(["-f", "%M", "-o"]).arg(self.dir.join("time.txt")).arg(program);
        cmd
    }

    /// Runs `cmd` to its end: what it cost, or its standard error when it fails.
    pub async fn run(&self, proxy: &Proxy, mut cmd: Command) -> Result<Call, String> {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let time = self.dir.join("time.txt");
        let _ = std::fs::remove_file(&time);
        let (requests, bytes) = (proxy.requests_seen(), proxy.bytes_received());
        let t0 = Instant::now();
        let out = cmd.output().await.map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
        let seconds = t0.elapsed().as_secs_f64();
        if !out.status.success() {
            return Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let peak_kib = std::fs::read_to_string(&time)
            .ok()
            .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
            .unwrap_or(0);
        Ok(Call {
            seconds,
            peak_kib,
            requests: proxy.requests_seen() - requests,
            bytes: proxy.bytes_received() - bytes,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        })
    }

    /// `runs` runs of what `cmd` makes, after one not counted (the first run of a
    /// command reads its binary from disk, and may fill the kept preflight).
    pub async fn repeated(
        &self,
        proxy: &Proxy,
        runs: usize,
        cmd: impl Fn() -> Command,
    ) -> Result<Vec<Call>, String> {
        self.run(proxy, cmd()).await?;
        let mut calls = Vec::with_capacity(runs);
        for _ in 0..runs {
            calls.push(self.run(proxy, cmd()).await?);
        }
        Ok(calls)
    }
}

/// The median of `values`.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.into_iter().collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The `p`-th percentile of `values` (0 < `p` ≤ 1) by nearest rank: the smallest value
/// with at least that share of the values at or below it; NaN when there are none.
pub fn percentile(values: impl IntoIterator<Item = f64>, p: f64) -> f64 {
    let mut values: Vec<f64> = values.into_iter().collect();
    values.sort_by(f64::total_cmp);
    let rank = (p * values.len() as f64).ceil() as usize;
    values.get(rank.saturating_sub(1)).copied().unwrap_or(f64::NAN)
}

/// Runs `xtask` (the `xtask` binary that started the control plane) with `args`, as
/// `cargo xtask cluster kill|stop|restart ...`: its error output when it fails.
pub async fn xtask(xtask: &str, args: &[&str]) -> Result<(), String> {
    let out = tokio::process::Command::new(xtask).args(args).output().await;
    match out {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "xtask {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("xtask {}: {e}", args.join(" "))),
    }
}

/// Writes `text` to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, String> {
    let file = dir.join(name);
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    Ok(file)
}

/// A bench's arguments, each `--flag value`.
pub struct Flags(std::collections::BTreeMap<String, String>);

impl Flags {
    /// The arguments `args`, each flag one of `known`.
    pub fn parse(args: &[String], known: &[&str]) -> Result<Flags, String> {
        let mut flags = std::collections::BTreeMap::new();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            if !known.contains(&flag.as_str()) {
                return Err(format!("unknown flag {flag}"));
            }
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            flags.insert(flag.clone(), value.clone());
        }
        Ok(Flags(flags))
    }

    /// The value of `flag`, which must be given.
    pub fn required(&self, flag: &str) -> Result<String, String> {
        self.0.get(flag).cloned().ok_or(format!("{flag} is needed"))
    }

    /// The count `flag` gives, else `default`.
    pub fn count(&self, flag: &str, default: usize) -> Result<usize, String> {
        match self.0.get(flag) {
            Some(value) => value.parse().map_err(|_| format!("{flag}: {value:?} is not a count")),
            None => Ok(default),
        }
    }
}

/// The `main` of a bench binary named `name`: its arguments parsed by `parse`, then
/// `bench` run on a runtime of its own. Exits 0 when every bar holds, 1 when one is
/// missed or the bench fails (saying why), 2 when the arguments are refused (with
/// `usage`).
pub fn bench_main<O>(
    name: &str,
    usage: &str,
    parse: impl FnOnce(&[String]) -> Result<O, String>,
    bench: impl AsyncFnOnce(&O) -> Result<bool, String>,
) -> std::process::ExitCode {
    use std::process::ExitCode;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{name}: {e}\nusage: {name} {usage}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{name}: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(&options)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The client configuration of the kubeconfig at `path` (its current context), and a
/// client made from it.
pub async fn client_of(path: &str) -> Result<(kube::Config, kube::Client), String> {
    let file = kube::config::Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    let client = kube::Client::try_from(config.clone()).map_err(|e| e.to_string())?;
    Ok((config, client))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentile_is_the_value_at_its_nearest_rank() {
        let hundred = (1..=100).map(f64::from);
        assert_eq!(percentile(hundred.clone(), 0.99), 99.0);
        assert_eq!(percentile(hundred.clone().rev(), 0.5), 50.0);
        assert_eq!(percentile(hundred, 1.0), 100.0);
        assert_eq!(percentile([7.0], 0.99), 7.0);
        assert!(percentile([], 0.5).is_nan());
    }
}
