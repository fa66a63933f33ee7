//! End-to-end: the controllers as they run in a cluster. Least-privilege
//! RBAC proven verb by verb for step 8 (ClusterRole `sample-controller` and
//! the leader-election Role) and for step 7 (ClusterRole
//! `sample-controller-step-7`), leader election (step 8) with two and three
//! replicas, and the manifests accepted by the API server. (The static musl
//! binary is tested in tests/image.rs, its own test binary, so that its
//! release build never runs beside these tests' timings.)

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use course::proxy;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use sample_controller::Foo;
use serde_json::json;
use support::*;

/// Held by the tests that run many controllers (the two least-privilege
/// tests) or measure handovers (the two leader tests), so that none runs
/// beside another.
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

fn ok(done: bool, stage: Stage) -> Result<(), Stage> {
    if done { Ok(()) } else { Err(stage) }
}

/// The start of the flow against a running step: the Lease (with
/// `--leader-elect`), then synced caches. Returns the first stage that did
/// not happen within [`STAGE`].
async fn starts(step: &mut Step, leader: bool) -> Result<(), Stage> {
    if leader {
        ok(
            step.line_within(&["became leader"], STAGE).await.is_some(),
            Stage::BecomesLeader,
        )?;
    }
    ok(
        step.line_within(&["Starting workers"], STAGE)
            .await
            .is_some(),
        Stage::SyncsCaches,
    )
}

/// The rest of the flow, once the caches are synced: a Foo is created, its
/// Deployment and status follow, Events are recorded, the Foo is scaled and
/// its deleted Deployment comes back. Returns the first stage that did not
/// happen within [`STAGE`].
async fn syncs_a_foo(client: &Client, ns: &str) -> Result<(), Stage> {
    // The Foo comes after the initial lists, so only a watch can bring it.
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
    // Step 7 records Synced after every sync, like Go; step 8 only after a
    // sync that changed something. Both record it at least twice here: when
    // the Deployment is created (with status 0), and when its replica becomes
    // available (status 0 → 1). A repeat patches the Event's series.
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

/// Why step 8 is granted `list`: the LIST then WATCH it falls back to.
const LIST_FALLBACK: &str = "the initial LIST where the API server cannot stream it";

/// Which stage of step 8 fails without `verb` on `resource`, and why step 8
/// needs it. A rule of ClusterRole `sample-controller` or of the Lease Role
/// with no entry here fails the test.
fn step_8_needs(resource: &str, verb: &str) -> Option<(Stage, &'static str)> {
    use Stage::*;
    Some(match (resource, verb) {
        // Needed only where the API server cannot stream the initial list
        // (its WatchList gate off): the fallback LISTs. A 1.37 server streams
        // it, so here the flow passes without it; the next test proves it
        // needed against a server without WatchList.
        ("foos", "list") => (SyncsCaches, LIST_FALLBACK),
        // Step 8's watchers use streaming lists: the initial list is itself a
        // WATCH (sendInitialEvents), so without `watch` no cache ever syncs.
        ("foos", "watch") => (SyncsCaches, "the Foo watch, initial list included"),
        // The status is written before a Deployment is created (it proves
        // the Foo still exists): without the verb, nothing is created.
        ("foos/status", "patch") => (CreatesDeployment, "the status write, first before a create"),
        ("deployments", "list") => (SyncsCaches, LIST_FALLBACK),
        ("deployments", "watch") => (SyncsCaches, "the Deployment watch, initial list included"),
        ("deployments", "create") => (CreatesDeployment, "creating a Foo's Deployment"),
        ("deployments", "patch") => (Scales, "scaling a Foo's Deployment"),
        ("events", "create") => (RecordsSyncedEvent, "recording an Event"),
        ("events", "patch") => (CountsRepeatedEvents, "counting a repeated Event"),
        ("leases", "get" | "create" | "patch") => (BecomesLeader, "holding the leader Lease"),
        _ => return None,
    })
}

/// What step 7 does without `verb` on `resource`, and why it needs it. A rule
/// of ClusterRole `sample-controller-step-7` with no entry here fails the test.
fn step_7_needs(resource: &str, verb: &str) -> Option<(Without, &'static str)> {
    use Stage::*;
    use Without::*;
    Some(match (resource, verb) {
        // Its preflight checks the informers' verbs and exits (src/diagnose.rs).
        ("foos", "list") => (RefusesToStart, "the Foo informer's list"),
        ("foos", "watch") => (RefusesToStart, "the Foo informer's watch"),
        ("deployments", "list") => (RefusesToStart, "the Deployment informer's list"),
        ("deployments", "watch") => (RefusesToStart, "the Deployment informer's watch"),
        // A write verb taken away once it runs stops the stage that needs it.
        ("foos/status", "update") => (FailsAt(ReportsStatus), "the status PUT"),
        ("deployments", "create") => (FailsAt(CreatesDeployment), "creating a Foo's Deployment"),
        ("deployments", "update") => (FailsAt(Scales), "replacing a Foo's Deployment to scale it"),
        ("events", "create") => (FailsAt(RecordsSyncedEvent), "recording an Event"),
        ("events", "patch") => (FailsAt(CountsRepeatedEvents), "counting a repeated Event"),
        _ => return None,
    })
}

/// What step 7 does without a verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Without {
    /// Its preflight exits 1 naming the permission.
    RefusesToStart,
    /// Revoked after `Starting workers`: the flow stops at this stage.
    FailsAt(Stage),
}

