//! Workshop starter, step 2: informers and listers.
//!
//! Yours to write: the two functions marked `WRITE THIS` at the end (the Foo
//! and Deployment informers, and the wait for both caches). Everything else,
//! the flags, the client and the printing of the caches, is done.
//!
//! Read: book/src/step-2.md, "The Rust code". Check your work against a real
//! API server:
//!
//!     cargo xtask check step-2
//!
//! The project's own answer is steps/step-2/main.rs.

// The gaps leave what they will use unused until you fill them;
// delete this line when you are done.
#![allow(unused_variables, unused_imports, dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Parser;
use futures::{Stream, StreamExt, future};
use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, explain_watch, preflight};
use sample_controller::informer::watch_list;
use sample_controller::{Foo, rbac, show, signals, telemetry};

/// Fill a Foo cache and a Deployment cache, wait for both, and show them.
#[derive(Parser, Debug)]
#[command(name = "workshop-step-2", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
}

#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;
    preflight(&connection, &args.namespace, rbac::INFORMERS).await?;
    let client = connection.client;

    let (foos, deployments) = start_informers(&args.namespace, &client);

    // Go: cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.foosSynced)
    println!("Waiting for informer caches to sync");
    tokio::select! {
        synced = wait_for_cache_sync(&foos, &deployments) => synced?,
        () = shutdown.clone() => return Ok(()),
    };
    println!(
        "Caches synced: {} foos, {} deployments in {}",
        foos.len(),
        deployments.len(),
        args.namespace.describe()
    );

    // Go: c.foosLister.List(labels.Everything()) reads the cache, not the API server.
    // The caches keep up with the cluster on their own; print them when they change.
    let mut printed = None;
    loop {
        let now = (versions(&foos), versions(&deployments));
        if printed.as_ref() != Some(&now) {
            println!(
                "\nFoos in cache:\n{}",
                show::foos(foos.state().iter().map(|f| f.as_ref()))
            );
            println!(
                "Deployments in cache:\n{}",
                show::deployments(deployments.state().iter().map(|d| d.as_ref()))
            );
            printed = Some(now);
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = shutdown.clone() => break,
        }
    }
    println!("Shutting down");
    Ok(())
}

/// `namespace/name → resourceVersion` of everything in a cache: changes
/// exactly when the cache does.
fn versions<K: Resource + Clone>(cache: &Store<K>) -> BTreeMap<(String, String), String>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    cache
        .state()
        .iter()
        .map(|o| {
            (
                (o.namespace().unwrap_or_default(), o.name_any()),
                o.resource_version().unwrap_or_default(),
            )
        })
        .collect()
}

/// WRITE THIS. Go: the two informer factories' `Foos()` and `Deployments()`
/// informers, their `Lister()`s, and `factory.Start`.
///
/// For each of Foo and Deployment (`namespace.api::<K>(client)` is the API
/// to watch, in the namespace the flags chose):
/// - make a cache: `reflector::store()` gives a reader (`Store`, the lister)
///   and a writer;
/// - make the informer: `watch_list(api)` (src/informer.rs: a watcher that
///   lists the way client-go does), `.default_backoff()` so failed
///   requests are retried, `.reflect(writer)` so every event updates the cache;
/// - start it: a stream does nothing until it is polled, so poll it in a
///   background task (`tokio::spawn`), logging the errors it yields
///   (`explain_watch(&err, "foos")` words them; the watcher retries by itself).
///
/// Return the two readers.
fn start_informers(namespace: &NamespaceFlag, client: &Client) -> (Store<Foo>, Store<Deployment>) {
    todo!("step 2: start the Foo and Deployment informers (book/src/step-2.md#the-rust-code)")
}

/// WRITE THIS. Go: `cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.foosSynced)`.
///
/// Wait until both caches hold a full list. A `Store` can tell you
/// (`wait_until_ready`); wait for both at once (`future::try_join`).
async fn wait_for_cache_sync(
    foos: &Store<Foo>,
    deployments: &Store<Deployment>,
) -> anyhow::Result<()> {
    todo!("step 2: wait for both caches (book/src/step-2.md#the-rust-code)")
}
