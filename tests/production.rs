//! End-to-end: step 7 as it runs in a cluster. Least-privilege RBAC proven
//! verb by verb, leader election with two and three replicas, and the
//! manifests accepted by the API server. (The static musl binary is tested in
//! tests/image.rs, its own test binary, so that its release build never runs
//! beside these tests' timings.)

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use sample_controller::Foo;
use serde_json::json;
use support::proxy;
use support::*;

/// Held by the two tests that run many controllers or measure handovers,
/// so that neither runs beside the other.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long one stage of the flow may take before it counts as failed.
const STAGE: Duration = Duration::from_secs(30);

/// The stages of the create / scale / delete-child flow, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    BecomesLeader,
    SyncsCaches,
    CreatesDeployment,
    ReportsStatus,
    RecordsSyncedEvent,
    CountsRepeatedEvents,
    Scales,
    RecreatesDeployment,
}

/// Polls `check` every 250 ms for up to [`STAGE`].
async fn within<F, Fut>(mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + STAGE;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    false
}

/// The Synced Event about Foo `name`, if recorded.
async fn synced_event(client: &Client, ns: &str, name: &str) -> Option<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .find(|e| {
            e.reason.as_deref() == Some("Synced")
                && e.regarding
                    .as_ref()
                    .is_some_and(|r| r.name.as_deref() == Some(name))
        })
}

/// Runs the flow against a running step 7 with `--leader-elect`; returns the
/// first stage that did not happen within [`STAGE`].
async fn flow(client: &Client, ns: &str, step: &mut Step) -> Result<(), Stage> {
    let ok = |done: bool, stage| if done { Ok(()) } else { Err(stage) };
    ok(
        step.line_within(&["became leader"], STAGE).await.is_some(),
        Stage::BecomesLeader,
    )?;
    // The Foo comes after the initial lists, so only a watch can bring it.
    ok(
        step.line_within(&["Starting workers"], STAGE)
            .await
            .is_some(),
        Stage::SyncsCaches,
    )?;
    create_foo(client, ns, "app", "app-nginx", Some(1)).await;
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let owned = || async {
        let foo = foos.get("app").await.expect("get Foo");
        get_deployment(client, ns, "app-nginx")
            .await
            .filter(|d| sample_controller::deployment::is_controlled_by(d, &foo))
    };
    ok(
        within(|| async { owned().await.is_some() }).await,
        Stage::CreatesDeployment,
    )?;
    ok(
        within(|| async { converged(client, ns, "app", "app-nginx", 1).await }).await,
        Stage::ReportsStatus,
    )?;
    ok(
        within(|| async { synced_event(client, ns, "app").await.is_some() }).await,
        Stage::RecordsSyncedEvent,
    )?;
    // Creating a Deployment takes several syncs (its status changes as Pods
    // come up), each recording Synced again: a repeat patches the Event's series.
    let repeated = || async {
        synced_event(client, ns, "app")
            .await
            .and_then(|e| e.series)
            .is_some_and(|s| s.count >= 2)
    };
    ok(within(repeated).await, Stage::CountsRepeatedEvents)?;
    foos.patch(
        "app",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .expect("scale Foo");
    ok(
        within(|| async { converged(client, ns, "app", "app-nginx", 2).await }).await,
        Stage::Scales,
    )?;
    let old = owned().await.and_then(|d| d.uid());
    delete(
        &Api::<Deployment>::namespaced(client.clone(), ns),
        "app-nginx",
    )
    .await;
    let recreated = || async { owned().await.is_some_and(|d| d.uid() != old) };
    ok(within(recreated).await, Stage::RecreatesDeployment)
}

/// Which stage fails without `verb` on `resource`, and why the controller
/// needs it. A rule in manifests/rbac.yaml with no entry here fails the test.
fn needed_for(resource: &str, verb: &str) -> Option<(Stage, &'static str)> {
    use Stage::*;
    Some(match (resource, verb) {
        ("foos", "list") => (SyncsCaches, "the Foo informer's list"),
        ("foos", "watch") => (CreatesDeployment, "the Foo informer's watch"),
        ("foos/status", "patch") => (ReportsStatus, "the status write"),
        ("deployments", "list") => (SyncsCaches, "the Deployment informer's list"),
        ("deployments", "watch") => (ReportsStatus, "the Deployment informer's watch"),
        ("deployments", "create") => (CreatesDeployment, "creating a Foo's Deployment"),
        ("deployments", "patch") => (Scales, "scaling a Foo's Deployment"),
        ("events", "create") => (RecordsSyncedEvent, "recording an Event"),
        ("events", "patch") => (CountsRepeatedEvents, "counting a repeated Event"),
        ("leases", "get" | "create" | "patch") => (BecomesLeader, "holding the leader Lease"),
        _ => return None,
    })
}

/// Every rule of manifests/rbac.yaml (ClusterRole and Role), one verb each.
fn manifest_rules() -> Vec<PolicyRule> {
    let (cluster_role, role) = manifest_roles();
    let mut rules = cluster_role.rules.unwrap_or_default();
    rules.extend(role.rules.unwrap_or_default());
    rules
}

/// The rules with `verb` removed from `resource` (and a rule left empty dropped).
fn without(rules: &[PolicyRule], resource: &str, verb: &str) -> Vec<PolicyRule> {
    rules
        .iter()
        .cloned()
        .filter_map(|mut rule| {
            if rule.resources.iter().flatten().any(|r| r == resource) {
                rule.verbs.retain(|v| v != verb);
            }
            (!rule.verbs.is_empty()).then_some(rule)
        })
        .collect()
}

/// Runs step 7 as a ServiceAccount granted `rules` in a fresh namespace,
/// through the flow; returns the flow's result and step 7's output.
async fn run_as_service_account(
    label: String,
    rules: Vec<PolicyRule>,
) -> (Result<(), Stage>, String) {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, &label).await;
    let kubeconfig = cp
        .service_account_kubeconfig(&ns, "controller")
        .await
        .unwrap();
    grant(&client, &ns, "controller", "controller", rules).await;
    let mut step = Step::start(
        "step-7",
        &kubeconfig,
        Some(&ns),
        &["--leader-elect", "--leader-elect-namespace", &ns],
    );
    let result = flow(&client, &ns, &mut step).await;
    step.drain_for(Duration::from_secs(1)).await;
    let output = step.kill().await;
    (result, output)
}

