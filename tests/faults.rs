//! The fault suite: step 7 against the real control plane while things go
//! wrong. `cargo xtask faults` runs it and prints one line per fault.
//!
//! Every fault checks that step 7 converges (or refuses, for what must be
//! refused), never panics, and changes nothing it does not own: each test
//! namespace holds a Deployment no Foo names, compared before and after.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use kube::{Client, ResourceExt};
use sample_controller::Foo;
use serde_json::json;
use support::proxy::{self, Action};
use support::*;
use testcluster::{ControlPlane, Options};

/// A namespace for one fault, with a Deployment in it that no Foo names.
struct Scene {
    client: Client,
    ns: String,
    bystander: serde_json::Value,
}

const BYSTANDER: &str = "bystander";

impl Scene {
    async fn new(client: &Client, prefix: &str) -> Scene {
        let ns = namespace(client, prefix).await;
        let bystander =
            untouchable(&create_settled_foreign_deployment(client, &ns, BYSTANDER).await);
        Scene {
            client: client.clone(),
            ns,
            bystander,
        }
    }

    /// Fails if the Deployment nobody asked us to manage was changed, or if
    /// the controller printed a panic.
    async fn assert_nothing_else_touched(&self, output: &str) {
        let now = get_deployment(&self.client, &self.ns, BYSTANDER)
            .await
            .expect("bystander still exists");
        assert_eq!(untouchable(&now), self.bystander, "bystander changed");
        assert!(!output.contains("panicked"), "step 7 panicked:\n{output}");
    }

    async fn until_converged(&self, foo: &str, deployment: &str, replicas: i32) {
        eventually(&format!("{foo} converged at {replicas}"), || async {
            converged(&self.client, &self.ns, foo, deployment, replicas)
                .await
                .then_some(())
        })
        .await;
    }

