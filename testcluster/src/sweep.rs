//! The data directories of control planes: one made for each run, kept when
//! asked, and the stale ones of processes that have exited swept.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::process;

/// Prefix of temporary data directories.
const TEMP_PREFIX: &str = "sample-controller-rs-";

/// A new data directory, `TEMP_PREFIX{pid}-{random}` in the system's
/// temporary directory, readable by its owner only (tempfile's default); the
/// pid in its name lets a later run sweep it once this process is gone.
pub(crate) fn create_temp_dir() -> Result<PathBuf> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .tempdir()
        .context("creating a temporary directory")?;
    Ok(dir.keep())
}

/// Whether `TESTCLUSTER_KEEP` asks to keep every data directory.
pub(crate) fn keep_requested() -> bool {
    std::env::var_os("TESTCLUSTER_KEEP").is_some_and(|v| !v.is_empty())
}

/// The file that marks a data directory as kept on purpose: [`sweep_stale_data_dirs`]
/// leaves it.
pub const KEPT_MARKER: &str = ".kept";

pub(crate) fn mark_kept(dir: &Path) {
    let _ = fs::write(dir.join(KEPT_MARKER), b"");
}

/// Cleans up after the processes that are gone, in `base` (`$TMPDIR` when a control plane
/// starts): stops any process they recorded that is still running (normally the death
/// signal already did) and removes their data directories, except those marked kept
/// ([`KEPT_MARKER`]: a failed test's logs, or `TESTCLUSTER_KEEP`). A directory's owner is
/// the process recorded in its `pids.json`, else the PID in its name.
pub fn sweep_stale_data_dirs(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let Some(name_owner) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let (owner, processes) = match process::read_record(&dir) {
            Ok(Some(record)) => record,
            Ok(None) => (name_owner, Vec::new()),
            Err(_) => continue,
        };
        if process::pid_exists(owner) {
            continue;
        }
        process::stop_recorded(&processes, process::STOP_GRACE);
        if !dir.join(KEPT_MARKER).exists() {
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

/// The data directory of a run: `dir` if given, else a new temporary one
/// (stale ones of exited processes swept first); whether it is temporary.
pub(crate) fn data_dir(dir: Option<&Path>) -> Result<(PathBuf, bool)> {
    Ok(match dir {
        Some(dir) => {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            (dir.to_path_buf(), false)
        }
        None => {
            sweep_stale_data_dirs(&std::env::temp_dir());
            let dir = create_temp_dir()?;
            // Marked now, not when dropped: a control plane kept in a static
            // (never dropped) is kept too.
            if keep_requested() {
                mark_kept(&dir);
            }
            (dir, true)
        }
    })
}
