//! Shared by the end-to-end test binaries: the control plane, namespaces,
//! and step binaries run as child processes whose output the tests read.

#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use sample_controller::deployment::new_deployment;
use sample_controller::{Foo, FooSpec};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

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
    let foo = Foo::new(
        name,
        FooSpec {
            deployment_name: deployment.into(),
            replicas,
        },
    );
    Api::<Foo>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &foo)
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
    let mut d: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"owner": "someone-else"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "example.invalid/web:1"}]}
            }
        }
    }))
    .expect("deployment JSON");
    d.metadata.namespace = Some(ns.into());
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &d)
        .await
        .expect("create foreign Deployment")
}

/// Deletes a namespaced object, ignoring "not found".
pub async fn delete<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_not_found() => {}
        Err(e) => panic!("delete {name}: {e}"),
    }
}

/// Polls `check` every 200 ms until it returns `Some`, or fails after [`WAIT`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A step binary running as a child process, its stdout and stderr merged
/// line by line.
pub struct Step {
    name: String,
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// Every line read so far, for assertions over the whole output.
    pub output: Vec<String>,
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
        let path = Self::binary(bin);
        Self::start_program(bin, std::path::Path::new(path), args)
    }

    /// The path of a step binary.
    fn binary(bin: &str) -> &'static str {
        match bin {
            "step-1" => env!("CARGO_BIN_EXE_step-1"),
            "step-2" => env!("CARGO_BIN_EXE_step-2"),
            "step-3" => env!("CARGO_BIN_EXE_step-3"),
            "step-4" => env!("CARGO_BIN_EXE_step-4"),
            "step-5" => env!("CARGO_BIN_EXE_step-5"),
            "step-6" => env!("CARGO_BIN_EXE_step-6"),
            "step-7" => env!("CARGO_BIN_EXE_step-7"),
            other => panic!("no binary {other}"),
        }
    }

    /// Starts any program (called `name` in the test output) with `args`.
    pub fn start_program(name: &str, path: &std::path::Path, args: &[String]) -> Step {
        let mut child = Command::new(path)
            .args(args)
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn step binary");
        let (tx, lines) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        for (stream, tx) in [
            (
                Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                tx.clone(),
            ),
            (Box::new(stderr), tx),
        ] {
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Step {
            name: name.to_string(),
            child,
            lines,
            output: Vec::new(),
        }
    }

    /// Waits for a line containing every one of `parts` and returns it.
    pub async fn expect(&mut self, parts: &[&str]) -> String {
        self.expect_where(&parts.join(" … "), |line| {
            parts.iter().all(|p| line.contains(p))
        })
        .await
    }

    /// Waits for a line matching `matches` (described by `what` in failures).
    pub async fn expect_where(&mut self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => {
                    println!("[{}] {line}", self.name);
                    self.output.push(line.clone());
                    if matches(&line) {
                        return line;
                    }
                }
                Ok(None) => panic!(
                    "{} exited before printing {what:?}; output:\n{}",
                    self.name,
                    self.output.join("\n")
                ),
                Err(_) => panic!(
                    "{} did not print {what:?} within {WAIT:?}; output:\n{}",
                    self.name,
                    self.output.join("\n")
                ),
            }
        }
    }

    /// Reads whatever the step prints during `period`.
    pub async fn drain_for(&mut self, period: Duration) {
        let deadline = tokio::time::Instant::now() + period;
        while let Ok(Some(line)) = tokio::time::timeout_at(deadline, self.lines.recv()).await {
            println!("[{}] {line}", self.name);
            self.output.push(line);
        }
    }

    /// Waits for the process to exit by itself; returns its status and whole output.
    pub async fn wait(mut self) -> (ExitStatus, String) {
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("step exits in time")
            .expect("wait");
        while let Some(line) = self.lines.recv().await {
            println!("[{}] {line}", self.name);
            self.output.push(line);
        }
        (status, self.output.join("\n"))
    }

    /// Sends SIGTERM (by PID) and waits for the process to exit.
    pub async fn terminate(self) -> (ExitStatus, String) {
        let pid = self.child.id().expect("step still running") as libc::pid_t;
        // SAFETY: kill(2) with a PID we own and a valid signal number.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        self.wait().await
    }
}
