//! What step 8's `Controller` watches and caches: the Foo and Deployment
//! streams between kube's watcher and the `Controller`, and the caches
//! trimmed to what a reconcile reads.
//!
//! Each piece works around something kube-runtime does on its own, and says
//! what and why: [`Synced`] (a readiness flag every task can wait on),
//! [`settled`] (a relist's objects held until the store shows them),
//! [`relevant_changes`] (the Deployment predicate, with the deletes a relist
//! reveals), [`strip_deployment`] (the smaller cache). The book's step 8
//! chapter shows them in "The idioms, one by one".

use std::collections::{HashMap, HashSet};

use futures::{Stream, StreamExt, future, stream};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tokio::sync::watch;

use crate::error::Error;
use sample_controller::Foo;
use sample_controller::diagnose::explain_watch;
use sample_controller::informer::object_name;
use sample_controller::signals::Shutdown;

// ANCHOR: synced
/// Whether a cache holds its first full list; any number of tasks can wait
/// for it. Go: an informer's `HasSynced`.
///
/// Not kube's `Store::wait_until_ready`: it wraps a single oneshot receiver,
/// which keeps the waker of the last task that polled it, so of several
/// tasks waiting at once only the last is woken (a unit test below shows
/// it). The `Controller` already waits on the Foo store, and every reconcile
/// would wait on the Deployment store; a lost wake-up left reconciles
/// waiting forever, and a stop waiting for them.
#[derive(Clone)]
pub struct Synced {
    flag: watch::Receiver<bool>,
    stop: Option<Shutdown>,
}

impl Synced {
    /// A flag, not set, and the way to set it.
    pub fn new() -> (watch::Sender<bool>, Self) {
        let (tx, flag) = watch::channel(false);
        (tx, Synced { flag, stop: None })
    }

    /// The same flag, whose [`Synced::wait`] also gives up at `shutdown`
    /// (a stopping Controller no longer fills its caches).
    pub fn or_stop_on(self, shutdown: Shutdown) -> Self {
        Synced {
            stop: Some(shutdown),
            ..self
        }
    }

    /// Whether the cache is filled now.
    pub fn is_set(&self) -> bool {
        *self.flag.borrow()
    }

    /// A flag that is already set (for tests).
    pub fn already() -> Self {
        let (tx, synced) = Self::new();
        tx.send_replace(true);
        synced
    }

    /// Waits until the cache is filled; fails if its watch stopped first.
    pub async fn wait(&self) -> Result<(), Error> {
        let mut rx = self.flag.clone();
        let filled = rx.wait_for(|synced| *synced);
        let stopped = async {
            match &self.stop {
                Some(shutdown) => shutdown.clone().await,
                None => future::pending().await,
            }
        };
        tokio::select! {
            filled = filled => filled.map(|_| ()).map_err(|_| Error::CacheStopped),
            () = stopped => Err(Error::CacheStopped),
        }
    }
}

