//! The book's Go → Rust cheat sheet (Appendix A), row by row: each test does
//! what its rows say the Rust side is, and asserts what the rows claim, most
//! of them against a real API server (kube-apiserver and etcd, the Foo CRD).
//!
//! A `// Cheat sheet: `KEY`` line above a test names a row it covers (KEY:
//! the row's first code in its Go column, or the first words of a row of
//! "Things kube-rs does not have"). A row exercised better elsewhere carries
//! the line above that test instead (src/workqueue.rs, src/informer.rs,
//! src/fixtures.rs, tests/production.rs). The last test fails on a row
//! without a test and on a line naming no row.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event as StoredEvent;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, CustomResourceExt, Resource, ResourceExt};
use sample_controller::config::{ClientFlags, config_from_flags};
use sample_controller::deployment::{
    controller_of, is_controlled_by, new_controller_ref, new_deployment,
};
use sample_controller::informer::{key_string, object_name, watch_list};
use sample_controller::workqueue::{self, RateLimiter};
use sample_controller::{Foo, FooSpec, vocabulary};
use serde_json::json;

/// This binary's control plane: kube-apiserver and etcd with the Foo CRD
/// (no kube-controller-manager: nothing here needs Pods).
async fn cluster() -> &'static testcluster::ControlPlane {
    static CLUSTER: tokio::sync::OnceCell<testcluster::ControlPlane> =
        tokio::sync::OnceCell::const_new();
    CLUSTER
        .get_or_init(|| async {
            support::own_cluster(testcluster::Options::api_server_only())
                .await
                .0
        })
        .await
}

/// A client of [`cluster`], for this test's runtime (a client's connection
/// task dies with the runtime that started it).
async fn api_server() -> Client {
    cluster().await.client().await.expect("client")
}

/// A Foo named `name` in `ns`, as the API server stored it.
async fn stored_foo(client: &Client, ns: &str, name: &str) -> Foo {
    support::create_foo(client, ns, name, &format!("{name}-nginx"), Some(1)).await
}

/// A synced cache holding `objects`, as an informer leaves it (src/fixtures.rs's
/// `cache`, which this package's integration tests cannot reach: they see the
/// library without its `fixtures` feature).
fn synced<K>(objects: impl IntoIterator<Item = K>) -> Store<K>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(object));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}

/// A Foo in `default` with a UID, as a cache would hold it.
fn foo(name: &str) -> Foo {
    let mut foo = Foo::new(
        name,
        FooSpec {
            deployment_name: format!("{name}-nginx"),
            replicas: Some(1),
        },
    );
    foo.metadata.namespace = Some("default".into());
    foo.metadata.uid = Some(format!("{name}-uid"));
    foo
}

// Cheat sheet: `klog.InitFlags(nil)`
// Cheat sheet: `clientcmd.BuildConfigFromFlags(master, kubeconfig)`
#[tokio::test]
async fn flags_parse_with_clap_and_master_overrides_the_kubeconfigs_server() {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        client: ClientFlags,
    }
    let (cp, admin) = (cluster().await, api_server().await);
    let kubeconfig = cp.kubeconfig_path().to_path_buf();
    let cli = Cli::try_parse_from([
        "step-1",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--master",
        "https://127.0.0.1:1",
    ])
    .unwrap();
    let config = config_from_flags(&cli.client).await.unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:1/");
    // Without --master, the kubeconfig's server: the API server above.
    let flags = ClientFlags {
        kubeconfig: Some(kubeconfig.clone()),
        master: None,
    };
    let config = config_from_flags(&flags).await.unwrap();
    let client = Client::try_from(config).unwrap();
    assert_eq!(
        client.apiserver_version().await.unwrap().git_version,
        admin.apiserver_version().await.unwrap().git_version
    );
    // A bad flag is an error naming it, as Go's flag package does.
    let err = config_from_flags(&ClientFlags {
        kubeconfig: Some(kubeconfig),
        master: Some("not a url".into()),
    })
    .await
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("--master \"not a url\""),
        "{err:#}"
    );
    assert!(Cli::try_parse_from(["step-1", "--kubeconfig"]).is_err());
    // RUST_LOG's directives instead of -v: what the steps' subscriber reads.
    assert!(tracing_subscriber::EnvFilter::try_new("info,sample_controller=debug").is_ok());
}

