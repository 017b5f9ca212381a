//! One request through the apiserver: authenticate, route, authorize (RBAC-lite), match
//! fault rules, run the handler, settle the controllers when the store changed, and log
//! the request. Synchronous, under the state lock; the server does the I/O.

use bytes::Bytes;
use serde_json::Value;

use crate::controllers;
use crate::http::delete;
use crate::http::discovery;
use crate::http::openapi;
use crate::http::read;
use crate::http::request::{self, ApiReq, Route};
use crate::http::watch::{self, WatchStart};
use crate::http::write;
use crate::plain::apierror::ApiError;
use crate::plain::auth::Access;
use crate::plain::faults::{self, FaultAction};
use crate::plain::resources::RESOURCES;
use crate::registry::{DeleteOptions, WriteOptions};
use crate::store::{RequestRecord, State};

/// An HTTP request, read whole.
pub(crate) struct Incoming {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) token: Option<String>,
    pub(crate) accept: String,
    pub(crate) content_type: String,
    pub(crate) user_agent: String,
    pub(crate) body: Bytes,
}

/// What to send back.
pub(crate) enum Reply {
    Json(u16, Value),
    /// Plain text (pods/log, `404 page not found`).
    Text(u16, String),
    Watch(WatchStart),
    /// A `pods/log` stream with `follow=true`.
    Follow(crate::http::logs::Follow),
    /// Nothing: the connection is reset.
    Reset,
}

/// The reply and what the server must do besides.
pub(crate) struct Processed {
    pub(crate) reply: Reply,
    pub(crate) delay: Option<std::time::Duration>,
    /// One `Warning` header each (`unknown field "spec.foo"`).
    pub(crate) warnings: Vec<String>,
}

fn err(e: ApiError) -> Reply {
    Reply::Json(e.code, e.to_status())
}

fn status_of(r: &Reply) -> Option<u16> {
    match r {
        Reply::Json(c, _) | Reply::Text(c, _) => Some(*c),
        Reply::Watch(_) | Reply::Follow(_) => Some(200),
        Reply::Reset => None,
    }
}

pub(crate) fn process(state: &mut State, inc: &Incoming) -> Processed {
    let q = request::query(&inc.query);
    let mut record = RequestRecord {
        method: inc.method.clone(),
        path: inc.path.clone(),
        query: inc.query.clone(),
        user: None,
        verb: "discovery".into(),
        resource: String::new(),
        name: String::new(),
        status: None,
        effect: false,
        fault: None,
    };
    let rv0 = state.store.rv();
    let mut delay = None;
    let reply = run(state, inc, &q, &mut record, &mut delay);
    record.status = status_of(&reply);
    record.effect = state.store.rv() != rv0;
    if record.effect && state.auto_settle {
        controllers::settle(state);
    }
    state.log.push(record);
    let warnings = std::mem::take(&mut state.warnings);
    Processed { reply, delay, warnings }
}

/// One request, in the apiserver's order: authenticate, route, authorize, the faults a
/// test set, the content type, then the handler of its verb; a fault may also act on
/// the reply.
fn run(
    state: &mut State,
    inc: &Incoming,
    q: &Query,
    record: &mut RequestRecord,
    delay: &mut Option<std::time::Duration>,
) -> Reply {
    let user = match authenticate(state, inc) {
        Ok(user) => user,
        Err(reply) => return reply,
    };
    record.user = Some(user.clone());
    let req = match route(state, inc, q) {
        Ok(req) => req,
        Err(reply) => return reply,
    };
    let res = &RESOURCES[req.res];
    record.verb = req.verb.into();
    record.resource =
        if req.sub.is_empty() { res.plural.into() } else { format!("{}/{}", res.plural, req.sub) };
    record.name = req.name.clone();
    if let Err(e) = authorize(state, &user, &req) {
        return err(e);
    }
    let action = faults::fire(&mut state.faults, req.verb, &record.resource, &req.name);
    record.fault = action.as_ref().map(|a| format!("{a:?}"));
    if let Some(reply) = fault_before(state, action.as_ref(), &req, q, delay) {
        return reply;
    }
    if inc.content_type.starts_with("application/vnd.kubernetes.protobuf") {
        // client-go falls back to JSON when protobuf is refused this way.
        return err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
        ));
    }
    let mut reply = handle(state, inc, q, &user, &req).unwrap_or_else(err);
    match action {
        Some(FaultAction::ResetAfterApply) => reply = Reply::Reset,
        Some(FaultAction::CloseWatch) => {
            if let Reply::Watch(w) = &mut reply {
                w.live = None;
            }
        }
        _ => {}
    }
    reply
}

type Query = std::collections::BTreeMap<String, String>;

