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
//! selectors are [`links::Selector`]'s).
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
//! `[syncHandler](go:controller.go#syncHandler)`: see [`links`]. The same
//! preprocessor writes the pinned URL with its line range.
//!
//! # The check
//!
//! `cargo xtask book check` resolves every directive and every `go:` link,
//! fails on a link to a Kubernetes repository with a typed line fragment
//! (`#L48-L52`), and on a ```go block in book/src: Go is shown only through
//! `{{#go}}`.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result, bail, ensure};
use clap::Subcommand;
use serde_json::Value;

mod links;

use links::Selector;

/// The Go module the book quotes, at `testcluster::binaries::SAMPLE_CONTROLLER_VERSION`.
pub const GO_MODULE: &str = "k8s.io/sample-controller";
const REPO_URL: &str = "https://github.com/kubernetes/sample-controller";
const DIRECTIVE: &str = "{{#go ";

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

/// `cargo xtask book preprocess [supports RENDERER]`: mdBook's preprocessor protocol.
#[derive(Subcommand)]
pub enum PreprocessCommand {
    /// mdBook asks whether the preprocessor supports a renderer: yes, every one.
    Supports {
        /// The renderer's name (html, linkcheck2, …).
        renderer: String,
    },
}

/// With no subcommand: reads `[context, book]` JSON from stdin, expands every
/// `{{#go}}` and `go:` link and writes the book JSON to stdout.
/// `supports <renderer>`: exit 0.
pub fn preprocess(command: Option<PreprocessCommand>) -> Result<()> {
    if let Some(PreprocessCommand::Supports { .. }) = command {
        return Ok(());
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading mdBook's [context, book] from stdin")?;
    let (_context, mut book): (Value, Value) =
        serde_json::from_str(&input).context("parsing mdBook's [context, book] JSON")?;
    let key = if book.get("items").is_some() {
        "items"
    } else {
        "sections" // mdBook 0.4
    };
    let items = book.get_mut(key).context("the book JSON has no `items`")?;
    expand_items(items)?;
    serde_json::to_writer(std::io::stdout().lock(), &book).context("writing the book JSON")?;
    Ok(())
}

fn expand_items(items: &mut Value) -> Result<()> {
    let Some(items) = items.as_array_mut() else {
        return Ok(());
    };
    for item in items {
        let Some(chapter) = item.get_mut("Chapter") else {
            continue;
        };
        let page = chapter
            .get("source_path")
            .or_else(|| chapter.get("path"))
            .and_then(Value::as_str)
            .unwrap_or("chapter")
            .to_string();
        if let Some(content) = chapter.get("content").and_then(Value::as_str) {
            let expanded = expand_chapter(&page, content)?;
            let expanded = links::expand(&page, &expanded)?;
            chapter["content"] = Value::String(expanded);
        }
        if let Some(sub_items) = chapter.get_mut("sub_items") {
            expand_items(sub_items)?;
        }
    }
    Ok(())
}

/// `cargo xtask book go-link FILE NAME`: the pinned link of a declaration.
pub fn print_link(file: &str, name: &str) -> Result<()> {
    let go = go_file(file)?;
    let (first, last) = go.resolve(&[name.to_string()])?;
    println!("[`{name}`]({})", lines_url(file, first, last));
    Ok(())
}

// ---------------------------------------------------------------------------
// The module cache

/// The pinned module's directory in Go's module cache.
pub fn module_dir() -> Result<PathBuf> {
    module_dir_of(GO_MODULE, tag())
}

/// The directory of `module@version` in Go's module cache, downloaded if it
/// is not there yet; remembered in `target/book-gosource/`.
fn module_dir_of(module: &str, version: &str) -> Result<PathBuf> {
    static DIRS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let module = format!("{module}@{version}");
    let dirs = DIRS.get_or_init(Default::default);
    if let Some(dir) = dirs.lock().unwrap_or_else(|e| e.into_inner()).get(&module) {
        return Ok(dir.clone());
    }
    let dir = find_module_dir(&module)?;
    dirs.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(module, dir.clone());
    Ok(dir)
}

fn find_module_dir(module: &str) -> Result<PathBuf> {
    let cache = crate::repo_root()
        .join("target/book-gosource")
        .join(format!("{}.dir", module.replace('/', "+")));
    if let Ok(text) = std::fs::read_to_string(&cache) {
        let dir = PathBuf::from(text.trim());
        if dir.join("go.mod").is_file() {
            return Ok(dir);
        }
    }
    // Outside any module, so that no go.mod or go.work around us is consulted.
    let scratch = std::env::temp_dir().join(format!("book-gosource-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let output = Command::new("go")
        .args(["mod", "download", "-json", module])
        .env("GOFLAGS", "-mod=mod")
        .current_dir(&scratch)
        .stdin(Stdio::null())
        .output();
    let _ = std::fs::remove_dir_all(&scratch);
    let output = output.with_context(|| {
        format!(
            "running `go mod download -json {module}`: the book's Go excerpts and links \
             read the Go source from Go's module cache (Go ≥ 1.26 on the PATH)"
        )
    })?;
    let info: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "`go mod download -json {module}` printed no JSON: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )
    })?;
    if let Some(error) = info.get("Error").and_then(Value::as_str) {
        bail!("`go mod download -json {module}`: {error}");
    }
    ensure!(
        output.status.success(),
        "`go mod download -json {module}` failed ({})",
        output.status
    );
    let dir = PathBuf::from(
        info.get("Dir")
            .and_then(Value::as_str)
            .context("`go mod download -json` gave no Dir")?,
    );
    ensure!(
        dir.join("go.mod").is_file(),
        "{} has no go.mod",
        dir.display()
    );
    if let Some(parent) = cache.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&cache, format!("{}\n", dir.display()))?;
    Ok(dir)
}

