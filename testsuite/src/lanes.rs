//! `cargo xtask test`'s run of the workspace's tests, in two lanes at once.
//!
//! One test binary after another, as `cargo test --workspace` runs them,
//! the tests are most of a CI run, and for most of it a core is idle: the
//! end-to-end, parity and fault tests wait on API servers. Three test
//! binaries are the opposite, builds of patched copies of the repository
//! followed by checks: `wrong_solutions`, `starters` and `new_step` (each
//! copy with its own package versions, so that its artifacts never replace
//! the repository's in the shared target directory). They run in a lane of their
//! own beside the others, their output in a file that is printed when they
//! are done, so that neither lane's report is cut into the other's. The
//! other lane runs `image` last (it waits for the musl build `beside`
//! makes), then the doc tests.
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

/// The test target the other lane runs last: it runs the static musl build
/// of step 8 that `beside` makes at the lowest priority, and waits for it.
pub const LAST: &str = "image";

/// Every test target of the workspace (`[[test]]`, `tests/*.rs`), by name.
pub fn test_targets(root: &Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = course::workspace::packages(root)?
        .iter()
        .flat_map(|package| &package.targets)
        .filter(|target| target.is_test())
        .map(|target| target.name.clone())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// The two lanes' `cargo` commands, each lane's one after another.
#[derive(Debug)]
pub struct Lanes {
    /// The build lane's targets.
    pub build: Vec<String>,
    /// The libraries' and binaries' unit tests with every other target but
    /// [`LAST`], then [`LAST`], then the doc tests.
    pub rest: Vec<Vec<String>>,
}

/// Splits the workspace's test `targets` into the two lanes.
pub fn lanes(targets: &[String]) -> Result<Lanes> {
    for name in BUILD_LANE.iter().chain([&LAST]) {
        anyhow::ensure!(
            targets.iter().any(|t| t == name),
            "testsuite/src/lanes.rs names the test target {name}, but the workspace has none of that name"
        );
    }
    let command = |first: &[&str], names: &mut dyn Iterator<Item = &String>| {
        let mut args: Vec<String> = first.iter().map(|a| a.to_string()).collect();
        for name in names {
            args.extend(["--test".to_string(), name.clone()]);
        }
        args
    };
    let mut build_targets = targets.iter().filter(|t| BUILD_LANE.contains(&t.as_str()));
    let mut others = targets
        .iter()
        .filter(|t| !BUILD_LANE.contains(&t.as_str()) && *t != LAST);
    Ok(Lanes {
        build: command(&["test", "--workspace"], &mut build_targets),
        rest: vec![
            command(&["test", "--workspace", "--lib", "--bins"], &mut others),
            command(
                &["test", "--workspace", "--test", LAST],
                &mut std::iter::empty(),
            ),
            command(&["test", "--workspace", "--doc"], &mut std::iter::empty()),
        ],
    })
}

/// `args` as the `&str`s `crate::cargo` takes.
fn as_str(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Builds every test, then runs both lanes. An error naming each command
/// that failed, once both lanes are done.
pub fn run() -> Result<()> {
    let root = course::workspace::repo_root();
    let lanes = lanes(&test_targets(&root)?)?;
    // Everything built first, so that neither lane waits on the other's
    // build: the build lane's targets and the rest's (the doc tests are
    // built when they run).
    let mut built = as_str(&lanes.rest[0]);
    built.extend(as_str(&lanes.build).into_iter().skip(2));
    built.extend(["--test", LAST, "--no-run"]);
    course::workspace::run_tool(&mut course::workspace::cargo(&built).std())?;

    let log_path = course::workspace::target_dir().join("test-build-lane.log");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let build_command = course::workspace::cargo(&as_str(&lanes.build));
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
    let mut outcomes = Vec::new();
    for args in &lanes.rest {
        let command = course::workspace::cargo(&as_str(args));
        println!("==> {command}");
        outcomes.push((command.to_string(), command.std().status()));
    }
    if !builds.try_wait().is_ok_and(|done| done.is_some()) {
        println!("==> Waiting for the build lane ({build_command})");
    }
    outcomes.push((build_command.to_string(), builds.wait()));
    println!(
        "==> The build lane, done after {:.0} s: {build_command}",
        started.elapsed().as_secs_f64()
    );
    print!("{}", std::fs::read_to_string(&log_path).unwrap_or_default());

    let failed: Vec<String> = outcomes
        .into_iter()
        .filter_map(|(command, status)| match status {
            Ok(status) if status.success() => None,
            Ok(status) => Some(format!("{command} ({status})")),
            Err(e) => Some(format!("{command}: {e}")),
        })
        .collect();
    if !failed.is_empty() {
        bail!("failed: {}", failed.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_lane_runs_its_three_targets_and_the_other_lane_the_rest_image_last() {
        let targets: Vec<String> = [
            "faults",
            "image",
            "new_step",
            "starters",
            "steps",
            "wrong_solutions",
        ]
        .map(String::from)
        .to_vec();
        let lanes = lanes(&targets).unwrap();
        assert_eq!(
            lanes.build.join(" "),
            "test --workspace --test new_step --test starters --test wrong_solutions"
        );
        let rest: Vec<String> = lanes.rest.iter().map(|c| c.join(" ")).collect();
        assert_eq!(
            rest,
            [
                "test --workspace --lib --bins --test faults --test steps",
                "test --workspace --test image",
                "test --workspace --doc",
            ]
        );
    }

    #[test]
    fn a_named_target_that_is_gone_is_an_error_naming_it() {
        let targets: Vec<String> = ["faults", "image", "starters", "wrong_solutions"]
            .map(String::from)
            .to_vec();
        let error = lanes(&targets).unwrap_err().to_string();
        assert!(error.contains("new_step"), "{error}");
    }

    #[test]
    fn the_workspaces_test_targets_include_both_lanes() {
        let targets = test_targets(&course::workspace::repo_root()).unwrap();
        for name in BUILD_LANE
            .iter()
            .chain(&[LAST, "faults", "steps", "parity"])
        {
            assert!(targets.iter().any(|t| t == name), "{name}: {targets:?}");
        }
    }
}
