//! Links to Go source by name: `[syncHandler](go:controller.go#syncHandler)`.
//!
//! A chapter never types a Go line number or a version. It names the file and
//! what in it, and the preprocessor writes the pinned GitHub link, with the
//! line range it has in the pinned module, at build time. A name that no
//! longer resolves (a function renamed or removed upstream) fails the book's
//! build and its check.
//!
//! # The form
//!
//! `go:[k8s.io/MODULE/]PATH[#SELECTOR]`, as the target of a Markdown link
//! (`[text](go:…)`, `[label]: go:…`) or of `<a href="go:…">`:
//!
//! * the module is the Go sample-controller unless the path starts with
//!   `k8s.io/NAME/` (`k8s.io/client-go/tools/cache/reflector.go`): a staging
//!   module of the same Kubernetes release, or `k8s.io/kubernetes` itself;
//!   the versions are `versions.toml`'s;
//! * no selector: the file; `go:` alone: the repository at the pinned tag;
//! * in a `.go` file (see [`Selector`]): `syncHandler` or `Foo,FooSpec`,
//!   whole top-level declarations with their comments; `syncHandler/Get`,
//!   the statement inside `syncHandler` whose first line uses `Get` (with
//!   its comment, through its closing line); `main/NewSharedInformerFactory..Start`,
//!   the statements from one through the other, in one block; `Name@2` for
//!   the second statement that uses `Name`; `Name+1` for the statement after
//!   it (in `A..B`, B is counted from A's statement on). A statement is what
//!   the Go parser holds in a list and begins a line: a statement of a
//!   block, an element of a composite literal, a case, a spec of a grouped
//!   declaration, a field, or a call's argument when they stand one a line
//!   ([`super::scan::Statement`]);
//! * in any other file: `replicas:`, the first line containing that text and
//!   the lines below it indented deeper (a YAML key with its value, a shell
//!   command with its continuation lines); `A..B` from one through the other.
//!
//! The same selectors work in `{{#go FILE:SELECTOR}}` excerpts.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use testcluster::binaries::Release;

use super::modcache::source_file;
use super::scan::{GoFile, Statement, contains_word};
use super::selector::{Pick, Selector};
use crate::markdown::{line_of, link_targets};

/// The scheme that marks a link as one to resolve.
const SCHEME: &str = "go:";

/// A Go module the book may link into, and the GitHub repository it is
/// published from (`kubernetes/NAME` for every one of them).
struct Module {
    /// `k8s.io/client-go`.
    path: String,
    /// `client-go`: the repository's name under github.com/kubernetes.
    repo: String,
    version: String,
}

impl Module {
    /// The module of `spec`'s path at `release`, and the path inside it.
    fn of(spec_path: &str, release: &Release) -> Result<(Module, String)> {
        let Some(rest) = spec_path.strip_prefix("k8s.io/") else {
            let module = Module {
                path: super::GO_MODULE.to_string(),
                repo: "sample-controller".to_string(),
                version: release.staging.clone(),
            };
            return Ok((module, spec_path.to_string()));
        };
        let (name, path) = rest
            .split_once('/')
            .with_context(|| format!("go:{spec_path}: k8s.io/MODULE/PATH, with a path"))?;
        let version = if name == "kubernetes" {
            release.kubernetes.clone()
        } else {
            release.staging.clone()
        };
        let module = Module {
            path: format!("k8s.io/{name}"),
            repo: name.to_string(),
            version,
        };
        Ok((module, path.to_string()))
    }

    fn url(&self, path: &str) -> String {
        format!(
            "https://github.com/kubernetes/{}/blob/{}/{path}",
            self.repo, self.version
        )
    }
}

impl GoFile {
    /// The lines `selector` picks: (first, last), 1-based.
    pub(super) fn select(&self, selector: &Selector) -> Result<(usize, usize)> {
        match selector {
            Selector::Decls(names) => self.resolve(names),
            Selector::Statements { decl, first, last } => {
                let d = &self.decls[self.unique_decl(decl)?];
                let inside: Vec<Statement> = self
                    .statements
                    .iter()
                    .filter(|s| s.first > d.line && s.first < d.end)
                    .copied()
                    .collect();
                let start = self.statement_using(first, &inside).with_context(|| {
                    format!("`{decl}` has no statement whose first line uses `{first}`")
                })?;
                let end = match last {
                    None => start,
                    Some(last) => {
                        let block: Vec<Statement> = inside
                            .iter()
                            .filter(|s| s.list == start.list && s.first >= start.first)
                            .copied()
                            .collect();
                        self.statement_using(last, &block).with_context(|| {
                            format!(
                                "`{decl}` has no statement using `{last}` after line {}, \
                                 in the block of `{first}`",
                                start.first
                            )
                        })?
                    }
                };
                Ok((self.comment_above(start.first), end.last))
            }
            Selector::Text { first, last } => {
                let start = self
                    .line_with(first, 1)
                    .with_context(|| format!("{} has no line containing `{first}`", self.path))?;
                let end_line = match last {
                    None => start,
                    Some(last) => self.line_with(last, start).with_context(|| {
                        format!(
                            "{} has no line containing `{last}` after line {start}",
                            self.path
                        )
                    })?,
                };
                Ok((start, self.indented_block_end(end_line)))
            }
        }
    }

