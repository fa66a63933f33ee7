//! Step 5's capture: the run its chapter shows, `book/src/outputs/step-5.txt`,
//! against a fresh control plane (`cargo xtask book outputs step-5.txt`).
//! Part of booktool (`scenarios::step5`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use std::time::Duration;

use anyhow::Result;

use super::Captured;
use crate::capture::*;

/// A Foo's Deployment created, refused when another owns the name, scaled
/// back after someone else scales it, recreated after it is deleted.
pub(super) async fn capture(env: &Env) -> Result<Captured> {
    let ns = &step_namespace("step-5");
    let before = env
        .before(&[
            create_namespace_command(ns),
            foreign_deployment_command(ns, "taken"),
        ])
        .await?;
    let mut run = Run::start(env, "step-5", ns, &[])?;
    run.transcript.splice(0..0, before);
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, env, ns, "web", "web-nginx", 2).await?;
    run.expect(&["creating Deployment"]).await?;
    run.expect(&["Successfully synced", "web"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    create_foo(&mut run, env, ns, "squatter", "taken", 3).await?;
    run.expect(&["Error syncing", "squatter"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    patch_replicas(&mut run, env, ns, "deployment", "web-nginx", 5).await?;
    run.expect(&["updating Deployment"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    delete(&mut run, env, ns, "deployment", "web-nginx").await?;
    run.expect(&["creating Deployment", "web-nginx"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, env, ns).await?;
    run.show(env, owners_command(ns)).await?;
    Ok(vec![("step-5.txt", run.terminate().await?)])
}

/// `kubectl get deployments` with the kind and name of each one's controller.
fn owners_command(ns: &str) -> String {
    format!(
        "kubectl -n {ns} get deployments -o 'custom-columns=NAME:.metadata.name,OWNER-KIND:.metadata.ownerReferences[0].kind,OWNER:.metadata.ownerReferences[0].name'"
    )
}
