//! The Go source beside the Rust: Go excerpts rendered into the book at build
//! time, and the range check of every Go excerpt and Go link.
//!
//! Nothing Go is stored in `book/src`: the Go lines come from the pinned
//! module (`k8s.io/sample-controller@SAMPLE_CONTROLLER_VERSION`, from versions.toml) in Go's module cache,
//! found with `go mod download -json` and remembered in
//! `target/book-gosource/`.
//!
//! # The `{{#go …}}` directive
//!
//! A line of its own in a chapter, in one of two forms (paths are relative to
//! the module root):
//!
//! * `{{#go controller.go:syncHandler}}`: the whole top-level declaration
//!   (function, method, type, `const`/`var` name or group), from its leading
//!   comments to its closing line. Several names (`…/types.go:Foo,FooSpec`)
//!   show consecutive declarations.
//! * `{{#go controller.go#L127-L133 AddEventHandler}}`: explicit lines, with
//!   a label that names what they show; the label is checked like a link
//!   text (below).
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
//! # The range check
//!
//! Every `{{#go}}` and every link to `…/sample-controller/blob/<tag>/*.go#Lx-Ly`
//! (or `#Lx`) must name what it points at. The names of a link are taken from
//! its text (for a `[label]: url` definition, the texts of its `[text][label]`
//! uses); if the text names nothing, from the text right before it (back to
//! the previous link, the start of the paragraph, list item or table cell, at
//! most 200 characters). A name is the last identifier of a code span's expression
//! (`c.workqueue.AddRateLimited(objRef)` → `AddRateLimited`), or a bare word
//! that is a top-level name of the file (`NewController`); "lines … of X"
//! (or "in X") names the declaration X *as a container*. Then:
//!
//! * one line (`#L134`): a name occurs on that line;
//! * whole declarations: the range starts on the first one's leading comment
//!   or its keyword line and ends on the last one's closing line, and every
//!   declaration in it is named (a `const (…)`/`var (…)` group by its keyword
//!   or any name it declares);
//! * lines inside a declaration: a run of whole statements (or elements of a
//!   composite literal) of one block: it starts on a statement or on the
//!   first line of the comment above it, never closes a block it did not open,
//!   and ends on the line that closes its last statement. It is named by an
//!   identifier of its first statement's first line (`AddEventHandler` for
//!   the handler registration), or by "lines … of X" where X is the
//!   enclosing declaration. A range of comment lines only is a whole comment
//!   group, named by text it contains.
//!
//! Anything else fails, with the range the name actually has where that helps.
//! The check also fails on a ```go block in book/src: Go is shown only
//! through `{{#go}}`.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result, bail, ensure};
use clap::Subcommand;
use serde_json::Value;

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
/// `{{#go}}` and writes the book JSON to stdout. `supports <renderer>`: exit 0.
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
    let mut problems = Vec::new();
    let key = if book.get("items").is_some() {
        "items"
    } else {
        "sections" // mdBook 0.4
    };
    let items = book.get_mut(key).context("the book JSON has no `items`")?;
    expand_items(items, &mut problems)?;
    for problem in &problems {
        eprintln!("gosource: warning: {problem}");
    }
    serde_json::to_writer(std::io::stdout().lock(), &book).context("writing the book JSON")?;
    Ok(())
}

fn expand_items(items: &mut Value, problems: &mut Vec<String>) -> Result<()> {
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
        if let Some(content) = chapter.get("content").and_then(Value::as_str)
            && content.contains(DIRECTIVE)
        {
            let expanded = expand_chapter(&page, content, problems)?;
            chapter["content"] = Value::String(expanded);
        }
        if let Some(sub_items) = chapter.get_mut("sub_items") {
            expand_items(sub_items, problems)?;
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
pub fn module_dir() -> Result<&'static Path> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    if let Some(dir) = DIR.get() {
        return Ok(dir);
    }
    let dir = find_module_dir()?;
    Ok(DIR.get_or_init(|| dir))
}

