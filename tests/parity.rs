//! Parity: the Go sample-controller (built from k8s.io/sample-controller
//! v0.37.1), Rust step 7 (Go's program) and Rust step 8 (the kube-rs way) run
//! the same scenarios on the same kind of control plane, and must leave the
//! same state behind.
//!
//! Each scenario runs three times, once per controller, each in a fresh
//! namespace of a control plane of its own (each watches every namespace, as
//! Go's does), the three at once. After the operations the test waits until
//! the state settles, then takes a normalised snapshot: Foos (spec, status),
//! Deployments (labels, annotations, selector, replicas, template, owner
//! references), and the Events about Foos (type, reason, message, object).
//! UIDs, resourceVersions, timestamps, managedFields, kube-controller-manager's
//! revision annotation, event counts and the Event API version (Go writes
//! core/v1, kube writes events.k8s.io/v1) are normalised away. Step 7's
//! snapshot must equal Go's in every scenario; step 8's too, except where
//! `tests/parity-allowlist.txt` says why not.
//!
//! Run alone with `cargo xtask parity`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use sample_controller::Foo;
use serde_json::{Value, json};
use support::{Step, create_foo, create_foreign_deployment, eventually};
use testcluster::{ControlPlane, Options};

/// The implementations under comparison; Go is the reference.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Implementation {
    Go,
    Step7,
    Step8,
}

impl Implementation {
    /// The name used in the allowlist and in namespaces.
    fn label(self) -> &'static str {
        match self {
            Implementation::Go => "go",
            Implementation::Step7 => "step-7",
            Implementation::Step8 => "step-8",
        }
    }
}

/// The control plane `implementation` runs on. Each controller watches every
/// namespace (as Go's does), so two never share a control plane; with one
/// each, the three runs of a scenario go at once. Scenarios lock it in turn.
async fn cluster(implementation: Implementation) -> &'static tokio::sync::Mutex<ControlPlane> {
    static CPS: [tokio::sync::OnceCell<tokio::sync::Mutex<ControlPlane>>; 3] =
        [const { tokio::sync::OnceCell::const_new() }; 3];
    CPS[implementation as usize]
        .get_or_init(|| async {
            let (cp, _client) = support::own_cluster(Options::default()).await;
            tokio::sync::Mutex::new(cp)
        })
        .await
}

/// The Go sample-controller binary (built into the cache if missing).
fn go_controller() -> PathBuf {
    testcluster::binaries::ensure(testcluster::Binary::SampleController)
        .expect("Go sample-controller")
}

/// The scenarios of the parity issue.
#[derive(Clone, Copy, Debug)]
enum Scenario {
    CreateFoo,
    ScaleUpAndDown,
    DeleteItsDeployment,
    ForeignDeploymentHoldsTheName,
    EmptyDeploymentName,
    ReplicasOmitted,
    DeleteTheFoo,
    ChangeDeploymentName,
    FiftyFoosAtOnce,
    ApiServerRestartedDuringCreates,
    OthersEditAnOwnedDeployment,
    ScaleAnOwnedDeploymentByHand,
    OverwriteAFoosStatusByHand,
    BurstOfReplicaChanges,
    DeploymentRejected,
}

