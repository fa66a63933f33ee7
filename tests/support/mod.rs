//! Shared by the end-to-end test binaries: the control plane, namespaces,
//! and step binaries run as child processes whose output the tests read.

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::process::ExitStatus;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use course::harness;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, PostParams};
use sample_controller::Foo;
use sample_controller::deployment::new_deployment;

/// How long a test waits for a line it expects before failing.
pub const WAIT: Duration = Duration::from_secs(60);

/// The control plane of this test binary (started on first use) with the
/// Foo CRD installed, and an admin client for it.
pub async fn cluster() -> (&'static testcluster::ControlPlane, Client) {
    static CRD: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let cp = testcluster::shared().await.expect("control plane");
    let client = cp.client().await.expect("client");
    CRD.get_or_init(|| async {
        let crd = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crd.yaml");
        testcluster::install_crd(&client, crd)
            .await
            .expect("install CRD");
    })
    .await;
    (cp, client)
}

/// A control plane of the test's own (not the shared one) started with
/// `options`, the Foo CRD installed, and an admin client for it.
pub async fn own_cluster(options: testcluster::Options) -> (testcluster::ControlPlane, Client) {
    let cp = testcluster::ControlPlane::start(options)
        .await
        .expect("control plane");
    let client = cp.client().await.expect("client");
    let crd = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/crd.yaml");
    testcluster::install_crd(&client, crd)
        .await
        .expect("install CRD");
    (cp, client)
}

/// kube-apiserver and etcd only, with the WatchList gate off, as Kubernetes
/// 1.33 ships: the API server refuses streaming lists (`sendInitialEvents`).
pub fn without_watch_list() -> testcluster::Options {
    testcluster::Options {
        apiserver_flags: vec!["--feature-gates=WatchList=false".into()],
        ..testcluster::Options::api_server_only()
    }
}

/// Creates a fresh namespace named after the test.
pub async fn namespace(client: &Client, prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    testcluster::create_namespace(client, &name)
        .await
        .expect("create namespace");
    name
}

/// Creates a Foo in `ns` and returns it as stored (with its UID).
pub async fn create_foo(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: Option<i32>,
) -> Foo {
    harness::create_foo(client, ns, name, deployment, replicas)
        .await
        .expect("create Foo")
}

/// Creates the Deployment `owner` would get, in `ns` (controlled by `owner`).
pub async fn create_owned_deployment(client: &Client, ns: &str, owner: &Foo) -> Deployment {
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &new_deployment(owner))
        .await
        .expect("create owned Deployment")
}

/// Creates a Deployment nobody owns, named `name`, in `ns`.
pub async fn create_foreign_deployment(client: &Client, ns: &str, name: &str) -> Deployment {
    harness::create_foreign_deployment(
        client,
        ns,
        name,
        "example.invalid/web:1",
        &[("owner", "someone-else")],
    )
    .await
    .expect("create foreign Deployment")
}

/// Deletes a namespaced object, ignoring "not found".
pub async fn delete<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if let Err(e) = harness::delete(api, name).await {
        panic!("delete {name}: {:#}", e);
    }
}

/// Polls `check` every 200 ms until it returns `Some`, or fails after [`WAIT`].
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    harness::eventually(what, WAIT, check)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A step binary running as a child process, its stdout and stderr merged
/// line by line: [`harness::Process`] (its `output`, `drain_for`,
/// `line_within`, `is_running`), with methods that panic instead of
/// returning errors.
pub struct Step(harness::Process);

impl std::ops::Deref for Step {
    type Target = harness::Process;
    fn deref(&self) -> &harness::Process {
        &self.0
    }
}

impl std::ops::DerefMut for Step {
    fn deref_mut(&mut self) -> &mut harness::Process {
        &mut self.0
    }
}

