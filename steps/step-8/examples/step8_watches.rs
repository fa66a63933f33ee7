//! Step 8 exercise: Go's exact `handleObject` semantics with kube's `Controller`.
//!
//! Step 8 triggers a Foo from its Deployments with `owns_stream`: every owner
//! reference whose apiVersion and kind are Foo's counts, marked
//! `controller: true` or not. Go's `handleObject` follows only the controller
//! reference, compares only its kind, and ignores an owner that is not in the
//! Foo cache. This program is step 8's controller with `watches_stream` and
//! step 3's `handle_object` as the mapper instead, so that a Deployment
//! triggers exactly the Foo Go's handler would enqueue. The reconcile,
//! `error_policy` and `Context` are step 8's (`steps/step-8/src/reconciler.rs`).
//!
//!     cargo run --example step8_watches -- --namespace default
//!
//! Left out, to keep the difference in view: step 8's predicate on Deployment
//! changes, its holding back of a relist's triggers until the cache shows the
//! relisted objects (`settled` in `steps/step-8/src/reconciler.rs`), dropping
//! managedFields, leader election and the HTTP endpoints.

use std::sync::Arc;

use clap::Parser;
use futures::{StreamExt, future};
use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::controller::{self, Controller};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::handlers::handle_object;
use sample_controller::informer::{key_string, watch_list};
use sample_controller::{Foo, signals, telemetry};
use step8::caches::Synced;
use step8::probes::Probes;
use step8::reconciler::{Context, error_policy, reconcile};

/// Step 8's controller, with Go's `handleObject` deciding which Foo a
/// Deployment change concerns.
#[derive(Parser, Debug)]
#[command(name = "step8_watches")]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let client = client_from_flags(&args.client).await?.client;
    let (foo_cache, foo_writer) = reflector::store::<Foo>();
    // Step 8's watches: a streaming list, or LIST then WATCH where the API
    // server refuses that (src/informer.rs).
    let foo_triggers = watch_list(args.namespace.api::<Foo>(&client))
        .default_backoff()
        .reflect(foo_writer)
        .applied_objects();

    // Every add, update and delete of a Deployment (a delete with the last
    // object the watch saw), as Go's three Deployment handlers get them; and
    // the flag `sync` waits for, set once the first full list is cached.
    let (deployment_cache, deployment_writer) = reflector::store::<Deployment>();
    let (deployments_filled, deployments_synced) = Synced::new();
    let deployment_triggers = watch_list(args.namespace.api::<Deployment>(&client))
        .default_backoff()
        .reflect(deployment_writer)
        .inspect(move |event| {
            if let Ok(watcher::Event::InitDone) = event {
                deployments_filled.send_replace(true);
            }
        })
        .touched_objects();

    // ANCHOR: watches
    // Go: handleObject. `Ok(key)` enqueues that Foo; `Err(why)` (no controller
    // reference, controlled by another kind, an orphan) enqueues nothing.
    let foos = foo_cache.clone();
    let go_handle_object = move |deployment: Deployment| handle_object(&deployment, &foos).ok();

    let ctx = Arc::new(Context::new(
        client,
        deployment_cache,
        deployments_synced,
        Arc::new(Probes::default()),
    ));
    tracing::info!("Waiting for informer caches to sync");
    Controller::for_stream(foo_triggers, foo_cache)
        .watches_stream(deployment_triggers, go_handle_object)
        .with_config(controller::Config::default().concurrency(2))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            match result {
                Ok((key, _)) => {
                    tracing::info!(objectRef = %key_string(&key), "Successfully synced")
                }
                // `error_policy` logged it, with its retry delay.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(other) => tracing::warn!(error = %other, "controller error"),
            }
            future::ready(())
        })
        .await;
    // ANCHOR_END: watches
    tracing::info!("Shutting down workers");
    Ok(())
}
