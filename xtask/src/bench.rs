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

use std::collections::BTreeMap;
use std::fmt::Write as _;
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
    cpu_seconds, create_foos, diff, median, request_counts, spread, start_in, status_kib,
    wait_converged, wait_settled,
};
use crate::timeline::Timeline;

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
    let root = crate::repo_root();
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

/// `NAME.json`: how the runs were made, every figure and every run. It is
/// written through a `serde_json::Value`, whose objects keep their keys in
/// alphabetical order, as the file has had them since its first run.
#[derive(serde::Serialize, serde::Deserialize)]
struct Data {
    written_by: String,
    conditions: DataConditions,
    figures: BTreeMap<String, String>,
    runs: Vec<RunRecord>,
}

impl Data {
    /// What a run (or `--report-only`) writes.
    fn of(
        sizes: &[usize],
        results: &Results,
        conditions: &Conditions,
        lines: &[LinesOfCode],
    ) -> Data {
        Data {
            written_by: "cargo xtask bench".into(),
            conditions: DataConditions {
                sizes: sizes.to_vec(),
                repeat: conditions.repeat,
                timeout_seconds: conditions
                    .limit(sizes.first().copied().unwrap_or(0))
                    .as_secs(),
                timeout_seconds_by_size: (conditions.limits.iter())
                    .map(|(n, l)| (n.to_string(), l.as_secs()))
                    .collect(),
                idle_seconds: conditions.idle_seconds,
                workers: WORKERS,
                binary_bytes: conditions.binaries.clone(),
            },
            figures: figures(sizes, results, conditions, lines),
            runs: (results.iter())
                .flat_map(|(&(foos, subject), runs)| {
                    let record = move |(i, m)| RunRecord::of(foos, subject, i + 1, m);
                    runs.iter().enumerate().map(record)
                })
                .collect(),
        }
    }
}

/// How the runs were made ([`Conditions`], as recorded).
#[derive(serde::Serialize, serde::Deserialize)]
struct DataConditions {
    sizes: Vec<usize>,
    repeat: usize,
    /// The smallest size's; every size's before `--add` could differ them.
    timeout_seconds: u64,
    #[serde(default)]
    timeout_seconds_by_size: BTreeMap<String, u64>,
    idle_seconds: u64,
    workers: usize,
    /// Recorded since `--add` checks it.
    #[serde(default)]
    binary_bytes: BTreeMap<String, u64>,
}

/// One run ([`Measurement`], as recorded).
#[derive(serde::Serialize, serde::Deserialize)]
struct RunRecord {
    subject: String,
    foos: usize,
    round: usize,
    converged: bool,
    not_converged: Option<String>,
    seconds: f64,
    cpu_seconds: Option<f64>,
    peak_rss_kib: Option<u64>,
    rss_anon_kib_at_end: Option<u64>,
    rss_file_kib_at_end: Option<u64>,
    writes: f64,
    #[serde(default)]
    requests: BTreeMap<String, f64>,
    idle_writes: Option<f64>,
    flow_lines: Option<usize>,
    timeline: Option<Timeline>,
    cached_bytes: Option<CachedBytes>,
}

impl RunRecord {
    /// Run `round` of `subject` at `foos` Foos.
    fn of(foos: usize, subject: Subject, round: usize, m: &Measurement) -> RunRecord {
        RunRecord {
            subject: subject.key().into(),
            foos,
            round,
            converged: m.unconverged.is_none(),
            not_converged: m.unconverged.clone(),
            seconds: m.converge.as_secs_f64(),
            cpu_seconds: m.cpu,
            peak_rss_kib: m.peak_rss_kib,
            rss_anon_kib_at_end: m.rss_at_end_kib.map(|r| r.0),
            rss_file_kib_at_end: m.rss_at_end_kib.map(|r| r.1),
            writes: writes(&m.requests),
            requests: m.requests.clone(),
            idle_writes: m.idle_writes,
            flow_lines: m.flow_lines,
            timeline: m.timeline,
            cached_bytes: m.cached_bytes,
        }
    }

    /// What the run measured, as [`RunRecord::of`] recorded it.
    fn measurement(self) -> Measurement {
        Measurement {
            converge: Duration::from_secs_f64(self.seconds),
            cpu: self.cpu_seconds,
            peak_rss_kib: self.peak_rss_kib,
            rss_at_end_kib: self.rss_anon_kib_at_end.zip(self.rss_file_kib_at_end),
            requests: self.requests,
            idle_writes: self.idle_writes,
            flow_lines: self.flow_lines,
            timeline: self.timeline,
            cached_bytes: self.cached_bytes,
            unconverged: self.not_converged,
        }
    }
}

