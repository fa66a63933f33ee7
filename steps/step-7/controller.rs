//! Step 7's `Controller`: Go's controller.go as one program.
//!
//! Go: [controller.go](https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go),
//! the `Controller` struct, `NewController`, `Run`, `syncHandler` and
//! `updateFooStatus`. [`Controller`] is step 6's sync with Events and a
//! tracing span per sync, behaving as Go does request for request (create,
//! then a full replace of the Deployment, a PUT of the status on every sync,
//! Go's 30 s resync). Its names, errors and Events are
//! [`sample_controller::vocabulary`]'s. Step 8 (`steps/step-8/src/reconciler.rs`) is the same
//! controller the kube-rs way.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::PostParams;
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use tracing::Instrument;

use sample_controller::deployment::new_deployment;
use sample_controller::handlers::Informers;
use sample_controller::informer::key_string;
use sample_controller::signals::Shutdown;
use sample_controller::vocabulary::{
    Error, FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED, ensure_controlled, publish,
    recorder,
};
use sample_controller::workqueue;
use sample_controller::{Foo, FooStatus};

// ANCHOR: controller
/// The sample controller. Go: the `Controller` struct.
pub struct Controller {
    client: Client,
    foos: Store<Foo>,
    deployments: Store<Deployment>,
    recorder: Recorder,
}

impl Controller {
    /// A controller reading the given caches and writing through `client`.
    /// Go: `NewController` (the handlers are registered by
    /// [`sample_controller::handlers::start_informers`]).
    pub fn new(client: Client, foos: Store<Foo>, deployments: Store<Deployment>) -> Self {
        Self {
            recorder: recorder(client.clone()),
            client,
            foos,
            deployments,
        }
    }

    /// Waits for the caches, then runs `workers` workers until `shutdown`,
    /// and lets the syncs in flight finish. Go: `Run`.
    ///
    /// Go's `Run` returns when the context is cancelled without waiting for
    /// running syncs; here a sync that has started always completes.
    pub async fn run(
        self,
        informers: Informers,
        shutdown: Shutdown,
        workers: u16,
    ) -> anyhow::Result<()> {
        tracing::info!("Waiting for informer caches to sync");
        tokio::select! {
            synced = informers.wait_for_cache_sync() => synced?,
            () = shutdown.clone() => return Ok(()),
        }
        tracing::info!(workers, "Starting workers");
        let controller = Arc::new(self);
        let foos = controller.foos.clone();
        workqueue::run_until(foos, informers.queue, shutdown, workers, |foo| {
            let controller = controller.clone();
            // Go: klog.LoggerWithValues(logger, "objectRef", objectRef)
            let span = tracing::info_span!("sync", objectRef = %key_string(&ObjectRef::from(foo.as_ref())));
            async move { controller.sync_handler(&foo).await }.instrument(span)
        })
        .await;
        tracing::info!("Shutting down workers");
        Ok(())
    }
    // ANCHOR_END: controller

    // ANCHOR: sync_handler
    /// Converges the Foo's Deployment, reports its status and records an
    /// Event. Go: `syncHandler`. (The Foo-not-found branch is in
    /// [`workqueue::run`]: a key whose Foo left the cache never gets here.)
    pub async fn sync_handler(&self, foo: &Foo) -> Result<(), Error> {
        let namespace = foo.namespace().unwrap_or_default();
        let deployment_name = &foo.spec.deployment_name;
        if deployment_name.is_empty() {
            // Retrying cannot help; the next update of the Foo queues it again.
            tracing::error!("Deployment name missing from object reference");
            return Ok(());
        }

        let api: Api<Deployment> = Api::namespaced(self.client.clone(), &namespace);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PostParams::default()
        };
        let deployment = match self
            .deployments
            .get(&ObjectRef::new(deployment_name).within(&namespace))
        {
            Some(cached) => cached,
            None => {
                tracing::info!(deployment = %deployment_name, "Creating deployment");
                Arc::new(api.create(&params, &new_deployment(foo)).await?)
            }
        };

