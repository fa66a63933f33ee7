//! Step 3's workshop starter, `workshop/step-3.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of the course crate (`starters::specs::step3`, declared
//! in course/src/starters/specs.rs by `cargo xtask steps`).

use crate::starters::{Piece, Spec};

pub(super) const SPEC: Spec = Spec {
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

Wanted: a Foo added or updated puts its own key in the queue (its
namespace and name: Go's `cache.ObjectToName`); a deleted Foo puts
nothing there, and the decision says why with the `Ignored` reason that
fits: its Deployment goes with it, the garbage collector's job.
Read: the chapter's \"The Rust code\" (the handlers return a decision, the
`Ignored` reasons); a key is kube's `ObjectRef`,
<https://docs.rs/kube-runtime/5.0.0/kube_runtime/reflector/struct.ObjectRef.html>.",
            todo: "step 3: the Foo handler (book/src/step-3.md#the-rust-code)",
        },
        Piece::Gap {
            path: Some("src/handlers.rs"),
            name: "on_deployment",
            doc: "Go: the Deployment informer's `AddFunc`, `UpdateFunc` and `DeleteFunc`.

Wanted: an update that changed nothing (old and new have the same
resourceVersion) is a resync replay, ignored as such, before anything
else. Every other change, an add, a real update or a delete, asks the
same question of the Deployment it carries: which Foo controls it? That
is `handle_object`'s job, below.
Read: the chapter's \"The Rust code\" (what a `Notification` carries, and
the diagram of one change); resourceVersion,
<https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions>.",
            todo: "step 3: the Deployment handler (book/src/step-3.md#the-rust-code)",
        },
        Piece::Gap {
            path: Some("src/handlers.rs"),
            name: "handle_object",
            doc: "Go: `handleObject`.

Wanted, as Go decides it: only the owner reference marked as the
controller counts (one that is merely an owner does not); a controller
of another kind than Foo is not ours; a Foo that is not in the Foo cache
(deleted, or not listed yet) leaves an orphan, ignored. Each refusal
says which it was, with its `Ignored` reason. Otherwise: that Foo's key,
the same key the Foo handler would queue.
Read: the chapter's \"The Rust code\" (`controller_of` is Go's
`GetControllerOf`); owners and controllers,
<https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/>;
looking an object up in a cache, `Store::get`,
<https://docs.rs/kube-runtime/5.0.0/kube_runtime/reflector/store/struct.Store.html>.",
            todo: "step 3: which Foo a Deployment belongs to (book/src/step-3.md#the-rust-code)",
        },
    ],
};
