//! The probe server: `/healthz`, `/readyz` and `/metrics` over plain HTTP/1.1, on one
//! listen address (`--probe-address`), from a [`Telemetry`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::Telemetry;

/// The content type of `/metrics`: what `prometheus_client`'s text encoder writes.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

fn text(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

fn plain(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    text(status, "text/plain; charset=utf-8", format!("{body}\n"))
}

/// The answer to one request.
fn answer(telemetry: &dyn Telemetry, method: &Method, path: &str) -> Response<Full<Bytes>> {
    if method != Method::GET && method != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
    }
    let role = telemetry.role();
    let status = |ok: bool| if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    match path {
        "/healthz" => plain(status(role.live()), &format!("{role:?}")),
        "/readyz" => plain(status(role.ready()), &format!("{role:?}")),
        "/metrics" => text(StatusCode::OK, METRICS_CONTENT_TYPE, telemetry.metrics_text()),
        _ => plain(StatusCode::NOT_FOUND, "not found: try /healthz, /readyz or /metrics"),
    }
}

/// How many probe connections are served at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 32;
/// How long a connection may take to send a request's head.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection is served at most, keep-alive included.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// How long the server waits before accepting again after an accept failed (out of
/// file descriptors, say), so that the failure does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(200);

/// Serves the probes on `listener` until `shutdown` is cancelled; connections already
/// open are dropped then. Bounded: at most [`MAX_CONNECTIONS`] at once, each given
/// [`HEADER_READ_TIMEOUT`] for a request's head and a minute in all.
pub async fn serve(
    listener: TcpListener,
    telemetry: Arc<dyn Telemetry>,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "probe server: accept failed");
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    () = shutdown.cancelled() => return,
                }
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::debug!("probe server: {MAX_CONNECTIONS} connections open; one more closed");
            continue;
        };
        let telemetry = telemetry.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let response = answer(&*telemetry, request.method(), request.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                result = tokio::time::timeout(CONNECTION_LIFETIME, connection) => {
                    if let Ok(Err(error)) = result {
                        tracing::debug!(%error, "probe server: connection ended");
                    }
                }
                () = stop.cancelled() => {}
            }
        });
    }
}

#[cfg(test)]
mod tests;
