//! End-to-end: every step binary against a real control plane.
//!
//! One control plane for this test binary (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok, from `testcluster`), one
//! namespace per test. Each step runs as a child process, as a learner would
//! run it, and the tests assert on what it prints and on the cluster. Every
//! step with a check (`steps/step-N/check.rs`) runs it: the same behaviours
//! `cargo xtask check step-N` reports for a learner's workshop starter.
//!
//! The tests are made from the step registry, one per checked step, so a
//! new step folder is tested without a line here: this file is its own
//! harness (`harness = false`, libtest-mimic), and takes the usual test
//! arguments (a name filter, `--list`, `--test-threads`).

mod support;

use std::future::Future;

use course::checks;
use libtest_mimic::{Arguments, Failed, Trial};
use support::*;

fn main() {
    let args = Arguments::from_args();
    let mut trials = vec![
        trial(
            "step_1_lists_a_foo_and_a_deployment_created_by_the_test",
            step_1_lists_a_foo_and_a_deployment_created_by_the_test,
        ),
        trial(
            "step_6_without_rbac_names_every_missing_permission_and_exits",
            step_6_without_rbac_names_every_missing_permission_and_exits,
        ),
    ];
    for step in course::steps::checked() {
        let name = format!("step_{}_passes_its_check", step.number);
        trials.push(trial(&name, move || passes_its_check(step.number)));
    }
    libtest_mimic::run(&args, trials).exit();
}

/// A test named `name` that runs `test` on a runtime of its own, as
/// `#[tokio::test]` would; a panic fails it.
fn trial<F: Future<Output = ()>>(name: &str, test: impl FnOnce() -> F + Send + 'static) -> Trial {
    Trial::test(name, move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| Failed::from(format!("a runtime for the test: {err}")))?
            .block_on(test());
        Ok(())
    })
}

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

/// Runs step `step`'s behaviour checks (`course::checks`: what `cargo
/// xtask check step-N` runs on a learner's starter) on the step's own binary
/// (the step registry's); every behaviour must pass.
async fn passes_its_check(step: u8) {
    let (cp, client) = cluster().await;
    let binary = course::steps::step(step)
        .expect("a step of the registry")
        .binary;
    let target = checks::Target {
        program: step_binary(binary).into(),
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        client,
        echo: true,
        keep: false,
    };
    let report = course::steps::check(step, &target)
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

/// Steps 1-6 stop at a missing permission; step 7 warns and retries
/// instead (tests/faults/, fault 9).
async fn step_6_without_rbac_names_every_missing_permission_and_exits() {
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
