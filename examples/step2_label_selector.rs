//! Step 2 exercise: an informer that caches only the Foos with a label.
//!
//!     kubectl label foo example-foo tier=web
//!     cargo run --example step2_label_selector -- --selector tier=web

use clap::Parser;
use futures::{StreamExt, future};
use kube::ResourceExt;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use sample_controller::Foo;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
    /// Label selector, as for `kubectl get -l`.
    #[arg(long, default_value = "tier=web")]
    selector: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let client = client_from_flags(&args.client).await?.client;
    // Go: informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ... })
    let config = watcher::Config::default().labels(&args.selector);
    let (foos, writer) = reflector::store::<Foo>();
    let informer = watcher(args.namespace.api::<Foo>(&client), config)
        .default_backoff()
        .reflect(writer);
    tokio::spawn(informer.for_each(|_| future::ready(())));
    foos.wait_until_ready().await?;
    println!("{} Foos match {:?}:", foos.len(), args.selector);
    for foo in foos.state() {
        println!(
            "  {}/{}",
            foo.namespace().unwrap_or_default(),
            foo.name_any()
        );
    }
    Ok(())
}
