//! The flow of a step, read from its JSON log: one line for each thing that
//! happens on the way from a watch event to the API server and back, for
//! `cargo xtask watch` to draw and the book to replay.
//!
//! A step writes its log as JSON when `SAMPLE_CONTROLLER_LOG_JSON` names a
//! file (`sample_controller::telemetry`); [`Flow::read`] turns each record
//! of that log into the flow's lines. The log's format writes each span's
//! opening and closing as records of their own (`message` `new` and
//! `close`, the span in `span`, the spans around it in `spans`). Each line has `t` (seconds since the
//! step started), `lane` and `what`, and the fields of its lane:
//!
//! | lane | what | fields |
//! |---|---|---|
//! | `watch` | `add`, `update`, `delete`, `relist`, `resync`; `apply` (step 8: kube's watcher does not tell an add from an update) | `resource`, `key`, `rv` (not for `relist`) |
//! | `handler` | `enqueue`, `ignore` | `resource`, `object`, then `key` or `reason` |
//! | `queue` | `add`, `merge`, `requeue`, `take`, `forget`, `drop` | `key`; `worker` (`take`), `delay_ms` and `requeues` (`requeue`) |
//! | `worker` | `start`, `end` | `key`, `worker`; `outcome`, `error`, `ms` (`end`) |
//! | `api` | the client's verb (`list`, `watch`, `create`, `replace`, `patch`, ...) | `method`, `resource`, `namespace`, `name`, `subresource`, `code` (absent if no answer), `ms`; `key` and `worker` for a sync's request |
//! | `event` | `Normal`, `Warning` | `key`, `reason`, `note` |
//! | `note` | `queue` | `text`: what the log cannot show ([`SCHEDULER_NOTE`]) |
//!
//! Records are recognised by their structure, never by their message: the
//! span a record belongs to (its name and fields), the module that logged
//! it (the last part of its target) and the names of its fields:
//!
//! | record | flow |
//! |---|---|
//! | kube-client's `HTTP` span, closed | `api`, with the status code it recorded and its duration (a watch is drawn when it ends) |
//! | kube-runtime's `reconciling object` span, opened and closed | `queue` `take`, `worker` `start`; `worker` `end`, then `forget` or `requeue` |
//! | an event with `retry_in`, inside that span | the sync failed: its error, and the delay of its `requeue` |
//! | an event with `return` or `error` inside a handler's span (`on_foo`, `on_deployment`: `#[instrument(ret, err)]`) | `handler` `enqueue` or `ignore` |
//! | `event`, `resource`, `object`, `resource_version` | `watch`, the event as `what`; from a `caches` module (kube's `Controller`, which triggers every Foo applied), `handler` `enqueue` and `queue` `add` for a Foo too |
//! | `resource` alone | `watch` `relist` |
//! | `deployment` and `foos` | `handler`: each Foo enqueued and added, or ignored for having none |
//! | `deployment` alone | `handler` `ignore`: nothing a reconcile reads changed |
//! | `objectRef` alone, at debug level, from a `workqueue` module | `queue` `add` |
//! | `objectReference` alone (Go's name for a key it gives up on) | `queue` `drop` |
//! | `type_`, `reason`, `note`, `object` | `event` |
//!
//! `tests/flow.rs` runs steps 7 and 8 and finds every lane in what they log,
//! so a step that renames a field the table reads fails its own test.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

mod fields;
mod lines;
mod workers;

use fields::{debug_strings, duration_ms, millis, object_key, path_parts, seconds};
use lines::Lines;
use workers::Workers;

/// What a queue's lines cannot show: the line written before a step's
/// first queue line.
pub const SCHEDULER_NOTE: &str = "The queue is kube-runtime's scheduler (its applier; step 8: \
     the Controller around it), which exposes nothing of itself: a key's add is when it reaches \
     the scheduler, its take when its sync starts; merges, holds and delays in between are \
     inferred from both ends";

/// The flow so far: what a record's lines depend on from the records
/// before it.
#[derive(Default)]
pub struct Flow {
    /// Whether the [`SCHEDULER_NOTE`] was written.
    noted: bool,
    /// The keys added and not taken since (a key added again is a merge).
    waiting: HashSet<String>,
    /// Failures in a row per key. Go: `NumRequeues`.
    failures: HashMap<String, u32>,
    /// Which workers are syncing.
    workers: Workers,
    /// The syncs under way, by key (a key is never synced twice at once).
    syncs: HashMap<String, Sync>,
    /// The requests under way, by method and URL, oldest first.
    requests: HashMap<(String, String), VecDeque<Request>>,
}

