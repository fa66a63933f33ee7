//! `cargo xtask workshop`: writes the starters in `workshop/` from the steps.
//!
//! A starter is a step with its layer left as gaps. Nothing in it is typed
//! twice: the code it shares with a step is copied from that step (or from
//! the library file the step uses) every time the starters are generated, so
//! a change to a step reaches its starter, and `cargo xtask workshop --check`
//! (run by `cargo xtask test` through this module's test) fails while a
//! committed starter is not what its spec generates.
//!
//! What only a starter has is in its [`Spec`] (`specs.rs`): the header that
//! says what to write, each gap's instructions, the few edits that connect the
//! learner's functions, and, for the steps whose program is the library's
//! (7 and 8), the `main` that calls the learner's code. Each edit must match
//! exactly once, so a step that moves under it fails generation with the
//! edit's text rather than producing a starter that silently differs.

mod specs;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use crate::generated;

pub use specs::SPECS;

/// How a starter is made.
pub struct Spec {
    /// The step's number.
    pub step: u8,
    /// The header's first line: `Workshop starter, step 5: {title}.`
    pub title: &'static str,
    /// What the learner writes, for the header (Markdown-ish prose, wrapped).
    pub yours: &'static str,
    /// The chapter section the header sends the learner to.
    pub read: &'static str,
    /// Where the project's own answer is.
    pub answer: &'static str,
    /// The lints the gaps trip until they are filled.
    pub allow: &'static str,
    /// The chapter's includes (`FILE:ANCHOR`) that show the code of the
    /// gaps: the chapter collapses each into a `<details class="solution">`,
    /// so a learner sent there by a gap reads the prose, not the answer.
    pub solutions: &'static [&'static str],
    /// The starter's code, in order.
    pub pieces: &'static [Piece],
}

/// One part of a starter's code.
pub enum Piece {
    /// A source file without its `//!` header and `// ANCHOR` lines: each
    /// `(anchor, with)` region replaced (the lines between `// ANCHOR: name`
    /// and `// ANCHOR_END: name`), each item of `drop` removed, then each
    /// `(from, to)` edit applied (each `from` must occur exactly once).
    File {
        path: &'static str,
        regions: &'static [(&'static str, &'static str)],
        drop: &'static [&'static str],
        edits: &'static [(&'static str, &'static str)],
    },
    /// One top-level item of a source file, with its doc comments, as it is.
    Item {
        path: &'static str,
        name: &'static str,
    },
    /// Code of the starter's own with its gaps (`starter`), where the
    /// reference is shaped otherwise and has no item to take them from;
    /// `finished` is those gaps done, for the [`finished`] starter (its
    /// test proves that it passes the check).
    Exercise {
        starter: &'static str,
        finished: &'static str,
    },
    /// A helper the reference's code of a gap calls (a learner may write it
    /// inline, or as they like): only in the [`finished`] starter, as an
    /// `Item` there.
    Helper {
        path: &'static str,
        name: &'static str,
    },
    /// One top-level function as a gap: its doc comments replaced by `doc`
    /// (after `WRITE THIS.`) and its body by `todo!(todo)`. Taken from the
    /// `File` piece above when `path` is `None` (in place), else from `path`
    /// (appended here).
    Gap {
        path: Option<&'static str>,
        name: &'static str,
        doc: &'static str,
        todo: &'static str,
    },
    /// Code only the starter has: a gap whose signature differs from the
    /// library's, or a `main` that calls the learner's functions.
    Own(&'static str),
}

/// The repository root.
fn root() -> PathBuf {
    crate::workspace::repo_root()
}

/// The starter's file, from the repository root.
pub fn starter_path(step: u8) -> String {
    format!("workshop/step-{step}.rs")
}

/// `cargo xtask workshop [--check]`.
pub fn workshop(check: bool) -> Result<()> {
    let mut stale = Vec::new();
    for spec in SPECS {
        let starter = generate(spec, &root())?;
        stale.extend(generated::write(&starter_path(spec.step), check, |_| {
            Ok(starter.clone())
        })?);
    }
    // Its [[bin]] list is the starters.
    stale.extend(generated::write(
        "workshop/Cargo.toml",
        check,
        with_starter_bins,
    )?);
    ensure!(
        stale.is_empty(),
        "{} not what the steps and course/src/starters/specs.rs make: run \
         `cargo xtask workshop` to write the starters (never edit one by hand)",
        stale.join(", ")
    );
    Ok(())
}