fn find_module_dir() -> Result<PathBuf> {
    let module = format!("{GO_MODULE}@{}", tag());
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
        .args(["mod", "download", "-json", &module])
        .env("GOFLAGS", "-mod=mod")
        .current_dir(&scratch)
        .stdin(Stdio::null())
        .output();
    let _ = std::fs::remove_dir_all(&scratch);
    let output = output.with_context(|| {
        format!(
            "running `go mod download -json {module}`: the book's Go excerpts and its range \
             check read the Go sample-controller from Go's module cache (Go ≥ 1.26 on the PATH)"
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

/// A Go file of the module, parsed once per process.
fn go_file(path: &str) -> Result<Arc<GoFile>> {
    static FILES: OnceLock<Mutex<HashMap<String, Arc<GoFile>>>> = OnceLock::new();
    let files = FILES.get_or_init(Default::default);
    if let Some(file) = files.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
        return Ok(file.clone());
    }
    ensure!(
        !path.split('/').any(|p| p == ".." || p.is_empty()) && path.ends_with(".go"),
        "{path:?} is not a .go file of {GO_MODULE}"
    );
    let full = module_dir()?.join(path);
    let text = std::fs::read_to_string(&full)
        .with_context(|| format!("{GO_MODULE}@{} has no file {path}", tag()))?;
    let file = Arc::new(GoFile::parse(path, &text));
    files
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.to_string(), file.clone());
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

    /// `lines 238–312 (leading comment from 238, \`func\` line 241)`.
    fn extent(&self) -> String {
        if self.first() == self.line {
            span_text(self.line, self.end)
        } else {
            format!(
                "{} (comment from line {}, `{}` on line {})",
                span_text(self.first(), self.end),
                self.first(),
                self.keyword,
                self.line
            )
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

    fn is_decl_name(&self, word: &str) -> bool {
        self.decls.iter().any(|d| d.names.iter().any(|n| n == word))
    }

    /// The declarations named `names`, which must follow each other: their
    /// range from the first one's leading comment to the last one's end.
    fn resolve(&self, names: &[String]) -> Result<(usize, usize)> {
        let mut found = Vec::new();
        for name in names {
            let matching: Vec<usize> = (0..self.decls.len())
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

    /// Decides whether lines `first..=last` are what `names` says; `Ok` with a
    /// short description of what they are, `Err` with why not.
    fn judge(
        &self,
        first: usize,
        last: usize,
        names: &Names,
    ) -> std::result::Result<String, String> {
        let count = self.lines.len();
        if first == 0 || last < first || last > count {
            return Err(format!(
                "{} are not in {} ({count} lines)",
                span_text(first, last),
                self.path
            ));
        }
        if names.is_empty() {
            return Err(format!(
                "names nothing: say what {} show in the link text or right before it, \
                 e.g. {}",
                span_text(first, last),
                self.suggest_name(first, last),
            ));
        }
        let shows = names.list();
        if first == last {
            let text = self.line(first);
            if names.idents.iter().any(|n| contains_word(text, n))
                || names.texts.iter().any(|t| text.contains(t.as_str()))
            {
                return Ok(format!("line {first}"));
            }
            return Err(format!(
                "line {first} is `{}`, which does not contain {shows}{}",
                text.trim(),
                self.hint(names)
            ));
        }

        // Whole top-level declarations.
        let covered: Vec<&Decl> = self
            .decls
            .iter()
            .filter(|d| d.first() <= last && d.end >= first)
            .collect();
        if let (Some(head), Some(tail)) = (covered.first(), covered.last())
            && head.starts.contains(&first)
            && tail.end == last
        {
            let unnamed: Vec<String> = covered
                .iter()
                .filter(|d| !d.names.iter().any(|n| names.idents.contains(n)))
                .map(|d| d.label())
                .collect();
            if unnamed.is_empty() {
                let labels: Vec<String> = covered.iter().map(|d| d.label()).collect();
                return Ok(labels.join(", "));
            }
            return Err(format!(
                "{} are {}, but the link names {shows}, not {}{}",
                span_text(first, last),
                covered
                    .iter()
                    .map(|d| d.label())
                    .collect::<Vec<_>>()
                    .join(", "),
                unnamed.join(", "),
                self.hint(names)
            ));
        }

        // Lines inside one declaration.
        if let [decl] = covered.as_slice()
            && decl.first() <= first
            && last <= decl.end
        {
            let head = match self.block(first, last) {
                Ok(head) => head,
                Err(why) => return Err(format!("{why}{}", self.hint(names))),
            };
            if decl.names.iter().any(|n| names.lines_of.contains(n)) {
                return Ok(format!("{} of {}", span_text(first, last), decl.label()));
            }
            match head {
                Some(head) => {
                    let text = self.line(head);
                    if let Some(name) = names.idents.iter().find(|n| contains_word(text, n)) {
                        return Ok(format!("the statement `{name}` in {}", decl.label()));
                    }
                    return Err(format!(
                        "{} are a block of {}; its first line of code ({head}: `{}`) contains \
                         none of {shows} (name what that line does, or say \"lines … of `{}`\"){}",
                        span_text(first, last),
                        decl.label(),
                        text.trim(),
                        decl.names.first().map(String::as_str).unwrap_or("?"),
                        self.hint(names)
                    ));
                }
                None => {
                    let text: String = (first..=last).map(|l| self.line(l)).collect();
                    if names.texts.iter().any(|t| text.contains(t.as_str()))
                        || names.idents.iter().any(|n| contains_word(&text, n))
                    {
                        return Ok(format!("a comment in {}", decl.label()));
                    }
                    return Err(format!(
                        "{} are a comment that does not contain {shows}{}",
                        span_text(first, last),
                        self.hint(names)
                    ));
                }
            }
        }

        let around: Vec<String> = covered
            .iter()
            .map(|d| format!("{} is {}", d.label(), d.extent()))
            .collect();
        Err(format!(
            "{} are neither whole declarations nor a block inside one ({}){}",
            span_text(first, last),
            if around.is_empty() {
                "no declaration there".to_string()
            } else {
                around.join("; ")
            },
            self.hint(names)
        ))
    }

    /// Lines `first..=last` inside a declaration are whole statements of one
    /// block: `Ok(first line of code)` (None for a comment only).
    fn block(&self, first: usize, last: usize) -> std::result::Result<Option<usize>, String> {
        let (a, b) = (self.at(first), self.at(last));
        if a.blank {
            return Err(format!(
                "line {first} is blank: start on the statement or its comment"
            ));
        }
        if b.blank {
            return Err(format!(
                "line {last} is blank: end on the block's closing line"
            ));
        }
        if a.comment_only && first > 1 && self.at(first - 1).comment_only {
            let start = (1..first)
                .rev()
                .take_while(|&l| self.at(l).comment_only)
                .last()
                .unwrap_or(first);
            return Err(format!(
                "line {first} is inside a comment that starts on line {start}"
            ));
        }
        let depth = a.depth_before;
        if let Some(l) = (first..=last).find(|&l| self.at(l).min_depth < depth) {
            return Err(format!(
                "line {l} closes a block that opens before line {first}: {} cut a statement",
                span_text(first, last)
            ));
        }
        if b.depth_after != depth {
            let closes = (last..=self.lines.len())
                .find(|&l| self.at(l).depth_after <= depth)
                .unwrap_or(self.lines.len());
            return Err(format!(
                "line {last} leaves a block open: the statement it is in ends on line {closes}"
            ));
        }
        let head = (first..=last).find(|&l| !self.at(l).comment_only && !self.at(l).blank);
        match head {
            Some(_) if b.comment_only => Err(format!(
                "line {last} is a comment: end on the closing line of the last statement"
            )),
            None if last < self.lines.len() && self.at(last + 1).comment_only => Err(format!(
                "line {last} is inside a comment that goes on after it"
            )),
            _ => Ok(head),
        }
    }

    /// "; `syncHandler` is lines 238–312" for every name that is a declaration.
    fn hint(&self, names: &Names) -> String {
        let hints: Vec<String> = self
            .decls
            .iter()
            .filter(|d| {
                d.names
                    .iter()
                    .any(|n| names.idents.contains(n) || names.lines_of.contains(n))
            })
            .map(|d| format!("{} is {}", d.label(), d.extent()))
            .collect();
        if hints.is_empty() {
            String::new()
        } else {
            format!(" ({})", hints.join("; "))
        }
    }

    /// What to call lines `first..=last` in an error message.
    fn suggest_name(&self, first: usize, last: usize) -> String {
        let span = span_text(first, last);
        let inside: Vec<&str> = self
            .decls
            .iter()
            .filter(|d| first <= d.first() && d.end <= last)
            .filter_map(|d| d.names.first().map(String::as_str))
            .collect();
        if !inside.is_empty() {
            return format!("[`{}`](…)", inside.join("`, `"));
        }
        let head = (first..=last)
            .find(|&l| !self.at(l).comment_only && !self.at(l).blank)
            .unwrap_or(first);
        match self
            .decls
            .iter()
            .find(|d| d.first() <= first && last <= d.end)
        {
            Some(_) if first == last => format!(
                "[`{}`](…) (line {first} is `{}`)",
                principal(self.line(first).trim().trim_end_matches('{'))
                    .unwrap_or_else(|| "name".into()),
                self.line(first).trim()
            ),
            Some(d) => format!(
                "[{span} of `{}`](…) (line {head} is `{}`)",
                d.names.first().map(String::as_str).unwrap_or("?"),
                self.line(head).trim()
            ),
            None => format!("[{span} of …](…)"),
        }
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

/// The identifier a code span is about: the last one of its outermost
/// selector or call chain. `c.foosLister.Foos(ns).Get(name)` → `Get`,
/// `defer utilruntime.HandleCrash()` → `HandleCrash`, `record.FakeRecorder{}`
/// → `FakeRecorder`; `None` for text that is no Go expression.
fn principal(span: &str) -> Option<String> {
    // A file name (`main.go`, `manifests/crd.yaml`) is not an identifier.
    let trimmed = span.trim();
    if trimmed.contains('/')
        || [".go", ".rs", ".yaml", ".md", ".sh", ".txt", ".toml"]
            .iter()
            .any(|ext| trimmed.ends_with(ext))
    {
        return None;
    }
    let mut outer = String::new();
    let mut depth = 0;
    for c in span.chars() {
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth -= 1,
            _ if depth == 0 => outer.push(c),
            _ => {}
        }
    }
    let last = outer.split_whitespace().last()?;
    let last = last.trim_end_matches(['…', '.', ',', ';', '*', '&']);
    let name = last.rsplit('.').next()?.trim_start_matches(['*', '&']);
    (!name.is_empty()
        && name.chars().all(is_ident_char)
        && !name.starts_with(|c: char| c.is_ascii_digit()))
    .then(|| name.to_string())
}

// ---------------------------------------------------------------------------
// Names in the Markdown

/// What a link or directive says it shows.
#[derive(Debug, Default)]
struct Names {
    /// Identifiers: code spans' principal identifiers, and bare words that
    /// are top-level names of the file.
    idents: Vec<String>,
    /// Code spans verbatim (for comment ranges).
    texts: Vec<String>,
    /// X of "lines … of X" / "lines … in X".
    lines_of: Vec<String>,
}

impl Names {
    fn is_empty(&self) -> bool {
        self.idents.is_empty() && self.texts.is_empty() && self.lines_of.is_empty()
    }

    fn list(&self) -> String {
        let mut all: Vec<String> = self.idents.iter().map(|n| format!("`{n}`")).collect();
        all.extend(self.lines_of.iter().map(|n| format!("lines of `{n}`")));
        if all.is_empty() {
            all.extend(self.texts.iter().map(|t| format!("`{t}`")));
        }
        all.join(", ")
    }

    /// From prose: code spans, and bare words that the file declares.
    fn from_prose(text: &str, file: &GoFile) -> Names {
        let mut names = Names::default();
        for (is_code, part) in code_spans(text) {
            if is_code {
                let part = part.trim();
                if !part.is_empty() {
                    names.texts.push(part.to_string());
                }
                if let Some(ident) = principal(part) {
                    names.idents.push(ident);
                }
            } else {
                // Bare words the file declares (not `main` of "main.go").
                let mut at = 0;
                for word in part.split(|c: char| !is_ident_char(c)) {
                    let after = &part[at + word.len()..];
                    at += word.len() + after.chars().next().map_or(0, char::len_utf8);
                    if !word.is_empty()
                        && !after.starts_with(".go")
                        && file.is_decl_name(word)
                        && word != "package"
                    {
                        names.idents.push(word.to_string());
                    }
                }
            }
        }
        names.lines_of = lines_of(text);
        names
    }

    /// From a directive's label: every identifier counts.
    fn from_label(label: &str) -> Names {
        let mut names = Names::default();
        let plain = label.replace('`', "");
        for word in plain.split(|c: char| !is_ident_char(c)) {
            if leading_ident(word).is_some_and(|w| w == word) {
                names.idents.push(word.to_string());
            }
        }
        if !plain.trim().is_empty() {
            names.texts.push(plain.trim().to_string());
        }
        names.lines_of = lines_of(label);
        names
    }
}

/// `text` split into (is code span, text) parts.
fn code_spans(text: &str) -> Vec<(bool, &str)> {
    let mut parts = Vec::new();
    let mut code = false;
    for part in text.split('`') {
        parts.push((code, part));
        code = !code;
    }
    parts
}

/// The X of every "lines … of X" or "lines … in X" ("line" too).
fn lines_of(text: &str) -> Vec<String> {
    let plain = text.replace('`', " ");
    let words: Vec<&str> = plain
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | ',' | ':'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = Vec::new();
    let mut seen_lines = false;
    for (i, word) in words.iter().enumerate() {
        let lower = word.to_lowercase();
        if lower == "line" || lower == "lines" {
            seen_lines = true;
        } else if seen_lines
            && (lower == "of" || lower == "in")
            && let Some(next) = words.get(i + 1)
            && let Some(name) = leading_ident(next)
        {
            found.push(name);
        }
    }
    found
}

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
    target: Target,
}

#[derive(Debug)]
enum Target {
    /// `FILE:A,B`
    Names(Vec<String>),
    /// `FILE#La-Lb LABEL`
    Lines {
        first: usize,
        last: usize,
        label: String,
    },
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
            |(path, target)| {
                Ok(Directive {
                    start,
                    end,
                    line,
                    path,
                    target,
                })
            },
        ));
        from = end;
    }
    found
}

fn parse_directive(inner: &str) -> std::result::Result<(String, Target), String> {
    let usage = "write {{#go FILE:NAME}} or {{#go FILE#Lx-Ly LABEL}}";
    let (spec, label) = inner
        .split_once(char::is_whitespace)
        .map_or((inner, ""), |(s, l)| (s, l.trim()));
    if let Some((path, lines)) = spec.split_once('#') {
        let (first, last) =
            parse_lines(lines).ok_or_else(|| format!("{inner:?}: bad line range; {usage}"))?;
        return Ok((
            path.to_string(),
            Target::Lines {
                first,
                last,
                label: label.to_string(),
            },
        ));
    }
    let Some((path, names)) = spec.split_once(':') else {
        return Err(format!("{inner:?}: {usage}"));
    };
    let names: Vec<String> = names
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() || !label.is_empty() {
        return Err(format!("{inner:?}: {usage}"));
    }
    Ok((path.to_string(), Target::Names(names)))
}

/// `L238-L312` → (238, 312); `L134` → (134, 134).
fn parse_lines(fragment: &str) -> Option<(usize, usize)> {
    let (a, b) = fragment.split_once('-').unwrap_or((fragment, fragment));
    let a: usize = a.strip_prefix('L')?.parse().ok()?;
    let b: usize = b.strip_prefix('L')?.parse().ok()?;
    Some((a, b))
}

/// A link into the Go sample-controller's `.go` files with a line fragment.
struct GoLink {
    line: usize,
    path: String,
    first: usize,
    last: usize,
    /// The link text, and the text right before the link.
    text: String,
    before: String,
    url: String,
}

fn go_links(page: &str) -> Vec<GoLink> {
    let prefix = format!("{REPO_URL}/blob/{}/", tag());
    let fences = fenced_ranges(page);
    let mut links = Vec::new();
    let mut from = 0;
    let mut previous_end = 0;
    while let Some(offset) = page[from..].find(&prefix) {
        let start = from + offset;
        from = start + prefix.len();
        if in_ranges(&fences, start) {
            continue;
        }
        let url: String = page[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '>' | '"' | ']' | '`'))
            .collect();
        let rest = &url[prefix.len()..];
        let Some((path, fragment)) = rest.split_once('#') else {
            continue;
        };
        let (Some((first, last)), true) = (parse_lines(fragment), path.ends_with(".go")) else {
            continue;
        };
        // `[text](url)`, `<a href="url">text</a>`, `[label]: url` (the texts of
        // `[text][label]`), or a bare URL.
        let line_head = &page[page[..start].rfind('\n').map_or(0, |i| i + 1)..start];
        let reference = line_head
            .trim_start()
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(' ').or(Some(l)))
            .and_then(|l| l.trim_end().strip_suffix("]:"))
            .map(str::to_string);
        let (text, text_start) = if let Some(label) = reference {
            let usage = format!("][{label}]");
            let mut texts: Vec<String> = page
                .match_indices(&usage)
                .filter_map(|(end, _)| {
                    let open = page[..end].rfind('[')?;
                    Some(page[open + 1..end].to_string())
                })
                .collect();
            texts.push(label); // `[label]` used as a shortcut reference
            (texts.join(" "), start)
        } else if page[..start].ends_with("](") {
            let close = start - 2;
            let mut depth = 0;
            let open = page[..close].char_indices().rev().find(|&(_, c)| {
                match c {
                    ']' => depth += 1,
                    '[' if depth == 0 => return true,
                    '[' => depth -= 1,
                    _ => {}
                }
                false
            });
            match open {
                Some((open, _)) => (page[open + 1..close].to_string(), open),
                None => (String::new(), start),
            }
        } else if page[..start].ends_with("href=\"") {
            let after = &page[start + url.len()..];
            let text = after
                .split_once('>')
                .and_then(|(_, t)| t.split_once("</a>"))
                .map(|(t, _)| t.to_string())
                .unwrap_or_default();
            let open = page[..start].rfind("<a").unwrap_or(start);
            (text, open)
        } else {
            (String::new(), start)
        };
        let before = text_before(page, previous_end, text_start);
        previous_end = start + url.len();
        links.push(GoLink {
            line: line_of(page, start),
            path: path.to_string(),
            first,
            last,
            text,
            before,
            url,
        });
    }
    links
}

/// The text right before a link at `at`: back to `floor` (the previous
/// link's end), a blank line or a table cell's `|`, at most 200 characters,
/// without a code span cut in half.
fn text_before(page: &str, floor: usize, at: usize) -> String {
    let mut start = floor.min(at);
    if let Some(blank) = page[start..at].rfind("\n\n") {
        start += blank + 2;
    }
    if let Some(cell) = page[start..at].rfind('|') {
        start += cell + 1;
    }
    // The list item or heading the link is in.
    let mut line_start = start;
    for line in page[start..at].split_inclusive('\n') {
        let trimmed = line.trim_start();
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        let item = ["- ", "* ", "+ ", "#"]
            .iter()
            .any(|m| trimmed.starts_with(m))
            || (digits > 0 && trimmed[digits..].starts_with(". "));
        if item && line_start > start {
            start = line_start;
        }
        line_start += line.len();
    }
    let mut window = &page[start..at];
    if window.chars().count() > 200 {
        let skip = window.chars().count() - 200;
        let byte = window.char_indices().nth(skip).map_or(0, |(i, _)| i);
        window = &window[byte..];
    }
    if window.matches('`').count() % 2 == 1 {
        window = window.split_once('`').map_or("", |(_, rest)| rest);
    }
    window.to_string()
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
        for link in go_links(text) {
            links += 1;
            let file = match go_file(&link.path) {
                Ok(file) => file,
                Err(err) => {
                    failures.push(format!("{name}:{}: {}: {err:#}", link.line, link.url));
                    continue;
                }
            };
            let mut names = Names::from_prose(&link.text, &file);
            if names.is_empty() {
                names = Names::from_prose(&link.before, &file);
            }
            if let Err(why) = file.judge(link.first, link.last, &names) {
                let shown = if link.text.is_empty() {
                    link.url.clone()
                } else {
                    format!("[{}]", link.text.replace('\n', " "))
                };
                failures.push(format!(
                    "{name}:{}: {shown} → {}#L{}{}: {why}",
                    link.line,
                    link.path,
                    link.first,
                    if link.first == link.last {
                        String::new()
                    } else {
                        format!("-L{}", link.last)
                    }
                ));
            }
        }
    }
    println!(
        "    {links} Go line links and {excerpts} Go excerpts checked against {GO_MODULE}@{} ({})",
        tag(),
        dir.display()
    );
    Ok(failures)
}