        // Go: if !metav1.IsControlledBy(deployment, foo) { ... }
        ensure_controlled(&self.recorder, &deployment, foo).await?;

        let current = deployment.spec.replicas;
        let deployment = match foo.spec.replicas.filter(|d| Some(*d) != current) {
            Some(desired) => {
                tracing::info!(currentReplicas = ?current, desiredReplicas = desired, "Update deployment resource");
                // Go's Update: the whole object, without a resourceVersion, so
                // the API server replaces it unconditionally, dropping what
                // anyone else added (labels, annotations, a changed image).
                Arc::new(
                    api.replace(deployment_name, &params, &new_deployment(foo))
                        .await?,
                )
            }
            None => deployment,
        };

        self.update_foo_status(foo, &deployment).await?;
        publish(
            &self.recorder,
            foo,
            EventType::Normal,
            SUCCESS_SYNCED,
            MESSAGE_RESOURCE_SYNCED,
        )
        .await;
        Ok(())
    }
    // ANCHOR_END: sync_handler

    // ANCHOR: update_foo_status
    /// Writes the Deployment's available replicas into the Foo's status, on
    /// every sync, as Go does (with the 30 s resync: every Foo, every 30 s).
    /// Go: `updateFooStatus`.
    ///
    /// A PUT to `/status` of a changed copy of the cached Foo: it carries the
    /// cached resourceVersion, so a stale cache gets 409 Conflict and the key
    /// is retried, as in Go.
    async fn update_foo_status(&self, foo: &Foo, deployment: &Deployment) -> Result<(), Error> {
        let mut copy = foo.clone(); // Go: foo.DeepCopy()
        copy.status = Some(FooStatus {
            available_replicas: deployment
                .status
                .as_ref()
                .and_then(|s| s.available_replicas)
                .unwrap_or(0),
        });
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PostParams::default()
        };
        let api: Api<Foo> =
            Api::namespaced(self.client.clone(), &foo.namespace().unwrap_or_default());
        api.replace_status(&foo.name_any(), &params, &copy).await?;
        Ok(())
    }
    // ANCHOR_END: update_foo_status
}

