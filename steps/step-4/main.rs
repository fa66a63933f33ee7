//! Step 4 — the rate-limited work queue and two workers.
//!
//! Go: handlers `Add` keys to a rate-limited work queue; `Run` waits for the
//! caches, then starts two workers; each `processNextWorkItem` takes a key,
//! syncs it, and on error re-adds it with `AddRateLimited` (per-key backoff
//! 5 ms · 2^n up to 1000 s, overall 50 retries/s, burst 300) or on success
//! calls `Forget`.
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go>
//!
//! Here processing only logs. `--fail-first N` makes the first N attempts at
//! each version of a Foo's spec fail, so the growing retry delays show (and,
//! after a change to the spec, that a success reset them); `--sync-millis`
//! makes each attempt take that long, so you can watch updates pile up and
//! collapse.
//!
//!     cargo run --bin step-4 -- [--namespace NS] [--fail-first N] [--sync-millis MS]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use kube::runtime::reflector::ObjectRef;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, preflight};
use sample_controller::handlers::start_informers;
use sample_controller::informer::key_string;
use sample_controller::workqueue;
use sample_controller::{Foo, rbac, signals, telemetry};

/// Feed handler keys through a rate-limited queue to two workers that only log.
#[derive(Parser, Debug)]
#[command(name = "step-4", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// Make the first N attempts at each version of a Foo's spec (its
    /// generation) fail, to show the per-key backoff and its reset.
    #[arg(long, value_name = "N", default_value_t = 0)]
    fail_first: u32,
    /// How long each attempt takes, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    sync_millis: u64,
    /// Number of workers. Go: `controller.Run(ctx, 2)`.
    #[arg(long, default_value_t = 2)]
    workers: u16,
}

/// An attempt that `--fail-first` made fail.
#[derive(Debug, thiserror::Error)]
#[error("simulated failure of attempt {attempt} (--fail-first {fail_first})")]
struct Simulated {
    attempt: u32,
    fail_first: u32,
}

#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;
    preflight(&connection, &args.namespace, rbac::INFORMERS).await?;
    let client = &connection.client;

    // ANCHOR: run
    // Go: NewController + factory.Start: informers whose handlers add keys.
    let informers = start_informers(args.namespace.api(client), args.namespace.api(client), None);

    // Go: Run: wait for both caches before starting workers.
    println!("Waiting for informer caches to sync");
    informers.wait_for_cache_sync().await?;
    println!("Starting {} workers", args.workers);

    // Go: the queue with its rate limiter, shut down on ctx.Done(), and
    // processNextWorkItem calling our sync (src/workqueue.rs).
    let attempts: Attempts = Arc::default();
    workqueue::run_until(
        informers.foos,
        informers.queue,
        shutdown,
        args.workers,
        |foo| process(foo, attempts.clone(), args.fail_first, args.sync_millis),
    )
    .await;
    println!("Shutting down workers");
    // ANCHOR_END: run
    Ok(())
}

/// Per key: the attempts so far.
type Attempts = Arc<Mutex<HashMap<ObjectRef<Foo>, Tries>>>;

/// The attempts at one key: how many, when the last one started, and how
/// many were at the Foo's current generation (a change to its spec starts
/// the count of `--fail-first` again).
#[derive(Clone, Copy)]
struct Tries {
    total: u32,
    last: Instant,
    generation: Option<i64>,
    at_generation: u32,
}

// ANCHOR: process
/// Stands in for `syncHandler`: logs the attempt, waits `sync_millis`, and
/// fails while the key has had at most `fail_first` attempts at the Foo's
/// current generation.
fn process(
    foo: Arc<Foo>,
    attempts: Attempts,
    fail_first: u32,
    sync_millis: u64,
) -> impl Future<Output = Result<(), Simulated>> + Send + 'static {
    let key = ObjectRef::from(foo.as_ref());
    let now = Instant::now();
    let generation = foo.metadata.generation;
    let (attempt, at_generation, since_last) = {
        let mut attempts = attempts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let tries = attempts.entry(key.clone()).or_insert(Tries {
            total: 0,
            last: now,
            generation,
            at_generation: 0,
        });
        if tries.generation != generation {
            tries.generation = generation;
            tries.at_generation = 0;
        }
        let since_last = now.duration_since(tries.last);
        tries.total += 1;
        tries.at_generation += 1;
        tries.last = now;
        (tries.total, tries.at_generation, since_last)
    };
    let name = key_string(&key);
    if attempt == 1 {
        println!("sync {name} start attempt {attempt}");
    } else {
        println!(
            "sync {name} start attempt {attempt} ({} ms after attempt {})",
            since_last.as_millis(),
            attempt - 1
        );
    }
    async move {
        tokio::time::sleep(Duration::from_millis(sync_millis)).await;
        if at_generation <= fail_first {
            println!("sync {name} failed attempt {attempt}");
            return Err(Simulated {
                attempt,
                fail_first,
            });
        }
        println!("sync {name} done attempt {attempt}");
        Ok(())
    }
}
// ANCHOR_END: process
