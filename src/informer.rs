//! An informer: a watch that keeps a local cache and tells handlers what changed.
//!
//! Go: client-go's `SharedIndexInformer` (reflector → RealFIFO → indexer →
//! handlers; client-go 0.37 builds a DeltaFIFO only with the InOrderInformers
//! gate off, and that gate is GA and locked on). kube-runtime has the first and third pieces: `watcher` lists and
//! watches, a `reflector` keeps a `Store` (the lister's cache). It has no
//! handler callbacks: a watcher event carries only the new object. This module
//! adds what the handlers need, in the order client-go uses: look up the old
//! object in the store, apply the event to the store, then notify.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt, future, stream};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

// ANCHOR: notification
/// What a handler is told. Go: the `AddFunc`, `UpdateFunc` and `DeleteFunc`
/// arguments of `cache.ResourceEventHandlerFuncs`.
#[derive(Debug, Clone)]
pub enum Notification<K> {
    /// An object the cache did not hold. Go: `OnAdd(obj)`.
    Added(Arc<K>),
    /// A cached object changed; `old` is what the cache held before.
    /// Go: `OnUpdate(old, new)`.
    Updated {
        /// The cached object before this event.
        old: Arc<K>,
        /// The object as the API server sent it.
        new: Arc<K>,
    },
    /// An object was deleted; this is its last known state. When the delete
    /// happened while the watch was down, it is noticed on the next list (Go
    /// wraps such an object in a `DeletedFinalStateUnknown` tombstone).
    Deleted(Arc<K>),
}
// ANCHOR_END: notification

impl<K> Notification<K> {
    /// The object the notification is about (the new one for an update).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Notification::Added(obj) | Notification::Deleted(obj) => obj,
            Notification::Updated { new, .. } => new,
        }
    }
}

/// The `namespace/name` form of a key, as Go prints a `cache.ObjectName`.
pub fn key_string<K: Resource>(key: &ObjectRef<K>) -> String {
    match &key.namespace {
        Some(ns) => format!("{ns}/{}", key.name),
        None => key.name.clone(),
    }
}

/// The `namespace/name` of an object, as Go's `klog.KObj(obj)` prints it.
pub fn object_name<K: Resource>(object: &K) -> String {
    let meta = object.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

// ANCHOR: watch_list
/// A watch that starts the way client-go's reflector does against a 1.37 API
/// server: one WATCH that streams every existing object first
/// (`sendInitialEvents`, kube's `streaming_lists()`), and on a server that
/// refuses it (its `WatchList` gate off: 1.33, or before 1.32) a LIST then a
/// WATCH. kube's watcher has no such fallback; this adds it. Go:
/// `Reflector.ListAndWatch` with `WatchListClient` on.
pub fn watch_list<K>(
    api: Api<K>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    // `undecided` holds the Api until the server has answered the first
    // streaming WATCH: refused, it lists instead; accepted, it never will.
    let streaming = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    stream::unfold((streaming, Some(api)), |(mut events, mut undecided)| async move {
        let next = events.next().await?;
        let item = match next {
            Err(err) if undecided.is_some() && refuses_watch_list(&err) => {
                if let Some(api) = undecided.take() {
                    tracing::info!(
                        "the API server does not stream initial lists (its WatchList gate is off): listing, then watching"
                    );
                    events = watcher(api, watcher::Config::default()).boxed();
                }
                None
            }
            Ok(event) => {
                undecided = None;
                Some(Ok(event))
            }
            Err(err) => Some(Err(err)),
        };
        Some((item, (events, undecided)))
    })
    .filter_map(future::ready)
}

/// Whether `err` is the API server refusing `sendInitialEvents`.
fn refuses_watch_list(err: &watcher::Error) -> bool {
    matches!(
        err,
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
            if status.code == 422 && status.message.contains("sendInitialEvents")
    )
}
// ANCHOR_END: watch_list

// ANCHOR: informer
/// Starts nothing yet: returns the cache (Go: the lister) and the stream that,
/// once polled, fills the cache from a [`watch_list`] of `api`, keeps it
/// current and yields a [`Notification`] per change. Watch errors are yielded
/// too; the watcher retries them with exponential backoff (800 ms up to 30 s,
/// like client-go's reflector), so the stream only ends when it is dropped.
pub fn informer<K>(
    api: Api<K>,
) -> (
    Store<K>,
    impl Stream<Item = Result<Notification<K>, watcher::Error>> + Send,
)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    let (cache, mut writer) = reflector::store();
    let reader = cache.clone();
    let mut relist = Relist::default();
    let notifications = watch_list(api)
        .default_backoff()
        .map_ok(move |event| {
            // Compare with the cache *before* the event changes it, notify after.
            let changes = notifications(&reader, &mut relist, &event);
            writer.apply_watcher_event(&event);
            stream::iter(changes.into_iter().map(Ok))
        })
        .try_flatten();
    (cache, notifications)
}
// ANCHOR_END: informer

