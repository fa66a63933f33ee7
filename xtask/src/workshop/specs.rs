//! What each starter takes from the steps, and what only it says: the
//! header, each gap's instructions, and the edits that call the learner's
//! code. Every other line of a starter is copied from the files named here
//! when `cargo xtask workshop` runs.

use super::{Piece, Spec};

/// Every starter, by step.
pub const SPECS: &[Spec] = &[STEP_2, STEP_3, STEP_4, STEP_5, STEP_6, STEP_7, STEP_8];

const STEP_2: Spec = Spec {
    step: 2,
    title: "informers and listers",
    yours: "the two functions marked `WRITE THIS` at the end (the Foo and Deployment \
            informers, and the wait for both caches). Everything else, the flags, the \
            client and the printing of the caches, is done.",
    read: "The Rust code",
    answer: "steps/step-2/main.rs",
    allow: "unused_variables, unused_imports, dead_code",
    solutions: &[
        "steps/step-2/main.rs:informers",
        "steps/step-2/main.rs:start",
        "steps/step-2/main.rs:wait_for_sync",
    ],
    pieces: &[
        Piece::File {
            path: "steps/step-2/main.rs",
            regions: &[(
                "informers",
                "    let (foos, deployments) = start_informers(&args.namespace, &client);\n",
            )],
            drop: &["start"],
            edits: &[
                (
                    "use kube::{Resource, ResourceExt};",
                    "use kube::{Client, Resource, ResourceExt};",
                ),
                (
                    "synced = future::try_join(foos.wait_until_ready(), deployments.wait_until_ready()) => synced?,",
                    "synced = wait_for_cache_sync(&foos, &deployments) => synced?,",
                ),
            ],
        },
        Piece::Exercise {
            starter: "/// WRITE THIS. Go: the two informer factories' `Foos()` and `Deployments()`
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
///   (`explain_watch(&err, \"foos\")` words them; the watcher retries by itself).
///
/// Return the two readers.
fn start_informers(namespace: &NamespaceFlag, client: &Client) -> (Store<Foo>, Store<Deployment>) {
    todo!(\"step 2: start the Foo and Deployment informers (book/src/step-2.md#the-rust-code)\")
}

/// WRITE THIS. Go: `cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.foosSynced)`.
///
/// Wait until both caches hold a full list. A `Store` can tell you
/// (`wait_until_ready`); wait for both at once (`future::try_join`).
async fn wait_for_cache_sync(
    foos: &Store<Foo>,
    deployments: &Store<Deployment>,
) -> anyhow::Result<()> {
    todo!(\"step 2: wait for both caches (book/src/step-2.md#the-rust-code)\")
}
",
            finished: "/// Go: the informer factories' `Foos()` and `Deployments()` informers,
/// their `Lister()`s and `factory.Start`.
fn start_informers(namespace: &NamespaceFlag, client: &Client) -> (Store<Foo>, Store<Deployment>) {
    let (foos, foo_writer) = reflector::store::<Foo>();
    let foo_informer = watch_list(namespace.api::<Foo>(client))
        .default_backoff()
        .reflect(foo_writer);
    let (deployments, deployment_writer) = reflector::store::<Deployment>();
    let deployment_informer = watch_list(namespace.api::<Deployment>(client))
        .default_backoff()
        .reflect(deployment_writer);
    tokio::spawn(foo_informer.for_each(|event| {
        if let Err(err) = event {
            tracing::warn!(\"{}\", explain_watch(&err, \"foos\"));
        }
        future::ready(())
    }));
    tokio::spawn(deployment_informer.for_each(|event| {
        if let Err(err) = event {
            tracing::warn!(\"{}\", explain_watch(&err, \"deployments\"));
        }
        future::ready(())
    }));
    (foos, deployments)
}

/// Go: `cache.WaitForCacheSync`.
async fn wait_for_cache_sync(
    foos: &Store<Foo>,
    deployments: &Store<Deployment>,
) -> anyhow::Result<()> {
    future::try_join(foos.wait_until_ready(), deployments.wait_until_ready()).await?;
    Ok(())
}
",
        },
    ],
};

const STEP_3: Spec = Spec {
    step: 3,
    title: "event handlers",
    yours: "the two handlers and `handle_object`, marked `WRITE THIS` at the end (what \
            a Foo change and a Deployment change put in the work queue). The informers, the optional \
            resync and the printing are done: each notification is printed with your \
            handler's decision, `enqueue NAMESPACE/NAME` or `ignored (why)`.",
    read: "The Rust code",
    answer: "src/handlers.rs (`on_foo`, `on_deployment`, `handle_object`), used by \
             steps/step-3/main.rs",
    allow: "unused_variables, unused_imports, dead_code",
    solutions: &[
        "src/handlers.rs:foo_handler",
        "src/handlers.rs:deployment_handler",
    ],
    pieces: &[
        Piece::File {
            path: "steps/step-3/main.rs",
            regions: &[],
            drop: &[],
            edits: &[
                (
                    "use sample_controller::handlers::{Decision, on_deployment, on_foo};",
                    "use kube::runtime::reflector::{ObjectRef, Store};\n\
                     use sample_controller::deployment::controller_of;\n\
                     use sample_controller::handlers::{Decision, Ignored, enqueue_foo};",
                ),
                (
                    "call the handlers from src/handlers.rs ourselves.",
                    "call your two handlers below.",
                ),
            ],
        },
        Piece::Gap {
            path: Some("src/handlers.rs"),
            name: "on_foo",
            doc: "Go: the Foo informer's `AddFunc: enqueueFoo` and
`UpdateFunc: enqueueFoo(new)`; it registers no `DeleteFunc`.

An added or updated Foo: its key, `Ok(ObjectRef::from(foo.as_ref()))`.
A deleted Foo: nothing to do, its Deployment is garbage-collected with
it: `Err(Ignored::FooDeleted)`.",
            todo: "step 3: the Foo handler (book/src/step-3.md#the-rust-code)",
        },
        Piece::Gap {
            path: Some("src/handlers.rs"),
            name: "on_deployment",
            doc: "Go: the Deployment informer's handlers.

- An update whose old and new resourceVersion are equal is a resync
  replay, not a change: `Err(Ignored::ResyncReplay)`.
- Otherwise (added, updated, deleted: `notification.object()`), the Foo
  that controls the Deployment, if any: `handle_object` below.",
            todo: "step 3: the Deployment handler (book/src/step-3.md#the-rust-code)",
        },
        Piece::Gap {
            path: Some("src/handlers.rs"),
            name: "handle_object",
            doc: "Go: `handleObject`. Find the owner reference marked
`controller: true` (`controller_of`); none: `Err(Ignored::NoController)`;
not a `Foo`: `Err(Ignored::NotAFoo(kind))`. Look that Foo up in the Foo
cache (`foos.get(&ObjectRef::new(name).within(ns))`); not there:
`Err(Ignored::Orphan(name))`; there: its key (`enqueue_foo`).",
            todo: "step 3: which Foo a Deployment belongs to (book/src/step-3.md#the-rust-code)",
        },
    ],
};

const STEP_4: Spec = Spec {
    step: 4,
    title: "the rate-limited work queue",
    yours: "`run` and `run_until`, marked `WRITE THIS` at the end: the workers that \
            take keys from the handlers' queue and sync them, with Go's rate limiter \
            for retries. The informers and handlers (step 3's, from src/handlers.rs) and a \
            stand-in sync that only logs (`process`, with `--fail-first` and \
            `--sync-millis` to make it fail or take time) are done.",
    read: "The Rust code",
    answer: "src/workqueue.rs (`run`, `run_until`), used by steps/step-4/main.rs",
    allow: "unused_variables, unused_imports, unused_mut, dead_code",
    solutions: &["src/workqueue.rs:run", "src/workqueue.rs:run_until"],
    pieces: &[
        Piece::File {
            path: "steps/step-4/main.rs",
            regions: &[],
            drop: &[],
            edits: &[
                (
                    "use sample_controller::workqueue;",
                    "use std::convert::Infallible;\n\
                     use std::error::Error as StdError;\n\
                     use std::fmt::Debug;\n\
                     use std::hash::Hash;\n\
                     use futures::{Stream, StreamExt};\n\
                     use kube::Resource;\n\
                     use kube::runtime::controller::{self, Action, applier};\n\
                     use kube::runtime::reflector::Store;\n\
                     use sample_controller::signals::Shutdown;\n\
                     use sample_controller::workqueue::RateLimiter;",
                ),
                (
                    "processNextWorkItem calling our sync (src/workqueue.rs).",
                    "processNextWorkItem calling our sync: yours, below.",
                ),
                ("    workqueue::run_until(", "    run_until("),
            ],
        },
        Piece::Gap {
            path: Some("src/workqueue.rs"),
            name: "run",
            doc: "Go: `runWorker` and `processNextWorkItem`.

Take keys from `queue` until it ends and sync each one's object (looked up
in `cache`) with `sync`, at most `workers` at a time, then let the syncs in
flight finish. Go's work queue guarantees, and the check tests:
- a key queued many times while it waits is synced once;
- a key queued while it is being synced waits, and is synced once more
  afterwards: one key never runs in two workers at once;
- a failed sync is logged (`tracing::error!` with the message
  `\"Error syncing; requeuing for later retry\"`) and retried after
  `limiter.when(&key)` (5 ms, 10 ms, 20 ms, … for that key); a success
  resets the key's delays (`limiter.forget(&key)`).

kube-runtime has all of that but the rate limiter, in
`kube::runtime::controller::applier`: what it takes and what each of its
closures must return is on docs.rs,
<https://docs.rs/kube-runtime/5.0.0/kube_runtime/controller/fn.applier.html>,
and the chapter says which of Go's calls each one plays. Two things its
signature asks that the compiler words badly: the reconcile's future must
be `Unpin` (`Box::pin(async move { … })` makes one), and the queue is a
stream of `Result`s (`.map(Ok::<_, Infallible>)`).",
            todo: "step 4: the workers and the rate-limited retries (book/src/step-4.md#the-rust-code)",
        },
        Piece::Gap {
            path: Some("src/workqueue.rs"),
            name: "run_until",
            doc: "Go: `Run(ctx, workers)`, after `NewController` built the queue with
its rate limiter: `run` over `queue` until `shutdown`, with
sample-controller's limiter (`RateLimiter::sample_controller()`).",
            todo: "step 4: the queue until shutdown (book/src/step-4.md#the-rust-code)",
        },
    ],
};

const STEP_5: Spec = Spec {
    step: 5,
    title: "syncHandler",
    yours: "`sync_handler`, marked `WRITE THIS` at the end: create the Foo's \
            Deployment, refuse one the Foo does not control, fix its replicas. The \
            informers, handlers and workers of steps 2–4 are done.",
    read: "The Rust code",
    answer: "steps/step-5/main.rs",
    allow: "unused_variables, unused_imports, dead_code",
    solutions: &["steps/step-5/main.rs:sync_handler"],
    pieces: &[
        Piece::File {
            path: "steps/step-5/main.rs",
            regions: &[],
            drop: &[],
            edits: &[],
        },
        Piece::Gap {
            path: None,
            name: "sync_handler",
            doc: "Go: `syncHandler`. Compares the Foo with its Deployment and
converges the two. (A key whose Foo left the cache never gets here: the
workers drop it, as Go's Foo-not-found branch does.)

In order, as Go does:
- an empty `foo.spec.deployment_name`: log it (`tracing::error!`) and
  return `Ok(())`; retrying cannot help;
- read the Deployment from the cache, `ctx.deployments.get(&ObjectRef::new(name).within(&namespace))`;
  not there: create `new_deployment(&foo)` (src/deployment.rs) with the
  API (`Api::namespaced`, `PostParams` with `field_manager: FIELD_MANAGER`);
- the Deployment is not controlled by this Foo (`is_controlled_by`): return
  `Err(Error::ResourceExists(name))` and change nothing;
- the Foo sets replicas and the Deployment's differ: replace it with
  `new_deployment(&foo)` (`api.replace`, Go's Update).",
            todo: "step 5: syncHandler (book/src/step-5.md#the-rust-code)",
        },
    ],
};

const STEP_6: Spec = Spec {
    step: 6,
    title: "status",
    yours: "`update_foo_status`, marked `WRITE THIS` at the end, which `sync_handler` \
            (step 5's, done) calls after each sync.",
    read: "The Rust code",
    answer: "steps/step-6/main.rs",
    allow: "unused_variables, unused_imports",
    solutions: &["steps/step-6/main.rs:update_foo_status"],
    pieces: &[
        Piece::File {
            path: "steps/step-6/main.rs",
            regions: &[],
            drop: &[],
            edits: &[],
        },
        Piece::Gap {
            path: None,
            name: "update_foo_status",
            doc: "Go: `updateFooStatus`. Writes the Deployment's available
replicas into the Foo's status.

The Foo from the cache is shared and read-only (`&Foo` out of an `Arc`):
change a clone (Go: `DeepCopy`). Set its `status` to a `FooStatus` whose
`available_replicas` is the Deployment's `status.availableReplicas` (0 if
it has none yet), and send it with `replace_status` (a PUT to the
`/status` subresource, Go's `UpdateStatus`; `PostParams` with
`field_manager: FIELD_MANAGER`). An error goes back to the queue, as in Go.",
            todo: "step 6: updateFooStatus (book/src/step-6.md#the-rust-code)",
        },
    ],
};

/// Step 7's program is its own `Controller` (steps/step-7/controller.rs); its
/// starter is step 6's program with the two things step 7 adds left as gaps.
const STEP_7: Spec = Spec {
    step: 7,
    title: "the whole controller",
    yours: "Go's resync period (`resync_period`) and the Events a sync records \
            (`record`), marked `WRITE THIS` at the end. Steps 2–6 (informers, handlers, \
            workers, `sync_handler`, `update_foo_status`, all copied from step 6) are \
            done; the workers already stop on SIGTERM and let syncs in flight finish.",
    read: "The Rust code",
    answer: "steps/step-7/controller.rs (`Controller`), used by steps/step-7/main.rs",
    allow: "unused_variables, unused_imports",
    solutions: &["steps/step-7/controller.rs:sync_handler"],
    pieces: &[
        Piece::File {
            path: "steps/step-6/main.rs",
            regions: &[],
            drop: &[],
            edits: &[
                (
                    "use std::sync::Arc;",
                    "use std::sync::Arc;\nuse std::time::Duration;",
                ),
                (
                    "use sample_controller::vocabulary::{Error, FIELD_MANAGER};",
                    "use kube::runtime::events::{EventType, Recorder};\n\
                     use sample_controller::vocabulary::{\n\
                     ERR_RESOURCE_EXISTS, Error, FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED,\n\
                     message_resource_exists, publish, recorder,\n};",
                ),
                (
                    "/// Run the sync loop and keep each Foo's status up to date.",
                    "/// The sample controller: one nginx Deployment per Foo, with status and Events.",
                ),
                (
                    "#[command(name = \"step-6\", version)]",
                    "#[command(name = \"workshop-step-7\", version)]",
                ),
                (
                    "    deployments: Store<Deployment>,\n}",
                    "    deployments: Store<Deployment>,\n    \
                     /// Go: `c.recorder`, from `record.NewBroadcaster` (`controller::recorder`).\n    \
                     recorder: Recorder,\n}",
                ),
                ("rbac::WRITE_STATUS", "rbac::GO_CONTROLLER"),
                (
                    "        None,\n    );",
                    "        // Go: the informer factories' resync period: yours.\n        \
                     resync_period(),\n    );",
                ),
                (
                    "    let ctx = Arc::new(Context {\n        client,",
                    "    let ctx = Arc::new(Context {\n        recorder: recorder(client.clone()),\n        client,",
                ),
                (
                    "    // The workers of step 4, now calling the real sync.",
                    "    // Step 6's workers; after each sync, your `record` writes its Event.\n    \
                     // They stop taking keys on SIGTERM and let the syncs in flight finish.",
                ),
                (
                    "        |foo| sync_handler(foo, ctx.clone()),",
                    "        |foo| {\n\
                     let ctx = ctx.clone();\n\
                     async move {\n\
                     let result = sync_handler(foo.clone(), ctx.clone()).await;\n\
                     record(&ctx.recorder, &foo, &result).await;\n\
                     result\n\
                     }\n\
                     },",
                ),
            ],
        },
        Piece::Exercise {
            starter: "/// WRITE THIS. Go: the resync period main.go gives the informer factories.
///
/// How often the informers replay their whole cache to the handlers, so that
/// every Foo is synced again even when nothing changed: the period Go's
/// sample-controller sets (`None` is no resync, steps 2–6).
fn resync_period() -> Option<Duration> {
    todo!(\"step 7: Go's resync period (book/src/step-7.md#the-rust-code)\")
}

/// WRITE THIS. Go: the `c.recorder.Event(...)` calls in `syncHandler`.
///
/// The Events Go's syncHandler records about the Foo, after the sync
/// `result`: which ones, of which type, with which reason and message, and
/// when none: book/src/step-7.md, its Go part. The reasons and messages
/// are Go's constants, in src/vocabulary.rs, which also has
/// `publish` to record one.
async fn record(recorder: &Recorder, foo: &Foo, result: &Result<(), Error>) {
    todo!(\"step 7: the Events (book/src/step-7.md#the-rust-code)\")
}
",
            finished: "/// Go: `NewSharedInformerFactory(client, time.Second*30)`.
fn resync_period() -> Option<Duration> {
    Some(Duration::from_secs(30))
}

/// Go: the `c.recorder.Event(...)` calls in `syncHandler`.
async fn record(recorder: &Recorder, foo: &Foo, result: &Result<(), Error>) {
    match result {
        Ok(()) => {
            publish(recorder, foo, EventType::Normal, SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED).await
        }
        Err(Error::ResourceExists(name)) => {
            let message = message_resource_exists(name);
            publish(recorder, foo, EventType::Warning, ERR_RESOURCE_EXISTS, &message).await
        }
        Err(_) => {}
    }
}
",
        },
    ],
};

/// Step 8's program is steps/step-8/src/reconciler.rs with production flags; its
/// starter copies the reference's `run` and `reconcile`, around the
/// learner's `sync`.
const STEP_8: Spec = Spec {
    step: 8,
    title: "the kube-rs way",
    yours: "`sync`, with its two helpers `drifted` and `update_foo_status`, marked \
            `WRITE THIS` at the end: step 7's sync rewritten so that every write is a \
            server-side apply of only what this controller owns, and made only when it \
            changes something. kube's `Controller` (its watches, the Deployment \
            predicate, per-key backoff, graceful shutdown: steps/step-8/src/reconciler.rs \
            `run`, copied) and `reconcile` around your `sync` are done.",
    read: "The idioms, one by one",
    answer: "steps/step-8/src/reconciler.rs (`sync`, `drifted`, `update_foo_status`), used by \
             steps/step-8/main.rs",
    allow: "unused_variables, unused_imports, dead_code",
    solutions: &[
        "steps/step-8/src/reconciler.rs:sync",
        "steps/step-8/src/reconciler.rs:drifted",
        "steps/step-8/src/reconciler.rs:update_foo_status",
    ],
    pieces: &[
        Piece::Own(
            "use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use futures::{StreamExt, future};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::vocabulary::{
    FIELD_MANAGER, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED, ensure_controlled, publish,
};
use sample_controller::deployment::new_deployment;
use sample_controller::diagnose::{Fatal, check_reachable};
use sample_controller::informer::watch_list;
use sample_controller::signals::Shutdown;
use sample_controller::{Foo, FooStatus, signals, telemetry};
use step8::caches::{Synced, drop_managed_fields, relevant_changes, settled, strip_deployment};
use step8::error::Error;
use step8::probes::Probes;
use step8::reconciler::{Context, error_policy, log_result, report_ready};

/// The sample controller, the kube-rs way: one nginx Deployment per Foo.
#[derive(Parser, Debug)]
#[command(name = \"workshop-step-8\", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// How many Foos may reconcile at once. Go: `controller.Run(ctx, 2)`.
    #[arg(long, default_value_t = 2)]
    workers: u16,
}

/// Not the reference's `main` (steps/step-8/main.rs), which adds leader election,
/// probes, metrics and RBAC warnings: the same `run` (below, the
/// reference's), whose `reconcile` calls your `sync`.
#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();
    let shutdown = signals::setup_signal_handler()?;
    let connection = client_from_flags(&args.client).await?;
    check_reachable(&connection, &args.namespace).await?;
    let client = connection.client;

    // kube's Controller over Foos and the Deployments they own, calling
    // `reconcile` below.
    run(
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
",
        ),
        Piece::Item {
            path: "steps/step-8/src/reconciler.rs",
            name: "run",
        },
        Piece::Item {
            path: "steps/step-8/src/reconciler.rs",
            name: "reconcile",
        },
        Piece::Gap {
            path: Some("steps/step-8/src/reconciler.rs"),
            name: "sync",
            doc: "Step 7's sync (Go's `syncHandler`), each write made only when
it changes something. In order:
- an empty `foo.spec.deployment_name`: log it, return `Ok(())`;
- wait for the Deployment cache (`ctx.deployments_synced.wait().await?`:
  kube's Controller waits only for the Foo cache);
- the Deployment not in `ctx.deployments`: first apply the status a Foo
  without a Deployment has (`available_replicas: 0`, with the Foo's UID in
  the patch's metadata); a 404 that names the Foo means the Foo is gone: log
  it and return `Ok(())` without creating anything. Why first: the Foo cache
  can lag behind the Deployment cache, and a Deployment created for a Foo
  the API server already deleted is garbage-collected, which triggers the
  Foo again, and again (book/src/step-8.md#go--rust, the create's row).
  Then create `new_deployment(foo)` (a create, not an apply: an apply would
  merge into a Deployment of that name someone else made, which the cache
  has not seen yet);
- not controlled by the Foo: `ensure_controlled(&ctx.recorder, &d, foo).await?`
  (records the Warning Event and returns the error);
- `drifted(current, desired)`: server-side apply the desired Deployment,
  forced (`PatchParams::apply(FIELD_MANAGER).force()`, `Patch::Apply`),
  with the cached Deployment's UID in its metadata, so that the apply fails
  rather than touch a Deployment that replaced it;
- `update_foo_status`;
- if anything was written, a Normal `SUCCESS_SYNCED` Event (`publish`);
  none when nothing changed.",
            todo: "step 8: sync by server-side apply (book/src/step-8.md#server-side-apply-instead-of-update)",
        },
        Piece::Helper {
            path: "steps/step-8/src/reconciler.rs",
            name: "report_none_available",
        },
        Piece::Helper {
            path: "steps/step-8/src/reconciler.rs",
            name: "names_foo",
        },
        Piece::Gap {
            path: Some("steps/step-8/src/reconciler.rs"),
            name: "drifted",
            doc: "Whether `current` differs from `desired` in a field this
controller sets: the replicas (when the Foo sets them), the containers'
names and images, or a pod label of `desired` missing or different in
`current`. Labels others added, and everything else, are not drift.",
            todo: "step 8: drift (book/src/step-8.md#apply-only-what-drifted)",
        },
        Piece::Gap {
            path: Some("steps/step-8/src/reconciler.rs"),
            name: "update_foo_status",
            doc: "Go: `updateFooStatus`. If the Foo's status differs from
`FooStatus { available_replicas }` (the Deployment's, 0 if none), apply
only the status: `patch_status` with `Patch::Apply` of
`{\"apiVersion\": …, \"kind\": \"Foo\", \"status\": …}` and
`PatchParams::apply(FIELD_MANAGER).force()`. Returns whether it wrote.",
            todo: "step 8: the status, applied only when it differs (book/src/step-8.md#the-status-applied-and-only-when-it-differs)",
        },
    ],
};
