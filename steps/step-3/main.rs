//! Step 3 — event handlers.
//!
//! Go: `NewController` registers handlers on both informers. A Foo add or
//! update calls `enqueueFoo`; a Deployment add, update or delete calls
//! `handleObject`, which finds the Foo controlling that Deployment and
//! enqueues it. The Deployment update handler first drops updates whose
//! resourceVersion did not change: those are resync replays, not changes.
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go>
//!
//! kube-runtime's watcher tells only the new object; `informer` (src/informer.rs)
//! reads the old one from the cache first, as client-go does. This step prints
//! each notification and the key a handler would put in the work queue.
//!
//!     cargo run --bin step-3 -- [--namespace NS] [--resync SECONDS]

use std::time::Duration;

use clap::Parser;
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use kube::{Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, explain_watch, preflight};
use sample_controller::handlers::{Decision, on_deployment, on_foo};
use sample_controller::informer::{Notification, informer, key_string, resync};
use sample_controller::{Foo, rbac, signals, telemetry};

/// Print what the Foo and Deployment handlers see and what they would enqueue.
#[derive(Parser, Debug)]
#[command(name = "step-3", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// Replay both caches as updates every SECONDS, like a Go informer's
    /// resync (Go's sample-controller uses 30). kube-rs has no resync; this
    /// shows why Go's Deployment handler compares resourceVersions.
    #[arg(long, value_name = "SECONDS")]
    resync: Option<u64>,
}

/// Which informer a notification came from.
enum Event {
    Foo(Notification<Foo>),
    Deployment(Notification<Deployment>),
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
    let (foos, foo_events) = informer(args.namespace.api::<Foo>(&client));
    let (deployments, deployment_events) = informer(args.namespace.api::<Deployment>(&client));
    let foo_events = foo_events.map(|n| n.map(Event::Foo).map_err(|e| ("foos", e)));
    let deployment_events =
        deployment_events.map(|n| n.map(Event::Deployment).map_err(|e| ("deployments", e)));
    let mut events = match args.resync.map(Duration::from_secs) {
        None => stream::select(foo_events, deployment_events).boxed(),
        Some(period) => stream::select_all([
            foo_events.boxed(),
            deployment_events.boxed(),
            resync(foos.clone(), period)
                .map(|n| n.map(Event::Foo).map_err(|e| ("foos", e)))
                .boxed(),
            resync(deployments, period)
                .map(|n| n.map(Event::Deployment).map_err(|e| ("deployments", e)))
                .boxed(),
        ])
        .boxed(),
    };
    // ANCHOR_END: informers

    // ANCHOR: dispatch
    // Go: the informers call the registered handler funcs; here we poll both
    // streams and call the handlers from src/handlers.rs ourselves.
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = shutdown.clone() => None,
        };
        match event {
            Some(Ok(Event::Foo(n))) => {
                println!("{} -> {}", describe("Foo", &n), outcome(on_foo(&n)));
            }
            Some(Ok(Event::Deployment(n))) => {
                let decision = on_deployment(&n, &foos);
                println!("{} -> {}", describe("Deployment", &n), outcome(decision));
            }
            Some(Err((resource, err))) => tracing::warn!("{}", explain_watch(&err, resource)),
            None => break,
        }
    }
    // ANCHOR_END: dispatch
    println!("Shutting down");
    Ok(())
}

/// `Foo updated default/a (resourceVersion 41 -> 42)`
fn describe<K: Resource>(kind: &str, n: &Notification<K>) -> String {
    let obj = n.object();
    let name = format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any());
    let rv = |o: &K| o.resource_version().unwrap_or_default();
    match n {
        Notification::Added(o) => format!("{kind} added {name} (resourceVersion {})", rv(o)),
        Notification::Updated { old, new } => {
            format!(
                "{kind} updated {name} (resourceVersion {} -> {})",
                rv(old),
                rv(new)
            )
        }
        Notification::Deleted(o) => {
            format!("{kind} deleted {name} (last resourceVersion {})", rv(o))
        }
    }
}

/// `enqueue default/a` or `ignored (why)`
fn outcome(decision: Decision) -> String {
    match decision {
        Ok(key) => format!("enqueue {}", key_string(&key)),
        Err(why) => format!("ignored ({why})"),
    }
}
