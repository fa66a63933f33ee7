//! The captures of "Running in a cluster": missing RBAC, `/metrics`, two
//! replicas handing the leader Lease over, and the static musl binary.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use kube::api::Api;
use sample_controller::Foo;

use crate::book::capture::*;

/// The loopback ports of `--http-address` in the transcripts (the chapter
/// quotes them); each is checked free before use.
const METRICS_PORT: u16 = 18090;
const PORT_A: u16 = 18091;
const PORT_B: u16 = 18092;

/// The lease the leader-election transcripts use: shorter than the defaults
/// (15 s and 5 s) so that a takeover after a crash is quick to show.
pub(in crate::book) const LEASE_FLAGS: [&str; 4] = [
    "--leader-elect-lease-duration",
    "10",
    "--leader-elect-renew-grace",
    "3",
];

/// Where `manifests/rbac.yaml` puts the ServiceAccount and the Lease.
pub(in crate::book) const CONTROLLER_NS: &str = "sample-controller";

/// The namespace of the leader-election transcripts' Foo.
pub(in crate::book) const LEADER_NS: &str = "book-leader";

/// Fails, naming the port, if something listens on `127.0.0.1:port`.
pub(in crate::book) fn port_free(port: u16) -> Result<()> {
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
pub(in crate::book) async fn rbac_warnings(env: &Env) -> Result<Vec<String>> {
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
pub(in crate::book) async fn metrics(env: &Env) -> Result<Vec<String>> {
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
pub(in crate::book) async fn leader_election(env: &Env) -> Result<Vec<String>> {
    let kubeconfig = leader_setup(env).await?;
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
    let mut replicas = Replicas::new(header);
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

/// A frozen leader (SIGSTOP) loses the Lease to the standby; resumed
/// (SIGCONT), it finds another holder and exits with status 1.
pub(in crate::book) async fn leader_lost(env: &Env) -> Result<Vec<String>> {
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
pub(in crate::book) async fn musl_binary() -> Result<Vec<String>> {
    const TARGET: &str = "x86_64-unknown-linux-musl";
    let root = crate::repo_root();
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
        let cargo = crate::cargo(&build).env("CARGO_TARGET_DIR", "target/musl");
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
