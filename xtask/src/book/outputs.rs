//! `cargo xtask book outputs`: which captures there are, and running their
//! scenarios against one fresh control plane. Each step chapter's comes
//! from its folder (`steps/step-N/capture.rs`, the step registry says
//! which files it writes), the other pages' from `scenarios/`; capture.rs
//! has the machinery they share.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use testcluster::{ControlPlane, Options};

use crate::kubectl::Kubectl;
use crate::workspace::run_tool;

use super::book_dir;
use super::capture::*;
use super::recordings;
use super::scenarios::*;
use crate::workspace::rel;

/// The captures of pages other than the steps' chapters.
const OTHER_OUTPUT_FILES: &[&str] = &[
    "example-step4-backoff.txt",
    "crd-missing.txt",
    "protected-group.txt",
    "watch-list.txt",
    "rbac-forbidden.txt",
    "rbac-warnings.txt",
    "metrics.txt",
    "leader-election.txt",
    "leader-lost.txt",
    "musl-binary.txt",
    "check-step-5-starter.txt",
    "check-step-5-reference.txt",
    "check-step-8-ordinary.txt",
];

/// Every capture: each step's (the step registry says which) and the others.
pub(super) fn output_files() -> Vec<&'static str> {
    course::steps::STEPS
        .iter()
        .flat_map(|s| s.captures.iter().copied())
        .chain(OTHER_OUTPUT_FILES.iter().copied())
        .collect()
}

/// Runs every scenario (or those writing `only`) against one fresh control
/// plane and writes the transcripts.
///
/// With `check`, writes into target/outputs-fresh instead and then compares
/// each new capture with the committed one ([`super::fresh`]).
pub(super) async fn outputs(only: &[String], check: bool) -> Result<()> {
    for name in only {
        ensure!(
            output_files().contains(&name.as_str()),
            "{name} is not an output file; the files are: {}",
            output_files().join(", ")
        );
    }
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let started = std::time::Instant::now();
    let root = crate::workspace::repo_root();
    let build = crate::workspace::cargo(&["build", "--bins", "--examples"]);
    println!("==> {build}");
    run_tool(&mut build.std())?;
    let committed = book_dir().join("src/outputs");
    let out = if check {
        let fresh = root.join("target/outputs-fresh");
        if fresh.exists() {
            std::fs::remove_dir_all(&fresh)?;
        }
        fresh
    } else {
        committed.clone()
    };
    std::fs::create_dir_all(&out)?;
    // Needs no cluster; reuses the build tests/image.rs made, if current.
    if wanted("musl-binary.txt") {
        let lines = timed("musl-binary.txt", musl_binary()).await?;
        write_file(&out, "musl-binary.txt", &lines)?;
    }
    if output_files()
        .iter()
        .all(|f| *f == "musl-binary.txt" || !wanted(f))
    {
        println!("Wrote {} in {:.0?}", rel(&out), started.elapsed());
        return if check {
            compare(&committed, &out)
        } else {
            Ok(())
        };
    }
    println!("==> Starting a local control plane");
    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    let kubectl = Kubectl::ensure(Some(cp.kubeconfig_path()))
        .await?
        .with_cache_dir(&cp.data_dir().join("kubectl-cache"));
    let env = Env {
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        server: cp.server_url().to_string(),
        client: client.clone(),
        bin: crate::workspace::debug_dir(),
        kubectl,
    };

    // The exercise solutions that need no cluster.
    if wanted("example-step4-backoff.txt") {
        let backoff =
            Command::new(crate::workspace::debug_dir().join("examples/step4_backoff_table"))
                .output()
                .context("running examples/step4_backoff_table")?;
        ensure!(backoff.status.success(), "step4_backoff_table failed");
        let mut lines = vec!["$ cargo run --example step4_backoff_table".to_string()];
        lines.extend(
            String::from_utf8_lossy(&backoff.stdout)
                .lines()
                .map(str::to_string),
        );
        write(&out, "example-step4-backoff.txt", &env, lines)?;
    }

    // Before the CRD exists: the message every step prints, and what the API
    // server says to the CRD without its protected-group annotation.
    if wanted("crd-missing.txt") {
        write(&out, "crd-missing.txt", &env, crd_missing(&env).await?)?;
    }
    if wanted("protected-group.txt") {
        let lines = protected_group(&env).await?;
        write(&out, "protected-group.txt", &env, lines)?;
    }
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;
    if wanted("watch-list.txt") {
        write(&out, "watch-list.txt", &env, watch_list(&env, &cp).await?)?;
    }
    // Each step's chapter: its folder's capture scenario (capture.rs), then
    // the flow its run logged, if its chapter replays one.
    for step in course::steps::STEPS {
        if !step.captures.iter().any(|c| wanted(c)) {
            continue;
        }
        let scenario = STEP_CAPTURES
            .iter()
            .find(|(number, _)| *number == step.number)
            .map(|(_, scenario)| scenario)
            .with_context(|| {
                format!(
                    "step {} shows {} but steps/step-{}/ has no capture.rs",
                    step.number,
                    step.captures.join(", "),
                    step.number
                )
            })?;
        let captured = timed(step.captures[0], scenario(&env)).await?;
        let written: Vec<&str> = captured.iter().map(|(name, _)| *name).collect();
        ensure!(
            written == step.captures,
            "steps/step-{}/capture.rs wrote {written:?}, but its step.toml says its captures are {:?}",
            step.number,
            step.captures
        );
        for (name, lines) in captured {
            write(&out, name, &env, lines)?;
        }
        if let Some(name) = step.flow {
            recordings::record(&out, name, &step_namespace(step.binary))?;
        }
    }
    if wanted("rbac-forbidden.txt") {
        let lines = rbac_forbidden(&env).await?;
        write(&out, "rbac-forbidden.txt", &env, lines)?;
    }

    // The checker: a starter as handed out, the project's own step, and the
    // ordinary kube-rs controller against step 8's check.
    if wanted("check-step-5-starter.txt") {
        let lines = timed("check-step-5-starter.txt", xtask_check(&env, "step-5", 1)).await?;
        write(&out, "check-step-5-starter.txt", &env, lines)?;
    }
    if wanted("check-step-5-reference.txt") {
        let lines = timed(
            "check-step-5-reference.txt",
            xtask_check(&env, "step-5 --reference", 0),
        )
        .await?;
        write(&out, "check-step-5-reference.txt", &env, lines)?;
    }
    if wanted("check-step-8-ordinary.txt") {
        let args = "--program target/debug/examples/step8_ordinary step-8";
        let lines = timed("check-step-8-ordinary.txt", xtask_check(&env, args, 1)).await?;
        write(&out, "check-step-8-ordinary.txt", &env, lines)?;
    }

    // Running in a cluster.
    if wanted("rbac-warnings.txt") {
        let lines = timed("rbac-warnings.txt", rbac_warnings(&env)).await?;
        write(&out, "rbac-warnings.txt", &env, lines)?;
    }
    if wanted("metrics.txt") {
        let lines = timed("metrics.txt", metrics(&env)).await?;
        write(&out, "metrics.txt", &env, lines)?;
    }
    if wanted("leader-election.txt") {
        let lines = timed("leader-election.txt", leader_election(&env)).await?;
        write(&out, "leader-election.txt", &env, lines)?;
    }
    if wanted("leader-lost.txt") {
        let lines = timed("leader-lost.txt", leader_lost(&env)).await?;
        write(&out, "leader-lost.txt", &env, lines)?;
    }
    println!("Wrote {} in {:.0?}", rel(&out), started.elapsed());
    drop(cp);
    if check {
        compare(&committed, &out)
    } else {
        Ok(())
    }
}

