//! Step 1 exercise: fetch one Foo by name, and say so when it does not exist.
//!
//!     cargo run --example step1_get_foo -- --namespace default example-foo

use clap::Parser;
use kube::Api;
use sample_controller::Foo;
use sample_controller::config::{ClientFlags, client_from_flags};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    /// Name of the Foo.
    name: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let client = client_from_flags(&args.client).await?.client;
    let foos: Api<Foo> = Api::namespaced(client, &args.namespace);
    // Go: Foos(ns).Get(ctx, name, metav1.GetOptions{}) and errors.IsNotFound(err).
    // get_opt folds the 404 into None; any other error stays an error.
    match foos.get_opt(&args.name).await? {
        Some(foo) => println!(
            "{}/{}: deploymentName={:?} replicas={:?} availableReplicas={:?}",
            args.namespace,
            args.name,
            foo.spec.deployment_name,
            foo.spec.replicas,
            foo.status.map(|s| s.available_replicas)
        ),
        None => println!("no Foo {}/{}", args.namespace, args.name),
    }
    Ok(())
}