// Cheat sheet: `kubernetes.NewForConfig(cfg)`
// Cheat sheet: `factory.Apps().V1().Deployments()`
// Cheat sheet: `klog.FlushAndExit(klog.ExitFlushTimeout, 1)`
#[tokio::test]
async fn one_client_serves_every_type_and_an_error_from_main_exits_1() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-client").await;
    stored_foo(client, &ns, "a").await;
    let foos = Api::<Foo>::namespaced(client.clone(), &ns);
    let deployments = Api::<Deployment>::all(client.clone());
    assert_eq!(
        foos.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    deployments.list(&ListParams::default()).await.unwrap();
    // `main` returns the error: Rust prints it and exits with status 1.
    let output = std::process::Command::new(support::step_binary("step-1"))
        .args(["--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Error: cannot read the kubeconfig /nonexistent/kubeconfig"),
        "{stderr}"
    );
}

// Cheat sheet: `signals.SetupSignalHandler()`
// Cheat sheet: `defer c.workqueue.ShutDown()`
#[tokio::test]
async fn the_first_sigterm_completes_the_shutdown_future_and_ends_the_queue() {
    let shutdown = sample_controller::signals::setup_signal_handler().unwrap();
    let (tx, rx) = futures::channel::mpsc::unbounded::<u32>();
    let queue = rx.take_until(shutdown.clone());
    tx.unbounded_send(1).unwrap();
    // SAFETY: kill(2) with this process's own PID and a signal it handles.
    assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGTERM) }, 0);
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .expect("the shutdown future completes on SIGTERM");
    // Keys sent before the signal may come out; after it the queue ends
    // although its sender is still open.
    let rest: Vec<u32> = tokio::time::timeout(Duration::from_secs(5), queue.collect())
        .await
        .expect("the queue ends at shutdown");
    assert!(rest.len() <= 1, "{rest:?}");
    drop(tx);
}

/// Log lines written to memory, for the logging rows.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// Cheat sheet: `klog.FromContext(ctx)`
// Cheat sheet: `klog.LoggerWithValues(logger, "objectRef", ref)`
// Cheat sheet: `utilruntime.HandleErrorWithContext(ctx, err, msg, kv...)`
#[test]
fn a_spans_fields_are_on_every_line_logged_inside_it_errors_included() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("sync", objectRef = "default/a");
        let _in = span.enter();
        tracing::info!(deployment = "a-nginx", "Creating deployment");
        let err = std::io::Error::other("boom");
        tracing::error!(error = %err, "Error syncing; requeuing for later retry");
    });
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("INFO sync{objectRef=\"default/a\"}: ")
            && lines[0].ends_with("Creating deployment deployment=\"a-nginx\""),
        "{text}"
    );
    assert!(
        lines[1].contains("ERROR sync{objectRef=\"default/a\"}: ")
            && lines[1].ends_with("Error syncing; requeuing for later retry error=boom"),
        "{text}"
    );
}

