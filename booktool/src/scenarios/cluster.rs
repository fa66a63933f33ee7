//! The captures of "Running in a cluster": missing RBAC, `/metrics`, two
//! replicas handing the leader Lease over, and the static musl binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use course::harness;
use kube::api::Api;
use sample_controller::Foo;
use tokio::sync::mpsc;

use crate::capture::*;

/// The loopback ports of `--http-address` in the transcripts (the chapter
/// quotes them); each is checked free before use.
const METRICS_PORT: u16 = 18090;
const PORT_A: u16 = 18091;
const PORT_B: u16 = 18092;

/// The lease the leader-election transcripts use: shorter than the defaults
/// (15 s and 10 s) so that a takeover after a crash is quick to show.
pub(crate) const LEASE_FLAGS: [&str; 2] = [
    "--leader-elect-lease-duration=10s",
    "--leader-elect-renew-deadline=7s",
];

/// Where `manifests/rbac.yaml` puts the ServiceAccount and the Lease.
pub(crate) const CONTROLLER_NS: &str = "sample-controller";

/// The namespace of the leader-election transcripts' Foo.
pub(crate) const LEADER_NS: &str = "book-leader";

/// Fails, naming the port, if something listens on `127.0.0.1:port`.
pub(crate) fn port_free(port: u16) -> Result<()> {
    std::net::TcpListener::bind(("127.0.0.1", port))
        .map(drop)
        .with_context(|| {
            format!(
                "127.0.0.1:{port} is in use; the book's transcripts serve step 8's endpoints there"
            )
        })
}

/// What `curl` on a replica's endpoints shows, as transcript lines: the
/// command, `/readyz`'s status code and the two metrics that tell a leader
/// from a standby.
async fn curl_lines(port: u16) -> Result<Vec<String>> {
    let (ready, _) = testcluster::http_get(port, "/readyz").await?;
    let (_, metrics) = testcluster::http_get(port, "/metrics").await?;
    let mut lines = vec![
        format!(
            ">>> curl -s -o /dev/null -w '%{{http_code}}\\n' 127.0.0.1:{port}/readyz; curl -s 127.0.0.1:{port}/metrics | grep -E '^sample_controller_(leader|reconciles_total) '"
        ),
        ready.to_string(),
    ];
    lines.extend(
        metrics
            .lines()
            .filter(|l| {
                [
                    "sample_controller_leader ",
                    "sample_controller_reconciles_total ",
                ]
                .iter()
                .any(|m| l.starts_with(m))
            })
            .map(str::to_string),
    );
    Ok(lines)
}

/// Step 8 as a ServiceAccount that RBAC grants nothing: it warns about every
/// missing permission, then runs, and each watcher logs its 403 and retries.
pub(crate) async fn rbac_warnings(env: &Env) -> Result<Vec<String>> {
    let ns = "book-rbac-warnings";
    let (path, setup) = no_rbac_setup(env, ns).await?;
    let mut run = Run::start_with(env, &path, "step-8", ns, &[])?;
    run.transcript[0] =
        format!("$ cargo run --bin step-8 -- --kubeconfig {SA_KUBECONFIG} --namespace {ns}");
    run.transcript.splice(0..0, setup);
    run.expect(&["Waiting for informer caches to sync"]).await?;
    // The first 403 of each of the two watches, in whichever order they come
    // (a streaming list starts with a watch, so the refused verb may be either).
    let mut first = BTreeSet::new();
    while first.len() < 2 {
        let line = run.expect(&["RBAC forbids it"]).await?;
        for resource in ["foos", "deployments"] {
            if [" list ", " watch "]
                .iter()
                .any(|verb| line.contains(&format!("cannot{verb}{resource}")))
            {
                first.insert(resource);
            }
        }
    }
    run.drain_for(Duration::from_millis(300)).await;
    run.transcript.push(
        "   (… the watchers retry with backoff and log the same 403s until RBAC allows them)"
            .to_string(),
    );
    ensure!(
        run.is_running(),
        "step 8 exited although only RBAC was missing"
    );
    run.terminate().await
}

