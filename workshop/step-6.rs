//! Workshop starter, step 6: status.
//!
//! Yours to write: `update_foo_status`, marked `WRITE THIS` at the end, which
//! `sync_handler` (step 5's, done) calls after each sync.
//!
//! Read: book/src/step-6.md, "The Rust code". Check your work against a real
//! API server:
//!
//!     cargo xtask check step-6
//!
//! The project's own answer is steps/step-6/main.rs.

// The gaps leave what they will use unused until you fill them;
// delete this line when you are done.
#![allow(unused_variables, unused_imports)]

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
#[command(name = "workshop-step-6", version)]
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

/// WRITE THIS. Go: `updateFooStatus`.
///
/// Wanted: the Foo's status says how many replicas its Deployment has
/// available (what runs, not what is asked for; 0 while it has none), and
/// it is written as Go writes it: the whole Foo to the status subresource
/// (Go's `UpdateStatus`, a PUT, under `FIELD_MANAGER`), from a copy of the
/// cached Foo, which is shared and read-only (Go: `DeepCopy`). A failed
/// write is the sync's error: the key goes back to the queue, as in Go.
/// Read: the chapter's "The Rust code"; the status subresource,
/// <https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#status-subresource>;
/// `Api`'s status methods, <https://docs.rs/kube/5.0.0/kube/struct.Api.html>;
/// a Deployment's status fields,
/// <https://docs.rs/k8s-openapi/0.29.0/k8s_openapi/api/apps/v1/struct.DeploymentStatus.html>.
async fn update_foo_status(
    client: &Client,
    foo: &Foo,
    deployment: &Deployment,
) -> Result<(), Error> {
    todo!("step 6: updateFooStatus (book/src/step-6.md#the-rust-code)")
}