/// Every (API group, resource, verb) of `rules`.
fn verbs_of(rules: &[PolicyRule]) -> Vec<(String, String, String)> {
    let mut verbs = Vec::new();
    for rule in rules {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    verbs.push((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    verbs
}

/// Every rule step 8 is granted in manifests/rbac.yaml (ClusterRole
/// `sample-controller` and the Lease Role), one verb each.
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

/// Runs step 8 with `--leader-elect` as a ServiceAccount granted `rules` in
/// a fresh namespace, through the flow; returns the flow's result and step
/// 8's output.
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
        "step-8",
        &kubeconfig,
        Some(&ns),
        &["--leader-elect", "--leader-elect-resource-namespace", &ns],
    );
    let result = match starts(&mut step, true).await {
        Ok(()) => syncs_a_foo(&client, &ns).await,
        Err(stage) => Err(stage),
    };
    step.drain_for(Duration::from_secs(1)).await;
    let output = step.kill().await;
    (result, output)
}

#[tokio::test]
async fn step_8_every_rule_of_its_roles_in_manifests_rbac_is_needed_and_together_they_are_enough() {
    let _alone = HEAVY.lock().await;
    let rules = manifest_rules();
    let mut pairs = Vec::new();
    for rule in &rules {
        for resource in rule.resources.iter().flatten() {
            for verb in &rule.verbs {
                let why = step_8_needs(resource, verb).unwrap_or_else(|| {
                    panic!(
                        "manifests/rbac.yaml grants step 8 `{verb} {resource}`, which no scenario needs"
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
        "step 8: manifests/rbac.yaml is enough for the whole flow:\n{all_output}"
    );
    // Every verb is tried before any verdict, so that a failure shows the
    // whole table (and the output of each verb that did not behave).
    let mut table = Vec::new();
    let mut wrong = Vec::new();
    for ((resource, verb, (stage, why)), (result, output)) in pairs.iter().zip(results) {
        let named = output.lines().any(|l| {
            l.contains(&format!("cannot {verb} resource"))
                && l.contains(resource.as_str())
                && !l.contains("RBAC denies") // the start-up warning alone is not enough
        });
        let seen = match result {
            Ok(()) => "the whole flow passes".to_string(),
            Err(at) => format!("fails at {at:?}"),
        };
        let verdict = if *why == LIST_FALLBACK {
            // Streamed here: not needed on this server (see the next test).
            if result == Ok(()) {
                "as expected (streamed: no LIST here)"
            } else {
                "WRONG: a 1.37 server streams the list"
            }
        } else if result == Err(*stage) && named {
            "as expected"
        } else if !named {
            "WRONG: the log never names the forbidden request"
        } else {
            "WRONG"
        };
        table.push(format!(
            "  without {verb:>6} {resource:<12} → {seen} (expected {stage:?}: {why}); {verdict}"
        ));
        if !verdict.starts_with("as expected") {
            wrong.push(format!(
                "--- without `{verb} {resource}`: {seen}, expected {stage:?}; output:\n{output}"
            ));
        }
    }
    let table = table.join("\n");
    assert!(
        wrong.is_empty(),
        "step 8: not every rule is needed as the table says:\n{table}\n{}",
        wrong.join("\n")
    );
    println!(
        "step 8: every rule needed ({} verbs), all together enough:\n{table}",
        pairs.len()
    );
}

#[tokio::test]
async fn step_8_needs_list_where_the_api_server_cannot_stream_the_initial_list() {
    // Kubernetes 1.33 ships with the WatchList gate off: step 8 falls back to
    // LIST then WATCH there (src/informer.rs), which needs `list`.
    let (cp, client) = own_cluster(without_watch_list()).await;
    let rules = manifest_rules();
    for (label, rules, synced) in [
        ("all", rules.clone(), true),
        ("no-list-foos", without(&rules, "foos", "list"), false),
        (
            "no-list-deployments",
            without(&rules, "deployments", "list"),
            false,
        ),
    ] {
        let ns = format!("nowatchlist-{label}");
        testcluster::create_namespace(&client, &ns).await.unwrap();
        let kubeconfig = cp
            .service_account_kubeconfig(&ns, "controller")
            .await
            .unwrap();
        grant(&client, &ns, "controller", "controller", rules).await;
        let mut step = Step::start("step-8", &kubeconfig, Some(&ns), &[]);
        let ready = step
            .line_within(&["Starting workers"], Duration::from_secs(15))
            .await
            .is_some();
        step.drain_for(Duration::from_millis(200)).await;
        let output = step.kill().await;
        assert_eq!(ready, synced, "{label}:\n{output}");
        if !synced {
            assert!(
                output.contains("cannot list resource"),
                "{label}: the forbidden LIST is named:\n{output}"
            );
        }
    }
}

/// Step 7 as the ServiceAccount `controller` of a fresh namespace: returns
/// the namespace, the admin client, and step 7 started with `rules`.
async fn step_7_as_service_account(label: &str, rules: Vec<PolicyRule>) -> (String, Client, Step) {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, label).await;
    let kubeconfig = cp
        .service_account_kubeconfig(&ns, "controller")
        .await
        .unwrap();
    grant(&client, &ns, "controller", "controller", rules).await;
    let step = Step::start("step-7", &kubeconfig, Some(&ns), &[]);
    (ns, client, step)
}

/// Step 7 granted exactly `rules`, through the whole flow (no leader
/// election: step 7 has none); returns the flow's result and the output.
async fn step_7_flow(label: &str, rules: Vec<PolicyRule>) -> (Result<(), Stage>, String) {
    let (ns, client, mut step) = step_7_as_service_account(label, rules).await;
    let result = match starts(&mut step, false).await {
        Ok(()) => syncs_a_foo(&client, &ns).await,
        Err(stage) => Err(stage),
    };
    step.drain_for(Duration::from_secs(1)).await;
    (result, step.kill().await)
}

/// Step 7 started with all of `rules`; once its workers run, `verb` on
/// `group`/`resource` is revoked (the Role replaced without it) and the
/// flow goes on. Returns the flow's result, whether step 7 was still
/// running, and its output.
async fn step_7_losing(
    label: &str,
    rules: &[PolicyRule],
    (group, resource, verb): (&str, &str, &str),
) -> (Result<(), Stage>, bool, String) {
    let (ns, client, mut step) = step_7_as_service_account(label, rules.to_vec()).await;
    if let Err(stage) = starts(&mut step, false).await {
        return (Err(stage), step.is_running(), step.kill().await);
    }
    grant(
        &client,
        &ns,
        "controller",
        "controller",
        without(rules, resource, verb),
    )
    .await;
    let revoked = within(|| async {
        !service_account_may(&client, &ns, "controller", verb, group, resource).await
    })
    .await;
    assert!(
        revoked,
        "`{verb} {resource}` still allowed after the Role lost it"
    );
    let result = syncs_a_foo(&client, &ns).await;
    step.drain_for(Duration::from_secs(1)).await;
    let running = step.is_running();
    (result, running, step.kill().await)
}

/// Step 7 started without `verb` on `group`/`resource`: returns its exit
/// status and output, and the preflight's line for that permission
/// (src/diagnose.rs: `verb resource (API group "group")`).
async fn step_7_without(
    label: &str,
    rules: &[PolicyRule],
    (group, resource, verb): (&str, &str, &str),
) -> (std::process::ExitStatus, String, String) {
    let (ns, _, step) = step_7_as_service_account(label, without(rules, resource, verb)).await;
    let (status, output) = step.wait().await;
    let expected = format!(
        "RBAC forbids the user in your kubeconfig to do what this step needs in namespace {ns:?}:\n  \
         - {verb} {resource} (API group {group:?})\nGrant these"
    );
    (status, output, expected)
}

#[tokio::test]
async fn step_7_its_cluster_role_is_enough_and_every_rule_is_needed() {
    let _alone = HEAVY.lock().await;
    let rules = manifest_cluster_role("sample-controller-step-7")
        .rules
        .unwrap_or_default();
    let verbs: Vec<_> = verbs_of(&rules)
        .into_iter()
        .map(|(group, resource, verb)| {
            let need = step_7_needs(&resource, &verb).unwrap_or_else(|| {
                panic!(
                    "ClusterRole sample-controller-step-7 grants `{verb} {resource}`, which no scenario needs"
                )
            });
            (group, resource, verb, need)
        })
        .collect();
    let enough = step_7_flow("lp7-all", rules.clone());
    let needed = futures::future::join_all(verbs.iter().map(|(group, resource, verb, (need, _))| {
        let label = format!("lp7-{}-{verb}", resource.replace('/', "-"));
        let rules = &rules;
        async move {
            let what = (group.as_str(), resource.as_str(), verb.as_str());
            match need {
                Without::RefusesToStart => {
                    let (status, output, expected) = step_7_without(&label, rules, what).await;
                    (status.code() == Some(1) && output.contains(&expected), output, expected)
                }
                Without::FailsAt(stage) => {
                    let (result, running, output) = step_7_losing(&label, rules, what).await;
                    assert_eq!(
                        result,
                        Err(*stage),
                        "step 7: with `{verb} {resource}` revoked once its workers ran, the flow \
                         should stop at {stage:?} (and every stage before pass):\n{output}"
                    );
                    assert!(running, "step 7 exited:\n{output}");
                    // The request that needs it is refused, and the log says so.
                    let forbidden = format!("cannot {verb} resource \"{resource}\"");
                    let named = output
                        .lines()
                        .any(|l| l.contains(&forbidden) && l.contains("403"));
                    (named, output, forbidden)
                }
            }
        }
    }));
    let ((all, all_output), results) = tokio::join!(enough, needed);
    assert_eq!(
        all,
        Ok(()),
        "step 7: ClusterRole sample-controller-step-7 is enough for the whole flow:\n{all_output}"
    );
    let mut table = Vec::new();
    for ((_, resource, verb, (need, why)), (shown, output, expected)) in verbs.iter().zip(results) {
        assert!(
            shown,
            "step 7 without `{verb} {resource}` ({why}): expected {need:?} with {expected:?} in the log:\n{output}"
        );
        let what = match need {
            Without::RefusesToStart => "exits 1 at start naming it".to_string(),
            Without::FailsAt(stage) => format!("fails at {stage:?} with a 403 in the log"),
        };
        table.push(format!(
            "  without {verb:>6} {resource:<12} → {what} ({why})"
        ));
    }
    println!(
        "step 7: every rule needed ({} verbs), all together enough:\n{}",
        verbs.len(),
        table.join("\n")
    );
}

/// Starts step 8 with leader election on a short lease in `ns`, serving on
/// a free port ([`Step::http_port`] says which).
fn replica(kubeconfig: &std::path::Path, ns: &str, identity: &str) -> Step {
    Step::start(
        "step-8",
        kubeconfig,
        Some(ns),
        &[
            "--leader-elect",
            "--leader-elect-resource-namespace",
            ns,
            "--leader-elect-identity",
            identity,
            "--leader-elect-lease-duration=10s",
            "--leader-elect-renew-deadline=7s",
            "--http-address",
            ANY_PORT,
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

// Cheat sheet: `leader election`
#[tokio::test]
async fn only_the_leader_reconciles_and_a_standby_takes_over_when_it_dies_or_stops() {
    let _alone = HEAVY.lock().await;
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "leader").await;
    let mut a = replica(cp.kubeconfig_path(), &ns, "a");
    a.expect(&["became leader"]).await;
    let port_a = a.http_port().await;
    let mut b = replica(cp.kubeconfig_path(), &ns, "b");
    b.expect(&["waiting to become leader"]).await;
    let port_b = b.http_port().await;
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
    let mut c = replica(cp.kubeconfig_path(), &ns, "c");
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
    let proxy = proxy::start(client.clone(), cp.data_dir(), &ns, rule)
        .await
        .expect("proxy");
    let mut a = replica(&proxy.kubeconfig, &ns, "a");
    a.expect(&["became leader"]).await;
    let mut b = replica(cp.kubeconfig_path(), &ns, "b");
    b.expect(&["waiting to become leader"]).await;
    create_foo(&client, &ns, "held", "held-nginx", Some(1)).await;
    eventually("held converged", || async {
        converged(&client, &ns, "held", "held-nginx", 1)
            .await
            .then_some(())
    })
    .await;

    // Renewals (every 2 s, the retry period) go by for 22 s: a keeps leading.
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
