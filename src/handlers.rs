//! The event handlers: which Foo each change should make the controller sync.
//!
//! Go: the handlers registered in `NewController`, `enqueueFoo` and
//! `handleObject` in
//! controller.go ([the handlers](https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go),
//! [`enqueueFoo` and `handleObject`](https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go)).
//! A handler returns the key to enqueue (or why it ignored the change)
//! instead of calling the queue itself, so the same functions serve a program
//! that prints the decision and one that sends the key to a queue.

use std::fmt;
use std::time::Duration;

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::{Stream, StreamExt, future, stream};
use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use tracing::instrument;

use crate::Foo;
use crate::deployment::controller_of;
use crate::diagnose::explain_watch;
use crate::informer::{Notification, informer, object_name, resync};

// ANCHOR: ignored
/// Why a handler put nothing in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    /// A Foo was deleted: its Deployment goes with it (garbage collection).
    FooDeleted,
    /// A Deployment update that changed nothing: a resync replays the cache
    /// as updates with the same resourceVersion.
    ResyncReplay,
    /// The Deployment has no owner reference marked `controller: true`.
    NoController,
    /// The Deployment's controller is of another kind.
    NotAFoo(String),
    /// The Deployment's controlling Foo is not in the cache (deleted, or not
    /// listed yet): nothing to sync.
    Orphan(String),
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ignored::FooDeleted => write!(f, "Foo deletes are left to the garbage collector"),
            Ignored::ResyncReplay => {
                write!(f, "same resourceVersion: a resync replay, not a change")
            }
            Ignored::NoController => write!(f, "no controller owner reference"),
            Ignored::NotAFoo(kind) => write!(f, "controlled by a {kind}, not a Foo"),
            Ignored::Orphan(name) => write!(f, "orphan: its Foo {name:?} is not in the cache"),
        }
    }
}

/// What a handler decided: the key to enqueue, or why there is none.
pub type Decision = Result<ObjectRef<Foo>, Ignored>;
// ANCHOR_END: ignored

// ANCHOR: foo_handler
/// Foo handler: every add and update enqueues the Foo; deletes are left to
/// the garbage collector, which removes the owned Deployment.
/// Go: `AddFunc: enqueueFoo`, `UpdateFunc: enqueueFoo(new)`, no `DeleteFunc`.
// Each decision is logged at debug level (Go's handleObject logs at -v=4).
#[instrument(
    level = "debug",
    skip_all,
    fields(object = %object_name(notification.object().as_ref())),
    ret(Display),
    err(level = "debug", Display)
)]
pub fn on_foo(notification: &Notification<Foo>) -> Decision {
    match notification {
        Notification::Added(foo) | Notification::Updated { new: foo, .. } => Ok(enqueue_foo(foo)),
        Notification::Deleted(_) => Err(Ignored::FooDeleted),
    }
}

/// The work-queue key of a Foo: its namespace and name. Go: `enqueueFoo`
/// (`cache.ObjectToName`).
pub fn enqueue_foo(foo: &Foo) -> ObjectRef<Foo> {
    ObjectRef::from(foo)
}
// ANCHOR_END: foo_handler

// ANCHOR: deployment_handler
/// Deployment handler: any add, real update or delete of a Deployment a Foo
/// controls enqueues that Foo, so a deleted or edited Deployment is put back.
/// An update whose resourceVersion did not change is a resync replay, not a
/// change, and is ignored. Go: the Deployment `AddFunc`, `UpdateFunc`, `DeleteFunc`.
// Logged as `on_foo`'s decisions are.
#[instrument(
    level = "debug",
    skip_all,
    fields(object = %object_name(notification.object().as_ref())),
    ret(Display),
    err(level = "debug", Display)
)]
pub fn on_deployment(notification: &Notification<Deployment>, foos: &Store<Foo>) -> Decision {
    match notification {
        Notification::Updated { old, new } if old.resource_version() == new.resource_version() => {
            Err(Ignored::ResyncReplay)
        }
        other => handle_object(other.object(), foos),
    }
}