impl Step {
    /// Starts `step-N` (`bin` is its Cargo name) with the cluster's kubeconfig, the
    /// namespace and `extra` arguments.
    pub fn start(
        bin: &str,
        kubeconfig: &std::path::Path,
        namespace: Option<&str>,
        extra: &[&str],
    ) -> Step {
        let mut args: Vec<String> = vec!["--kubeconfig".into(), kubeconfig.display().to_string()];
        if let Some(ns) = namespace {
            args.extend(["--namespace".into(), ns.into()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::start_with_args(bin, &args)
    }

    /// Starts a step binary with exactly `args`.
    pub fn start_with_args(bin: &str, args: &[String]) -> Step {
        let path = Self::binary_path(bin);
        Self::start_program(bin, std::path::Path::new(&path), args)
    }

    /// The path of a step binary.
    pub fn binary_path(bin: &str) -> String {
        step_binary(bin)
    }

    /// Starts any program (called `name` in the test output) with `args`.
    pub fn start_program(name: &str, path: &std::path::Path, args: &[String]) -> Step {
        Self::start_program_with_env(name, path, args, &[])
    }

    /// Starts any program with `args` and extra environment variables `envs`.
    pub fn start_program_with_env(
        name: &str,
        path: &std::path::Path,
        args: &[String],
        envs: &[(&str, &str)],
    ) -> Step {
        let process = harness::Process::start(name, path, args, envs).expect("spawn step binary");
        Step(process.with_wait(WAIT))
    }

    /// Panics with `err` and the whole output so far.
    fn fail(&self, err: anyhow::Error) -> ! {
        panic!("{err}; output:\n{}", self.output.join("\n"))
    }

    /// Waits for a line containing every one of `parts` and returns it.
    pub async fn expect(&mut self, parts: &[&str]) -> String {
        match self.0.expect(parts).await {
            Ok(line) => line,
            Err(err) => self.fail(err),
        }
    }

    /// Polls `check` every 200 ms until it returns `Some`, reading the step's
    /// output meanwhile (so that a failure shows what the step said); fails
    /// after [`WAIT`].
    pub async fn until<T, F, Fut>(&mut self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(value) = check().await {
                return value;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "{}: timed out waiting for {what}; output:\n{}",
                    self.name(),
                    self.output.join("\n")
                );
            }
            self.drain_for(Duration::from_millis(200)).await;
        }
    }

    /// The port step 8 serves on, read from its "serving /healthz, …" line
    /// (waiting for that line if it has not come yet).
    pub async fn http_port(&mut self) -> u16 {
        const SERVING: &str = "serving /healthz, /readyz and /metrics";
        let line = match self.output.iter().find(|l| l.contains(SERVING)) {
            Some(line) => line.clone(),
            None => self.expect(&[SERVING]).await,
        };
        let addr = line
            .split_whitespace()
            .find_map(|field| field.strip_prefix("addr="))
            .and_then(|a| a.parse::<std::net::SocketAddr>().ok());
        match addr {
            Some(addr) => addr.port(),
            None => self.fail(anyhow::anyhow!("no addr=IP:PORT in {line:?}")),
        }
    }

    /// Waits for the process to exit by itself; returns its status and whole output.
    pub async fn wait(mut self) -> (ExitStatus, String) {
        match self.0.wait().await {
            Ok(status) => (status, self.output.join("\n")),
            Err(err) => self.fail(err),
        }
    }

    /// The child's PID.
    pub fn pid(&self) -> u32 {
        self.0.pid().expect("step still running")
    }

    /// Kills the process with SIGKILL (by PID), as a crashed node would.
    pub async fn kill(mut self) -> String {
        self.0.kill().await.expect("kill");
        self.output.join("\n")
    }

    /// Sends SIGTERM (by PID) and waits for the process to exit.
    pub async fn terminate(mut self) -> (ExitStatus, String) {
        if self.0.pid().is_none() {
            panic!("step still running");
        }
        match self.0.terminate().await {
            Ok(status) => (status, self.output.join("\n")),
            Err(err) => self.fail(err),
        }
    }
}

/// The `--http-address` that lets step 8 bind any free loopback port; it
/// logs the one it got, which [`Step::http_port`] reads. (A port found free
/// beforehand and passed in can be taken by another process meanwhile.)
pub const ANY_PORT: &str = "127.0.0.1:0";

/// `GET http://127.0.0.1:{port}{path}`: the status code and body, or `None`
/// if nothing answers.
pub async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    testcluster::http_get(port, path).await.ok()
}

