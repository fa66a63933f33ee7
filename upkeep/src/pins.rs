//! A crate two packages use is pinned once: in the root `Cargo.toml`'s
//! `[workspace.dependencies]`, each package naming it `workspace = true`.
//! Its test reads every workspace package's manifest (`cargo metadata`
//! lists them) as TOML.

use std::collections::BTreeMap;

/// Each crate that two or more of `manifests` (path, text) depend on
/// without `workspace = true`, with where.
fn pinned_twice(manifests: &[(String, String)]) -> anyhow::Result<Vec<String>> {
    let mut uses: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
    for (path, text) in manifests {
        let manifest: toml::Table = toml::from_str(text)?;
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(dependencies) = manifest.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for (name, spec) in dependencies {
                let inherited = spec.get("workspace").and_then(|w| w.as_bool()) == Some(true);
                uses.entry(name.clone())
                    .or_default()
                    .push((format!("{path} [{section}]"), inherited));
            }
        }
    }
    Ok(uses
        .into_iter()
        .filter(|(_, places)| places.len() > 1 && places.iter().any(|(_, inherited)| !inherited))
        .map(|(name, places)| {
            let own: Vec<&str> = places
                .iter()
                .filter(|(_, inherited)| !inherited)
                .map(|(place, _)| place.as_str())
                .collect();
            format!(
                "{name}: pinned in {} (use {name}.workspace = true)",
                own.join(", ")
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crate_two_packages_use_is_pinned_once_in_the_workspace() {
        let manifests: Vec<(String, String)> =
            course::workspace::packages(&course::workspace::repo_root())
                .unwrap()
                .iter()
                .map(|package| {
                    let path = package.manifest_path.as_std_path();
                    (
                        course::workspace::rel(path),
                        std::fs::read_to_string(path).unwrap(),
                    )
                })
                .collect();
        assert!(manifests.len() > 8, "{} manifests", manifests.len());
        assert_eq!(pinned_twice(&manifests).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_crate_two_packages_pin_each_on_their_own_is_named_with_where() {
        let manifests = [
            (
                "a/Cargo.toml",
                "[dependencies]\nregex = \"1\"\nserde.workspace = true\n",
            ),
            (
                "b/Cargo.toml",
                "[dev-dependencies]\nregex = { version = \"1\" }\n",
            ),
            (
                "c/Cargo.toml",
                "[dependencies]\nserde = { workspace = true }\n",
            ),
        ]
        .map(|(path, text)| (path.to_string(), text.to_string()));
        assert_eq!(
            pinned_twice(&manifests).unwrap(),
            [
                "regex: pinned in a/Cargo.toml [dependencies], b/Cargo.toml [dev-dependencies] (use regex.workspace = true)"
            ]
        );
    }
}