/// Step 8's `/metrics` after it synced one Foo and kept failing on another.
pub(crate) async fn metrics(env: &Env) -> Result<Vec<String>> {
    let ns = "book-metrics";
    let mut lines = Vec::new();
    let before = [
        create_namespace_command(ns),
        foreign_deployment_command(ns, "occupied"),
    ];
    for line in before {
        env.shell(&line).await?;
        lines.push(format!("$ {line}"));
    }
    port_free(METRICS_PORT)?;
    let address = format!("127.0.0.1:{METRICS_PORT}");
    let mut run = Run::start(env, "step-8", ns, &["--http-address", &address])?;
    lines.push(format!(
        "$ cargo run --bin step-8 -- --namespace {ns} --http-address {address} &"
    ));
    run.expect(&["Starting workers"]).await?;
    let foos = [
        format!("kubectl -n {ns} apply -f manifests/example-foo.yaml"),
        create_foo_command(ns, "blocked", "occupied", 1),
    ];
    let mut blocked_at = tokio::time::Instant::now();
    for line in foos {
        env.shell(&line).await?;
        blocked_at = tokio::time::Instant::now();
        lines.push(format!("$ {line}"));
    }
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    eventually("1 available replica in example-foo's status", || {
        let foos = foos.clone();
        async move {
            (foos
                .get("example-foo")
                .await
                .ok()?
                .status?
                .available_replicas
                == 1)
                .then_some(())
        }
    })
    .await?;
    // Let blocked's retries pile up for 10 s.
    run.drain_for(
        (blocked_at + Duration::from_secs(10))
            .saturating_duration_since(tokio::time::Instant::now()),
    )
    .await;
    let (code, body) = testcluster::http_get(METRICS_PORT, "/metrics").await?;
    ensure!(code == 200, "/metrics answered {code}");
    lines.push("$ sleep 10".to_string());
    lines.push(format!("$ curl -s {address}/metrics"));
    lines.extend(body.lines().map(str::to_string));
    run.terminate().await?;
    Ok(lines)
}

/// The command lines of the leader-election transcripts' setup.
fn leader_setup_commands() -> [String; 2] {
    [
        "kubectl apply -f manifests/rbac.yaml".to_string(),
        format!(
            "kubectl create namespace {LEADER_NS} && kubectl -n {LEADER_NS} apply -f manifests/example-foo.yaml"
        ),
    ]
}

/// The leader-election transcripts' setup (the namespace once: the second
/// transcript reuses it): [`leader_setup_commands`], and a kubeconfig with a
/// token of the manifests' ServiceAccount ([`sa_kubeconfig_commands`]).
async fn leader_setup(env: &Env) -> Result<PathBuf> {
    use k8s_openapi::api::core::v1::Namespace;
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    if namespaces.get_opt(LEADER_NS).await?.is_none() {
        for line in leader_setup_commands() {
            env.shell(&line).await?;
        }
    }
    sa_kubeconfig(env, CONTROLLER_NS, "sample-controller").await
}

/// The command line that starts replica `name` in the transcripts.
fn replica_command(name: &str, port: u16) -> String {
    format!(
        "$ POD_NAME={name} cargo run --bin step-8 -- --kubeconfig {SA_KUBECONFIG} --namespace {LEADER_NS} --leader-elect {} --http-address 127.0.0.1:{port} &",
        LEASE_FLAGS.join(" ")
    )
}

/// `kubectl get lease` in the transcripts (holder, duration, transitions),
/// and what kubectl printed.
async fn lease_table(env: &Env) -> Result<Vec<String>> {
    let line = format!(
        "kubectl -n {CONTROLLER_NS} get lease sample-controller -o 'custom-columns=HOLDER:.spec.holderIdentity,DURATION:.spec.leaseDurationSeconds,TRANSITIONS:.spec.leaseTransitions'"
    );
    let mut lines = vec![format!(">>> {line}")];
    lines.extend(env.shell(&line).await?);
    Ok(lines)
}

/// Waits until `/readyz` on `port` answers 200.
async fn until_ready(port: u16) -> Result<()> {
    eventually(&format!("/readyz 200 on port {port}"), || async move {
        (testcluster::http_get(port, "/readyz").await.ok()?.0 == 200).then_some(())
    })
    .await
}

