//! [`Objects`]: the requests the adapter makes on one kind in one namespace, each
//! classified through [`Cluster::call`], with the only retries the client owns: lists
//! restart after 410 up to three times, and read-modify-write retries a conflict up to
//! eight tries in all.

use dispatch_core::{CallContext, Error, Kind, Result};
use dispatch_kf_model::internal::answer::{self, Listed};
use dispatch_kf_model::internal::json;
use dispatch_kf_model::view::View;
use kube::api::{
    DeleteParams, DynamicObject, GetParams, ListParams, Patch, PatchParams, PostParams,
    Preconditions, PropagationPolicy,
};
use kube::core::Request;
use serde_json::Value;

use crate::cluster::{Cluster, Failed};
use crate::error_map::{Case, RequestClass};
use crate::resources::Resource;
use dispatch_kf_model::internal::gates::Edit;

/// A request as kube's builders make it, or why they could not.
type Built = std::result::Result<http::Request<Vec<u8>>, kube::core::request::Error>;

/// How many times a list restarts after its resource version expired.
pub const LIST_RESTARTS: usize = 3;

/// How many objects one page of a list asks for: kubectl's `--chunk-size` default.
pub const LIST_PAGE: u32 = 500;
/// How many objects one page of a list of one job's objects asks for
/// ([`Objects::of_one_job`]): every pod of the largest jobs in one answer, so that a
/// Find's requests do not grow with the job's ranks. The job's objects are held whole
/// once read, so smaller pages would only add requests.
pub const JOB_LIST_PAGE: u32 = 10_000;
/// How many tries a read-modify-write makes in all before a conflict is final.
pub const CONFLICT_TRIES: usize = 8;

/// What a create answered: the only failure that means "it exists" is 409
/// AlreadyExists, decided by the error table's [`Case::AlreadyExists`] row.
#[derive(Clone, Debug)]
#[must_use]
pub enum Created {
    /// This create made the object: as the apiserver returned it.
    Made(Value),
    /// An object of the name already existed: as it was read just after.
    Exists(Value),
}

/// What a delete answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Deleted {
    /// The object is deleted (in the background: its dependents follow).
    Deleted,
    /// There was no object of the name (404).
    Gone,
    /// The UID precondition failed (409 Conflict): the name is held by another object,
    /// or the object changed; nothing was deleted.
    PreconditionFailed,
}

/// Requests on one kind, in one namespace (or cluster-wide for cluster-scoped kinds).
///
/// Whole objects travel as the model's JSON (`serde_json::Value`: what render makes,
/// the gates edit and read-back compares); what classification reads comes as the
/// model's views, read from the answer's bytes by [`dispatch_kf_model::internal::answer`].
/// Either way an answer is decoded once, from its bytes.
pub struct Objects<'a> {
    cluster: &'a Cluster,
    pub(crate) resource: Resource,
    pub(crate) namespace: Option<String>,
    /// How many objects a page of a list asks for.
    page: u32,
}

impl Cluster {
    /// Requests on `resource` in `namespace` (ignored for cluster-scoped kinds).
    pub fn objects(&self, resource: Resource, namespace: &str) -> Objects<'_> {
        let namespace = resource.namespaced.then(|| namespace.to_owned());
        Objects { cluster: self, resource, namespace, page: LIST_PAGE }
    }

    /// Requests on `resource` in every namespace (the same as [`Cluster::objects`] for
    /// a cluster-scoped kind).
    pub fn objects_everywhere(&self, resource: Resource) -> Objects<'_> {
        Objects { cluster: self, resource, namespace: None, page: LIST_PAGE }
    }
}

