//! `cargo xtask book check`: the source checks, the build, the rendered links
//! and every page in headless Chromium.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use super::book_dir;
use super::build;
use super::tools::{MDBOOK, MDBOOK_I18N_HELPERS, MDBOOK_MERMAID, require_tools};
use crate::links::{collect_files, normalise};
use course::workspace::rel;

// ---------------------------------------------------------------------------
// check

/// Every book check; fails with all problems listed, or names the install command of a missing tool.
///
/// A failed source check does not stop the build and the rendering: one run
/// lists every problem.
pub fn check() -> Result<()> {
    let book = book_dir();
    let src = book.join("src");
    let mut failures = Vec::new();
    let fail = |failures: &[String]| -> Result<()> {
        if failures.is_empty() {
            Ok(())
        } else {
            bail!("book check failed:\n  - {}", failures.join("\n  - "))
        }
    };

    println!("==> book check: sources");
    failures.extend(check_sources(&src)?);

    println!("==> book check: tools");
    let tools = require_tools(&[MDBOOK, MDBOOK_MERMAID, MDBOOK_I18N_HELPERS], true)
        .and_then(|()| check_preprocessor(&book));
    if let Err(err) = tools {
        failures.push(format!("{err:#}"));
        return fail(&failures);
    }

    println!("==> book check: translated editions against the English of now");
    failures.extend(super::i18n::check(&book)?);

    println!("==> book check: mdbook build");
    if let Err(err) = build() {
        failures.push(format!("{err:#}"));
        return fail(&failures);
    }

    println!("==> book check: links and anchors in the rendered HTML");
    failures.extend(crate::links::check_rendered_links(&book.join("book"))?);
    failures.extend(super::i18n::check_rendered(&book.join("book"))?);

    println!("==> book check: every page in headless Chromium (diagrams, console, Go panes)");
    failures.extend(check_in_chromium(&book.join("book"))?);
    fail(&failures)?;
    println!("book check: all good");
    Ok(())
}

/// The checks of the book's sources in `src`: includes, excerpts, step
/// chapters, tables, "Run it" blocks, Go links, repository paths, typed
/// figures, the workshop's folded answers, SUMMARY.md, and the Go source.
fn check_sources(src: &Path) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let pages = markdown_pages(src)?;
    failures.extend(check_includes(&pages)?);
    failures.extend(check_excerpts_are_lessons(&pages));
    failures.extend(check_step_chapters(src)?);
    failures.extend(check_table_code(src)?);
    failures.extend(super::runit::check_run_it(src)?);
    failures.extend(check_go_links(&pages));
    failures.extend(check_repository_paths(&repository_files()?, &pages));
    let prose: Vec<(PathBuf, String)> = pages
        .iter()
        .map(|(page, text)| (page.clone(), text.clone()))
        .collect();
    failures.extend(super::typed::check(&prose));
    failures.extend(super::solutions::check(&prose)?);
    failures.extend(check_summary(src, &pages)?);
    println!("==> book check: Go excerpts and Go links resolved against the pinned Go modules");
    failures.extend(crate::gosource::check(&pages)?);
    Ok(failures)
}

/// Every rendered page of `html` (the English edition, then each
/// translated one) in headless Chromium, with screenshots in
/// target/book-screenshots/; and each edition's search, term by term.
fn check_in_chromium(html: &Path) -> Result<Vec<String>> {
    let screenshots = course::workspace::repo_root().join("target/book-screenshots");
    let mut failures = crate::chromium::check_pages(html, &screenshots)?;
    for lang in super::i18n::EDITIONS {
        let edition = html.join(lang);
        let screenshots = screenshots.join(lang);
        failures.extend(crate::chromium::check_pages(&edition, &screenshots)?);
        println!("==> book check: the {lang} edition's search finds each term of its term list");
        let config = super::i18n::edition_config(lang)?;
        let terms: Vec<&str> = config
            .terms
            .iter()
            .filter(|(english, translated)| english != translated)
            .map(|(_, translated)| translated.as_str())
            .collect();
        failures.extend(crate::chromium::check_search(
            &edition,
            &terms,
            &screenshots,
        )?);
    }
    Ok(failures)
}

