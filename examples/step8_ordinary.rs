//! Step 8, the ordinary way: the sample controller as the kube.rs guide and
//! kube's own examples write a controller, and nothing more.
//!
//! `Controller::new(foos).owns(deployments).run(reconcile, error_policy, ctx)`:
//! kube watches the Foos and the Deployments they own, queues each Foo that
//! changed (a key at most once, never two reconciles of one key at a time),
//! and calls `reconcile`; `reconcile` reads the Foo's Deployment, applies what
//! the Foo wants with server-side apply, and applies the status. The book's
//! step 8 chapter starts here, then shows what `steps/step-8/` adds and why (each
//! addition is a behaviour `cargo xtask check step-8` tests):
//!
//!     cargo run --example step8_ordinary -- --namespace default
//!     cargo xtask check --program target/debug/examples/step8_ordinary step-8

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::deployment::new_deployment;
use sample_controller::diagnose::{Fatal, check_reachable};
use sample_controller::vocabulary::{
    Error, FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED, ensure_controlled, publish,
    recorder,
};
use sample_controller::{Foo, telemetry};
use serde_json::json;

/// The sample controller, as an ordinary kube-rs controller.
#[derive(Parser, Debug)]
#[command(name = "step8_ordinary", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
}

// ANCHOR: main
#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    let connection = client_from_flags(&args.client).await?;
    check_reachable(&connection, &args.namespace).await?;
    let client = connection.client;

    let foos: Api<Foo> = args.namespace.api(&client);
    let deployments: Api<Deployment> = args.namespace.api(&client);
    let ctx = Arc::new(Context {
        recorder: recorder(client.clone()),
        client,
    });
    // Go: the two informers, their handlers, the work queue and its workers.
    let controller = Controller::new(foos, watcher::Config::default())
        .owns(deployments, watcher::Config::default())
        .shutdown_on_signal();
    // Go's line; kube's runner waits for the Foo cache before its first
    // reconcile. (Waiting on `controller.store()` here as well would lose a
    // wake-up: the store wakes only the last of two waiters, step 8's
    // `Synced` says more.)
    tracing::info!("Starting workers");
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            match result {
                Ok((foo, _)) => tracing::info!(objectRef = %foo, "Successfully synced"),
                Err(err) => tracing::error!(error = %err, "reconcile failed"),
            }
            futures::future::ready(())
        })
        .await;
    Ok(())
}
// ANCHOR_END: main

/// What every reconcile needs.
struct Context {
    client: Client,
    recorder: Recorder,
}

// ANCHOR: reconcile
/// Makes the Foo's Deployment and status what the Foo asks for. Go:
/// `syncHandler` and `updateFooStatus`.
async fn reconcile(foo: Arc<Foo>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = foo.namespace().unwrap_or_default();
    let name = &foo.spec.deployment_name;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let apply = PatchParams::apply(FIELD_MANAGER).force();

    // No cache of Deployments here: read it. Never touch one we do not own,
    // and apply to the one we checked (its UID): if someone replaced it since,
    // the API server refuses the apply instead of letting it take theirs over.
    let mut desired = new_deployment(&foo);
    if let Some(existing) = deployments.get_opt(name).await? {
        ensure_controlled(&ctx.recorder, &existing, &foo).await?;
        desired.metadata.uid = existing.uid();
    }
    // Server-side apply: the fields we set, nothing else, create or update.
    let deployment = deployments
        .patch(name, &apply, &Patch::Apply(desired))
        .await?;

    // The status, applied through the status subresource.
    let available = deployment
        .status
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let status = json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "status": { "availableReplicas": available },
    });
    let foos: Api<Foo> = Api::namespaced(ctx.client.clone(), &namespace);
    foos.patch_status(&foo.name_any(), &apply, &Patch::Apply(status))
        .await?;

    publish(
        &ctx.recorder,
        &foo,
        EventType::Normal,
        SUCCESS_SYNCED,
        MESSAGE_RESOURCE_SYNCED,
    )
    .await;
    // Every input is watched: wait for the next change.
    Ok(Action::await_change())
}

/// What to do after a failed reconcile: try that Foo again in 5 s.
fn error_policy(_foo: Arc<Foo>, _err: &Error, _ctx: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(5))
}
// ANCHOR_END: reconcile
