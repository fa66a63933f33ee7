//! The flow of a step, as data: one JSON line for each thing that happens on
//! the way from a watch event to the API server and back, for `cargo xtask
//! watch` to draw and the book to replay.
//!
//! Off by default. With `SAMPLE_CONTROLLER_FLOW=PATH` in its environment, a
//! step appends these lines to PATH ([`layer`], installed by
//! [`crate::telemetry::init`]). Each line has `t` (seconds since the step
//! started), `lane` and `what`, and the fields of its lane:
//!
//! | lane | what | fields |
//! |---|---|---|
//! | `watch` | `add`, `update`, `delete`, `relist`, `resync`; `apply` (step 8: kube's watcher does not tell an add from an update) | `resource`, `key`, `rv` (not for `relist`) |
//! | `handler` | `enqueue`, `ignore` | `resource`, `object`, then `key` or `reason` |
//! | `queue` | `add`, `merge`, `requeue`, `take`, `forget`, `drop` | `key`; `worker` (`take`), `delay_ms` and `requeues` (`requeue`) |
//! | `worker` | `start`, `end` | `key`, `worker`; `outcome`, `error`, `ms` (`end`) |
//! | `api` | the client's verb (`list`, `watch`, `create`, `replace`, `patch`, ...) | `method`, `resource`, `namespace`, `name`, `subresource`, `code` (absent if no answer), `ms`; `key` and `worker` for a sync's request |
//! | `event` | `Normal`, `Warning` | `key`, `reason`, `note` |
//! | `note` | `queue` | `text`: what the trace cannot show ([`SCHEDULER_NOTE`]) |
//!
//! The lines are `tracing` events of the target `flow` (at TRACE level, so
//! the log on stderr never shows them), and the `api` lines come from the
//! span kube's client opens for every request (`HTTP`, with the verb, URL
//! and status code), so nothing here wraps the client. With the variable
//! unset, the layer is not installed and these events are disabled at their
//! call sites, like any TRACE event under the default filter.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{LineWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Instrument, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{FilterFn, Filtered};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::informer::key_string;

/// The `tracing` target of every flow event.
pub const TARGET: &str = "flow";

/// The environment variable that turns the flow on: the file to append to.
pub const ENV: &str = "SAMPLE_CONTROLLER_FLOW";