/// Every `.md` file under `dir`, with its text.
fn markdown_pages(dir: &Path) -> Result<BTreeMap<PathBuf, String>> {
    let mut pages = BTreeMap::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            pages.extend(markdown_pages(&path)?);
        } else if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path)?;
            pages.insert(path, text);
        }
    }
    Ok(pages)
}

/// An `{{#include path:anchor}}` (or `#rustdoc_include`) in a page.
#[derive(Debug)]
struct Include {
    page: PathBuf,
    file: PathBuf,
    /// The anchor name, if the selector is not a line range.
    anchor: Option<String>,
    raw: String,
}

fn includes(page: &Path, text: &str) -> Vec<Include> {
    crate::markdown::directives(text)
        .into_iter()
        .filter(|d| matches!(d.name, "include" | "rustdoc_include") && d.closed && !d.escaped)
        .map(|d| {
            let (file, selector) = match d.args.split_once(':') {
                Some((file, selector)) => (file, Some(selector)),
                None => (d.args, None),
            };
            let anchor = selector
                .filter(|s| !s.is_empty() && !s.chars().all(|c| c.is_ascii_digit() || c == ':'))
                .map(str::to_string);
            Include {
                page: page.to_path_buf(),
                file: page.parent().unwrap_or(Path::new(".")).join(file),
                anchor,
                raw: text[d.range].to_string(),
            }
        })
        .collect()
}

/// mdBook only warns about a missing anchor (and includes nothing): make it an error.
fn check_includes(pages: &BTreeMap<PathBuf, String>) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let mut count = 0;
    for (page, text) in pages {
        for include in includes(page, text) {
            count += 1;
            let Ok(content) = std::fs::read_to_string(&include.file) else {
                failures.push(format!(
                    "{}: {} names a file that does not exist",
                    rel(&include.page),
                    include.raw
                ));
                continue;
            };
            if let Some(anchor) = &include.anchor {
                let start = content
                    .lines()
                    .any(|l| anchor_name(l, "ANCHOR:") == Some(anchor.as_str()));
                let end = content
                    .lines()
                    .any(|l| anchor_name(l, "ANCHOR_END:") == Some(anchor.as_str()));
                if !(start && end) {
                    failures.push(format!(
                        "{}: {}: {} has no ANCHOR/ANCHOR_END pair named {anchor:?}",
                        rel(&include.page),
                        include.raw,
                        rel(&include.file)
                    ));
                }
            }
            if content.trim().is_empty() {
                failures.push(format!(
                    "{}: {} includes an empty file",
                    rel(&include.page),
                    include.raw
                ));
            }
        }
    }
    println!("    {count} includes checked");
    Ok(failures)
}

/// What marks a line that exists only for the project's tooling, and the
/// tool: the lesson code reaches the live view, the heap profiler and the
/// workshop only through `tracing` and from outside, so none of these may
/// appear in code the book prints.
const TOOLING_MARKERS: &[(&str, &str)] = &[
    ("flow::", "the live view (course/src/flow/mod.rs)"),
    ("Flow::", "the live view (course/src/flow/mod.rs)"),
    ("flow.", "the live view (course/src/flow/mod.rs)"),
    ("_flow", "the live view (course/src/flow/mod.rs)"),
    ("QueueFlow", "the live view"),
    ("ControllerFlow", "the live view"),
    ("SAMPLE_CONTROLLER_FLOW", "the live view"),
    ("live view", "the live view"),
    ("dhat", "the heap profiler"),
    ("workshop", "the workshop"),
    ("starter", "the workshop"),
];