    /// The index of the one top-level declaration named `name`.
    fn unique_decl(&self, name: &str) -> Result<usize> {
        let matching: Vec<usize> = (0..self.decls.len())
            .filter(|&i| self.decls[i].keyword != "package")
            .filter(|&i| self.decls[i].names.iter().any(|n| n == name))
            .collect();
        match matching.as_slice() {
            [one] => Ok(*one),
            [] => bail!("{} declares no top-level `{name}`", self.path),
            _ => bail!("{} declares `{name}` more than once", self.path),
        }
    }

    /// The `pick.nth` of `statements` whose first line uses `pick.word`, or
    /// the `pick.after`th statement after that one in its block.
    fn statement_using(&self, pick: &Pick, statements: &[Statement]) -> Option<Statement> {
        let found = statements
            .iter()
            .filter(|s| contains_word(self.code(s.first), &pick.word))
            .nth(pick.nth - 1)?;
        if pick.after == 0 {
            return Some(*found);
        }
        statements
            .iter()
            .filter(|s| s.list == found.list && s.first > found.first)
            .nth(pick.after - 1)
            .copied()
    }

    /// The first line of the comment right above line `n` (touching it), or `n`.
    pub(super) fn comment_above(&self, n: usize) -> usize {
        (1..n)
            .rev()
            .take_while(|&l| self.at(l).comment_only && !self.at(l).blank)
            .last()
            .unwrap_or(n)
    }

    /// The `pick.nth` line from `from` on containing `pick.word` (any text).
    fn line_with(&self, pick: &Pick, from: usize) -> Option<usize> {
        (from..=self.lines.len())
            .filter(|&l| self.line(l).contains(pick.word.as_str()))
            .nth(pick.nth - 1)
    }

    /// The last of the lines below `n` indented deeper than it (blank lines
    /// inside count, blank lines at the end do not).
    fn indented_block_end(&self, n: usize) -> usize {
        let indent = |l: &str| l.len() - l.trim_start().len();
        let own = indent(self.line(n));
        let mut end = n;
        for l in n + 1..=self.lines.len() {
            let text = self.line(l);
            if text.trim().is_empty() {
                continue;
            }
            if indent(text) <= own {
                break;
            }
            end = l;
        }
        end
    }
}

/// A `go:` link in a page.
#[derive(Debug)]
pub(super) struct SourceLink {
    /// Byte range of `go:…` in the page.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) line: usize,
    /// What follows `go:`.
    pub(super) spec: String,
}

/// Every `go:` link target in `page` (inline links, reference
/// definitions, `href="…"`), never in code.
pub(super) fn source_links(page: &str) -> Vec<SourceLink> {
    link_targets(page, SCHEME)
        .into_iter()
        .map(|range| SourceLink {
            start: range.start,
            end: range.end,
            line: line_of(page, range.start),
            spec: page[range.start + SCHEME.len()..range.end].to_string(),
        })
        .collect()
}

/// The Go module (path and version) a `go:` spec reads at `release`.
pub(super) fn module_of(spec: &str, release: &Release) -> Result<(String, String)> {
    let path = spec.split_once('#').map_or(spec, |(path, _)| path);
    let (module, _) = Module::of(path, release)?;
    Ok((module.path, module.version))
}

/// The pinned URL a `go:` spec stands for, with its line range when it has a
/// selector.
pub(super) fn resolve(spec: &str) -> Result<String> {
    Ok(resolve_at(spec, &Release::pinned())?.0)
}

/// The URL a `go:` spec stands for at `release`, and the lines it selects
/// (none for a whole file or the repository).
pub(super) fn resolve_at(spec: &str, release: &Release) -> Result<(String, Option<String>)> {
    // `go:` alone: the Go sample-controller's repository at the tag.
    if spec.is_empty() {
        let (module, _) = Module::of("", release)?;
        let url = format!(
            "https://github.com/kubernetes/{}/tree/{}",
            module.repo, module.version
        );
        return Ok((url, None));
    }
    let (path, selector) = match spec.split_once('#') {
        Some((path, selector)) => (path, Some(selector)),
        None => (spec, None),
    };
    let (module, path) = Module::of(path, release)?;
    let file: Arc<GoFile> = source_file(&module.path, &module.version, &path)?;
    let url = module.url(&path);
    let Some(selector) = selector else {
        return Ok((url, None));
    };
    let selector = Selector::parse(&path, selector)?;
    let (first, last) = file
        .select(&selector)
        .with_context(|| format!("go:{spec}"))?;
    let lines = (first..=last)
        .map(|l| file.line(l))
        .collect::<Vec<_>>()
        .join("\n");
    let url = if first == last {
        format!("{url}#L{first}")
    } else {
        format!("{url}#L{first}-L{last}")
    };
    Ok((url, Some(lines)))
}

