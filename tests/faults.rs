//! The fault suite: step 8 (the controller for a cluster) and step 7 (Go's
//! program) against the real control plane while things go wrong.
//! `cargo xtask faults` runs it and prints one line per fault and step.
//!
//! Each fault is one test that runs its step 8 and step 7 variants side by
//! side, each in its own namespace; every variant checks that its step
//! converges (or refuses, for what must be refused), never panics, and
//! changes nothing it does not own: each namespace holds a Deployment no Foo
//! names, compared before and after.
//!
//! Where the two differ, so do the expectations: step 8 serves `/healthz`
//! and `/metrics` and warns about missing RBAC; step 7 serves nothing (its
//! failures are counted from its log), exits at start when RBAC is missing,
//! and, like Go, replays every Foo to its workers every 30 s (the resync).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use course::harness::untouchable;
use course::proxy::{self, Action};
use futures::future::join_all;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use kube::{Client, ResourceExt};
use sample_controller::Foo;
use serde_json::json;
use support::*;
use testcluster::{ControlPlane, Options};

/// The program under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bin {
    /// Go's program: no HTTP server, no leader election, fatal preflight, 30 s resync.
    Seven,
    /// kube's Controller, with `/healthz`, `/metrics` and RBAC warnings.
    Eight,
}

use Bin::{Eight, Seven};

/// Both, in the order their report lines are printed.
const BOTH: [Bin; 2] = [Eight, Seven];

/// Step 7's resync period (steps/step-7/main.rs, Go's `time.Second*30`).
const RESYNC: f64 = 30.0;

impl Bin {
    /// The Cargo binary.
    fn name(self) -> &'static str {
        match self {
            Seven => "step-7",
            Eight => "step-8",
        }
    }

    /// For messages and report lines.
    fn label(self) -> &'static str {
        match self {
            Seven => "step 7",
            Eight => "step 8",
        }
    }
}

/// A namespace for one fault and one step, with a Deployment in it that no Foo names.
struct Scene {
    client: Client,
    ns: String,
    bystander: serde_json::Value,
    bin: Bin,
}

const BYSTANDER: &str = "bystander";

impl Scene {
    async fn new(client: &Client, fault: u32, bin: Bin) -> Scene {
        let short = match bin {
            Seven => "s7",
            Eight => "s8",
        };
        let ns = namespace(client, &format!("fault{fault}-{short}")).await;
        let bystander =
            untouchable(&create_settled_foreign_deployment(client, &ns, BYSTANDER).await);
        Scene {
            client: client.clone(),
            ns,
            bystander,
            bin,
        }
    }

    /// Fails if the Deployment nobody asked us to manage was changed, or if
    /// the controller printed a panic.
    async fn assert_nothing_else_touched(&self, output: &str) {
        let now = get_deployment(&self.client, &self.ns, BYSTANDER)
            .await
            .expect("bystander still exists");
        assert_eq!(
            untouchable(&now),
            self.bystander,
            "{}: bystander changed",
            self.bin.label()
        );
        assert!(
            !output.contains("panicked"),
            "{} panicked:\n{output}",
            self.bin.label()
        );
    }

    /// Waits until `foo` converged, reading `step`'s output meanwhile.
    async fn until_converged(&self, step: &mut Step, foo: &str, deployment: &str, replicas: i32) {
        step.until(&format!("{foo} converged at {replicas}"), || async {
            converged(&self.client, &self.ns, foo, deployment, replicas)
                .await
                .then_some(())
        })
        .await;
    }

    /// Starts the step on this namespace through `kubeconfig` and waits until
    /// its workers run. Step 8 also serves `/metrics` on the port returned.
    async fn start(&self, kubeconfig: &std::path::Path) -> (Step, Option<u16>) {
        let eight = self.bin == Eight;
        let extra: &[&str] = if eight {
            &["--http-address", ANY_PORT]
        } else {
            &[]
        };
        let mut step = Step::start(self.bin.name(), kubeconfig, Some(&self.ns), extra);
        step.expect(&["Starting workers"]).await;
        let port = if eight {
            Some(step.http_port().await)
        } else {
            None
        };
        (step, port)
    }

    fn foos(&self) -> Api<Foo> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn set_replicas(&self, foo: &str, replicas: i32) {
        self.foos()
            .patch(
                foo,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .expect("patch Foo");
    }

    /// The log lines of failed syncs of `foo` (both steps log
    /// `Error syncing; requeuing for later retry objectRef=ns/name …`).
    fn failed_syncs<'a>(&self, output: &'a str, foo: &str) -> Vec<&'a str> {
        let key = format!("objectRef={}/{foo} ", self.ns);
        output
            .lines()
            .filter(|l| l.contains("Error syncing") && l.contains(&key))
            .collect()
    }
}

/// The time (seconds since midnight) of step 7's "Waiting for informer
/// caches to sync": its informers, and so their resync timers, start then.
fn informers_started(step: &Step) -> f64 {
    step.output
        .iter()
        .find(|l| l.contains("Waiting for informer caches to sync"))
        .and_then(|l| line_time(l))
        .expect("a timestamped \"Waiting for informer caches to sync\" line")
}

/// Whether `at` falls on one of step 7's resync ticks (every 30 s from
/// `started`), within a second.
fn on_a_resync_tick(at: f64, started: f64) -> bool {
    let since = at - started;
    let off = since - (since / RESYNC).round() * RESYNC;
    since > RESYNC - 1.0 && off.abs() < 1.0
}