/// Logs, at debug level, what a watcher event tells the handlers: a relist
/// as it starts, then each notification. Go logs neither; with
/// `RUST_LOG=sample_controller::informer=debug` they show what the handlers
/// are about to be told.
fn log_notifications<K>(event: &watcher::Event<K>, changes: &[Notification<K>])
where
    K: Resource,
    K::DynamicType: Default,
{
    if matches!(event, watcher::Event::Init) {
        let kind = K::DynamicType::default();
        tracing::debug!(resource = %K::plural(&kind), "Relisting");
    }
    for change in changes {
        let event = match change {
            Notification::Added(_) => "add",
            Notification::Updated { .. } => "update",
            Notification::Deleted(_) => "delete",
        };
        notifying(event, change.object().as_ref());
    }
}

/// Logs, at debug level, that handlers are told `event` about `object`.
fn notifying<K>(event: &'static str, object: &K)
where
    K: Resource,
    K::DynamicType: Default,
{
    tracing::debug!(
        event,
        resource = %K::plural(&K::DynamicType::default()),
        object = %object_name(object),
        resource_version = object.meta().resource_version.as_deref().unwrap_or_default(),
        "Notifying handlers"
    );
}

/// A (re)list in progress: the keys it has returned so far, and the
/// notifications held back until it is done.
///
/// kube's store shows a relist's objects only once the whole list is in (at
/// `InitDone`), so a notification sent earlier would name an object that a
/// worker cannot find in the cache yet, and the worker would drop its key.
/// Go's informer updates the store before each handler call; holding the
/// notifications until `InitDone` keeps that order.
struct Relist<K: Resource> {
    listed: HashSet<ObjectRef<K>>,
    pending: Vec<Notification<K>>,
}

impl<K: Resource> Default for Relist<K> {
    fn default() -> Self {
        Self {
            listed: HashSet::new(),
            pending: Vec::new(),
        }
    }
}

/// The notifications one watcher event causes, given the cache before it.
fn notifications<K>(
    cache: &Store<K>,
    relist: &mut Relist<K>,
    event: &watcher::Event<K>,
) -> Vec<Notification<K>>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let changes = changes(cache, relist, event);
    log_notifications(event, &changes);
    changes
}

/// [`notifications`], unlogged.
fn changes<K>(
    cache: &Store<K>,
    relist: &mut Relist<K>,
    event: &watcher::Event<K>,
) -> Vec<Notification<K>>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    match event {
        watcher::Event::Init => {
            relist.listed.clear();
            relist.pending.clear();
            Vec::new()
        }
        watcher::Event::InitApply(obj) => {
            relist.listed.insert(ObjectRef::from(obj));
            relist.pending.push(added_or_updated(cache, obj));
            Vec::new()
        }
        watcher::Event::Apply(obj) => vec![added_or_updated(cache, obj)],
        watcher::Event::Delete(obj) => vec![Notification::Deleted(Arc::new(obj.clone()))],
        watcher::Event::InitDone => {
            // Whatever the cache holds that the list did not return is gone.
            let gone: Vec<_> = cache
                .state()
                .into_iter()
                .filter(|obj| !relist.listed.contains(&ObjectRef::from(obj.as_ref())))
                .map(Notification::Deleted)
                .collect();
            relist.listed.clear();
            let mut changes = std::mem::take(&mut relist.pending);
            changes.extend(gone);
            changes
        }
    }
}

