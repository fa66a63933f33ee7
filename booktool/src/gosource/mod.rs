//! The Go source beside the Rust: Go excerpts and Go links, resolved by name
//! against the pinned modules when the book is built.
//!
//! Nothing Go is stored in `book/src`: the Go lines come from the pinned
//! module (`k8s.io/sample-controller@SAMPLE_CONTROLLER_VERSION`, from
//! versions.toml) in Go's module cache, found with `go mod download -json`
//! and remembered in `target/book-gosource/`. No page types a Go line number
//! or a tag: it names the declaration or statement, and the build finds its
//! lines at the pinned tag.
//!
//! # The `{{#go FILE:SELECTOR}}` directive
//!
//! A line of its own in a chapter: `{{#go controller.go:syncHandler}}` shows
//! the whole top-level declaration (function, method, type, `const`/`var`
//! name or group), from its leading comments to its closing line; several
//! names (`…/types.go:Foo,FooSpec`) show consecutive declarations;
//! `{{#go main.go:main/Start..Start@2}}` shows statements inside one (the
//! selectors are `selector.rs`'s `Selector`).
//!
//! `cargo xtask book preprocess` (the `[preprocessor.gosource]` of
//! book.toml, run before mdBook's `links`) replaces it by the Go code (dedented,
//! in a ```go block) and the upstream license notice: the file's copyright
//! line, Apache-2.0, and a link to the pinned file and lines. If the next
//! thing after the directive is a fenced code block (the Rust include), both
//! become one tab group, "Go" and "Rust", Rust shown first: radio inputs and
//! CSS (`book/theme/gosource.css`); `book/theme/gosource.js` keeps one choice
//! for the whole book (`?gosource=go` in the URL picks Go) and numbers the Go
//! lines as in the file. A directive inside a code block, or written
//! `\{{#go …}}`, is left alone.
//!
//! # `go:` links
//!
//! `[syncHandler](go:controller.go#syncHandler)`: see `links.rs`. The same
//! preprocessor writes the pinned URL with its line range.
//!
//! # The check
//!
//! `cargo xtask book check` resolves every directive and every `go:` link,
//! and fails on a ```go block in book/src: Go is shown only through
//! `{{#go}}`. A typed line fragment (`#L48-L52`) in any tracked file, the
//! book's included, fails `cargo test -p testcluster --test versions`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

// Only a test reads it: the book's claim that step 8's leader-election
// flags are kube-controller-manager's.
#[cfg(test)]
mod leader_flags;
mod links;
mod markdown;
mod modcache;
mod render;
mod scan;
mod selector;

use crate::markdown::{code_blocks, line_of};
use course::workspace::rel;
use markdown::{Directive, directives};
use modcache::go_file;
pub use modcache::module_dir;
use render::expand_chapter;
use scan::GoFile;
use testcluster::binaries::Release;

/// The Go module the book quotes, at `testcluster::binaries::SAMPLE_CONTROLLER_VERSION`.
pub const GO_MODULE: &str = "k8s.io/sample-controller";
const REPO_URL: &str = "https://github.com/kubernetes/sample-controller";

fn tag() -> &'static str {
    testcluster::binaries::SAMPLE_CONTROLLER_VERSION
}

fn blob_url(path: &str) -> String {
    format!("{REPO_URL}/blob/{}/{path}", tag())
}

fn lines_url(path: &str, first: usize, last: usize) -> String {
    if first == last {
        format!("{}#L{first}", blob_url(path))
    } else {
        format!("{}#L{first}-L{last}", blob_url(path))
    }
}

/// `238–312` or `134`.
fn span_text(first: usize, last: usize) -> String {
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}–{last}")
    }
}

// ---------------------------------------------------------------------------
// The subcommands

/// A page with its `{{#go}}` directives and `go:` links expanded (the
/// book's preprocessor calls it first: [`crate::preprocess`]).
pub(crate) fn expand(page: &str, content: &str) -> Result<String> {
    let expanded = expand_chapter(page, content)?;
    links::expand(page, &expanded)
}

/// `cargo xtask book go-link FILE NAME`: the pinned link of a declaration.
pub fn print_link(file: &str, name: &str) -> Result<()> {
    let spec = format!("{file}#{name}");
    // Resolved first, so that a name the pinned file lacks is an error here.
    let url = links::resolve(&spec)?;
    println!("[`{name}`](go:{spec})   <!-- {url} -->");
    Ok(())
}

// ---------------------------------------------------------------------------
// The check