/// Runs `scenario` with each controller and compares each Rust snapshot with Go's.
async fn check(scenario: Scenario) {
    let allowed = allowlist();
    let (go, step_7, step_8) = futures::join!(
        run(scenario, Implementation::Go),
        run(scenario, Implementation::Step7),
        run(scenario, Implementation::Step8),
    );
    let count = |v: &Value| {
        v.as_object()
            .map_or_else(|| v.as_array().map_or(0, Vec::len), |o| o.len())
    };
    println!(
        "{scenario:?}: Go left {} Foos, {} Deployments, {} distinct Foo Events",
        count(&go.foos),
        count(&go.deployments),
        count(&go.events)
    );
    let mut differences = Vec::new();
    for (implementation, rust) in [
        (Implementation::Step7, step_7),
        (Implementation::Step8, step_8),
    ] {
        for (aspect, go_part, rust_part) in [
            ("foos", &go.foos, &rust.foos),
            ("deployments", &go.deployments, &rust.deployments),
            ("events", &go.events, &rust.events),
        ] {
            let key = format!("{} {scenario:?} {aspect}", implementation.label());
            if go_part == rust_part {
                if allowed.contains(&key) {
                    differences.push(format!(
                        "{key} is allow-listed but no longer differs: remove it"
                    ));
                }
            } else if allowed.contains(&key) {
                println!("{key} differs (allow-listed):\n  Go:   {go_part}\n  Rust: {rust_part}");
            } else {
                differences.push(format!(
                    "{key} differ:\n  Go:   {go_part:#}\n  Rust: {rust_part:#}"
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Entries `step-8 Scenario aspect` of tests/parity-allowlist.txt (comments
/// stripped). Step 7 is Go's program: an entry for it fails the test.
fn allowlist() -> BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/parity-allowlist.txt"
    ))
    .expect("tests/parity-allowlist.txt");
    let entries: BTreeSet<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    for entry in &entries {
        assert!(
            entry.starts_with("step-8 "),
            "tests/parity-allowlist.txt: {entry:?} — only step 8 may differ from Go"
        );
    }
    entries
}

/// Normalised end state of one run.
#[derive(Debug, PartialEq)]
struct Snapshot {
    foos: Value,
    deployments: Value,
    events: Value,
}

/// One scenario with one controller, on its control plane.
async fn run(scenario: Scenario, implementation: Implementation) -> Snapshot {
    let mut cp = cluster(implementation).await.lock().await;
    let client = cp.client().await.expect("client");
    let ns = format!(
        "parity-{}-{}",
        format!("{scenario:?}").to_lowercase(),
        implementation.label()
    );
    testcluster::create_namespace(&client, &ns)
        .await
        .expect("namespace");

    let kubeconfig = cp.kubeconfig_path().display().to_string();
    let mut controller = match implementation {
        Implementation::Go => {
            let exe = go_controller();
            Step::start_program("go", &exe, &[format!("-kubeconfig={kubeconfig}")])
        }
        Implementation::Step7 | Implementation::Step8 => {
            Step::start_with_args(implementation.label(), &["--kubeconfig".into(), kubeconfig])
        }
    };
    controller.expect(&["Starting workers"]).await;

    operate(scenario, &client, &ns, &mut cp).await;
    let snapshot = match settle(&client, &ns).await {
        Ok(snapshot) => snapshot,
        Err(unsettled) => {
            controller.drain_for(Duration::from_secs(1)).await;
            panic!(
                "{unsettled}\n{implementation:?}'s output:\n{}",
                controller.output.join("\n")
            );
        }
    };

    let (_, output) = controller.terminate().await;
    assert!(
        output.contains("Shutting down workers"),
        "{implementation:?} did not stop cleanly:\n{output}"
    );
    // Leave nothing for the next controller: Foos first (instant), then the namespace.
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    foos.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .expect("delete Foos");
    Api::<Namespace>::all(client.clone())
        .delete(&ns, &DeleteParams::default())
        .await
        .expect("delete namespace");
    snapshot
}

/// The cluster operations of a scenario, applied while a controller runs.
async fn operate(scenario: Scenario, client: &Client, ns: &str, cp: &mut ControlPlane) {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let available = |name: &'static str, want: i32| {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get_opt(name).await.ok()??;
            (d.status.as_ref()?.available_replicas == Some(want)).then_some(d)
        }
    };
    match scenario {
        Scenario::CreateFoo => {
            create_foo(client, ns, "example-foo", "example-foo", Some(1)).await;
        }
        Scenario::ScaleUpAndDown => {
            create_foo(client, ns, "scaled", "scaled", Some(1)).await;
            eventually("1 available", || available("scaled", 1)).await;
            foos.patch(
                "scaled",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 4}})),
            )
            .await
            .unwrap();
            eventually("4 available", || available("scaled", 4)).await;
            foos.patch(
                "scaled",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 2}})),
            )
            .await
            .unwrap();
        }
        Scenario::DeleteItsDeployment => {
            create_foo(client, ns, "phoenix", "phoenix", Some(1)).await;
            let first = eventually("phoenix available", || available("phoenix", 1)).await;
            deployments
                .delete("phoenix", &DeleteParams::default())
                .await
                .unwrap();
            eventually("phoenix recreated", || async {
                let d = deployments.get_opt("phoenix").await.ok()??;
                (d.uid() != first.uid()).then_some(())
            })
            .await;
        }
        Scenario::ForeignDeploymentHoldsTheName => {
            create_foreign_deployment(client, ns, "taken").await;
            create_foo(client, ns, "squatter", "taken", Some(2)).await;
        }
        Scenario::EmptyDeploymentName => {
            create_foo(client, ns, "nameless", "", Some(1)).await;
        }
        Scenario::DeploymentRejected => {
            // Not a DNS subdomain: the CRD accepts it, the API server
            // rejects the Deployment's create (422) on every retry.
            create_foo(client, ns, "misnamed", "Not_A_Valid_Name", Some(1)).await;
        }
        Scenario::ReplicasOmitted => {
            create_foo(client, ns, "defaulted", "defaulted", None).await;
        }
        Scenario::DeleteTheFoo => {
            create_foo(client, ns, "doomed", "doomed", Some(1)).await;
            create_foo(client, ns, "survivor", "survivor", Some(1)).await;
            eventually("doomed available", || available("doomed", 1)).await;
            foos.delete("doomed", &DeleteParams::default())
                .await
                .unwrap();
            eventually("doomed garbage-collected", || async {
                deployments
                    .get_opt("doomed")
                    .await
                    .ok()?
                    .is_none()
                    .then_some(())
            })
            .await;
        }
        Scenario::ChangeDeploymentName => {
            create_foo(client, ns, "renamed", "before", Some(1)).await;
            eventually("before available", || available("before", 1)).await;
            let patch = json!({"spec": {"deploymentName": "after"}});
            foos.patch("renamed", &PatchParams::default(), &Patch::Merge(patch))
                .await
                .unwrap();
        }
        Scenario::FiftyFoosAtOnce => {
            join_all((0..50).map(|i| {
                let name = format!("many-{i:02}");
                async move { create_foo(client, ns, &name, &name, Some(1 + i % 3)).await }
            }))
            .await;
        }
        Scenario::ApiServerRestartedDuringCreates => {
            for i in 0..10 {
                let name = format!("before-restart-{i}");
                create_foo(client, ns, &name, &name, Some(1)).await;
            }
            cp.restart_apiserver()
                .await
                .expect("restart kube-apiserver");
            let client = cp.client().await.expect("client");
            for i in 0..10 {
                let name = format!("after-restart-{i}");
                create_foo(&client, ns, &name, &name, Some(1)).await;
            }
        }
        Scenario::OthersEditAnOwnedDeployment => {
            create_foo(client, ns, "edited", "edited", Some(1)).await;
            eventually("edited available", || available("edited", 1)).await;
            // What `kubectl label`, `kubectl annotate` and `kubectl set image`
            // send, each under its own field manager.
            let edits = [
                (
                    "kubectl-label",
                    json!({"metadata": {"labels": {"team": "blue"}}}),
                ),
                (
                    "kubectl-annotate",
                    json!({"metadata": {"annotations": {"note": "hand-edited"}}}),
                ),
                (
                    "kubectl-set",
                    json!({"spec": {"template": {"spec": {"containers": [
                        {"name": "nginx", "image": "nginx:1.27"}]}}}}),
                ),
            ];
            for (manager, patch) in edits {
                let params = PatchParams {
                    field_manager: Some(manager.into()),
                    ..PatchParams::default()
                };
                deployments
                    .patch("edited", &params, &Patch::Strategic(patch))
                    .await
                    .unwrap();
            }
            // Let each controller react to the edits before the Foo changes.
            tokio::time::sleep(Duration::from_secs(3)).await;
            scale_foo(&foos, "edited", 2).await;
        }
        Scenario::ScaleAnOwnedDeploymentByHand => {
            create_foo(client, ns, "manual", "manual", Some(2)).await;
            eventually("manual available", || available("manual", 2)).await;
            // What `kubectl scale deployment manual --replicas=5` sends.
            let params = PatchParams {
                field_manager: Some("kubectl-scale".into()),
                ..PatchParams::default()
            };
            deployments
                .patch_scale(
                    "manual",
                    &params,
                    &Patch::Merge(json!({"spec": {"replicas": 5}})),
                )
                .await
                .unwrap();
        }
        Scenario::OverwriteAFoosStatusByHand => {
            create_foo(client, ns, "lied-about", "lied-about", Some(1)).await;
            eventually("lied-about available", || available("lied-about", 1)).await;
            eventually("lied-about reported", || async {
                let foo = foos.get("lied-about").await.ok()?;
                (foo.status?.available_replicas == 1).then_some(())
            })
            .await;
            // kubectl patch foo lied-about --subresource=status ...
            let params = PatchParams {
                field_manager: Some("kubectl-patch".into()),
                ..PatchParams::default()
            };
            foos.patch_status(
                "lied-about",
                &params,
                &Patch::Merge(json!({"status": {"availableReplicas": 42}})),
            )
            .await
            .unwrap();
        }
        Scenario::BurstOfReplicaChanges => {
            create_foo(client, ns, "jittery", "jittery", Some(1)).await;
            eventually("jittery available", || available("jittery", 1)).await;
            for replicas in [2, 3, 4, 5, 6, 7, 8, 9, 10, 3] {
                scale_foo(&foos, "jittery", replicas).await;
            }
        }
    }
}

