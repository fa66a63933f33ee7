//! The checks have teeth: every wrong solution in a step's folder,
//! `steps/step-N/wrong/WHAT.patch` (a reference step with one behaviour
//! broken, kept as a patch, each a mistake a learner plausibly makes), fails
//! its step's check, on the behaviour its `Expect:` line names.
//!
//! The patches are applied, one at a time, to a copy of the repository in
//! `target/wrong-solutions/src` whose step binaries are renamed
//! `wrong-step-N`, and built into this repository's target directory: the
//! dependencies are shared with every other build, only the patched crate
//! and the binary compile, and no reference binary is overwritten. Each
//! binary runs its step's check (`course::checks`, what `cargo xtask
//! check --program PATH step-N` runs) against one control plane as soon as
//! it is built, while the next ones build: the checks mostly wait on the
//! API server, and the builds, at the lowest CPU priority, take the cores
//! they leave idle. The latest step builds first: its checks take longest.
//!
//! A patch that no longer applies fails the test: a step changed, so its
//! wrong solutions must be made again from it (edit the copy, `git diff`).

use std::path::{Path, PathBuf};
use std::process::Command;

use course::checks;

mod copy;
use copy::{copy_of_the_repository, target_dir, workspace};

/// One wrong solution.
struct Wrong {
    /// The step and the patch's file name without `.patch`:
    /// `step-8-status-every-sync` for `steps/step-8/wrong/status-every-sync.patch`.
    name: String,
    /// The step it breaks.
    step: u8,
    /// The report line its check must print: `step-8 FAIL a change that …`.
    expect: String,
    patch: PathBuf,
}

fn wrong_solutions() -> Vec<Wrong> {
    let mut all = Vec::new();
    for step in course::steps::STEPS {
        let dir = workspace().join(format!("steps/step-{}/wrong", step.number));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue; // no wrong solution for this step
        };
        let patches = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "patch"));
        for patch in patches {
            let what = patch
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a file name");
            let name = format!("step-{}-{what}", step.number);
            let text = std::fs::read_to_string(&patch).expect("read the patch");
            let expect = text
                .lines()
                .find_map(|l| l.strip_prefix("Expect: "))
                .unwrap_or_else(|| panic!("{name}: no `Expect: step-N FAIL …` line"))
                .to_string();
            assert!(
                expect.starts_with(&format!("step-{} FAIL ", step.number)),
                "{name}: {expect}"
            );
            all.push(Wrong {
                name,
                step: step.number,
                expect,
                patch,
            });
        }
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// `git apply` in the copy, as a plain `patch`: the copy is inside this
/// repository's target/, and git run there would find the repository and
/// (silently) apply nothing outside the current directory.
fn git_apply(copy: &Path) -> Command {
    let mut git = Command::new("git");
    git.arg("apply")
        .current_dir(copy)
        .env("GIT_CEILING_DIRECTORIES", copy.parent().expect("a parent"));
    git
}

/// The files a patch changes (its `+++ b/PATH` lines).
fn patched_files(patch: &Path) -> Vec<String> {
    std::fs::read_to_string(patch)
        .expect("read the patch")
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(str::to_string)
        .collect()
}

