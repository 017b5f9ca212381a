//! Start: the nine steps of `docs/backend.md#start`, in order.
//!
//! Its invariant, which the supervisor's records depend on: a refusal (Invalid,
//! Unsupported, Rejected) leaves no TrainJob behind; Unreachable means no TrainJob was
//! created; OutcomeUnknown means the TrainJob exists or Find reports the job InFlight.

use std::time::Duration;

use dispatch_core::{
    CallContext, Error, JobSpec, Kind, ObjectKind, ObjectRef, Result, StartRequest,
};
use dispatch_kf_client::error_map::RequestClass;
use dispatch_kf_client::resources::{CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME};
use dispatch_kf_client::{Created, Deleted};
use dispatch_kf_model::internal::capabilities::{self, Writability};
use dispatch_kf_model::internal::{json, readback};
use dispatch_kf_model::{
    Mode, Purpose, Rendered, RuntimeKind, RuntimeRef, SourceRuntime, keys, render, runtime_ref,
};
use serde_json::{Value, json};

use crate::{Inner, edge};

/// How many times step 6 sends the TrainJob's create while the Trainer's webhook has
/// not seen the runtime copy: 100 ms + 200 + 400 + 800 + 1.6 s of waiting at most.
const WEBHOOK_TRIES: usize = 6;

/// The runtime copy a Start runs on.
struct RuntimeCopy {
    name: String,
    uid: String,
    /// Whether this call created it (rather than reusing an earlier Start's).
    made_here: bool,
}

impl Inner {
    /// Start, step 1: refuses a closed, read-only or observe-only Backend.
    pub(crate) async fn start(
        &self,
        cx: &CallContext,
        request: &StartRequest,
    ) -> Result<ObjectRef> {
        self.check_open()?;
        match &self.preflight.access {
            Writability::Writable => {}
            Writability::ReadOnly => return Err(Error::read_only("the backend is read-only")),
            Writability::ObserveOnly { missing } => {
                return Err(Error::unsupported(format!("the backend is observe-only: {missing}")));
            }
        }
        self.start_for_purpose(cx, request, Purpose::Job).await
    }

    /// Steps 2 to 9, for a job or for the preflight probe.
    pub(crate) async fn start_for_purpose(
        &self,
        cx: &CallContext,
        request: &StartRequest,
        purpose: Purpose,
    ) -> Result<ObjectRef> {
        // 2. The runtime the request names, when it names one of the configured runtimes;
        //    render refuses the rest (3 and 4), before anything is created.
        let source = match runtime_ref(&request.spec) {
            Ok(r) if self.settings.runtimes.contains(&r) => self.read_runtime(cx, &r).await?,
            _ => None,
        };
        let rendered =
            render(&self.settings, request, source.as_ref(), &edge::token_suffix()?, purpose)?;
        let name = rendered.train_job["metadata"]["name"].as_str().unwrap_or_default().to_owned();

        // 5. The runtime copy, reused on a retried Start only if nobody owns it and its
        //    spec is the source's.
        let copy = self.create_copy(cx, &rendered, &name).await?;

        // 6. The TrainJob.
        let sent = edge::now();
        let created = match self.create_train_job(cx, &rendered.train_job).await {
            Ok(Created::Made(created)) => created,
            // An earlier Start of this submission made it (its create went unanswered):
            // it may run on the copy, so the copy stays, whoever made it.
            Ok(Created::Exists(existing)) => {
                return Err(Error::rejected(format!(
                    "a TrainJob named {name} already exists (UID {}): an earlier Start of this submission made it, and its runtime copy is left for it",
                    Some(json::uid(&existing)).filter(|u| !u.is_empty()).unwrap_or("unknown")
                )));
            }
            Err(e) if e.is(Kind::OutcomeUnknown) => {
                let submission = u32::try_from(request.submission).unwrap_or_default();
                self.in_flight.mark(
                    &request.job,
                    submission,
                    sent,
                    self.settings.timeouts.call_bound,
                );
                return Err(e.context("the TrainJob's create went unanswered: it may exist, and Find reports the job InFlight"));
            }
            Err(e) => {
                self.delete_copy(cx, &copy).await;
                return Err(e);
            }
        };
        let uid = json::uid(&created).to_owned();
        let object = self.reference(ObjectKind::TrainJob, &name, &uid);

        // 7 to 9: a failure stops the TrainJob, and refuses.
        match self.confirm(cx, &rendered, &object, &copy, purpose).await {
            Ok(()) => Ok(object),
            Err(cause) => Err(self.stop_refused(cx, cause, object).await),
        }
    }