/// A `Duration`'s `Debug` text (`5ms`, `20.48s`) in seconds.
fn debug_seconds(text: &str) -> Option<f64> {
    for (unit, scale) in [("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0)] {
        if let Some(number) = text.strip_suffix(unit) {
            return number.parse::<f64>().ok().map(|n| n * scale);
        }
    }
    None
}

/// Both steps started on `cp`, each in a namespace of fault `fault`, with
/// Foo `first` (Deployment `FIRST-nginx`) converged at 1; and their PIDs,
/// to show neither restarts.
async fn both_running(
    cp: &ControlPlane,
    client: &Client,
    fault: u32,
    first: &str,
) -> (Vec<Scene>, Vec<(Step, Option<u16>)>, Vec<u32>) {
    let mut scenes = Vec::new();
    for bin in BOTH {
        scenes.push(Scene::new(client, fault, bin).await);
    }
    let mut running = join_all(scenes.iter().map(|s| s.start(cp.kubeconfig_path()))).await;
    let pids = running.iter().map(|(step, _)| step.pid()).collect();
    join_all(
        scenes
            .iter()
            .zip(running.iter_mut())
            .map(|(scene, (step, _))| async move {
                let deployment = format!("{first}-nginx");
                create_foo(&scene.client, &scene.ns, first, &deployment, Some(1)).await;
                scene.until_converged(step, first, &deployment, 1).await;
            }),
    )
    .await;
    (scenes, running, pids)
}

/// Lets both steps run for `down` with `what` stopped: each stays up, and
/// step 8's `/healthz` answers 200 meanwhile.
async fn stay_up_while_down(
    scenes: &[Scene],
    running: &mut [(Step, Option<u16>)],
    what: &str,
    down: Duration,
) {
    join_all(running.iter_mut().map(|(step, _)| step.drain_for(down))).await;
    for (scene, (step, port)) in scenes.iter().zip(running.iter_mut()) {
        if let Some(port) = port {
            let alive_while_down = http_get(*port, "/healthz").await;
            assert_eq!(
                alive_while_down.map(|(c, _)| c),
                Some(200),
                "step 8 /healthz while {what} is down"
            );
        }
        assert!(
            step.is_running(),
            "{} exited while {what} was down:\n{}",
            scene.bin.label(),
            step.output.join("\n")
        );
    }
}

/// Stops both steps after an outage: each must still be the process it was
/// (same PID), exit 0 and have touched nothing else. Each one's label and
/// output, and whether it served its probes (step 8).
async fn stop_unrestarted(
    scenes: &[Scene],
    running: Vec<(Step, Option<u16>)>,
    pids: Vec<u32>,
) -> Vec<(&'static str, String, bool)> {
    let mut stopped = Vec::new();
    for ((scene, (mut step, port)), pid) in scenes.iter().zip(running).zip(pids) {
        let label = scene.bin.label();
        assert!(step.is_running(), "{label} must not restart");
        assert_eq!(step.pid(), pid, "{label}");
        let (status, output) = step.terminate().await;
        assert!(status.success(), "{label}:\n{output}");
        scene.assert_nothing_else_touched(&output).await;
        stopped.push((label, output, port.is_some()));
    }
    stopped
}

/// What a report line says of `/healthz` during an outage.
fn healthz_while_down(served: bool) -> &'static str {
    if served {
        ", /healthz 200 while down"
    } else {
        ""
    }
}

/// After an outage, in both steps at once: Foos `created` (name, replicas;
/// their Deployments `NAME-nginx`) are created and `before` is scaled to 3;
/// waits until those, and the Foos `existing` already there, have
/// converged. How long that took, per step.
async fn converge_after(
    scenes: &[Scene],
    running: &mut [(Step, Option<u16>)],
    created: &[(&str, i32)],
    existing: &[(&str, i32)],
) -> Vec<Duration> {
    join_all(
        scenes
            .iter()
            .zip(running.iter_mut())
            .map(|(scene, (step, _))| async move {
                let started = Instant::now();
                for (name, replicas) in created {
                    let deployment = format!("{name}-nginx");
                    create_foo(&scene.client, &scene.ns, name, &deployment, Some(*replicas)).await;
                }
                scene.set_replicas("before", 3).await;
                for (name, replicas) in existing.iter().chain(created).chain(&[("before", 3)]) {
                    let deployment = format!("{name}-nginx");
                    scene
                        .until_converged(step, name, &deployment, *replicas)
                        .await;
                }
                started.elapsed()
            }),
    )
    .await
}

