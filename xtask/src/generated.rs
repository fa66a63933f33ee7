//! Files the tooling writes from the project's sources (the README's and
//! the teacher notes' tables, the starters, the workshop's manifest): write
//! one, or with `--check` only say whether it is what it would write.

use anyhow::{Context, Result};

/// Writes `path` (from the repository root) as `make` turns what it holds
/// (empty if it does not exist yet), or with `check` only compares. Returns
/// `path` if it is stale.
pub fn write(
    path: &str,
    check: bool,
    make: impl Fn(&str) -> Result<String>,
) -> Result<Option<String>> {
    let full = crate::workspace::repo_root().join(path);
    let committed = match std::fs::read_to_string(&full) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", full.display())),
    };
    let written = make(&committed).with_context(|| path.to_string())?;
    if written == committed {
        println!("    {path}: current");
        Ok(None)
    } else if check {
        println!("    {path}: STALE");
        Ok(Some(path.to_string()))
    } else {
        std::fs::write(&full, written).with_context(|| format!("writing {}", full.display()))?;
        println!("    {path}: written");
        Ok(None)
    }
}
