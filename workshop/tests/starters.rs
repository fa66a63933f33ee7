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

/// The binary of a starter: next to this package's other binaries.
fn starter_binary(name: &str) -> String {
    let dir = Path::new(env!("CARGO_BIN_EXE_workshop-step-2"))
        .parent()
        .expect("a binary has a directory");
    dir.join(name).to_string_lossy().into_owned()
}

/// Every starter of the step registry, handed out untouched, fails its
/// check as `untouched.txt` records (all at once, on one control plane).
#[tokio::test(flavor = "multi_thread")]
async fn every_starter_fails_its_check_at_its_todo() {
    let starters: Vec<_> = testcluster::steps::STEPS
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

#[test]
fn untouched_txt_covers_exactly_the_starters_of_the_registry() {
    let mut listed: Vec<u8> = UNTOUCHED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("step-")?.split(' ').next()?.parse().ok())
        .collect();
    listed.dedup();
    let starters: Vec<u8> = testcluster::steps::STEPS
        .iter()
        .filter(|s| s.starter.is_some())
        .map(|s| s.number)
        .collect();
    assert_eq!(listed, starters);
}
