//! `cargo xtask book outputs`: which captures there are, and running their
//! scenarios against one fresh control plane. Each step chapter's comes
//! from its folder (`steps/step-N/capture.rs`, the step registry says
//! which files it writes), the other pages' from `scenarios/`; capture.rs
//! has the machinery they share.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use testcluster::{ControlPlane, Options};

use course::kubectl::Kubectl;
use course::workspace::run_tool;

use super::book_dir;
use super::capture::*;
use super::recordings;
use super::scenarios::*;
use course::workspace::rel;

/// A capture's scenario: what it runs and prints, against the control plane
/// of the run (`Alone`: no cluster at all).
#[derive(Clone, Copy)]
enum Scenario {
    Alone(fn() -> Captures<'static>),
    Cluster(for<'a> fn(&'a Env, &'a ControlPlane) -> Captures<'a>),
}

/// A scenario's run: its transcript's lines.
type Captures<'a> = Pin<Box<dyn Future<Output = Result<Vec<String>>> + 'a>>;

/// When a capture runs in the one control plane's life.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Stage {
    /// Needs no cluster (first, so that it runs without starting one).
    Alone,
    /// Before the Foo CRD is installed.
    BeforeCrd,
    /// With the CRD, before the step chapters' runs.
    WithCrd,
    /// After the step chapters' runs.
    Last,
}

/// A capture that is not a step's own run (those come from the step
/// folders' `capture.rs`): its file in book/src/outputs, when it runs and
/// what writes it. In the order they run.
struct PageCapture {
    file: &'static str,
    stage: Stage,
    scenario: Scenario,
}

const PAGE_CAPTURES: &[PageCapture] = &[
    // Reuses the build tests/image.rs made, if current.
    PageCapture {
        file: "musl-binary.txt",
        stage: Stage::Alone,
        scenario: Scenario::Alone(|| Box::pin(musl_binary())),
    },
    PageCapture {
        file: "example-step4-backoff.txt",
        stage: Stage::BeforeCrd,
        scenario: Scenario::Cluster(|_, _| Box::pin(example_step4_backoff())),
    },
    // Before the CRD exists: the message every step prints, and what the
    // API server says to the CRD without its protected-group annotation.
    PageCapture {
        file: "crd-missing.txt",
        stage: Stage::BeforeCrd,
        scenario: Scenario::Cluster(|env, _| Box::pin(crd_missing(env))),
    },
    PageCapture {
        file: "protected-group.txt",
        stage: Stage::BeforeCrd,
        scenario: Scenario::Cluster(|env, _| Box::pin(protected_group(env))),
    },
    PageCapture {
        file: "watch-list.txt",
        stage: Stage::WithCrd,
        scenario: Scenario::Cluster(|env, cp| Box::pin(watch_list(env, cp))),
    },
    PageCapture {
        file: "rbac-forbidden.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| Box::pin(rbac_forbidden(env))),
    },
    // The checker: a starter as handed out, the project's own step, and the
    // ordinary kube-rs controller against step 8's check.
    PageCapture {
        file: "check-step-5-starter.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| Box::pin(xtask_check(env, "step-5", 1))),
    },
    PageCapture {
        file: "check-step-5-reference.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| Box::pin(xtask_check(env, "step-5 --reference", 0))),
    },
    PageCapture {
        file: "check-step-8-ordinary.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| {
            let args = "--program target/debug/examples/step8_ordinary step-8";
            Box::pin(xtask_check(env, args, 1))
        }),
    },
    // Running in a cluster.
    PageCapture {
        file: "rbac-warnings.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| Box::pin(rbac_warnings(env))),
    },
    PageCapture {
        file: "metrics.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| Box::pin(metrics(env))),
    },
    PageCapture {
        file: "leader-election.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| Box::pin(leader_election(env))),
    },
    PageCapture {
        file: "leader-lost.txt",
        stage: Stage::Last,
        scenario: Scenario::Cluster(|env, _| Box::pin(leader_lost(env))),
    },
];

/// Every capture: each step's (the step registry says which) and the others.
pub(super) fn output_files() -> Vec<&'static str> {
    course::steps::STEPS
        .iter()
        .flat_map(|s| s.captures.iter().copied())
        .chain(PAGE_CAPTURES.iter().map(|c| c.file))
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
    let build = course::workspace::cargo(&["build", "--bins", "--examples"]);
    println!("==> {build}");
    run_tool(&mut build.std())?;
    let committed = book_dir().join("src/outputs");
    let out = output_dir(&committed, check)?;
    for capture in stage(Stage::Alone, &wanted) {
        if let Scenario::Alone(run) = capture.scenario {
            let lines = timed(capture.file, run()).await?;
            write_file(&out, capture.file, &lines)?;
        }
    }
    let alone = |file: &str| {
        PAGE_CAPTURES
            .iter()
            .any(|c| c.file == file && c.stage == Stage::Alone)
    };
    let cluster_wanted = output_files().into_iter().any(|f| wanted(f) && !alone(f));
    if cluster_wanted {
        println!("==> Starting a local control plane");
        let cp = ControlPlane::start(Options::default()).await?;
        let env = env_of(&cp).await?;
        run_stage(Stage::BeforeCrd, &wanted, &env, &cp, &out).await?;
        let crd = course::workspace::repo_root().join("manifests/crd.yaml");
        testcluster::install_crd(&env.client, crd).await?;
        run_stage(Stage::WithCrd, &wanted, &env, &cp, &out).await?;
        step_captures(&wanted, &env, &out).await?;
        run_stage(Stage::Last, &wanted, &env, &cp, &out).await?;
    }
    println!("Wrote {} in {:.0?}", rel(&out), started.elapsed());
    if check {
        compare(&committed, &out)
    } else {
        Ok(())
    }
}

