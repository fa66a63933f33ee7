//! `cargo xtask first-build`: what a learner's first `cargo run --bin step-1`
//! costs, and where the time goes.
//!
//! Each revision given (by default the commit before the build cuts, and
//! `HEAD`) is exported with `git archive` into `target/first-build/`, then
//! built cold — `cargo build --offline --timings` in a fresh target
//! directory, with the crates already downloaded (`cargo fetch` first), so
//! the figure is compile time only — for each target: `step-N` (`--bin
//! step-N`), `bins` (`--bins`), and `floor`, an empty `main` with the
//! dependencies of the revision's shared crate (its root package, default
//! features on, the same lock file and profile): what any step pays before
//! compiling a line of its own; and `client`, the floor of any kube
//! program that lists Foos: an empty `main` with only kube's client (no
//! runtime), k8s-openapi, tokio, serde and schemars, as the floor pins
//! them. `--repeat` times, the runs interleaved so
//! that a slow spell of the machine does not land on one revision or target
//! only. Cargo's own timing report gives the crates and how long each took;
//! the wall and CPU time (of cargo and everything it ran) are measured
//! here. Each target directory is deleted after its run (a cold build
//! writes 1–3 GiB).
//!
//! Prints the table of the book's Performance page and writes it to
//! `book/src/outputs/NAME.txt` (`--name`, `first-build` by default), with
//! its figures as data in `NAME.json` for `{{#figure}}`. Figures, not
//! pass/fail.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use crate::measure::spread;

mod floor;

use floor::{client, floor};

/// The last commit before the first-build cuts (serde_yaml, k8s-openapi's
/// schemars feature, dependencies' debug info).
const BEFORE: &str = "3e62b6b";

/// Options of `cargo xtask first-build`.
#[derive(clap::Args, Debug)]
pub struct FirstBuildArgs {
    /// Revisions to build and compare, oldest first.
    #[arg(long, value_delimiter = ',', default_values_t = [BEFORE.to_string(), "HEAD".to_string()])]
    revs: Vec<String>,
    /// How many cold builds of each revision and target.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// What to build: `floor` (an empty main with the shared crate's
    /// dependencies), `client` (an empty main with only what a kube client
    /// that lists Foos needs), `step-N` (`--bin step-N`), `bins` (`--bins`).
    #[arg(long, value_delimiter = ',', default_value = "step-1,bins", value_parser = parse_target)]
    targets: Vec<Target>,
    /// The report's name: `book/src/outputs/NAME.txt` and `NAME.json`.
    #[arg(long, default_value = "first-build")]
    name: String,
}

/// A cargo selection a learner builds, or the floor they all stand on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    /// An empty `main` with the shared crate's dependencies.
    Floor,
    /// An empty `main` with the dependencies of [`CLIENT`] only.
    Client,
    /// `--bin step-N`.
    Step(u8),
    /// `--bins`: every step.
    Bins,
}

/// `floor`, `step-N` (a step of the registry) or `bins`.
fn parse_target(text: &str) -> Result<Target, String> {
    match text {
        "floor" => Ok(Target::Floor),
        "client" => Ok(Target::Client),
        "bins" => Ok(Target::Bins),
        _ => course::steps::parse(text)
            .filter(|_| text.starts_with("step-"))
            .map(|step| Target::Step(step.number))
            .ok_or_else(|| {
                format!(
                    "{text:?} is not a target: floor, client, bins or step-1 … step-{}",
                    course::steps::STEPS.len()
                )
            }),
    }
}

impl Target {
    /// What cargo is given, after `cargo build`.
    fn cargo_args(self) -> Vec<String> {
        match self {
            Target::Floor | Target::Client => Vec::new(),
            Target::Step(n) => vec!["--bin".into(), format!("step-{n}")],
            Target::Bins => vec!["--bins".into()],
        }
    }

    /// The table's label: `--bin step-1`, `--bins`, `floor`.
    fn label(self) -> String {
        match self {
            Target::Floor => "floor".into(),
            Target::Client => "client".into(),
            Target::Step(n) => format!("--bin step-{n}"),
            Target::Bins => "--bins".into(),
        }
    }