#[tokio::test]
async fn every_rule_in_manifests_rbac_is_needed_and_together_they_are_enough() {
    let _alone = HEAVY.lock().await;
    let rules = manifest_rules();
    let mut pairs = Vec::new();
    for rule in &rules {
        for resource in rule.resources.iter().flatten() {
            for verb in &rule.verbs {
                let why = needed_for(resource, verb).unwrap_or_else(|| {
                    panic!(
                        "manifests/rbac.yaml grants `{verb} {resource}`, which no scenario needs"
                    )
                });
                pairs.push((resource.clone(), verb.clone(), why));
            }
        }
    }
    let baseline = run_as_service_account("lp-all".into(), rules.clone());
    let variants = futures::future::join_all(pairs.iter().map(|(resource, verb, _)| {
        let label = format!("lp-{}-{verb}", resource.replace('/', "-"));
        run_as_service_account(label, without(&rules, resource, verb))
    }));
    let ((all, all_output), results) = tokio::join!(baseline, variants);
    assert_eq!(
        all,
        Ok(()),
        "manifests/rbac.yaml is enough for the whole flow:\n{all_output}"
    );
    let mut table = Vec::new();
    for ((resource, verb, (stage, why)), (result, output)) in pairs.iter().zip(results) {
        assert_eq!(
            result,
            Err(*stage),
            "without `{verb} {resource}` ({why}) the flow should stop at {stage:?}:\n{output}"
        );
        let named = output.lines().any(|l| {
            l.contains(&format!("cannot {verb} resource"))
                && l.contains(resource.as_str())
                && !l.contains("RBAC denies") // the start-up warning alone is not enough
        });
        assert!(
            named,
            "the log names the forbidden `{verb} {resource}`:\n{output}"
        );
        table.push(format!(
            "  without {verb:>6} {resource:<12} → fails at {stage:?} ({why})"
        ));
    }
    println!(
        "every rule needed ({} verbs), all together enough:\n{}",
        pairs.len(),
        table.join("\n")
    );
}

