//! Step 8: the sample controller written the way kube-rs is meant to be used.
//!
//! The same job as step 7 (`steps/step-7/controller.rs`, Go's controller.go line by
//! line): one nginx Deployment per Foo, its replicas, the Foo's status, the
//! same Events. What changes is how: kube-runtime's `Controller` replaces the
//! informers, handlers and work queue; `reconcile` and `error_policy` replace
//! `syncHandler` and `processNextWorkItem`; and each idiom below that saves
//! work is marked "Idiom:" with what it changes against Go.
//!
//! Kept from Go on purpose: the per-key exponential backoff of retries
//! (`src/workqueue.rs`), which kube-runtime does not have
//! (<https://github.com/kube-rs/kube/issues/1916>).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, future};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use crate::caches::{Synced, drop_managed_fields, relevant_changes, settled, strip_deployment};
use crate::error::Error;
use crate::probes::Probes;
use sample_controller::deployment::new_deployment;
use sample_controller::informer::{key_string, watch_list};
use sample_controller::signals::Shutdown;
use sample_controller::vocabulary::{
    FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED, ensure_controlled, publish, recorder,
};
use sample_controller::workqueue::RateLimiter;
use sample_controller::{Foo, FooStatus};

// ANCHOR: context
/// What every reconcile shares. Go: the fields of the `Controller` struct.
pub struct Context {
    /// Writes go through this client.
    pub client: Client,
    /// The Deployment cache (Go: `deploymentsLister`). The Foo cache is the
    /// `Controller`'s own: `reconcile` is handed the Foo.
    pub deployments: Store<Deployment>,
    /// Whether the Deployment cache holds its first full list.
    pub deployments_synced: Synced,
    /// Records `Synced` and `ErrResourceExists` Events.
    pub recorder: Recorder,
    /// Go's retry rate limiter: per-key backoff, reset by a success.
    pub backoff: RateLimiter<ObjectRef<Foo>>,
    /// Readiness and metrics, served by `steps/step-8/src/server.rs`.
    pub probes: Arc<Probes>,
}

impl Context {
    /// A context writing through `client` and reading `deployments`, once
    /// `deployments_synced` says the cache is filled.
    pub fn new(
        client: Client,
        deployments: Store<Deployment>,
        deployments_synced: Synced,
        probes: Arc<Probes>,
    ) -> Self {
        Self {
            recorder: recorder(client.clone()),
            client,
            deployments,
            deployments_synced,
            backoff: RateLimiter::sample_controller(),
            probes,
        }
    }
}
// ANCHOR_END: context

// ANCHOR: run
/// Watches Foos and the Deployments they own and reconciles each Foo that
/// changed with `workers` reconciles at most at a time, until `shutdown`
/// (then the reconciles in flight finish). Go: `NewController`, the
/// informer factories, `Run`.
pub async fn run(
    client: Client,
    foos: Api<Foo>,
    deployments: Api<Deployment>,
    shutdown: Shutdown,
    workers: u16,
    probes: Arc<Probes>,
) -> anyhow::Result<()> {
    // Both watches start as client-go's do against a 1.37 API server: one
    // WATCH that streams the existing objects (`streaming_lists()`), so the
    // API server never builds one large list response; LIST then WATCH where
    // it cannot (src/informer.rs).

    // The Foo cache, and a trigger per Foo change. Idiom: `modify` drops
    // managedFields before an object is cached (nothing here reads them; they
    // are often the larger part of a small object). Go keeps them.
    let (foo_cache, foo_writer) = reflector::store();
    let (foos_filled, foos_synced) = Synced::new();
    let foo_events = watch_list(foos)
        .default_backoff()
        .modify(drop_managed_fields)
        .reflect(foo_writer);
    let foo_triggers = settled(foo_events, "foos", foos_filled).applied_objects();

    // The Deployment cache, and a trigger per relevant Deployment change.
    // Idiom: the cache keeps only what `sync` and the predicate read
    // ([`strip_deployment`]). Go caches the whole object.
    let (deployment_cache, deployment_writer) = reflector::store();
    let (deployments_filled, deployments_synced) = Synced::new();
    let deployment_events = watch_list(deployments)
        .default_backoff()
        .modify(strip_deployment)
        .reflect(deployment_writer);
    let deployment_triggers = relevant_changes(settled(
        deployment_events,
        "deployments",
        deployments_filled,
    ));

    let ctx = Arc::new(Context::new(
        client,
        deployment_cache,
        deployments_synced.clone().or_stop_on(shutdown.clone()),
        probes,
    ));
    tokio::spawn(report_ready(
        foos_synced.clone(),
        deployments_synced,
        ctx.probes.clone(),
        workers,
    ));

    tracing::info!("Waiting for informer caches to sync");
    // Idiom: `owns` instead of Go's `handleObject`: a Deployment change
    // triggers every Foo in its ownerReferences (Go: only the one marked
    // controller), and a Foo no longer in the cache is simply not reconciled.
    let controller = Controller::for_stream(foo_triggers, foo_cache)
        .owns_stream(deployment_triggers)
        .with_config(controller::Config::default().concurrency(workers))
        .graceful_shutdown_on(shutdown.clone())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            log_result(result);
            future::ready(())
        });
    // kube's Controller stops polling the watches once a shutdown begins, and
    // its runner waits for the Foo cache: stopped before that cache filled,
    // it would wait forever. Nothing can be reconciling then; stop at once.
    let stopped_before_sync = async {
        shutdown.await;
        if foos_synced.is_set() {
            future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = controller => {}
        () = stopped_before_sync => {}
    }
    tracing::info!("Shutting down workers");
    Ok(())
}
// ANCHOR_END: run

