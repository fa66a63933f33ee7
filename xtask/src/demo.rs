//! `cargo xtask demo`: the controller at work, start to finish, in one command.
//!
//! Uses the cluster in `KUBECONFIG` (or `~/.kube/config`) if one answers,
//! otherwise starts the local control plane; installs the CRD; runs step 8 in
//! its own namespace; applies `manifests/example-foo.yaml`; prints the Foo and
//! its Deployment as `kubectl get` would until they converge; shows the
//! Events; then stops and deletes everything it started.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use sample_controller::{Foo, show};
use testcluster::{ControlPlane, Options};

/// The namespace the demo works in (deleted at the end).
const NAMESPACE: &str = "sample-controller-demo";

/// Runs the demo.
pub async fn demo() -> Result<()> {
    let root = crate::repo_root();
    // 1. A cluster: the learner's, or ours.
    let (client, kubeconfig, _own) = match existing_cluster().await {
        Some(client) => {
            println!("==> Using the cluster in your kubeconfig (KUBECONFIG or ~/.kube/config)");
            (client, None, None)
        }
        None => {
            println!(
                "==> No reachable cluster in your kubeconfig: starting the local control plane"
            );
            println!(
                "    (the first run builds it from Go modules: 15-20 minutes on 2 cores, once)"
            );
            let cp = ControlPlane::start(Options::default()).await?;
            let client = cp.client().await?;
            (client, Some(cp.kubeconfig_path().to_path_buf()), Some(cp))
        }
    };

    println!("==> Installing manifests/crd.yaml");
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(NAMESPACE).await?.is_some() {
        bail!(
            "namespace {NAMESPACE} already exists: delete it (kubectl delete namespace {NAMESPACE}) and retry"
        );
    }
    testcluster::create_namespace(&client, NAMESPACE).await?;

    let result = run(&client, kubeconfig.as_deref()).await;

    println!("==> Cleaning up: deleting namespace {NAMESPACE}");
    namespaces
        .delete(NAMESPACE, &DeleteParams::default())
        .await?;
    result
}

/// A client for the kubeconfig's cluster, if it answers within 5 seconds.
async fn existing_cluster() -> Option<Client> {
    let client = Client::try_default().await.ok()?;
    match tokio::time::timeout(Duration::from_secs(5), client.apiserver_version()).await {
        Ok(Ok(_)) => Some(client),
        _ => None,
    }
}

/// Step 8 against the demo namespace, the example Foo, and the convergence.
async fn run(client: &Client, kubeconfig: Option<&std::path::Path>) -> Result<()> {
    let root = crate::repo_root();
    println!(
        "==> Building and starting step 8 (cargo run --bin step-8 -- --namespace {NAMESPACE})"
    );
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--bin", "step-8"])
        .current_dir(&root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --bin step-8 failed");
    }
    let mut step = tokio::process::Command::new(root.join("target/debug/step-8"));
    step.args(["--namespace", NAMESPACE])
        .kill_on_drop(true)
        .stdin(Stdio::null());
    if let Some(path) = kubeconfig {
        step.arg("--kubeconfig").arg(path);
    }
    let mut controller = step.spawn().context("starting step-8")?;

    let converged = async {
        let foos: Api<Foo> = Api::namespaced(client.clone(), NAMESPACE);
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
        tokio::time::sleep(Duration::from_secs(2)).await; // let the controller start
        println!("==> kubectl apply -n {NAMESPACE} -f manifests/example-foo.yaml");
        let yaml = std::fs::read_to_string(root.join("manifests/example-foo.yaml"))?;
        let foo: Foo = serde_yaml::from_str(&yaml)?;
        foos.create(&PostParams::default(), &foo).await?;

        let started = Instant::now();
        let mut last = String::new();
        loop {
            let foo_list = foos.list(&ListParams::default()).await?;
            let deployment_list = deployments.list(&ListParams::default()).await?;
            let view = format!(
                "$ kubectl get foos -n {NAMESPACE}\n{}\n$ kubectl get deployments -n {NAMESPACE}\n{}",
                show::foos(&foo_list.items),
                show::deployments(&deployment_list.items)
            );
            if view != last {
                println!("\n[{:>4.1}s]\n{view}", started.elapsed().as_secs_f64());
                last = view;
            }
            let done = foo_list.items.iter().all(|f| {
                let want = f.spec.replicas.unwrap_or(1);
                f.status
                    .as_ref()
                    .is_some_and(|s| s.available_replicas == want)
            });
            if done && !foo_list.items.is_empty() {
                println!(
                    "\n==> Converged: the Foo's status.availableReplicas matches spec.replicas"
                );
                break;
            }
            if started.elapsed() > Duration::from_secs(180) {
                println!(
                    "\n==> Not converged after 3 minutes (on a real cluster, pulling nginx can take longer)"
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }

        println!("\n$ kubectl get events -n {NAMESPACE} --field-selector regarding.kind=Foo");
        let events: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
        for e in events.list(&ListParams::default()).await?.items {
            if e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("Foo") {
                println!(
                    "{:<8} {:<18} foo/{:<14} {}",
                    e.type_.clone().unwrap_or_default(),
                    e.reason.clone().unwrap_or_default(),
                    e.regarding
                        .as_ref()
                        .and_then(|r| r.name.clone())
                        .unwrap_or_default(),
                    e.note.clone().unwrap_or_default()
                );
            }
        }
        anyhow::Ok(())
    };
    let result = tokio::select! {
        result = converged => result,
        exit = controller.wait() => Err(anyhow::anyhow!("step-8 exited early: {}", exit?)),
    };

    println!("\n==> Stopping step 8 (SIGTERM)");
    if let Some(pid) = controller.id() {
        // SAFETY: kill(2) on the PID of the child we started, with a valid signal.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), controller.wait()).await;
    result
}
