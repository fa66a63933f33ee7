//! `cargo xtask bump-kubernetes VERSION`: moves the course to another
//! Kubernetes release.
//!
//! What a machine can do, it does: `versions.toml`, the Go wrapper modules
//! the control plane and the parity build come from (`controlplane/`), the
//! k8s-openapi feature of every package. What it cannot, it lists: every
//! passage of the book whose Go source is not the same at the new release
//! (the names still resolve, or they fail the book's build; the words around
//! them need a person). The control plane is rebuilt by the next `cargo xtask
//! test` (its cache directory is named by version), and
//! `cargo test -p testcluster --test versions` names whatever still says the
//! old version (the captures: `cargo xtask book outputs`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use clap::Args;

use booktool::gosource::changed_passages;
use testcluster::binaries::Release;

use crate::gomod::{self, GoMod};

/// `cargo xtask bump-kubernetes`.
#[derive(Args, Debug)]
pub struct BumpArgs {
    /// The Kubernetes release to move to: `1.MINOR.PATCH`.
    version: String,
    /// Also move etcd (the control plane's) to this version: the one the
    /// new release's `hack/lib/etcd.sh` names.
    #[arg(long)]
    etcd: Option<String>,
    /// Only list the book's passages whose Go source changed; change nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Lists the passages to re-read, then (without `--dry-run`) moves the pins.
pub fn bump(args: BumpArgs) -> Result<()> {
    let from = Release::pinned();
    let to = Release::of(&args.version)?;
    ensure!(from != to, "the course is on {} already", from.kubernetes);
    println!("==> The Go modules the book reads, at both releases");
    booktool::gosource::require_modules(&[&from, &to])?;
    println!(
        "==> The book's Go excerpts and links whose source differs between {} and {}",
        from.staging, to.staging
    );
    let changed = changed_passages(&from, &to)?;
    for passage in &changed {
        println!("    {passage}");
    }
    println!(
        "    {} passages to re-read (the words around them may no longer be true)",
        changed.len()
    );
    if args.dry_run {
        return Ok(());
    }

    let root = course::workspace::repo_root();
    let etcd_from = testcluster::binaries::ETCD_VERSION;
    move_modules(&root, &to, args.etcd.as_deref())?;
    move_openapi_features(&root, &from, &to)?;
    let mut moves = vec![
        (from.staging.clone(), to.staging.clone()),
        (from.kubernetes.clone(), to.kubernetes.clone()),
    ];
    if let Some(etcd) = &args.etcd {
        moves.push((
            format!("v{etcd_from}"),
            format!("v{}", etcd.trim_start_matches('v')),
        ));
    }
    move_versions(&root, &moves)?;
    println!(
        "==> Next: cargo build (k8s-openapi's types may have changed), cargo xtask test \
         (builds the {} control plane), cargo test -p testcluster --test versions (what still \
         names {}), cargo xtask book outputs (the captures), and re-read the {} passages above",
        to.kubernetes,
        from.kubernetes,
        changed.len()
    );
    Ok(())
}

/// versions.toml and the Go wrapper modules moved to `to` (and etcd to
/// `etcd`, if given).
fn move_modules(root: &Path, to: &Release, etcd: Option<&str>) -> Result<()> {
    println!("==> versions.toml");
    set_version(&root.join("versions.toml"), "kubernetes", &to.kubernetes)?;
    if let Some(etcd) = etcd {
        set_version(&root.join("versions.toml"), "etcd", etcd)?;
    }

    println!(
        "==> controlplane/kubernetes: k8s.io/kubernetes {}",
        to.kubernetes
    );
    kubernetes_module(&root.join("controlplane/kubernetes"), to)?;
    println!(
        "==> controlplane/sample-controller: k8s.io/sample-controller {}",
        to.staging
    );
    go(
        &root.join("controlplane/sample-controller"),
        &["get", &format!("k8s.io/sample-controller@{}", to.staging)],
    )?;
    go(
        &root.join("controlplane/sample-controller"),
        &["mod", "tidy"],
    )?;
    if let Some(etcd) = etcd {
        println!("==> controlplane/etcd: go.etcd.io/etcd/server/v3 v{etcd}");
        let etcd_dir = root.join("controlplane/etcd");
        go(
            &etcd_dir,
            &["get", &format!("go.etcd.io/etcd/server/v3@v{etcd}")],
        )?;
        go(&etcd_dir, &["mod", "tidy"])?;
    }

    Ok(())
}

/// The k8s-openapi feature (`v1_MINOR`) of every manifest, moved from
/// `from`'s to `to`'s when the minor changes.
fn move_openapi_features(root: &Path, from: &Release, to: &Release) -> Result<()> {
    let feature = |release: &Release| {
        let minor = release.staging.trim_start_matches("v0.");
        format!("v1_{}", minor.split('.').next().unwrap_or_default())
    };
    let (old_feature, new_feature) = (feature(from), feature(to));
    if old_feature != new_feature {
        println!("==> k8s-openapi feature {old_feature} -> {new_feature}");
        for manifest in pinned_files(root)?
            .into_iter()
            .filter(|f| f.ends_with("Cargo.toml"))
        {
            let path = root.join(&manifest);
            let text = std::fs::read_to_string(&path)?;
            let moved = move_openapi_feature(&text, &old_feature, &new_feature)
                .with_context(|| format!("reading {manifest}"))?;
            if moved != text {
                std::fs::write(&path, moved)?;
                println!("    {manifest}");
            }
        }
    }
    Ok(())
}

/// Every other file that names an old version of `moves` (not the
/// captures: they are re-run).
fn move_versions(root: &Path, moves: &[(String, String)]) -> Result<()> {
    println!(
        "==> Every other file that names the old versions (not the captures: they are re-run)"
    );
    for file in pinned_files(root)? {
        let path = root.join(&file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let moved = moves.iter().fold(text.clone(), |text, (old, new)| {
            move_version(&text, old, new)
        });
        if moved != text {
            std::fs::write(&path, moved)?;
            println!("    {file}");
        }
    }
    Ok(())
}

/// The tracked files whose versions this command moves: all but the
/// captures (re-run, not edited: `cargo xtask book outputs`), versions.toml
/// (set above), the wrapper modules (`go get` moved them), the lock files,
/// and the versions test, whose examples name versions on purpose.
fn pinned_files(root: &Path) -> Result<Vec<String>> {
    let out = Command::new("git")
        .args(["ls-files"])
        .current_dir(root)
        .output()
        .context("running git ls-files")?;
    ensure!(out.status.success(), "git ls-files failed");
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|f| {
            !(f.starts_with("book/src/outputs/")
                || f.starts_with("controlplane/") && !f.ends_with(".md")
                || f.ends_with(".lock")
                || f.ends_with("go.sum")
                || *f == "versions.toml"
                || *f == "testcluster/tests/versions.rs")
        })
        .map(str::to_string)
        .collect())
}

