//! `cargo xtask oldest`: every step's check against the oldest Kubernetes the
//! course claims (`oldest_kubernetes` in versions.toml), so that the claim in
//! the README and the introduction is tested, not hoped.
//!
//! kube-apiserver, kube-controller-manager and kube-scheduler of that release
//! are built once into the cache beside the pinned ones, from a wrapper module
//! written for it under `target/` the way `cargo xtask bump-kubernetes` writes
//! `controlplane/kubernetes`. etcd, kwok and kubectl stay the pinned ones: the
//! steps talk only to the API server.

use std::path::Path;

use anyhow::{Context, Result, bail};
use testcluster::Binary;
use testcluster::binaries::{OLDEST_KUBERNETES_VERSION, build_at, cached_path_at};

use crate::gosource::links::Release;

/// The servers of the control plane that come from `k8s.io/kubernetes`.
const SERVERS: [Binary; 3] = [
    Binary::KubeApiserver,
    Binary::KubeControllerManager,
    Binary::KubeScheduler,
];

/// Builds the oldest release's servers if needed, then runs `cargo test --test
/// steps` (every step's check, as `cargo xtask check --reference` runs it) on
/// a control plane of them.
pub fn oldest() -> Result<()> {
    let release = Release::of(OLDEST_KUBERNETES_VERSION)?;
    println!(
        "==> kube-apiserver, kube-controller-manager and kube-scheduler {} (built once into the cache)",
        release.kubernetes
    );
    let module = crate::repo_root().join("target/oldest-kubernetes");
    let mut command = crate::cargo(&["test", "--test", "steps"]).std();
    for binary in SERVERS {
        let path = match cached_path_at(binary, &release.kubernetes)? {
            path if path.is_file() => path,
            _ => {
                wrapper_module(&module, &release)?;
                build_at(binary, &module, &release.kubernetes)?
            }
        };
        println!("{:<24} {}", binary.name(), path.display());
        command.env(binary.env_var(), path);
    }
    command.env(testcluster::EXPECT_KUBERNETES, &release.kubernetes);
    println!(
        "==> cargo test --test steps: every step's check against Kubernetes {}",
        release.kubernetes
    );
    let status = command
        .status()
        .context("running cargo test --test steps")?;
    if !status.success() {
        bail!(
            "a step failed against Kubernetes {}, the oldest release versions.toml claims",
            release.kubernetes
        );
    }
    Ok(())
}

/// `dir` as a copy of `controlplane/kubernetes` moved to `release`, unless an
/// earlier run wrote it already.
fn wrapper_module(dir: &Path, release: &Release) -> Result<()> {
    let marker = dir.join(".release");
    if std::fs::read_to_string(&marker).is_ok_and(|r| r == release.kubernetes) {
        return Ok(());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pinned = testcluster::binaries::controlplane_dir().join("kubernetes");
    for file in ["go.mod", "go.sum"] {
        std::fs::copy(pinned.join(file), dir.join(file))
            .with_context(|| format!("copying {file} to {}", dir.display()))?;
    }
    crate::bump::kubernetes_module(dir, release)?;
    std::fs::write(&marker, &release.kubernetes)?;
    Ok(())
}