// ANCHOR: emit
/// A watch event as the handlers are told it: `what` is `add`, `update`,
/// `delete` or `resync` (a replay of the cache); `apply` where the watcher
/// does not say which of `add` and `update` it is (step 8).
pub fn watched<K: Resource>(what: &'static str, object: &K)
where
    K::DynamicType: Default,
{
    let kind = K::DynamicType::default();
    let resource = K::plural(&kind);
    let resource = resource.as_ref();
    tracing::trace!(
        target: TARGET,
        lane = "watch",
        what,
        resource,
        key = %key_of(object),
        rv = object.meta().resource_version.as_deref().unwrap_or_default(),
    );
}

/// A watch (re)starts its list of `resource`.
pub fn relisting(resource: &str) {
    tracing::trace!(target: TARGET, lane = "watch", what = "relist", resource);
}

/// A handler's decision about `object`: the key it enqueues, or why none.
pub fn decided<K: Resource, E: fmt::Display>(
    resource: &str,
    object: &K,
    decision: &Result<ObjectRef<crate::Foo>, E>,
) {
    match decision {
        Ok(key) => tracing::trace!(
            target: TARGET,
            lane = "handler",
            what = "enqueue",
            resource,
            object = %key_of(object),
            key = %key_string(key),
        ),
        Err(reason) => tracing::trace!(
            target: TARGET,
            lane = "handler",
            what = "ignore",
            resource,
            object = %key_of(object),
            reason = %reason,
        ),
    }
}

/// A key reaches the queue: `merge` if it was already waiting there (it is
/// synced once), `add` if not.
pub fn queued<K: Resource>(key: &ObjectRef<K>, already_waiting: bool) {
    let what = if already_waiting { "merge" } else { "add" };
    tracing::trace!(target: TARGET, lane = "queue", what, key = %key_string(key));
}

/// A failed key goes back into the queue after `delay`, its `requeues`-th
/// failure in a row. Go: `AddRateLimited`.
pub fn requeued<K: Resource>(key: &ObjectRef<K>, delay: Duration, requeues: u32) {
    tracing::trace!(
        target: TARGET,
        lane = "queue",
        what = "requeue",
        key = %key_string(key),
        delay_ms = delay.as_millis() as u64,
        requeues,
    );
}

/// A worker takes a key from the queue. Go: `workqueue.Get`.
pub fn taken<K: Resource>(key: &ObjectRef<K>, worker: usize) {
    tracing::trace!(target: TARGET, lane = "queue", what = "take", key = %key_string(key), worker);
}

/// A key's backoff is reset after a success. Go: `workqueue.Forget`.
pub fn forgotten<K: Resource>(key: &ObjectRef<K>) {
    tracing::trace!(target: TARGET, lane = "queue", what = "forget", key = %key_string(key));
}

/// A key whose object left the cache is dropped without a sync.
pub fn dropped<K: Resource>(key: &ObjectRef<K>) {
    tracing::trace!(target: TARGET, lane = "queue", what = "drop", key = %key_string(key));
}

/// The span a sync runs in: its `start` and `end` lines, and the key and
/// worker of every request it makes.
pub fn sync_span<K: Resource>(key: &ObjectRef<K>, worker: usize) -> tracing::Span {
    tracing::trace_span!(target: TARGET, "sync", key = %key_string(key), worker)
}

/// A worker starts syncing a key (inside its [`sync_span`]).
pub fn sync_started<K: Resource>(key: &ObjectRef<K>, worker: usize) {
    tracing::trace!(target: TARGET, lane = "worker", what = "start", key = %key_string(key), worker);
}

/// A sync ends, after `elapsed`, with `error` if it failed.
pub fn sync_ended<K: Resource>(
    key: &ObjectRef<K>,
    worker: usize,
    elapsed: Duration,
    error: Option<&dyn fmt::Display>,
) {
    let ms = elapsed.as_secs_f64() * 1000.0;
    match error {
        None => tracing::trace!(
            target: TARGET,
            lane = "worker",
            what = "end",
            key = %key_string(key),
            worker,
            outcome = "ok",
            ms,
        ),
        Some(error) => tracing::trace!(
            target: TARGET,
            lane = "worker",
            what = "end",
            key = %key_string(key),
            worker,
            outcome = "error",
            error = %error,
            ms,
        ),
    }
}

/// An Event recorded about the object `key`, with its note (an
/// events.k8s.io Event's message).
pub fn recorded(key: &str, type_: &'static str, reason: &str, note: &str) {
    tracing::trace!(target: TARGET, lane = "event", what = type_, key, reason, note);
}
// ANCHOR_END: emit

/// Whether the flow is written (its layer is installed). Code that keeps
/// state only for the flow asks first, so that it costs nothing when off.
pub fn enabled() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::TRACE)
}

/// What a queue's lines cannot show: the first line a queue writes.
pub const SCHEDULER_NOTE: &str = "The queue is kube-runtime's scheduler (its applier; step 8: \
     the Controller around it), which exposes nothing of itself: a key's add is when it reaches \
     the scheduler, its take when its sync starts; merges, holds and delays in between are \
     inferred from both ends";

/// The work queue's side of the flow, for a queue run by kube's scheduler
/// (`applier`): which keys are waiting (so that a key added again shows as
/// merged), which worker runs each sync, and the lines of both. Does nothing
/// when the flow is off.
pub struct QueueFlow<K: Resource> {
    on: bool,
    waiting: Mutex<HashSet<ObjectRef<K>>>,
    workers: Workers,
}

