//! Step 8 under dhat, for `cargo xtask heap-profile` (book: Performance,
//! "Where the memory goes"): every allocation goes through dhat, which
//! records where it was made, and `dhat-heap.json` is written when the
//! controller stops. The controller is step 8's own `reconciler::run`; this
//! file only wraps it, so that no line of step 8 exists for the profiler.
//!
//!     cargo run --release -p sample-controller-step8 --features dhat-heap \
//!         --example heap_profile -- --kubeconfig PATH

use std::sync::Arc;

use clap::Parser;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, check_reachable};
use sample_controller::{signals, telemetry};
use step8::probes::Probes;
use step8::reconciler;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[derive(Parser, Debug)]
#[command(name = "heap_profile")]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// How many Foos may reconcile at once, as step 8's `--workers`.
    #[arg(long, default_value_t = 2)]
    workers: u16,
}

// The same runtime as step 8's `main`: one thread.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Fatal> {
    // Records until it is dropped, at the end of `main`, then writes the file.
    let _profiler = dhat::Profiler::builder().trim_backtraces(Some(16)).build();
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;
    check_reachable(&connection, &args.namespace).await?;
    let client = connection.client;
    reconciler::run(
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
