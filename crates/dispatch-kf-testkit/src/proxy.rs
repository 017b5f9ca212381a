//! A TCP proxy to the sim whose connections can be made silent: kept open, passing
//! nothing either way, as a half-open connection or a stuck load balancer leaves them,
//! until it is thawed, when what was held back passes on (a connection that stalled, not
//! one that lost data). They can also be cut (closed both ways at once, whatever they
//! were carrying, as a load balancer's restart leaves them), or slowed (each piece held
//! back a while before it passes, as a congested network does).
//!
//! In front of an HTTPS apiserver (a real one, or a sim serving TLS) it ends TLS for its
//! clients: they speak plain HTTP to it, and it speaks TLS onward as the kubeconfig's
//! user (its client certificate; a token passes in the clear request). So it can tell a
//! connection by its request whatever the cluster.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use dispatch_kf_sim::Sim;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;

/// How much of what a connection carries toward the sim is kept to match needles
/// against: enough for the requests' heads.
const CARRIED_KEPT: usize = 64 * 1024;

/// A proxy on a loopback port, passing every connection on to the sim.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

/// Where a proxy passes its connections.
#[derive(Clone)]
enum Upstream {
    /// Plain TCP to this loopback port.
    Plain(u16),
    /// TLS to this address, as the configuration's user.
    Tls { address: String, server: ServerName<'static>, connector: TlsConnector },
}

impl Upstream {
    /// Passes `client` on, both ways, through `connection`.
    async fn pass(&self, client: TcpStream, connection: Arc<Connection>, shared: Arc<Shared>) {
        let (client_read, client_write) = client.into_split();
        match self {
            Upstream::Plain(port) => {
                let Ok(server) = TcpStream::connect(("127.0.0.1", *port)).await else { return };
                let (server_read, server_write) = server.into_split();
                both_ways(
                    (client_read, client_write),
                    (server_read, server_write),
                    connection,
                    shared,
                );
            }
            Upstream::Tls { address, server, connector } => {
                let Ok(tcp) = TcpStream::connect(address.as_str()).await else { return };
                let Ok(tls) = connector.connect(server.clone(), tcp).await else { return };
                both_ways((client_read, client_write), tokio::io::split(tls), connection, shared);
            }
        }
    }
}

/// Pipes each side to the other.
fn both_ways(
    (client_read, client_write): (
        impl AsyncRead + Unpin + Send + 'static,
        impl AsyncWrite + Unpin + Send + 'static,
    ),
    (server_read, server_write): (
        impl AsyncRead + Unpin + Send + 'static,
        impl AsyncWrite + Unpin + Send + 'static,
    ),
    connection: Arc<Connection>,
    shared: Arc<Shared>,
) {
    let toward =
        tokio::spawn(pipe(client_read, server_write, connection.clone(), shared.clone(), true));
    let back = tokio::spawn(pipe(server_read, client_write, connection.clone(), shared, false));
    lock(&connection.pipes).extend([toward.abort_handle(), back.abort_handle()]);
}

#[derive(Default)]
struct Shared {
    /// Every connection made through the proxy, while it lives.
    connections: Mutex<Vec<Weak<Connection>>>,
    /// How many connections were ever made through it.
    made: AtomicUsize,
    /// Set by [`Proxy::freeze_carrying`]: a connection goes silent once what it carried
    /// toward the sim holds every one of these.
    needles: Mutex<Option<Vec<Vec<u8>>>>,
    /// Woken by [`Proxy::thaw`].
    thawed: Notify,
    /// How long each piece waits before it passes, in milliseconds ([`Proxy::slow`]).
    delay_ms: AtomicU64,
    /// Request lines carried toward the sim ([`Proxy::requests_seen`]).
    requests: AtomicU64,
    /// Bytes carried back from the sim ([`Proxy::bytes_received`]).
    received: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One connection through the proxy.
#[derive(Default)]
struct Connection {
    silent: AtomicBool,
    /// The start of what it carried toward the sim.
    carried: Mutex<Vec<u8>>,
    /// The two tasks that pipe it, one each way: aborted, they drop both sockets.
    pipes: Mutex<Vec<AbortHandle>>,
}

impl Connection {
    fn carries(&self, needles: &[Vec<u8>]) -> bool {
        let carried = lock(&self.carried);
        needles.iter().all(|n| carried.windows(n.len()).any(|w| w == n.as_slice()))
    }
}

impl Shared {
    fn live(&self) -> Vec<Arc<Connection>> {
        let mut connections = lock(&self.connections);
        connections.retain(|c| c.strong_count() > 0);
        connections.iter().filter_map(Weak::upgrade).collect()
    }

