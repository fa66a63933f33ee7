//! The workshop kit, proved: every starter as handed out fails its check,
//! each behaviour the way its step folder's `untouched.txt` records, and every failure is the
//! starter's own `todo!()` (not a broken cluster or a check that cannot
//! pass); and every starter finished with the reference's code passes it,
//! so an attendee whose gaps are right is never failed by the rest of the
//! starter. tests/steps.rs proves that each step itself passes.

use std::path::Path;

use course::checks::{Outcome, Target};

mod copy;
use copy::{copy_of_the_repository, target_dir, workspace};

/// What step `step`'s untouched starter's check reports, one line per
/// behaviour: `steps/step-N/untouched.txt` without its comments.
fn untouched(step: u8) -> Vec<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../steps/step-{step}/untouched.txt"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Runs step `step`'s check on its untouched starter `program` and compares
/// the result with [`untouched`].
async fn fails_as_handed_out(step: u8, program: &str) {
    let cp = testcluster::shared().await.expect("control plane");
    let client = cp.client().await.expect("client");
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/crd.yaml");
    testcluster::install_crd(&client, crd)
        .await
        .expect("install CRD");
    let target = Target {
        program: program.into(),
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        client,
        echo: true,
        keep: false,
    };
    let report = course::steps::check(step, &target)
        .await
        .expect("the check runs");
    println!("{report}");

    assert_eq!(
        report.summary(),
        untouched(step),
        "the untouched step {step} starter no longer fails as steps/step-{step}/untouched.txt says (update it if a behaviour was added):\n{report}"
    );
    for line in &report.lines {
        if let Outcome::Failed { happened, .. } = &line.outcome {
            assert!(
                happened.contains("not yet implemented"),
                "step {step}, {:?} failed for another reason than the starter's todo!():\n{happened}",
                line.behaviour.what
            );
        }
    }
}

/// The binary of a starter: next to this package's other binaries.
fn starter_binary(name: &str) -> String {
    let dir = Path::new(env!("CARGO_BIN_EXE_workshop-step-2"))
        .parent()
        .expect("a binary has a directory");
    dir.join(name).to_string_lossy().into_owned()
}

/// Every starter of the step registry, handed out untouched, fails its
/// check as its `untouched.txt` records (all at once, on one control plane).
#[tokio::test(flavor = "multi_thread")]
async fn every_starter_fails_its_check_at_its_todo() {
    let starters: Vec<_> = course::steps::STEPS
        .iter()
        .filter_map(|step| step.starter.map(|starter| (step.number, starter)))
        .collect();
    assert!(!starters.is_empty());
    futures::future::join_all(starters.iter().map(|(step, starter)| {
        let program = starter_binary(starter.binary);
        async move { fails_as_handed_out(*step, &program).await }
    }))
    .await;
}

/// Every starter of the step registry, its gaps filled with the reference's
/// code (`cargo xtask workshop --finished`, from the same specs and gap
/// markers as the starters), passes its whole check on the first run.
#[tokio::test(flavor = "multi_thread")]
async fn every_starter_finished_with_the_references_code_passes_its_check() {
    let starters: Vec<_> = course::steps::STEPS
        .iter()
        .filter_map(|step| step.starter.map(|starter| (step.number, starter)))
        .collect();
    assert!(!starters.is_empty());
    let target = target_dir();
    // Its own version of every package, as new_step.rs does: cargo names a
    // workspace package's artifacts by name, version and path inside the
    // workspace, so the copy's lesson crates would otherwise replace this
    // repository's in the shared target directory, under a test that is
    // running (shared_builds saw its second plain `cargo build` compile).
    let copy = copy_of_the_repository(
        "finished-starters",
        &[
            ("name = \"workshop-step-", "name = \"finished-step-"),
            ("version = \"0.1.0\"", "version = \"0.1.0-finished\""),
        ],
    );
    let workshop = copy.join("workshop");
    let written = course::cargo::command(
        &workspace(),
        &[
            "run",
            "--quiet",
            "-p",
            "xtask",
            "--",
            "workshop",
            "--finished",
            workshop.to_str().expect("a UTF-8 path"),
        ],
    )
    .env("CARGO_TARGET_DIR", &target)
    .std()
    .output()
    .expect("cargo xtask workshop --finished");
    assert!(
        written.status.success(),
        "cargo xtask workshop --finished failed:\n{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let built = course::cargo::command(&copy, &["build", "--quiet", "-p", "workshop", "--bins"])
        .env("CARGO_TARGET_DIR", &target)
        .std()
        .output()
        .expect("cargo build");
    assert!(
        built.status.success(),
        "a finished starter does not compile (its spec's imports or edits miss what the reference's code uses):\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let kept = target.join("finished-starters/bin");
    std::fs::create_dir_all(&kept).expect("mkdir");
    let programs: Vec<_> = starters
        .iter()
        .map(|(step, starter)| {
            let bin = starter.binary.replace("workshop-step-", "finished-step-");
            let program = kept.join(&bin);
            // Moved, not copied: nothing of it stays next to the starters.
            std::fs::rename(target.join("debug").join(&bin), &program).expect("keep the binary");
            (*step, program)
        })
        .collect();

    let cp = testcluster::shared().await.expect("control plane");
    let client = cp.client().await.expect("client");
    testcluster::install_crd(&client, workspace().join("manifests/crd.yaml"))
        .await
        .expect("install CRD");
    let reports = futures::future::join_all(programs.iter().map(|(step, program)| {
        let target = Target {
            program: program.clone(),
            kubeconfig: cp.kubeconfig_path().to_path_buf(),
            client: client.clone(),
            echo: false,
            keep: false,
        };
        async move {
            course::steps::check(*step, &target)
                .await
                .expect("the check runs")
        }
    }))
    .await;
    let failed: Vec<String> = reports
        .iter()
        .filter(|report| !report.passed())
        .map(|report| report.to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "finished starters the check fails:\n{}",
        failed.join("\n\n")
    );
    let _ = std::fs::remove_dir_all(target.join("finished-starters"));
}

#[test]
fn every_step_with_a_starter_and_no_other_has_an_untouched_txt_of_its_own_lines() {
    for step in course::steps::STEPS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../steps/step-{}/untouched.txt", step.number));
        assert_eq!(
            path.is_file(),
            step.starter.is_some(),
            "step {}: {} exists exactly when the step has a starter",
            step.number,
            path.display()
        );
        if step.starter.is_some() {
            let lines = untouched(step.number);
            assert!(!lines.is_empty(), "{} is empty", path.display());
            let prefix = format!("step-{} ", step.number);
            for line in lines {
                assert!(line.starts_with(&prefix), "{}: {line}", path.display());
            }
        }
    }
}
