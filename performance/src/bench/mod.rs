//! `cargo xtask bench`: the Rust controller measured against the Go original.
//!
//! On one local control plane, for N Foos created at once (N = 100 and 500
//! by default): time until every Deployment exists and every Foo has a
//! status, for the Go sample-controller, Rust step 7 (Go's program) and
//! step 8 (the kube-rs way), both release builds, and the floor
//! (`examples/bench_floor.rs`, a release build too): a process that makes
//! only the requests a converging controller must make, as soon as each Foo
//! exists, once with no limit on Foos in flight and once with as many as
//! the controllers have workers. For each process: the CPU time it spent
//! from the Foos' creation to convergence and its peak RSS, and from the
//! sizes, what 100 more Foos cost; the API requests each run caused
//! (kube-apiserver's `apiserver_request_total`); the writes each controller
//! makes while idle after convergence; each Rust step again with its JSON
//! log on (the flow's source); how much of the cached objects' JSON
//! managedFields are, and how much step 8 caches; and the lines of code of
//! step 7 and step 8. Also the learner's build: a cold `cargo build --bins`
//! and the rebuild after editing one step.
//!
//! Each subject runs `--repeat` times (the repetitions interleaved, so that
//! a slow spell of the machine does not land on one subject only); the
//! table shows the median with the minimum and maximum, and how many runs
//! did not converge within `--timeout`. Ratios are of medians; a comparison
//! whose runs overlap is called inconclusive.
//!
//! Writes the figures as data to `book/src/outputs/performance.json`
//! (`{{#figure performance KEY}}` reads them), the tables the page shows to
//! `performance.txt` (or `--output NAME`), and for the default output the
//! charts `book/src/performance.svg` (convergence) and
//! `book/src/performance-cost.svg` (CPU time and peak RSS against the
//! number of Foos). Figures, not pass/fail.
//!
//! This module runs the subjects and measures them; the run as data is
//! `data.rs`, the runs summed up `stats.rs`, the figures and tables
//! `report.rs`, the charts `chart.rs`.

mod chart;
mod code;
mod data;
mod report;
mod stats;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Client, Resource, ResourceExt};
use sample_controller::Foo;
use step8::caches::strip_deployment;
use testcluster::{Binary, ControlPlane, Options};

use crate::measure::{
    cpu_seconds, create_foos, diff, request_counts, start_in, status_kib, wait_converged,
    wait_settled,
};
use crate::timeline::Timeline;

use chart::{chart, cost_chart};
use code::{LinesOfCode, learner_build, lines_of_code};
use data::{Data, runs_from_data};
use report::report;

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
    /// Which subjects to run (fewer for trials; the published figures run
    /// them all). `floor-2` is the floor with as many Foos in flight as the
    /// controllers have workers. `step7-flow` and `step8-flow` are those
    /// steps again with their JSON log on (`SAMPLE_CONTROLLER_LOG_JSON`),
    /// the flow's source, each run right after the same step's run with it
    /// off; the report compares the two.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "floor,floor-2,go,step7,step7-flow,step8,step8-flow"
    )]
    subjects: Vec<Subject>,
    /// Where the report goes: `book/src/outputs/NAME.txt` and `NAME.json`.
    /// The charts are drawn for the default only, the Performance page's
    /// run.
    #[arg(long, default_value = "performance")]
    output: String,
    /// Run nothing: write the report, the figures and the charts again from
    /// the runs an earlier run recorded in `book/src/outputs/NAME.json`
    /// (after a change to how they are reported).
    #[arg(long)]
    report_only: bool,
    /// Run only `--sizes` and add their runs to those `book/src/outputs/NAME.json`
    /// holds, replacing the runs of a size it has already: a larger size
    /// (with a longer `--timeout`) without running the others again. Refused
    /// when a program's size in bytes differs from the one recorded (the runs
    /// would not be of the same programs) or `--repeat` differs. No idle
    /// phase: that belongs to the earlier run's smallest size.
    #[arg(long, conflicts_with = "report_only")]
    add: bool,
}

/// How many syncs each controller runs at once: Go's `controller.Run(ctx,
/// 2)`, step 7's and step 8's `--workers` default.
const WORKERS: usize = 2;

/// Who makes the Deployments and status writes in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
enum Subject {
    Go,
    Step7,
    Step8,
    #[value(name = "floor")]
    BareClient,
    #[value(name = "floor-2")]
    FloorWorkers,
    #[value(name = "step7-flow")]
    Step7Flow,
    #[value(name = "step8-flow")]
    Step8Flow,
}