/// `text` with version `old` (`v0.37.1`; also without its `v`) replaced by
/// `new` wherever it stands alone: not inside a longer version
/// (`v10.36.3`, `1.36.30`) or a word.
fn move_version(text: &str, old: &str, new: &str) -> String {
    let bare = |v: &str| v.trim_start_matches('v').to_string();
    let (old_bare, new_bare) = (bare(old), bare(new));
    let pattern = regex::Regex::new(&format!(r"(^|[^\w.])(v?){}\b", regex::escape(&old_bare)))
        .expect("a valid pattern");
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in pattern.captures_iter(text) {
        let whole = m.get(0).expect("a match");
        // `1.36.3.4` is another version.
        if text[whole.end()..].starts_with('.')
            && text[whole.end() + 1..].starts_with(|c: char| c.is_ascii_digit())
        {
            continue;
        }
        out.push_str(&text[last..whole.start()]);
        out.push_str(&m[1]);
        out.push_str(&m[2]);
        out.push_str(&new_bare);
        last = whole.end();
    }
    out.push_str(&text[last..]);
    out
}

/// `key = "value"` in versions.toml set to `version` (without its `v`),
/// its comments and layout kept.
fn set_version(path: &Path, key: &str, version: &str) -> Result<()> {
    let text = std::fs::read_to_string(path)?;
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        doc.contains_key(key),
        "{} has no `{key} = …`",
        path.display()
    );
    let version = version.trim_start_matches('v');
    doc[key] = toml_edit::value(version);
    std::fs::write(path, doc.to_string())?;
    println!("    {key} = \"{version}\"");
    Ok(())
}