/// The value of the metric line starting with `name` (labels included) in
/// step 8's `/metrics`, or 0 if it is absent.
pub async fn metric(port: u16, name: &str) -> f64 {
    let (_, text) = http_get(port, "/metrics").await.expect("/metrics answers");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// Fetches a Deployment, or `None` if it does not exist.
pub async fn get_deployment(client: &kube::Client, ns: &str, name: &str) -> Option<Deployment> {
    Api::<Deployment>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .unwrap()
}

/// The Events recorded in `ns` about Foo `name`, as `(type, reason, note)`.
pub async fn events_for(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    harness::events_for(client, ns, name)
        .await
        .expect("the Events")
        .into_iter()
        .map(|(type_, reason, note, _)| (type_, reason, note))
        .collect()
}

/// Seconds since midnight (UTC) of a log line's leading RFC 3339 timestamp.
pub fn line_time(line: &str) -> Option<f64> {
    let time = line.split_whitespace().next()?.split_once('T')?.1;
    let time = time.strip_suffix('Z')?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// The first `ClusterRole` (`sample-controller`, step 8's) and the `Role`
/// (the leader Lease) in manifests/rbac.yaml.
pub fn manifest_roles() -> (
    k8s_openapi::api::rbac::v1::ClusterRole,
    k8s_openapi::api::rbac::v1::Role,
) {
    let docs = manifest("rbac.yaml");
    let find = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("a {kind} in manifests/rbac.yaml"))
    };
    (
        serde_json::from_value(find("ClusterRole")).expect("ClusterRole"),
        serde_json::from_value(find("Role")).expect("Role"),
    )
}

/// The ClusterRole called `name` in manifests/rbac.yaml.
pub fn manifest_cluster_role(name: &str) -> k8s_openapi::api::rbac::v1::ClusterRole {
    let doc = manifest("rbac.yaml")
        .into_iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("a ClusterRole {name} in manifests/rbac.yaml"));
    serde_json::from_value(doc).expect("ClusterRole")
}

/// Whether RBAC lets the ServiceAccount `sa` of `ns` do `verb` on
/// `resource` (`plural` or `plural/subresource`) of API group `group` in
/// `ns`, as the API server answers it right now (a SubjectAccessReview,
/// asked by the admin `client`). [`grant`] takes effect a moment after it
/// returns; poll this to know when.
pub async fn service_account_may(
    client: &Client,
    ns: &str,
    sa: &str,
    verb: &str,
    group: &str,
    resource: &str,
) -> bool {
    use k8s_openapi::api::authorization::v1::SubjectAccessReview;
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, sub)) => (r, Some(sub)),
        None => (resource, None),
    };
    let review: SubjectAccessReview = serde_json::from_value(serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {
            "user": format!("system:serviceaccount:{ns}:{sa}"),
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{ns}"), "system:authenticated"],
            "resourceAttributes": {
                "namespace": ns, "verb": verb, "group": group,
                "resource": resource, "subresource": subresource.unwrap_or_default(),
            },
        },
    }))
    .expect("SubjectAccessReview");
    Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("create SubjectAccessReview")
        .status
        .is_some_and(|s| s.allowed)
}

/// Grants the ServiceAccount `sa` of `ns` the `rules` in `ns` (a Role and
/// RoleBinding named `name`), replacing what an earlier call granted.
pub async fn grant(
    client: &Client,
    ns: &str,
    sa: &str,
    name: &str,
    rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>,
) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    use kube::api::{Patch, PatchParams};
    let params = PatchParams::apply("tests").force();
    let role: Role = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": ns},
        "rules": rules,
    }))
    .expect("Role");
    Api::<Role>::namespaced(client.clone(), ns)
        .patch(name, &params, &Patch::Apply(&role))
        .await
        .expect("apply Role");
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }))
    .expect("RoleBinding");
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .patch(name, &params, &Patch::Apply(&binding))
        .await
        .expect("apply RoleBinding");
}

