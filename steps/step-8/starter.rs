//! Step 8's workshop starter, `workshop/step-8.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of the course crate (`starters::specs::step8`, declared
//! in course/src/starters/specs.rs by `cargo xtask steps`).

use crate::starters::{Piece, Spec};

/// Step 8's program is steps/step-8/src/reconciler.rs with production flags; its
/// starter copies the reference's `run` and `reconcile`, around the
/// learner's `sync`.
pub(super) const SPEC: Spec = Spec {
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
it changes something. Wanted, in order:
- a Foo without a `deploymentName`: an error in the log, no retry;
- nothing decided before the Deployment cache holds its first list
  (kube's `Controller` waits for the Foo cache only; `ctx.deployments_synced`);
- no Deployment in the cache: the Foo reports 0 available first, and a
  Foo the API server no longer has gets no Deployment (the Foo cache can
  lag behind the Deployment cache, and a Deployment made for a deleted Foo
  is garbage-collected, which triggers the Foo again, and again: the
  chapter's Go → Rust table, the create's row). Then the Deployment is
  created, never merged into one of that name the cache has not seen;
- a Deployment this Foo does not control: the Warning Event and the
  error, as in step 7 (`ensure_controlled`);
- a Deployment that differs from `new_deployment(foo)` in what this
  controller sets (`drifted`, yours too): written by server-side apply of
  only those fields, taking back what someone changed, and never applied
  to a Deployment that replaced the cached one;
- the status (`update_foo_status`, yours too);
- a Normal Synced Event only when this sync wrote something.

Read: the chapter's \"The idioms, one by one\"; server-side apply,
<https://kubernetes.io/docs/reference/using-api/server-side-apply/>, and
kube's `Patch::Apply`,
<https://docs.rs/kube/5.0.0/kube/api/enum.Patch.html>.",
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
            doc: "Go: `updateFooStatus`. Wanted: the Foo's status says its
Deployment's available replicas (0 while it has none), written only when
it differs from what the Foo says already, and by server-side apply of
the status alone (recorded as operation Apply, owned by `FIELD_MANAGER`,
no resourceVersion to conflict on). Returns whether it wrote.
Read: the chapter's \"The status: applied, and only when it differs\";
`Api`'s status methods, <https://docs.rs/kube/5.0.0/kube/struct.Api.html>.",
            todo: "step 8: the status, applied only when it differs (book/src/step-8.md#the-status-applied-and-only-when-it-differs)",
        },
    ],
};