/// `cargo xtask book check`'s Go checks over every page: each `{{#go}}`
/// resolves and names what it shows, each line link into the Go
/// sample-controller names its function or block, and no Go code is
/// stored in book/src.
pub fn check(pages: &BTreeMap<PathBuf, String>) -> Result<Vec<String>> {
    let dir = module_dir()?;
    let mut failures = Vec::new();
    let (mut links, mut excerpts) = (0, 0);
    for (page, text) in pages {
        let name = rel(page);
        for block in code_blocks(text) {
            if block.language() == "go" {
                let start = block.range.start;
                failures.push(format!(
                    "{name}:{}: a ```go block: Go code is not stored in the book; show it with \
                     {{{{#go FILE:NAME}}}} (rendered from the module cache at build time)",
                    line_of(text, start)
                ));
            }
        }
        for directive in directives(text) {
            excerpts += 1;
            let directive = match directive {
                Ok(d) => d,
                Err((line, why)) => {
                    failures.push(format!("{name}:{line}: {why}"));
                    continue;
                }
            };
            let alone = text[..directive.start]
                .rsplit('\n')
                .next()
                .unwrap_or("")
                .trim()
                .is_empty()
                && text[directive.end..]
                    .split('\n')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .is_empty();
            if !alone {
                failures.push(format!(
                    "{name}:{}: {{{{#go}}}} must stand alone on its line",
                    directive.line
                ));
            }
            if let Err(why) = resolve_directive(&directive) {
                failures.push(format!("{name}:{}: {why:#}", directive.line));
            }
        }
        for link in links::source_links(text) {
            links += 1;
            if let Err(err) = links::resolve(&link.spec) {
                failures.push(format!("{name}:{}: {err:#}", link.line));
            }
        }
    }
    println!(
        "    {links} Go links and {excerpts} Go excerpts resolved against {GO_MODULE}@{} ({})",
        tag(),
        dir.display()
    );
    Ok(failures)
}

/// The Go modules the book's Go excerpts and `go:` links read at each of
/// `releases`: fetched into Go's module cache now, so that a module the proxy does not serve stops a command
/// once, before it compares or changes anything, naming that module.
pub fn require_modules(releases: &[&Release]) -> Result<()> {
    let src = course::workspace::repo_root().join("book/src");
    let mut modules = std::collections::BTreeSet::new();
    for release in releases {
        modules.insert((GO_MODULE.to_string(), release.staging.clone()));
    }
    for entry in std::fs::read_dir(&src)?.flatten() {
        let page = entry.path();
        if page.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&page)?;
        for link in links::source_links(&text) {
            for release in releases {
                modules.insert(links::module_of(&link.spec, release)?);
            }
        }
    }
    for (module, version) in &modules {
        modcache::module_dir_of(module, version).with_context(|| {
            format!(
                "{module}@{version} is not available (the book reads it, so nothing was \
                 compared or changed)"
            )
        })?;
    }
    Ok(())
}

/// Every Go excerpt and `go:` link of the book's pages (`book/src/*.md`)
/// whose Go source differs between two releases: what a person re-reads
/// after a bump. Each entry is `page:line: what, and how it changed`.
pub fn changed_passages(from: &Release, to: &Release) -> Result<Vec<String>> {
    let src = course::workspace::repo_root().join("book/src");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&src)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let mut changed = Vec::new();
    let compare = |at: String,
                   what: String,
                   old: Result<Option<String>>,
                   new: Result<Option<String>>| {
        match (old, new) {
            (Ok(old), Ok(new)) if old == new => None,
            (Ok(_), Ok(_)) => Some(format!("{at}: {what}: the Go source changed")),
            (Ok(_), Err(err)) => Some(format!("{at}: {what}: no longer resolves: {err:#}")),
            (Err(err), _) => Some(format!(
                "{at}: {what}: does not resolve at {}: {err:#}",
                from.staging
            )),
        }
    };
    for page in pages {
        let text = std::fs::read_to_string(&page)?;
        let name = rel(&page);
        for link in links::source_links(&text) {
            if !link.spec.contains('#') {
                continue; // a whole file: nothing to re-read line by line
            }
            let at =
                |release: &Release| links::resolve_at(&link.spec, release).map(|(_, lines)| lines);
            if let Some(entry) = compare(
                format!("{name}:{}", link.line),
                format!("go:{}", link.spec),
                at(from),
                at(to),
            ) {
                changed.push(entry);
            }
        }
        for directive in directives(&text).into_iter().flatten() {
            let at = |release: &Release| -> Result<Option<String>> {
                let file = modcache::source_file(GO_MODULE, &release.staging, &directive.path)?;
                let (first, last) = file.select(&directive.selector)?;
                Ok(Some(
                    (first..=last)
                        .map(|l| file.line(l))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ))
            };
            if let Some(entry) = compare(
                format!("{name}:{}", directive.line),
                format!("{{{{#go {}:{}}}}}", directive.path, directive.selector),
                at(from),
                at(to),
            ) {
                changed.push(entry);
            }
        }
    }
    Ok(changed)
}

