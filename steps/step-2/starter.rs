//! Step 2's workshop starter, `workshop/step-2.rs`: what it takes from
//! this step, and what only it says (its header, each gap's instructions,
//! the edits that call the learner's code). `cargo xtask workshop` writes
//! the starter from it. Part of the course crate (`starters::specs::step2`, declared
//! in course/src/starters/specs.rs by `cargo xtask steps`).

use crate::starters::{Piece, Spec};

pub(super) const SPEC: Spec = Spec {
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
