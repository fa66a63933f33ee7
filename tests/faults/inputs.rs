//! The faults of what the step is given and told: Foos the schema refuses,
//! an empty `deploymentName`, SIGTERM in the middle of a sync.

use super::*;

/// Fault 5 for one step: Foos the CRD's schema rejects.
pub(super) async fn invalid_foos(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
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

/// Fault 6 for one step: a Foo without `deploymentName`.
pub(super) async fn empty_deployment_name(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
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

/// Fault 7 for one step: SIGTERM while Deployment creations are in flight.
pub(super) async fn sigterm_mid_sync(cp: &ControlPlane, client: &Client, bin: Bin) -> String {
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
