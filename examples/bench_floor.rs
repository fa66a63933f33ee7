//! The floor of `cargo xtask bench`: the requests a converging sample
//! controller must make for each new Foo, and nothing else, sent as soon as
//! the Foo exists.
//!
//! Per Foo: the Deployment create, a status write once it exists (0
//! available: what a controller's first sync reports), the `Synced` Event,
//! and the status write with the available replicas once the Deployment is
//! available. No cache lookups, no drift check, no retries, no requeues.
//!
//! What makes it a floor: a controller cannot start a Foo's requests
//! before its watch shows the Foo, and cannot report a Deployment before it
//! exists; this program does exactly that much and no more. Each Foo's
//! create and first status write start as soon as the watch shows it, with
//! no limit on how many Foos are in flight (`--workers` sets one; the
//! controllers have 2 workers, so they are measured against no limit, not
//! against their own); the Event, and the status write once the Deployment
//! is available, are sent at once, outside that chain. It watches Foos and
//! Deployments in all namespaces, as the controllers under test do, and
//! like them it is a release build of its own.
//!
//!     cargo build --release --example bench_floor
//!     target/release/examples/bench_floor --kubeconfig PATH [--workers 2]

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use clap::Parser;
use futures::channel::mpsc;
use futures::{StreamExt, future};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::events::{EventType, Recorder};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use sample_controller::Foo;
use sample_controller::config::{ClientFlags, client_from_flags};
use sample_controller::deployment::new_deployment;
use sample_controller::informer::watch_list;
use sample_controller::vocabulary::{
    FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED, publish, recorder,
};
use tokio::sync::oneshot;

/// The benchmark's floor: a sample controller's necessary requests only.
#[derive(Parser, Debug)]
#[command(name = "bench_floor")]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    /// How many Foos may be between their Deployment create and their first
    /// status write at once; 0 (the default): no limit, each Foo's first
    /// requests start as soon as the watch shows it.
    #[arg(long, default_value_t = 0)]
    workers: usize,
}

/// Where a Foo is between its first status write and its last.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The first status (0 available) is written; the Deployment is not available yet.
    Reported,
    /// The Deployment became available before the first status write returned.
    AvailableEarly(i32),
    /// The final status is sent.
    Done,
}

/// Per Foo (namespace, name): its phase.
type Phases = Arc<Mutex<HashMap<(String, String), Phase>>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let client = client_from_flags(&args.client).await?.client;
    let recorder = recorder(client.clone());
    let phases: Phases = Arc::default();

    // New Foos, in the order the watch sees them.
    let (new_foos, queue) = mpsc::unbounded::<Foo>();
    let (foos_listed, foos_ready) = oneshot::channel();
    tokio::spawn(watch_foos(client.clone(), new_foos, foos_listed));
    let (deployments_listed, deployments_ready) = oneshot::channel();
    tokio::spawn(watch_deployments(
        client.clone(),
        phases.clone(),
        deployments_listed,
    ));
    let _ = future::join(foos_ready, deployments_ready).await;
    // The benchmark starts creating Foos when it reads this line.
    tracing::info!(workers = args.workers, "Starting workers");

    queue
        .for_each_concurrent((args.workers > 0).then_some(args.workers), |foo| {
            let (client, recorder, phases) = (client.clone(), recorder.clone(), phases.clone());
            async move {
                if let Err(err) = first_sync(&client, &recorder, &phases, foo).await {
                    tracing::error!(error = %err, "request failed");
                }
            }
        })
        .await;
    Ok(())
}

/// Sends each Foo not seen before to `new_foos`; signals `listed` once the
/// initial list is in.
async fn watch_foos(
    client: Client,
    new_foos: mpsc::UnboundedSender<Foo>,
    listed: oneshot::Sender<()>,
) {
    let mut listed = Some(listed);
    let mut seen = HashSet::new();
    let mut events = watch_list(Api::<Foo>::all(client)).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(foo) | watcher::Event::InitApply(foo)) => {
                if seen.insert(foo.uid()) && new_foos.unbounded_send(foo).is_err() {
                    return;
                }
            }
            Ok(watcher::Event::InitDone) => {
                if let Some(tx) = listed.take() {
                    let _ = tx.send(());
                }
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "Foo watch"),
        }
    }
}

/// Writes the final status of each Foo whose Deployment became available;
/// signals `listed` once the initial list is in.
async fn watch_deployments(client: Client, phases: Phases, listed: oneshot::Sender<()>) {
    let mut listed = Some(listed);
    let mut events = watch_list(Api::<Deployment>::all(client.clone())).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => {
                let Some(available) = available(&d) else {
                    continue;
                };
                let Some(owner) = d.owner_references().iter().find(|o| o.kind == "Foo") else {
                    continue;
                };
                let key = (d.namespace().unwrap_or_default(), owner.name.clone());
                let mut phases = phases.lock().unwrap_or_else(PoisonError::into_inner);
                match phases.get(&key).copied() {
                    Some(Phase::Reported) => {
                        phases.insert(key.clone(), Phase::Done);
                        tokio::spawn(write_status(client.clone(), key, available));
                    }
                    None => {
                        phases.insert(key, Phase::AvailableEarly(available));
                    }
                    Some(Phase::AvailableEarly(_) | Phase::Done) => {}
                }
            }
            Ok(watcher::Event::InitDone) => {
                if let Some(tx) = listed.take() {
                    let _ = tx.send(());
                }
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "Deployment watch"),
        }
    }
}

/// The available replicas of a Deployment that has all it asks for.
fn available(d: &Deployment) -> Option<i32> {
    let wanted = d.spec.replicas.unwrap_or(1);
    let available = d.status.as_ref()?.available_replicas.unwrap_or(0);
    (available >= wanted).then_some(available)
}

/// A controller's first sync of a new Foo: the Deployment create and the
/// status write, in a worker; the Event after them, outside it.
async fn first_sync(
    client: &Client,
    recorder: &Recorder,
    phases: &Phases,
    foo: Foo,
) -> anyhow::Result<()> {
    let namespace = foo.namespace().unwrap_or_default();
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PostParams::default()
    };
    let created = Api::<Deployment>::namespaced(client.clone(), &namespace)
        .create(&params, &new_deployment(&foo))
        .await?;
    let reported = created
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let key = (namespace, foo.name_any());
    write_status(client.clone(), key.clone(), reported).await;
    {
        let mut phases = phases.lock().unwrap_or_else(PoisonError::into_inner);
        match phases.insert(key.clone(), Phase::Reported) {
            Some(Phase::AvailableEarly(available)) => {
                phases.insert(key.clone(), Phase::Done);
                tokio::spawn(write_status(client.clone(), key, available));
            }
            Some(Phase::Done) => {
                phases.insert(key, Phase::Done);
            }
            Some(Phase::Reported) | None => {}
        }
    }
    let recorder = recorder.clone();
    tokio::spawn(async move {
        publish(
            &recorder,
            &foo,
            EventType::Normal,
            SUCCESS_SYNCED,
            MESSAGE_RESOURCE_SYNCED,
        )
        .await;
    });
    Ok(())
}

/// Merges `availableReplicas` into the status of the Foo `key`.
async fn write_status(client: Client, (namespace, name): (String, String), available: i32) {
    let status = serde_json::json!({"status": {"availableReplicas": available}});
    if let Err(err) = Api::<Foo>::namespaced(client, &namespace)
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
        .await
    {
        tracing::error!(foo = %name, error = %err, "status write failed");
    }
}