// Cheat sheet: `kubeinformers.NewSharedInformerFactory(client, 30*time.Second)`
// Cheat sheet: `factory.Start(ctx.Done())`
// Cheat sheet: `informer.Lister()`
// Cheat sheet: `informer.Informer().HasSynced`
// Cheat sheet: `cache.WaitForCacheSync(stop, synced...)`
// Cheat sheet: `c.foosLister.Foos(ns).Get(name)`
// Cheat sheet: `shared informer factory`
#[tokio::test]
async fn a_watch_list_per_type_fills_a_store_that_is_ready_once_listed() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-informer").await;
    stored_foo(client, &ns, "a").await;
    let (foos, foo_writer) = reflector::store::<Foo>();
    let (deployments, deployment_writer) = reflector::store::<Deployment>();
    // Nothing is listed before the streams run: not synced.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), foos.wait_until_ready())
            .await
            .is_err()
    );
    let foo_stream = watch_list(Api::<Foo>::namespaced(client.clone(), &ns))
        .default_backoff()
        .reflect(foo_writer)
        .for_each(|_| std::future::ready(()));
    let deployment_stream = watch_list(Api::<Deployment>::namespaced(client.clone(), &ns))
        .default_backoff()
        .reflect(deployment_writer)
        .for_each(|_| std::future::ready(()));
    let foo_task = tokio::spawn(foo_stream);
    let deployment_task = tokio::spawn(deployment_stream);
    tokio::time::timeout(
        Duration::from_secs(10),
        futures::future::try_join(foos.wait_until_ready(), deployments.wait_until_ready()),
    )
    .await
    .expect("both caches sync")
    .unwrap();
    let a = foos
        .get(&ObjectRef::new("a").within(&ns))
        .expect("a cached");
    assert_eq!(a.spec.deployment_name, "a-nginx");
    assert!(foos.get(&ObjectRef::new("a").within("elsewhere")).is_none());
    assert!(deployments.is_empty());
    // A Foo created later shows up: the watch keeps the cache current.
    stored_foo(client, &ns, "b").await;
    support::eventually("b in the cache", || {
        let found = foos.get(&ObjectRef::new("b").within(&ns));
        async move { found }
    })
    .await;
    foo_task.abort();
    deployment_task.abort();
}

// Cheat sheet: `utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))`
// Cheat sheet: `samplev1alpha1.SchemeGroupVersion.WithKind("Foo")`
// Cheat sheet: `code generators`
#[test]
fn foo_carries_its_group_version_and_kind_and_derives_its_crd() {
    assert_eq!(Foo::group(&()), "samplecontroller.k8s.io");
    assert_eq!(Foo::version(&()), "v1alpha1");
    assert_eq!(Foo::kind(&()), "Foo");
    assert_eq!(Foo::api_version(&()), "samplecontroller.k8s.io/v1alpha1");
    assert_eq!(
        Foo::url_path(&(), Some("ns")),
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos"
    );
    let crd = Foo::crd();
    assert_eq!(crd.spec.names.plural, "foos");
    let version = &crd.spec.versions[0];
    assert!(version.subresources.as_ref().unwrap().status.is_some());
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crd.yaml"))
        .unwrap();
    let written: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(
        serde_json::to_value(&crd).unwrap(),
        written,
        "manifests/crd.yaml is what the derive generates (cargo run --bin crdgen)"
    );
}

// Cheat sheet: `record.NewBroadcaster`
// Cheat sheet: `NewRecorder(scheme, EventSource{Component})`
// Cheat sheet: `c.recorder.Event(foo, corev1.EventTypeWarning, reason, msg)`
#[tokio::test]
async fn a_recorder_writes_events_k8s_io_v1_events_about_the_foo() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-events").await;
    let foo = stored_foo(client, &ns, "a").await;
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "sample-controller".into(),
            instance: Some("test".into()),
        },
    );
    let event = Event {
        type_: EventType::Warning,
        reason: "ErrResourceExists".into(),
        note: Some(vocabulary::message_resource_exists("a-nginx")),
        action: "Sync".into(),
        secondary: None,
    };
    recorder
        .publish(&event, &foo.object_ref(&()))
        .await
        .unwrap();
    let events = Api::<StoredEvent>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(events.len(), 1, "{events:#?}");
    let stored = &events[0];
    assert_eq!(stored.type_.as_deref(), Some("Warning"));
    assert_eq!(stored.reason.as_deref(), Some("ErrResourceExists"));
    assert_eq!(
        stored.reporting_controller.as_deref(),
        Some("sample-controller")
    );
    let regarding = stored.regarding.as_ref().unwrap();
    assert_eq!(
        (regarding.kind.as_deref(), regarding.name.as_deref()),
        (Some("Foo"), Some("a"))
    );
    assert_eq!(regarding.uid, foo.metadata.uid);
}

