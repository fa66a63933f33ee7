//! What the API server says to writes: its errors, field managers and
//! apply, the status subresource, keys and owner references, and the
//! client's requests as a mock service sees them.

use super::*;

// Cheat sheet: `errors.IsNotFound(err)`
// Cheat sheet: `errors.IsConflict(err)`
#[tokio::test]
async fn the_api_servers_errors_say_not_found_and_conflict() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-errors").await;
    let foos = Api::<Foo>::namespaced(client.clone(), &ns);
    match foos.get("missing").await {
        Err(kube::Error::Api(status)) => assert!(status.is_not_found(), "{status:?}"),
        other => panic!("expected 404, got {other:?}"),
    }
    assert!(foos.get_opt("missing").await.unwrap().is_none());
    let stale = stored_foo(client, &ns, "a").await;
    let mut newer = stale.clone();
    newer.spec.replicas = Some(2);
    foos.replace("a", &PostParams::default(), &newer)
        .await
        .unwrap();
    // The first copy's resourceVersion is stale now.
    match foos.replace("a", &PostParams::default(), &stale).await {
        Err(kube::Error::Api(status)) => assert!(status.is_conflict(), "{status:?}"),
        other => panic!("expected 409, got {other:?}"),
    }
}

/// The managers of `object`'s fields: (manager, operation, subresource).
fn managers(object: &impl Resource) -> BTreeSet<(String, String, String)> {
    object
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
                m.subresource.clone().unwrap_or_default(),
            )
        })
        .collect()
}

// Cheat sheet: `c.kubeclientset.AppsV1().Deployments(ns).Create(ctx, d, CreateOptions{FieldManager})`
// Cheat sheet: `Deployments(ns).Update(ctx, d, UpdateOptions{FieldManager})`
#[tokio::test]
async fn writes_carry_their_field_manager_and_an_apply_keeps_others_fields() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-writes").await;
    let foo = stored_foo(client, &ns, "a").await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns);
    let params = PostParams {
        field_manager: Some("sample-controller".into()),
        ..PostParams::default()
    };
    let created = deployments
        .create(&params, &new_deployment(&foo))
        .await
        .unwrap();
    assert!(managers(&created).contains(&(
        "sample-controller".into(),
        "Update".into(),
        String::new()
    )));
    // replace: the whole object, as Go's Update.
    let mut scaled = created.clone();
    scaled.spec.replicas = Some(3);
    let replaced = deployments
        .replace("a-nginx", &params, &scaled)
        .await
        .unwrap();
    assert_eq!(replaced.spec.replicas, Some(3));
    // Someone else labels it; an apply of ours leaves the label alone.
    let label = PatchParams {
        field_manager: Some("kubectl-label".into()),
        ..PatchParams::default()
    };
    deployments
        .patch(
            "a-nginx",
            &label,
            &Patch::Merge(json!({"metadata": {"labels": {"team": "blue"}}})),
        )
        .await
        .unwrap();
    let mut ours = new_deployment(&foo);
    ours.spec.replicas = Some(2);
    let applied = deployments
        .patch(
            "a-nginx",
            &PatchParams::apply("sample-controller").force(),
            &Patch::Apply(&ours),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.replicas, Some(2));
    assert_eq!(
        applied.labels().get("team").map(String::as_str),
        Some("blue")
    );
    assert!(managers(&applied).contains(&(
        "sample-controller".into(),
        "Apply".into(),
        String::new()
    )));
}