/// A Cargo manifest with the feature `old` of every k8s-openapi dependency
/// (in any dependency table, the workspace's included) replaced by `new`,
/// everything else as it was.
fn move_openapi_feature(manifest: &str, old: &str, new: &str) -> Result<String> {
    let mut doc: toml_edit::DocumentMut = manifest.parse()?;
    let tables = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut dependencies: Vec<&mut toml_edit::Item> = Vec::new();
    for (name, item) in doc.iter_mut() {
        match name.get() {
            "workspace" => dependencies.extend(
                item.as_table_like_mut()
                    .and_then(|workspace| workspace.get_mut("dependencies")),
            ),
            name if tables.contains(&name) => dependencies.push(item),
            _ => {}
        }
    }
    // `as_table_like_mut` and its `get_mut` only read: indexing an `Item`
    // would add the keys it looks for.
    for table in dependencies {
        let features = table
            .as_table_like_mut()
            .and_then(|table| table.get_mut("k8s-openapi"))
            .and_then(toml_edit::Item::as_table_like_mut)
            .and_then(|dependency| dependency.get_mut("features"))
            .and_then(toml_edit::Item::as_array_mut);
        for feature in features.into_iter().flat_map(toml_edit::Array::iter_mut) {
            if feature.as_str() == Some(old) {
                let decor = feature.decor().clone();
                *feature = new.into();
                *feature.decor_mut() = decor;
            }
        }
    }
    Ok(doc.to_string())
}

/// The Kubernetes wrapper module at `release`: every staging module the new
/// `k8s.io/kubernetes` replaces with `./staging/...` replaced here by its
/// published version (the list comes from that release's own go.mod, so a
/// staging module added or dropped upstream follows), then `go get` and
/// `go mod tidy`.
pub fn kubernetes_module(dir: &Path, release: &Release) -> Result<()> {
    let module = format!("k8s.io/kubernetes@{}", release.kubernetes);
    let go_mod = testcluster::binaries::go_mod_download(&module, &std::env::temp_dir())?.go_mod;
    let staging = staging_modules(&gomod::read(&go_mod)?);
    ensure!(
        !staging.is_empty(),
        "{module}'s go.mod replaces no staging module: not the layout this expects"
    );
    // The wrapper's k8s.io replaces dropped, then one per staging module at
    // the release's staging version: `go mod edit` writes go.mod itself.
    let wrapper = gomod::read(&dir.join("go.mod"))?;
    let mut edits: Vec<String> = wrapper
        .replace
        .iter()
        .filter(|r| r.old.path.starts_with("k8s.io/"))
        .map(|r| format!("-dropreplace={}", r.old.path))
        .collect();
    edits.extend(
        staging
            .iter()
            .map(|m| format!("-replace={m}={m}@{}", release.staging)),
    );
    gomod::edit(&dir.join("go.mod"), &edits)?;
    println!(
        "    {} staging modules replaced by {}",
        staging.len(),
        release.staging
    );
    go(dir, &["get", &module])?;
    go(dir, &["mod", "tidy"])
}

