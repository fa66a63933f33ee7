//! What a message must keep in every edition: a translation has the
//! English's directives, link targets and inline code spans, and the term
//! list's rendering of each term the English uses; a message with no prose
//! needs no translation at all.

use std::collections::BTreeMap;

/// Whether an English message has anything to translate: a word of two
/// letters or more outside its directives, inline code, link targets and
/// HTML tags. A message that is only a `{{#go …}}` or a `` `Foo` `` cell is
/// the same in every edition and needs no entry.
pub fn has_prose(msgid: &str) -> bool {
    prose_words(msgid) > 0
}

/// The English words of a message, outside what [`has_prose`] leaves out.
pub(super) fn prose_words(msgid: &str) -> usize {
    words(msgid)
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 2)
        .count()
}

/// A message's prose ([`crate::markdown::prose`]): its words, without its
/// directives, inline code, link targets and HTML.
pub(super) fn words(msgid: &str) -> String {
    let prose = crate::markdown::prose(msgid);
    prose
        .into_iter()
        .map(|p| p.text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a translation must keep of its English: every directive, link
/// target and inline code span, as many times as the English has it.
fn kept(text: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let mut kept: Vec<String> = crate::markdown::directives(text)
        .into_iter()
        .map(|d| format!("directive {}", &text[d.range]))
        .collect();
    // Directives first, out of the Markdown: a `{{#figure … {..}}}` is no link.
    let rest = crate::markdown::without_directives(text);
    for event in Parser::new_ext(&rest, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) => kept.push(format!("link ({dest_url})")),
            Event::Start(Tag::Image { dest_url, .. }) => {
                kept.push(format!("image ({dest_url})"));
            }
            Event::Code(code) => kept.push(format!("code `{code}`")),
            _ => {}
        }
    }
    kept.sort();
    kept
}

/// What `msgstr` lost or gained against `msgid`, if anything, said so that a
/// translator knows what to put back.
pub fn lost_in_translation(msgid: &str, msgstr: &str) -> Option<String> {
    let (english, translated) = (kept(msgid), kept(msgstr));
    if english == translated {
        return None;
    }
    let missing = difference(&english, &translated);
    let extra = difference(&translated, &english);
    let mut said = Vec::new();
    if !missing.is_empty() {
        said.push(format!("lost {}", missing.join(", ")));
    }
    if !extra.is_empty() {
        said.push(format!("has {} that the English has not", extra.join(", ")));
    }
    Some(said.join("; "))
}

/// The items of `a` that `b` lacks (both sorted, with repeats).
fn difference(a: &[String], b: &[String]) -> Vec<String> {
    let mut b = b.to_vec();
    a.iter()
        .filter(|item| match b.iter().position(|x| x == *item) {
            Some(at) => {
                b.remove(at);
                false
            }
            None => true,
        })
        .cloned()
        .collect()
}

/// The terms of `terms` that `msgid` uses and `msgstr` does not render as
/// the term list says: (English term, the edition's term).
pub fn terms_missed<'a>(
    msgid: &str,
    msgstr: &str,
    terms: &'a BTreeMap<String, String>,
) -> Vec<(&'a str, &'a str)> {
    let english = words(msgid);
    terms
        .iter()
        .filter(|(term, _)| uses_term(&english, term))
        .filter(|(_, translated)| !msgstr.contains(translated.as_str()))
        .map(|(term, translated)| (term.as_str(), translated.as_str()))
        .collect()
}

/// Whether `text` has `term` as a word of its own (lower case, an `s`
/// allowed after it): "work queue" is in "the work queues", "controller" is
/// not in "sample-controller" or "Controller".
fn uses_term(text: &str, term: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(term).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let mut after = text[at + term.len()..].chars();
        let next = match after.next() {
            Some('s') => after.next(),
            other => other,
        };
        // `controller.go` is a file name, not the term.
        let file_name = next == Some('.') && after.next().is_some_and(char::is_alphanumeric);
        !before.is_some_and(word) && !next.is_some_and(word) && !file_name
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_of_only_directives_and_code_has_nothing_to_translate() {
        assert!(!has_prose(
            "{{#go main.go:main/BuildConfigFromFlags..exampleClient+1}}"
        ));
        assert!(!has_prose("`Foo`, `FooSpec`"));
        assert!(!has_prose("[`kube::Api`](https://docs.rs/kube)"));
        assert!(has_prose("Go → Rust"));
        assert!(has_prose(
            "{{#figure performance 500 step8 rss}} at 500 Foos"
        ));
    }
    #[test]
    fn a_translation_that_drops_a_directive_a_link_or_a_code_span_says_which() {
        let english = "Step 8 converged in {{#figure performance 500 step8 converged}} \
                       ([step 2](step-2.md#the-rust-code)), with `Controller`.";
        let good = "第 8 步在 {{#figure performance 500 step8 converged}} 内收敛\
                    （[第 2 步](step-2.md#the-rust-code)），用的是 `Controller`。";
        assert_eq!(lost_in_translation(english, good), None);

        let no_figure = good.replace("{{#figure performance 500 step8 converged}}", "10 秒");
        let said = lost_in_translation(english, &no_figure).unwrap();
        assert!(
            said.contains("lost directive {{#figure performance 500 step8 converged}}"),
            "{said}"
        );

        let other_anchor = good.replace("#the-rust-code", "#rust-代码");
        let said = lost_in_translation(english, &other_anchor).unwrap();
        assert!(
            said.contains("lost link (step-2.md#the-rust-code)"),
            "{said}"
        );
        assert!(
            said.contains("has link (step-2.md#rust-代码) that the English has not"),
            "{said}"
        );

        let translated_code = good.replace("`Controller`", "`控制器`");
        let said = lost_in_translation(english, &translated_code).unwrap();
        assert!(said.contains("lost code `Controller`"), "{said}");

        let include = "{{#include ../../steps/step-1/src/main.rs:main}}";
        assert!(lost_in_translation(include, "").is_some());
    }
    #[test]
    fn a_term_is_checked_where_the_english_uses_it_as_a_word() {
        let terms: BTreeMap<String, String> = [
            ("controller".to_string(), "控制器".to_string()),
            ("work queue".to_string(), "工作队列".to_string()),
        ]
        .into();
        assert!(
            terms_missed(
                "The controller reads its work queues.",
                "控制器读取它的工作队列。",
                &terms
            )
            .is_empty()
        );
        assert_eq!(
            terms_missed(
                "The controller reads its work queue.",
                "这个程序读取它的工作队列。",
                &terms
            ),
            vec![("controller", "控制器")]
        );
        // Names and code are not the term.
        assert!(
            terms_missed(
                "sample-controller, `controller`, Controller, controller.go",
                "",
                &terms
            )
            .is_empty()
        );
        assert_eq!(terms_missed("the controller.", "", &terms).len(), 1);
    }
}