/// A sync under way.
struct Sync {
    worker: usize,
    started: f64,
    /// The error and retry delay (ms) it logged, if it failed.
    failed: Option<(String, Option<u64>)>,
}

/// A request under way: its line so far, and when it started.
struct Request {
    line: Map<String, Value>,
    started: f64,
}

/// One record of the JSON log, and what it says.
struct Record<'a> {
    fields: &'a Map<String, Value>,
    t: f64,
}

impl Record<'_> {
    /// A field as text: a string as it is, anything else as JSON.
    fn text(&self, name: &str) -> String {
        text(self.fields.get(name))
    }

    /// The last part of the target: the module that logged it.
    fn module(&self) -> &str {
        let target = self.fields.get("target").and_then(Value::as_str);
        target
            .unwrap_or_default()
            .rsplit("::")
            .next()
            .unwrap_or_default()
    }

    /// The event's own fields, without the format's (`timestamp`,
    /// `level`, `target`, `span`, `spans`, `message`), sorted.
    fn own_fields(&self) -> Vec<&str> {
        let format = ["timestamp", "level", "target", "span", "spans", "message"];
        let mut names: Vec<&str> = self
            .fields
            .keys()
            .map(String::as_str)
            .filter(|name| !format.contains(name))
            .collect();
        names.sort_unstable();
        names
    }

    /// The spans it happened in, innermost first (for a span's opening or
    /// closing, the spans around that span).
    fn spans(&self) -> impl Iterator<Item = &Map<String, Value>> {
        let spans = self.fields.get("spans").and_then(Value::as_array);
        spans
            .into_iter()
            .flatten()
            .rev()
            .filter_map(Value::as_object)
    }

    /// The key of the sync it happened in, if any: kube's span around it.
    fn sync_key(&self) -> Option<String> {
        self.spans()
            .find(|span| name(span) == "reconciling object")
            .map(|span| object_key(&text(span.get("object.ref"))))
    }

    /// Whether it is a span's opening (`new`) or closing (`close`), as the
    /// format writes them: a message and nothing else of its own, and a
    /// `span` that is not among the `spans` around it (an event logged
    /// inside a span has that span last in `spans`, whatever it says).
    fn span_event(&self) -> Option<&str> {
        let own = self.own_fields();
        let only_timings = own.iter().all(|f| matches!(*f, "time.busy" | "time.idle"));
        let span = self.fields.get("span");
        let around = self.fields.get("spans").and_then(Value::as_array);
        let outside = span.is_some() && around.and_then(|a| a.last()) != span;
        let message = self.fields.get("message").and_then(Value::as_str);
        message.filter(|m| matches!(*m, "new" | "close") && only_timings && outside)
    }
}

