//! Step 6's capture: the run its chapter shows, `book/src/outputs/step-6.txt`,
//! against a fresh control plane (`cargo xtask book outputs step-6.txt`).
//! Part of booktool (`scenarios::step6`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use std::time::Duration;

use anyhow::Result;
use kube::api::Api;
use sample_controller::Foo;

use super::Captured;
use crate::capture::*;

/// The Foo's status following its Deployment's available replicas, as the
/// Foo is scaled.
pub(super) async fn capture(env: &Env) -> Result<Captured> {
    let ns = &step_namespace("step-6");
    let before = env.before(&[create_namespace_command(ns)]).await?;
    let mut run = Run::start(env, "step-6", ns, &[])?;
    run.transcript.splice(0..0, before);
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, env, ns, "status", "status-nginx", 2).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let available = |want: i32| {
        let foos = foos.clone();
        async move {
            let foo = foos.get("status").await.ok()?;
            (foo.status?.available_replicas == want).then_some(())
        }
    };
    eventually("2 available replicas in the Foo's status", || available(2)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, env, ns).await?;
    patch_replicas(&mut run, env, ns, "foo", "status", 3).await?;
    eventually("3 available replicas in the Foo's status", || available(3)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, env, ns).await?;
    Ok(vec![("step-6.txt", run.terminate().await?)])
}
