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
//! No step calls this module. Every line is derived from what the steps log
//! and trace for their own sake, most of it at debug level, so the log on
//! stderr (`info` by default) never shows it unless asked
//! (`RUST_LOG=sample_controller=debug`):
//!
//! - `watch`: the informer's `Relisting` and `Notifying handlers` (steps
//!   3–7), step 8's `Watch event` (`step8::caches`);
//! - `handler`: the handlers' `#[instrument]` spans, `on_foo` and
//!   `on_deployment`, and what they return (steps 3–7); step 8's Foo watch
//!   events (each applied Foo triggers itself) and its Deployment
//!   predicate's `Relevant change` (the Foos among the owners, which kube's
//!   `owns` triggers) and `Ignored` lines;
//! - `queue` `add`: the work queue's `Adding to the work queue` (steps 4–7),
//!   a step 8 trigger; `take`, `worker` and `forget`: the `reconciling
//!   object` span kube's `applier` opens around every sync (steps 4–8: kube's
//!   `Controller` runs the same applier), and whether the sync logged
//!   `Error syncing; requeuing for later retry` inside it, which gives
//!   `requeue` its delay (`retry_in`); `requeues` counts the failures in a
//!   row, as Go's `NumRequeues`; `drop`: the log line of a key whose Foo is
//!   gone;
//! - `api`: the span kube's client opens for every request (`HTTP`, with the
//!   verb, URL and status code), so nothing here wraps the client;
//! - `event`: `Event occurred`, logged as each Event is recorded.
//!
//! With the variable unset, the layer is not installed, and these debug
//! events and spans are disabled at their call sites, like any other under
//! the default filter.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{LineWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{FilterFn, Filtered};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The environment variable that turns the flow on: the file to append to.
pub const ENV: &str = "SAMPLE_CONTROLLER_FLOW";

/// What a queue's lines cannot show: the line written before a step's
/// first queue line.
pub const SCHEDULER_NOTE: &str = "The queue is kube-runtime's scheduler (its applier; step 8: \
     the Controller around it), which exposes nothing of itself: a key's add is when it reaches \
     the scheduler, its take when its sync starts; merges, holds and delays in between are \
     inferred from both ends";

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

/// What the flow layer sees: the steps' own events and spans down to debug
/// level, kube's span around each sync, and the span kube's client opens
/// for each request.
fn wanted(meta: &Metadata<'_>) -> bool {
    let ours = ["sample_controller", "step8"]
        .iter()
        .any(|crate_| meta.target().starts_with(crate_));
    (ours && *meta.level() <= Level::DEBUG) || is_sync(meta) || is_request(meta)
}

/// Whether `meta` is the span kube-client's `TraceLayer` opens per request.
fn is_request(meta: &Metadata<'_>) -> bool {
    meta.is_span() && meta.name() == "HTTP" && meta.target().starts_with("kube_client")
}

/// Whether `meta` is the span kube-runtime's `applier` opens per sync.
fn is_sync(meta: &Metadata<'_>) -> bool {
    meta.is_span()
        && meta.name() == "reconciling object"
        && meta.target().starts_with("kube_runtime")
}
// ANCHOR_END: layer

/// Writes one JSON object per line for each thing the flow shows.
pub struct FlowLayer {
    out: Mutex<Box<dyn Write + Send>>,
    start: Instant,
    queue: Mutex<Queue>,
}

/// What the queue holds, as far as the lines show it.
#[derive(Default)]
struct Queue {
    /// Whether the [`SCHEDULER_NOTE`] was written.
    noted: bool,
    /// The keys added and not taken since (a key added again is a merge).
    waiting: HashSet<String>,
    /// Failures in a row per key. Go: `NumRequeues`.
    failures: HashMap<String, u32>,
    /// Which workers are syncing.
    workers: Workers,
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
            queue: Mutex::new(Queue::default()),
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

    /// Writes a line of `lane` and `what` with `fields`.
    fn line(&self, lane: &str, what: &str, fields: &[(&str, Value)]) {
        let mut line = Map::new();
        line.insert("lane".into(), lane.into());
        line.insert("what".into(), what.into());
        for (name, value) in fields {
            line.insert((*name).into(), value.clone());
        }
        self.write(line);
    }

    /// Writes a queue line, after the [`SCHEDULER_NOTE`] if it is the first.
    fn queue_line(&self, queue: &mut Queue, what: &str, fields: &[(&str, Value)]) {
        if !queue.noted {
            queue.noted = true;
            self.line("note", "queue", &[("text", SCHEDULER_NOTE.into())]);
        }
        self.line("queue", what, fields);
    }

