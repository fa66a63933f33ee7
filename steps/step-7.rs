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
//!     cargo run --bin step-7 -- [--kubeconfig PATH] [--master URL] [--namespace NS]

use clap::Parser;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::controller::{Controller, PERMISSIONS};
use sample_controller::diagnose::preflight;
use sample_controller::handlers::start_informers;
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
    preflight(&client, &url, &args.namespace, PERMISSIONS).await?;

    // Go: the two informer factories, NewController, factory.Start
    let informers = start_informers(&client, &args.namespace, &url);
    let controller = Controller::new(
        client,
        informers.foos.clone(),
        informers.deployments.clone(),
    );

    // Go: controller.Run(ctx, 2)
    controller.run(informers, shutdown, args.workers).await
}
// ANCHOR_END: main
