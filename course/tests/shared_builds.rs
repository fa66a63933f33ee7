//! `cargo xtask` builds what the user's own `cargo build` builds: after a
//! `cargo build`, `cargo xtask check step-5 --reference` compiles nothing,
//! and the next `cargo build` compiles nothing either.
//!
//! `cargo xtask …` runs here as a user's shell runs it; `cargo run` then
//! gives xtask the variables of its own package (`CARGO_MANIFEST_DIR`,
//! `CARGO_PKG_*`, …), exactly the ones that, passed on to xtask's inner
//! cargo, made ring's build script and everything above it rebuild.
//!
//! (In testcluster, not xtask: an integration test of xtask would make
//! `cargo test --workspace` build xtask's binary with the workspace's
//! features over the one `cargo xtask test` is running.)

use std::path::Path;
use std::process::Command;

/// The repository root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testcluster/ is in the repository")
}

/// `cargo ARGS` as a user's shell runs it: this process's environment
/// without the `CARGO_*` variables cargo sets for a program it runs (kept:
/// the user's own configuration, listed here independently of
/// `course::cargo`).
fn users_cargo(args: &[&str]) -> Command {
    const USERS: &[&str] = &[
        "CARGO_HOME",
        "CARGO_TARGET_DIR",
        "CARGO_INCREMENTAL",
        "CARGO_TERM_COLOR",
        "CARGO_BUILD_JOBS",
    ];
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.args(args).current_dir(root());
    for (key, _) in std::env::vars() {
        if (key.starts_with("CARGO_") && !USERS.contains(&key.as_str())) || key == "OUT_DIR" {
            command.env_remove(&key);
        }
    }
    command
}

/// The packages a `cargo build --message-format=json` compiled (not fresh).
fn compiled(args: &[&str]) -> Vec<String> {
    let mut all = args.to_vec();
    all.push("--message-format=json");
    let output = users_cargo(&all).output().expect("run cargo");
    assert!(
        output.status.success(),
        "cargo {}:\n{}",
        all.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["fresh"] == false)
        .map(|m| m["package_id"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_check_after_cargo_build_compiles_nothing_and_neither_does_the_next_cargo_build() {
    // The user's build, whatever it compiles.
    compiled(&["build"]);
    assert_eq!(
        compiled(&["build"]),
        Vec::<String>::new(),
        "a second plain cargo build compiles nothing (else the test proves nothing)"
    );

    // `cargo xtask check step-5 --reference`, as typed.
    let cp = testcluster::shared().await.expect("control plane");
    let kubeconfig = cp.kubeconfig_path().to_string_lossy().into_owned();
    let output = tokio::process::Command::from(users_cargo(&[
        "xtask",
        "check",
        "step-5",
        "--reference",
        "--kubeconfig",
        &kubeconfig,
    ]))
    .output()
    .await
    .expect("run cargo xtask check");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // What it prints as its build is what a user would type.
    assert!(
        stdout.contains("==> cargo build --bin step-5\n"),
        "{stdout}"
    );
    // What xtask's own cargo compiled: after `cargo run` started xtask.
    let inner = stderr
        .split_once("Running `")
        .map_or(stderr.as_ref(), |(_, after)| after);
    let compiling: Vec<&str> = inner
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling"))
        .collect();
    assert!(
        compiling.is_empty(),
        "the check rebuilt what cargo build had built:\n{}",
        compiling.join("\n")
    );

    assert_eq!(
        compiled(&["build"]),
        Vec::<String>::new(),
        "cargo build after the check compiles nothing"
    );
}
