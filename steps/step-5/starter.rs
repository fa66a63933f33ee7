//! Step 5's workshop starter, `workshop/step-5.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of the course crate (`starters::specs::step5`, declared
//! in course/src/starters/specs.rs by `cargo xtask steps`).

use crate::starters::{Piece, Spec};

pub(super) const SPEC: Spec = Spec {
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
            doc: "Go: `syncHandler`.

Wanted: the Foo's Deployment made what the Foo asks for, decided in Go's
order:
- a Foo without a `deploymentName`: an error in the log, and no retry
  (retrying cannot help; the Foo's next change brings it back);
- no Deployment of that name in the Deployment cache: create the one
  `new_deployment` describes (src/deployment.rs), written under this
  controller's field manager, `FIELD_MANAGER`;
- a Deployment of that name this Foo does not control: change nothing,
  and fail the sync with the error that says someone else has it
  (`Error::ResourceExists`), so that it is retried with backoff;
- the Foo sets replicas and the Deployment's count differs: replace the
  whole Deployment with what `new_deployment` describes, as Go's `Update`
  does (what others changed in it goes too, as in Go).

A key whose Foo left the cache never gets here: the workers drop it, as
Go's Foo-not-found branch does.
Read: the chapter's \"The Rust code\" and \"What the Go code does\"; the
cache, `Store`,
<https://docs.rs/kube-runtime/5.0.0/kube_runtime/reflector/store/struct.Store.html>;
writing, `Api`, <https://docs.rs/kube/5.0.0/kube/struct.Api.html>; who
controls what,
<https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/>.",
            todo: "step 5: syncHandler (book/src/step-5.md#the-rust-code)",
        },
    ],
};