    /// The figures' name: `step-1`, `bins`, `floor`.
    fn key(self) -> String {
        match self {
            Target::Floor => "floor".into(),
            Target::Client => "client".into(),
            Target::Step(n) => format!("step-{n}"),
            Target::Bins => "bins".into(),
        }
    }
}

/// One cold build.
struct Run {
    wall: f64,
    cpu: f64,
    load: f64,
    /// Seconds per crate (`name vX.Y.Z`), its units summed.
    crates: BTreeMap<String, f64>,
    target_bytes: u64,
}

/// Runs the cold builds and prints (and writes) the report.
pub fn first_build(args: FirstBuildArgs) -> Result<()> {
    let root = course::workspace::repo_root();
    let work = root.join("target/first-build");
    std::fs::create_dir_all(&work)?;
    let mut sources = Vec::new();
    for rev in &args.revs {
        let commit = git(
            &root,
            &["rev-parse", "--short", &format!("{rev}^{{commit}}")],
        )?;
        let dir = work.join(format!("src-{commit}"));
        export(&root, &commit, &dir)?;
        println!("==> cargo fetch for {rev} ({commit}): downloads are not part of the figures");
        cargo(&dir, &["fetch", "--quiet"], None)?;
        if args.targets.contains(&Target::Floor) || args.targets.contains(&Target::Client) {
            floor(&dir, &work.join(format!("floor-{commit}")))?;
        }
        if args.targets.contains(&Target::Client) {
            client(
                &work.join(format!("floor-{commit}")),
                &work.join(format!("client-{commit}")),
            )?;
        }
        sources.push((rev.clone(), commit, dir));
    }

    let mut runs: BTreeMap<(usize, Target), Vec<Run>> = BTreeMap::new();
    for round in 1..=args.repeat {
        for (index, (rev, commit, dir)) in sources.iter().enumerate() {
            for &target in &args.targets {
                let target_dir = work.join(format!("target-{commit}"));
                let source = match target {
                    Target::Floor => work.join(format!("floor-{commit}")),
                    Target::Client => work.join(format!("client-{commit}")),
                    _ => dir.clone(),
                };
                println!(
                    "==> round {round}/{}: cold cargo build {} of {rev} ({commit})",
                    args.repeat,
                    target.label()
                );
                let run = cold_build(&source, &target_dir, target)?;
                println!(
                    "    {:.1} s wall, {:.1} s CPU, {} crates, load average before {:.2}",
                    run.wall,
                    run.cpu,
                    run.crates.len(),
                    run.load
                );
                runs.entry((index, target)).or_default().push(run);
            }
        }
    }

    let report = report(&sources, &args.targets, &runs)?;
    print!("\n{report}");
    let out = root.join("book/src/outputs");
    let text = out.join(format!("{}.txt", args.name));
    std::fs::write(&text, &report).with_context(|| format!("writing {}", text.display()))?;
    let data = out.join(format!("{}.json", args.name));
    let json = serde_json::to_string_pretty(&data_of(&sources, &args.targets, &runs)?)?;
    std::fs::write(&data, json + "\n").with_context(|| format!("writing {}", data.display()))?;
    println!("(written to {} and {})", text.display(), data.display());
    Ok(())
}

/// Exports `commit` into `dir` (replacing what was there), without `.git`:
/// a clean checkout as a learner's clone has it.
fn export(root: &Path, commit: &str, dir: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let archive = Command::new("git")
        .args(["archive", "--format=tar", commit])
        .current_dir(root)
        .stdout(Stdio::piped())
        .spawn()
        .context("running git archive")?;
    let status = Command::new("tar")
        .args(["-x", "-C"])
        .arg(dir)
        .stdin(archive.stdout.context("no stdout from git archive")?)
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("extracting {commit} into {} failed", dir.display());
    }
    Ok(())
}

