//! Step 8 in the flow's vocabulary (`src/flow.rs`), for `cargo xtask watch
//! step-8` and the book's replay.
//!
//! Steps 3–7 have handlers, a queue and workers of their own, and each says
//! what it does. Step 8 hands all three to kube's `Controller`, which traces
//! none of them, so this module names what goes into it and what comes out:
//!
//! - *handler*: a Foo's change triggers that Foo; a Deployment's change
//!   triggers each Foo among its owners (kube's `owns`); a Deployment change
//!   that nothing a reconcile reads is part of is ignored by
//!   `relevant_changes` (`caches.rs`);
//! - *queue* `add` or `merge`: a trigger handed to kube, `merge` if one for
//!   the same Foo was handed over and no reconcile of it has started since;
//!   `take`: kube starts a reconcile; `requeue`: `error_policy`'s delay;
//!   `forget`: a reconcile succeeded; `drop`: kube found no such Foo in its
//!   cache;
//! - *worker*: each reconcile, numbered as one of `--workers` (kube's
//!   concurrency limit has no workers of its own: [`flow::Workers`]).
//!
//! What kube's scheduler does in between (merging triggers, holding one back
//! while the same Foo is reconciled, waiting out a delay) happens inside
//! kube-runtime, which exposes none of it: the `add` → `take` of a key here
//! is inferred from both ends, as for steps 4–7, whose queue is the same
//! scheduler (kube's `applier`). The queue's first line says so
//! ([`flow::SCHEDULER_NOTE`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Resource;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use crate::error::Error;
use crate::reconciler::{Context, retry_delay};
use sample_controller::Foo;
use sample_controller::flow::{self, QueueFlow};

/// The queue and workers of one `Controller`, as flow lines.
pub struct ControllerFlow {
    queue: Arc<QueueFlow<Foo>>,
}

impl ControllerFlow {
    /// The flow of a `Controller` running at most `workers` reconciles at
    /// once.
    pub fn new(workers: u16) -> Self {
        ControllerFlow {
            queue: Arc::new(QueueFlow::new(usize::from(workers))),
        }
    }

    /// A Foo's change triggers it. Go: the Foo handlers' `enqueueFoo`.
    pub fn foo_changed(&self, foo: &Foo) {
        let key = ObjectRef::from(foo);
        flow::decided("foos", foo, &Ok::<_, &str>(key.clone()));
        self.queue.add(&key);
    }

    /// A relevant Deployment change triggers the Foos among its owners, as
    /// kube's `owns` finds them (every owner reference of kind Foo, not only
    /// the controller). Go: `handleObject`.
    pub fn deployment_changed(&self, deployment: &Deployment) {
        let namespace = deployment.metadata.namespace.as_deref().unwrap_or_default();
        let owners: Vec<_> = deployment
            .metadata
            .owner_references
            .iter()
            .flatten()
            .filter(|owner| {
                owner.kind == Foo::kind(&()) && owner.api_version == Foo::api_version(&())
            })
            .map(|owner| ObjectRef::<Foo>::new(&owner.name).within(namespace))
            .collect();
        if owners.is_empty() {
            flow::decided(
                "deployments",
                deployment,
                &Err::<ObjectRef<Foo>, _>("no Foo among its owners"),
            );
        }
        for key in owners {
            flow::decided("deployments", deployment, &Ok::<_, &str>(key.clone()));
            self.queue.add(&key);
        }
    }

    /// `reconcile` with a worker of its own in the flow: its `take`, its
    /// `start` and `end`, each request it makes, and `forget` on success.
    pub fn reconcile<F, Fut>(
        &self,
        mut reconcile: F,
    ) -> impl FnMut(Arc<Foo>, Arc<Context>) -> BoxFuture<'static, Result<Action, Error>> + use<F, Fut>
    where
        F: FnMut(Arc<Foo>, Arc<Context>) -> Fut,
        Fut: Future<Output = Result<Action, Error>> + Send + 'static,
    {
        let queue = self.queue.clone();
        move |foo, ctx| {
            let key = ObjectRef::from(foo.as_ref());
            let sync = queue.take(&key);
            let reconciled = sync.in_scope(|| reconcile(foo, ctx));
            let queue = queue.clone();
            Box::pin(async move {
                let action = sync.run(reconciled).await?;
                queue.forget(&key);
                Ok(action)
            })
        }
    }

    /// The reconciler's error policy, with its `requeue` line: the delay and
    /// the key's failures so far.
    pub fn error_policy(&self) -> impl Fn(Arc<Foo>, &Error, Arc<Context>) -> Action + use<> {
        let queue = self.queue.clone();
        move |foo, err, ctx| {
            let key = ObjectRef::from(foo.as_ref());
            let delay = retry_delay(&foo, err, &ctx);
            queue.requeue(&key, delay, ctx.backoff.num_requeues(&key));
            Action::requeue(delay)
        }
    }

    /// What the Controller reports of a reconcile it could not start: a Foo
    /// no longer in its cache is dropped.
    pub fn reported(
        &self,
        result: &Result<(ObjectRef<Foo>, Action), controller::Error<Error, watcher::Error>>,
    ) {
        if let Err(controller::Error::ObjectNotFound(key)) = result {
            let mut gone = ObjectRef::<Foo>::new(&key.name);
            gone.namespace = key.namespace.clone();
            self.queue.drop_key(&gone);
        }
    }
}