impl Subject {
    /// The order the subjects run in, within a round.
    const RUN_ORDER: [Subject; 7] = [
        Subject::BareClient,
        Subject::FloorWorkers,
        Subject::Go,
        Subject::Step7,
        Subject::Step7Flow,
        Subject::Step8,
        Subject::Step8Flow,
    ];
    /// The rows of the tables: the controllers, then the floors.
    const TABLE: [Subject; 5] = [
        Subject::Go,
        Subject::Step7,
        Subject::Step8,
        Subject::FloorWorkers,
        Subject::BareClient,
    ];

    fn label(self) -> &'static str {
        match self {
            Subject::Go => "Go sample-controller",
            Subject::Step7 => "Rust step 7 (Go's program)",
            Subject::Step8 => "Rust step 8 (kube-rs way)",
            Subject::BareClient => "floor (necessary requests only)",
            Subject::FloorWorkers => "floor, 2 Foos in flight",
            Subject::Step7Flow => "Rust step 7, flow on",
            Subject::Step8Flow => "Rust step 8, flow on",
        }
    }

    /// Its name in a chart's legend.
    fn short(self) -> &'static str {
        match self {
            Subject::Go => "Go",
            Subject::Step7 => "step 7",
            Subject::Step8 => "step 8",
            Subject::BareClient => "floor",
            Subject::FloorWorkers => "floor, 2 in flight",
            Subject::Step7Flow => "step 7, flow on",
            Subject::Step8Flow => "step 8, flow on",
        }
    }

    /// Its name in a figure's key (`500 step8 converged`).
    fn key(self) -> &'static str {
        match self {
            Subject::Go => "go",
            Subject::Step7 => "step7",
            Subject::Step8 => "step8",
            Subject::BareClient => "floor",
            Subject::FloorWorkers => "floor2",
            Subject::Step7Flow => "step7-flow",
            Subject::Step8Flow => "step8-flow",
        }
    }

    /// The subject whose program it runs: the flow runs and the floor with
    /// 2 in flight run another subject's binary.
    fn program(self) -> Subject {
        match self {
            Subject::Step7Flow => Subject::Step7,
            Subject::Step8Flow => Subject::Step8,
            Subject::FloorWorkers => Subject::BareClient,
            other => other,
        }
    }

    /// Whether it is one of the floors, which have no idle phase to count.
    fn is_floor(self) -> bool {
        matches!(self, Subject::BareClient | Subject::FloorWorkers)
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
    /// CPU time (user and system) the process spent from the Foos' creation
    /// to convergence, in seconds.
    cpu: Option<f64>,
    peak_rss_kib: Option<u64>,
    /// Resident anonymous memory (heap, stacks) and file-backed memory (the
    /// binary, libraries) at the end of the run, in KiB.
    rss_at_end_kib: Option<(u64, u64)>,
    requests: BTreeMap<String, f64>,
    idle_writes: Option<f64>,
    /// How many lines the flow had at the end (flow-on subjects).
    flow_lines: Option<usize>,
    /// Where the time went, from the flow (flow-on subjects).
    timeline: Option<Timeline>,
    /// JSON bytes of the Foos and Deployments as listed, of their
    /// managedFields, and of what step 8 keeps of them.
    cached_bytes: Option<CachedBytes>,
    /// What was done when the run hit the timeout, if it did.
    unconverged: Option<String>,
}