/// Compares each capture in `fresh` with the committed one of that name:
/// the transcripts as fresh.rs says, the flow recordings by shape
/// (recordings.rs).
fn compare(committed: &Path, fresh: &Path) -> Result<()> {
    let files = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let entry = entry.ok()?;
                entry
                    .path()
                    .is_file()
                    .then(|| entry.file_name().to_string_lossy().into_owned())
            })
            .collect();
        names.sort();
        names
    };
    let captures = files(fresh);
    let flows = files(&fresh.join(recordings::DIR));
    let mut names: Vec<String> = flows
        .iter()
        .map(|file| format!("{}/{file}", recordings::DIR))
        .collect();
    names.extend(captures.iter().cloned());
    // What is stale, and the files `outputs` writes again to fix it.
    let mut stale = Vec::new();
    let mut rerun = Vec::new();
    for name in &names {
        let read = |dir: &Path| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).with_context(|| format!("reading {}", rel(&path)))
        };
        let (was, now) = (read(committed)?, read(fresh)?);
        let (report, capture) = match name.strip_prefix(&format!("{}/", recordings::DIR)) {
            Some(file) => {
                let recording = file.trim_end_matches(".jsonl");
                // A recording is written by its step's first capture.
                let step = course::steps::STEPS
                    .iter()
                    .find(|s| s.flow == Some(recording));
                (
                    recordings::differences(recording, &was, &now)?,
                    step.and_then(|s| s.captures.first()).map(|c| c.to_string()),
                )
            }
            None => (
                super::fresh::differences(name, &was, &now),
                Some(name.clone()),
            ),
        };
        match report {
            None => println!("    {name}: current"),
            Some(report) => {
                println!("    {name}: STALE\n{report}");
                stale.push(name.clone());
                rerun.extend(capture.filter(|c| !rerun.contains(c)));
            }
        }
    }
    ensure!(
        stale.is_empty(),
        "{} of {} captures no longer say what their scenario prints: {}. \
         Look at the differences above; if the new runs are right, write them with \
         `cargo xtask book outputs {}` (the new runs are in {})",
        stale.len(),
        names.len(),
        stale.join(", "),
        rerun.join(" "),
        rel(fresh)
    );
    println!(
        "All {} captures and {} flow recordings are current.",
        captures.len(),
        flows.len()
    );
    Ok(())
}

/// Awaits one capture and prints how long it took.
async fn timed<T>(name: &str, capture: impl Future<Output = Result<T>>) -> Result<T> {
    let started = std::time::Instant::now();
    let result = capture.await.with_context(|| format!("capturing {name}"));
    println!("    {name}: captured in {:.1?}", started.elapsed());
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capture_with_its_own_variations_exists() {
        let files = output_files();
        for (file, ..) in super::super::fresh::VARYING_IN {
            assert!(files.contains(file), "{file} is not a capture");
        }
        for (file, ..) in super::super::fresh::MAY_APPEAR_IN {
            assert!(files.contains(file), "{file} is not a capture");
        }
    }

    #[test]
    fn every_capture_has_its_scenario() {
        let source = include_str!("outputs.rs");
        for name in OTHER_OUTPUT_FILES {
            assert!(
                source.contains(&format!("wanted(\"{name}\")")),
                "{name} is in OTHER_OUTPUT_FILES but `outputs` never writes it"
            );
        }
        for step in course::steps::STEPS {
            assert!(
                STEP_CAPTURES.iter().any(|(n, _)| *n == step.number),
                "step {} shows {:?} but steps/step-{}/ has no capture.rs",
                step.number,
                step.captures,
                step.number
            );
        }
    }
}