/// What the `Controller` gets from a reflected watch: its events, with
/// three changes, and `synced` set once the store holds its first full list.
///
/// - *Watch errors are logged here and not passed on.* The watcher retries
///   them with its own backoff; an error that reached the `Controller` made
///   it pause every trigger behind a backoff of its own, so both watches
///   recovered late from an API server restart.
/// - *A (re)list's objects (`InitApply`) are held until the whole list is in
///   (`InitDone`).* The store shows a relist only at `InitDone`, when it
///   swaps in the new list; a trigger sent earlier starts a reconcile that
///   reads the old contents, finds nothing to do, and is not triggered
///   again. After an API server restart, a Deployment that became available
///   while the watch relisted left its Foo reporting 0 (found by the parity
///   scenario "kube-apiserver restarted while Foos are being created"). Go's
///   informer updates its cache before it calls a handler; this keeps that
///   order.
/// - `InitDone` sets `synced`.
///
/// Each event is logged at debug level (`RUST_LOG=step8::caches=debug`).
pub fn settled<K, S>(
    events: S,
    resource: &'static str,
    synced: watch::Sender<bool>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Resource + Send,
    K::DynamicType: Default,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
{
    let mut held = Vec::new();
    events.flat_map(move |event| {
        log_event(resource, &event);
        let out = match event {
            Err(err) => {
                tracing::warn!("{}", explain_watch(&err, resource));
                Vec::new()
            }
            Ok(watcher::Event::Init) => {
                held.clear();
                vec![Ok(watcher::Event::Init)]
            }
            Ok(watcher::Event::InitApply(obj)) => {
                held.push(Ok(watcher::Event::InitApply(obj)));
                Vec::new()
            }
            Ok(watcher::Event::InitDone) => {
                synced.send_replace(true);
                let mut out = std::mem::take(&mut held);
                out.push(Ok(watcher::Event::InitDone));
                out
            }
            other => vec![other],
        };
        stream::iter(out)
    })
}
// ANCHOR_END: synced

/// Logs a watch event at debug level: a relist as it starts, each object as
/// it comes (`apply`: kube's watcher does not tell an add from an update).
fn log_event<K: Resource>(resource: &str, event: &Result<watcher::Event<K>, watcher::Error>) {
    let (event, object) = match event {
        Ok(watcher::Event::Init) => {
            tracing::debug!(resource, "Relisting");
            return;
        }
        Ok(watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)) => ("apply", obj),
        Ok(watcher::Event::Delete(obj)) => ("delete", obj),
        _ => return,
    };
    tracing::debug!(
        event,
        resource,
        object = %object_name(object),
        resource_version = object.meta().resource_version.as_deref().unwrap_or_default(),
        "Watch event"
    );
}

// ANCHOR: relevant_changes
/// The Deployments whose change can matter to their Foo: every delete, and
/// every add or update that changed the spec (generation), the owner
/// references or the available replicas. Go: the Deployment handlers, which
/// pass every change but a resync replay.
///
/// Idiom: a predicate. kube-controller-manager updates a Deployment's status
/// several times while it rolls out (replicas, updated, ready, conditions);
/// only `availableReplicas` matters here, so the others reconcile nothing.
/// Written out rather than `predicate_filter`, which would also drop a
/// delete (its hash is that of the last update).
///
/// A Deployment deleted while the watch was down never comes as a delete:
/// the relist that follows simply leaves it out, and kube's store drops it
/// without a word. Each one that was seen before and is missing from a
/// relist is passed on as deleted, so its Foo is reconciled. Go: the
/// informer's `DeletedFinalStateUnknown`, which reaches `handleObject`.
pub fn relevant_changes(
    events: impl Stream<Item = Result<watcher::Event<Deployment>, watcher::Error>> + Send,
) -> impl Stream<Item = Result<Deployment, watcher::Error>> + Send {
    // Per Deployment: the hash of what matters, and who owns it (only that:
    // a whole Deployment per entry would make this table one of step 8's
    // largest allocations).
    let mut seen: HashMap<ObjectRef<Deployment>, (u64, Vec<OwnerReference>)> = HashMap::new();
    // The Deployments of the relist under way, if one is.
    let mut relisted: Option<HashSet<ObjectRef<Deployment>>> = None;
    events.flat_map(move |event| {
        let relevant = match event {
            Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => {
                let key = ObjectRef::from(&d);
                if let Some(listed) = relisted.as_mut() {
                    listed.insert(key.clone());
                }
                let hash = relevance(&d);
                let before = seen.insert(key, (hash, d.owner_references().to_vec()));
                if before.is_some_and(|(h, _)| h == hash) {
                    tracing::debug!(deployment = %object_name(&d), "Ignored: nothing a reconcile reads changed");
                    Vec::new()
                } else {
                    vec![Ok(d)]
                }
            }
            Ok(watcher::Event::Delete(d)) => {
                seen.remove(&ObjectRef::from(&d));
                vec![Ok(d)]
            }
            Ok(watcher::Event::Init) => {
                relisted = Some(HashSet::new());
                Vec::new()
            }
            Ok(watcher::Event::InitDone) => {
                let listed = relisted.take().unwrap_or_default();
                let vanished: Vec<_> = seen
                    .keys()
                    .filter(|key| !listed.contains(*key))
                    .cloned()
                    .collect();
                vanished
                    .into_iter()
                    .filter_map(|key| {
                        let (_, owners) = seen.remove(&key)?;
                        Some(Ok(owned_by(key, owners)))
                    })
                    .collect()
            }
            Err(err) => vec![Err(err)],
        };
        relevant.iter().flatten().for_each(log_relevant);
        stream::iter(relevant)
    })
}