/// Starts step 7 with leader election on a short lease in `ns`.
fn replica(kubeconfig: &std::path::Path, ns: &str, identity: &str, port: u16) -> Step {
    Step::start(
        "step-7",
        kubeconfig,
        Some(ns),
        &[
            "--leader-elect",
            "--leader-elect-namespace",
            ns,
            "--leader-elect-identity",
            identity,
            "--leader-elect-lease-duration",
            "10",
            "--leader-elect-renew-grace",
            "3",
            "--http-address",
            &format!("127.0.0.1:{port}"),
        ],
    )
}

async fn holder(client: &Client, ns: &str) -> Option<String> {
    Api::<Lease>::namespaced(client.clone(), ns)
        .get_opt("sample-controller")
        .await
        .expect("get Lease")
        .and_then(|l| l.spec?.holder_identity)
}

#[tokio::test]
async fn only_the_leader_reconciles_and_a_standby_takes_over_when_it_dies_or_stops() {
    let _alone = HEAVY.lock().await;
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "leader").await;
    let (port_a, port_b, port_c) = (free_port(), free_port(), free_port());
    let mut a = replica(cp.kubeconfig_path(), &ns, "a", port_a);
    a.expect(&["became leader"]).await;
    let mut b = replica(cp.kubeconfig_path(), &ns, "b", port_b);
    b.expect(&["waiting to become leader"]).await;
    assert_eq!(holder(&client, &ns).await.as_deref(), Some("a"));

    create_foo(&client, &ns, "first", "first-nginx", Some(1)).await;
    eventually("first converged", || async {
        converged(&client, &ns, "first", "first-nginx", 1)
            .await
            .then_some(())
    })
    .await;
    // Both ready (a standby is healthy); only a leads and reconciles.
    for port in [port_a, port_b] {
        assert_eq!(http_get(port, "/readyz").await.map(|r| r.0), Some(200));
    }
    assert_eq!(metric(port_a, "sample_controller_leader").await, 1.0);
    assert_eq!(metric(port_b, "sample_controller_leader").await, 0.0);
    assert!(metric(port_a, "sample_controller_reconciles_total").await >= 1.0);
    assert_eq!(
        metric(port_b, "sample_controller_reconciles_total").await,
        0.0
    );

    // The leader dies without releasing the Lease: b waits for it to expire.
    a.kill().await;
    let killed = Instant::now();
    create_foo(&client, &ns, "second", "second-nginx", Some(1)).await;
    b.expect(&["became leader"]).await;
    let takeover = killed.elapsed();
    assert!(
        takeover <= Duration::from_secs(10 + 2),
        "takeover within the 10 s lease duration (+ up to 1 s of jitter, 1 s of slack): {takeover:?}"
    );
    eventually("second converged under b", || async {
        converged(&client, &ns, "second", "second-nginx", 1)
            .await
            .then_some(())
    })
    .await;
    assert_eq!(holder(&client, &ns).await.as_deref(), Some("b"));
    assert!(b.output.iter().all(|l| !l.contains("panicked")));

    // The leader stops cleanly: it finishes, releases the Lease, and c takes over.
    let mut c = replica(cp.kubeconfig_path(), &ns, "c", port_c);
    c.expect(&["waiting to become leader"]).await;
    // Let c read the Lease held by b (its manager then sleeps until b's expiry).
    c.drain_for(Duration::from_secs(3)).await;
    let stopping = Instant::now();
    let (status, output) = b.terminate().await;
    assert!(status.success(), "{output}");
    assert!(output.contains("released the leader lease"), "{output}");
    c.expect(&["became leader"]).await;
    let handover = stopping.elapsed();
    // The standby reads the Lease every 2 s (--leader-elect-retry-period):
    // a released Lease is taken well before it would have expired.
    assert!(
        handover < Duration::from_secs(4),
        "a released Lease is taken within a retry period, not after the 10 s lease: {handover:?}"
    );
    let (status, output) = c.terminate().await;
    assert!(status.success(), "{output}");
    println!(
        "leader killed: standby took over after {:.1}s (lease 10 s); leader stopped: handover in {:.1}s (retry period 2 s)",
        takeover.as_secs_f64(),
        handover.as_secs_f64()
    );
}

