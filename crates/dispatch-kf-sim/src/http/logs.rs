//! `pods/<name>/log`: the text a test set or appended, and `follow=true` streams, which
//! send the text so far, then each appended chunk, and end when the pod finishes
//! (Succeeded or Failed) or is deleted, as the kubelet's log stream does.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use crate::http::request::ApiReq;
use crate::plain::apierror::ApiError;
use crate::plain::object::meta::{str_at, terminal};
use crate::plain::resources::{RESOURCES, id};
use crate::store::State;
use crate::store::{Chunk, Event, EventType, Key};

/// A follow stream ready to run.
pub(crate) struct Follow {
    initial: String,
    /// `None` when the pod has already finished: send the text and end.
    live: Option<(Key, broadcast::Receiver<Chunk>, broadcast::Receiver<Arc<Event>>)>,
}

/// The log so far, or NotFound for a missing pod.
pub(crate) fn text(state: &State, req: &ApiReq) -> Result<String, ApiError> {
    if state.store.get(&Key::new(req.res, &req.ns, &req.name)).is_none() {
        return Err(ApiError::not_found(&RESOURCES[req.res], &req.name));
    }
    Ok(state.pod_logs.get(&(req.ns.clone(), req.name.clone())).cloned().unwrap_or_default())
}

/// Appends to a pod's log; its followers get the chunk.
pub(crate) fn append(state: &mut State, ns: &str, pod: &str, text: &str) {
    state.pod_logs.entry((ns.to_string(), pod.to_string())).or_default().push_str(text);
    let chunk = Chunk { ns: ns.into(), pod: pod.into(), text: text.into() };
    // No follower is fine.
    let _ = state.log_tx.send(chunk);
}

/// What a training process prints at each step, in the log of every running pod of a
/// TrainJob (one its JobSet made): `step N: loss X`, the loss falling as 4/sqrt(N).
pub(crate) fn write_training_step(state: &mut State, step: u64) {
    let line = format!("step {step}: loss {:.3}\n", 4.0 / (step as f64).sqrt());
    let text = |pod: &Value, p: &str| str_at(pod, p).to_string();
    let running: Vec<(String, String)> = state
        .store
        .range(id("pods"), "")
        .map(|(_, pod)| pod)
        .filter(|pod| text(pod, "/status/phase") == "Running")
        .filter(|pod| !text(pod, "/metadata/labels/jobset.sigs.k8s.io~1jobset-name").is_empty())
        .map(|pod| (text(pod, "/metadata/namespace"), text(pod, "/metadata/name")))
        .collect();
    for (ns, pod) in running {
        append(state, &ns, &pod, &line);
    }
}

/// Starts a follow under the state lock, so no chunk falls between text and stream.
pub(crate) fn follow(state: &State, req: &ApiReq) -> Result<Follow, ApiError> {
    let initial = text(state, req)?;
    let key = Key::new(req.res, &req.ns, &req.name);
    let done = state.store.get(&key).is_some_and(terminal);
    let live = (!done).then(|| (key, state.log_tx.subscribe(), state.store.subscribe()));
    Ok(Follow { initial, live })
}

/// Runs a follow stream into a channel.
pub(crate) async fn stream(f: Follow, tx: mpsc::Sender<Bytes>) {
    if !f.initial.is_empty() && tx.send(Bytes::from(f.initial)).await.is_err() {
        return;
    }
    let Some((key, mut chunks, mut events)) = f.live else { return };
    loop {
        tokio::select! {
            c = chunks.recv() => match c {
                Ok(c) if c.ns == key.ns && c.pod == key.name => {
                    if tx.send(Bytes::from(c.text)).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            e = events.recv() => match e {
                Ok(e) if e.key == key && (e.typ == EventType::Deleted || terminal(&e.object)) => return,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}
