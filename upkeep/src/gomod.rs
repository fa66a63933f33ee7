//! A go.mod read and edited by Go itself (`go mod edit -json`, `go mod
//! edit -droprequire`, `-dropreplace`, `-replace`), never line by line: both
//! forms of a directive, blocks and single lines, are Go's to tell apart.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};

/// A go.mod as `go mod edit -json` prints it: the parts read here.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct GoMod {
    /// Its `require` directives.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub require: Vec<Require>,
    /// Its `replace` directives.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub replace: Vec<Replace>,
}

/// A list Go prints as `null` when the go.mod has none.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    use serde::Deserialize as _;
    Option::<Vec<T>>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// One `require PATH VERSION`.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Require {
    /// The module required.
    pub path: String,
}

/// One `replace OLD => NEW`.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Replace {
    /// The module replaced.
    pub old: ModulePath,
    /// What replaces it: a module at a version, or a directory.
    pub new: ModulePath,
}

/// A module path, or a directory (`./staging/src/k8s.io/api`).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ModulePath {
    /// The path.
    pub path: String,
}

/// The go.mod at `path`, as Go reads it.
pub fn read(path: &Path) -> Result<GoMod> {
    let out = Command::new("go")
        .args(["mod", "edit", "-json"])
        .arg(path)
        .output()
        .with_context(|| format!("running go mod edit -json {}", path.display()))?;
    ensure!(
        out.status.success(),
        "go mod edit -json {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    serde_json::from_slice(&out.stdout)
        .with_context(|| format!("reading go mod edit -json {}", path.display()))
}

/// `go mod edit FLAGS…` on the go.mod at `path` (nothing when `flags` is
/// empty).
pub fn edit(path: &Path, flags: &[String]) -> Result<()> {
    if flags.is_empty() {
        return Ok(());
    }
    let out = Command::new("go")
        .args(["mod", "edit"])
        .args(flags)
        .arg(path)
        .output()
        .with_context(|| format!("running go mod edit on {}", path.display()))?;
    ensure!(
        out.status.success(),
        "go mod edit {} {}: {}",
        flags.join(" "),
        path.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// The go.mod at `path` without its requirements: its module, go version,
/// replacements and tools stay.
pub fn drop_requirements(path: &Path) -> Result<()> {
    let flags: Vec<String> = read(path)?
        .require
        .iter()
        .map(|r| format!("-droprequire={}", r.path))
        .collect();
    edit(path, &flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_go_in_both_forms_and_the_rest_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("go.mod");
        std::fs::write(
            &path,
            "module m\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v1.37.1\n\n\
             require (\n\tgithub.com/x/y v1.0.0 // indirect\n\tgithub.com/x/z v1.0.0\n)\n\n\
             replace k8s.io/api => k8s.io/api v0.37.1\n\ntool k8s.io/kubernetes/cmd/kubectl\n",
        )
        .unwrap();
        assert_eq!(read(&path).unwrap().require.len(), 3);
        drop_requirements(&path).unwrap();
        let left = read(&path).unwrap();
        assert!(left.require.is_empty(), "{left:?}");
        assert_eq!(left.replace.len(), 1);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("module m\n"), "{text}");
        assert!(
            text.contains("tool k8s.io/kubernetes/cmd/kubectl"),
            "{text}"
        );
    }

    #[test]
    fn a_go_mod_go_cannot_read_is_an_error_with_gos_words() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("go.mod");
        std::fs::write(&path, "module x\nreplace (\n").unwrap();
        let err = format!("{:#}", read(&path).unwrap_err());
        assert!(err.contains("go mod edit -json"), "{err}");
        assert!(err.contains("go.mod:"), "{err}");
    }
}
