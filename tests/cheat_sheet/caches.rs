//! The informers' side: a watch list filling a store, the Foo's type and
//! CRD, and the Events a recorder writes.

use super::*;

// Cheat sheet: `kubeinformers.NewSharedInformerFactory(client, 30*time.Second)`
// Cheat sheet: `factory.Start(ctx.Done())`
// Cheat sheet: `informer.Lister()`
// Cheat sheet: `informer.Informer().HasSynced`
// Cheat sheet: `cache.WaitForCacheSync(stop, synced...)`
// Cheat sheet: `c.foosLister.Foos(ns).Get(name)`
// Cheat sheet: `shared informer factory`
#[tokio::test]
async fn a_watch_list_per_type_fills_a_store_that_is_ready_once_listed() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-informer").await;
    stored_foo(client, &ns, "a").await;
    let (foos, foo_writer) = reflector::store::<Foo>();
    let (deployments, deployment_writer) = reflector::store::<Deployment>();
    // Nothing is listed before the streams run: not synced.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), foos.wait_until_ready())
            .await
            .is_err()
    );
    let foo_stream = watch_list(Api::<Foo>::namespaced(client.clone(), &ns))
        .default_backoff()
        .reflect(foo_writer)
        .for_each(|_| std::future::ready(()));
    let deployment_stream = watch_list(Api::<Deployment>::namespaced(client.clone(), &ns))
        .default_backoff()
        .reflect(deployment_writer)
        .for_each(|_| std::future::ready(()));
    let foo_task = tokio::spawn(foo_stream);
    let deployment_task = tokio::spawn(deployment_stream);
    tokio::time::timeout(
        Duration::from_secs(10),
        futures::future::try_join(foos.wait_until_ready(), deployments.wait_until_ready()),
    )
    .await
    .expect("both caches sync")
    .unwrap();
    let a = foos
        .get(&ObjectRef::new("a").within(&ns))
        .expect("a cached");
    assert_eq!(a.spec.deployment_name, "a-nginx");
    assert!(foos.get(&ObjectRef::new("a").within("elsewhere")).is_none());
    assert!(deployments.is_empty());
    // A Foo created later shows up: the watch keeps the cache current.
    stored_foo(client, &ns, "b").await;
    support::eventually("b in the cache", || {
        let found = foos.get(&ObjectRef::new("b").within(&ns));
        async move { found }
    })
    .await;
    foo_task.abort();
    deployment_task.abort();
}

// Cheat sheet: `utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))`
// Cheat sheet: `samplev1alpha1.SchemeGroupVersion.WithKind("Foo")`
// Cheat sheet: `code generators`
#[test]
fn foo_carries_its_group_version_and_kind_and_derives_its_crd() {
    assert_eq!(Foo::group(&()), "samplecontroller.k8s.io");
    assert_eq!(Foo::version(&()), "v1alpha1");
    assert_eq!(Foo::kind(&()), "Foo");
    assert_eq!(Foo::api_version(&()), "samplecontroller.k8s.io/v1alpha1");
    assert_eq!(
        Foo::url_path(&(), Some("ns")),
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos"
    );
    let crd = Foo::crd();
    assert_eq!(crd.spec.names.plural, "foos");
    let version = &crd.spec.versions[0];
    assert!(version.subresources.as_ref().unwrap().status.is_some());
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crd.yaml"))
        .unwrap();
    let written: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(
        serde_json::to_value(&crd).unwrap(),
        written,
        "manifests/crd.yaml is what the derive generates (cargo run --bin crdgen)"
    );
}

// Cheat sheet: `record.NewBroadcaster`
// Cheat sheet: `NewRecorder(scheme, EventSource{Component})`
// Cheat sheet: `c.recorder.Event(foo, corev1.EventTypeWarning, reason, msg)`
#[tokio::test]
async fn a_recorder_writes_events_k8s_io_v1_events_about_the_foo() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-events").await;
    let foo = stored_foo(client, &ns, "a").await;
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "sample-controller".into(),
            instance: Some("test".into()),
        },
    );
    let event = Event {
        type_: EventType::Warning,
        reason: "ErrResourceExists".into(),
        note: Some(vocabulary::message_resource_exists("a-nginx")),
        action: "Sync".into(),
        secondary: None,
    };
    recorder
        .publish(&event, &foo.object_ref(&()))
        .await
        .unwrap();
    let events = Api::<StoredEvent>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(events.len(), 1, "{events:#?}");
    let stored = &events[0];
    assert_eq!(stored.type_.as_deref(), Some("Warning"));
    assert_eq!(stored.reason.as_deref(), Some("ErrResourceExists"));
    assert_eq!(
        stored.reporting_controller.as_deref(),
        Some("sample-controller")
    );
    let regarding = stored.regarding.as_ref().unwrap();
    assert_eq!(
        (regarding.kind.as_deref(), regarding.name.as_deref()),
        (Some("Foo"), Some("a"))
    );
    assert_eq!(regarding.uid, foo.metadata.uid);
}
