//! What the step folders make, written where readers look: the README's
//! table of steps (each `steps/step-N/step.toml`'s `title` and `go`) and
//! the teacher notes' table of Go's branches (each step.toml's `[[branch]]`
//! tables), so that a step folder is the one place either is written; and
//! the declarations that compile a step folder's `check.rs` and
//! `starter.rs` into the course crate (`checks`, `starters`) and its
//! `capture.rs` into booktool, in source, where
//! rustfmt, clippy, rustdoc and an editor find them.
//! `cargo xtask steps` writes them, then what `cargo xtask workshop` writes.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use course::steps::{Branch, STEPS, Step, behaviours};

use booktool::markdown;

use course::generated;

/// The README's table of steps starts at this line.
const README_HEADER: &str = "| Step | Run | Adds | Go counterpart |";

/// The teacher notes' table of Go's branches starts at this line.
const BRANCHES_HEADER: &str =
    "| Step: Go's branch | The check says | A mistake it catches, and the fix |";

/// `text` with the table whose first line is `header` ([`markdown::tables`])
/// holding `rows` under its header and `|---|` line instead of its own; the
/// rest as it was. An error if `text` has no such table.
fn with_table(text: &str, header: &str, rows: &[String]) -> Result<String> {
    let table = markdown::tables(text)
        .into_iter()
        .find(|t| text[t.clone()].lines().next() == Some(header))
        .with_context(|| format!("no table starts with the line {header:?}"))?;
    // The header and the |---| line under it stay as written.
    let head: String = text[table.clone()].split_inclusive('\n').take(2).collect();
    let mut out = format!("{}{head}", &text[..table.start]);
    for row in rows {
        out.push_str(row);
        out.push('\n');
    }
    out.push_str(&text[table.end..]);
    Ok(out)
}

/// A step's row in the README: its number, how to run it, what it adds,
/// its Go counterpart.
fn readme_row(step: &Step) -> String {
    format!(
        "| {} | `cargo run --bin {}` | {} | {} |",
        step.number, step.binary, step.title, step.go
    )
}

/// The rows of the teacher notes' table: every branch of every step, in
/// step order. An error names a branch that is not what its fields say
/// (`Branch`'s rules), or a cell that would break the table.
fn branch_rows(steps: &[Step]) -> Result<Vec<String>> {
    let mut rows = Vec::new();
    for step in steps {
        let n = step.number;
        let known = behaviours(n);
        for branch in step.branches {
            let Branch {
                go,
                check,
                wrong,
                mistake,
                fix,
                rust,
                unchecked,
            } = *branch;
            let which = format!("steps/step-{n}/step.toml, the [[branch]] {go:?}");
            let (says, caught) = match (check, rust, unchecked) {
                (Some(check), None, None) => {
                    let Some(behaviour) = known.iter().find(|b| b.what == check) else {
                        bail!("{which}: step {n}'s check has no line {check:?}");
                    };
                    match (wrong, mistake, fix) {
                        (Some(_), Some(mistake), Some(fix)) => (
                            format!("`step-{n} FAIL {check}`"),
                            format!(
                                "{mistake}. The fix: {fix} ([{}]({}))",
                                page_name(behaviour.chapter),
                                behaviour.chapter
                            ),
                        ),
                        // The check's own words, as its report prints them (in
                        // every edition of the book: the report is English).
                        (None, None, None) => (format!("`{check}`"), "none kept yet".to_string()),
                        _ => bail!("{which}: `wrong`, `mistake` and `fix` go together"),
                    }
                }
                (None, Some(rust), None) if wrong.is_none() => {
                    (format!("none: {rust}"), String::new())
                }
                (None, None, Some(why)) if wrong.is_none() => {
                    (format!("not checked: {why}"), String::new())
                }
                _ => bail!(
                    "{which}: exactly one of `check`, `rust` and `unchecked`, and a `wrong` only with a `check`"
                ),
            };
            let cells = [format!("{n}: {go}"), says, caught];
            if let Some(cell) = cells.iter().find(|c| c.contains('|') || c.contains('\n')) {
                bail!("{which}: a cell of the table cannot hold | or a line break: {cell:?}");
            }
            rows.push(format!("| {} |", cells.join(" | ")));
        }
    }
    Ok(rows)
}

