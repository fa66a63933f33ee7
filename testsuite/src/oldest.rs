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

use testcluster::binaries::Release;

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
    let mut command = course::workspace::cargo(&["test", "--test", "steps"]).std();
    for (binary, path) in servers(&release)? {
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

/// The oldest release's servers, each built into the cache unless it is
/// there already (`cargo xtask test` builds them beside its tests).
pub fn servers(release: &Release) -> Result<Vec<(Binary, std::path::PathBuf)>> {
    let module = course::workspace::repo_root().join("target/oldest-kubernetes");
    let mut written = false;
    let mut paths = Vec::new();
    for binary in SERVERS {
        let path = match cached_path_at(binary, &release.kubernetes)? {
            path if path.is_file() => path,
            _ => {
                if !written {
                    wrapper_module(&module, release)?;
                    written = true;
                }
                build_at(binary, &module, &release.kubernetes)?
            }
        };
        paths.push((binary, path));
    }
    Ok(paths)
}

/// `dir` as the wrapper module of `controlplane/kubernetes` moved to
/// `release`, written afresh.
///
/// It starts from the pinned go.mod without its requirements: the pinned
/// release's are newer than an older release's, and minimal version selection
/// would keep them (kube-controller-manager 1.36 does not compile against the
/// CSI spec 1.37 requires). Go then resolves what `release` itself requires;
/// `go mod tidy` rewrites any go.sum an earlier run left.
fn wrapper_module(dir: &Path, release: &Release) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pinned = testcluster::binaries::controlplane_dir().join("kubernetes/go.mod");
    let go_mod = dir.join("go.mod");
    std::fs::copy(&pinned, &go_mod)
        .with_context(|| format!("copying {} into {}", pinned.display(), dir.display()))?;
    upkeep::gomod::drop_requirements(&go_mod)?;
    upkeep::bump::kubernetes_module(dir, release)
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_older_wrapper_keeps_the_pinned_tools_and_none_of_its_requirements() {
        let pinned = std::fs::read_to_string(
            testcluster::binaries::controlplane_dir().join("kubernetes/go.mod"),
        )
        .unwrap();
        assert!(pinned.contains("github.com/container-storage-interface/spec"));
        let tmp = tempfile::tempdir().unwrap();
        let go_mod = tmp.path().join("go.mod");
        std::fs::write(&go_mod, &pinned).unwrap();
        upkeep::gomod::drop_requirements(&go_mod).unwrap();
        let older = std::fs::read_to_string(&go_mod).unwrap();
        assert!(!older.contains("require"), "{older}");
        assert!(!older.contains("container-storage-interface"), "{older}");
        assert!(older.starts_with("module sample-controller-rs/controlplane/kubernetes\n"));
        assert!(older.contains("k8s.io/kubernetes/cmd/kube-controller-manager"));
        assert!(older.contains("replace k8s.io/api => k8s.io/api v"));
    }
}