/// book.toml's `[preprocessor.gosource]` command runs this very binary
/// (`../target/debug/xtask`), so the book is built with the code being checked.
pub fn check_preprocessor(book: &Path) -> Result<()> {
    let toml = std::fs::read_to_string(book.join("book.toml"))?;
    let command = toml
        .split("[preprocessor.gosource]")
        .nth(1)
        .and_then(|table| {
            table
                .lines()
                .take_while(|l| !l.trim_start().starts_with('['))
                .find_map(|l| l.trim().strip_prefix("command"))
        })
        .and_then(|rest| rest.trim().strip_prefix('='))
        .map(|value| value.trim().trim_matches('"').to_string())
        .context("book/book.toml has no [preprocessor.gosource] command")?;
    let exe = command.split_whitespace().next().unwrap_or_default();
    let configured = book.join(exe);
    let running = std::env::current_exe()?;
    let same = match (configured.canonicalize(), running.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    ensure!(
        same,
        "book.toml's gosource preprocessor runs {}, but this check runs {}: build xtask into \
         the default target directory (no CARGO_TARGET_DIR) so that mdBook uses this code",
        configured.display(),
        running.display()
    );
    Ok(())
}

/// A Go file of the pinned sample-controller, parsed once per process.
fn go_file(path: &str) -> Result<Arc<GoFile>> {
    ensure!(
        path.ends_with(".go"),
        "{path:?} is not a .go file of {GO_MODULE}"
    );
    source_file(GO_MODULE, tag(), path)
}

/// A file of `module@version` (Go or not), read once per process.
fn source_file(module: &str, version: &str, path: &str) -> Result<Arc<GoFile>> {
    static FILES: OnceLock<Mutex<HashMap<String, Arc<GoFile>>>> = OnceLock::new();
    let key = format!("{module}@{version}/{path}");
    let files = FILES.get_or_init(Default::default);
    if let Some(file) = files.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(file.clone());
    }
    ensure!(
        !path.split('/').any(|p| p == ".." || p.is_empty()),
        "{path:?} is not a path inside {module}"
    );
    let full = module_dir_of(module, version)?.join(path);
    let text = std::fs::read_to_string(&full)
        .with_context(|| format!("{module}@{version} has no file {path}"))?;
    let file = Arc::new(GoFile::parse(path, &text));
    files
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, file.clone());
    Ok(file)
}

