//! The machinery of `cargo xtask book outputs`: which files there are, one
//! control plane for all the scenarios, the transcript of a step run (its
//! output with the scenario's actions as `>>>` lines), the replicas of the
//! leader-election captures, and writing the files normalised.
//!
//! Every `>>>` and `$` command line the scenarios record is run as it is
//! shown, by bash, with the kubectl of the control plane's version first on
//! `PATH` and `KUBECONFIG` set ([`Kubectl::shell`]): what a reader pastes is
//! what the capture ran. After a `kubectl get` (or `kubectl events`) comes
//! kubectl's own output; what other commands print ("… created") is left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use kube::Client;
use testcluster::{ControlPlane, Options};
use tokio::sync::mpsc;

use testcluster::harness;

use crate::kubectl::Kubectl;

use super::recordings;
use super::scenarios::*;
use super::{book_dir, rel};
use crate::run_tool;

/// How long a scenario waits for a line it expects.
const WAIT: Duration = Duration::from_secs(90);

/// The captures of pages other than the steps' chapters.
const OTHER_OUTPUT_FILES: &[&str] = &[
    "example-step4-backoff.txt",
    "crd-missing.txt",
    "protected-group.txt",
    "watch-list.txt",
    "rbac-forbidden.txt",
    "rbac-warnings.txt",
    "metrics.txt",
    "leader-election.txt",
    "leader-lost.txt",
    "musl-binary.txt",
    "check-step-5-starter.txt",
    "check-step-5-reference.txt",
    "check-step-8-ordinary.txt",
];

/// Every capture: each step's (the step registry says which) and the others.
pub(super) fn output_files() -> Vec<&'static str> {
    testcluster::steps::STEPS
        .iter()
        .flat_map(|s| s.captures.iter().copied())
        .chain(OTHER_OUTPUT_FILES.iter().copied())
        .collect()
}

