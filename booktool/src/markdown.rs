//! What the tooling reads of the book's Markdown, found by pulldown-cmark
//! (CommonMark, with tables) rather than by hand: fenced code blocks, the
//! sections under a heading, link targets, code spans (a table's, or all
//! outside links) and the prose, each with where it is in the page.
//!
//! mdBook's `{{#…}}` directives are not Markdown: mdBook finds them in the
//! raw text, and so do the tools that check them ([`directives`]).

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

/// The parser the book is read with: CommonMark and tables, as mdBook
/// renders it.
fn parser(text: &str) -> Parser<'_> {
    Parser::new_ext(text, Options::ENABLE_TABLES)
}

/// A fenced code block (```` ``` ```` or `~~~`).
#[derive(Debug, PartialEq, Eq)]
pub struct CodeBlock {
    /// Its byte range in the page, fences included.
    pub range: Range<usize>,
    /// Its info string: the language, then anything else (`rust,ignore`).
    pub info: String,
    /// Its lines, without the fences.
    pub code: String,
}

impl CodeBlock {
    /// The language: the info string's first word, up to a comma or space.
    pub fn language(&self) -> &str {
        self.info.split([',', ' ']).next().unwrap_or_default()
    }
}

/// Every fenced code block of `text`, in order.
pub fn code_blocks(text: &str) -> Vec<CodeBlock> {
    let mut blocks = Vec::new();
    let mut open: Option<CodeBlock> = None;
    for (event, range) in parser(text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                open = Some(CodeBlock {
                    range,
                    info: info.trim().to_string(),
                    code: String::new(),
                });
            }
            Event::Text(code) => {
                if let Some(block) = open.as_mut() {
                    block.code.push_str(&code);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    blocks
}

/// Whether byte `at` of the page lies inside one of `blocks`.
pub fn in_code(blocks: &[CodeBlock], at: usize) -> bool {
    blocks.iter().any(|b| b.range.contains(&at))
}

/// The 1-based line of byte `at`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The section under the level-2 heading `title`: from the heading to the
/// next heading of level 2 or above (or the end of the page).
pub fn section<'a>(text: &'a str, title: &str) -> Option<&'a str> {
    let mut start = None;
    let mut heading: Option<(usize, HeadingLevel, String)> = None;
    for (event, range) in parser(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((range.start, level, String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, words)) = heading.as_mut() {
                    words.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some((at, level, words)) = heading.take() else {
                    continue;
                };
                match start {
                    Some(from) if level <= HeadingLevel::H2 => return Some(&text[from..at]),
                    None if level == HeadingLevel::H2 && words.trim() == title => {
                        start = Some(at);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    start.map(|from| &text[from..])
}

/// An mdBook directive, `{{#NAME ARGS}}`, in a page.
#[derive(Debug, PartialEq, Eq)]
pub struct Directive<'a> {
    /// Its byte range, braces (and an escaping backslash) included; only
    /// `{{#` if it never closes.
    pub range: Range<usize>,
    /// The line it starts on (from 1).
    pub line: usize,
    /// `include`, `go`, `figure`, …
    pub name: &'a str,
    /// What follows the name, trimmed (to the line's end if it never closes).
    pub args: &'a str,
    /// Whether its `}}` was found.
    pub closed: bool,
    /// `\{{#…}}`: shown as written, without the backslash, never expanded.
    pub escaped: bool,
}

/// Every mdBook directive of `text`, in order, in prose and in code blocks
/// alike (as mdBook expands them). A directive closes at the first `}}`
/// outside the braces it opens itself (a figure's line pattern holds `{}`
/// and `{..}`).
pub fn directives(text: &str) -> Vec<Directive<'_>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("{{#") {
        let start = from + at;
        let inside = start + 3;
        let (end, closed) = match directive_end(&text[inside..]) {
            Some(close) => (inside + close + 2, true),
            None => (inside, false),
        };
        let body = match closed {
            true => &text[inside..end - 2],
            false => text[inside..].lines().next().unwrap_or_default(),
        };
        let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let escaped = text[..start].ends_with('\\');
        found.push(Directive {
            range: if escaped { start - 1 } else { start }..end,
            line: line_of(text, start),
            name,
            args: args.trim(),
            closed,
            escaped,
        });
        from = end;
    }
    found
}

/// Where the `}}` that closes a directive is in `text` (what follows the
/// directive's `{{#`): the first `}` outside braces the directive opens
/// itself, if a second `}` follows it.
fn directive_end(text: &str) -> Option<usize> {
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

/// `text` with each directive taken out of the Markdown before it is parsed
/// (a figure's line pattern may hold `](` or a backtick): a `…` in its place,
/// its line breaks kept.
pub fn without_directives(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for Directive { range, .. } in directives(text) {
        out.push_str(&text[from..range.start]);
        out.push('…');
        out.extend(text[range.clone()].matches('\n'));
        from = range.end;
    }
    out.push_str(&text[from..]);
    out
}

/// A piece of a page's prose: a paragraph, a heading, a list item's text
/// or a table cell.
#[derive(Debug, PartialEq, Eq)]
pub struct Prose {
    /// The line it starts on (from 1).
    pub line: usize,
    /// Its words, its line breaks kept: link text without the target, an
    /// inline code span or a directive as `…`, HTML (comments too) left out.
    pub text: String,
    /// For a cell of a table's body, its column's heading.
    pub heading: String,
}

/// The prose of `text`, in order: what a reader reads as sentences, never
/// code blocks.
pub fn prose(text: &str) -> Vec<Prose> {
    let page = without_directives(text);
    let mut found = Vec::new();
    let mut open: Option<Prose> = None;
    let mut head: Vec<String> = Vec::new();
    let (mut in_head, mut in_code, mut column) = (false, false, 0);
    let new = |at: usize, heading: String| Prose {
        line: line_of(&page, at),
        text: String::new(),
        heading,
    };
    for (event, range) in parser(&page).into_offset_iter() {
        let words: &str = match &event {
            Event::Start(Tag::Paragraph | Tag::Heading { .. } | Tag::Item | Tag::TableCell) => {
                found.extend(open.take());
                let heading = match in_head {
                    true => String::new(),
                    false => head.get(column).cloned().unwrap_or_default(),
                };
                open = Some(new(range.start, heading));
                continue;
            }
            Event::End(TagEnd::TableCell) => {
                if in_head {
                    head.push(open.as_ref().map_or("", |p| p.text.trim()).to_string());
                }
                column += 1;
                found.extend(open.take());
                continue;
            }
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item) => {
                found.extend(open.take());
                continue;
            }
            Event::Start(Tag::TableHead) => {
                (in_head, column) = (true, 0);
                head.clear();
                continue;
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                continue;
            }
            Event::Start(Tag::TableRow) => {
                column = 0;
                continue;
            }
            Event::Start(Tag::CodeBlock(_)) => {
                in_code = true;
                continue;
            }
            Event::End(TagEnd::CodeBlock) => {
                in_code = false;
                continue;
            }
            Event::Text(words) if !in_code => words,
            Event::Code(_) => "…",
            Event::SoftBreak | Event::HardBreak => "\n",
            _ => continue,
        };
        open.get_or_insert_with(|| new(range.start, String::new()))
            .text
            .push_str(words);
    }
    found.extend(open);
    found.retain(|p| !p.text.trim().is_empty());
    found
}

/// Where a link target starting with `scheme` is in the page: the byte
/// range of the target itself (`go:controller.go#syncHandler`), for inline
/// links, reference definitions and `href="…"` in HTML, never in code.
pub fn link_targets(text: &str, scheme: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    // The target's text, from `at`, as far as a link target goes.
    let target_at = |at: usize| {
        let len = text[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '>' | '`'))
            .unwrap_or(text.len() - at);
        at..at + len
    };
    let parser = parser(text);
    for (_, definition) in parser.reference_definitions().iter() {
        if definition.dest.starts_with(scheme)
            && let Some(at) = text[definition.span.clone()].find(scheme)
        {
            found.push(target_at(definition.span.start + at));
        }
    }
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Start(Tag::Link {
                link_type: LinkType::Inline,
                dest_url,
                ..
            }) if dest_url.starts_with(scheme) => {
                // The target follows the link text's `](`.
                let link = &text[range.clone()];
                if let Some(at) = link.rfind(&format!("]({scheme}")) {
                    found.push(target_at(range.start + at + 2));
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let attribute = format!("href=\"{scheme}");
                for (at, _) in html.match_indices(&attribute) {
                    // The event's text is the page's, from the range's start.
                    found.push(target_at(range.start + at + "href=\"".len()));
                }
            }
            _ => {}
        }
    }
    found.sort_by_key(|r| r.start);
    found
}