impl<K> QueueFlow<K>
where
    K: Resource,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    /// The flow of a queue with `workers` workers; writes
    /// [`SCHEDULER_NOTE`] if the flow is on.
    pub fn new(workers: usize) -> Self {
        tracing::trace!(target: TARGET, lane = "note", what = "queue", text = SCHEDULER_NOTE);
        QueueFlow {
            on: enabled(),
            waiting: Mutex::new(HashSet::new()),
            workers: Workers::new(workers),
        }
    }

    /// A handler added `key`. Go: `workqueue.Add`.
    pub fn add(&self, key: &ObjectRef<K>) {
        if self.on {
            let already = !lock(&self.waiting).insert(key.clone());
            queued(key, already);
        }
    }

    /// A worker takes `key` (the lowest idle one): its `take` and `start`
    /// lines. Create the sync's future inside [`SyncFlow::in_scope`], so
    /// that its spans, and kube's span of each request it makes, are
    /// children of the sync's, then run it with [`SyncFlow::run`].
    pub fn take(self: &Arc<Self>, key: &ObjectRef<K>) -> SyncFlow<K> {
        if !self.on {
            return SyncFlow {
                flow: self.clone(),
                key: key.clone(),
                worker: None,
                span: tracing::Span::none(),
                started: Instant::now(),
            };
        }
        let worker = self.workers.take();
        lock(&self.waiting).remove(key);
        taken(key, worker);
        let span = sync_span(key, worker);
        span.in_scope(|| sync_started(key, worker));
        SyncFlow {
            flow: self.clone(),
            key: key.clone(),
            worker: Some(worker),
            span,
            started: Instant::now(),
        }
    }

    /// A failed `key` waits `delay` before its next sync.
    pub fn requeue(&self, key: &ObjectRef<K>, delay: Duration, requeues: u32) {
        if self.on {
            lock(&self.waiting).insert(key.clone());
            requeued(key, delay, requeues);
        }
    }

    /// `key` synced: its backoff is reset.
    pub fn forget(&self, key: &ObjectRef<K>) {
        if self.on {
            forgotten(key);
        }
    }

    /// `key`'s object left the cache: it is dropped without a sync.
    pub fn drop_key(&self, key: &ObjectRef<K>) {
        if self.on {
            lock(&self.waiting).remove(key);
            dropped(key);
        }
    }
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `namespace/name` of an object, as its key in the flow.
pub fn key_of<K: Resource>(object: &K) -> String {
    let meta = object.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// Which of the N workers a sync runs on. kube's scheduler runs at most N
/// syncs at once but has no workers of its own; a sync takes the lowest
/// free number for as long as it runs, as one of Go's N worker goroutines
/// would.
#[derive(Debug)]
pub struct Workers(Mutex<Vec<bool>>);

impl Workers {
    /// N workers, all idle.
    pub fn new(n: usize) -> Self {
        Workers(Mutex::new(vec![false; n]))
    }

    /// The lowest idle worker, busy until [`Workers::free`].
    pub fn take(&self) -> usize {
        let mut busy = lock(&self.0);
        let index = busy.iter().position(|b| !b).unwrap_or_else(|| {
            // More syncs than workers cannot happen (kube's concurrency
            // limit); if it did, number the extra one past the end.
            busy.push(false);
            busy.len() - 1
        });
        busy[index] = true;
        index
    }

    /// Worker `index` is idle again.
    pub fn free(&self, index: usize) {
        if let Some(busy) = lock(&self.0).get_mut(index) {
            *busy = false;
        }
    }
}

/// One sync of a key, on its worker, in its span: [`QueueFlow::take`].
pub struct SyncFlow<K: Resource> {
    flow: Arc<QueueFlow<K>>,
    key: ObjectRef<K>,
    worker: Option<usize>,
    span: tracing::Span,
    started: Instant,
}

impl<K: Resource> SyncFlow<K> {
    /// Runs `f` (which creates the sync's future) inside the sync's span.
    pub fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        self.span.in_scope(f)
    }

    /// Runs the sync, then writes its `end` line and frees its worker.
    pub async fn run<T, E: fmt::Display>(
        self,
        sync: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let Some(worker) = self.worker else {
            return sync.await;
        };
        let result = sync.instrument(self.span.clone()).await;
        let error = result.as_ref().err().map(|e| e as &dyn fmt::Display);
        sync_ended(&self.key, worker, self.started.elapsed(), error);
        result
    }
}

