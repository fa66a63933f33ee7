//! The book in other languages, the ecosystem's way: gettext catalogues
//! through mdbook-i18n-helpers (the tool Comprehensive Rust translates with).
//!
//! English is the source. `book/po/LANG.po` holds one edition's
//! translations, message by message (a paragraph, a heading, a list item, a
//! table cell, a diagram), each keyed by its English text (`msgid`). The
//! `gettext` preprocessor of book.toml puts a message's translation in its
//! place when the book is built with that language, and leaves a message
//! English when its catalogue has no translation for the exact English text
//! or only a fuzzy one: a changed English paragraph shows in English until
//! it is translated again, never as the old translation. `book/po/LANG.toml`
//! lists the pages whose translation is under way (every other page must be
//! complete) and holds the edition's term list.
//!
//! * `cargo xtask book po` extracts the English messages into
//!   `book/po/messages.pot` (generated, gitignored) and merges them into each
//!   catalogue with GNU gettext's `msgmerge`: a new message comes in empty, a
//!   changed one keeps its old translation marked fuzzy for the translator
//!   to check. It prints each page's coverage, and what the check will
//!   refuse in the translations.
//! * `cargo xtask book build` renders English into `book/book` and each
//!   edition into `book/book/LANG` ([`build_editions`]).
//! * `cargo xtask book check` ([`check`]) extracts the English of now and
//!   reports each page's coverage; it fails when a page not listed as under way has a
//!   fuzzy or missing message, or when a translation loses what the English
//!   has to keep: a `{{#…}}` directive (an include, a figure, a Go excerpt), a
//!   link target, an inline code span (identifiers and commands stay
//!   English), or a term of the term list. The rendered checks compare each
//!   edition's headings with the English ones ([`check_rendered`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use polib::catalog::Catalog;
use serde::Deserialize;

mod keep;
mod rendered;

use keep::prose_words;
pub use keep::{has_prose, lost_in_translation, terms_missed};
pub use rendered::check_rendered;

use super::book_dir;
use course::workspace::rel;

/// mdbook-i18n-helpers' renderer that extracts the English messages; the
/// book's own preprocessor does not run for it (preprocess/mod.rs).
pub const EXTRACTOR: &str = "xgettext";

/// The translated editions: each has `book/po/LANG.po` and `book/po/LANG.toml`,
/// and is rendered into `book/book/LANG`.
pub const EDITIONS: &[&str] = &["zh-CN"];

/// `book/po/LANG.toml`: what a catalogue cannot say itself.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditionConfig {
    /// The book's title in the edition's language.
    pub title: String,
    /// The pages (`introduction.md`, …) whose translation is not complete
    /// yet. Every other page must be: the check fails when one of them has
    /// a fuzzy or missing message, so a new page, or a new message of a
    /// page (a new step's rows in the workshop's tables), is seen at once.
    #[serde(default)]
    pub incomplete: Vec<String>,
    /// English term → the edition's term. A translated message whose English
    /// uses the term (as a word, lower case, plural or not) must use the
    /// edition's term. A term kept in English maps to itself.
    #[serde(default)]
    pub terms: BTreeMap<String, String>,
    /// The words `{{#figure}}` writes in place of a figure that is words (a
    /// verdict of the benchmark), in the edition's language.
    #[serde(default)]
    pub figure_words: BTreeMap<String, String>,
    /// The section `{{#terms}}` makes of the term list in the glossary.
    #[serde(default)]
    pub glossary: GlossarySection,
}

/// The heading and the sentence above the term table, in the edition's language.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlossarySection {
    /// The section's heading.
    pub heading: String,
    /// The sentence above the table.
    pub intro: String,
}

fn po_dir() -> PathBuf {
    book_dir().join("po")
}

/// Reads `book/po/LANG.toml`.
pub fn edition_config(lang: &str) -> Result<EditionConfig> {
    let path = po_dir().join(format!("{lang}.toml"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", rel(&path)))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", rel(&path)))
}

