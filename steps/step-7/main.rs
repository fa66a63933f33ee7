//! Step 7 — Go's whole program.
//!
//! Go: main.go (flags, signal handler, clients, informer factories with a
//! 30 s resync, `controller.Run(ctx, 2)`) with controller.go, here
//! `controller.rs` beside this file.
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/main.go>
//!
//! Step 6 plus Events (`Synced`, `ErrResourceExists`), a tracing span per
//! sync, Go's resync, and graceful shutdown: the first SIGINT/SIGTERM stops
//! taking new keys and lets running syncs finish; a second one exits at once.
//! Every request is the one Go sends. Step 8 is the same controller written
//! the kube-rs way, with what a cluster deployment needs.
//!
//!     cargo run --bin step-7 -- [--kubeconfig PATH] [--master URL] [--namespace NS]

mod controller;

use std::time::Duration;

use clap::Parser;
use controller::Controller;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, preflight};
use sample_controller::handlers::start_informers;
use sample_controller::{rbac, signals, telemetry};

/// Go: `kubeinformers.NewSharedInformerFactory(kubeClient, time.Second*30)`.
const RESYNC_PERIOD: Duration = Duration::from_secs(30);

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
}

// ANCHOR: main
#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init(); // Go: klog.InitFlags
    let args = Args::parse(); // Go: flag.Parse

    // Go: ctx := signals.SetupSignalHandler()
    let shutdown = signals::setup_signal_handler()?;

    // Go: clientcmd.BuildConfigFromFlags, kubernetes.NewForConfig, clientset.NewForConfig
    let connection = client_from_flags(&args.client).await?;
    // Not in Go: no cluster, no CRD or missing RBAC exits with the fix.
    preflight(&connection, &args.namespace, rbac::GO_CONTROLLER).await?;
    let client = connection.client;

    // Go: the two informer factories (30 s resync), NewController, factory.Start
    let informers = start_informers(
        args.namespace.api(&client),
        args.namespace.api(&client),
        Some(RESYNC_PERIOD),
    );
    let controller = Controller::new(
        client.clone(),
        informers.foos.clone(),
        informers.deployments.clone(),
    );

    // Go: controller.Run(ctx, 2)
    controller.run(informers, shutdown, args.workers).await?;
    Ok(())
}
// ANCHOR_END: main
