//! `cargo xtask bench cli`: every command's wall time on `sim serve`, as a user runs
//! them (a new process each, the release build, only a kubeconfig), the median of
//! [`ROUNDS`] rounds, each round a job of its own; then the bar: each writing command
//! within 2x a `find` (docs/dev/benchmarks.md#commands-cargo-xtask-bench-cli).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::run::{self, target_dir};

/// Rounds measured; the median counts.
const ROUNDS: usize = 7;
/// Bar: a writing command at most this many times a `find`.
const MAX_WRITE_OVER_FIND: f64 = 2.0;

/// One command of a round: its name, whether it writes, and its arguments after the
/// kubeconfig (`{job}`, `{ref}` and `{request}` stand for the round's).
const COMMANDS: [(&str, bool, &[&str]); 11] = [
    ("start", true, &["--request", "{request}"]),
    ("find", false, &["{job}"]),
    ("status", false, &["{job}"]),
    ("inspect", false, &["{ref}"]),
    ("capabilities", true, &[]),
    ("hold", true, &["--instance", "1", "{ref}"]),
    ("release", true, &["--instance", "1", "{ref}"]),
    ("open", true, &["{ref}"]),
    ("stop", true, &["{ref}"]),
    ("stop-job", true, &["{job}"]),
    ("preflight", false, &[]),
];

pub(crate) fn run() -> run::Result {
    run::cargo(&["build", "--release", "-p", "dispatch-kf-cli", "--bin", "dispatch-kf"])?;
    let program = target_dir().join("release/dispatch-kf");
    let dir = target_dir().join("bench-cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let served = Served::start(&program, &dir)?;
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); COMMANDS.len()];
    for round in 0..ROUNDS {
        let job = format!("01JDQ4V8Z6K3M0B7X2N5R{round:05}");
        let request = dir.join(format!("request-{round}.json"));
        std::fs::write(&request, request_json(&job)).map_err(|e| e.to_string())?;
        let mut reference = String::new();
        for (i, (name, _, args)) in COMMANDS.iter().enumerate() {
            let args: Vec<String> = args
                .iter()
                .map(|a| {
                    a.replace("{job}", &job)
                        .replace("{ref}", &reference)
                        .replace("{request}", &request.display().to_string())
                })
                .collect();
            let (took, out) = served.time(name, &args)?;
            if *name == "start" {
                reference = out.trim().to_owned();
            }
            times[i].push(took);
        }
    }
    let median = |i: usize| {
        let mut t = times[i].clone();
        t.sort();
        t[t.len() / 2]
    };
    let find = median(COMMANDS.iter().position(|c| c.0 == "find").unwrap_or(0));
    let mut report = format!("{:<13} {:>9} {:>8}\n", "command", "median", "x find");
    let mut missed = Vec::new();
    for (i, (name, writes, _)) in COMMANDS.iter().enumerate() {
        let ratio = median(i).as_secs_f64() / find.as_secs_f64();
        report += &format!("{name:<13} {:>6.1} ms {ratio:>7.2}\n", median(i).as_secs_f64() * 1e3);
        if *writes && ratio > MAX_WRITE_OVER_FIND {
            missed
                .push(format!("{name} takes {ratio:.2}x a find (at most {MAX_WRITE_OVER_FIND}x)"));
        }
    }
    print!("{report}");
    if missed.is_empty() {
        println!("bar holds: every writing command within {MAX_WRITE_OVER_FIND}x a find");
        Ok(())
    } else {
        Err(format!("bars missed:\n  {}", missed.join("\n  ")))
    }
}

fn request_json(job: &str) -> String {
    format!(
        r#"{{"job": "{job}", "generation": 0, "submission": 1, "attempt": 1,
  "spec": {{"command": ["python", "train.py"], "nodes": 1, "gpusPerNode": 8,
    "extensions": {{"dispatch/Image": {{"ref": "ghcr.io/acme/train:1.4"}},
      "kubeflow/RuntimeRef": {{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}}}}}}}}"#
    )
}

/// `dispatch-kf sim serve`, killed when dropped, and the command run against it.
struct Served {
    child: Child,
    program: PathBuf,
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Served {
    fn start(program: &Path, dir: &Path) -> Result<Served, String> {
        let kubeconfig = dir.join("kubeconfig");
        let mut child = Command::new(program)
            .args(["sim", "serve", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let stderr = child.stderr.take().ok_or("sim serve has no standard error")?;
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
            if line.map_err(|e| e.to_string())?.contains("serving until interrupted") {
                break;
            }
        }
        Ok(Served { child, program: program.to_owned(), kubeconfig, dir: dir.to_owned() })
    }

    /// Runs `name args` as a user would, with only the kubeconfig; its wall time and
    /// standard output. A command that fails fails the benchmark.
    fn time(&self, name: &str, args: &[String]) -> Result<(Duration, String), String> {
        let t0 = Instant::now();
        let out = Command::new(&self.program)
            .arg(name)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env_remove("DISPATCH_KF_SETTINGS")
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("XDG_CACHE_HOME", self.dir.join("cache"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        let took = t0.elapsed();
        if !out.status.success() {
            return Err(format!("{name}: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok((took, String::from_utf8_lossy(&out.stdout).into_owned()))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