#[tokio::test]
async fn fault_1_api_server_restart_both_steps_stay_up_and_converge_foos_created_meanwhile() {
    // Its own control plane: stopping kube-apiserver would disturb the other
    // faults. Step 8 and step 7 live through the same restart.
    let (mut cp, client) = own_cluster(Options::default()).await;
    let (mut scenes, mut running, pids) = both_running(&cp, &client, 1, "before").await;

    cp.stop_apiserver().unwrap();
    let down = Instant::now();
    // Let the watches fail and back off while the API server is away.
    stay_up_while_down(
        &scenes,
        &mut running,
        "the API server",
        Duration::from_secs(5),
    )
    .await;
    cp.start_apiserver().await.unwrap();
    let down_for = down.elapsed();

    let client = cp.client().await.unwrap();
    for scene in &mut scenes {
        scene.client = client.clone();
    }
    let took = converge_after(
        &scenes,
        &mut running,
        &[("during-1", 2), ("during-2", 1)],
        &[],
    )
    .await;

    let stopped = stop_unrestarted(&scenes, running, pids).await;
    let lines: Vec<_> = stopped
        .into_iter()
        .zip(took)
        .map(|((label, _, served), took)| {
            let healthz = healthz_while_down(served);
            let line = format!(
                "kube-apiserver stopped for {:.1}s and restarted: stayed up (same PID{healthz}); \
                 2 Foos created and 1 scaled after the restart converged in {:.1}s",
                down_for.as_secs_f64(),
                took.as_secs_f64()
            );
            (label, line)
        })
        .collect();
    report_steps(1, &lines);
}

/// Fault 2 for one step: the first two status writes of Foo `conflicted`
/// answer 409 Conflict.
async fn conflict_on_status_write(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
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

#[tokio::test]
async fn fault_2_a_conflict_on_the_status_write_is_retried_until_it_converges() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| conflict_on_status_write(cp, &client, bin))).await;
    report_steps(2, &labelled(lines));
}

/// The report lines of [`BOTH`], labelled.
fn labelled(lines: Vec<String>) -> Vec<(&'static str, String)> {
    BOTH.iter().map(|b| b.label()).zip(lines).collect()
}

/// Fault 3 for one step: the Foo's Deployment is deleted.
async fn deleted_deployment(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
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

#[tokio::test]
async fn fault_3_a_deleted_deployment_is_recreated() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| deleted_deployment(cp, &client, bin))).await;
    report_steps(3, &labelled(lines));
}

/// One failed sync: when it was logged and the retry delay it announced.
#[derive(Debug)]
struct Try {
    at: f64,
    retry_in: f64,
}

/// Fault 4 for one step: the Foo names a Deployment someone else owns.
async fn foreign_deployment(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
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

#[tokio::test]
async fn fault_4_a_foreign_deployment_is_left_alone_and_retried_with_growing_delays() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| foreign_deployment(cp, &client, bin))).await;
    report_steps(4, &labelled(lines));
}

/// Fault 5 for one step: Foos the CRD's schema rejects.
async fn invalid_foos(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
    let scene = Scene::new(client, 5, bin).await;
    let (mut step, _) = scene.start(cp.kubeconfig_path()).await;
    let resource = ApiResource::erase::<Foo>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &scene.ns, &resource);
    let mut messages = Vec::new();
    for (name, replicas) in [
        ("zero", json!(0)),
        ("eleven", json!(11)),
        ("text", json!("two")),
    ] {
        let foo: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": name},
            "spec": {"deploymentName": format!("{name}-nginx"), "replicas": replicas},
        }))
        .unwrap();
        match api.create(&PostParams::default(), &foo).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{status:?}");
                assert!(status.message.contains("spec.replicas"), "{status:?}");
                messages.push(status.message);
            }
            other => panic!("Foo {name} with replicas {replicas} was accepted: {other:?}"),
        }
    }
    // A valid Foo after them is synced: the controller was listening.
    create_foo(client, &scene.ns, "valid", "valid-nginx", Some(1)).await;
    scene
        .until_converged(&mut step, "valid", "valid-nginx", 1)
        .await;
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{}:\n{output}", bin.label());
    for name in ["zero", "eleven", "text"] {
        assert!(
            !output.contains(&format!("{}/{name}", scene.ns)),
            "{} saw {name}",
            bin.label()
        );
    }
    scene.assert_nothing_else_touched(&output).await;
    format!(
        "replicas 0, 11 and \"two\" rejected with 422 ({}); the controller never logged them and synced a valid Foo",
        messages.join(" | ")
    )
}

#[tokio::test]
async fn fault_5_invalid_foos_are_rejected_by_the_api_server_and_never_reach_the_controller() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| invalid_foos(cp, &client, bin))).await;
    report_steps(5, &labelled(lines));
}