// ANCHOR: reconcile
/// Makes the Foo's Deployment and status what the Foo asks for. Go:
/// `syncHandler`; kube-runtime wraps each call in a `reconciling object` span.
///
/// Success forgets the key's failures (Go: `Forget`) and waits for the next
/// change: no periodic requeue, because every input is watched (Go's 30 s
/// resync has no job here).
pub async fn reconcile(foo: Arc<Foo>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = sync(&foo, &ctx).await;
    ctx.probes
        .metrics
        .reconciled(started.elapsed(), result.as_ref().err().map(Error::kind));
    result?;
    ctx.backoff.forget(&ObjectRef::from(foo.as_ref()));
    Ok(Action::await_change())
}

/// Retries a failed reconcile after Go's delay for this key (5 ms · 2^n up
/// to 1000 s, at most 50 retries a second overall). Go: `AddRateLimited`.
///
/// One exception: when the API server did not answer (unreachable, or 5xx
/// or 429 while it starts or sheds load), the failure says nothing about the
/// Foo, so it does not grow the key's backoff; the retry comes after
/// [`UNAVAILABLE_RETRY`] (and the overall bucket). Go needs no exception: its
/// 30 s resync re-adds every key, cutting short a backoff that an outage
/// made long; step 8 has no resync, and after an 8 s outage a key that kept
/// failing could otherwise wait minutes.
pub fn error_policy(foo: Arc<Foo>, err: &Error, ctx: Arc<Context>) -> Action {
    Action::requeue(retry_delay(&foo, err, &ctx))
}

/// How long [`error_policy`] waits to retry `foo` after `err`, logged with
/// the error.
pub fn retry_delay(foo: &Foo, err: &Error, ctx: &Context) -> Duration {
    let key = ObjectRef::from(foo);
    let delay = if server_unavailable(err) {
        // Not in Go: the key's backoff stays as it is; only the overall
        // bucket can make the wait longer.
        UNAVAILABLE_RETRY.max(ctx.backoff.overall().reserve_at(Instant::now()))
    } else {
        ctx.backoff.when(&key)
    };
    tracing::error!(
        objectRef = %key_string(&key),
        error = %err,
        retry_in = ?delay,
        "Error syncing; requeuing for later retry"
    );
    delay
}

/// How long a reconcile waits to retry when the API server did not answer.
pub const UNAVAILABLE_RETRY: Duration = Duration::from_secs(1);

/// Whether `err` means the API server was not there to answer, rather than
/// that it refused this request.
fn server_unavailable(err: &Error) -> bool {
    match err.kube() {
        Some(kube::Error::Api(status)) => status.code >= 500 || status.code == 429,
        Some(kube::Error::HyperError(_) | kube::Error::Service(_)) => true,
        _ => false,
    }
}
// ANCHOR_END: reconcile

