//! How a supervisor calls the adapter: through one long-lived Backend, as a supervisor
//! linking the library does, or through the command, a process a call, as a script or
//! a supervisor in another language does. The command makes a Backend per call and
//! keeps its preflight between calls (`docs/cli.md`), so it shows what a long-lived
//! Backend cannot: whether a verdict of a passing fault (a gate down) outlives it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dispatch_core::{
    Backend, CallContext, CessationSignal, Error, JobId, Kind, ObjectRef, Refinement, Result,
    StartRequest,
};
use dispatch_kf::KubeflowBackend;

/// How long a call may take.
pub(crate) const CALL: Duration = Duration::from_secs(60);

/// A context with the supervisor's deadline.
pub(crate) fn cx() -> CallContext {
    CallContext::with_deadline(Instant::now() + CALL)
}

/// What the command's calls need: the executable, its settings (naming a kubeconfig
/// through the run's proxy) and a cache folder of its own, as one user's machine has.
pub(crate) struct Command {
    /// The folder of its files.
    pub(crate) dir: PathBuf,
    executable: PathBuf,
    settings: PathBuf,
    cache: PathBuf,
    /// Where the start requests are written for `--request`.
    requests: PathBuf,
}

/// One supervisor's way to the adapter.
#[derive(Clone)]
pub(crate) enum Driver {
    /// The run's one Backend.
    Library(KubeflowBackend),
    /// `dispatch-kf`, a process a call.
    Command(std::sync::Arc<Command>),
}

impl Driver {
    /// How the report names a call made this way: the call's name, and `cli ` before it
    /// for the command.
    pub(crate) fn label(&self, call: &str) -> String {
        match self {
            Driver::Library(_) => call.to_owned(),
            Driver::Command(_) => format!("cli {call}"),
        }
    }

    pub(crate) async fn start(&self, request: &StartRequest) -> Result<ObjectRef> {
        match self {
            Driver::Library(b) => b.start(&cx(), request).await,
            Driver::Command(c) => {
                let file = c.requests.join(format!("{}-s{}.json", request.job, request.submission));
                let json = serde_json::to_vec(request).expect("a request serializes");
                std::fs::write(&file, json).expect("the request file");
                let out = c.run(&["start", "-o", "json", "--request", path(&file)]).await?;
                serde_json::from_str(&out)
                    .map_err(|e| Error::invalid(format!("start printed {out:?}: {e}")))
            }
        }
    }

    pub(crate) async fn open(&self, object: &ObjectRef) -> Result<()> {
        match self {
            Driver::Library(b) => b.open(&cx(), object).await,
            Driver::Command(c) => c.run(&["open", &reference(object)]).await.map(drop),
        }
    }

    pub(crate) async fn hold(&self, object: &ObjectRef, instance: u64) -> Result<()> {
        match self {
            Driver::Library(b) => b.hold(&cx(), object, instance).await,
            Driver::Command(c) => c.on_instance("hold", object, instance).await,
        }
    }

    pub(crate) async fn release(&self, object: &ObjectRef, instance: u64) -> Result<()> {
        match self {
            Driver::Library(b) => b.release(&cx(), object, instance).await,
            Driver::Command(c) => c.on_instance("release", object, instance).await,
        }
    }

    pub(crate) async fn stop(&self, object: &ObjectRef) -> Result<()> {
        match self {
            Driver::Library(b) => b.stop(&cx(), object).await,
            Driver::Command(c) => c.run(&["stop", &reference(object)]).await.map(drop),
        }
    }

    pub(crate) async fn stop_job(&self, job: &JobId) -> Result<()> {
        match self {
            Driver::Library(b) => b.stop_job(&cx(), job).await,
            Driver::Command(c) => c.run(&["stop-job", job.as_str()]).await.map(drop),
        }
    }

    pub(crate) async fn find(&self, job: &JobId) -> Result<()> {
        match self {
            Driver::Library(b) => b.find(&cx(), job).await.map(drop),
            Driver::Command(c) => c.run(&["find", "-o", "json", job.as_str()]).await.map(drop),
        }
    }

    pub(crate) async fn ceased(&self, object: &ObjectRef) -> Result<()> {
        match self {
            Driver::Library(b) => b.ceased(&cx(), object).await.map(drop),
            Driver::Command(c) => c.run(&["ceased", &reference(object)]).await.map(drop),
        }
    }
}

