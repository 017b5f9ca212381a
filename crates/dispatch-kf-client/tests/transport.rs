//! Transport rows of the error mapping, proved against real local sockets: what only a
//! real socket produces (a refused dial, a reset, a silent server, a TLS handshake with
//! a plain-text server) and token sources that fail.

use std::time::{Duration, Instant};

use dispatch_core::{CallContext, Kind};
use dispatch_kf_client::error_map::RequestClass;
use dispatch_kf_client::resources::POD;
use dispatch_kf_client::{Cluster, ClusterConfig};
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake server does with each connection after reading the request head.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Closes the connection without a byte of answer.
    Close,
    /// Resets the connection (RST) without an answer.
    Reset,
    /// Holds the connection open and never answers.
    Silent,
    /// Answers with this status and a plain-text body, as an unserved path does.
    PlainText(u16),
    /// Answers 200 with a streamed body, as a watch does, then never sends a byte: a
    /// half-open connection a load balancer forgot.
    StreamThenSilent,
}

async fn serve(behaviour: Behaviour) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handle(stream, behaviour));
        }
    });
    port
}

async fn handle(mut stream: TcpStream, behaviour: Behaviour) {
    let mut buf = vec![0u8; 65536];
    let mut seen = Vec::new();
    // A TLS ClientHello (record type 0x16) never ends in a blank line: answer it at once
    // in plain text, as a plain-HTTP server behind an https URL does.
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.first() != Some(&0x16) {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    match behaviour {
        Behaviour::Close => drop(stream),
        Behaviour::Reset => {
            // A zero linger sends RST on close and never blocks, which is what the
            // deprecation warns about.
            #[allow(deprecated)]
            stream.set_linger(Some(Duration::ZERO)).unwrap();
            drop(stream);
        }
        Behaviour::Silent => {
            let _ = stream.read(&mut buf).await;
            // Holds the connection open and never answers.
            std::future::pending::<()>().await;
        }
        Behaviour::StreamThenSilent => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
            let _ = stream.write_all(head.as_bytes()).await;
            std::future::pending::<()>().await;
        }
        Behaviour::PlainText(code) => {
            let body = "404 page not found\n";
            let head = format!(
                "HTTP/1.1 {code} Not Found\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        }
    }
}

/// A port nothing listens on: bound, then released.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

fn cluster_at(url: &str, request_timeout: Duration) -> Cluster {
    let mut config = kube::Config::new(url.parse().unwrap());
    config.default_namespace = "training".into();
    config.auth_info.token = Some("test-token".to_owned().into());
    Cluster::from_kube_config(config, request_timeout).unwrap()
}

fn configmaps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}

fn a_configmap() -> DynamicObject {
    DynamicObject::new("c", &configmaps()).within("training")
}

async fn create(cluster: &Cluster, cx: &CallContext) -> dispatch_core::Error {
    cluster
        .call(cx, RequestClass::Write, "create ConfigMap training/c", |client| async move {
            Api::<DynamicObject>::namespaced_with(client, "training", &configmaps())
                .create(&PostParams::default(), &a_configmap())
                .await
        })
        .await
        .unwrap_err()
}

async fn get(cluster: &Cluster, cx: &CallContext, class: RequestClass) -> dispatch_core::Error {
    cluster
        .call(cx, class, "get ConfigMap training/c", |client| async move {
            Api::<DynamicObject>::namespaced_with(client, "training", &configmaps()).get("c").await
        })
        .await
        .unwrap_err()
}

fn cx() -> CallContext {
    CallContext::background()
}

#[tokio::test]
async fn a_refused_dial_is_a_write_provably_not_sent_so_unreachable() {
    let cluster =
        cluster_at(&format!("http://127.0.0.1:{}", closed_port().await), Duration::from_secs(5));
    let err = create(&cluster, &cx()).await;
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    assert!(err.message().contains("not sent"), "{}", err.message());
    assert!(get(&cluster, &cx(), RequestClass::Read).await.is(Kind::Unreachable));
}

#[tokio::test]
async fn a_tls_handshake_with_a_plain_text_server_is_not_sent() {
    let port = serve(Behaviour::PlainText(404)).await;
    let cluster = cluster_at(&format!("https://127.0.0.1:{port}"), Duration::from_secs(5));
    let err = create(&cluster, &cx()).await;
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
}

#[tokio::test]
async fn a_write_read_then_closed_without_answer_is_outcome_unknown() {
    let cluster = cluster_at(
        &format!("http://127.0.0.1:{}", serve(Behaviour::Close).await),
        Duration::from_secs(5),
    );
    let err = create(&cluster, &cx()).await;
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    assert!(get(&cluster, &cx(), RequestClass::Read).await.is(Kind::Unreachable));
}

#[tokio::test]
async fn a_write_read_then_reset_is_outcome_unknown() {
    let cluster = cluster_at(
        &format!("http://127.0.0.1:{}", serve(Behaviour::Reset).await),
        Duration::from_secs(5),
    );
    let err = create(&cluster, &cx()).await;
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    assert!(get(&cluster, &cx(), RequestClass::Read).await.is(Kind::Unreachable));
}

#[tokio::test]
async fn a_silent_server_past_the_read_timeout_is_outcome_unknown_for_a_write() {
    let port = serve(Behaviour::Silent).await;
    let cluster = cluster_at(&format!("http://127.0.0.1:{port}"), Duration::from_millis(200));
    let err = create(&cluster, &cx()).await;
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    assert!(get(&cluster, &cx(), RequestClass::Read).await.is(Kind::Unreachable));
}

#[tokio::test]
async fn a_deadline_passing_while_a_write_is_in_flight_is_outcome_unknown() {
    let port = serve(Behaviour::Silent).await;
    let cluster = cluster_at(&format!("http://127.0.0.1:{port}"), Duration::from_secs(60));
    let cx = CallContext::with_deadline(Instant::now() + Duration::from_millis(200));
    let err = create(&cluster, &cx).await;
    assert_eq!(err.kind(), Kind::OutcomeUnknown, "{err:?}");
    let cx = CallContext::with_deadline(Instant::now() + Duration::from_millis(200));
    assert!(get(&cluster, &cx, RequestClass::Read).await.is(Kind::Unreachable));
}

#[tokio::test]
async fn a_plain_text_404_is_not_found_and_direct_requests_map_plainly() {
    let cluster = cluster_at(
        &format!("http://127.0.0.1:{}", serve(Behaviour::PlainText(404)).await),
        Duration::from_secs(5),
    );
    assert!(get(&cluster, &cx(), RequestClass::Read).await.is(Kind::NotFound));
    assert!(get(&cluster, &cx(), RequestClass::PodsLog).await.is(Kind::NotFound));
    let cluster = cluster_at(
        &format!("http://127.0.0.1:{}", serve(Behaviour::PlainText(502)).await),
        Duration::from_secs(5),
    );
    assert!(get(&cluster, &cx(), RequestClass::PodsLog).await.is(Kind::Unreachable));
    assert!(create(&cluster, &cx()).await.is(Kind::OutcomeUnknown));
}

/// Loads a kubeconfig whose user is `user` (YAML), pointing at a server that would
/// answer 404 to anything, so any request that is sent gets an answer.
async fn cluster_with_user(
    user: impl FnOnce(&std::path::Path) -> String,
) -> Result<Cluster, dispatch_core::Error> {
    let port = serve(Behaviour::PlainText(404)).await;
    let dir =
        std::env::temp_dir().join(format!("dispatch-kf-client-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let user = user(&dir);
    let path = dir.join("kubeconfig");
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: t\n\
         clusters: [{{name: t, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n\
         contexts: [{{name: t, context: {{cluster: t, user: u, namespace: training}}}}]\n\
         users: [{{name: u, user: {user}}}]\n"
    );
    std::fs::write(&path, yaml).unwrap();
    let config = ClusterConfig {
        kubeconfig: Some(path),
        context: None,
        request_timeout: Duration::from_secs(5),
    };
    Cluster::connect(&config).await
}

/// An exec token source that answers with a credential already expired until the file
/// `token-source.down` appears beside it, and fails from then on. An expired credential
/// makes kube run it again at the next request.
fn exec_failing_once_down(dir: &std::path::Path) -> String {
    let script = dir.join("token-source.sh");
    let down = dir.join("token-source.down");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ -e '{down}' ]; then echo 'FAKE-TOKEN-stdout'; echo 'token source is down FAKE-TOKEN-stderr' >&2; exit 1; fi\n\
             echo '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\
             \"status\":{{\"token\":\"t\",\"expirationTimestamp\":\"2000-01-01T00:00:00Z\"}}}}'\n",
            down = down.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    format!(
        "{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: '{}', args: ['--password=ARG-SECRET'], interactiveMode: Never}}}}",
        script.display()
    )
}

/// Nothing an exec plugin was given or printed reaches an error, in
/// its message, its Debug form or its sources.
fn assert_no_credentials(err: &dispatch_core::Error) {
    let mut texts = vec![err.to_string(), format!("{err:?}")];
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        texts.push(cause.to_string());
        texts.push(format!("{cause:?}"));
        source = cause.source();
    }
    for text in texts {
        for secret in ["FAKE-TOKEN", "ARG-SECRET"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }
}

#[tokio::test]
async fn an_exec_plugin_that_fails_leaks_neither_its_command_line_nor_its_output() {
    let err = cluster_with_user(|_| {
        "{exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: ['-c', 'echo FAKE-TOKEN-1; echo FAKE-TOKEN-2 >&2; exit 3', '--password=ARG-SECRET'], interactiveMode: Never}}".to_owned()
    })
    .await
    .err()
    .expect("the exec plugin fails");
    assert_eq!(err.kind(), Kind::Unauthorized, "{err:?}");
    assert!(err.message().contains("exec credential plugin exited"), "{}", err.message());
    assert_no_credentials(&err);

    // Output that is not an ExecCredential, holding a token.
    let err = cluster_with_user(|_| {
        "{exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: ['-c', 'echo \"token: FAKE-TOKEN-3\"'], interactiveMode: Never}}".to_owned()
    })
    .await
    .err()
    .expect("the exec plugin answers nonsense");
    assert_eq!(err.kind(), Kind::Unauthorized, "{err:?}");
    assert_no_credentials(&err);
}

#[tokio::test]
async fn a_token_source_failing_when_the_client_is_built_is_unauthorized() {
    let err = cluster_with_user(|_| {
        "{exec: {apiVersion: client.authentication.k8s.io/v1, command: 'false', interactiveMode: Never}}".to_owned()
    })
    .await
    .err()
    .expect("the exec plugin fails");
    assert_eq!(err.kind(), Kind::Unauthorized, "{err:?}");
}

#[tokio::test]
async fn a_token_source_failing_at_a_request_is_unauthorized_and_nothing_is_sent() {
    let mut dir = None;
    let cluster = cluster_with_user(|d| {
        dir = Some(d.to_path_buf());
        exec_failing_once_down(d)
    })
    .await
    .unwrap();
    std::fs::write(dir.unwrap().join("token-source.down"), "").unwrap();
    let err = create(&cluster, &cx()).await;
    assert_eq!(err.kind(), Kind::Unauthorized, "{err:?}");
    assert!(err.message().contains("token source failed"), "{}", err.message());
    assert_no_credentials(&err);
}

#[tokio::test]
async fn a_missing_token_file_is_a_failed_token_source_so_unauthorized() {
    let result =
        cluster_with_user(|_| "{tokenFile: /nonexistent/dispatch-kf/token}".to_owned()).await;
    let err = result.err().expect("kube reads the token file when it builds the client");
    assert_eq!(err.kind(), Kind::Unauthorized, "{err:?}");
}

#[tokio::test]
async fn a_kubeconfig_that_cannot_load_is_invalid() {
    let config = ClusterConfig {
        kubeconfig: Some("/nonexistent/dispatch-kf/kubeconfig".into()),
        context: None,
        request_timeout: Duration::from_secs(5),
    };
    let err = Cluster::connect(&config).await.err().expect("a missing file cannot load");
    assert_eq!(err.kind(), Kind::Invalid);
    assert!(err.message().contains("/nonexistent/dispatch-kf/kubeconfig"), "{}", err.message());
}

/// A guard, not a measure: a test that would hang fails instead.
const NO_HANG: Duration = Duration::from_secs(60);

/// A watch on a server that accepts and never answers used to wait
/// forever; its list gives up past the watch's read timeout, and when the attempts keep
/// failing the stream ends with an error, not a hang.
#[tokio::test]
async fn a_watch_on_a_server_that_accepts_and_never_answers_is_unreachable() {
    let port = serve(Behaviour::Silent).await;
    let cluster = cluster_at(&format!("http://127.0.0.1:{port}"), Duration::from_secs(1))
        .with_watch_timeout(Duration::from_secs(1))
        .unwrap();
    let err = ends_with_an_error(cluster.objects(POD, "training").watch("")).await;
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
}

/// A watch whose connection goes silent after it opened is given up
/// past its timeout, resumed, and when every attempt stays silent the stream ends with
/// an error, not a clean close and not a hang.
#[tokio::test]
async fn a_watch_whose_connections_go_silent_ends_with_an_error() {
    let port = serve(Behaviour::StreamThenSilent).await;
    let cluster = cluster_at(&format!("http://127.0.0.1:{port}"), Duration::from_secs(1))
        .with_watch_timeout(Duration::from_secs(1))
        .unwrap();
    let err = ends_with_an_error(cluster.objects(POD, "training").watch("")).await;
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
}

/// The one error a failing watch yields, checked to be its last item.
async fn ends_with_an_error(mut watch: dispatch_kf_client::Changes) -> dispatch_core::Error {
    use futures::StreamExt;
    let item = tokio::time::timeout(NO_HANG, watch.next())
        .await
        .expect("the watch does not hang")
        .expect("an item, not a clean close");
    let err = item.expect_err("failing attempts are an error");
    assert!(err.message().contains("attempts in a row failed"), "{}", err.message());
    assert!(watch.next().await.is_none(), "the error is the last item");
    err
}

/// A followed log whose connection goes silent used to wait forever.
/// Past the watch timeout it checks on the pod; when those checks get no answer either,
/// the stream ends with an error.
#[tokio::test]
async fn a_followed_log_whose_connection_goes_silent_ends_with_an_error() {
    use futures::StreamExt;
    let port = serve(Behaviour::StreamThenSilent).await;
    let cluster = cluster_at(&format!("http://127.0.0.1:{port}"), Duration::from_secs(1))
        .with_watch_timeout(Duration::from_secs(1))
        .unwrap();
    let log = cluster.pod_log(&cx(), "training", "p", "node", true).await.unwrap();
    let mut log = Box::pin(log);
    let item = tokio::time::timeout(NO_HANG, log.next())
        .await
        .expect("the followed log does not hang")
        .expect("an item, not a clean end");
    let err = item.expect_err("a lost connection is an error");
    assert_eq!(err.kind(), Kind::Unreachable, "{err:?}");
    assert!(err.message().contains("checks on the pod got no answer"), "{}", err.message());
    assert!(log.next().await.is_none(), "the error is the last item");
}
