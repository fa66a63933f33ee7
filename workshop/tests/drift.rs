//! The starters have not drifted from the steps: every item of a starter
//! that is not a gap (`WRITE THIS`) is the same code as the item of that
//! name in the project's own sources (comments, `pub` and layout aside), so
//! a change to a step that the starter copies fails here until the starter
//! follows.
//!
//! The few items a starter reshapes on purpose (a `main` that calls the
//! learner's functions instead of the library's) are listed in [`RESHAPED`]
//! with the reason; an entry that is no longer different fails too.
//!
//! This guards the copies; the starters are not generated yet (the gap
//! instructions are prose a person keeps true).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Items a starter reshapes on purpose: (step, item, why).
const RESHAPED: &[(u8, &str, &str)] = &[
    (
        2,
        "main",
        "calls the learner's start_informers and wait_for_cache_sync",
    ),
    (4, "main", "calls the learner's run_workers"),
    (
        7,
        "main",
        "one file: wires the learner's resync_period and record into step 6's program",
    ),
    (
        7,
        "Context",
        "step 6's Context and a Recorder (the reference's is in src/controller.rs)",
    ),
    (
        8,
        "main",
        "runs reconciler::run_with with the starter's reconcile, without the production flags",
    ),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workshop/ is in the repository")
        .to_path_buf()
}

/// An item: its doc comments and attributes, and its code.
struct Item {
    docs: String,
    code: String,
}

/// The top-level `fn`, `struct` and `enum` items of a Rust file, by name
/// (an item starts at column 0 and ends at the next line that is `}`).
fn items(text: &str) -> BTreeMap<String, Item> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let rest = line
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ")
            .trim_start_matches("async ");
        let name = ["fn ", "struct ", "enum "].iter().find_map(|kw| {
            rest.strip_prefix(kw).map(|r| {
                r.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
        });
        let Some(name) = name else {
            i += 1;
            continue;
        };
        let mut start = i;
        while start > 0
            && (lines[start - 1].starts_with("///") || lines[start - 1].starts_with("#["))
        {
            start -= 1;
        }
        let mut end = i;
        while end < lines.len() && lines[end] != "}" && !(end == i && line.ends_with(';')) {
            end += 1;
        }
        found.insert(
            name,
            Item {
                docs: lines[start..i].join("\n"),
                code: lines[i..=end.min(lines.len() - 1)].join("\n"),
            },
        );
        i = end + 1;
    }
    found
}

/// The code without comments, `pub` and layout.
fn normalised(code: &str) -> String {
    code.lines()
        .map(|l| match l.find("//") {
            Some(at) if !l[..at].contains('"') => &l[..at],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join(" ")
        .replace("pub(crate) ", "")
        .replace("pub ", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The project's own sources a starter may copy from, the step's file first.
fn reference_files(step: &str) -> Vec<PathBuf> {
    let mut files = vec![root().join("steps").join(format!("{step}.rs"))];
    for dir in ["steps", "src", "step8/src"] {
        let mut more: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .expect("a source directory")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        more.sort();
        files.extend(more);
    }
    files
}

#[test]
fn every_item_a_starter_copies_is_the_same_as_the_steps() {
    let mut drifted = Vec::new();
    let mut reshaped_but_same = Vec::new();
    for step in testcluster::steps::STEPS {
        let Some(starter) = step.starter else {
            continue;
        };
        let text = std::fs::read_to_string(root().join(starter.file)).expect("the starter");
        let references: Vec<(PathBuf, BTreeMap<String, Item>)> = reference_files(step.binary)
            .into_iter()
            .map(|f| {
                let items = items(&std::fs::read_to_string(&f).expect("a source file"));
                (f, items)
            })
            .collect();
        for (name, item) in items(&text) {
            if item.docs.contains("WRITE THIS") {
                continue;
            }
            let reshaped = RESHAPED
                .iter()
                .any(|(n, item, _)| *n == step.number && *item == name);
            let mine = normalised(&item.code);
            let candidates: Vec<&PathBuf> = references
                .iter()
                .filter(|(_, items)| items.contains_key(&name))
                .map(|(f, _)| f)
                .collect();
            let same = references.iter().any(|(_, items)| {
                items
                    .get(&name)
                    .is_some_and(|r| normalised(&r.code) == mine)
            });
            match (same, reshaped) {
                (true, true) => reshaped_but_same.push(format!("step {} {name}", step.number)),
                (true, false) | (false, true) => {}
                (false, false) if candidates.is_empty() => drifted.push(format!(
                    "{}: `{name}` is neither a gap (WRITE THIS) nor in the project's sources",
                    starter.file
                )),
                (false, false) => drifted.push(format!(
                    "{}: `{name}` differs from {}",
                    starter.file,
                    candidates
                        .iter()
                        .map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string())
                        .collect::<Vec<_>>()
                        .join(" and ")
                )),
            }
        }
    }
    assert!(
        reshaped_but_same.is_empty(),
        "listed in RESHAPED but now the same as the step's: {reshaped_but_same:?}"
    );
    assert!(
        drifted.is_empty(),
        "starters that drifted from the steps (make the starter's copy the step's again, or list a reshaping in RESHAPED with why):\n{}",
        drifted.join("\n")
    );
}

#[test]
fn the_drift_check_sees_a_changed_body() {
    let reference = "/// Docs.\npub async fn sync(a: u8) -> u8 {\n    a + 1 // add\n}\n";
    let copy = "/// Other docs.\nasync fn sync(a: u8) -> u8 {\n    a + 1\n}\n";
    let changed = "async fn sync(a: u8) -> u8 {\n    a + 2\n}\n";
    let code = |t: &str| normalised(&items(t)["sync"].code);
    assert_eq!(code(reference), code(copy));
    assert_ne!(code(reference), code(changed));
}