/// Sets a Foo's `spec.replicas`, as `kubectl patch foo` would.
async fn scale_foo(foos: &Api<Foo>, name: &str, replicas: i32) {
    foos.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .unwrap();
}

/// Waits until the namespace has settled (every Foo with a Deployment name
/// either reports its Deployment's available replicas or has been refused
/// with an Event, and nothing changed for 3 s), then returns the snapshot.
async fn settle(client: &Client, ns: &str) -> Result<Snapshot, String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    let mut last: Option<Snapshot> = None;
    let mut stable_since = tokio::time::Instant::now();
    loop {
        let (snapshot, unsettled) = snapshot(client, ns).await;
        if last.as_ref() != Some(&snapshot) {
            stable_since = tokio::time::Instant::now();
        } else if unsettled.is_empty() && stable_since.elapsed() >= Duration::from_secs(3) {
            return Ok(snapshot);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "{ns} did not settle:\n  {}\nlast state: {snapshot:#?}",
                unsettled.join("\n  ")
            ));
        }
        last = Some(snapshot);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Whether `name` may name a Deployment (a DNS-1123 subdomain).
fn is_dns_subdomain(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 253
        && name.starts_with(alnum)
        && name.ends_with(alnum)
        && name.chars().all(|c| alnum(c) || c == '-' || c == '.')
}