/// The Foo that controls `deployment`, if it is in the cache. Go: `handleObject`.
///
/// Like Go, only the owner reference marked `controller: true` counts, only
/// its kind is compared, and the owner must be in the Foo cache (an owner
/// that is gone leaves an orphan, which is ignored).
pub fn handle_object(deployment: &Deployment, foos: &Store<Foo>) -> Decision {
    let owner = controller_of(deployment).ok_or(Ignored::NoController)?;
    if owner.kind != "Foo" {
        return Err(Ignored::NotAFoo(owner.kind.clone()));
    }
    let orphan = || Ignored::Orphan(owner.name.clone());
    let namespace = deployment.namespace().ok_or_else(orphan)?;
    let foo = foos
        .get(&ObjectRef::new(&owner.name).within(&namespace))
        .ok_or_else(orphan)?;
    Ok(enqueue_foo(&foo))
}
// ANCHOR_END: deployment_handler

// ANCHOR: start_informers
/// The two caches, filled in the background, and the queue their handlers feed.
#[derive(Debug)]
pub struct Informers {
    /// The Foo cache. Go: `foosLister`.
    pub foos: Store<Foo>,
    /// The Deployment cache. Go: `deploymentsLister`.
    pub deployments: Store<Deployment>,
    /// Keys from the handlers, in the order they were added. Go: `workqueue.Add`.
    pub queue: UnboundedReceiver<ObjectRef<Foo>>,
}

/// Starts a Foo and a Deployment informer whose handlers ([`on_foo`],
/// [`on_deployment`]) send keys to [`Informers::queue`]. With `resync`, each
/// informer also replays its whole cache to its handler every period, as Go's
/// informer factory does (`NewSharedInformerFactory(client, 30*time.Second)`).
/// Go: the handler registration in `NewController`, then `factory.Start`.
pub fn start_informers(
    foos: Api<Foo>,
    deployments: Api<Deployment>,
    resync_period: Option<Duration>,
) -> Informers {
    let (queue_tx, queue) = unbounded();
    let (foo_cache, foo_events) = informer(foos);
    let (deployment_cache, deployment_events) = informer(deployments);
    spawn_handler(
        with_resync(foo_events, &foo_cache, resync_period),
        queue_tx.clone(),
        "foos",
        on_foo,
    );
    let cache = foo_cache.clone();
    spawn_handler(
        with_resync(deployment_events, &deployment_cache, resync_period),
        queue_tx,
        "deployments",
        move |n| on_deployment(n, &cache),
    );
    Informers {
        foos: foo_cache,
        deployments: deployment_cache,
        queue,
    }
}

impl Informers {
    /// Waits until both caches hold a full list. Go: `cache.WaitForCacheSync`.
    pub async fn wait_for_cache_sync(&self) -> anyhow::Result<()> {
        future::try_join(
            self.foos.wait_until_ready(),
            self.deployments.wait_until_ready(),
        )
        .await?;
        Ok(())
    }
}

/// An informer's notifications, merged with a replay of its cache every
/// `period` if there is one.
fn with_resync<K>(
    events: impl Stream<Item = Result<Notification<K>, watcher::Error>> + Send + 'static,
    cache: &Store<K>,
    period: Option<Duration>,
) -> impl Stream<Item = Result<Notification<K>, watcher::Error>> + Send + 'static
where
    K: kube::Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    match period {
        Some(period) => stream::select(events, resync(cache.clone(), period)).left_stream(),
        None => events.right_stream(),
    }
}

