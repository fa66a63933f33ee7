//! Workshop starter, step 8: the kube-rs way.
//!
//! Yours to write: `sync`, with its two helpers `drifted` and
//! `update_foo_status`, marked `WRITE THIS` at the end: step 7's sync
//! rewritten so that every write is a server-side apply of only what this
//! controller owns, and made only when it changes something. kube's
//! `Controller` (its watches, the Deployment predicate, per-key backoff,
//! graceful shutdown: steps/step-8/src/reconciler.rs `run`, copied) and
//! `reconcile` around your `sync` are done.
//!
//! Read: book/src/step-8.md, "The idioms, one by one". Check your work
//! against a real API server:
//!
//!     cargo xtask check step-8
//!
//! The project's own answer is steps/step-8/src/reconciler.rs (`sync`,
//! `drifted`, `update_foo_status`), used by steps/step-8/main.rs.

// The gaps leave what they will use unused until you fill them;
// delete this line when you are done.
#![allow(unused_variables, unused_imports, dead_code)]

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use futures::{StreamExt, future};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{self, ObjectRef};
use kube::{Api, Client, Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::deployment::new_deployment;
use sample_controller::diagnose::{Fatal, check_reachable};
use sample_controller::informer::watch_list;
use sample_controller::signals::Shutdown;
use sample_controller::vocabulary::{
    FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED, ensure_controlled, publish,
};
use sample_controller::{Foo, FooStatus, signals, telemetry};
use step8::caches::{Synced, drop_managed_fields, relevant_changes, settled, strip_deployment};
use step8::error::Error;
use step8::probes::Probes;
use step8::reconciler::{Context, error_policy, log_result, report_ready};

/// The sample controller, the kube-rs way: one nginx Deployment per Foo.
#[derive(Parser, Debug)]
#[command(name = "workshop-step-8", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// How many Foos may reconcile at once. Go: `controller.Run(ctx, 2)`.
    #[arg(long, default_value_t = 2)]
    workers: u16,
}

/// Not the reference's `main` (steps/step-8/main.rs), which adds leader election,
/// probes, metrics and RBAC warnings: the same `run` (below, the
/// reference's), whose `reconcile` calls your `sync`.
#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;
    check_reachable(&connection, &args.namespace).await?;
    let client = connection.client;

    // kube's Controller over Foos and the Deployments they own, calling
    // `reconcile` below.
    run(
        client.clone(),
        args.namespace.api(&client),
        args.namespace.api(&client),
        shutdown,
        args.workers,
        Arc::new(Probes::default()),
    )
    .await?;
    Ok(())
}

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

/// WRITE THIS. Step 7's sync (Go's `syncHandler`), each write made only when
/// it changes something. Wanted, in order:
/// - a Foo without a `deploymentName`: an error in the log, no retry;
/// - nothing decided before the Deployment cache holds its first list
///   (kube's `Controller` waits for the Foo cache only; `ctx.deployments_synced`);
/// - no Deployment in the cache: the Foo reports 0 available first, and a
///   Foo the API server no longer has gets no Deployment (the Foo cache can
///   lag behind the Deployment cache, and a Deployment made for a deleted Foo
///   is garbage-collected, which triggers the Foo again, and again: the
///   chapter's Go → Rust table, the create's row). Then the Deployment is
///   created, never merged into one of that name the cache has not seen;
/// - a Deployment this Foo does not control: the Warning Event and the
///   error, as in step 7 (`ensure_controlled`);
/// - a Deployment that differs from `new_deployment(foo)` in what this
///   controller sets (`drifted`, yours too): written by server-side apply of
///   only those fields, taking back what someone changed, and never applied
///   to a Deployment that replaced the cached one;
/// - the status (`update_foo_status`, yours too);
/// - a Normal Synced Event only when this sync wrote something.
///
/// Read: the chapter's "The idioms, one by one"; server-side apply,
/// <https://kubernetes.io/docs/reference/using-api/server-side-apply/>, and
/// kube's `Patch::Apply`,
/// <https://docs.rs/kube/5.0.0/kube/api/enum.Patch.html>.
async fn sync(foo: &Foo, ctx: &Context) -> Result<(), Error> {
    todo!(
        "step 8: sync by server-side apply (book/src/step-8.md#server-side-apply-instead-of-update)"
    )
}

/// WRITE THIS. Whether `current` differs from `desired` in a field this
/// controller sets: the replicas (when the Foo sets them), the containers'
/// names and images, or a pod label of `desired` missing or different in
/// `current`. Labels others added, and everything else, are not drift.
fn drifted(current: &Deployment, desired: &Deployment) -> bool {
    todo!("step 8: drift (book/src/step-8.md#apply-only-what-drifted)")
}

/// WRITE THIS. Go: `updateFooStatus`. Wanted: the Foo's status says its
/// Deployment's available replicas (0 while it has none), written only when
/// it differs from what the Foo says already, and by server-side apply of
/// the status alone (recorded as operation Apply, owned by `FIELD_MANAGER`,
/// no resourceVersion to conflict on). Returns whether it wrote.
/// Read: the chapter's "The status: applied, and only when it differs";
/// `Api`'s status methods, <https://docs.rs/kube/5.0.0/kube/struct.Api.html>.
async fn update_foo_status(
    ctx: &Context,
    foo: &Foo,
    deployment: &Deployment,
) -> Result<bool, Error> {
    todo!(
        "step 8: the status, applied only when it differs (book/src/step-8.md#the-status-applied-and-only-when-it-differs)"
    )
}
