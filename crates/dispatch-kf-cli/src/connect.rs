//! What every command that talks to a cluster shares: the settings (`settings.rs`),
//! kubectl-style overrides, the call's deadline, and Factory.

use std::time::{Duration, Instant};

use dispatch_core::{CallContext, Error, ObjectKind, ObjectRef, Result, Timespan};
use dispatch_kf::KubeflowBackend;
use dispatch_kf_client::ClusterConfig;
use dispatch_kf_model::Settings;
use jiff::{SignedDuration, Timestamp};

use crate::preflight_cache::Cache;
use crate::settings;

/// `--settings` and the overrides kubectl users expect.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ClusterArgs {
    /// The adapter's settings (JSON or YAML). Without it: the platform's
    /// dispatch-kf/settings.yaml (~/.config on Linux) when it exists, else defaults
    /// taken from the kubeconfig.
    #[arg(long, value_name = "FILE", env = "DISPATCH_KF_SETTINGS")]
    settings: Option<String>,
    #[command(flatten)]
    kubectl: KubectlArgs,
    /// A runtime jobs may run on, KIND/NAME (repeatable); replaces the settings'
    /// runtimes (default: ClusterTrainingRuntime/torch-distributed).
    #[arg(long = "runtime", value_name = "KIND/NAME")]
    runtimes: Vec<String>,
    /// The call's deadline (Go notation: 30s, 5m).
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// How old a kept preflight a writing command trusts instead of probing the
    /// cluster again (Go notation); 0s probes every time. `preflight` always probes.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    preflight_max_age: String,
    /// Say on standard error which kept preflight a command trusted, or that it ran one.
    #[arg(short = 'v', long)]
    verbose: bool,
}

/// The flags kubectl users expect of every command that talks to a cluster; each
/// overrides the settings where a command has them.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct KubectlArgs {
    /// The kubeconfig file (default: the settings', else $KUBECONFIG, else
    /// ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub(crate) kubeconfig: Option<String>,
    /// The kubeconfig context (default: the settings', else the current one).
    #[arg(long)]
    pub(crate) context: Option<String>,
    /// The namespace (default: the settings', else the context's).
    #[arg(short = 'n', long)]
    pub(crate) namespace: Option<String>,
}

/// Whether a command writes: a read-only command runs Factory without its probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Find, inspect, watch, logs: nothing is written, so nothing is probed.
    Read,
    /// Start, stop and the hold family: Factory runs its preflight probe, unless a
    /// kept one is young enough (`preflight_cache.rs`).
    Write,
    /// `preflight`: Factory's checks and probe in full, whatever is kept; what they
    /// find is kept.
    Probe,
}

impl ClusterArgs {
    /// The settings, with the command line's overrides.
    pub(crate) async fn settings(&self, need: Need) -> Result<Settings> {
        let source = settings::locate(self.settings.as_deref(), settings::config_dir().as_deref());
        let overrides = settings::Overrides {
            kubeconfig: self.kubectl.kubeconfig.as_deref(),
            context: self.kubectl.context.as_deref(),
            namespace: self.kubectl.namespace.as_deref(),
            runtimes: &self.runtimes,
        };
        let mut settings = settings::resolve(&source, &overrides).await?;
        if need == Need::Read {
            settings.read_only = true;
        }
        Ok(settings)
    }

    /// The call's context: its deadline is `--timeout`, else `default`.
    pub(crate) fn call(&self, default: Timespan) -> Result<CallContext> {
        call_context(self.timeout.as_deref(), default)
    }

    /// Factory, within the call's deadline; for a writing command, from the kept
    /// preflight when it is young enough.
    pub(crate) async fn backend(&self, need: Need, cx: &CallContext) -> Result<KubeflowBackend> {
        let settings = self.settings(need).await?;
        if need == Need::Read {
            return KubeflowBackend::new(settings, cx).await;
        }
        let max_age = Timespan::parse(&self.preflight_max_age)
            .ok()
            .and_then(|t| t.to_std())
            .and_then(|d| SignedDuration::try_from(d).ok())
            .ok_or_else(|| {
                Error::invalid(format!(
                    "--preflight-max-age {:?} is not a duration (Go notation: 10m, 0s)",
                    self.preflight_max_age
                ))
            })?;
        let cache = self.cache(&settings).await;
        let trusted = match (need, &cache) {
            (Need::Write, Some(cache)) => {
                cache.trusted(Timestamp::now(), max_age).unwrap_or_else(|why| {
                    eprintln!("dispatch-kf: warning: not trusting the kept preflight: {why}");
                    None
                })
            }
            _ => None,
        };
        if let Some(trusted) = trusted {
            if self.verbose {
                eprintln!(
                    "dispatch-kf: trusting the preflight kept {:.0}s ago (younger than --preflight-max-age {}) in {}",
                    trusted.age.as_secs_f64(),
                    self.preflight_max_age,
                    trusted.path.display()
                );
            }
            return KubeflowBackend::with_preflight(settings, trusted.preflight).await;
        }
        if self.verbose {
            eprintln!("dispatch-kf: running the preflight in full");
        }
        // What Factory proves, it proves after this: the kept preflight counts its age,
        // and its gate proof's, from here.
        let began = Timestamp::now();
        let backend = KubeflowBackend::new(settings, cx).await?;
        if let Some(Err(why)) = cache.map(|c| c.keep(backend.preflight(), began)) {
            eprintln!("dispatch-kf: warning: not keeping the preflight: {why}");
        }
        Ok(backend)
    }

