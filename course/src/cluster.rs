//! `cargo xtask cluster build | up | down | status`: the control plane of
//! `~/.cache/sample-controller-rs`, built once and run in the background for
//! a learner's own `cargo run --bin step-N`.

use std::path::Path;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use testcluster::{Binary, ControlPlane, Options};

/// Builds `binaries` (all of them if none is named) into the cache, when
/// missing, and prints where each is.
pub fn build(binaries: &[Binary]) -> Result<()> {
    let binaries = if binaries.is_empty() {
        &Binary::ALL[..]
    } else {
        binaries
    };
    for &binary in binaries {
        let path = testcluster::binaries::ensure(binary)?;
        println!(
            "{:<24} {:<8} {}",
            binary.name(),
            binary.version(),
            path.display()
        );
    }
    Ok(())
}

/// Starts a control plane in the background, with its state in
/// [`testcluster::cluster_dir`], installs the CRD, and prints how to use it;
/// says so if one is already up.
pub async fn up(no_kwok: bool, api_server_only: bool) -> Result<()> {
    let dir = testcluster::cluster_dir()?;
    let kubeconfig = dir.join("kubeconfig");
    if testcluster::recorded_processes(&dir)?
        .iter()
        .any(|p| p.is_running())
    {
        println!(
            "The cluster is already up (`cargo xtask cluster status` for details). To use it:"
        );
        print_exports(&kubeconfig);
        return Ok(());
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("removing the stale state in {}", dir.display()))?;
    }

    let mut scheduler_and_kwok = !no_kwok;
    if scheduler_and_kwok {
        // kube-scheduler and kwok are optional here: without them Pods stay Pending.
        let ensured = tokio::task::spawn_blocking(|| {
            testcluster::binaries::ensure(Binary::KubeScheduler)?;
            testcluster::binaries::ensure(Binary::Kwok)
        })
        .await?;
        if let Err(err) = ensured {
            eprintln!(
                "warning: starting without kube-scheduler and kwok (Pods will stay Pending): {err:#}"
            );
            scheduler_and_kwok = false;
        }
    }
    // kubectl is not part of the control plane: without it, the cluster still starts.
    let kubectl = tokio::task::spawn_blocking(|| testcluster::binaries::ensure(Binary::Kubectl));
    if let Err(err) = kubectl.await? {
        eprintln!(
            "warning: no kubectl {} (use your own): {err:#}",
            Binary::Kubectl.version()
        );
    }
    let cp = ControlPlane::start(Options {
        controller_manager: !api_server_only,
        scheduler_and_kwok,
        data_dir: Some(dir.clone()),
        detached: true,
        apiserver_flags: Vec::new(),
    })
    .await?;

    let crd = crate::workspace::repo_root().join("manifests/crd.yaml");
    if crd.is_file() {
        let client = cp.client().await?;
        match testcluster::install_crd(&client, &crd).await {
            Ok(()) => println!("Installed {}", crd.display()),
            Err(err) => eprintln!("warning: the cluster is up, but {err:#}"),
        }
    }

    let log_dir = cp.log_dir();
    let server = cp.server_url().to_string();
    let processes = cp.detach();
    println!(
        "Control plane running at {server} (logs in {}):",
        log_dir.display()
    );
    for p in &processes {
        println!("  {:<24} pid {}", p.name, p.pid);
    }
    println!("Stop it with `cargo xtask cluster down`. To use it, paste:");
    print_exports(&kubeconfig);
    Ok(())
}

/// The lines that put the cached kubectl on `PATH` and point `KUBECONFIG` at the cluster.
fn print_exports(kubeconfig: &Path) {
    for line in crate::kubectl::export_lines(kubeconfig) {
        println!("{line}");
    }
}

/// Stops the background control plane and removes its state.
pub fn down() -> Result<()> {
    let dir = testcluster::cluster_dir()?;
    if !dir.exists() {
        println!("No cluster state in {}: nothing to stop.", dir.display());
        return Ok(());
    }
    let stopped = testcluster::stop_recorded(&dir)?;
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    println!(
        "Stopped {stopped} process(es) and removed {}.",
        dir.display()
    );
    Ok(())
}

/// Whether the background control plane is running and ready: its
/// processes, its API server's `/readyz` and nodes; fails if any is not.
pub async fn status() -> Result<()> {
    let dir = testcluster::cluster_dir()?;
    let processes = testcluster::recorded_processes(&dir)?;
    if processes.is_empty() {
        anyhow::bail!("the cluster is not up (start it with `cargo xtask cluster up`)");
    }
    let mut all_running = true;
    for p in &processes {
        let state = if p.is_running() { "running" } else { "gone" };
        all_running &= p.is_running();
        println!("  {:<24} pid {:<8} {state}", p.name, p.pid);
    }
    let kubeconfig = dir.join("kubeconfig");
    let client = testcluster::client_for_kubeconfig(&kubeconfig).await?;
    let request = http::Request::get("/readyz").body(Vec::new())?;
    let ready = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.request_text(request),
    )
    .await;
    match ready {
        Ok(Ok(body)) if body.trim() == "ok" => {}
        Ok(Ok(body)) => anyhow::bail!("kube-apiserver is not ready: {body}"),
        Ok(Err(err)) => anyhow::bail!("kube-apiserver is not reachable: {err}"),
        Err(_) => anyhow::bail!("kube-apiserver did not answer /readyz within 10s"),
    }
    let nodes: Api<Node> = Api::all(client);
    let node_names: Vec<String> = nodes
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    println!("kube-apiserver is ready; nodes: {node_names:?}");
    print_exports(&kubeconfig);
    if !all_running {
        anyhow::bail!(
            "some processes are gone; restart with `cargo xtask cluster down && cargo xtask cluster up`"
        );
    }
    Ok(())
}