/// Per key: when each of its syncs started and ended.
type Syncs = BTreeMap<String, Vec<(Instant, Instant)>>;

// Cheat sheet: `workqueue.NewTypedRateLimitingQueue(limiter)`
// Cheat sheet: `public rate-limited work queue`
// Cheat sheet: `c.workqueue.Add(objectRef)`
// Cheat sheet: `c.workqueue.Get()`
// Cheat sheet: `c.workqueue.Done(objRef)`
// Cheat sheet: `c.workqueue.AddRateLimited(objRef)`
// Cheat sheet: `controller.Run(ctx, 2)`
// Cheat sheet: `wait.UntilWithContext(ctx, c.runWorker, time.Second)`
#[tokio::test]
async fn keys_sent_down_a_channel_run_on_two_workers_one_at_a_time_per_key_and_failures_retry() {
    let cache = synced(["a", "b", "c", "f"].map(foo));
    let limiter = Arc::new(RateLimiter::sample_controller());
    let (queue_tx, queue) = futures::channel::mpsc::unbounded::<ObjectRef<Foo>>();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let syncs: Arc<Mutex<Syncs>> = Arc::default();
    let (done_tx, mut done) = tokio::sync::mpsc::unbounded_channel::<String>();
    let sync = {
        let (running, most, syncs) = (running.clone(), most.clone(), syncs.clone());
        move |foo: Arc<Foo>| {
            let (running, most, syncs, done_tx) = (
                running.clone(),
                most.clone(),
                syncs.clone(),
                done_tx.clone(),
            );
            async move {
                let name = foo.name_any();
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let started = Instant::now();
                tokio::time::sleep(Duration::from_millis(50)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                let first = {
                    let mut syncs = syncs.lock().unwrap();
                    let runs = syncs.entry(name.clone()).or_default();
                    runs.push((started, Instant::now()));
                    runs.len() == 1
                };
                done_tx.send(name.clone()).unwrap();
                if name == "f" && first {
                    return Err(std::io::Error::other("first try fails"));
                }
                Ok(())
            }
        }
    };
    let workers = tokio::spawn(workqueue::run(cache, queue, 2, limiter.clone(), sync));
    for name in ["a", "b", "c", "f", "a"] {
        queue_tx
            .unbounded_send(ObjectRef::new(name).within("default"))
            .unwrap();
    }
    // a, b, c, f once each, f again after its failure (and a maybe twice).
    let mut seen = BTreeMap::<String, usize>::new();
    while seen.get("f").copied().unwrap_or(0) < 2 || seen.len() < 4 {
        let name = tokio::time::timeout(Duration::from_secs(5), done.recv())
            .await
            .expect("every key synced, f twice")
            .unwrap();
        *seen.entry(name).or_default() += 1;
    }
    drop(queue_tx);
    tokio::time::timeout(Duration::from_secs(5), workers)
        .await
        .expect("the workers stop when the queue ends")
        .unwrap();
    assert_eq!(most.load(Ordering::SeqCst), 2, "two workers, both busy");
    let syncs = syncs.lock().unwrap();
    for (name, runs) in syncs.iter() {
        for pair in runs.windows(2) {
            assert!(pair[1].0 >= pair[0].1, "{name} ran twice at once");
        }
    }
    let f = &syncs["f"];
    assert!(
        f[1].0 - f[0].1 >= Duration::from_millis(5),
        "the retry waited the per-key backoff"
    );
    // The success forgot f's failures (Go: Forget).
    assert_eq!(
        limiter.num_requeues(&ObjectRef::new("f").within("default")),
        0
    );
}

// Cheat sheet: `defer utilruntime.HandleCrash()`
#[tokio::test]
async fn a_panic_in_a_sync_ends_the_workers() {
    let cache = synced([foo("a")]);
    let (queue_tx, queue) = futures::channel::mpsc::unbounded::<ObjectRef<Foo>>();
    queue_tx
        .unbounded_send(ObjectRef::new("a").within("default"))
        .unwrap();
    let sync = |foo: Arc<Foo>| async move {
        assert_ne!(foo.name_any(), "a", "a bug in the sync panics on a");
        Ok::<(), std::io::Error>(())
    };
    let limiter = Arc::new(RateLimiter::sample_controller());
    let workers = tokio::spawn(workqueue::run(cache, queue, 2, limiter, sync));
    let ended = tokio::time::timeout(Duration::from_secs(5), workers)
        .await
        .expect("the workers end");
    assert!(
        ended.unwrap_err().is_panic(),
        "the panic reached the caller"
    );
}

/// What the reconcilers below are told.
struct Seen(tokio::sync::mpsc::UnboundedSender<String>);

async fn note(foo: Arc<Foo>, seen: Arc<Seen>) -> Result<Action, Infallible> {
    seen.0.send(foo.name_any()).ok();
    Ok(Action::await_change())
}

/// The next name a reconciler was told, within 10 s.
async fn next(seen: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), seen.recv())
        .await
        .expect("a reconcile")
        .unwrap()
}

