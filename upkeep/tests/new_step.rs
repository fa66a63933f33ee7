//! Adding a step is one folder, its chapter and its SUMMARY.md line, then
//! `cargo xtask steps` (which writes the README's row and the workshop's
//! files from the folder): nothing else lists the steps. Proved on
//! a copy of the repository with a throwaway step 9 made from step 3's
//! folder (a step with a check, a starter and a flow recording), which must come out built, registered, tested, captured,
//! checked and offered by the workshop, by the same commands a contributor
//! runs (CONTRIBUTING.md, "Adding a step").
//!
//! The copy builds with this repository's intermediate artifacts
//! (`CARGO_BUILD_BUILD_DIR`, so the dependencies are not compiled again)
//! and its own target directory (`CARGO_TARGET_DIR`, so none of this
//! repository's binaries is replaced by the copy's); its packages have a
//! version of their own, so none of this repository's libraries or build
//! script outputs is either.

#[path = "../../workshop/tests/copy/mod.rs"]
mod copy;

use std::path::{Path, PathBuf};
use std::process::Output;

use copy::{copy_of_the_repository, target_dir};

/// The step the throwaway is made from, and its number.
const TEMPLATE: u8 = 3;
const NEW: u8 = 9;

/// `text` with every name of the template step turned into the new one's:
/// `step-3` (binary, package, files, chapter), `step3` (modules,
/// namespaces), `step_3` and `STEP_3` (functions, constants), `Step 3` and
/// `step 3` (prose, `todo!` messages), `step: 3` (the starter's spec).
fn renamed(text: &str) -> String {
    let (t, n) = (TEMPLATE, NEW);
    [
        (format!("step-{t}"), format!("step-{n}")),
        (format!("step{t}"), format!("step{n}")),
        (format!("step_{t}"), format!("step_{n}")),
        (format!("STEP_{t}"), format!("STEP_{n}")),
        (format!("Step {t}"), format!("Step {n}")),
        (format!("step {t}"), format!("step {n}")),
        (format!("step: {t},"), format!("step: {n},")),
    ]
    .iter()
    .fold(text.to_string(), |text, (from, to)| text.replace(from, to))
}

/// Copies the folder `from` to `to`, each file [`renamed`].
fn copy_renamed(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("the template folder") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().expect("a name").to_string_lossy();
        let target = to.join(renamed(&name));
        if path.is_dir() {
            copy_renamed(&path, &target);
        } else {
            let text = std::fs::read_to_string(&path).expect("a text file");
            std::fs::write(&target, renamed(&text)).expect("write");
        }
    }
}

/// Sets the top-level `key` of the TOML `file` (in `copy`) to the string
/// `value`, the rest of the file as it was (a step.toml's `[[branch]]`
/// tables have keys of the same names, and stay).
fn set_key(copy: &Path, file: &str, key: &str, value: &str) {
    let path = copy.join(file);
    let text = std::fs::read_to_string(&path).expect(file);
    let mut doc: toml_edit::DocumentMut = text.parse().expect(file);
    assert!(doc.contains_key(key), "{file}: no top-level {key}");
    doc[key] = toml_edit::value(value);
    std::fs::write(&path, doc.to_string()).expect(file);
}

/// Inserts `line` into `file` (in `copy`) after the line containing `after`.
fn insert_after(copy: &Path, file: &str, after: &str, line: &str) {
    let path = copy.join(file);
    let text = std::fs::read_to_string(&path).expect(file);
    let at = text
        .lines()
        .position(|l| l.contains(after))
        .unwrap_or_else(|| panic!("{file}: no line with {after:?}"));
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(at + 1, line);
    std::fs::write(&path, lines.join("\n") + "\n").expect(file);
}

/// What a contributor adds for step 9: its folder (step 3's, renamed; it
/// needs step 8's permissions, as each step needs what the one before
/// did), its chapter, and its line in SUMMARY.md.
fn add_step_9(copy: &Path) {
    let (t, n) = (TEMPLATE, NEW);
    copy_renamed(
        &copy.join(format!("steps/step-{t}")),
        &copy.join(format!("steps/step-{n}")),
    );
    let title = format!("a throwaway copy of step {t}");
    let go = "`AddFunc`, again";
    let toml = format!("steps/step-{n}/step.toml");
    set_key(copy, &toml, "title", &title);
    set_key(copy, &toml, "go", go);
    set_key(copy, &toml, "permissions", "SERVER_SIDE_APPLY");
    let chapter = std::fs::read_to_string(copy.join(format!("book/src/step-{t}.md")))
        .expect("the template's chapter");
    std::fs::write(
        copy.join(format!("book/src/step-{n}.md")),
        renamed(&chapter),
    )
    .expect("the chapter");
    insert_after(
        copy,
        "book/src/SUMMARY.md",
        "(step-8.md)",
        &format!("- [Step {n}: A throwaway copy of step {t}](step-{n}.md)"),
    );
}

/// `cargo ARGS` in the copy, with this repository's intermediate artifacts
/// and the copy's own target directory; panics unless it exits as
/// `success` says, printing what it printed.
fn cargo(copy: &Path, args: &[&str], success: bool) -> Output {
    let command = course::cargo::command(copy, args)
        .env("CARGO_BUILD_BUILD_DIR", target_dir())
        .env("CARGO_TARGET_DIR", copy_target(copy));
    println!("==> {command}");
    let output = command.std().output().expect("cargo runs");
    let printed = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        output.status.success(),
        success,
        "{command} exited with {}:\n{printed}",
        output.status
    );
    output
}

