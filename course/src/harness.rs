//! Programs run as child processes against the control plane, and the
//! objects a scenario creates: what the end-to-end tests (tests/support) and
//! the book's captures (`cargo xtask book outputs`) both use.
//!
//! Everything here returns [`Result`]; the tests wrap it in helpers that
//! panic, the captures add their transcript on top. The program is named by
//! its path: the tests take a step's from `support::step_binary`, which
//! reads [`crate::steps`] and builds the step's package with cargo), the
//! captures from target/debug.

use std::fmt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// How long [`Process`] waits for a line or an exit unless told otherwise.
pub const WAIT: Duration = Duration::from_secs(60);

/// A command for `path` as the harness runs programs: `RUST_LOG=info`, no
/// `KUBECONFIG` from the environment (the program gets `--kubeconfig`), no
/// stdin, stdout and stderr piped, killed when dropped.
pub fn command(path: &Path) -> Command {
    let mut command = Command::new(path);
    command
        .env("RUST_LOG", "info")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Sends each line of `child`'s stdout and stderr to `tx` as
/// `wrap(Some(line))`, and `wrap(None)` when a stream ends (nothing where
/// `wrap` returns `None`); stops reading a stream once `tx` is closed.
pub fn forward_lines<T, W>(child: &mut Child, tx: &mpsc::UnboundedSender<T>, wrap: W) -> Result<()>
where
    T: Send + 'static,
    W: Fn(Option<String>) -> Option<T> + Clone + Send + 'static,
{
    let stdout = child.stdout.take().context("stdout")?;
    let stderr = child.stderr.take().context("stderr")?;
    let streams: [Box<dyn tokio::io::AsyncRead + Unpin + Send>; 2] =
        [Box::new(stdout), Box::new(stderr)];
    for stream in streams {
        let (tx, wrap) = (tx.clone(), wrap.clone());
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if let Some(item) = wrap(Some(line))
                    && tx.send(item).is_err()
                {
                    return;
                }
            }
            if let Some(item) = wrap(None) {
                let _ = tx.send(item);
            }
        });
    }
    Ok(())
}

/// Why [`Process::expect_where`] found no line: the process exited first,
/// fell silent, or the wait ran out while it still ran.
#[derive(Debug)]
pub struct NoLine {
    /// The process's name.
    pub name: String,
    /// The line that was wanted, as described.
    pub what: String,
    /// Whether the process had exited (else it was still running).
    pub exited: bool,
    /// How long it was waited for.
    pub wait: Duration,
    /// Whether the wait ended because the process printed nothing at all
    /// for `wait` ([`Process::expect_unless_silent`]).
    pub silent: bool,
}

impl fmt::Display for NoLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let NoLine {
            name, what, wait, ..
        } = self;
        if self.exited {
            write!(f, "{name} exited before printing {what:?}")
        } else if self.silent {
            write!(f, "{name} printed nothing for {wait:?}, and not {what:?}")
        } else {
            write!(f, "{name} did not print {what:?} within {wait:?}")
        }
    }
}

impl std::error::Error for NoLine {}

/// A program running as a child process, its stdout and stderr merged line
/// by line; each line read is printed as `[name] line` and kept in `output`.
pub struct Process {
    name: String,
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    wait: Duration,
    echo: bool,
    /// Every line read so far, in the order read.
    pub output: Vec<String>,
}

impl Process {
    /// Starts `path` (called `name` in the output) with `args` and the extra
    /// environment variables `envs`, as [`command`] sets it up.
    pub fn start(
        name: &str,
        path: &Path,
        args: &[String],
        envs: &[(&str, &str)],
    ) -> Result<Process> {
        let mut command = command(path);
        command.args(args).envs(envs.iter().copied());
        Self::spawn(name, command)
    }

    /// Spawns `command` (made with [`command`], then given its arguments).
    pub fn spawn(name: &str, mut command: Command) -> Result<Process> {
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {name} ({:?})", command.as_std().get_program()))?;
        let (tx, lines) = mpsc::unbounded_channel();
        forward_lines(&mut child, &tx, |line| line)?;
        Ok(Process {
            name: name.to_string(),
            child,
            lines,
            wait: WAIT,
            echo: true,
            output: Vec::new(),
        })
    }

