//! `cargo xtask bench`: the Rust controller measured against the Go original.
//!
//! On one local control plane, for N Foos created at once (N = 100 and 500):
//! time until every Deployment exists and every Foo has a status, for the Go
//! sample-controller, Rust step 7 (Go's program) and step 8 (the kube-rs
//! way), both release builds, and the floor (`examples/bench_floor.rs`, a
//! release build too): a process that makes only the requests a converging
//! controller must make, as soon as each Foo exists, at least as
//! concurrently as the controllers; the peak RSS of each process; the API
//! requests each run caused (kube-apiserver's `apiserver_request_total`);
//! the writes each controller makes while idle after convergence; how much
//! of the cached objects' JSON managedFields are, and how much step 8
//! caches; and the lines of code of step 7 and step 8. Also the learner's
//! build: a cold `cargo build --bins` and the rebuild after editing one step.
//!
//! Each subject runs `--repeat` times (the repetitions interleaved, so that
//! a slow spell of the machine does not land on one subject only); the
//! table shows the median with the minimum and maximum, and how many runs
//! did not converge within `--timeout`. Ratios are of medians.
//!
//! Prints a table with ratios and writes it to `book/src/outputs/performance.txt`
//! (or `--output NAME`) and a chart to `book/src/performance.svg`. Figures,
//! not pass/fail.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use sample_controller::{Foo, FooSpec};
use step8::caches::strip_deployment;
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
    /// How many times to run each subject at each size.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Seconds a run may take to converge before it is recorded as not converged.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Do not wait for every Foo to report its Deployment available after
    /// the first run at the smallest size (and so count no idle writes).
    #[arg(long)]
    no_settle: bool,
    /// Which subjects to run (for trials; the published figures run the
    /// first four). `step7-flow` and `step8-flow` are those steps again with
    /// their JSON log on (`SAMPLE_CONTROLLER_LOG_JSON`), the flow's source, each run right
    /// after the same step's run with it off; the report compares the two.
    #[arg(long, value_delimiter = ',', default_value = "floor,go,step7,step8")]
    subjects: Vec<Subject>,
    /// Where the table goes: `book/src/outputs/NAME.txt`. The chart
    /// (`book/src/performance.svg`) is drawn for the default only, the
    /// Performance page's run.
    #[arg(long, default_value = "performance")]
    output: String,
}

/// Who makes the Deployments and status writes in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
enum Subject {
    Go,
    Step7,
    Step8,
    #[value(name = "floor")]
    BareClient,
    #[value(name = "step7-flow")]
    Step7Flow,
    #[value(name = "step8-flow")]
    Step8Flow,
}

impl Subject {
    fn label(self) -> &'static str {
        match self {
            Subject::Go => "Go sample-controller",
            Subject::Step7 => "Rust step 7 (Go's program)",
            Subject::Step8 => "Rust step 8 (kube-rs way)",
            Subject::BareClient => "floor (necessary requests only)",
            Subject::Step7Flow => "Rust step 7, flow on",
            Subject::Step8Flow => "Rust step 8, flow on",
        }
    }

    /// The subject with the flow off, for one with it on.
    fn flow_off(self) -> Option<Subject> {
        match self {
            Subject::Step7Flow => Some(Subject::Step7),
            Subject::Step8Flow => Some(Subject::Step8),
            _ => None,
        }
    }
}

/// What one run measured.
#[derive(Debug, Default, Clone)]
struct Measurement {
    converge: Duration,
    peak_rss_kib: Option<u64>,
    /// Resident anonymous memory (heap, stacks) and file-backed memory (the
    /// binary, libraries) at the end of the run, in KiB.
    rss_at_end_kib: Option<(u64, u64)>,
    requests: BTreeMap<String, f64>,
    idle_writes: Option<f64>,
    /// How many lines the flow had at the end (flow-on subjects).
    flow_lines: Option<usize>,
    /// JSON bytes of the Foos and Deployments as listed, of their
    /// managedFields, and of what step 8 keeps of them.
    cached_bytes: Option<CachedBytes>,
    /// What was done when the run hit the timeout, if it did.
    unconverged: Option<String>,
}

