//! Workshop starter, step 7: the whole controller.
//!
//! Yours to write: Go's resync period (`resync_period`) and the Events a sync
//! records (`record`), marked `WRITE THIS` at the end. Steps 2–6 (informers,
//! handlers, workers, `sync_handler`, `update_foo_status`, all copied from
//! step 6) are done; the workers already stop on SIGTERM and let syncs in
//! flight finish.
//!
//! Read: book/src/step-7.md, "The Rust code". Check your work against a real
//! API server:
//!
//!     cargo xtask check step-7
//!
//! The project's own answer is steps/step-7/controller.rs (`Controller`),
//! used by steps/step-7/main.rs.

// The gaps leave what they will use unused until you fill them;
// delete this line when you are done.
#![allow(unused_variables, unused_imports)]

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::PostParams;
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::deployment::{is_controlled_by, new_deployment};
use sample_controller::diagnose::{Fatal, preflight};
use sample_controller::handlers::start_informers;
use sample_controller::vocabulary::{
    ERR_RESOURCE_EXISTS, Error, FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED,
    message_resource_exists, publish, recorder,
};
use sample_controller::workqueue;
use sample_controller::{Foo, FooStatus, rbac, signals, telemetry};

/// The sample controller: one nginx Deployment per Foo, with status and Events.
#[derive(Parser, Debug)]
#[command(name = "workshop-step-7", version)]
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
    /// Go: `c.recorder`, from `record.NewBroadcaster` (`controller::recorder`).
    recorder: Recorder,
}

#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;
    preflight(&connection, &args.namespace, rbac::GO_CONTROLLER).await?;
    let client = connection.client;

    let informers = start_informers(
        args.namespace.api(&client),
        args.namespace.api(&client),
        // Go: the informer factories' resync period: yours.
        resync_period(),
    );
    println!("Waiting for informer caches to sync");
    informers.wait_for_cache_sync().await?;
    println!("Starting {} workers", args.workers);

    let ctx = Arc::new(Context {
        recorder: recorder(client.clone()),
        client,
        deployments: informers.deployments,
    });
    // Step 6's workers; after each sync, your `record` writes its Event.
    // They stop taking keys on SIGTERM and let the syncs in flight finish.
    workqueue::run_until(
        informers.foos,
        informers.queue,
        shutdown,
        args.workers,
        |foo| {
            let ctx = ctx.clone();
            async move {
                let result = sync_handler(foo.clone(), ctx.clone()).await;
                record(&ctx.recorder, &foo, &result).await;
                result
            }
        },
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

/// WRITE THIS. Go: the resync period main.go gives the informer factories.
///
/// How often the informers replay their whole cache to the handlers, so that
/// every Foo is synced again even when nothing changed: the period Go's
/// sample-controller sets (`None` is no resync, steps 2–6).
fn resync_period() -> Option<Duration> {
    todo!("step 7: Go's resync period (book/src/step-7.md#the-rust-code)")
}

/// WRITE THIS. Go: the `c.recorder.Event(...)` calls in `syncHandler`.
///
/// The Events Go's syncHandler records about the Foo, after the sync
/// `result`: which ones, of which type, with which reason and message, and
/// when none: book/src/step-7.md, its Go part. The reasons and messages
/// are Go's constants, in src/vocabulary.rs, which also has
/// `publish` to record one.
async fn record(recorder: &Recorder, foo: &Foo, result: &Result<(), Error>) {
    todo!("step 7: the Events (book/src/step-7.md#the-rust-code)")
}
