//! Step 5's workshop starter, `workshop/step-5.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of xtask (`workshop::specs::step5`, declared
//! by xtask/build.rs because this file exists).

use crate::workshop::{Piece, Spec};

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
