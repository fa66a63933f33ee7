//! Step 7 — the full controller.
//!
//! Go: main.go (flags, signal handler, clients, informer factories,
//! `controller.Run(ctx, 2)`) with controller.go, here `src/controller.rs`.
//! <https://github.com/kubernetes/sample-controller/blob/v0.36.3/main.go#L40-L82>
//!
//! Step 6 plus Events (`Synced`, `ErrResourceExists`), a tracing span per
//! sync, and graceful shutdown: the first SIGINT/SIGTERM stops taking new
//! keys and lets running syncs finish; a second one exits at once.
//!
//! Not in Go, for running in a cluster (the book's "Running in a cluster"):
//! `/healthz`, `/readyz` and `/metrics` with `--http-address`, and leader
//! election with `--leader-elect`. Missing RBAC permissions are warned about,
//! not fatal: each forbidden request is logged and retried until granted.
//!
//!     cargo run --bin step-7 -- [--kubeconfig PATH] [--master URL] [--namespace NS]
//!         [--http-address 127.0.0.1:8080] [--leader-elect]

use std::sync::Arc;

use clap::Parser;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::controller::{Controller, PERMISSIONS};
use sample_controller::diagnose::{check_reachable, missing_permissions};
use sample_controller::handlers::start_informers;
use sample_controller::leader::{LeaderFlags, run_when_leader};
use sample_controller::server::{Probes, ServeFlags, serve};
use sample_controller::{signals, telemetry};

/// The sample controller: one nginx Deployment per Foo, with status and Events.
#[derive(Parser, Debug)]
#[command(name = "step-7", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// Number of workers. Go: `controller.Run(ctx, 2)`.
    #[arg(long, default_value_t = 2)]
    workers: u16,
    #[command(flatten)]
    serve: ServeFlags,
    #[command(flatten)]
    leader: LeaderFlags,
}

// ANCHOR: main
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init(); // Go: klog.InitFlags
    let args = Args::parse(); // Go: flag.Parse

    // Go: ctx := signals.SetupSignalHandler()
    let shutdown = signals::setup_signal_handler()?;

    // Go: clientcmd.BuildConfigFromFlags, kubernetes.NewForConfig, clientset.NewForConfig
    let (client, url) = client_from_flags(&args.client).await?;
    // No cluster or no CRD: exit with the fix. Missing RBAC: warn and go on.
    check_reachable(&client, &url, &args.namespace).await?;
    for denied in missing_permissions(&client, &args.namespace, PERMISSIONS).await {
        tracing::warn!(permission = %denied, "RBAC denies this; requests that need it fail and are retried until it is granted");
    }

    // Not in Go: /healthz, /readyz and /metrics.
    let probes = Arc::new(Probes::default());
    if let Some(addr) = args.serve.http_address {
        tokio::spawn(serve(addr, probes.clone(), shutdown.clone()).await?);
    }

    // Not in Go: with --leader-elect, only the replica holding the Lease goes on.
    run_when_leader(&client, &args.leader, shutdown.clone(), &probes, || async {
        // Go: the two informer factories, NewController, factory.Start
        let informers = start_informers(&client, &args.namespace, &url);
        let controller = Controller::new(
            client.clone(),
            informers.foos.clone(),
            informers.deployments.clone(),
        )
        .with_probes(probes.clone());

        // Go: controller.Run(ctx, 2)
        controller.run(informers, shutdown, args.workers).await
    })
    .await
}
// ANCHOR_END: main
