//! The repository the course lives in, as every tool sees it: its root, its
//! build output, its packages, and cargo or another tool run in it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// `cargo ARGS` in the repository, as the user's own shell would run it
/// (none of the variables `cargo xtask` got for xtask itself: see
/// [`crate::cargo`]), so that it shares their builds.
pub fn cargo(args: &[&str]) -> crate::cargo::Cargo {
    crate::cargo::command(&repo_root(), args)
}

/// The repository root (parent of `course/`).
pub fn repo_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().unwrap_or(crate_dir).to_path_buf()
}

/// The workspace's own packages, as `cargo metadata --no-deps` lists them
/// from `root`.
pub fn packages(root: &Path) -> Result<Vec<cargo_metadata::Package>> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .current_dir(root)
        .no_deps()
        .exec()
        .context("cargo metadata")?;
    Ok(metadata.workspace_packages().into_iter().cloned().collect())
}

/// `path` relative to the repository (as it is, if outside it).
pub fn rel(path: &Path) -> String {
    let root = repo_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` (relative to the
/// repository when relative), else `target/` in the repository.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                repo_root().join(dir)
            }
        }
        None => repo_root().join("target"),
    }
}

/// Where `cargo build` puts the dev profile's binaries (and `examples/`).
pub fn debug_dir() -> PathBuf {
    target_dir().join("debug")
}

/// Runs `command`; an error naming it if it cannot start or fails.
pub fn run_tool(command: &mut std::process::Command) -> Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("running {shown}"))?;
    anyhow::ensure!(status.success(), "{shown} failed ({status})");
    Ok(())
}
