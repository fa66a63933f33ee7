//! Search in the Chinese edition.
//!
//! mdBook's search index splits text on whitespace and hyphens
//! (rust-lang/mdBook#1081, open since 2019), and leaves out any "word" longer
//! than 80 bytes: a Chinese sentence has no spaces, so most of the edition's
//! text was never indexed, and a query such as 工作队列 found nothing. After
//! mdBook has written an edition, [`rewrite_index`] rebuilds its
//! `searchindex-*.js` from the same documents (mdBook keeps each section's
//! title, text and breadcrumbs in the index), tokenised by [`tokens`]: Latin
//! words as mdBook's own pipeline would leave them, and every run of Chinese
//! characters as its overlapping pairs (工作队列 → 工作, 作队, 队列). The
//! pipeline is emptied (its English trimmer would strip every Chinese
//! character) and a query must match all its tokens (`AND`), so a query finds
//! the sections that hold its pairs. The rebuilt index file starts with
//! book/theme/search-cjk.js, the same tokenizer in JavaScript, so that
//! elasticlunr cuts a query as the index was cut, from the moment the index
//! is there (the searcher loads the index while the page's later scripts are
//! still loading: a tokenizer set by one of those came too late for a search
//! in the URL). The book check searches three terms in headless Chromium
//! (chromium.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Map, Value, json};

/// What mdBook writes around the index's JSON (mdbook-html 0.5's `search.rs`).
const PREFIX: &str = "window.search = Object.assign(window.search, JSON.parse('";
const SUFFIX: &str = "'));";

/// A Chinese (CJK unified) ideograph: the characters that pair into tokens.
/// Only the Basic Multilingual Plane, so that a token's characters are the
/// UTF-16 units elasticlunr's index walks in JavaScript.
fn is_ideograph(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

/// The search tokens of `text`: runs of ASCII letters, digits and `_`,
/// lower-cased; each run of ideographs as its overlapping pairs (one alone
/// is its own token). Everything else separates tokens. search-cjk.js's
/// `cjkTokens` is the same function in JavaScript.
pub fn tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, tokens: &mut Vec<String>| {
        if !word.is_empty() {
            tokens.push(word.to_ascii_lowercase());
            word.clear();
        }
    };
    let flush_run = |run: &mut Vec<char>, tokens: &mut Vec<String>| {
        if run.len() == 1 {
            tokens.push(run[0].to_string());
        }
        tokens.extend(run.windows(2).map(|pair| pair.iter().collect::<String>()));
        run.clear();
    };
    for c in text.chars() {
        if is_ideograph(c) {
            flush_word(&mut word, &mut tokens);
            run.push(c);
        } else if c.is_ascii_alphanumeric() || c == '_' {
            flush_run(&mut run, &mut tokens);
            word.push(c);
        } else {
            flush_word(&mut word, &mut tokens);
            flush_run(&mut run, &mut tokens);
        }
    }
    flush_word(&mut word, &mut tokens);
    flush_run(&mut run, &mut tokens);
    tokens
}

/// The edition's `searchindex-*.js` (mdBook names it with a hash of its content).
fn index_file(edition: &Path) -> Result<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(edition)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if name.starts_with("searchindex") && name.ends_with(".js") {
            found.push(path);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!(
            "{}: no searchindex*.js (is the book's search off?)",
            edition.display()
        ),
        _ => bail!(
            "{}: more than one searchindex*.js: {found:?}",
            edition.display()
        ),
    }
}

/// The JSON inside mdBook's `JSON.parse('…')`: mdBook escaped `\` and `'`.
fn unescape(js: &str) -> Result<String> {
    // An index rebuilt before starts with the tokenizer: the JSON follows it.
    let start = js.find(PREFIX).unwrap_or(0);
    let inner = js[start..]
        .trim_end()
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix(SUFFIX))
        .context(
            "the search index is not `window.search = …JSON.parse('…'));` as mdBook 0.5 writes it",
        )?;
    let mut json = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(escaped @ ('\\' | '\'')) => json.push(escaped),
                Some(other) => {
                    json.push('\\');
                    json.push(other);
                }
                None => json.push('\\'),
            }
        } else {
            json.push(c);
        }
    }
    Ok(json)
}

fn escape(json: &str) -> String {
    format!(
        "{PREFIX}{}{SUFFIX}",
        json.replace('\\', "\\\\").replace('\'', "\\'")
    )
}