/// What a link's text says in place of the lines it selects: the
/// preprocessor writes `lines 25–28` (or `line 284`) there, so that no line
/// number is typed by hand.
pub(super) const LINES: &str = "{lines}";

/// `page` with every `go:` link replaced by its pinned URL, and [`LINES`] in
/// an inline link's text by the lines it points at; a link that does not
/// resolve, or [`LINES`] in the text of a link to a whole file, is an error
/// naming the page and line.
pub(super) fn expand(page_name: &str, page: &str) -> Result<String> {
    let mut out = String::with_capacity(page.len());
    let mut from = 0;
    for link in source_links(page) {
        let at = || format!("{page_name}:{}", link.line);
        let url = resolve(&link.spec).with_context(at)?;
        out.push_str(&page[from..link.start]);
        if out.ends_with("](") {
            let text_start = out.rfind('[').unwrap_or(0);
            if out[text_start..].contains(LINES) {
                let lines = lines_of(&url).with_context(|| {
                    format!("{}: {LINES} in the text of a link to no lines", at())
                })?;
                let text = out[text_start..].replace(LINES, &lines);
                out.truncate(text_start);
                out.push_str(&text);
            }
        }
        out.push_str(&url);
        from = link.end;
    }
    out.push_str(&page[from..]);
    Ok(out)
}

