//! Step 8 — the same controller, the kube-rs way, ready for a cluster.
//!
//! Step 7 is Go's program request for request. This is what a kube-rs
//! developer would write for the same job (`steps/step-8/src/reconciler.rs`): kube's
//! `Controller` with `reconcile` / `error_policy`, server-side apply, no
//! write that changes nothing, no resync, smaller caches. The book's step 8
//! chapter measures what each of those buys.
//!
//! Not in Go, for running in a cluster (the book's "Running in a cluster"):
//! `/healthz`, `/readyz` and `/metrics` with `--http-address`, leader
//! election with `--leader-elect`, and missing RBAC permissions warned about
//! instead of fatal: each forbidden request is logged and retried until granted.
//!
//!     cargo run --bin step-8 -- [--kubeconfig PATH] [--master URL] [--namespace NS]
//!         [--http-address 127.0.0.1:8080] [--leader-elect] [--leader-elect-lease-duration 15s]

use std::sync::Arc;

use clap::{CommandFactory, Parser};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, check_reachable, missing_permissions};
use sample_controller::{rbac, signals, telemetry};
use step8::leader::{LeaderFlags, run_when_leader};
use step8::probes::Probes;
use step8::reconciler;
use step8::server::{ServeFlags, serve};

/// The sample controller, the kube-rs way: one nginx Deployment per Foo.
#[derive(Parser, Debug)]
#[command(name = "step-8", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// How many Foos may reconcile at once. Go: `controller.Run(ctx, 2)`.
    #[arg(long, default_value_t = 2)]
    workers: u16,
    #[command(flatten)]
    serve: ServeFlags,
    #[command(flatten)]
    leader: LeaderFlags,
}

// One thread: the controller waits on the API server more than it computes,
// and a single thread keeps a single allocator arena (glibc gives each thread
// that allocates concurrently one of its own).
// ANCHOR: main
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    // Leader-election flags that disagree (a renew deadline past the lease
    // duration) are refused like a bad flag, before anything starts.
    if let Err(err) = args.leader.check() {
        err.format(&mut Args::command()).exit();
    }
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;

    // No cluster or no CRD: exit with the fix. Missing RBAC: warn and go on,
    // so that a Pod whose Role is applied a moment later needs no restart.
    check_reachable(&connection, &args.namespace).await?;
    let client = connection.client;
    for denied in missing_permissions(&client, &args.namespace, rbac::SERVER_SIDE_APPLY).await {
        tracing::warn!(permission = %denied, "RBAC denies this; requests that need it fail and are retried until it is granted");
    }

    // /healthz, /readyz and /metrics.
    let probes = Arc::new(Probes::default());
    if let Some(addr) = args.serve.http_address {
        tokio::spawn(serve(addr, probes.clone(), shutdown.clone()).await?);
    }

    // With --leader-elect, only the replica holding the Lease reconciles.
    run_when_leader(&client, &args.leader, shutdown.clone(), &probes, || {
        reconciler::run(
            client.clone(),
            args.namespace.api(&client),
            args.namespace.api(&client),
            shutdown.clone(),
            args.workers,
            probes.clone(),
        )
    })
    .await?;
    Ok(())
}
// ANCHOR_END: main
