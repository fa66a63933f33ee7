//! End-to-end: every step binary against a real control plane.
//!
//! One control plane for this test binary (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, from `testcluster`), one
//! namespace per test. Each step runs as a child process, as a learner would
//! run it, and the tests assert on what it prints and on the cluster.

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use sample_controller::Foo;
use serde_json::json;
use support::*;

#[tokio::test]
async fn step_1_lists_a_foo_and_a_deployment_created_by_the_test() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step1").await;
    create_foo(&client, &ns, "listed-foo", "listed-foo-nginx", Some(2)).await;
    create_foreign_deployment(&client, &ns, "plain-deployment").await;

    let (status, output) = Step::start("step-1", cp.kubeconfig_path(), Some(&ns), &[])
        .wait()
        .await;

    assert!(status.success(), "{output}");
    let foo_row = output
        .lines()
        .find(|l| l.contains("listed-foo "))
        .unwrap_or_else(|| panic!("no Foo row:\n{output}"));
    assert!(
        foo_row.contains(&ns) && foo_row.contains("listed-foo-nginx") && foo_row.contains(" 2 "),
        "{foo_row}"
    );
    let deployment_row = output
        .lines()
        .find(|l| l.contains("plain-deployment"))
        .unwrap_or_else(|| panic!("no Deployment row:\n{output}"));
    assert!(
        deployment_row.contains("<none>"),
        "not controlled by anyone: {deployment_row}"
    );
}

#[tokio::test]
async fn step_2_reports_synced_caches_then_keeps_them_current() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step2").await;
    create_foo(&client, &ns, "cached-foo", "cached-foo", Some(1)).await;

    let mut step = Step::start("step-2", cp.kubeconfig_path(), Some(&ns), &[]);
    step.expect(&["Caches synced: 1 foos, 0 deployments"]).await;
    step.expect(&[&ns, "cached-foo"]).await;

    create_foo(&client, &ns, "later-foo", "later-foo", Some(3)).await;
    create_foreign_deployment(&client, &ns, "later-deployment").await;
    step.expect(&[&ns, "later-foo", " 3 "]).await;
    step.expect(&[&ns, "later-deployment"]).await;

    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
}

#[tokio::test]
async fn step_3_prints_adds_updates_and_deletes_and_the_key_each_handler_enqueues() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step3").await;
    let mut step = Step::start(
        "step-3",
        cp.kubeconfig_path(),
        Some(&ns),
        &["--resync", "2"],
    );
    // Wait until the informers are watching, by seeing a first object arrive.
    let foo = create_foo(&client, &ns, "watched", "watched-nginx", Some(1)).await;
    step.expect(&[
        &format!("Foo added {ns}/watched"),
        &format!("enqueue {ns}/watched"),
    ])
    .await;

    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    let updated = foos
        .patch(
            "watched",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    let old_rv = foo.resource_version().unwrap();
    let new_rv = updated.resource_version().unwrap();
    step.expect(&[
        &format!("Foo updated {ns}/watched (resourceVersion {old_rv} -> {new_rv})"),
        &format!("enqueue {ns}/watched"),
    ])
    .await;

    create_owned_deployment(&client, &ns, &updated).await;
    step.expect(&[
        &format!("Deployment added {ns}/watched-nginx"),
        &format!("enqueue {ns}/watched"),
    ])
    .await;

    // The resync replays the cache: same resourceVersion on both sides, ignored.
    let replay = step
        .expect_where("a replayed Deployment update", |l| {
            l.contains(&format!("Deployment updated {ns}/watched-nginx"))
                && l.contains("ignored (same resourceVersion")
        })
        .await;
    let (old, new) = resource_versions(&replay);
    assert_eq!(old, new, "{replay}");

    create_foreign_deployment(&client, &ns, "unowned").await;
    step.expect(&[
        &format!("Deployment added {ns}/unowned"),
        "ignored (no controller owner reference)",
    ])
    .await;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    delete(&deployments, "watched-nginx").await;
    step.expect(&[
        &format!("Deployment deleted {ns}/watched-nginx"),
        &format!("enqueue {ns}/watched"),
    ])
    .await;

    delete(&foos, "watched").await;
    step.expect(&[&format!("Foo deleted {ns}/watched"), "ignored"])
        .await;
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
}