/// The request's user, by its bearer token; without one, the anonymous identity when
/// the sim has one (kubectl sends no bearer token over plain http).
fn authenticate(state: &State, inc: &Incoming) -> Result<String, Reply> {
    let user = match &inc.token {
        Some(t) => state.identities.iter().find(|i| &i.token == t).map(|i| i.user.clone()),
        None => state.anonymous.clone(),
    };
    user.ok_or_else(|| err(ApiError::unauthorized()))
}

/// The API request the path names; discovery documents and unknown paths are answered
/// here.
fn route(state: &State, inc: &Incoming, q: &Query) -> Result<ApiReq, Reply> {
    let watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    let served = |gv: &str| !state.unserved.contains(gv);
    match request::route(&inc.method, &inc.path, watch, served) {
        Some(Route::Api(r)) => Ok(r),
        Some(Route::Discovery(p)) => Err(found(discovery::document(&p, served))),
        Some(Route::OpenApi(p)) => Err(found(openapi::document(&p, served, &state.releases))),
        Some(Route::NotFound) => Err(Reply::Text(404, "404 page not found\n".into())),
        None => Err(err(ApiError::method_not_allowed())),
    }
}

/// A document, or `404 page not found`.
fn found(document: Option<Value>) -> Reply {
    match document {
        Some(d) => Reply::Json(200, d),
        None => Reply::Text(404, "404 page not found\n".into()),
    }
}

/// RBAC: the user's identity may do the request (an access review always may).
fn authorize(state: &State, user: &str, req: &ApiReq) -> Result<(), ApiError> {
    let res = &RESOURCES[req.res];
    let access = Access {
        verb: req.verb,
        group: res.group,
        resource: res.plural,
        sub: &req.sub,
        ns: &req.ns,
    };
    let identity = state.identities.iter().find(|i| i.user == user);
    if res.kind == "SelfSubjectAccessReview" || identity.is_some_and(|i| i.may(&access)) {
        Ok(())
    } else {
        Err(ApiError::forbidden(res, &req.sub, &req.name, user, req.verb, &req.ns))
    }
}

/// The answer a fault gives before the request is handled, if it gives one; a delay is
/// set aside for the reply.
fn fault_before(
    state: &State,
    action: Option<&FaultAction>,
    req: &ApiReq,
    q: &Query,
    delay: &mut Option<std::time::Duration>,
) -> Option<Reply> {
    match action? {
        FaultAction::Status { code, reason, message } => {
            Some(err(ApiError::new(*code, reason, message.clone())))
        }
        FaultAction::ResetBeforeApply => Some(Reply::Reset),
        FaultAction::ExpireList if req.verb == "list" => {
            let rv = state.store.rv();
            Some(err(ApiError::expired(rv.saturating_sub(1), rv)))
        }
        FaultAction::ExpireWatch if req.verb == "watch" => {
            let asked: u64 = q.get("resourceVersion").and_then(|v| v.parse().ok()).unwrap_or(0);
            let initial = vec![watch::expired_line(asked, state.store.rv())];
            Some(Reply::Watch(WatchStart { initial, live: None }))
        }
        FaultAction::Delay(d) => {
            *delay = Some(*d);
            None
        }
        _ => None,
    }
}

/// The request handled by its verb and subresource.
fn handle(
    state: &mut State,
    inc: &Incoming,
    q: &Query,
    user: &str,
    req: &ApiReq,
) -> Result<Reply, ApiError> {
    let res = &RESOURCES[req.res];
    let options = || WriteOptions::read(q, &inc.user_agent, req.verb);
    let body = &inc.body[..];
    let follow = q.get("follow").is_some_and(|f| f == "true");
    match (req.verb, req.sub.as_str()) {
        ("create", _) if res.kind == "SelfSubjectAccessReview" => {
            write::access_review(state, user, body).map(|v| Reply::Json(201, v))
        }
        ("get", "log") if res.kind == "Pod" && follow => {
            crate::http::logs::follow(state, req).map(Reply::Follow)
        }
        ("get", "log") if res.kind == "Pod" => {
            crate::http::logs::text(state, req).map(|t| Reply::Text(200, t))
        }
        ("get", "" | "status") => read::get(state, req, &inc.accept).map(|v| Reply::Json(200, v)),
        ("list", "") => read::list(state, req, q, &inc.accept).map(|v| Reply::Json(200, v)),
        ("watch", "") => watch::start(state, req, q, &inc.accept).map(Reply::Watch),
        ("create", "") => write::create(state, req, body, &options()?).map(|v| Reply::Json(201, v)),
        ("update", "" | "status") => {
            write::update(state, req, body, &options()?).map(|v| Reply::Json(200, v))
        }
        ("patch", "" | "status") => write::patch(state, req, body, &inc.content_type, &options()?)
            .map(|v| Reply::Json(200, v)),
        ("delete", "") => DeleteOptions::read(body, q)
            .and_then(|o| delete::handle(state, req, &o))
            .map(|v| Reply::Json(200, v)),
        ("deletecollection", "") => {
            crate::http::collection::handle(state, req, q, body).map(|v| Reply::Json(200, v))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}