/// The workshop package's manifest `manifest` with one `[[bin]]` per
/// starter, in step order (`workshop-step-N`, from `step-N.rs`; the names
/// differ from the steps' own, so both build side by side), and no other;
/// the rest of it as it was.
fn with_starter_bins(manifest: &str) -> Result<String> {
    let mut doc: toml_edit::DocumentMut = manifest
        .parse()
        .context("workshop/Cargo.toml is not TOML")?;
    let mut bins = toml_edit::ArrayOfTables::new();
    for spec in SPECS {
        let mut bin = toml_edit::Table::new();
        bin["name"] = toml_edit::value(format!("workshop-step-{}", spec.step));
        bin["path"] = toml_edit::value(format!("step-{}.rs", spec.step));
        bins.push(bin);
    }
    if let Some(first) = bins.get_mut(0) {
        first.decor_mut().set_prefix(
            "\n# One binary per starter, written by `cargo xtask workshop`; the names\n\
             # differ from the steps' own (`step-N`) so both build side by side.\n",
        );
    }
    // After [package], before the dependencies, where a reader looks: the
    // tables after [package] move down to make room.
    doc.remove("bin");
    let after = doc
        .get("package")
        .and_then(toml_edit::Item::as_table)
        .and_then(toml_edit::Table::position)
        .unwrap_or_default();
    let room = bins.len() as isize;
    for (_, item) in doc.as_table_mut().iter_mut() {
        if let Some(table) = item.as_table_mut()
            && let Some(position) = table.position()
            && position > after
        {
            table.set_position(position + room);
        }
    }
    for (offset, bin) in bins.iter_mut().enumerate() {
        bin.set_position(after + 1 + offset as isize);
    }
    doc["bin"] = toml_edit::Item::ArrayOfTables(bins);
    Ok(doc.to_string())
}

/// The starter `spec` makes from the sources under `root`, formatted.
pub fn generate(spec: &Spec, root: &Path) -> Result<String> {
    generate_as(spec, root, false)
}

/// The starter of `spec` as a learner who got every gap right finishes it:
/// each gap holds the reference's code, the rest is the starter.
pub fn finished(spec: &Spec, root: &Path) -> Result<String> {
    generate_as(spec, root, true)
}

/// Writes every finished starter ([`finished`]) into `dir`, as
/// `step-N.rs`, for `workshop/tests/starters.rs` to build and check.
pub fn write_finished(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for spec in SPECS {
        let path = dir.join(format!("step-{}.rs", spec.step));
        std::fs::write(&path, finished(spec, &root())?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("    {}: written", path.display());
    }
    Ok(())
}

/// [`generate`], or with `filled` [`finished`].
fn generate_as(spec: &Spec, root: &Path, filled: bool) -> Result<String> {
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).with_context(|| format!("reading {path}"))
    };
    let mut code = String::new();
    let mut file: Option<(&str, String)> = None;
    for piece in spec.pieces {
        match piece {
            Piece::File {
                path,
                regions,
                drop,
                edits,
            } => {
                file = Some((
                    path,
                    step_file(spec, &read(path)?, path, regions, drop, edits)?,
                ))
            }
            Piece::Gap {
                path: None,
                name,
                doc,
                todo,
            } => {
                let (path, text) = file
                    .as_mut()
                    .with_context(|| format!("step {}: gap `{name}` without a file", spec.step))?;
                let item = find_item(text, name)
                    .with_context(|| format!("step {}: {path} has no `fn {name}`", spec.step))?;
                if !filled {
                    let gap = gap_text(&text[item.signature.clone()], doc, todo);
                    text.replace_range(item.whole, &gap);
                }
            }
            Piece::Gap {
                path: Some(path),
                name,
                doc,
                todo,
            } => {
                flush(&mut file, &mut code);
                code.push('\n');
                code.push_str(&gap_from(
                    spec,
                    &read(path)?,
                    path,
                    name,
                    doc,
                    todo,
                    filled,
                )?);
            }
            Piece::Helper { .. } if !filled => {}
            Piece::Item { path, name } | Piece::Helper { path, name } => {
                flush(&mut file, &mut code);
                let source = without_header_and_anchors(&read(path)?);
                let item = find_item(&source, name)
                    .with_context(|| format!("step {}: {path} has no item `{name}`", spec.step))?;
                code.push('\n');
                code.push_str(&source[item.whole]);
            }
            Piece::Own(text) => {
                flush(&mut file, &mut code);
                code.push('\n');
                code.push_str(text);
            }
            Piece::Exercise { starter, finished } => {
                flush(&mut file, &mut code);
                code.push('\n');
                code.push_str(if filled { finished } else { starter });
            }
        }
    }
    flush(&mut file, &mut code);

    let mut out = header(spec);
    out.push_str(&code);
    crate::generated::rustfmt(&out).context("formatting a generated starter")
}