    /// `key` reaches the queue: `merge` if it was already waiting there.
    fn added(&self, key: &str) {
        let mut queue = lock(&self.queue);
        let what = if queue.waiting.insert(key.to_string()) {
            "add"
        } else {
            "merge"
        };
        self.queue_line(&mut queue, what, &[("key", key.into())]);
    }

    /// A handler's decision: the key it enqueues (`Ok`) or why none (`Err`).
    fn decided(&self, resource: &str, object: &str, decision: Result<&str, &str>) {
        let (what, field, value) = match decision {
            Ok(key) => ("enqueue", "key", key),
            Err(reason) => ("ignore", "reason", reason),
        };
        self.line(
            "handler",
            what,
            &[
                ("resource", resource.into()),
                ("object", object.into()),
                (field, value.into()),
            ],
        );
    }

    /// A sync of `key` starts: the lowest idle worker takes it.
    fn sync_started(&self, key: &str) -> usize {
        let mut queue = lock(&self.queue);
        let worker = queue.workers.take();
        queue.waiting.remove(key);
        let fields = [("key", Value::from(key)), ("worker", Value::from(worker))];
        self.queue_line(&mut queue, "take", &fields);
        self.line("worker", "start", &fields);
        worker
    }

    /// A sync ended: its `end` line, then `forget` or `requeue`.
    fn sync_ended(&self, sync: &Sync) {
        let mut queue = lock(&self.queue);
        queue.workers.free(sync.worker);
        let mut end = vec![
            ("key", Value::from(sync.key.as_str())),
            ("worker", Value::from(sync.worker)),
        ];
        match &sync.failed {
            None => end.push(("outcome", "ok".into())),
            Some((error, _)) => {
                end.push(("outcome", "error".into()));
                end.push(("error", error.as_str().into()));
            }
        }
        end.push(("ms", millis(sync.started.elapsed())));
        self.line("worker", "end", &end);
        let key = Value::from(sync.key.as_str());
        match &sync.failed {
            None => {
                queue.failures.remove(&sync.key);
                self.queue_line(&mut queue, "forget", &[("key", key)]);
            }
            Some((_, delay_ms)) => {
                let requeues = {
                    let count = queue.failures.entry(sync.key.clone()).or_insert(0);
                    *count += 1;
                    *count
                };
                queue.waiting.insert(sync.key.clone());
                let mut fields = vec![("key", key)];
                if let Some(ms) = delay_ms {
                    fields.push(("delay_ms", Value::from(*ms)));
                }
                fields.push(("requeues", Value::from(requeues)));
                self.queue_line(&mut queue, "requeue", &fields);
            }
        }
    }

    /// `key`'s Foo is gone: dropped without a sync.
    fn dropped(&self, key: &str) {
        let mut queue = lock(&self.queue);
        queue.waiting.remove(key);
        self.queue_line(&mut queue, "drop", &[("key", key.into())]);
    }
}

/// A sync in flight: kept in the extensions of its `reconciling object` span.
struct Sync {
    key: String,
    worker: usize,
    started: Instant,
    /// The error and retry delay (ms) it logged, if it failed.
    failed: Option<(String, Option<u64>)>,
}

/// The key and worker of a sync, for the requests made inside it.
struct SyncFields(Map<String, Value>);

