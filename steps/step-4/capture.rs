//! Step 4's capture: the run its chapter shows, `book/src/outputs/step-4.txt`,
//! against a fresh control plane (`cargo xtask book outputs step-4.txt`).
//! Part of booktool (`scenarios::step4`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use std::time::Duration;

use anyhow::Result;

use super::Captured;
use crate::capture::*;

/// A Foo whose first three syncs fail (`--fail-first 3`): the backoff, then a
/// later change synced without failures.
pub(super) async fn capture(env: &Env) -> Result<Captured> {
    let ns = &step_namespace("step-4");
    let before = env.before(&[create_namespace_command(ns)]).await?;
    let mut run = Run::start(env, "step-4", ns, &["--fail-first", "3"])?;
    run.transcript.splice(0..0, before);
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, env, ns, "flaky", "flaky", 1).await?;
    run.expect(&["done attempt 4"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    run.run(
        env,
        format!("kubectl -n {ns} label foo flaky round=1   # a change: synced again, without failures now"),
    )
    .await?;
    run.expect(&["done attempt 5"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    Ok(vec![("step-4.txt", run.terminate().await?)])
}
