//! Watch on the simulated cluster: every object first, then each change; bursts make
//! one Find; deleted pods leave their evidence while a Watch is open.

use std::time::Duration;

use dispatch_core::{Backend, ObjectState, Watcher};
use dispatch_kf_testkit::*;
use futures::StreamExt;
use serde_json::json;

async fn next_obs(stream: &mut dispatch_core::ObsStream) -> dispatch_core::ObjectObs {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("an observation comes")
        .expect("the stream is open")
        .expect("the watch works")
}

#[tokio::test]
async fn watch_sends_every_object_then_each_change() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    let first = next_obs(&mut stream).await;
    assert_eq!(
        (first.object.name.as_str(), first.state),
        (object.name.as_str(), ObjectState::Gated)
    );
    b.open(&hold_cx(), &object).await.unwrap();
    let next = next_obs(&mut stream).await;
    assert_eq!(next.object.uid, object.uid);
    assert_ne!(next.state, ObjectState::Gated, "{next:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_changes_makes_one_find() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    next_obs(&mut stream).await;
    sim.clear_requests();
    for i in 0..50 {
        let mut tj = sim.get("trainjobs", NS, &object.name).unwrap();
        tj["metadata"]["annotations"]["example.com/touch"] = json!(i.to_string());
        sim.apply(tj).unwrap();
    }
    // Give the Backend time to take in the burst and make its Finds (a Find per burst,
    // at least one a second under a steady stream), then count them.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let finds = sim
        .requests()
        .iter()
        .filter(|r| {
            r.method == "GET" && r.path.ends_with("/trainjobs") && r.query.contains("job-id")
        })
        .count();
    assert_eq!(finds, 1, "one Find for a burst of 50 changes");
}

/// A watch connection the server ends (its `timeoutSeconds`, a
/// restart) is resumed from the last resource version, as kube-runtime's watcher does:
/// the Watch goes on, and it ends cleanly only when the call ends.
#[tokio::test]
async fn a_watch_the_server_closes_resumes_and_ends_only_with_its_call() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let (call, token) = dispatch_kf_client::cancellable(cx());
    let mut stream = b.watch(&call, &job(1)).await.unwrap();
    next_obs(&mut stream).await;
    sim.close_watches();
    b.open(&hold_cx(), &object).await.unwrap();
    let next = next_obs(&mut stream).await;
    assert_ne!(next.state, ObjectState::Gated, "the change after the close: {next:#?}");
    token.cancel();
    let end = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream ends");
    assert!(end.is_none(), "the call's end is a clean end: {end:?}");
}

/// A Find that fails ends the Watch with an error saying why.
#[tokio::test]
async fn a_failed_find_ends_the_watch_saying_why() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    next_obs(&mut stream).await;
    sim.add_fault(
        dispatch_kf_sim::Fault::on(
            "list",
            "pods",
            dispatch_kf_sim::Fault::status(403, "Forbidden", "pods is forbidden"),
        )
        .always(),
    );
    let mut tj = sim.get("trainjobs", NS, &object.name).unwrap();
    tj["metadata"]["annotations"]["example.com/touch"] = json!("1");
    sim.apply(tj).unwrap();
    let end = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream ends")
        .expect("with an item");
    let err = end.expect_err("a failed Find is an error, not a clean end");
    assert!(err.message().contains("a Find failed"), "{}", err.message());
    sim.clear_faults();
}

/// On the real clock: the pods' deletions reach the Watch over real connections, and a
/// paused clock would let the wait for the held observation time out while they travel.
#[tokio::test]
async fn pods_deleted_while_watched_stay_evidence() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = running_job(&sim, &b, 1).await;
    let running = b.inspect(&cx(), &object).await.unwrap();
    let execution = running.execution.expect("the pods count towards an execution");

    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    next_obs(&mut stream).await;
    b.hold(&hold_cx(), &object, 1).await.unwrap();
    sim.settle();
    sim.advance(Duration::from_secs(60));
    let held = next_obs(&mut stream).await;
    assert_eq!(held.state, ObjectState::Held);
    let pods_left = sim.list("pods", NS).len();
    assert_eq!(pods_left, 0, "holding suspends the JobSet, whose pods go");
    // The pods' deletions reach the Watch a moment later: look again until they have.
    let mut after = None;
    for _ in 0..100 {
        after = b.inspect(&cx(), &object).await.unwrap().execution;
        if after.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(after, Some(execution), "the captured pods still say which execution it was");
}

/// The watch connections the sim has been asked for since its requests were cleared.
fn watch_connections(sim: &dispatch_kf_sim::Sim) -> usize {
    sim.requests().iter().filter(|r| r.verb == "watch").count()
}