/// `(41, 42)` from `... (resourceVersion 41 -> 42) ...`.
fn resource_versions(line: &str) -> (String, String) {
    let rest = line
        .split("(resourceVersion ")
        .nth(1)
        .expect("resourceVersion");
    let (old, rest) = rest.split_once(" -> ").expect("arrow");
    let new = rest.split(')').next().expect("closing parenthesis");
    (old.to_string(), new.to_string())
}

#[tokio::test]
async fn step_4_collapses_a_burst_of_updates_into_one_more_sync() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step4burst").await;
    let mut step = Step::start(
        "step-4",
        cp.kubeconfig_path(),
        Some(&ns),
        &["--sync-millis", "3000"],
    );
    step.expect(&["Starting 2 workers"]).await;
    create_foo(&client, &ns, "busy", "busy", Some(1)).await;
    let key = format!("{ns}/busy");
    step.expect(&[&format!("sync {key} start attempt 1")]).await;

    // Ten changes while attempt 1 is running: queued once, synced once more.
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    for i in 0..10 {
        let patch = json!({"metadata": {"labels": {"burst": i.to_string()}}});
        foos.patch("busy", &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }
    step.expect(&[&format!("sync {key} done attempt 1")]).await;
    step.expect(&[&format!("sync {key} start attempt 2")]).await;
    step.expect(&[&format!("sync {key} done attempt 2")]).await;
    step.drain_for(Duration::from_secs(4)).await;
    let (_, output) = step.terminate().await;

    let starts = output
        .lines()
        .filter(|l| l.contains(&format!("sync {key} start")))
        .count();
    assert_eq!(
        starts, 2,
        "one sync for the create, one for the whole burst:\n{output}"
    );
}