/// The file and lines a directive shows; `Err` if they do not resolve.
fn resolve_directive(directive: &Directive) -> Result<(Arc<GoFile>, usize, usize)> {
    let file = go_file(&directive.path)?;
    let (first, last) = file
        .select(&directive.selector)
        .with_context(|| format!("{{{{#go {}:{}}}}}", directive.path, directive.selector))?;
    Ok((file, first, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use markdown::parse_directive;
    use render::following_fence;
    use selector::Selector;

    const GO: &str = "/*
Copyright 2017 The Kubernetes Authors.
*/

package main

const controllerAgentName = \"sample-controller\"

const (
\t// SuccessSynced is used
\tSuccessSynced = \"Synced\"
\tFieldManager = controllerAgentName
)

// +genclient

// Foo is a Foo
type Foo struct {
\tName string `json:\"name\"`
}

// run runs.
// It has two comment lines.
func (c *Controller) run(ctx context.Context) error {
\tfoo, err := c.get(\"}\")
\tif err != nil {
\t\treturn err
\t}

\t// Set up a handler
\tc.informer.AddEventHandler(Funcs{
\t\tAddFunc: c.enqueue,
\t})
\treturn nil
}
";

    fn file() -> GoFile {
        GoFile::parse("controller.go", GO).unwrap()
    }

    fn select(selector: &str) -> Result<(usize, usize)> {
        file().select(&Selector::parse("controller.go", selector)?)
    }

    #[test]
    fn finds_declarations_with_their_comments() {
        let f = file();
        let found: Vec<(Vec<String>, Vec<usize>, usize)> = f
            .decls
            .iter()
            .map(|d| (d.names.clone(), d.starts.clone(), d.end))
            .collect();
        assert_eq!(
            found,
            vec![
                (vec!["package".into(), "main".into()], vec![5], 5),
                (vec!["controllerAgentName".into()], vec![7], 7),
                (
                    vec![
                        "const".into(),
                        "SuccessSynced".into(),
                        "FieldManager".into()
                    ],
                    vec![9],
                    13
                ),
                (vec!["Foo".into()], vec![15, 17, 18], 20),
                (vec!["run".into()], vec![22, 24], 35),
            ]
        );
        assert_eq!(f.copyright, "Copyright 2017 The Kubernetes Authors.");
        assert_eq!(f.resolve(&["run".into()]).unwrap(), (22, 35));
    }

    #[test]
    fn declarations_resolve_whole_and_consecutive() {
        assert_eq!(select("run").unwrap(), (22, 35));
        assert_eq!(
            select("controllerAgentName,SuccessSynced").unwrap(),
            (7, 13)
        );
        assert_eq!(
            select("FieldManager").unwrap(),
            (9, 13),
            "a name in a group: the group"
        );
        assert_eq!(
            select("Foo").unwrap(),
            (15, 20),
            "from the first comment group"
        );
        let apart = select("controllerAgentName,Foo").unwrap_err();
        assert!(
            format!("{apart:#}").contains("do not follow each other"),
            "{apart:#}"
        );
        assert!(select("Bar").is_err());
    }

    #[test]
    fn statements_inside_a_function_resolve_to_whole_blocks() {
        // A brace in a string does not open a block.
        assert_eq!(select("run/get").unwrap(), (25, 25));
        assert_eq!(select("run/get+1").unwrap(), (26, 28));
        // The end is counted from the first statement on: `err` is on both.
        assert_eq!(select("run/get..err").unwrap(), (25, 25));
        assert_eq!(select("run/get..err@2").unwrap(), (25, 28));
        // With its comment, through the closing of the literal.
        assert_eq!(select("run/AddEventHandler").unwrap(), (30, 33));
        // An element of the literal.
        assert_eq!(select("run/AddFunc").unwrap(), (32, 32));
    }

    #[test]
    fn a_directive_names_a_file_and_a_selector_never_lines() {
        let (path, selector) = parse_directive("controller.go:run/get..err@2").unwrap();
        assert_eq!(path, "controller.go");
        assert_eq!(selector.to_string(), "run/get..err@2");
        assert!(parse_directive("controller.go").is_err());
        let lines = parse_directive("controller.go#L25-L28 lines of run").unwrap_err();
        assert!(lines.contains("no line numbers"), "{lines}");
    }

    #[test]
    fn a_directive_with_a_rust_block_becomes_tabs() {
        let content = "x\n\n{{#go controller.go:syncHandler}}\n\n```rust,ignore\n{{#include a.rs:b}}\n```\n\nafter\n";
        let found = directives(content);
        assert_eq!(found.len(), 1);
        let d = found[0].as_ref().unwrap();
        assert_eq!(d.path, "controller.go");
        let len = following_fence(&content[d.end..]).unwrap();
        assert!(content[d.end..d.end + len].trim_end().ends_with("```"));
        assert_eq!(&content[d.end + len..], "\nafter\n");
    }
}
