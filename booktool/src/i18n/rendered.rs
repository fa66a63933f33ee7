//! The rendered editions against the English: each translated page keeps
//! the English heading ids (links and anchors work in every edition) and
//! shows no `{#id}` as text.

use std::path::Path;

use anyhow::Result;
use scraper::Html;

use super::EDITIONS;
use crate::html::{select, text};

/// The rendered half: every page of an edition has the English page's
/// section ids (links into a page, from the book and from outside, name
/// them), so a translated heading ends with its English id, `{#id}`; and no
/// `{#id}` shows as text (a heading's translation used where the same
/// English is a table cell). A page's title (`h1`) is exempt: its English is
/// also the sidebar's entry, which shows `{#…}` as it is, and links name
/// the page, not its title.
pub fn check_rendered(html: &Path) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    for lang in EDITIONS {
        let edition = html.join(lang);
        let mut names: Vec<String> = std::fs::read_dir(html)?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".html") && n != "print.html" && n != "404.html")
            .collect();
        names.sort();
        for name in names {
            let Ok(text) = std::fs::read_to_string(edition.join(&name)) else {
                failures.push(format!("{lang}: {name} was not rendered"));
                continue;
            };
            let text = Html::parse_document(&text);
            let english = Html::parse_document(&std::fs::read_to_string(html.join(&name))?);
            failures.extend(compare_sections(
                lang,
                &name,
                &heading_ids(&english),
                &heading_ids(&text),
            ));
            if let Some(leak) = shown_heading_id(&text) {
                failures.push(format!(
                    "{lang}: {name} shows \"{leak}\" as text: a message that is a heading here \
                     and something else elsewhere needs its English to carry the id (`## Title {{#id}}`)"
                ));
            }
            let (want, have) = (admonitions(&english), admonitions(&text));
            if want != have {
                failures.push(format!(
                    "{lang}: {name} has {have} admonitions (notes, warnings), the English page {want}: \
                     a translated `> [!NOTE]` lost its marker (preprocess/alerts.rs puts back the one \
                     gettext escapes)"
                ));
            }
        }
    }
    Ok(failures)
}

/// The problems of an edition's page that lacks a section id of the
/// English page: links to that section would land at the page's top. (A
/// section the edition adds, its term list, breaks nothing.)
fn compare_sections(
    lang: &str,
    name: &str,
    english: &[(String, String)],
    translated: &[(String, String)],
) -> Vec<String> {
    let new: Vec<&(String, String)> = translated
        .iter()
        .filter(|(id, _)| !english.iter().any(|(e, _)| e == id))
        .collect();
    english
        .iter()
        .filter(|(id, _)| !translated.iter().any(|(t, _)| t == id))
        .enumerate()
        .map(|(n, (id, heading))| {
            let instead = new.get(n).map_or_else(String::new, |(new_id, translated)| {
                format!(" (the heading \"{translated}\" has the id \"{new_id}\" instead?)")
            });
            format!(
                "{lang}: {name} has no section \"{id}\" (the English heading \"{heading}\"){instead}: \
                 end the heading's translation with {{#{id}}} so that links to it still work"
            )
        })
        .collect()
}

/// The `<h2>`…`<h6>` ids of a rendered page, with each heading's text.
fn heading_ids(page: &Html) -> Vec<(String, String)> {
    select(page, "h2[id], h3[id], h4[id], h5[id], h6[id]")
        .into_iter()
        .map(|h| (h.attr("id").unwrap_or_default().into(), text(h)))
        .collect()
}

/// How many admonitions (`> [!NOTE]` and its kin) a rendered page shows.
fn admonitions(page: &Html) -> usize {
    select(page, "blockquote.blockquote-tag").len()
}

/// A `{#id}` the page shows as text, outside code and scripts.
fn shown_heading_id(page: &Html) -> Option<String> {
    let code = |node: &scraper::Node| {
        node.as_element()
            .is_some_and(|e| matches!(e.name(), "pre" | "code" | "script"))
    };
    page.tree
        .nodes()
        .filter(|node| !node.ancestors().any(|a| code(a.value())))
        .filter_map(|node| node.value().as_text())
        .find_map(|text| {
            let at = text.find("{#")?;
            Some(
                text[at..]
                    .chars()
                    .take_while(|&c| c != '}')
                    .chain(['}'])
                    .collect(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_translated_heading_without_its_english_id_is_named_with_the_id_to_add() {
        let english = r##"<h1 id="step-1-clients"><a class="header" href="#step-1-clients">Step 1: Clients</a></h1>
<h2 id="the-rust-code"><a class="header" href="#the-rust-code">The Rust code</a></h2>"##;
        let kept = r##"<h1 id="第-1-步客户端"><a class="header" href="#第-1-步客户端">第 1 步：客户端</a></h1>
<h2 id="the-rust-code"><a class="header" href="#the-rust-code">Rust 代码</a></h2>"##;
        let lost = r##"<h2 id="rust-代码"><a class="header" href="#rust-代码">Rust 代码</a></h2>"##;
        let ids = |html: &str| heading_ids(&Html::parse_fragment(html));
        let (english, kept, lost) = (ids(english), ids(kept), ids(lost));
        assert_eq!(
            english,
            vec![("the-rust-code".to_string(), "The Rust code".to_string())]
        );
        assert!(compare_sections("zh-CN", "step-1.html", &english, &kept).is_empty());
        let found = compare_sections("zh-CN", "step-1.html", &english, &lost);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains(
                "has no section \"the-rust-code\" (the English heading \"The Rust code\")"
            ),
            "{}",
            found[0]
        );
        assert!(
            found[0].contains("\"Rust 代码\" has the id \"rust-代码\" instead"),
            "{}",
            found[0]
        );
        assert!(
            found[0].contains("end the heading's translation with {#the-rust-code}"),
            "{}",
            found[0]
        );
        let added = ids(r##"<h2 id="terms"><a class="header" href="#terms">术语</a></h2>"##);
        let with_terms: Vec<_> = kept.iter().chain(&added).cloned().collect();
        assert!(compare_sections("zh-CN", "step-1.html", &english, &with_terms).is_empty());
    }

    #[test]
    fn a_heading_id_shown_as_text_is_found_outside_code() {
        let shown = |html: &str| shown_heading_id(&Html::parse_fragment(html));
        assert_eq!(
            shown("<table><tr><td>运行 {#run-it}</td></tr></table>"),
            Some("{#run-it}".to_string())
        );
        assert_eq!(
            shown("<code>{#include x}</code><pre>{#a}</pre><script>x = '{#b}'</script>"),
            None
        );
        // An attribute is no text a reader sees.
        assert_eq!(shown(r#"<p title="{#c}">text</p>"#), None);
    }

    #[test]
    fn an_admonition_is_a_blockquote_mdbook_marked_and_a_plain_quote_is_not() {
        let page = Html::parse_fragment(
            r#"<blockquote class="blockquote-tag blockquote-tag-note"><p>Note</p></blockquote>
<blockquote><p>[!NOTE] a marker a translation escaped</p></blockquote>
<pre><code>&lt;blockquote class="blockquote-tag "&gt;</code></pre>"#,
        );
        assert_eq!(admonitions(&page), 1);
    }
}
