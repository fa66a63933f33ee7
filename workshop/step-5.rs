//! Workshop starter, step 5: syncHandler.
//!
//! Yours to write: `sync_handler`, marked `WRITE THIS` at the end: create the
//! Foo's Deployment, refuse one the Foo does not control, fix its replicas.
//! The informers, handlers and workers of steps 2–4 are done.
//!
//! Read: book/src/step-5.md, "The Rust code". Check your work against a real
//! API server:
//!
//!     cargo xtask check step-5
//!
//! The project's own answer is steps/step-5/main.rs.

// The gaps leave what they will use unused until you fill them;
// delete this line when you are done.
#![allow(unused_variables, unused_imports, dead_code)]

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
#[command(name = "workshop-step-5", version)]
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

/// WRITE THIS. Go: `syncHandler`.
///
/// Wanted: the Foo's Deployment made what the Foo asks for, decided in Go's
/// order:
/// - a Foo without a `deploymentName`: an error in the log, and no retry
///   (retrying cannot help; the Foo's next change brings it back);
/// - no Deployment of that name in the Deployment cache: create the one
///   `new_deployment` describes (src/deployment.rs), written under this
///   controller's field manager, `FIELD_MANAGER`;
/// - a Deployment of that name this Foo does not control: change nothing,
///   and fail the sync with the error that says someone else has it
///   (`Error::ResourceExists`), so that it is retried with backoff;
/// - the Foo sets replicas and the Deployment's count differs: replace the
///   whole Deployment with what `new_deployment` describes, as Go's `Update`
///   does (what others changed in it goes too, as in Go).
///
/// A key whose Foo left the cache never gets here: the workers drop it, as
/// Go's Foo-not-found branch does.
/// Read: the chapter's "The Rust code" and "What the Go code does"; the
/// cache, `Store`,
/// <https://docs.rs/kube-runtime/5.0.0/kube_runtime/reflector/store/struct.Store.html>;
/// writing, `Api`, <https://docs.rs/kube/5.0.0/kube/struct.Api.html>; who
/// controls what,
/// <https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/>.
async fn sync_handler(foo: Arc<Foo>, ctx: Arc<Context>) -> Result<(), Error> {
    todo!("step 5: syncHandler (book/src/step-5.md#the-rust-code)")
}
