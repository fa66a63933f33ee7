//! The faults where the step's own writes meet someone else's: a conflict
//! on the status write, its Deployment deleted, a Deployment it does not
//! own.

use super::*;

/// Fault 2 for one step: the first two status writes of Foo `conflicted`
/// answer 409 Conflict.
pub(super) async fn conflict_on_status_write(
    cp: &ControlPlane,
    client: &Client,
    bin: Bin,
) -> String {
    let scene = Scene::new(client, 2, bin).await;
    // Step 8 applies the status (PATCH), which carries no resourceVersion and
    // so never conflicts by itself: the proxy stands in for a write that
    // lost a race. Step 7 PUTs the cached Foo with its resourceVersion, as
    // Go does: a 409 is exactly what a real write from a stale cache gets.
    let method = match bin {
        Eight => http::Method::PATCH,
        Seven => http::Method::PUT,
    };
    let injected = Arc::new(AtomicU32::new(0));
    let counter = injected.clone();
    let path = format!("/namespaces/{}/foos/conflicted/status", scene.ns);
    let rule: proxy::Rule = Arc::new(move |m, p| {
        let status_write =
            *m == method && p.contains(&path) && counter.fetch_add(1, Ordering::SeqCst) < 2;
        if status_write {
            Action::Reply(
                http::StatusCode::CONFLICT,
                proxy::status(
                    409,
                    "Conflict",
                    "Operation cannot be fulfilled on foos.samplecontroller.k8s.io \"conflicted\": \
                     the object has been modified; please apply your changes to the latest version and try again",
                ),
            )
        } else {
            Action::Forward
        }
    });
    let proxy = proxy::start(client.clone(), cp.data_dir(), &scene.ns, rule)
        .await
        .expect("proxy");
    let (mut step, port) = scene.start(&proxy.kubeconfig).await;
    create_foo(client, &scene.ns, "conflicted", "conflicted-nginx", Some(1)).await;
    step.expect(&["Error syncing", "the object has been modified"])
        .await;
    // And the Foo really does change meanwhile.
    scene.set_replicas("conflicted", 2).await;
    scene
        .until_converged(&mut step, "conflicted", "conflicted-nginx", 2)
        .await;
    let counted = match port {
        Some(port) => Some(
            metric(
                port,
                "sample_controller_reconcile_failures_total{error=\"api\"}",
            )
            .await,
        ),
        None => None,
    };
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{}:\n{output}", bin.label());
    scene.assert_nothing_else_touched(&output).await;
    let failures = scene.failed_syncs(&output, "conflicted");
    let conflicts = failures
        .iter()
        .filter(|l| l.contains("the object has been modified"))
        .count();
    assert!(
        conflicts >= 2,
        "{}: the two injected conflicts each fail a sync, got {conflicts}:\n{output}",
        bin.label()
    );
    let written = injected.load(Ordering::SeqCst);
    assert!(
        written > 2,
        "{}: status written after the conflicts",
        bin.label()
    );
    match counted {
        Some(counted) => {
            assert_eq!(
                counted as usize,
                failures.len(),
                "step 8: the failure metric agrees with the log:\n{output}"
            );
            format!(
                "409 Conflict injected on the first 2 status applies (proxy in front of the API server) \
                 while the Foo was scaled 1→2: logged, retried ({counted} failed syncs in the metrics), converged at 2"
            )
        }
        None => format!(
            "409 Conflict injected on the first 2 status PUTs (what a PUT from a stale cache gets) \
             while the Foo was scaled 1→2: logged, retried ({} failed syncs in the log, {conflicts} of them \
             conflicts), converged at 2",
            failures.len()
        ),
    }
}

/// Fault 3 for one step: the Foo's Deployment is deleted.
pub(super) async fn deleted_deployment(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
    let scene = Scene::new(client, 3, bin).await;
    let (mut step, _) = scene.start(cp.kubeconfig_path()).await;
    create_foo(client, &scene.ns, "phoenix", "phoenix-nginx", Some(2)).await;
    scene
        .until_converged(&mut step, "phoenix", "phoenix-nginx", 2)
        .await;
    let before = get_deployment(client, &scene.ns, "phoenix-nginx")
        .await
        .unwrap()
        .uid();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &scene.ns);
    delete(&deployments, "phoenix-nginx").await;
    let deleted = Instant::now();
    let after = step
        .until("a new phoenix-nginx", || async {
            get_deployment(client, &scene.ns, "phoenix-nginx")
                .await
                .and_then(|d| d.uid())
                .filter(|uid| Some(uid) != before.as_ref())
        })
        .await;
    let recreated = deleted.elapsed();
    scene
        .until_converged(&mut step, "phoenix", "phoenix-nginx", 2)
        .await;
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{}:\n{output}", bin.label());
    scene.assert_nothing_else_touched(&output).await;
    format!(
        "Deployment deleted: recreated (new UID {}) {:.2}s later, controlled by its Foo, 2/2 available again",
        &after[..8],
        recreated.as_secs_f64()
    )
}

