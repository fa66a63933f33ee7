//! The workshop kit, proved: every starter as handed out fails its check,
//! each behaviour the way `untouched.txt` records, and every failure is the
//! starter's own `todo!()` (not a broken cluster or a check that cannot
//! pass). tests/steps.rs proves the other half: each step passes the same
//! check.

use std::path::Path;

use testcluster::checks::{self, Outcome, Target};

/// What an untouched starter's check reports, one line per behaviour.
const UNTOUCHED: &str = include_str!("untouched.txt");

/// Runs step `step`'s check on its untouched starter `program` and compares
/// the result with [`UNTOUCHED`].
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
    };
    let report = checks::check(step, &target).await.expect("the check runs");
    println!("{report}");

    let expected: Vec<&str> = UNTOUCHED
        .lines()
        .filter(|l| l.starts_with(&format!("step-{step} ")))
        .collect();
    assert_eq!(
        report.summary(),
        expected,
        "the untouched step {step} starter no longer fails as tests/untouched.txt says (update it if a behaviour was added):\n{report}"
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

#[tokio::test]
async fn the_step_2_starter_fails_its_check_at_its_todo() {
    fails_as_handed_out(2, env!("CARGO_BIN_EXE_workshop-step-2")).await;
}

#[tokio::test]
async fn the_step_3_starter_fails_its_check_at_its_todo() {
    fails_as_handed_out(3, env!("CARGO_BIN_EXE_workshop-step-3")).await;
}

#[tokio::test]
async fn the_step_4_starter_fails_its_check_at_its_todo() {
    fails_as_handed_out(4, env!("CARGO_BIN_EXE_workshop-step-4")).await;
}

#[tokio::test]
async fn the_step_5_starter_fails_its_check_at_its_todo() {
    fails_as_handed_out(5, env!("CARGO_BIN_EXE_workshop-step-5")).await;
}

#[tokio::test]
async fn the_step_6_starter_fails_its_check_at_its_todo() {
    fails_as_handed_out(6, env!("CARGO_BIN_EXE_workshop-step-6")).await;
}

#[tokio::test]
async fn the_step_7_starter_fails_its_check_at_its_todo() {
    fails_as_handed_out(7, env!("CARGO_BIN_EXE_workshop-step-7")).await;
}

#[tokio::test]
async fn the_step_8_starter_fails_its_check_at_its_todo() {
    fails_as_handed_out(8, env!("CARGO_BIN_EXE_workshop-step-8")).await;
}
