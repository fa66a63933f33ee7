//! Step 8's capture: the scenario step 7's chapter shows too
//! ([`whole_controller`]), run on step 8 for its chapter
//! (`book/src/outputs/step-8.txt` and `step-8-events.txt`), against a fresh
//! control plane (`cargo xtask book outputs step-8.txt`). Part of booktool
//! (`scenarios::step8`, declared in
//! booktool/src/scenarios/mod.rs by `cargo xtask steps`).

use anyhow::{Context, Result, ensure};

use super::{Captured, whole_controller};
use crate::capture::step_namespace;
use crate::recordings;

/// The whole controller's scenario, and its Events checked against the
/// run's own flow.
pub(super) async fn capture(env: &crate::capture::Env) -> Result<Captured> {
    let (transcript, events) = whole_controller(env, "step-8").await?;
    let log = recordings::log_path(&step_namespace("step-8"));
    let log = std::fs::read_to_string(&log)
        .with_context(|| format!("reading step 8's JSON log, {}", log.display()))?;
    events_follow_the_flow(&events.join("\n"), &course::flow::from_log(&log))?;
    Ok(vec![
        ("step-8.txt", transcript),
        ("step-8-events.txt", events),
    ])
}

/// Checks what step 8's chapter says beside its Events against the same
/// run's flow: `good`'s Synced count is the number of its reconciles that
/// wrote something, and `blocked`'s Warning count the number of its refused
/// reconciles. Both numbers vary with the timing (a rollout's status
/// updates seen one by one or together; one more retry before the step
/// stops), so the capture compares them by shape (fresh.rs) and this ties
/// them to the run: `events` is the capture's table, `trace` the flow of
/// the run's log.
fn events_follow_the_flow(events: &str, trace: &str) -> Result<()> {
    let ns = step_namespace("step-8");
    let synced = recordings::events_counted(events, "Normal", "Synced", "good");
    let wrote = recordings::reconciles(trace, &format!("{ns}/good"))?
        .iter()
        .filter(|r| r.wrote && r.ok)
        .count();
    ensure!(
        synced == wrote,
        "step-8-events.txt counts {synced} Synced for good, but {wrote} of good's reconciles in \
         flow/step-8.jsonl wrote something: the chapter says each of those, and only those, records one"
    );
    let warned = recordings::events_counted(events, "Warning", "ErrResourceExists", "blocked");
    let refused = recordings::reconciles(trace, &format!("{ns}/blocked"))?
        .iter()
        .filter(|r| !r.ok)
        .count();
    ensure!(
        warned == refused,
        "step-8-events.txt counts {warned} ErrResourceExists for blocked, but {refused} of blocked's \
         reconciles in flow/step-8.jsonl failed: the chapter says the Warning counts every refused attempt"
    );
    println!(
        "    step-8-events.txt: good's {synced} Synced are its reconciles that wrote, blocked's {warned} Warnings its refused ones (flow/step-8.jsonl)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_8s_committed_events_count_what_its_committed_flow_shows() {
        let committed = course::workspace::repo_root().join("book/src/outputs");
        let events = std::fs::read_to_string(committed.join("step-8-events.txt")).unwrap();
        let flow = std::fs::read_to_string(committed.join("flow/step-8.jsonl")).unwrap();
        events_follow_the_flow(&events, &flow).unwrap();
        // The same Events beside the flow without good's writes.
        let good = format!("\"key\":\"{}/good\"", step_namespace("step-8"));
        let written = |l: &&str| {
            l.contains(&good) && l.contains("\"lane\":\"api\"") && !l.contains("\"events\"")
        };
        assert!(flow.lines().any(|l| written(&l)), "good wrote nothing");
        let unwritten: Vec<&str> = flow.lines().filter(|l| !written(l)).collect();
        let error = events_follow_the_flow(&events, &unwritten.join("\n"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("Synced for good, but"), "{error}");
    }
}