/// The tokenizer the rebuilt index starts with (book/theme/search-cjk.js).
fn tokenizer_js() -> Result<String> {
    let path = super::book_dir().join("theme/search-cjk.js");
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

/// Rebuilds the search index of the edition rendered into `edition`; how
/// many distinct tokens it holds.
pub fn rewrite_index(edition: &Path) -> Result<usize> {
    let path = index_file(edition)?;
    let js = std::fs::read_to_string(&path)?;
    let mut search: Value = serde_json::from_str(&unescape(&js)?)
        .with_context(|| format!("parsing the JSON of {}", path.display()))?;
    let index = search
        .get_mut("index")
        .context("the search index has no `index`")?;
    let fields: Vec<String> = index["fields"]
        .as_array()
        .context("the search index has no `fields`")?
        .iter()
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect();
    let docs = index["documentStore"]["docs"]
        .as_object()
        .context("the search index keeps no documents (`documentStore.docs`)")?
        .clone();
    ensure!(!docs.is_empty(), "the search index has no documents");

    // field → token → doc → count
    let mut postings: BTreeMap<&str, BTreeMap<String, BTreeMap<String, u32>>> = BTreeMap::new();
    let mut info = Map::new();
    for (doc_ref, doc) in &docs {
        let mut lengths = Map::new();
        for field in &fields {
            let text = doc.get(field).and_then(Value::as_str).unwrap_or_default();
            let tokens = tokens(text);
            lengths.insert(field.clone(), json!(tokens.len()));
            let field_postings = postings.entry(field.as_str()).or_default();
            for token in tokens {
                *field_postings
                    .entry(token)
                    .or_default()
                    .entry(doc_ref.clone())
                    .or_default() += 1;
            }
        }
        info.insert(doc_ref.clone(), Value::Object(lengths));
    }

    let mut distinct = std::collections::BTreeSet::new();
    let mut inverted = Map::new();
    for field in &fields {
        let mut root = node();
        for (token, counts) in postings.get(field.as_str()).into_iter().flatten() {
            distinct.insert(token.clone());
            let mut at = &mut root;
            for c in token.chars() {
                let children = at.as_object_mut().context("a trie node is an object")?;
                at = children.entry(c.to_string()).or_insert_with(node);
            }
            let mut refs = Map::new();
            for (doc_ref, count) in counts {
                // elasticlunr's addDoc: the square root of the count.
                refs.insert(doc_ref.clone(), json!({ "tf": f64::from(*count).sqrt() }));
            }
            at["df"] = json!(refs.len());
            at["docs"] = Value::Object(refs);
        }
        inverted.insert(field.clone(), json!({ "root": root }));
    }
    index["index"] = Value::Object(inverted);
    index["documentStore"]["docInfo"] = Value::Object(info);
    index["pipeline"] = json!([]);
    search["search_options"]["bool"] = json!("AND");

    let rebuilt = format!(
        "{}\n{}",
        tokenizer_js()?,
        escape(&serde_json::to_string(&search)?)
    );
    std::fs::write(&path, rebuilt)?;
    Ok(distinct.len())
}

/// An empty node of elasticlunr's inverted-index trie.
fn node() -> Value {
    json!({ "docs": {}, "df": 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_text_is_cut_into_overlapping_pairs_and_latin_words_are_kept() {
        assert_eq!(
            tokens("控制器的工作队列，informer-x 和 Step_8！"),
            [
                "控制", "制器", "器的", "的工", "工作", "作队", "队列", "informer", "x", "和",
                "step_8"
            ]
        );
        assert_eq!(tokens("速率限制"), ["速率", "率限", "限制"]);
        assert!(tokens("— …， ").is_empty());
    }

    #[test]
    fn the_index_survives_mdbooks_escaping_both_ways() {
        let json = r#"{"a":"it's a \\ backslash and a \"quote\""}"#;
        assert_eq!(unescape(&escape(json)).unwrap(), json);
    }

    #[test]
    fn a_rebuilt_index_holds_each_pair_with_its_documents() {
        let dir = tempfile::tempdir().unwrap();
        let search = json!({
            "results_options": {},
            "search_options": {"bool": "OR", "expand": true},
            "doc_urls": ["a.html", "b.html"],
            "index": {
                "fields": ["title", "body"],
                "ref": "id",
                "pipeline": ["trimmer", "stopWordFilter", "stemmer"],
                "index": {},
                "documentStore": {
                    "docs": {
                        "0": {"id": "0", "title": "工作队列", "body": "队列，队列"},
                        "1": {"id": "1", "title": "控制器", "body": "没有队列"}
                    },
                    "docInfo": {}, "length": 2, "save": true
                }
            }
        });
        let path = dir.path().join("searchindex-0123.js");
        std::fs::write(&path, escape(&search.to_string())).unwrap();
        let distinct = rewrite_index(dir.path()).unwrap();
        assert_eq!(distinct, 7, "工作 作队 队列 控制 制器 没有 有队");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(
            written.starts_with("// The Chinese edition's search tokenizer."),
            "{written:.80}"
        );
        let rebuilt: Value = serde_json::from_str(&unescape(&written).unwrap()).unwrap();
        let body = &rebuilt["index"]["index"]["body"]["root"];
        let queue = &body["队"]["列"];
        assert_eq!(queue["df"], 2);
        assert_eq!(queue["docs"]["0"]["tf"], json!(2f64.sqrt()));
        assert_eq!(queue["docs"]["1"]["tf"], json!(1.0));
        assert_eq!(body["队"]["df"], 0, "a prefix alone is no token");
        assert_eq!(rebuilt["index"]["documentStore"]["docInfo"]["0"]["body"], 2);
        assert_eq!(rebuilt["index"]["pipeline"], json!([]));
        assert_eq!(rebuilt["search_options"]["bool"], "AND");
    }
}
