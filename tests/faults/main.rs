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

#[path = "../support/mod.rs"]
mod support;

mod inputs;
mod rbac;
mod watches;
mod writes;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use course::harness::untouchable;
use course::proxy::{self, Action};
use futures::future::join_all;
use inputs::*;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use kube::{Client, ResourceExt};
use rbac::*;
use sample_controller::Foo;
use serde_json::json;
use support::*;
use testcluster::{ControlPlane, Options};
use watches::*;
use writes::*;

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

#[tokio::test]
async fn fault_3_a_deleted_deployment_is_recreated() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| deleted_deployment(cp, &client, bin))).await;
    report_steps(3, &labelled(lines));
}

#[tokio::test]
async fn fault_4_a_foreign_deployment_is_left_alone_and_retried_with_growing_delays() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| foreign_deployment(cp, &client, bin))).await;
    report_steps(4, &labelled(lines));
}

#[tokio::test]
async fn fault_5_invalid_foos_are_rejected_by_the_api_server_and_never_reach_the_controller() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| invalid_foos(cp, &client, bin))).await;
    report_steps(5, &labelled(lines));
}

#[tokio::test]
async fn fault_6_an_empty_deployment_name_is_logged_once_per_change_without_retries() {
    let (cp, client) = cluster().await;
    let lines = join_all(BOTH.map(|bin| empty_deployment_name(cp, &client, bin))).await;
    report_steps(6, &labelled(lines));
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