/// One `cargo build --offline --timings` of `target` in `source`, in a fresh
/// `target_dir` that is deleted afterwards.
fn cold_build(source: &Path, target_dir: &Path, target: Target) -> Result<Run> {
    let _ = std::fs::remove_dir_all(target_dir);
    let load = load_average()?;
    let cpu_before = children_cpu_seconds();
    let started = Instant::now();
    let extra = target.cargo_args();
    let mut args = vec!["build", "--offline", "--quiet", "--timings"];
    args.extend(extra.iter().map(String::as_str));
    cargo(source, &args, Some(target_dir))?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = children_cpu_seconds() - cpu_before;
    let html = target_dir.join("cargo-timings/cargo-timing.html");
    let text =
        std::fs::read_to_string(&html).with_context(|| format!("reading {}", html.display()))?;
    let crates = crate_seconds(&text)?;
    let target_bytes = dir_bytes(target_dir);
    std::fs::remove_dir_all(target_dir)
        .with_context(|| format!("removing {}", target_dir.display()))?;
    Ok(Run {
        wall,
        cpu,
        load,
        crates,
        target_bytes,
    })
}

/// Seconds per crate from cargo's timing report: the `UNIT_DATA` array it
/// embeds (one entry per unit: a library, a build script, its run, a
/// binary), summed by crate name and version. Read from the HTML because
/// stable cargo writes its timing data nowhere else (cargo 1.95 refuses
/// `--timings=json`), and the figures are of the stable toolchain a learner
/// builds with.
fn crate_seconds(html: &str) -> Result<BTreeMap<String, f64>> {
    let start = html
        .find("const UNIT_DATA = ")
        .context("no UNIT_DATA in cargo's timing report (did its format change?)")?
        + "const UNIT_DATA = ".len();
    let end = start
        + html[start..]
            .find(";\n")
            .context("UNIT_DATA in cargo's timing report does not end")?;
    /// A unit of the report: its crate, and how long it took.
    #[derive(serde::Deserialize)]
    struct Unit {
        name: String,
        version: String,
        duration: f64,
    }
    let units: Vec<Unit> = serde_json::from_str(&html[start..end])
        .context("parsing UNIT_DATA: each unit should have a name, a version and a duration")?;
    let mut crates = BTreeMap::new();
    for unit in units {
        *crates
            .entry(format!("{} v{}", unit.name, unit.version))
            .or_insert(0.0) += unit.duration;
    }
    Ok(crates)
}

/// One revision and target of the report: its runs summed up.
struct Row {
    /// The revision as given (`HEAD`) and its commit.
    rev: String,
    commit: String,
    target: Target,
    /// Wall time: median, min, max.
    wall: (f64, f64, f64),
    /// CPU time, median.
    cpu: f64,
    crates: usize,
    target_bytes: u64,
    /// The median wall time over the floor's of the same revision, if the
    /// floor was built.
    vs_floor: Option<f64>,
    /// Median seconds per crate, slowest first.
    slowest: Vec<(f64, String)>,
}

/// The rows of the report, by target, then revision.
fn rows(
    sources: &[(String, String, PathBuf)],
    targets: &[Target],
    runs: &BTreeMap<(usize, Target), Vec<Run>>,
) -> Result<Vec<Row>> {
    let median_wall = |index: usize, target: Target| -> Option<f64> {
        let list = runs.get(&(index, target))?;
        spread(list.iter().map(|r| r.wall).collect()).map(|s| s.0)
    };
    let mut rows = Vec::new();
    for &target in targets {
        for (index, (rev, commit, _)) in sources.iter().enumerate() {
            let Some(list) = runs.get(&(index, target)) else {
                continue;
            };
            let wall = spread(list.iter().map(|r| r.wall).collect()).context("no runs")?;
            let (cpu, _, _) = spread(list.iter().map(|r| r.cpu).collect()).context("no runs")?;
            let mut per_crate: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for run in list {
                for (name, seconds) in &run.crates {
                    per_crate.entry(name).or_default().push(*seconds);
                }
            }
            let mut slowest = Vec::new();
            for (name, seconds) in per_crate {
                slowest.push((spread(seconds).context("no runs")?.0, name.to_string()));
            }
            slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
            let vs_floor = match target {
                Target::Floor => None,
                _ => median_wall(index, Target::Floor).map(|floor| wall.0 / floor),
            };
            rows.push(Row {
                rev: rev.clone(),
                commit: commit.clone(),
                target,
                wall,
                cpu,
                crates: list.first().map_or(0, |r| r.crates.len()),
                target_bytes: list.iter().map(|r| r.target_bytes).max().unwrap_or(0),
                vs_floor,
                slowest,
            });
        }
    }
    Ok(rows)
}

