//! Declares, for every step folder, the files of it that are part of
//! xtask: `steps/step-N/starter.rs` as module `workshop::specs::stepN` (the
//! spec of its workshop starter) and `steps/step-N/capture.rs` as module
//! `book::scenarios::stepN` (its chapter's capture scenario). A step's
//! files are compiled in because its folder has them; nothing lists steps.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let steps = Path::new(env!("CARGO_MANIFEST_DIR")).join("../steps");
    println!("cargo::rerun-if-changed={}", steps.display());
    // Per step number, its folder (absolute).
    let mut folders = BTreeMap::new();
    let entries = std::fs::read_dir(&steps)
        .unwrap_or_else(|err| panic!("reading {}: {err}", steps.display()));
    for entry in entries {
        let folder = entry.expect("a directory entry").path();
        let name = folder.file_name().unwrap_or_default().to_string_lossy();
        let Some(number) = name.strip_prefix("step-").filter(|_| folder.is_dir()) else {
            continue;
        };
        let number: u8 = number
            .parse()
            .unwrap_or_else(|_| panic!("{}: a step folder is steps/step-N", folder.display()));
        let folder = folder.canonicalize().expect("a step folder's path");
        folders.insert(number, folder);
    }
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");

    let mut specs = String::new();
    let mut list = String::from("/// Every starter, by step.\npub const SPECS: &[Spec] = &[\n");
    for (number, folder) in &folders {
        let file = folder.join("starter.rs");
        if file.is_file() {
            let path = file.to_str().expect("a UTF-8 path");
            writeln!(
                specs,
                "#[path = {path:?}]\nmod step{number};\n\
                 const _: () = assert!(step{number}::SPEC.step == {number}, \
                 \"steps/step-{number}/starter.rs: its SPEC's step must be {number}\");"
            )
            .expect("a String");
            writeln!(list, "    step{number}::SPEC,").expect("a String");
        }
    }
    specs.push_str(&list);
    specs.push_str("];\n");
    std::fs::write(Path::new(&out_dir).join("specs.rs"), specs).expect("writing specs.rs");

    let mut captures = String::new();
    let mut list = String::from(
        "/// Every step's capture scenario, by step number.\n\
         pub(in crate::book) const STEP_CAPTURES: &[(u8, StepCapture)] = &[\n",
    );
    for (number, folder) in &folders {
        let file = folder.join("capture.rs");
        if file.is_file() {
            let path = file.to_str().expect("a UTF-8 path");
            writeln!(captures, "#[path = {path:?}]\nmod step{number};").expect("a String");
            writeln!(
                list,
                "    ({number}, |env| Box::pin(step{number}::capture(env))),"
            )
            .expect("a String");
        }
    }
    captures.push_str(&list);
    captures.push_str("];\n");
    std::fs::write(Path::new(&out_dir).join("captures.rs"), captures).expect("writing captures.rs");
}
