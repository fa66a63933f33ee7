//! What the tooling reads of the book's Markdown, found by pulldown-cmark
//! (CommonMark, with tables) rather than by hand: fenced code blocks, the
//! sections under a heading, link targets and a table's code spans, each
//! with its byte range in the page.
//!
//! mdBook's `{{#…}}` directives are not Markdown: mdBook finds them in the
//! raw text, and so do the tools that check them.

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
    fn a_tables_column_gives_its_code_spans() {
        assert_eq!(table_code(PAGE, 1), ["Foo", "bar::baz"]);
        assert_eq!(line_of(PAGE, PAGE.find("## Run it").unwrap()), 9);
    }
}
