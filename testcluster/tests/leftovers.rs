//! What a finished test binary leaves in `$TMPDIR`: nothing the next run does
//! not sweep, except what was kept on purpose (a failed test's logs, or
//! everything under `TESTCLUSTER_KEEP`).
//!
//! Each case runs a child: this test binary again, with one of the `child_…`
//! tests selected and `TMPDIR` pointing at a directory of the case's own.
//! The children are `#[ignore]`d so that a normal run does not start them on
//! their own; they also do nothing unless `LEFTOVERS_CHILD` is set.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use testcluster::{ControlPlane, KEPT_MARKER, Options};

/// Runs the child test `name` with `TMPDIR=base` (and `env`), and returns
/// whether it passed.
fn run_child(name: &str, base: &Path, env: &[(&str, &str)]) -> bool {
    let mut child = Command::new(std::env::current_exe().expect("this test binary"));
    child
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TMPDIR", base)
        .env("LEFTOVERS_CHILD", "1")
        .env_remove("TESTCLUSTER_KEEP");
    for (key, value) in env {
        child.env(key, value);
    }
    let output = child.output().expect("run the child test");
    eprintln!(
        "child {name}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output.status.success()
}

/// The control-plane data directories in `base`.
fn data_dirs(base: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(base)
        .expect("read the case's TMPDIR")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("sample-controller-rs-"))
        })
        .collect();
    dirs.sort();
    dirs
}

/// A fresh, empty `TMPDIR` for one case, removed with everything in it
/// when the case ends, passed or failed.
struct CaseDir(tempfile::TempDir);

impl CaseDir {
    fn new(case: &str) -> CaseDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("leftovers-{case}-"))
            .tempdir()
            .expect("create the case's TMPDIR");
        CaseDir(dir)
    }
}

impl std::ops::Deref for CaseDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

fn is_child() -> bool {
    std::env::var_os("LEFTOVERS_CHILD").is_some()
}

/// A control plane in a static, as tests/errors.rs and tests/parity.rs keep
/// theirs: never dropped.
#[tokio::test]
#[ignore = "a child of the leftovers tests: run by them with LEFTOVERS_CHILD set"]
async fn child_holds_a_control_plane_in_a_static() {
    if !is_child() {
        return;
    }
    static HELD: OnceLock<ControlPlane> = OnceLock::new();
    let cp = ControlPlane::start(Options::api_server_only())
        .await
        .expect("start");
    cp.client().await.expect("client");
    let _ = HELD.set(cp);
}

/// A test that fails while its control plane is in scope.
#[tokio::test]
#[ignore = "a child of the leftovers tests: run by them with LEFTOVERS_CHILD set"]
async fn child_fails_with_a_control_plane_in_scope() {
    if !is_child() {
        return;
    }
    let _cp = ControlPlane::start(Options::api_server_only())
        .await
        .expect("start");
    panic!("a failing test (on purpose)");
}

#[test]
fn a_control_plane_held_in_a_static_is_swept_by_the_next_run() {
    let base = CaseDir::new("static");
    assert!(run_child(
        "child_holds_a_control_plane_in_a_static",
        &base,
        &[]
    ));
    let left = data_dirs(&base);
    assert_eq!(left.len(), 1, "the child's data directory: {left:?}");
    assert!(
        !left[0].join(KEPT_MARKER).exists(),
        "not marked kept: {left:?}"
    );

    testcluster::sweep_stale_data_dirs(&base);
    assert_eq!(data_dirs(&base), Vec::<PathBuf>::new(), "swept");
}

#[test]
fn testcluster_keep_keeps_a_static_control_planes_directory_through_the_sweep() {
    let base = CaseDir::new("keep");
    assert!(run_child(
        "child_holds_a_control_plane_in_a_static",
        &base,
        &[("TESTCLUSTER_KEEP", "1")]
    ));
    testcluster::sweep_stale_data_dirs(&base);
    let left = data_dirs(&base);
    assert_eq!(left.len(), 1, "kept: {left:?}");
    assert!(left[0].join(KEPT_MARKER).exists());
    assert!(left[0].join("etcd").exists(), "everything kept, etcd too");
}

#[test]
fn a_failed_test_keeps_its_logs_without_etcds_data_through_the_sweep() {
    let base = CaseDir::new("failed");
    assert!(
        !run_child("child_fails_with_a_control_plane_in_scope", &base, &[]),
        "the child fails on purpose"
    );
    testcluster::sweep_stale_data_dirs(&base);
    let left = data_dirs(&base);
    assert_eq!(left.len(), 1, "kept: {left:?}");
    assert!(left[0].join(KEPT_MARKER).exists());
    assert!(left[0].join("logs").exists(), "its logs");
    assert!(!left[0].join("etcd").exists(), "not etcd's data");
}