#[tokio::test]
async fn step_4_never_syncs_one_key_in_two_workers_at_once() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step4excl").await;
    let mut step = Step::start(
        "step-4",
        cp.kubeconfig_path(),
        Some(&ns),
        &["--sync-millis", "400"],
    );
    step.expect(&["Starting 2 workers"]).await;
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    for name in ["left", "right"] {
        create_foo(&client, &ns, name, name, Some(1)).await;
    }
    // Keep both keys busy for a while with a stream of changes.
    for i in 0..15 {
        for name in ["left", "right"] {
            let patch = json!({"metadata": {"labels": {"round": i.to_string()}}});
            foos.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    step.drain_for(Duration::from_secs(2)).await;
    let (_, output) = step.terminate().await;

    let mut running: std::collections::HashMap<&str, bool> = Default::default();
    let mut both_at_once = false;
    for line in output.lines().filter(|l| l.starts_with("sync ")) {
        let key = line.split_whitespace().nth(1).unwrap();
        if line.contains(" start attempt") {
            assert!(
                !running.get(key).copied().unwrap_or(false),
                "{key} started while running:\n{output}"
            );
            running.insert(key, true);
            both_at_once |= running.values().filter(|r| **r).count() == 2;
        } else {
            running.insert(key, false);
        }
    }
    assert!(
        both_at_once,
        "the two workers never overlapped, so the test proved nothing:\n{output}"
    );
}

#[tokio::test]
async fn step_4_retries_a_failing_key_with_growing_delays_then_succeeds() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step4retry").await;
    let mut step = Step::start(
        "step-4",
        cp.kubeconfig_path(),
        Some(&ns),
        &["--fail-first", "5"],
    );
    step.expect(&["Starting 2 workers"]).await;
    create_foo(&client, &ns, "flaky", "flaky", Some(1)).await;
    let key = format!("{ns}/flaky");
    step.expect(&[&format!("sync {key} done attempt 6")]).await;
    let (_, output) = step.terminate().await;

    // Attempt n+1 starts at least 5 ms · 2^(n-1) after attempt n (Go's backoff).
    let gaps: Vec<u64> = output
        .lines()
        .filter(|l| l.contains(&format!("sync {key} start attempt")) && l.contains("ms after"))
        .map(|l| {
            l.split('(')
                .nth(1)
                .unwrap()
                .split(" ms")
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(gaps.len(), 5, "{output}");
    for (n, gap) in gaps.iter().enumerate() {
        assert!(
            *gap >= 5 << n,
            "retry {} came after {gap} ms, before its {} ms backoff:\n{output}",
            n + 1,
            5 << n
        );
    }
    assert_eq!(
        output
            .matches("Error syncing; requeuing for later retry")
            .count(),
        5,
        "{output}"
    );
}

#[tokio::test]
async fn step_5_creates_scales_and_recreates_the_deployment_and_refuses_a_foreign_one() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step5").await;
    // A Deployment someone else owns, settled before the controller starts.
    create_foreign_deployment(&client, &ns, "taken").await;
    let foreign = eventually("the foreign Deployment to settle", || async {
        let d = get_deployment(&client, &ns, "taken").await?;
        let observed = d.status.as_ref()?.observed_generation;
        (observed == d.metadata.generation
            && d.annotations()
                .contains_key("deployment.kubernetes.io/revision"))
        .then_some(d)
    })
    .await;

    let mut step = Step::start("step-5", cp.kubeconfig_path(), Some(&ns), &[]);
    step.expect(&["Starting 2 workers"]).await;

    // Creates the Deployment, controlled by the Foo.
    let foo = create_foo(&client, &ns, "web", "web-nginx", Some(2)).await;
    step.expect(&[&format!("creating Deployment {ns}/web-nginx")])
        .await;
    let created = eventually("web-nginx", || get_deployment(&client, &ns, "web-nginx")).await;
    let owner = &created.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Foo", "web", foo.uid().unwrap().as_str())
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(created.spec.as_ref().unwrap().replicas, Some(2));

    // Refuses the foreign Deployment, retries, and never changes it.
    create_foo(&client, &ns, "squatter", "taken", Some(3)).await;
    let refusal = r#"Resource "taken" already exists and is not managed by Foo"#;
    step.expect(&["Error syncing", refusal]).await;
    step.expect(&["Error syncing", refusal]).await; // retried
    let after = get_deployment(&client, &ns, "taken").await.unwrap();
    assert_eq!(untouchable(&after), untouchable(&foreign));
    assert!(
        after
            .managed_fields()
            .iter()
            .all(|f| f.manager.as_deref() != Some("sample-controller"))
    );

    // Fixes replicas drift.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    deployments
        .patch(
            "web-nginx",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    step.expect(&[&format!(
        "updating Deployment {ns}/web-nginx: replicas Some(5) -> 2"
    )])
    .await;
    eventually("replicas back to 2", || async {
        let d = get_deployment(&client, &ns, "web-nginx").await?;
        (d.spec?.replicas == Some(2)).then_some(())
    })
    .await;

    // Recreates a deleted Deployment.
    let old_uid = created.uid().unwrap();
    delete(&deployments, "web-nginx").await;
    eventually("web-nginx recreated", || async {
        let d = get_deployment(&client, &ns, "web-nginx").await?;
        (d.uid()? != old_uid && d.metadata.deletion_timestamp.is_none()).then_some(())
    })
    .await;
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
}

#[tokio::test]
async fn step_6_makes_the_foo_status_follow_the_deployment() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step6").await;
    let mut step = Step::start("step-6", cp.kubeconfig_path(), Some(&ns), &[]);
    step.expect(&["Starting 2 workers"]).await;
    create_foo(&client, &ns, "status", "status-nginx", Some(2)).await;
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    let available = |want: i32| {
        let foos = foos.clone();
        let deployments = client.clone();
        let ns = ns.clone();
        async move {
            let foo = foos.get("status").await.ok()?;
            let d = get_deployment(&deployments, &ns, "status-nginx").await?;
            let deployment_has = d.status.and_then(|s| s.available_replicas).unwrap_or(0);
            let foo_has = foo.status?.available_replicas;
            (foo_has == want && deployment_has == want).then_some(())
        }
    };
    // kwok makes the pods Ready, so availableReplicas becomes real.
    eventually("2 available replicas in Deployment and Foo status", || {
        available(2)
    })
    .await;
    foos.patch(
        "status",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    eventually("3 available replicas in Deployment and Foo status", || {
        available(3)
    })
    .await;
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
}

#[tokio::test]
async fn step_7_records_events_exits_cleanly_on_sigterm_and_its_deployments_are_garbage_collected()
{
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step7").await;
    create_foreign_deployment(&client, &ns, "occupied").await;
    let mut step = Step::start("step-7", cp.kubeconfig_path(), Some(&ns), &[]);
    step.expect(&["Starting workers"]).await;

    create_foo(&client, &ns, "good", "good-nginx", Some(1)).await;
    create_foo(&client, &ns, "blocked", "occupied", Some(1)).await;
    eventually("a Synced event for good", || async {
        let events = events_for(&client, &ns, "good").await;
        events
            .iter()
            .any(|(t, r, n)| t == "Normal" && r == "Synced" && n == "Foo synced successfully")
            .then_some(())
    })
    .await;
    eventually("an ErrResourceExists event for blocked", || async {
        let events = events_for(&client, &ns, "blocked").await;
        let want = r#"Resource "occupied" already exists and is not managed by Foo"#;
        events
            .iter()
            .any(|(t, r, n)| t == "Warning" && r == "ErrResourceExists" && n == want)
            .then_some(())
    })
    .await;
    step.expect(&["Successfully synced", &format!("{ns}/good")])
        .await;

    // Deleting the Foo lets kube-controller-manager's garbage collector delete its Deployment.
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    delete(&foos, "good").await;
    eventually("good-nginx garbage-collected", || async {
        get_deployment(&client, &ns, "good-nginx")
            .await
            .is_none()
            .then_some(())
    })
    .await;

    let (status, output) = step.terminate().await;
    assert!(status.success(), "step 7 exits 0 on SIGTERM:\n{output}");
    assert!(output.contains("Shutting down workers"), "{output}");
}

#[tokio::test]
async fn step_6_without_rbac_names_every_missing_permission_and_exits() {
    // Steps 1-6 stop at a missing permission; step 7 warns and retries
    // instead (tests/faults.rs, fault 9).
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "rbac").await;
    let kubeconfig = cp
        .service_account_kubeconfig(&ns, "controller")
        .await
        .unwrap();

    let (status, output) = Step::start("step-6", &kubeconfig, Some(&ns), &[])
        .wait()
        .await;
    assert!(!status.success(), "{output}");
    assert!(output.contains("RBAC forbids"), "{output}");
    for missing in [
        "list foos",
        "watch deployments",
        "create deployments",
        "update deployments",
        "update foos/status",
    ] {
        assert!(output.contains(missing), "{missing} not named:\n{output}");
    }
}

/// The managers and operations that wrote the Foo's status and the Deployment's
/// spec, from their managedFields: `(manager, operation)`.
fn writers<K: kube::Resource>(obj: &K, subresource: Option<&str>) -> Vec<(String, String)> {
    obj.meta()
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.subresource.as_deref() == subresource)
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// How many times the Synced Event about Foo `name` was recorded (its series count).
async fn synced_count(client: &kube::Client, ns: &str, name: &str) -> i32 {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns);
    events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some("Synced")
                && e.regarding
                    .as_ref()
                    .is_some_and(|r| r.name.as_deref() == Some(name))
        })
        .map(|e| e.series.map_or(1, |s| s.count))
        .sum()
}