/// A span's name in a record's `spans`.
fn name(span: &Map<String, Value>) -> &str {
    span.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

impl Flow {
    /// The flow's lines for one line of the JSON log, in order; none for a
    /// line that is not JSON or shows nothing of the flow.
    pub fn read(&mut self, log_line: &str) -> Vec<Map<String, Value>> {
        let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(log_line) else {
            return Vec::new();
        };
        let t = seconds(fields.get("timestamp").and_then(Value::as_str));
        let record = Record { fields: &fields, t };
        let mut out = Lines {
            t,
            lines: Vec::new(),
        };
        match record.span_event() {
            Some(opened_or_closed) => self.span(&record, opened_or_closed == "new", &mut out),
            None => self.event(&record, &mut out),
        }
        out.lines
    }

    /// A span opened or closed: a request or a sync.
    fn span(&mut self, record: &Record<'_>, opened: bool, out: &mut Lines) {
        let Some(span) = record.fields.get("span").and_then(Value::as_object) else {
            return;
        };
        let target = text(record.fields.get("target"));
        match name(span) {
            "HTTP" if target.starts_with("kube_client") => {
                let id = (text(span.get("http.method")), text(span.get("http.url")));
                if opened {
                    let line = self.request_line(record, span);
                    let request = Request {
                        line,
                        started: record.t,
                    };
                    self.requests.entry(id).or_default().push_back(request);
                } else if let Some(request) =
                    self.requests.get_mut(&id).and_then(VecDeque::pop_front)
                {
                    let mut line = request.line;
                    if let Some(code) = span.get("http.status_code") {
                        line.insert("code".into(), code.clone());
                    }
                    line.insert("ms".into(), millis(record.t - request.started));
                    out.raw(line);
                }
            }
            "reconciling object" if target.starts_with("kube_runtime") => {
                let key = object_key(&text(span.get("object.ref")));
                if opened {
                    self.sync_started(&key, record.t, out);
                } else {
                    self.sync_ended(&key, record.t, out);
                }
            }
            _ => {}
        }
    }

    /// An `api` line for a request kube's client opened a span for.
    fn request_line(&self, record: &Record<'_>, span: &Map<String, Value>) -> Map<String, Value> {
        let mut line = Map::new();
        line.insert("lane".into(), "api".into());
        let verb = span.get("otel.name").cloned().unwrap_or("HTTP".into());
        line.insert("what".into(), verb);
        line.insert("method".into(), text(span.get("http.method")).into());
        for (name, value) in path_parts(&text(span.get("http.url"))) {
            line.insert(name.into(), value.into());
        }
        // The sync this request is made for, if any.
        if let Some(key) = record.sync_key()
            && let Some(sync) = self.syncs.get(&key)
        {
            line.insert("key".into(), key.into());
            line.insert("worker".into(), sync.worker.into());
        }
        line
    }

    /// An event: what its fields, module and spans say (the module's table).
    fn event(&mut self, record: &Record<'_>, out: &mut Lines) {
        // A handler's result: #[instrument]'s `return` or `error` event.
        if let Some(handler) = record.spans().next()
            && let Some(resource) = handler_resource(handler)
        {
            let object = text(handler.get("object"));
            if record.fields.contains_key("return") {
                let key = object_key(&record.text("return"));
                out.decided(resource, &object, Ok(&key));
            } else if record.fields.contains_key("error") {
                out.decided(resource, &object, Err(&record.text("error")));
            }
            return;
        }
        if record.fields.contains_key("retry_in") {
            // Logged by the error policy, inside the sync's span: the sync's
            // end line says so when the span closes.
            if let Some(sync) = record.sync_key().and_then(|key| self.syncs.get_mut(&key)) {
                let delay = duration_ms(&record.text("retry_in"));
                sync.failed = Some((record.text("error"), delay));
            }
            return;
        }
        let debug = record.fields.get("level").and_then(Value::as_str) == Some("DEBUG");
        match record.own_fields().as_slice() {
            ["event", "object", "resource", "resource_version"] => self.watched(record, out),
            ["resource"] if debug => {
                out.line(
                    "watch",
                    "relist",
                    &[("resource", record.text("resource").into())],
                );
            }
            ["deployment", "foos"] => self.owners_triggered(record, out),
            ["deployment"] if debug => out.decided(
                "deployments",
                &record.text("deployment"),
                Err("nothing a reconcile reads changed"),
            ),
            ["objectRef"] if debug && record.module() == "workqueue" => {
                self.added(&object_key(&record.text("objectRef")), out);
            }
            ["objectReference"] => self.dropped(&object_key(&record.text("objectReference")), out),
            ["note", "object", "reason", "type_"] => out.line(
                "event",
                &record.text("type_"),
                &[
                    ("key", record.text("object").into()),
                    ("reason", record.text("reason").into()),
                    ("note", record.text("note").into()),
                ],
            ),
            _ => {}
        }
    }

    /// A watch event, as the step's informer (or step 8's caches) logs it;
    /// in step 8 a Foo applied is also kube's Controller triggering it.
    fn watched(&mut self, record: &Record<'_>, out: &mut Lines) {
        let (what, resource, key) = (
            record.text("event"),
            record.text("resource"),
            record.text("object"),
        );
        out.line(
            "watch",
            &what,
            &[
                ("resource", resource.as_str().into()),
                ("key", key.as_str().into()),
                ("rv", record.text("resource_version").into()),
            ],
        );
        if record.module() == "caches" && resource == "foos" && what == "apply" {
            out.decided("foos", &key, Ok(&key));
            self.added(&key, out);
        }
    }

    /// Step 8's relevant Deployment change: kube's `owns` triggers each Foo
    /// among its owners (none: the change concerns no Foo).
    fn owners_triggered(&mut self, record: &Record<'_>, out: &mut Lines) {
        let deployment = record.text("deployment");
        let namespace = deployment.split_once('/').map(|(ns, _)| ns);
        let foos = debug_strings(&record.text("foos"));
        if foos.is_empty() {
            out.decided("deployments", &deployment, Err("no Foo among its owners"));
        }
        for foo in foos {
            let key = match namespace {
                Some(ns) => format!("{ns}/{foo}"),
                None => foo,
            };
            out.decided("deployments", &deployment, Ok(&key));
            self.added(&key, out);
        }
    }

    /// Writes a queue line, after the [`SCHEDULER_NOTE`] if it is the first.
    fn queue_line(&mut self, what: &str, fields: &[(&str, Value)], out: &mut Lines) {
        if !self.noted {
            self.noted = true;
            out.line("note", "queue", &[("text", SCHEDULER_NOTE.into())]);
        }
        out.line("queue", what, fields);
    }

    /// `key` reaches the queue: `merge` if it was already waiting there.
    fn added(&mut self, key: &str, out: &mut Lines) {
        let what = if self.waiting.insert(key.to_string()) {
            "add"
        } else {
            "merge"
        };
        self.queue_line(what, &[("key", key.into())], out);
    }

    /// A sync of `key` starts: the lowest idle worker takes it.
    fn sync_started(&mut self, key: &str, t: f64, out: &mut Lines) {
        let worker = self.workers.take();
        self.waiting.remove(key);
        let fields = [("key", Value::from(key)), ("worker", Value::from(worker))];
        self.queue_line("take", &fields, out);
        out.line("worker", "start", &fields);
        let sync = Sync {
            worker,
            started: t,
            failed: None,
        };
        self.syncs.insert(key.to_string(), sync);
    }

    /// A sync ended: its `end` line, then `forget` or `requeue`.
    fn sync_ended(&mut self, key: &str, t: f64, out: &mut Lines) {
        let Some(sync) = self.syncs.remove(key) else {
            return;
        };
        self.workers.free(sync.worker);
        let mut end = vec![
            ("key", Value::from(key)),
            ("worker", Value::from(sync.worker)),
        ];
        match &sync.failed {
            None => end.push(("outcome", "ok".into())),
            Some((error, _)) => {
                end.push(("outcome", "error".into()));
                end.push(("error", error.as_str().into()));
            }
        }
        end.push(("ms", millis(t - sync.started)));
        out.line("worker", "end", &end);
        match sync.failed {
            None => {
                self.failures.remove(key);
                self.queue_line("forget", &[("key", key.into())], out);
            }
            Some((_, delay_ms)) => {
                let requeues = {
                    let count = self.failures.entry(key.to_string()).or_insert(0);
                    *count += 1;
                    *count
                };
                self.waiting.insert(key.to_string());
                let mut fields = vec![("key", Value::from(key))];
                if let Some(ms) = delay_ms {
                    fields.push(("delay_ms", Value::from(ms)));
                }
                fields.push(("requeues", Value::from(requeues)));
                self.queue_line("requeue", &fields, out);
            }
        }
    }

    /// `key`'s Foo is gone: dropped without a sync.
    fn dropped(&mut self, key: &str, out: &mut Lines) {
        self.waiting.remove(key);
        self.queue_line("drop", &[("key", key.into())], out);
    }
}

/// The flow of a whole JSON log, one JSON object per line.
pub fn from_log(log: &str) -> String {
    let mut flow = Flow::default();
    let mut out = String::new();
    for line in log.lines().flat_map(|line| flow.read(line)) {
        out.push_str(&Value::Object(line).to_string());
        out.push('\n');
    }
    out
}

/// The resource a handler span handles: `on_foo` and `on_deployment` of
/// the shared crate's `handlers` module.
fn handler_resource(span: &Map<String, Value>) -> Option<&'static str> {
    match name(span) {
        "on_foo" => Some("foos"),
        "on_deployment" => Some("deployments"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use k8s_openapi::api::apps::v1::Deployment;
    use kube::runtime::reflector;
    use sample_controller::Foo;
    use sample_controller::handlers::{on_deployment, on_foo};
    use sample_controller::informer::Notification;
    use tracing_subscriber::layer::SubscriberExt;

    /// A buffer the JSON log is written to and the test reads.
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

    /// What `f` logged through the steps' own JSON layer, as it was written.
    fn logged(f: impl FnOnce()) -> String {
        let buffer = Buffer::default();
        let layer = sample_controller::telemetry::json_layer(buffer.clone());
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, f);
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    /// The flow of what `f` logged through the steps' own JSON layer, as
    /// JSON objects without `t` (and `ms`, which varies).
    fn traced(f: impl FnOnce()) -> Vec<Map<String, Value>> {
        from_log(&logged(f))
            .lines()
            .map(|line| {
                let mut fields: Map<String, Value> = serde_json::from_str(line).unwrap();
                assert!(fields.remove("t").unwrap().is_number(), "{line}");
                fields.remove("ms");
                fields
            })
            .collect()
    }

    fn json(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    /// Go's `newFoo`, in namespace `ns`.
    fn foo(name: &str) -> Foo {
        let mut foo = sample_controller::fixtures::foo(name, Some(1));
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
    fn a_sync_is_kubes_span_around_it_with_the_worker_the_flow_numbers() {
        let lines = traced(|| {
            tracing::debug!(target: "sample_controller::workqueue", objectRef = "ns/a", "queued");
            tracing::debug!(target: "sample_controller::workqueue", objectRef = "ns/a", "queued");
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
                    "any message"
                );
            }
            drop(first);
            // The retry succeeds on the lowest idle worker.
            drop(sync_span("a"));
        });
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
    fn rewording_every_message_the_steps_log_leaves_the_flow_as_it_was() {
        let (foos, _) = reflector::store::<Foo>();
        let mut unowned = Deployment::default();
        unowned.metadata.name = Some("unowned".into());
        unowned.metadata.namespace = Some("ns".into());
        let log = logged(|| {
            let _ = on_foo(&Notification::Added(Arc::new(foo("a"))));
            let _ = on_deployment(&Notification::Added(Arc::new(unowned)), &foos);
            tracing::debug!(target: "sample_controller::workqueue", objectRef = "ns/a", "queued");
            let sync = sync_span("a");
            {
                let _in = sync.enter();
                tracing::error!(
                    target: "sample_controller::workqueue",
                    objectRef = "ns/a",
                    error = "taken",
                    retry_in = ?Duration::from_millis(5),
                    "Error syncing; requeuing for later retry"
                );
            }
            drop(sync);
        });
        // Every message a step wrote, reworded; the span openings and
        // closings are tracing-subscriber's, not the steps'.
        let reworded: Vec<String> = log
            .lines()
            .map(|line| {
                let mut record: Map<String, Value> = serde_json::from_str(line).unwrap();
                if let Some(Value::String(message)) = record.get_mut("message")
                    && message != "new"
                    && message != "close"
                {
                    *message = format!("reworded: {}", message.to_uppercase());
                }
                serde_json::to_string(&record).unwrap()
            })
            .collect();
        let reworded = reworded.join("\n");
        assert_eq!(reworded.matches("reworded: ").count(), 2, "{reworded}");
        let flow = from_log(&log);
        for lane in ["\"enqueue\"", "\"ignore\"", "\"add\"", "\"requeue\""] {
            assert!(flow.contains(lane), "no {lane} in\n{flow}");
        }
        assert_eq!(from_log(&reworded), flow);
    }

    #[test]
    fn an_event_that_says_new_or_close_is_not_a_span_opening_or_closing() {
        let lines = traced(|| {
            let sync = sync_span("a");
            let _in = sync.enter();
            tracing::info!("close");
            tracing::info!("new");
        });
        let ends = lines.iter().filter(|l| l["what"] == "end").count();
        let starts = lines.iter().filter(|l| l["what"] == "start").count();
        assert_eq!((starts, ends), (1, 1), "{lines:?}");
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
            // A request that never got an answer has no code.
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
    fn step_8s_triggers_come_from_its_watch_and_predicate_fields_whatever_the_messages_say() {
        let lines = traced(|| {
            tracing::debug!(target: "step8::caches", resource = "foos", "a");
            tracing::debug!(target: "step8::caches", event = "apply", resource = "foos", object = "ns/a", resource_version = "7", "b");
            tracing::debug!(target: "step8::caches", deployment = "ns/a-nginx", foos = ?["a"], "c");
            tracing::debug!(target: "step8::caches", deployment = "ns/taken", foos = ?Vec::<&str>::new(), "d");
            tracing::debug!(target: "step8::caches", deployment = "ns/a-nginx", "e");
            tracing::debug!(target: "step8::reconciler", objectReference = "Foo.v1alpha1.samplecontroller.k8s.io/a.ns", "f");
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
            // The log's other lines are not lines of the flow.
            tracing::info!(target: "sample_controller::workqueue", objectRef = "ns/a", "Successfully synced");
            tracing::info!(target: "sample_controller::workqueue", workers = 2, "Starting workers");
        });
        assert_eq!(
            lines,
            [json(serde_json::json!({
                "lane": "event", "what": "Warning", "key": "ns/a",
                "reason": "ErrResourceExists", "note": "taken"
            }))]
        );
    }
}
