//! Finding the pinned Go modules in Go's module cache, and reading their files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result, ensure};

use super::scan::GoFile;
use super::{GO_MODULE, tag};

/// The pinned module's directory in Go's module cache.
pub fn module_dir() -> Result<PathBuf> {
    module_dir_of(GO_MODULE, tag())
}

/// The directory of `module@version` in Go's module cache, downloaded if it
/// is not there yet; remembered in `target/book-gosource/`.
pub(super) fn module_dir_of(module: &str, version: &str) -> Result<PathBuf> {
    static DIRS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let module = format!("{module}@{version}");
    let dirs = DIRS.get_or_init(Default::default);
    if let Some(dir) = dirs.lock().unwrap_or_else(|e| e.into_inner()).get(&module) {
        return Ok(dir.clone());
    }
    let dir = find_module_dir(&module)?;
    dirs.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(module, dir.clone());
    Ok(dir)
}

pub(super) fn find_module_dir(module: &str) -> Result<PathBuf> {
    let cache = course::workspace::repo_root()
        .join("target/book-gosource")
        .join(format!("{}.dir", module.replace('/', "+")));
    if let Ok(text) = std::fs::read_to_string(&cache) {
        let dir = PathBuf::from(text.trim());
        if dir.join("go.mod").is_file() {
            return Ok(dir);
        }
    }
    // Outside any module, so that no go.mod or go.work around us is consulted.
    let scratch = tempfile::Builder::new()
        .prefix("book-gosource-")
        .tempdir()
        .context("creating a scratch directory")?;
    let downloaded = testcluster::binaries::go_mod_download(module, scratch.path());
    drop(scratch);
    let dir = downloaded
        .context(
            "the book's Go excerpts and links read the Go source from Go's module cache \
             (Go ≥ 1.26 on the PATH)",
        )?
        .dir;
    ensure!(
        dir.join("go.mod").is_file(),
        "{} has no go.mod",
        dir.display()
    );
    if let Some(parent) = cache.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&cache, format!("{}\n", dir.display()))?;
    Ok(dir)
}

/// A Go file of the pinned sample-controller, parsed once per process.
pub(super) fn go_file(path: &str) -> Result<Arc<GoFile>> {
    ensure!(
        path.ends_with(".go"),
        "{path:?} is not a .go file of {GO_MODULE}"
    );
    source_file(GO_MODULE, tag(), path)
}

/// A file of `module@version` (Go or not), read once per process.
pub(super) fn source_file(module: &str, version: &str, path: &str) -> Result<Arc<GoFile>> {
    static FILES: OnceLock<Mutex<HashMap<String, Arc<GoFile>>>> = OnceLock::new();
    let key = format!("{module}@{version}/{path}");
    let files = FILES.get_or_init(Default::default);
    if let Some(file) = files.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(file.clone());
    }
    ensure!(
        !path.split('/').any(|p| p == ".." || p.is_empty()),
        "{path:?} is not a path inside {module}"
    );
    let full = module_dir_of(module, version)?.join(path);
    let text = std::fs::read_to_string(&full)
        .with_context(|| format!("{module}@{version} has no file {path}"))?;
    let file = Arc::new(GoFile::parse(path, &text)?);
    files
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, file.clone());
    Ok(file)
}