/// The normalised state of `ns`, and what keeps it from looking settled.
async fn snapshot(client: &Client, ns: &str) -> (Snapshot, Vec<String>) {
    let all = ListParams::default();
    let foos = Api::<Foo>::namespaced(client.clone(), ns)
        .list(&all)
        .await
        .expect("list Foos")
        .items;
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&all)
        .await
        .expect("list Deployments")
        .items;
    let events = Api::<Event>::namespaced(client.clone(), ns)
        .list(&all)
        .await
        .expect("list Events")
        .items;
    let uid_to_foo: BTreeMap<String, String> = foos
        .iter()
        .map(|f| (f.uid().unwrap_or_default(), f.name_any()))
        .collect();

    let foo_view: BTreeMap<String, Value> = foos
        .iter()
        .map(|f| (f.name_any(), json!({"spec": f.spec, "status": f.status})))
        .collect();
    let deployment_view: BTreeMap<String, Value> = deployments
        .iter()
        .map(|d| {
            let spec = d.spec.clone();
            let owners: Vec<Value> = d
                .owner_references()
                .iter()
                .map(|o| {
                    let owner = uid_to_foo.get(&o.uid).cloned().unwrap_or_else(|| "<unknown uid>".into());
                    json!({"apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": format!("<uid of {owner}>"),
                           "controller": o.controller, "blockOwnerDeletion": o.block_owner_deletion})
                })
                .collect();
            let mut annotations = d.annotations().clone();
            // kube-controller-manager's rollout counter: not the controller's doing.
            annotations.remove("deployment.kubernetes.io/revision");
            let view = json!({
                "labels": d.labels(),
                "annotations": annotations,
                "selector": spec.selector,
                "replicas": spec.replicas,
                "template": spec.template,
                "ownerReferences": owners,
                "deleting": d.metadata.deletion_timestamp.is_some(),
            });
            (d.name_any(), view)
        })
        .collect();
    let event_view: BTreeSet<(String, String, String, String)> = events
        .iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some("Foo"))
        .map(|e| {
            (
                e.involved_object.name.clone().unwrap_or_default(),
                e.type_.clone().unwrap_or_default(),
                e.reason.clone().unwrap_or_default(),
                e.message.clone().unwrap_or_default(),
            )
        })
        .collect();

    // What keeps each Foo from looking settled (none: settled).
    let unsettled: Vec<String> = foos
        .iter()
        .filter(|f| !f.spec.deployment_name.is_empty())
        // A name the API server refuses for a Deployment: there will never be one.
        .filter(|f| is_dns_subdomain(&f.spec.deployment_name))
        .filter_map(|f| {
            let name = f.name_any();
            let Some(d) = deployments
                .iter()
                .find(|d| d.name_any() == f.spec.deployment_name)
            else {
                return Some(format!("{name}: no Deployment {}", f.spec.deployment_name));
            };
            let controlled = sample_controller::deployment::is_controlled_by(d, f);
            if !controlled {
                let refused = event_view.iter().any(|(foo, _, reason, _)| {
                    *foo == name && reason == "ErrResourceExists"
                });
                return (!refused).then(|| {
                    format!("{name}: its Deployment is not controlled by it, and no ErrResourceExists Event yet")
                });
            }
            let status = d.status.clone().unwrap_or_default();
            let available = status.available_replicas.unwrap_or(0);
            let wanted = d.spec.replicas.unwrap_or(1);
            let reported = f.status.as_ref().map(|s| s.available_replicas);
            if available != wanted {
                Some(format!("{name}: its Deployment has {available} of {wanted} available"))
            } else if reported != Some(available) {
                Some(format!(
                    "{name}: its status says {reported:?} available, its Deployment {available}"
                ))
            } else {
                None
            }
        })
        .collect();
    let snapshot = Snapshot {
        foos: serde_json::to_value(foo_view).unwrap(),
        deployments: serde_json::to_value(deployment_view).unwrap(),
        events: serde_json::to_value(event_view).unwrap(),
    };
    (snapshot, unsettled)
}

