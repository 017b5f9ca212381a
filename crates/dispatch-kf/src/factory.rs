//! Factory and preflight: connect, check what the cluster serves and what the adapter
//! may do, run the preflight probe, and decide whether the Backend writes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dispatch_core::{CallContext, Capability, Error, Result, Support};
use dispatch_kf_client::resources::{
    JOB, JOB_SET, POD, Resource, TRAIN_JOB, TRAINING_RUNTIME, WORKLOAD,
};
use dispatch_kf_client::{Cluster, ClusterConfig, NodeReads, Permission};
use dispatch_kf_model::internal::capabilities::{self, PreflightFacts, Writability};
use dispatch_kf_model::internal::served;
use dispatch_kf_model::{Mode, Settings, keys};
use jiff::Timestamp;

use crate::evidence::Evidence;
use crate::hub::Hub;
use crate::kueue_mode;
use crate::{Inner, KubeflowBackend};

/// What Factory findings.
#[derive(Clone, Debug)]
pub struct Preflight {
    /// The probed facts.
    pub facts: PreflightFacts,
    /// Whether the Backend writes, observes only, or is read-only.
    pub access: Writability,
    /// Every capability's answer, without a spec.
    pub capabilities: BTreeMap<Capability, Support>,
    /// How the adapter may read Nodes.
    pub nodes: NodeReads,
    /// Whether the adapter may list batch Jobs: StopJob then also waits for the Jobs of
    /// the job's JobSets, which make pods again while they remain.
    pub jobs_listable: bool,
    /// Permissions the adapter may use but lacks, each with what degrades without it
    /// (listing Jobs and Nodes, deleting orphaned JobSets, Jobs and pods); empty when it has them
    /// all.
    pub lacking: Vec<String>,
    /// Kueue mode with the readmission gate proven: when the gate controller's last
    /// renewal of its Lease runs out (`renewTime + leaseDurationSeconds`). The proof
    /// (the Lease fresh, the AdmissionCheck Active) says nothing after that; `None` when
    /// there is no proof.
    pub gate_proof_expires: Option<Timestamp>,
}

/// The group-versions the adapter needs, by mode.
fn required_group_versions(mode: Mode) -> Vec<&'static str> {
    let mut gvs = vec![keys::TRAINER_API_VERSION, keys::JOBSET_API_VERSION];
    if mode == Mode::Kueue {
        gvs.push(keys::KUEUE_API_VERSION);
    }
    gvs
}

const fn permission(verb: &'static str, resource: Resource) -> Permission {
    Permission { verb, resource, subresource: "" }
}

/// The writes the adapter makes (Start, Open/Hold/Release in plain mode, Stop, StopJob):
/// without any one of them it cannot write at all, so it observes only.
fn write_permissions() -> Vec<Permission> {
    [
        ("create", TRAIN_JOB),
        ("update", TRAIN_JOB),
        ("delete", TRAIN_JOB),
        ("create", TRAINING_RUNTIME),
        ("patch", TRAINING_RUNTIME),
        ("delete", TRAINING_RUNTIME),
    ]
    .into_iter()
    .map(|(verb, resource)| permission(verb, resource))
    .collect()
}

/// The writes StopJob makes for what the cluster's controllers would do in time (the
/// deletes of orphaned JobSets, Jobs and pods the garbage collector makes, the Job
/// controller's tracking finalizer taken off a deleted pod whose Job is gone), each
/// with what a StopJob that needs it meets without it: *unauthorized*. Nothing else
/// changes.
fn orphan_permissions() -> Vec<(Permission, &'static str)> {
    const ORPHANS: &str = "StopJob cannot remove orphaned objects of that kind";
    vec![
        (permission("delete", JOB_SET), ORPHANS),
        (permission("delete", JOB), ORPHANS),
        (permission("delete", POD), ORPHANS),
        (
            permission("patch", POD),
            "StopJob cannot take the Job controller's finalizer off a deleted pod whose Job is gone",
        ),
    ]
}

/// The permissions of `wanted` the adapter's identity lacks, as `verb plural`, asked
/// together.
async fn not_granted(
    cluster: &Cluster,
    cx: &CallContext,
    ns: &str,
    wanted: Vec<Permission>,
) -> Result<Vec<String>> {
    let wanted = wanted.into_iter().map(|p| (p, ())).collect();
    Ok(not_granted_with(cluster, cx, ns, wanted).await?.into_iter().map(|(p, ())| p).collect())
}

/// [`not_granted`] of permissions that each carry a `T`, which each answer keeps.
async fn not_granted_with<T>(
    cluster: &Cluster,
    cx: &CallContext,
    ns: &str,
    wanted: Vec<(Permission, T)>,
) -> Result<Vec<(String, T)>> {
    let answers =
        futures::future::try_join_all(wanted.iter().map(|(p, _)| cluster.can_i(cx, ns, p))).await?;
    Ok(wanted
        .into_iter()
        .zip(answers)
        .filter(|(_, may)| !may)
        .map(|((p, t), _)| (format!("{} {}", p.verb, p.resource.plural), t))
        .collect())
}