/// The conditions, sizes and runs a data file recorded.
fn runs_from_data(text: &str) -> Result<(Conditions, Vec<usize>, Results)> {
    let data: Data = serde_json::from_str(text)?;
    let given = data.conditions;
    let limit = |n: usize| given.timeout_seconds_by_size.get(&n.to_string()).copied();
    let conditions = Conditions {
        idle_seconds: given.idle_seconds,
        repeat: given.repeat,
        limits: (given.sizes.iter())
            .map(|&n| {
                (
                    n,
                    Duration::from_secs(limit(n).unwrap_or(given.timeout_seconds)),
                )
            })
            .collect(),
        binaries: given.binary_bytes,
    };
    let mut results = Results::new();
    for run in data.runs {
        let subject = Subject::RUN_ORDER
            .into_iter()
            .find(|s| s.key() == run.subject)
            .with_context(|| format!("unknown subject {:?}", run.subject))?;
        results
            .entry((run.foos, subject))
            .or_default()
            .push(run.measurement());
    }
    Ok((conditions, given.sizes, results))
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
        // The log was written and shows the flow (it is not kept: it is
        // large), and where the time went; the flow's clock starts with the
        // process, a few milliseconds after `spawned`.
        let (flow_lines, timeline) = match &trace {
            Some(path) => {
                let log = std::fs::read_to_string(path)
                    .with_context(|| format!("reading the JSON log {}", path.display()))?;
                let _ = std::fs::remove_file(path);
                let flow = testcluster::flow::from_log(&log);
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

/// Non-blank, non-comment lines of the code each Rust controller runs beyond
/// what every step shares (config, types, new_deployment): step 7's informer,
/// handlers, work queue and controller; step 8's reconciler, and what it
/// reuses of the work queue (the rate limiter).
fn lines_of_code(root: &Path) -> Result<Vec<LinesOfCode>> {
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
        LinesOfCode {
            key: "step7",
            what: "step 7: steps/step-7/main.rs, steps/step-7/controller.rs, handlers.rs, informer.rs, workqueue.rs",
            lines: count(&[
                "steps/step-7/main.rs",
                "steps/step-7/controller.rs",
                "src/handlers.rs",
                "src/informer.rs",
                "src/workqueue.rs",
            ])?,
        },
        LinesOfCode {
            key: "step8",
            what: "step 8 without its production parts: steps/step-8/src/reconciler.rs, caches.rs and error.rs, and the rate limiter of workqueue.rs",
            lines: count(&[
                "steps/step-8/src/reconciler.rs",
                "steps/step-8/src/caches.rs",
                "steps/step-8/src/error.rs",
            ])? + rate_limiter_lines(root)?,
        },
    ])
}

/// The lines of code of one controller.
struct LinesOfCode {
    /// Its name in a figure's key (`loc step7`).
    key: &'static str,
    /// What was counted.
    what: &'static str,
    lines: usize,
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

/// A measure over a subject's runs at one size: the median, the lowest and
/// the highest.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spread {
    mid: f64,
    low: f64,
    high: f64,
    /// How many runs it is of.
    runs: usize,
}

impl Spread {
    /// Of `values`; `None` if there are none.
    fn of(values: Vec<f64>) -> Option<Spread> {
        let runs = values.len();
        let (mid, low, high) = spread(values)?;
        Some(Spread {
            mid,
            low,
            high,
            runs,
        })
    }

    /// `median unit (lowest–highest)`, or the median alone when every run
    /// gave the same.
    fn shown(&self, decimals: usize, unit: &str) -> String {
        let Spread { mid, low, high, .. } = *self;
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        if format!("{low:.decimals$}") == format!("{high:.decimals$}") {
            format!("{mid:.decimals$}{unit}")
        } else {
            format!("{mid:.decimals$}{unit} ({low:.decimals$}–{high:.decimals$})")
        }
    }
}

/// A subject's runs at one size, summed up.
struct Stats {
    /// Seconds to converge, a run that did not counted as infinitely long.
    converge: Option<Spread>,
    /// How many runs did not converge.
    unconverged: usize,
    /// CPU seconds from the Foos' creation to convergence.
    cpu: Option<Spread>,
    /// Peak RSS, MiB.
    rss: Option<Spread>,
    /// API writes while converging.
    writes: Option<Spread>,
    /// Writes while idle (the first run).
    idle: Option<f64>,
    /// Resident anonymous and file-backed memory at the end, MiB, medians.
    anon: Option<f64>,
    file: Option<f64>,
    /// Lines of the flow (flow-on subjects), median.
    flow_lines: Option<f64>,
}

impl Stats {
    fn of(runs: &[Measurement]) -> Stats {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let middle = |values: Vec<f64>| Spread::of(values).map(|s| s.mid);
        Stats {
            converge: Spread::of(
                runs.iter()
                    .map(|m| match m.unconverged {
                        None => m.converge.as_secs_f64(),
                        Some(_) => f64::INFINITY,
                    })
                    .collect(),
            ),
            unconverged: runs.iter().filter(|m| m.unconverged.is_some()).count(),
            cpu: Spread::of(runs.iter().filter_map(|m| m.cpu).collect()),
            rss: Spread::of(
                runs.iter()
                    .filter_map(|m| m.peak_rss_kib)
                    .map(mib)
                    .collect(),
            ),
            writes: Spread::of(runs.iter().map(|m| writes(&m.requests)).collect()),
            idle: runs.iter().find_map(|m| m.idle_writes),
            anon: middle(
                runs.iter()
                    .filter_map(|m| m.rss_at_end_kib)
                    .map(|r| mib(r.0))
                    .collect(),
            ),
            file: middle(
                runs.iter()
                    .filter_map(|m| m.rss_at_end_kib)
                    .map(|r| mib(r.1))
                    .collect(),
            ),
            flow_lines: middle(
                runs.iter()
                    .filter_map(|m| m.flow_lines)
                    .map(|l| l as f64)
                    .collect(),
            ),
        }
    }

    /// The median convergence time, if the median run converged.
    fn converged(&self) -> Option<f64> {
        self.converge.map(|s| s.mid).filter(|m| m.is_finite())
    }

    /// `10.5 s (8.7–11.8)`, `over 300 s`, and how many runs did not converge.
    fn converge_cell(&self, limit: Duration) -> String {
        let Some(c) = self.converge else {
            return "-".into();
        };
        let over = format!("over {}", limit.as_secs());
        let mut cell = if !c.mid.is_finite() {
            format!("{over} s")
        } else if format!("{:.1}", c.low) == format!("{:.1}", c.high) {
            format!("{:.1} s", c.mid)
        } else {
            let high = if c.high.is_finite() {
                format!("{:.1}", c.high)
            } else {
                over
            };
            format!("{:.1} s ({:.1}–{high})", c.mid, c.low)
        };
        if self.unconverged > 0 {
            let _ = write!(
                cell,
                "; {} of {} did not converge in {} s",
                self.unconverged,
                c.runs,
                limit.as_secs()
            );
        }
        cell
    }
}

/// Each subject's [`Stats`] at each size.
fn stats(results: &Results) -> BTreeMap<(usize, Subject), Stats> {
    results
        .iter()
        .map(|(key, runs)| (*key, Stats::of(runs)))
        .collect()
}

/// The median count of each request over `runs`, by `VERB resource`.
fn request_medians(runs: &[Measurement]) -> BTreeMap<String, f64> {
    let mut keys: Vec<&String> = runs.iter().flat_map(|m| m.requests.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let mut values: Vec<f64> = runs
                .iter()
                .map(|m| m.requests.get(k).copied().unwrap_or(0.0))
                .collect();
            Some((k.clone(), median(&mut values)?))
        })
        .collect()
}

/// `a / b`, two decimals, if both are there.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(format!("{:.2}", a / b)),
        _ => None,
    }
}

/// Whether every run of `a` was below every run of `b`, every one above, or
/// neither: a difference of medians that the runs' spread covers is no
/// finding. Values are compared as shown, to `decimals` places, so that a
/// verdict never contradicts the figures beside it.
fn verdict(a: &Spread, b: &Spread, decimals: i32) -> &'static str {
    let shown = |x: f64| (x * 10f64.powi(decimals)).round();
    if a.runs < 2 || b.runs < 2 {
        "one run: no spread to judge by"
    } else if shown(a.high) < shown(b.low) {
        "lower in every run"
    } else if shown(a.low) > shown(b.high) {
        "higher in every run"
    } else {
        "inconclusive: the runs overlap"
    }
}

/// The comparisons the page can draw, as `{{#figure performance N A/B
/// converged}}` and `… converged-verdict` (and `cpu`, `rss`).
const PAIRS: [(Subject, Subject); 12] = [
    (Subject::Step7, Subject::Go),
    (Subject::Step8, Subject::Go),
    (Subject::Step8, Subject::Step7),
    (Subject::Go, Subject::FloorWorkers),
    (Subject::Step7, Subject::FloorWorkers),
    (Subject::Step8, Subject::FloorWorkers),
    (Subject::Go, Subject::BareClient),
    (Subject::Step7, Subject::BareClient),
    (Subject::Step8, Subject::BareClient),
    (Subject::FloorWorkers, Subject::BareClient),
    (Subject::Step7Flow, Subject::Step7),
    (Subject::Step8Flow, Subject::Step8),
];

