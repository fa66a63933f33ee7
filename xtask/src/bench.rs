//! `cargo xtask bench`: the Rust controller measured against the Go original.
//!
//! On one local control plane, for N Foos created at once (N = 100 and 500):
//! time until every Deployment exists and every Foo has a status, for the Go
//! sample-controller, Rust step 7 (Go's program) and step 8 (the kube-rs
//! way), both release builds, and a bare kube client doing the same creates
//! and status writes with the same concurrency (the floor of what must be
//! written); the peak RSS of each controller; the API requests each run
//! caused (kube-apiserver's `apiserver_request_total`); the writes each
//! controller makes while idle after convergence; how much of the cached
//! objects managedFields are (what step 8 drops); and the lines of code of
//! step 7 and step 8. Also the learner's build: a cold `cargo build --bins`
//! and the rebuild after editing one step.
//!
//! Prints a table with ratios and writes it to `book/src/outputs/performance.txt`
//! and a chart to `book/src/performance.svg`. Figures, not pass/fail.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use sample_controller::deployment::new_deployment;
use sample_controller::{Foo, FooSpec};
use testcluster::{Binary, ControlPlane, Options};

/// Options of `cargo xtask bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Numbers of Foos to create at once.
    #[arg(long, value_delimiter = ',', default_value = "100,500")]
    sizes: Vec<usize>,
    /// Seconds to watch each controller idle after converging (at the smallest size).
    #[arg(long, default_value_t = 300)]
    idle_seconds: u64,
    /// Skip the cold-build measurement (it takes several minutes).
    #[arg(long)]
    skip_build: bool,
}

/// Who makes the Deployments and status writes in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Subject {
    Go,
    Step7,
    Step8,
    BareClient,
}

impl Subject {
    fn label(self) -> &'static str {
        match self {
            Subject::Go => "Go sample-controller",
            Subject::Step7 => "Rust step 7 (Go's program)",
            Subject::Step8 => "Rust step 8 (kube-rs way)",
            Subject::BareClient => "bare kube client (floor)",
        }
    }
}

/// What one run measured.
#[derive(Debug, Default, Clone)]
struct Measurement {
    converge: Duration,
    peak_rss_kib: Option<u64>,
    requests: BTreeMap<String, f64>,
    idle_writes: Option<f64>,
    /// JSON bytes of the Foos and Deployments, and of their managedFields.
    cached_bytes: Option<(usize, usize)>,
    /// What was done when the run hit [`CONVERGE_LIMIT`], if it did.
    unconverged: Option<String>,
}