// ---------------------------------------------------------------------------
// Reading Go: lines, nesting depth, top-level declarations

#[derive(Debug, Clone, Copy, Default)]
struct LineInfo {
    /// Nesting depth of `(`, `{`, `[` at the start and end of the line, and
    /// the lowest it reaches on the line.
    depth_before: i32,
    depth_after: i32,
    min_depth: i32,
    blank: bool,
    /// Only comment text (or a blank line inside `/* */`).
    comment_only: bool,
    /// The line starts outside comments and raw strings.
    starts_in_code: bool,
    /// The line ends outside comments and raw strings.
    ends_in_code: bool,
}

#[derive(Debug)]
struct Decl {
    keyword: &'static str,
    /// What names it: a function's or type's name; a const/var's names; for a
    /// `const (…)`/`var (…)`/`type (…)`/`import (…)` group also the keyword.
    names: Vec<String>,
    /// Lines a range over it may start on: the first line of each leading
    /// comment group (nearest first adjacent, others separated by blank
    /// lines only), then the keyword line. Ascending.
    starts: Vec<usize>,
    /// The keyword line and the closing line (1-based).
    line: usize,
    end: usize,
}

impl Decl {
    fn first(&self) -> usize {
        self.starts[0]
    }

    fn label(&self) -> String {
        match (self.keyword, self.names.first()) {
            ("func", Some(name)) => format!("`func {name}`"),
            (keyword, Some(name)) if name == keyword => format!("the `{keyword}` block"),
            (keyword, Some(name)) => format!("`{keyword} {name}`"),
            (keyword, None) => format!("`{keyword}`"),
        }
    }
}

struct GoFile {
    path: String,
    lines: Vec<String>,
    info: Vec<LineInfo>,
    decls: Vec<Decl>,
    /// The file header's copyright line, e.g. "Copyright 2017 The Kubernetes Authors."
    copyright: String,
}

impl GoFile {
    fn parse(path: &str, text: &str) -> GoFile {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let info = scan(&lines);
        let decls = declarations(&lines, &info);
        let copyright = lines
            .iter()
            .take(20)
            .find(|l| l.contains("Copyright"))
            .map(|l| l.trim().trim_end_matches('.').to_string() + ".")
            .unwrap_or_else(|| "Copyright The Kubernetes Authors.".to_string());
        GoFile {
            path: path.to_string(),
            lines,
            info,
            decls,
            copyright,
        }
    }

    fn line(&self, n: usize) -> &str {
        &self.lines[n - 1]
    }

    fn at(&self, n: usize) -> LineInfo {
        self.info[n - 1]
    }

    /// The declarations named `names`, which must follow each other: their
    /// range from the first one's leading comment to the last one's end.
    fn resolve(&self, names: &[String]) -> Result<(usize, usize)> {
        let mut found = Vec::new();
        for name in names {
            // `package main` names the package, not a declaration `main`.
            let matching: Vec<usize> = (0..self.decls.len())
                .filter(|&i| self.decls[i].keyword != "package" || name == "package")
                .filter(|&i| self.decls[i].names.iter().any(|n| n == name))
                .collect();
            match matching.as_slice() {
                [] => bail!("{} declares no top-level `{name}`", self.path),
                [one] => found.push(*one),
                _ => bail!(
                    "{} declares `{name}` more than once: give the lines (`{}#Lx-Ly {name}`)",
                    self.path,
                    self.path
                ),
            }
        }
        found.sort_unstable();
        found.dedup();
        let (Some(&first), Some(&last)) = (found.first(), found.last()) else {
            bail!("no declaration named");
        };
        ensure!(
            last - first + 1 == found.len(),
            "{}: {} do not follow each other ({} comes between)",
            self.path,
            names.join(", "),
            self.decls[(first..=last).find(|i| !found.contains(i)).unwrap_or(first)].label()
        );
        Ok((self.decls[first].first(), self.decls[last].end))
    }
}

