//! The rate-limited work queue and its workers.
//!
//! Go: `workqueue.NewTypedRateLimitingQueue` with sample-controller's rate
//! limiter, and `Run` / `runWorker` / `processNextWorkItem` in
//! [controller.go](https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go).
//!
//! What kube-runtime already provides, through [`applier`]: its scheduler
//! deduplicates keys (a key queued many times is synced once), never runs
//! one key in two workers at once (a key queued while it is being synced is
//! held and synced again afterwards), runs at most N syncs concurrently (Go's
//! worker count), looks each key up in the cache (Go's lister `Get`), and
//! drains in-flight syncs when the queue ends.
//!
//! What it lacks, written here: Go's rate limiter for retries, the maximum of
//! a per-key exponential backoff ([`ItemExponentialBackoff`], 5 ms · 2^n up to
//! 1000 s, reset by `Forget` after a success) and an overall token bucket
//! ([`TokenBucket`], 50 retries per second, burst 300).

use std::collections::HashMap;
use std::convert::Infallible;
use std::error::Error as StdError;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::controller::{self, Action, applier};
use kube::runtime::reflector::{ObjectRef, Store};

use crate::Foo;
use crate::informer::key_string;
use crate::signals::Shutdown;

// ANCHOR: item_backoff
/// Per-key exponential backoff: the n-th retry in a row of a key waits
/// `base · 2^n`, at most `max`. Go: `TypedItemExponentialFailureRateLimiter`.
#[derive(Debug)]
pub struct ItemExponentialBackoff<K> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<K, u32>>,
}

impl<K: Eq + Hash + Clone> ItemExponentialBackoff<K> {
    /// A backoff starting at `base` and capped at `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The delay before retrying `key`, counting this failure. Go: `When`.
    pub fn when(&self, key: &K) -> Duration {
        let mut failures = lock(&self.failures);
        let count = failures.entry(key.clone()).or_insert(0);
        let exponent = *count;
        *count = count.saturating_add(1);
        // Past 2^31 the multiplication overflows; the cap applies long before.
        match 2u32
            .checked_pow(exponent)
            .and_then(|factor| self.base.checked_mul(factor))
        {
            Some(delay) => delay.min(self.max),
            None => self.max,
        }
    }

    /// Clears the failure history of `key` after a success. Go: `Forget`.
    pub fn forget(&self, key: &K) {
        lock(&self.failures).remove(key);
    }

    /// How many times in a row `key` has failed. Go: `NumRequeues`.
    pub fn num_requeues(&self, key: &K) -> u32 {
        lock(&self.failures).get(key).copied().unwrap_or(0)
    }
}
// ANCHOR_END: item_backoff

// ANCHOR: token_bucket
/// An overall limit on retries, shared by all keys: `qps` tokens per second,
/// at most `burst` saved up. A retry that finds no token waits for the next
/// one. Go: `TypedBucketRateLimiter` over `rate.NewLimiter(50, 300)`, whose
/// `When` is `Reserve().Delay()`.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst);
        Self {
            qps,
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Takes a token at `now` and returns how long to wait for it. Tokens
    /// may go negative: later callers queue behind earlier reservations.
    pub fn reserve_at(&self, now: Instant) -> Duration {
        let mut state = lock(&self.state);
        let (tokens, last) = *state;
        let refilled =
            (tokens + now.saturating_duration_since(last).as_secs_f64() * self.qps).min(self.burst);
        let left = refilled - 1.0;
        *state = (left, now.max(last));
        if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-left / self.qps)
        }
    }
}
// ANCHOR_END: token_bucket

// ANCHOR: rate_limiter
/// sample-controller's retry rate limiter: the longer of a per-key backoff
/// and the overall bucket. Go: `NewTypedMaxOfRateLimiter(...)` in `NewController`.
#[derive(Debug)]
pub struct RateLimiter<K> {
    per_item: ItemExponentialBackoff<K>,
    overall: TokenBucket,
}