impl<K: Resource> Drop for SyncFlow<K> {
    fn drop(&mut self) {
        // Also when the sync is dropped unfinished (a stop).
        if let Some(worker) = self.worker {
            self.flow.workers.free(worker);
        }
    }
}

// ANCHOR: layer
/// The layer that writes the flow to the file `SAMPLE_CONTROLLER_FLOW`
/// names, if it is set: `Ok(None)` if not, an error if the file cannot be
/// opened.
pub fn layer<S>() -> anyhow::Result<Option<Filtered<FlowLayer, FilterFn, S>>>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let Some(path) = std::env::var_os(ENV) else {
        return Ok(None);
    };
    let path = Path::new(&path);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|err| anyhow::anyhow!("{ENV}={}: cannot open it: {err}", path.display()))?;
    Ok(Some(
        FlowLayer::to_file(file).with_filter(FilterFn::new(wanted)),
    ))
}

/// What the flow layer sees: the `flow` target, and the span kube's client
/// opens for each request.
fn wanted(meta: &Metadata<'_>) -> bool {
    meta.target() == TARGET || is_request(meta)
}

/// Whether `meta` is the span kube-client's `TraceLayer` opens per request.
fn is_request(meta: &Metadata<'_>) -> bool {
    meta.is_span() && meta.name() == "HTTP" && meta.target().starts_with("kube_client")
}
// ANCHOR_END: layer

/// Writes one JSON object per line for each flow event and each request.
pub struct FlowLayer {
    out: Mutex<Box<dyn Write + Send>>,
    start: Instant,
}

impl FlowLayer {
    /// A layer appending to `file`, a line at a time.
    pub fn to_file(file: File) -> Self {
        Self::to_writer(LineWriter::new(file))
    }

    /// A layer writing to `out` (tests write to a buffer).
    pub fn to_writer(out: impl Write + Send + 'static) -> Self {
        FlowLayer {
            out: Mutex::new(Box::new(out)),
            start: Instant::now(),
        }
    }

