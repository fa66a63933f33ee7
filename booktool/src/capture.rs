//! The machinery the capture scenarios share: what they run against
//! ([`Env`]), the transcript of a step run (its output with the scenario's
//! actions as `>>>` lines), the replicas of the leader-election captures,
//! and writing the files normalised. `outputs.rs` runs the scenarios.
//!
//! Every `>>>` and `$` command line the scenarios record is run as it is
//! shown, by bash, with the kubectl of the control plane's version first on
//! `PATH` and `KUBECONFIG` set ([`Kubectl::shell`]): what a reader pastes is
//! what the capture ran. After a `kubectl get` (or `kubectl events`) comes
//! kubectl's own output; what other commands print ("… created") is left out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use kube::Client;

use course::harness;

use course::kubectl::Kubectl;

use super::recordings;
use course::workspace::rel;

/// How long a scenario waits for a line it expects.
pub(super) const WAIT: Duration = Duration::from_secs(90);

pub(super) struct Env {
    pub(super) kubeconfig: PathBuf,
    pub(super) server: String,
    pub(super) client: Client,
    pub(super) bin: PathBuf,
    /// Runs the transcripts' command lines.
    pub(super) kubectl: Kubectl,
}

impl Env {
    /// Runs a command line as a reader would ([`Kubectl::shell`]); fails,
    /// with what it printed, unless it exits with `status`.
    pub(super) async fn shell_expecting(&self, line: &str, status: i32) -> Result<Vec<String>> {
        println!("[shell] {line}");
        let out = self.kubectl.shell(line).await?;
        ensure!(
            out.code == status,
            "`{line}` exited with status {} (expected {status}):\n{}",
            out.code,
            out.lines.join("\n")
        );
        for l in &out.lines {
            println!("[shell]   {l}");
        }
        Ok(out.lines)
    }

    /// [`Env::shell_expecting`] a successful exit.
    pub(super) async fn shell(&self, line: &str) -> Result<Vec<String>> {
        self.shell_expecting(line, 0).await
    }

    /// Runs each command line before a step starts; the `>>>` lines that go
    /// above its `$ cargo run` line.
    pub(super) async fn before(&self, lines: &[String]) -> Result<Vec<String>> {
        let mut noted = Vec::new();
        for line in lines {
            self.shell(line).await?;
            noted.push(format!(">>> {line}"));
        }
        Ok(noted)
    }
}

/// Writes a transcript with what varies between runs normalised: log
/// timestamps are dropped and the API server's random port is replaced.
pub(super) fn write(dir: &Path, name: &str, env: &Env, lines: Vec<String>) -> Result<()> {
    let port = env
        .server
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/');
    let lines: Vec<String> = lines
        .iter()
        .map(|line| strip_timestamp(line).replace(&format!("127.0.0.1:{port}"), "127.0.0.1:PORT"))
        .collect();
    write_file(dir, name, &lines)
}