/// The JSON size of the Foos and Deployments after a run.
#[derive(Debug, Clone, Copy)]
struct CachedBytes {
    /// As listed (what Go and step 7 cache).
    listed: usize,
    /// Their managedFields.
    managed_fields: usize,
    /// What step 8 caches of them.
    step_8: usize,
}

/// Runs the benchmark.
pub async fn bench(args: BenchArgs) -> Result<()> {
    let root = crate::repo_root();
    println!(
        "==> cargo build --release --bin step-7 --bin step-8 --example bench_floor (the Go controller is an optimised build too)"
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
            "--example",
            "bench_floor",
        ],
        None,
    )?;
    let go = testcluster::binaries::ensure(Binary::SampleController)?;
    let binaries = Binaries {
        go,
        step_7: root.join("target/release/step-7"),
        step_8: root.join("target/release/step-8"),
        floor: root.join("target/release/examples/bench_floor"),
    };
    let limit = Duration::from_secs(args.timeout);
    let repeat = args.repeat.max(1);

    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;

    let smallest = args.sizes.iter().copied().min().unwrap_or(0);
    let mut results: Results = BTreeMap::new();
    for &n in &args.sizes {
        for round in 1..=repeat {
            for subject in [
                Subject::BareClient,
                Subject::Go,
                Subject::Step7,
                Subject::Step7Flow,
                Subject::Step8,
                Subject::Step8Flow,
            ] {
                if !args.subjects.contains(&subject) {
                    continue;
                }
                // Once per subject, at the smallest size: wait until every
                // Foo reports its Deployment available (the floor too: its
                // end state must be a controller's), then count the
                // controllers' writes while idle.
                let settle = (n == smallest
                    && round == 1
                    && !args.no_settle
                    && subject.flow_off().is_none())
                .then(|| {
                    (subject != Subject::BareClient && args.idle_seconds > 0)
                        .then(|| Duration::from_secs(args.idle_seconds))
                });
                println!(
                    "==> {} with {n} Foos, run {round} of {repeat}",
                    subject.label()
                );
                let run = Run {
                    subject,
                    n,
                    round,
                    limit,
                    settle,
                };
                let m = run.measure(&cp, &client, &binaries).await?;
                println!(
                    "    converged in {:.1}s, peak RSS {}, {} writes{}",
                    m.converge.as_secs_f64(),
                    m.peak_rss_kib
                        .map_or("-".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
                    writes(&m.requests),
                    m.idle_writes
                        .map_or(String::new(), |w| format!(", {w} writes while idle"))
                );
                results.entry((n, subject)).or_default().push(m);
            }
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
        Conditions {
            idle_seconds: args.idle_seconds,
            repeat,
            limit,
        },
        &lines_of_code(&root)?,
    );
    println!("\n{table}");
    let out = format!("book/src/outputs/{}.txt", args.output);
    std::fs::write(root.join(&out), &table)?;
    if args.output == "performance" {
        std::fs::write(
            root.join("book/src/performance.svg"),
            chart(&args.sizes, &results, limit),
        )?;
        println!("Wrote {out} and book/src/performance.svg");
    } else {
        println!("Wrote {out}");
    }
    Ok(())
}

/// Every run's measurement, by size and subject, in the order they ran.
type Results = BTreeMap<(usize, Subject), Vec<Measurement>>;

/// The three controller binaries and the floor.
struct Binaries {
    go: PathBuf,
    step_7: PathBuf,
    step_8: PathBuf,
    floor: PathBuf,
}

/// One run: a subject, `n` Foos, in a fresh namespace.
struct Run {
    subject: Subject,
    n: usize,
    /// Which repetition (from 1).
    round: usize,
    /// How long it may take to converge.
    limit: Duration,
    /// Whether to wait until every Foo reports its Deployment available
    /// after converging (`Some`), and then to count writes while idle for
    /// that long (`Some(Some(_))`).
    settle: Option<Option<Duration>>,
}

impl Run {
    /// Starts the subject, creates the Foos, measures, cleans up.
    async fn measure(
        &self,
        cp: &ControlPlane,
        client: &Client,
        binaries: &Binaries,
    ) -> Result<Measurement> {
        let Run {
            subject,
            n,
            round,
            limit,
            settle,
        } = *self;
        let ns = format!(
            "bench-{}-{n}-{round}",
            format!("{subject:?}").to_lowercase()
        );
        let namespaces: Api<Namespace> = Api::all(client.clone());
        testcluster::create_namespace(client, &ns).await?;
        let log = cp.log_dir().join(format!("bench-{ns}.log"));
        let kubeconfig = cp.kubeconfig_path().display().to_string();

        let rust_args = ["--kubeconfig".to_string(), kubeconfig.clone()];
        let (exe, args) = match subject {
            Subject::Go => (&binaries.go, vec![format!("-kubeconfig={kubeconfig}")]),
            Subject::Step7 | Subject::Step7Flow => (&binaries.step_7, rust_args.to_vec()),
            Subject::Step8 | Subject::Step8Flow => (&binaries.step_8, rust_args.to_vec()),
            Subject::BareClient => (&binaries.floor, rust_args.to_vec()),
        };
        let trace = subject
            .flow_off()
            .map(|_| cp.log_dir().join(format!("bench-{ns}.log.jsonl")));
        let env: Vec<(&str, &Path)> = trace
            .iter()
            .map(|path| (sample_controller::telemetry::JSON_LOG, path.as_path()))
            .collect();
        let mut controller = Some(start_in(exe, &args, &log, None, &env).await?);

        let before = request_counts(client).await?;
        let started = Instant::now();
        create_foos(client, &ns, n).await?;
        let unconverged = wait_converged(client, &ns, n, limit).await?;
        let converge = started.elapsed();
        if let Some(state) = &unconverged {
            println!("    not converged after {}s: {state}", limit.as_secs());
        }
        let after = request_counts(client).await?;
        let cached_bytes = if subject == Subject::Go {
            Some(cache_bytes(client, &ns).await?)
        } else {
            None
        };

        let mut idle_writes = None;
        if let (Some(idle), None) = (settle, &unconverged) {
            // Idle means nothing left to do: every Pod Ready, every status final.
            let settled = wait_settled(client, &ns).await?;
            println!(
                "    every Foo reports its Deployment available after {:.1}s",
                (settled - started).as_secs_f64()
            );
            if let Some(period) = idle {
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
        }

        let pid = controller.as_ref().and_then(|c| c.id());
        let peak_rss_kib = pid.and_then(|pid| status_kib(pid, "VmHWM"));
        let rss_at_end_kib =
            pid.and_then(|pid| Some((status_kib(pid, "RssAnon")?, status_kib(pid, "RssFile")?)));
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
        // The log was written and shows the flow (it is not kept: it is large).
        let flow_lines = match &trace {
            Some(path) => {
                let log = std::fs::read_to_string(path)
                    .with_context(|| format!("reading the JSON log {}", path.display()))?;
                let _ = std::fs::remove_file(path);
                let lines = testcluster::flow::from_log(&log).lines().count();
                anyhow::ensure!(
                    lines > n,
                    "{}: {lines} flow lines for {n} Foos",
                    subject.label()
                );
                Some(lines)
            }
            None => None,
        };
        Ok(Measurement {
            converge,
            peak_rss_kib,
            rss_at_end_kib,
            requests: diff(&before, &after),
            idle_writes,
            flow_lines,
            cached_bytes,
            unconverged,
        })
    }
}

/// The JSON size of the Foos and Deployments in `ns` (what an informer
/// caches), how much of it is managedFields, and how much of it step 8
/// caches.
async fn cache_bytes(client: &Client, ns: &str) -> Result<CachedBytes> {
    let foos = Api::<Foo>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items;
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items;
    let mut objects: Vec<serde_json::Value> = Vec::new();
    let mut step_8 = 0;
    for mut foo in foos {
        objects.push(serde_json::to_value(&foo)?);
        // What step 8 drops of a Foo.
        foo.managed_fields_mut().clear();
        if let Some(annotations) = foo.meta_mut().annotations.as_mut() {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
        step_8 += serde_json::to_vec(&foo)?.len();
    }
    for mut deployment in deployments {
        objects.push(serde_json::to_value(&deployment)?);
        strip_deployment(&mut deployment);
        step_8 += serde_json::to_vec(&deployment)?.len();
    }
    let (mut listed, mut managed_fields) = (0, 0);
    for object in &objects {
        listed += serde_json::to_vec(object)?.len();
        managed_fields += serde_json::to_vec(&object["metadata"]["managedFields"])?.len();
    }
    Ok(CachedBytes {
        listed,
        managed_fields,
        step_8,
    })
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
            "step 7: steps/step-7/main.rs, steps/step-7/controller.rs, handlers.rs, informer.rs, workqueue.rs",
            count(&[
                "steps/step-7/main.rs",
                "steps/step-7/controller.rs",
                "src/handlers.rs",
                "src/informer.rs",
                "src/workqueue.rs",
            ])?,
        ),
        (
            "step 8 without its production parts: steps/step-8/src/reconciler.rs, caches.rs and error.rs, and the rate limiter of workqueue.rs",
            count(&[
                "steps/step-8/src/reconciler.rs",
                "steps/step-8/src/caches.rs",
                "steps/step-8/src/error.rs",
            ])? + rate_limiter_lines(root)?,
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
    start_in(exe, args, log, None, &[]).await
}

/// [`start`] in the working directory `cwd` (else this process's), with
/// the environment variables `env` besides this process's.
pub(crate) async fn start_in(
    exe: &Path,
    args: &[String],
    log: &Path,
    cwd: Option<&Path>,
    env: &[(&str, &Path)],
) -> Result<tokio::process::Child> {
    let file = std::fs::File::create(log)?;
    let mut command = tokio::process::Command::new(exe);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    command.envs(env.iter().copied());
    let child = command
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
pub(crate) async fn create_foos(client: &Client, ns: &str, n: usize) -> Result<()> {
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

/// Waits until `n` Deployments exist and all `n` Foos have a status, for at
/// most `limit`; returns `Some("x/n Deployments, y/n statuses")` if that did
/// not happen.
pub(crate) async fn wait_converged(
    client: &Client,
    ns: &str,
    n: usize,
    limit: Duration,
) -> Result<Option<String>> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + limit;
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

/// Waits until every Foo reports as available what it asked for; returns when.
pub(crate) async fn wait_settled(client: &Client, ns: &str) -> Result<Instant> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = foos.list(&ListParams::default()).await?.items;
        let settled = list
            .iter()
            .all(|f| f.status.as_ref().map(|s| s.available_replicas) == f.spec.replicas);
        if settled {
            return Ok(Instant::now());
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

/// A memory figure of a process from /proc/<pid>/status, in KiB: `VmHWM`
/// (peak resident set size), `RssAnon`, `RssFile`.
pub(crate) fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Times a cold `cargo build --bins` in a fresh target directory, then the
/// rebuild after touching one step file.
fn learner_build(root: &Path) -> Result<(Duration, Duration)> {
    let scratch = tempfile::Builder::new()
        .prefix("sample-controller-rs-bench-target-")
        .tempdir()
        .context("creating a target directory")?;
    let target = scratch.path().to_path_buf();
    println!(
        "==> Cold cargo build --bins in {} (several minutes on 2 cores)",
        target.display()
    );
    let cold = cargo(root, &["build", "--quiet", "--bins"], Some(&target))?;
    let step = root.join("steps/step-3/main.rs");
    let text = std::fs::read_to_string(&step)?;
    std::fs::write(&step, format!("{text}\n"))?; // an edit, as a learner makes one
    let rebuilt = cargo(root, &["build", "--quiet", "--bins"], Some(&target));
    std::fs::write(&step, text)?;
    let rebuild = rebuilt?;
    drop(scratch);
    Ok((cold, rebuild))
}

fn cargo(root: &Path, args: &[&str], target: Option<&PathBuf>) -> Result<Duration> {
    let started = Instant::now();
    let mut command = testcluster::cargo::command(root, args).std();
    if let Some(dir) = target {
        command.env("CARGO_TARGET_DIR", dir);
    }
    if !command.status()?.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(started.elapsed())
}

/// How the runs were made, for the report.
struct Conditions {
    idle_seconds: u64,
    repeat: usize,
    limit: Duration,
}

/// The median of `values` (sorted in place; the mean of the middle two for
/// an even count), `None` if there are none.
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// Median, minimum and maximum of `values`.
pub(crate) fn spread(mut values: Vec<f64>) -> Option<(f64, f64, f64)> {
    let mid = median(&mut values)?;
    Some((mid, values[0], values[values.len() - 1]))
}

/// The convergence times of `runs`: the median over all runs (a run that did
/// not converge counts as slower than any that did; `None` if the median run
/// is one of those), the minimum and maximum of those that converged, and
/// how many did not.
fn converge_stats(runs: &[Measurement]) -> (Option<f64>, Option<(f64, f64)>, usize) {
    let mut all: Vec<f64> = runs
        .iter()
        .map(|m| match m.unconverged {
            None => m.converge.as_secs_f64(),
            Some(_) => f64::INFINITY,
        })
        .collect();
    let mid = median(&mut all).filter(|m| m.is_finite());
    let converged: Vec<f64> = all.iter().copied().filter(|t| t.is_finite()).collect();
    let range = converged
        .first()
        .zip(converged.last())
        .map(|(a, b)| (*a, *b));
    (mid, range, runs.len() - converged.len())
}

/// `median (min–max) unit`, or just the median for a single run.
fn with_spread((mid, min, max): (f64, f64, f64), decimals: usize, unit: &str) -> String {
    if min == max {
        format!("{mid:.decimals$} {unit}")
    } else {
        format!("{mid:.decimals$} {unit} ({min:.decimals$}–{max:.decimals$})")
    }
}

/// The Markdown table with ratios.
fn report(
    sizes: &[usize],
    results: &Results,
    build: Option<(Duration, Duration)>,
    conditions: Conditions,
    lines: &[(&str, usize)],
) -> String {
    let Conditions {
        idle_seconds,
        repeat,
        limit,
    } = conditions;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Written by `cargo xtask bench`; do not edit. -->\n"
    );
    let _ = writeln!(
        out,
        "Each figure: the median of {repeat} runs, with the lowest and highest in brackets; \
         ratios are of medians. A run not converged after {} s is counted as slower than any \
         that did.\n",
        limit.as_secs()
    );
    let _ = writeln!(
        out,
        "| Foos | Subject | Converged in | vs Go | vs floor | Peak RSS | API writes | Idle writes ({idle_seconds} s) |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|");
    let rss_median = |n: usize, s: Subject| {
        results.get(&(n, s)).and_then(|runs| {
            spread(
                runs.iter()
                    .filter_map(|m| m.peak_rss_kib)
                    .map(|k| k as f64 / 1024.0)
                    .collect(),
            )
        })
    };
    for &n in sizes {
        let secs = |s| results.get(&(n, s)).and_then(|runs| converge_stats(runs).0);
        for subject in [
            Subject::Go,
            Subject::Step7,
            Subject::Step8,
            Subject::BareClient,
        ] {
            let Some(runs) = results.get(&(n, subject)) else {
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
            let (mid, range, unconverged) = converge_stats(runs);
            let mut converged = match (mid, range) {
                (Some(mid), Some((min, max))) => with_spread((mid, min, max), 1, "s"),
                (None, _) => format!("over {} s", limit.as_secs()),
                (Some(mid), None) => format!("{mid:.1} s"),
            };
            if unconverged > 0 {
                let _ = write!(
                    converged,
                    "; {unconverged} of {} did not converge in {} s",
                    runs.len(),
                    limit.as_secs()
                );
            }
            let rss = rss_median(n, subject).map_or("-".into(), |s| with_spread(s, 1, "MiB"));
            let api_writes = spread(runs.iter().map(|m| writes(&m.requests)).collect())
                .map_or("-".into(), |s| with_spread(s, 0, ""));
            let idle = runs
                .iter()
                .find_map(|m| m.idle_writes)
                .map_or("-".into(), |w| w.to_string());
            let _ = writeln!(
                out,
                "| {n} | {} | {converged} | {vs_go} | {vs_limit} | {rss} | {} | {idle} |",
                subject.label(),
                api_writes.replace("  (", " (").trim_end(),
            );
        }
    }
    flow_report(&mut out, sizes, results);
    if let Some(&largest) = sizes.iter().max() {
        let rss = |s| rss_median(largest, s).map(|(mid, _, _)| mid);
        if let (Some(s7), Some(s8), Some(g)) =
            (rss(Subject::Step7), rss(Subject::Step8), rss(Subject::Go))
        {
            let _ = writeln!(
                out,
                "\nPeak RSS at {largest} Foos, medians: step 7/Go = {:.2}, step 8/Go = {:.2}, step 8/step 7 = {:.2}.",
                s7 / g,
                s8 / g,
                s8 / s7
            );
        }
        let _ = writeln!(
            out,
            "\nResident memory at the end of the runs at {largest} Foos (medians), anonymous \
             (heap, stacks) + file-backed (the binary and libraries):"
        );
        for subject in [
            Subject::Go,
            Subject::Step7,
            Subject::Step8,
            Subject::BareClient,
        ] {
            let Some(runs) = results.get(&(largest, subject)) else {
                continue;
            };
            let part = |f: fn(&(u64, u64)) -> u64| {
                let mut v: Vec<f64> = runs
                    .iter()
                    .filter_map(|m| m.rss_at_end_kib.as_ref())
                    .map(|r| f(r) as f64 / 1024.0)
                    .collect();
                median(&mut v)
            };
            if let (Some(anon), Some(file)) = (part(|r| r.0), part(|r| r.1)) {
                let _ = writeln!(out, "- {}: {anon:.1} MiB + {file:.1} MiB", subject.label());
            }
        }
    }
    for ((n, _), runs) in results.iter().filter(|((_, s), _)| *s == Subject::Go) {
        if let Some(bytes) = runs.iter().find_map(|m| m.cached_bytes) {
            let kib = |b: usize| b as f64 / 1024.0;
            let _ = writeln!(
                out,
                "\n{n} Foos and their Deployments as listed after convergence: {:.0} KiB of JSON \
                 (what Go and step 7 cache), of which managedFields {:.0} KiB ({:.0} %); step 8 \
                 caches {:.0} KiB of it ({:.0} %).",
                kib(bytes.listed),
                kib(bytes.managed_fields),
                100.0 * bytes.managed_fields as f64 / bytes.listed.max(1) as f64,
                kib(bytes.step_8),
                100.0 * bytes.step_8 as f64 / bytes.listed.max(1) as f64,
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
         benchmark's own Foo creates and kube-controller-manager's Events. *Idle writes*: the \
         same count over the idle period that starts once every Foo reports its final status \
         (first run only). All requests by verb and resource, medians over the runs (the LISTs \
         include the benchmark's polling):\n"
    );
    for ((n, subject), runs) in results {
        let mut keys: Vec<&String> = runs.iter().flat_map(|m| m.requests.keys()).collect();
        keys.sort();
        keys.dedup();
        let detail: Vec<String> = keys
            .into_iter()
            .filter_map(|k| {
                let mut values: Vec<f64> = runs
                    .iter()
                    .map(|m| m.requests.get(k).copied().unwrap_or(0.0))
                    .collect();
                median(&mut values).map(|v| format!("{k} {v}"))
            })
            .collect();
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

/// The table of the flow's cost: each Rust step's convergence with the flow
/// off and on, run after run, when the flow subjects ran.
fn flow_report(out: &mut String, sizes: &[usize], results: &Results) {
    let pairs: Vec<(usize, Subject, Subject)> = sizes
        .iter()
        .flat_map(|&n| {
            [Subject::Step7Flow, Subject::Step8Flow]
                .into_iter()
                .filter_map(move |on| Some((n, on.flow_off()?, on)))
        })
        .filter(|(n, off, on)| {
            results.contains_key(&(*n, *off)) && results.contains_key(&(*n, *on))
        })
        .collect();
    if pairs.is_empty() {
        return;
    }
    // The anchor lets a page include this table alone (`FILE:flow`).
    let _ = writeln!(out, "\n<!-- ANCHOR: flow -->");
    let _ = writeln!(
        out,
        "The flow off and on: each Rust step run again right after its run above, with \
         SAMPLE_CONTROLLER_LOG_JSON naming a file (the flow's source, testcluster/src/flow.rs); \
         medians, lowest and highest in brackets:\n"
    );
    let _ = writeln!(
        out,
        "| Foos | Step | Flow off | Flow on | on / off | Flow lines |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|");
    for (n, off, on) in pairs {
        let stats = |s| converge_stats(&results[&(n, s)]);
        let shown = |s| match stats(s) {
            (Some(mid), Some((min, max)), _) => with_spread((mid, min, max), 1, "s"),
            (Some(mid), None, _) => format!("{mid:.1} s"),
            (None, _, _) => "not converged".into(),
        };
        let ratio = match (stats(on).0, stats(off).0) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        let mut lines: Vec<f64> = results[&(n, on)]
            .iter()
            .filter_map(|m| m.flow_lines)
            .map(|l| l as f64)
            .collect();
        let lines = median(&mut lines).map_or("-".into(), |l| format!("{l:.0}"));
        let step = if off == Subject::Step7 {
            "step 7"
        } else {
            "step 8"
        };
        let _ = writeln!(
            out,
            "| {n} | {step} | {} | {} | {ratio} | {lines} |",
            shown(off),
            shown(on)
        );
    }
    let _ = writeln!(out, "<!-- ANCHOR_END: flow -->");
}

/// A horizontal bar chart of convergence times, as SVG: each bar the
/// median, its whisker the lowest and highest run that converged.
fn chart(sizes: &[usize], results: &Results, limit: Duration) -> String {
    let max = results
        .values()
        .flat_map(|runs| runs.iter())
        .map(|m| m.converge.as_secs_f64())
        .fold(1.0, f64::max);
    let (left, width, bar_height, gap) = (230.0, 400.0, 18.0, 6.0);
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
            let Some(runs) = results.get(&(n, subject)) else {
                continue;
            };
            let (mid, range, unconverged) = converge_stats(runs);
            let x = |secs: f64| left + (secs / max * width).max(1.0);
            let _ = writeln!(
                body,
                r#"<text x="10" y="{}">{}</text>"#,
                y + bar_height - 5.0,
                subject.label()
            );
            let (end, label) = match mid {
                Some(secs) => (x(secs), format!("{secs:.1} s")),
                None => (x(max), format!("over {} s", limit.as_secs())),
            };
            let _ = writeln!(
                body,
                r#"<rect x="{left}" y="{y}" width="{:.1}" height="{bar_height}" fill="{colour}"/>"#,
                end - left
            );
            let mut label_x = end;
            if let Some((min, high)) = range {
                let (a, b) = (x(min), x(high));
                let middle = y + bar_height / 2.0;
                let _ = writeln!(
                    body,
                    r#"<path d="M{a:.1} {middle}H{b:.1}M{a:.1} {:.1}V{:.1}M{b:.1} {:.1}V{:.1}" stroke="black" fill="none"/>"#,
                    middle - 4.0,
                    middle + 4.0,
                    middle - 4.0,
                    middle + 4.0
                );
                label_x = label_x.max(b);
            }
            let note = if unconverged > 0 {
                format!(" ({unconverged} of {} not converged)", runs.len())
            } else {
                String::new()
            };
            let _ = writeln!(
                body,
                r#"<text x="{:.1}" y="{}">{label}{note}</text>"#,
                label_x + 6.0,
                y + bar_height - 5.0
            );
            y += bar_height + gap;
        }
        y += 14.0;
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <title>Time until every Deployment exists and every Foo has a status: median bar, lowest and highest run as whisker</title>\n{body}</svg>\n",
        h = y + 10.0
    )
}
