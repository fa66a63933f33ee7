//! ARCHITECTURE.md holds: every workspace crate is in its code map, each
//! section's "Depends on" and "Its tests also use" are the crate's
//! dependencies inside the workspace as `cargo metadata` reads them, and
//! every normal or build dependency points up the page (no crate names one
//! above it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cargo_metadata::{DependencyKind, MetadataCommand};

/// A workspace package as the map needs it.
#[derive(Debug, Clone)]
struct Package {
    name: String,
    /// Its folder relative to the repository root, with a trailing `/`
    /// (`""` for the root package).
    dir: String,
    /// Workspace packages it depends on (normal and build).
    uses: BTreeSet<String>,
    /// Workspace packages only its tests, benchmarks and examples use.
    tests_use: BTreeSet<String>,
}

/// A section of the code map.
#[derive(Debug, Default)]
struct Section {
    heading: String,
    /// The folder it maps (`steps/step-N/`: N is any number).
    path: String,
    /// The packages its heading names.
    names: BTreeSet<String>,
    depends_on: Option<BTreeSet<String>>,
    tests_use: BTreeSet<String>,
}

fn workspace() -> Vec<Package> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let metadata = MetadataCommand::new()
        .current_dir(&root)
        .no_deps()
        .exec()
        .expect("cargo metadata");
    let members: BTreeSet<String> = metadata
        .workspace_packages()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    let root = metadata.workspace_root.clone();
    metadata
        .workspace_packages()
        .into_iter()
        .map(|p| {
            let dir = p
                .manifest_path
                .parent()
                .and_then(|d| d.strip_prefix(&root).ok())
                .map(|d| d.to_string())
                .unwrap_or_default();
            let inside = |kinds: &[DependencyKind]| -> BTreeSet<String> {
                p.dependencies
                    .iter()
                    .filter(|d| members.contains(&d.name) && d.name != *p.name)
                    .filter(|d| kinds.contains(&d.kind))
                    .map(|d| d.name.clone())
                    .collect()
            };
            let uses = inside(&[DependencyKind::Normal, DependencyKind::Build]);
            let tests_use = inside(&[DependencyKind::Development])
                .difference(&uses)
                .cloned()
                .collect();
            Package {
                name: p.name.to_string(),
                dir: if dir.is_empty() {
                    dir
                } else {
                    format!("{dir}/")
                },
                uses,
                tests_use,
            }
        })
        .collect()
}

/// The backticked words of `text`.
fn code_spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The sections of the map's "## Code map", in order.
fn sections(map: &str) -> Vec<Section> {
    let Some((_, rest)) = map.split_once("\n## Code map\n") else {
        return Vec::new();
    };
    let body = rest.split("\n## ").next().unwrap_or_default();
    let mut found: Vec<Section> = Vec::new();
    let mut label: Option<&str> = None;
    for line in body.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            let spans = code_spans(heading);
            found.push(Section {
                heading: heading.to_string(),
                path: spans.first().cloned().unwrap_or_default(),
                names: spans.into_iter().skip(1).collect(),
                ..Section::default()
            });
            label = None;
            continue;
        }
        let Some(section) = found.last_mut() else {
            continue;
        };
        if line.trim().is_empty() {
            label = None;
            continue;
        }
        for (prefix, name) in [
            ("Depends on:", "depends"),
            ("Its tests also use:", "tests"),
            ("Never:", "never"),
        ] {
            if line.starts_with(prefix) {
                label = Some(name);
                if name == "depends" {
                    section.depends_on = Some(BTreeSet::new());
                }
            }
        }
        let names: BTreeSet<String> = code_spans(line).into_iter().collect();
        match label {
            Some("depends") => section.depends_on.get_or_insert_default().extend(names),
            Some("tests") => section.tests_use.extend(names),
            _ => {}
        }
    }
    found
}

/// Whether `dir` is the folder `pattern` maps (`N` standing for a number).
fn maps(pattern: &str, dir: &str) -> bool {
    if pattern.is_empty() || dir.is_empty() {
        return false;
    }
    let (pattern, dir) = (pattern.split('/'), dir.split('/'));
    pattern.clone().count() == dir.clone().count()
        && pattern.zip(dir).all(|(p, d)| match p.split_once('N') {
            Some((before, after)) => d
                .strip_prefix(before)
                .and_then(|d| d.strip_suffix(after))
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())),
            None => p == d,
        })
}

/// Everything in which the map and the workspace disagree.
fn problems(map: &str, packages: &[Package]) -> Vec<String> {
    let sections = sections(map);
    if sections.is_empty() {
        return vec!["no sections under \"## Code map\"".into()];
    }
    let (place, mut problems) = places(&sections, packages);
    for (i, section) in sections.iter().enumerate() {
        problems.extend(section_problems(i, section, packages, &place));
    }
    problems
}

/// Each package's section, by its index in the map; and a problem for each
/// package in no section or in several.
fn places<'p>(
    sections: &[Section],
    packages: &'p [Package],
) -> (BTreeMap<&'p str, usize>, Vec<String>) {
    let mut problems = Vec::new();
    let mut place: BTreeMap<&str, usize> = BTreeMap::new();
    for package in packages {
        let homes: Vec<usize> = sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.names.contains(&package.name) || maps(&s.path, &package.dir))
            .map(|(i, _)| i)
            .collect();
        match homes.as_slice() {
            [one] => {
                place.insert(&package.name, *one);
            }
            [] => problems.push(format!(
                "the crate {} ({}) is in no section of the code map",
                package.name,
                if package.dir.is_empty() {
                    "the root"
                } else {
                    &package.dir
                }
            )),
            many => problems.push(format!(
                "the crate {} is in {} sections of the code map",
                package.name,
                many.len()
            )),
        }
    }
    (place, problems)
}