impl Objects<'_> {
    pub(crate) fn cluster(&self) -> &Cluster {
        self.cluster
    }

    /// These requests, their lists selecting one job's objects: pages of
    /// [`JOB_LIST_PAGE`].
    pub fn of_one_job(self) -> Self {
        Objects { page: JOB_LIST_PAGE, ..self }
    }

    /// kube's request builder for the collection's URL.
    pub(crate) fn request(&self) -> Request {
        let ar = self.resource.api_resource();
        Request::new(<DynamicObject as kube::Resource>::url_path(&ar, self.namespace.as_deref()))
    }

    /// `get TrainJob training/dj-...`: how a request is named in messages.
    pub(crate) fn what(&self, verb: &str, name: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{verb} {} {ns}/{name}", self.resource.kind),
            None => format!("{verb} {} {name}", self.resource.kind),
        }
    }

    /// Sends the request `build` makes, classified as `class`, and decodes the
    /// answer's bytes with `decode`: an answer that cannot be read is classified as
    /// kube's own decoding failures are.
    async fn send<T>(
        &self,
        cx: &CallContext,
        class: RequestClass,
        what: &str,
        build: impl FnOnce(&Request) -> Built,
        decode: impl FnOnce(&[u8]) -> serde_json::Result<T>,
    ) -> std::result::Result<T, Failed> {
        let request = build(&self.request()).map_err(kube::Error::BuildRequest);
        self.cluster
            .call_case(cx, class, what, |client| async move {
                let text = client.request_text(request?).await?;
                decode(text.as_bytes()).map_err(kube::Error::SerdeError)
            })
            .await
    }

    /// Gets one object whole; a missing one is `NotFound`.
    pub async fn get(&self, cx: &CallContext, name: &str) -> Result<Value> {
        let what = self.what("get", name);
        let build = |r: &Request| r.get(name, &GetParams::default());
        self.send(cx, RequestClass::Read, &what, build, whole).await.map_err(|f| f.error)
    }

    /// Gets one object whole, or `None` when there is none.
    pub async fn get_opt(&self, cx: &CallContext, name: &str) -> Result<Option<Value>> {
        absent_as_none(self.get(cx, name).await)
    }

    /// Gets what classification reads of one object; a missing one is `NotFound`.
    pub async fn get_view(&self, cx: &CallContext, name: &str) -> Result<View> {
        let what = self.what("get", name);
        let build = |r: &Request| r.get(name, &GetParams::default());
        let got = self.send(cx, RequestClass::Read, &what, build, answer::read_object).await;
        got.map_err(|f| f.error)
    }

    /// Gets what classification reads of one object, or `None` when there is none.
    pub async fn get_view_opt(&self, cx: &CallContext, name: &str) -> Result<Option<View>> {
        absent_as_none(self.get_view(cx, name).await)
    }

    /// Lists what classification reads of the objects matching `selector` (empty:
    /// all), [`LIST_PAGE`] objects a request (unless [`Objects::of_one_job`]), as kubectl
    /// pages a list, so no answer
    /// holds a whole namespace (or cluster) at once; restarted from scratch up to
    /// [`LIST_RESTARTS`] times when the resource version (or a page's continue token)
    /// expires.
    pub async fn list(&self, cx: &CallContext, selector: &str) -> Result<Listed> {
        let mut restarts = 0;
        'whole: loop {
            let mut listed = Listed::default();
            loop {
                match self.page(cx, selector, &listed.continue_token).await {
                    Ok(page) => {
                        listed.items.extend(page.items);
                        listed.resource_version = page.resource_version;
                        listed.continue_token = page.continue_token;
                        if listed.continue_token.is_empty() {
                            return Ok(listed);
                        }
                    }
                    Err(failed) => {
                        self.expired_again(failed, &mut restarts)?;
                        continue 'whole;
                    }
                }
            }
        }
    }

    /// One page of the list of what `selector` selects: a page's objects from
    /// `continue_token` (empty: the first page).
    pub(crate) async fn page(
        &self,
        cx: &CallContext,
        selector: &str,
        continue_token: &str,
    ) -> std::result::Result<Listed, Failed> {
        let kind = self.resource.kind;
        let what = self.what("list", &format!("-l {selector:?}"));
        let mut params = ListParams::default().labels(selector).limit(self.page);
        if !continue_token.is_empty() {
            params = params.continue_token(continue_token);
        }
        let build = |r: &Request| r.list(&params);
        self.send(cx, RequestClass::Read, &what, build, |b| answer::read_list(kind, b)).await
    }

    /// Lists the objects matching `selector` whole, in one answer (unlike
    /// [`Objects::list`], not in pages: for the few objects a selector of one TrainJob
    /// picks, a Workload), restarted as [`Objects::list`] is when the resource version
    /// expires.
    pub async fn list_whole(&self, cx: &CallContext, selector: &str) -> Result<Vec<Value>> {
        let params = ListParams::default().labels(selector);
        self.listing(cx, "list", selector, |r| r.list(&params), json::list_items).await
    }

    /// One list request, classified, restarted from scratch up to [`LIST_RESTARTS`]
    /// times when its resource version expired (410), then `Unreachable`.
    async fn listing<T>(
        &self,
        cx: &CallContext,
        verb: &str,
        selector: &str,
        build: impl Fn(&Request) -> Built,
        decode: impl Fn(&[u8]) -> serde_json::Result<T>,
    ) -> Result<T> {
        let what = self.what(verb, &format!("-l {selector:?}"));
        let mut restarts = 0;
        loop {
            match self.send(cx, RequestClass::Read, &what, &build, &decode).await {
                Ok(list) => return Ok(list),
                Err(failed) => self.expired_again(failed, &mut restarts)?,
            }
        }
    }

    /// A list's failure: `Ok` when its resource version expired and it may start
    /// again (one more of `restarts`), else the error to answer with.
    pub(crate) fn expired_again(&self, failed: Failed, restarts: &mut usize) -> Result<()> {
        match failed {
            Failed { case: Case::Expired, .. } if *restarts < LIST_RESTARTS => {
                *restarts += 1;
                Ok(())
            }
            Failed { case: Case::Expired, error } => {
                Err(error.context(format!("restarted {LIST_RESTARTS} times")))
            }
            Failed { error, .. } => Err(error),
        }
    }

    /// Creates `object`; a name that exists is `Rejected`.
    pub async fn create(&self, cx: &CallContext, object: &Value) -> Result<Value> {
        self.create_case(cx, object).await.map_err(|f| f.error)
    }

    /// Creates `object`, or reads the object of its name when the apiserver answers
    /// AlreadyExists: [`Created::Exists`]. Every other failure, a 422 or a 400 among
    /// them, is an error with its sentinel. An object that existed at the create but
    /// is gone when read was deleted meanwhile: the create was refused, `Rejected`.
    pub async fn create_or_read(&self, cx: &CallContext, object: &Value) -> Result<Created> {
        let name = json::name(object);
        match self.create_case(cx, object).await {
            Ok(made) => Ok(Created::Made(made)),
            Err(Failed { case: Case::AlreadyExists, error }) => match self.get_opt(cx, name).await? {
                Some(existing) => Ok(Created::Exists(existing)),
                None => Err(Error::rejected(format!(
                    "{}: the name existed, and its object was gone when read: it was deleted meanwhile",
                    self.what("create", name)
                ))
                .with_source(error)),
            },
            Err(Failed { error, .. }) => Err(error),
        }
    }

    /// Creates `object`: `true` when this create made it, `false` when an object of
    /// its name existed already (AlreadyExists; it is not read). Every other failure is
    /// an error with its sentinel.
    pub async fn create_unless_exists(&self, cx: &CallContext, object: &Value) -> Result<bool> {
        match self.create_case(cx, object).await {
            Ok(_) => Ok(true),
            Err(Failed { case: Case::AlreadyExists, .. }) => Ok(false),
            Err(Failed { error, .. }) => Err(error),
        }
    }

    async fn create_case(
        &self,
        cx: &CallContext,
        object: &Value,
    ) -> std::result::Result<Value, Failed> {
        let what = self.what("create", json::name(object));
        let build = |r: &Request| r.create(&PostParams::default(), body(object));
        self.send(cx, RequestClass::Write, &what, build, whole).await
    }

    /// Replaces `object`, which carries the resource version it was read at: a stale
    /// one is a conflict (`Rejected`).
    pub async fn replace(
        &self,
        cx: &CallContext,
        class: RequestClass,
        object: &Value,
    ) -> Result<Value> {
        self.replace_case(cx, class, object).await.map_err(|f| f.error)
    }

    async fn replace_case(
        &self,
        cx: &CallContext,
        class: RequestClass,
        object: &Value,
    ) -> std::result::Result<Value, Failed> {
        let name = json::name(object);
        let what = self.what("update", name);
        let build = |r: &Request| r.replace(name, &PostParams::default(), body(object));
        self.send(cx, class, &what, build, whole).await
    }

    /// Applies a JSON merge patch to `name`.
    pub async fn patch_merge(
        &self,
        cx: &CallContext,
        class: RequestClass,
        name: &str,
        patch: &Value,
    ) -> Result<Value> {
        self.patch(cx, class, name, Patch::Merge(patch)).await
    }

    /// Applies a JSON patch (RFC 6902) to `name`: `patch` is the array of operations.
    /// Its `test` operations make the write conditional on what the object holds.
    pub async fn patch_json(
        &self,
        cx: &CallContext,
        class: RequestClass,
        name: &str,
        patch: &Value,
    ) -> Result<Value> {
        let ops: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(|e| {
            Error::invalid(format!(
                "{}: the JSON patch is malformed: {e}",
                self.what("patch", name)
            ))
        })?;
        self.patch(cx, class, name, Patch::Json::<()>(ops)).await
    }

    /// One patch request of either kind, classified.
    async fn patch<P: serde::Serialize + std::fmt::Debug>(
        &self,
        cx: &CallContext,
        class: RequestClass,
        name: &str,
        patch: Patch<P>,
    ) -> Result<Value> {
        let what = self.what("patch", name);
        let build = |r: &Request| r.patch(name, &PatchParams::default(), &patch);
        self.send(cx, class, &what, build, whole).await.map_err(|f| f.error)
    }

    /// Deletes `name` in the background (the garbage collector removes its dependents
    /// afterwards), only if its UID is still `uid` when one is given. A missing object
    /// is [`Deleted::Gone`]; a UID that no longer matches, [`Deleted::PreconditionFailed`].
    pub async fn delete(&self, cx: &CallContext, name: &str, uid: Option<&str>) -> Result<Deleted> {
        let what = self.what("delete", name);
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: uid
                .map(|uid| Preconditions { uid: Some(uid.to_owned()), resource_version: None }),
            ..DeleteParams::default()
        };
        let build = |r: &Request| r.delete(name, &params);
        // The answer (the object, or a Status) is not needed: any 2xx is deleted.
        let ignore = |_: &[u8]| Ok(());
        match self.send(cx, RequestClass::Write, &what, build, ignore).await {
            Ok(()) => Ok(Deleted::Deleted),
            Err(Failed { case: Case::Conflict, .. }) => Ok(Deleted::PreconditionFailed),
            Err(Failed { error, .. }) if error.is(Kind::NotFound) => Ok(Deleted::Gone),
            Err(Failed { error, .. }) => Err(error),
        }
    }

    /// Reads `name`, lets `edit` change it, and writes it back with the resource
    /// version it was read at; on a conflict it waits (`conflict_backoff`) and reads
    /// again, up to [`CONFLICT_TRIES`] tries in all. Returns the object as written (or
    /// as read, when unchanged).
    pub async fn read_modify_write(
        &self,
        cx: &CallContext,
        class: RequestClass,
        name: &str,
        mut edit: impl FnMut(&mut Value) -> Result<Edit>,
    ) -> Result<Value> {
        let learn = || std::future::ready(Ok(()));
        self.read_learn_modify_write(cx, class, name, learn, |object, ()| edit(object)).await
    }

    /// [`Objects::read_modify_write`], where each try, after reading `name`, also runs
    /// `learn` (reads of other objects the decision rests on) and gives what it learned
    /// to `edit`. So every try decides from what it just read, none of it older than
    /// the resource version the write is conditioned on.
    pub async fn read_learn_modify_write<S, L, Fut>(
        &self,
        cx: &CallContext,
        class: RequestClass,
        name: &str,
        mut learn: L,
        mut edit: impl FnMut(&mut Value, S) -> Result<Edit>,
    ) -> Result<Value>
    where
        L: FnMut() -> Fut,
        Fut: Future<Output = Result<S>>,
    {
        for attempt in 0..CONFLICT_TRIES {
            if attempt > 0 {
                tokio::time::sleep(conflict_backoff(attempt)).await;
            }
            let mut object = self.get(cx, name).await?;
            let learned = learn().await?;
            if edit(&mut object, learned)? == Edit::Unchanged {
                return Ok(object);
            }
            match self.replace_case(cx, class, &object).await {
                Ok(written) => return Ok(written),
                Err(Failed { case: Case::Conflict, .. }) => continue,
                Err(Failed { error, .. }) => return Err(error),
            }
        }
        Err(Error::rejected(format!(
            "{}: a conflict: the object kept changing, {CONFLICT_TRIES} tries",
            self.what("update", name)
        )))
    }
}