// ANCHOR: sync
/// Step 7's sync, with each write made only when it changes something.
async fn sync(foo: &Foo, ctx: &Context) -> Result<(), Error> {
    let namespace = foo.namespace().unwrap_or_default();
    let name = &foo.spec.deployment_name;
    if name.is_empty() {
        // Retrying cannot help; the next change of the Foo triggers it again.
        tracing::error!("Deployment name missing from object reference");
        return Ok(());
    }
    // kube's Controller waits for the Foo cache only; Go waits for both.
    ctx.deployments_synced.wait().await?;

    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let desired = new_deployment(foo);
    let mut changed = false;
    let mut confirmed = None;
    let (foo, deployment) = match ctx
        .deployments
        .get(&ObjectRef::new(name).within(&namespace))
    {
        Some(cached) => (foo, cached),
        None => {
            // The cached Foo may be one the API server deleted meanwhile:
            // the Foo watch can lag behind the Deployment watch (while it
            // lists again, say), and the garbage collector deletes a deleted
            // Foo's Deployment at once. A Deployment created for it would be
            // garbage-collected, which triggers this Foo again, and so on
            // until the Foo cache catches up. The status write, first,
            // proves the Foo exists. Go has no such check.
            let foo = match report_none_available(ctx, foo).await? {
                Some(stored) => &*confirmed.insert(stored),
                None => {
                    tracing::info!("Foo no longer exists; its Deployment is not created");
                    return Ok(());
                }
            };
            // A create, not an apply: an apply would merge into a Deployment
            // of that name that our cache has not seen yet, even one we do
            // not own. A create fails on it with 409 AlreadyExists instead.
            tracing::info!(deployment = %name, "Creating deployment");
            let params = PostParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PostParams::default()
            };
            changed = true;
            (foo, Arc::new(api.create(&params, &desired).await?))
        }
    };

    ensure_controlled(&ctx.recorder, &deployment, foo).await?;

    let deployment = if drifted(&deployment, &desired) {
        // Idiom: server-side apply instead of Go's full replace. It sets the
        // fields this controller owns (replicas, selector, template, owner
        // reference) and leaves everyone else's alone: a label or annotation
        // someone added survives, where Go's Update drops it. `force` takes
        // back a field someone changed (the image, say). The UID makes the
        // apply fail rather than touch a Deployment that replaced ours since
        // the cache saw it.
        tracing::info!(deployment = %name, "Applying deployment");
        let mut patch = desired;
        patch.metadata.uid = deployment.uid();
        let params = PatchParams::apply(FIELD_MANAGER).force();
        changed = true;
        Arc::new(api.patch(name, &params, &Patch::Apply(&patch)).await?)
    } else {
        deployment
    };

    changed |= update_foo_status(ctx, foo, &deployment).await?;
    // Idiom: an Event when this sync changed something, not on every sync
    // (Go records Synced every time: with its resync, every 30 s per Foo).
    if changed {
        publish(
            &ctx.recorder,
            foo,
            EventType::Normal,
            SUCCESS_SYNCED,
            MESSAGE_RESOURCE_SYNCED,
        )
        .await;
    }
    Ok(())
}