/// A step's file `path` (its text `source`) as the starter takes it: each
/// of `regions` replaced, the anchors and header gone, the items `drop`
/// names dropped, the binary renamed, each of `edits` made exactly once.
fn step_file(
    spec: &Spec,
    source: &str,
    path: &str,
    regions: &[(&str, &str)],
    drop: &[&str],
    edits: &[(&str, &str)],
) -> Result<String> {
    let mut text = source.to_string();
    for (anchor, with) in regions {
        let open = format!("// ANCHOR: {anchor}\n");
        let close = format!("// ANCHOR_END: {anchor}\n");
        let (Some(a), Some(b)) = (text.find(&open), text.find(&close)) else {
            bail!("step {}: {path} has no region `{anchor}`", spec.step);
        };
        let start = text[..a].rfind('\n').map_or(0, |i| i + 1);
        let end = b + close.len();
        text.replace_range(start..end, with);
    }
    let mut text = without_header_and_anchors(&text);
    for name in drop {
        let item = find_item(&text, name)
            .with_context(|| format!("step {}: {path} has no item `{name}` to drop", spec.step))?;
        // The blank line after it goes too.
        let mut end = item.whole.end;
        if text[end..].starts_with('\n') {
            end += 1;
        }
        text.replace_range(item.whole.start..end, "");
    }
    let name = format!("#[command(name = \"step-{}\"", spec.step);
    if text.contains(&name) {
        text = text.replace(
            &name,
            &format!("#[command(name = \"workshop-step-{}\"", spec.step),
        );
    }
    for (from, to) in edits {
        let found = text.matches(from).count();
        ensure!(
            found == 1,
            "step {}: the edit of {path} expects {from:?} once, and finds it {found} times",
            spec.step
        );
        text = text.replacen(from, to, 1);
    }
    Ok(text)
}

/// The gap `name` of another file `path` (its text `source`): its
/// signature with the instructions `doc` and a `todo!` body, or with
/// `filled` the reference's function in the gap's place, its signature and
/// body as the learner writes them (its docs and attributes stay the
/// reference's).
fn gap_from(
    spec: &Spec,
    source: &str,
    path: &str,
    name: &str,
    doc: &str,
    todo: &str,
    filled: bool,
) -> Result<String> {
    let source = without_header_and_anchors(source);
    let item = find_item(&source, name)
        .with_context(|| format!("step {}: {path} has no `fn {name}`", spec.step))?;
    Ok(if filled {
        source[item.signature.start..item.whole.end].to_string()
    } else {
        gap_text(&source[item.signature.clone()], doc, todo)
    })
}

/// Moves the `File` piece's text, once its gaps are made, into `code`.
fn flush(file: &mut Option<(&str, String)>, code: &mut String) {
    if let Some((_, text)) = file.take() {
        code.push_str(&text);
    }
}

/// The starter's `//!` header and its `#![allow]`.
fn header(spec: &Spec) -> String {
    let n = spec.step;
    let mut doc = vec![
        format!("Workshop starter, step {n}: {}.", spec.title),
        String::new(),
    ];
    doc.extend(wrap(&format!("Yours to write: {}", spec.yours)));
    doc.push(String::new());
    doc.extend(wrap(&format!(
        "Read: book/src/step-{n}.md, \"{}\". Check your work against a real API server:",
        spec.read
    )));
    doc.push(String::new());
    doc.push(format!("    cargo xtask check step-{n}"));
    doc.push(String::new());
    doc.extend(wrap(&format!(
        "The project's own answer is {}.",
        spec.answer
    )));
    let mut out: String = doc
        .iter()
        .map(|l| {
            if l.is_empty() {
                "//!\n".to_string()
            } else {
                format!("//! {l}\n")
            }
        })
        .collect();
    out.push_str(&format!(
        "\n// The gaps leave what they will use unused until you fill them;\n\
         // delete this line when you are done.\n#![allow({})]\n",
        spec.allow
    ));
    out
}

