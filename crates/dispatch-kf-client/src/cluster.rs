//! [`Cluster`]: the apiserver connection, and [`Cluster::call`], through which every
//! request goes to be classified.

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use dispatch_core::{CallContext, Error, Result};
use dispatch_kf_model::Kubeconfig;
use kube::config::{KubeConfigOptions, Kubeconfig as KubeconfigFile};

use crate::error_map::{
    Case, DEADLINE_PASSED, Outcome, RequestClass, before_sending, case, refinement, sentinel,
};
use crate::identity::{self, Identity};
use crate::transport::{outcome_of, token_failure};

/// Where the cluster's configuration comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterConfig {
    /// A kubeconfig file; `None` means the in-cluster configuration, then the default
    /// kubeconfig.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; `None` is the file's current context.
    pub context: Option<String>,
    /// How long one unary request may wait for its answer.
    pub request_timeout: Duration,
}

impl ClusterConfig {
    /// The configuration the settings' `kubeconfig` names (`~/` in its path is the home
    /// directory), each request given `request_timeout`.
    pub fn of(kubeconfig: Option<&Kubeconfig>, request_timeout: Duration) -> ClusterConfig {
        ClusterConfig {
            kubeconfig: kubeconfig.and_then(|k| k.path.as_deref()).map(expand_home),
            context: kubeconfig.and_then(|k| k.context.clone()),
            request_timeout,
        }
    }

    /// The namespace kubectl would use without `-n`: the context's, or the service
    /// account's in a pod, else `default`. A configuration that cannot load is
    /// `Invalid`.
    pub async fn default_namespace(&self) -> Result<String> {
        Ok(load(self).await?.default_namespace)
    }

    /// The URL of the apiserver this configuration names: what tells one cluster from
    /// another. A configuration that cannot load is `Invalid`.
    pub async fn server(&self) -> Result<String> {
        Ok(load(self).await?.cluster_url.to_string())
    }

    /// Who this configuration sends its requests as, and to which apiserver. A
    /// configuration that cannot load is `Invalid`.
    pub async fn identity(&self) -> Result<Identity> {
        let (config, (context, user)) = load_named(self).await?;
        Ok(Identity {
            server: config.cluster_url.to_string(),
            context,
            user,
            credentials: identity::credentials(&config.auth_info),
        })
    }
}

/// `~/...` in a kubeconfig path means the home directory.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The apiserver, as three kube clients: one for unary requests (with a read timeout, so
/// a silent server cannot hang a call), one for log follows (without), and one for
/// watches, whose read timeout outlasts a watch connection's own (`timeoutSeconds`) by
/// the request timeout, so the watcher's lists cannot hang either.
#[derive(Clone)]
pub struct Cluster {
    unary: kube::Client,
    streaming: kube::Client,
    watching: kube::Client,
    /// The configuration the clients were built from (the watching client is rebuilt
    /// when the watch timeout changes).
    config: kube::Config,
    /// Whether every request is made by a hold-family call (see [`Cluster::hold_family`]).
    hold_family: bool,
    /// How long one unary request may wait for its answer.
    request_timeout: Duration,
    /// How long one watch connection is asked to stay open (`timeoutSeconds`).
    watch_timeout: Duration,
}

/// How long the apiserver is asked to keep one watch connection open
/// (`timeoutSeconds`). Short, because over HTTP/1.1 nothing but silence tells a
/// connection a proxy or load balancer dropped without a word from a quiet one: the
/// apiserver ends a quiet watch at this timeout, so a connection silent past it and a
/// margin ([`Cluster::watch_silence`]) is given up and the watch resumes from the last resource version
/// it saw, within a minute of going silent. A new connection each 40 s per watched
/// kind is the price; kube-runtime's default (290 s) took five minutes to notice, and
/// client-go, which pings over HTTP/2 instead, about 45 s.
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(40);
/// How long past [`WATCH_TIMEOUT`] a watch connection may stay silent (at most; a
/// shorter request timeout is taken instead) before it is given up.
pub(crate) const SILENCE_MARGIN: Duration = Duration::from_secs(10);

impl Cluster {
    /// Loads the configuration and builds the clients. A configuration that cannot load
    /// is `Invalid`.
    pub async fn connect(config: &ClusterConfig) -> Result<Cluster> {
        let kube_config = load(config).await?;
        Cluster::from_kube_config(kube_config, config.request_timeout)
    }

    /// Builds the clients from a loaded kube configuration.
    pub fn from_kube_config(
        mut config: kube::Config,
        request_timeout: Duration,
    ) -> Result<Cluster> {
        // The client owns its retries: kube's default retries 429/503/504 silently.
        config.default_retry = false;
        let mut unary = config.clone();
        unary.read_timeout = Some(request_timeout);
        unary.reset_reader_on_write = true;
        let mut streaming = config.clone();
        streaming.read_timeout = None;
        let watch_timeout = WATCH_TIMEOUT;
        Ok(Cluster {
            unary: build(unary)?,
            streaming: build(streaming)?,
            watching: build(watching(&config, silence_allowed(watch_timeout, request_timeout)))?,
            config,
            hold_family: false,
            request_timeout,
            watch_timeout,
        })
    }