// Cheat sheet: `Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{…})`
#[tokio::test]
async fn owns_reconciles_the_foo_that_controls_a_changed_deployment() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-owns").await;
    let foo = stored_foo(client, &ns, "a").await;
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let controller = Controller::new(
        Api::<Foo>::namespaced(client.clone(), &ns),
        watcher::Config::default(),
    )
    .owns(
        Api::<Deployment>::namespaced(client.clone(), &ns),
        watcher::Config::default(),
    )
    .run(
        note,
        |_, _: &Infallible, _| Action::await_change(),
        Arc::new(Seen(tx)),
    )
    .for_each(|_| std::future::ready(()));
    let task = tokio::spawn(controller);
    assert_eq!(next(&mut seen).await, "a", "the Foo itself");
    support::create_owned_deployment(client, &ns, &foo).await;
    assert_eq!(next(&mut seen).await, "a", "its Deployment's owner");
    // A Deployment nobody controls triggers nothing.
    support::create_foreign_deployment(client, &ns, "other").await;
    assert!(
        tokio::time::timeout(Duration::from_secs(2), seen.recv())
            .await
            .is_err()
    );
    task.abort();
}

// Cheat sheet: `informer resync`
#[tokio::test]
async fn a_requeue_reconciles_again_with_nothing_changed() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-requeue").await;
    stored_foo(client, &ns, "a").await;
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<String>();
    let reconcile = |foo: Arc<Foo>, seen: Arc<Seen>| async move {
        seen.0.send(foo.name_any()).ok();
        Ok::<_, Infallible>(Action::requeue(Duration::from_millis(300)))
    };
    let controller = Controller::new(
        Api::<Foo>::namespaced(client.clone(), &ns),
        watcher::Config::default(),
    )
    .run(
        reconcile,
        |_, _: &Infallible, _| Action::await_change(),
        Arc::new(Seen(tx)),
    )
    .for_each(|_| std::future::ready(()));
    let task = tokio::spawn(controller);
    for _ in 0..3 {
        let name = tokio::time::timeout(Duration::from_secs(5), seen.recv())
            .await
            .expect("a reconcile, then one per requeue")
            .unwrap();
        assert_eq!(name, "a");
    }
    task.abort();
}

// Cheat sheet: `errors.IsNotFound(err)`
// Cheat sheet: `errors.IsConflict(err)`
#[tokio::test]
async fn the_api_servers_errors_say_not_found_and_conflict() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-errors").await;
    let foos = Api::<Foo>::namespaced(client.clone(), &ns);
    match foos.get("missing").await {
        Err(kube::Error::Api(status)) => assert!(status.is_not_found(), "{status:?}"),
        other => panic!("expected 404, got {other:?}"),
    }
    assert!(foos.get_opt("missing").await.unwrap().is_none());
    let stale = stored_foo(client, &ns, "a").await;
    let mut newer = stale.clone();
    newer.spec.replicas = Some(2);
    foos.replace("a", &PostParams::default(), &newer)
        .await
        .unwrap();
    // The first copy's resourceVersion is stale now.
    match foos.replace("a", &PostParams::default(), &stale).await {
        Err(kube::Error::Api(status)) => assert!(status.is_conflict(), "{status:?}"),
        other => panic!("expected 409, got {other:?}"),
    }
}