#[tokio::test]
async fn step_7_writes_like_go_replacing_the_deployment_and_resyncing_every_30_seconds() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step7go").await;
    let mut step = Step::start("step-7", cp.kubeconfig_path(), Some(&ns), &[]);
    step.expect(&["Starting workers"]).await;
    create_foo(&client, &ns, "literal", "literal", Some(1)).await;
    eventually("literal converged", || async {
        converged(&client, &ns, "literal", "literal", 1)
            .await
            .then_some(())
    })
    .await;

    // Someone labels the Deployment; the next replica change replaces it whole.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let label = json!({"metadata": {"labels": {"team": "blue"}}});
    deployments
        .patch("literal", &PatchParams::default(), &Patch::Merge(label))
        .await
        .unwrap();
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    let scale = json!({"spec": {"replicas": 2}});
    foos.patch("literal", &PatchParams::default(), &Patch::Merge(scale))
        .await
        .unwrap();
    let replaced = eventually("literal replaced with 2 replicas", || async {
        let d = deployments.get("literal").await.ok()?;
        (d.spec.as_ref()?.replicas == Some(2)).then_some(d)
    })
    .await;
    assert!(
        !replaced.labels().contains_key("team"),
        "Go's Update drops others' labels: {:?}",
        replaced.labels()
    );
    assert!(
        writers(&replaced, None).contains(&("sample-controller".into(), "Update".into())),
        "{:?}",
        writers(&replaced, None)
    );
    let foo = foos.get("literal").await.unwrap();
    assert_eq!(
        writers(&foo, Some("status")),
        [("sample-controller".to_string(), "Update".to_string())],
        "the status is written with UpdateStatus (PUT)"
    );

    // Nothing changes; Go's resync still syncs every Foo every 30 s, and each
    // sync records Synced again.
    eventually("literal settled at 2", || async {
        converged(&client, &ns, "literal", "literal", 2)
            .await
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = synced_count(&client, &ns, "literal").await;
    tokio::time::sleep(Duration::from_secs(33)).await;
    let after = synced_count(&client, &ns, "literal").await;
    assert!(
        after > before,
        "a resync sync records Synced again: {before} -> {after}"
    );
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
}

#[tokio::test]
async fn step_8_applies_only_what_drifted_keeps_others_labels_and_is_silent_while_idle() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step8").await;
    let mut step = Step::start("step-8", cp.kubeconfig_path(), Some(&ns), &[]);
    step.expect(&["Starting workers"]).await;
    create_foo(&client, &ns, "applied", "applied", Some(1)).await;
    eventually("applied converged", || async {
        converged(&client, &ns, "applied", "applied", 1)
            .await
            .then_some(())
    })
    .await;

    // Someone labels the Deployment and changes its image: the image is ours
    // and comes back at once; the label is theirs and stays.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let params = PatchParams {
        field_manager: Some("kubectl-label".into()),
        ..PatchParams::default()
    };
    let label = json!({"metadata": {"labels": {"team": "blue"}}});
    deployments
        .patch("applied", &params, &Patch::Merge(label))
        .await
        .unwrap();
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}});
    deployments
        .patch("applied", &PatchParams::default(), &Patch::Strategic(image))
        .await
        .unwrap();
    eventually("the image taken back", || async {
        let d = deployments.get("applied").await.ok()?;
        let image = d.spec?.template.spec?.containers.first()?.image.clone();
        (image.as_deref() == Some("nginx:latest")).then_some(())
    })
    .await;
    let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
    let scale = json!({"spec": {"replicas": 2}});
    foos.patch("applied", &PatchParams::default(), &Patch::Merge(scale))
        .await
        .unwrap();
    eventually("applied settled at 2", || async {
        converged(&client, &ns, "applied", "applied", 2)
            .await
            .then_some(())
    })
    .await;
    let d = deployments.get("applied").await.unwrap();
    assert_eq!(d.labels().get("team").map(String::as_str), Some("blue"));
    assert!(
        writers(&d, None).contains(&("sample-controller".into(), "Apply".into())),
        "{:?}",
        writers(&d, None)
    );
    let foo = foos.get("applied").await.unwrap();
    assert_eq!(
        writers(&foo, Some("status")),
        [("sample-controller".to_string(), "Apply".to_string())],
        "the status is server-side applied"
    );

    // Idle: no resync, no write, no Event, for longer than Go's resync period.
    tokio::time::sleep(Duration::from_secs(3)).await;
    step.drain_for(Duration::from_millis(100)).await;
    let syncs = |output: &[String]| {
        output
            .iter()
            .filter(|l| l.contains("Successfully synced"))
            .count()
    };
    let (events, foo_rv, deployment_rv) = (
        synced_count(&client, &ns, "applied").await,
        foos.get("applied").await.unwrap().resource_version(),
        deployments.get("applied").await.unwrap().resource_version(),
    );
    let reconciles = syncs(&step.output);
    tokio::time::sleep(Duration::from_secs(35)).await;
    step.drain_for(Duration::from_millis(100)).await;
    assert_eq!(syncs(&step.output), reconciles, "no reconcile while idle");
    assert_eq!(synced_count(&client, &ns, "applied").await, events);
    assert_eq!(
        foos.get("applied").await.unwrap().resource_version(),
        foo_rv
    );
    assert_eq!(
        deployments.get("applied").await.unwrap().resource_version(),
        deployment_rv
    );
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
}

#[tokio::test]
async fn step_8_started_beside_existing_foos_becomes_ready_and_stops_cleanly_every_time() {
    // Found this way: several tasks waiting on kube's Store::wait_until_ready
    // at once lose wake-ups (src/reconciler.rs `Synced`); then step 8 never
    // said it was ready and a SIGTERM waited forever for a stuck reconcile.
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step8restarts").await;
    for i in 0..5 {
        let name = format!("existing-{i}");
        create_foo(&client, &ns, &name, &name, Some(1)).await;
    }
    for round in 0..5 {
        let mut step = Step::start("step-8", cp.kubeconfig_path(), Some(&ns), &[]);
        let ready = step
            .line_within(&["Starting workers"], Duration::from_secs(20))
            .await;
        assert!(
            ready.is_some(),
            "round {round}:\n{}",
            step.output.join("\n")
        );
        let (status, output) = tokio::time::timeout(Duration::from_secs(10), step.terminate())
            .await
            .unwrap_or_else(|_| panic!("round {round}: SIGTERM did not stop step 8"));
        assert!(status.success(), "round {round}: {output}");
    }
}
