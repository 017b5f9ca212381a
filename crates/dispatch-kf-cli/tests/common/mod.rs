//! A `dispatch-kf sim serve` for tests that run the built command against a cluster:
//! it serves until dropped, with its kubeconfig and a settings file in a folder of
//! its own.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The built command.
pub(crate) fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dispatch-kf"));
    cmd.stdin(Stdio::null());
    cmd
}

/// A simulated cluster served by the built command, killed when dropped.
pub(crate) struct Served {
    child: Child,
    dir: PathBuf,
}

impl Served {
    /// Serves a cluster and returns once it answers (its "serving" line is written).
    #[allow(dead_code, reason = "each test binary includes this module; not all use this")]
    pub(crate) fn start(name: &str) -> Served {
        Served::start_with(name, &[], serde_json::json!({}))
    }

    /// [`Served::start`] with `sim serve` given `flags` too, and the settings file given
    /// the fields of `settings` over its own.
    pub(crate) fn start_with(name: &str, flags: &[&str], settings: serde_json::Value) -> Served {
        let dir = std::env::temp_dir().join(format!("dispatch-kf-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        let mut child = bin()
            .args(["sim", "serve", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        for line in stderr.lines() {
            if line.unwrap().contains("serving until interrupted") {
                break;
            }
        }
        let mut written = serde_json::json!({
            "name": "kf-sim", "namespace": "default",
            "kubeconfig": {"path": kubeconfig},
            "runtimes": [{"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}],
            "timeouts": {"workload": "2s"}
        });
        for (key, value) in settings.as_object().into_iter().flatten() {
            written[key] = value.clone();
        }
        std::fs::write(dir.join("settings.json"), written.to_string()).unwrap();
        Served { child, dir }
    }

    /// The command with `SUBCOMMAND --kubeconfig <this cluster's>` and no settings file:
    /// neither `DISPATCH_KF_SETTINGS` nor a file in the configuration folder; its
    /// preflights kept in this cluster's folder.
    #[allow(dead_code, reason = "each test binary includes this module; not all use this")]
    pub(crate) fn command_with_kubeconfig_only(&self, subcommand: &str) -> Command {
        let mut cmd = bin();
        let config_home = self.dir.join("config-home");
        std::fs::create_dir_all(&config_home).unwrap();
        cmd.env_remove("DISPATCH_KF_SETTINGS").env("XDG_CONFIG_HOME", config_home);
        cmd.env("XDG_CACHE_HOME", self.dir.join("cache-home"));
        cmd.arg(subcommand).arg("--kubeconfig").arg(self.dir.join("kubeconfig"));
        cmd
    }

    /// This cluster's kubeconfig.
    #[allow(dead_code, reason = "each test binary includes this module; not all use this")]
    pub(crate) fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// `kubectl --kubeconfig <this cluster's>` with `args`, its output when it
    /// succeeds, else its standard error.
    #[allow(dead_code, reason = "each test binary includes this module; not all use this")]
    pub(crate) fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        use std::io::Write as _;
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("kubectl must be on PATH (.ci/run installs it): {e}"));
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
        drop(input);
        let out = child.wait_with_output().unwrap();
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        if out.status.success() { Ok(text(out.stdout)) } else { Err(text(out.stderr)) }
    }

    /// A start request of submission `submission` of `job` (one 8-GPU node, on the
    /// stock runtime), in a file of this cluster's folder; its path.
    #[allow(dead_code, reason = "each test binary includes this module; not all use this")]
    pub(crate) fn request(&self, job: &str, submission: u32) -> String {
        write_request(&self.dir, job, submission)
    }

    /// Starts submission 1 of `job` with `start` (its gate closed), asserting it did.
    #[allow(dead_code, reason = "each test binary includes this module; not all use this")]
    pub(crate) fn start_job(&self, job: &str) {
        let request = self.request(job, 1);
        let started = self.command("start").args(["--request", &request]).output().unwrap();
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    }

    /// The command with `SUBCOMMAND --settings <this cluster's settings>`, its
    /// preflights kept in this cluster's folder.
    #[allow(dead_code, reason = "each test binary includes this module; not all use this")]
    pub(crate) fn command(&self, subcommand: &str) -> Command {
        let mut cmd = bin();
        cmd.env("XDG_CACHE_HOME", self.dir.join("cache-home"));
        cmd.arg(subcommand).arg("--settings").arg(self.dir.join("settings.json"));
        cmd
    }
}

/// A start request of submission `submission` of `job` (one 8-GPU node, on the stock
/// runtime), in a file of `dir`; its path.
#[allow(dead_code, reason = "each test binary includes this module; not all use this")]
pub(crate) fn write_request(dir: &std::path::Path, job: &str, submission: u32) -> String {
    let request = serde_json::json!({
        "job": job, "generation": 0, "submission": submission, "attempt": 1,
        "spec": {"command": ["python", "train.py"], "nodes": 1, "gpusPerNode": 8,
          "extensions": {"dispatch/Image": {"ref": "ghcr.io/acme/train:1.4"},
            "kubeflow/RuntimeRef": {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}}}
    });
    let path = dir.join(format!("request-{job}-{submission}.json"));
    std::fs::write(&path, request.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