#[tokio::test]
async fn a_leader_cut_off_from_the_api_server_stops_leading_before_a_standby_takes_over() {
    let _alone = HEAVY.lock().await;
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "partition").await;
    // a reaches the API server through a proxy the test can cut.
    let cut = Arc::new(AtomicBool::new(false));
    let switch = cut.clone();
    let rule: proxy::Rule = Arc::new(move |_, _| {
        if switch.load(Ordering::SeqCst) {
            proxy::Action::Reply(
                http::StatusCode::SERVICE_UNAVAILABLE,
                proxy::status(503, "ServiceUnavailable", "cut off by the test"),
            )
        } else {
            proxy::Action::Forward
        }
    });
    let proxy = proxy::start(client.clone(), cp.data_dir(), &ns, rule).await;
    let mut a = replica(&proxy.kubeconfig, &ns, "a", free_port());
    a.expect(&["became leader"]).await;
    let mut b = replica(cp.kubeconfig_path(), &ns, "b", free_port());
    b.expect(&["waiting to become leader"]).await;
    create_foo(&client, &ns, "held", "held-nginx", Some(1)).await;
    eventually("held converged", || async {
        converged(&client, &ns, "held", "held-nginx", 1)
            .await
            .then_some(())
    })
    .await;

    // Three renewals (every 7 s) go by: a keeps leading.
    a.drain_for(Duration::from_secs(22)).await;
    assert!(
        a.is_running(),
        "a stopped leading while renewing:\n{}",
        a.output.join("\n")
    );
    assert_eq!(holder(&client, &ns).await.as_deref(), Some("a"));

    cut.store(true, Ordering::SeqCst);
    let cut_at = Instant::now();
    let (a_stopped, b_leads) = tokio::join!(
        async {
            a.expect(&["lost the leader Lease"]).await;
            let stopped = Instant::now();
            let (status, output) = a.wait().await;
            (stopped, status, output)
        },
        async {
            b.expect(&["became leader"]).await;
            Instant::now()
        }
    );
    let (a_stopped, status, output) = a_stopped;
    assert_eq!(status.code(), Some(1), "{output}");
    assert!(output.contains("past the renew deadline"), "{output}");
    assert!(
        a_stopped < b_leads,
        "a stopped leading {:.1} s after the cut, after b took over ({:.1} s)",
        (a_stopped - cut_at).as_secs_f64(),
        (b_leads - cut_at).as_secs_f64()
    );
    println!(
        "leader cut off: it stopped {:.1} s after the cut, the standby took over {:.1} s after it ({:.1} s apart)",
        (a_stopped - cut_at).as_secs_f64(),
        (b_leads - cut_at).as_secs_f64(),
        (b_leads - a_stopped).as_secs_f64()
    );
    let (status, output) = b.terminate().await;
    assert!(status.success(), "{output}");
}

#[tokio::test]
async fn the_manifests_pass_server_side_dry_run_and_the_kustomization_lists_them() {
    let (_, client) = cluster().await;
    let kustomization = manifest("kustomization.yaml");
    let resources: Vec<&str> = kustomization[0]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r.as_str())
        .collect();
    assert_eq!(resources, ["crd.yaml", "rbac.yaml", "controller.yaml"]);
    // Namespaced objects can only be dry-run in a namespace that exists.
    let namespace = manifest("rbac.yaml")
        .into_iter()
        .find(|d| d["kind"] == "Namespace")
        .expect("rbac.yaml creates the namespace");
    apply(&client, &namespace, true).await.unwrap();
    let mut checked = Vec::new();
    for file in resources {
        for doc in manifest(file) {
            let what = format!("{file}: {} {}", doc["kind"], doc["metadata"]["name"]);
            if let Err(err) = apply(&client, &doc, false).await {
                panic!("{what} rejected by the API server: {err:#}");
            }
            checked.push(what);
        }
    }
    assert!(checked.iter().any(|w| w.contains("\"Deployment\"")));
    println!("server-side dry-run accepted:\n  {}", checked.join("\n  "));
}
