//! Step 6's workshop starter, `workshop/step-6.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of the course crate (`starters::specs::step6`, declared
//! in course/src/starters/specs.rs by `cargo xtask steps`).

use crate::starters::{Piece, Spec};

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
            doc: "Go: `updateFooStatus`.

Wanted: the Foo's status says how many replicas its Deployment has
available (what runs, not what is asked for; 0 while it has none), and
it is written as Go writes it: the whole Foo to the status subresource
(Go's `UpdateStatus`, a PUT, under `FIELD_MANAGER`), from a copy of the
cached Foo, which is shared and read-only (Go: `DeepCopy`). A failed
write is the sync's error: the key goes back to the queue, as in Go.
Read: the chapter's \"The Rust code\"; the status subresource,
<https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#status-subresource>;
`Api`'s status methods, <https://docs.rs/kube/5.0.0/kube/struct.Api.html>;
a Deployment's status fields,
<https://docs.rs/k8s-openapi/0.29.0/k8s_openapi/api/apps/v1/struct.DeploymentStatus.html>.",
            todo: "step 6: updateFooStatus (book/src/step-6.md#the-rust-code)",
        },
    ],
};