    /// The client watches are made on.
    pub(crate) fn watching_client(&self) -> kube::Client {
        self.watching.clone()
    }

    /// The same apiserver, on the client without a read timeout: for watches and log
    /// follows, which may stay quiet for long.
    pub fn streaming(&self) -> Cluster {
        Cluster { unary: self.streaming.clone(), ..self.clone() }
    }

    /// How long one unary request may wait for its answer.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// How long one watch connection is asked to stay open (`timeoutSeconds`, at most
    /// [`WATCH_TIMEOUT`]); it is given up when silent past this and a margin
    /// ([`Cluster::watch_silence`]).
    pub fn watch_timeout(&self) -> Duration {
        self.watch_timeout
    }

    /// How long a watch connection may go without a byte before it is given up and
    /// the watch resumes on a new one: [`Cluster::watch_timeout`] and a margin.
    pub fn watch_silence(&self) -> Duration {
        silence_allowed(self.watch_timeout, self.request_timeout)
    }

    /// The same apiserver, asking watch connections to stay open `timeout` (whole
    /// seconds, 1 to [`WATCH_TIMEOUT`]): tests use a short one.
    pub fn with_watch_timeout(&self, timeout: Duration) -> Result<Cluster> {
        let timeout = timeout.clamp(Duration::from_secs(1), WATCH_TIMEOUT);
        let silence = silence_allowed(timeout, self.request_timeout);
        let watching = build(watching(&self.config, silence))?;
        Ok(Cluster { watch_timeout: timeout, watching, ..self.clone() })
    }

    /// The same apiserver, for the requests of one Open, Hold or Release made with `cx`:
    /// its reads and writes are classified as the hold family's
    /// ([`RequestClass::in_hold_family`]), so a deadline that passes before the write
    /// goes out is `Rejected` with the fixed message, whichever request of the call
    /// meets it. A call without a deadline (`Invalid`), cancelled, or whose deadline has
    /// passed is refused here, before anything is read.
    pub fn hold_family(&self, cx: &CallContext) -> Result<Cluster> {
        before_sending(RequestClass::HoldWrite, cx, Instant::now())?;
        Ok(Cluster { hold_family: true, ..self.clone() })
    }

    /// Whether a read may still be sent on `cx`: the error a read stopped by the call's
    /// end (cancelled, deadline passed) is given, the hold family's fixed `Rejected`
    /// included, for a caller that waited on something else first.
    pub fn may_send_read(&self, cx: &CallContext) -> Result<()> {
        let class = if self.hold_family { RequestClass::HoldRead } else { RequestClass::Read };
        before_sending(class, cx, Instant::now())
    }

    /// Runs one request of `class`, described by `what` (`get TrainJob ns/name`), and
    /// classifies its failure: the only place a request's failure becomes a sentinel.
    pub async fn call<T, F, Fut>(
        &self,
        cx: &CallContext,
        class: RequestClass,
        what: &str,
        request: F,
    ) -> Result<T>
    where
        F: FnOnce(kube::Client) -> Fut,
        Fut: Future<Output = kube::Result<T>>,
    {
        self.call_case(cx, class, what, request).await.map_err(|f| f.error)
    }