    /// Starts step 7 on this namespace through `kubeconfig`, serving
    /// `/metrics` on a free port, and waits until its workers run.
    async fn start_step_7(&self, kubeconfig: &std::path::Path) -> (Step, u16) {
        let port = free_port();
        let mut step = Step::start(
            "step-8",
            kubeconfig,
            Some(&self.ns),
            &["--http-address", &format!("127.0.0.1:{port}")],
        );
        step.expect(&["Starting workers"]).await;
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
}

#[tokio::test]
async fn fault_1_api_server_restart_step_7_stays_up_and_converges_foos_created_meanwhile() {
    // Its own control plane: stopping kube-apiserver would disturb the other faults.
    let mut cp = ControlPlane::start(Options::default())
        .await
        .expect("control plane");
    let client = cp.client().await.unwrap();
    testcluster::install_crd(
        &client,
        concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crd.yaml"),
    )
    .await
    .unwrap();
    let scene = Scene::new(&client, "fault1").await;
    let (mut step, port) = scene.start_step_7(cp.kubeconfig_path()).await;
    let pid = step.pid();
    create_foo(&client, &scene.ns, "before", "before-nginx", Some(1)).await;
    scene.until_converged("before", "before-nginx", 1).await;

    cp.stop_apiserver().unwrap();
    let down = Instant::now();
    // Let the watches fail and back off while the API server is away.
    step.drain_for(Duration::from_secs(5)).await;
    let alive_while_down = http_get(port, "/healthz").await;
    assert_eq!(alive_while_down.map(|(c, _)| c), Some(200));
    assert!(
        step.is_running(),
        "step 7 exited while the API server was down"
    );
    cp.start_apiserver().await.unwrap();
    let down_for = down.elapsed();

    let client = cp.client().await.unwrap();
    let started = Instant::now();
    create_foo(&client, &scene.ns, "during-1", "during-1-nginx", Some(2)).await;
    create_foo(&client, &scene.ns, "during-2", "during-2-nginx", Some(1)).await;
    scene.set_replicas("before", 3).await;
    let scene = Scene { client, ..scene };
    scene.until_converged("during-1", "during-1-nginx", 2).await;
    scene.until_converged("during-2", "during-2-nginx", 1).await;
    scene.until_converged("before", "before-nginx", 3).await;
    let took = started.elapsed();

    assert!(step.is_running(), "step 7 must not restart");
    assert_eq!(step.pid(), pid);
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    scene.assert_nothing_else_touched(&output).await;
    report(
        1,
        &format!(
            "kube-apiserver stopped for {:.1}s and restarted: step 7 stayed up (same PID, \
             /healthz 200 while down); 2 Foos created and 1 scaled after the restart converged in {:.1}s",
            down_for.as_secs_f64(),
            took.as_secs_f64()
        ),
    );
}

#[tokio::test]
async fn fault_2_a_conflict_on_the_status_write_is_retried_until_it_converges() {
    let (cp, client) = cluster().await;
    let scene = Scene::new(&client, "fault2").await;
    // The first two status writes answer 409, as a write from a stale copy
    // does (the Foo changed between the controller's read and its write).
    let injected = Arc::new(AtomicU32::new(0));
    let counter = injected.clone();
    let rule: proxy::Rule = Arc::new(move |method, path| {
        let status_write = *method == http::Method::PATCH
            && path.contains("/foos/conflicted/status")
            && counter.fetch_add(1, Ordering::SeqCst) < 2;
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
    let proxy = proxy::start(client.clone(), cp.data_dir(), &scene.ns, rule).await;
    let (mut step, port) = scene.start_step_7(&proxy.kubeconfig).await;
    create_foo(
        &client,
        &scene.ns,
        "conflicted",
        "conflicted-nginx",
        Some(1),
    )
    .await;
    step.expect(&["Error syncing", "the object has been modified"])
        .await;
    // And the Foo really does change meanwhile.
    scene.set_replicas("conflicted", 2).await;
    scene
        .until_converged("conflicted", "conflicted-nginx", 2)
        .await;
    let failures = metric(
        port,
        "sample_controller_reconcile_failures_total{error=\"api\"}",
    )
    .await;
    assert!(failures >= 2.0, "two failed syncs counted, got {failures}");
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    scene.assert_nothing_else_touched(&output).await;
    report(
        2,
        &format!(
            "409 Conflict injected on the first 2 status writes (proxy in front of the API server) \
             while the Foo was scaled 1→2: logged, retried ({failures} failed syncs in the metrics), converged at 2"
        ),
    );
}

#[tokio::test]
async fn fault_3_a_deleted_deployment_is_recreated() {
    let (cp, client) = cluster().await;
    let scene = Scene::new(&client, "fault3").await;
    let mut step = Step::start("step-8", cp.kubeconfig_path(), Some(&scene.ns), &[]);
    step.expect(&["Starting workers"]).await;
    create_foo(&client, &scene.ns, "phoenix", "phoenix-nginx", Some(2)).await;
    scene.until_converged("phoenix", "phoenix-nginx", 2).await;
    let before = get_deployment(&client, &scene.ns, "phoenix-nginx")
        .await
        .unwrap()
        .uid();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &scene.ns);
    delete(&deployments, "phoenix-nginx").await;
    let deleted = Instant::now();
    let after = eventually("a new phoenix-nginx", || async {
        get_deployment(&client, &scene.ns, "phoenix-nginx")
            .await
            .and_then(|d| d.uid())
            .filter(|uid| Some(uid) != before.as_ref())
    })
    .await;
    let recreated = deleted.elapsed();
    scene.until_converged("phoenix", "phoenix-nginx", 2).await;
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    scene.assert_nothing_else_touched(&output).await;
    report(
        3,
        &format!(
            "Deployment deleted: recreated (new UID {}) {:.2}s later, controlled by its Foo, 2/2 available again",
            &after[..8],
            recreated.as_secs_f64()
        ),
    );
}

#[tokio::test]
async fn fault_4_a_foreign_deployment_is_left_alone_and_retried_with_growing_delays() {
    let (cp, client) = cluster().await;
    let scene = Scene::new(&client, "fault4").await;
    let taken = untouchable(&create_settled_foreign_deployment(&client, &scene.ns, "taken").await);
    let (mut step, port) = scene.start_step_7(cp.kubeconfig_path()).await;
    create_foo(&client, &scene.ns, "squatted", "taken", Some(1)).await;
    let window = Duration::from_secs(60);
    step.drain_for(window).await;

    let key = format!("objectRef={}/squatted", scene.ns);
    let failures: Vec<f64> = step
        .output
        .iter()
        .filter(|l| l.contains("Error syncing") && l.contains(&key))
        .filter_map(|l| line_time(l))
        .collect();
    let gaps: Vec<f64> = failures.windows(2).map(|w| w[1] - w[0]).collect();
    // Go's per-item backoff: 5 ms doubling; about 13 tries fit in a minute.
    assert!(
        (8..=20).contains(&failures.len()),
        "{} failed syncs in {window:?} (expected a backoff, not a hot loop or a stall)",
        failures.len()
    );
    let late = &gaps[gaps.len() - 4..];
    assert!(
        late.windows(2).all(|w| w[1] > w[0] * 1.5),
        "delays keep growing: {gaps:?}"
    );
    let counted = metric(
        port,
        "sample_controller_reconcile_failures_total{error=\"resource_exists\"}",
    )
    .await;
    assert_eq!(
        counted as usize,
        failures.len(),
        "metrics agree with the log"
    );
    let events = events_for(&client, &scene.ns, "squatted").await;
    assert!(
        events.iter().any(|(t, r, n)| t == "Warning"
            && r == "ErrResourceExists"
            && n == r#"Resource "taken" already exists and is not managed by Foo"#),
        "{events:?}"
    );
    let now = get_deployment(&client, &scene.ns, "taken").await.unwrap();
    assert_eq!(
        untouchable(&now),
        taken,
        "the foreign Deployment was changed"
    );
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    scene.assert_nothing_else_touched(&output).await;
    report(
        4,
        &format!(
            "foreign Deployment with the Foo's name: spec and metadata unchanged, Warning ErrResourceExists \
             recorded, {} tries in {}s with delays growing to {:.1}s (last gaps {:?}s)",
            failures.len(),
            window.as_secs(),
            gaps.last().copied().unwrap_or(0.0),
            late.iter()
                .map(|g| (g * 100.0).round() / 100.0)
                .collect::<Vec<_>>()
        ),
    );
}

#[tokio::test]
async fn fault_5_invalid_foos_are_rejected_by_the_api_server_and_never_reach_the_controller() {
    let (cp, client) = cluster().await;
    let scene = Scene::new(&client, "fault5").await;
    let mut step = Step::start("step-8", cp.kubeconfig_path(), Some(&scene.ns), &[]);
    step.expect(&["Starting workers"]).await;
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
    create_foo(&client, &scene.ns, "valid", "valid-nginx", Some(1)).await;
    scene.until_converged("valid", "valid-nginx", 1).await;
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    for name in ["zero", "eleven", "text"] {
        assert!(
            !output.contains(&format!("{}/{name}", scene.ns)),
            "the controller saw {name}"
        );
    }
    scene.assert_nothing_else_touched(&output).await;
    report(
        5,
        &format!(
            "replicas 0, 11 and \"two\" rejected with 422 ({}); the controller never logged them and synced a valid Foo",
            messages.join(" | ")
        ),
    );
}

#[tokio::test]
async fn fault_6_an_empty_deployment_name_is_logged_once_per_change_without_retries() {
    let (cp, client) = cluster().await;
    let scene = Scene::new(&client, "fault6").await;
    let (mut step, port) = scene.start_step_7(cp.kubeconfig_path()).await;
    create_foo(&client, &scene.ns, "nameless", "", Some(1)).await;
    let missing = "Deployment name missing";
    step.expect(&[missing]).await;
    step.drain_for(Duration::from_secs(10)).await;
    let count = |step: &Step| step.output.iter().filter(|l| l.contains(missing)).count();
    assert_eq!(count(&step), 1, "logged once, not retried");
    scene.set_replicas("nameless", 2).await;
    step.expect(&[missing]).await;
    step.drain_for(Duration::from_secs(10)).await;
    assert_eq!(count(&step), 2, "logged again only after the change");
    assert!(step.is_running());
    let reconciles = metric(port, "sample_controller_reconciles_total").await;
    let failures = metric(
        port,
        "sample_controller_reconcile_failures_total{error=\"api\"}",
    )
    .await;
    assert_eq!((reconciles, failures), (2.0, 0.0));
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    scene.assert_nothing_else_touched(&output).await;
    report(
        6,
        "empty deploymentName: one error line per change (2 over 20 s for 2 versions), 2 syncs, \
         0 failures, no retry, still running",
    );
}

#[tokio::test]
async fn fault_7_sigterm_lets_syncs_in_flight_finish_and_exits_0_within_10_seconds() {
    let (cp, client) = cluster().await;
    let scene = Scene::new(&client, "fault7").await;
    // Slow Deployment creation down, so that syncs are surely in flight at SIGTERM.
    let rule: proxy::Rule = Arc::new(|method, path| {
        if *method == http::Method::POST && path.contains("/deployments") {
            Action::Delay(Duration::from_secs(2))
        } else {
            Action::Forward
        }
    });
    let proxy = proxy::start(client.clone(), cp.data_dir(), &scene.ns, rule).await;
    let mut step = Step::start("step-8", &proxy.kubeconfig, Some(&scene.ns), &[]);
    step.expect(&["Starting workers"]).await;
    for i in 0..6 {
        create_foo(
            &client,
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
    assert!(status.success(), "exit 0 on SIGTERM:\n{output}");
    assert!(stopped_in < Duration::from_secs(10), "{stopped_in:?}");
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
            "the sync of {foo} was cut short:\n{output}"
        );
        assert!(
            get_deployment(&client, &scene.ns, deployment)
                .await
                .is_some()
        );
    }
    scene.assert_nothing_else_touched(&output).await;
    report(
        7,
        &format!(
            "SIGTERM with {} syncs in flight (Deployment creation slowed to 2 s): all finished, \
             exit 0 after {:.1}s",
            started.len(),
            stopped_in.as_secs_f64()
        ),
    );
}

#[tokio::test]
async fn fault_8_without_the_crd_step_7_exits_naming_the_install_command() {
    let cp = ControlPlane::start(Options::api_server_only())
        .await
        .expect("control plane");
    let (status, output) = Step::start("step-8", cp.kubeconfig_path(), None, &[])
        .wait()
        .await;
    assert_eq!(status.code(), Some(1), "{output}");
    assert!(
        output.contains("the Foo CRD (foos.samplecontroller.k8s.io) is not installed"),
        "{output}"
    );
    assert!(
        output.contains("kubectl apply -f manifests/crd.yaml"),
        "{output}"
    );
    assert!(!output.contains("panicked"), "{output}");
    let line = output
        .lines()
        .find(|l| l.contains("not installed"))
        .unwrap_or_default()
        .trim();
    report(
        8,
        &format!(
            "CRD missing at start: exit 1 at once (a Pod restarts until it is installed), saying {line:?}"
        ),
    );
}

#[tokio::test]
async fn fault_9_a_forbidden_verb_is_named_in_the_log_and_recovers_once_granted() {
    let (cp, client) = cluster().await;
    let scene = Scene::new(&client, "fault9").await;
    let kubeconfig = cp
        .service_account_kubeconfig(&scene.ns, "controller")
        .await
        .unwrap();
    let (cluster_role, _) = manifest_roles();
    let all_rules = cluster_role.rules.unwrap();
    // Everything from manifests/rbac.yaml except creating Deployments.
    let without_create = all_rules
        .iter()
        .cloned()
        .map(|mut rule| {
            if rule.resources.as_deref() == Some(&["deployments".to_string()]) {
                rule.verbs.retain(|v| v != "create");
            }
            rule
        })
        .collect();
    grant(
        &client,
        &scene.ns,
        "controller",
        "controller",
        without_create,
    )
    .await;

    let mut step = Step::start("step-8", &kubeconfig, Some(&scene.ns), &[]);
    let warning = step.expect(&["RBAC denies", "create deployments"]).await;
    step.expect(&["Starting workers"]).await;
    create_foo(&client, &scene.ns, "blocked", "blocked-nginx", Some(1)).await;
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

    grant(&client, &scene.ns, "controller", "controller", all_rules).await;
    let granted = Instant::now();
    scene.until_converged("blocked", "blocked-nginx", 1).await;
    let recovered = granted.elapsed();
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    scene.assert_nothing_else_touched(&output).await;
    let why = forbidden
        .split("error=")
        .nth(1)
        .unwrap_or(&forbidden)
        .chars()
        .take(150)
        .collect::<String>();
    assert!(warning.contains("create deployments"), "{warning}");
    report(
        9,
        &format!(
            "RBAC without `create deployments`: warned at start, each sync logged {why:?}…, \
             no crash; converged {:.1}s after the verb was granted",
            recovered.as_secs_f64()
        ),
    );
}
