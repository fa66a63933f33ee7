//! Step 7's capture: the scenario step 8's chapter shows too
//! ([`whole_controller`]), run on step 7 for its chapter
//! (`book/src/outputs/step-7.txt` and `step-7-events.txt`), against a fresh
//! control plane (`cargo xtask book outputs step-7.txt`). Part of booktool
//! (`scenarios::step7`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use anyhow::Result;

use super::{Captured, whole_controller};

/// The whole controller's scenario, with the Events step 7 recorded.
pub(super) async fn capture(env: &crate::capture::Env) -> Result<Captured> {
    let (transcript, events) = whole_controller(env, "step-7").await?;
    Ok(vec![
        ("step-7.txt", transcript),
        ("step-7-events.txt", events),
    ])
}
