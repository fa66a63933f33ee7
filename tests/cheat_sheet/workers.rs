//! The queue and its workers: keys on two workers, a panic, kube's
//! Controller's `owns` and requeue.

use super::*;

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