/// The permissions without which the adapter cannot even observe.
fn read_permissions(mode: Mode) -> Vec<Permission> {
    let mut reads = Vec::new();
    for resource in [TRAIN_JOB, JOB_SET, POD, TRAINING_RUNTIME] {
        for verb in ["get", "list", "watch"] {
            reads.push(permission(verb, resource));
        }
    }
    if mode == Mode::Kueue {
        for verb in ["get", "list", "watch"] {
            reads.push(permission(verb, WORKLOAD));
        }
    }
    reads
}

impl KubeflowBackend {
    /// Factory: loads the cluster configuration, checks the group-versions and read
    /// permissions, runs the preflight probe (unless read-only), and decides whether
    /// the Backend writes.
    pub async fn new(settings: Settings, cx: &CallContext) -> Result<KubeflowBackend> {
        let cluster = connect(&settings).await?;
        KubeflowBackend::with_cluster(settings, cluster, cx).await
    }

    /// Factory on a cluster already connected (tests, and the embedded simulated
    /// cluster of the demo): the cluster serves what the adapter needs, the adapter may
    /// read what it observes, what else it may do is findings, then the preflight probe
    /// runs unless the Backend will not write.
    pub async fn with_cluster(
        settings: Settings,
        cluster: Cluster,
        cx: &CallContext,
    ) -> Result<KubeflowBackend> {
        require_served_apis(&cluster, cx, settings.mode).await?;
        require_read_permissions(&cluster, cx, &settings).await?;
        // A Backend meant to write is refused on a Trainer it could never gate, before
        // anything that would only make it observe-only.
        if !settings.read_only {
            require_gatable_trainer(&cluster, cx).await?;
        }
        let findings = PreflightFindings::gather(&cluster, cx, &settings).await?;
        let mut facts = findings.facts.clone();
        // Read-only, or observe-only whatever the probe finds: nothing to probe.
        if capabilities::access(&facts) != Writability::Writable {
            facts.hold_round_trip = Err("not run, because the backend does not write".to_owned());
            return Ok(findings.backend(facts, settings, cluster));
        }
        // The probe runs as a writable Backend; what it finds decides the real one.
        let probing = findings.backend(facts.clone(), settings.clone(), cluster.clone());
        let (started, round_trip) = probing.inner.probe(cx).await?;
        facts.probe_started = started;
        facts.hold_round_trip = round_trip;
        Ok(findings.backend(facts, settings, cluster))
    }
}

/// The cluster the settings name, each request given `timeouts.request`.
async fn connect(settings: &Settings) -> Result<Cluster> {
    let timeout = settings.timeouts.request.to_std().unwrap_or(Duration::from_secs(30));
    Cluster::connect(&ClusterConfig::of(settings.kubeconfig.as_ref(), timeout)).await
}

/// Discovery: the cluster serves every group-version the mode needs.
async fn require_served_apis(cluster: &Cluster, cx: &CallContext, mode: Mode) -> Result<()> {
    for gv in required_group_versions(mode) {
        if !cluster.serves(cx, gv).await? {
            return Err(Error::unsupported(format!(
                "the cluster does not serve {gv}: install Kubeflow Trainer and JobSet{} at a version docs/compatibility.md lists as supported",
                if mode == Mode::Kueue { " and Kueue" } else { "" }
            )));
        }
    }
    Ok(())
}

/// A Backend meant to write (settings not read-only): its Trainer's TrainJob has the
/// field the adapter writes its gates into (`served.rs`), read from the schema the
/// apiserver serves. Only then, because the document is large (about 1 MB for the
/// Trainer's kinds) and observing needs no field of a particular Trainer version.
async fn require_gatable_trainer(cluster: &Cluster, cx: &CallContext) -> Result<()> {
    match cluster.openapi(cx, keys::TRAINER_API_VERSION).await? {
        Some(schema) => {
            served::trainer_supports_runtime_patches(&schema).map_err(Error::unsupported)
        }
        None => Ok(()),
    }
}

/// Access reviews: the adapter may read everything it must observe.
async fn require_read_permissions(
    cluster: &Cluster,
    cx: &CallContext,
    settings: &Settings,
) -> Result<()> {
    let missing =
        not_granted(cluster, cx, &settings.namespace, read_permissions(settings.mode)).await?;
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::unauthorized(format!(
            "the adapter may not read what it must observe: {}",
            missing.join(", ")
        )))
    }
}

/// What Factory learns of the cluster before the probe.
struct PreflightFindings {
    /// The facts, assuming the probe's round trip works, so that the Backend that runs
    /// the probe may hold and release.
    facts: PreflightFacts,
    /// What the adapter may read beyond what it must.
    reads: Reads,
    /// The permissions the adapter lacks and works without, each with what it loses.
    lacking: Vec<String>,
    /// When the proof of a proven readmission gate runs out.
    gate_proof_expires: Option<Timestamp>,
}