/// A handler's span: which resource it handles and the object it was told of.
struct Handler {
    resource: &'static str,
    object: String,
}

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
        let meta = attrs.metadata();
        if is_request(meta) {
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
        } else if is_sync(meta) {
            let Some(key) = fields.text("object.ref").map(|r| object_key(&r)) else {
                return;
            };
            let worker = self.sync_started(&key);
            let mut sync_fields = Map::new();
            sync_fields.insert("key".into(), key.as_str().into());
            sync_fields.insert("worker".into(), worker.into());
            let mut extensions = span.extensions_mut();
            extensions.insert(SyncFields(sync_fields));
            extensions.insert(Sync {
                key,
                worker,
                started: Instant::now(),
                failed: None,
            });
        } else if let Some(resource) = handler_resource(meta)
            && let Some(object) = fields.text("object")
        {
            span.extensions_mut().insert(Handler { resource, object });
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
        if let Some(sync) = extensions.get::<Sync>() {
            self.sync_ended(sync);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let message = fields.text("message").unwrap_or_default();
        let text = |name: &str| fields.text(name).unwrap_or_default();
        // A handler's result: #[instrument]'s `return` or `error` event.
        if let Some(span) = ctx.event_span(event)
            && let Some(handler) = span.extensions().get::<Handler>()
        {
            if let Some(key) = fields.text("return") {
                self.decided(handler.resource, &handler.object, Ok(&object_key(&key)));
            } else if let Some(reason) = fields.text("error") {
                self.decided(handler.resource, &handler.object, Err(&reason));
            }
            return;
        }
        match message.as_str() {
            "Relisting" => self.line("watch", "relist", &[("resource", text("resource").into())]),
            "Notifying handlers" | "Watch event" => {
                let (what, resource, key) = (text("event"), text("resource"), text("object"));
                self.line(
                    "watch",
                    &what,
                    &[
                        ("resource", resource.as_str().into()),
                        ("key", key.as_str().into()),
                        ("rv", text("resource_version").into()),
                    ],
                );
                // Step 8: kube's Controller triggers every Foo applied.
                if message == "Watch event" && resource == "foos" && what == "apply" {
                    self.decided("foos", &key, Ok(&key));
                    self.added(&key);
                }
            }
            "Ignored: nothing a reconcile reads changed" => self.decided(
                "deployments",
                &text("deployment"),
                Err("nothing a reconcile reads changed"),
            ),
            "Relevant change" => {
                // Step 8: kube's `owns` triggers each Foo among the owners.
                let deployment = text("deployment");
                let namespace = deployment.split_once('/').map(|(ns, _)| ns);
                let foos = debug_strings(&text("foos"));
                if foos.is_empty() {
                    self.decided("deployments", &deployment, Err("no Foo among its owners"));
                }
                for foo in foos {
                    let key = match namespace {
                        Some(ns) => format!("{ns}/{foo}"),
                        None => foo,
                    };
                    self.decided("deployments", &deployment, Ok(&key));
                    self.added(&key);
                }
            }
            "Adding to the work queue" => self.added(&object_key(&text("objectRef"))),
            "Error syncing; requeuing for later retry" => {
                // Logged by the error policy, inside the sync's span: the
                // sync's end line says so when the span closes.
                let sync = ctx.event_span(event).and_then(|span| {
                    span.scope()
                        .find(|s| s.extensions().get::<Sync>().is_some())
                });
                if let Some(span) = sync
                    && let Some(sync) = span.extensions_mut().get_mut::<Sync>()
                {
                    sync.failed = Some((text("error"), duration_ms(&text("retry_in"))));
                }
            }
            "Foo referenced by item in work queue no longer exists" | "Foo no longer exists" => {
                self.dropped(&object_key(&text("objectRef")));
            }
            "Event occurred" => self.line(
                "event",
                &text("type_"),
                &[
                    ("key", text("object").into()),
                    ("reason", text("reason").into()),
                    ("note", text("note").into()),
                ],
            ),
            _ => {}
        }
    }
}

