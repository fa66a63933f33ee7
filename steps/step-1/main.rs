//! Step 1 — the clients.
//!
//! Go: main.go builds a config from `-kubeconfig`/`-master`, then two
//! clientsets: `kubernetes.NewForConfig` for built-in types (Deployments) and
//! the generated `clientset.NewForConfig` for Foos.
//! <https://github.com/kubernetes/sample-controller/blob/v0.37.1/main.go>
//!
//! In Rust one `Client` serves every type; `Api<K>` is the typed handle.
//! This step lists Foos and Deployments once and prints them.
//!
//!     cargo run --bin step-1 -- [--kubeconfig PATH] [--master URL] [--namespace NS]

use anyhow::anyhow;
use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::ListParams;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::diagnose::{Fatal, explain};
use sample_controller::{Foo, show, telemetry};

/// List Foos and Deployments, as the two Go clientsets would.
#[derive(Parser, Debug)]
#[command(name = "step-1", version)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
}

#[tokio::main]
async fn main() -> Result<(), Fatal> {
    telemetry::init();
    let args = Args::parse();

    // ANCHOR: clients
    // Go: clientcmd.BuildConfigFromFlags, then the two NewForConfig calls.
    let connection = client_from_flags(&args.client).await?;
    let (client, url) = (&connection.client, &connection.url);
    let foos: Api<Foo> = args.namespace.api(client);
    let deployments: Api<Deployment> = args.namespace.api(client);
    // ANCHOR_END: clients

    // ANCHOR: list
    // Go: exampleClient.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
    let scope = args.namespace.describe();
    let foo_list = foos
        .list(&ListParams::default())
        .await
        .map_err(|e| anyhow!(explain(&e, &format!("list foos in {scope}"), url)))?;
    let deployment_list = deployments
        .list(&ListParams::default())
        .await
        .map_err(|e| anyhow!(explain(&e, &format!("list deployments in {scope}"), url)))?;
    // ANCHOR_END: list

    println!("Foos in {scope} (API server {url}):");
    println!("{}\n", show::foos(&foo_list.items));
    println!("Deployments in {scope}:");
    println!("{}", show::deployments(&deployment_list.items));
    Ok(())
}