/// Fault 6 for one step: a Foo without `deploymentName`.
async fn empty_deployment_name(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
    let label = bin.label();
    let scene = Scene::new(client, 6, bin).await;
    let (mut step, port) = scene.start(cp.kubeconfig_path()).await;
    create_foo(client, &scene.ns, "nameless", "", Some(1)).await;
    let missing = "Deployment name missing";
    // Step 7 also logs it at each resync tick; those are counted apart.
    let resync_ticks = |step: &Step| -> (usize, usize) {
        let started = (bin == Seven).then(|| informers_started(step));
        let times: Vec<f64> = step
            .output
            .iter()
            .filter(|l| l.contains(missing))
            .map(|l| line_time(l).expect("a timestamp"))
            .collect();
        let resyncs = times
            .iter()
            .filter(|&&t| started.is_some_and(|s| on_a_resync_tick(t, s)))
            .count();
        (times.len() - resyncs, resyncs)
    };
    step.expect(&[missing]).await;
    step.drain_for(Duration::from_secs(10)).await;
    assert_eq!(
        resync_ticks(&step).0,
        1,
        "{label}: logged once, not retried"
    );
    scene.set_replicas("nameless", 2).await;
    step.expect(&[missing]).await;
    step.drain_for(Duration::from_secs(10)).await;
    assert_eq!(
        resync_ticks(&step).0,
        2,
        "{label}: logged again only after the change"
    );
    assert!(step.is_running(), "{label}");
    let extra = match (bin, port) {
        (Eight, Some(port)) => {
            let reconciles = metric(port, "sample_controller_reconciles_total").await;
            let failures = metric(
                port,
                "sample_controller_reconcile_failures_total{error=\"api\"}",
            )
            .await;
            assert_eq!((reconciles, failures), (2.0, 0.0), "step 8");
            assert_eq!(resync_ticks(&step).1, 0);
            "2 syncs and 0 failures in the metrics, no retry, still running".to_string()
        }
        _ => {
            // Go's resync syncs the Foo again 30 s after the informers
            // started: one more line, and still no retry in between.
            let started = informers_started(&step);
            step.expect(&[missing]).await;
            step.drain_for(Duration::from_secs(2)).await;
            assert_eq!(
                resync_ticks(&step),
                (2, 1),
                "step 7: one line per change and one at the resync (informers started at {started:.3})"
            );
            "no retry, still running; logged once more at the 30 s resync, as Go does".to_string()
        }
    };
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{label}:\n{output}");
    assert!(
        scene.failed_syncs(&output, "nameless").is_empty(),
        "{label}: a Foo without a name is not retried:\n{output}"
    );
    if bin == Seven {
        // Step 7 has no metrics: its sync log says the same as step 8's.
        let synced = format!("Successfully synced objectRef={}/nameless", scene.ns);
        assert_eq!(
            output.lines().filter(|l| l.contains(&synced)).count(),
            3,
            "step 7: 3 syncs (2 changes, 1 resync), none failed:\n{output}"
        );
    }
    scene.assert_nothing_else_touched(&output).await;
    format!("empty deploymentName: one error line per change (2 over 20 s for 2 versions), {extra}")
}

#[tokio::test]
async fn fault_6_an_empty_deployment_name_is_logged_once_per_change_without_retries() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| empty_deployment_name(cp, &client, bin))).await;
    report_steps(6, &labelled(lines));
}

/// Fault 7 for one step: SIGTERM while Deployment creations are in flight.
async fn sigterm_mid_sync(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
    let label = bin.label();
    let scene = Scene::new(client, 7, bin).await;
    // Slow Deployment creation down, so that syncs are surely in flight at SIGTERM.
    let rule: proxy::Rule = Arc::new(|method, path| {
        if *method == http::Method::POST && path.contains("/deployments") {
            Action::Delay(Duration::from_secs(2))
        } else {
            Action::Forward
        }
    });
    let proxy = proxy::start(client.clone(), cp.data_dir(), &scene.ns, rule)
        .await
        .expect("proxy");
    let (mut step, _) = scene.start(&proxy.kubeconfig).await;
    for i in 0..6 {
        create_foo(
            client,
            &scene.ns,
            &format!("busy-{i}"),
            &format!("busy-{i}-nginx"),
            Some(1),
        )
        .await;
    }
    step.expect(&["Creating deployment"]).await;
    let signalled = Instant::now();
    let (status, output) = step.terminate().await;
    let stopped_in = signalled.elapsed();
    assert!(status.success(), "{label}: exit 0 on SIGTERM:\n{output}");
    assert!(
        stopped_in < Duration::from_secs(10),
        "{label}: {stopped_in:?}"
    );
    let started: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("Creating deployment"))
        .filter_map(|l| l.split("deployment=").nth(1))
        .collect();
    assert!(!started.is_empty());
    for deployment in &started {
        let foo = deployment.trim_end_matches("-nginx");
        assert!(
            output.contains(&format!("Successfully synced objectRef={}/{foo}", scene.ns)),
            "{label}: the sync of {foo} was cut short:\n{output}"
        );
        assert!(
            get_deployment(client, &scene.ns, deployment)
                .await
                .is_some()
        );
    }
    scene.assert_nothing_else_touched(&output).await;
    format!(
        "SIGTERM with {} syncs in flight (Deployment creation slowed to 2 s): all finished, \
         exit 0 after {:.1}s",
        started.len(),
        stopped_in.as_secs_f64()
    )
}

#[tokio::test]
async fn fault_7_sigterm_lets_syncs_in_flight_finish_and_exits_0_within_10_seconds() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| sigterm_mid_sync(cp, &client, bin))).await;
    report_steps(7, &labelled(lines));
}

#[tokio::test]
async fn fault_8_without_the_crd_both_steps_exit_naming_the_install_command() {
    let cp = ControlPlane::start(Options::api_server_only())
        .await
        .expect("control plane");
    let kubeconfig = cp.kubeconfig_path();
    let runs = join_all(BOTH.map(|bin| async move {
        let started = Instant::now();
        let result = Step::start(bin.name(), kubeconfig, None, &[]).wait().await;
        (result, started.elapsed())
    }))
    .await;
    let mut lines = Vec::new();
    for (bin, ((status, output), took)) in BOTH.into_iter().zip(runs) {
        let label = bin.label();
        assert_eq!(status.code(), Some(1), "{label}:\n{output}");
        assert!(
            output.contains("the Foo CRD (foos.samplecontroller.k8s.io) is not installed"),
            "{label}:\n{output}"
        );
        assert!(
            output.contains("kubectl apply -f manifests/crd.yaml"),
            "{label}:\n{output}"
        );
        assert!(!output.contains("panicked"), "{label}:\n{output}");
        let line = output
            .lines()
            .find(|l| l.contains("not installed"))
            .unwrap_or_default()
            .trim();
        lines.push((
            label,
            format!(
                "CRD missing at start: exit 1 after {:.1}s (a Pod restarts until it is installed), saying {line:?}",
                took.as_secs_f64()
            ),
        ));
    }
    report_steps(8, &lines);
}