/// The file and lines a directive shows; `Err` if they do not resolve or are
/// not what its label says.
fn resolve_directive(directive: &Directive) -> Result<(Arc<GoFile>, usize, usize)> {
    let file = go_file(&directive.path)?;
    let (first, last) = match &directive.target {
        Target::Names(names) => file.resolve(names)?,
        Target::Lines { first, last, label } => {
            let names = Names::from_label(label);
            if let Err(why) = file.judge(*first, *last, &names) {
                bail!(
                    "{{{{#go {}#L{first}-L{last} {label}}}}}: {why}",
                    directive.path
                );
            }
            (*first, *last)
        }
    };
    Ok((file, first, last))
}

// ---------------------------------------------------------------------------
// Rendering

fn expand_chapter(page: &str, content: &str, problems: &mut Vec<String>) -> Result<String> {
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
        let (file, first, last) = match resolve_directive(&directive) {
            Ok(found) => found,
            Err(err) => {
                // A name that does not resolve breaks the build; a label the
                // range check rejects is only a warning here (`book check` fails).
                let file = go_file(&directive.path)
                    .with_context(|| format!("{page}:{}", directive.line))?;
                match &directive.target {
                    Target::Lines { first, last, .. }
                        if 1 <= *first && first <= last && *last <= file.lines.len() =>
                    {
                        problems.push(format!("{page}:{}: {err:#}", directive.line));
                        (file, *first, *last)
                    }
                    _ => return Err(err.context(format!("{page}:{}", directive.line))),
                }
            }
        };
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

    fn names(text: &str) -> Names {
        Names::from_prose(text, &file())
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
    fn whole_declarations_must_be_named_and_complete() {
        let f = file();
        assert!(f.judge(22, 35, &names("[`run`]")).is_ok());
        assert!(f.judge(24, 35, &names("[`c.run(ctx)`]")).is_ok());
        let cut = f.judge(22, 30, &names("[`run`]")).unwrap_err();
        assert!(cut.contains("lines 22–35"), "{cut}");
        assert!(f.judge(22, 35, &names("[`Foo`]")).is_err());
        assert!(
            f.judge(7, 13, &names("[`controllerAgentName`] and the [`const`]"))
                .is_ok()
        );
        assert!(f.judge(7, 13, &names("[constants]")).is_err());
        assert!(f.judge(15, 20, &names("[`Foo`]")).is_ok());
        assert!(f.judge(16, 20, &names("[`Foo`]")).is_err());
    }

    #[test]
    fn blocks_inside_a_function() {
        let f = file();
        // statement + its error check, named by the first line
        assert!(f.judge(25, 28, &names("[`c.get(key)`]")).is_ok());
        assert!(f.judge(25, 28, &names("[lines 25–28]")).is_err());
        assert!(f.judge(25, 28, &names("[lines 25–28 of `run`]")).is_ok());
        // starts on the comment, named by the head line
        assert!(f.judge(30, 33, &names("[`AddEventHandler`]")).is_ok());
        // cuts the if block / ends on a blank line / inside the literal
        assert!(f.judge(25, 27, &names("[`get`]")).is_err());
        assert!(f.judge(25, 29, &names("[`get`]")).is_err());
        assert!(f.judge(32, 33, &names("[`AddFunc`]")).is_err());
        assert!(f.judge(32, 32, &names("[`AddFunc`]")).is_ok());
        assert!(f.judge(26, 28, &names("[`run`]")).is_err());
    }

    #[test]
    fn principal_identifiers() {
        assert_eq!(
            principal("c.foosLister.Foos(ns).Get(name)").as_deref(),
            Some("Get")
        );
        assert_eq!(
            principal("defer utilruntime.HandleCrash()").as_deref(),
            Some("HandleCrash")
        );
        assert_eq!(
            principal("record.FakeRecorder{}").as_deref(),
            Some("FakeRecorder")
        );
        assert_eq!(
            principal("wait.UntilWithContext(ctx, c.runWorker, time.Second)").as_deref(),
            Some("UntilWithContext")
        );
        assert_eq!(
            principal("informer.Informer().HasSynced").as_deref(),
            Some("HasSynced")
        );
        assert_eq!(principal("+k8s:deepcopy-gen"), None);
        assert_eq!(
            lines_of("lines 127–133 of `NewController`"),
            vec!["NewController"]
        );
    }

    #[test]
    fn links_and_their_text() {
        let page = format!(
            "`run` is here ([lines 25–28]({url}#L25-L28)).\n\n| a | [`x`]({url}#L3) |\n",
            url = blob_url("controller.go")
        );
        let links = go_links(&page);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].text, "lines 25–28");
        assert_eq!(links[0].before, "`run` is here (");
        assert_eq!((links[1].first, links[1].last), (3, 3));
        assert_eq!(links[1].before, " ");
    }

    #[test]
    fn directive_labels_and_reference_links() {
        let f = file();
        // A directive's label: every identifier counts, "lines of X" too.
        assert!(
            f.judge(30, 33, &Names::from_label("AddEventHandler"))
                .is_ok()
        );
        assert!(f.judge(25, 28, &Names::from_label("lines of run")).is_ok());
        assert!(f.judge(25, 28, &Names::from_label("the lookup")).is_err());
        assert!(matches!(
            parse_directive("controller.go#L25-L28 lines of run"),
            Ok((
                _,
                Target::Lines {
                    first: 25,
                    last: 28,
                    ..
                }
            ))
        ));
        assert!(parse_directive("controller.go").is_err());
        // `[label]: url` takes the texts of `[text][label]`.
        let page = format!(
            "See [`run`][r].\n\n[r]: {}#L22-L35\n",
            blob_url("controller.go")
        );
        let links = go_links(&page);
        assert_eq!(links.len(), 1);
        assert!(links[0].text.contains("`run`"), "{}", links[0].text);
        // The text before a link stops at its list item.
        let page = format!(
            "- `run` does it\n- and ([lines 25–28]({}#L25-L28))\n",
            blob_url("controller.go")
        );
        assert_eq!(go_links(&page)[0].before, "- and (");
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
