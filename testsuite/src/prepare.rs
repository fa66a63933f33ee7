//! `cargo xtask prepare`: readies a machine for the workshop, the day before.
//!
//! Everything that needs the network or takes long happens here, once:
//! the crates (`cargo fetch`), the control plane and kubectl (Go, from the
//! pinned modules, into ~/.cache/sample-controller-rs), every binary, example,
//! starter and test of the workspace, and Go's sample-controller source for
//! the book. Then it starts the control plane once, runs step 2's check on
//! the project's own step 2, stops the control plane, and says how long each
//! part took. After it, the workshop works offline.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use course::checks::Target;
use testcluster::{ControlPlane, Options};

use course::workspace::repo_root;

/// Runs every preparation step in order and prints a timing per step.
pub async fn prepare() -> Result<()> {
    let started = Instant::now();
    let mut timings: Vec<(&str, Duration)> = Vec::new();

    let t = Instant::now();
    println!("==> 1/6 Crates: cargo fetch (the only step that downloads crates)");
    cargo(&["fetch", "--locked"])?;
    timings.push(("crates downloaded", t.elapsed()));

    let t = Instant::now();
    println!(
        "==> 2/6 Control plane and kubectl: built with Go from the pinned modules into ~/.cache/sample-controller-rs (first time: 15-25 minutes on 2 cores)"
    );
    course::cluster::build(&[])?;
    timings.push(("control plane and kubectl", t.elapsed()));

    let t = Instant::now();
    println!(
        "==> 3/6 Every binary, example, workshop starter and test: cargo build --workspace --all-targets (first time: several minutes)"
    );
    build_workspace()?;
    timings.push(("workspace built", t.elapsed()));

    let t = Instant::now();
    println!("==> 4/6 Go's sample-controller source, for the book's Go tabs");
    match booktool::gosource::module_dir() {
        Ok(dir) => println!("    {}", dir.display()),
        // The book can be read without it; say so rather than fail.
        Err(err) => eprintln!("    warning: the book's Go tabs will not build offline: {err:#}"),
    }
    timings.push(("Go source for the book", t.elapsed()));

    one_check(&mut timings).await?;

    say_ready(started.elapsed(), &timings);
    Ok(())
}

/// Every binary, example, workshop starter and test, and what `cargo xtask
/// check` builds (features as for xtask), so that the first check on the
/// day compiles only the learner's own file.
fn build_workspace() -> Result<()> {
    cargo(&["build", "--workspace", "--all-targets", "--locked"])?;
    cargo(&[
        "build", "-p", "workshop", "-p", "xtask", "--bins", "--locked",
    ])?;
    cargo(&[
        "build",
        "-p",
        "sample-controller-rs",
        "-p",
        "sample-controller-step8",
        "-p",
        "xtask",
        "--bins",
        "--locked",
    ])?;
    Ok(())
}

/// Starts the control plane once and runs step 2's check (the project's
/// own step) against it, then stops it.
async fn one_check(timings: &mut Vec<(&str, Duration)>) -> Result<()> {
    let t = Instant::now();
    println!("==> 5/6 Starting the control plane once");
    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    testcluster::install_crd(&client, repo_root().join("manifests/crd.yaml")).await?;
    timings.push(("control plane started", t.elapsed()));

    let t = Instant::now();
    println!("==> 6/6 One check: step 2 (the project's own) against it");
    let target = Target {
        program: course::workspace::debug_dir().join("step-2"),
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        client,
        echo: false,
        keep: false,
    };
    let report = course::steps::check(2, &target).await?;
    println!("{report}");
    drop(cp); // stops every process of the control plane by PID
    if !report.passed() {
        bail!(
            "the step 2 check failed on a fresh control plane: this machine is not ready (the lines above say why)"
        );
    }
    timings.push(("check run, control plane stopped", t.elapsed()));
    Ok(())
}

/// What took how long, and what to do offline and on the day.
fn say_ready(took: Duration, timings: &[(&str, Duration)]) {
    println!("\nReady for the workshop: {:.0?} in all.", took);
    for (what, took) in timings {
        println!("  {what:<34} {:>6.1} s", took.as_secs_f64());
    }
    println!(
        "\nOffline from here: cargo builds with what is fetched (add --offline if it tries the network),\n\
         the control plane and kubectl are in ~/.cache/sample-controller-rs/bin.\n\
         On the day: `cargo xtask cluster up` once, then `cargo xtask check step-2` (and on)."
    );
    if booktool::tools::installed_version(&booktool::tools::MDBOOK).is_none() {
        println!(
            "To read the book in a browser (optional; book/src/*.md read fine as they are):\n  \
             {}\n  \
             {}\n  \
             {}\n  \
             cargo xtask book build && mdbook serve book",
            booktool::tools::MDBOOK.install_line(),
            booktool::tools::MDBOOK_MERMAID.install_line(),
            booktool::tools::MDBOOK_I18N_HELPERS.install_line(),
        );
    }
}

/// Runs `cargo args…` in the repository; fails if it does.
fn cargo(args: &[&str]) -> Result<()> {
    let status = course::workspace::cargo(args)
        .std()
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    Ok(())
}