/// `rules` without `verb` on Deployments.
fn without_deployment_verb(
    rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>,
    verb: &str,
) -> Vec<k8s_openapi::api::rbac::v1::PolicyRule> {
    rules
        .into_iter()
        .map(|mut rule| {
            if rule.resources.as_deref() == Some(&["deployments".to_string()]) {
                rule.verbs.retain(|v| v != verb);
            }
            rule
        })
        .collect()
}

/// Fault 9, step 8: without `create deployments` it warns, logs each
/// forbidden sync, and converges once the verb is granted.
async fn forbidden_verb_step_8(cp: &ControlPlane, client: &Client) -> String {
    let scene = Scene::new(client, 9, Eight).await;
    let kubeconfig = cp
        .service_account_kubeconfig(&scene.ns, "controller")
        .await
        .unwrap();
    // ClusterRole sample-controller (step 8's) from manifests/rbac.yaml.
    let (cluster_role, _) = manifest_roles();
    let all_rules = cluster_role.rules.unwrap();
    let without_create = without_deployment_verb(all_rules.clone(), "create");
    grant(
        client,
        &scene.ns,
        "controller",
        "controller",
        without_create,
    )
    .await;

    let mut step = Step::start("step-8", &kubeconfig, Some(&scene.ns), &[]);
    let warning = step.expect(&["RBAC denies", "create deployments"]).await;
    step.expect(&["Starting workers"]).await;
    create_foo(client, &scene.ns, "blocked", "blocked-nginx", Some(1)).await;
    let forbidden = step
        .expect(&[
            "Error syncing",
            "cannot create resource",
            "deployments",
            "forbidden",
        ])
        .await;
    step.expect(&["Error syncing", "cannot create resource"])
        .await; // retried
    assert!(step.is_running());

    grant(client, &scene.ns, "controller", "controller", all_rules).await;
    let granted = Instant::now();
    scene
        .until_converged(&mut step, "blocked", "blocked-nginx", 1)
        .await;
    let recovered = granted.elapsed();
    let (status, output) = step.terminate().await;
    assert!(status.success(), "step 8:\n{output}");
    scene.assert_nothing_else_touched(&output).await;
    let why = forbidden
        .split("error=")
        .nth(1)
        .unwrap_or(&forbidden)
        .chars()
        .take(150)
        .collect::<String>();
    assert!(warning.contains("create deployments"), "{warning}");
    format!(
        "RBAC without `create deployments`: warned at start, each sync logged {why:?}…, \
         no crash; converged {:.1}s after the verb was granted",
        recovered.as_secs_f64()
    )
}

/// Fault 9, step 7: without `create deployments` its preflight exits 1
/// before any sync, naming the permission.
async fn forbidden_verb_step_7(cp: &ControlPlane, client: &Client) -> String {
    let scene = Scene::new(client, 9, Seven).await;
    let kubeconfig = cp
        .service_account_kubeconfig(&scene.ns, "controller")
        .await
        .unwrap();
    let all_rules = manifest_cluster_role("sample-controller-step-7")
        .rules
        .unwrap();
    let without_create = without_deployment_verb(all_rules, "create");
    grant(
        client,
        &scene.ns,
        "controller",
        "controller",
        without_create,
    )
    .await;
    create_foo(client, &scene.ns, "blocked", "blocked-nginx", Some(1)).await;

    let started = Instant::now();
    let (status, output) = Step::start("step-7", &kubeconfig, Some(&scene.ns), &[])
        .wait()
        .await;
    let took = started.elapsed();
    assert_eq!(status.code(), Some(1), "step 7:\n{output}");
    // src/diagnose.rs preflight: the scope, then one line per missing
    // permission; only this one is missing.
    let expected = format!(
        "Error: RBAC forbids the user in your kubeconfig to do what this step needs in namespace {:?}:\n  \
         - create deployments (API group \"apps\")\n\
         Grant these (manifests/rbac.yaml has the controller's full list), or use a kubeconfig with more rights.",
        scene.ns
    );
    assert!(output.contains(&expected), "step 7:\n{output}");
    assert!(
        !output.contains("Starting workers"),
        "step 7 started:\n{output}"
    );
    assert!(
        get_deployment(client, &scene.ns, "blocked-nginx")
            .await
            .is_none()
    );
    scene.assert_nothing_else_touched(&output).await;
    format!(
        "RBAC without `create deployments`: exit 1 after {:.1}s, before any sync, saying {:?}",
        took.as_secs_f64(),
        expected.lines().take(2).collect::<Vec<_>>().join(" ")
    )
}

#[tokio::test]
async fn fault_9_a_forbidden_verb_is_warned_and_recovers_in_step_8_and_refused_at_start_in_step_7()
{
    let (cp, client) = cluster().await;
    let (eight, seven) = tokio::join!(
        forbidden_verb_step_8(cp, &client),
        forbidden_verb_step_7(cp, &client)
    );
    report_steps(9, &[("step 8", eight), ("step 7", seven)]);
}