/// Runs every scenario (or those writing `only`) against one fresh control
/// plane and writes the transcripts.
///
/// With `check`, writes into target/outputs-fresh instead and then compares
/// each new capture with the committed one ([`super::fresh`]).
pub(super) async fn outputs(only: &[String], check: bool) -> Result<()> {
    for name in only {
        ensure!(
            output_files().contains(&name.as_str()),
            "{name} is not an output file; the files are: {}",
            output_files().join(", ")
        );
    }
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let started = std::time::Instant::now();
    let root = crate::repo_root();
    let build = crate::cargo(&["build", "--bins", "--examples"]);
    println!("==> {build}");
    run_tool(&mut build.std())?;
    let committed = book_dir().join("src/outputs");
    let out = if check {
        let fresh = root.join("target/outputs-fresh");
        if fresh.exists() {
            std::fs::remove_dir_all(&fresh)?;
        }
        fresh
    } else {
        committed.clone()
    };
    std::fs::create_dir_all(&out)?;
    // Needs no cluster; reuses the build tests/image.rs made, if current.
    if wanted("musl-binary.txt") {
        let lines = timed("musl-binary.txt", musl_binary()).await?;
        write_file(&out, "musl-binary.txt", &lines)?;
    }
    if output_files()
        .iter()
        .all(|f| *f == "musl-binary.txt" || !wanted(f))
    {
        println!("Wrote {} in {:.0?}", rel(&out), started.elapsed());
        return if check {
            compare(&committed, &out)
        } else {
            Ok(())
        };
    }
    println!("==> Starting a local control plane");
    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    let kubectl = Kubectl::ensure(Some(cp.kubeconfig_path()))
        .await?
        .with_cache_dir(&cp.data_dir().join("kubectl-cache"));
    let env = Env {
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        server: cp.server_url().to_string(),
        client: client.clone(),
        bin: crate::debug_dir(),
        kubectl,
    };

    // The exercise solutions that need no cluster.
    if wanted("example-step4-backoff.txt") {
        let backoff = Command::new(crate::debug_dir().join("examples/step4_backoff_table"))
            .output()
            .context("running examples/step4_backoff_table")?;
        ensure!(backoff.status.success(), "step4_backoff_table failed");
        let mut lines = vec!["$ cargo run --example step4_backoff_table".to_string()];
        lines.extend(
            String::from_utf8_lossy(&backoff.stdout)
                .lines()
                .map(str::to_string),
        );
        write(&out, "example-step4-backoff.txt", &env, lines)?;
    }

    // Before the CRD exists: the message every step prints, and what the API
    // server says to the CRD without its protected-group annotation.
    if wanted("crd-missing.txt") {
        write(&out, "crd-missing.txt", &env, crd_missing(&env).await?)?;
    }
    if wanted("protected-group.txt") {
        let lines = protected_group(&env).await?;
        write(&out, "protected-group.txt", &env, lines)?;
    }
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;
    if wanted("watch-list.txt") {
        write(&out, "watch-list.txt", &env, watch_list(&env, &cp).await?)?;
    }
    // Each step's chapter: its folder's capture scenario (capture.rs), then
    // the flow its run logged, if its chapter replays one.
    for step in testcluster::steps::STEPS {
        if !step.captures.iter().any(|c| wanted(c)) {
            continue;
        }
        let scenario = STEP_CAPTURES
            .iter()
            .find(|(number, _)| *number == step.number)
            .map(|(_, scenario)| scenario)
            .with_context(|| {
                format!(
                    "step {} shows {} but steps/step-{}/ has no capture.rs",
                    step.number,
                    step.captures.join(", "),
                    step.number
                )
            })?;
        let captured = timed(step.captures[0], scenario(&env)).await?;
        let written: Vec<&str> = captured.iter().map(|(name, _)| *name).collect();
        ensure!(
            written == step.captures,
            "steps/step-{}/capture.rs wrote {written:?}, but its step.toml says its captures are {:?}",
            step.number,
            step.captures
        );
        for (name, lines) in captured {
            write(&out, name, &env, lines)?;
        }
        if let Some(name) = step.flow {
            recordings::record(&out, name, &step_namespace(step.binary))?;
        }
    }
    if wanted("rbac-forbidden.txt") {
        let lines = rbac_forbidden(&env).await?;
        write(&out, "rbac-forbidden.txt", &env, lines)?;
    }

    // The checker: a starter as handed out, the project's own step, and the
    // ordinary kube-rs controller against step 8's check.
    if wanted("check-step-5-starter.txt") {
        let lines = timed("check-step-5-starter.txt", xtask_check(&env, "step-5", 1)).await?;
        write(&out, "check-step-5-starter.txt", &env, lines)?;
    }
    if wanted("check-step-5-reference.txt") {
        let lines = timed(
            "check-step-5-reference.txt",
            xtask_check(&env, "step-5 --reference", 0),
        )
        .await?;
        write(&out, "check-step-5-reference.txt", &env, lines)?;
    }
    if wanted("check-step-8-ordinary.txt") {
        let args = "--program target/debug/examples/step8_ordinary step-8";
        let lines = timed("check-step-8-ordinary.txt", xtask_check(&env, args, 1)).await?;
        write(&out, "check-step-8-ordinary.txt", &env, lines)?;
    }

    // Running in a cluster.
    if wanted("rbac-warnings.txt") {
        let lines = timed("rbac-warnings.txt", rbac_warnings(&env)).await?;
        write(&out, "rbac-warnings.txt", &env, lines)?;
    }
    if wanted("metrics.txt") {
        let lines = timed("metrics.txt", metrics(&env)).await?;
        write(&out, "metrics.txt", &env, lines)?;
    }
    if wanted("leader-election.txt") {
        let lines = timed("leader-election.txt", leader_election(&env)).await?;
        write(&out, "leader-election.txt", &env, lines)?;
    }
    if wanted("leader-lost.txt") {
        let lines = timed("leader-lost.txt", leader_lost(&env)).await?;
        write(&out, "leader-lost.txt", &env, lines)?;
    }
    println!("Wrote {} in {:.0?}", rel(&out), started.elapsed());
    drop(cp);
    if check {
        compare(&committed, &out)
    } else {
        Ok(())
    }
}