// Cheat sheet: `foo.DeepCopy()`
// Cheat sheet: `Foos(ns).UpdateStatus(ctx, foo, UpdateOptions{FieldManager})`
#[tokio::test]
async fn a_status_write_goes_through_the_status_subresource_and_leaves_the_spec() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-status").await;
    let foo = stored_foo(client, &ns, "a").await;
    let foos = Api::<Foo>::namespaced(client.clone(), &ns);
    // A copy to change; the cached original stays as it was.
    let mut copy = foo.clone();
    copy.status = Some(sample_controller::FooStatus {
        available_replicas: 1,
    });
    copy.spec.replicas = Some(5);
    assert!(foo.status.is_none());
    let params = PostParams {
        field_manager: Some("sample-controller".into()),
        ..PostParams::default()
    };
    let written = foos.replace_status("a", &params, &copy).await.unwrap();
    assert_eq!(written.status.map(|s| s.available_replicas), Some(1));
    assert_eq!(
        written.spec.replicas,
        Some(1),
        "the status write ignores spec"
    );
    let applied = foos
        .patch_status(
            "a",
            &PatchParams::apply("sample-controller").force(),
            &Patch::Apply(json!({
                "apiVersion": Foo::api_version(&()),
                "kind": Foo::kind(&()),
                "status": {"availableReplicas": 0},
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        applied.status.as_ref().map(|s| s.available_replicas),
        Some(0)
    );
    assert!(managers(&applied).contains(&(
        "sample-controller".into(),
        "Apply".into(),
        "status".into()
    )));
}

// Cheat sheet: `cache.ObjectToName(obj)`
// Cheat sheet: `klog.KObj(obj)`
// Cheat sheet: `metav1.GetControllerOf(obj)`
// Cheat sheet: `metav1.IsControlledBy(d, foo)`
// Cheat sheet: `metav1.NewControllerRef(foo, gvk)`
#[test]
fn keys_names_and_owner_references_read_as_go_reads_them() {
    let a = foo("a");
    let key = ObjectRef::from(&a);
    assert_eq!(
        (key.name.as_str(), key.namespace.as_deref()),
        ("a", Some("default"))
    );
    // klog prints namespace/name; kube's ObjectRef displays otherwise.
    assert_eq!(object_name(&a), "default/a");
    assert_eq!(key_string(&key), "default/a");
    assert_eq!(
        key.to_string(),
        "Foo.v1alpha1.samplecontroller.k8s.io/a.default"
    );
    // kube's controller_owner_ref: no blockOwnerDeletion, and none without a UID.
    let kube_ref = a.controller_owner_ref(&()).unwrap();
    assert_eq!(
        (kube_ref.controller, kube_ref.block_owner_deletion),
        (Some(true), None)
    );
    let mut no_uid = a.clone();
    no_uid.metadata.uid = None;
    assert!(no_uid.controller_owner_ref(&()).is_none());
    let go_ref = new_controller_ref(&a);
    assert_eq!(
        (go_ref.controller, go_ref.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(
        (go_ref.kind.as_str(), go_ref.uid.as_str()),
        ("Foo", "a-uid")
    );
    // Several owners, a non-controller first: the controller is the one marked.
    let mut deployment = new_deployment(&a);
    let mut other = new_controller_ref(&foo("b"));
    other.controller = None;
    deployment.metadata.owner_references = Some(vec![other, new_controller_ref(&a)]);
    assert_eq!(controller_of(&deployment).unwrap().name, "a");
    assert!(is_controlled_by(&deployment, &a));
    // The same name with another UID is another Foo.
    let mut recreated = a.clone();
    recreated.metadata.uid = Some("new-uid".into());
    assert!(!is_controlled_by(&deployment, &recreated));
}

// Cheat sheet: `fake.NewClientset(objects...)`
// Cheat sheet: `client.Actions()`
// Cheat sheet: `record.FakeRecorder{}`
// Cheat sheet: `ktesting.NewTestContext(t)`
// Cheat sheet: `fake clientset`
#[tokio::test]
async fn a_mock_service_sees_each_request_the_client_and_the_recorder_send() {
    use http::{Request, Response};
    use kube::client::Body;
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let get = tokio::spawn({
        let foos = Api::<Foo>::namespaced(client.clone(), "default");
        async move { foos.get("a").await }
    });
    let (request, respond) = handle.next_request().await.unwrap();
    assert_eq!(request.method(), http::Method::GET);
    assert_eq!(
        request.uri().path(),
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos/a"
    );
    let body = serde_json::to_vec(&foo("a")).unwrap();
    respond.send_response(Response::new(Body::from(body)));
    assert_eq!(get.await.unwrap().unwrap().name_any(), "a");
    // An Event is a POST the mock sees, like FakeRecorder's channel.
    let publish = tokio::spawn({
        let recorder = Recorder::new(client, "sample-controller".into());
        let reference = foo("a").object_ref(&());
        async move {
            let event = Event {
                type_: EventType::Normal,
                reason: "Synced".into(),
                note: None,
                action: "Sync".into(),
                secondary: None,
            };
            recorder.publish(&event, &reference).await
        }
    });
    let (request, respond) = handle.next_request().await.unwrap();
    assert_eq!(
        (request.method(), request.uri().path()),
        (
            &http::Method::POST,
            "/apis/events.k8s.io/v1/namespaces/default/events"
        )
    );
    let sent = request.into_body().collect_bytes().await.unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&sent).unwrap();
    assert_eq!(sent["reason"], "Synced");
    respond.send_response(Response::new(Body::from(sent.to_string().into_bytes())));
    publish.await.unwrap().unwrap();
}

// Cheat sheet: `client-side QPS limit`
#[tokio::test(start_paused = true)]
async fn a_tower_rate_limit_layer_spaces_the_clients_requests() {
    use http::{Request, Response};
    use kube::client::Body;
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    // Two requests per second, as a QPS of 2 would allow.
    let limited = tower::ServiceBuilder::new()
        .rate_limit(2, Duration::from_secs(1))
        .service(service);
    let client = Client::new(limited, "default");
    let start = tokio::time::Instant::now();
    for name in ["a", "b", "c"] {
        let foos = Api::<Foo>::namespaced(client.clone(), "default");
        tokio::spawn(async move { foos.get(name).await });
    }
    let mut arrived = Vec::new();
    for _ in 0..3 {
        let (_, respond) = handle.next_request().await.unwrap();
        arrived.push(start.elapsed());
        let body = serde_json::to_vec(&foo("x")).unwrap();
        respond.send_response(Response::new(Body::from(body)));
    }
    assert!(arrived[1] < Duration::from_secs(1), "{arrived:?}");
    assert!(arrived[2] >= Duration::from_secs(1), "{arrived:?}");
}