    /// How long [`expect`](Self::expect) and [`wait`](Self::wait) wait
    /// (default [`WAIT`]).
    pub fn with_wait(mut self, wait: Duration) -> Process {
        self.wait = wait;
        self
    }

    /// Whether each line read is printed as `[name] line` (the default).
    pub fn echo(mut self, echo: bool) -> Process {
        self.echo = echo;
        self
    }

    /// The name the lines are printed with.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn take(&mut self, line: String) {
        if self.echo {
            println!("[{}] {line}", self.name);
        }
        self.output.push(line);
    }

    /// Waits for a line containing every one of `parts` and returns it.
    pub async fn expect(&mut self, parts: &[&str]) -> Result<String> {
        self.expect_where(&parts.join(" … "), |line| {
            parts.iter().all(|p| line.contains(p))
        })
        .await
    }

    /// Waits for a line matching `matches` (described by `what` in errors).
    /// When none comes, the error is a [`NoLine`], which says whether the
    /// process exited or the wait ran out.
    pub async fn expect_where(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Result<String> {
        self.expect_unless_silent(what, self.wait, matches).await
    }

    /// [`Process::expect_where`] for a line the process owes at once (an
    /// answer to what was just done to it): also gives up once it has
    /// printed nothing at all for `silence`, since a process that has fallen
    /// silent has shown what it does. One still printing is waited for as
    /// long as ever.
    pub async fn expect_unless_silent(
        &mut self,
        what: &str,
        silence: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            let until = deadline.min(tokio::time::Instant::now() + silence);
            let (exited, silent) = match tokio::time::timeout_at(until, self.lines.recv()).await {
                Ok(Some(line)) => {
                    self.take(line.clone());
                    if matches(&line) {
                        return Ok(line);
                    }
                    continue;
                }
                Ok(None) => (true, false),
                Err(_) => (false, tokio::time::Instant::now() < deadline),
            };
            return Err(NoLine {
                name: self.name.clone(),
                what: what.to_string(),
                exited,
                wait: if silent { silence } else { self.wait },
                silent,
            }
            .into());
        }
    }

    /// Waits up to `timeout` for a line containing every one of `parts`;
    /// `None` if none came (or the process exited).
    pub async fn line_within(&mut self, parts: &[&str], timeout: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        while let Ok(Some(line)) = tokio::time::timeout_at(deadline, self.lines.recv()).await {
            self.take(line.clone());
            if parts.iter().all(|p| line.contains(p)) {
                return Some(line);
            }
        }
        None
    }

    /// Reads whatever the process prints during `period`.
    pub async fn drain_for(&mut self, period: Duration) {
        let deadline = tokio::time::Instant::now() + period;
        while let Ok(Some(line)) = tokio::time::timeout_at(deadline, self.lines.recv()).await {
            self.take(line);
        }
    }

    /// Waits for the process to exit by itself, then reads the rest of its
    /// output.
    pub async fn wait(&mut self) -> Result<ExitStatus> {
        let status = match tokio::time::timeout(self.wait, self.child.wait()).await {
            Ok(status) => status.with_context(|| format!("waiting for {}", self.name))?,
            Err(_) => {
                // Read what it said meanwhile (a stop that hangs, say).
                self.drain_for(Duration::from_millis(200)).await;
                bail!("{} did not exit within {:?}", self.name, self.wait);
            }
        };
        while let Some(line) = self.lines.recv().await {
            self.take(line);
        }
        Ok(status)
    }

    /// The child's PID, or `None` once it has been waited for.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether the process has not exited yet.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process with SIGKILL, as a crashed node would, and reads
    /// what it printed in the next 200 ms.
    pub async fn kill(&mut self) -> Result<()> {
        self.child
            .kill()
            .await
            .with_context(|| format!("killing {}", self.name))?;
        self.drain_for(Duration::from_millis(200)).await;
        Ok(())
    }

    /// Sends SIGTERM (by PID) and waits for the process to exit.
    pub async fn terminate(&mut self) -> Result<ExitStatus> {
        let pid = self
            .pid()
            .with_context(|| format!("{} already exited", self.name))?;
        testcluster::signal(pid, libc::SIGTERM)
            .with_context(|| format!("SIGTERM to {} (PID {pid})", self.name))?;
        self.wait().await
    }
}

