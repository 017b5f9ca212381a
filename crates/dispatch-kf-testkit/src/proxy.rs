//! A TCP proxy to the sim whose connections can be made silent: kept open, passing
//! nothing either way, as a half-open connection or a stuck load balancer leaves them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dispatch_kf_sim::Sim;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A proxy on a loopback port, passing every connection on to the sim.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Raised by [`Proxy::freeze`]: connections born before the current one are silent.
    generation: AtomicU64,
    /// Set by [`Proxy::freeze_carrying`]: a connection silences itself at the first
    /// request that carries these bytes.
    needle: Mutex<Option<Vec<u8>>>,
}

impl Shared {
    fn carries_needle(&self, bytes: &[u8]) -> bool {
        let needle = self.needle.lock().unwrap_or_else(|e| e.into_inner());
        needle.as_ref().is_some_and(|n| bytes.windows(n.len()).any(|w| w == n.as_slice()))
    }
}

/// One connection through the proxy.
struct Connection {
    born: u64,
    silent: AtomicBool,
    shared: Arc<Shared>,
}

impl Connection {
    fn is_silent(&self) -> bool {
        self.silent.load(Ordering::SeqCst)
            || self.shared.generation.load(Ordering::SeqCst) != self.born
    }
}

impl Proxy {
    /// A proxy to `sim`, passing everything on until told otherwise.
    pub async fn to(sim: &Sim) -> Proxy {
        let upstream: u16 = sim.url().rsplit(':').next().and_then(|p| p.parse().ok()).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else { return };
                let connection = Arc::new(Connection {
                    born: accepting.generation.load(Ordering::SeqCst),
                    silent: AtomicBool::new(false),
                    shared: accepting.clone(),
                });
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pipe(client_read, server_write, connection.clone(), true));
                tokio::spawn(pipe(server_read, client_write, connection, false));
            }
        });
        Proxy { port, shared }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every connection open now passes nothing more, either way, while it stays open;
    /// connections made later pass as before.
    pub fn freeze(&self) {
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// From now on, a connection that carries a request containing `needle` (a path,
    /// say) goes silent there: that request never reaches the sim, and nothing more
    /// passes either way. Other connections pass as before.
    pub fn freeze_carrying(&self, needle: &str) {
        *self.shared.needle.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(needle.as_bytes().to_vec());
    }

    /// Requests carrying the needle pass again; connections already silent stay so.
    pub fn thaw(&self) {
        *self.shared.needle.lock().unwrap_or_else(|e| e.into_inner()) = None;
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

/// Copies `from` to `to` until either ends, or passes nothing more, forever, once the
/// connection is silent (a request carrying the needle silences it when `requests`).
async fn pipe(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    connection: Arc<Connection>,
    requests: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if requests && connection.shared.carries_needle(&buf[..n]) {
            connection.silent.store(true, Ordering::SeqCst);
        }
        if connection.is_silent() {
            // Keeps both sockets open and passes nothing: a silent path.
            std::future::pending::<()>().await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
