//! Step 6's workshop starter, `workshop/step-6.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of xtask (`workshop::specs::step6`, declared
//! by xtask/build.rs because this file exists).

use crate::workshop::{Piece, Spec};

pub(super) const SPEC: Spec = Spec {
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