/// An answer that is one object, read whole.
fn whole(bytes: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_slice(bytes)
}

/// A request's body: the object as JSON. Serializing a `Value` cannot fail.
fn body(object: &Value) -> Vec<u8> {
    serde_json::to_vec(object).unwrap_or_default()
}

/// A read that found nothing: `None`.
fn absent_as_none<T>(read: Result<T>) -> Result<Option<T>> {
    match read {
        Err(e) if e.is(Kind::NotFound) => Ok(None),
        other => other.map(Some),
    }
}

/// How long read-modify-write waits before try `attempt` (from 1): 10 ms, doubling, so
/// the eight tries span about 1.3 s. Tries in a row would all land inside one burst of
/// a controller's writes: on a real cluster, Kueue and the readmission gate write a
/// Workload several times within a second when it is evicted or requeued, and a Hold
/// sent then conflicted eight times in under 100 ms. A try after the call's deadline is
/// refused before it is sent (`Cluster::call`).
fn conflict_backoff(attempt: usize) -> std::time::Duration {
    std::time::Duration::from_millis(10 << attempt.saturating_sub(1).min(6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_back_off_doubling_from_ten_milliseconds() {
        let waits: Vec<u128> =
            (1..CONFLICT_TRIES).map(|a| conflict_backoff(a).as_millis()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640]);
    }
}