/// Go's controller_test.go cases, plus the branches it does not cover, as
/// exact request sequences against a scripted API server.
#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;
    use sample_controller::fixtures::{cache, foo, mock_client, stored};
    use serde_json::json;

    const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
    const FOO_STATUS: &str =
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos/test/status";

    fn controller(client: Client, foos: Vec<Foo>, deployments: Vec<Deployment>) -> Controller {
        Controller::new(client, cache(foos), cache(deployments))
    }

    /// What Go's `UpdateStatus` sends: the whole cached Foo with the new status.
    fn status_update(foo: &Foo, available: i32) -> serde_json::Value {
        let mut copy = foo.clone();
        copy.status = Some(FooStatus {
            available_replicas: available,
        });
        serde_json::to_value(copy).unwrap()
    }

    // ANCHOR: test_creates_deployment
    #[tokio::test]
    async fn creates_a_deployment_for_a_new_foo_and_writes_its_status() {
        // Go: TestCreatesDeployment
        let foo = foo("test", Some(1));
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![]);
        let expected = serde_json::to_value(new_deployment(&foo)).unwrap();
        let created = serde_json::to_value(stored(new_deployment(&foo), 0)).unwrap();
        let reply = serde_json::to_value(&foo).unwrap();
        let want_status = status_update(&foo, 0);
        let api = tokio::spawn(async move {
            let create = server.expect(Method::POST, DEPLOYMENTS, 201, created).await;
            assert_eq!(create.body, expected);
            assert_eq!(create.query, "&fieldManager=sample-controller");
            let status = server.expect(Method::PUT, FOO_STATUS, 200, reply).await;
            assert_eq!(status.body, want_status);
            assert_eq!(status.query, "&fieldManager=sample-controller");
            let event = server.expect_event().await;
            assert_eq!(event.body["reason"], "Synced");
            assert_eq!(event.body["type"], "Normal");
            assert_eq!(event.body["note"], "Foo synced successfully");
            assert_eq!(event.body["regarding"]["name"], "test");
            server.expect_silence().await;
        });
        c.sync_handler(&foo).await.unwrap();
        drop(c);
        api.await.unwrap();
    }
    // ANCHOR_END: test_creates_deployment

    #[tokio::test]
    async fn does_nothing_but_write_status_when_the_deployment_matches() {
        // Go: TestDoNothing
        let foo = foo("test", Some(1));
        let deployment = stored(new_deployment(&foo), 1);
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![deployment]);
        let reply = serde_json::to_value(&foo).unwrap();
        let want_status = status_update(&foo, 1);
        let api = tokio::spawn(async move {
            let status = server.expect(Method::PUT, FOO_STATUS, 200, reply).await;
            assert_eq!(status.body, want_status);
            assert_eq!(server.expect_event().await.body["reason"], "Synced");
            server.expect_silence().await;
        });
        c.sync_handler(&foo).await.unwrap();
        drop(c);
        api.await.unwrap();
    }

    #[tokio::test]
    async fn writes_the_status_even_when_it_is_already_current() {
        // As Go: updateFooStatus always sends UpdateStatus.
        let mut foo = foo("test", Some(1));
        foo.status = Some(FooStatus {
            available_replicas: 1,
        });
        let deployment = stored(new_deployment(&foo), 1);
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![deployment]);
        let reply = serde_json::to_value(&foo).unwrap();
        let want_status = status_update(&foo, 1);
        let api = tokio::spawn(async move {
            let status = server.expect(Method::PUT, FOO_STATUS, 200, reply).await;
            assert_eq!(status.body, want_status);
            assert_eq!(server.expect_event().await.body["reason"], "Synced");
            server.expect_silence().await;
        });
        c.sync_handler(&foo).await.unwrap();
        drop(c);
        api.await.unwrap();
    }

    #[tokio::test]
    async fn updates_the_deployment_when_the_replicas_differ() {
        // Go: TestUpdateDeployment
        let foo = foo("test", Some(2));
        let mut old = foo.clone();
        old.spec.replicas = Some(1);
        let deployment = stored(new_deployment(&old), 1);
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![deployment]);
        let expected = serde_json::to_value(new_deployment(&foo)).unwrap();
        let updated = serde_json::to_value(stored(new_deployment(&foo), 1)).unwrap();
        let reply = serde_json::to_value(&foo).unwrap();
        let want_status = status_update(&foo, 1);
        let api = tokio::spawn(async move {
            // Go's Update: a PUT of newDeployment(foo), without a resourceVersion.
            let update = server
                .expect(
                    Method::PUT,
                    &format!("{DEPLOYMENTS}/test-deployment"),
                    200,
                    updated,
                )
                .await;
            assert_eq!(update.body, expected);
            assert_eq!(update.query, "&fieldManager=sample-controller");
            assert_eq!(
                server
                    .expect(Method::PUT, FOO_STATUS, 200, reply)
                    .await
                    .body,
                want_status
            );
            assert_eq!(server.expect_event().await.body["reason"], "Synced");
            server.expect_silence().await;
        });
        c.sync_handler(&foo).await.unwrap();
        drop(c);
        api.await.unwrap();
    }

    // ANCHOR: test_not_controlled
    #[tokio::test]
    async fn refuses_a_deployment_it_does_not_control_and_writes_nothing() {
        // Go: TestNotControlledByUs. The only request is the Warning Event.
        let foo = foo("test", Some(1));
        let mut foreign = stored(new_deployment(&foo), 1);
        foreign.metadata.owner_references = Some(vec![]);
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![foreign]);
        let api = tokio::spawn(async move {
            let event = server.expect_event().await;
            assert_eq!(event.body["type"], "Warning");
            assert_eq!(event.body["reason"], "ErrResourceExists");
            assert_eq!(
                event.body["note"],
                r#"Resource "test-deployment" already exists and is not managed by Foo"#
            );
            server.expect_silence().await;
        });
        let err = c.sync_handler(&foo).await.unwrap_err();
        assert!(matches!(&err, Error::ResourceExists(name) if name == "test-deployment"));
        assert_eq!(
            err.to_string(),
            r#"Resource "test-deployment" already exists and is not managed by Foo"#
        );
        drop(c);
        api.await.unwrap();
    }
    // ANCHOR_END: test_not_controlled

    #[tokio::test]
    async fn an_empty_deployment_name_is_logged_and_not_retried() {
        let mut foo = foo("test", Some(1));
        foo.spec.deployment_name.clear();
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![]);
        let api = tokio::spawn(async move { server.expect_silence().await });
        c.sync_handler(&foo).await.unwrap();
        drop(c);
        api.await.unwrap();
    }

    #[tokio::test]
    async fn an_api_error_is_returned_without_status_write_or_event() {
        let foo = foo("test", Some(1));
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![]);
        let api = tokio::spawn(async move {
            server
                .expect(Method::POST, DEPLOYMENTS, 500, internal_error())
                .await;
            server.expect_silence().await;
        });
        let err = c.sync_handler(&foo).await.unwrap_err();
        assert!(
            matches!(err, Error::Kube(kube::Error::Api(ref s)) if s.code == 500),
            "{err:?}"
        );
        drop(c);
        api.await.unwrap();
    }

    fn internal_error() -> serde_json::Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "etcd is having a bad day", "reason": "InternalError", "code": 500})
    }

    #[tokio::test]
    async fn the_workers_retry_an_api_error_with_backoff_and_then_forget_the_key() {
        let foo = foo("test", Some(1));
        let created = serde_json::to_value(stored(new_deployment(&foo), 0)).unwrap();
        let reply = serde_json::to_value(&foo).unwrap();
        let (client, mut server) = mock_client();
        let c = controller(client, vec![foo.clone()], vec![]);
        let limiter = Arc::new(workqueue::RateLimiter::sample_controller());
        let key = ObjectRef::from(&foo);
        let (queue_tx, queue) = futures::channel::mpsc::unbounded();
        queue_tx.unbounded_send(key.clone()).unwrap();
        let api = tokio::spawn(async move {
            server
                .expect(Method::POST, DEPLOYMENTS, 500, internal_error())
                .await;
            server.expect(Method::POST, DEPLOYMENTS, 201, created).await;
            server.expect(Method::PUT, FOO_STATUS, 200, reply).await;
            server.expect_event().await;
            server.expect_silence().await;
            drop(queue_tx); // ends the queue: the workers stop
        });
        let c = Arc::new(c);
        let foos = c.foos.clone();
        workqueue::run(foos, queue, 2, limiter.clone(), |foo| {
            let c = c.clone();
            async move { c.sync_handler(&foo).await }
        })
        .await;
        api.await.unwrap();
        assert_eq!(
            limiter.num_requeues(&key),
            0,
            "a success forgets the failures"
        );
    }

    #[tokio::test]
    async fn a_key_whose_foo_is_gone_is_dropped_without_any_request() {
        // Go: syncHandler's "Foo ... no longer exists" branch.
        let (client, mut server) = mock_client();
        let c = Arc::new(controller(client, vec![], vec![]));
        let limiter = Arc::new(workqueue::RateLimiter::sample_controller());
        let gone = ObjectRef::from(&foo("gone", Some(1)));
        let queue = futures::stream::iter([gone.clone()]);
        let api = tokio::spawn(async move { server.expect_silence().await });
        let syncs = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counter = syncs.clone();
        workqueue::run(c.foos.clone(), queue, 2, limiter.clone(), move |foo| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let c = c.clone();
            async move { c.sync_handler(&foo).await }
        })
        .await;
        api.await.unwrap();
        assert_eq!(syncs.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(limiter.num_requeues(&gone), 0);
    }
}
