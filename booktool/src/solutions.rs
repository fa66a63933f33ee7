//! The workshop's answers stay folded in the chapters: a starter's gap is
//! the code its chapter explains, so the chapter shows that code only inside
//! a collapsed `<details class="solution">` block, which an attendee opens
//! when they choose to (the starters' specs name the solutions:
//! `course::starters`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use course::starters::SPECS;

use crate::markdown;

/// A problem for each starter's solution its chapter (`book/src/step-N.md`
/// of the chapters in `pages`) shows open or not at all.
pub(crate) fn check(pages: &[(PathBuf, String)]) -> Result<Vec<String>> {
    let mut open = Vec::new();
    for spec in SPECS {
        let name = format!("step-{}.md", spec.step);
        let (_, page) = pages
            .iter()
            .find(|(path, _)| path.file_name().is_some_and(|f| f == name.as_str()))
            .with_context(|| format!("step {} has a starter but no chapter {name}", spec.step))?;
        if spec.solutions.is_empty() {
            open.push(format!(
                "steps/step-{}/starter.rs: its SPEC lists no solutions",
                spec.step
            ));
        }
        for target in open_solutions(spec.solutions, page) {
            open.push(format!(
                "book/src/{name}: {target}, the code of a gap, is shown open (or not at all); \
                 include it inside <details class=\"solution\">"
            ));
        }
    }
    Ok(open)
}

/// The `solutions` (a starter's, `steps/step-N/main.rs:ANCHOR`) that the
/// chapter `page` includes outside a collapsed solution block,
/// `<details class="solution">`, or not at all.
fn open_solutions(solutions: &[&str], page: &str) -> Vec<String> {
    let blocks = markdown::html_between(page, "<details class=\"solution\">", "</details>");
    let includes: Vec<_> = markdown::directives(page)
        .into_iter()
        .filter(|d| d.name == "include" && !d.escaped)
        .collect();
    solutions
        .iter()
        .filter(|target| {
            let shown: Vec<_> = includes
                .iter()
                .filter(|d| d.args.strip_prefix("../../") == Some(**target))
                .collect();
            shown.is_empty()
                || shown
                    .iter()
                    .any(|d| !blocks.iter().any(|b| b.contains(&d.range.start)))
        })
        .map(|t| t.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_solution_shown_open_is_found() {
        let solutions = &["steps/step-9/main.rs:sync"];
        let collapsed = "<details class=\"solution\">\n<summary>x</summary>\n\n```rust\n\
                         {{#include ../../steps/step-9/main.rs:sync}}\n```\n\n</details>\n";
        assert!(open_solutions(solutions, collapsed).is_empty());
        let open = "```rust\n{{#include ../../steps/step-9/main.rs:sync}}\n```\n";
        assert_eq!(
            open_solutions(solutions, open),
            ["steps/step-9/main.rs:sync"]
        );
        assert_eq!(
            open_solutions(solutions, "nothing"),
            ["steps/step-9/main.rs:sync"]
        );
        let both = format!("{collapsed}{open}");
        assert_eq!(
            open_solutions(solutions, &both),
            ["steps/step-9/main.rs:sync"]
        );
    }
}
