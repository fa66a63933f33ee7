//! End-to-end: the step 8 examples against a real control plane.
//!
//! `step8_ordinary` is the ordinary kube-rs controller the step 8 chapter
//! starts from: here it must do the job (what it misses is what step 8's
//! check shows, in the chapter).
//!
//! Like tests/steps.rs: one control plane for this test binary, one namespace
//! per test, each example run as a child process the way a reader runs it.
//! Cargo gives tests the path of the package's binaries but not of its
//! examples, and `cargo test --test examples` does not build them, so
//! [`start_example`] builds the example first (a no-op when it is up to date).

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use sample_controller::Foo;
use serde_json::json;
use support::*;

const FINALIZER: &str = "samplecontroller.k8s.io/cleanup";

#[tokio::test]
async fn the_ordinary_controller_converges_a_foo_and_scales_it_by_server_side_apply() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "ordinary").await;
    let mut example = start_example("step8_ordinary", cp.kubeconfig_path(), &ns).await;
    example.expect(&["Starting workers"]).await;

    create_foo(&client, &ns, "plain", "plain-nginx", Some(1)).await;
    eventually("plain converged at 1", || async {
        converged(&client, &ns, "plain", "plain-nginx", 1)
            .await
            .then_some(())
    })
    .await;
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    foos.patch(
        "plain",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .expect("scale the Foo");
    eventually("plain converged at 2", || async {
        converged(&client, &ns, "plain", "plain-nginx", 2)
            .await
            .then_some(())
    })
    .await;
    // Written by server-side apply, as the chapter says.
    let deployment = get_deployment(&client, &ns, "plain-nginx")
        .await
        .expect("the Deployment");
    let applied = deployment.managed_fields().iter().any(|m| {
        m.manager.as_deref() == Some("sample-controller") && m.operation.as_deref() == Some("Apply")
    });
    assert!(
        applied,
        "an Apply entry of sample-controller: {:?}",
        deployment.managed_fields()
    );

    example.terminate().await;
}

#[tokio::test]
async fn a_foo_with_the_finalizer_is_cleaned_up_before_it_disappears() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "finalizer").await;
    let mut example = start_example("step8_finalizer", cp.kubeconfig_path(), &ns).await;
    example.expect(&["watching Foos"]).await;

    create_foo(&client, &ns, "tidy", "tidy-nginx", Some(1)).await;
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    has_our_finalizer(&foos, "tidy").await;
    example
        .expect(&[&format!("{ns}/tidy: finalizer {FINALIZER} in place")])
        .await;
    assert!(
        !cleaned_up(&client, &ns, "tidy").await,
        "no cleanup before the delete"
    );

    delete(&foos, "tidy").await;
    eventually("tidy gone", || async {
        foos.get_opt("tidy").await.unwrap().is_none().then_some(())
    })
    .await;
    assert!(
        cleaned_up(&client, &ns, "tidy").await,
        "a CleanedUp event for tidy: {:?}",
        events_for(&client, &ns, "tidy").await
    );
    example.expect(&[&format!("{ns}/tidy: cleaned up")]).await;

    let (status, output) = example.terminate().await;
    assert!(status.success(), "exits 0 on SIGTERM:\n{output}");
    assert_no_warnings(&output);
}

#[tokio::test]
async fn a_foo_deleted_while_the_controller_is_down_waits_for_it_to_come_back() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "finalizerdown").await;
    let mut example = start_example("step8_finalizer", cp.kubeconfig_path(), &ns).await;
    example.expect(&["watching Foos"]).await;
    create_foo(&client, &ns, "patient", "patient-nginx", Some(1)).await;
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    has_our_finalizer(&foos, "patient").await;
    let (status, output) = example.terminate().await;
    assert!(status.success(), "{output}");

    // The delete is accepted, but the Foo stays, marked for deletion.
    delete(&foos, "patient").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stuck = foos.get_opt("patient").await.unwrap().expect("still there");
    assert!(stuck.metadata.deletion_timestamp.is_some());
    assert_eq!(stuck.finalizers(), [FINALIZER]);
    assert!(!cleaned_up(&client, &ns, "patient").await);

    // Back up: it sees the deleting Foo, cleans up, and lets it go.
    let mut example = start_example("step8_finalizer", cp.kubeconfig_path(), &ns).await;
    example
        .expect(&[&format!("{ns}/patient: cleaned up")])
        .await;
    eventually("patient gone", || async {
        foos.get_opt("patient")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(cleaned_up(&client, &ns, "patient").await);
    let (status, output) = example.terminate().await;
    assert!(status.success(), "{output}");
}

#[tokio::test]
async fn a_widget_reports_ready_with_the_generation_it_observed() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "conditions").await;
    let mut example = start_example("step8_conditions", cp.kubeconfig_path(), &ns).await;
    // The example installs the Widget CRD itself.
    example.expect(&["established"]).await;
    example.expect(&["watching Widgets"]).await;
    let widgets = widgets(&client, &ns);

    // Created: Ready True, for generation 1.
    let created = widgets
        .create(&PostParams::default(), &widget(&ns, "gadget", 3))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let first = ready_at_generation(&widgets, "gadget", 1).await;
    assert_eq!(
        (first.status.as_str(), first.reason.as_str()),
        ("True", "SizeInRange")
    );
    assert_eq!(first.message, "size 3 is within 1..=10");

    // lastTransitionTime has one-second resolution: let a second pass so
    // that a transition now gets a different time.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // A spec change to an invalid size: generation 2, Ready False, a new
    // lastTransitionTime.
    set_size(&widgets, "gadget", 42).await;
    let second = ready_at_generation(&widgets, "gadget", 2).await;
    assert_eq!(
        (second.status.as_str(), second.reason.as_str()),
        ("False", "SizeOutOfRange")
    );
    assert_eq!(second.message, "size 42 is outside 1..=10");
    assert!(
        second.last_transition_time > first.last_transition_time,
        "{second:?} after {first:?}"
    );

    // An unrelated metadata change: no new generation, no status write.
    let labelled = widgets
        .patch(
            "gadget",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"colour": "blue"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2));
    let rv = labelled.resource_version().unwrap();
    example
        .expect(&[&format!(
            "{ns}/gadget: status up to date at resourceVersion {rv}; no write"
        )])
        .await;
    example.drain_for(Duration::from_secs(1)).await;
    let after = widgets.get("gadget").await.unwrap();
    assert_eq!(
        after.resource_version().as_deref(),
        Some(rv.as_str()),
        "no write after the label change"
    );
    assert_eq!(ready_condition(&after), Some(second.clone()));

    // Another invalid size: generation 3 and a new message, but Ready stays
    // False, so lastTransitionTime does not move.
    set_size(&widgets, "gadget", 11).await;
    let third = ready_at_generation(&widgets, "gadget", 3).await;
    assert_eq!(third.status, "False");
    assert_eq!(third.message, "size 11 is outside 1..=10");
    assert_eq!(third.last_transition_time, second.last_transition_time);

    let (status, output) = example.terminate().await;
    assert!(status.success(), "exits 0 on SIGTERM:\n{output}");
    assert_no_warnings(&output);
    // One write per generation, none for our own writes or for the label.
    let writes = output
        .lines()
        .filter(|l| l.contains(&format!("{ns}/gadget: wrote status")))
        .count();
    assert_eq!(writes, 3, "{output}");
}