/// What is wrong with section `i`: no crate in it, a name that is no crate,
/// its dependencies or its tests' other than cargo metadata says, or a
/// dependency further down the map.
fn section_problems(
    i: usize,
    section: &Section,
    packages: &[Package],
    place: &BTreeMap<&str, usize>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let members: Vec<&Package> = packages
        .iter()
        .filter(|p| place.get(p.name.as_str()) == Some(&i))
        .collect();
    if members.is_empty() {
        problems.push(format!(
            "the section {:?} maps no crate of the workspace",
            section.heading
        ));
        return problems;
    }
    for name in &section.names {
        if !packages.iter().any(|p| &p.name == name) {
            problems.push(format!(
                "{:?} names {name}, which is no crate of the workspace",
                section.heading
            ));
        }
    }
    let own: BTreeSet<String> = members.iter().map(|p| p.name.clone()).collect();
    let uses: BTreeSet<String> = members
        .iter()
        .flat_map(|p| p.uses.clone())
        .filter(|d| !own.contains(d))
        .collect();
    let tests_use: BTreeSet<String> = members
        .iter()
        .flat_map(|p| p.tests_use.clone())
        .filter(|d| !own.contains(d) && !uses.contains(d))
        .collect();
    match &section.depends_on {
        None => problems.push(format!(
            "the section {:?} has no \"Depends on:\" line",
            section.heading
        )),
        Some(said) if *said != uses => problems.push(format!(
            "{:?} says it depends on {said:?}; cargo metadata says {uses:?}",
            section.heading
        )),
        Some(_) => {}
    }
    if section.tests_use != tests_use {
        problems.push(format!(
            "{:?} says its tests also use {:?}; cargo metadata says {tests_use:?}",
            section.heading, section.tests_use
        ));
    }
    for dependency in &uses {
        if place.get(dependency.as_str()).is_some_and(|&at| at > i) {
            problems.push(format!(
                "{:?} depends on {dependency}, which the map puts below it: no crate names one above it",
                section.heading
            ));
        }
    }
    problems
}

#[test]
fn architecture_md_maps_every_crate_and_every_dependency_of_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let packages = workspace();
    assert!(packages.len() >= 5, "{packages:?}");
    let found = problems(&map, &packages);
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md and the workspace disagree:\n  {}",
        found.join("\n  ")
    );
}

/// A workspace made up here: a library, two steps, a tool above them.
fn planted() -> Vec<Package> {
    let package = |name: &str, dir: &str, uses: &[&str], tests_use: &[&str]| Package {
        name: name.into(),
        dir: dir.into(),
        uses: uses.iter().map(|s| s.to_string()).collect(),
        tests_use: tests_use.iter().map(|s| s.to_string()).collect(),
    };
    vec![
        package("lesson", "", &[], &["tool"]),
        package("step-1", "steps/step-1/", &["lesson"], &[]),
        package("step-2", "steps/step-2/", &["lesson"], &[]),
        package("tool", "tool/", &["lesson"], &[]),
    ]
}

const PLANTED_MAP: &str = "# Architecture\n\n## Code map\n\n\
    ### `src/`: `lesson`\n\nThe library.\n\nDepends on: nothing of the workspace.\nIts tests also use: `tool`.\n\n\
    ### `steps/step-N/`: `step-1` … `step-2`\n\nDepends on: `lesson`.\n\n\
    ### `tool/`: `tool`\n\nDepends on:\n`lesson`.\n\n## Invariants\n";

#[test]
fn a_map_that_matches_its_workspace_has_no_problem() {
    assert_eq!(problems(PLANTED_MAP, &planted()), Vec::<String>::new());
}

#[test]
fn a_crate_missing_from_the_map_or_an_edge_it_does_not_name_is_a_problem() {
    let mut packages = planted();
    packages.push(Package {
        name: "bench".into(),
        dir: "bench/".into(),
        uses: BTreeSet::new(),
        tests_use: BTreeSet::new(),
    });
    packages[3].uses.insert("step-1".into());
    let found = problems(PLANTED_MAP, &packages);
    assert_eq!(
        found,
        [
            "the crate bench (bench/) is in no section of the code map",
            "\"`tool/`: `tool`\" says it depends on {\"lesson\"}; cargo metadata says {\"lesson\", \"step-1\"}",
        ]
    );
}

#[test]
fn a_dependency_pointing_down_the_page_is_a_problem() {
    let mut packages = planted();
    packages[0].uses.insert("tool".into());
    packages[0].tests_use.clear();
    let map = PLANTED_MAP.replace(
        "Depends on: nothing of the workspace.\nIts tests also use: `tool`.",
        "Depends on: `tool`.",
    );
    let found = problems(&map, &packages);
    assert_eq!(
        found,
        [
            "\"`src/`: `lesson`\" depends on tool, which the map puts below it: no crate names one above it"
        ]
    );
}

#[test]
fn a_section_that_maps_nothing_is_a_problem() {
    let map = PLANTED_MAP.replace(
        "## Invariants",
        "### `gone/`: `gone`\n\nDepends on: nothing of the workspace.\n\n## Invariants",
    );
    let found = problems(&map, &planted());
    assert_eq!(
        found,
        ["the section \"`gone/`: `gone`\" maps no crate of the workspace"]
    );
}
