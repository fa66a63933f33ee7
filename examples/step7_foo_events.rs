//! Step 7 exercise: list the Events the controller recorded about Foos,
//! like `kubectl events --for foo/NAME` but for every Foo.
//!
//!     cargo run --example step7_foo_events -- --namespace default

use clap::Parser;
use k8s_openapi::api::events::v1::Event;
use kube::api::ListParams;
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::show::table;

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
    // events.k8s.io/v1, the API kube's Recorder writes (Go's recorder writes core/v1).
    let events = args
        .namespace
        .api::<Event>(&client)
        .list(&ListParams::default())
        .await?;
    let rows: Vec<Vec<String>> = events
        .items
        .into_iter()
        .filter_map(|e| {
            let regarding = e.regarding?;
            (regarding.kind.as_deref() == Some("Foo")).then(|| {
                vec![
                    regarding.name.unwrap_or_default(),
                    e.type_.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.series.map_or(1, |s| s.count).to_string(),
                    e.note.unwrap_or_default(),
                ]
            })
        })
        .collect();
    println!(
        "{}",
        table(&["FOO", "TYPE", "REASON", "COUNT", "NOTE"], &rows)
    );
    Ok(())
}