/// The modules a `k8s.io/kubernetes` go.mod replaces with its own
/// `./staging/src/...` directories.
fn staging_modules(go_mod: &GoMod) -> Vec<String> {
    go_mod
        .replace
        .iter()
        .filter(|r| r.new.path.starts_with("./staging/"))
        .map(|r| r.old.path.clone())
        .collect()
}

/// `go ARGS` in `dir`, failing with its output.
fn go(dir: &Path, args: &[&str]) -> Result<()> {
    println!("    go {} ({})", args.join(" "), dir.display());
    let status = Command::new("go")
        .args(args)
        .current_dir(dir)
        .status()
        .with_context(|| format!("running go {}", args.join(" ")))?;
    ensure!(
        status.success(),
        "go {} failed in {}",
        args.join(" "),
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_moves_where_it_stands_alone_with_or_without_its_v() {
        let text = "blob/v0.90.2/main.go, tool 1.90.2, `v0.90.2`.\nv0.90.2";
        assert_eq!(
            move_version(text, "v0.90.2", "v0.91.0"),
            "blob/v0.91.0/main.go, tool 1.90.2, `v0.91.0`.\nv0.91.0"
        );
        assert_eq!(
            move_version(text, "v1.90.2", "v1.91.0"),
            "blob/v0.90.2/main.go, tool 1.91.0, `v0.90.2`.\nv0.90.2"
        );
    }

    #[test]
    fn a_longer_version_or_a_word_is_not_moved() {
        for text in [
            "v10.90.2",
            "1.90.23",
            "1.90.2.4",
            "x1.90.2",
            "release-1.90.2x",
        ] {
            assert_eq!(move_version(text, "v1.90.2", "v1.91.0"), text, "{text}");
        }
    }

    #[test]
    fn the_staging_modules_are_read_from_both_replace_forms() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("go.mod");
        std::fs::write(
            &path,
            "module k8s.io/kubernetes\n\ngo 1.26.0\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\
             \tk8s.io/client-go => ./staging/src/k8s.io/client-go\n\tgithub.com/x/y => github.com/x/y v1.0.0\n)\n\
             replace k8s.io/kms => ./staging/src/k8s.io/kms\n",
        )
        .unwrap();
        assert_eq!(
            staging_modules(&gomod::read(&path).unwrap()),
            ["k8s.io/api", "k8s.io/client-go", "k8s.io/kms"]
        );
    }

    #[test]
    fn the_openapi_feature_moves_in_every_dependency_table_and_nothing_else_does() {
        let manifest = "[workspace.dependencies]\n\
            k8s-openapi = { version = \"0.29.0\", features = [\"v1_80\"] } # pinned\n\n\
            [dependencies]\n\
            other = { version = \"1\", features = [\"v1_80\"] }\n\n\
            [dev-dependencies.k8s-openapi]\n\
            version = \"0.29.0\"\n\
            features = [\"schemars\", \"v1_80\"]\n";
        let moved = move_openapi_feature(manifest, "v1_80", "v1_81").unwrap();
        assert_eq!(
            moved,
            manifest
                .replacen("[\"v1_80\"] } # pinned", "[\"v1_81\"] } # pinned", 1)
                .replace("\"schemars\", \"v1_80\"", "\"schemars\", \"v1_81\"")
        );
        assert!(move_openapi_feature("not = [toml", "a", "b").is_err());
    }

    #[test]
    fn a_version_is_set_in_versions_toml_and_a_missing_key_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let path = dir.join("versions.toml");
        // Releases far from any real one (the versions test reads this file).
        std::fs::write(&path, "# c\nkubernetes = \"1.80.0\"\netcd = \"9.9.9\"\n").unwrap();
        set_version(&path, "kubernetes", "v1.90.2").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "# c\nkubernetes = \"1.90.2\"\netcd = \"9.9.9\"\n");
        assert!(set_version(&path, "kwok", "0.9.0").is_err());
    }
}
