//! `cargo xtask first-build`: what a learner's first `cargo run --bin step-1`
//! costs, and where the time goes.
//!
//! Each revision given (by default the commit before the build cuts, and
//! `HEAD`) is exported with `git archive` into `target/first-build/`, then
//! built cold — `cargo build --offline --timings` in a fresh target
//! directory, with the crates already downloaded (`cargo fetch` first), so
//! the figure is compile time only — once with `--bin step-1` and once with
//! `--bins`, `--repeat` times, the runs interleaved so that a slow spell of
//! the machine does not land on one revision only. Cargo's own timing report
//! gives the crates and how long each took; the wall and CPU time (of cargo
//! and everything it ran) are measured here. Each target directory is
//! deleted after its run (a cold build writes 1–3 GiB).
//!
//! Prints the table of the book's Performance page ("The first build") and
//! writes it to `book/src/outputs/first-build.txt`. Figures, not pass/fail.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::bench::spread;

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
    /// What to build: `step-1` (`--bin step-1`) and/or `bins` (`--bins`).
    #[arg(long, value_delimiter = ',', default_value = "step-1,bins")]
    targets: Vec<Target>,
}

/// A cargo selection a learner builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
enum Target {
    #[value(name = "step-1")]
    Step1,
    Bins,
}

impl Target {
    fn cargo_args(self) -> &'static [&'static str] {
        match self {
            Target::Step1 => &["--bin", "step-1"],
            Target::Bins => &["--bins"],
        }
    }

    fn label(self) -> &'static str {
        match self {
            Target::Step1 => "--bin step-1",
            Target::Bins => "--bins",
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
    let root = crate::repo_root();
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
        sources.push((rev.clone(), commit, dir));
    }

    let mut runs: BTreeMap<(usize, Target), Vec<Run>> = BTreeMap::new();
    for round in 1..=args.repeat {
        for (index, (rev, commit, dir)) in sources.iter().enumerate() {
            for &target in &args.targets {
                let target_dir = work.join(format!("target-{commit}"));
                println!(
                    "==> round {round}/{}: cold cargo build {} of {rev} ({commit})",
                    args.repeat,
                    target.label()
                );
                let run = cold_build(dir, &target_dir, target)?;
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
    let out = root.join("book/src/outputs/first-build.txt");
    std::fs::write(&out, &report).with_context(|| format!("writing {}", out.display()))?;
    println!("(written to {})", out.display());
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
    let mut args = vec!["build", "--offline", "--quiet", "--timings"];
    args.extend_from_slice(target.cargo_args());
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
/// binary), summed by crate name and version.
fn crate_seconds(html: &str) -> Result<BTreeMap<String, f64>> {
    let start = html
        .find("const UNIT_DATA = ")
        .context("no UNIT_DATA in cargo's timing report (did its format change?)")?
        + "const UNIT_DATA = ".len();
    let end = start
        + html[start..]
            .find(";\n")
            .context("UNIT_DATA in cargo's timing report does not end")?;
    let units: Vec<serde_json::Value> =
        serde_json::from_str(&html[start..end]).context("parsing UNIT_DATA")?;
    let mut crates = BTreeMap::new();
    for unit in units {
        let (Some(name), Some(version), Some(duration)) = (
            unit["name"].as_str(),
            unit["version"].as_str(),
            unit["duration"].as_f64(),
        ) else {
            bail!("a unit in cargo's timing report without name, version or duration: {unit}");
        };
        *crates.entry(format!("{name} v{version}")).or_insert(0.0) += duration;
    }
    Ok(crates)
}

/// The report: per revision and target, wall time (min / median / max), CPU
/// time, crates and target size; then the ten slowest crates of each.
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
        "Wall time min / median / max; CPU time (user + system, cargo and all it ran) median.\n"
    );
    let _ = writeln!(
        out,
        "{:<24} {:<13} {:>24} {:>9} {:>7} {:>8}",
        "revision", "cargo build", "wall (s)", "CPU (s)", "crates", "target/"
    );
    for &target in targets {
        for (index, (rev, commit, _)) in sources.iter().enumerate() {
            let Some(list) = runs.get(&(index, target)) else {
                continue;
            };
            let (mid, min, max) =
                spread(list.iter().map(|r| r.wall).collect()).context("no runs")?;
            let (cpu, _, _) = spread(list.iter().map(|r| r.cpu).collect()).context("no runs")?;
            let crates = list.first().map_or(0, |r| r.crates.len());
            let bytes = list.iter().map(|r| r.target_bytes).max().unwrap_or(0);
            let _ = writeln!(
                out,
                "{:<24} {:<13} {:>24} {:>9.0} {:>7} {:>4.1} GiB",
                format!("{rev} ({commit})"),
                target.label(),
                format!("{min:.1} / {mid:.1} / {max:.1}"),
                cpu,
                crates,
                bytes as f64 / (1u64 << 30) as f64
            );
        }
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
    for &target in targets {
        for (index, (rev, commit, _)) in sources.iter().enumerate() {
            let Some(list) = runs.get(&(index, target)) else {
                continue;
            };
            let mut per_crate: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for run in list {
                for (name, seconds) in &run.crates {
                    per_crate.entry(name).or_default().push(*seconds);
                }
            }
            let mut medians = Vec::new();
            for (name, seconds) in per_crate {
                medians.push((spread(seconds).context("no runs")?.0, name));
            }
            medians.sort_by(|a, b| b.0.total_cmp(&a.0));
            let _ = writeln!(
                out,
                "\nTen slowest crates, {rev} ({commit}) {} (median seconds, all of a crate's units):",
                target.label()
            );
            for (seconds, name) in medians.iter().take(10) {
                let _ = writeln!(out, "  {seconds:>5.1}  {name}");
            }
        }
    }
    Ok(out)
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
    let mut command = testcluster::cargo::command(dir, args).std();
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
    }
}