    /// Writes `fields` as a line, `t` first.
    fn write(&self, mut fields: Map<String, Value>) {
        let t = (self.start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let mut line = Map::new();
        line.insert("t".into(), Value::from(t));
        line.append(&mut fields);
        let mut out = lock(&self.out);
        // A trace that cannot be written is lost, not a reason to stop.
        let _ = serde_json::to_writer(&mut *out, &line);
        let _ = out.write_all(b"\n");
    }
}

/// The fields of a sync span, kept in its extensions.
struct SyncFields(Map<String, Value>);

/// A request in flight: what kube's span says of it, and when it started.
struct Request {
    fields: Map<String, Value>,
    started: Instant,
    written: bool,
}

impl<S> Layer<S> for FlowLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if is_request(attrs.metadata()) {
            let mut request = Map::new();
            request.insert("lane".into(), "api".into());
            let verb = fields.0.remove("otel.name").unwrap_or(Value::from("HTTP"));
            request.insert("what".into(), verb);
            if let Some(method) = fields.0.remove("http.method") {
                request.insert("method".into(), method);
            }
            if let Some(Value::String(url)) = fields.0.get("http.url") {
                for (name, value) in path_parts(url) {
                    request.insert(name.into(), value.into());
                }
            }
            // The sync this request is made for, if any.
            if let Some(sync) = span.scope().skip(1).find_map(|parent| {
                parent
                    .extensions()
                    .get::<SyncFields>()
                    .map(|sync| sync.0.clone())
            }) {
                request.extend(sync);
            }
            span.extensions_mut().insert(Request {
                fields: request,
                started: Instant::now(),
                written: false,
            });
        } else if attrs.metadata().name() == "sync" {
            span.extensions_mut().insert(SyncFields(fields.0));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        let Some(request) = extensions.get_mut::<Request>() else {
            return;
        };
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let Some(code) = fields.0.remove("http.status_code")
            && !request.written
        {
            // The answer's status line is in: a watch is written now, not
            // when its stream ends.
            request.written = true;
            let mut line = request.fields.clone();
            line.insert("code".into(), code);
            line.insert("ms".into(), millis(request.started.elapsed()));
            drop(extensions);
            self.write(line);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let extensions = span.extensions();
        if let Some(request) = extensions.get::<Request>()
            && !request.written
        {
            // No answer at all: the connection failed or the caller gave up.
            let mut line = request.fields.clone();
            line.insert("ms".into(), millis(request.started.elapsed()));
            self.write(line);
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != TARGET {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        fields.0.remove("message");
        self.write(fields.0);
    }
}

/// Milliseconds, to a tenth.
fn millis(elapsed: Duration) -> Value {
    Value::from((elapsed.as_secs_f64() * 10_000.0).round() / 10.0)
}

/// The resource, namespace, name and subresource of an API path:
/// `/apis/apps/v1/namespaces/ns/deployments/d?…` → resource `deployments`,
/// namespace `ns`, name `d`.
fn path_parts(url: &str) -> Vec<(&'static str, String)> {
    let path = url.split('?').next().unwrap_or_default();
    let path = path
        .find("/api/")
        .or_else(|| path.find("/apis/"))
        .map_or(path, |start| &path[start..]);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Past `api/v1` or `apis/GROUP/VERSION`.
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => None,
    }
    .unwrap_or_default();
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
        _ => (None, rest),
    };
    let mut parts = Vec::new();
    let names = ["resource", "name", "subresource"];
    if let Some(ns) = namespace {
        parts.push(("namespace", ns.to_string()));
    }
    for (name, value) in names.into_iter().zip(rest) {
        parts.push((name, value.to_string()));
    }
    parts
}

/// A visitor that keeps every field as JSON: numbers and booleans as such,
/// everything else as its text (`%value` fields are recorded by `Display`).
#[derive(Default)]
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(
            field.name().into(),
            Value::from((value * 10.0).round() / 10.0),
        );
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::from(format!("{value:?}")));
    }
}