/// One failed sync: when it was logged and the retry delay it announced.
#[derive(Debug)]
pub(super) struct Try {
    at: f64,
    retry_in: f64,
}

/// Fault 4 for one step: the Foo names a Deployment someone else owns.
pub(super) async fn foreign_deployment(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
    let label = bin.label();
    let scene = Scene::new(client, 4, bin).await;
    let taken = untouchable(&create_settled_foreign_deployment(client, &scene.ns, "taken").await);
    let (mut step, port) = scene.start(cp.kubeconfig_path()).await;
    create_foo(client, &scene.ns, "squatted", "taken", Some(1)).await;
    let window = Duration::from_secs(60);
    step.drain_for(window).await;

    let output = step.output.join("\n");
    let tries: Vec<Try> = scene
        .failed_syncs(&output, "squatted")
        .into_iter()
        .map(|l| Try {
            at: line_time(l).expect("a timestamp"),
            retry_in: l
                .split("retry_in=")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(debug_seconds)
                .unwrap_or_else(|| panic!("no retry_in in {l:?}")),
        })
        .collect();
    // Go's per-item backoff: 5 ms doubling; about 13 tries fit in a minute.
    assert!(
        (8..=20).contains(&tries.len()),
        "{label}: {} failed syncs in {window:?} (expected a backoff, not a hot loop or a stall):\n{output}",
        tries.len()
    );
    // Each failure doubles the announced delay, from 5 ms (the token bucket,
    // 50/s with a burst of 300, never decides here).
    let delays: Vec<f64> = tries.iter().map(|t| t.retry_in).collect();
    assert!((delays[0] - 0.005).abs() < 1e-9, "{label}: {delays:?}");
    assert!(
        delays.windows(2).all(|w| (w[1] / w[0] - 2.0).abs() < 1e-6),
        "{label}: each failure doubles the delay: {delays:?}"
    );
    // No try comes later than its delay promised; a try that comes earlier
    // was triggered by something other than the backoff.
    let gaps: Vec<f64> = tries.windows(2).map(|w| w[1].at - w[0].at).collect();
    let mut early = Vec::new();
    for (i, &gap) in gaps.iter().enumerate() {
        let (previous, next) = (&tries[i], &tries[i + 1]);
        assert!(
            gap <= previous.retry_in * 1.05 + 0.25,
            "{label}: a retry {gap:.3}s after a failure that announced {:.3}s:\n{output}",
            previous.retry_in
        );
        if gap < previous.retry_in * 0.9 - 0.05 {
            early.push(next.at);
        }
    }
    let late = &gaps[gaps.len() - 4..];
    let extra = match bin {
        Eight => {
            // Nothing but the backoff retries the Foo: the gaps are the delays.
            assert!(
                early.is_empty(),
                "step 8: tries before their backoff was over at {early:?}:\n{output}"
            );
            assert!(
                late.windows(2).all(|w| w[1] > w[0] * 1.5),
                "step 8: delays keep growing: {gaps:?}"
            );
            let counted = metric(
                port.unwrap(),
                "sample_controller_reconcile_failures_total{error=\"resource_exists\"}",
            )
            .await;
            assert_eq!(
                counted as usize,
                tries.len(),
                "step 8: metrics agree with the log"
            );
            String::new()
        }
        Seven => {
            // Go's resync replays the Foo every 30 s and its handler enqueues
            // it with Add, not AddRateLimited: the Foo is synced at once,
            // whatever its backoff (which keeps doubling: the key is not
            // forgotten). A minute holds one or two resyncs.
            let started = informers_started(&step);
            assert!(
                (1..=2).contains(&early.len())
                    && early.iter().all(|&at| on_a_resync_tick(at, started)),
                "step 7: the only early tries are the 30 s resyncs (informers started at {started:.3}), \
                 got {early:?}:\n{output}"
            );
            format!(
                ", plus {} immediate tries at the 30 s resync (Go: the resync enqueues with Add)",
                early.len()
            )
        }
    };
    let events = events_for(client, &scene.ns, "squatted").await;
    assert!(
        events.iter().any(|(t, r, n)| t == "Warning"
            && r == "ErrResourceExists"
            && n == r#"Resource "taken" already exists and is not managed by Foo"#),
        "{label}: {events:?}"
    );
    let now = get_deployment(client, &scene.ns, "taken").await.unwrap();
    assert_eq!(
        untouchable(&now),
        taken,
        "{label}: the foreign Deployment was changed"
    );
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{label}:\n{output}");
    scene.assert_nothing_else_touched(&output).await;
    format!(
        "foreign Deployment with the Foo's name: spec and metadata unchanged, Warning ErrResourceExists \
         recorded, {} tries in {}s with delays doubling to {:.2}s (last gaps {:?}s){extra}",
        tries.len(),
        window.as_secs(),
        delays.last().copied().unwrap_or(0.0),
        late.iter()
            .map(|g| (g * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    )
}