/// Whether Foo `name` has a Deployment `deployment` it controls with
/// `replicas` replicas, and reports them all available.
pub async fn converged(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> bool {
    let Some(foo) = Api::<Foo>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .expect("get Foo")
    else {
        return false;
    };
    let Some(d) = get_deployment(client, ns, deployment).await else {
        return false;
    };
    sample_controller::deployment::is_controlled_by(&d, &foo)
        && d.spec.replicas == Some(replicas)
        && foo.status.as_ref().map(|s| s.available_replicas) == Some(replicas)
}

/// Writes a fault's one-line summary where `cargo xtask faults` collects it
/// (target/fault-report/), and prints it.
pub fn report(fault: u32, line: &str) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../fault-report");
    std::fs::create_dir_all(&dir).expect("create fault report dir");
    let line = format!("fault {fault}: {line}");
    println!("{line}");
    std::fs::write(dir.join(format!("fault-{fault}.txt")), format!("{line}\n"))
        .expect("write report");
}

/// Like [`report`], for a fault run against several steps: one line per
/// step, `fault N (step S): …`, in the order given. `cargo xtask faults`
/// prints a fault's file after two spaces, so each line after the first is
/// indented by two spaces to line up with it.
pub fn report_steps(fault: u32, lines: &[(&str, String)]) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../fault-report");
    std::fs::create_dir_all(&dir).expect("create fault report dir");
    let lines: Vec<String> = lines
        .iter()
        .map(|(step, line)| format!("fault {fault} ({step}): {line}"))
        .collect();
    for line in &lines {
        println!("{line}");
    }
    std::fs::write(
        dir.join(format!("fault-{fault}.txt")),
        format!("{}\n", lines.join("\n  ")),
    )
    .expect("write report");
}

/// Creates a Deployment nobody owns and waits until kube-controller-manager
/// has annotated its revision, so a snapshot taken now changes only if
/// someone else writes to it.
pub async fn create_settled_foreign_deployment(
    client: &Client,
    ns: &str,
    name: &str,
) -> Deployment {
    create_foreign_deployment(client, ns, name).await;
    eventually(&format!("{name} has its revision annotation"), || async {
        get_deployment(client, ns, name).await.filter(|d| {
            d.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("deployment.kubernetes.io/revision"))
        })
    })
    .await
}

/// The YAML documents of `manifests/<file>`.
pub fn manifest(file: &str) -> Vec<serde_json::Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("read manifest");
    testcluster::yaml_documents(&text).expect("YAML documents")
}

/// Server-side applies `doc` (a dry run unless `for_real`).
pub async fn apply(client: &Client, doc: &serde_json::Value, for_real: bool) -> anyhow::Result<()> {
    testcluster::apply_object(client, doc, "manifest-test", !for_real).await
}

/// The binary `name` of a step, built by the package the step registry
/// names (each step is a package of its own, so that it compiles only its
/// own dependencies) with `cargo build -p PACKAGE --bin NAME`, once per
/// test binary: cargo decides whether anything changed (a no-op when nothing
/// did), and says where the executable is.
pub fn step_binary(name: &str) -> String {
    let step = course::steps::STEPS
        .iter()
        .find(|s| s.binary == name)
        .unwrap_or_else(|| panic!("no step binary {name} in course::steps"));
    built_by_cargo(step.package, name)
}

/// `cargo build -p package --bin name`, once per process; the executable
/// cargo reports.
fn built_by_cargo(package: &str, name: &str) -> String {
    static BUILT: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, String>>> =
        std::sync::OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(name) {
        return path.clone();
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let args = [
        "build",
        "-p",
        package,
        "--bin",
        name,
        "--message-format=json-render-diagnostics",
    ];
    let output = course::cargo::command(root, &args)
        .std()
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run cargo build");
    assert!(
        output.status.success(),
        "cargo build -p {package} --bin {name} failed"
    );
    let path = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("cargo built no executable {name}"));
    built.insert(name.to_string(), path.clone());
    path
}
