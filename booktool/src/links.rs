//! The rendered book's links: every relative `href` and `src` points at a
//! file that exists and, with a `#fragment`, at an element with that id.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use course::workspace::rel;
use scraper::Html;

/// Every relative `href` and `src` in the rendered book points at a file that
/// exists and, with a `#fragment`, at an element with that id.
pub(crate) fn check_rendered_links(html: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    collect_files(html, &mut files)?;
    let mut ids: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    let mut pages = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "html"))
    {
        let page = parse_without_scripts(&std::fs::read_to_string(file)?);
        ids.insert(
            file.clone(),
            attribute_values(&page, "id").into_iter().collect(),
        );
        pages.push((file.clone(), page));
    }
    let mut failures = Vec::new();
    let mut count = 0;
    for (file, page) in &pages {
        // The print page repeats every chapter with rewritten links; the
        // 404 page uses absolute paths from `site-url`.
        let name = file.file_name().unwrap_or_default();
        if name == "print.html" || name == "404.html" {
            continue;
        }
        for target in [
            attribute_values(page, "href"),
            attribute_values(page, "src"),
        ]
        .concat()
        {
            if target.contains("://")
                || target.starts_with("mailto:")
                || target.starts_with("javascript:")
                || target.starts_with("data:")
                || target.starts_with("{{")
            {
                continue;
            }
            count += 1;
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let path = path.split('?').next().unwrap_or_default();
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                normalise(&file.parent().unwrap_or(html).join(path))
            };
            let resolved = if resolved.is_dir() {
                resolved.join("index.html")
            } else {
                resolved
            };
            if !resolved.is_file() {
                failures.push(format!(
                    "{}: link {target:?} points at a missing file",
                    rel(file)
                ));
                continue;
            }
            if let Some(fragment) = fragment.filter(|f| !f.is_empty())
                && let Some(known) = ids.get(&resolved)
                && !known.contains(fragment)
            {
                failures.push(format!(
                    "{}: link {target:?} names an anchor that {} does not have",
                    rel(file),
                    rel(&resolved)
                ));
            }
        }
    }
    println!("    {count} relative links and anchors checked");
    Ok(failures)
}

pub(crate) fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// `html` as a browser without scripts reads it: what a `<noscript>` holds
/// (mdBook's sidebar frame) is elements, with links, not text.
fn parse_without_scripts(html: &str) -> Html {
    use html5ever::tendril::TendrilSink;
    let mut options = html5ever::ParseOpts::default();
    options.tree_builder.scripting_enabled = false;
    html5ever::parse_document(scraper::HtmlTreeSink::new(Html::new_document()), options).one(html)
}

/// The values of every `name` attribute of the page's elements, as an
/// HTML parser reads them (entities decoded; never text that only looks like
/// an attribute, in code or a script).
fn attribute_values(page: &Html, name: &str) -> Vec<String> {
    let elements = crate::html::select(page, &format!("[{name}]"));
    elements
        .iter()
        .filter_map(|element| element.attr(name).map(str::to_string))
        .collect()
}

/// `a/b/../c` → `a/c`, without touching the file system.
pub(crate) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_link_to_a_missing_file_or_anchor_is_named_and_code_that_looks_like_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.html"), r#"<h2 id="there">There</h2>"#).unwrap();
        let index = r##"<p><a href="a.html#there">ok</a>, <a href='a.html#nowhere'>no anchor</a>,
<a href="a.html?x=1&amp;y=2#there">a query</a>, <img src="gone.png"></p>
<noscript><iframe src="a.html#frame"></iframe></noscript>
<pre><code>&lt;a href="missing.html"&gt;</code></pre>
<script>const s = ' href="script.html"';</script>"##;
        std::fs::write(dir.path().join("index.html"), index).unwrap();
        let failures = check_rendered_links(dir.path()).unwrap();
        assert_eq!(failures.len(), 3, "{failures:#?}");
        let anchor = format!(
            r#"link "a.html#nowhere" names an anchor that {} does not have"#,
            rel(&dir.path().join("a.html"))
        );
        assert!(failures[0].ends_with(&anchor), "{failures:#?}");
        assert!(
            failures[1].ends_with(r#"link "gone.png" points at a missing file"#),
            "{failures:#?}"
        );
        // What a browser without scripts shows is checked too.
        assert!(
            failures[2].contains(r#"link "a.html#frame" names an anchor"#),
            "{failures:#?}"
        );
    }
}