/// How many lines of each lane and `what` a trace has (tests, and the
/// benchmark's check that the trace was written).
pub fn tally(trace: &str) -> HashMap<(String, String), usize> {
    let mut counts = HashMap::new();
    for line in trace.lines() {
        let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let text = |name: &str| {
            fields
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        *counts.entry((text("lane"), text("what"))).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tracing_subscriber::layer::SubscriberExt;

    /// A buffer the layer writes to and the test reads.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The lines written while `f` ran, as JSON objects without `t`.
    pub(crate) fn traced(f: impl FnOnce()) -> Vec<Map<String, Value>> {
        let buffer = Buffer::default();
        let layer = FlowLayer::to_writer(buffer.clone()).with_filter(FilterFn::new(wanted));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|line| {
                let mut fields: Map<String, Value> = serde_json::from_str(line).unwrap();
                assert!(fields.remove("t").unwrap().is_f64(), "{line}");
                fields
            })
            .collect()
    }

    fn json(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn each_flow_event_is_a_line_with_its_lane_and_fields() {
        let key = ObjectRef::<crate::Foo>::new("a").within("ns");
        let lines = traced(|| {
            queued(&key, false);
            queued(&key, true);
            requeued(&key, Duration::from_millis(20), 3);
            taken(&key, 1);
            recorded("ns/a", "Warning", "ErrResourceExists", "taken");
            // Not the flow: a log line is not written.
            tracing::info!(key = "ns/a", "Successfully synced");
        });
        assert_eq!(
            lines,
            [
                json(serde_json::json!({"lane": "queue", "what": "add", "key": "ns/a"})),
                json(serde_json::json!({"lane": "queue", "what": "merge", "key": "ns/a"})),
                json(serde_json::json!({
                    "lane": "queue", "what": "requeue", "key": "ns/a",
                    "delay_ms": 20, "requeues": 3
                })),
                json(
                    serde_json::json!({"lane": "queue", "what": "take", "key": "ns/a", "worker": 1})
                ),
                json(serde_json::json!({
                    "lane": "event", "what": "Warning", "key": "ns/a",
                    "reason": "ErrResourceExists", "note": "taken"
                })),
            ]
        );
    }

    #[test]
    fn a_request_is_a_line_with_its_verb_object_status_and_the_sync_it_was_made_for() {
        let key = ObjectRef::<crate::Foo>::new("a").within("ns");
        let lines = traced(|| {
            let sync = sync_span(&key, 0);
            let _in_sync = sync.enter();
            // What kube-client's TraceLayer opens for a request.
            let request = tracing::debug_span!(
                target: "kube_client::client::builder",
                "HTTP",
                http.method = "POST",
                http.url = "https://127.0.0.1:6443/apis/apps/v1/namespaces/ns/deployments?fieldManager=x",
                http.status_code = tracing::field::Empty,
                otel.name = "create",
            );
            request.record("http.status_code", 201u64);
            drop(request);
            // A request that never got an answer is written when it ends.
            let failed = tracing::debug_span!(
                target: "kube_client::client::builder",
                "HTTP",
                http.method = "PUT",
                http.url = "https://127.0.0.1:6443/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/a/status",
                http.status_code = tracing::field::Empty,
                otel.name = "replace_status",
            );
            drop(failed);
        });
        let without_ms = |mut line: Map<String, Value>| {
            assert!(line.remove("ms").unwrap().is_number());
            line
        };
        let lines: Vec<_> = lines.into_iter().map(without_ms).collect();
        assert_eq!(
            lines,
            [
                json(serde_json::json!({
                    "lane": "api", "what": "create", "method": "POST",
                    "namespace": "ns", "resource": "deployments",
                    "key": "ns/a", "worker": 0, "code": 201
                })),
                json(serde_json::json!({
                    "lane": "api", "what": "replace_status", "method": "PUT",
                    "namespace": "ns", "resource": "foos", "name": "a", "subresource": "status",
                    "key": "ns/a", "worker": 0
                })),
            ]
        );
    }

    #[test]
    fn api_paths_name_their_resource_namespace_name_and_subresource() {
        let parts = |url| path_parts(url);
        assert_eq!(
            parts("https://h/api/v1/namespaces/ns/events?watch=true"),
            [("namespace", "ns".into()), ("resource", "events".into())]
        );
        assert_eq!(
            parts("/apis/apps/v1/deployments?watch=true&sendInitialEvents=true"),
            [("resource", "deployments".into())]
        );
        assert_eq!(
            parts("/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/a/status"),
            [
                ("namespace", "ns".into()),
                ("resource", "foos".into()),
                ("name", "a".into()),
                ("subresource", "status".into())
            ]
        );
        // The namespaces themselves are a resource too.
        assert_eq!(
            parts("/api/v1/namespaces/ns"),
            [("resource", "namespaces".into()), ("name", "ns".into())]
        );
    }

    #[test]
    fn a_sync_takes_the_lowest_idle_worker_and_frees_it_when_done() {
        let workers = Workers::new(2);
        let (first, second) = (workers.take(), workers.take());
        assert_eq!((first, second), (0, 1));
        workers.free(first);
        assert_eq!(workers.take(), 0);
        // A third at once is numbered past the end rather than lost.
        assert_eq!(workers.take(), 2);
    }

    #[test]
    fn without_the_variable_no_layer_is_installed() {
        // SAFETY: no other test of this crate reads or writes this variable.
        unsafe { std::env::remove_var(ENV) };
        let layer = layer::<tracing_subscriber::Registry>().unwrap();
        assert!(layer.is_none());
    }
}