fn added_or_updated<K>(cache: &Store<K>, obj: &K) -> Notification<K>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let new = Arc::new(obj.clone());
    match cache.get(&ObjectRef::from(obj)) {
        Some(old) => Notification::Updated { old, new },
        None => Notification::Added(new),
    }
}

// ANCHOR: resync
/// Replays the whole cache as updates every `period`, the way a Go informer's
/// resync does (`OnUpdate(obj, obj)`: same object, same resourceVersion, no
/// API call). kube-runtime has no resync: this shows why Go's Deployment
/// handler compares resourceVersions, and resyncs every 30 s as Go's
/// informer factories do.
pub fn resync<K>(
    cache: Store<K>,
    period: Duration,
) -> impl Stream<Item = Result<Notification<K>, watcher::Error>> + Send
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    let ticks = stream::unfold((), move |()| async move {
        tokio::time::sleep(period).await;
        Some(((), ()))
    });
    ticks.flat_map(move |()| {
        let replay = cache.state().into_iter().map(|obj| {
            notifying("resync", obj.as_ref());
            Ok(Notification::Updated {
                old: obj.clone(),
                new: obj,
            })
        });
        stream::iter(replay.collect::<Vec<_>>())
    })
}
// ANCHOR_END: resync

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    /// Feeds events through `notifications` and the store, as `informer` does,
    /// checking that each added or updated object is in the cache by the time
    /// its notification is sent.
    fn run(events: Vec<watcher::Event<ConfigMap>>) -> Vec<String> {
        let (cache, mut writer) = reflector::store();
        let mut relist = Relist::default();
        let mut seen = Vec::new();
        for event in events {
            let changes = notifications(&cache, &mut relist, &event);
            writer.apply_watcher_event(&event);
            for n in changes {
                if !matches!(n, Notification::Deleted(_)) {
                    let key = ObjectRef::from(n.object().as_ref());
                    assert!(
                        cache.get(&key).is_some(),
                        "{key} notified before it is cached"
                    );
                }
                seen.push(match n {
                    Notification::Added(o) => format!(
                        "add {}@{}",
                        o.metadata.name.clone().unwrap(),
                        o.metadata.resource_version.clone().unwrap()
                    ),
                    Notification::Updated { old, new } => format!(
                        "update {} {}->{}",
                        new.metadata.name.clone().unwrap(),
                        old.metadata.resource_version.clone().unwrap(),
                        new.metadata.resource_version.clone().unwrap()
                    ),
                    Notification::Deleted(o) => format!(
                        "delete {}@{}",
                        o.metadata.name.clone().unwrap(),
                        o.metadata.resource_version.clone().unwrap()
                    ),
                });
            }
        }
        seen
    }

    #[test]
    fn initial_list_adds_then_watch_updates_with_the_old_object() {
        use watcher::Event::*;
        let seen = run(vec![
            Init,
            InitApply(cm("a", "1")),
            InitDone,
            Apply(cm("a", "2")),
            Apply(cm("b", "3")),
            Delete(cm("a", "4")),
        ]);
        assert_eq!(seen, ["add a@1", "update a 1->2", "add b@3", "delete a@4"]);
    }

    // Cheat sheet: `cache.DeletedFinalStateUnknown`
    // Cheat sheet: `tombstones`
    #[test]
    fn a_relist_updates_survivors_and_deletes_what_vanished_meanwhile() {
        use watcher::Event::*;
        let seen = run(vec![
            Init,
            InitApply(cm("a", "1")),
            InitApply(cm("b", "2")),
            InitDone,
            // the watch broke; the relist no longer contains b
            Init,
            InitApply(cm("a", "1")),
            InitDone,
        ]);
        assert_eq!(seen, ["add a@1", "add b@2", "update a 1->1", "delete b@2"]);
    }

    #[test]
    fn a_relist_notifies_objects_created_while_the_watch_was_down_once_they_are_cached() {
        use watcher::Event::*;
        let seen = run(vec![
            Init,
            InitApply(cm("a", "1")),
            InitDone,
            // the API server restarted; c was created meanwhile
            Init,
            InitApply(cm("a", "1")),
            InitApply(cm("c", "5")),
            InitDone,
        ]);
        assert_eq!(seen, ["add a@1", "update a 1->1", "add c@5"]);
    }
}