/// Every figure of the run, by the key `{{#figure performance KEY}}` names
/// (preprocess/figures.rs lists them), each as the page shows it.
fn figures(
    sizes: &[usize],
    results: &Results,
    conditions: &Conditions,
    lines: &[LinesOfCode],
) -> BTreeMap<String, String> {
    let stats = stats(results);
    let mut found = BTreeMap::new();
    let mut put = |key: String, value: String| {
        found.insert(key, value);
    };
    let secs = |s: f64| format!("{s:.1} s");
    let cpu = |s: f64| format!("{s:.2} s");
    let mib = |m: f64| format!("{m:.1} MiB");
    for (&(n, subject), s) in &stats {
        let at = |what: &str| format!("{n} {} {what}", subject.key());
        if let Some(c) = s.converge {
            for (what, value) in [
                ("converged", c.mid),
                ("fastest", c.low),
                ("slowest", c.high),
            ] {
                if value.is_finite() {
                    put(at(what), secs(value));
                }
            }
        }
        if let Some(c) = s.cpu {
            put(at("cpu"), cpu(c.mid));
            put(at("cpu-lowest"), cpu(c.low));
            put(at("cpu-highest"), cpu(c.high));
            put(
                at("cpu-per-foo"),
                format!("{:.2} ms", c.mid * 1000.0 / n as f64),
            );
        }
        if let Some(r) = s.rss {
            put(at("rss"), mib(r.mid));
            put(at("rss-lowest"), mib(r.low));
            put(at("rss-highest"), mib(r.high));
        }
        if let Some(w) = s.writes {
            put(at("writes"), format!("{:.0}", w.mid));
        }
        if let Some(idle) = s.idle {
            put(at("idle"), format!("{idle:.0}"));
        }
        if let (Some(anon), Some(file)) = (s.anon, s.file) {
            put(at("anon"), mib(anon));
            put(at("file"), mib(file));
        }
        for (request, count) in request_medians(&results[&(n, subject)]) {
            put(at(&request), format!("{count}"));
        }
        for (which, m, t) in extremes(&results[&(n, subject)]).into_iter().flatten() {
            for (name, value) in timeline_figures(m, t) {
                put(at(&format!("{which}-run {name}")), value);
            }
        }
        if Subject::TABLE.contains(&subject) {
            let of = |other: Subject| stats.get(&(n, other)).and_then(Stats::converged);
            for (what, other) in [
                ("vs-go", Subject::Go),
                ("vs-floor", Subject::BareClient),
                ("vs-floor2", Subject::FloorWorkers),
            ] {
                if other != subject
                    && let Some(r) = ratio(s.converged(), of(other))
                {
                    put(at(what), r);
                }
            }
        }
        // The flow on beside the same step's runs with it off.
        if let Some(off) = subject.flow_off()
            && let Some(without) = stats.get(&(n, off))
        {
            let at = |what: &str| format!("{n} {} {what}", off.key());
            for (name, side) in [("flow-off", without), ("flow-on", s)] {
                if let Some(c) = side.converge.filter(|c| c.high.is_finite()) {
                    put(at(name), secs(c.mid));
                    put(at(&format!("{name}-fastest")), secs(c.low));
                    put(at(&format!("{name}-slowest")), secs(c.high));
                }
            }
            if let Some(r) = ratio(s.converged(), without.converged()) {
                put(at("flow-ratio"), r);
            }
            if let Some(lines) = s.flow_lines {
                put(at("flow-lines"), format!("{lines:.0}"));
            }
        }
    }
    for &n in sizes {
        for (a, b) in PAIRS {
            let (Some(sa), Some(sb)) = (stats.get(&(n, a)), stats.get(&(n, b))) else {
                continue;
            };
            let pair = format!("{n} {}/{}", a.key(), b.key());
            for (what, x, y, decimals) in [
                ("converged", sa.converge, sb.converge, 1),
                ("cpu", sa.cpu, sb.cpu, 2),
                ("rss", sa.rss, sb.rss, 1),
            ] {
                let (Some(x), Some(y)) = (x, y) else { continue };
                if let Some(r) = ratio(Some(x.mid).filter(|m| m.is_finite()), Some(y.mid)) {
                    put(format!("{pair} {what}"), r);
                }
                put(
                    format!("{pair} {what}-verdict"),
                    verdict(&x, &y, decimals).into(),
                );
            }
        }
    }
    // The project's targets ("Against the project's targets" on the page),
    // each a ratio of medians and the most it may be: `N SUBJECT met KEY`
    // is "yes" or "no", for the ratio as the page shows it (two decimals).
    for &n in sizes {
        for (subject, flow_on) in [
            (Subject::Step7, Subject::Step7Flow),
            (Subject::Step8, Subject::Step8Flow),
        ] {
            let median = |of: Subject, measure: fn(&Stats) -> Option<f64>| {
                stats.get(&(n, of)).and_then(measure)
            };
            let time: fn(&Stats) -> Option<f64> = Stats::converged;
            let cpu: fn(&Stats) -> Option<f64> = |s| s.cpu.map(|c| c.mid);
            let rss: fn(&Stats) -> Option<f64> = |s| s.rss.map(|r| r.mid);
            let targets = [
                (
                    "time-vs-go",
                    median(subject, time),
                    median(Subject::Go, time),
                    0.5,
                ),
                (
                    "time-vs-floor",
                    median(subject, time),
                    median(Subject::BareClient, time),
                    2.0,
                ),
                (
                    "time-vs-floor2",
                    median(subject, time),
                    median(Subject::FloorWorkers, time),
                    2.0,
                ),
                (
                    "cpu-vs-go",
                    median(subject, cpu),
                    median(Subject::Go, cpu),
                    0.3,
                ),
                (
                    "rss-vs-go",
                    median(subject, rss),
                    median(Subject::Go, rss),
                    0.45,
                ),
                ("flow", median(flow_on, time), median(subject, time), 1.1),
            ];
            for (key, x, y, most) in targets {
                if let (Some(x), Some(y)) = (x, y)
                    && y > 0.0
                {
                    let shown = (x / y * 100.0).round() / 100.0;
                    let met = if shown <= most { "yes" } else { "no" };
                    put(format!("{n} {} met {key}", subject.key()), met.into());
                }
            }
        }
    }
    // What more Foos cost, between every two sizes.
    for (small, large) in size_pairs(sizes) {
        for subject in Subject::TABLE {
            let (Some(a), Some(b)) = (stats.get(&(small, subject)), stats.get(&(large, subject)))
            else {
                continue;
            };
            let at = |what: &str| format!("{small}-{large} {} {what}", subject.key());
            let more = (large - small) as f64;
            if let (Some(x), Some(y)) = (a.converged(), b.converged()) {
                put(at("per-foo"), format!("{:.2} s", (y - x) / more));
                put(at("per-100"), format!("{:.1} s", (y - x) / more * 100.0));
            }
            if let Some(slope) = slope(a.cpu, b.cpu, more) {
                put(at("cpu-slope"), format!("{:.0} ms", slope * 1000.0));
            }
            if let Some(slope) = slope(a.rss, b.rss, more) {
                put(at("rss-slope"), format!("{slope:.2} MiB"));
            }
        }
    }
    for ((n, _), runs) in results.iter().filter(|((_, s), _)| *s == Subject::Go) {
        if let Some(bytes) = runs.iter().find_map(|m| m.cached_bytes) {
            let kib = |b: usize| format!("{:.0} KiB", b as f64 / 1024.0);
            let share =
                |b: usize| format!("{:.0} %", 100.0 * b as f64 / bytes.listed.max(1) as f64);
            put(format!("{n} json"), kib(bytes.listed));
            put(format!("{n} managed"), kib(bytes.managed_fields));
            put(format!("{n} managed-share"), share(bytes.managed_fields));
            put(format!("{n} cached"), kib(bytes.step_8));
            put(format!("{n} cached-share"), share(bytes.step_8));
        }
    }
    for loc in lines {
        put(format!("loc {}", loc.key), loc.lines.to_string());
    }
    for (key, &bytes) in &conditions.binaries {
        put(
            format!("binary {key}"),
            mib(bytes as f64 / (1024.0 * 1024.0)),
        );
    }
    found
}

/// Each size with the next larger one: the segments of the cost curve.
fn size_pairs(sizes: &[usize]) -> Vec<(usize, usize)> {
    let mut sorted = sizes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.windows(2).map(|w| (w[0], w[1])).collect()
}