/// Compares each capture in `fresh` with the committed one of that name:
/// the transcripts as fresh.rs says, the flow recordings by shape
/// (recordings.rs).
fn compare(committed: &Path, fresh: &Path) -> Result<()> {
    let files = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let entry = entry.ok()?;
                entry
                    .path()
                    .is_file()
                    .then(|| entry.file_name().to_string_lossy().into_owned())
            })
            .collect();
        names.sort();
        names
    };
    let captures = files(fresh);
    let flows = files(&fresh.join(recordings::DIR));
    let mut names: Vec<String> = flows
        .iter()
        .map(|file| format!("{}/{file}", recordings::DIR))
        .collect();
    names.extend(captures.iter().cloned());
    // What is stale, and the files `outputs` writes again to fix it.
    let mut stale = Vec::new();
    let mut rerun = Vec::new();
    for name in &names {
        let read = |dir: &Path| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).with_context(|| format!("reading {}", rel(&path)))
        };
        let (was, now) = (read(committed)?, read(fresh)?);
        let (report, capture) = match name.strip_prefix(&format!("{}/", recordings::DIR)) {
            Some(file) => {
                let recording = file.trim_end_matches(".jsonl");
                // A recording is written by its step's first capture.
                let step = testcluster::steps::STEPS
                    .iter()
                    .find(|s| s.flow == Some(recording));
                (
                    recordings::differences(recording, &was, &now)?,
                    step.and_then(|s| s.captures.first()).map(|c| c.to_string()),
                )
            }
            None => (
                super::fresh::differences(name, &was, &now),
                Some(name.clone()),
            ),
        };
        match report {
            None => println!("    {name}: current"),
            Some(report) => {
                println!("    {name}: STALE\n{report}");
                stale.push(name.clone());
                rerun.extend(capture.filter(|c| !rerun.contains(c)));
            }
        }
    }
    ensure!(
        stale.is_empty(),
        "{} of {} captures no longer say what their scenario prints: {}. \
         Look at the differences above; if the new runs are right, write them with \
         `cargo xtask book outputs {}` (the new runs are in {})",
        stale.len(),
        names.len(),
        stale.join(", "),
        rerun.join(" "),
        rel(fresh)
    );
    println!(
        "All {} captures and {} flow recordings are current.",
        captures.len(),
        flows.len()
    );
    Ok(())
}

