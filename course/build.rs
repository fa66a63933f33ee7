//! Generates, from every `steps/step-N/` folder, the step registry of
//! `src/steps.rs` (its `step.toml`, and whether it has a `starter.rs`): a
//! step is known because its folder exists. (Its `check.rs` is declared in
//! `src/checks/mod.rs`, in source, by `cargo xtask steps`, so that rustfmt
//! and editors see it.)

use std::collections::BTreeMap;
use std::path::Path;

fn main() {
    registry();
}

/// A step's `step.toml` (the fields are `Step`'s in src/steps.rs).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StepToml {
    title: String,
    go: String,
    chapter: String,
    permissions: String,
    captures: Vec<String>,
    /// What its flow recording must show; none: it has no recording.
    #[serde(default)]
    flow: Vec<Shows>,
    /// Lines of its recording that a race decides.
    #[serde(default)]
    race: Vec<Race>,
    /// What RBAC allowed the step before that this one no longer needs.
    #[serde(default)]
    no_longer_needs: Vec<String>,
    /// The branches of its Go counterpart and what checks each.
    #[serde(default)]
    branch: Vec<BranchToml>,
}

/// A `[[branch]]` of a step.toml (the fields are `Branch`'s in src/steps.rs).
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct BranchToml {
    go: String,
    check: Option<String>,
    wrong: Option<String>,
    mistake: Option<String>,
    fix: Option<String>,
    rust: Option<String>,
    unchecked: Option<String>,
}

/// A line a step's flow recording must show.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Shows {
    shape: String,
    shows: String,
}

/// A line of a step's flow recording that a race decides.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Race {
    shape: String,
    why: String,
}

/// A step folder's Cargo.toml: the package's name and its binaries.
#[derive(serde::Deserialize)]
struct Manifest {
    package: PackageName,
    #[serde(default)]
    bin: Vec<Bin>,
}

#[derive(serde::Deserialize)]
struct PackageName {
    name: String,
}

#[derive(serde::Deserialize)]
struct Bin {
    name: String,
    path: String,
}

/// What build.rs read of one step folder.
struct Found {
    package: String,
    source: String,
    step: StepToml,
    /// Whether the folder has a `starter.rs` (its workshop starter's spec).
    starter: bool,
}

/// `steps/step-N/step.toml` for every N, with the package and main file
/// of `steps/step-N/Cargo.toml`, as `STEPS` in `OUT_DIR/steps.rs`.
fn registry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let steps = root.join("steps");
    println!("cargo::rerun-if-changed={}", steps.display());
    let mut found: BTreeMap<u8, Found> = BTreeMap::new();
    let entries = std::fs::read_dir(&steps)
        .unwrap_or_else(|err| panic!("reading {}: {err}", steps.display()));
    for entry in entries {
        let folder = entry.expect("a directory entry").path();
        if let Some((number, step)) = step_folder(&folder) {
            found.insert(number, step);
        }
    }
    let mut out = String::from(
        "/// Every step, in order: one per `steps/step-N/step.toml`.\npub const STEPS: &[Step] = &[\n",
    );
    for (number, found) in &found {
        out.push_str(&step_literal(*number, found));
    }
    out.push_str("];\n");
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("steps.rs"), out).expect("writing steps.rs");
}

/// The step of `folder` if it is `steps/step-N/`: its step.toml, its
/// package's name and main file, whether it has a starter.
fn step_folder(folder: &Path) -> Option<(u8, Found)> {
    let name = folder
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let number = name.strip_prefix("step-").filter(|_| folder.is_dir())?;
    let number: u8 = number
        .parse()
        .unwrap_or_else(|_| panic!("{}: a step folder is steps/step-N", folder.display()));
    let path = folder.join("step.toml");
    println!("cargo::rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: a step folder needs its step.toml: {err}",
            path.display()
        )
    });
    let step: StepToml =
        toml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let manifest_path = folder.join("Cargo.toml");
    println!("cargo::rerun-if-changed={}", manifest_path.display());
    let manifest: Manifest = std::fs::read_to_string(&manifest_path)
        .map_err(|err| err.to_string())
        .and_then(|text| toml::from_str(&text).map_err(|err| err.to_string()))
        .unwrap_or_else(|err| {
            panic!(
                "{}: a step folder is a package: {err}",
                manifest_path.display()
            )
        });
    let bin = manifest
        .bin
        .iter()
        .find(|bin| bin.name == name)
        .unwrap_or_else(|| panic!("{}: no [[bin]] named {name}", manifest_path.display()));
    let source = format!("steps/{name}/{}", bin.path);
    let starter = folder.join("starter.rs").is_file();
    Some((
        number,
        Found {
            package: manifest.package.name,
            source,
            step,
            starter,
        },
    ))
}

/// Step `number`'s entry of `STEPS`, as Rust source.
fn step_literal(number: u8, found: &Found) -> String {
    let Found {
        package,
        source,
        step,
        ..
    } = found;
    let starter = if found.starter {
        format!(
            "Some(Starter {{ file: \"workshop/step-{number}.rs\", binary: \"workshop-step-{number}\" }})"
        )
    } else {
        "None".into()
    };
    let flow = if step.flow.is_empty() {
        "None".into()
    } else {
        format!("Some(\"step-{number}\")")
    };
    let shows: Vec<(&str, &str)> = step
        .flow
        .iter()
        .map(|line| (line.shape.as_str(), line.shows.as_str()))
        .collect();
    let races: Vec<(&str, &str)> = step
        .race
        .iter()
        .map(|race| (race.shape.as_str(), race.why.as_str()))
        .collect();
    let mut branches = String::from("&[");
    for b in &step.branch {
        branches.push_str(&format!(
            "\n            Branch {{ go: {:?}, check: {:?}, wrong: {:?}, mistake: {:?}, \
             fix: {:?}, rust: {:?}, unchecked: {:?} }},",
            b.go, b.check, b.wrong, b.mistake, b.fix, b.rust, b.unchecked
        ));
    }
    branches.push_str("\n        ]");
    format!(
        "    Step {{\n        number: {number},\n        binary: \"step-{number}\",\n        \
         title: {:?},\n        go: {:?},\n        package: {package:?},\n        source: {source:?},\n        \
         chapter: {:?},\n        permissions: rbac::{},\n        starter: {starter},\n        \
         captures: &{:?},\n        flow: {flow},\n        \
         flow_shows: &{shows:?},\n        flow_races: &{races:?},\n        \
         no_longer_needs: &{:?},\n        branches: {branches},\n    }},\n",
        step.title, step.go, step.chapter, step.permissions, step.captures, step.no_longer_needs,
    )
}
