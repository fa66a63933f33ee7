//! The step registry (`course::steps`) is complete: every entry's
//! binary, chapter, starter, captures and README row exist, so that adding a
//! step is its files, one entry and its chapter (CONTRIBUTING.md), and a
//! forgotten piece fails here with what is missing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use course::steps::STEPS;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testcluster/ is in the repository")
        .to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_registry_has_one_step_per_folder_in_steps() {
    let mut folders: Vec<u8> = std::fs::read_dir(root().join("steps"))
        .expect("steps/")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path.file_name()?.to_str()?.to_string();
            path.is_dir().then_some(())?;
            name.strip_prefix("step-")?.parse().ok()
        })
        .collect();
    folders.sort();
    let numbers: Vec<u8> = STEPS.iter().map(|s| s.number).collect();
    assert_eq!(numbers, folders, "one step per steps/step-N/step.toml");
}

#[test]
fn a_step_has_a_check_exactly_when_its_folder_has_a_check_rs() {
    for step in STEPS {
        let n = step.number;
        let file = format!("steps/step-{n}/check.rs");
        assert_eq!(
            root().join(&file).is_file(),
            !step.check().is_empty(),
            "step {n}: {file} and the checks compiled in disagree: run `cargo xtask steps`, \
             which declares each step's check.rs in course/src/checks/mod.rs"
        );
    }
}