/// Runs the benchmark.
pub async fn bench(args: BenchArgs) -> Result<()> {
    let root = crate::repo_root();
    println!(
        "==> cargo build --release --bin step-7 --bin step-8 (the Go controller is an optimised build too)"
    );
    cargo(
        &root,
        &[
            "build",
            "--release",
            "--quiet",
            "--bin",
            "step-7",
            "--bin",
            "step-8",
        ],
        None,
    )?;
    let go = testcluster::binaries::ensure(Binary::SampleController)?;
    let binaries = Binaries {
        go,
        step_7: root.join("target/release/step-7"),
        step_8: root.join("target/release/step-8"),
    };

    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;

    let smallest = args.sizes.iter().copied().min().unwrap_or(0);
    let mut results: BTreeMap<(usize, Subject), Measurement> = BTreeMap::new();
    for &n in &args.sizes {
        for subject in [
            Subject::BareClient,
            Subject::Go,
            Subject::Step7,
            Subject::Step8,
        ] {
            let idle = (n == smallest && subject != Subject::BareClient)
                .then(|| Duration::from_secs(args.idle_seconds));
            println!("==> {} with {n} Foos", subject.label());
            let m = run(&cp, &client, subject, n, &binaries, idle).await?;
            println!(
                "    converged in {:.1}s, peak RSS {}, {} writes{}",
                m.converge.as_secs_f64(),
                m.peak_rss_kib
                    .map_or("-".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
                writes(&m.requests),
                m.idle_writes
                    .map_or(String::new(), |w| format!(", {w} writes while idle"))
            );
            results.insert((n, subject), m);
        }
    }
    drop(cp);

    let build = if args.skip_build {
        None
    } else {
        Some(learner_build(&root)?)
    };
    let table = report(
        &args.sizes,
        &results,
        build,
        args.idle_seconds,
        &lines_of_code(&root)?,
    );
    println!("\n{table}");
    std::fs::write(root.join("book/src/outputs/performance.txt"), &table)?;
    std::fs::write(
        root.join("book/src/performance.svg"),
        chart(&args.sizes, &results),
    )?;
    println!("Wrote book/src/outputs/performance.txt and book/src/performance.svg");
    Ok(())
}

/// The three controller binaries.
struct Binaries {
    go: PathBuf,
    step_7: PathBuf,
    step_8: PathBuf,
}

/// One subject, `n` Foos, in a fresh namespace.
async fn run(
    cp: &ControlPlane,
    client: &Client,
    subject: Subject,
    n: usize,
    binaries: &Binaries,
    idle: Option<Duration>,
) -> Result<Measurement> {
    let ns = format!("bench-{}-{n}", format!("{subject:?}").to_lowercase());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    testcluster::create_namespace(client, &ns).await?;
    let log = cp.log_dir().join(format!("bench-{ns}.log"));
    let kubeconfig = cp.kubeconfig_path().display().to_string();

    let rust_args = ["--kubeconfig".to_string(), kubeconfig.clone()];
    let mut controller = match subject {
        Subject::Go => {
            Some(start(&binaries.go, &[format!("-kubeconfig={kubeconfig}")], &log).await?)
        }
        Subject::Step7 => Some(start(&binaries.step_7, &rust_args, &log).await?),
        Subject::Step8 => Some(start(&binaries.step_8, &rust_args, &log).await?),
        Subject::BareClient => None,
    };

    let before = request_counts(client).await?;
    let started = Instant::now();
    create_foos(client, &ns, n).await?;
    if subject == Subject::BareClient {
        bare_client(client, &ns, n).await?;
    }
    let unconverged = wait_converged(client, &ns, n).await?;
    let converge = started.elapsed();
    if let Some(state) = &unconverged {
        println!(
            "    not converged after {}s: {state}",
            CONVERGE_LIMIT.as_secs()
        );
    }
    let after = request_counts(client).await?;
    let cached_bytes = if subject == Subject::Go {
        Some(cache_bytes(client, &ns).await?)
    } else {
        None
    };

    let mut idle_writes = None;
    if let (Some(period), None) = (idle, &unconverged) {
        // Idle means nothing left to do: every Pod Ready, every status final.
        wait_settled(client, &ns).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        println!(
            "    idling {}s to count writes after convergence...",
            period.as_secs()
        );
        let start_counts = request_counts(client).await?;
        tokio::time::sleep(period).await;
        let end_counts = request_counts(client).await?;
        idle_writes = Some(writes(&diff(&start_counts, &end_counts)));
    }

    let peak_rss_kib = controller
        .as_ref()
        .and_then(|c| c.id())
        .and_then(peak_rss_kib);
    if let Some(child) = controller.as_mut() {
        if let Some(pid) = child.id() {
            // SAFETY: kill(2) on the PID of the child we started, with a valid signal.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
        let _ = tokio::time::timeout(Duration::from_secs(15), child.wait()).await;
    }
    // Clean up and wait, so the next run does not share the cluster with this one's garbage collection.
    Api::<Foo>::namespaced(client.clone(), &ns)
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    namespaces.delete(&ns, &DeleteParams::default()).await?;
    let deadline = Instant::now() + Duration::from_secs(600);
    while namespaces.get_opt(&ns).await?.is_some() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(Measurement {
        converge,
        peak_rss_kib,
        requests: diff(&before, &after),
        idle_writes,
        cached_bytes,
        unconverged,
    })
}

/// The JSON size of the Foos and Deployments in `ns` (what an informer
/// caches), and how much of it is managedFields.
async fn cache_bytes(client: &Client, ns: &str) -> Result<(usize, usize)> {
    let foos = Api::<Foo>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items;
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items;
    let mut objects: Vec<serde_json::Value> = Vec::new();
    for foo in foos {
        objects.push(serde_json::to_value(foo)?);
    }
    for deployment in deployments {
        objects.push(serde_json::to_value(deployment)?);
    }
    let (mut total, mut managed) = (0, 0);
    for object in &objects {
        total += serde_json::to_vec(object)?.len();
        managed += serde_json::to_vec(&object["metadata"]["managedFields"])?.len();
    }
    Ok((total, managed))
}

/// Non-blank, non-comment lines of the code each Rust controller runs beyond
/// what every step shares (config, types, new_deployment): step 7's informer,
/// handlers, work queue and controller; step 8's reconciler, and what it
/// reuses of the work queue (the rate limiter).
fn lines_of_code(root: &Path) -> Result<Vec<(&'static str, usize)>> {
    let count = |files: &[&str]| -> Result<usize> {
        let mut lines = 0;
        for file in files {
            let text = std::fs::read_to_string(root.join(file))?;
            // Count up to the unit tests.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            lines += code
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("//"))
                .count();
        }
        Ok(lines)
    };
    Ok(vec![
        (
            "step 7: steps/step-7.rs, src/controller.rs, handlers.rs, informer.rs, workqueue.rs",
            count(&[
                "steps/step-7.rs",
                "src/controller.rs",
                "src/handlers.rs",
                "src/informer.rs",
                "src/workqueue.rs",
            ])?,
        ),
        (
            "step 8 without its production parts: src/reconciler.rs, and the rate limiter of workqueue.rs",
            count(&["src/reconciler.rs"])? + rate_limiter_lines(root)?,
        ),
    ])
}

/// Lines of `src/workqueue.rs` between its rate-limiter anchors.
fn rate_limiter_lines(root: &Path) -> Result<usize> {
    let text = std::fs::read_to_string(root.join("src/workqueue.rs"))?;
    let start = text
        .find("// ANCHOR: item_backoff")
        .context("item_backoff anchor")?;
    let end = text
        .find("// ANCHOR_END: rate_limiter")
        .context("rate_limiter anchor")?;
    Ok(text[start..end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count())
}

/// Starts a controller with its output in `log`, and waits until its workers run.
pub(crate) async fn start(
    exe: &Path,
    args: &[String],
    log: &Path,
) -> Result<tokio::process::Child> {
    let file = std::fs::File::create(log)?;
    let child = tokio::process::Command::new(exe)
        .args(args)
        .env("RUST_LOG", "info") // Go logs every sync at its default level too
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // Both controllers log this once their caches are synced.
        if std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains("Starting workers")
        {
            return Ok(child);
        }
        if Instant::now() > deadline {
            bail!(
                "{} did not start within 60s; log: {}",
                exe.display(),
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates `n` Foos in `ns`, 50 requests in flight.
async fn create_foos(client: &Client, ns: &str, n: usize) -> Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let results: Vec<_> = stream::iter(0..n)
        .map(|i| {
            let foos = foos.clone();
            async move {
                let name = format!("foo-{i:04}");
                let foo = Foo::new(
                    &name,
                    FooSpec {
                        deployment_name: name.clone(),
                        replicas: Some(1),
                    },
                );
                foos.create(&PostParams::default(), &foo).await
            }
        })
        .buffer_unordered(50)
        .collect()
        .await;
    for r in results {
        r?;
    }
    Ok(())
}

/// The floor: what the controller must write, written directly by two
/// workers (a Deployment create and a status write per Foo) once all Foos
/// exist (a controller starts on the first one).
async fn bare_client(client: &Client, ns: &str, n: usize) -> Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let all = foos.list(&ListParams::default()).await?.items;
    let results: Vec<Result<()>> = stream::iter(all)
        .map(|foo| {
            let (foos, deployments) = (foos.clone(), deployments.clone());
            async move {
                deployments
                    .create(&PostParams::default(), &new_deployment(&foo))
                    .await?;
                let status = serde_json::json!({"status": {"availableReplicas": 0}});
                foos.patch_status(
                    &foo.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(status),
                )
                .await?;
                Ok(())
            }
        })
        .buffer_unordered(2)
        .collect()
        .await;
    debug_assert_eq!(results.len(), n);
    results.into_iter().collect()
}

/// Waits until `n` Deployments exist and all `n` Foos have a status.
/// How long a run may take to converge before it is recorded as not converged.
const CONVERGE_LIMIT: Duration = Duration::from_secs(600);

/// Waits until `n` Deployments exist and all `n` Foos have a status, for at
/// most [`CONVERGE_LIMIT`]; returns `Some("x/n Deployments, y/n statuses")`
/// if that did not happen.
async fn wait_converged(client: &Client, ns: &str, n: usize) -> Result<Option<String>> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        let with_status = foos
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|f| f.status.is_some())
            .count();
        let existing = deployments
            .list_metadata(&ListParams::default())
            .await?
            .items
            .len();
        if with_status == n && existing == n {
            return Ok(None);
        }
        if Instant::now() > deadline {
            return Ok(Some(format!(
                "{existing}/{n} Deployments, {with_status}/{n} statuses"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until every Foo reports as available what it asked for.
async fn wait_settled(client: &Client, ns: &str) -> Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = foos.list(&ListParams::default()).await?.items;
        let settled = list
            .iter()
            .all(|f| f.status.as_ref().map(|s| s.available_replicas) == f.spec.replicas);
        if settled {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{ns}: Foo statuses did not settle within 30 minutes");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Write requests a controller makes (creates, updates, patches, applies,
/// deletes), leaving out `deployments/status`, which only kube-controller-manager writes.
fn writes(counts: &BTreeMap<String, f64>) -> f64 {
    counts
        .iter()
        .filter(|(k, _)| {
            ["POST ", "PUT ", "PATCH ", "APPLY ", "DELETE "]
                .iter()
                .any(|v| k.starts_with(v))
        })
        .filter(|(k, _)| !k.ends_with("deployments/status"))
        .map(|(_, v)| v)
        .sum::<f64>()
        + 0.0 // an empty float sum is -0.0
}

/// `apiserver_request_total` summed by `VERB resource[/subresource]`, for the
/// resources a sample controller touches.
pub(crate) async fn request_counts(client: &Client) -> Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let mut counts = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let Some((labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(&format!("{name}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or("")
                .to_string()
        };
        let resource = label("resource");
        if !["foos", "deployments", "events"].contains(&resource.as_str()) {
            continue;
        }
        let subresource = label("subresource");
        let key = match subresource.as_str() {
            "" => format!("{} {resource}", label("verb")),
            sub => format!("{} {resource}/{sub}", label("verb")),
        };
        *counts.entry(key).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
    }
    Ok(counts)
}

pub(crate) fn diff(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

/// Peak resident set size of a process (`VmHWM` in /proc/<pid>/status), in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Times a cold `cargo build --bins` in a fresh target directory, then the
/// rebuild after touching one step file.
fn learner_build(root: &Path) -> Result<(Duration, Duration)> {
    let target = std::env::temp_dir().join(format!(
        "sample-controller-rs-bench-target-{}",
        std::process::id()
    ));
    println!(
        "==> Cold cargo build --bins in {} (several minutes on 2 cores)",
        target.display()
    );
    let cold = cargo(root, &["build", "--quiet", "--bins"], Some(&target))?;
    let step = root.join("steps/step-3.rs");
    let text = std::fs::read_to_string(&step)?;
    std::fs::write(&step, format!("{text}\n"))?; // an edit, as a learner makes one
    let rebuilt = cargo(root, &["build", "--quiet", "--bins"], Some(&target));
    std::fs::write(&step, text)?;
    let rebuild = rebuilt?;
    let _ = std::fs::remove_dir_all(&target);
    Ok((cold, rebuild))
}

fn cargo(root: &Path, args: &[&str], target: Option<&PathBuf>) -> Result<Duration> {
    let started = Instant::now();
    let mut command = std::process::Command::new(env!("CARGO"));
    command.args(args).current_dir(root);
    if let Some(dir) = target {
        command.env("CARGO_TARGET_DIR", dir);
    }
    if !command.status()?.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(started.elapsed())
}

/// The Markdown table with ratios.
fn report(
    sizes: &[usize],
    results: &BTreeMap<(usize, Subject), Measurement>,
    build: Option<(Duration, Duration)>,
    idle_seconds: u64,
    lines: &[(&str, usize)],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Written by `cargo xtask bench`; do not edit. -->\n"
    );
    let _ = writeln!(
        out,
        "| Foos | Subject | Converged in | vs Go | vs floor | Peak RSS | API writes | Idle writes ({idle_seconds} s) |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|");
    for &n in sizes {
        let secs = |s| {
            results
                .get(&(n, s))
                .filter(|m: &&Measurement| m.unconverged.is_none())
                .map(|m| m.converge.as_secs_f64())
        };
        for subject in [
            Subject::Go,
            Subject::Step7,
            Subject::Step8,
            Subject::BareClient,
        ] {
            let Some(m) = results.get(&(n, subject)) else {
                continue;
            };
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                _ => "-".into(),
            };
            let (vs_go, vs_limit) = match subject {
                Subject::Step7 | Subject::Step8 => (
                    ratio(secs(subject), secs(Subject::Go)),
                    ratio(secs(subject), secs(Subject::BareClient)),
                ),
                _ => ("".into(), "".into()),
            };
            let converged = match &m.unconverged {
                None => format!("{:.1} s", m.converge.as_secs_f64()),
                Some(state) => format!("not in {} s ({state})", CONVERGE_LIMIT.as_secs()),
            };
            let _ = writeln!(
                out,
                "| {n} | {} | {converged} | {vs_go} | {vs_limit} | {} | {} | {} |",
                subject.label(),
                m.peak_rss_kib
                    .map_or("-".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
                writes(&m.requests),
                m.idle_writes.map_or("-".into(), |w| w.to_string()),
            );
        }
    }
    let rss = |s| {
        results
            .iter()
            .filter(|((_, x), _)| *x == s)
            .filter_map(|(_, m)| m.peak_rss_kib)
            .max()
    };
    if let (Some(s7), Some(s8), Some(g)) =
        (rss(Subject::Step7), rss(Subject::Step8), rss(Subject::Go))
    {
        let _ = writeln!(
            out,
            "\nPeak RSS, largest run: step 7/Go = {:.2}, step 8/Go = {:.2}, step 8/step 7 = {:.2}.",
            s7 as f64 / g as f64,
            s8 as f64 / g as f64,
            s8 as f64 / s7 as f64
        );
    }
    for ((n, _), m) in results.iter().filter(|((_, s), _)| *s == Subject::Go) {
        if let Some((total, managed)) = m.cached_bytes {
            let _ = writeln!(
                out,
                "\nmanagedFields, {n} Foos and their Deployments as listed after convergence: \
                 {:.0} KiB of {:.0} KiB of JSON ({:.0} %), what step 8 drops before caching.",
                managed as f64 / 1024.0,
                total as f64 / 1024.0,
                100.0 * managed as f64 / total.max(1) as f64
            );
        }
    }
    let _ = writeln!(
        out,
        "\nLines of code (non-blank, non-comment, without tests):"
    );
    for (what, count) in lines {
        let _ = writeln!(out, "- {what}: {count}");
    }
    let _ = writeln!(
        out,
        "\n*API writes*: creates, updates, patches and applies of Foos, Deployments and Events \
         while the run converged (kube-apiserver's `apiserver_request_total`), without \
         `deployments/status`, which only kube-controller-manager writes. They include the \
         benchmark's own Foo creates and kube-controller-manager's Events: the bare-client row \
         is that floor. *Idle writes*: the same count over the idle period that starts once \
         every Foo reports its final status. All requests by verb and resource (the LISTs \
         include the benchmark's polling):\n"
    );
    for ((n, subject), m) in results {
        let detail: Vec<String> = m.requests.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(
            out,
            "- {n} Foos, {}: {}",
            subject.label(),
            detail.join(", ")
        );
    }
    if let Some((cold, rebuild)) = build {
        let _ = writeln!(
            out,
            "\nLearner's build: cold `cargo build --bins` {:.0} s; rebuild after editing one step file {:.1} s.",
            cold.as_secs_f64(),
            rebuild.as_secs_f64()
        );
    }
    out
}

/// A horizontal bar chart of convergence times, as SVG.
fn chart(sizes: &[usize], results: &BTreeMap<(usize, Subject), Measurement>) -> String {
    let max = results
        .values()
        .map(|m| m.converge.as_secs_f64())
        .fold(1.0, f64::max);
    let (left, width, bar_height, gap) = (230.0, 420.0, 18.0, 6.0);
    let mut y = 30.0;
    let mut body = String::new();
    for &n in sizes {
        let _ = writeln!(
            body,
            r#"<text x="10" y="{y}" font-weight="bold">{n} Foos</text>"#
        );
        y += 10.0;
        for (subject, colour) in [
            (Subject::Go, "#4e79a7"),
            (Subject::Step7, "#e15759"),
            (Subject::Step8, "#59a14f"),
            (Subject::BareClient, "#9c9c9c"),
        ] {
            let Some(m) = results.get(&(n, subject)) else {
                continue;
            };
            let secs = m.converge.as_secs_f64();
            let w = (secs / max * width).max(1.0);
            let _ = writeln!(
                body,
                r#"<text x="10" y="{}">{}</text>"#,
                y + bar_height - 5.0,
                subject.label()
            );
            let _ = writeln!(
                body,
                r#"<rect x="{left}" y="{y}" width="{w:.1}" height="{bar_height}" fill="{colour}"/>"#
            );
            let _ = writeln!(
                body,
                r#"<text x="{:.1}" y="{}">{secs:.1} s</text>"#,
                left + w + 6.0,
                y + bar_height - 5.0
            );
            y += bar_height + gap;
        }
        y += 14.0;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <title>Time until every Deployment exists and every Foo has a status</title>\n{body}</svg>\n",
        h = y + 10.0
    )
}
