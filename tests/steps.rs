//! End-to-end: every step binary against a real control plane.
//!
//! One control plane for this test binary (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, from `testcluster`), one
//! namespace per test. Each step runs as a child process, as a learner would
//! run it, and the tests assert on what it prints and on the cluster. Steps
//! 2–8 run their behaviour checks (`testcluster::checks`), the same ones
//! `cargo xtask check step-N` runs on a learner's workshop starter.

mod support;

use support::*;
use testcluster::checks;

#[tokio::test]
async fn step_1_lists_a_foo_and_a_deployment_created_by_the_test() {
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "step1").await;
    create_foo(&client, &ns, "listed-foo", "listed-foo-nginx", Some(2)).await;
    create_foreign_deployment(&client, &ns, "plain-deployment").await;

    let (status, output) = Step::start("step-1", cp.kubeconfig_path(), Some(&ns), &[])
        .wait()
        .await;

    assert!(status.success(), "{output}");
    let foo_row = output
        .lines()
        .find(|l| l.contains("listed-foo "))
        .unwrap_or_else(|| panic!("no Foo row:\n{output}"));
    assert!(
        foo_row.contains(&ns) && foo_row.contains("listed-foo-nginx") && foo_row.contains(" 2 "),
        "{foo_row}"
    );
    let deployment_row = output
        .lines()
        .find(|l| l.contains("plain-deployment"))
        .unwrap_or_else(|| panic!("no Deployment row:\n{output}"));
    assert!(
        deployment_row.contains("<none>"),
        "not controlled by anyone: {deployment_row}"
    );
}

/// Runs step `step`'s behaviour checks (`testcluster::checks`: what `cargo
/// xtask check step-N` runs on a learner's starter) on the step's own binary
/// (the step registry's); every behaviour must pass.
async fn passes_its_check(step: u8) {
    let (cp, client) = cluster().await;
    let binary = testcluster::steps::step(step)
        .expect("a step of the registry")
        .binary;
    let target = checks::Target {
        program: step_binary(binary).into(),
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        client,
        echo: true,
        keep: false,
    };
    let report = testcluster::steps::check(step, &target)
        .await
        .expect("the check runs");
    println!("{report}");
    assert!(report.passed(), "step {step}:\n{report}");
    // A check that passed leaves nothing behind.
    assert!(!report.namespaces.is_empty(), "the check used no namespace");
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(target.client.clone());
    for ns in &report.namespaces {
        let left = namespaces.get_opt(ns).await.expect("read the namespace");
        assert!(
            left.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
            "step {step}: the check passed but left namespace {ns}"
        );
    }
}

#[tokio::test]
async fn step_2_fills_both_caches_keeps_them_current_and_stops_on_sigterm() {
    passes_its_check(2).await;
}

#[tokio::test]
async fn step_3_prints_adds_updates_and_deletes_and_the_key_each_handler_enqueues() {
    passes_its_check(3).await;
}

#[tokio::test]
async fn step_4_collapses_bursts_never_runs_a_key_twice_at_once_and_backs_off_retries() {
    passes_its_check(4).await;
}

#[tokio::test]
async fn step_5_creates_scales_and_recreates_the_deployment_and_refuses_a_foreign_one() {
    passes_its_check(5).await;
}

#[tokio::test]
async fn step_6_makes_the_foo_status_follow_the_deployment() {
    passes_its_check(6).await;
}

#[tokio::test]
async fn step_7_records_events_writes_like_go_resyncs_and_exits_cleanly() {
    passes_its_check(7).await;
}

#[tokio::test]
async fn step_8_applies_only_what_drifted_is_silent_while_idle_and_restarts_cleanly() {
    passes_its_check(8).await;
}

#[tokio::test]
async fn step_6_without_rbac_names_every_missing_permission_and_exits() {
    // Steps 1-6 stop at a missing permission; step 7 warns and retries
    // instead (tests/faults.rs, fault 9).
    let (cp, client) = cluster().await;
    let ns = namespace(&client, "rbac").await;
    let kubeconfig = cp
        .service_account_kubeconfig(&ns, "controller")
        .await
        .unwrap();

    let (status, output) = Step::start("step-6", &kubeconfig, Some(&ns), &[])
        .wait()
        .await;
    assert!(!status.success(), "{output}");
    assert!(output.contains("RBAC forbids"), "{output}");
    for missing in [
        "list foos",
        "watch deployments",
        "create deployments",
        "update deployments",
        "update foos/status",
    ] {
        assert!(output.contains(missing), "{missing} not named:\n{output}");
    }
}

#[test]
fn every_step_with_a_check_in_the_registry_has_its_test_here() {
    let source = include_str!("steps.rs");
    for step in testcluster::steps::checked() {
        let call = format!("passes_its_check({})", step.number);
        assert!(
            source.contains(&call),
            "step {} has a check but tests/steps.rs never runs it on the step: add a test calling {call}",
            step.number
        );
    }
}
