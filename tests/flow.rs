//! End-to-end: the flow of the JSON log a step writes with
//! `SAMPLE_CONTROLLER_LOG_JSON` set (`course::flow`), read from runs
//! of step 7 and step 8 against a real
//! control plane: a Foo's way from its watch event to its Deployment, its
//! status and its Event, and a foreign Deployment's refusal with a growing
//! backoff; for step 8, kube's `Controller` in the same vocabulary, all
//! derived from the steps' own events and kube's spans.

mod support;

use std::path::Path;

use serde_json::{Map, Value};
use support::*;

/// The flow of the JSON log at `path`, one JSON object per line.
fn flow_of(path: &Path) -> String {
    course::flow::from_log(&std::fs::read_to_string(path).unwrap_or_default())
}

/// The lines of the flow of the JSON log at `path`, as JSON objects.
fn lines(path: &Path) -> Vec<Map<String, Value>> {
    flow_of(path)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// Whether `line` has every field of `wanted` with its value.
fn has(line: &Map<String, Value>, wanted: &Value) -> bool {
    wanted
        .as_object()
        .expect("an object")
        .iter()
        .all(|(name, value)| line.get(name) == Some(value))
}

/// Waits until the flow at `path` has, in this order, a line matching each
/// of `wanted`; returns those lines.
async fn flows(path: &Path, wanted: &[Value]) -> Vec<Map<String, Value>> {
    let started = std::time::Instant::now();
    loop {
        let lines = lines(path);
        let mut found = Vec::new();
        let mut from = 0;
        for want in wanted {
            let Some(at) = lines[from..].iter().position(|l| has(l, want)) else {
                break;
            };
            found.push(lines[from + at].clone());
            from += at + 1;
        }
        if found.len() == wanted.len() {
            return found;
        }
        if started.elapsed() > WAIT {
            let trace = flow_of(path);
            panic!(
                "the flow never showed {:#}\n(after {} of the {} lines wanted, in order)\nthe flow:\n{trace}",
                wanted[found.len()],
                found.len(),
                wanted.len()
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_foo_flows_from_its_watch_event_through_the_queue_to_its_writes_and_event() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "flow").await;
    let dir = tempfile_dir("flow");
    // The log on stderr at info level, without the debug events the flow
    // reads, does not thin out the JSON log.
    let (mut step, trace) = start_traced(cp, &ns, "step-7", dir.path(), &[("RUST_LOG", "info")]);
    step.expect(&["Starting workers"]).await;

    create_foo(&client, &ns, "traced", "traced-nginx", Some(1)).await;
    let key = format!("{ns}/traced");
    let found = flows(
        &trace,
        &[
            serde_json::json!({"lane": "watch", "what": "add", "resource": "foos", "key": key}),
            serde_json::json!({"lane": "handler", "what": "enqueue", "resource": "foos", "key": key}),
            serde_json::json!({"lane": "queue", "what": "add", "key": key}),
            serde_json::json!({"lane": "queue", "what": "take", "key": key}),
            serde_json::json!({"lane": "worker", "what": "start", "key": key}),
            serde_json::json!({
                "lane": "api", "what": "create", "method": "POST", "resource": "deployments",
                "namespace": ns, "code": 201, "key": key
            }),
            serde_json::json!({
                "lane": "api", "method": "PUT", "resource": "foos", "name": "traced",
                "subresource": "status", "code": 200, "key": key
            }),
            serde_json::json!({"lane": "event", "what": "Normal", "reason": "Synced", "key": key}),
            serde_json::json!({"lane": "worker", "what": "end", "outcome": "ok", "key": key}),
            serde_json::json!({"lane": "queue", "what": "forget", "key": key}),
        ],
    )
    .await;
    // The sync's requests carry the worker that took the key.
    let worker = &found[3]["worker"];
    assert!(worker.is_u64(), "{:?}", found[3]);
    assert_eq!(&found[5]["worker"], worker, "{:?}", found[5]);
    // Its own Deployment comes back through the Deployment watch.
    flows(
        &trace,
        &[
            serde_json::json!({"lane": "watch", "what": "add", "resource": "deployments", "key": format!("{ns}/traced-nginx")}),
            serde_json::json!({"lane": "handler", "what": "enqueue", "resource": "deployments", "key": key}),
        ],
    )
    .await;

    // A Deployment of that name made by someone else: refused, retried with
    // a growing backoff, each retry's line saying how long and how many.
    let refused_by = serde_json::json!({
        "lane": "handler", "what": "ignore", "resource": "deployments",
        "object": format!("{ns}/taken-name")
    });
    let found = refused_with_backoff(&client, &ns, &trace, refused_by).await;
    assert!(
        found[2]["error"]
            .as_str()
            .unwrap()
            .contains("already exists and is not managed by Foo"),
        "{:?}",
        found[2]
    );

    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    assert!(
        !output.contains("lane"),
        "the flow is in the log too:\n{output}"
    );
    drop(dir);
}

#[tokio::test]
async fn step_8_maps_kubes_controller_onto_the_same_lines_and_says_what_it_cannot_see() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "flow8").await;
    let dir = tempfile_dir("flow8");
    let (mut step, trace) = start_traced(cp, &ns, "step-8", dir.path(), &[]);
    step.expect(&["Starting workers"]).await;
    create_foo(&client, &ns, "traced", "traced-nginx", Some(1)).await;
    // Before its first queue or worker line, the flow says that kube's
    // scheduler is not observable.
    flows(
        &trace,
        &[serde_json::json!({"lane": "queue", "what": "take"})],
    )
    .await;
    let first = lines(&trace)
        .into_iter()
        .find(|l| ["note", "queue", "worker"].contains(&l["lane"].as_str().unwrap_or_default()))
        .expect("a queue line");
    assert_eq!(first["lane"], "note", "{first:?}");
    assert!(
        first["text"].as_str().unwrap().contains("inferred"),
        "{first:?}"
    );

    let key = format!("{ns}/traced");
    let found = flows(
        &trace,
        &[
            serde_json::json!({"lane": "watch", "what": "apply", "resource": "foos", "key": key}),
            serde_json::json!({"lane": "handler", "what": "enqueue", "resource": "foos", "key": key}),
            serde_json::json!({"lane": "queue", "what": "add", "key": key}),
            serde_json::json!({"lane": "queue", "what": "take", "key": key}),
            serde_json::json!({"lane": "worker", "what": "start", "key": key}),
            serde_json::json!({
                "lane": "api", "what": "patch_status", "method": "PATCH", "resource": "foos",
                "name": "traced", "subresource": "status", "code": 200, "key": key
            }),
            serde_json::json!({
                "lane": "api", "what": "create", "method": "POST", "resource": "deployments",
                "namespace": ns, "code": 201, "key": key
            }),
            serde_json::json!({"lane": "event", "what": "Normal", "reason": "Synced", "key": key}),
            serde_json::json!({"lane": "worker", "what": "end", "outcome": "ok", "key": key}),
            serde_json::json!({"lane": "queue", "what": "forget", "key": key}),
        ],
    )
    .await;
    assert_eq!(found[6]["worker"], found[3]["worker"], "{:?}", found[6]);
    // Its Deployment comes back and triggers it through `owns`; the
    // reconcile that follows finds nothing to do and sends nothing.
    let found = flows(
        &trace,
        &[
            serde_json::json!({"lane": "watch", "what": "apply", "resource": "deployments", "key": format!("{ns}/traced-nginx")}),
            serde_json::json!({"lane": "handler", "what": "enqueue", "resource": "deployments", "key": key}),
            serde_json::json!({"lane": "worker", "what": "start", "key": key}),
            serde_json::json!({"lane": "worker", "what": "end", "outcome": "ok", "key": key}),
        ],
    )
    .await;
    // The lines between its start and its end, in the file's order: their
    // times are rounded to the millisecond, so the previous reconcile's last
    // request can carry its start's time.
    let all = lines(&trace);
    let start = all.iter().position(|l| *l == found[2]).unwrap();
    let end = start + all[start..].iter().position(|l| *l == found[3]).unwrap();
    let sent: Vec<_> = all[start..end]
        .iter()
        .filter(|l| {
            l["lane"] == "api"
                && l.get("key") == Some(&Value::from(key.clone()))
                && l.get("worker") == Some(&found[2]["worker"])
        })
        .collect();
    assert!(
        sent.is_empty(),
        "a reconcile with nothing to do sent {sent:?}\nthe flow:\n{}",
        flow_of(&trace)
    );

    // Someone else's Deployment of that name: refused, requeued by the error
    // policy with Go's growing delay.
    let refused = format!("{ns}/refused");
    let enqueued = serde_json::json!({
        "lane": "handler", "what": "enqueue", "resource": "foos", "key": refused
    });
    refused_with_backoff(&client, &ns, &trace, enqueued).await;
    // A Deployment with no Foo among its owners triggers nothing.
    flows(
        &trace,
        &[serde_json::json!({
            "lane": "handler", "what": "ignore", "resource": "deployments",
            "object": format!("{ns}/taken-name"), "reason": "no Foo among its owners"
        })],
    )
    .await;

    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    drop(dir);
}

/// Creates a Deployment `taken-name` nobody owns and, once the step has seen
/// it, a Foo `refused` that names it, and waits for the flow to show, in
/// order, `first`, the refusal (its Warning and the failed sync) and three
/// requeues 5, 10 and 20 ms long; returns those lines.
async fn refused_with_backoff(
    client: &kube::Client,
    ns: &str,
    trace: &Path,
    first: Value,
) -> Vec<Map<String, Value>> {
    create_foreign_deployment(client, ns, "taken-name").await;
    // The step's cache has the Deployment (step 7's informer: `add`, step
    // 8's watcher: `apply`) before the Foo comes. Else its first sync may
    // miss it, try to create it, fail on the 409 and requeue before it
    // refuses (as Go's would): out of the order below.
    flows(
        trace,
        &[serde_json::json!({
            "lane": "watch", "resource": "deployments", "key": format!("{ns}/taken-name")
        })],
    )
    .await;
    create_foo(client, ns, "refused", "taken-name", Some(1)).await;
    let refused = format!("{ns}/refused");
    let found = flows(
        trace,
        &[
            first,
            serde_json::json!({"lane": "event", "what": "Warning", "reason": "ErrResourceExists", "key": refused}),
            serde_json::json!({"lane": "worker", "what": "end", "outcome": "error", "key": refused}),
            serde_json::json!({"lane": "queue", "what": "requeue", "key": refused, "requeues": 1}),
            serde_json::json!({"lane": "queue", "what": "requeue", "key": refused, "requeues": 2}),
            serde_json::json!({"lane": "queue", "what": "requeue", "key": refused, "requeues": 3}),
        ],
    )
    .await;
    let delays: Vec<u64> = found[3..]
        .iter()
        .map(|l| l["delay_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(delays, [5, 10, 20], "Go's 5 ms · 2^n");
    found
}

/// Starts step `binary` on `ns` with its JSON log going to
/// `dir/BINARY.log.jsonl` and the variables `env` besides; the step and the
/// log's path.
fn start_traced(
    cp: &testcluster::ControlPlane,
    ns: &str,
    binary: &str,
    dir: &Path,
    env: &[(&str, &str)],
) -> (Step, std::path::PathBuf) {
    let trace = dir.join(format!("{binary}.log.jsonl"));
    let mut vars = vec![("SAMPLE_CONTROLLER_LOG_JSON", trace.to_str().unwrap())];
    vars.extend_from_slice(env);
    let step = Step::start_program_with_env(
        binary,
        Path::new(&step_binary(binary)),
        &[
            "--kubeconfig".into(),
            cp.kubeconfig_path().display().to_string(),
            "--namespace".into(),
            ns.to_string(),
        ],
        &vars,
    );
    (step, trace)
}

/// A fresh directory under the target directory's tmp, removed when dropped.
fn tempfile_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("{prefix}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}