/// Applies the wrong solution `name` (`patch`, breaking step `step`) to the
/// copy, builds its step, keeps the binary, and takes the patch back out.
fn build(copy: &Path, name: &str, step: u8, patch: &Path) -> PathBuf {
    let patch_arg = patch.to_str().expect("a UTF-8 path");
    let applied = git_apply(copy).arg(patch_arg).output().expect("git apply");
    assert!(
        applied.status.success(),
        "{name} no longer applies to the step: make it again from the reference (edit a copy, `git diff`):\n{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let files = patched_files(patch);
    assert!(!files.is_empty(), "{name}: a patch of no file");
    for file in &files {
        let original = std::fs::read(workspace().join(file)).expect("the original");
        let patched = std::fs::read(copy.join(file)).expect("the patched copy");
        assert_ne!(original, patched, "{name}: {file} was not patched");
    }
    let bin = format!("wrong-step-{step}");
    let target = target_dir();
    let built = course::cargo::command(copy, &["build", "--quiet", "--bin", &bin])
        .env("CARGO_TARGET_DIR", &target)
        .std()
        .output()
        .expect("cargo build");
    let reverted = git_apply(copy)
        .args(["-R", patch_arg])
        .status()
        .expect("git apply -R");
    assert!(
        reverted.success(),
        "{name}: could not take the patch out again"
    );
    assert!(
        built.status.success(),
        "{name} does not compile:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let kept = target.join("wrong-solutions/bin").join(name);
    std::fs::create_dir_all(kept.parent().expect("a parent")).expect("mkdir");
    // Moved, not copied: nothing of a wrong solution stays next to the steps.
    std::fs::rename(target.join("debug").join(&bin), &kept).expect("keep the binary");
    kept
}

#[tokio::test(flavor = "multi_thread")]
async fn every_wrong_solution_fails_its_steps_check_on_the_behaviour_it_breaks() {
    let wrongs = wrong_solutions();
    assert!(wrongs.len() >= 8, "the wrong solutions: {}", wrongs.len());
    let copy = copy_of_the_repository(
        "wrong-solutions",
        &[
            ("name = \"step-", "name = \"wrong-step-"),
            ("default-run = \"step-", "default-run = \"wrong-step-"),
            // The shared crates too: cargo names a workspace package's
            // artifacts by name, version and path inside the workspace, so
            // the copy's would replace this repository's in the target
            // directory the tests still use.
            ("version = \"0.1.0\"", "version = \"0.1.0-wrong\""),
        ],
    );
    let cp = testcluster::shared().await.expect("control plane");
    let client = cp.client().await.expect("client");
    testcluster::install_crd(&client, workspace().join("manifests/crd.yaml"))
        .await
        .expect("install the CRD");

    // Builds, one after another on a thread of their own, each binary
    // handed over as soon as it is built.
    let mut order: Vec<usize> = (0..wrongs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(wrongs[i].step));
    let (built, mut ready) = tokio::sync::mpsc::unbounded_channel();
    let builder = {
        let wrongs: Vec<(usize, String, u8, PathBuf)> = order
            .iter()
            .map(|&i| {
                (
                    i,
                    wrongs[i].name.clone(),
                    wrongs[i].step,
                    wrongs[i].patch.clone(),
                )
            })
            .collect();
        std::thread::spawn(move || {
            course::cargo::lower_this_thread();
            for (i, name, step, patch) in wrongs {
                let program = build(&copy, &name, step, &patch);
                if built.send((i, program)).is_err() {
                    return; // the test is over
                }
            }
        })
    };
    let check = |i: usize, program: PathBuf| {
        let target = checks::Target {
            program,
            kubeconfig: cp.kubeconfig_path().to_path_buf(),
            client: client.clone(),
            echo: false,
            keep: false,
        };
        let step = wrongs[i].step;
        async move {
            let started = std::time::Instant::now();
            let report = course::steps::check(step, &target)
                .await
                .expect("the check runs");
            (i, report, started.elapsed())
        }
    };
    let mut running = futures::stream::FuturesUnordered::new();
    let mut reports = Vec::new();
    loop {
        tokio::select! {
            next = ready.recv() => match next {
                Some((i, program)) => running.push(check(i, program)),
                None => break,
            },
            Some(done) = futures::StreamExt::next(&mut running) => reports.push(done),
        }
    }
    if let Err(panic) = builder.join() {
        std::panic::resume_unwind(panic);
    }
    reports.extend(futures::StreamExt::collect::<Vec<_>>(running).await);
    reports.sort_by_key(|(i, ..)| *i);

    let mut missed = Vec::new();
    for (wrong, (_, report, took)) in wrongs.iter().zip(&reports) {
        let caught = report.summary().contains(&wrong.expect);
        println!(
            "{:<40} {:>4.0} s  {}",
            wrong.name,
            took.as_secs_f64(),
            if caught {
                format!("caught: {}", wrong.expect)
            } else {
                "NOT CAUGHT".to_string()
            }
        );
        if !caught {
            missed.push(format!("{}:\n{report}", wrong.name));
        }
    }
    assert!(
        missed.is_empty(),
        "wrong solutions the checks did not catch as their Expect: line says:\n{}",
        missed.join("\n\n")
    );
    // The copy and the binaries (about 100 MB each); on a failure they stay
    // in target/wrong-solutions to look at.
    let _ = std::fs::remove_dir_all(target_dir().join("wrong-solutions"));
}

/// Each wrong solution is the one a branch of Go's code names in its
/// step.toml (`[[branch]]`, `wrong = "NAME"`), for the line that branch's
/// check prints; each branch's wrong solution is here; and every branch
/// with a check line has one: the teacher notes' table of Go's branches
/// (`cargo xtask steps`) lists them all.
#[test]
fn every_go_branch_with_a_check_line_has_the_wrong_solution_its_line_catches() {
    let wrongs = wrong_solutions();
    let mut problems = Vec::new();
    for wrong in &wrongs {
        let step = course::steps::step(wrong.step).expect("its step");
        let stem = wrong.patch.file_stem().and_then(|s| s.to_str()).unwrap();
        let named: Vec<_> = step
            .branches
            .iter()
            .filter(|b| b.wrong == Some(stem))
            .collect();
        match named.as_slice() {
            [branch] => {
                let says = format!("step-{} FAIL {}", wrong.step, branch.check.unwrap_or("?"));
                if says != wrong.expect {
                    problems.push(format!(
                        "{}: its Expect: line is {:?}, its branch's check {says:?}",
                        wrong.name, wrong.expect
                    ));
                }
            }
            [] => problems.push(format!(
                "{}: no [[branch]] of steps/step-{}/step.toml has wrong = {stem:?}",
                wrong.name, wrong.step
            )),
            _ => problems.push(format!("{}: named by several branches", wrong.name)),
        }
    }
    for step in course::steps::STEPS {
        for branch in step
            .branches
            .iter()
            .filter(|b| b.check.is_some() && b.wrong.is_none())
        {
            problems.push(format!(
                "steps/step-{}/step.toml: the branch {:?} has a check line but no wrong solution \
                 that fails it: add one (wrong/NAME.patch, `wrong = \"NAME\"`)",
                step.number, branch.go
            ));
        }
        for name in step.branches.iter().filter_map(|b| b.wrong) {
            if !wrongs.iter().any(|w| {
                w.step == step.number && w.patch.file_stem().and_then(|s| s.to_str()) == Some(name)
            }) {
                problems.push(format!(
                    "steps/step-{}/step.toml names wrong = {name:?}, but there is no wrong/{name}.patch",
                    step.number
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