    /// [`Cluster::call`], keeping which case of the table decided a failure, for the
    /// typed outcomes of [`crate::Objects`].
    pub(crate) async fn call_case<T, F, Fut>(
        &self,
        cx: &CallContext,
        class: RequestClass,
        what: &str,
        request: F,
    ) -> std::result::Result<T, Failed>
    where
        F: FnOnce(kube::Client) -> Fut,
        Fut: Future<Output = kube::Result<T>>,
    {
        let class = if self.hold_family { class.in_hold_family() } else { class };
        let other = |error: Error| Failed { case: Case::Other, error };
        before_sending(class, cx, Instant::now()).map_err(|e| other(e.context(what)))?;
        let deadline = async {
            match cx.deadline {
                Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = request(self.unary.clone()) => result.map_err(|e| classify(class, what, e)),
            () = cx.cancelled() => Err(other(interrupted(class, what, "the call was cancelled"))),
            () = deadline => Err(other(deadline_in_flight(class, what))),
        }
    }
}

/// Builds a kube client. Building one runs an exec token source once: its failure is
/// the token source failing (Unauthorized), anything else a configuration that cannot
/// load.
fn build(config: kube::Config) -> Result<kube::Client> {
    kube::Client::try_from(config).map_err(|e| match e {
        // Never kube's text, nor the error as a source: both may hold credentials.
        kube::Error::Auth(_) => {
            Error::unauthorized(format!("the token source failed: {}", token_failure(&e)))
        }
        _ => Error::invalid(format!("cannot build a client from the configuration: {e}"))
            .with_source(e),
    })
}

/// How long a watch connection asked to stay open `watch_timeout` may go without a
/// byte: the apiserver ends it at that timeout, so silence past it and a margin means
/// the path is gone.
fn silence_allowed(watch_timeout: Duration, request_timeout: Duration) -> Duration {
    watch_timeout + request_timeout.min(SILENCE_MARGIN)
}

/// The watching client's configuration: reads time out after `read_timeout`.
fn watching(config: &kube::Config, read_timeout: Duration) -> kube::Config {
    let mut watching = config.clone();
    watching.read_timeout = Some(read_timeout);
    watching
}

/// A failed request: its error, and the case of the row that classified it.
pub(crate) struct Failed {
    pub(crate) case: Case,
    pub(crate) error: Error,
}

/// A failed request's error: the sentinel from the table, the message from the answer.
pub(crate) fn classify(class: RequestClass, what: &str, err: kube::Error) -> Failed {
    let outcome = outcome_of(&err);
    let (kind, when) = sentinel(class, &outcome);
    let case = case(class, &outcome);
    let message = match (&outcome, &err) {
        (Outcome::Refused(_), kube::Error::Api(status)) => {
            format!("{what}: {} ({} {}): {when}", status.message.trim(), status.code, status.reason)
        }
        (Outcome::Answered { code, reason }, kube::Error::Api(status)) => {
            let reason = if reason.is_empty() { String::new() } else { format!(" {reason}") };
            format!("{what}: {} ({code}{reason})", status.message.trim())
        }
        // Never kube's text, nor the error as a source: both may hold credentials.
        (Outcome::TokenFailed, _) => {
            let message = format!("{what}: the token source failed: {}", token_failure(&err));
            return Failed { case, error: Error::new(kind, message) };
        }
        (Outcome::NotSent, _) => format!("{what}: not sent: {err}"),
        _ if class.is_write() && kind == dispatch_core::Kind::OutcomeUnknown => {
            format!("{what}: no definite answer, it may have taken effect: {err}")
        }
        _ => format!("{what}: no definite answer: {err}"),
    };
    let error = match refinement(class, &outcome) {
        Some(refinement) => Error::refined(refinement, message),
        None => Error::new(kind, message),
    };
    Failed { case, error: error.with_source(err) }
}

/// A request interrupted in flight by the call's deadline. A hold-family read wrote
/// nothing and the call's write was never sent: `Rejected`, with the fixed message.
fn deadline_in_flight(class: RequestClass, what: &str) -> Error {
    if class == RequestClass::HoldRead {
        return Error::rejected(format!(
            "{what}: {DEADLINE_PASSED}: it passed while this read was in flight, so nothing was written"
        ));
    }
    interrupted(class, what, "the call's deadline passed")
}

/// A request interrupted in flight: it may have been sent.
fn interrupted(class: RequestClass, what: &str, why: &str) -> Error {
    let (kind, _) = sentinel(class, &Outcome::MaybeSent);
    let tail = if kind == dispatch_core::Kind::OutcomeUnknown {
        " while the request was in flight; it may have taken effect"
    } else {
        " while the request was in flight"
    };
    Error::new(kind, format!("{what}: {why}{tail}"))
}

/// Loads the kube configuration the settings name.
async fn load(config: &ClusterConfig) -> Result<kube::Config> {
    Ok(load_named(config).await?.0)
}

/// [`load`], with the kubeconfig context and user it was loaded from (both empty for
/// the in-cluster configuration).
async fn load_named(config: &ClusterConfig) -> Result<(kube::Config, (String, String))> {
    let options =
        KubeConfigOptions { context: config.context.clone(), ..KubeConfigOptions::default() };
    let invalid = |what: String, e: kube::config::KubeconfigError| {
        Error::invalid(format!("{what}: {e}")).with_source(e)
    };
    let (file, what) = match &config.kubeconfig {
        Some(path) => {
            let file = KubeconfigFile::read_from(path)
                .map_err(|e| invalid(format!("cannot load kubeconfig {}", path.display()), e))?;
            (file, format!("cannot use kubeconfig {}", path.display()))
        }
        None => match kube::Config::incluster() {
            Ok(c) if config.context.is_none() => return Ok((c, Default::default())),
            _ => {
                let no_config = "no in-cluster configuration and no usable kubeconfig";
                (
                    KubeconfigFile::read().map_err(|e| invalid(no_config.into(), e))?,
                    no_config.into(),
                )
            }
        },
    };
    let names = identity::names(&file, &options);
    let loaded =
        kube::Config::from_custom_kubeconfig(file, &options).await.map_err(|e| invalid(what, e))?;
    Ok((loaded, names))
}