/// Polls an informer in a background task, passing each notification to
/// `handler` and each key it returns to the queue; logs watch errors (the
/// watcher retries them). Go: the informer's goroutine calling its handlers.
fn spawn_handler<K: Send + Sync + 'static>(
    events: impl Stream<Item = Result<Notification<K>, watcher::Error>> + Send + 'static,
    queue: UnboundedSender<ObjectRef<Foo>>,
    resource: &'static str,
    handler: impl Fn(&Notification<K>) -> Decision + Send + 'static,
) {
    tokio::spawn(events.for_each(move |event| {
        match event {
            Ok(notification) => {
                if let Ok(key) = handler(&notification) {
                    // Fails only once the queue is gone, i.e. during shutdown.
                    let _ = queue.unbounded_send(key);
                }
            }
            Err(err) => tracing::warn!("{}", explain_watch(&err, resource)),
        }
        future::ready(())
    }));
}
// ANCHOR_END: start_informers

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FooSpec;
    use crate::deployment::new_deployment;
    use kube::runtime::{reflector, watcher};
    use std::sync::Arc;

    fn foo(name: &str) -> Foo {
        let mut foo = Foo::new(
            name,
            FooSpec {
                deployment_name: format!("{name}-deployment"),
                replicas: Some(1),
            },
        );
        foo.metadata.namespace = Some("default".into());
        foo.metadata.uid = Some(format!("{name}-uid"));
        foo
    }

    fn cache_with(foos: Vec<Foo>) -> Store<Foo> {
        let (store, mut writer) = reflector::store();
        for f in foos {
            writer.apply_watcher_event(&watcher::Event::Apply(f));
        }
        store
    }

    #[test]
    fn a_deployment_controlled_by_a_cached_foo_enqueues_that_foo() {
        let owner = foo("a");
        let key = handle_object(&new_deployment(&owner), &cache_with(vec![owner.clone()]));
        assert_eq!(key, Ok(ObjectRef::new("a").within("default")));
    }

    #[test]
    fn a_deployment_whose_foo_is_not_cached_is_an_ignored_orphan() {
        assert_eq!(
            handle_object(&new_deployment(&foo("a")), &cache_with(vec![])),
            Err(Ignored::Orphan("a".into()))
        );
    }

    #[test]
    fn only_the_controller_owner_reference_counts() {
        let owner = foo("a");
        let mut d = new_deployment(&owner);
        d.metadata.owner_references.as_mut().unwrap()[0].controller = None;
        assert_eq!(
            handle_object(&d, &cache_with(vec![owner])),
            Err(Ignored::NoController)
        );
    }

    #[test]
    fn a_controller_of_another_kind_is_ignored() {
        let owner = foo("a");
        let mut d = new_deployment(&owner);
        d.metadata.owner_references.as_mut().unwrap()[0].kind = "ReplicaSet".into();
        assert_eq!(
            handle_object(&d, &cache_with(vec![owner])),
            Err(Ignored::NotAFoo("ReplicaSet".into()))
        );
    }

    #[test]
    fn a_deployment_update_with_the_same_resource_version_is_ignored() {
        let owner = foo("a");
        let mut d = new_deployment(&owner);
        d.metadata.resource_version = Some("7".into());
        let d = Arc::new(d);
        let cache = cache_with(vec![owner]);
        let replay = Notification::Updated {
            old: d.clone(),
            new: d.clone(),
        };
        assert_eq!(on_deployment(&replay, &cache), Err(Ignored::ResyncReplay));
        let mut changed = (*d).clone();
        changed.metadata.resource_version = Some("8".into());
        let update = Notification::Updated {
            old: d,
            new: Arc::new(changed),
        };
        assert_eq!(
            on_deployment(&update, &cache),
            Ok(ObjectRef::new("a").within("default"))
        );
    }

    #[test]
    fn deleting_a_controlled_deployment_enqueues_its_foo() {
        let owner = foo("a");
        let cache = cache_with(vec![owner.clone()]);
        let gone = Notification::Deleted(Arc::new(new_deployment(&owner)));
        assert_eq!(
            on_deployment(&gone, &cache),
            Ok(ObjectRef::new("a").within("default"))
        );
    }

    #[test]
    fn foo_adds_and_updates_enqueue_but_deletes_do_not() {
        let f = Arc::new(foo("a"));
        assert!(on_foo(&Notification::Added(f.clone())).is_ok());
        assert!(
            on_foo(&Notification::Updated {
                old: f.clone(),
                new: f.clone()
            })
            .is_ok()
        );
        assert_eq!(on_foo(&Notification::Deleted(f)), Err(Ignored::FooDeleted));
    }
}