/// The resource a handler span handles: `on_foo` and `on_deployment` of
/// `src/handlers.rs`.
fn handler_resource(meta: &Metadata<'_>) -> Option<&'static str> {
    if !meta.is_span() || !meta.target().ends_with("::handlers") {
        return None;
    }
    match meta.name() {
        "on_foo" => Some("foos"),
        "on_deployment" => Some("deployments"),
        _ => None,
    }
}

/// `namespace/name` from the ways the steps print a key: already so (Go's
/// `klog.KObj`), or as kube's `ObjectRef` displays itself,
/// `Kind.version.group/name.namespace` (a namespace has no dots).
fn object_key(text: &str) -> String {
    match text.split_once('/') {
        Some((kind, rest)) if kind.contains('.') => match rest.rsplit_once('.') {
            Some((name, namespace)) => format!("{namespace}/{name}"),
            None => rest.to_string(),
        },
        _ => text.to_string(),
    }
}

/// The strings of a `Debug`-printed list of names: `["a", "b"]`.
fn debug_strings(text: &str) -> Vec<String> {
    text.trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Milliseconds of a `Debug`-printed `Duration` (`5ms`, `1.28s`, `250µs`).
fn duration_ms(text: &str) -> Option<u64> {
    let units = [("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6), ("s", 1000.0)];
    let (number, scale) = units
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, scale)))?;
    let value: f64 = number.parse().ok()?;
    Some((value * scale).round() as u64)
}

/// Which of the N workers a sync runs on. kube's scheduler runs at most N
/// syncs at once but has no workers of its own; a sync takes the lowest
/// free number for as long as it runs, as one of Go's N worker goroutines
/// would.
#[derive(Debug, Default)]
struct Workers(Vec<bool>);

impl Workers {
    /// The lowest idle worker, busy until [`Workers::free`].
    fn take(&mut self) -> usize {
        let index = self.0.iter().position(|b| !b).unwrap_or_else(|| {
            self.0.push(false);
            self.0.len() - 1
        });
        self.0[index] = true;
        index
    }

    /// Worker `index` is idle again.
    fn free(&mut self, index: usize) {
        if let Some(busy) = self.0.get_mut(index) {
            *busy = false;
        }
    }
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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

impl Fields {
    /// A field as text: a string as it is, anything else as JSON.
    fn text(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|value| match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

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

    use crate::handlers::{on_deployment, on_foo};
    use crate::informer::Notification;
    use crate::{Foo, FooSpec};
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::runtime::reflector;

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
    fn traced(f: impl FnOnce()) -> Vec<Map<String, Value>> {
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

    fn foo(name: &str) -> Foo {
        let mut foo = Foo::new(
            name,
            FooSpec {
                deployment_name: format!("{name}-nginx"),
                replicas: Some(1),
            },
        );
        foo.metadata.namespace = Some("ns".into());
        foo
    }

    /// The span kube-runtime's applier opens around a sync of `ns/NAME`.
    fn sync_span(name: &str) -> tracing::Span {
        tracing::info_span!(
            target: "kube_runtime::controller",
            "reconciling object",
            "object.ref" = %format!("Foo.v1alpha1.samplecontroller.k8s.io/{name}.ns"),
            object.reason = "object updated",
        )
    }

    #[test]
    fn the_handlers_own_spans_give_their_decisions() {
        let (foos, _) = reflector::store::<Foo>();
        let mut unowned = Deployment::default();
        unowned.metadata.name = Some("unowned".into());
        unowned.metadata.namespace = Some("ns".into());
        let lines = traced(|| {
            let _ = on_foo(&Notification::Added(Arc::new(foo("a"))));
            let _ = on_deployment(&Notification::Added(Arc::new(unowned)), &foos);
        });
        assert_eq!(
            lines,
            [
                json(serde_json::json!({
                    "lane": "handler", "what": "enqueue", "resource": "foos",
                    "object": "ns/a", "key": "ns/a"
                })),
                json(serde_json::json!({
                    "lane": "handler", "what": "ignore", "resource": "deployments",
                    "object": "ns/unowned", "reason": "no controller owner reference"
                })),
            ]
        );
    }

    #[test]
    fn a_sync_is_kubes_span_around_it_with_the_worker_the_layer_numbers() {
        let lines = traced(|| {
            tracing::debug!(target: "sample_controller::workqueue", objectRef = "ns/a", "Adding to the work queue");
            tracing::debug!(target: "sample_controller::workqueue", objectRef = "ns/a", "Adding to the work queue");
            let first = sync_span("a");
            // A second sync at once takes the next worker.
            let second = sync_span("b");
            drop(second);
            {
                let _in = first.enter();
                tracing::error!(
                    target: "sample_controller::workqueue",
                    objectRef = "ns/a",
                    error = "taken",
                    retry_in = ?Duration::from_millis(5),
                    "Error syncing; requeuing for later retry"
                );
            }
            drop(first);
            // The retry succeeds on the lowest idle worker.
            drop(sync_span("a"));
        });
        let lines: Vec<_> = lines
            .into_iter()
            .map(|mut line| {
                line.remove("ms");
                line
            })
            .collect();
        let line = |v: Value| json(v);
        assert_eq!(
            lines,
            [
                line(serde_json::json!({"lane": "note", "what": "queue", "text": SCHEDULER_NOTE})),
                line(serde_json::json!({"lane": "queue", "what": "add", "key": "ns/a"})),
                line(serde_json::json!({"lane": "queue", "what": "merge", "key": "ns/a"})),
                line(
                    serde_json::json!({"lane": "queue", "what": "take", "key": "ns/a", "worker": 0})
                ),
                line(
                    serde_json::json!({"lane": "worker", "what": "start", "key": "ns/a", "worker": 0})
                ),
                line(
                    serde_json::json!({"lane": "queue", "what": "take", "key": "ns/b", "worker": 1})
                ),
                line(
                    serde_json::json!({"lane": "worker", "what": "start", "key": "ns/b", "worker": 1})
                ),
                line(
                    serde_json::json!({"lane": "worker", "what": "end", "key": "ns/b", "worker": 1, "outcome": "ok"})
                ),
                line(serde_json::json!({"lane": "queue", "what": "forget", "key": "ns/b"})),
                line(serde_json::json!({
                    "lane": "worker", "what": "end", "key": "ns/a", "worker": 0,
                    "outcome": "error", "error": "taken"
                })),
                line(serde_json::json!({
                    "lane": "queue", "what": "requeue", "key": "ns/a", "delay_ms": 5, "requeues": 1
                })),
                line(
                    serde_json::json!({"lane": "queue", "what": "take", "key": "ns/a", "worker": 0})
                ),
                line(
                    serde_json::json!({"lane": "worker", "what": "start", "key": "ns/a", "worker": 0})
                ),
                line(
                    serde_json::json!({"lane": "worker", "what": "end", "key": "ns/a", "worker": 0, "outcome": "ok"})
                ),
                line(serde_json::json!({"lane": "queue", "what": "forget", "key": "ns/a"})),
            ]
        );
    }

    #[test]
    fn a_request_is_a_line_with_its_verb_object_status_and_the_sync_it_was_made_for() {
        let lines = traced(|| {
            let sync = sync_span("a");
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
        let requests: Vec<_> = lines
            .into_iter()
            .filter(|line| line["lane"] == "api")
            .map(|mut line| {
                assert!(line.remove("ms").unwrap().is_number());
                line
            })
            .collect();
        assert_eq!(
            requests,
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
    fn step_8s_triggers_come_from_its_watch_and_predicate_lines() {
        let lines = traced(|| {
            tracing::debug!(target: "step8::caches", resource = "foos", "Relisting");
            tracing::debug!(target: "step8::caches", event = "apply", resource = "foos", object = "ns/a", resource_version = "7", "Watch event");
            tracing::debug!(target: "step8::caches", deployment = "ns/a-nginx", foos = ?["a"], "Relevant change");
            tracing::debug!(target: "step8::caches", deployment = "ns/taken", foos = ?Vec::<&str>::new(), "Relevant change");
            tracing::debug!(target: "step8::caches", deployment = "ns/a-nginx", "Ignored: nothing a reconcile reads changed");
            tracing::debug!(target: "step8::reconciler", objectRef = "Foo.v1alpha1.samplecontroller.k8s.io/a.ns", "Foo no longer exists");
        });
        let shapes: Vec<String> = lines
            .iter()
            .map(|l| {
                let text = |n: &str| l.get(n).and_then(Value::as_str).unwrap_or("-").to_string();
                format!(
                    "{} {} {} {}",
                    text("lane"),
                    text("what"),
                    text("key"),
                    text("reason")
                )
            })
            .collect();
        assert_eq!(
            shapes,
            [
                "watch relist - -",
                "watch apply ns/a -",
                "handler enqueue ns/a -",
                "note queue - -",
                "queue add ns/a -",
                "handler enqueue ns/a -",
                "queue merge ns/a -",
                "handler ignore - no Foo among its owners",
                "handler ignore - nothing a reconcile reads changed",
                "queue drop ns/a -",
            ]
        );
    }

    #[test]
    fn an_event_is_its_type_reason_and_note() {
        let lines = traced(|| {
            tracing::debug!(
                target: "sample_controller::vocabulary",
                object = "ns/a",
                type_ = ?kube::runtime::events::EventType::Warning,
                reason = "ErrResourceExists",
                note = "taken",
                "Event occurred"
            );
            // An info line of the log is not a line of the flow.
            tracing::info!(target: "sample_controller::workqueue", objectRef = "ns/a", "Successfully synced");
        });
        assert_eq!(
            lines,
            [json(serde_json::json!({
                "lane": "event", "what": "Warning", "key": "ns/a",
                "reason": "ErrResourceExists", "note": "taken"
            }))]
        );
    }

    #[test]
    fn keys_read_the_same_from_go_names_and_kubes_object_refs() {
        assert_eq!(object_key("ns/a"), "ns/a");
        assert_eq!(
            object_key("Foo.v1alpha1.samplecontroller.k8s.io/a.b.ns"),
            "ns/a.b"
        );
        assert_eq!(duration_ms("5ms"), Some(5));
        assert_eq!(duration_ms("1.28s"), Some(1280));
        assert_eq!(duration_ms("250µs"), Some(0));
        assert_eq!(duration_ms("soon"), None);
        assert_eq!(debug_strings(r#"["a", "b"]"#), ["a", "b"]);
        assert!(debug_strings("[]").is_empty());
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
        assert_eq!(
            parts("/api/v1/namespaces/ns"),
            [("resource", "namespaces".into()), ("name", "ns".into())]
        );
    }

    #[test]
    fn without_the_variable_no_layer_is_installed() {
        // SAFETY: no other test of this crate reads or writes this variable.
        unsafe { std::env::remove_var(ENV) };
        let layer = layer::<tracing_subscriber::Registry>().unwrap();
        assert!(layer.is_none());
    }
}