/// The managers of `object`'s fields: (manager, operation, subresource).
fn managers(object: &impl Resource) -> BTreeSet<(String, String, String)> {
    object
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
                m.subresource.clone().unwrap_or_default(),
            )
        })
        .collect()
}

// Cheat sheet: `c.kubeclientset.AppsV1().Deployments(ns).Create(ctx, d, CreateOptions{FieldManager})`
// Cheat sheet: `Deployments(ns).Update(ctx, d, UpdateOptions{FieldManager})`
#[tokio::test]
async fn writes_carry_their_field_manager_and_an_apply_keeps_others_fields() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-writes").await;
    let foo = stored_foo(client, &ns, "a").await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns);
    let params = PostParams {
        field_manager: Some("sample-controller".into()),
        ..PostParams::default()
    };
    let created = deployments
        .create(&params, &new_deployment(&foo))
        .await
        .unwrap();
    assert!(managers(&created).contains(&(
        "sample-controller".into(),
        "Update".into(),
        String::new()
    )));
    // replace: the whole object, as Go's Update.
    let mut scaled = created.clone();
    scaled.spec.replicas = Some(3);
    let replaced = deployments
        .replace("a-nginx", &params, &scaled)
        .await
        .unwrap();
    assert_eq!(replaced.spec.replicas, Some(3));
    // Someone else labels it; an apply of ours leaves the label alone.
    let label = PatchParams {
        field_manager: Some("kubectl-label".into()),
        ..PatchParams::default()
    };
    deployments
        .patch(
            "a-nginx",
            &label,
            &Patch::Merge(json!({"metadata": {"labels": {"team": "blue"}}})),
        )
        .await
        .unwrap();
    let mut ours = new_deployment(&foo);
    ours.spec.replicas = Some(2);
    let applied = deployments
        .patch(
            "a-nginx",
            &PatchParams::apply("sample-controller").force(),
            &Patch::Apply(&ours),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.replicas, Some(2));
    assert_eq!(
        applied.labels().get("team").map(String::as_str),
        Some("blue")
    );
    assert!(managers(&applied).contains(&(
        "sample-controller".into(),
        "Apply".into(),
        String::new()
    )));
}