impl<K: Eq + Hash + Clone> RateLimiter<K> {
    /// The limiter sample-controller builds: 5 ms · 2^n up to 1000 s per key,
    /// 50 retries per second with a burst of 300 overall.
    pub fn sample_controller() -> Self {
        Self::new(
            ItemExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000)),
            TokenBucket::new(50.0, 300),
        )
    }

    /// A limiter from its two parts.
    pub fn new(per_item: ItemExponentialBackoff<K>, overall: TokenBucket) -> Self {
        Self { per_item, overall }
    }

    /// How long to wait before retrying `key`. Go: `When` (called by `AddRateLimited`).
    pub fn when(&self, key: &K) -> Duration {
        self.per_item
            .when(key)
            .max(self.overall.reserve_at(Instant::now()))
    }

    /// The limit shared by all keys. Go: the `BucketRateLimiter` half.
    pub fn overall(&self) -> &TokenBucket {
        &self.overall
    }

    /// Resets `key`'s backoff after a successful sync. Go: `Forget`.
    pub fn forget(&self, key: &K) {
        self.per_item.forget(key);
    }

    /// Failures in a row of `key`. Go: `NumRequeues`.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.per_item.num_requeues(key)
    }
}
// ANCHOR_END: rate_limiter

// ANCHOR: run
/// Runs `workers` workers over the keys in `queue` until it ends, then lets
/// in-flight syncs finish. Go: `Run(ctx, workers)` with `runWorker` and
/// `processNextWorkItem`.
///
/// Each key is looked up in `cache` and handed to `sync`. Success forgets the
/// key's backoff; an error requeues it after `limiter.when(key)`. A key
/// whose object is no longer in the cache is dropped, as Go's `syncHandler`
/// does for a deleted Foo.
pub async fn run<K, E, Fut>(
    cache: Store<K>,
    queue: impl Stream<Item = ObjectRef<K>> + Send + 'static,
    workers: u16,
    limiter: Arc<RateLimiter<ObjectRef<K>>>,
    mut sync: impl FnMut(Arc<K>) -> Fut,
) where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Debug + Eq + Hash + Clone + Unpin + Send + Sync,
    E: StdError + Send + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
{
    // applier opens a `reconciling object` span around each sync and the
    // error policy, so every log line of a sync names its key.
    let reconcile = move |obj: Arc<K>, limiter: Arc<RateLimiter<ObjectRef<K>>>| {
        let key = ObjectRef::from(obj.as_ref());
        let synced = sync(obj);
        // applier wants an Unpin future; boxing here spares every caller.
        Box::pin(async move {
            synced.await?;
            limiter.forget(&key); // Go: c.workqueue.Forget(objRef)
            Ok::<_, E>(Action::await_change())
        })
    };
    let error_policy = move |obj: Arc<K>, err: &E, limiter: Arc<RateLimiter<ObjectRef<K>>>| {
        let key = ObjectRef::from(obj.as_ref());
        let delay = limiter.when(&key); // Go: c.workqueue.AddRateLimited(objRef)
        tracing::error!(
            objectRef = %key_string(&key),
            error = %err,
            retry_in = ?delay,
            "Error syncing; requeuing for later retry"
        );
        Action::requeue(delay)
    };
    let config = controller::Config::default().concurrency(workers);
    let queue = queue
        .inspect(|key| tracing::debug!(objectRef = %key_string(key), "Adding to the work queue"))
        .map(Ok::<_, Infallible>);
    applier(
        reconcile,
        error_policy,
        limiter.clone(),
        cache,
        queue,
        config,
    )
    .for_each(|result| {
        match result {
            Ok((key, _)) => tracing::info!(objectRef = %key_string(&key), "Successfully synced"),
            Err(controller::Error::ObjectNotFound(key)) => {
                let mut gone = ObjectRef::<K>::new(&key.name);
                gone.namespace = key.namespace;
                limiter.forget(&gone); // Go returns nil here, so the key is forgotten
                tracing::info!(
                    objectReference = %key_string(&gone), // Go's name for it here
                    "Foo referenced by item in work queue no longer exists"
                );
            }
            // Logged with its delay by the error policy above.
            Err(controller::Error::ReconcilerFailed(..)) => {}
            Err(other) => tracing::error!(error = %other, "work queue failed"),
        }
        std::future::ready(())
    })
    .await;
}
// ANCHOR_END: run

