//! The `{{#go …}}` directives and fenced code blocks of a page.

use super::DIRECTIVE;
use super::selector::Selector;

/// Byte ranges of fenced code blocks (``` or ~~~) in a page.
pub(super) fn fenced_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut open: Option<(usize, char, usize)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let fence = trimmed
            .chars()
            .next()
            .filter(|c| *c == '`' || *c == '~')
            .map(|c| (c, trimmed.chars().take_while(|&d| d == c).count()))
            .filter(|&(_, n)| n >= 3);
        match (open, fence) {
            (None, Some((c, n))) => open = Some((at, c, n)),
            (Some((start, c, n)), Some((d, m)))
                if c == d && m >= n && trimmed.trim_end().chars().all(|x| x == c) =>
            {
                ranges.push((start, at + line.len()));
                open = None;
            }
            _ => {}
        }
        at += line.len();
    }
    if let Some((start, _, _)) = open {
        ranges.push((start, text.len()));
    }
    ranges
}

pub(super) fn in_ranges(ranges: &[(usize, usize)], at: usize) -> bool {
    ranges.iter().any(|&(s, e)| s <= at && at < e)
}

pub(super) fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

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
    let fences = fenced_ranges(text);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find(DIRECTIVE) {
        let start = from + offset;
        from = start + DIRECTIVE.len();
        if in_ranges(&fences, start) || text[..start].ends_with('\\') {
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