/// `lines 25–28` for a URL ending in `#L25-L28`, `line 284` for `#L284`.
fn lines_of(url: &str) -> Option<String> {
    let (_, range) = url.rsplit_once("#L")?;
    Some(match range.split_once("-L") {
        Some((first, last)) => format!("lines {first}–{last}"),
        None => format!("line {range}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small gofmt'd file with the shapes the selectors meet.
    const FILE: &str = "package main

// Thing is a thing.
type Thing struct {
\tName string
}

// run does the work.
func run(ctx context.Context) error {
\tlogger := klog.FromContext(ctx)

\t// Ask the server.
\tthing, err := client.Get(ctx,
\t\t\"name\")
\tif err != nil {
\t\treturn err
\t} else {
\t\tlogger.Info(\"got\")
\t}
\tlogger.Info(\"done\", \"thing\", thing)
\treturn nil
}
";

    fn file() -> GoFile {
        GoFile::parse("run.go", FILE).unwrap()
    }

    fn select(selector: &str) -> Result<(usize, usize)> {
        file().select(&Selector::parse("run.go", selector)?)
    }

    #[test]
    fn a_declaration_is_picked_with_its_comment() {
        assert_eq!(select("run").unwrap(), (8, 22));
        assert_eq!(select("Thing").unwrap(), (3, 6));
        assert_eq!(select("Thing,run").unwrap(), (3, 22));
    }

    #[test]
    fn a_statement_is_picked_with_its_comment_through_its_closing_line() {
        assert_eq!(select("run/Get").unwrap(), (12, 14));
        assert_eq!(
            select("run/err").unwrap(),
            (12, 14),
            "the first statement using err"
        );
        assert_eq!(
            select("run/err@2").unwrap(),
            (15, 19),
            "the if, with its else"
        );
        assert_eq!(select("run/FromContext").unwrap(), (10, 10));
        assert_eq!(
            select("run/Get+1").unwrap(),
            (15, 19),
            "the statement after"
        );
        assert_eq!(select("run/Get+2").unwrap(), (20, 20));
        assert!(select("run/Info@2+3").is_err(), "past the end of its block");
    }

    #[test]
    fn a_range_of_statements_runs_from_one_to_the_other_in_the_same_block() {
        assert_eq!(select("run/Get..Info").unwrap(), (12, 20));
        // `Info` inside the else block is deeper: not the end of this range.
        assert_eq!(select("run/err@2..Info").unwrap(), (15, 20));
    }

    #[test]
    fn a_name_no_statement_uses_is_an_error_that_says_so() {
        let err = select("run/Delete").unwrap_err();
        assert!(format!("{err:#}").contains("no statement whose first line uses `Delete`"));
        let err = select("walk/Get").unwrap_err();
        assert!(format!("{err:#}").contains("declares no top-level `walk`"));
        // A continuation line of a call is not a statement of its own.
        assert!(select("run/name").is_err());
    }

    #[test]
    fn an_element_of_a_composite_literal_is_picked_like_a_statement() {
        let go = GoFile::parse(
            "new.go",
            "package main\n\nfunc main() {\n\tc := &C{\n\t\ta: 1,\n\t\tb: f(x,\n\t\t\ty),\n\t\td: 2,\n\t}\n}\n",
        )
        .unwrap();
        let pick = |s: &str| go.select(&Selector::parse("new.go", s).unwrap());
        assert_eq!(pick("main/b").unwrap(), (6, 7));
        assert_eq!(pick("main/d").unwrap(), (8, 8));
        assert_eq!(pick("main/a..d").unwrap(), (5, 8));
        assert!(
            pick("main/y").is_err(),
            "an argument's line is not an element"
        );
        assert_eq!(pick("main").unwrap(), (3, 10), "not the package clause");
    }

    #[test]
    fn arguments_one_a_line_and_the_specs_of_a_group_are_picked_like_statements() {
        let go = GoFile::parse(
            "q.go",
            "package main\n\nconst (\n\t// Spam.\n\tburst = 25\n\tqps   = 1. / 300.\n)\n\n\
             func main() {\n\tq := New(\n\t\tfirst(1),\n\t\tsecond(2),\n\t)\n}\n",
        )
        .unwrap();
        let pick = |s: &str| go.select(&Selector::parse("q.go", s).unwrap());
        assert_eq!(
            pick("const/burst..qps").unwrap(),
            (4, 6),
            "a spec ending in `.` does not run on into the `)`"
        );
        assert_eq!(pick("main/second").unwrap(), (12, 12));
        assert_eq!(pick("main/first+1").unwrap(), (12, 12));
        assert_eq!(pick("main/New").unwrap(), (10, 13));
    }

    #[test]
    fn text_selectors_take_the_lines_indented_below() {
        let yaml = GoFile::parse(
            "crd.yaml",
            "spec:\n  replicas:\n    type: integer\n    minimum: 1\n  status:\n    type: object\n",
        )
        .unwrap();
        let pick = |s: &str| yaml.select(&Selector::parse("crd.yaml", s).unwrap());
        assert_eq!(pick("replicas:").unwrap(), (2, 4));
        assert_eq!(pick("replicas:..status:").unwrap(), (2, 6));
        assert!(pick("selector:").is_err());
    }

    #[test]
    fn links_are_found_as_link_targets_only() {
        let page = "See [run](go:run.go#run) and [x][r].\n\n[r]: go:k8s.io/client-go/rest/config.go#DefaultQPS\n\
                    <a href=\"go:main.go\">main</a>, but not go:run.go in prose\n\n```text\n[a](go:b.go)\n```\n";
        let specs: Vec<String> = source_links(page).into_iter().map(|l| l.spec).collect();
        assert_eq!(
            specs,
            [
                "run.go#run",
                "k8s.io/client-go/rest/config.go#DefaultQPS",
                "main.go"
            ]
        );
    }

    #[test]
    fn a_module_path_picks_its_repository_and_release() {
        use testcluster::binaries::{KUBERNETES_VERSION, STAGING_VERSION};
        let release = Release::pinned();
        let (client_go, path) = Module::of("k8s.io/client-go/rest/config.go", &release).unwrap();
        assert_eq!(path, "rest/config.go");
        assert_eq!(
            client_go.url(&path),
            format!(
                "https://github.com/kubernetes/client-go/blob/{STAGING_VERSION}/rest/config.go"
            )
        );
        let (kubernetes, _) =
            Module::of("k8s.io/kubernetes/pkg/features/kube_features.go", &release).unwrap();
        assert_eq!(kubernetes.version, KUBERNETES_VERSION);
        let (sample, path) = Module::of("controller.go", &release).unwrap();
        assert_eq!(
            (sample.repo.as_str(), path.as_str()),
            ("sample-controller", "controller.go")
        );
    }

    #[test]
    fn a_links_text_gets_the_lines_its_url_points_at() {
        assert_eq!(
            lines_of("https://x/main.go#L25-L28").as_deref(),
            Some("lines 25–28")
        );
        assert_eq!(
            lines_of("https://x/main.go#L284").as_deref(),
            Some("line 284")
        );
        assert_eq!(lines_of("https://x/main.go"), None);
    }

    #[test]
    fn selectors_print_as_they_are_written() {
        for text in [
            "run",
            "Thing,run",
            "run/Get",
            "run/err@2..Info",
            "run/Get+1",
            "run/a@2+3",
        ] {
            assert_eq!(Selector::parse("run.go", text).unwrap().to_string(), text);
        }
    }
}
