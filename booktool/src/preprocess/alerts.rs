//! Admonitions (GitHub's `> [!NOTE]` alerts) that a translation broke.
//!
//! mdbook-i18n-helpers' `gettext` (0.4.0) rebuilds a translated blockquote
//! as `> ` (an empty first line), then `> \[!NOTE\] the translation`: the
//! marker escaped and on the text's line. mdBook then shows `[!NOTE]` as
//! text in a plain blockquote instead of a note. This puts the marker back
//! as the blockquote's first line, as the English has it. English pages
//! never have the escaped marker, so they pass through unchanged.

use std::sync::OnceLock;

use regex::Regex;

fn escaped_marker() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(\s*>\s?)\\\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\\\]\s*(.*)$")
            .expect("a valid regex")
    })
}

/// `page` with every escaped alert marker made a marker again.
pub(super) fn restore(page: &str) -> String {
    if !page.contains("\\[!") {
        return page.to_string();
    }
    let mut out: Vec<String> = Vec::new();
    for line in page.lines() {
        let Some(found) = escaped_marker().captures(line) else {
            out.push(line.to_string());
            continue;
        };
        // An empty quote line before the marker would keep it from being the
        // blockquote's first line.
        if out.last().is_some_and(|l| l.trim() == ">") {
            out.pop();
        }
        let quote = &found[1];
        out.push(format!("{quote}[!{}]", &found[2]));
        if !found[3].is_empty() {
            out.push(format!("{quote}{}", &found[3]));
        }
    }
    let mut restored = out.join("\n");
    if page.ends_with('\n') {
        restored.push('\n');
    }
    restored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_translated_note_gets_its_marker_line_back() {
        let translated = "Text.\n\n > \n > \\[!NOTE\\] 一个注释。\n > 第二行。\n\nMore.\n";
        assert_eq!(
            restore(translated),
            "Text.\n\n > [!NOTE]\n > 一个注释。\n > 第二行。\n\nMore.\n"
        );
    }

    #[test]
    fn an_english_page_is_left_as_it_is() {
        let english = "> [!WARNING]\n> A trap.\n\nA `\\[` in text.\n";
        assert_eq!(restore(english), english);
    }
}