/// What a link to `chapter` (`step-5.md#the-rust-code`) says: `step 5`.
fn page_name(chapter: &str) -> String {
    let page = chapter.split(['.', '#']).next().unwrap_or(chapter);
    page.replace('-', " ")
}

/// A step folder's Rust file that another crate compiles in, and where.
struct Declared {
    /// `check.rs`.
    file: &'static str,
    /// The source file that declares it, from the repository root.
    host: &'static str,
    /// Its `#[path]`, from the host's directory to the repository root.
    up: &'static str,
    /// What its BEGIN and END lines say.
    what: &'static str,
    /// The module declaration for step `n`, after its `#[path]`.
    module: fn(u8) -> String,
    /// The list after the modules, from the steps that have the file.
    list: fn(&[u8]) -> String,
}

/// The three kinds of declared files.
const DECLARED: [Declared; 3] = [
    Declared {
        file: "check.rs",
        host: "course/src/checks/mod.rs",
        up: "../../..",
        what: "the step folders' check.rs",
        module: |n| format!("pub(crate) mod step{n};\n"),
        list: |steps| {
            let entries: Vec<String> = steps
                .iter()
                .map(|n| format!("({n}, step{n}::SCENARIOS)"))
                .collect();
            format!(
                "/// Each step's check, by step number.\n\
                 pub(crate) const BY_STEP: &[(u8, &[CheckScenario])] = &[{}];\n",
                entries.join(", ")
            )
        },
    },
    Declared {
        file: "starter.rs",
        host: "course/src/starters/specs.rs",
        up: "../../..",
        what: "the step folders' starter.rs",
        module: |n| {
            format!(
                "mod step{n};\nconst _: () = assert!(step{n}::SPEC.step == {n}, \
                 \"steps/step-{n}/starter.rs: its SPEC's step must be {n}\");\n"
            )
        },
        list: |steps| {
            let entries: Vec<String> = steps.iter().map(|n| format!("step{n}::SPEC")).collect();
            format!(
                "/// Every starter, by step.\npub const SPECS: &[Spec] = &[{}];\n",
                entries.join(", ")
            )
        },
    },
    Declared {
        file: "capture.rs",
        host: "booktool/src/scenarios/mod.rs",
        up: "../../..",
        what: "the step folders' capture.rs",
        module: |n| format!("mod step{n};\n"),
        list: |steps| {
            let entries: Vec<String> = steps
                .iter()
                .map(|n| format!("({n}, |env| Box::pin(step{n}::capture(env)))"))
                .collect();
            format!(
                "/// Every step's capture scenario, by step number.\n\
                 pub(crate) const STEP_CAPTURES: &[(u8, StepCapture)] = &[{}];\n",
                entries.join(", ")
            )
        },
    },
];

/// The numbers of the step folders (`steps/step-N/`) under `root`, in
/// order: read from the folders, not the registry, which a new step's
/// first build does not have yet.
fn step_folders(root: &Path) -> Result<Vec<u8>> {
    let steps = root.join("steps");
    let mut numbers = Vec::new();
    for entry in
        std::fs::read_dir(&steps).with_context(|| format!("reading {}", steps.display()))?
    {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if let Some(n) = name.strip_prefix("step-").filter(|_| path.is_dir()) {
            numbers.push(
                n.parse().with_context(|| {
                    format!("{}: a step folder is steps/step-N", path.display())
                })?,
            );
        }
    }
    numbers.sort();
    Ok(numbers)
}

/// The lines between `declared`'s BEGIN and END: a `#[path]` module for
/// each step folder of `root` that has the file, then their list.
fn declarations(root: &Path, declared: &Declared) -> Result<String> {
    let steps: Vec<u8> = step_folders(root)?
        .into_iter()
        .filter(|n| {
            root.join(format!("steps/step-{n}/{}", declared.file))
                .is_file()
        })
        .collect();
    let mut body = String::new();
    for n in &steps {
        body.push_str(&format!(
            "#[path = \"{}/steps/step-{n}/{}\"]\n{}",
            declared.up,
            declared.file,
            (declared.module)(*n)
        ));
    }
    body.push_str(&(declared.list)(&steps));
    Ok(body)
}