/// The nesting depth of every line, skipping strings, runes and comments.
fn scan(lines: &[String]) -> Vec<LineInfo> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        BlockComment,
        RawString,
    }
    let mut state = State::Code;
    let mut depth = 0;
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let started = state;
        let depth_before = depth;
        let mut min_depth = depth;
        let (mut code, mut comment) = (false, false);
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match state {
                State::BlockComment => {
                    comment = true;
                    if c == '*' && next == Some('/') {
                        state = State::Code;
                        i += 1;
                    }
                }
                State::RawString => {
                    code = true;
                    if c == '`' {
                        state = State::Code;
                    }
                }
                State::Code if c.is_whitespace() => {}
                State::Code if c == '/' && next == Some('/') => {
                    comment = true;
                    break;
                }
                State::Code if c == '/' && next == Some('*') => {
                    comment = true;
                    state = State::BlockComment;
                    i += 1;
                }
                State::Code => {
                    code = true;
                    match c {
                        '"' | '\'' => {
                            i += 1;
                            while i < chars.len() && chars[i] != c {
                                i += if chars[i] == '\\' { 2 } else { 1 };
                            }
                        }
                        '`' => state = State::RawString,
                        '(' | '{' | '[' => depth += 1,
                        ')' | '}' | ']' => {
                            depth -= 1;
                            min_depth = min_depth.min(depth);
                        }
                        _ => {}
                    }
                }
            }
            i += 1;
        }
        out.push(LineInfo {
            depth_before,
            depth_after: depth,
            min_depth,
            blank: line.trim().is_empty() && started == State::Code,
            comment_only: !code && (comment || started == State::BlockComment),
            starts_in_code: started == State::Code,
            ends_in_code: state == State::Code,
        });
    }
    out
}

/// The top-level declarations (gofmt'd source: each starts at column 0).
fn declarations(lines: &[String], info: &[LineInfo]) -> Vec<Decl> {
    const KEYWORDS: [&str; 6] = ["func", "type", "const", "var", "import", "package"];
    let mut decls = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        let text = lines[n].as_str();
        let at = info[n];
        let keyword = KEYWORDS.iter().copied().find(|k| {
            text.strip_prefix(k)
                .is_some_and(|rest| rest.starts_with([' ', '(']))
        });
        let Some(keyword) = keyword.filter(|_| at.depth_before == 0 && at.starts_in_code) else {
            n += 1;
            continue;
        };
        let mut end = n;
        while end + 1 < lines.len() && (info[end].depth_after != 0 || !info[end].ends_in_code) {
            end += 1;
        }
        let rest = text[keyword.len()..].trim_start();
        let names = match keyword {
            "func" => {
                // `func (c *Controller) Run(` → Run
                let after_receiver = if rest.starts_with('(') {
                    let mut depth = 0;
                    let close = rest
                        .char_indices()
                        .find(|&(_, c)| {
                            match c {
                                '(' => depth += 1,
                                ')' => depth -= 1,
                                _ => {}
                            }
                            depth == 0
                        })
                        .map_or(rest.len(), |(i, _)| i + 1);
                    rest[close..].trim_start()
                } else {
                    rest
                };
                leading_ident(after_receiver).into_iter().collect()
            }
            "import" => vec!["import".to_string()],
            _ if rest.starts_with('(') => {
                let mut names = vec![keyword.to_string()];
                for inner in n + 1..end {
                    if info[inner].depth_before == 1 && !info[inner].comment_only {
                        names.extend(leading_idents(lines[inner].trim_start()));
                    }
                }
                names
            }
            "type" | "package" => leading_ident(rest).into_iter().collect(),
            _ => leading_idents(rest),
        };
        let mut names = names;
        if keyword == "package" {
            names.insert(0, "package".to_string());
        }
        decls.push(Decl {
            keyword,
            names,
            starts: leading_comment_starts(lines, info, n)
                .into_iter()
                .chain([n + 1])
                .collect(),
            line: n + 1,
            end: end + 1,
        });
        n = end + 1;
    }
    decls
}

