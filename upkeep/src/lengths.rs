//! No function of the tooling over 80 lines: a function that long does
//! several things, and each of them deserves a name. Its test reads every
//! Rust file of the tooling (all but the lesson: `src/`, each step's own
//! code, the examples and the generated starters) with the Rust parser,
//! and counts each function's lines from its `fn` to its closing brace.
//!
//! The functions still over the limit are listed in `long-functions.txt`
//! beside this crate's manifest, each with the length it may not exceed:
//! a new long function fails, a listed one that grew fails, and a listed
//! one that is gone or short enough fails until its line is removed, so
//! the list only shrinks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::spanned::Spanned as _;
use syn::visit::Visit;

/// The most lines a function of the tooling may have.
const LIMIT: usize = 80;

/// Whether `path` (from the repository root) is the lesson's, not the
/// tooling's.
fn is_lesson(path: &str) -> bool {
    let in_step = |rest: &str| {
        rest == "main.rs"
            || rest == "controller.rs"
            || rest.starts_with("src/")
            || rest.starts_with("examples/")
    };
    (path.starts_with("src/") && path != "src/fixtures.rs")
        || path.starts_with("examples/")
        || path
            .strip_prefix("steps/")
            .and_then(|p| p.split_once('/'))
            .is_some_and(|(_, rest)| in_step(rest))
        || (path.starts_with("workshop/step-") && !path.contains("/tests/"))
}

/// Every `.rs` file under `dir` (target directories, `.git` and the book's
/// build left out), from `root`.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            if !matches!(name.as_ref(), "target" | ".git" | "book" | "controlplane") {
                rust_files(root, &path, out)?;
            }
        } else if name.ends_with(".rs") {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

/// Each function of `source` longer than [`LIMIT`]: (its name, its lines).
fn long_functions(source: &str) -> Result<Vec<(String, usize)>> {
    struct Lengths(Vec<(String, usize)>);
    impl Lengths {
        fn count(&mut self, sig: &syn::Signature, whole: proc_macro2::Span) {
            let lines = whole.end().line + 1 - sig.fn_token.span.start().line;
            if lines > LIMIT {
                self.0.push((sig.ident.to_string(), lines));
            }
        }
    }
    impl<'ast> Visit<'ast> for Lengths {
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            self.count(&f.sig, f.span());
            syn::visit::visit_item_fn(self, f);
        }
        fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
            self.count(&f.sig, f.span());
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    let file = syn::parse_file(source)?;
    let mut lengths = Lengths(Vec::new());
    lengths.visit_file(&file);
    Ok(lengths.0)
}

/// What is wrong with the tooling's `found` long functions (`path name` →
/// lines) against the `allowed` list: each new or grown one, and each
/// listed one that is gone or short enough now.
fn problems(found: &BTreeMap<String, usize>, allowed: &BTreeMap<String, usize>) -> Vec<String> {
    let mut problems = Vec::new();
    for (function, &lines) in found {
        match allowed.get(function) {
            None => problems.push(format!(
                "{function}: {lines} lines, over {LIMIT}: split it into functions that each do one thing"
            )),
            Some(&most) if lines > most => problems.push(format!(
                "{function}: {lines} lines, more than the {most} long-functions.txt allows: split it"
            )),
            Some(_) => {}
        }
    }
    for function in allowed.keys() {
        if !found.contains_key(function) {
            problems.push(format!(
                "{function}: no longer over {LIMIT} lines (or gone): remove its line from long-functions.txt"
            ));
        }
    }
    problems
}

/// `long-functions.txt`: `LINES PATH NAME` a line, `#` comments.
fn allowed(text: &str) -> Result<BTreeMap<String, usize>> {
    let mut allowed = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (lines, function) = line
            .split_once(' ')
            .with_context(|| format!("long-functions.txt: {line:?} is not `LINES PATH NAME`"))?;
        let lines = lines.parse().with_context(|| {
            format!("long-functions.txt: {line:?} does not start with a number")
        })?;
        allowed.insert(function.to_string(), lines);
    }
    Ok(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("long-functions.txt")
    }

    #[test]
    fn no_function_of_the_tooling_is_over_80_lines_but_the_listed_ones_and_none_grows() {
        let root = course::workspace::repo_root();
        let mut files = Vec::new();
        rust_files(&root, &root, &mut files).unwrap();
        let tooling: Vec<&String> = files.iter().filter(|f| !is_lesson(f)).collect();
        assert!(tooling.len() > 100, "{} files of tooling", tooling.len());
        let mut found = BTreeMap::new();
        for path in tooling {
            let source = std::fs::read_to_string(root.join(path)).unwrap();
            for (name, lines) in long_functions(&source).unwrap_or_else(|e| panic!("{path}: {e}")) {
                found.insert(format!("{path} {name}"), lines);
            }
        }
        let allowed = allowed(&std::fs::read_to_string(list()).unwrap()).unwrap();
        let problems = problems(&found, &allowed);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn a_new_long_function_a_grown_one_and_a_stale_line_are_each_a_problem() {
        let body = "    let x = 1;\n".repeat(LIMIT);
        let source = format!(
            "fn short() {{}}\n\nfn long() {{\n{body}}}\n\nimpl S {{\n    fn method() {{\n{body}    }}\n}}\n"
        );
        let found: BTreeMap<String, usize> = long_functions(&source)
            .unwrap()
            .into_iter()
            .map(|(name, lines)| (format!("x.rs {name}"), lines))
            .collect();
        assert_eq!(
            found.values().collect::<Vec<_>>(),
            [&(LIMIT + 2), &(LIMIT + 2)]
        );
        assert!(problems(&found, &found).is_empty());
        let mut allowed = found.clone();
        allowed.insert("x.rs long".into(), LIMIT + 1);
        allowed.remove("x.rs method");
        allowed.insert("y.rs gone".into(), 90);
        let said = problems(&found, &allowed);
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said[0].contains("more than the 81"), "{said:?}");
        assert!(
            said[1].starts_with("x.rs method: 82 lines, over 80"),
            "{said:?}"
        );
        assert!(said[2].starts_with("y.rs gone: no longer over"), "{said:?}");
    }

    #[test]
    fn the_lesson_is_not_the_tooling() {
        for lesson in [
            "src/workqueue.rs",
            "steps/step-7/controller.rs",
            "steps/step-8/src/leader.rs",
            "steps/step-3/main.rs",
            "examples/widget.rs",
            "workshop/step-5.rs",
        ] {
            assert!(is_lesson(lesson), "{lesson}");
        }
        for tooling in [
            "src/fixtures.rs",
            "steps/step-8/check.rs",
            "steps/step-8/tests/cli.rs",
            "tests/parity.rs",
            "workshop/tests/starters.rs",
            "xtask/src/main.rs",
        ] {
            assert!(!is_lesson(tooling), "{tooling}");
        }
    }
}