impl PreflightFindings {
    /// Access reviews for what the adapter may do beyond reading, and in Kueue mode
    /// the proof of the readmission gate.
    async fn gather(
        cluster: &Cluster,
        cx: &CallContext,
        settings: &Settings,
    ) -> Result<PreflightFindings> {
        let ns = &settings.namespace;
        let nodes = cluster.node_reads(cx, ns).await?;
        let logs = Permission { verb: "get", resource: POD, subresource: "log" };
        let may_read_logs = cluster.can_i(cx, ns, &logs).await?;
        let may_update_workloads = match settings.mode {
            Mode::Kueue => cluster.can_i(cx, ns, &permission("update", WORKLOAD)).await?,
            Mode::Plain => false,
        };
        let (missing_writes, jobs_listable, mut lacking) = if settings.read_only {
            (Vec::new(), false, Vec::new())
        } else {
            let jobs_listable = cluster.can_i(cx, ns, &permission("list", JOB)).await?;
            let orphans = not_granted_with(cluster, cx, ns, orphan_permissions()).await?;
            let unlisted = (!jobs_listable).then(|| {
                "list jobs: StopJob cannot see the Jobs a deleted JobSet leaves, which make its pods again until the garbage collector removes them".to_owned()
            });
            let lacking = orphans
                .into_iter()
                .map(|(p, without)| format!("{p}: {without}"))
                .chain(unlisted)
                .collect::<Vec<_>>();
            (not_granted(cluster, cx, ns, write_permissions()).await?, jobs_listable, lacking)
        };
        if nodes == NodeReads::EachByName {
            lacking.push("list nodes: Find and Ceased read each Node of a job by a get of its own, one request per Node instead of one in all".to_owned());
        }
        for p in &lacking {
            tracing::warn!(permission = %p, "a permission the adapter uses is missing");
        }
        let (readmission_gate, gate_proof_expires) = match settings.mode {
            Mode::Kueue => kueue_mode::prove_readmission_gate(cluster, settings, cx).await?,
            Mode::Plain => (Err("not in Kueue mode".to_owned()), None),
        };
        let facts = PreflightFacts {
            mode: settings.mode,
            read_only: settings.read_only,
            hold_round_trip: Ok(()),
            may_update_workloads,
            readmission_gate,
            may_read_logs,
            probe_started: Ok(()),
            missing_writes,
        };
        let reads = Reads { nodes, jobs: jobs_listable };
        Ok(PreflightFindings { facts, reads, lacking, gate_proof_expires })
    }

    /// The Backend these facts make.
    fn backend(
        &self,
        facts: PreflightFacts,
        settings: Settings,
        cluster: Cluster,
    ) -> KubeflowBackend {
        let preflight =
            Preflight::of(facts, self.reads, self.lacking.clone(), self.gate_proof_expires);
        KubeflowBackend::assemble(settings, cluster, preflight)
    }
}

impl Preflight {
    /// The preflight these facts make: whether the Backend writes, and every
    /// capability's answer, follow from them.
    pub fn of(
        facts: PreflightFacts,
        reads: Reads,
        lacking: Vec<String>,
        gate_proof_expires: Option<Timestamp>,
    ) -> Preflight {
        Preflight {
            access: capabilities::access(&facts),
            capabilities: capabilities::answers(&facts, None),
            gate_proof_expires: gate_proof_expires.filter(|_| facts.readmission_gate.is_ok()),
            facts,
            nodes: reads.nodes,
            jobs_listable: reads.jobs,
            lacking,
        }
    }
}

/// What the adapter may read beyond what it must (Factory asks; without these it
/// degrades, as `docs/rbac.md` says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    /// Read Nodes, and how.
    pub nodes: NodeReads,
    /// List batch Jobs.
    pub jobs: bool,
}

impl KubeflowBackend {
    /// A Backend from a preflight made earlier (a command's cache of the last one it
    /// trusted): it connects, and runs no check and no probe. The caller vouches that
    /// the preflight is this cluster's and these settings', and young enough to trust;
    /// a supervisor's long-lived Backend is made by [`KubeflowBackend::new`], whole.
    pub async fn with_preflight(
        settings: Settings,
        preflight: Preflight,
    ) -> Result<KubeflowBackend> {
        let cluster = connect(&settings).await?;
        Ok(KubeflowBackend::assemble(settings, cluster, preflight))
    }

    fn assemble(settings: Settings, cluster: Cluster, preflight: Preflight) -> KubeflowBackend {
        let evidence = Arc::new(Evidence::default());
        KubeflowBackend {
            inner: Arc::new(Inner {
                hub: Hub::new(
                    cluster.clone(),
                    &settings.namespace,
                    settings.mode,
                    evidence.clone(),
                ),
                settings,
                cluster,
                preflight,
                closed: AtomicBool::new(false),
                in_flight: Default::default(),
                evidence,
            }),
        }
    }
}
