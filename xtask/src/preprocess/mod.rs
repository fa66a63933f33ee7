//! `cargo xtask book preprocess`: the book's preprocessor, run by mdBook
//! (book.toml's `[preprocessor.gosource]`) before its own `links`. It reads
//! the book through mdBook's own types (the `mdbook-preprocessor` crate) and
//! expands, in each chapter and in this order:
//!
//! - `{{#go FILE:SELECTOR}}` and `go:` links: the Go source, read from the
//!   pinned module ([`crate::gosource`]);
//! - `{{#version NAME}}`: a pinned version of versions.toml ([`versions`]);
//! - `{{#figure RUN KEY}}`: a figure of a capture ([`figures`]);
//! - `{{#flow NAME}}`: a recorded flow, replayed in the page ([`flows`]);
//! - `{{#terms}}`: a translated edition's term list ([`terms`]);
//!
//! and first puts back the admonition markers a translation broke ([`alerts`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use clap::Subcommand;

mod alerts;
pub mod figures;
mod flows;
mod terms;
mod versions;

/// `cargo xtask book preprocess [supports RENDERER]`: mdBook's preprocessor protocol.
#[derive(Subcommand)]
pub enum PreprocessCommand {
    /// mdBook asks whether the preprocessor supports a renderer: every one but
    /// `xgettext`, which must extract the directives as written (a figure's
    /// value changes with each run and must not make its translation stale).
    Supports {
        /// The renderer's name (html, …).
        renderer: String,
    },
}

/// With no subcommand: reads mdBook's `[context, book]` from stdin (the
/// `mdbook-preprocessor` crate: mdBook's own types), expands every
/// `{{#go}}`, `go:` link, `{{#version}}`, `{{#figure}}` and `{{#flow}}` of
/// each chapter ([`expand_page`]) and writes the book to stdout.
/// `supports <renderer>`: exit 0, or 1 for `xgettext` (mdBook then skips it).
pub fn preprocess(command: Option<PreprocessCommand>) -> Result<()> {
    if let Some(PreprocessCommand::Supports { renderer }) = command {
        if renderer == crate::book::i18n::EXTRACTOR {
            std::process::exit(1);
        }
        return Ok(());
    }
    let (context, mut book) = mdbook_preprocessor::parse_input(std::io::stdin().lock())
        .context("parsing mdBook's [context, book] JSON")?;
    let language = context.config.book.language.clone();
    let src = crate::repo_root().join("book/src");
    let mut failed = None;
    book.for_each_chapter_mut(|chapter| {
        if failed.is_some() {
            return;
        }
        let page = chapter
            .source_path
            .as_ref()
            .or(chapter.path.as_ref())
            .map_or_else(|| "chapter".to_string(), |p| p.display().to_string());
        match expand_page(&page, &chapter.content, &src, language.as_deref()) {
            Ok(expanded) => chapter.content = expanded,
            Err(err) => failed = Some(err),
        }
    });
    if let Some(err) = failed {
        return Err(err);
    }
    serde_json::to_writer(std::io::stdout().lock(), &book).context("writing the book JSON")?;
    Ok(())
}

/// A page with every directive and `go:` link expanded, in the order each
/// may produce the next one's input.
fn expand_page(page: &str, content: &str, src: &Path, language: Option<&str>) -> Result<String> {
    let expanded = alerts::restore(content);
    let expanded = crate::gosource::expand(page, &expanded)?;
    let expanded = terms::expand(&expanded, language)?;
    let expanded = versions::expand(page, &expanded)?;
    let words = match language.filter(|l| crate::book::i18n::EDITIONS.contains(l)) {
        Some(lang) => crate::book::i18n::edition_config(lang)?.figure_words,
        None => Default::default(),
    };
    let expanded = figures::expand(page, &expanded, src, &words)?;
    flows::expand(page, &expanded, src)
}

/// `page` with every `{{#NAME …}}` (`open` is `{{#NAME `) replaced by what
/// `expand` makes of the text inside and the directive's line number; a
/// directive without its `}}` is an error naming the page and the line.
fn replace_directives(
    page_name: &str,
    page: &str,
    open: &str,
    mut expand: impl FnMut(&str, usize) -> Result<String>,
) -> Result<String> {
    let mut out = String::with_capacity(page.len());
    let mut from = 0;
    while let Some(offset) = page[from..].find(open) {
        let start = from + offset;
        let line = page[..start].matches('\n').count() + 1;
        let Some(close) = directive_end(&page[start + open.len()..]).map(|at| open.len() + at)
        else {
            anyhow::bail!("{page_name}:{line}: `{}` without `}}}}`", open.trim_end());
        };
        let inside = page[start + open.len()..start + close].trim();
        out.push_str(&page[from..start]);
        out.push_str(&expand(inside, line)?);
        from = start + close + 2;
    }
    out.push_str(&page[from..]);
    Ok(out)
}

/// Where the `}}` that closes a directive is in `text` (what follows the
/// directive's `{{#NAME `): the first `}` outside braces the directive opens
/// itself (a figure's line pattern holds `{}`), if a second `}` follows it.
pub(crate) fn directive_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth > 0 => depth -= 1,
            '}' => return text[at..].starts_with("}}").then_some(at),
            _ => {}
        }
    }
    None
}

/// book.toml's `[preprocessor.gosource]` command runs this very binary
/// (`../target/debug/xtask`), so the book is built with the code being checked.
pub fn check_preprocessor(book: &Path) -> Result<()> {
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
}
