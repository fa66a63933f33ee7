//! Test fixtures: a scripted fake API server and ready-made objects.
//!
//! In the style of kube-rs/controller-rs `fixtures.rs`: the client talks to a
//! `tower_test` mock; the test plays the API server, checking each request
//! in order and answering it. A request the script does not expect fails the
//! test, so these pin exactly what the controller sends.

use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use kube::client::Body;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Client, Resource};
use serde_json::Value;

use crate::{Foo, FooSpec};

// ANCHOR: mock_client
/// The API server side of a mock client.
pub struct ApiServer(tower_test::mock::Handle<Request<Body>, Response<Body>>);

/// A request the fake API server received.
#[derive(Debug)]
pub struct Received {
    /// HTTP method.
    pub method: Method,
    /// Path without the query.
    pub path: String,
    /// Query string, if any.
    pub query: String,
    /// The JSON body (`Value::Null` when empty).
    pub body: Value,
}

/// A client wired to a fake API server.
pub fn mock_client() -> (Client, ApiServer) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), ApiServer(handle))
}
// ANCHOR_END: mock_client

impl ApiServer {
    /// Waits (at most 5 s) for the next request, checks its method and path,
    /// answers `status` with `response`, and returns the request.
    pub async fn expect(
        &mut self,
        method: Method,
        path: &str,
        status: u16,
        response: Value,
    ) -> Received {
        let body = serde_json::to_vec(&response).expect("response JSON");
        self.answer(method, path, status, body).await
    }

    /// Like [`ApiServer::expect`], answering with plain text: what a server
    /// (or a proxy in front of it) sends for a path it does not serve.
    pub async fn expect_text(
        &mut self,
        method: Method,
        path: &str,
        status: u16,
        text: &str,
    ) -> Received {
        self.answer(method, path, status, text.as_bytes().to_vec())
            .await
    }

    async fn answer(&mut self, method: Method, path: &str, status: u16, body: Vec<u8>) -> Received {
        let next = tokio::time::timeout(Duration::from_secs(5), self.0.next_request()).await;
        let (request, send) = next
            .unwrap_or_else(|_| panic!("timed out waiting for {method} {path}"))
            .unwrap_or_else(|| panic!("client dropped before {method} {path}"));
        let received = Received {
            method: request.method().clone(),
            path: request.uri().path().to_string(),
            query: request.uri().query().unwrap_or_default().to_string(),
            body: {
                let bytes = request
                    .into_body()
                    .collect_bytes()
                    .await
                    .expect("request body");
                if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).expect("JSON body")
                }
            },
        };
        assert_eq!(
            (&received.method, received.path.as_str()),
            (&method, path),
            "unexpected request: {received:#?}"
        );
        send.send_response(
            Response::builder()
                .status(StatusCode::from_u16(status).expect("status code"))
                .body(Body::from(body))
                .expect("response"),
        );
        received
    }

    /// Answers an Event create, or the patch that counts a repeat into the
    /// Event's series, by echoing it back; returns the request.
    pub async fn expect_event(&mut self) -> Received {
        let next = tokio::time::timeout(Duration::from_secs(5), self.0.next_request()).await;
        let (request, send) = next
            .expect("timed out waiting for an Event")
            .expect("client dropped before an Event");
        let (method, path) = (request.method().clone(), request.uri().path().to_string());
        let bytes = request
            .into_body()
            .collect_bytes()
            .await
            .expect("request body");
        const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
        let create = method == Method::POST && path == EVENTS;
        let repeat = method == Method::PATCH && path.starts_with(&format!("{EVENTS}/"));
        assert!(
            create || repeat,
            "expected an Event, got {method} {path}: {}",
            String::from_utf8_lossy(&bytes)
        );
        send.send_response(
            Response::builder()
                .status(201)
                .body(Body::from(bytes.to_vec()))
                .expect("response"),
        );
        Received {
            method,
            path,
            query: String::new(),
            body: serde_json::from_slice(&bytes).expect("JSON body"),
        }
    }

    /// Asserts that no request arrives within 200 ms.
    pub async fn expect_silence(&mut self) {
        if let Ok(Some((request, _))) =
            tokio::time::timeout(Duration::from_millis(200), self.0.next_request()).await
        {
            panic!("unexpected request {} {}", request.method(), request.uri());
        }
    }
}

/// A Foo in namespace `default` named `name`, owning `<name>-deployment`
/// (Go's `newFoo`), with a UID as the API server would give it.
pub fn foo(name: &str, replicas: Option<i32>) -> Foo {
    let mut foo = Foo::new(
        name,
        FooSpec {
            deployment_name: format!("{name}-deployment"),
            replicas,
        },
    );
    foo.metadata.namespace = Some("default".into());
    foo.metadata.uid = Some(format!("{name}-uid"));
    foo.metadata.resource_version = Some("1".into());
    foo
}

/// `deployment` as the API server returns it: with a UID, a resourceVersion
/// and `available` available replicas.
pub fn stored(mut deployment: Deployment, available: i32) -> Deployment {
    deployment.metadata.uid = Some("deployment-uid".into());
    deployment.metadata.resource_version = Some("2".into());
    deployment.status = Some(DeploymentStatus {
        available_replicas: Some(available),
        ..DeploymentStatus::default()
    });
    deployment
}

// ANCHOR: cache
/// A synced cache holding `objects`.
pub fn cache<K>(objects: impl IntoIterator<Item = K>) -> Store<K>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for obj in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(obj));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}
// ANCHOR_END: cache

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Foo, FooSpec};
    use kube::runtime::reflector::ObjectRef;

    fn foo() -> Foo {
        let mut foo = Foo::new(
            "a",
            FooSpec {
                deployment_name: "a-nginx".into(),
                replicas: Some(1),
            },
        );
        foo.metadata.namespace = Some("ns".into());
        foo
    }

    // Cheat sheet: `Informer().GetIndexer().Add(obj)`
    #[tokio::test]
    async fn a_store_shows_a_list_only_at_init_done_so_init_apply_alone_leaves_it_empty() {
        let key = ObjectRef::<Foo>::new("a").within("ns");
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::InitApply(foo()));
        assert!(store.get(&key).is_none());
        assert!(
            tokio::time::timeout(
                std::time::Duration::from_millis(50),
                store.wait_until_ready()
            )
            .await
            .is_err(),
            "ready without InitDone"
        );
        let store = cache([foo()]);
        assert!(store.get(&key).is_some());
        store.wait_until_ready().await.unwrap();
    }
}
