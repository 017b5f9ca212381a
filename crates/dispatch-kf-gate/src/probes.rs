//! The probe server: `/healthz`, `/readyz` and `/metrics` over plain HTTP/1.1, on one
//! listen address (`--probe-address`), from a [`Telemetry`].

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::telemetry::Telemetry;

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
fn answer(telemetry: &Telemetry, method: &Method, path: &str) -> Response<Full<Bytes>> {
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

/// Serves the probes on `listener` until `shutdown` is cancelled; connections already
/// open are dropped then.
pub async fn serve(listener: TcpListener, telemetry: Telemetry, shutdown: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "probe server: accept failed");
                continue;
            }
        };
        let telemetry = telemetry.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let response = answer(&telemetry, request.method(), request.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                result = connection => {
                    if let Err(error) = result {
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
