//! Step 3's capture: the run its chapter shows, `book/src/outputs/step-3.txt`,
//! against a fresh control plane (`cargo xtask book outputs step-3.txt`).
//! Part of booktool (`scenarios::step3`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use std::time::Duration;

use anyhow::Result;

use super::{Captured, owned_deployment_command};
use crate::capture::*;

/// Each handler at work: a Foo added and updated, a Deployment it controls
/// added and deleted, a foreign one ignored, a resync replay ignored.
pub(super) async fn capture(env: &Env) -> Result<Captured> {
    let ns = &step_namespace("step-3");
    let before = env.before(&[create_namespace_command(ns)]).await?;
    let mut run = Run::start(env, "step-3", ns, &["--resync", "10"])?;
    run.transcript.splice(0..0, before);
    tokio::time::sleep(Duration::from_secs(2)).await; // let the watches start
    create_foo(&mut run, env, ns, "watched", "watched-nginx", 1).await?;
    run.expect(&["Foo added"]).await?;
    patch_replicas(&mut run, env, ns, "foo", "watched", 2).await?;
    run.expect(&["Foo updated"]).await?;
    run.run(env, owned_deployment_command(ns)).await?;
    run.expect(&["Deployment added"]).await?;
    create_foreign_deployment(&mut run, env, ns, "unowned").await?;
    run.expect(&["Deployment added", "unowned"]).await?;
    run.note("sleep 10   # the resync period").await;
    run.expect(&["same resourceVersion"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    delete(&mut run, env, ns, "deployment", "watched-nginx").await?;
    run.expect(&["Deployment deleted", "watched-nginx"]).await?;
    delete(&mut run, env, ns, "foo", "watched").await?;
    run.expect(&["Foo deleted"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    Ok(vec![("step-3.txt", run.terminate().await?)])
}