/// Logs, at debug level, a Deployment change passed on, and the Foos among
/// its owners, which `owns` reconciles.
fn log_relevant(deployment: &Deployment) {
    let foos: Vec<&str> = deployment
        .owner_references()
        .iter()
        .filter(|owner| owner.kind == Foo::kind(&()) && owner.api_version == Foo::api_version(&()))
        .map(|owner| owner.name.as_str())
        .collect();
    tracing::debug!(deployment = %object_name(deployment), foos = ?foos, "Relevant change");
}

/// What `owns` needs of a vanished Deployment to find its Foos: its name,
/// namespace and owner references.
fn owned_by(key: ObjectRef<Deployment>, owners: Vec<OwnerReference>) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some(key.name),
            namespace: key.namespace,
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    }
}

/// A hash of what `reconcile` reads from a Deployment.
pub(crate) fn relevance(deployment: &Deployment) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    deployment.uid().hash(&mut hasher);
    deployment.metadata.generation.hash(&mut hasher);
    for owner in deployment.owner_references() {
        (&owner.uid, &owner.kind, owner.controller).hash(&mut hasher);
    }
    deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .hash(&mut hasher);
    hasher.finish()
}
// ANCHOR_END: relevant_changes

/// Removes what no reconcile reads before an object is cached.
pub fn drop_managed_fields<K: Resource>(obj: &mut K) {
    obj.managed_fields_mut().clear();
    if let Some(annotations) = obj.meta_mut().annotations.as_mut() {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
}

// ANCHOR: strip_deployment
/// Reduces a Deployment to what a reconcile and [`relevant_changes`] read,
/// before it is cached: its name, namespace, UID, resourceVersion,
/// generation and owner references (`ensure_controlled`, the `owns`
/// trigger, the apply's precondition, the predicate); the replicas, pod
/// labels and containers' names and images of its spec (`drifted` in the reconciler); the
/// available replicas of its status (the Foo's status). Everything else,
/// the fields the API server defaults (strategy, pod `dnsPolicy`,
/// `terminationMessagePath`, ...), annotations, labels, managedFields and the
/// status conditions, nobody here reads.
///
/// A reconcile that changes the Deployment works on the API server's
/// answer, the whole object; only what comes through the watch is stripped.
pub fn strip_deployment(deployment: &mut Deployment) {
    let metadata = std::mem::take(&mut deployment.metadata);
    deployment.metadata = ObjectMeta {
        name: metadata.name,
        namespace: metadata.namespace,
        uid: metadata.uid,
        resource_version: metadata.resource_version,
        generation: metadata.generation,
        owner_references: metadata.owner_references,
        ..ObjectMeta::default()
    };
    let spec = std::mem::take(&mut deployment.spec);
    deployment.spec = DeploymentSpec {
        replicas: spec.replicas,
        template: PodTemplateSpec {
            metadata: spec.template.metadata.map(|m| ObjectMeta {
                labels: m.labels,
                ..ObjectMeta::default()
            }),
            spec: spec.template.spec.map(|pod| PodSpec {
                containers: pod
                    .containers
                    .into_iter()
                    .map(|c| Container {
                        name: c.name,
                        image: c.image,
                        ..Container::default()
                    })
                    .collect(),
                ..PodSpec::default()
            }),
        },
        ..DeploymentSpec::default()
    };
    deployment.status = deployment.status.take().map(|status| DeploymentStatus {
        available_replicas: status.available_replicas,
        ..DeploymentStatus::default()
    });
}
// ANCHOR_END: strip_deployment

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kube::runtime::WatchStreamExt;
    use kube::runtime::reflector;
    use sample_controller::deployment::new_deployment;
    use sample_controller::fixtures::{foo, stored};
    use serde_json::json;
    use std::time::Duration;

    /// `foo`'s Deployment as a watch delivers it: what the API server
    /// defaults and kube-controller-manager adds (annotation, strategy, pod
    /// defaults, status counts and conditions, managedFields) on top of
    /// [`stored`].
    pub(crate) fn as_listed(foo: &Foo, available: i32) -> Deployment {
        let mut d = serde_json::to_value(stored(new_deployment(foo), available)).unwrap();
        d["metadata"]["generation"] = json!(1);
        d["metadata"]["creationTimestamp"] = json!("2026-12-01T12:00:00Z");
        d["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
        d["metadata"]["managedFields"] = json!([{
            "manager": "sample-controller", "operation": "Update", "apiVersion": "apps/v1",
            "time": "2026-12-01T12:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {}}}}}
        }]);
        d["spec"]["strategy"] = json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}});
        d["spec"]["revisionHistoryLimit"] = json!(10);
        d["spec"]["progressDeadlineSeconds"] = json!(600);
        let pod = &mut d["spec"]["template"]["spec"];
        pod["restartPolicy"] = json!("Always");
        pod["dnsPolicy"] = json!("ClusterFirst");
        pod["schedulerName"] = json!("default-scheduler");
        pod["terminationGracePeriodSeconds"] = json!(30);
        pod["securityContext"] = json!({});
        let container = &mut pod["containers"][0];
        container["imagePullPolicy"] = json!("IfNotPresent");
        container["terminationMessagePath"] = json!("/dev/termination-log");
        container["terminationMessagePolicy"] = json!("File");
        container["resources"] = json!({});
        let status = &mut d["status"];
        status["observedGeneration"] = json!(1);
        status["replicas"] = json!(1);
        status["updatedReplicas"] = json!(1);
        status["conditions"] = json!([
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
             "message": "Deployment does not have minimum availability.",
             "lastUpdateTime": "2026-12-01T12:00:00Z", "lastTransitionTime": "2026-12-01T12:00:00Z"},
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
             "message": "ReplicaSet \"test-deployment-5d8f\" is progressing.",
             "lastUpdateTime": "2026-12-01T12:00:00Z", "lastTransitionTime": "2026-12-01T12:00:00Z"}
        ]);
        serde_json::from_value(d).unwrap()
    }

    /// Why step 8 does not use `Store::wait_until_ready`: of two tasks
    /// waiting at once, kube-runtime 5.0.0 wakes only the one that polled
    /// last. If this test fails, kube fixed it, and `Synced` can go.
    #[tokio::test]
    async fn kubes_store_readiness_wakes_only_the_last_of_two_waiters() {
        let (store, mut writer) = reflector::store::<Deployment>();
        let (first, second) = (store.clone(), store.clone());
        let first = tokio::spawn(async move { first.wait_until_ready().await });
        tokio::task::yield_now().await;
        let second = tokio::spawn(async move { second.wait_until_ready().await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let woken = |task: tokio::task::JoinHandle<_>| async move {
            tokio::time::timeout(Duration::from_millis(500), task)
                .await
                .is_ok()
        };
        assert!(woken(second).await, "the last waiter is woken");
        assert!(!woken(first).await, "the first waiter is not");
    }

    #[tokio::test]
    async fn a_relists_objects_trigger_only_once_the_store_shows_them() {
        use watcher::Event::*;
        let (store, writer) = reflector::store::<Deployment>();
        let old = stored(new_deployment(&foo("test", Some(1))), 0);
        let new = stored(new_deployment(&foo("test", Some(1))), 1);
        let events = futures::stream::iter(
            [
                Init,
                InitApply(old),
                InitDone,
                Init,
                InitApply(new),
                InitDone,
            ]
            .map(Ok),
        );
        let reader = store.clone();
        let (filled, synced) = Synced::new();
        let seen: Vec<_> = settled(events.reflect(writer), "deployments", filled)
            .filter_map(|e| {
                future::ready(match e {
                    Ok(InitApply(d)) => Some(d),
                    _ => None,
                })
            })
            .map(|d| {
                // What a reconcile triggered now would read from the store.
                let cached = reader.get(&ObjectRef::from(&d)).unwrap();
                cached.status.clone().and_then(|s| s.available_replicas)
            })
            .collect()
            .await;
        assert_eq!(seen, [Some(0), Some(1)]);
        assert!(synced.is_set(), "the first InitDone marks the cache filled");
    }

    #[tokio::test]
    async fn every_task_waiting_for_synced_is_woken() {
        let (tx, synced) = Synced::new();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let synced = synced.clone();
                tokio::spawn(async move { synced.wait().await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        tx.send_replace(true);
        for waiter in waiters {
            tokio::time::timeout(Duration::from_millis(500), waiter)
                .await
                .expect("woken")
                .unwrap()
                .unwrap();
        }
    }

    #[tokio::test]
    async fn the_predicate_on_stripped_deployments_passes_what_it_passed_before() {
        use watcher::Event::*;
        let foo = foo("test", Some(1));
        let rolling = as_listed(&foo, 0);
        let mut noise = rolling.clone();
        let status = noise.status.as_mut().unwrap();
        status.ready_replicas = Some(1);
        status.conditions.as_mut().unwrap()[0].message = Some("changed".into());
        let available = as_listed(&foo, 1);
        let events = futures::stream::iter(
            [
                Init,
                InitApply(rolling),
                InitDone,
                Apply(noise),
                Apply(available.clone()),
                Delete(available),
            ]
            .map(Ok),
        )
        .modify(strip_deployment);
        let passed: Vec<_> = relevant_changes(events)
            .map(|d| d.unwrap().status.and_then(|s| s.available_replicas))
            .collect()
            .await;
        assert_eq!(passed, [Some(0), Some(1), Some(1)]);
    }

    #[tokio::test]
    async fn only_relevant_deployment_changes_trigger_and_every_delete_does() {
        use watcher::Event::*;
        let base = stored(new_deployment(&foo("test", Some(1))), 0);
        let mut status_noise = base.clone();
        status_noise.status.as_mut().unwrap().updated_replicas = Some(1);
        let mut available = status_noise.clone();
        available.status.as_mut().unwrap().available_replicas = Some(1);
        let mut annotated = available.clone();
        annotated
            .annotations_mut()
            .insert("note".into(), "hand-edited".into());
        let events = futures::stream::iter(
            [
                Init,
                InitApply(base.clone()),
                InitDone,
                Apply(status_noise),
                Apply(available.clone()),
                Apply(annotated.clone()),
                Delete(annotated),
            ]
            .map(Ok),
        );
        let passed: Vec<_> = relevant_changes(events)
            .map(|d| d.unwrap().status.and_then(|s| s.available_replicas))
            .collect()
            .await;
        // The listed object, the available replica, the delete.
        assert_eq!(passed, [Some(0), Some(1), Some(1)]);
    }

    #[tokio::test]
    async fn a_deployment_missing_from_a_relist_triggers_its_foo_as_a_delete_would() {
        use watcher::Event::*;
        let kept = stored(new_deployment(&foo("kept", Some(1))), 0);
        let gone = stored(new_deployment(&foo("gone", Some(1))), 0);
        let events = futures::stream::iter(
            [
                Init,
                InitApply(kept.clone()),
                InitApply(gone.clone()),
                InitDone,
                // The watch was down while `gone` was deleted: the relist
                // leaves it out, and nothing else says so.
                Init,
                InitApply(kept.clone()),
                InitDone,
                // A later relist without `kept` and without `gone`: only
                // `kept` is news (`gone` was reported once already).
                Init,
                InitDone,
            ]
            .map(Ok),
        );
        let passed: Vec<_> = relevant_changes(events)
            .map(|d| {
                let d = d.unwrap();
                let owner = d.owner_references()[0].name.clone();
                (d.name_any(), owner)
            })
            .collect()
            .await;
        let named = |d: &Deployment| (d.name_any(), d.owner_references()[0].name.clone());
        assert_eq!(
            passed,
            [named(&kept), named(&gone), named(&gone), named(&kept)]
        );
    }
}