/// The copy's own target directory, beside its sources.
fn copy_target(copy: &Path) -> PathBuf {
    copy.parent().expect("target/new-step").join("target")
}

/// `cargo xtask ARGS` in the copy: its own xtask, as [`cargo`] runs it.
fn xtask(copy: &Path, args: &[&str], success: bool) -> Output {
    let all: Vec<&str> = ["run", "-q", "-p", "xtask", "--"]
        .iter()
        .chain(args)
        .copied()
        .collect();
    cargo(copy, &all, success)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_step_folder_is_built_registered_tested_captured_checked_and_offered_by_the_workshop()
{
    // Its own version of every package of the workspace: cargo names a
    // workspace package's artifacts (and its build script's OUT_DIR) by its
    // name, version and path inside the workspace, so the copy's would
    // otherwise replace this repository's in the shared build directory,
    // under the tests still running.
    let copy = copy_of_the_repository(
        "new-step",
        &[("version = \"0.1.0\"", "version = \"0.1.0-new-step\"")],
    );
    let _ = std::fs::remove_dir_all(copy_target(&copy));
    add_step_9(&copy);
    let n = NEW;

    // Built: `cargo run --bin step-9` works from the root.
    cargo(&copy, &["build", "--bin", &format!("step-{n}")], true);
    assert!(copy_target(&copy).join(format!("debug/step-{n}")).is_file());

    // What the folder makes, written: the README's row, and, offered by
    // the workshop, its starter and its [[bin]].
    xtask(&copy, &["steps", "--check"], false);
    xtask(&copy, &["steps"], true);
    let readme = std::fs::read_to_string(copy.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!(
            "| {n} | `cargo run --bin step-{n}` | a throwaway copy of step {TEMPLATE} | `AddFunc`, again |\n"
        )),
        "{readme}"
    );
    let starter = std::fs::read_to_string(copy.join(format!("workshop/step-{n}.rs")))
        .expect("the starter was written");
    assert!(starter.contains("WRITE THIS"), "{starter}");
    let manifest = std::fs::read_to_string(copy.join("workshop/Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "name = \"workshop-step-{n}\"\npath = \"step-{n}.rs\""
        )),
        "{manifest}"
    );

    // Seen by the Chinese edition: its chapter and its rows in the
    // workshop's tables have no translation yet, and the edition's check
    // says so until a translator adds them (or lists the pages in
    // book/po/zh-CN.toml's `incomplete`).
    let po = xtask(&copy, &["book", "po"], true);
    for page in [format!("step-{n}.md"), "workshop.md".to_string()] {
        assert!(
            stdout(&po).contains(&format!("zh-CN: {page} must be complete")),
            "{}",
            stdout(&po)
        );
    }

    // Captured: its chapter's run, by its capture.rs.
    let file = format!("step-{n}.txt");
    xtask(&copy, &["book", "outputs", &file], true);
    let capture = std::fs::read_to_string(copy.join("book/src/outputs").join(&file))
        .expect("the capture was written");
    assert!(
        capture.contains(&format!("$ cargo run --bin step-{n}")) && capture.contains("Foo added"),
        "{capture}"
    );
    // With its flow recording, which shows what its step.toml says.
    assert!(
        copy.join(format!("book/src/outputs/flow/step-{n}.jsonl"))
            .is_file()
    );

    // Registered, and complete: binary, chapter, SUMMARY line, README row,
    // capture, starter and its [[bin]], check.
    cargo(
        &copy,
        &["test", "-q", "-p", "course", "--test", "registry"],
        true,
    );
    // Tested: tests/steps.rs has a test for its check.
    let list = cargo(
        &copy,
        &["test", "-q", "--test", "steps", "--", "--list"],
        true,
    );
    assert!(
        stdout(&list).contains(&format!("step_{n}_passes_its_check: test")),
        "{}",
        stdout(&list)
    );

    // Checked: the step passes its check, the untouched starter fails it
    // at its todo!() as its untouched.txt says.
    let untouched = std::fs::read_to_string(copy.join(format!("steps/step-{n}/untouched.txt")))
        .expect("its untouched.txt");
    let untouched: Vec<&str> = untouched.lines().filter(|l| !l.starts_with('#')).collect();
    let cp = testcluster::shared().await.expect("control plane");
    let kubeconfig = cp.kubeconfig_path().to_str().expect("a UTF-8 path");
    let step = format!("step-{n}");
    let reference = xtask(
        &copy,
        &["check", &step, "--reference", "--kubeconfig", kubeconfig],
        true,
    );
    assert!(
        stdout(&reference).contains(&format!(
            "step-{n}: {all} of {all} behaviours pass",
            all = untouched.len()
        )),
        "{}",
        stdout(&reference)
    );
    let starter = xtask(&copy, &["check", &step, "--kubeconfig", kubeconfig], false);
    let failed = untouched[0]
        .strip_prefix(&format!("step-{n} FAIL "))
        .expect("the first behaviour fails");
    assert!(stdout(&starter).contains(failed), "{}", stdout(&starter));

    // Nothing of it stays: the copy, and its final artifacts (hard links
    // to the shared intermediate ones).
    std::fs::remove_dir_all(copy.parent().expect("target/new-step")).expect("remove the copy");
}