/// The lines of `content` that mdBook includes for `anchor` (the whole
/// file without `ANCHOR` lines if none), numbered from 1 as in the file.
fn excerpt<'a>(content: &'a str, anchor: Option<&str>) -> Vec<(usize, &'a str)> {
    let mut inside = anchor.is_none();
    let mut lines = Vec::new();
    for (n, line) in content.lines().enumerate() {
        if let Some(name) = anchor_name(line, "ANCHOR_END:") {
            if Some(name) == anchor {
                inside = false;
            }
            continue;
        }
        if let Some(name) = anchor_name(line, "ANCHOR:") {
            if Some(name) == anchor {
                inside = true;
            }
            continue;
        }
        if inside {
            lines.push((n + 1, line));
        }
    }
    lines
}

/// The lines of an excerpt that carry a [`TOOLING_MARKERS`] marker: (line
/// number, line, tool).
fn tooling_lines<'a>(lines: &[(usize, &'a str)]) -> Vec<(usize, &'a str, &'static str)> {
    lines
        .iter()
        .filter_map(|&(n, line)| {
            TOOLING_MARKERS
                .iter()
                .find(|(marker, _)| line.contains(marker))
                .map(|&(_, tool)| (n, line.trim(), tool))
        })
        .collect()
}

/// No Rust the book includes has a line that exists only for tooling.
fn check_excerpts_are_lessons(pages: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let mut failures = Vec::new();
    let mut count = 0;
    for (page, text) in pages {
        for include in includes(page, text) {
            if include.file.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let Ok(content) = std::fs::read_to_string(&include.file) else {
                continue; // check_includes reports it
            };
            count += 1;
            for (n, line, tool) in tooling_lines(&excerpt(&content, include.anchor.as_deref())) {
                failures.push(format!(
                    "{}: {} prints a line for {tool}, not the lesson ({}:{n}: {line})",
                    rel(&include.page),
                    include.raw,
                    rel(&normalise(&include.file)),
                ));
            }
        }
    }
    println!("    {count} Rust excerpts checked for tooling lines");
    failures
}

/// `Some("name")` for a line holding `ANCHOR: name` (mdBook's rule: the marker,
/// then the name up to the first non-word character).
fn anchor_name<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let at = line.find(marker)?;
    let rest = line[at + marker.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Every step of the registry has a chapter that includes code from its
/// step file and its captured output.
fn check_step_chapters(src: &Path) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    for step in course::steps::STEPS {
        let n = step.number;
        let chapter = src.join(step.chapter);
        let Ok(text) = std::fs::read_to_string(&chapter) else {
            failures.push(format!("step {n} has no chapter ({})", rel(&chapter)));
            continue;
        };
        let included: Vec<PathBuf> = includes(&chapter, &text)
            .iter()
            .map(|include| normalise(&include.file))
            .collect();
        if !included.contains(&normalise(&src.join("../..").join(step.source))) {
            failures.push(format!(
                "{}: does not include code from {}",
                rel(&chapter),
                step.source
            ));
        }
        if !included.contains(&normalise(&src.join(format!("outputs/step-{n}.txt")))) {
            failures.push(format!(
                "{}: does not include its captured output outputs/step-{n}.txt",
                rel(&chapter)
            ));
        }
        if !crate::markdown::code_blocks(&text)
            .iter()
            .any(|block| block.language() == "mermaid")
        {
            failures.push(format!(
                "{}: has no \"you are here\" diagram",
                rel(&chapter)
            ));
        }
    }
    Ok(failures)
}

