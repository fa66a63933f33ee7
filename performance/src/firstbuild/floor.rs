//! The floors a step's first build is measured against: the crate whose
//! only code is an empty `main` and whose dependencies are the shared
//! crate's (what every step pays before a line of its own), and the client
//! floor, a kube client without kube's runtime.

use super::*;

/// Writes into `dir` the floor crate of the revision exported in `export`:
/// an empty `main` whose dependencies are those of the revision's root
/// package (the shared crate) as its default features turn them on, as
/// `cargo metadata` reads them (workspace dependencies resolved), and its
/// lock file and profiles. What every step pays before compiling a line of
/// its own.
pub(super) fn floor(export: &Path, dir: &Path) -> Result<()> {
    use toml_edit::{DocumentMut, Item, Table, Value};

    let manifest = export.join("Cargo.toml");
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(&manifest)
        .no_deps()
        .exec()
        .with_context(|| format!("cargo metadata of {}", manifest.display()))?;
    let package = metadata
        .root_package()
        .context("the revision has no root package")?;
    let mut dependencies = registry_dependencies(package)?;
    let enabled = follow_default_features(package, &mut dependencies)?;
    let mut table = Table::new();
    for (name, mut spec) in dependencies {
        let optional = spec
            .remove("optional")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        if !optional || enabled.contains(&name) {
            table.insert(&name, Item::Value(Value::InlineTable(spec)));
        }
    }
    let mut doc = DocumentMut::new();
    let mut floor = Table::new();
    floor.insert("name", toml_edit::value("floor"));
    floor.insert("version", toml_edit::value("0.1.0"));
    floor.insert("edition", toml_edit::value(package.edition.as_str()));
    floor.insert("publish", toml_edit::value(false));
    doc.insert("package", Item::Table(floor));
    // A workspace of its own, not the repository's around it.
    doc.insert("workspace", Item::Table(Table::new()));
    doc.insert("dependencies", Item::Table(table));
    // Profiles are not in cargo's metadata: the manifest's, as written.
    let root: DocumentMut = std::fs::read_to_string(&manifest)?
        .parse()
        .with_context(|| format!("parsing {}", manifest.display()))?;
    if let Some(profile) = root.get("profile") {
        doc.insert("profile", profile.clone());
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(dir.join("Cargo.toml"), doc.to_string())?;
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n")?;
    std::fs::copy(export.join("Cargo.lock"), dir.join("Cargo.lock"))
        .context("copying the revision's Cargo.lock")?;
    Ok(())
}

/// The normal dependencies of `package` as the floor's manifest writes them
/// (each a registry dependency, its features and `optional` as declared).
fn registry_dependencies(
    package: &cargo_metadata::Package,
) -> Result<BTreeMap<String, toml_edit::InlineTable>> {
    use cargo_metadata::DependencyKind;
    use toml_edit::{InlineTable, Value};
    let mut dependencies: BTreeMap<String, InlineTable> = BTreeMap::new();
    for dependency in &package.dependencies {
        if dependency.kind != DependencyKind::Normal || dependency.target.is_some() {
            continue;
        }
        let name = &dependency.name;
        ensure!(
            dependency.path.is_none(),
            "the floor needs registry dependencies; {name} is a path dependency"
        );
        let mut spec = InlineTable::new();
        spec.insert("version", dependency.req.to_string().into());
        if dependency.rename.is_some() {
            spec.insert("package", name.into());
        }
        if !dependency.uses_default_features {
            spec.insert("default-features", false.into());
        }
        if !dependency.features.is_empty() {
            spec.insert(
                "features",
                Value::Array(dependency.features.iter().collect()),
            );
        }
        if dependency.optional {
            spec.insert("optional", true.into());
        }
        dependencies.insert(dependency.rename.clone().unwrap_or(name.clone()), spec);
    }
    Ok(dependencies)
}

/// `package`'s default features followed into `dependencies`: `dep/feature`
/// turns on a dependency's feature, `dep:name` (or a bare optional
/// dependency's name) the dependency. The optional dependencies turned on.
fn follow_default_features(
    package: &cargo_metadata::Package,
    dependencies: &mut BTreeMap<String, toml_edit::InlineTable>,
) -> Result<std::collections::BTreeSet<String>> {
    use toml_edit::Value;
    let mut pending: Vec<String> = vec!["default".into()];
    let mut seen = std::collections::BTreeSet::new();
    let mut enabled = std::collections::BTreeSet::new();
    while let Some(feature) = pending.pop() {
        if !seen.insert(feature.clone()) {
            continue;
        }
        if let Some((dependency, its)) = feature.split_once('/') {
            let dependency = dependency.trim_end_matches('?');
            let spec = dependencies
                .get_mut(dependency)
                .with_context(|| format!("feature {feature}: no dependency {dependency}"))?;
            let mut list = spec
                .get("features")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            list.push(its);
            spec.insert("features", Value::Array(list));
            enabled.insert(dependency.to_string());
        } else if let Some(dependency) = feature.strip_prefix("dep:") {
            enabled.insert(dependency.to_string());
        } else if let Some(list) = package.features.get(&feature) {
            pending.extend(list.iter().cloned());
        } else if dependencies.contains_key(&feature) {
            enabled.insert(feature);
        }
    }
    Ok(enabled)
}

/// What any program that lists Foos with kube compiles, at the least: the
/// client without kube's runtime, the Kubernetes types, an async runtime,
/// serde and schemars (which `#[derive(CustomResource)]` expands to), and
/// anyhow. Step 1 needs these and more; the floor has all of them.
const CLIENT: &[&str] = &[
    "anyhow",
    "k8s-openapi",
    "kube",
    "schemars",
    "serde",
    "serde_json",
    "tokio",
];

/// Writes into `dir` the client floor made from the floor crate in `floor`
/// (see [`floor`]): its dependencies cut to [`CLIENT`], kube without its
/// `runtime` feature and tokio with only `macros` and `rt-multi-thread`;
/// the same versions, lock file and profiles.
pub(super) fn client(floor: &Path, dir: &Path) -> Result<()> {
    use toml_edit::{Array, DocumentMut, Value};

    let manifest = floor.join("Cargo.toml");
    let mut doc: DocumentMut = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?
        .parse()
        .with_context(|| format!("parsing {}", manifest.display()))?;
    doc["package"]["name"] = toml_edit::value("client-floor");
    let deps = doc["dependencies"]
        .as_table_like_mut()
        .context("the floor has no [dependencies]")?;
    let names: Vec<String> = deps.iter().map(|(name, _)| name.to_string()).collect();
    for name in names {
        if !CLIENT.contains(&name.as_str()) {
            deps.remove(&name);
        }
    }
    for name in CLIENT {
        ensure!(
            deps.contains_key(name),
            "the floor has no dependency {name}"
        );
    }
    let kube = deps
        .get_mut("kube")
        .and_then(|item| item.as_value_mut())
        .and_then(Value::as_inline_table_mut)
        .context("kube is not an inline table")?;
    if let Some(features) = kube.get_mut("features").and_then(Value::as_array_mut) {
        features.retain(|feature| feature.as_str() != Some("runtime"));
    }
    let tokio = deps
        .get_mut("tokio")
        .and_then(|item| item.as_value_mut())
        .and_then(Value::as_inline_table_mut)
        .context("tokio is not an inline table")?;
    let features: Array = ["macros", "rt-multi-thread"].into_iter().collect();
    tokio.insert("features", Value::Array(features));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(dir.join("Cargo.toml"), doc.to_string())?;
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n")?;
    std::fs::copy(floor.join("Cargo.lock"), dir.join("Cargo.lock"))
        .context("copying the floor's Cargo.lock")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_has_the_shared_crates_dependencies_as_its_default_features_turn_them_on() {
        let tmp = tempfile::tempdir().unwrap();
        let export = tmp.path().join("export");
        std::fs::create_dir_all(export.join("src")).unwrap();
        std::fs::write(export.join("src/lib.rs"), "").unwrap();
        std::fs::write(
            export.join("Cargo.toml"),
            r#"[workspace]
members = ["."]

[workspace.dependencies]
kube = { version = "5.0.0", default-features = false, features = ["client"] }

[package]
name = "shared"
version = "0.1.0"
edition = "2024"

[dependencies]
kube.workspace = true
serde = { version = "1", features = ["derive"] }
anyhow = "1"
tower-test = { version = "0.4", optional = true }

[features]
default = ["runtime"]
runtime = ["kube/runtime"]
fixtures = ["dep:tower-test"]

[profile.dev.package."*"]
debug = false
"#,
        )
        .unwrap();
        std::fs::write(export.join("Cargo.lock"), "version = 4\n").unwrap();
        let dir = tmp.path().join("floor");
        floor(&export, &dir).unwrap();
        let manifest: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let deps = manifest["dependencies"].as_table().unwrap();
        let kube = deps["kube"].as_table().unwrap();
        assert_eq!(kube["version"].as_str(), Some("^5.0.0"));
        assert_eq!(kube["default-features"].as_bool(), Some(false));
        let features: Vec<&str> = kube["features"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f.as_str())
            .collect();
        assert_eq!(features, ["client", "runtime"]);
        assert_eq!(deps["anyhow"]["version"].as_str(), Some("^1"));
        assert!(deps.contains_key("serde"));
        assert!(!deps.contains_key("tower-test"), "{deps:?}");
        assert!(manifest.contains_key("workspace"));
        assert_eq!(
            manifest["profile"]["dev"]["package"]["*"]["debug"].as_bool(),
            Some(false)
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("src/main.rs")).unwrap(),
            "fn main() {}\n"
        );
        assert!(dir.join("Cargo.lock").is_file());
    }

    #[test]
    fn the_client_floor_keeps_only_what_a_kube_client_needs_without_kubes_runtime() {
        let tmp = tempfile::tempdir().unwrap();
        let floor_dir = tmp.path().join("floor");
        std::fs::create_dir_all(&floor_dir).unwrap();
        std::fs::write(
            floor_dir.join("Cargo.toml"),
            r#"[package]
name = "floor"
version = "0.1.0"

[workspace]

[dependencies]
anyhow = { version = "1" }
clap = { version = "4", features = ["derive"] }
k8s-openapi = { version = "0.29.0", features = ["v1_37"] }
kube = { version = "5.0.0", default-features = false, features = ["client", "runtime", "derive"] }
schemars = { version = "1" }
serde = { version = "1", features = ["derive"] }
serde_json = { version = "1" }
tokio = { version = "1", features = ["macros", "rt-multi-thread", "signal"] }
tracing-subscriber = { version = "0.3", features = ["env-filter"] }
"#,
        )
        .unwrap();
        std::fs::write(floor_dir.join("Cargo.lock"), "version = 4\n").unwrap();
        let dir = tmp.path().join("client");
        client(&floor_dir, &dir).unwrap();
        let manifest: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let deps = manifest["dependencies"].as_table().unwrap();
        let names: Vec<&str> = deps.keys().map(String::as_str).collect();
        assert_eq!(names, CLIENT);
        let features = |dep: &str| -> Vec<String> {
            deps[dep]["features"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        };
        assert_eq!(features("kube"), ["client", "derive"]);
        assert_eq!(features("tokio"), ["macros", "rt-multi-thread"]);
        assert_eq!(features("k8s-openapi"), ["v1_37"]);
        assert_eq!(manifest["package"]["name"].as_str(), Some("client-floor"));
        assert!(dir.join("Cargo.lock").is_file());

        std::fs::write(
            floor_dir.join("Cargo.toml"),
            "[package]\nname = \"floor\"\n\n[dependencies]\nkube = { version = \"5\" }\n",
        )
        .unwrap();
        let err = client(&floor_dir, &dir).unwrap_err();
        assert!(format!("{err:#}").contains("no dependency"), "{err:#}");
    }
}
