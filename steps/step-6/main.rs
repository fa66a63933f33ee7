//! Step 6 — updateFooStatus: report what the Deployment achieved.
//!
//! Go: after converging the Deployment, `syncHandler` calls
//! `updateFooStatus`, which copies the Deployment's
//! `status.availableReplicas` into a copy of the Foo and writes it with
//! `UpdateStatus` (a PUT to the Foo's `/status` subresource).
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go>
//!
//! Everything else is step 5's sync, unchanged.
//!
//!     cargo run --bin step-6 -- [--namespace NS]

use std::sync::Arc;

use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::PostParams;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::deployment::{is_controlled_by, new_deployment};
use sample_controller::diagnose::{Fatal, preflight};
use sample_controller::handlers::start_informers;
use sample_controller::vocabulary::{Error, FIELD_MANAGER};
use sample_controller::workqueue;
use sample_controller::{Foo, FooStatus, rbac, signals, telemetry};

/// Run the sync loop and keep each Foo's status up to date.
#[derive(Parser, Debug)]
#[command(name = "step-6", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// Number of workers. Go: `controller.Run(ctx, 2)`.
    #[arg(long, default_value_t = 2)]
    workers: u16,
}

/// What every sync needs. Go: the `Controller` struct's clients and listers.
struct Context {
    client: Client,
    deployments: Store<Deployment>,
}

#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;
    preflight(&connection, &args.namespace, rbac::WRITE_STATUS).await?;
    let client = connection.client;

    let informers = start_informers(
        args.namespace.api(&client),
        args.namespace.api(&client),
        None,
    );
    println!("Waiting for informer caches to sync");
    informers.wait_for_cache_sync().await?;
    println!("Starting {} workers", args.workers);

    let ctx = Arc::new(Context {
        client,
        deployments: informers.deployments,
    });
    // The workers of step 4, now calling the real sync.
    workqueue::run_until(
        informers.foos,
        informers.queue,
        shutdown,
        args.workers,
        |foo| sync_handler(foo, ctx.clone()),
    )
    .await;
    println!("Shutting down workers");
    Ok(())
}

// ANCHOR: sync_handler
/// Compares the Foo with its Deployment and converges the two.
/// Go: `syncHandler`. (The Foo-not-found branch is in `workqueue::run`: a key
/// whose Foo left the cache never reaches this function.)
async fn sync_handler(foo: Arc<Foo>, ctx: Arc<Context>) -> Result<(), Error> {
    let namespace = foo.namespace().unwrap_or_default();
    let deployment_name = &foo.spec.deployment_name;
    if deployment_name.is_empty() {
        // Retrying cannot help; the next update of the Foo queues it again.
        tracing::error!(objectRef = %format!("{namespace}/{}", foo.name_any()), "Deployment name missing from object reference");
        return Ok(());
    }

    // Read the Deployment from the cache; create it if it is not there.
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PostParams::default()
    };
    let deployment = match ctx
        .deployments
        .get(&ObjectRef::new(deployment_name).within(&namespace))
    {
        Some(cached) => cached,
        None => {
            println!("creating Deployment {namespace}/{deployment_name}");
            Arc::new(api.create(&params, &new_deployment(&foo)).await?)
        }
    };

    // Never touch a Deployment this Foo does not control.
    if !is_controlled_by(&deployment, &foo) {
        return Err(Error::ResourceExists(deployment.name_any()));
    }

    // Fix the replica count if the Foo sets one and the Deployment differs.
    let current = deployment.spec.replicas;
    let deployment = match foo.spec.replicas.filter(|d| Some(*d) != current) {
        Some(desired) => {
            println!(
                "updating Deployment {namespace}/{deployment_name}: replicas {current:?} -> {desired}"
            );
            // Like Go's Update: the whole object, without a resourceVersion,
            // so the API server replaces it unconditionally.
            Arc::new(
                api.replace(deployment_name, &params, &new_deployment(&foo))
                    .await?,
            )
        }
        None => deployment,
    };

    // New in step 6: report the Deployment's progress in the Foo's status.
    update_foo_status(&ctx.client, &foo, &deployment).await?;
    Ok(())
}
// ANCHOR_END: sync_handler

// ANCHOR: update_foo_status
/// Writes the Deployment's available replicas into the Foo's status.
/// Go: `updateFooStatus`.
///
/// The Foo from the cache is shared and read-only (`Arc`), so we change a
/// clone (Go: `DeepCopy`). `replace_status` is a PUT to `/status`: the API
/// server takes only the status from it and, because the clone carries the
/// cached resourceVersion, answers 409 Conflict if the cache was stale; the
/// error sends the key back to the queue, as in Go.
async fn update_foo_status(
    client: &Client,
    foo: &Foo,
    deployment: &Deployment,
) -> Result<(), Error> {
    let mut copy = foo.clone();
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    copy.status = Some(FooStatus {
        available_replicas: available,
    });
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PostParams::default()
    };
    let api: Api<Foo> = Api::namespaced(client.clone(), &foo.namespace().unwrap_or_default());
    api.replace_status(&foo.name_any(), &params, &copy).await?;
    Ok(())
}
// ANCHOR_END: update_foo_status
