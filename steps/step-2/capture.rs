//! Step 2's capture: the run its chapter shows, `book/src/outputs/step-2.txt`,
//! against a fresh control plane (`cargo xtask book outputs step-2.txt`).
//! Part of booktool (`scenarios::step2`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use std::time::Duration;

use anyhow::Result;

use super::Captured;
use crate::capture::*;

/// Step 2 fills its caches, then shows a Foo and a Deployment created while
/// it runs.
pub(super) async fn capture(env: &Env) -> Result<Captured> {
    let ns = &step_namespace("step-2");
    let before = env.before(&[create_namespace_command(ns)]).await?;
    let mut run = Run::start(env, "step-2", ns, &[])?;
    run.transcript.splice(0..0, before);
    run.expect(&["Caches synced"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    create_foo(&mut run, env, ns, "later-foo", "later-foo", 3).await?;
    run.expect(&["later-foo"]).await?;
    create_foreign_deployment(&mut run, env, ns, "later-deployment").await?;
    run.expect(&["later-deployment"]).await?;
    run.drain_for(Duration::from_secs(4)).await;
    Ok(vec![("step-2.txt", run.terminate().await?)])
}
