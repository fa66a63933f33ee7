//! The test suites as commands: `cargo xtask test` (the README's: every
//! test, the oldest release, the captures and the book check), and the
//! parity and fault suites alone.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::{beside, lanes, oldest, setup};
use course::workspace::{cargo, repo_root};

/// The README's test command: what a fresh machine lacks (system packages,
/// the musl target, the book's tools; see `setup`), the control-plane
/// binaries (so their build shows its progress), then every test of the
/// workspace, every step against the oldest Kubernetes claimed, the captures
/// re-run and compared, and the book check.
pub async fn test() -> Result<()> {
    setup::ensure_test_prerequisites()?;
    println!(
        "==> Control-plane binaries (built once into ~/.cache/sample-controller-rs; a first build takes about 8 minutes on 2 cores)"
    );
    course::cluster::build(&[])?;
    println!(
        "==> The workspace's tests (unit, mock API server, end-to-end and parity against local control planes), in two lanes"
    );
    clear_fault_report()?;
    // Every step is a package of its own, so `cargo test` builds no step
    // binary for the end-to-end tests; built first, their own `cargo build
    // -p step-N` (tests/support) finds nothing to do.
    let status = cargo(&["build", "--bins"])
        .std()
        .status()
        .context("running cargo build --bins")?;
    if !status.success() {
        anyhow::bail!("cargo build --bins failed");
    }
    // The image test's musl build and the oldest release's servers, built
    // meanwhile on the cores the tests leave idle.
    let beside = beside::start();
    let tested = lanes::run();
    let built = beside.finish();
    tested?;
    built?;
    println!("==> The fault suite (tests/faults/, run above)");
    print_fault_report()?;
    println!("==> cargo xtask oldest (every step against the oldest Kubernetes the README claims)");
    oldest::oldest()?;
    println!(
        "==> cargo xtask book outputs --check (every capture re-run against a new control plane and compared with the committed one)"
    );
    booktool::run(booktool::BookCommand::Outputs {
        only: Vec::new(),
        check: true,
    })
    .await?;
    println!(
        "==> cargo xtask book check (includes, anchors, links, pinned Go links, diagrams in Chromium)"
    );
    booktool::check()
}

/// `cargo test --test parity`, after building what it needs.
pub fn parity() -> Result<()> {
    course::cluster::build(&[])?;
    let status = cargo(&[
        "test",
        "--test",
        "parity",
        "--",
        "--nocapture",
        "--test-threads=1",
    ])
    .std()
    .status()
    .context("running cargo test --test parity")?;
    if !status.success() {
        anyhow::bail!("the parity tests failed");
    }
    Ok(())
}

/// `cargo test --test faults`, then the one-line summary each fault wrote.
pub fn faults() -> Result<()> {
    course::cluster::build(&[])?;
    clear_fault_report()?;
    let status = cargo(&["test", "--test", "faults", "--", "--test-threads=9"])
        .std()
        .status()
        .context("running cargo test --test faults")?;
    print_fault_report()?;
    if !status.success() {
        anyhow::bail!("the fault suite failed");
    }
    Ok(())
}

/// Where each fault test writes its summary line (tests/support `report`).
fn fault_report_dir() -> PathBuf {
    repo_root().join("target").join("fault-report")
}

/// Removes the summary lines of an earlier run.
fn clear_fault_report() -> Result<()> {
    match std::fs::remove_dir_all(fault_report_dir()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Prints the faults' summary lines in order; fails unless all twelve reported.
fn print_fault_report() -> Result<()> {
    let mut lines = Vec::new();
    for n in 1..=12 {
        let path = fault_report_dir().join(format!("fault-{n}.txt"));
        match std::fs::read_to_string(&path) {
            Ok(line) => lines.push(line.trim_end().to_string()),
            Err(_) => lines.push(format!(
                "fault {n}: FAILED (no report; see the test output above)"
            )),
        }
    }
    for line in &lines {
        println!("  {line}");
    }
    if lines
        .iter()
        .any(|l| l.ends_with("see the test output above)"))
    {
        anyhow::bail!("not every fault passed");
    }
    Ok(())
}