impl Command {
    /// The command `executable` with `settings` (written into `dir`, which also holds
    /// its cache and requests) on the cluster `kubeconfig` names.
    pub(crate) fn new(
        executable: &Path,
        dir: &Path,
        settings: &serde_json::Value,
        kubeconfig: &str,
    ) -> Command {
        let (cache, requests) = (dir.join("cache"), dir.join("requests"));
        for folder in [dir, &cache, &requests] {
            std::fs::create_dir_all(folder).expect("the command's folders");
        }
        let kubeconfig_file = dir.join("kubeconfig");
        std::fs::write(&kubeconfig_file, kubeconfig).expect("the command's kubeconfig");
        let mut settings = settings.clone();
        settings["kubeconfig"] = serde_json::json!({"path": path(&kubeconfig_file)});
        let settings_file = dir.join("settings.json");
        std::fs::write(&settings_file, settings.to_string()).expect("the command's settings");
        Command {
            dir: dir.to_owned(),
            executable: executable.to_owned(),
            settings: settings_file,
            cache,
            requests,
        }
    }

    /// `hold` or `release` (`verb`) of hold instance `instance` of `object`.
    async fn on_instance(&self, verb: &str, object: &ObjectRef, instance: u64) -> Result<()> {
        let k = instance.to_string();
        self.run(&[verb, "--instance", &k, &reference(object)]).await.map(drop)
    }

    /// Runs `dispatch-kf ARGS` with the settings and a minute's deadline: its standard
    /// output, or the error its exit status and standard error say
    /// (`dispatch-kf: <sentinel>: <message>`, docs/errors.md).
    async fn run(&self, args: &[&str]) -> Result<String> {
        let out = tokio::process::Command::new(&self.executable)
            .args(args)
            .args(["--settings", path(&self.settings), "--timeout", "60s"])
            .env("XDG_CACHE_HOME", &self.cache)
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(120), out)
            .await
            .map_err(|_| Error::unreachable("the command ran past two minutes"))?
            .map_err(|e| {
                Error::invalid(format!("cannot run {}: {e}", self.executable.display()))
            })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(said(out.status.code(), &stderr))
    }
}

/// The error a command's exit `code` and standard error say.
fn said(code: Option<i32>, stderr: &str) -> Error {
    let line = stderr.lines().rfind(|l| l.starts_with("dispatch-kf: ")).unwrap_or(stderr);
    let message = line.splitn(3, ": ").nth(2).unwrap_or(line).to_owned();
    let kind = match code {
        Some(3) => Kind::Invalid,
        Some(4) => Kind::Unsupported,
        Some(5) => Kind::Rejected,
        Some(6) => Kind::NotFound,
        Some(7) => Kind::Unauthorized,
        Some(8) => Kind::Unreachable,
        Some(9) => Kind::OutcomeUnknown,
        Some(10) => Kind::ReadOnly,
        other => return Error::invalid(format!("the command exited {other:?}: {stderr}")),
    };
    // Pods-remain is an unreachable the command says only in words (docs/errors.md).
    if kind == Kind::Unreachable && message.contains("must wait: the previous execution") {
        Error::refined(Refinement::PodsRemain, message)
    } else {
        Error::new(kind, message)
    }
}

/// `Kind:namespace/name@uid`, as `start` prints a reference and the others take it.
fn reference(object: &ObjectRef) -> String {
    format!("{}:{}/{}@{}", object.kind.name(), object.namespace, object.name, object.uid)
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_exit_and_last_line_are_its_sentinel_and_message() {
        let e = said(Some(10), "dispatch-kf: read-only: the readmission gate is not proven: x\n");
        assert_eq!(
            (e.kind(), e.message()),
            (Kind::ReadOnly, "the readmission gate is not proven: x")
        );
        let e = said(
            Some(8),
            "dispatch-kf: unreachable: release must wait: the previous execution has not gone yet (p); nothing was written, retry\n",
        );
        assert!(e.is_pods_remain(), "{e:?}");
        let e = said(Some(8), "warning: x\ndispatch-kf: unreachable: no answer\n");
        assert!(e.is(Kind::Unreachable) && !e.is_pods_remain() && e.message() == "no answer");
        assert!(said(Some(1), "boom").is(Kind::Invalid));
    }
}