/// Builds `examples/NAME.rs` and starts it against the cluster, in `ns`.
async fn start_example(name: &str, kubeconfig: &Path, ns: &str) -> Step {
    let path = example_binary(name).await;
    let args = [
        "--kubeconfig".to_string(),
        kubeconfig.display().to_string(),
        "--namespace".to_string(),
        ns.to_string(),
    ];
    Step::start_program(name, &path, &args)
}

/// `cargo build --example NAME` (once per test binary), and the path of the
/// binary: target/debug/examples/NAME, next to this test's deps/ directory.
async fn example_binary(name: &str) -> PathBuf {
    static BUILT: tokio::sync::Mutex<Vec<String>> = tokio::sync::Mutex::const_new(Vec::new());
    let mut built = BUILT.lock().await;
    let exe = std::env::current_exe().expect("test executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let path = profile_dir.join("examples").join(name);
    if !built.iter().any(|b| b == name) {
        let output = course::cargo::command(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &["build", "--quiet", "--example", name],
        )
        .tokio()
        .output()
        .await
        .expect("run cargo");
        assert!(
            output.status.success(),
            "cargo build --example {name}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        built.push(name.to_string());
    }
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// Waits until Foo `name` carries our finalizer.
async fn has_our_finalizer(foos: &Api<Foo>, name: &str) {
    eventually(&format!("{name} has finalizer {FINALIZER}"), || async {
        let foo = foos.get(name).await.ok()?;
        foo.finalizers()
            .iter()
            .any(|f| f == FINALIZER)
            .then_some(())
    })
    .await
}

/// Whether the example recorded its `CleanedUp` Event about Foo `name`.
async fn cleaned_up(client: &kube::Client, ns: &str, name: &str) -> bool {
    events_for(client, ns, name)
        .await
        .iter()
        .any(|(t, r, n)| t == "Normal" && r == "CleanedUp" && n.contains(FINALIZER))
}

/// Widgets in `ns`. The example defines the type; here it is untyped.
fn widgets(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("examples.samplecontroller.k8s.io", "v1alpha1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(client.clone(), ns, &resource)
}

fn widget(ns: &str, name: &str, size: i32) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "examples.samplecontroller.k8s.io/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"size": size},
    }))
    .unwrap()
}

async fn set_size(widgets: &Api<DynamicObject>, name: &str, size: i32) {
    widgets
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": size}})),
        )
        .await
        .unwrap();
}

/// The Widget's `Ready` condition, if it has one.
fn ready_condition(
    widget: &DynamicObject,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    widget.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| serde_json::from_value(c.clone()).unwrap())
}

/// Waits until the Widget's status describes `generation`, in both
/// `status.observedGeneration` and its Ready condition, and returns that condition.
async fn ready_at_generation(
    widgets: &Api<DynamicObject>,
    name: &str,
    generation: i64,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    eventually(
        &format!("{name} status at observedGeneration {generation}"),
        || async {
            let w = widgets.get(name).await.ok()?;
            assert_eq!(w.metadata.generation, Some(generation));
            let observed = w.data["status"]["observedGeneration"].as_i64()?;
            let ready = ready_condition(&w)?;
            (observed == generation && ready.observed_generation == Some(generation))
                .then_some(ready)
        },
    )
    .await
}

/// No WARN line in `output` but a watch that expired (410 "too old resource
/// version"): kube-apiserver may end any watch that way, and the watcher
/// relists by itself (seen once, on the first watch of a fresh control
/// plane, in a CI run).
fn assert_no_warnings(output: &str) {
    let warnings: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("WARN") && !l.contains("too old resource version"))
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}\n{output}");
}