/// Every UID each Deployment of a namespace had, seen by a watch of the
/// test's own (straight to the API server, never through a fault proxy) in
/// the background: a Deployment that exists for a moment only, created and
/// garbage-collected between two polls, is seen too.
struct Sightings {
    uids: Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sightings {
    /// Starts watching `ns` and returns once the watch holds its first list.
    async fn start(client: &Client, ns: &str) -> Sightings {
        use futures::StreamExt;
        use kube::runtime::watcher;
        let uids = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
            String,
            Vec<String>,
        >::new()));
        let (listed, on_list) = tokio::sync::oneshot::channel();
        let mut listed = Some(listed);
        let seen = uids.clone();
        let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
        let task = tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => {
                        let mut seen = seen.lock().unwrap();
                        let uids = seen.entry(d.name_any()).or_default();
                        let uid = d.uid().unwrap_or_default();
                        if !uids.contains(&uid) {
                            uids.push(uid);
                        }
                    }
                    Ok(watcher::Event::InitDone) => {
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                    }
                    Ok(_) => {}
                    // The watcher retries; a pause here loses nothing (it
                    // resumes from its resourceVersion or lists again).
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        });
        on_list.await.expect("the Deployment watch lists");
        Sightings { uids, task }
    }

    /// The UIDs Deployment `name` had, in the order they were seen.
    fn uids(&self, name: &str) -> Vec<String> {
        self.uids
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Sightings {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn fault_10_etcd_restart_under_a_running_api_server_both_steps_stay_up_and_converge() {
    // Its own control plane: without etcd, every other fault would stall.
    let (mut cp, client) = own_cluster(Options::default()).await;
    let (scenes, mut running, pids) = both_running(&cp, &client, 10, "before").await;
    // Created just before etcd stops: its sync may run into the outage.
    for scene in &scenes {
        create_foo(&scene.client, &scene.ns, "racing", "racing-nginx", Some(2)).await;
    }

    cp.stop_etcd().unwrap();
    let down = Instant::now();
    // kube-apiserver stays up but cannot reach etcd: requests wait for it
    // (up to kube-apiserver's 60 s request timeout), watches bring nothing.
    stay_up_while_down(&scenes, &mut running, "etcd", Duration::from_secs(8)).await;
    cp.start_etcd().await.unwrap();
    let down_for = down.elapsed();

    let took = converge_after(&scenes, &mut running, &[("after", 2)], &[("racing", 2)]).await;

    let stopped = stop_unrestarted(&scenes, running, pids).await;
    let lines: Vec<_> = stopped
        .into_iter()
        .zip(took)
        .map(|((label, output, served), took)| {
            let healthz = healthz_while_down(served);
            let failed = output
                .lines()
                .filter(|l| l.contains("Error syncing"))
                .count();
            let line = format!(
                "etcd stopped for {:.1}s under a running kube-apiserver and restarted on the same data: \
                 stayed up (same PID{healthz}, {failed} failed syncs logged and retried); a Foo created \
                 just before the stop, 1 created and 1 scaled after the restart converged in {:.1}s",
                down_for.as_secs_f64(),
                took.as_secs_f64()
            );
            (label, line)
        })
        .collect();
    report_steps(10, &lines);
}

/// Deletes the Foo CRD and waits until the API server no longer has it.
async fn delete_crd(client: &Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    delete(&crds, sample_controller::crd::CRD_NAME).await;
    eventually("the Foo CRD is gone", || async {
        crds.get_opt(sample_controller::crd::CRD_NAME)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn fault_11_a_crd_deleted_and_recreated_while_running_is_waited_for_and_new_foos_converge() {
    // Its own control plane: deleting the CRD deletes every Foo of every
    // other fault.
    let (cp, client) = own_cluster(Options::default()).await;
    // So that the Deployments of the Foos deleted with the CRD go at once.
    garbage_collector_watches_foos(&client).await;
    let (scenes, mut running, pids) = both_running(&cp, &client, 11, "doomed").await;
    // Its first list holds doomed-nginx: it sees every UID that name has from here on.
    let mut sightings = Vec::new();
    for scene in &scenes {
        sightings.push(Sightings::start(&client, &scene.ns).await);
    }

    delete_crd(&client).await;
    let deleted = Instant::now();
    // The API server deleted every Foo with the CRD; the garbage collector
    // removes their Deployments. Both steps keep running and say what is
    // missing: their watches fail with 404 and are retried with backoff.
    join_all(
        scenes
            .iter()
            .zip(running.iter_mut())
            .map(|(scene, (step, port))| async move {
                step.until("doomed-nginx garbage-collected", || async {
                    get_deployment(&scene.client, &scene.ns, "doomed-nginx")
                        .await
                        .is_none()
                        .then_some(())
                })
                .await;
                // The watch's error, over two lines: what is missing, and the fix.
                let hint = "Install it with: kubectl apply -f manifests/crd.yaml";
                if !step.output.iter().any(|l| l.contains(hint)) {
                    step.expect(&[hint]).await;
                }
                assert!(
                    step.output
                        .iter()
                        .any(|l| l.contains("cannot watch foos: the Foo CRD")
                            && l.contains("is not installed")),
                    "{}:\n{}",
                    scene.bin.label(),
                    step.output.join("\n")
                );
                // A few more retries. Not much longer: the watch backs off
                // (800 ms doubling, each delay jittered up to twice), and the
                // first watch after the re-creation is answered 410 Gone and
                // costs one more backoff before the relist. After a 5 s
                // outage the retry that finds the CRD comes within 12.8 s and
                // the relist within 25.6 s more: about 40 s at worst, within
                // [`WAIT`] (60 s).
                step.drain_for(Duration::from_secs(3)).await;
                assert!(
                    step.is_running(),
                    "{} exited without the CRD:\n{}",
                    scene.bin.label(),
                    step.output.join("\n")
                );
                // Alive and ready: a restart would not bring the CRD back.
                if let Some(port) = port {
                    for probe in ["/healthz", "/readyz"] {
                        let answer = http_get(*port, probe).await.map(|(c, _)| c);
                        assert_eq!(answer, Some(200), "step 8 {probe} without the CRD");
                    }
                }
            }),
    )
    .await;
    let crd = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crd.yaml");
    testcluster::install_crd(&client, crd).await.unwrap();
    let missing_for = deleted.elapsed();

    let took = join_all(scenes.iter().zip(running.iter_mut()).map(
        |(scene, (step, _))| async move {
            let started = Instant::now();
            create_foo(&scene.client, &scene.ns, "reborn", "reborn-nginx", Some(2)).await;
            scene
                .until_converged(step, "reborn", "reborn-nginx", 2)
                .await;
            started.elapsed()
        },
    ))
    .await;

    let stopped = stop_unrestarted(&scenes, running, pids).await;
    let mut lines = Vec::new();
    for (((scene, (label, output, served)), took), sightings) in
        scenes.iter().zip(stopped).zip(took).zip(&sightings)
    {
        // The Foo died with its CRD: its Deployment must not come back.
        assert_eq!(
            sightings.uids("doomed-nginx").len(),
            1,
            "{label}: the Deployment of a Foo deleted with its CRD was created again:\n{output}"
        );
        assert!(
            get_deployment(&scene.client, &scene.ns, "doomed-nginx")
                .await
                .is_none(),
            "{label}"
        );
        let warnings = output
            .lines()
            .filter(|l| l.contains("kubectl apply -f manifests/crd.yaml"))
            .count();
        let probes = if served {
            ", /healthz and /readyz 200"
        } else {
            ""
        };
        lines.push((
            label,
            format!(
                "Foo CRD deleted while running (its Foo and, by garbage collection, the Deployment went with it) \
                 and re-created {:.1}s later: stayed up (same PID{probes}), {warnings} warnings naming \
                 `kubectl apply -f manifests/crd.yaml` meanwhile, the deleted Foo's Deployment never came back; \
                 a Foo created after the re-creation converged in {:.1}s without a restart",
                missing_for.as_secs_f64(),
                took.as_secs_f64()
            ),
        ));
    }
    report_steps(11, &lines);
}

/// Waits until kube-controller-manager's garbage collector watches Foos. It
/// looks for new resource types every 30 s, and until it has found Foos it
/// leaves the dependents of a deleted Foo alone (then removes them seconds
/// late, all at once). Deletes a Foo that owns a ConfigMap and waits for the
/// ConfigMap to go.
async fn garbage_collector_watches_foos(client: &Client) {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Resource;
    let ns = namespace(client, "gc-probe").await;
    let foo = create_foo(client, &ns, "probe", "probe-nginx", Some(1)).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let dependent: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "dependent", "ownerReferences": [foo.controller_owner_ref(&())]},
    }))
    .unwrap();
    configmaps
        .create(&PostParams::default(), &dependent)
        .await
        .unwrap();
    delete(&Api::<Foo>::namespaced(client.clone(), &ns), "probe").await;
    eventually(
        "the garbage collector removes a deleted Foo's dependent",
        || async {
            configmaps
                .get_opt("dependent")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        },
    )
    .await;
}

/// Fault 12, for one step: every watch it opens ends with 410 Gone soon
/// after its list, while Foos are created and deleted.
async fn expired_watches(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
    const ROUNDS: usize = 8;
    let label = bin.label();
    let scene = Scene::new(client, 12, bin).await;
    let watches = Arc::new(AtomicU32::new(0));
    let foo_watches = Arc::new(AtomicU32::new(0));
    let (counter, foo_counter) = (watches.clone(), foo_watches.clone());
    // The Foo watch ends after its first event: it is down (backing off,
    // then listing) most of the time, so a Foo is often deleted while the
    // cache still holds it. The Deployment watch lasts longer, so it often
    // sees the garbage collector delete that Foo's Deployment meanwhile.
    let rule: proxy::Rule = Arc::new(move |method, path| {
        if *method != http::Method::GET || !path.contains("watch=true") {
            return Action::Forward;
        }
        counter.fetch_add(1, Ordering::SeqCst);
        if path.contains("/foos?") {
            foo_counter.fetch_add(1, Ordering::SeqCst);
            Action::Expire {
                events: 1,
                after: Duration::from_secs(1),
            }
        } else {
            Action::Expire {
                events: 10,
                after: Duration::from_secs(3),
            }
        }
    });
    let proxy = proxy::start(client.clone(), cp.data_dir(), &scene.ns, rule)
        .await
        .expect("proxy");
    let sightings = Sightings::start(client, &scene.ns).await;
    let (mut step, _) = scene.start(&proxy.kubeconfig).await;
    let started = Instant::now();
    for i in 0..ROUNDS {
        let (keep, gone) = (format!("keep-{i}"), format!("gone-{i}"));
        create_foo(client, &scene.ns, &keep, &format!("{keep}-nginx"), Some(1)).await;
        create_foo(client, &scene.ns, &gone, &format!("{gone}-nginx"), Some(1)).await;
        scene
            .until_converged(&mut step, &gone, &format!("{gone}-nginx"), 1)
            .await;
        // Deleted as kubectl does (background): the Foo goes at once, the
        // garbage collector removes its Deployment a moment later.
        delete(&scene.foos(), &gone).await;
    }
    for i in 0..ROUNDS {
        let keep = format!("keep-{i}");
        scene
            .until_converged(&mut step, &keep, &format!("{keep}-nginx"), 1)
            .await;
    }
    let converged = started.elapsed();
    // Two Foo watches asked for after the last delete: the first one's list
    // came after it, and it ended (so its list was in) before the second.
    // From then on the Foo cache holds no deleted Foo, and nothing may
    // create a Deployment for one.
    let since_delete = foo_watches.load(Ordering::SeqCst);
    step.until("two Foo watches after the last delete", || async {
        (foo_watches.load(Ordering::SeqCst) >= since_delete + 2).then_some(())
    })
    .await;
    // A sync that read the stale cache just before may still be creating,
    // and our own watch sees a create a moment late.
    step.drain_for(Duration::from_secs(1)).await;
    let deployments: Vec<String> = (0..ROUNDS).map(|i| format!("gone-{i}-nginx")).collect();
    let recreated = |sightings: &Sightings| -> usize {
        deployments
            .iter()
            .map(|d| sightings.uids(d).len().saturating_sub(1))
            .sum()
    };
    let before_quiet = recreated(&sightings);
    for deployment in &deployments {
        step.until(&format!("{deployment} garbage-collected"), || async {
            get_deployment(client, &scene.ns, deployment)
                .await
                .is_none()
                .then_some(())
        })
        .await;
    }
    // Watches keep ending and relisting meanwhile.
    step.drain_for(Duration::from_secs(10)).await;
    let window = started.elapsed();
    let output = step.output.join("\n");
    assert_eq!(
        recreated(&sightings),
        before_quiet,
        "{label}: a deleted Foo's Deployment was created after its Foo watch had relisted:\n{output}"
    );
    for deployment in &deployments {
        assert!(
            get_deployment(client, &scene.ns, deployment)
                .await
                .is_none(),
            "{label}: {deployment} is back:\n{output}"
        );
    }
    let expired = proxy.expired.load(Ordering::SeqCst);
    let opened = watches.load(Ordering::SeqCst);
    // Each round ended the Foo watch at least twice (two Foos created, one
    // event each), whatever else ended.
    assert!(
        expired as usize >= 2 * ROUNDS,
        "{label}: only {expired} of {opened} watches ended with 410 in {window:?}"
    );
    assert!(step.is_running(), "{label}");
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{label}:\n{output}");
    scene.assert_nothing_else_touched(&output).await;
    let revived = recreated(&sightings);
    let deleted = match bin {
        Eight => {
            // Before it creates a Deployment, step 8 writes the Foo's status,
            // which fails for a Foo that is gone.
            for deployment in &deployments {
                let uids = sightings.uids(deployment);
                assert_eq!(
                    uids.len(),
                    1,
                    "step 8: {deployment} of a deleted Foo was created again ({uids:?}):\n{output}"
                );
            }
            let skipped = output
                .lines()
                .filter(|l| l.contains("Foo no longer exists; its Deployment is not created"))
                .count();
            format!(
                "their Deployments garbage-collected and never recreated ({skipped} syncs of a deleted Foo \
                 still cached stopped at the status write)"
            )
        }
        // Go's program creates a missing Deployment for any Foo its lister
        // holds: one deleted while its watch relists gets its Deployment back
        // until the relist, and the garbage collector deletes each again.
        Seven => format!(
            "their Deployments garbage-collected; re-created {revived} times from the stale Foo cache \
             while its watch relisted (as Go's program does), each garbage-collected, none after the relists"
        ),
    };
    format!(
        "every watch ended with 410 Gone (Foos after 1 event or 1s, Deployments after 10 events or 3s; \
         {expired} ended, {opened} opened, each a streaming relist): {ROUNDS} Foos created and kept converged \
         in {:.1}s; {ROUNDS} created, converged and deleted: {deleted} (watched for {:.0}s)",
        converged.as_secs_f64(),
        window.as_secs_f64()
    )
}

#[tokio::test]
async fn fault_12_watches_ended_with_410_gone_relist_without_missing_a_foo_or_reviving_a_deleted_one()
 {
    let (cp, client) = cluster().await;
    // A garbage collector that has not found Foos yet would remove each
    // deleted Foo's Deployment half a minute late, after every cache has
    // caught up: then nothing could revive it.
    garbage_collector_watches_foos(&client).await;
    let lines = join_all(BOTH.map(|bin| expired_watches(cp, &client, bin))).await;
    report_steps(12, &labelled(lines));
}