    /// Notes what `connection` carried toward the sim, and silences it if that holds
    /// the needles.
    fn carried(&self, connection: &Connection, bytes: &[u8]) {
        {
            let mut carried = lock(&connection.carried);
            let room = CARRIED_KEPT.saturating_sub(carried.len());
            carried.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        if lock(&self.needles).as_deref().is_some_and(|n| connection.carries(n)) {
            connection.silent.store(true, Ordering::SeqCst);
        }
    }

    /// Waits while `connection` is silent.
    async fn until_heard(&self, connection: &Connection) {
        loop {
            let thawed = self.thawed.notified();
            tokio::pin!(thawed);
            thawed.as_mut().enable();
            if !connection.silent.load(Ordering::SeqCst) {
                return;
            }
            thawed.await;
        }
    }
}

impl Proxy {
    /// A proxy to `sim` (serving plain HTTP), passing everything on until told
    /// otherwise.
    pub async fn to(sim: &Sim) -> Proxy {
        let upstream: u16 = sim.url().rsplit(':').next().and_then(|p| p.parse().ok()).unwrap();
        Proxy::listening(Upstream::Plain(upstream)).await
    }

    /// A proxy to the HTTPS apiserver of `config`, and the configuration its clients
    /// use: plain HTTP to the proxy, the same user but for the client certificate,
    /// which the proxy presents onward.
    pub async fn in_front_of(config: &kube::Config) -> (Proxy, kube::Config) {
        use kube::client::ConfigExt;
        let mut tls = config.rustls_client_config().expect("a TLS configuration");
        // The clients speak HTTP/1.1 to the proxy, so onward it must be HTTP/1.1 too.
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let url = &config.cluster_url;
        let host = url.host().expect("the apiserver's host").to_owned();
        let port = url.port_u16().unwrap_or(443);
        let server = ServerName::try_from(config.tls_server_name.clone().unwrap_or(host.clone()))
            .expect("a TLS server name");
        let connector = TlsConnector::from(Arc::new(tls));
        let upstream = Upstream::Tls { address: format!("{host}:{port}"), server, connector };
        let proxy = Proxy::listening(upstream).await;
        let mut through = config.clone();
        through.cluster_url = format!("http://127.0.0.1:{}", proxy.port).parse().expect("a URL");
        through.root_cert = None;
        through.auth_info.client_certificate = None;
        through.auth_info.client_certificate_data = None;
        through.auth_info.client_key = None;
        through.auth_info.client_key_data = None;
        (proxy, through)
    }

