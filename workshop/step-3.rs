//! Workshop starter, step 3: event handlers.
//!
//! Yours to write: the two handlers and `handle_object`, marked `WRITE THIS`
//! at the end (what a Foo change and a Deployment change put in the work
//! queue). The informers, the optional resync and the printing are done: each
//! notification is printed with your handler's decision, `enqueue
//! NAMESPACE/NAME` or `ignored (why)`.
//!
//! Read: book/src/step-3.md, "The Rust code". Check your work against a real
//! API server:
//!
//!     cargo xtask check step-3
//!
//! The project's own answer is src/handlers.rs (`on_foo`, `on_deployment`,
//! `handle_object`), used by steps/step-3/main.rs.

// The gaps leave what they will use unused until you fill them;
// delete this line when you are done.
#![allow(unused_variables, unused_imports, dead_code)]

use std::time::Duration;

use clap::Parser;
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::deployment::controller_of;
use sample_controller::diagnose::{Fatal, explain_watch, preflight};
use sample_controller::handlers::{Decision, Ignored, enqueue_foo};
use sample_controller::informer::{Notification, informer, key_string, resync};
use sample_controller::{Foo, rbac, signals, telemetry};

/// Print what the Foo and Deployment handlers see and what they would enqueue.
#[derive(Parser, Debug)]
#[command(name = "workshop-step-3", version)]
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

    // Go: the informers call the registered handler funcs; here we poll both
    // streams and call your two handlers below.
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

/// WRITE THIS. Go: the Foo informer's `AddFunc: enqueueFoo` and
/// `UpdateFunc: enqueueFoo(new)`; it registers no `DeleteFunc`.
///
/// Wanted: a Foo added or updated puts its own key in the queue (its
/// namespace and name: Go's `cache.ObjectToName`); a deleted Foo puts
/// nothing there, and the decision says why with the `Ignored` reason that
/// fits: its Deployment goes with it, the garbage collector's job.
/// Read: the chapter's "The Rust code" (the handlers return a decision, the
/// `Ignored` reasons); a key is kube's `ObjectRef`,
/// <https://docs.rs/kube-runtime/5.0.0/kube_runtime/reflector/struct.ObjectRef.html>.
fn on_foo(notification: &Notification<Foo>) -> Decision {
    todo!("step 3: the Foo handler (book/src/step-3.md#the-rust-code)")
}

/// WRITE THIS. Go: the Deployment informer's `AddFunc`, `UpdateFunc` and `DeleteFunc`.
///
/// Wanted: an update that changed nothing (old and new have the same
/// resourceVersion) is a resync replay, ignored as such, before anything
/// else. Every other change, an add, a real update or a delete, asks the
/// same question of the Deployment it carries: which Foo controls it? That
/// is `handle_object`'s job, below.
/// Read: the chapter's "The Rust code" (what a `Notification` carries, and
/// the diagram of one change); resourceVersion,
/// <https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions>.
fn on_deployment(notification: &Notification<Deployment>, foos: &Store<Foo>) -> Decision {
    todo!("step 3: the Deployment handler (book/src/step-3.md#the-rust-code)")
}

/// WRITE THIS. Go: `handleObject`.
///
/// Wanted, as Go decides it: only the owner reference marked as the
/// controller counts (one that is merely an owner does not); a controller
/// of another kind than Foo is not ours; a Foo that is not in the Foo cache
/// (deleted, or not listed yet) leaves an orphan, ignored. Each refusal
/// says which it was, with its `Ignored` reason. Otherwise: that Foo's key,
/// the same key the Foo handler would queue.
/// Read: the chapter's "The Rust code" (`controller_of` is Go's
/// `GetControllerOf`); owners and controllers,
/// <https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/>;
/// looking an object up in a cache, `Store::get`,
/// <https://docs.rs/kube-runtime/5.0.0/kube_runtime/reflector/store/struct.Store.html>.
fn handle_object(deployment: &Deployment, foos: &Store<Foo>) -> Decision {
    todo!("step 3: which Foo a Deployment belongs to (book/src/step-3.md#the-rust-code)")
}
