//! A copy of the repository inside its target directory, for the tests that
//! build a changed step or starter beside the reference (wrong solutions,
//! finished starters): the dependencies are this repository's builds, only
//! the changed crates compile.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workshop/ is in the repository")
        .to_path_buf()
}

/// The target directory this test was built in (`…/target/debug/deps/wrong_solutions-…`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("this test binary");
    exe.ancestors()
        .nth(3)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// A copy of the repository's files (tracked, or new and not ignored) in
/// `target/NAME/src`, with each `(from, to)` of `renames` made in every
/// Cargo.toml (so that its binaries build beside the reference's without
/// overwriting them).
pub fn copy_of_the_repository(name: &str, renames: &[(&str, &str)]) -> PathBuf {
    let root = workspace();
    let copy = target_dir().join(name).join("src");
    let _ = std::fs::remove_dir_all(&copy);
    let files = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(&root)
        .output()
        .expect("git ls-files");
    assert!(files.status.success());
    for file in files.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let file = Path::new(std::str::from_utf8(file).expect("a UTF-8 path"));
        let from = root.join(file);
        if !from.is_file() {
            continue; // deleted in the working tree
        }
        let to = copy.join(file);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        if file.file_name().is_some_and(|n| n == "Cargo.toml") {
            let mut text = std::fs::read_to_string(&from).expect("read Cargo.toml");
            for (from, to) in renames {
                text = text.replace(from, to);
            }
            std::fs::write(&to, text).expect("write Cargo.toml");
        } else {
            std::fs::copy(&from, &to).expect("copy");
        }
    }
    copy
}