/// `bytes` in GiB, as the table shows it.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// The report: per revision and target, wall time (min / median / max), CPU
/// time, crates, target size and the wall time over the floor's; then the
/// ten slowest crates of each.
fn report(
    sources: &[(String, String, PathBuf)],
    targets: &[Target],
    runs: &BTreeMap<(usize, Target), Vec<Run>>,
) -> Result<String> {
    let mut out = String::new();
    let rustc = Command::new("rustc")
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let repeat = runs.values().map(Vec::len).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "Cold `cargo build` (dev profile, fresh target directory, crates already downloaded), \
         {repeat} runs each, interleaved; {cpus} CPUs, {rustc}."
    );
    let _ = writeln!(
        out,
        "Wall time min / median / max; CPU time (user + system, cargo and all it ran) median; \
         ÷ floor: median wall time over the floor's (an empty main with the shared crate's dependencies).{}\n",
        if targets.contains(&Target::Client) {
            " client: an empty main with only a kube client's dependencies (no kube runtime)."
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "{:<24} {:<13} {:>24} {:>9} {:>7} {:>8} {:>8}",
        "revision", "cargo build", "wall (s)", "CPU (s)", "crates", "target/", "÷ floor"
    );
    let rows = rows(sources, targets, runs)?;
    for row in &rows {
        let (mid, min, max) = row.wall;
        let _ = writeln!(
            out,
            "{:<24} {:<13} {:>24} {:>9.0} {:>7} {:>8} {:>8}",
            format!("{} ({})", row.rev, row.commit),
            row.target.label(),
            format!("{min:.1} / {mid:.1} / {max:.1}"),
            row.cpu,
            row.crates,
            gib(row.target_bytes),
            row.vs_floor.map_or("".into(), |r| format!("{r:.2}"))
        );
    }
    let loads: Vec<String> = runs
        .values()
        .flatten()
        .map(|r| format!("{:.2}", r.load))
        .collect();
    let _ = writeln!(
        out,
        "Load average (1 min) before each run: {}",
        loads.join(" ")
    );
    for row in &rows {
        let _ = writeln!(
            out,
            "\nTen slowest crates, {} ({}) {} (median seconds, all of a crate's units):",
            row.rev,
            row.commit,
            row.target.label()
        );
        for (seconds, name) in row.slowest.iter().take(10) {
            let _ = writeln!(out, "  {seconds:>5.1}  {name}");
        }
    }
    Ok(out)
}

/// The report as data: every figure `{{#figure NAME KEY}}` can name, by
/// key (`step-1 HEAD wall`, `step-1 HEAD vs-floor`, `floor HEAD crate
/// k8s-openapi`, …), and each run's measurements.
fn data_of(
    sources: &[(String, String, PathBuf)],
    targets: &[Target],
    runs: &BTreeMap<(usize, Target), Vec<Run>>,
) -> Result<serde_json::Value> {
    let mut figures = serde_json::Map::new();
    let mut put = |key: String, value: String| {
        figures.insert(key, serde_json::Value::String(value));
    };
    for row in rows(sources, targets, runs)? {
        let name = format!("{} {}", row.target.key(), row.rev);
        let (mid, min, max) = row.wall;
        put(format!("{name} wall"), format!("{mid:.1} s"));
        put(format!("{name} wall-min"), format!("{min:.1} s"));
        put(format!("{name} wall-max"), format!("{max:.1} s"));
        put(format!("{name} cpu"), format!("{:.0} s", row.cpu));
        put(format!("{name} crates"), row.crates.to_string());
        put(format!("{name} target"), gib(row.target_bytes));
        if let Some(ratio) = row.vs_floor {
            put(format!("{name} vs-floor"), format!("{ratio:.2}"));
        }
        for (seconds, krate) in &row.slowest {
            let krate = krate.split(' ').next().unwrap_or_default();
            put(format!("{name} crate {krate}"), format!("{seconds:.1} s"));
        }
    }
    let measured: Vec<serde_json::Value> = runs
        .iter()
        .flat_map(|((index, target), list)| {
            let (rev, commit, _) = &sources[*index];
            list.iter().map(move |run| {
                serde_json::json!({
                    "revision": rev,
                    "commit": commit,
                    "target": target.key(),
                    "wall_seconds": run.wall,
                    "cpu_seconds": run.cpu,
                    "load_before": run.load,
                    // `name@version`, cargo's own notation for a package
                    // (`name vX.Y.Z` reads like a Kubernetes version to
                    // testcluster/tests/versions.rs).
                    "crate_seconds": run
                        .crates
                        .iter()
                        .map(|(name, seconds)| (name.replacen(" v", "@", 1), *seconds))
                        .collect::<BTreeMap<String, f64>>(),
                    "target_bytes": run.target_bytes,
                })
            })
        })
        .collect();
    Ok(serde_json::json!({ "figures": figures, "runs": measured }))
}