/// Each table's byte range in the page, from its header row through the
/// line break of its last row.
pub fn tables(text: &str) -> Vec<Range<usize>> {
    parser(text)
        .into_offset_iter()
        .filter(|(event, _)| matches!(event, Event::Start(Tag::Table(_))))
        .map(|(_, range)| range.start..through_line_break(text, range.end))
        .collect()
}

/// `end` moved past the line break that follows it, if one does: where the
/// next line starts after a block whose range pulldown-cmark ends on its
/// last character (a code block's closing fence, a table's last row).
pub fn through_line_break(text: &str, end: usize) -> usize {
    let ends_line = !text[..end].ends_with('\n') && text[end..].starts_with('\n');
    end + usize::from(ends_line)
}

/// The byte ranges of the raw HTML blocks of the page that `opens` starts,
/// each through the next one that holds `closes` (a `<details>` and its
/// `</details>`, with the Markdown between), never in code.
pub fn html_between(text: &str, opens: &str, closes: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut open = None;
    for (event, range) in parser(text).into_offset_iter() {
        let Event::Html(html) = event else { continue };
        if html.trim_start().starts_with(opens) {
            open = Some(range.start);
        }
        if html.contains(closes)
            && let Some(start) = open.take()
        {
            found.push(start..range.end);
        }
    }
    found
}

