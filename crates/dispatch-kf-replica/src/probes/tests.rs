//! The probe server on a loopback port, its state driven by hand: not running,
//! starting, standing by, leading, stopped; and its metrics.

use dispatch_kf_testkit::http_get as get;
use std::time::Duration;

use tokio::net::TcpListener;

use super::*;
use crate::{Role, RoleCell};

/// A telemetry whose metrics are one fixed line.
#[derive(Default)]
struct Fixed {
    role: RoleCell,
}

impl Telemetry for Fixed {
    fn role(&self) -> Role {
        self.role.get()
    }
    fn set_role(&self, role: Role) {
        self.role.set(role);
    }
    fn campaign_failed(&self) {}
    fn metrics_text(&self) -> String {
        "fixed_metric 1\n# EOF\n".into()
    }
}

/// A probe server on 127.0.0.1:0 and its address.
async fn server(telemetry: &Arc<Fixed>) -> (std::net::SocketAddr, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(serve(listener, telemetry.clone(), stop.clone()));
    (address, stop)
}

async fn codes(address: std::net::SocketAddr) -> (u16, u16) {
    (get(address, "/healthz").await.0, get(address, "/readyz").await.0)
}

#[tokio::test]
async fn health_and_readiness_follow_the_role() {
    let telemetry = Arc::new(Fixed::default());
    let (address, stop) = server(&telemetry).await;
    assert_eq!(codes(address).await, (503, 503), "not running yet");
    let alive = crate::role::Alive::start(telemetry.clone());
    assert_eq!(codes(address).await, (200, 503), "running, not decided");
    telemetry.set_role(Role::StandingBy);
    assert_eq!(codes(address).await, (200, 200), "a standby is ready");
    telemetry.set_role(Role::Leading);
    assert_eq!(codes(address).await, (200, 200), "leading");
    telemetry.set_role(Role::Starting);
    assert_eq!(codes(address).await, (200, 503), "cannot read the Lease, not leading");
    drop(alive);
    assert_eq!(codes(address).await, (503, 503), "the loop returned");
    assert_eq!(get(address, "/nothing").await.0, 404);
    stop.cancel();
}

#[tokio::test]
async fn metrics_are_the_telemetrys_text() {
    let telemetry = Arc::new(Fixed::default());
    let (address, stop) = server(&telemetry).await;
    let (status, metrics) = get(address, "/metrics").await;
    assert_eq!(status, 200);
    assert_eq!(metrics, "fixed_metric 1\n# EOF\n");
    stop.cancel();
}

/// Reads `stream` until the server closes it; `true` when it did so without answering.
async fn closed_unanswered(stream: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    matches!(stream.read_to_end(&mut buf).await, Ok(0)) || buf.is_empty()
}

/// A connection that never sends a request's head is closed once the header read
/// timeout passes, on tokio's clock; the probes still answer meanwhile.
#[tokio::test(start_paused = true)]
async fn a_connection_that_sends_nothing_is_closed_after_the_header_read_timeout() {
    let telemetry = Arc::new(Fixed::default());
    let (address, stop) = server(&telemetry).await;
    let mut silent = tokio::net::TcpStream::connect(address).await.unwrap();
    let started = tokio::time::Instant::now();
    let closed = tokio::time::timeout(HEADER_READ_TIMEOUT * 3, closed_unanswered(&mut silent))
        .await
        .expect("the silent connection is closed");
    assert!(closed);
    assert!(started.elapsed() >= HEADER_READ_TIMEOUT, "{:?}", started.elapsed());
    stop.cancel();
}

/// Past [`MAX_CONNECTIONS`] open at once, one more is closed at once, and a probe
/// answers again once one of them goes.
#[tokio::test]
async fn connections_past_the_cap_are_closed_and_the_cap_frees_as_they_go() {
    let telemetry = Arc::new(Fixed::default());
    let (address, stop) = server(&telemetry).await;
    let mut open = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        open.push(tokio::net::TcpStream::connect(address).await.unwrap());
    }
    let mut extra = tokio::net::TcpStream::connect(address).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(2), closed_unanswered(&mut extra))
        .await
        .expect("the connection past the cap is closed at once");
    assert!(closed);
    drop(open.pop());
    // The server notices the closed connection and frees its place.
    let mut answered = false;
    for _ in 0..100 {
        if try_healthz(address).await == Some(503) {
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(answered, "a place was freed and a probe answered");
    stop.cancel();
}

/// `/healthz`'s status, or `None` when the connection is closed without an answer.
async fn try_healthz(address: std::net::SocketAddr) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = "GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    let read = stream.read_to_string(&mut response);
    tokio::time::timeout(Duration::from_secs(2), read).await.ok()?.ok()?;
    response.split(' ').nth(1)?.parse().ok()
}
