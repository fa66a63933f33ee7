//! The "Run it" check of `cargo xtask book check`: in every step chapter, the
//! commands of the `sh` block under `## Run it` are the command lines (`>>>`
//! and `$`) of the captures that section includes, in the same order, so that
//! a reader who pastes them reproduces the capture: same commands, same
//! names, same namespaces. Comment lines of the block (`# in another
//! terminal:`) and the captures' `Ctrl-C` lines are left out of the comparison.

use std::path::Path;

use anyhow::{Context, Result};

/// One problem per step chapter whose "Run it" block and captures differ.
pub(super) fn check_run_it(src: &Path) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    for step in course::steps::STEPS {
        let name = step.chapter;
        let path = src.join(name);
        let page = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let Some(section) = run_it_section(&page) else {
            failures.push(format!("{name}: no `## Run it` section"));
            continue;
        };
        let shown = block_commands(section);
        let mut captured = Vec::new();
        for file in included_outputs(section) {
            let path = src.join(&file);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            captured.extend(capture_commands(&text));
        }
        if captured.is_empty() {
            failures.push(format!("{name}: the Run it section includes no capture"));
            continue;
        }
        if let Some(problem) = first_difference(&shown, &captured) {
            failures.push(format!(
                "{name}: the Run it block does not reproduce its captures: {problem}"
            ));
        }
    }
    Ok(failures)
}

/// From `## Run it` to the next heading of its level.
fn run_it_section(page: &str) -> Option<&str> {
    crate::markdown::section(page, "Run it")
}

/// The command lines of the section's first ```` ```sh ```` block: not
/// blank, not a comment.
fn block_commands(section: &str) -> Vec<String> {
    let blocks = crate::markdown::code_blocks(section);
    let Some(block) = blocks.iter().find(|b| b.language() == "sh") else {
        return Vec::new();
    };
    block
        .code
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The files of `{{#include outputs/….txt}}` lines, relative to `book/src`.
fn included_outputs(section: &str) -> Vec<String> {
    crate::markdown::directives(section)
        .into_iter()
        .filter(|d| d.name == "include" && d.args.starts_with("outputs/"))
        .map(|d| d.args.to_string())
        .collect()
}

/// A capture's command lines: `>>> …` and `$ …` without the prefix, except `Ctrl-C`.
fn capture_commands(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(">>> ").or_else(|| l.strip_prefix("$ ")))
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.starts_with("Ctrl-C"))
        .collect()
}

/// The first command where the block and the captures part, if any.
fn first_difference(shown: &[String], captured: &[String]) -> Option<String> {
    for (i, want) in captured.iter().enumerate() {
        match shown.get(i) {
            None => return Some(format!("command {} is missing: `{want}`", i + 1)),
            Some(got) if got != want => {
                return Some(format!(
                    "command {} is `{got}`, the capture ran `{want}`",
                    i + 1
                ));
            }
            Some(_) => {}
        }
    }
    shown
        .get(captured.len())
        .map(|extra| format!("`{extra}` is not in the captures"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_it_block_reproduces_its_captures() {
        let src = course::workspace::repo_root().join("book/src");
        let failures = check_run_it(&src).expect("read the step chapters");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn commands_are_compared_in_order() {
        let page = "# S\n\n## Run it\n\n```sh\nkubectl create namespace a\n# in another terminal:\ncargo run --bin step-1 -- --namespace a\n```\n\n{{#include outputs/x.txt}}\n\n## Next\n";
        let section = run_it_section(page).expect("section");
        assert_eq!(included_outputs(section), ["outputs/x.txt"]);
        let shown = block_commands(section);
        let captured = capture_commands(
            ">>> kubectl create namespace a\n$ cargo run --bin step-1 -- --namespace a\nout\n>>> Ctrl-C   # x\n",
        );
        assert_eq!(first_difference(&shown, &captured), None);
        let other = capture_commands(">>> kubectl create namespace b\n");
        assert!(first_difference(&shown, &other).is_some());
    }
}