// Cheat sheet: `foo.DeepCopy()`
// Cheat sheet: `Foos(ns).UpdateStatus(ctx, foo, UpdateOptions{FieldManager})`
#[tokio::test]
async fn a_status_write_goes_through_the_status_subresource_and_leaves_the_spec() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-status").await;
    let foo = stored_foo(client, &ns, "a").await;
    let foos = Api::<Foo>::namespaced(client.clone(), &ns);
    // A copy to change; the cached original stays as it was.
    let mut copy = foo.clone();
    copy.status = Some(sample_controller::FooStatus {
        available_replicas: 1,
    });
    copy.spec.replicas = Some(5);
    assert!(foo.status.is_none());
    let params = PostParams {
        field_manager: Some("sample-controller".into()),
        ..PostParams::default()
    };
    let written = foos.replace_status("a", &params, &copy).await.unwrap();
    assert_eq!(written.status.map(|s| s.available_replicas), Some(1));
    assert_eq!(
        written.spec.replicas,
        Some(1),
        "the status write ignores spec"
    );
    let applied = foos
        .patch_status(
            "a",
            &PatchParams::apply("sample-controller").force(),
            &Patch::Apply(json!({
                "apiVersion": Foo::api_version(&()),
                "kind": Foo::kind(&()),
                "status": {"availableReplicas": 0},
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        applied.status.as_ref().map(|s| s.available_replicas),
        Some(0)
    );
    assert!(managers(&applied).contains(&(
        "sample-controller".into(),
        "Apply".into(),
        "status".into()
    )));
}

// Cheat sheet: `cache.ObjectToName(obj)`
// Cheat sheet: `klog.KObj(obj)`
// Cheat sheet: `metav1.GetControllerOf(obj)`
// Cheat sheet: `metav1.IsControlledBy(d, foo)`
// Cheat sheet: `metav1.NewControllerRef(foo, gvk)`
#[test]
fn keys_names_and_owner_references_read_as_go_reads_them() {
    let a = foo("a");
    let key = ObjectRef::from(&a);
    assert_eq!(
        (key.name.as_str(), key.namespace.as_deref()),
        ("a", Some("default"))
    );
    // klog prints namespace/name; kube's ObjectRef displays otherwise.
    assert_eq!(object_name(&a), "default/a");
    assert_eq!(key_string(&key), "default/a");
    assert_eq!(
        key.to_string(),
        "Foo.v1alpha1.samplecontroller.k8s.io/a.default"
    );
    // kube's controller_owner_ref: no blockOwnerDeletion, and none without a UID.
    let kube_ref = a.controller_owner_ref(&()).unwrap();
    assert_eq!(
        (kube_ref.controller, kube_ref.block_owner_deletion),
        (Some(true), None)
    );
    let mut no_uid = a.clone();
    no_uid.metadata.uid = None;
    assert!(no_uid.controller_owner_ref(&()).is_none());
    let go_ref = new_controller_ref(&a);
    assert_eq!(
        (go_ref.controller, go_ref.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(
        (go_ref.kind.as_str(), go_ref.uid.as_str()),
        ("Foo", "a-uid")
    );
    // Several owners, a non-controller first: the controller is the one marked.
    let mut deployment = new_deployment(&a);
    let mut other = new_controller_ref(&foo("b"));
    other.controller = None;
    deployment.metadata.owner_references = Some(vec![other, new_controller_ref(&a)]);
    assert_eq!(controller_of(&deployment).unwrap().name, "a");
    assert!(is_controlled_by(&deployment, &a));
    // The same name with another UID is another Foo.
    let mut recreated = a.clone();
    recreated.metadata.uid = Some("new-uid".into());
    assert!(!is_controlled_by(&deployment, &recreated));
}

// Cheat sheet: `fake.NewClientset(objects...)`
// Cheat sheet: `client.Actions()`
// Cheat sheet: `record.FakeRecorder{}`
// Cheat sheet: `ktesting.NewTestContext(t)`
// Cheat sheet: `fake clientset`
#[tokio::test]
async fn a_mock_service_sees_each_request_the_client_and_the_recorder_send() {
    use http::{Request, Response};
    use kube::client::Body;
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let get = tokio::spawn({
        let foos = Api::<Foo>::namespaced(client.clone(), "default");
        async move { foos.get("a").await }
    });
    let (request, respond) = handle.next_request().await.unwrap();
    assert_eq!(request.method(), http::Method::GET);
    assert_eq!(
        request.uri().path(),
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos/a"
    );
    let body = serde_json::to_vec(&foo("a")).unwrap();
    respond.send_response(Response::new(Body::from(body)));
    assert_eq!(get.await.unwrap().unwrap().name_any(), "a");
    // An Event is a POST the mock sees, like FakeRecorder's channel.
    let publish = tokio::spawn({
        let recorder = Recorder::new(client, "sample-controller".into());
        let reference = foo("a").object_ref(&());
        async move {
            let event = Event {
                type_: EventType::Normal,
                reason: "Synced".into(),
                note: None,
                action: "Sync".into(),
                secondary: None,
            };
            recorder.publish(&event, &reference).await
        }
    });
    let (request, respond) = handle.next_request().await.unwrap();
    assert_eq!(
        (request.method(), request.uri().path()),
        (
            &http::Method::POST,
            "/apis/events.k8s.io/v1/namespaces/default/events"
        )
    );
    let sent = request.into_body().collect_bytes().await.unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&sent).unwrap();
    assert_eq!(sent["reason"], "Synced");
    respond.send_response(Response::new(Body::from(sent.to_string().into_bytes())));
    publish.await.unwrap().unwrap();
}

// Cheat sheet: `client-side QPS limit`
#[tokio::test(start_paused = true)]
async fn a_tower_rate_limit_layer_spaces_the_clients_requests() {
    use http::{Request, Response};
    use kube::client::Body;
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    // Two requests per second, as a QPS of 2 would allow.
    let limited = tower::ServiceBuilder::new()
        .rate_limit(2, Duration::from_secs(1))
        .service(service);
    let client = Client::new(limited, "default");
    let start = tokio::time::Instant::now();
    for name in ["a", "b", "c"] {
        let foos = Api::<Foo>::namespaced(client.clone(), "default");
        tokio::spawn(async move { foos.get(name).await });
    }
    let mut arrived = Vec::new();
    for _ in 0..3 {
        let (_, respond) = handle.next_request().await.unwrap();
        arrived.push(start.elapsed());
        let body = serde_json::to_vec(&foo("x")).unwrap();
        respond.send_response(Response::new(Body::from(body)));
    }
    assert!(arrived[1] < Duration::from_secs(1), "{arrived:?}");
    assert!(arrived[2] >= Duration::from_secs(1), "{arrived:?}");
}

/// The key of each row of the cheat sheet's tables, from its first cell as
/// written: in a Go table the first code span, in the table of what kube-rs
/// does not have the words before " (".
fn rows() -> Vec<String> {
    use pulldown_cmark::{Event as Md, Options, Parser as Markdown, Tag, TagEnd};
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/book/src/appendix-a-cheat-sheet.md"
    ))
    .unwrap();
    let mut rows = Vec::new();
    let (mut table, mut in_head, mut cell) = (String::new(), false, 0);
    for (event, range) in Markdown::new_ext(&page, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Md::Start(Tag::TableHead) => (in_head, cell) = (true, 0),
            Md::End(TagEnd::TableHead) => in_head = false,
            Md::Start(Tag::TableRow) => cell = 0,
            Md::Start(Tag::TableCell) => {
                cell += 1;
                let first = page[range].trim().trim_matches('|').trim();
                if cell > 1 {
                    continue;
                } else if in_head {
                    table = first.to_string();
                } else if table == "Go" {
                    rows.push(first.split('`').nth(1).unwrap_or(first).to_string());
                } else {
                    rows.push(first.split(" (").next().unwrap_or(first).to_string());
                }
            }
            _ => {}
        }
    }
    rows
}

