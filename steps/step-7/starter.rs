//! Step 7's workshop starter, `workshop/step-7.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of the course crate (`starters::specs::step7`, declared
//! in course/src/starters/specs.rs by `cargo xtask steps`).

use crate::starters::{Piece, Spec};

/// Step 7's program is its own `Controller` (steps/step-7/controller.rs); its
/// starter is step 6's program with the two things step 7 adds left as gaps.
pub(super) const SPEC: Spec = Spec {
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