    async fn read_runtime(
        &self,
        cx: &CallContext,
        r: &RuntimeRef,
    ) -> Result<Option<SourceRuntime>> {
        let resource = match r.kind {
            RuntimeKind::TrainingRuntime => TRAINING_RUNTIME,
            RuntimeKind::ClusterTrainingRuntime => CLUSTER_TRAINING_RUNTIME,
        };
        let found =
            self.cluster.objects(resource, &self.settings.namespace).get_opt(cx, &r.name).await?;
        found.map(|o| SourceRuntime::from_value(&o)).transpose()
    }

    /// The runtime Capabilities checks for a spec: it must be configured, exist and pass
    /// the runtime rules.
    pub(crate) async fn runtime_for_capabilities(
        &self,
        cx: &CallContext,
        spec: &JobSpec,
    ) -> Result<SourceRuntime> {
        let r = runtime_ref(spec)?;
        let source = if self.settings.runtimes.contains(&r) {
            self.read_runtime(cx, &r).await?
        } else {
            None
        };
        capabilities::check_runtime(&self.settings.runtimes, &r, source.as_ref(), spec)?;
        source.ok_or_else(|| Error::unsupported(format!("runtime {r} does not exist")))
    }

    /// Step 6's create. While the Trainer's webhook refuses it because its cache has not
    /// yet seen the runtime copy just made ([`keys::says_runtime_not_seen`]), the
    /// create is sent again, [`WEBHOOK_TRIES`] times in all, 100 ms apart and doubling,
    /// within the call: the refusal wrote nothing.
    async fn create_train_job(&self, cx: &CallContext, train_job: &Value) -> Result<Created> {
        let train_jobs = self.cluster.objects(TRAIN_JOB, &self.settings.namespace);
        let mut wait = Duration::from_millis(100);
        for _ in 1..WEBHOOK_TRIES {
            match train_jobs.create_or_read(cx, train_job).await {
                Err(e) if keys::says_runtime_not_seen(e.message()) => {
                    tracing::debug!(error = %e, "the Trainer's webhook has not seen the runtime copy yet");
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = cx.cancelled() => return Err(e),
                        () = edge::deadline(cx) => return Err(e),
                    }
                    wait *= 2;
                }
                other => return other,
            }
        }
        train_jobs.create_or_read(cx, train_job).await
    }

    /// Step 5: creates the runtime copy, or reuses the one of its name when nobody owns
    /// it and its spec is the source's.
    async fn create_copy(
        &self,
        cx: &CallContext,
        rendered: &Rendered,
        name: &str,
    ) -> Result<RuntimeCopy> {
        let copies = self.cluster.objects(TRAINING_RUNTIME, &self.settings.namespace);
        let existing = match copies.create_or_read(cx, &rendered.runtime_copy).await {
            Ok(Created::Made(made)) => {
                return Ok(RuntimeCopy {
                    name: name.to_owned(),
                    uid: json::uid(&made).to_owned(),
                    made_here: true,
                });
            }
            Ok(Created::Exists(existing)) => existing,
            Err(e) if e.is(Kind::OutcomeUnknown) => {
                return Err(Error::unreachable(format!(
                    "the runtime copy's create went unanswered, so no TrainJob was created (a retried Start reuses the copy): {}",
                    e.message()
                ))
                .with_source(e));
            }
            Err(e) => return Err(e),
        };
        let owned = existing
            .pointer("/metadata/ownerReferences")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|o| !o.is_empty());
        let same = existing.get("spec") == rendered.runtime_copy.get("spec");
        match (owned, same) {
            (false, true) => {
                let uid = json::uid(&existing).to_owned();
                Ok(RuntimeCopy { name: name.to_owned(), uid, made_here: false })
            }
            (true, _) => Err(Error::rejected(format!(
                "a runtime copy named {name} exists and is owned: this submission was already started"
            ))),
            (false, false) => Err(Error::rejected(format!(
                "a runtime copy named {name} exists with a spec other than its source runtime's"
            ))),
        }
    }

    /// Deletes the runtime copy after its TrainJob could not be made, only when this
    /// call made it, and only that instance (UID precondition): a copy reused from an
    /// earlier Start may be what that Start's TrainJob runs on. A failure here leaves
    /// an unowned copy that a retried Start reuses.
    async fn delete_copy(&self, cx: &CallContext, copy: &RuntimeCopy) {
        if !copy.made_here {
            return;
        }
        let copies = self.cluster.objects(TRAINING_RUNTIME, &self.settings.namespace);
        match copies.delete(cx, &copy.name, Some(&copy.uid)).await {
            Ok(Deleted::Deleted | Deleted::Gone) => {}
            Ok(Deleted::PreconditionFailed) => {
                tracing::warn!(
                    copy = copy.name,
                    "the runtime copy was replaced meanwhile: left alone"
                );
            }
            Err(e) => {
                tracing::warn!(copy = copy.name, error = %e, "could not delete the runtime copy")
            }
        }
    }

    /// Steps 7 to 9.
    async fn confirm(
        &self,
        cx: &CallContext,
        rendered: &Rendered,
        object: &ObjectRef,
        copy: &RuntimeCopy,
        purpose: Purpose,
    ) -> Result<()> {
        // 7. The copy's owner is the TrainJob, so deleting the TrainJob collects it.
        let owner = json!({"metadata": {"ownerReferences": [{
            "apiVersion": keys::TRAINER_API_VERSION, "kind": keys::KIND_TRAIN_JOB,
            "name": object.name, "uid": object.uid, "controller": true, "blockOwnerDeletion": true,
        }]}});
        let copies = self.cluster.objects(TRAINING_RUNTIME, &self.settings.namespace);
        if let Err(e) = copies.patch_merge(cx, RequestClass::Write, &object.name, &owner).await {
            self.delete_copy(cx, copy).await;
            let message = format!(
                "the runtime copy's owner could not be set to the TrainJob: {}",
                e.message()
            );
            // A patch that provably stored nothing (the apiserver or a webhook away) is
            // a passing fault: once the TrainJob is stopped, "try again" (`stop_refused`).
            let failure = if e.is(Kind::Unreachable) {
                Error::unreachable(message)
            } else {
                Error::rejected(message)
            };
            return Err(failure.with_source(e));
        }
        // 8. Read back what was written.
        let held =
            self.cluster.objects(TRAIN_JOB, &self.settings.namespace).get(cx, &object.name).await?;
        readback::compare(&rendered.train_job, &held, self.settings.mode)?;
        // 9. Kueue mode: the Workload, gated and checked, and a job's checked again at
        //    its admission (the probe is never admitted).
        if self.settings.mode == Mode::Kueue {
            let workload = self.await_workload(cx, &object.uid).await?;
            if purpose == Purpose::Job {
                self.refuse_if_kueue_would_not_check(cx, &workload).await?;
            }
        }
        Ok(())
    }

    /// Stops a TrainJob Start is refusing: the refusal carries the reference; a stop
    /// that fails too makes the outcome unknown.
    async fn stop_refused(&self, cx: &CallContext, cause: Error, object: ObjectRef) -> Error {
        if cause.is(Kind::OutcomeUnknown) {
            return cause.with_object(object);
        }
        match self.delete_object(cx, &object).await {
            // Stopped: nothing is left running, so whatever failed is a refusal.
            Ok(()) if cause.is(Kind::Rejected) || cause.is(Kind::Unsupported) => {
                cause.with_object(object)
            }
            // But a passing fault stays one: nothing of the attempt is left, and the
            // same Start can be made again (docs/errors.md, the table of Start's answers).
            Ok(()) if cause.is(Kind::Unreachable) => Error::unreachable(format!(
                "{}; the TrainJob was stopped, nothing of this attempt is left: start it again",
                cause.message()
            ))
            .with_source(cause)
            .with_object(object),
            Ok(()) => Error::rejected(format!("{}; the TrainJob was stopped", cause.message()))
                .with_source(cause)
                .with_object(object),
            Err(stop) => Error::outcome_unknown(format!(
                "{}; stopping the TrainJob failed too, so it may remain: {}",
                cause.message(),
                stop.message()
            ))
            .with_source(cause)
            .with_object(object),
        }
    }
}
