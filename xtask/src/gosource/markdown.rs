//! The `{{#go …}}` directives of a page (outside its code blocks).

use super::DIRECTIVE;
use super::selector::Selector;
use crate::markdown::{code_blocks, in_code, line_of};

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
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find(DIRECTIVE) {
        let start = from + offset;
        from = start + DIRECTIVE.len();
        if in_code(&blocks, start) || text[..start].ends_with('\\') {
            continue;
        }
        let line = line_of(text, start);
        let Some(close) = text[start..].find("}}") else {
            found.push(Err((line, "`{{#go` without `}}`".to_string())));
            break;
        };
        let end = start + close + 2;
        let inner = text[start + DIRECTIVE.len()..start + close].trim();
        found.push(parse_directive(inner).map_or_else(
            |why| Err((line, why)),
            |(path, selector)| {
                Ok(Directive {
                    start,
                    end,
                    line,
                    path,
                    selector,
                })
            },
        ));
        from = end;
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
