//! `cargo xtask demo`: the controller at work, start to finish, in one command.
//!
//! Uses the cluster in `KUBECONFIG` (or `~/.kube/config`) if one answers,
//! otherwise starts the local control plane; installs the CRD; runs step 8 in
//! its own namespace; applies `manifests/example-foo.yaml` with kubectl;
//! prints what `kubectl get foos,deployments` prints, each time it changes,
//! until the Foo converges; shows its Events with `kubectl events`; then stops
//! and deletes everything it started. Every `$ kubectl …` line is run with the
//! kubectl of the control plane's version (`testcluster::Binary::Kubectl`,
//! built into the cache if missing), and what follows it is kubectl's output.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams};
use sample_controller::Foo;
use testcluster::{ControlPlane, Options};

use crate::kubectl::Kubectl;

/// The namespace the demo works in (deleted at the end).
const NAMESPACE: &str = "sample-controller-demo";

/// Runs the demo.
pub async fn demo() -> Result<()> {
    let root = crate::workspace::repo_root();
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
                "    (the first run builds it from Go modules: about 8 minutes on 2 cores, once)"
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

    let kubectl = Kubectl::ensure(kubeconfig.as_deref())
        .await
        .context("the demo shows kubectl's output, and kubectl could not be found or built")?;
    let kubectl = match &_own {
        Some(cp) => kubectl.with_cache_dir(&cp.data_dir().join("kubectl-cache")),
        None => kubectl,
    };
    println!(
        "    (every `$ kubectl` line below runs {}{})",
        kubectl.exe().display(),
        if kubeconfig.is_some() {
            " with --kubeconfig pointing at that control plane"
        } else {
            ""
        }
    );

    let result = run(&client, &kubectl, kubeconfig.as_deref()).await;

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

/// Prints `$ kubectl ARGS` (with `-n NAMESPACE` first) and what kubectl printed.
async fn show(kubectl: &Kubectl, args: &[&str]) -> Result<Vec<String>> {
    let lines = kubectl_lines(kubectl, args).await?;
    println!("$ kubectl -n {NAMESPACE} {}", args.join(" "));
    for line in &lines {
        println!("{line}");
    }
    Ok(lines)
}

/// What `kubectl -n NAMESPACE ARGS` prints (stdout, then stderr); an error if it fails.
async fn kubectl_lines(kubectl: &Kubectl, args: &[&str]) -> Result<Vec<String>> {
    let mut all = vec!["-n", NAMESPACE];
    all.extend_from_slice(args);
    let out = kubectl.run(&all).await?;
    if out.code != 0 {
        bail!(
            "kubectl {} failed (exit status {}):\n{}",
            all.join(" "),
            out.code,
            out.lines.join("\n")
        );
    }
    Ok(out.lines)
}

/// A `kubectl get` table without its last column (AGE, which changes every
/// second): what tells one state from the next.
fn without_age(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|line| match line.trim_end().rsplit_once(' ') {
            Some((rest, _age)) => rest.trim_end().to_string(),
            None => String::new(),
        })
        .collect()
}

/// Step 8 against the demo namespace, the example Foo, and the convergence.
async fn run(
    client: &Client,
    kubectl: &Kubectl,
    kubeconfig: Option<&std::path::Path>,
) -> Result<()> {
    let build = crate::workspace::cargo(&["build", "--bin", "step-8"]);
    println!("==> Building step 8 ({build}), then starting it with --namespace {NAMESPACE}");
    let status = build.std().status().context("running cargo build")?;
    if !status.success() {
        bail!("{build} failed");
    }
    let mut step = tokio::process::Command::new(crate::workspace::debug_dir().join("step-8"));
    step.args(["--namespace", NAMESPACE])
        .kill_on_drop(true)
        .stdin(Stdio::null());
    if let Some(path) = kubeconfig {
        step.arg("--kubeconfig").arg(path);
    }
    let mut controller = step.spawn().context("starting step-8")?;

    let converged = create_and_watch(client, kubectl);
    let result = tokio::select! {
        result = converged => result,
        exit = controller.wait() => Err(anyhow::anyhow!("step-8 exited early: {}", exit?)),
    };

    println!("\n==> Stopping step 8 (SIGTERM)");
    if let Some(pid) = controller.id() {
        let _ = testcluster::signal(pid, libc::SIGTERM); // gone already: wait() says so
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), controller.wait()).await;
    result
}

/// Creates the example Foo and prints kubectl's table of the Foo and its
/// Deployment each time a value other than AGE changes, until the Foo's
/// status says its replicas are available (or 3 minutes have passed); then
/// its Events.
async fn create_and_watch(client: &Client, kubectl: &Kubectl) -> Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), NAMESPACE);
    tokio::time::sleep(Duration::from_secs(2)).await; // let the controller start
    println!("\n==> Creating the example Foo");
    show(kubectl, &["apply", "-f", "manifests/example-foo.yaml"]).await?;

    println!(
        "\n==> Watching the Foo and its Deployment (kubectl's output each time a value other than AGE changes)"
    );
    let get = ["get", "foos,deployments"];
    let started = Instant::now();
    let mut last = Vec::new();
    loop {
        // Converged? Asked before kubectl runs, so that the table printed
        // below is never older than the state that ends the loop.
        let foo_list = foos.list(&Default::default()).await?;
        let done = !foo_list.items.is_empty()
            && foo_list.items.iter().all(|f| {
                let want = f.spec.replicas.unwrap_or(1);
                f.status
                    .as_ref()
                    .is_some_and(|s| s.available_replicas == want)
            });
        let lines = kubectl_lines(kubectl, &get).await?;
        let view = without_age(&lines);
        if view != last {
            println!(
                "\n[{:>4.1}s] $ kubectl -n {NAMESPACE} {}",
                started.elapsed().as_secs_f64(),
                get.join(" ")
            );
            for line in &lines {
                println!("{line}");
            }
            last = view;
        }
        if done {
            println!(
                "\n==> Converged: the Foo's status.availableReplicas matches spec.replicas (the table above)"
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

    println!("\n==> The Foo's Events, recorded by step 8");
    show(kubectl, &["events", "--for", "foo/example-foo"]).await?;
    Ok(())
}
