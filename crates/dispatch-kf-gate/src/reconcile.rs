//! The two reconcilers, run with kube-runtime while this replica leads: AdmissionChecks
//! whose controller is dispatch's are kept Active, and each Workload listing one gets
//! the gate's decision (`dispatch_kf_model::internal::readmission`) written.
//!
//! Every write is conditional on the resource version the decision was made on, so a
//! decision on a stale read never lands: the write conflicts and the Workload is
//! reconciled again from a fresh one.

use std::sync::Arc;
use std::time::Duration;

use dispatch_kf_model::internal::readmission::{self, Decision};
use dispatch_kf_model::keys;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::telemetry::{Object, Telemetry};
use crate::{Clock, GateError};

/// Every Workload is looked at again this often even without a change, so an
/// AdmissionCheck that became dispatch's later is picked up.
const RESYNC: Duration = Duration::from_secs(60);
/// Decisions of one Workload in one reconcile, the first on the cache's copy and each
/// after a conflict on a fresh read.
const CONFLICT_TRIES: u32 = 4;
/// A reconcile whose every decision lost a race is tried again this soon.
const AFTER_CONFLICT: Duration = Duration::from_millis(100);
/// Any other failure is retried after this.
const AFTER_ERROR: Duration = Duration::from_secs(5);

fn kueue(kind: &str) -> ApiResource {
    let (group, version) = keys::KUEUE_API_VERSION.split_once('/').unwrap_or(("", ""));
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

struct Context {
    client: kube::Client,
    workload: ApiResource,
    checks: Store<DynamicObject>,
    clock: Clock,
    telemetry: Telemetry,
}

impl Context {
    fn now(&self) -> jiff::Timestamp {
        (self.clock)()
    }

    /// The names of the AdmissionChecks dispatch's gate serves.
    fn our_checks(&self) -> Vec<String> {
        let checks = self.checks.state();
        let ours = checks.iter().filter(|c| readmission::is_dispatch_check(&c.data));
        ours.filter_map(|c| c.metadata.name.clone()).collect()
    }
}

fn apply_params() -> PatchParams {
    PatchParams::apply(keys::GATE_FIELD_MANAGER).force()
}

fn as_json(object: &DynamicObject) -> Result<Value, GateError> {
    serde_json::to_value(object).map_err(|e| GateError::Malformed(e.to_string()))
}

/// One Workload: for each of dispatch's checks it lists, decide and write. A write that
/// conflicts is decided again at once on a fresh read of the Workload, up to
/// [`CONFLICT_TRIES`] decisions in all: the cache the reconcile began from is likely as
/// stale as the decision that lost, and Kueue writes a Workload several times in the
/// moment its quota is reserved, just when the gate decides.
async fn reconcile_workload(
    object: Arc<DynamicObject>,
    cx: Arc<Context>,
) -> Result<Action, GateError> {
    cx.telemetry.reconciled(Object::Workload);
    cx.checks.wait_until_ready().await.map_err(|e| GateError::Malformed(e.to_string()))?;
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(cx.client.clone(), &namespace, &cx.workload);
    let mut read = as_json(&object)?;
    let mut tries = 1;
    loop {
        match decide_and_write(&api, &name, read, &cx).await {
            Err(e) if e.is_conflict() && tries < CONFLICT_TRIES => {
                cx.telemetry.reconcile_failed(Object::Workload);
                tries += 1;
                // A Workload deleted since is nothing more to decide.
                let Some(fresh) = api.get_opt(&name).await? else {
                    return Ok(Action::await_change());
                };
                read = as_json(&fresh)?;
            }
            done => return done.map(|()| Action::requeue(RESYNC)),
        }
    }
}

/// For each of dispatch's checks the Workload `read` lists, decides and writes, each
/// write conditional on the resource version of the read or of the write before.
async fn decide_and_write(
    api: &Api<DynamicObject>,
    name: &str,
    read: Value,
    cx: &Context,
) -> Result<(), GateError> {
    let mut current = read;
    for check in cx.our_checks() {
        let decision = readmission::decide(&current, &check);
        cx.telemetry.decided(&decision);
        if decision == Decision::Idle {
            continue;
        }
        let namespace = current.pointer("/metadata/namespace").and_then(Value::as_str);
        let workload = format!("{}/{name}", namespace.unwrap_or_default());
        tracing::info!(%workload, %check, ?decision, "deciding");
        if let Some(record) = readmission::record(&current, &decision) {
            let written = api.patch(name, &PatchParams::default(), &Patch::Merge(&record)).await?;
            current = as_json(&written)?;
        }
        if let Some(body) = readmission::check_apply(&current, &check, &decision, cx.now()) {
            let written = api.patch_status(name, &apply_params(), &Patch::Apply(&body)).await?;
            current = as_json(&written)?;
        }
    }
    Ok(())
}

/// One AdmissionCheck: dispatch's are marked Active.
async fn reconcile_check(
    object: Arc<DynamicObject>,
    cx: Arc<Context>,
) -> Result<Action, GateError> {
    cx.telemetry.reconciled(Object::AdmissionCheck);
    let current = as_json(&object)?;
    if let Some(body) = readmission::active_apply(&current, cx.now()) {
        let api: Api<DynamicObject> = Api::all_with(cx.client.clone(), &kueue("AdmissionCheck"));
        let name = object.metadata.name.clone().unwrap_or_default();
        api.patch_status(&name, &apply_params(), &Patch::Apply(&body)).await?;
        tracing::info!(admission_check = %name, "marked Active");
    }
    Ok(Action::await_change())
}

fn retry(object: Object, error: &GateError, cx: &Context) -> Action {
    cx.telemetry.reconcile_failed(object);
    if error.is_conflict() {
        Action::requeue(AFTER_CONFLICT)
    } else {
        tracing::warn!(%error, "reconcile failed; retrying");
        Action::requeue(AFTER_ERROR)
    }
}

fn retry_workload(_: Arc<DynamicObject>, error: &GateError, cx: Arc<Context>) -> Action {
    retry(Object::Workload, error, &cx)
}

fn retry_check(_: Arc<DynamicObject>, error: &GateError, cx: Arc<Context>) -> Action {
    retry(Object::AdmissionCheck, error, &cx)
}

/// Runs both reconcilers until `stop` is cancelled.
pub(crate) async fn run(
    client: kube::Client,
    clock: Clock,
    telemetry: Telemetry,
    stop: CancellationToken,
) {
    let check = kueue("AdmissionCheck");
    let workload = kueue("Workload");
    let checks = Controller::new_with(
        Api::<DynamicObject>::all_with(client.clone(), &check),
        watcher::Config::default(),
        check,
    );
    let workloads = Controller::new_with(
        Api::<DynamicObject>::all_with(client.clone(), &workload),
        watcher::Config::default(),
        workload.clone(),
    );
    let cx = Arc::new(Context { client, workload, checks: checks.store(), clock, telemetry });
    // Failed reconciles are logged and counted by `retry`; what reaches here is already handled.
    let checks = checks
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(reconcile_check, retry_check, cx.clone())
        .for_each(|_| futures::future::ready(()));
    let workloads = workloads
        .graceful_shutdown_on(stop.cancelled_owned())
        .run(reconcile_workload, retry_workload, cx)
        .for_each(|_| futures::future::ready(()));
    futures::future::join(checks, workloads).await;
}
