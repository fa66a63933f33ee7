//! Rendering: each `{{#go}}` replaced by the Go source (beside the Rust
//! block that follows it, as Go/Rust tabs) with its license notice.

use anyhow::{Context, Result, bail};

use super::markdown::directives;
use super::scan::GoFile;
use super::{blob_url, lines_url, resolve_directive, span_text, tag};

/// `content` of chapter `page` with every `{{#go}}` replaced by its Go pane
/// (and the Rust block after it, if any, as the other tab).
pub(super) fn expand_chapter(page: &str, content: &str) -> Result<String> {
    let slug: String = page
        .trim_end_matches(".md")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut out = String::with_capacity(content.len());
    let mut from = 0;
    let mut count = 0;
    for directive in directives(content) {
        let directive = match directive {
            Ok(d) => d,
            Err((line, why)) => bail!("{page}:{line}: {why}"),
        };
        let (file, first, last) =
            resolve_directive(&directive).with_context(|| format!("{page}:{}", directive.line))?;
        count += 1;
        let id = format!("gosource-{slug}-{count}");
        out.push_str(&content[from..directive.start]);
        let go_pane = render_go(&file, first, last);
        // The Rust block that follows, if any: the two become tabs.
        let rest = &content[directive.end..];
        match following_fence(rest) {
            Some(fence_len) => {
                let rust = rest[..fence_len].trim();
                out.push_str(&format!(
                    "<div class=\"gosource-tabs\" id=\"{id}\">\n\
                     <input type=\"radio\" class=\"gosource-pick-go\" name=\"{id}\" id=\"{id}-go\">\
                     <label for=\"{id}-go\" title=\"The Go source, {path} {span}\">Go</label>\
                     <input type=\"radio\" class=\"gosource-pick-rust\" name=\"{id}\" id=\"{id}-rust\" checked>\
                     <label for=\"{id}-rust\" title=\"This port\">Rust</label>\n\
                     {go_pane}\
                     <div class=\"gosource-pane gosource-pane-rust\">\n\n{rust}\n\n</div>\n</div>\n\n",
                    path = file.path,
                    span = span_text(first, last),
                ));
                from = directive.end + fence_len;
            }
            None => {
                out.push_str(&format!(
                    "<div class=\"gosource-single\" id=\"{id}\">\n{go_pane}</div>\n\n"
                ));
                from = directive.end;
            }
        }
    }
    out.push_str(&content[from..]);
    Ok(out)
}

/// If `rest` (after a directive) holds only blank lines and then a fenced
/// code block, the length of `rest` through that block's closing fence.
pub(super) fn following_fence(rest: &str) -> Option<usize> {
    let block = crate::markdown::code_blocks(rest).into_iter().next()?;
    let end = crate::markdown::through_line_break(rest, block.range.end);
    rest[..block.range.start].trim().is_empty().then_some(end)
}

/// The Go pane: the lines, dedented, in a ```go block, and the license notice.
pub(super) fn render_go(file: &GoFile, first: usize, last: usize) -> String {
    let lines: Vec<&str> = (first..=last).map(|l| file.line(l)).collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches('\t').len())
        .min()
        .unwrap_or(0);
    let mut code = String::new();
    for line in &lines {
        let line = line.get(indent..).unwrap_or("").trim_end();
        // mdBook's `links` preprocessor runs after this one: keep `{{#…}}` literal.
        code.push_str(&line.replace("{{#", "\\{{#"));
        code.push('\n');
    }
    let fence = "`".repeat(
        3.max(
            code.lines()
                .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count() + 1)
                .max()
                .unwrap_or(0),
        ),
    );
    format!(
        "<div class=\"gosource-pane gosource-pane-go\" data-first-line=\"{first}\">\n\n\
         {fence}go\n{code}{fence}\n\n\
         <p class=\"gosource-notice\">Go: <a href=\"{url}\">{path} {span}</a> of \
         kubernetes/sample-controller {tag}. {copyright} Licensed under the \
         <a href=\"{license}\">Apache License, Version 2.0</a>.</p>\n\n</div>\n",
        url = lines_url(&file.path, first, last),
        path = file.path,
        span = span_text(first, last),
        tag = tag(),
        copyright = html_escape(&file.copyright),
        license = blob_url("LICENSE"),
    )
}

pub(super) fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
