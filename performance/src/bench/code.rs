//! What the Performance page says of the code beside the runs: each Rust
//! controller's lines beyond what every step shares, and a learner's first
//! build and rebuild of the steps.

use super::*;

/// Non-blank, non-comment lines of the code each Rust controller runs beyond
/// what every step shares (config, types, new_deployment): step 7's informer,
/// handlers, work queue and controller; step 8's reconciler, and what it
/// reuses of the work queue (the rate limiter).
pub(super) fn lines_of_code(root: &Path) -> Result<Vec<LinesOfCode>> {
    let count = |files: &[&str]| -> Result<usize> {
        let mut lines = 0;
        for file in files {
            let text = std::fs::read_to_string(root.join(file))?;
            // Count up to the unit tests.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            lines += code
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("//"))
                .count();
        }
        Ok(lines)
    };
    Ok(vec![
        LinesOfCode {
            key: "step7",
            what: "step 7: steps/step-7/main.rs, steps/step-7/controller.rs, handlers.rs, informer.rs, workqueue.rs",
            lines: count(&[
                "steps/step-7/main.rs",
                "steps/step-7/controller.rs",
                "src/handlers.rs",
                "src/informer.rs",
                "src/workqueue.rs",
            ])?,
        },
        LinesOfCode {
            key: "step8",
            what: "step 8 without its production parts: steps/step-8/src/reconciler.rs, caches.rs and error.rs, and the rate limiter of workqueue.rs",
            lines: count(&[
                "steps/step-8/src/reconciler.rs",
                "steps/step-8/src/caches.rs",
                "steps/step-8/src/error.rs",
            ])? + rate_limiter_lines(root)?,
        },
    ])
}

/// The lines of code of one controller.
pub(super) struct LinesOfCode {
    /// Its name in a figure's key (`loc step7`).
    pub(super) key: &'static str,
    /// What was counted.
    pub(super) what: &'static str,
    pub(super) lines: usize,
}

/// Lines of `src/workqueue.rs` between its rate-limiter anchors.
pub(super) fn rate_limiter_lines(root: &Path) -> Result<usize> {
    let text = std::fs::read_to_string(root.join("src/workqueue.rs"))?;
    let start = text
        .find("// ANCHOR: item_backoff")
        .context("item_backoff anchor")?;
    let end = text
        .find("// ANCHOR_END: rate_limiter")
        .context("rate_limiter anchor")?;
    Ok(text[start..end]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count())
}

/// Times a cold `cargo build --bins` in a fresh target directory, then the
/// rebuild after touching one step file.
pub(super) fn learner_build(root: &Path) -> Result<(Duration, Duration)> {
    let scratch = tempfile::Builder::new()
        .prefix("sample-controller-rs-bench-target-")
        .tempdir()
        .context("creating a target directory")?;
    let target = scratch.path().to_path_buf();
    println!(
        "==> Cold cargo build --bins in {} (several minutes on 2 cores)",
        target.display()
    );
    let cold = cargo(root, &["build", "--quiet", "--bins"], Some(&target))?;
    let step = root.join("steps/step-3/main.rs");
    let text = std::fs::read_to_string(&step)?;
    std::fs::write(&step, format!("{text}\n"))?; // an edit, as a learner makes one
    let rebuilt = cargo(root, &["build", "--quiet", "--bins"], Some(&target));
    std::fs::write(&step, text)?;
    let rebuild = rebuilt?;
    drop(scratch);
    Ok((cold, rebuild))
}
