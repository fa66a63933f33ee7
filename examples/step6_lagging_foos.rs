//! Step 6 exercise: list the Foos whose status lags behind their spec.
//!
//!     cargo run --example step6_lagging_foos -- --namespace default

use clap::Parser;
use kube::ResourceExt;
use kube::api::ListParams;
use sample_controller::Foo;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let client = client_from_flags(&args.client).await?.client;
    let foos = args
        .namespace
        .api::<Foo>(&client)
        .list(&ListParams::default())
        .await?;
    for foo in &foos.items {
        let available = foo.status.as_ref().map_or(0, |s| s.available_replicas);
        // A Foo without spec.replicas gets the Deployment default of 1.
        let desired = foo.spec.replicas.unwrap_or(1);
        if available < desired {
            println!(
                "{}/{}: {available} of {desired} available",
                foo.namespace().unwrap_or_default(),
                foo.name_any()
            );
        }
    }
    Ok(())
}