/// The Backend keeps one watch per kind for all of its Watch calls:
/// more Watches open no new connection, each Watch hears only of its own job, and one
/// ending leaves the others alone.
#[tokio::test]
async fn watches_share_one_connection_per_kind_and_end_alone() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let mut objects = Vec::new();
    for n in 1..=3 {
        objects.push(b.start(&cx(), &request(&job(n), 1)).await.unwrap());
    }
    let mut first = b.watch(&cx(), &job(1)).await.unwrap();
    next_obs(&mut first).await;
    sim.clear_requests();
    let mut streams = Vec::new();
    for n in [1, 2, 2, 3] {
        let mut stream = b.watch(&cx(), &job(n)).await.unwrap();
        next_obs(&mut stream).await;
        streams.push(stream);
    }
    assert_eq!(watch_connections(&sim), 0, "four more Watches open no watch");

    drop(first);
    drop(streams.remove(0));
    b.open(&hold_cx(), &objects[1]).await.unwrap();
    for stream in &mut streams[..2] {
        let next = next_obs(stream).await;
        assert_eq!(next.object.uid, objects[1].uid, "job 2's Watches hear of job 2");
    }
    b.open(&hold_cx(), &objects[2]).await.unwrap();
    let next = next_obs(&mut streams[2]).await;
    assert_eq!(next.object.uid, objects[2].uid, "job 3's Watch hears of job 3 only");
    assert_eq!(watch_connections(&sim), 0);
}

/// A shared watch whose apiserver stays unreachable ends every Watch
/// that relies on it with an error; the next Watch starts it anew.
#[tokio::test]
async fn a_shared_watch_that_fails_ends_every_watch_and_the_next_starts_it_anew() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = b.start(&cx(), &request(&job(1), 1)).await.unwrap();
    let mut streams = Vec::new();
    for _ in 0..2 {
        let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
        next_obs(&mut stream).await;
        streams.push(stream);
    }
    let forbidden = dispatch_kf_sim::Fault::status(403, "Forbidden", "pods is forbidden");
    sim.add_fault(dispatch_kf_sim::Fault::on("watch", "pods", forbidden.clone()).always());
    sim.add_fault(dispatch_kf_sim::Fault::on("list", "pods", forbidden).always());
    sim.close_watches();
    for stream in &mut streams {
        let end = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .expect("the stream ends")
            .expect("with an item");
        let err = end.expect_err("a failed watch is an error, not a clean end");
        assert!(err.message().contains("attempts in a row failed"), "{}", err.message());
    }
    sim.clear_faults();
    let mut again = b.watch(&cx(), &job(1)).await.unwrap();
    assert_eq!(next_obs(&mut again).await.object.uid, object.uid);
}

/// Job 1 running, and a Watch of it open past its first observation.
async fn watched_running_job(
    sim: &dispatch_kf_sim::Sim,
    b: &dispatch_kf::KubeflowBackend,
) -> (dispatch_core::ObjectRef, dispatch_core::ObsStream) {
    let object = running_job(sim, b, 1).await;
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    next_obs(&mut stream).await;
    (object, stream)
}

/// Every rank exits 1.
fn fail_every_rank(sim: &dispatch_kf_sim::Sim) {
    for pod in sim.list("pods", NS) {
        sim.exit(NS, pod["metadata"]["name"].as_str().unwrap(), 1);
    }
    sim.settle();
}

