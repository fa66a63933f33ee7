//! Step 3's workshop starter, `workshop/step-3.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of xtask (`workshop::specs::step3`, declared
//! by xtask/build.rs because this file exists).

use crate::workshop::{Piece, Spec};

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
