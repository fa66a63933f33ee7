//! Step 4's workshop starter, `workshop/step-4.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of the course crate (`starters::specs::step4`, declared
//! in course/src/starters/specs.rs by `cargo xtask steps`).

use crate::starters::{Piece, Spec};

pub(super) const SPEC: Spec = Spec {
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
- never more than `workers` syncs at once, however many keys wait;
- a key queued many times while it waits is synced once;
- a key queued while it is being synced waits, and is synced once more
  afterwards: one key never runs in two workers at once;
- a failed sync is logged (`tracing::error!` with the message
  `\"Error syncing; requeuing for later retry\"`) and retried after the
  delay `limiter` gives that key, which doubles with each failure in a
  row (5 ms, 10 ms, 20 ms, …); a success starts the key's delays over
  (`RateLimiter` in src/workqueue.rs: the limiter Go's `NewController` builds);
- a key whose Foo is gone from `cache` when its turn comes is Go's
  `syncHandler` finding no Foo: logged with the key and Go's message
  (`\"Foo referenced by item in work queue no longer exists\"`), not
  retried, and its failures forgotten as after a success.

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
its rate limiter: your `run`'s workers over `queue`, taking no new key once
`shutdown` fires, with the rate limiter Go's sample-controller gives its
queue (`RateLimiter` in src/workqueue.rs has a constructor for it).",
            todo: "step 4: the queue until shutdown (book/src/step-4.md#the-rust-code)",
        },
    ],
};