/// `cargo xtask steps [--check]`: the README's table of steps, the teacher
/// notes' table of Go's branches and the declarations of the step folders'
/// Rust files, then the workshop's files.
pub fn steps(check: bool) -> Result<()> {
    let root = course::workspace::repo_root();
    let mut stale = Vec::new();
    // First what a new step's build needs: its check, starter and capture
    // compiled in (the registry below is the build's own).
    let mut rewritten = false;
    for declared in &DECLARED {
        let body = declarations(&root, declared)?;
        let before = std::fs::read_to_string(root.join(declared.host))?;
        stale.extend(generated::write(declared.host, check, |text| {
            generated::rustfmt(&generated::with_region(text, declared.what, &body)?)
        })?);
        rewritten |= std::fs::read_to_string(root.join(declared.host))? != before;
    }
    if rewritten {
        // This xtask was built without them: the rest is the next build's job.
        println!("==> The step folders' files are declared anew: building xtask again");
        let status = course::workspace::cargo(&["xtask", "steps"])
            .std()
            .status()
            .context("running cargo xtask steps")?;
        ensure!(status.success(), "cargo xtask steps failed ({status})");
        return Ok(());
    }
    let readme_rows: Vec<String> = STEPS.iter().map(readme_row).collect();
    let branches = branch_rows(STEPS)?;
    stale.extend(
        [
            generated::write("README.md", check, |text| {
                with_table(text, README_HEADER, &readme_rows)
            })?,
            generated::write("book/src/workshop.md", check, |text| {
                with_table(text, BRANCHES_HEADER, &branches)
            })?,
        ]
        .into_iter()
        .flatten(),
    );
    course::starters::workshop(check)?;
    ensure!(
        stale.is_empty(),
        "{} not what the step folders make: run `cargo xtask steps`",
        stale.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(path: &str) -> String {
        std::fs::read_to_string(course::workspace::repo_root().join(path)).unwrap()
    }

    #[test]
    fn each_step_folders_rust_files_are_declared_where_their_crates_compile_them() {
        let root = course::workspace::repo_root();
        for declared in &DECLARED {
            let text = committed(declared.host);
            let body = declarations(&root, declared).unwrap();
            let written =
                generated::rustfmt(&generated::with_region(&text, declared.what, &body).unwrap())
                    .unwrap();
            assert_eq!(
                written, text,
                "{}: the declarations of the step folders' {} are stale: run `cargo xtask steps`",
                declared.host, declared.file
            );
        }
    }

    #[test]
    fn a_folders_files_are_declared_by_path_with_their_list() {
        let dir = tempfile::tempdir().unwrap();
        for (n, files) in [
            (1, &["capture.rs"][..]),
            (2, &["check.rs", "capture.rs"]),
            (10, &["check.rs"]),
        ] {
            let folder = dir.path().join(format!("steps/step-{n}"));
            std::fs::create_dir_all(&folder).unwrap();
            for file in files {
                std::fs::write(folder.join(file), "").unwrap();
            }
        }
        std::fs::create_dir_all(dir.path().join("steps/notes")).unwrap();
        assert_eq!(step_folders(dir.path()).unwrap(), [1, 2, 10]);
        assert_eq!(
            declarations(dir.path(), &DECLARED[0]).unwrap(),
            "#[path = \"../../../steps/step-2/check.rs\"]\npub(crate) mod step2;\n\
             #[path = \"../../../steps/step-10/check.rs\"]\npub(crate) mod step10;\n\
             /// Each step's check, by step number.\n\
             pub(crate) const BY_STEP: &[(u8, &[CheckScenario])] = &[(2, step2::SCENARIOS), (10, step10::SCENARIOS)];\n"
        );
    }

    #[test]
    fn the_committed_readme_has_a_row_per_step_and_no_other() {
        let text = committed("README.md");
        let rows: Vec<String> = STEPS.iter().map(readme_row).collect();
        assert_eq!(
            with_table(&text, README_HEADER, &rows).unwrap(),
            text,
            "README.md's table of steps is stale: run `cargo xtask steps`"
        );
    }

    #[test]
    fn the_teacher_notes_have_a_row_per_branch_of_every_step_and_no_other() {
        let text = committed("book/src/workshop.md");
        let rows = branch_rows(STEPS).unwrap();
        assert_eq!(
            with_table(&text, BRANCHES_HEADER, &rows).unwrap(),
            text,
            "book/src/workshop.md's table of Go's branches is stale: run `cargo xtask steps`"
        );
    }

    #[test]
    fn the_table_is_replaced_and_what_surrounds_it_kept() {
        let text = format!(
            "# Title\n\nText.\n\n{README_HEADER}\n|---|---|---|---|\n| 9 | old | row | here |\n\nAfter.\n| not | the table |\n"
        );
        let written = with_table(&text, README_HEADER, &[readme_row(&STEPS[0])]).unwrap();
        assert_eq!(
            written,
            format!(
                "# Title\n\nText.\n\n{README_HEADER}\n|---|---|---|---|\n{}\n\nAfter.\n| not | the table |\n",
                readme_row(&STEPS[0])
            )
        );
    }

    #[test]
    fn a_text_without_the_table_is_an_error_that_names_its_header() {
        let err = with_table("# Title\n", README_HEADER, &[]).unwrap_err();
        assert!(format!("{err:#}").contains(README_HEADER), "{err:#}");
    }

    /// Step 3 with `branches` instead of its own.
    fn step_3_with(branches: &'static [Branch]) -> Vec<Step> {
        let step = STEPS.iter().find(|s| s.number == 3).unwrap();
        vec![Step { branches, ..*step }]
    }

    const NOTHING: Branch = Branch {
        go: "[`handleObject`](go:controller.go#handleObject)",
        check: None,
        wrong: None,
        mistake: None,
        fix: None,
        rust: None,
        unchecked: None,
    };

    #[test]
    fn a_branch_must_say_what_checks_it_or_why_nothing_does() {
        let err = branch_rows(&step_3_with(&[NOTHING])).unwrap_err();
        assert!(format!("{err:#}").contains("exactly one of"), "{err:#}");
        const TWO: Branch = Branch {
            check: Some("a Foo added: enqueues its key"),
            rust: Some("no tombstones"),
            ..NOTHING
        };
        assert!(branch_rows(&step_3_with(&[TWO])).is_err());
    }

    #[test]
    fn a_branch_checked_by_a_line_its_step_does_not_have_is_an_error() {
        const UNKNOWN: Branch = Branch {
            check: Some("a Foo added: enqueues its key twice"),
            ..NOTHING
        };
        let err = branch_rows(&step_3_with(&[UNKNOWN])).unwrap_err();
        assert!(format!("{err:#}").contains("has no line"), "{err:#}");
    }

    #[test]
    fn a_wrong_solution_comes_with_the_mistake_and_its_fix() {
        const HALF: Branch = Branch {
            check: Some("a Foo added: enqueues its key"),
            wrong: Some("ignores-new-foos"),
            ..NOTHING
        };
        let err = branch_rows(&step_3_with(&[HALF])).unwrap_err();
        assert!(format!("{err:#}").contains("go together"), "{err:#}");
        const WHOLE: Branch = Branch {
            mistake: Some("enqueued nothing on add"),
            fix: Some("enqueue the Foo's key"),
            ..HALF
        };
        assert_eq!(
            branch_rows(&step_3_with(&[WHOLE])).unwrap(),
            [
                "| 3: [`handleObject`](go:controller.go#handleObject) | `step-3 FAIL a Foo added: enqueues its key` | enqueued nothing on add. The fix: enqueue the Foo's key ([step 3](step-3.md#the-rust-code)) |"
            ]
        );
    }
}
