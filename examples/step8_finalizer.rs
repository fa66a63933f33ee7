//! Step 8 example: a finalizer, so that deleting a Foo waits for the
//! controller's cleanup.
//!
//! A Foo controller written with kube's own `Controller` and
//! `kube::runtime::finalizer`. It puts `samplecontroller.k8s.io/cleanup` on
//! every Foo; when a Foo is deleted it does its cleanup (here: records a
//! `CleanedUp` Event about the Foo), then takes its finalizer off, and only
//! then does the API server remove the Foo.
//!
//!     cargo run --example step8_finalizer -- --namespace default
//!     kubectl apply -f manifests/example-foo.yaml
//!     kubectl get foo example-foo -o jsonpath='{.metadata.finalizers}'
//!     kubectl delete foo example-foo
//!     kubectl events --for foo/example-foo        # ... CleanedUp ...
//!
//! Why a finalizer: ownerReferences let the garbage collector delete
//! *Kubernetes objects* after their owner (step 5's Deployment). They cannot
//! express anything else: a cloud load balancer, a DNS record, a database
//! row, an object in another namespace, a "deregister me" call. A finalizer
//! is a name in `metadata.finalizers`; while any is present, `kubectl delete`
//! only sets `metadata.deletionTimestamp`, and the object stays until every
//! finalizer's owner has done its work and removed its name.
//!
//! While this controller is down, a deleted Foo stays where it is, with its
//! deletionTimestamp set, and so does a namespace being deleted around it
//! (Terminating). When the controller starts again it sees the deleting Foo
//! and finishes the job. If the controller is gone for good, remove the
//! finalizer by hand:
//! `kubectl patch foo NAME --type merge -p '{"metadata":{"finalizers":null}}'`.
//!
//! RBAC: foos `list`, `watch`, `patch` (the finalizer is added and removed by
//! JSON patch); events.k8s.io events `create`, `patch`.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use futures::StreamExt;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::{Foo, telemetry};

/// Our finalizer. A qualified name (`domain/name`) that no other controller
/// uses: the API server warns about unqualified ones.
const FINALIZER: &str = "samplecontroller.k8s.io/cleanup";

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
}

/// What every reconcile shares. Go: the fields of the `Controller` struct.
struct Ctx {
    client: Client,
    recorder: Recorder,
}

/// What our own Apply and Cleanup work can fail with. `finalizer()` wraps it
/// in `finalizer::Error<Error>`, next to its own failures (adding or removing
/// the finalizer); that wrapper needs a `std::error::Error`, so anyhow does
/// not fit here.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("recording the CleanedUp event: {0}")]
    RecordEvent(#[source] kube::Error),
    #[error("the Foo has no namespace")]
    NoNamespace,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init();
    let args = Args::parse();
    let client = client_from_flags(&args.client).await?.client;

    // Go (client-go): record.NewRecorder. kube writes events.k8s.io/v1 Events.
    let reporter = Reporter {
        controller: "step8-finalizer".into(),
        instance: None,
    };
    let ctx = Arc::new(Ctx {
        recorder: Recorder::new(client.clone(), reporter),
        client: client.clone(),
    });

    // Go (controller-runtime): ctrl.NewControllerManagedBy(mgr).For(&Foo{}).Complete(r).
    // Like controller-runtime, kube's Controller never reconciles a deleted
    // object (it is gone by then). With our finalizer on it, a Foo being
    // deleted first arrives as an *update* (deletionTimestamp set), which it does.
    tracing::info!("watching Foos in {}", args.namespace.describe());
    let foos = args.namespace.api::<Foo>(&client);
    Controller::new(foos, watcher::Config::default())
        .shutdown_on_signal() // Go: signals.SetupSignalHandler
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok(_) => {}
                // A reconcile was due for a Foo already gone from the cache:
                // expected right after its finalizer comes off (kube-rs#1167).
                Err(controller::Error::ObjectNotFound(obj)) => {
                    tracing::debug!("{obj} is gone");
                }
                // Go: utilruntime.HandleError
                Err(e) => tracing::warn!("{e}"),
            }
        })
        .await;
    tracing::info!("stopped");
    Ok(())
}

/// One Foo. `finalizer()` decides what this reconcile is:
/// - no finalizer yet: add it (a JSON patch), and return; the patch's own
///   watch event brings the Foo back here;
/// - finalizer present, not deleting: `Event::Apply`, the normal work;
/// - finalizer present, deleting: `Event::Cleanup`; only if that succeeds does
///   `finalizer()` remove our finalizer (so a failed cleanup is retried and
///   the Foo stays);
/// - deleting and our finalizer already gone: nothing.
///
/// Go (controller-runtime): the usual Reconcile prologue with
/// `controllerutil.ContainsFinalizer`, `AddFinalizer`, `RemoveFinalizer` and
/// `if !foo.DeletionTimestamp.IsZero()`; with client-go, the same by hand.
async fn reconcile(foo: Arc<Foo>, ctx: Arc<Ctx>) -> Result<Action, finalizer::Error<Error>> {
    // finalizer() patches the Foo by name, so it needs an Api in the Foo's own
    // namespace, not the all-namespaces Api the Controller watches with.
    let ns = foo
        .namespace()
        .ok_or(finalizer::Error::ApplyFailed(Error::NoNamespace))?;
    let foos: Api<Foo> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&foos, FINALIZER, foo, |event| async move {
        match event {
            // Take the Foo from the event, not the `foo` argument.
            finalizer::Event::Apply(foo) => apply(&foo),
            finalizer::Event::Cleanup(foo) => cleanup(&foo, &ctx).await,
        }
    })
    .await
}

/// The normal work, kept tiny here: steps 5 and 6 would go in this function.
/// Go: syncHandler.
fn apply(foo: &Foo) -> Result<Action, Error> {
    tracing::info!(
        "{}/{}: finalizer {FINALIZER} in place",
        foo.namespace().unwrap_or_default(),
        foo.name_any()
    );
    Ok(Action::await_change())
}

/// The cleanup a deleted Foo waits for. A real controller would delete the
/// external thing it made for this Foo here. It must be idempotent (after a
/// crash it can run again) and must cope with Apply never having run.
async fn cleanup(foo: &Foo, ctx: &Ctx) -> Result<Action, Error> {
    let key = format!("{}/{}", foo.namespace().unwrap_or_default(), foo.name_any());
    // Go: recorder.Event(foo, corev1.EventTypeNormal, "CleanedUp", ...)
    ctx.recorder
        .publish(
            &Event {
                type_: EventType::Normal,
                reason: "CleanedUp".into(),
                note: Some(format!("Cleanup done; removing finalizer {FINALIZER}")),
                action: "Cleanup".into(),
                secondary: None,
            },
            &foo.object_ref(&()),
        )
        .await
        .map_err(Error::RecordEvent)?;
    tracing::info!("{key}: cleaned up; removing finalizer {FINALIZER}");
    Ok(Action::await_change())
}

/// After a failed reconcile: try again in 5 s. Go: `AddRateLimited` (a fixed
/// delay here; steps 4 and 7 port Go's per-key exponential backoff).
fn error_policy(_foo: Arc<Foo>, _error: &finalizer::Error<Error>, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(5))
}