/// Where the captures go: the committed directory, or with `check` a
/// fresh one to compare with it.
fn output_dir(committed: &Path, check: bool) -> Result<PathBuf> {
    let out = if check {
        let fresh = course::workspace::repo_root().join("target/outputs-fresh");
        if fresh.exists() {
            std::fs::remove_dir_all(&fresh)?;
        }
        fresh
    } else {
        committed.to_path_buf()
    };
    std::fs::create_dir_all(&out)?;
    Ok(out)
}

/// What every scenario on the control plane `cp` runs with.
async fn env_of(cp: &ControlPlane) -> Result<Env> {
    let kubectl = Kubectl::ensure(Some(cp.kubeconfig_path()))
        .await?
        .with_cache_dir(&cp.data_dir().join("kubectl-cache"));
    Ok(Env {
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        server: cp.server_url().to_string(),
        client: cp.client().await?,
        bin: course::workspace::debug_dir(),
        kubectl,
    })
}

/// The page captures of `stage` that `wanted` asks for, in order.
fn stage<'a>(
    stage: Stage,
    wanted: &'a dyn Fn(&str) -> bool,
) -> impl Iterator<Item = &'static PageCapture> + 'a {
    PAGE_CAPTURES
        .iter()
        .filter(move |c| c.stage == stage && wanted(c.file))
}

/// Runs and writes the page captures of `which` that `wanted` asks for.
async fn run_stage(
    which: Stage,
    wanted: &dyn Fn(&str) -> bool,
    env: &Env,
    cp: &ControlPlane,
    out: &Path,
) -> Result<()> {
    for capture in stage(which, wanted) {
        if let Scenario::Cluster(run) = capture.scenario {
            let lines = timed(capture.file, run(env, cp)).await?;
            write(out, capture.file, env, lines)?;
        }
    }
    Ok(())
}

/// Each step's chapter: its folder's capture scenario (capture.rs), then
/// the flow its run logged, if its chapter replays one.
async fn step_captures(wanted: &dyn Fn(&str) -> bool, env: &Env, out: &Path) -> Result<()> {
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
        let captured = timed(step.captures[0], scenario(env)).await?;
        let written: Vec<&str> = captured.iter().map(|(name, _)| *name).collect();
        ensure!(
            written == step.captures,
            "steps/step-{}/capture.rs wrote {written:?}, but its step.toml says its captures are {:?}",
            step.number,
            step.captures
        );
        for (name, lines) in captured {
            write(out, name, env, lines)?;
        }
        if let Some(name) = step.flow {
            recordings::record(out, name, &step_namespace(step.binary))?;
        }
    }
    Ok(())
}

/// The backoff table of step 4's exercise (`examples/step4_backoff_table`).
async fn example_step4_backoff() -> Result<Vec<String>> {
    let backoff = Command::new(course::workspace::debug_dir().join("examples/step4_backoff_table"))
        .output()
        .context("running examples/step4_backoff_table")?;
    ensure!(backoff.status.success(), "step4_backoff_table failed");
    let mut lines = vec!["$ cargo run --example step4_backoff_table".to_string()];
    lines.extend(
        String::from_utf8_lossy(&backoff.stdout)
            .lines()
            .map(str::to_string),
    );
    Ok(lines)
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
    fn every_capture_has_one_file_and_a_page_that_shows_it() {
        let files = output_files();
        let mut unique = files.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            files.len(),
            "a capture file written twice: {files:?}"
        );
        let pages: String = std::fs::read_dir(book_dir().join("src"))
            .unwrap()
            .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path()).ok())
            .collect();
        for file in files {
            assert!(
                pages.contains(&format!("outputs/{file}")),
                "no page of book/src includes outputs/{file}"
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

    #[test]
    fn a_capture_that_needs_no_cluster_runs_alone_and_the_others_in_their_order() {
        let alone: Vec<&str> = stage(Stage::Alone, &|_| true).map(|c| c.file).collect();
        assert_eq!(alone, ["musl-binary.txt"]);
        for capture in PAGE_CAPTURES {
            let is_alone = matches!(capture.scenario, Scenario::Alone(_));
            assert_eq!(is_alone, capture.stage == Stage::Alone, "{}", capture.file);
        }
        let stages: Vec<Stage> = PAGE_CAPTURES.iter().map(|c| c.stage).collect();
        let order = |s: &Stage| {
            [Stage::Alone, Stage::BeforeCrd, Stage::WithCrd, Stage::Last]
                .iter()
                .position(|x| x == s)
        };
        assert!(
            stages.windows(2).all(|w| order(&w[0]) <= order(&w[1])),
            "PAGE_CAPTURES in the order they run: {stages:?}"
        );
    }
}