/// `text` in lines of at most 74 characters (78 with `//! `).
fn wrap(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > 74 {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A source file without its leading `//!` block (and the blank line after
/// it) and without mdBook's `// ANCHOR` lines.
fn without_header_and_anchors(text: &str) -> String {
    let mut lines = text.lines().peekable();
    while lines.peek().is_some_and(|l| l.starts_with("//!")) {
        lines.next();
    }
    let mut out = String::new();
    for line in lines {
        let trimmed = line.trim_start();
        if trimmed.starts_with("// ANCHOR:") || trimmed.starts_with("// ANCHOR_END:") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Where an item is in a text: all of it (docs and attributes included, and
/// the newline after its closing line), and its signature (from `fn` to the
/// `{`, exclusive).
struct ItemSpan {
    whole: std::ops::Range<usize>,
    signature: std::ops::Range<usize>,
}

/// The top-level item `name` (a `fn`, `struct`, `enum`, `const` or
/// `static`, `pub` or not), as the Rust parser (`syn`) reads `text`: its
/// doc comments and attributes included, from the start of their line to the
/// end of the line it ends on. `None` when `text` does not parse or has no
/// such item.
fn find_item(text: &str, name: &str) -> Option<ItemSpan> {
    use syn::spanned::Spanned as _;
    let file = syn::parse_file(text).ok()?;
    let item = file.items.iter().find(|item| {
        let ident = match item {
            syn::Item::Fn(f) => &f.sig.ident,
            syn::Item::Struct(s) => &s.ident,
            syn::Item::Enum(e) => &e.ident,
            syn::Item::Const(c) => &c.ident,
            syn::Item::Static(s) => &s.ident,
            _ => return false,
        };
        ident == name
    })?;
    let lines: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    // proc-macro2's lines count from 1, its columns in chars.
    let offset = |at: proc_macro2::LineColumn| -> Option<usize> {
        let start = *lines.get(at.line.checked_sub(1)?)?;
        let column = text[start..]
            .char_indices()
            .nth(at.column)
            .map_or(text.len() - start, |(i, _)| i);
        Some(start + column)
    };
    let span = item.span();
    let start = *lines.get(span.start().line.checked_sub(1)?)?;
    let end = lines.get(span.end().line).copied().unwrap_or(text.len());
    // The signature: from the item itself (after its attributes) to its `{`.
    let head = match item {
        syn::Item::Fn(f) => f.sig.fn_token.span,
        syn::Item::Struct(s) => s.struct_token.span,
        syn::Item::Enum(e) => e.enum_token.span,
        syn::Item::Const(c) => c.const_token.span,
        syn::Item::Static(s) => s.static_token.span,
        _ => return None,
    };
    let sig_start = *lines.get(head.start().line.checked_sub(1)?)?;
    let sig_end = sig_start + text[sig_start..offset(span.end())?].find('{')?;
    Some(ItemSpan {
        whole: start..end,
        signature: sig_start..sig_end,
    })
}

/// A gap: the instructions, the signature, and a `todo!` body.
fn gap_text(signature: &str, doc: &str, todo: &str) -> String {
    let mut out = String::new();
    for (i, line) in doc.lines().enumerate() {
        let line = if i == 0 {
            format!("WRITE THIS. {line}")
        } else {
            line.to_string()
        };
        if line.is_empty() {
            out.push_str("///\n");
        } else {
            out.push_str(&format!("/// {line}\n"));
        }
    }
    // A library function's `pub` means nothing in a starter's binary.
    out.push_str(signature.trim_start_matches("pub ").trim_end());
    out.push_str(&format!(" {{\n    todo!({todo:?})\n}}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workshop_manifest_builds_each_starter_and_nothing_else() {
        let committed = std::fs::read_to_string(root().join("workshop/Cargo.toml")).unwrap();
        assert_eq!(
            with_starter_bins(&committed).unwrap(),
            committed,
            "run `cargo xtask workshop`"
        );
        // A starter's [[bin]] lost and one of a step without a starter: both mended.
        let lost = committed.replacen(
            "[[bin]]\nname = \"workshop-step-3\"\npath = \"step-3.rs\"\n\n",
            "",
            1,
        );
        assert_ne!(lost, committed);
        let extra = format!("{lost}\n[[bin]]\nname = \"workshop-step-1\"\npath = \"step-1.rs\"\n");
        assert_eq!(with_starter_bins(&extra).unwrap(), committed);
    }

    #[test]
    fn every_committed_starter_is_what_its_spec_makes() {
        let mut stale = Vec::new();
        for spec in SPECS {
            let generated = generate(spec, &root()).expect("the starter generates");
            let committed =
                std::fs::read_to_string(root().join(starter_path(spec.step))).unwrap_or_default();
            if generated != committed {
                stale.push(starter_path(spec.step));
            }
        }
        assert!(
            stale.is_empty(),
            "stale starters (run `cargo xtask workshop`): {stale:?}"
        );
    }

    #[test]
    fn an_item_is_found_as_the_parser_reads_it() {
        let text = "impl X {\n    fn sync() {}\n}\n\n/// Docs.\n#[inline]\n\
                    pub(super) fn sync<T>(x: T) -> T\nwhere\n    T: Copy,\n{\n    \
                    let s = \"\n}\n\";\n    x\n}\n\nconst AFTER: u8 = 1;\n";
        let item = find_item(text, "sync").expect("the top-level fn");
        let whole = &text[item.whole];
        assert!(whole.starts_with("/// Docs.\n#[inline]\n"), "{whole}");
        assert!(whole.ends_with("    x\n}\n"), "{whole}");
        assert_eq!(
            &text[item.signature],
            "pub(super) fn sync<T>(x: T) -> T\nwhere\n    T: Copy,\n"
        );
        assert!(find_item(text, "syn").is_none());
        assert!(find_item("fn broken( {", "broken").is_none());
    }

    #[test]
    fn every_step_with_a_starter_has_a_spec_and_no_other() {
        let registry: Vec<u8> = crate::steps::STEPS
            .iter()
            .filter(|s| s.starter.is_some())
            .map(|s| s.number)
            .collect();
        let specs: Vec<u8> = SPECS.iter().map(|s| s.step).collect();
        assert_eq!(registry, specs);
        for step in crate::steps::STEPS {
            if let Some(starter) = step.starter {
                assert_eq!(starter.file, starter_path(step.number));
            }
        }
    }

    /// A temporary tree holding `step` as `steps/step-9/main.rs`, removed when dropped.
    fn scratch(step: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steps/step-9/main.rs");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, step).unwrap();
        dir
    }

    /// A step file, a spec over it, and a change to the step.
    const STEP: &str = "//! Step 9 — the reference.\n\
        //!\n//! Its own header.\n\n\
        use std::sync::Arc;\n\n\
        #[command(name = \"step-9\", version)]\n\
        struct Args;\n\n\
        fn main() {\n    // ANCHOR: call\n    let n = sync(1);\n    // ANCHOR_END: call\n}\n\n\
        // ANCHOR: sync\n\
        /// Adds one.\n\
        fn sync(a: u8) -> u8 {\n    a + 1\n}\n\
        // ANCHOR_END: sync\n";

    const SPEC: Spec = Spec {
        step: 9,
        title: "the test",
        yours: "`sync`.",
        read: "The Rust code",
        answer: "steps/step-9/main.rs",
        allow: "unused_variables",
        solutions: &[],
        pieces: &[
            Piece::File {
                path: "steps/step-9/main.rs",
                regions: &[],
                drop: &[],
                edits: &[("let n = sync(1);", "let n = sync(2);")],
            },
            Piece::Gap {
                path: None,
                name: "sync",
                doc: "Go: `sync`. Add one.",
                todo: "step 9: sync",
            },
        ],
    };

    #[test]
    fn a_gap_keeps_the_signature_and_drops_the_answer() {
        let dir = scratch(STEP);
        let starter = generate(&SPEC, dir.path()).unwrap();
        assert!(starter.starts_with("//! Workshop starter, step 9: the test.\n"));
        assert!(starter.contains("#![allow(unused_variables)]"));
        assert!(starter.contains("#[command(name = \"workshop-step-9\""));
        assert!(starter.contains("let n = sync(2);"));
        assert!(starter.contains("/// WRITE THIS. Go: `sync`. Add one.\nfn sync(a: u8) -> u8 {\n    todo!(\"step 9: sync\")\n}"), "{starter}");
        assert!(!starter.contains("a + 1"), "the answer leaked: {starter}");
        assert!(!starter.contains("ANCHOR"), "{starter}");
        assert!(!starter.contains("Its own header"), "{starter}");
    }

    #[test]
    fn a_changed_step_changes_its_starter() {
        let before = generate(&SPEC, scratch(STEP).path()).unwrap();
        let changed = STEP.replace("use std::sync::Arc;", "use std::sync::{Arc, Mutex};");
        let after = generate(&SPEC, scratch(&changed).path()).unwrap();
        assert_ne!(before, after);
        assert!(after.contains("use std::sync::{Arc, Mutex};"));
    }

    #[test]
    fn an_edit_the_step_no_longer_has_fails_with_its_text() {
        let moved = STEP.replace("let n = sync(1);", "let n = sync(10);");
        let err = generate(&SPEC, scratch(&moved).path()).unwrap_err();
        assert!(
            format!("{err:#}").contains("expects \"let n = sync(1);\" once, and finds it 0 times"),
            "{err:#}"
        );
        let gone = STEP.replace("fn sync(", "fn sync_handler(");
        let err = generate(&SPEC, scratch(&gone).path()).unwrap_err();
        assert!(format!("{err:#}").contains("no `fn sync`"), "{err:#}");
    }
}