/// Extracts the English book's messages into `dest/messages.pot` with
/// mdbook-i18n-helpers' `xgettext` renderer. mdBook's own preprocessors are
/// off, so an `{{#include}}` stays a directive: the code and the captures it
/// brings in are never translated.
pub fn extract(book: &Path, dest: &Path) -> Result<PathBuf> {
    let _ = std::fs::remove_dir_all(dest);
    let output = Command::new("mdbook")
        .arg("build")
        .arg(book)
        .arg("-d")
        .arg(dest)
        .env("MDBOOK_BUILD__USE_DEFAULT_PREPROCESSORS", "false")
        // The book's own preprocessor declines this renderer anyway: where
        // its binary is not built at book.toml's path (a copy of the
        // repository with a target directory elsewhere), nothing is lost.
        .env("MDBOOK_PREPROCESSOR__GOSOURCE__OPTIONAL", "true")
        .env("MDBOOK_OUTPUT", format!(r#"{{"{EXTRACTOR}": {{}}}}"#))
        .output()
        .context("running mdbook (is it installed?)")?;
    let pot = dest.join("messages.pot");
    ensure!(
        output.status.success() && pot.is_file(),
        "extracting the English messages (mdbook with the {EXTRACTOR} renderer) failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(pot)
}

fn parse(path: &Path) -> Result<Catalog> {
    polib::po_file::parse(path).map_err(|err| anyhow::anyhow!("parsing {}: {err}", rel(path)))
}

// ---------------------------------------------------------------------------
// coverage

/// Where an edition's page stands against the English of now.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PageCoverage {
    /// Messages with a translation of their English as it is now.
    pub translated: usize,
    /// Messages whose translation is marked fuzzy (its English changed): the
    /// page shows them in English. (line, first words)
    pub fuzzy: Vec<(usize, String)>,
    /// Messages with no translation of their English as it is now (new, or
    /// changed since `book po` last ran): shown in English.
    pub missing: Vec<(usize, String)>,
}

impl PageCoverage {
    /// Messages with prose on the page.
    pub fn total(&self) -> usize {
        self.translated + self.fuzzy.len() + self.missing.len()
    }
}

/// Each page's coverage: every message of `pot` with prose, looked up by its
/// exact English in `po`, counted on every page it is on (`#: src/PAGE:LINE`).
pub fn coverage(pot: &Catalog, po: &Catalog) -> BTreeMap<String, PageCoverage> {
    let mut pages: BTreeMap<String, PageCoverage> = BTreeMap::new();
    for message in pot.messages() {
        let msgid = message.msgid();
        if msgid.is_empty() || !has_prose(msgid) {
            continue;
        }
        let found = po.find_message(message.msgctxt(), msgid, None);
        let state = match found {
            Some(m) if m.is_translated() && !m.is_fuzzy() => Ok(()),
            Some(m) if m.is_fuzzy() => Err(true),
            _ => Err(false),
        };
        for (page, line) in sources(message.source()) {
            let entry = pages.entry(page).or_default();
            match state {
                Ok(()) => entry.translated += 1,
                Err(true) => entry.fuzzy.push((line, first_words(msgid))),
                Err(false) => entry.missing.push((line, first_words(msgid))),
            }
        }
    }
    pages
}

/// `src/SUMMARY.md:3 src/introduction.md:1` → the pages and lines.
fn sources(source: &str) -> Vec<(String, usize)> {
    source
        .split_whitespace()
        .filter_map(|s| {
            let (path, line) = s.rsplit_once(':')?;
            let page = path.strip_prefix("src/").unwrap_or(path).to_string();
            Some((page, line.parse().ok()?))
        })
        .collect()
}

fn first_words(msgid: &str) -> String {
    let flat = msgid.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// Each page's fenced code blocks, as ranges of lines (from 1, inclusive).
pub type CodeLines = BTreeMap<String, Vec<(usize, usize)>>;

/// The fenced code blocks of every page of `src` (commands, diagrams):
/// their messages are comments and labels, where a term can be part of a
/// command and the English can stay as it is.
fn code_lines(src: &Path) -> Result<CodeLines> {
    use crate::markdown::{code_blocks, line_of};
    let mut pages = CodeLines::new();
    for entry in std::fs::read_dir(src)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let blocks = code_blocks(&text)
            .iter()
            .map(|b| {
                (
                    line_of(&text, b.range.start),
                    line_of(&text, b.range.end.saturating_sub(1)),
                )
            })
            .collect();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        pages.insert(name, blocks);
    }
    Ok(pages)
}

/// Whether every place a message is on is inside a code block.
fn in_code(source: &str, code: &CodeLines) -> bool {
    let places = sources(source);
    !places.is_empty()
        && places.iter().all(|(page, line)| {
            code.get(page)
                .is_some_and(|blocks| blocks.iter().any(|(a, b)| (a..=b).contains(&line)))
        })
}

/// The problems of a catalogue against the English of now: complete pages
/// with fuzzy or missing messages, unknown complete pages, and every
/// translation that lost what it has to keep, used the English as its
/// translation, or missed a term (the last two outside code blocks only).
pub fn problems(
    lang: &str,
    pot: &Catalog,
    po: &Catalog,
    config: &EditionConfig,
    coverage: &BTreeMap<String, PageCoverage>,
    code: &CodeLines,
) -> Vec<String> {
    let mut problems = Vec::new();
    for page in &config.incomplete {
        match coverage.get(page) {
            None => problems.push(format!(
                "po/{lang}.toml lists {page} as incomplete, but the book has no such page with text"
            )),
            Some(cover) if cover.fuzzy.is_empty() && cover.missing.is_empty() => {
                problems.push(format!(
                    "po/{lang}.toml lists {page} as incomplete, but every message of it is \
                     translated: take it off the list"
                ))
            }
            Some(_) => {}
        }
    }
    problems.extend(incomplete_pages(lang, config, coverage));
    problems.extend(translations_lacking(lang, pot, po, config, code));
    problems
}

/// Each page not listed as under way whose messages are not all translated
/// as the English is now: its fuzzy and its missing ones, by line.
fn incomplete_pages(
    lang: &str,
    config: &EditionConfig,
    coverage: &BTreeMap<String, PageCoverage>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (page, cover) in coverage {
        if config.incomplete.contains(page) {
            continue;
        }
        let lines = |list: &[(usize, String)]| {
            list.iter()
                .map(|(line, words)| format!("line {line} \"{words}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !cover.fuzzy.is_empty() {
            problems.push(format!(
                "{lang}: {page} must be complete (po/{lang}.toml does not list it as incomplete), but {} \
                 of its messages are fuzzy (the English changed; check each translation against the \
                 new English and remove `#, fuzzy`): {}",
                cover.fuzzy.len(),
                lines(&cover.fuzzy)
            ));
        }
        if !cover.missing.is_empty() {
            problems.push(format!(
                "{lang}: {page} must be complete (po/{lang}.toml does not list it as incomplete), but {} \
                 of its messages have no translation of their English as it is now (`cargo xtask book \
                 po`, then translate): {}",
                cover.missing.len(),
                lines(&cover.missing)
            ));
        }
    }
    problems
}

/// Each translation of `po` that loses what its English keeps, is the
/// English itself, or lacks a term of the term list.
fn translations_lacking(
    lang: &str,
    pot: &Catalog,
    po: &Catalog,
    config: &EditionConfig,
    code: &CodeLines,
) -> Vec<String> {
    let mut problems = Vec::new();
    for message in po.messages() {
        let msgid = message.msgid();
        let Ok(msgstr) = message.msgstr() else {
            continue;
        };
        if msgid.is_empty() || msgstr.is_empty() || message.is_fuzzy() {
            continue;
        }
        // An entry the English no longer has is dropped by `book po`; it is not shown.
        if pot.find_message(message.msgctxt(), msgid, None).is_none() {
            continue;
        }
        let at = format!(
            "{lang}: {} \"{}\"",
            message.source().split_whitespace().next().unwrap_or("po"),
            first_words(msgid)
        );
        if let Some(lost) = lost_in_translation(msgid, msgstr) {
            problems.push(format!("{at}: the translation {lost}"));
        }
        if in_code(message.source(), code) {
            continue;
        }
        if msgstr == msgid && prose_words(msgid) >= 3 {
            problems.push(format!(
                "{at}: the translation is the English text; leave it empty until it is translated"
            ));
        }
        for (term, translated) in terms_missed(msgid, msgstr, &config.terms) {
            problems.push(format!(
                "{at}: the English says \"{term}\", the translation lacks \"{translated}\" (po/{lang}.toml's terms)"
            ));
        }
    }
    problems
}

/// Prints each page's coverage of `lang`, one line a page.
fn print_coverage(lang: &str, coverage: &BTreeMap<String, PageCoverage>, config: &EditionConfig) {
    let (done, all) = coverage
        .values()
        .fold((0, 0), |(d, a), c| (d + c.translated, a + c.total()));
    println!("    {lang}: {done} of {all} messages translated");
    for (page, cover) in coverage {
        if page == "SUMMARY.md" {
            continue;
        }
        let mark = if !config.incomplete.contains(page) {
            "complete"
        } else if cover.translated == 0 {
            "not started"
        } else {
            "in progress"
        };
        println!(
            "      {page:<32} {:>4}/{:<4} {:>3} fuzzy {:>4} missing  {mark}",
            cover.translated,
            cover.total(),
            cover.fuzzy.len(),
            cover.missing.len()
        );
    }
}

// ---------------------------------------------------------------------------
// the commands

/// `cargo xtask book po`: extract the English, merge it into each catalogue
/// (`msginit` creates a missing one), print each edition's coverage.
pub fn update() -> Result<()> {
    let book = book_dir();
    let dir = po_dir();
    let scratch = tempfile::tempdir()?;
    let extracted = extract(&book, scratch.path())?;
    let pot = dir.join("messages.pot");
    std::fs::copy(&extracted, &pot)?;
    for lang in EDITIONS {
        let po = dir.join(format!("{lang}.po"));
        if !po.is_file() {
            run_gettext(
                Command::new("msginit")
                    .args(["--no-translator", "--no-wrap", "-l"])
                    .arg(format!("{}.UTF-8", lang.replace('-', "_")))
                    .arg("-i")
                    .arg(&pot)
                    .arg("-o")
                    .arg(&po),
            )?;
        }
        run_gettext(
            Command::new("msgmerge")
                .args(["--quiet", "--update", "--backup=off", "--no-wrap"])
                .arg(&po)
                .arg(&pot),
        )?;
        // msgmerge keeps entries the English no longer has as `#~` comments;
        // they are dead weight in a catalogue under version control.
        run_gettext(
            Command::new("msgattrib")
                .args(["--no-obsolete", "--no-wrap", "-o"])
                .arg(&po)
                .arg(&po),
        )?;
        println!("Updated {} from {}", rel(&po), rel(&pot));
        let found = review(lang, &parse(&pot)?, &code_lines(&book.join("src"))?)?;
        if !found.is_empty() {
            println!(
                "    what `cargo xtask book check` will refuse:\n  - {}",
                found.join("\n  - ")
            );
        }
    }
    Ok(())
}

fn run_gettext(command: &mut Command) -> Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    if course::programs::which(&program).is_none() {
        bail!(
            "{program} (GNU gettext) is not installed: `apt-get install gettext` (Debian), \
             `dnf install gettext` (Fedora), `brew install gettext` (macOS)"
        );
    }
    course::workspace::run_tool(command)
}

/// Renders each edition into `book/book/LANG` (after the English, whose
/// build empties `book/book`), and rebuilds its search index for text
/// without spaces (search.rs).
pub fn build_editions(book: &Path) -> Result<()> {
    for lang in EDITIONS {
        let dest = book.join("book").join(lang);
        let config = edition_config(lang)?;
        course::workspace::run_tool(
            Command::new("mdbook")
                .arg("build")
                .arg(book)
                .arg("-d")
                .arg(&dest)
                .env("MDBOOK_BOOK__LANGUAGE", lang)
                .env("MDBOOK_BOOK__TITLE", &config.title),
        )?;
        let tokens = super::search::rewrite_index(&dest)?;
        println!(
            "Built {} (search index rebuilt for Chinese text: {tokens} tokens)",
            dest.join("index.html").display()
        );
    }
    Ok(())
}

/// The source half of `book check` for every edition: coverage printed,
/// problems returned.
pub fn check(book: &Path) -> Result<Vec<String>> {
    let scratch = tempfile::tempdir()?;
    let pot = parse(&extract(book, scratch.path())?)?;
    let code = code_lines(&book.join("src"))?;
    let mut failures = Vec::new();
    for lang in EDITIONS {
        failures.extend(review(lang, &pot, &code)?);
    }
    Ok(failures)
}

/// One edition's catalogue against the English `pot`: its coverage printed,
/// what the check refuses returned.
fn review(lang: &str, pot: &Catalog, code: &CodeLines) -> Result<Vec<String>> {
    let po = parse(&po_dir().join(format!("{lang}.po")))?;
    let config = edition_config(lang)?;
    let cover = coverage(pot, &po);
    print_coverage(lang, &cover, &config);
    Ok(problems(lang, pot, &po, &config, &cover, code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use polib::message::Message;
    use polib::metadata::CatalogMetadata;

    fn catalog(messages: &[(&str, &str, &str, bool)]) -> Catalog {
        let mut catalog = Catalog::new(CatalogMetadata::new());
        for (source, msgid, msgstr, fuzzy) in messages {
            let mut flags = polib::message::MessageFlags::new();
            if *fuzzy {
                flags.add_flag("fuzzy");
            }
            catalog.append_or_update(
                Message::build_singular()
                    .with_source(source.to_string())
                    .with_msgid(msgid.to_string())
                    .with_msgstr(msgstr.to_string())
                    .with_flags(flags)
                    .done(),
            );
        }
        catalog
    }

    #[test]
    fn a_changed_english_paragraph_makes_its_complete_page_incomplete() {
        let config = EditionConfig::default();
        let po = catalog(&[
            (
                "src/step-1.md:1",
                "Step 1: Clients",
                "第 1 步：客户端",
                false,
            ),
            (
                "src/step-1.md:3",
                "The Go code builds two clients.",
                "Go 代码创建两个客户端。",
                false,
            ),
        ]);
        let before = catalog(&[
            ("src/step-1.md:1", "Step 1: Clients", "", false),
            (
                "src/step-1.md:3",
                "The Go code builds two clients.",
                "",
                false,
            ),
        ]);
        let cover = coverage(&before, &po);
        assert_eq!(cover["step-1.md"].translated, 2);
        assert!(problems("zh-CN", &before, &po, &config, &cover, &CodeLines::new()).is_empty());

        let after = catalog(&[
            ("src/step-1.md:1", "Step 1: Clients", "", false),
            (
                "src/step-1.md:3",
                "The Go code builds its two clients.",
                "",
                false,
            ),
        ]);
        let cover = coverage(&after, &po);
        assert_eq!(cover["step-1.md"].translated, 1);
        assert_eq!(
            cover["step-1.md"].missing,
            vec![(3, "The Go code builds its two clients.".to_string())]
        );
        let found = problems("zh-CN", &after, &po, &config, &cover, &CodeLines::new());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("step-1.md must be complete (po/zh-CN.toml does not list it as incomplete), but 1 of its messages"),
            "{}",
            found[0]
        );
        assert!(found[0].contains("line 3"), "{}", found[0]);
    }

    /// The real tools on a book of one page: mdbook, mdbook-gettext and the
    /// xgettext renderer (installed by `cargo xtask test`'s set-up).
    #[test]
    fn a_changed_english_paragraph_renders_in_english_and_leaves_its_page_incomplete() {
        let tools = [crate::tools::MDBOOK, crate::tools::MDBOOK_I18N_HELPERS];
        super::super::tools::require_tools(&tools, false).unwrap();
        let book = tempfile::tempdir().unwrap();
        let root = book.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("po")).unwrap();
        std::fs::write(
            root.join("book.toml"),
            "[book]\ntitle = \"t\"\n[preprocessor.gettext]\ncommand = \"mdbook-gettext\"\n",
        )
        .unwrap();
        std::fs::write(root.join("src/SUMMARY.md"), "[Page](page.md)\n").unwrap();
        std::fs::write(
            root.join("po/zh-CN.po"),
            "msgid \"\"\nmsgstr \"\"\n\"Project-Id-Version: t\\n\"\n\"POT-Creation-Date: \\n\"\n\
             \"PO-Revision-Date: \\n\"\n\"Language-Team: \\n\"\n\"Language: zh_CN\\n\"\n\"MIME-Version: 1.0\\n\"\n\
             \"Content-Type: text/plain; charset=UTF-8\\n\"\n\"Content-Transfer-Encoding: 8bit\\n\"\n\
             \"Plural-Forms: nplurals=1; plural=0;\\n\"\n\n\
             msgid \"The informer lists every Foo.\"\nmsgstr \"informer 列出每个 Foo。\"\n\n\
             msgid \"The queue holds each key once.\"\nmsgstr \"队列中每个键只保存一次。\"\n",
        )
        .unwrap();
        let page = |second: &str| {
            std::fs::write(
                root.join("src/page.md"),
                format!("The informer lists every Foo.\n\n{second}\n"),
            )
            .unwrap();
            let out = root.join("out");
            course::workspace::run_tool(
                Command::new("mdbook")
                    .arg("build")
                    .arg(root)
                    .arg("-d")
                    .arg(&out)
                    .env("MDBOOK_BOOK__LANGUAGE", "zh-CN"),
            )
            .unwrap();
            std::fs::read_to_string(out.join("page.html")).unwrap()
        };

        let html = page("The queue holds each key once.");
        assert!(html.contains("informer 列出每个 Foo。"), "{html}");
        assert!(html.contains("队列中每个键只保存一次。"), "{html}");

        let html = page("The queue holds each key only once.");
        assert!(html.contains("informer 列出每个 Foo。"), "{html}");
        assert!(
            html.contains("The queue holds each key only once."),
            "{html}"
        );
        assert!(
            !html.contains("队列中每个键只保存一次。"),
            "the old translation is shown: {html}"
        );

        let pot = parse(&extract(root, &root.join("pot")).unwrap()).unwrap();
        let po = parse(&root.join("po/zh-CN.po")).unwrap();
        let cover = coverage(&pot, &po);
        assert_eq!(cover["page.md"].translated, 1);
        assert_eq!(
            cover["page.md"].missing,
            vec![(3, "The queue holds each key only once.".to_string())]
        );
        let config = EditionConfig::default();
        let found = problems("zh-CN", &pot, &po, &config, &cover, &CodeLines::new());
        assert!(
            found.iter().any(|p| p.contains("page.md must be complete")),
            "{found:?}"
        );
    }

    #[test]
    fn a_page_listed_incomplete_is_not_checked_and_a_list_that_is_stale_is_a_problem() {
        let pot = catalog(&[
            ("src/step-1.md:1", "Step 1: Clients", "", false),
            ("src/step-9.md:1", "Step 9: A new step", "", false),
        ]);
        let po = catalog(&[(
            "src/step-1.md:1",
            "Step 1: Clients",
            "第 1 步：客户端",
            false,
        )]);
        let cover = coverage(&pot, &po);
        let check = |incomplete: &[&str]| {
            let config = EditionConfig {
                incomplete: incomplete.iter().map(|p| p.to_string()).collect(),
                ..Default::default()
            };
            problems("zh-CN", &pot, &po, &config, &cover, &CodeLines::new())
        };
        // A new page is seen at once.
        let found = check(&[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("step-9.md must be complete"), "{found:?}");
        assert!(check(&["step-9.md"]).is_empty());
        assert_eq!(
            check(&["step-9.md", "step-1.md", "gone.md"]),
            [
                "po/zh-CN.toml lists step-1.md as incomplete, but every message of it is translated: take it off the list",
                "po/zh-CN.toml lists gone.md as incomplete, but the book has no such page with text",
            ]
        );
    }

    #[test]
    fn a_message_whose_lines_are_all_in_code_blocks_counts_as_code() {
        let src = tempfile::tempdir().unwrap();
        std::fs::write(
            src.path().join("page.md"),
            "Text about a cluster.\n\n```sh\n# create a cluster\nkind create cluster\n```\n",
        )
        .unwrap();
        let code = code_lines(src.path()).unwrap();
        assert_eq!(code["page.md"], vec![(3, 6)]);
        assert!(in_code("src/page.md:4", &code));
        assert!(!in_code("src/page.md:1", &code));
        assert!(!in_code("src/page.md:4 src/page.md:1", &code));
    }

    #[test]
    fn a_fuzzy_translation_counts_as_not_translated() {
        let config = EditionConfig::default();
        let pot = catalog(&[(
            "src/step-1.md:3",
            "The Go code builds its two clients.",
            "",
            false,
        )]);
        let po = catalog(&[(
            "src/step-1.md:3",
            "The Go code builds its two clients.",
            "Go 代码创建两个客户端。",
            true,
        )]);
        let cover = coverage(&pot, &po);
        assert_eq!(cover["step-1.md"].fuzzy.len(), 1);
        let found = problems("zh-CN", &pot, &po, &config, &cover, &CodeLines::new());
        assert!(found[0].contains("are fuzzy"), "{found:?}");
    }

    #[test]
    fn the_english_as_its_own_translation_is_refused_where_there_is_prose() {
        let config = EditionConfig::default();
        let text = "The informer keeps a cache of every Foo.";
        let pot = catalog(&[
            ("src/step-2.md:5", text, "", false),
            ("src/step-2.md:1", "Go → Rust", "", false),
        ]);
        let po = catalog(&[
            ("src/step-2.md:5", text, text, false),
            ("src/step-2.md:1", "Go → Rust", "Go → Rust", false),
        ]);
        let cover = coverage(&pot, &po);
        let found = problems("zh-CN", &pot, &po, &config, &cover, &CodeLines::new());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("the translation is the English text"),
            "{}",
            found[0]
        );
    }
}