    async fn listening(upstream: Upstream) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let connection = Arc::new(Connection::default());
                lock(&accepting.connections).push(Arc::downgrade(&connection));
                accepting.made.fetch_add(1, Ordering::SeqCst);
                let (upstream, shared) = (upstream.clone(), accepting.clone());
                tokio::spawn(async move { upstream.pass(client, connection, shared).await });
            }
        });
        Proxy { port, shared }
    }

    /// How many connections were made through it so far (a client opens one per request
    /// it has in flight at once, and reuses them after).
    pub fn connections_made(&self) -> usize {
        self.shared.made.load(Ordering::SeqCst)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How many requests its clients sent so far: the HTTP/1.1 request lines carried
    /// toward the apiserver (its clients speak HTTP/1.1 to it).
    pub fn requests_seen(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// How many bytes of HTTP its clients received so far (TLS onward not counted).
    pub fn bytes_received(&self) -> u64 {
        self.shared.received.load(Ordering::SeqCst)
    }

    /// Every connection open now passes nothing more, either way, until [`Proxy::thaw`];
    /// connections made later pass as before.
    pub fn freeze(&self) {
        for connection in self.shared.live() {
            connection.silent.store(true, Ordering::SeqCst);
        }
    }

    /// Every connection that has carried, or comes to carry, toward the sim all of
    /// `needles` (parts of a request's head: a path, a query) goes silent until
    /// [`Proxy::thaw`]; a request that makes it so does not reach the sim meanwhile.
    /// Other connections pass as before.
    pub fn freeze_carrying(&self, needles: &[&str]) {
        let needles: Vec<Vec<u8>> = needles.iter().map(|n| n.as_bytes().to_vec()).collect();
        for connection in self.shared.live() {
            if connection.carries(&needles) {
                connection.silent.store(true, Ordering::SeqCst);
            }
        }
        *lock(&self.shared.needles) = Some(needles);
    }

    /// Every connection open now is closed, both ways at once, whatever it was
    /// carrying: a request in flight gets no answer, or half of one. Connections made
    /// later pass as before.
    pub fn cut(&self) {
        for connection in self.shared.live() {
            for pipe in lock(&connection.pipes).drain(..) {
                pipe.abort();
            }
        }
    }

    /// From now on every piece each connection carries, either way, waits `delay`
    /// before it passes; [`Duration::ZERO`] passes them at once again.
    pub fn slow(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.shared.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Every silent connection passes again, what it held back first.
    pub fn thaw(&self) {
        *lock(&self.shared.needles) = None;
        for connection in self.shared.live() {
            connection.silent.store(false, Ordering::SeqCst);
        }
        self.shared.thawed.notify_waiters();
    }

    /// `user`'s kubeconfig on `sim`, pointing at this proxy.
    pub fn kubeconfig_yaml(&self, sim: &Sim, user: &str) -> String {
        let direct = sim.url();
        let port = direct.rsplit(':').next().unwrap_or_default();
        let proxied = direct.replace(&format!(":{port}"), &format!(":{}", self.port));
        sim.kubeconfig_yaml(user).unwrap().replace(&direct, &proxied)
    }

    /// `user`'s client configuration on `sim`, through this proxy.
    pub async fn config(&self, sim: &Sim, user: &str) -> kube::Config {
        let yaml = self.kubeconfig_yaml(sim, user);
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap()
    }
}

/// Copies `from` to `to` until either ends, holding each chunk back while the
/// connection is silent (`toward_sim`: what it carries is matched against the needles).
async fn pipe(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    connection: Arc<Connection>,
    shared: Arc<Shared>,
    toward_sim: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut lines = RequestLines::default();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if toward_sim {
            shared.carried(&connection, &buf[..n]);
            shared.requests.fetch_add(lines.count(&buf[..n]), Ordering::SeqCst);
        } else {
            shared.received.fetch_add(n as u64, Ordering::SeqCst);
        }
        shared.until_heard(&connection).await;
        let delay = shared.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// Counts the HTTP/1.1 request lines in what one connection carries, piece by piece: the
/// end of each line, ` HTTP/1.1` and CRLF, however the pieces cut it.
#[derive(Default)]
struct RequestLines {
    /// The end of the last piece, as long as the mark less one byte.
    tail: Vec<u8>,
}

impl RequestLines {
    const MARK: &[u8] = b" HTTP/1.1\r\n";

    /// The request lines that end in `piece`.
    fn count(&mut self, piece: &[u8]) -> u64 {
        let mut joined = std::mem::take(&mut self.tail);
        joined.extend_from_slice(piece);
        let found = joined.windows(Self::MARK.len()).filter(|w| *w == Self::MARK).count();
        let keep = joined.len().saturating_sub(Self::MARK.len() - 1);
        self.tail = joined.split_off(keep);
        found as u64
    }
}

#[cfg(test)]
mod tests {
    use super::RequestLines;

    #[test]
    fn request_lines_are_counted_however_the_pieces_cut_them() {
        let stream = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\n\r\n{}";
        for cut in 1..stream.len() {
            let mut lines = RequestLines::default();
            let (a, b) = stream.split_at(cut);
            assert_eq!(lines.count(a) + lines.count(b), 2, "cut at {cut}");
        }
    }
}