/// Polls `check` every 200 ms until it returns `Some`; fails after `wait`.
pub async fn eventually<T, F, Fut>(what: &str, wait: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates a Foo (`samplecontroller.k8s.io/v1alpha1`) in `ns` and returns it
/// as stored. `K` is the Foo type of the crate under test (this crate does
/// not depend on it).
pub async fn create_foo<K>(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: Option<i32>,
) -> Result<K>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let foo: K = serde_json::from_value(serde_json::json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": name},
        "spec": {"deploymentName": deployment, "replicas": replicas},
    }))
    .context("Foo JSON")?;
    Api::<K>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &foo)
        .await
        .with_context(|| format!("creating Foo {ns}/{name}"))
}

/// Creates a Deployment nobody owns, named `name`, in `ns`: one replica of
/// `image`, with the labels `labels` (besides none).
pub async fn create_foreign_deployment(
    client: &Client,
    ns: &str,
    name: &str,
    image: &str,
    labels: &[(&str, &str)],
) -> Result<Deployment> {
    let mut metadata = serde_json::json!({"name": name, "namespace": ns});
    if !labels.is_empty() {
        let labels: serde_json::Map<String, serde_json::Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        metadata["labels"] = labels.into();
    }
    let d: Deployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image}]}
            }
        }
    }))
    .context("Deployment JSON")?;
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &d)
        .await
        .with_context(|| format!("creating Deployment {ns}/{name}"))
}

/// Deletes the object `name` of `api`: `true`, or `false` if it did not exist.
pub async fn delete<K>(api: &Api<K>, name: &str) -> Result<bool>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(false),
        Err(e) => Err(anyhow::Error::new(e).context(format!("deleting {name}"))),
    }
}

/// What of a foreign Deployment nobody but its owner may change: all but
/// its status and the bookkeeping the API server updates with it
/// (`resourceVersion`, `managedFields`).
pub fn untouchable(d: &Deployment) -> serde_json::Value {
    let mut v = serde_json::to_value(d).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("status");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    v
}

/// The Events recorded in `ns` about Foo `name`: type, reason, note and how
/// many times it was recorded (an Event series counts each).
pub async fn events_for(
    client: &Client,
    ns: &str,
    name: &str,
) -> Result<Vec<(String, String, String, i32)>> {
    let list = Api::<Event>::namespaced(client.clone(), ns)
        .list(&Default::default())
        .await
        .with_context(|| format!("listing the Events of {ns}"))?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("Foo") && r.name.as_deref() == Some(name)
            })
        })
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
                e.series.map_or(1, |s| s.count),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Process {
        Process::start(
            "sh",
            Path::new("/bin/sh"),
            &["-c".to_string(), script.to_string()],
            &[],
        )
        .unwrap()
        .with_wait(Duration::from_millis(500))
    }

    #[tokio::test]
    async fn a_wait_for_a_line_says_whether_the_process_exited_or_the_time_ran_out() {
        let mut gone = shell("echo hello");
        let err = gone.expect_where("bye", |l| l == "bye").await.unwrap_err();
        let no_line = err.downcast_ref::<NoLine>().expect("a NoLine");
        assert!(no_line.exited, "{err}");
        assert_eq!(err.to_string(), "sh exited before printing \"bye\"");

        let mut quiet = shell("echo hello; sleep 5");
        let err = quiet.expect_where("bye", |l| l == "bye").await.unwrap_err();
        let no_line = err.downcast_ref::<NoLine>().expect("a NoLine");
        assert!(!no_line.exited, "{err}");
        assert_eq!(err.to_string(), "sh did not print \"bye\" within 500ms");
        assert_eq!(quiet.output, ["hello"]);
    }
}