/// Every `// Cheat sheet: `KEY`` line in the project's Rust, by file, each
/// with whether a test follows it.
fn marked_rows() -> Vec<(String, String, bool)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "steps"] {
        let mut stack = vec![root.join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
    }
    let marker = "// Cheat sheet: ";
    let mut marked = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (n, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix(marker) else {
                continue;
            };
            let key = rest.trim().trim_matches('`').to_string();
            // The next line that is no marker or comment is a test attribute.
            let is_test = lines[n + 1..]
                .iter()
                .find(|l| !l.starts_with("//"))
                .is_some_and(|l| l.starts_with("#[test]") || l.starts_with("#[tokio::test"));
            let place = format!("{}:{}", file.strip_prefix(root).unwrap().display(), n + 1);
            marked.push((key, place, is_test));
        }
    }
    marked
}

#[test]
fn every_row_of_the_cheat_sheet_has_a_test_and_every_marker_names_a_row() {
    let rows = rows();
    assert!(rows.len() > 50, "{rows:?}");
    let marked = marked_rows();
    let mut problems = Vec::new();
    for (key, place, is_test) in &marked {
        if !rows.contains(key) {
            problems.push(format!("{place}: {key:?} is no row of the cheat sheet"));
        }
        if !is_test {
            problems.push(format!("{place}: {key:?} is not above a test"));
        }
    }
    for row in &rows {
        if !marked.iter().any(|(key, _, _)| key == row) {
            problems.push(format!("the row {row:?} has no test"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