/// Writes `lines` to `dir/name`, trailing spaces trimmed.
pub(super) fn write_file(dir: &Path, name: &str, lines: &[String]) -> Result<()> {
    let mut text = String::new();
    for line in lines {
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    println!("    wrote {}", rel(&path));
    Ok(())
}

/// `2026-11-30T09:51:00.123456Z  INFO x: y` → `INFO x: y`.
pub(super) fn strip_timestamp(line: &str) -> String {
    let bytes = line.as_bytes();
    let looks_like_time = bytes.len() > 20
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[10] == b'T';
    match line.find("Z ") {
        Some(end) if looks_like_time && end < 40 => line[end + 1..].trim_start().to_string(),
        _ => line.to_string(),
    }
}

/// A step binary running as a child process ([`harness::Process`]); stdout
/// and stderr merged line by line, with the scenario's own actions
/// interleaved as `>>>` lines.
pub(super) struct Run {
    process: harness::Process,
    /// How many lines of `process.output` are in `transcript` already.
    copied: usize,
    pub(super) transcript: Vec<String>,
}

impl Run {
    pub(super) fn start(env: &Env, bin: &str, namespace: &str, extra: &[&str]) -> Result<Run> {
        Self::start_with(env, &env.kubeconfig, bin, namespace, extra)
    }

    pub(super) fn start_with(
        env: &Env,
        kubeconfig: &Path,
        bin: &str,
        namespace: &str,
        extra: &[&str],
    ) -> Result<Run> {
        let mut command = harness::command(&env.bin.join(bin));
        command
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", namespace])
            .args(extra)
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE");
        if course::steps::parse(bin).is_some_and(|step| step.flow.is_some()) {
            // The JSON log of the run, whose flow the chapter replays (recordings.rs).
            let log = recordings::log_path(namespace);
            std::fs::create_dir_all(log.parent().unwrap_or(Path::new(".")))?;
            std::fs::write(&log, "").with_context(|| format!("emptying {}", log.display()))?;
            command.env(sample_controller::telemetry::JSON_LOG, log);
        }
        let process = harness::Process::spawn(bin, command)
            .with_context(|| format!("starting {bin} (run `cargo build --bins`)"))?
            .with_wait(WAIT);
        let mut shown = vec![format!(
            "$ cargo run --bin {bin} -- --namespace {namespace}"
        )];
        if !extra.is_empty() {
            shown[0].push(' ');
            shown[0].push_str(&extra.join(" "));
        }
        println!("==> {}", shown[0]);
        Ok(Run {
            process,
            copied: 0,
            transcript: shown,
        })
    }

    /// Appends to the transcript what the step printed since the last call.
    fn copy_output(&mut self) {
        let new = &self.process.output[self.copied..];
        self.transcript.extend(new.iter().cloned());
        self.copied = self.process.output.len();
    }

    /// Records a command line in the transcript ([`Run::note`]) and runs it
    /// ([`Env::shell`]); what it prints is left out.
    pub(super) async fn run(&mut self, env: &Env, line: impl Into<String>) -> Result<()> {
        let line = line.into();
        self.note(line.as_str()).await;
        env.shell(&line).await?;
        Ok(())
    }

    /// Records a command line, runs it, expects exit status `status`, and
    /// appends what it printed (a `kubectl get`'s table, say).
    pub(super) async fn show_expecting(
        &mut self,
        env: &Env,
        line: impl Into<String>,
        status: i32,
    ) -> Result<()> {
        let line = line.into();
        self.note(line.as_str()).await;
        let lines = env.shell_expecting(&line, status).await?;
        self.transcript.extend(lines);
        Ok(())
    }

    /// [`Run::show_expecting`] a successful exit.
    pub(super) async fn show(&mut self, env: &Env, line: impl Into<String>) -> Result<()> {
        self.show_expecting(env, line, 0).await
    }

    /// Records an action of the scenario in the transcript, after letting
    /// the step finish printing what the previous action caused.
    pub(super) async fn note(&mut self, action: impl Into<String>) {
        self.drain_for(Duration::from_millis(500)).await;
        let line = format!(">>> {}", action.into());
        println!("[{}] {line}", self.process.name());
        self.transcript.push(line);
    }

    /// Waits for a line containing every one of `parts`.
    pub(super) async fn expect(&mut self, parts: &[&str]) -> Result<String> {
        let line = self.process.expect(parts).await;
        self.copy_output();
        line
    }

    /// Takes whatever the step prints during `period`.
    pub(super) async fn drain_for(&mut self, period: Duration) {
        self.process.drain_for(period).await;
        self.copy_output();
    }

    /// Whether the step has not exited yet.
    pub(super) fn is_running(&mut self) -> bool {
        self.process.is_running()
    }

    /// Waits for the step to exit by itself.
    pub(super) async fn wait(mut self) -> Result<Vec<String>> {
        let status = self.process.wait().await;
        self.copy_output();
        let status = status.context("the step did not exit")?;
        self.transcript
            .push(format!("(exit status {})", status.code().unwrap_or(-1)));
        Ok(self.transcript)
    }

    /// Sends SIGTERM, as Ctrl-C would send SIGINT, and waits for the exit.
    pub(super) async fn terminate(mut self) -> Result<Vec<String>> {
        self.process.pid().context("the step already exited")?;
        self.note("Ctrl-C   # the capture sends SIGTERM, which stops a step the same way")
            .await;
        let status = self.process.terminate().await;
        self.copy_output();
        let status = status.context("the step did not exit")?;
        self.transcript
            .push(format!("(exit status {})", status.code().unwrap_or(-1)));
        Ok(self.transcript)
    }
}

/// Where the transcripts write a kubeconfig for a ServiceAccount
/// ([`sa_kubeconfig_commands`]), relative to the repository root: under the
/// gitignored `target/`.
pub(super) const SA_KUBECONFIG: &str = "target/sa.kubeconfig";

/// The command lines that write [`SA_KUBECONFIG`]: the current cluster, as a
/// user with a one-hour token of ServiceAccount `ns`/`name` (which must exist).
pub(super) fn sa_kubeconfig_commands(ns: &str, name: &str) -> Vec<String> {
    let user = format!("{ns}-{name}");
    vec![
        format!("kubectl config view --minify --flatten > {SA_KUBECONFIG}"),
        format!(
            r#"kubectl --kubeconfig {SA_KUBECONFIG} config set-credentials {user} --token "$(kubectl -n {ns} create token {name})""#
        ),
        format!("kubectl --kubeconfig {SA_KUBECONFIG} config set-context --current --user {user}"),
    ]
}

/// Runs [`sa_kubeconfig_commands`] and returns the kubeconfig's path.
pub(super) async fn sa_kubeconfig(env: &Env, ns: &str, name: &str) -> Result<PathBuf> {
    for line in sa_kubeconfig_commands(ns, name) {
        env.shell(&line).await?;
    }
    Ok(course::workspace::repo_root().join(SA_KUBECONFIG))
}

/// The command lines of the RBAC transcripts' setup: a namespace and a
/// ServiceAccount `controller` in it that no RoleBinding names, and
/// [`sa_kubeconfig_commands`] for it.
pub(super) fn no_rbac_commands(ns: &str) -> Vec<String> {
    let mut lines = vec![
        create_namespace_command(ns),
        format!("kubectl -n {ns} create serviceaccount controller   # no RoleBinding names it"),
    ];
    lines.extend(sa_kubeconfig_commands(ns, "controller"));
    lines
}

/// Runs [`no_rbac_commands`]; the kubeconfig's path and the `$` lines.
pub(super) async fn no_rbac_setup(env: &Env, ns: &str) -> Result<(PathBuf, Vec<String>)> {
    let mut shown = Vec::new();
    for line in no_rbac_commands(ns) {
        env.shell(&line).await?;
        shown.push(format!("$ {line}"));
    }
    Ok((course::workspace::repo_root().join(SA_KUBECONFIG), shown))
}

/// The namespace of step `binary`'s scenario (`book-step5`); the flow of its
/// run is recorded under that name ([`recordings::log_path`]).
pub(super) fn step_namespace(binary: &str) -> String {
    format!("book-{}", binary.replace('-', ""))
}

/// `kubectl create namespace NS`: every scenario has a namespace of its own.
pub(super) fn create_namespace_command(ns: &str) -> String {
    format!("kubectl create namespace {ns}")
}

/// The `kubectl` command that creates a Foo.
pub(super) fn create_foo_command(ns: &str, name: &str, deployment: &str, replicas: i32) -> String {
    format!(
        r#"kubectl -n {ns} create -f - <<<'{{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": {{"name": "{name}"}}, "spec": {{"deploymentName": "{deployment}", "replicas": {replicas}}}}}'"#
    )
}

/// The `kubectl` command that creates a Deployment nobody owns, of `nginx:latest`.
pub(super) fn foreign_deployment_command(ns: &str, name: &str) -> String {
    format!("kubectl -n {ns} create deployment {name} --image nginx:latest   # no owner")
}

/// Creates a Foo with `kubectl create` ([`create_foo_command`]).
pub(super) async fn create_foo(
    run: &mut Run,
    env: &Env,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> Result<()> {
    run.run(env, create_foo_command(ns, name, deployment, replicas))
        .await
}

/// Creates a Deployment nobody owns ([`foreign_deployment_command`]).
pub(super) async fn create_foreign_deployment(
    run: &mut Run,
    env: &Env,
    ns: &str,
    name: &str,
) -> Result<()> {
    run.run(env, foreign_deployment_command(ns, name)).await
}

/// `kubectl patch KIND NAME` to `replicas: n`.
pub(super) async fn patch_replicas(
    run: &mut Run,
    env: &Env,
    ns: &str,
    kind: &str,
    name: &str,
    n: i32,
) -> Result<()> {
    run.run(
        env,
        format!(
            "kubectl -n {ns} patch {kind} {name} --type merge -p '{{\"spec\":{{\"replicas\":{n}}}}}'"
        ),
    )
    .await
}

/// `kubectl delete KIND NAME`.
pub(super) async fn delete(
    run: &mut Run,
    env: &Env,
    ns: &str,
    kind: &str,
    name: &str,
) -> Result<()> {
    run.run(env, format!("kubectl -n {ns} delete {kind} {name}"))
        .await
}

/// Polls `check` every 200 ms until it returns `Some` ([`harness::eventually`]
/// with the scenarios' [`WAIT`]).
pub(super) async fn eventually<T, F, Fut>(what: &str, check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::eventually(what, WAIT, check).await
}

/// `kubectl get foos,deployments`, and what kubectl printed.
pub(super) async fn kubectl_get(run: &mut Run, env: &Env, ns: &str) -> Result<()> {
    run.show(env, format!("kubectl -n {ns} get foos,deployments"))
        .await
}