/// User plus system CPU seconds of this process's waited-for descendants.
fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a pointer to a live rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The 1-minute load average, to show how quiet the machine was.
fn load_average() -> Result<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").context("reading /proc/loadavg")?;
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .context("parsing /proc/loadavg")
}

/// Bytes under `dir` (files only, not following links).
fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => total += entry.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}

fn git(root: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .context("running git")?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn cargo(dir: &Path, args: &[&str], target_dir: Option<&Path>) -> Result<()> {
    let mut command = course::cargo::command(dir, args).std();
    command
        // The learner's defaults, whatever this shell or CI set.
        .env_remove("CARGO_INCREMENTAL")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    match target_dir {
        Some(target_dir) => command.env("CARGO_TARGET_DIR", target_dir),
        None => command.env_remove("CARGO_TARGET_DIR"),
    };
    let status = command
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed in {}", args.join(" "), dir.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_seconds_sums_the_units_of_each_crate_in_cargos_timing_report() {
        let html = "<script>\nconst UNIT_DATA = [\
            {\"i\":0,\"name\":\"serde\",\"version\":\"1.0.0\",\"mode\":\"run-custom-build\",\"duration\":0.5},\
            {\"i\":1,\"name\":\"serde\",\"version\":\"1.0.0\",\"mode\":\"todo\",\"duration\":2.0},\
            {\"i\":2,\"name\":\"k8s-openapi\",\"version\":\"0.29.0\",\"mode\":\"todo\",\"duration\":15.25}];\n\
            const CONCURRENCY_DATA = [];\n</script>";
        let crates = crate_seconds(html).unwrap();
        assert_eq!(crates.len(), 2);
        assert_eq!(crates["serde v1.0.0"], 2.5);
        assert_eq!(crates["k8s-openapi v0.29.0"], 15.25);
    }

    #[test]
    fn a_timing_report_without_unit_data_is_an_error_not_an_empty_table() {
        let err = crate_seconds("<html></html>").unwrap_err();
        assert!(err.to_string().contains("UNIT_DATA"), "{err}");
        let unit = "const UNIT_DATA = [{\"name\":\"serde\",\"version\":\"1.0.0\"}];\n";
        let err = crate_seconds(unit).unwrap_err();
        assert!(
            format!("{err:#}").contains("missing field `duration`"),
            "{err:#}"
        );
    }

    #[test]
    fn a_target_is_the_floor_bins_or_a_step_of_the_registry() {
        assert_eq!(parse_target("client"), Ok(Target::Client));
        assert_eq!(parse_target("floor"), Ok(Target::Floor));
        assert_eq!(parse_target("bins"), Ok(Target::Bins));
        assert_eq!(parse_target("step-1"), Ok(Target::Step(1)));
        assert_eq!(Target::Step(1).cargo_args(), ["--bin", "step-1"]);
        for bad in ["1", "step-0", "everything", ""] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
    }
}
