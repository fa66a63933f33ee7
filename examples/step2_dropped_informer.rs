//! Step 2 exercise 2: what "Waiting for informer caches to sync" does when
//! nobody polls the informer (no cluster needed).
//!
//! Step 2's `start` spawns each informer stream into a task. This program
//! builds the same Foo informer twice and never polls it: first it drops the
//! stream, as the exercise asks; then it keeps the stream without polling it.
//! Neither sends a request: a watch is only dialled when its stream is polled,
//! so the API server address below is never contacted.
//!
//!     cargo run --example step2_dropped_informer

use std::time::Duration;

use kube::runtime::{WatchStreamExt, reflector};
use kube::{Api, Client, Config};
use sample_controller::Foo;
use sample_controller::informer::watch_list;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_from(Config::new("https://127.0.0.1:1".parse()?))?;

    // The exercise: the stream is dropped instead of spawned. `reflect` moved
    // the store's Writer into the stream, so the Writer is dropped with it, and
    // with it the one-shot sender that would have marked the store ready.
    let (foos, writer) = reflector::store::<Foo>();
    let informer = watch_list(Api::<Foo>::all(client.clone()))
        .default_backoff()
        .reflect(writer);
    drop(informer);
    println!("dropped: waiting for the cache");
    match foos.wait_until_ready().await {
        Ok(()) => println!("dropped: ready (not expected)"),
        Err(err) => println!("dropped: wait_until_ready failed at once: {err}"),
    }

    // Kept but never polled: the Writer lives, nothing lists, and the store
    // never becomes ready. Step 2 would wait here until Ctrl-C.
    let (foos, writer) = reflector::store::<Foo>();
    let _informer = watch_list(Api::<Foo>::all(client))
        .default_backoff()
        .reflect(writer);
    println!("unpolled: waiting for the cache");
    match tokio::time::timeout(Duration::from_secs(3), foos.wait_until_ready()).await {
        Ok(result) => println!("unpolled: finished (not expected): {result:?}"),
        Err(_) => println!("unpolled: still waiting after 3 s, with no request sent"),
    }
    Ok(())
}