/// A watch of pods that loses its place (a 410 on resuming) lists anew; pods deleted
/// in between left no last state, so the observations the missing pods could change
/// say so. On the real clock, as the test above: the re-list travels real connections.
#[tokio::test]
async fn a_relist_of_pods_while_watched_is_said_as_a_gap_in_the_evidence() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let (object, _stream) = watched_running_job(&sim, &b).await;
    sim.add_fault(dispatch_kf_sim::Fault {
        verb: Some("watch".into()),
        resource: Some("pods".into()),
        name: None,
        nth: 1,
        times: Some(1),
        action: dispatch_kf_sim::FaultAction::ExpireWatch,
    });
    sim.close_watches();
    fail_every_rank(&sim);
    let mut seen = None;
    for _ in 0..100 {
        let obs = b.inspect(&cx(), &object).await.unwrap();
        if obs.state == ObjectState::Ended && obs.cause.detail.contains("may be missing") {
            seen = Some(obs);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let obs = seen.expect("the ended job says its evidence may have a gap");
    assert!(obs.cause.detail.contains("the watch of pods lost its place"), "{}", obs.cause.detail);
}

/// The first Ended a Watch sends is the right one, even while its pods watch lags: a
/// rank runs out of memory and is deleted at once, while the Watch's pods watch
/// connection passes nothing (a stalled connection, a lagging watch cache). Its Finds
/// list the pods fresh and see the rank gone, but its last state has not arrived: the
/// read waits for it, and past that wait the Watch holds the Ended back, until the
/// connection passes again and the deletion arrives. On the real clock: the stall is
/// longer than the read's wait.
#[tokio::test]
async fn the_first_ended_a_watch_sends_waits_for_deletions_its_pods_watch_has_not_seen() {
    let (sim, proxy) = cluster_behind_proxy().await;
    let b = backend_through(&proxy, &sim, settings(json!({}))).await;
    let object = running_job(&sim, &b, 1).await;
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    assert_eq!(next_obs(&mut stream).await.state, ObjectState::Running);

    // Plain HTTP: the proxy tells the pods watch's connection by its request.
    proxy.freeze_carrying(&["/pods?", "watch=true"]);
    let rank = sim.list("pods", NS)[0]["metadata"]["name"].as_str().unwrap().to_owned();
    assert!(sim.oom(NS, &rank));
    assert!(sim.delete("pods", NS, &rank, dispatch_kf_sim::Propagation::Background));
    sim.settle();
    let thaw = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(7)).await;
        proxy.thaw();
        proxy
    });
    let ended = loop {
        let obs = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .expect("the Ended comes once the deletion arrives")
            .expect("the stream is open")
            .expect("the watch works");
        if obs.state == ObjectState::Ended {
            break obs;
        }
    };
    assert_eq!(ended.object.uid, object.uid);
    assert_eq!(ended.cause.kind, dispatch_core::CauseKind::OutOfMemory, "{ended:#?}");
    thaw.await.unwrap();
}

/// A pods watch that failed (its apiserver unreachable for a while) and is started
/// anew by the next Watch missed every deletion in between: its first list is a
/// re-list, and the observations the missing pods could change say so. On the real
/// clock, as the tests above.
#[tokio::test]
async fn a_pods_watch_started_again_after_it_failed_is_said_as_a_gap_in_the_evidence() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let (object, mut stream) = watched_running_job(&sim, &b).await;
    let down = dispatch_kf_sim::Fault::status(503, "ServiceUnavailable", "the apiserver is away");
    sim.add_fault(dispatch_kf_sim::Fault::on("watch", "pods", down.clone()).always());
    sim.add_fault(dispatch_kf_sim::Fault::on("list", "pods", down).always());
    sim.close_watches();
    let end = loop {
        let item = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .expect("the stream ends")
            .expect("with an item");
        if let Err(e) = item {
            break e;
        }
    };
    assert!(end.message().contains("attempts in a row failed"), "{}", end.message());
    // Meanwhile the ranks fail and nobody watches them go.
    fail_every_rank(&sim);
    sim.clear_faults();
    let mut again = b.watch(&cx(), &job(1)).await.unwrap();
    let mut seen = None;
    for _ in 0..100 {
        let obs = next_obs(&mut again).await;
        if obs.object.uid == object.uid && obs.cause.detail.contains("may be missing") {
            seen = Some(obs);
            break;
        }
    }
    let obs = seen.expect("the job's observation says its evidence may have a gap");
    assert!(obs.cause.detail.contains("the watch of pods lost its place"), "{}", obs.cause.detail);
}

/// A watched TrainJob someone else deletes (an administrator's `kubectl delete`) gets
/// a last item: ended, cancelled by an actor, on the execution it was on. Without it
/// the last item the supervisor got would say running for ever.
#[tokio::test]
async fn a_watched_train_job_someone_deletes_ends_the_stream_of_it_cancelled() {
    let sim = cluster().await;
    let b = backend(&sim, settings(json!({}))).await;
    let object = running_job(&sim, &b, 1).await;
    let mut stream = b.watch(&cx(), &job(1)).await.unwrap();
    let running = next_obs(&mut stream).await;
    assert_eq!(running.state, ObjectState::Running);
    assert!(sim.delete("trainjobs", NS, &object.name, dispatch_kf_sim::Propagation::Foreground));
    sim.settle();
    let last = loop {
        let obs = next_obs(&mut stream).await;
        if obs.object.uid == object.uid && obs.state == ObjectState::Ended {
            break obs;
        }
    };
    assert_eq!(last.cause.kind, dispatch_core::CauseKind::Cancelled, "{last:#?}");
    assert_eq!(last.cause.provenance, Some(dispatch_core::Provenance::Actor));
    assert!(last.cause.detail.contains("was deleted while running"), "{}", last.cause.detail);
    assert_eq!(last.execution, running.execution);
}