    /// Where the preflights of these settings' cluster and identity are kept; `None`
    /// without a cache folder or a configuration that loads (Factory then says what is
    /// wrong).
    async fn cache(&self, settings: &Settings) -> Option<Cache> {
        let config = ClusterConfig::of(settings.kubeconfig.as_ref(), Duration::from_secs(30));
        let identity = config.identity().await.ok()?;
        Cache::of(dirs::cache_dir().as_deref(), &identity, settings)
    }
}

/// A call's context whose deadline is `timeout` (`--timeout`, Go notation) from now,
/// else `default`.
pub(crate) fn call_context(timeout: Option<&str>, default: Timespan) -> Result<CallContext> {
    let timeout = match timeout {
        Some(text) => Timespan::parse(text).map_err(|e| e.context("--timeout"))?,
        None => default,
    };
    let wait = timeout
        .to_std()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| Error::invalid(format!("--timeout {timeout} is not a positive duration")))?;
    Ok(CallContext::with_deadline(Instant::now() + wait))
}

/// The default deadline of most commands.
pub(crate) const DEFAULT_TIMEOUT: Timespan = Timespan::from_secs(30);

/// Runs an async command on a runtime of its own.
pub(crate) fn block_on<T>(future: impl Future<Output = Result<T>>) -> Result<T> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::unreachable(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(future)
}

/// Reads an object reference `[Kind:]<namespace>/<name>@<uid>` (Kind defaults to
/// TrainJob) for the backend named `backend`.
pub(crate) fn parse_ref(text: &str, backend: &str) -> Result<ObjectRef> {
    let bad = || {
        Error::invalid(format!(
            "object reference {text:?} is not [Kind:]<namespace>/<name>@<uid>, as start prints it"
        ))
    };
    let (kind, rest) = match text.split_once(':') {
        Some((kind, rest)) => (kind, rest),
        None => ("TrainJob", text),
    };
    let kind =
        [ObjectKind::TrainJob, ObjectKind::JobSet, ObjectKind::Pod, ObjectKind::TrainingRuntime]
            .into_iter()
            .find(|k| k.name() == kind)
            .ok_or_else(bad)?;
    let (path, uid) = rest.split_once('@').ok_or_else(bad)?;
    let (namespace, name) = path.split_once('/').ok_or_else(bad)?;
    if namespace.is_empty() || name.is_empty() || uid.is_empty() {
        return Err(bad());
    }
    Ok(ObjectRef {
        backend: backend.to_owned(),
        kind,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
    })
}

/// The reference as the command line writes it.
pub(crate) fn format_ref(object: &ObjectRef) -> String {
    format!("{}:{}/{}@{}", object.kind.name(), object.namespace, object.name, object.uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_as_start_prints_them() {
        let r = parse_ref("training/dj-x-s1@1234", "kf").unwrap();
        assert_eq!(
            (r.kind, r.namespace.as_str(), r.name.as_str(), r.uid.as_str()),
            (ObjectKind::TrainJob, "training", "dj-x-s1", "1234")
        );
        let p = parse_ref("Pod:training/dj-x-s1-node-0-0-abcde@u", "kf").unwrap();
        assert_eq!(p.kind, ObjectKind::Pod);
        assert_eq!(parse_ref(&format_ref(&p), "kf").unwrap(), p);
        for bad in [
            "training/dj-x-s1",
            "dj-x-s1@u",
            "Job:training/x@u",
            "/x@u",
            "training/@u",
            "training/x@",
        ] {
            assert!(parse_ref(bad, "kf").unwrap_err().is(dispatch_core::Kind::Invalid), "{bad}");
        }
    }
}
