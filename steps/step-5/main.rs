//! Step 5 — syncHandler: make the world match the Foo.
//!
//! Go: `syncHandler` reads the Foo and its Deployment from the caches,
//! creates the Deployment if it is missing, refuses a Deployment of that name
//! that the Foo does not control, and fixes the replica count if it drifted.
//! Any API error is returned, so the queue retries the key with backoff.
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go>
//!
//! This step leaves out the status update (step 6) and the events (step 7).
//!
//!     cargo run --bin step-5 -- [--namespace NS]

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
use sample_controller::{Foo, rbac, signals, telemetry};

/// Run the controller's sync loop: create and scale each Foo's Deployment.
#[derive(Parser, Debug)]
#[command(name = "step-5", version)]
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
    preflight(&connection, &args.namespace, rbac::WRITE_DEPLOYMENTS).await?;
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
    if let Some(desired) = foo.spec.replicas.filter(|d| Some(*d) != current) {
        println!(
            "updating Deployment {namespace}/{deployment_name}: replicas {current:?} -> {desired}"
        );
        // Like Go's Update: the whole object, without a resourceVersion, so
        // the API server replaces it unconditionally.
        api.replace(deployment_name, &params, &new_deployment(&foo))
            .await?;
    }
    Ok(())
}
// ANCHOR_END: sync_handler
