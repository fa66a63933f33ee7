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

use std::path::Path;

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
        if renderer == crate::i18n::EXTRACTOR {
            std::process::exit(1);
        }
        return Ok(());
    }
    let (context, mut book) = mdbook_preprocessor::parse_input(std::io::stdin().lock())
        .context("parsing mdBook's [context, book] JSON")?;
    let language = context.config.book.language.clone();
    let src = course::workspace::repo_root().join("book/src");
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
    let words = match language.filter(|l| crate::i18n::EDITIONS.contains(l)) {
        Some(lang) => crate::i18n::edition_config(lang)?.figure_words,
        None => Default::default(),
    };
    let expanded = figures::expand(page, &expanded, src, &words)?;
    flows::expand(page, &expanded, src)
}

/// `page` with every `{{#NAME …}}` replaced by what `expand` makes of its
/// arguments and its line number, and every `\{{#NAME …}}` shown as written
/// without its backslash; a directive without its `}}` is an error naming
/// the page and the line.
fn replace_directives(
    page_name: &str,
    page: &str,
    name: &str,
    mut expand: impl FnMut(&str, usize) -> Result<String>,
) -> Result<String> {
    let mut out = String::with_capacity(page.len());
    let mut from = 0;
    for directive in crate::markdown::directives(page) {
        if directive.name != name {
            continue;
        }
        let line = directive.line;
        ensure!(
            directive.closed,
            "{page_name}:{line}: `{{{{#{name}` without `}}}}`"
        );
        out.push_str(&page[from..directive.range.start]);
        if directive.escaped {
            out.push_str(&page[directive.range.start + 1..directive.range.end]);
        } else {
            out.push_str(&expand(directive.args, line)?);
        }
        from = directive.range.end;
    }
    out.push_str(&page[from..]);
    Ok(out)
}
