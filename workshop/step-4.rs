//! Workshop starter, step 4: the rate-limited work queue.
//!
//! Yours to write: `run` and `run_until`, marked `WRITE THIS` at the end: the
//! workers that take keys from the handlers' queue and sync them, with Go's
//! rate limiter for retries. The informers and handlers (step 3's, from
//! src/handlers.rs) and a stand-in sync that only logs (`process`, with
//! `--fail-first` and `--sync-millis` to make it fail or take time) are done.
//!
//! Read: book/src/step-4.md, "The Rust code". Check your work against a real
//! API server:
//!
//!     cargo xtask check step-4
//!
//! The project's own answer is src/workqueue.rs (`run`, `run_until`), used by
//! steps/step-4/main.rs.

// The gaps leave what they will use unused until you fill them;
// delete this line when you are done.
#![allow(unused_variables, unused_imports, unused_mut, dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::controller::{self, Action, applier};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::Store;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, preflight};
use sample_controller::handlers::start_informers;
use sample_controller::informer::key_string;
use sample_controller::signals::Shutdown;
use sample_controller::workqueue::RateLimiter;
use sample_controller::{Foo, rbac, signals, telemetry};
use std::convert::Infallible;
use std::error::Error as StdError;
use std::fmt::Debug;
use std::hash::Hash;

/// Feed handler keys through a rate-limited queue to two workers that only log.
#[derive(Parser, Debug)]
#[command(name = "workshop-step-4", version)]
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

    // Go: NewController + factory.Start: informers whose handlers add keys.
    let informers = start_informers(args.namespace.api(client), args.namespace.api(client), None);

    // Go: Run: wait for both caches before starting workers.
    println!("Waiting for informer caches to sync");
    informers.wait_for_cache_sync().await?;
    println!("Starting {} workers", args.workers);

    // Go: the queue with its rate limiter, shut down on ctx.Done(), and
    // processNextWorkItem calling our sync: yours, below.
    let attempts: Attempts = Arc::default();
    run_until(
        informers.foos,
        informers.queue,
        shutdown,
        args.workers,
        |foo| process(foo, attempts.clone(), args.fail_first, args.sync_millis),
    )
    .await;
    println!("Shutting down workers");
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

/// WRITE THIS. Go: `runWorker` and `processNextWorkItem`.
///
/// Take keys from `queue` until it ends and sync each one's object (looked up
/// in `cache`) with `sync`, at most `workers` at a time, then let the syncs in
/// flight finish. Go's work queue guarantees, and the check tests:
/// - never more than `workers` syncs at once, however many keys wait;
/// - a key queued many times while it waits is synced once;
/// - a key queued while it is being synced waits, and is synced once more
///   afterwards: one key never runs in two workers at once;
/// - a failed sync is logged (`tracing::error!` with the message
///   `"Error syncing; requeuing for later retry"`) and retried after the
///   delay `limiter` gives that key, which doubles with each failure in a
///   row (5 ms, 10 ms, 20 ms, …); a success starts the key's delays over
///   (`RateLimiter` in src/workqueue.rs: the limiter Go's `NewController` builds);
/// - a key whose Foo is gone from `cache` when its turn comes is Go's
///   `syncHandler` finding no Foo: logged with the key and Go's message
///   (`"Foo referenced by item in work queue no longer exists"`), not
///   retried, and its failures forgotten as after a success.
///
/// kube-runtime has all of that but the rate limiter, in
/// `kube::runtime::controller::applier`: what it takes and what each of its
/// closures must return is on docs.rs,
/// <https://docs.rs/kube-runtime/5.0.0/kube_runtime/controller/fn.applier.html>,
/// and the chapter says which of Go's calls each one plays. Two things its
/// signature asks that the compiler words badly: the reconcile's future must
/// be `Unpin` (`Box::pin(async move { … })` makes one), and the queue is a
/// stream of `Result`s (`.map(Ok::<_, Infallible>)`).
async fn run<K, E, Fut>(
    cache: Store<K>,
    queue: impl Stream<Item = ObjectRef<K>> + Send + 'static,
    workers: u16,
    limiter: Arc<RateLimiter<ObjectRef<K>>>,
    mut sync: impl FnMut(Arc<K>) -> Fut,
) where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin + Send + Sync,
    E: StdError + Send + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
{
    todo!("step 4: the workers and the rate-limited retries (book/src/step-4.md#the-rust-code)")
}

/// WRITE THIS. Go: `Run(ctx, workers)`, after `NewController` built the queue with
/// its rate limiter: your `run`'s workers over `queue`, taking no new key once
/// `shutdown` fires, with the rate limiter Go's sample-controller gives its
/// queue (`RateLimiter` in src/workqueue.rs has a constructor for it).
async fn run_until<E, Fut>(
    foos: Store<Foo>,
    queue: impl Stream<Item = ObjectRef<Foo>> + Send + 'static,
    shutdown: Shutdown,
    workers: u16,
    sync: impl FnMut(Arc<Foo>) -> Fut,
) where
    E: StdError + Send + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
{
    todo!("step 4: the queue until shutdown (book/src/step-4.md#the-rust-code)")
}