/// The Rust column of each step chapter's "Go → Rust" table names only code
/// that exists: every identifier in its code spans is a word of the
/// workspace's Rust sources (the steps, the shared crate, step 8, the
/// examples), so that a renamed function or a call the code no longer makes
/// cannot stay in the table.
fn check_table_code(src: &Path) -> Result<Vec<String>> {
    let root = course::workspace::repo_root();
    let mut words = std::collections::BTreeSet::new();
    for dir in ["src", "steps", "examples"] {
        let mut files = Vec::new();
        collect_files(&root.join(dir), &mut files)?;
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        {
            let text = std::fs::read_to_string(file)?;
            words.extend(identifiers(&text).map(str::to_string));
        }
    }
    let mut failures = Vec::new();
    for step in course::steps::STEPS {
        let chapter = src.join(step.chapter);
        let text = std::fs::read_to_string(&chapter)
            .with_context(|| format!("reading {}", rel(&chapter)))?;
        for (cell, missing) in table_code_not_in(&text, &words) {
            failures.push(format!(
                "{}: the Go → Rust table names `{missing}` (in `{cell}`), which no Rust source of the workspace has",
                rel(&chapter)
            ));
        }
    }
    Ok(failures)
}

/// The Rust column's code spans of the "Go → Rust" table in `chapter`, each
/// with its first identifier that `words` lacks.
fn table_code_not_in(
    chapter: &str,
    words: &std::collections::BTreeSet<String>,
) -> Vec<(String, String)> {
    let Some(section) = crate::markdown::section(chapter, "Go → Rust") else {
        return Vec::new();
    };
    let mut missing = Vec::new();
    for code in crate::markdown::table_code(section, 1) {
        if let Some(word) = identifiers(&code).find(|w| !words.contains(*w)) {
            missing.push((code.clone(), word.to_string()));
        }
    }
    missing
}

/// The identifiers of at least three characters in `text`.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 3 && w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

/// Every link to the Go sample-controller is pinned to the tag the port follows.
fn check_go_links(pages: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let tag = testcluster::binaries::SAMPLE_CONTROLLER_VERSION;
    let prefix = "github.com/kubernetes/sample-controller";
    let mut failures = Vec::new();
    let mut count = 0;
    for (page, text) in pages {
        let mut rest = text.as_str();
        while let Some(at) = rest.find(prefix) {
            let link: String = rest[at..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '>' | '"' | ']' | '`'))
                .collect();
            count += 1;
            let pinned = [
                format!("{prefix}/blob/{tag}/"),
                format!("{prefix}/tree/{tag}"),
            ];
            if !pinned.iter().any(|p| link.starts_with(p.as_str())) {
                failures.push(format!(
                    "{}: {link} is not pinned to /blob/{tag}/ or /tree/{tag}",
                    rel(page)
                ));
            }
            rest = &rest[at + prefix.len()..];
        }
    }
    println!("    {count} links to the Go sample-controller checked");
    failures
}

/// Every page is in SUMMARY.md (mdBook silently leaves out the others).
fn check_summary(src: &Path, pages: &BTreeMap<PathBuf, String>) -> Result<Vec<String>> {
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).context("book/src/SUMMARY.md")?;
    let mut failures = Vec::new();
    for page in pages.keys() {
        let Ok(name) = page.strip_prefix(src) else {
            continue;
        };
        let name = name.to_string_lossy();
        if name != "SUMMARY.md" && !summary.contains(&format!("]({name})")) {
            failures.push(format!("{} is not in SUMMARY.md", rel(page)));
        }
    }
    Ok(failures)
}

/// Every path into this repository that a page names in code
/// (`performance/src/bench/`, `steps/step-8/check.rs:10`) is one of its files or
/// folders (`files`: tracked, or new and not ignored), so a file that moves
/// leaves no stale name behind. A path in a link's text is the link's
/// (another project's file), one under a folder the repository does not
/// have is not its (`target/…`, `/healthz`), and one with a placeholder is
/// a pattern (`steps/step-N/`, `NAME.json`, `outputs/*.txt`).
fn check_repository_paths(files: &[String], pages: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let has = |path: &str| {
        let folder = format!("{}/", path.trim_end_matches('/'));
        files.iter().any(|f| f == path || f.starts_with(&folder))
    };
    let is_placeholder = |part: &str| {
        part.contains(['*', '…', '<', '{'])
            || part
                .split(['-', '.', '_'])
                .any(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_uppercase()))
    };
    let mut failures = Vec::new();
    for (page, text) in pages {
        for (line, span) in crate::markdown::code_spans(text) {
            let path = span.split([':', '#']).next().unwrap_or_default();
            let Some((top, _)) = path.split_once('/') else {
                continue;
            };
            if top.is_empty()
                || path.contains(char::is_whitespace)
                || path.split('/').any(is_placeholder)
                || !has(top)
                || has(path)
            {
                continue;
            }
            failures.push(format!(
                "{}:{line}: `{span}` names a path this repository does not have (moved or renamed?)",
                rel(page)
            ));
        }
    }
    failures
}

