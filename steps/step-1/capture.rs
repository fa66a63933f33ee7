//! Step 1's capture: the run its chapter shows, `book/src/outputs/step-1.txt`,
//! against a fresh control plane (`cargo xtask book outputs step-1.txt`).
//! Part of booktool (`scenarios::step1`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use anyhow::Result;

use super::Captured;
use crate::capture::*;

/// The Foo of manifests/example-foo.yaml and a Deployment nobody owns, then
/// step 1 listing both.
pub(super) async fn capture(env: &Env) -> Result<Captured> {
    let ns = &step_namespace("step-1");
    let before = env
        .before(&[
            create_namespace_command(ns),
            format!("kubectl -n {ns} apply -f manifests/example-foo.yaml"),
            foreign_deployment_command(ns, "plain-deployment"),
            // Without it, whether the Pod is ready yet is a race.
            format!("kubectl -n {ns} wait --for=condition=Available deployment/plain-deployment"),
        ])
        .await?;
    let mut run = Run::start(env, "step-1", ns, &[])?;
    run.transcript.splice(0..0, before);
    Ok(vec![("step-1.txt", run.wait().await?)])
}
