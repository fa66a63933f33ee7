//! The README's table of steps, written from the step folders' entries
//! (`steps/step-N/step.toml`'s `title` and `go`), so that a new step folder
//! gets its row from `cargo xtask steps` instead of an edit by hand.

use anyhow::{Context, Result, ensure};
use testcluster::steps::{STEPS, Step};

/// The table's header line: where the table starts in README.md.
const HEADER: &str = "| Step | Run | Adds | Go counterpart |";

/// A step's row: its number, how to run it, what it adds, its Go counterpart.
fn row(step: &Step) -> String {
    format!(
        "| {} | `cargo run --bin {}` | {} | {} |",
        step.number, step.binary, step.title, step.go
    )
}

/// `readme` with its table of steps (the header, the separator, then the
/// lines that start with `|`) replaced by one row per step of `steps`, in
/// their order; the rest as it was. An error if the README has no table.
fn with_step_table(readme: &str, steps: &[Step]) -> Result<String> {
    let lines: Vec<&str> = readme.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|line| line.trim_end() == HEADER)
        .with_context(|| format!("README.md has no table of steps (a line {HEADER:?})"))?;
    ensure!(
        lines
            .get(start + 1)
            .is_some_and(|line| line.starts_with("|---")),
        "README.md's table of steps has no |---| line under its header"
    );
    let end = (start + 2..lines.len())
        .find(|&i| !lines[i].starts_with('|'))
        .unwrap_or(lines.len());
    let mut out: String = lines[..start + 2].concat();
    for step in steps {
        out.push_str(&row(step));
        out.push('\n');
    }
    out.push_str(&lines[end..].concat());
    Ok(out)
}

/// Writes (or, with `check`, only compares) README.md's table of steps.
/// Returns what is stale.
pub fn readme(check: bool) -> Result<Vec<String>> {
    let path = crate::repo_root().join("README.md");
    let committed =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let written = with_step_table(&committed, STEPS)?;
    if written == committed {
        println!("    README.md: current");
        Ok(Vec::new())
    } else if check {
        println!("    README.md: STALE (its table of steps is not steps/*/step.toml's)");
        Ok(vec!["README.md".to_string()])
    } else {
        std::fs::write(&path, written).with_context(|| format!("writing {}", path.display()))?;
        println!("    README.md: written");
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_readme_has_a_row_per_step_and_no_other() {
        let committed = std::fs::read_to_string(crate::repo_root().join("README.md")).unwrap();
        assert_eq!(
            with_step_table(&committed, STEPS).unwrap(),
            committed,
            "README.md's table of steps is stale: run `cargo xtask steps`"
        );
    }

    #[test]
    fn the_table_is_replaced_and_what_surrounds_it_kept() {
        let readme = format!(
            "# Title\n\nText.\n\n{HEADER}\n|---|---|---|---|\n| 9 | old | row | here |\n\nAfter.\n| not | the table |\n"
        );
        let written = with_step_table(&readme, &STEPS[..1]).unwrap();
        assert_eq!(
            written,
            format!(
                "# Title\n\nText.\n\n{HEADER}\n|---|---|---|---|\n{}\n\nAfter.\n| not | the table |\n",
                row(&STEPS[0])
            )
        );
    }

    #[test]
    fn a_readme_without_the_table_is_an_error_that_names_the_header() {
        let err = with_step_table("# Title\n", STEPS).unwrap_err();
        assert!(format!("{err:#}").contains(HEADER), "{err:#}");
    }
}
