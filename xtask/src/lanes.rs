//! `cargo xtask test`'s run of the workspace's tests, in two lanes at once.
//!
//! One test binary after another, as `cargo test --workspace` runs them,
//! they took 1,380 s of a fresh CI run's 2,904 s (CI14), and for most of it
//! a core was idle: the end-to-end, parity and fault tests wait on API
//! servers. Three test binaries are the opposite, builds of patched copies
//! of the repository followed by checks: `wrong_solutions` (406 s),
//! `starters` (75 s) and `new_step` (118 s). They run in a lane of their
//! own beside the others, their output in a file that is printed when they
//! are done, so that neither lane's report is cut into the other's.
//!
//! Both lanes are `cargo test --workspace` with a selection of test
//! targets, so that cargo resolves the dependencies' features as for the
//! whole workspace and finds everything built by the one build before
//! them (`-p` or `--exclude` would unify them over fewer packages and
//! build the dependencies again). cargo-nextest, the crate that runs test
//! binaries in parallel, runs each test in a process of its own: every
//! test would start its own control plane, where ours share one per test
//! binary (`testcluster::shared`).

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// The test targets that build copies of the repository: pure CPU.
pub const BUILD_LANE: [&str; 3] = ["wrong_solutions", "starters", "new_step"];

/// Every test target of the workspace (`[[test]]`, `tests/*.rs`), by name.
pub fn test_targets(root: &Path) -> Result<Vec<String>> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .current_dir(root)
        .no_deps()
        .exec()
        .context("cargo metadata")?;
    let mut names: Vec<String> = metadata
        .workspace_packages()
        .into_iter()
        .flat_map(|package| &package.targets)
        .filter(|target| target.is_test())
        .map(|target| target.name.clone())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// The arguments of each lane's `cargo test`: the build lane's targets, and
/// every other target with the libraries' and binaries' unit tests.
pub fn lanes(targets: &[String]) -> Result<(Vec<String>, Vec<String>)> {
    for name in BUILD_LANE {
        anyhow::ensure!(
            targets.iter().any(|t| t == name),
            "xtask/src/lanes.rs runs the test target {name} in the build lane, but the workspace has none of that name"
        );
    }
    let select = |build: bool| {
        let mut args: Vec<String> = ["test", "--workspace"].map(String::from).to_vec();
        if !build {
            args.extend(["--lib", "--bins"].map(String::from));
        }
        for target in targets
            .iter()
            .filter(|t| BUILD_LANE.contains(&t.as_str()) == build)
        {
            args.extend(["--test".to_string(), target.clone()]);
        }
        args
    };
    Ok((select(true), select(false)))
}

/// `args` as the `&str`s `crate::cargo` takes.
fn as_str(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Builds every test, then runs both lanes; the doc tests after the rest.
/// An error naming each lane that failed, once both are done.
pub fn run() -> Result<()> {
    let root = crate::repo_root();
    let (build_lane, rest) = lanes(&test_targets(&root)?)?;
    let mut built = as_str(&rest);
    built.extend(BUILD_LANE.iter().flat_map(|t| ["--test", t]));
    built.push("--no-run");
    crate::run_tool(&mut crate::cargo(&built).std())?;

    let log_path = crate::target_dir().join("test-build-lane.log");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let build_command = crate::cargo(&as_str(&build_lane));
    println!(
        "==> Beside the other tests: {build_command} (output in {}, shown when it is done)",
        log_path.display()
    );
    let started = Instant::now();
    let mut builds = build_command
        .std()
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("running {build_command}"))?;
    let rest_command = crate::cargo(&as_str(&rest));
    println!("==> {rest_command}");
    let rest_status = rest_command.std().status();
    let doc_status = crate::cargo(&["test", "--workspace", "--doc"])
        .std()
        .status();
    if !builds.try_wait().is_ok_and(|done| done.is_some()) {
        println!("==> Waiting for the build lane ({build_command})");
    }
    let builds_status = builds.wait();
    println!(
        "==> The build lane, done after {:.0} s: {build_command}",
        started.elapsed().as_secs_f64()
    );
    print!("{}", std::fs::read_to_string(&log_path).unwrap_or_default());

    let mut failed = Vec::new();
    for (command, status) in [
        (rest_command.to_string(), rest_status),
        ("cargo test --workspace --doc".to_string(), doc_status),
        (build_command.to_string(), builds_status),
    ] {
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => failed.push(format!("{command} ({status})")),
            Err(e) => failed.push(format!("{command}: {e}")),
        }
    }
    if !failed.is_empty() {
        bail!("failed: {}", failed.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_lane_runs_its_three_targets_and_the_other_lane_everything_else() {
        let targets: Vec<String> = ["faults", "new_step", "starters", "steps", "wrong_solutions"]
            .map(String::from)
            .to_vec();
        let (build, rest) = lanes(&targets).unwrap();
        assert_eq!(
            build.join(" "),
            "test --workspace --test new_step --test starters --test wrong_solutions"
        );
        assert_eq!(
            rest.join(" "),
            "test --workspace --lib --bins --test faults --test steps"
        );
    }

    #[test]
    fn a_build_lane_target_that_is_gone_is_an_error_naming_it() {
        let targets: Vec<String> = ["faults", "starters", "wrong_solutions"]
            .map(String::from)
            .to_vec();
        let error = lanes(&targets).unwrap_err().to_string();
        assert!(error.contains("new_step"), "{error}");
    }

    #[test]
    fn the_workspaces_test_targets_include_both_lanes() {
        let targets = test_targets(&crate::repo_root()).unwrap();
        for name in BUILD_LANE.iter().chain(&["faults", "steps", "parity"]) {
            assert!(targets.iter().any(|t| t == name), "{name}: {targets:?}");
        }
    }
}