/// Awaits one capture and prints how long it took.
async fn timed<T>(name: &str, capture: impl Future<Output = Result<T>>) -> Result<T> {
    let started = std::time::Instant::now();
    let result = capture.await.with_context(|| format!("capturing {name}"));
    println!("    {name}: captured in {:.1?}", started.elapsed());
    result
}

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
fn write_file(dir: &Path, name: &str, lines: &[String]) -> Result<()> {
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
fn strip_timestamp(line: &str) -> String {
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
        if testcluster::steps::parse(bin).is_some_and(|step| step.flow.is_some()) {
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
    Ok(crate::repo_root().join(SA_KUBECONFIG))
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
    Ok((crate::repo_root().join(SA_KUBECONFIG), shown))
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

/// Replicas of step 8 with `--leader-elect`, run at once as the
/// ServiceAccount of `manifests/rbac.yaml`; their output merged into one
/// transcript, each line prefixed with the replica's name (`a | …`).
pub(super) struct Replicas {
    pub(super) tx: mpsc::UnboundedSender<(String, Option<String>)>,
    pub(super) rx: mpsc::UnboundedReceiver<(String, Option<String>)>,
    /// Each running replica and how many of its two output streams are open.
    pub(super) running: BTreeMap<String, (tokio::process::Child, u8)>,
    /// Every line received: replica, line, when.
    pub(super) seen: Vec<(String, String, tokio::time::Instant)>,
    /// `expect` looks at `seen` from here on (moved to the end by `note`).
    pub(super) cursor: BTreeMap<String, usize>,
    pub(super) transcript: Vec<String>,
}

impl Replicas {
    pub(super) fn new(header: Vec<String>) -> Replicas {
        for line in &header {
            println!("==> {line}");
        }
        let (tx, rx) = mpsc::unbounded_channel();
        Replicas {
            tx,
            rx,
            running: BTreeMap::new(),
            seen: Vec::new(),
            cursor: BTreeMap::new(),
            transcript: header,
        }
    }

    /// Starts replica `name` as a Pod would run it: POD_NAME and POD_NAMESPACE
    /// set, `--leader-elect`, the endpoints on `port`; plus the short lease.
    pub(super) fn start(
        &mut self,
        env: &Env,
        kubeconfig: &Path,
        name: &str,
        port: u16,
    ) -> Result<()> {
        port_free(port)?;
        let mut command = harness::command(&env.bin.join("step-8"));
        command
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", LEADER_NS, "--leader-elect"])
            .args(LEASE_FLAGS)
            .args(["--http-address", &format!("127.0.0.1:{port}")])
            .env("POD_NAMESPACE", CONTROLLER_NS)
            .env("POD_NAME", name)
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE");
        let mut child = command
            .spawn()
            .context("starting step-8 (run `cargo build --bins`)")?;
        let replica = name.to_string();
        // A line, or the end of one of the two streams (`None`).
        harness::forward_lines(&mut child, &self.tx, move |line| {
            Some((replica.clone(), line))
        })?;
        self.running.insert(name.to_string(), (child, 2));
        self.cursor.insert(name.to_string(), self.seen.len());
        Ok(())
    }

    /// Records a line (or the end of a stream) from replica `name`.
    pub(super) fn take(&mut self, name: String, line: Option<String>) {
        match line {
            Some(line) => {
                let shown = format!("{name} | {}", strip_timestamp(&line));
                println!("[replicas] {shown}");
                self.transcript.push(shown);
                self.seen.push((name, line, tokio::time::Instant::now()));
            }
            None => {
                if let Some((_, open)) = self.running.get_mut(&name) {
                    *open = open.saturating_sub(1);
                }
            }
        }
    }

    /// Receives one line or end of stream, or `false` at `deadline`.
    pub(super) async fn receive(&mut self, deadline: tokio::time::Instant) -> bool {
        match tokio::time::timeout_at(deadline, self.rx.recv()).await {
            Ok(Some((name, line))) => {
                self.take(name, line);
                true
            }
            _ => false,
        }
    }

    /// Waits for a line of replica `name` containing every one of `parts`,
    /// printed since the last `note`; returns when it arrived.
    pub(super) async fn expect(
        &mut self,
        name: &str,
        parts: &[&str],
    ) -> Result<tokio::time::Instant> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let from = self.cursor.get(name).copied().unwrap_or(0);
            let found = self.seen[from..]
                .iter()
                .position(|(who, line, _)| who == name && parts.iter().all(|p| line.contains(p)));
            if let Some(at) = found {
                self.cursor.insert(name.to_string(), from + at + 1);
                return Ok(self.seen[from + at].2);
            }
            ensure!(
                self.running.get(name).is_some_and(|(_, open)| *open > 0),
                "replica {name} exited before printing {parts:?}"
            );
            ensure!(
                self.receive(deadline).await,
                "replica {name} did not print {parts:?} within {WAIT:?}"
            );
        }
    }

    /// Takes whatever the replicas print during `period`.
    pub(super) async fn drain_for(&mut self, period: Duration) {
        let deadline = tokio::time::Instant::now() + period;
        while self.receive(deadline).await {}
    }

    /// Records an action (`>>> …`) after letting the replicas finish printing
    /// what the previous one caused; later `expect`s look only at what follows.
    pub(super) async fn note(&mut self, action: impl Into<String>) {
        self.drain_for(Duration::from_millis(500)).await;
        let line = format!(">>> {}", action.into());
        println!("[replicas] {line}");
        self.transcript.push(line);
        for cursor in self.cursor.values_mut() {
            *cursor = self.seen.len();
        }
    }

    /// Records an observation (`(…)`) at once, in order with the lines received so far.
    pub(super) fn mark(&mut self, text: impl Into<String>) {
        let line = format!("({})", text.into());
        println!("[replicas] {line}");
        self.transcript.push(line);
    }

    /// Records several transcript lines (a table) after letting output settle.
    pub(super) async fn lines(&mut self, lines: Vec<String>) {
        self.drain_for(Duration::from_millis(500)).await;
        for line in lines {
            println!("[replicas] {line}");
            self.transcript.push(line);
        }
    }

    /// Sends `signal` to replica `name`, by its PID.
    pub(super) fn signal(&self, name: &str, signal: libc::c_int) -> Result<()> {
        let (child, _) = self.running.get(name).context("no such replica")?;
        let pid = child.id().context("the replica already exited")?;
        // SAFETY: kill(2) on the PID of a child we started and have not reaped, with a valid signal.
        let sent = unsafe { libc::kill(pid as libc::pid_t, signal) };
        ensure!(
            sent == 0,
            "kill({pid}, {signal}): {}",
            std::io::Error::last_os_error()
        );
        Ok(())
    }

    /// Waits until replica `name` has closed its output and exited; its exit code.
    pub(super) async fn wait(&mut self, name: &str) -> Result<i32> {
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.running.get(name).is_some_and(|(_, open)| *open > 0) {
            ensure!(
                self.receive(deadline).await,
                "replica {name} did not exit within {WAIT:?}"
            );
        }
        let (mut child, _) = self.running.remove(name).context("no such replica")?;
        let status = tokio::time::timeout_at(deadline, child.wait())
            .await
            .with_context(|| format!("replica {name} did not exit"))??;
        Ok(status.code().unwrap_or(-1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capture_has_its_scenario() {
        let source = include_str!("capture.rs");
        for name in OTHER_OUTPUT_FILES {
            assert!(
                source.contains(&format!("wanted(\"{name}\")")),
                "{name} is in OTHER_OUTPUT_FILES but `outputs` never writes it"
            );
        }
        for step in testcluster::steps::STEPS {
            assert!(
                STEP_CAPTURES.iter().any(|(n, _)| *n == step.number),
                "step {} shows {:?} but steps/step-{}/ has no capture.rs",
                step.number,
                step.captures,
                step.number
            );
        }
    }
}
