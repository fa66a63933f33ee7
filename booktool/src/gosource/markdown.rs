//! The `{{#go …}}` directives of a page (outside its code blocks).

use super::selector::Selector;
use crate::markdown::{code_blocks, in_code};

/// A `{{#go …}}` in a page.
#[derive(Debug)]
pub(super) struct Directive {
    /// Byte range of `{{#go …}}`.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) line: usize,
    pub(super) path: String,
    pub(super) selector: Selector,
}

pub(super) fn directives(text: &str) -> Vec<std::result::Result<Directive, (usize, String)>> {
    let blocks = code_blocks(text);
    let go = crate::markdown::directives(text)
        .into_iter()
        .filter(|d| d.name == "go" && !d.escaped && !in_code(&blocks, d.range.start));
    let mut found = Vec::new();
    for d in go {
        if !d.closed {
            found.push(Err((d.line, "`{{#go` without `}}`".to_string())));
            break;
        }
        found.push(
            parse_directive(d.args)
                .map(|(path, selector)| Directive {
                    start: d.range.start,
                    end: d.range.end,
                    line: d.line,
                    path,
                    selector,
                })
                .map_err(|why| (d.line, why)),
        );
    }
    found
}

pub(super) fn parse_directive(inner: &str) -> std::result::Result<(String, Selector), String> {
    let usage = "write {{#go FILE:SELECTOR}}, e.g. {{#go controller.go:syncHandler}} or \
                 {{#go main.go:main/Start..Start@2}}";
    let Some((path, selector)) = inner
        .split_once(':')
        .filter(|(path, _)| !path.contains('#'))
    else {
        return Err(format!("{inner:?}: {usage} (no line numbers)"));
    };
    if selector.trim().is_empty() || selector.contains(char::is_whitespace) {
        return Err(format!("{inner:?}: {usage} (no line numbers)"));
    }
    let selector = Selector::parse(path, selector).map_err(|e| format!("{inner:?}: {e:#}"))?;
    Ok((path.to_string(), selector))
}