/// How much the median grows per 100 more Foos, from `more` more.
fn slope(small: Option<Spread>, large: Option<Spread>, more: f64) -> Option<f64> {
    Some((large?.mid - small?.mid) / more * 100.0)
}

/// The tables the page shows, each between anchors it includes by name.
fn report(
    sizes: &[usize],
    results: &Results,
    build: Option<(Duration, Duration)>,
    conditions: &Conditions,
    lines: &[LinesOfCode],
) -> String {
    let Conditions {
        idle_seconds,
        repeat,
        ..
    } = *conditions;
    let stats = stats(results);
    // The cells that are also figures are read from them, formatted once.
    let figures = figures(sizes, results, conditions, lines);
    let figure = |key: String| figures.get(&key).map_or("-", String::as_str);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Written by `cargo xtask bench`; do not edit. Its figures, as data: the .json beside it. -->\n"
    );
    let _ = writeln!(out, "<!-- ANCHOR: main -->");
    let _ = writeln!(
        out,
        "Each figure: the median of {repeat} runs, with the lowest and highest in brackets; \
         ratios are of medians. A run not converged after {} is counted as slower than any \
         that did. CPU time: user and system, from the Foos' creation to convergence.\n",
        conditions.limit_shown()
    );
    let _ = writeln!(
        out,
        "| Foos | Subject | Converged in | vs Go | vs floor | vs floor, 2 in flight | CPU time | Peak RSS | API writes |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for &n in sizes {
        for subject in Subject::TABLE {
            let Some(s) = stats.get(&(n, subject)) else {
                continue;
            };
            let of = |other: Subject| stats.get(&(n, other)).and_then(Stats::converged);
            let vs = |other: Subject| {
                if other == subject || subject == Subject::BareClient {
                    String::new()
                } else {
                    ratio(s.converged(), of(other)).unwrap_or_else(|| "-".into())
                }
            };
            let shown = |x: Option<Spread>, decimals, unit| {
                x.map_or("-".into(), |x: Spread| x.shown(decimals, unit))
            };
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
                subject.label(),
                s.converge_cell(conditions.limit(n)),
                vs(Subject::Go),
                vs(Subject::BareClient),
                if subject == Subject::FloorWorkers {
                    String::new()
                } else {
                    vs(Subject::FloorWorkers)
                },
                shown(s.cpu, 2, "s"),
                shown(s.rss, 1, "MiB"),
                shown(s.writes, 0, ""),
            );
        }
    }
    let _ = writeln!(out, "<!-- ANCHOR_END: main -->");

    let pairs = size_pairs(sizes);
    if !pairs.is_empty() {
        let _ = writeln!(out, "\n<!-- ANCHOR: cost -->");
        let _ = writeln!(
            out,
            "What 100 more Foos cost, from the medians at each size and the next:\n\n\
             | Foos | Subject | CPU time | Peak RSS | Converged in |\n\
             |---|---|---:|---:|---:|"
        );
        for (small, large) in pairs {
            for subject in Subject::TABLE {
                if !(stats.contains_key(&(small, subject)) && stats.contains_key(&(large, subject)))
                {
                    continue;
                }
                let at = |what: &str| format!("{small}-{large} {} {what}", subject.key());
                let _ = writeln!(
                    out,
                    "| {small} → {large} | {} | {} | {} | {} |",
                    subject.label(),
                    figure(at("cpu-slope")),
                    figure(at("rss-slope")),
                    figure(at("per-100")),
                );
            }
        }
        let _ = writeln!(out, "<!-- ANCHOR_END: cost -->");
    }

    if let Some(&largest) = sizes.iter().max() {
        let _ = writeln!(out, "\n<!-- ANCHOR: memory -->");
        let _ = writeln!(
            out,
            "Resident memory at the end of the runs at {largest} Foos (medians), anonymous \
             (heap, stacks) + file-backed (the binary and libraries):\n"
        );
        for subject in Subject::TABLE {
            if let Some(Stats {
                anon: Some(anon),
                file: Some(file),
                ..
            }) = stats.get(&(largest, subject))
            {
                let binary = figures
                    .get(&format!("binary {}", subject.program().key()))
                    .map_or(String::new(), |size| format!(" (its binary: {size})"));
                let _ = writeln!(
                    out,
                    "- {}: {anon:.1} MiB + {file:.1} MiB{binary}",
                    subject.label()
                );
            }
        }
        for &n in sizes {
            if figures.contains_key(&format!("{n} json")) {
                let _ = writeln!(
                    out,
                    "\n{n} Foos and their Deployments as listed after convergence: {} of \
                     JSON (what Go and step 7 cache), of which managedFields {} ({}); \
                     step 8 caches {} of it ({}).",
                    figure(format!("{n} json")),
                    figure(format!("{n} managed")),
                    figure(format!("{n} managed-share")),
                    figure(format!("{n} cached")),
                    figure(format!("{n} cached-share")),
                );
            }
        }
        let _ = writeln!(out, "<!-- ANCHOR_END: memory -->");
    }

    let idle: Vec<(usize, Subject, f64)> = stats
        .iter()
        .filter_map(|(&(n, subject), s)| Some((n, subject, s.idle?)))
        .collect();
    if !idle.is_empty() {
        let _ = writeln!(out, "\n<!-- ANCHOR: idle -->");
        let _ = writeln!(
            out,
            "| Foos | Subject | Writes in {idle_seconds} s idle |\n|---:|---|---:|"
        );
        for (n, subject, writes) in idle {
            let _ = writeln!(out, "| {n} | {} | {writes:.0} |", subject.label());
        }
        let _ = writeln!(out, "<!-- ANCHOR_END: idle -->");
    }

    flow_report(&mut out, sizes, &stats, conditions);
    timeline_report(&mut out, results);

    let _ = writeln!(out, "\n<!-- ANCHOR: requests -->");
    let _ = writeln!(
        out,
        "*API writes*: creates, updates, patches and applies of Foos, Deployments and Events \
         while the run converged (kube-apiserver's `apiserver_request_total`), without \
         `deployments/status`, which only kube-controller-manager writes. They include the \
         benchmark's own Foo creates and kube-controller-manager's Events. All requests by verb \
         and resource, medians over the runs (the LISTs include the benchmark's polling):\n"
    );
    for ((n, subject), runs) in results {
        let detail: Vec<String> = request_medians(runs)
            .into_iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            out,
            "- {n} Foos, {}: {}",
            subject.label(),
            detail.join(", ")
        );
    }
    let _ = writeln!(out, "<!-- ANCHOR_END: requests -->");
    let _ = writeln!(
        out,
        "\nLines of code (non-blank, non-comment, without tests):"
    );
    for loc in lines {
        let _ = writeln!(out, "- {}: {}", loc.what, loc.lines);
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

/// The fastest and the slowest converged run of `runs` that have a
/// [`Timeline`], each named so (`fastest`, `slowest`): the two runs whose
/// difference the page explains.
fn extremes(runs: &[Measurement]) -> Option<[(&'static str, &Measurement, &Timeline); 2]> {
    let timed = || {
        runs.iter()
            .filter(|m| m.unconverged.is_none())
            .filter_map(|m| Some((m, m.timeline.as_ref()?)))
    };
    if timed().count() < 2 {
        return None;
    }
    let fastest = timed().min_by(|a, b| a.0.converge.cmp(&b.0.converge))?;
    let slowest = timed().max_by(|a, b| a.0.converge.cmp(&b.0.converge))?;
    Some([
        ("fastest", fastest.0, fastest.1),
        ("slowest", slowest.0, slowest.1),
    ])
}

/// A [`Timeline`]'s figures as the page shows them, by name.
fn timeline_figures(m: &Measurement, t: &Timeline) -> [(&'static str, String); 13] {
    [
        ("converged", format!("{:.1} s", m.converge.as_secs_f64())),
        ("last-seen", format!("{:.1} s", t.last_seen)),
        ("last-created", format!("{:.1} s", t.last_created)),
        ("syncs", format!("{}", t.syncs)),
        ("sync-ms", format!("{:.1} ms", t.sync_ms)),
        ("busy", format!("{:.1} s", t.busy)),
        ("busy-share", format!("{:.0} %", t.busy_share * 100.0)),
        ("wait", format!("{:.1} s", t.wait_ms / 1000.0)),
        ("wait-max", format!("{:.1} s", t.wait_max_ms / 1000.0)),
        ("requests", format!("{}", t.requests)),
        ("request-ms", format!("{:.1} ms", t.request_ms)),
        ("request-p90", format!("{:.1} ms", t.request_p90_ms)),
        ("request-total", format!("{:.1} s", t.request_total)),
    ]
}

/// The tables of where the time went: for each flow-on subject at each
/// size, its fastest and slowest run taken apart ([`Timeline`]), a row a
/// measure and a column a run.
fn timeline_report(out: &mut String, results: &Results) {
    // Each row: its label, the figure it shows, and the one in brackets.
    const ROWS: [(&str, &str, Option<&str>); 10] = [
        ("Converged", "converged", None),
        ("Last Foo seen", "last-seen", None),
        ("Last Deployment created", "last-created", None),
        ("Syncs", "syncs", None),
        ("Median sync", "sync-ms", None),
        (
            "Workers busy (share of their time)",
            "busy",
            Some("busy-share"),
        ),
        (
            "Wait in the queue: median (longest)",
            "wait",
            Some("wait-max"),
        ),
        ("Requests of the syncs", "requests", None),
        (
            "Their latency: median (90th percentile)",
            "request-ms",
            Some("request-p90"),
        ),
        ("Their latency summed", "request-total", None),
    ];
    let mut tables = Vec::new();
    for (&(n, subject), runs) in results {
        let Some(extremes) = extremes(runs) else {
            continue;
        };
        let [fastest, slowest] = extremes.map(|(_, m, t)| {
            let figures = timeline_figures(m, t);
            let figure = |key: &str| {
                figures
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or_else(|| "-".to_string(), |(_, value)| value.clone())
            };
            ROWS.map(|(_, shown, beside)| match beside {
                Some(beside) => format!("{} ({})", figure(shown), figure(beside)),
                None => figure(shown),
            })
        });
        let mut table = format!(
            "| {n} Foos, {} | Fastest run | Slowest run |\n|---|---:|---:|\n",
            subject.label()
        );
        for (i, (row, ..)) in ROWS.iter().enumerate() {
            let _ = writeln!(table, "| {row} | {} | {} |", fastest[i], slowest[i]);
        }
        tables.push(table);
    }
    if tables.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n<!-- ANCHOR: spread -->");
    let _ = write!(out, "{}", tables.join("\n"));
    let _ = writeln!(out, "<!-- ANCHOR_END: spread -->");
}

/// The table of the flow's cost: each Rust step's convergence with the flow
/// off and on, run after run, when the flow subjects ran.
fn flow_report(
    out: &mut String,
    sizes: &[usize],
    stats: &BTreeMap<(usize, Subject), Stats>,
    conditions: &Conditions,
) {
    let mut rows = Vec::new();
    for &n in sizes {
        let limit = conditions.limit(n);
        for on in [Subject::Step7Flow, Subject::Step8Flow] {
            let Some(off) = on.flow_off() else { continue };
            if let (Some(a), Some(b)) = (stats.get(&(n, off)), stats.get(&(n, on))) {
                let step = if off == Subject::Step7 {
                    "step 7"
                } else {
                    "step 8"
                };
                let lines = b.flow_lines.map_or("-".into(), |l| format!("{l:.0}"));
                rows.push(format!(
                    "| {n} | {step} | {} | {} | {} | {lines} |",
                    a.converge_cell(limit),
                    b.converge_cell(limit),
                    ratio(b.converged(), a.converged()).unwrap_or_else(|| "-".into()),
                ));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n<!-- ANCHOR: flow -->");
    let _ = writeln!(
        out,
        "| Foos | Step | Flow off | Flow on | on / off | Flow lines |\n|---:|---|---:|---:|---:|---:|"
    );
    for row in rows {
        let _ = writeln!(out, "{row}");
    }
    let _ = writeln!(out, "<!-- ANCHOR_END: flow -->");
}

/// The colour of a subject in the charts.
fn colour(subject: Subject) -> &'static str {
    match subject {
        Subject::Go => "#4e79a7",
        Subject::Step7 | Subject::Step7Flow => "#e15759",
        Subject::Step8 | Subject::Step8Flow => "#59a14f",
        Subject::FloorWorkers => "#b07aa1",
        Subject::BareClient => "#9c9c9c",
    }
}

/// A horizontal bar chart of convergence times, as SVG: each bar the
/// median, its whisker the lowest and highest run that converged. Each size
/// has its own scale, its slowest run the full width: Go's rate limit makes
/// its time at 2,000 Foos a hundred times step 8's at 100.
fn chart(sizes: &[usize], results: &Results, conditions: &Conditions) -> String {
    let stats = stats(results);
    let (left, width, bar_height, gap) = (230.0, 400.0, 18.0, 6.0);
    let mut y = 30.0;
    let mut body = String::new();
    for &n in sizes {
        let limit = conditions.limit(n);
        let max = results
            .iter()
            .filter(|((size, _), _)| *size == n)
            .flat_map(|(_, runs)| runs.iter())
            .map(|m| m.converge.as_secs_f64())
            .fold(1.0, f64::max);
        let _ = writeln!(
            body,
            r#"<text x="10" y="{y}" font-weight="bold">{n} Foos</text><text x="{left}" y="{y}" font-size="11">full width: {max:.0} s</text>"#
        );
        y += 10.0;
        for subject in Subject::TABLE {
            let Some(s) = stats.get(&(n, subject)) else {
                continue;
            };
            let x = |secs: f64| left + (secs.min(max) / max * width).max(1.0);
            let _ = writeln!(
                body,
                r#"<text x="10" y="{}">{}</text>"#,
                y + bar_height - 5.0,
                subject.label()
            );
            let (end, label) = match s.converged() {
                Some(secs) => (x(secs), format!("{secs:.1} s")),
                None => (x(max), format!("over {} s", limit.as_secs())),
            };
            let _ = writeln!(
                body,
                r#"<rect x="{left}" y="{y}" width="{:.1}" height="{bar_height}" fill="{}"/>"#,
                end - left,
                colour(subject)
            );
            let mut label_x = end;
            if let Some(c) = s.converge.filter(|c| c.runs > 1 && c.low.is_finite()) {
                let (a, b) = (x(c.low), x(c.high));
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
            let note = if s.unconverged > 0 {
                format!(" ({} not converged)", s.unconverged)
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

/// A step for an axis from 0 to at least `highest`, 1, 2 or 5 times a power
/// of ten, and how many steps: four or five ticks with round values.
fn axis(highest: f64) -> (f64, u32) {
    if highest <= 0.0 {
        return (1.0, 1);
    }
    let rough = highest / 4.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= rough)
        .unwrap_or(10.0 * magnitude);
    (step, (highest / step).ceil() as u32)
}

/// Two line charts, as SVG: each subject's median CPU time and peak RSS
/// against the number of Foos, a point per size, with the slope per 100
/// Foos beside the line's end.
fn cost_chart(sizes: &[usize], results: &Results) -> String {
    let stats = stats(results);
    let largest = sizes.iter().copied().max().unwrap_or(1).max(1) as f64;
    let (panel_width, panel_height, first_top, left, gap) = (300.0, 200.0, 40.0, 50.0, 75.0);
    let label_width = 260.0;
    let mut body = String::new();
    // Title, unit, the measure, and how its growth per 100 Foos is shown.
    type Panel = (
        &'static str,
        &'static str,
        fn(&Stats) -> Option<Spread>,
        fn(f64) -> String,
    );
    let panels: [Panel; 2] = [
        (
            "CPU time to converge",
            "s",
            |s| s.cpu,
            |growth| format!("{:.0} ms", growth * 1000.0),
        ),
        (
            "Peak RSS",
            "MiB",
            |s| s.rss,
            |growth| format!("{growth:.2} MiB"),
        ),
    ];
    for (i, (title, unit, measure, growth_shown)) in panels.into_iter().enumerate() {
        // The panels one above the other, so that each is legible in a page's column.
        let x0 = left;
        let top = first_top + i as f64 * (panel_height + gap);
        let points: Vec<(Subject, Vec<(f64, f64)>)> = Subject::TABLE
            .into_iter()
            .map(|subject| {
                let line = sizes
                    .iter()
                    .filter_map(|&n| {
                        let value = measure(stats.get(&(n, subject))?)?.mid;
                        Some((n as f64, value))
                    })
                    .collect();
                (subject, line)
            })
            .filter(|(_, line): &(Subject, Vec<(f64, f64)>)| !line.is_empty())
            .collect();
        let (step, ticks) = axis(
            points
                .iter()
                .flat_map(|(_, line)| line.iter().map(|p| p.1))
                .fold(0.0, f64::max),
        );
        let highest = step * ticks as f64;
        let x = |n: f64| x0 + n / largest * panel_width;
        let y = |v: f64| top + panel_height - v / highest * panel_height;
        let _ = writeln!(
            body,
            r#"<text x="{x0}" y="{:.1}" font-weight="bold">{title} ({unit}) against Foos</text>"#,
            top - 20.0
        );
        let _ = writeln!(
            body,
            r#"<path d="M{x0} {top}V{bottom}H{right}" stroke="black" fill="none"/>"#,
            bottom = top + panel_height,
            right = x0 + panel_width
        );
        let decimals = if step < 1.0 { 1 } else { 0 };
        for tick in 0..=ticks {
            let value = step * tick as f64;
            let _ = writeln!(
                body,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{value:.decimals$}</text>"#,
                x0 - 4.0,
                y(value) + 4.0
            );
        }
        for &n in sizes {
            let _ = writeln!(
                body,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{n}</text>"#,
                x(n as f64),
                top + panel_height + 15.0
            );
        }
        // The labels at the right, one per line, in the order of the lines' ends.
        let mut ends: Vec<(f64, Subject, String)> = Vec::new();
        for (subject, line) in &points {
            let path: Vec<String> = line
                .iter()
                .map(|&(n, v)| format!("{:.1},{:.1}", x(n), y(v)))
                .collect();
            let _ = writeln!(
                body,
                r#"<polyline points="{}" stroke="{c}" stroke-width="2" fill="none"/>"#,
                path.join(" "),
                c = colour(*subject)
            );
            for &(n, v) in line {
                let _ = writeln!(
                    body,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                    x(n),
                    y(v),
                    colour(*subject)
                );
            }
            // The growth along the last segment: where the line is heading.
            let last = line[line.len() - 1];
            let per_100 = match line.len().checked_sub(2).map(|i| line[i]) {
                Some(before) if last.0 > before.0 => {
                    let growth = (last.1 - before.1) / (last.0 - before.0) * 100.0;
                    format!(": {} per 100 from {:.0}", growth_shown(growth), before.0)
                }
                _ => String::new(),
            };
            ends.push((y(last.1), *subject, format!("{}{per_100}", subject.short())));
        }
        ends.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut next_free = top;
        for (end_y, subject, text) in ends {
            let label_y = end_y.max(next_free) + 4.0;
            next_free = label_y + 9.0;
            let _ = writeln!(
                body,
                r#"<text x="{:.1}" y="{label_y:.1}" font-size="11" fill="{}">{text}</text>"#,
                x0 + panel_width + 6.0,
                colour(subject)
            );
        }
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <title>CPU time from the Foos' creation to convergence, and peak RSS, against the number of Foos: medians, with the growth per 100 Foos along the last segment</title>\n{body}</svg>\n",
        w = panel_width + left + label_width,
        h = first_top + 2.0 * panel_height + gap + 30.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the runs of these tests were made: 3 of each, no binary sizes.
    fn conditions() -> Conditions {
        Conditions {
            idle_seconds: 300,
            repeat: 3,
            limits: [
                (100, Duration::from_secs(300)),
                (500, Duration::from_secs(300)),
            ]
            .into(),
            binaries: BTreeMap::new(),
        }
    }

    #[test]
    fn each_program_is_sized_once_under_the_subject_it_belongs_to() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: usize| {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![0u8; bytes]).unwrap();
            path
        };
        let binaries = Binaries {
            go: file("go", 4),
            step_7: file("step-7", 7),
            step_8: file("step-8", 8),
            floor: file("floor", 1),
        };
        let sizes = binaries.sizes().unwrap();
        assert_eq!(
            sizes,
            BTreeMap::from([
                ("floor".to_string(), 1),
                ("go".to_string(), 4),
                ("step7".to_string(), 7),
                ("step8".to_string(), 8),
            ])
        );
        assert_eq!(binaries.of(Subject::FloorWorkers), binaries.floor);
        assert_eq!(binaries.of(Subject::Step8Flow), binaries.step_8);
    }

    /// A run that converged in `secs`, with `cpu` seconds, `rss` MiB and
    /// `writes` status PUTs.
    fn run(secs: f64, cpu: f64, rss: u64, writes: f64) -> Measurement {
        Measurement {
            converge: Duration::from_secs_f64(secs),
            cpu: Some(cpu),
            peak_rss_kib: Some(rss * 1024),
            requests: BTreeMap::from([("PUT foos/status".to_string(), writes)]),
            ..Measurement::default()
        }
    }

    fn results() -> Results {
        BTreeMap::from([
            (
                (100, Subject::Go),
                vec![
                    run(20.0, 1.0, 30, 100.0),
                    run(21.0, 1.2, 31, 100.0),
                    run(19.0, 1.1, 32, 102.0),
                ],
            ),
            (
                (500, Subject::Go),
                vec![
                    run(100.0, 5.0, 38, 500.0),
                    run(101.0, 5.4, 38, 510.0),
                    run(99.0, 5.2, 39, 505.0),
                ],
            ),
            (
                (100, Subject::Step8),
                vec![
                    run(2.0, 0.2, 13, 100.0),
                    run(3.0, 0.3, 14, 100.0),
                    run(2.5, 0.25, 14, 100.0),
                ],
            ),
            (
                (500, Subject::Step8),
                vec![
                    run(10.0, 1.0, 20, 500.0),
                    run(12.0, 1.1, 21, 500.0),
                    run(8.0, 0.9, 20, 500.0),
                ],
            ),
        ])
    }

    #[test]
    fn a_target_is_met_when_its_ratio_as_the_page_shows_it_is_within_its_bound() {
        let mut results = results();
        let f = figures(&[100, 500], &results, &conditions(), &[]);
        // Step 8 at 500: 10 s against Go's 100 s, 1.0 s of CPU against 5.2 s,
        // 20 MiB against 38 MiB.
        assert_eq!(f["500 step8 met time-vs-go"], "yes");
        assert_eq!(f["500 step8 met cpu-vs-go"], "yes");
        assert_eq!(f["500 step8 met rss-vs-go"], "no");
        // No floor and no flow run: no verdict against them.
        assert!(!f.contains_key("500 step8 met time-vs-floor"));
        assert!(!f.contains_key("500 step8 met flow"));
        // 17.2 MiB against 38 MiB is 0.4526..., shown as 0.45: met.
        for m in results.get_mut(&(500, Subject::Step8)).unwrap() {
            m.peak_rss_kib = Some((17.2 * 1024.0) as u64);
        }
        let f = figures(&[100, 500], &results, &conditions(), &[]);
        assert_eq!(f["500 step8/go rss"], "0.45");
        assert_eq!(f["500 step8 met rss-vs-go"], "yes");
    }

    #[test]
    fn each_figure_is_the_median_of_the_runs_with_the_lowest_and_highest() {
        let f = figures(&[100, 500], &results(), &conditions(), &[]);
        for (key, value) in [
            ("500 step8 converged", "10.0 s"),
            ("500 step8 fastest", "8.0 s"),
            ("500 step8 slowest", "12.0 s"),
            ("500 step8 cpu", "1.00 s"),
            ("500 step8 cpu-lowest", "0.90 s"),
            ("500 step8 cpu-per-foo", "2.00 ms"),
            ("500 step8 rss", "20.0 MiB"),
            ("500 step8 rss-highest", "21.0 MiB"),
            ("500 go writes", "505"),
            ("500 go PUT foos/status", "505"),
            ("500 step8 vs-go", "0.10"),
            ("500 step8/go rss", "0.53"),
        ] {
            assert_eq!(f.get(key).map(String::as_str), Some(value), "{key}");
        }
        // No subject is compared with itself, and a floor that did not run gives no ratio.
        assert_eq!(f.get("500 go vs-go"), None);
        assert_eq!(f.get("500 step8 vs-floor"), None);
    }

    #[test]
    fn a_comparison_is_a_finding_only_when_every_run_is_on_one_side() {
        let f = figures(&[100, 500], &results(), &conditions(), &[]);
        let verdict = |key: &str| f.get(key).map(String::as_str);
        assert_eq!(
            verdict("500 step8/go converged-verdict"),
            Some("lower in every run")
        );
        let overlapping = BTreeMap::from([
            (
                (500, Subject::Step7),
                vec![
                    run(9.0, 1.0, 26, 1.0),
                    run(21.0, 1.0, 26, 1.0),
                    run(15.0, 1.0, 26, 1.0),
                ],
            ),
            (
                (500, Subject::Step8),
                results()[&(500, Subject::Step8)].clone(),
            ),
        ]);
        let f = figures(&[500], &overlapping, &conditions(), &[]);
        assert_eq!(
            f.get("500 step8/step7 converged-verdict")
                .map(String::as_str),
            Some("inconclusive: the runs overlap")
        );
        assert_eq!(
            f.get("500 step8/step7 rss-verdict").map(String::as_str),
            Some("lower in every run")
        );
        // 0.46 s against 0.49 s is 0.5 s against 0.5 s on the page: no finding.
        let close = BTreeMap::from([
            (
                (500, Subject::Step7),
                vec![run(0.46, 1.0, 26, 1.0), run(0.46, 1.0, 26, 1.0)],
            ),
            (
                (500, Subject::Step8),
                vec![run(0.49, 1.0, 20, 1.0), run(0.49, 1.0, 20, 1.0)],
            ),
        ]);
        let f = figures(&[500], &close, &conditions(), &[]);
        assert_eq!(
            f.get("500 step7/step8 converged-verdict")
                .map(String::as_str),
            None,
            "only the pairs the page can use"
        );
        assert_eq!(
            f.get("500 step8/step7 converged-verdict")
                .map(String::as_str),
            Some("inconclusive: the runs overlap")
        );
        let single = BTreeMap::from([
            ((500, Subject::Step7), vec![run(9.0, 1.0, 26, 1.0)]),
            ((500, Subject::Step8), vec![run(8.0, 1.0, 20, 1.0)]),
        ]);
        let f = figures(&[500], &single, &conditions(), &[]);
        assert_eq!(
            f.get("500 step8/step7 converged-verdict")
                .map(String::as_str),
            Some("one run: no spread to judge by")
        );
    }

    #[test]
    fn two_sizes_give_what_100_more_foos_cost() {
        let f = figures(&[100, 500], &results(), &conditions(), &[]);
        // Go: 1.1 s to 5.2 s of CPU, 31 to 38 MiB, 20 s to 100 s, over 400 more Foos.
        assert_eq!(
            f.get("100-500 go cpu-slope").map(String::as_str),
            Some("1025 ms")
        );
        assert_eq!(
            f.get("100-500 go rss-slope").map(String::as_str),
            Some("1.75 MiB")
        );
        assert_eq!(
            f.get("100-500 go per-foo").map(String::as_str),
            Some("0.20 s")
        );
        let table = report(&[100, 500], &results(), None, &conditions(), &[]);
        assert!(
            table.contains("| 100 → 500 | Go sample-controller | 1025 ms | 1.75 MiB | 20.0 s |"),
            "{table}"
        );
    }

    #[test]
    fn a_run_that_did_not_converge_counts_as_slower_than_any_that_did() {
        let mut runs = results()[&(500, Subject::Step8)].clone();
        runs[0].unconverged = Some("499/500 Deployments".into());
        let s = Stats::of(&runs);
        assert_eq!(s.converged(), Some(12.0));
        assert_eq!(
            s.converge_cell(Duration::from_secs(300)),
            "12.0 s (8.0–over 300); 1 of 3 did not converge in 300 s"
        );
        runs[1].unconverged = Some("0/500 Deployments".into());
        let s = Stats::of(&runs);
        assert_eq!(s.converged(), None);
        assert!(
            s.converge_cell(Duration::from_secs(300))
                .starts_with("over 300 s")
        );
    }

    #[test]
    fn a_size_added_to_an_earlier_run_keeps_its_runs_and_its_own_timeout() {
        let earlier = (conditions(), vec![100, 500], results());
        let added = Conditions {
            idle_seconds: 0,
            repeat: 3,
            limits: [
                (500, Duration::from_secs(600)),
                (2000, Duration::from_secs(600)),
            ]
            .into(),
            binaries: BTreeMap::new(),
        };
        let again = vec![run(9.0, 0.9, 19, 500.0)];
        let big = vec![run(40.0, 4.0, 30, 2000.0)];
        let new_runs = BTreeMap::from([
            ((500, Subject::Step8), again.clone()),
            ((2000, Subject::Step8), big.clone()),
        ]);
        let (conditions, sizes, results) = added_to(earlier, (added, vec![2000, 500], new_runs));
        assert_eq!(sizes, [100, 500, 2000]);
        // 100 is the earlier run's, with its runs and timeout; 500 was run again.
        assert_eq!(results[&(100, Subject::Go)].len(), 3);
        assert_eq!(results[&(500, Subject::Step8)].len(), again.len());
        assert!(!results.contains_key(&(500, Subject::Go)));
        assert_eq!(results[&(2000, Subject::Step8)].len(), big.len());
        assert_eq!(conditions.limit(100), Duration::from_secs(300));
        assert_eq!(conditions.limit(2000), Duration::from_secs(600));
        assert_eq!(conditions.idle_seconds, 300);
        assert_eq!(
            conditions.limit_shown(),
            "300 s (600 s at 500 Foos, 600 s at 2000 Foos)"
        );
        let data = Data::of(&sizes, &results, &conditions, &[]);
        let (read, ..) = runs_from_data(&serde_json::to_string(&data).unwrap()).unwrap();
        assert_eq!(read.limits, conditions.limits);
    }

    #[test]
    fn runs_are_added_only_to_runs_of_the_same_programs_and_repeats() {
        let mut before = conditions();
        before.binaries = BTreeMap::from([("step8".to_string(), 100)]);
        let same = BTreeMap::from([("step8".to_string(), 100)]);
        assert!(same_programs(&before, &same, 3).is_ok());
        let rebuilt = BTreeMap::from([("step8".to_string(), 101)]);
        let refused = same_programs(&before, &rebuilt, 3).unwrap_err().to_string();
        assert!(
            refused.contains("step8 is 101 bytes, but the earlier run's was 100 bytes"),
            "{refused}"
        );
        let refused = same_programs(&before, &same, 5).unwrap_err().to_string();
        assert!(refused.contains("--repeat 3"), "{refused}");
    }

    #[test]
    fn a_report_written_again_from_the_recorded_runs_is_the_same() {
        let mut results = results();
        results.get_mut(&(500, Subject::Go)).unwrap()[0].cached_bytes = Some(CachedBytes {
            listed: 2_000_000,
            managed_fields: 900_000,
            step_8: 550_000,
        });
        results.get_mut(&(100, Subject::Step8)).unwrap()[1].unconverged = Some("late".into());
        for (i, m) in results
            .get_mut(&(500, Subject::Step8))
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            m.timeline = Some(timeline(4.0 + i as f64));
        }
        let mut conditions = conditions();
        conditions.binaries = BTreeMap::from([("step8".to_string(), 15_728_640)]);
        let data = Data::of(&[100, 500], &results, &conditions, &[]);
        let (conditions, sizes, again) =
            runs_from_data(&serde_json::to_string(&data).unwrap()).unwrap();
        assert_eq!(sizes, [100, 500]);
        assert_eq!(conditions.limit(500), Duration::from_secs(300));
        assert_eq!(conditions.binaries["step8"], 15_728_640);
        assert_eq!(
            figures(&sizes, &again, &conditions, &[]),
            figures(&sizes, &results, &conditions, &[])
        );
        assert_eq!(
            figures(&sizes, &again, &conditions, &[])["binary step8"],
            "15.0 MiB"
        );
        let first = Conditions {
            idle_seconds: 300,
            repeat: 3,
            limits: [
                (100, Duration::from_secs(300)),
                (500, Duration::from_secs(300)),
            ]
            .into(),
            binaries: BTreeMap::new(),
        };
        assert_eq!(
            report(&sizes, &again, None, &conditions, &[]),
            report(&sizes, &results, None, &first, &[])
        );
    }

    /// A flow-on run's timeline whose workers were busy `busy` seconds.
    fn timeline(busy: f64) -> Timeline {
        Timeline {
            last_seen: 1.25,
            last_created: busy + 0.5,
            syncs: 1000,
            sync_ms: 8.0,
            busy,
            busy_share: 0.9,
            wait_ms: 120.0,
            wait_max_ms: 2500.0,
            requests: 1500,
            request_ms: 5.0,
            request_p90_ms: 9.25,
            request_total: 7.5,
        }
    }

    #[test]
    fn the_spread_table_sets_the_slowest_flow_run_beside_the_fastest() {
        let mut runs = vec![
            run(9.0, 1.0, 30, 0.0),
            run(6.0, 1.0, 30, 0.0),
            run(12.0, 1.0, 30, 0.0),
        ];
        for (m, busy) in runs.iter_mut().zip([8.0, 5.0, 11.0]) {
            m.timeline = Some(timeline(busy));
        }
        let results = BTreeMap::from([((500, Subject::Step8Flow), runs)]);
        let found = figures(&[500], &results, &conditions(), &[]);
        assert_eq!(found["500 step8-flow fastest-run converged"], "6.0 s");
        assert_eq!(found["500 step8-flow fastest-run busy"], "5.0 s");
        assert_eq!(found["500 step8-flow slowest-run busy"], "11.0 s");
        assert_eq!(found["500 step8-flow slowest-run busy-share"], "90 %");
        assert_eq!(found["500 step8-flow slowest-run wait-max"], "2.5 s");
        let table = report(&[500], &results, None, &conditions(), &[]);
        let spread = table
            .split("<!-- ANCHOR: spread -->\n")
            .nth(1)
            .and_then(|t| t.split("<!-- ANCHOR_END: spread -->").next())
            .unwrap();
        assert_eq!(
            spread,
            "| 500 Foos, Rust step 8, flow on | Fastest run | Slowest run |
|---|---:|---:|
| Converged | 6.0 s | 12.0 s |
| Last Foo seen | 1.2 s | 1.2 s |
| Last Deployment created | 5.5 s | 11.5 s |
| Syncs | 1000 | 1000 |
| Median sync | 8.0 ms | 8.0 ms |
| Workers busy (share of their time) | 5.0 s (90 %) | 11.0 s (90 %) |
| Wait in the queue: median (longest) | 0.1 s (2.5 s) | 0.1 s (2.5 s) |
| Requests of the syncs | 1500 | 1500 |
| Their latency: median (90th percentile) | 5.0 ms (9.2 ms) | 5.0 ms (9.2 ms) |
| Their latency summed | 7.5 s | 7.5 s |
"
        );
    }

    #[test]
    fn a_chart_axis_steps_in_round_values_past_the_highest_point() {
        assert_eq!(axis(1.99), (0.5, 4));
        assert_eq!(axis(38.6), (10.0, 4));
        assert_eq!(axis(0.0).1, 1);
    }

    #[test]
    fn the_report_has_each_section_the_page_includes_by_anchor() {
        let mut results = results();
        results.get_mut(&(100, Subject::Go)).unwrap()[0].idle_writes = Some(2124.0);
        results.insert(
            (500, Subject::Step8Flow),
            results[&(500, Subject::Step8)].clone(),
        );
        for m in results.get_mut(&(500, Subject::Step8Flow)).unwrap() {
            m.timeline = Some(timeline(4.0));
        }
        let table = report(&[100, 500], &results, None, &conditions(), &[]);
        for anchor in [
            "main", "cost", "memory", "idle", "flow", "spread", "requests",
        ] {
            assert!(
                table.contains(&format!("<!-- ANCHOR: {anchor} -->")),
                "{anchor}"
            );
            assert!(
                table.contains(&format!("<!-- ANCHOR_END: {anchor} -->")),
                "{anchor}"
            );
        }
        let page =
            std::fs::read_to_string(crate::repo_root().join("book/src/performance.md")).unwrap();
        for include in crate::markdown::directives(&page) {
            let Some(anchor) = include.args.strip_prefix("outputs/performance.txt:") else {
                continue;
            };
            assert!(
                table.contains(&format!("<!-- ANCHOR: {anchor} -->")),
                "the page includes {anchor}"
            );
        }
    }
}
