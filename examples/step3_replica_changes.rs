//! Step 3 exercise: a handler that reacts only when a Foo's spec.replicas changes.
//!
//!     cargo run --example step3_replica_changes
//!     kubectl patch foo example-foo --type merge -p '{"spec":{"replicas":3}}'

use clap::Parser;
use futures::StreamExt;
use kube::ResourceExt;
use sample_controller::Foo;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::informer::{Notification, informer};

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
    let (_cache, events) = informer(args.namespace.api::<Foo>(&client));
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        // Go: an UpdateFunc comparing old.Spec.Replicas with new.Spec.Replicas.
        if let Ok(Notification::Updated { old, new }) = event
            && old.spec.replicas != new.spec.replicas
        {
            println!(
                "{}/{}: replicas {:?} -> {:?}",
                new.namespace().unwrap_or_default(),
                new.name_any(),
                old.spec.replicas,
                new.spec.replicas
            );
        }
    }
    Ok(())
}