#[tokio::test]
async fn create_a_foo() {
    check(Scenario::CreateFoo).await;
}

#[tokio::test]
async fn scale_it_up_and_down() {
    check(Scenario::ScaleUpAndDown).await;
}

#[tokio::test]
async fn delete_its_deployment() {
    check(Scenario::DeleteItsDeployment).await;
}

#[tokio::test]
async fn a_foreign_deployment_already_holds_the_name() {
    check(Scenario::ForeignDeploymentHoldsTheName).await;
}

#[tokio::test]
async fn an_empty_deployment_name() {
    check(Scenario::EmptyDeploymentName).await;
}

#[tokio::test]
async fn replicas_omitted() {
    check(Scenario::ReplicasOmitted).await;
}

#[tokio::test]
async fn delete_the_foo_and_its_deployment_is_garbage_collected() {
    check(Scenario::DeleteTheFoo).await;
}

#[tokio::test]
async fn change_the_deployment_name() {
    check(Scenario::ChangeDeploymentName).await;
}

#[tokio::test]
async fn fifty_foos_at_once() {
    check(Scenario::FiftyFoosAtOnce).await;
}

#[tokio::test]
async fn kube_apiserver_restarted_while_foos_are_being_created() {
    check(Scenario::ApiServerRestartedDuringCreates).await;
}

#[tokio::test]
async fn others_label_annotate_and_change_the_image_of_an_owned_deployment_then_the_foo_scales() {
    check(Scenario::OthersEditAnOwnedDeployment).await;
}

#[tokio::test]
async fn someone_scales_an_owned_deployment_by_hand() {
    check(Scenario::ScaleAnOwnedDeploymentByHand).await;
}

#[tokio::test]
async fn someone_overwrites_a_foos_status_by_hand() {
    check(Scenario::OverwriteAFoosStatusByHand).await;
}

#[tokio::test]
async fn a_burst_of_replica_changes_on_one_foo() {
    check(Scenario::BurstOfReplicaChanges).await;
}

#[tokio::test]
async fn a_foo_whose_deployment_the_api_server_rejects() {
    check(Scenario::DeploymentRejected).await;
}
