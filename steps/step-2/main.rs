//! Step 2 — informers and listers.
//!
//! Go: main.go creates two `SharedInformerFactory`s (30 s resync), starts
//! them, and `Run` waits in `cache.WaitForCacheSync` until both caches have
//! seen a full list; listers then read those caches instead of the API server.
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/main.go>
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go>
//!
//! In Rust: a `watcher` lists then watches; `.reflect(writer)` keeps a
//! `Store` (the lister) current; `wait_until_ready` is `WaitForCacheSync`.
//!
//! No resync exists in kube-rs: the watcher never replays its cache on a
//! timer. Go's 30 s resync only re-delivers cached objects to handlers; the
//! caches here are just as current without it.
//!
//!     cargo run --bin step-2 -- [--namespace NS]

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Parser;
use futures::{Stream, StreamExt, future};
use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, explain_watch, preflight};
use sample_controller::informer::watch_list;
use sample_controller::{Foo, rbac, show, signals, telemetry};

/// Fill a Foo cache and a Deployment cache, wait for both, and show them.
#[derive(Parser, Debug)]
#[command(name = "step-2", version)]
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

    // ANCHOR: informers
    // Go: exampleInformerFactory.Samplecontroller().V1alpha1().Foos() and its Lister().
    let (foos, foo_writer) = reflector::store::<Foo>();
    // kube's watcher, started as client-go 0.37 starts one: a WATCH that
    // streams the existing objects first, or LIST then WATCH where the API
    // server cannot (src/informer.rs).
    let foo_informer = watch_list(args.namespace.api::<Foo>(&client))
        .default_backoff() // retry failed lists and watches: 800 ms doubling to 30 s
        .reflect(foo_writer);

    // Go: kubeInformerFactory.Apps().V1().Deployments() and its Lister().
    let (deployments, deployment_writer) = reflector::store::<Deployment>();
    let deployment_informer = watch_list(args.namespace.api::<Deployment>(&client))
        .default_backoff()
        .reflect(deployment_writer);

    // Go: factory.Start(ctx.Done()) runs each informer in a goroutine.
    start(foo_informer, "foos");
    start(deployment_informer, "deployments");
    // ANCHOR_END: informers

    // ANCHOR: wait_for_sync
    // Go: cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.foosSynced)
    println!("Waiting for informer caches to sync");
    tokio::select! {
        synced = future::try_join(foos.wait_until_ready(), deployments.wait_until_ready()) => synced?,
        () = shutdown.clone() => return Ok(()),
    };
    println!(
        "Caches synced: {} foos, {} deployments in {}",
        foos.len(),
        deployments.len(),
        args.namespace.describe()
    );
    // ANCHOR_END: wait_for_sync

    // ANCHOR: listers
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
    // ANCHOR_END: listers
    println!("Shutting down");
    Ok(())
}

// ANCHOR: start
/// Polls an informer stream in a background task; nothing happens until a
/// stream is polled. Errors are logged; the watcher retries them itself.
fn start<T>(
    informer: impl Stream<Item = Result<T, watcher::Error>> + Send + 'static,
    resource: &'static str,
) {
    tokio::spawn(informer.for_each(move |event| {
        if let Err(err) = event {
            tracing::warn!("{}", explain_watch(&err, resource));
        }
        future::ready(())
    }));
}
// ANCHOR_END: start

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