/// A Cargo.toml, parsed.
fn manifest(path: &str) -> toml::Table {
    toml::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `[[bin]]` names and paths of a Cargo.toml.
fn bins(manifest_path: &str) -> Vec<(String, String)> {
    let text = |bin: &toml::Value, key: &str| {
        bin.get(key)
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    manifest(manifest_path)
        .get("bin")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .map(|bin| (text(bin, "name"), text(bin, "path")))
        .collect()
}

#[test]
fn the_registry_lists_what_it_knows_about_each_step() {
    println!("step  binary   chapter     starter              check  captures");
    for step in STEPS {
        let behaviours: usize = step.check().iter().map(|s| s.behaviours.len()).sum();
        println!(
            "{:<5} {:<8} {:<11} {:<20} {:<6} {}",
            step.number,
            step.binary,
            step.chapter,
            step.starter.map(|s| s.file).unwrap_or("-"),
            behaviours,
            step.captures.join(", ")
        );
    }
    let numbers: Vec<u8> = STEPS.iter().map(|s| s.number).collect();
    let expected: Vec<u8> = (1..=STEPS.len() as u8).collect();
    assert_eq!(numbers, expected, "steps numbered 1, 2, … in order");
}

/// The directory of the package named `package` among the workspace's
/// members (a member ending in `/*` is every folder in it, as for cargo).
fn package_dir(package: &str) -> String {
    let workspace = manifest("Cargo.toml");
    let members = workspace["workspace"]["members"]
        .as_array()
        .expect("workspace members");
    let dirs = members
        .iter()
        .filter_map(toml::Value::as_str)
        .flat_map(|member| match member.strip_suffix("/*") {
            Some(parent) => {
                let mut folders: Vec<String> = std::fs::read_dir(root().join(parent))
                    .unwrap_or_else(|e| panic!("{parent}: {e}"))
                    .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                    .map(|name| format!("{parent}/{name}"))
                    .filter(|dir| root().join(dir).is_dir())
                    .collect();
                folders.sort();
                folders
            }
            None => vec![member.to_string()],
        });
    for dir in dirs {
        let path = if dir == "." {
            "Cargo.toml".to_string()
        } else {
            format!("{dir}/Cargo.toml")
        };
        if manifest(&path)["package"]["name"].as_str() == Some(package) {
            return dir.to_string();
        }
    }
    panic!("no workspace member is the package {package}")
}

#[test]
fn every_steps_binary_is_built_by_its_package_from_its_source_inside_it() {
    for step in STEPS {
        let dir = package_dir(step.package);
        let manifest = if dir == "." {
            "Cargo.toml".to_string()
        } else {
            format!("{dir}/Cargo.toml")
        };
        let found = bins(&manifest)
            .into_iter()
            .find(|(name, _)| name == step.binary);
        let Some((_, path)) = found else {
            panic!(
                "step {}: no [[bin]] named {} in {manifest} (package {})",
                step.number, step.binary, step.package
            );
        };
        assert!(
            !path.split('/').any(|p| p == ".."),
            "step {}: {manifest} builds {} from {path}, outside its package",
            step.number,
            step.binary
        );
        let from_root = if dir == "." {
            path.clone()
        } else {
            format!("{dir}/{path}")
        };
        assert_eq!(
            from_root, step.source,
            "step {}: the registry says {}, {manifest} builds {from_root}",
            step.number, step.source
        );
        assert!(
            root().join(step.source).is_file(),
            "{} is missing",
            step.source
        );
    }
}

#[test]
fn every_steps_chapter_exists_and_is_in_summary_md() {
    let summary = read("book/src/SUMMARY.md");
    for step in STEPS {
        assert!(
            root().join("book/src").join(step.chapter).is_file(),
            "step {}: book/src/{} is missing",
            step.number,
            step.chapter
        );
        assert!(
            summary.contains(&format!("]({})", step.chapter)),
            "step {}: SUMMARY.md does not link {}",
            step.number,
            step.chapter
        );
    }
}

#[test]
fn every_starter_exists_and_is_a_binary_of_the_workshop_package() {
    let workshop = bins("workshop/Cargo.toml");
    for step in STEPS {
        let Some(starter) = step.starter else {
            continue;
        };
        assert!(
            root().join(starter.file).is_file(),
            "{} is missing",
            starter.file
        );
        let relative = starter
            .file
            .strip_prefix("workshop/")
            .expect("under workshop/");
        assert!(
            workshop
                .iter()
                .any(|(name, path)| name == starter.binary && path == relative),
            "workshop/Cargo.toml has no [[bin]] {} with path {relative}",
            starter.binary
        );
    }
}

#[test]
fn every_capture_of_a_step_is_in_book_src_outputs() {
    for step in STEPS {
        assert!(
            !step.captures.is_empty(),
            "step {} shows no run",
            step.number
        );
        for capture in step.captures {
            assert!(
                root().join("book/src/outputs").join(capture).is_file(),
                "step {}: book/src/outputs/{capture} is missing",
                step.number
            );
        }
    }
}

#[test]
fn every_step_with_a_queue_has_a_flow_recording_its_chapter_replays() {
    for step in STEPS {
        let Some(name) = step.flow else {
            assert!(
                step.number < 3,
                "step {} has a work queue (or kube's) but no flow recording",
                step.number
            );
            continue;
        };
        assert!(
            root()
                .join("book/src/outputs/flow")
                .join(format!("{name}.jsonl"))
                .is_file(),
            "step {}: book/src/outputs/flow/{name}.jsonl is missing (`cargo xtask book outputs {}` records it)",
            step.number,
            step.captures[0]
        );
        let chapter = std::fs::read_to_string(root().join("book/src").join(step.chapter)).unwrap();
        assert!(
            chapter.contains(&format!("{{{{#flow {name}}}}}")),
            "{} does not replay {{{{#flow {name}}}}}",
            step.chapter
        );
    }
}

#[test]
fn each_step_needs_what_the_one_before_did_except_what_its_step_toml_says_it_no_longer_needs() {
    // Steps 1-7 add a layer each; step 8 applies (patch) where step 7
    // updates, and its step.toml says so. (src/rbac.rs compares steps 7 and
    // 8 with manifests/rbac.yaml.)
    let table = |step: &course::steps::Step| -> BTreeSet<String> {
        step.permissions
            .iter()
            .map(|p| match p.subresource {
                Some(sub) => format!("{} {} {}/{sub}", p.verb, p.group, p.resource),
                None => format!("{} {} {}", p.verb, p.group, p.resource),
            })
            .collect()
    };
    for pair in STEPS.windows(2) {
        let (before, after) = (table(&pair[0]), table(&pair[1]));
        let only_before: Vec<&str> = before.difference(&after).map(String::as_str).collect();
        assert_eq!(
            only_before, pair[1].no_longer_needs,
            "what step {} needs and step {} does not (steps/step-{}/step.toml's no_longer_needs)",
            pair[0].number, pair[1].number, pair[1].number
        );
    }
}
