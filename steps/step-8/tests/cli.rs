//! Step 8's command line, run as a learner runs it.
//!
//! The end-to-end tests of step 8 against a real API server are in the root
//! package's tests/ (with the other steps'). This package's own integration
//! test also makes `cargo test --workspace` build the `step-8` binary they run.

use std::process::Command;

#[test]
fn step_8_help_lists_the_production_flags_beside_gos() {
    let output = Command::new(env!("CARGO_BIN_EXE_step-8"))
        .arg("--help")
        .output()
        .expect("run step-8 --help");
    assert!(output.status.success(), "{output:?}");
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--kubeconfig",
        "--master",
        "--namespace",
        "--http-address",
        "--leader-elect",
    ] {
        assert!(help.contains(flag), "no {flag} in step-8 --help:\n{help}");
    }
}

#[test]
fn step_8_refuses_an_unknown_flag_with_usage_and_exit_code_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_step-8"))
        .arg("--no-such-flag")
        .output()
        .expect("run step-8");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
    assert!(stderr.contains("Usage"), "{stderr}");
}

/// Runs `step-8 ARGS` against a kubeconfig that does not exist: a flag that
/// is refused never gets as far as reading it.
fn step_8(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_step-8"))
        .args(args)
        .args(["--kubeconfig", "/nonexistent/kubeconfig"])
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .output()
        .expect("run step-8")
}

#[test]
fn step_8_refuses_each_bad_leader_election_value_naming_the_flag_and_the_rule() {
    for (args, said) in [
        (
            &["--leader-elect-lease-duration=15"][..],
            "invalid value '15' for '--leader-elect-lease-duration <DURATION>': not a duration; write it as Go does",
        ),
        (
            &["--leader-elect-retry-period=0s"],
            "invalid value '0s' for '--leader-elect-retry-period <DURATION>': must be longer than zero",
        ),
        (
            &["--leader-elect-renew-deadline=-10s"],
            "invalid value '-10s' for '--leader-elect-renew-deadline <DURATION>': must be longer than zero",
        ),
        (
            &["--leader-elect-renew-deadline=15s"],
            "--leader-elect-renew-deadline=15s must be shorter than --leader-elect-lease-duration=15s",
        ),
        (
            &[
                "--leader-elect-lease-duration=1m",
                "--leader-elect-renew-deadline=1.5m",
            ],
            "--leader-elect-renew-deadline=1m30s must be shorter than --leader-elect-lease-duration=1m",
        ),
        (
            &["--leader-elect-retry-period=9s"],
            "--leader-elect-renew-deadline=10s must be longer than 1.2 × --leader-elect-retry-period (9s)",
        ),
        (
            &["--leader-elect-lease-duration=1500ms"],
            "--leader-elect-lease-duration=1.5s: a Lease holds its duration in whole seconds",
        ),
        (
            &["--leader-elect-resource-lock=endpoints"],
            "client-go removed the `endpoints` lock, and step 8 has none either: use `leases`",
        ),
        (
            &["--leader-elect-resource-lock=lease"],
            "invalid value 'lease' for '--leader-elect-resource-lock <LOCK>': not a lock kind",
        ),
    ] {
        let output = step_8(&[&["--leader-elect"], args].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(said),
            "{args:?}: wanted {said:?} in:\n{stderr}"
        );
        assert!(
            !stderr.contains("nonexistent"),
            "{args:?} got as far as the kubeconfig:\n{stderr}"
        );
    }
}

#[test]
fn step_8_takes_kube_controller_managers_leader_election_flags_in_gos_duration_syntax() {
    for args in [
        &[
            "--leader-elect-lease-duration=15s",
            "--leader-elect-renew-deadline=10s",
            "--leader-elect-retry-period=2s",
            "--leader-elect-resource-lock=leases",
            "--leader-elect-resource-name=x",
            "--leader-elect-resource-namespace=y",
        ][..],
        &[
            "--leader-elect-lease-duration=1.5h",
            "--leader-elect-renew-deadline=1m30s",
            "--leader-elect-retry-period=300ms",
        ],
        &["--leader-elect-lease-duration", "1h0m0s"],
    ] {
        // Past the flags, it stops at the kubeconfig that does not exist.
        let output = step_8(&[&["--leader-elect"], args].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("/nonexistent/kubeconfig"),
            "{args:?}: {stderr}"
        );
    }
}