/// The inline code spans of `text` outside links, each with its line (a
/// link's text names what the link points at, often another project's).
pub fn code_spans(text: &str) -> Vec<(usize, String)> {
    let text = without_directives(text);
    let (mut links, mut found) = (0, Vec::new());
    for (event, range) in parser(&text).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { .. }) => links += 1,
            Event::End(TagEnd::Link) => links -= 1,
            Event::Code(code) if links == 0 => {
                found.push((line_of(&text, range.start), code.into_string()));
            }
            _ => {}
        }
    }
    found
}

/// The code spans of column `column` (from 0) in each body row of every
/// table in `text`.
pub fn table_code(text: &str, column: usize) -> Vec<String> {
    let mut found = Vec::new();
    let (mut in_head, mut in_cell, mut index) = (false, false, 0);
    for event in parser(text) {
        match event {
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => in_head = false,
            Event::Start(Tag::TableRow) => index = 0,
            Event::Start(Tag::TableCell) => in_cell = !in_head && index == column,
            Event::End(TagEnd::TableCell) => {
                in_cell = false;
                index += 1;
            }
            Event::Code(code) if in_cell => found.push(code.to_string()),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# Title\n\n\
        Text [a link](go:controller.go#syncHandler) and `go:not-a-link`.\n\n\
        ```rust,ignore\nlet x = \"[no](go:inside)\";\n```\n\n\
        ## Run it\n\n\
        ~~~sh\ncargo run --bin step-1\n~~~\n\n\
        ### Below\n\nStill the section, [ref][r] and <a href=\"go:main.go\">html</a>.\n\n\
        [r]: go:controller.go#enqueueFoo\n\n\
        ## Go → Rust\n\n\
        | Go | Rust |\n|---|---|\n| `a` | `Foo` and `bar::baz` |\n| `b` | none |\n";

    #[test]
    fn code_blocks_are_found_with_their_info_and_whole_range() {
        let blocks = code_blocks(PAGE);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].language(), "rust");
        assert_eq!(blocks[0].info, "rust,ignore");
        assert!(PAGE[blocks[0].range.clone()].starts_with("```rust"));
        assert!(PAGE[blocks[0].range.clone()].trim_end().ends_with("```"));
        assert_eq!(blocks[1].language(), "sh");
        assert_eq!(blocks[1].code, "cargo run --bin step-1\n");
        let inside = PAGE.find("go:inside").unwrap();
        assert!(in_code(&blocks, inside));
        assert!(!in_code(&blocks, PAGE.find("Text").unwrap()));
    }

    #[test]
    fn a_section_runs_to_the_next_heading_of_its_level_and_keeps_its_subsections() {
        let run_it = section(PAGE, "Run it").unwrap();
        assert!(run_it.starts_with("## Run it\n"));
        assert!(run_it.contains("### Below"));
        assert!(!run_it.contains("Go → Rust"));
        assert!(section(PAGE, "Go → Rust").unwrap().ends_with("| none |\n"));
        assert!(section(PAGE, "Below").is_none(), "a level-3 heading");
        assert!(section(PAGE, "Missing").is_none());
    }

    #[test]
    fn link_targets_are_inline_reference_and_html_ones_never_code() {
        let targets: Vec<&str> = link_targets(PAGE, "go:")
            .into_iter()
            .map(|r| &PAGE[r])
            .collect();
        assert_eq!(
            targets,
            [
                "go:controller.go#syncHandler",
                "go:main.go",
                "go:controller.go#enqueueFoo"
            ]
        );
    }

    #[test]
    fn a_directive_closes_at_its_own_braces_end_and_may_be_escaped() {
        let text = "a {{#figure run {} as MB}}\n\\{{#go main.go:main}} {{#terms}} {{#open x\ny";
        let found: Vec<_> = directives(text)
            .into_iter()
            .map(|d| (&text[d.range], d.line, d.name, d.args, d.closed, d.escaped))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "{{#figure run {} as MB}}",
                    1,
                    "figure",
                    "run {} as MB",
                    true,
                    false
                ),
                (
                    "\\{{#go main.go:main}}",
                    2,
                    "go",
                    "main.go:main",
                    true,
                    true
                ),
                ("{{#terms}}", 2, "terms", "", true, false),
                ("{{#", 2, "open", "x", false, false),
            ]
        );
    }

    #[test]
    fn prose_is_paragraphs_items_and_cells_with_their_line_and_column_heading() {
        let page = "# Title\n\nSome `code` and [a link](x.md#a-1.5-s)\n{{#figure run\n{}}} here.\n\n\
                    ```text\nnot prose\n```\n\n- one\n- two <!-- no -->\n\n\
                    | Target | Measured |\n|---|---|\n| fast | 12 s |\n";
        let prose = prose(page);
        let found: Vec<(usize, &str, &str)> = prose
            .iter()
            .map(|p| (p.line, p.text.as_str(), p.heading.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (1, "Title", ""),
                (3, "Some … and a link\n…\nhere.", ""),
                (11, "one", ""),
                (12, "two ", ""),
                (14, "Target", ""),
                (14, "Measured", ""),
                (16, "fast", "Target"),
                (16, "12 s", "Measured"),
            ]
        );
    }

    #[test]
    fn code_spans_are_found_with_their_line_outside_links_and_code_blocks() {
        assert_eq!(
            code_spans(PAGE),
            [
                (3, "go:not-a-link".to_string()),
                (25, "a".into()),
                (25, "Foo".into()),
                (25, "bar::baz".into()),
                (26, "b".into())
            ]
        );
        let linked = "See [`src/events.rs`](https://docs.rs/) and `src/lib.rs`.\n";
        assert_eq!(code_spans(linked), [(1, "src/lib.rs".to_string())]);
    }

    #[test]
    fn a_tables_column_gives_its_code_spans() {
        assert_eq!(table_code(PAGE, 1), ["Foo", "bar::baz"]);
        assert_eq!(line_of(PAGE, PAGE.find("## Run it").unwrap()), 9);
    }
}