// ANCHOR: run_until
/// The workers of steps 4–7: [`run`] over the informers' queue with
/// sample-controller's rate limiter, until `shutdown` (then in-flight syncs
/// finish). Go: `controller.Run(ctx, workers)` after `NewController` built the
/// queue with its limiter.
pub async fn run_until<E, Fut>(
    foos: Store<Foo>,
    queue: impl Stream<Item = ObjectRef<Foo>> + Send + 'static,
    shutdown: Shutdown,
    workers: u16,
    sync: impl FnMut(Arc<Foo>) -> Fut,
) where
    E: StdError + Send + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
{
    let limiter = Arc::new(RateLimiter::sample_controller());
    run(foos, queue.take_until(shutdown), workers, limiter, sync).await;
}
// ANCHOR_END: run_until

/// Locks a mutex, recovering the data if a panicking thread poisoned it
/// (the maps here stay consistent whatever line a panic interrupts).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cheat sheet: `workqueue.NewTypedItemExponentialFailureRateLimiter(5ms, 1000s)`
    #[test]
    fn per_key_backoff_doubles_from_5ms_and_is_capped_at_1000s() {
        let backoff =
            ItemExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
        let delays: Vec<_> = (0..5).map(|_| backoff.when(&"a")).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80].map(Duration::from_millis));
        // 5 ms · 2^17 = 655 s; 2^18 would be 1310 s, past the cap.
        for _ in 5..17 {
            backoff.when(&"a");
        }
        assert_eq!(backoff.when(&"a"), Duration::from_millis(5 << 17));
        assert_eq!(backoff.when(&"a"), Duration::from_secs(1000));
        for _ in 0..100 {
            assert_eq!(backoff.when(&"a"), Duration::from_secs(1000));
        }
    }

    // Cheat sheet: `c.workqueue.Forget(objRef)`
    #[test]
    fn keys_back_off_independently_and_forget_resets_one_key() {
        let backoff =
            ItemExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
        backoff.when(&"a");
        backoff.when(&"a");
        assert_eq!(backoff.when(&"b"), Duration::from_millis(5));
        assert_eq!(backoff.num_requeues(&"a"), 2);
        backoff.forget(&"a");
        assert_eq!(backoff.num_requeues(&"a"), 0);
        assert_eq!(backoff.when(&"a"), Duration::from_millis(5));
        assert_eq!(backoff.num_requeues(&"b"), 1);
    }

    // Cheat sheet: `workqueue.TypedBucketRateLimiter{rate.NewLimiter(50, 300)}`
    #[test]
    fn the_bucket_allows_a_burst_then_spaces_retries_at_its_rate() {
        let bucket = TokenBucket::new(50.0, 300);
        let now = Instant::now();
        for _ in 0..300 {
            assert_eq!(bucket.reserve_at(now), Duration::ZERO);
        }
        // The 301st waits one token (20 ms at 50/s), the next one two.
        assert_eq!(bucket.reserve_at(now), Duration::from_millis(20));
        assert_eq!(bucket.reserve_at(now), Duration::from_millis(40));
        // Two seconds later 100 tokens have come back, minus the 2 owed.
        let later = now + Duration::from_secs(2);
        for _ in 0..98 {
            assert_eq!(bucket.reserve_at(later), Duration::ZERO);
        }
        assert_eq!(bucket.reserve_at(later), Duration::from_millis(20));
    }

    // Cheat sheet: `workqueue.NewTypedMaxOfRateLimiter(…)`
    // Cheat sheet: `per-key exponential backoff, global retry bucket`
    #[test]
    fn the_limiter_takes_the_longer_of_backoff_and_bucket() {
        let limiter = RateLimiter::new(
            ItemExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000)),
            TokenBucket::new(1.0, 1),
        );
        assert_eq!(limiter.when(&"a"), Duration::from_millis(5)); // bucket had a token
        let second = limiter.when(&"b"); // bucket empty: about a second
        assert!(second > Duration::from_millis(900), "{second:?}");
    }
}