/// Two replicas: `a` leads, `b` stands by; `a` gets SIGTERM, releases the
/// Lease, and `b` takes it at its next look (every retry period, 2 s).
pub(crate) async fn leader_election(env: &Env) -> Result<Vec<String>> {
    let kubeconfig = leader_setup(env).await?;
    let mut replicas = Replicas::new(leader_header());
    replicas.start(env, &kubeconfig, "a", PORT_A)?;
    replicas.expect("a", &["Starting workers"]).await?;
    replicas.start(env, &kubeconfig, "b", PORT_B)?;
    replicas.expect("b", &["waiting to become leader"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), LEADER_NS);
    let available = |want: i32| {
        let foos = foos.clone();
        async move {
            (foos
                .get("example-foo")
                .await
                .ok()?
                .status?
                .available_replicas
                == want)
                .then_some(())
        }
    };
    eventually("1 available replica in example-foo's status", || {
        available(1)
    })
    .await?;
    // b reads the Lease every 2 s: let it see a as the holder before a stops.
    replicas.drain_for(Duration::from_secs(3)).await;
    let table = lease_table(env).await?;
    replicas.lines(table).await;
    let (curl_a, curl_b) = (curl_lines(PORT_A).await?, curl_lines(PORT_B).await?);
    replicas.lines(curl_a).await;
    replicas.lines(curl_b).await;

    let handover = hand_over(env, &mut replicas).await?;

    // b reconciles now.
    let scale = format!(
        "kubectl -n {LEADER_NS} patch foo example-foo --type merge -p '{{\"spec\":{{\"replicas\":2}}}}'"
    );
    replicas.note(scale.as_str()).await;
    env.shell(&scale).await?;
    eventually("2 available replicas in example-foo's status", || {
        available(2)
    })
    .await?;
    replicas.note("kill -TERM %2   # b").await;
    replicas.signal("b", libc::SIGTERM)?;
    let status = replicas.wait("b").await?;
    replicas.mark(format!("b exited with status {status}"));
    println!(
        "    leader-election: b took over {:.1} s after a's SIGTERM",
        handover.as_secs_f64()
    );
    Ok(replicas.transcript)
}

/// The commands the leader-election transcript starts with: the set-up,
/// the controller's ServiceAccount kubeconfig, and the two replicas.
fn leader_header() -> Vec<String> {
    let mut header: Vec<String> = leader_setup_commands()
        .iter()
        .chain(&sa_kubeconfig_commands(CONTROLLER_NS, "sample-controller"))
        .map(|line| format!("$ {line}"))
        .collect();
    header.extend([
        format!(
            "$ export POD_NAMESPACE={CONTROLLER_NS}   # what the downward API sets in the Pods"
        ),
        replica_command("a", PORT_A),
        replica_command("b", PORT_B),
        "   (each line below is prefixed with the replica that printed it)".to_string(),
    ]);
    header
}

/// Replica a stopped with SIGTERM, as the kubelet stops a deleted Pod, and
/// b taking the Lease over and serving: how long the handover took.
async fn hand_over(env: &Env, replicas: &mut Replicas) -> Result<Duration> {
    replicas
        .note("kill -TERM %1   # a: SIGTERM, what the kubelet sends when a Pod is deleted")
        .await;
    let stopped = tokio::time::Instant::now();
    replicas.signal("a", libc::SIGTERM)?;
    let status = replicas.wait("a").await?;
    replicas.mark(format!("a exited with status {status}"));
    ensure!(status == 0, "a did not exit cleanly on SIGTERM");
    let became = replicas.expect("b", &["became leader"]).await?;
    let handover = became.duration_since(stopped);
    replicas.mark(format!(
        "b became leader {:.1} s after a's SIGTERM",
        handover.as_secs_f64()
    ));
    replicas.expect("b", &["Starting workers"]).await?;
    until_ready(PORT_B).await?;
    let table = lease_table(env).await?;
    replicas.lines(table).await;
    let curl_b = curl_lines(PORT_B).await?;
    replicas.lines(curl_b).await;

    Ok(handover)
}

