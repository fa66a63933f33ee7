//! Builds that only a later part of `cargo xtask test` needs, run beside
//! the workspace's tests (both lanes, lanes.rs) at the lowest CPU priority
//! (nice 19).
//!
//! Most tests wait on API servers and leave a core idle; these builds are
//! pure CPU, and the tests' own processes always come first. Two of them:
//!
//! - the static musl build of step 8 that tests/image.rs runs (a release
//!   build with fat LTO, minutes long and most of it on one core).
//!   When that test starts, its own `cargo build` waits on the directory's
//!   lock until this one is done, then finds nothing to do;
//! - the oldest release's kube-apiserver, kube-controller-manager and
//!   kube-scheduler for `oldest` (minutes on a fresh machine; cached after).

use std::fs::File;
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use testcluster::binaries::OLDEST_KUBERNETES_VERSION;

use testcluster::binaries::Release;

/// The builds running beside the tests.
pub struct Beside(JoinHandle<Result<()>>);

/// Starts the builds on a thread of their own, at the lowest priority.
pub fn start() -> Beside {
    Beside(std::thread::spawn(|| {
        course::cargo::lower_this_thread();
        musl_step_8()?;
        let release = Release::of(OLDEST_KUBERNETES_VERSION)?;
        crate::oldest::servers(&release)?;
        Ok(())
    }))
}

impl Beside {
    /// Waits for the builds; an error if one failed. Called whether or not
    /// the tests passed, so that nothing started here outlives the command.
    pub fn finish(self) -> Result<()> {
        if !self.0.is_finished() {
            println!("==> Waiting for the builds beside the tests to finish");
        }
        self.0
            .join()
            .map_err(|_| anyhow!("the builds beside the tests panicked"))?
    }
}

/// The Dockerfile's build of step 8, its output in `target/beside-musl.log`
/// (cargo's lines would interleave with the tests' report).
fn musl_step_8() -> Result<()> {
    let root = course::workspace::repo_root();
    let (cargo, binary) = course::cargo::musl_step_8(&root);
    let log_path = root.join("target/beside-musl.log");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    println!(
        "==> Beside the tests, at the lowest priority: {cargo} (output in {})",
        log_path.display()
    );
    let started = Instant::now();
    let status = cargo
        .std()
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .with_context(|| format!("running {cargo}"))?;
    if !status.success() {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("{cargo} failed ({status}):\n{}", tail.join("\n"));
    }
    println!(
        "==> Beside the tests: {} built in {:.0} s",
        binary.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