/// First lines (1-based, ascending) of the comment groups right above line
/// index `n`: the nearest must touch it, the others may be separated by
/// blank lines. The file's license header is not one of them.
fn leading_comment_starts(lines: &[String], info: &[LineInfo], n: usize) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut l = n;
    loop {
        // `l` is the index just below the next candidate group.
        let mut above = l;
        if !starts.is_empty() {
            while above > 0 && info[above - 1].blank {
                above -= 1;
            }
        }
        if above == 0 || !info[above - 1].comment_only {
            break;
        }
        let mut start = above - 1;
        while start > 0 && info[start - 1].comment_only {
            start -= 1;
        }
        let is_header = lines[start..above].iter().any(|l| l.contains("Copyright"));
        if is_header {
            break;
        }
        starts.push(start + 1);
        l = start;
    }
    starts.reverse();
    starts
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn leading_ident(s: &str) -> Option<String> {
    let end = s.find(|c: char| !is_ident_char(c)).unwrap_or(s.len());
    (end > 0 && !s.starts_with(|c: char| c.is_ascii_digit())).then(|| s[..end].to_string())
}

/// `a, b = …` → [a, b].
fn leading_idents(s: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = s;
    while let Some(name) = leading_ident(rest) {
        rest = rest[name.len()..].trim_start();
        names.push(name);
        match rest.strip_prefix(',') {
            Some(more) => rest = more.trim_start(),
            None => break,
        }
    }
    names
}

/// `word` occurs in `text` as a whole identifier.
fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

// ---------------------------------------------------------------------------
// Names in the Markdown

// ---------------------------------------------------------------------------
// Markdown scanning

