//! The faults of the watches: the CRD deleted and created again, watches
//! ended with 410 Gone.

use super::*;

/// Deletes the Foo CRD and waits until the API server no longer has it.
pub(super) async fn delete_crd(client: &Client) {
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

/// Waits until kube-controller-manager's garbage collector watches Foos. It
/// looks for new resource types every 30 s, and until it has found Foos it
/// leaves the dependents of a deleted Foo alone (then removes them seconds
/// late, all at once). Deletes a Foo that owns a ConfigMap and waits for the
/// ConfigMap to go.
pub(super) async fn garbage_collector_watches_foos(client: &Client) {
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
pub(super) async fn expired_watches(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
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