/// The JSON size of the Foos and Deployments after a run.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
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
    let root = course::workspace::repo_root();
    let earlier = if args.report_only || args.add {
        let path = root.join(format!("book/src/outputs/{}.json", args.output));
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {} (written by a run)", path.display()))?;
        Some(
            runs_from_data(&text)
                .with_context(|| format!("reading the runs of {}", path.display()))?,
        )
    } else {
        None
    };
    if let (true, Some((conditions, sizes, results))) = (args.report_only, &earlier) {
        return write_outputs(&root, &args.output, sizes, results, None, conditions);
    }
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
    if let Some((before, ..)) = &earlier {
        same_programs(before, &binaries.sizes()?, repeat)?;
    }

    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;

    let smallest = args.sizes.iter().copied().min().unwrap_or(0);
    let mut results: Results = BTreeMap::new();
    for &n in &args.sizes {
        for round in 1..=repeat {
            for subject in Subject::RUN_ORDER {
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
                    && !args.add
                    && subject.flow_off().is_none())
                .then(|| {
                    (!subject.is_floor() && args.idle_seconds > 0)
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
                    "    converged in {:.1}s, CPU {}, peak RSS {}, {} writes{}",
                    m.converge.as_secs_f64(),
                    m.cpu.map_or("-".into(), |s| format!("{s:.2}s")),
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
    let conditions = Conditions {
        idle_seconds: args.idle_seconds,
        repeat,
        limits: args.sizes.iter().map(|&n| (n, limit)).collect(),
        binaries: binaries.sizes()?,
    };
    let (conditions, sizes, results) = match earlier {
        Some(earlier) => added_to(earlier, (conditions, args.sizes.clone(), results)),
        None => (conditions, args.sizes.clone(), results),
    };
    write_outputs(&root, &args.output, &sizes, &results, build, &conditions)
}

/// An earlier run's sizes and runs with those of a run that added sizes
/// (`--add`): a size both have is the new run's; the idle phase is the
/// earlier run's.
fn added_to(
    (before, earlier_sizes, earlier_runs): (Conditions, Vec<usize>, Results),
    (mut conditions, mut sizes, mut results): (Conditions, Vec<usize>, Results),
) -> (Conditions, Vec<usize>, Results) {
    let run_again = sizes.clone();
    for n in earlier_sizes {
        if !run_again.contains(&n) {
            sizes.push(n);
            conditions.limits.insert(n, before.limit(n));
        }
    }
    for ((n, subject), runs) in earlier_runs {
        if !run_again.contains(&n) {
            results.insert((n, subject), runs);
        }
    }
    sizes.sort_unstable();
    conditions.idle_seconds = before.idle_seconds;
    (conditions, sizes, results)
}

/// Refuses to add runs to an earlier run's unless they are of the same
/// programs (each binary's size in bytes) and as many runs per subject.
fn same_programs(before: &Conditions, now: &BTreeMap<String, u64>, repeat: usize) -> Result<()> {
    anyhow::ensure!(
        before.repeat == repeat,
        "the earlier run has {} runs per subject and size; add to it with --repeat {}",
        before.repeat,
        before.repeat
    );
    for (program, bytes) in now {
        let recorded = before.binaries.get(program);
        anyhow::ensure!(
            recorded == Some(bytes),
            "{program} is {bytes} bytes, but the earlier run's was {}: the programs changed since, \
             so run every size again (without --add)",
            recorded.map_or("not recorded".into(), |b| format!("{b} bytes"))
        );
    }
    Ok(())
}

/// Writes the report (`NAME.txt`), the figures and every run (`NAME.json`)
/// and, for the Performance page's run, its charts.
fn write_outputs(
    root: &Path,
    name: &str,
    sizes: &[usize],
    results: &Results,
    build: Option<(Duration, Duration)>,
    conditions: &Conditions,
) -> Result<()> {
    let lines = lines_of_code(root)?;
    let table = report(sizes, results, build, conditions, &lines);
    println!("\n{table}");
    let out = format!("book/src/outputs/{name}");
    std::fs::write(root.join(format!("{out}.txt")), &table)?;
    let data = Data::of(sizes, results, conditions, &lines);
    std::fs::write(
        root.join(format!("{out}.json")),
        serde_json::to_string_pretty(&serde_json::to_value(&data)?)? + "\n",
    )?;
    if name == "performance" {
        std::fs::write(
            root.join("book/src/performance.svg"),
            chart(sizes, results, conditions),
        )?;
        std::fs::write(
            root.join("book/src/performance-cost.svg"),
            cost_chart(sizes, results),
        )?;
        println!(
            "Wrote {out}.txt, {out}.json, book/src/performance.svg and book/src/performance-cost.svg"
        );
    } else {
        println!("Wrote {out}.txt and {out}.json");
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

impl Binaries {
    /// The program a subject runs.
    fn of(&self, subject: Subject) -> &Path {
        match subject.program() {
            Subject::Go => &self.go,
            Subject::Step7 => &self.step_7,
            Subject::Step8 => &self.step_8,
            _ => &self.floor,
        }
    }

    /// Each program's size in bytes, by the key of the subject it is the
    /// [`Subject::program`] of (`step8`, `floor`): most of a binary is
    /// resident while it runs.
    fn sizes(&self) -> Result<BTreeMap<String, u64>> {
        Subject::RUN_ORDER
            .into_iter()
            .filter(|subject| subject.program() == *subject)
            .map(|subject| {
                let path = self.of(subject);
                let bytes = std::fs::metadata(path)
                    .with_context(|| format!("reading {}", path.display()))?
                    .len();
                Ok((subject.key().to_string(), bytes))
            })
            .collect()
    }
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
        let exe = binaries.of(subject);
        let args = match subject {
            Subject::Go => vec![format!("-kubeconfig={kubeconfig}")],
            Subject::FloorWorkers => {
                [&rust_args[..], &["--workers".into(), WORKERS.to_string()]].concat()
            }
            _ => rust_args.to_vec(),
        };
        let trace = subject
            .flow_off()
            .map(|_| cp.log_dir().join(format!("bench-{ns}.log.jsonl")));
        let env: Vec<(&str, &Path)> = trace
            .iter()
            .map(|path| (sample_controller::telemetry::JSON_LOG, path.as_path()))
            .collect();
        let spawned = Instant::now();
        let mut controller = Some(start_in(exe, &args, &log, None, &env).await?);

        let pid = controller.as_ref().and_then(|c| c.id());
        let before = request_counts(client).await?;
        let cpu_before = pid.and_then(cpu_seconds);
        let started = Instant::now();
        create_foos(client, &ns, n).await?;
        let unconverged = wait_converged(client, &ns, n, limit).await?;
        let converge = started.elapsed();
        let cpu = pid
            .and_then(cpu_seconds)
            .zip(cpu_before)
            .map(|(after, before)| after - before);
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

        let peak_rss_kib = pid.and_then(|pid| status_kib(pid, "VmHWM"));
        let rss_at_end_kib =
            pid.and_then(|pid| Some((status_kib(pid, "RssAnon")?, status_kib(pid, "RssFile")?)));
        if let Some(child) = controller.as_mut() {
            if let Some(pid) = child.id() {
                let _ = testcluster::signal(pid, libc::SIGTERM); // gone already: wait() says so
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
        // The log was written and shows the flow (it is not kept: it is
        // large), and where the time went; the flow's clock starts with the
        // process, a few milliseconds after `spawned`.
        let (flow_lines, timeline) = match &trace {
            Some(path) => {
                let log = std::fs::read_to_string(path)
                    .with_context(|| format!("reading the JSON log {}", path.display()))?;
                let _ = std::fs::remove_file(path);
                let flow = course::flow::from_log(&log);
                let lines = flow.lines().count();
                anyhow::ensure!(
                    lines > n,
                    "{}: {lines} flow lines for {n} Foos",
                    subject.label()
                );
                let start = (started - spawned).as_secs_f64();
                (Some(lines), Timeline::of(&flow, start, WORKERS))
            }
            None => (None, None),
        };
        Ok(Measurement {
            converge,
            cpu,
            peak_rss_kib,
            rss_at_end_kib,
            requests: diff(&before, &after),
            idle_writes,
            flow_lines,
            timeline,
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

fn cargo(root: &Path, args: &[&str], target: Option<&PathBuf>) -> Result<Duration> {
    let started = Instant::now();
    let mut command = course::cargo::command(root, args).std();
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
    /// How long a run at each size could take to converge (`--timeout`).
    limits: BTreeMap<usize, Duration>,
    /// Each program's size in bytes ([`Binaries::sizes`]); empty for runs
    /// recorded before it was.
    binaries: BTreeMap<String, u64>,
}

impl Conditions {
    /// How long a run of `n` Foos could take to converge.
    fn limit(&self, n: usize) -> Duration {
        self.limits
            .get(&n)
            .or_else(|| self.limits.values().max())
            .copied()
            .unwrap_or(Duration::from_secs(300))
    }

    /// The timeout in words: "300 s", or "300 s (600 s at 2000 Foos)".
    fn limit_shown(&self) -> String {
        let mut limits: Vec<(usize, Duration)> =
            self.limits.iter().map(|(&n, &l)| (n, l)).collect();
        let Some(&(_, first)) = limits.first() else {
            return "300 s".into();
        };
        limits.retain(|&(_, l)| l != first);
        let others: Vec<String> = limits
            .iter()
            .map(|(n, l)| format!("{} s at {n} Foos", l.as_secs()))
            .collect();
        if others.is_empty() {
            format!("{} s", first.as_secs())
        } else {
            format!("{} s ({})", first.as_secs(), others.join(", "))
        }
    }
}