/// Byte ranges of fenced code blocks (``` or ~~~) in a page.
fn fenced_ranges(text: &str) -> Vec<(usize, usize)> {
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

fn in_ranges(ranges: &[(usize, usize)], at: usize) -> bool {
    ranges.iter().any(|&(s, e)| s <= at && at < e)
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// A `{{#go …}}` in a page.
#[derive(Debug)]
struct Directive {
    /// Byte range of `{{#go …}}`.
    start: usize,
    end: usize,
    line: usize,
    path: String,
    selector: Selector,
}

fn directives(text: &str) -> Vec<std::result::Result<Directive, (usize, String)>> {
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

fn parse_directive(inner: &str) -> std::result::Result<(String, Selector), String> {
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
        let fences = fenced_ranges(text);
        for &(start, _) in &fences {
            let opener = text[start..].lines().next().unwrap_or_default().trim();
            let language = opener.trim_start_matches(['`', '~']).trim();
            if language == "go" || language.starts_with("go,") || language.starts_with("go ") {
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
        for (line, url) in links::typed_line_links(text) {
            failures.push(format!(
                "{name}:{line}: {url}: a Go line number typed by hand; link by name instead \
                 (`go:FILE#DECLARATION` or `go:FILE#DECLARATION/STATEMENT`, see \
                 xtask/src/gosource/links.rs), resolved at build time"
            ));
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

/// The file and lines a directive shows; `Err` if they do not resolve.
fn resolve_directive(directive: &Directive) -> Result<(Arc<GoFile>, usize, usize)> {
    let file = go_file(&directive.path)?;
    let (first, last) = file
        .select(&directive.selector)
        .with_context(|| format!("{{{{#go {}:{}}}}}", directive.path, directive.selector))?;
    Ok((file, first, last))
}

// ---------------------------------------------------------------------------
// Rendering

fn expand_chapter(page: &str, content: &str) -> Result<String> {
    let slug: String = page
        .trim_end_matches(".md")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut out = String::with_capacity(content.len());
    let mut from = 0;
    let mut count = 0;
    for directive in directives(content) {
        let directive = match directive {
            Ok(d) => d,
            Err((line, why)) => bail!("{page}:{line}: {why}"),
        };
        let (file, first, last) =
            resolve_directive(&directive).with_context(|| format!("{page}:{}", directive.line))?;
        count += 1;
        let id = format!("gosource-{slug}-{count}");
        out.push_str(&content[from..directive.start]);
        let go_pane = render_go(&file, first, last);
        // The Rust block that follows, if any: the two become tabs.
        let rest = &content[directive.end..];
        match following_fence(rest) {
            Some(fence_len) => {
                let rust = rest[..fence_len].trim();
                out.push_str(&format!(
                    "<div class=\"gosource-tabs\" id=\"{id}\">\n\
                     <input type=\"radio\" class=\"gosource-pick-go\" name=\"{id}\" id=\"{id}-go\">\
                     <label for=\"{id}-go\" title=\"The Go source, {path} {span}\">Go</label>\
                     <input type=\"radio\" class=\"gosource-pick-rust\" name=\"{id}\" id=\"{id}-rust\" checked>\
                     <label for=\"{id}-rust\" title=\"This port\">Rust</label>\n\
                     {go_pane}\
                     <div class=\"gosource-pane gosource-pane-rust\">\n\n{rust}\n\n</div>\n</div>\n\n",
                    path = file.path,
                    span = span_text(first, last),
                ));
                from = directive.end + fence_len;
            }
            None => {
                out.push_str(&format!(
                    "<div class=\"gosource-single\" id=\"{id}\">\n{go_pane}</div>\n\n"
                ));
                from = directive.end;
            }
        }
    }
    out.push_str(&content[from..]);
    Ok(out)
}

/// If `rest` (after a directive) holds only blank lines and then a fenced
/// code block, the length of `rest` through that block's closing fence.
fn following_fence(rest: &str) -> Option<usize> {
    let mut at = 0;
    let mut lines = rest.split_inclusive('\n');
    // The remainder of the directive's own line.
    let own = lines.next()?;
    if !own.trim().is_empty() {
        return None;
    }
    at += own.len();
    let mut opener = None;
    for line in lines.by_ref() {
        let trimmed = line.trim();
        if trimmed.is_empty() && opener.is_none() {
            at += line.len();
            continue;
        }
        match opener {
            None => {
                let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
                let n = trimmed.chars().take_while(|&d| d == c).count();
                if n < 3 {
                    return None;
                }
                opener = Some((c, n));
            }
            Some((c, n)) => {
                if trimmed.chars().take_while(|&d| d == c).count() >= n
                    && trimmed.chars().all(|d| d == c)
                {
                    return Some(at + line.len());
                }
            }
        }
        at += line.len();
    }
    None
}

/// The Go pane: the lines, dedented, in a ```go block, and the license notice.
fn render_go(file: &GoFile, first: usize, last: usize) -> String {
    let lines: Vec<&str> = (first..=last).map(|l| file.line(l)).collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches('\t').len())
        .min()
        .unwrap_or(0);
    let mut code = String::new();
    for line in &lines {
        let line = line.get(indent..).unwrap_or("").trim_end();
        // mdBook's `links` preprocessor runs after this one: keep `{{#…}}` literal.
        code.push_str(&line.replace("{{#", "\\{{#"));
        code.push('\n');
    }
    let fence = "`".repeat(
        3.max(
            code.lines()
                .map(|l| l.trim_start().chars().take_while(|&c| c == '`').count() + 1)
                .max()
                .unwrap_or(0),
        ),
    );
    format!(
        "<div class=\"gosource-pane gosource-pane-go\" data-first-line=\"{first}\">\n\n\
         {fence}go\n{code}{fence}\n\n\
         <p class=\"gosource-notice\">Go: <a href=\"{url}\">{path} {span}</a> of \
         kubernetes/sample-controller {tag}. {copyright} Licensed under the \
         <a href=\"{license}\">Apache License, Version 2.0</a>.</p>\n\n</div>\n",
        url = lines_url(&file.path, first, last),
        path = file.path,
        span = span_text(first, last),
        tag = tag(),
        copyright = html_escape(&file.copyright),
        license = blob_url("LICENSE"),
    )
}

fn rel(path: &Path) -> String {
    let root = crate::repo_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

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
        GoFile::parse("controller.go", GO)
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