/// Applies the status a Foo without a Deployment has, 0 available, before
/// its Deployment is created; returns the Foo as stored, or `None` if the
/// API server no longer has it (a write to the status subresource never
/// creates the object: 404).
///
/// No extra write: the reconcile would write this status after the create
/// anyway (a new Deployment has nothing available yet, and a Foo whose
/// Deployment is gone has nothing available either); it comes first instead.
/// The Foo's UID makes it fail rather than write to another Foo of the same
/// name created since the cache saw this one.
async fn report_none_available(ctx: &Context, foo: &Foo) -> Result<Option<Foo>, Error> {
    let status = serde_json::json!({
        "apiVersion": Foo::api_version(&()),
        "kind": Foo::kind(&()),
        "metadata": {"uid": foo.uid()},
        "status": FooStatus { available_replicas: 0 },
    });
    let api: Api<Foo> = Api::namespaced(ctx.client.clone(), &foo.namespace().unwrap_or_default());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api
        .patch_status(&foo.name_any(), &params, &Patch::Apply(status))
        .await
    {
        Ok(stored) => Ok(Some(stored)),
        Err(kube::Error::Api(status)) if status.code == 404 && names_foo(&status, foo) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Whether a 404 says that this Foo is gone, rather than that the server does
/// not serve Foos at that moment (a plain `404 page not found`, with no
/// details): only the first is a reason to create nothing.
fn names_foo(status: &kube::core::Status, foo: &Foo) -> bool {
    status
        .details
        .as_ref()
        .is_some_and(|details| details.name == foo.name_any() && details.kind == "foos")
}
// ANCHOR_END: sync

// ANCHOR: drifted
/// Whether `current` differs from `desired` in a field this controller sets:
/// the replicas (when the Foo sets them), the containers' names and images,
/// or the pod labels. Go compares the replicas only, and fixes the rest when
/// the replicas next differ.
fn drifted(current: &Deployment, desired: &Deployment) -> bool {
    let (current, desired) = (&current.spec, &desired.spec);
    let images = |spec: &DeploymentSpec| {
        spec.template.spec.as_ref().map(|pod| {
            pod.containers
                .iter()
                .map(|c| (c.name.clone(), c.image.clone()))
                .collect::<Vec<_>>()
        })
    };
    let labels = |spec: &DeploymentSpec| {
        spec.template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default()
    };
    let have = labels(current);
    (desired.replicas.is_some() && desired.replicas != current.replicas)
        || images(current) != images(desired)
        || labels(desired).iter().any(|(k, v)| have.get(k) != Some(v))
}
// ANCHOR_END: drifted

// ANCHOR: update_foo_status
/// Writes the Deployment's available replicas into the Foo's status if they
/// differ from what it says; returns whether it wrote. Go: `updateFooStatus`.
///
/// Idiom: no write when nothing changed (Go writes on every sync), and a
/// server-side apply of the status alone: no resourceVersion, so a stale
/// cache cannot make it fail with 409 Conflict the way Go's PUT of the whole
/// object can.
async fn update_foo_status(
    ctx: &Context,
    foo: &Foo,
    deployment: &Deployment,
) -> Result<bool, Error> {
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let desired = FooStatus {
        available_replicas: available,
    };
    if foo.status.as_ref() == Some(&desired) {
        return Ok(false);
    }
    let status = serde_json::json!({
        "apiVersion": Foo::api_version(&()),
        "kind": Foo::kind(&()),
        "status": desired,
    });
    let api: Api<Foo> = Api::namespaced(ctx.client.clone(), &foo.namespace().unwrap_or_default());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch_status(&foo.name_any(), &params, &Patch::Apply(status))
        .await?;
    Ok(true)
}
// ANCHOR_END: update_foo_status

/// Marks the process ready and logs `Starting workers` once both caches hold
/// their first full list.
pub async fn report_ready(foos: Synced, deployments: Synced, probes: Arc<Probes>, workers: u16) {
    if future::try_join(foos.wait(), deployments.wait())
        .await
        .is_ok()
    {
        probes.set_ready(true);
        tracing::info!(workers, "Starting workers");
    }
}

/// Logs what the controller reports for each reconcile and each watch error.
/// Go: `utilruntime.HandleError` and the worker's log lines.
pub fn log_result(
    result: Result<(ObjectRef<Foo>, Action), controller::Error<Error, watcher::Error>>,
) {
    match result {
        Ok((key, _)) => tracing::info!(objectRef = %key_string(&key), "Successfully synced"),
        // Logged with its retry delay by `error_policy`.
        Err(controller::Error::ReconcilerFailed(..)) => {}
        // A Deployment changed whose Foo is gone: nothing to do.
        Err(controller::Error::ObjectNotFound(key)) => {
            tracing::debug!(objectReference = %key, "Foo no longer exists")
        }
        // Watch errors are logged, with their resource, by `settled`.
        Err(other) => tracing::warn!(error = %other, "controller error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caches::relevance;
    use crate::caches::tests::as_listed;
    use http::Method;
    use sample_controller::fixtures::{cache, foo, mock_client, stored};
    use sample_controller::vocabulary;
    use serde_json::json;

    const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
    const FOO_STATUS: &str =
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos/test/status";

    pub(crate) fn context(client: Client, deployments: Vec<Deployment>) -> Arc<Context> {
        Arc::new(Context::new(
            client,
            cache(deployments),
            Synced::already(),
            Arc::default(),
        ))
    }

    fn status_apply(available: i32) -> serde_json::Value {
        json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "status": {"availableReplicas": available}
        })
    }

    /// The status apply [`report_none_available`] sends for `foo`.
    fn none_available(foo: &Foo) -> serde_json::Value {
        let mut status = status_apply(0);
        status["metadata"] = json!({"uid": foo.uid()});
        status
    }

    #[tokio::test]
    async fn a_new_foo_gets_an_applied_status_a_created_deployment_and_an_event() {
        let foo = foo("test", Some(1));
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![]);
        let created = serde_json::to_value(stored(new_deployment(&foo), 0)).unwrap();
        let mut with_status = foo.clone();
        with_status.status = Some(FooStatus {
            available_replicas: 0,
        });
        let reply = serde_json::to_value(&with_status).unwrap();
        let expected = none_available(&foo);
        let api = tokio::spawn(async move {
            // The status first: it proves the Foo exists before the create.
            let status = server.expect(Method::PATCH, FOO_STATUS, 200, reply).await;
            assert_eq!(status.body, expected);
            assert!(status.query.contains("fieldManager=sample-controller"));
            assert!(status.query.contains("force=true"));
            server.expect(Method::POST, DEPLOYMENTS, 201, created).await;
            // The new Deployment has 0 available, as the status already says.
            assert_eq!(server.expect_event().await.body["reason"], "Synced");
            server.expect_silence().await;
        });
        reconcile(Arc::new(foo), ctx).await.unwrap();
        api.await.unwrap();
    }

    #[tokio::test]
    async fn a_foo_deleted_since_the_cache_saw_it_gets_no_deployment() {
        // Fault 12 of tests/faults/: the Foo watch lags, the garbage
        // collector has deleted the deleted Foo's Deployment, and that
        // delete triggers the Foo still in the cache.
        let mut foo = foo("test", Some(1));
        foo.status = Some(FooStatus {
            available_replicas: 1,
        });
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![]);
        let gone = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": "foos.samplecontroller.k8s.io \"test\" not found",
                          "reason": "NotFound", "code": 404,
                          "details": {"name": "test", "group": "samplecontroller.k8s.io", "kind": "foos"}});
        let expected = none_available(&foo);
        let api = tokio::spawn(async move {
            let status = server.expect(Method::PATCH, FOO_STATUS, 404, gone).await;
            assert_eq!(status.body, expected);
            server.expect_silence().await; // no create, no Event
        });
        reconcile(Arc::new(foo), ctx).await.unwrap();
        api.await.unwrap();
    }

    #[tokio::test]
    async fn a_404_that_does_not_name_the_foo_is_retried_not_taken_for_a_deleted_foo() {
        // What a server answers for a path it does not serve (yet): plain
        // text, which kube turns into a Status without details.
        let foo = foo("test", Some(1));
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![]);
        let api = tokio::spawn(async move {
            server
                .expect_text(Method::PATCH, FOO_STATUS, 404, "404 page not found")
                .await;
            server.expect_silence().await; // no create, no Event
        });
        let err = reconcile(Arc::new(foo), ctx).await.unwrap_err();
        assert!(err.to_string().contains("404 page not found"), "{err}");
        api.await.unwrap();
    }

    #[tokio::test]
    async fn a_foo_already_in_sync_costs_no_request_at_all() {
        let mut foo = foo("test", Some(1));
        foo.status = Some(FooStatus {
            available_replicas: 1,
        });
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![stored(new_deployment(&foo), 1)]);
        let api = tokio::spawn(async move { server.expect_silence().await });
        reconcile(Arc::new(foo), ctx).await.unwrap();
        api.await.unwrap();
    }

    #[tokio::test]
    async fn a_replica_change_is_applied_with_the_deployments_uid_as_precondition() {
        let foo = foo("test", Some(3));
        let mut old = foo.clone();
        old.spec.replicas = Some(1);
        let mut deployment = stored(new_deployment(&old), 1);
        deployment.metadata.uid = Some("deployment-uid".into());
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![deployment.clone()]);
        let reply = serde_json::to_value(stored(new_deployment(&foo), 1)).unwrap();
        let foo_reply = serde_json::to_value(&foo).unwrap();
        let mut expected = serde_json::to_value(new_deployment(&foo)).unwrap();
        expected["metadata"]["uid"] = json!("deployment-uid");
        let api = tokio::spawn(async move {
            let apply = server
                .expect(
                    Method::PATCH,
                    &format!("{DEPLOYMENTS}/test-deployment"),
                    200,
                    reply,
                )
                .await;
            assert_eq!(apply.body, expected);
            assert!(apply.query.contains("force=true"));
            assert_eq!(
                server
                    .expect(Method::PATCH, FOO_STATUS, 200, foo_reply)
                    .await
                    .body,
                status_apply(1)
            );
            assert_eq!(server.expect_event().await.body["reason"], "Synced");
            server.expect_silence().await;
        });
        reconcile(Arc::new(foo), ctx).await.unwrap();
        api.await.unwrap();
    }

    #[tokio::test]
    async fn a_deployment_it_does_not_control_gets_a_warning_and_a_growing_retry_delay() {
        let foo = Arc::new(foo("test", Some(1)));
        let mut foreign = stored(new_deployment(&foo), 1);
        foreign.metadata.owner_references = None;
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![foreign]);
        let api = tokio::spawn(async move {
            let first = server.expect_event().await;
            assert_eq!(first.method, Method::POST);
            assert_eq!(first.body["reason"], "ErrResourceExists");
            assert_eq!(first.body["type"], "Warning");
            let repeat = server.expect_event().await;
            assert_eq!(repeat.method, Method::PATCH);
            assert_eq!(repeat.body["series"]["count"], 2);
            server.expect_silence().await;
        });
        let mut delays = Vec::new();
        for _ in 0..2 {
            let err = reconcile(foo.clone(), ctx.clone()).await.unwrap_err();
            assert!(matches!(
                err,
                Error::Sync(vocabulary::Error::ResourceExists(_))
            ));
            delays.push(error_policy(foo.clone(), &err, ctx.clone()));
        }
        assert_eq!(
            delays,
            [
                Action::requeue(Duration::from_millis(5)),
                Action::requeue(Duration::from_millis(10))
            ]
        );
        api.await.unwrap();
    }

    #[tokio::test]
    async fn an_unanswered_request_retries_soon_without_growing_the_keys_backoff() {
        let foo = Arc::new(foo("test", Some(1)));
        let (client, _server) = mock_client();
        let ctx = context(client, vec![]);
        let unavailable = Error::from(kube::Error::Api(
            kube::core::Status::failure("the server is shutting down", "ServiceUnavailable")
                .with_code(503)
                .boxed(),
        ));
        for _ in 0..20 {
            assert_eq!(
                error_policy(foo.clone(), &unavailable, ctx.clone()),
                Action::requeue(UNAVAILABLE_RETRY)
            );
        }
        let key = ObjectRef::from(foo.as_ref());
        assert_eq!(ctx.backoff.num_requeues(&key), 0);
        let refused = Error::from(vocabulary::Error::ResourceExists("test-deployment".into()));
        assert_eq!(
            error_policy(foo, &refused, ctx),
            Action::requeue(Duration::from_millis(5))
        );
    }

    #[test]
    fn drift_is_a_changed_replica_count_image_or_pod_label_but_not_an_added_label() {
        let desired = new_deployment(&foo("test", Some(2)));
        assert!(!drifted(&desired, &desired));
        let mut scaled = desired.clone();
        scaled.spec.replicas = Some(5);
        assert!(drifted(&scaled, &desired));
        let mut image = desired.clone();
        image.spec.template.spec.as_mut().unwrap().containers[0].image = Some("nginx:1.27".into());
        assert!(drifted(&image, &desired));
        let mut extra_label = desired.clone();
        extra_label
            .spec
            .template
            .metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert("team".into(), "blue".into());
        assert!(!drifted(&extra_label, &desired));
        let unset = new_deployment(&foo("test", None));
        assert!(
            !drifted(&scaled, &unset),
            "no replicas in the Foo: any count is fine"
        );
    }

    pub(crate) fn stripped(mut deployment: Deployment) -> Deployment {
        strip_deployment(&mut deployment);
        deployment
    }

    #[tokio::test]
    async fn a_foo_in_sync_with_its_stripped_deployment_costs_no_request() {
        let mut foo = foo("test", Some(1));
        foo.status = Some(FooStatus {
            available_replicas: 1,
        });
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![stripped(as_listed(&foo, 1))]);
        let api = tokio::spawn(async move { server.expect_silence().await });
        reconcile(Arc::new(foo), ctx).await.unwrap();
        api.await.unwrap();
    }

    #[tokio::test]
    async fn a_stripped_deployment_is_scaled_with_its_uid_and_reported() {
        let foo = foo("test", Some(3));
        let mut old = foo.clone();
        old.spec.replicas = Some(1);
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![stripped(as_listed(&old, 1))]);
        let reply = serde_json::to_value(as_listed(&foo, 1)).unwrap();
        let foo_reply = serde_json::to_value(&foo).unwrap();
        let mut expected = serde_json::to_value(new_deployment(&foo)).unwrap();
        expected["metadata"]["uid"] = json!("deployment-uid");
        let api = tokio::spawn(async move {
            let apply = server
                .expect(
                    Method::PATCH,
                    &format!("{DEPLOYMENTS}/test-deployment"),
                    200,
                    reply,
                )
                .await;
            assert_eq!(apply.body, expected);
            let status = server
                .expect(Method::PATCH, FOO_STATUS, 200, foo_reply)
                .await;
            assert_eq!(status.body, status_apply(1));
            assert_eq!(server.expect_event().await.body["reason"], "Synced");
            server.expect_silence().await;
        });
        reconcile(Arc::new(foo), ctx).await.unwrap();
        api.await.unwrap();
    }

    #[tokio::test]
    async fn a_stripped_deployment_not_controlled_by_the_foo_is_left_alone() {
        let foo = Arc::new(foo("test", Some(1)));
        let mut foreign = as_listed(&foo, 1);
        foreign.metadata.owner_references = None;
        let (client, mut server) = mock_client();
        let ctx = context(client, vec![stripped(foreign)]);
        let api = tokio::spawn(async move {
            assert_eq!(
                server.expect_event().await.body["reason"],
                "ErrResourceExists"
            );
            server.expect_silence().await;
        });
        let err = reconcile(foo, ctx).await.unwrap_err();
        assert!(matches!(
            err,
            Error::Sync(vocabulary::Error::ResourceExists(_))
        ));
        api.await.unwrap();
    }

    #[test]
    fn a_stripped_deployment_keeps_all_that_sync_and_the_predicate_read() {
        let foo = foo("test", Some(1));
        let full = as_listed(&foo, 1);
        let kept = stripped(full.clone());
        let desired = new_deployment(&foo);
        assert!(!drifted(&kept, &desired));
        assert!(drifted(&kept, &new_deployment(&self::foo("test", Some(2)))));
        assert_eq!(relevance(&kept), relevance(&full));
        assert!(sample_controller::deployment::is_controlled_by(&kept, &foo));
        assert_eq!(ObjectRef::from(&kept), ObjectRef::from(&full));
        assert_eq!(kept.uid(), full.uid());
        assert_eq!(kept.resource_version(), full.resource_version());
        assert_eq!(
            kept.status.and_then(|s| s.available_replicas),
            Some(1),
            "the Foo's status comes from here"
        );
        let json = |d: &Deployment| serde_json::to_vec(d).unwrap().len();
        assert!(
            json(&stripped(full.clone())) * 3 < json(&full),
            "{} of {} bytes kept",
            json(&stripped(full.clone())),
            json(&full)
        );
        let mut foreign = full;
        foreign.metadata.owner_references = None;
        assert!(!sample_controller::deployment::is_controlled_by(
            &stripped(foreign),
            &foo
        ));
    }
}
