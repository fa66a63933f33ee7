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