/// The repository's files: tracked, or new and not ignored.
fn repository_files() -> Result<Vec<String>> {
    let output = std::process::Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(course::workspace::repo_root())
        .output()
        .context("running git ls-files")?;
    ensure!(output.status.success(), "git ls-files failed");
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// book.toml's `[preprocessor.gosource]` command runs this very binary
/// (`../target/debug/xtask`), so the book is built with the code being checked.
fn check_preprocessor(book: &Path) -> Result<()> {
    let text = std::fs::read_to_string(book.join("book.toml"))?;
    let config: toml::Table = toml::from_str(&text).context("reading book/book.toml")?;
    let command = config
        .get("preprocessor")
        .and_then(|p| p.get("gosource"))
        .and_then(|g| g.get("command"))
        .and_then(toml::Value::as_str)
        .context("book/book.toml has no [preprocessor.gosource] command")?;
    let exe = command.split_whitespace().next().unwrap_or_default();
    let configured = book.join(exe);
    let running = std::env::current_exe()?;
    let same = same_binary(&configured, &running);
    ensure!(
        same,
        "book.toml's gosource preprocessor runs {}, but this check runs {}: build xtask into \
         the default target directory (no CARGO_TARGET_DIR) so that mdBook uses this code",
        configured.display(),
        running.display()
    );
    Ok(())
}

/// Whether `running` (this process's executable) is the file at `configured`.
/// A binary rebuilt while this one runs (a capture's nested `cargo xtask`
/// relinks it when its environment differs) leaves this process running an
/// unlinked file, which Linux names `PATH (deleted)`: the file now at `PATH`
/// was built from the same tree, so it counts as the same.
fn same_binary(configured: &Path, running: &Path) -> bool {
    let running = running
        .to_str()
        .and_then(|p| p.strip_suffix(" (deleted)"))
        .map_or_else(|| running.to_path_buf(), PathBuf::from);
    match (configured.canonicalize(), running.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_into_the_repository_that_moved_is_named_and_patterns_and_links_are_not() {
        let files = repository_files().unwrap();
        let pages = markdown_pages(&book_dir().join("src")).unwrap();
        assert_eq!(check_repository_paths(&files, &pages), Vec::<String>::new());
        let page = PathBuf::from("book/src/moved.md");
        let text = "`xtask/src/bench.rs` and `performance/src/bench/` at `steps/step-8/check.rs:12`,\n\
                    `steps/step-N/check.rs`, `book/src/outputs/*.txt`, `NAME.json`,\n\
                    [`src/events.rs`](https://docs.rs/), `/healthz`, `target/heap` and\n\
                    `cargo run --bin step-1`.\n";
        let failures = check_repository_paths(&files, &BTreeMap::from([(page, text.to_string())]));
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].starts_with("book/src/moved.md:1: `xtask/src/bench.rs` names"),
            "{failures:?}"
        );
    }

    #[test]
    fn a_binary_rebuilt_in_place_while_running_is_still_the_configured_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let exe = dir.join("xtask");
        std::fs::write(&exe, b"").unwrap();
        let other = dir.join("other");
        std::fs::write(&other, b"").unwrap();
        assert!(same_binary(&exe, &exe));
        assert!(same_binary(
            &exe,
            Path::new(&format!("{} (deleted)", exe.display()))
        ));
        assert!(!same_binary(&exe, &other));
        assert!(!same_binary(
            &exe,
            Path::new(&format!("{} (deleted)", other.display()))
        ));
    }

    #[test]
    fn a_step_chapter_must_include_its_code_and_output_unescaped_and_draw_its_diagram() {
        let src = book_dir().join("src");
        assert_eq!(check_step_chapters(&src).unwrap(), Vec::<String>::new());
        // The chapters in a scratch copy of book/src, step 5's spoiled.
        let copy = tempfile::tempdir().unwrap();
        for step in course::steps::STEPS {
            let text = std::fs::read_to_string(src.join(step.chapter)).unwrap();
            std::fs::write(copy.path().join(step.chapter), text).unwrap();
        }
        let chapter = copy.path().join("step-5.md");
        let text = std::fs::read_to_string(&chapter).unwrap();
        let spoiled = text
            .replace(
                "{{#include outputs/step-5.txt}}",
                "\\{{#include outputs/step-5.txt}}",
            )
            .replace("```mermaid", "```text");
        assert_ne!(spoiled, text);
        std::fs::write(&chapter, spoiled).unwrap();
        let failures = check_step_chapters(copy.path()).unwrap();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(
            failures[0].contains("its captured output outputs/step-5.txt"),
            "{failures:?}"
        );
        assert!(
            failures[1].contains("no \"you are here\" diagram"),
            "{failures:?}"
        );
    }

    #[test]
    fn the_books_rust_excerpts_carry_no_tooling_line() {
        let pages = markdown_pages(&book_dir().join("src")).unwrap();
        let failures = check_excerpts_are_lessons(&pages);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn an_excerpt_with_a_tooling_line_is_reported_and_the_lesson_around_it_is_not() {
        let file = "// ANCHOR: run\n\
                    fn run() {\n\
                    \x20   // ANCHOR: inner\n\
                    \x20   let key = take();\n\
                    \x20   flow::forget(&key); // for the live view\n\
                    \x20   // ANCHOR_END: inner\n\
                    }\n\
                    // ANCHOR_END: run\n\
                    #[cfg(feature = \"dhat-heap\")]\n";
        let run = excerpt(file, Some("run"));
        assert_eq!(
            run.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [2, 4, 5, 7]
        );
        assert_eq!(
            tooling_lines(&run),
            [(
                5,
                "flow::forget(&key); // for the live view",
                "the live view (course/src/flow/mod.rs)"
            )]
        );
        // The whole file: the profiler's line too, and no ANCHOR lines.
        let whole = excerpt(file, None);
        assert_eq!(whole.len(), 5);
        assert_eq!(tooling_lines(&whole).len(), 2);
        assert!(tooling_lines(&excerpt(file, Some("nothing"))).is_empty());
        // A lesson that logs through tracing is not tooling.
        let lesson = excerpt(
            "tracing::debug!(objectRef = %key, \"Adding to the work queue\");\n",
            None,
        );
        assert!(tooling_lines(&lesson).is_empty());
    }

    #[test]
    fn a_table_naming_code_no_source_has_is_reported_and_known_code_is_not() {
        let words = ["watch_list", "api", "default_backoff", "reflect"]
            .map(String::from)
            .into_iter()
            .collect();
        let chapter = "# Step\n\n## Go → Rust\n\n| Go | Rust | Notes |\n|---|---|---|\n\
                       | `Informer()` | `watch_list(api).default_backoff()` | ok |\n\
                       | `Resync` | `watcher(api, cfg)` and `reflect` | `nothing_here` |\n\n## Run it\n\
                       | `x` | `not_a_table_row` | |\n";
        assert_eq!(
            table_code_not_in(chapter, &words),
            [("watcher(api, cfg)".to_string(), "watcher".to_string())]
        );
    }
}