/// A frozen leader (SIGSTOP) loses the Lease to the standby; resumed
/// (SIGCONT), it finds another holder and exits with status 1.
pub(crate) async fn leader_lost(env: &Env) -> Result<Vec<String>> {
    let kubeconfig = leader_setup(env).await?;
    let mut replicas = Replicas::new(vec![
        replica_command("a", PORT_A),
        replica_command("b", PORT_B),
        "   (same setup as above)".to_string(),
    ]);
    replicas.start(env, &kubeconfig, "a", PORT_A)?;
    replicas.expect("a", &["Starting workers"]).await?;
    replicas.start(env, &kubeconfig, "b", PORT_B)?;
    replicas.expect("b", &["waiting to become leader"]).await?;
    replicas.drain_for(Duration::from_secs(3)).await;

    replicas
        .note("kill -STOP %1   # a: a frozen leader neither renews nor releases the Lease, as if it had crashed")
        .await;
    let frozen = tokio::time::Instant::now();
    replicas.signal("a", libc::SIGSTOP)?;
    let became = replicas.expect("b", &["became leader"]).await?;
    let takeover = became.duration_since(frozen);
    replicas.mark(format!(
        "b became leader {:.1} s after a froze",
        takeover.as_secs_f64()
    ));
    replicas.expect("b", &["Starting workers"]).await?;
    until_ready(PORT_B).await?;
    let table = lease_table(env).await?;
    replicas.lines(table).await;

    replicas.note("kill -CONT %1   # a").await;
    let resumed = tokio::time::Instant::now();
    replicas.signal("a", libc::SIGCONT)?;
    let status = replicas.wait("a").await?;
    let exited = resumed.elapsed();
    replicas.mark(format!(
        "a exited with status {status}, {:.1} s after it resumed",
        exited.as_secs_f64()
    ));
    ensure!(
        status == 1
            && replicas
                .transcript
                .iter()
                .any(|l| l.starts_with("a | Error: lost the leader Lease")),
        "the resumed leader did not exit 1 with the loss message"
    );
    let curl_b = curl_lines(PORT_B).await?;
    replicas.lines(curl_b).await;
    replicas.note("kill -TERM %2   # b").await;
    replicas.signal("b", libc::SIGTERM)?;
    let status = replicas.wait("b").await?;
    replicas.mark(format!("b exited with status {status}"));
    println!(
        "    leader-lost: b took over {:.1} s after a froze; a exited {:.1} s after SIGCONT",
        takeover.as_secs_f64(),
        exited.as_secs_f64()
    );
    Ok(replicas.transcript)
}

/// The static musl build of step 8 (the Dockerfile's command, into the
/// target directory tests/image.rs builds in): what it links and how
/// big it is. Reuses the binary that test built if there is one: cargo run
/// from here sees other `CARGO_PKG_*` variables than the test does, which
/// would make ring's build script, and all that depends on it, build again.
pub(crate) async fn musl_binary() -> Result<Vec<String>> {
    const TARGET: &str = "x86_64-unknown-linux-musl";
    let root = course::workspace::repo_root();
    let build = [
        "build",
        "--release",
        "--locked",
        "--target",
        TARGET,
        "--bin",
        "step-8",
    ];
    let binary = format!("target/musl/{TARGET}/release/step-8");
    if root.join(&binary).is_file() {
        println!("==> {binary} exists (built by tests/image.rs): not building it again");
    } else {
        let cargo = course::workspace::cargo(&build).env("CARGO_TARGET_DIR", "target/musl");
        println!("==> {cargo}");
        let status = cargo
            .tokio()
            .status()
            .await
            .context("running cargo build")?;
        ensure!(
            status.success(),
            "the musl build failed: it needs `rustup target add {TARGET}` and musl-gcc (Debian: musl-tools)"
        );
    }
    let mut lines = vec![format!(
        "$ CARGO_TARGET_DIR=target/musl cargo {}",
        build.join(" ")
    )];
    for tool in ["file", "ldd", "wc -c"] {
        let mut words = tool.split(' ');
        let program = words.next().unwrap_or(tool);
        let output = Command::new(program)
            .args(words)
            .arg(&binary)
            .current_dir(&root)
            .output()
            .with_context(|| format!("running {program}"))?;
        lines.push(format!("$ {tool} {binary}"));
        for stream in [&output.stdout, &output.stderr] {
            lines.extend(String::from_utf8_lossy(stream).lines().map(str::to_string));
        }
    }
    Ok(lines)
}

/// Replicas of step 8 with `--leader-elect`, run at once as the
/// ServiceAccount of `manifests/rbac.yaml`; their output merged into one
/// transcript, each line prefixed with the replica's name (`a | …`).
pub(crate) struct Replicas {
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
        testcluster::signal(pid, signal).with_context(|| format!("kill({pid}, {signal})"))
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
