//! `cargo xtask book <command>`: the book in `book/`.
//!
//! * `outputs [FILE…]`: start a local control plane, run every step binary
//!   through a short scripted scenario, and write what it printed to
//!   `book/src/outputs/*.txt`, the output blocks the chapters include (only
//!   the files named, if any). "Running in a cluster" adds two replicas of
//!   step 8 handing the leader Lease over, `/metrics`, missing RBAC, and the
//!   static musl binary.
//! * `build`: `mdbook-mermaid install book` (regenerates the gitignored
//!   mermaid JS), then `mdbook build book`.
//! * `check`: source checks (every include and anchor resolves, every step has
//!   a chapter that includes its code and its output, every Go link is pinned,
//!   every Go excerpt and Go line link names what it shows: gosource.rs), the
//!   build, a link check of the rendered HTML, and every page in headless
//!   Chromium (diagrams drawn, silent console, Go panes; chromium.rs), with
//!   screenshots in target/book-screenshots/. Installs nothing: a missing tool
//!   is an error that names its install command.
//! * `preprocess`, `go-link` (registered in main.rs, code in gosource.rs): the
//!   mdBook preprocessor of `{{#go …}}`, and the pinned link of a Go declaration.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use clap::Subcommand;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use sample_controller::deployment::new_deployment;
use sample_controller::{Foo, FooSpec, show};
use serde_json::json;
use testcluster::{ControlPlane, Options};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

/// The tool versions the book is built and checked with.
const MDBOOK: (&str, &str) = ("mdbook", "0.5.");
const MDBOOK_MERMAID: (&str, &str) = ("mdbook-mermaid", "0.17.");
const MDBOOK_LINKCHECK2: (&str, &str) = ("mdbook-linkcheck2", "0.13.");
/// How to install each tool, quoted when it is missing.
const INSTALL: &[(&str, &str)] = &[
    (
        "mdbook",
        "cargo install --locked mdbook --version 0.5.4 --no-default-features --features search",
    ),
    (
        "mdbook-mermaid",
        "cargo install --locked mdbook-mermaid --version 0.17.1",
    ),
    (
        "mdbook-linkcheck2",
        "cargo install --locked mdbook-linkcheck2 --version 0.13.0",
    ),
    (
        "chromium",
        "apt-get update && apt-get install -y chromium   (Debian/Ubuntu)",
    ),
];

/// How long a scenario waits for a line it expects.
const WAIT: Duration = Duration::from_secs(90);

#[derive(Subcommand)]
pub enum BookCommand {
    /// Run every step against a fresh local control plane and write book/src/outputs/*.txt.
    Outputs {
        /// Write only these files (e.g. `leader-lost.txt`); all of them if none is named.
        only: Vec<String>,
    },
    /// Build the book into book/book (mdbook-mermaid install, then mdbook build).
    Build,
    /// Check includes, anchors, links, pinned Go links and the rendered diagrams.
    Check,
}

/// Runs a `cargo xtask book` subcommand.
pub async fn run(command: BookCommand) -> Result<()> {
    match command {
        BookCommand::Outputs { only } => outputs(&only).await,
        BookCommand::Build => {
            require_tools(&[MDBOOK, MDBOOK_MERMAID])?;
            build()
        }
        BookCommand::Check => check(),
    }
}

fn book_dir() -> PathBuf {
    crate::repo_root().join("book")
}

// ---------------------------------------------------------------------------
// build

fn build() -> Result<()> {
    let book = book_dir();
    // Regenerates mermaid.min.js and mermaid-init.js (gitignored build tooling).
    run_tool(Command::new("mdbook-mermaid").arg("install").arg(&book))?;
    run_tool(Command::new("mdbook").arg("build").arg(&book))?;
    println!("Built {}", book.join("book/html/index.html").display());
    Ok(())
}

fn run_tool(command: &mut Command) -> Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("running {shown}"))?;
    ensure!(status.success(), "{shown} failed ({status})");
    Ok(())
}

/// Fails with the install lines of every missing or wrongly versioned tool.
fn require_tools(tools: &[(&str, &str)]) -> Result<()> {
    let mut problems = Vec::new();
    for &(tool, prefix) in tools {
        let found = Command::new(tool)
            .arg("--version")
            .stderr(Stdio::null())
            .output();
        let version = match found {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).to_string(),
            _ => String::new(),
        };
        // `mdbook v0.5.4`, `mdbook-mermaid 0.17.1`, `Chromium 1xx.…`
        let number = version
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .trim_start_matches('v');
        if version.is_empty() {
            problems.push(format!("{tool} is not installed"));
        } else if !number.starts_with(prefix) {
            problems.push(format!("{tool} {number} found, the book needs {prefix}x"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let install: Vec<String> = INSTALL
        .iter()
        .filter(|(tool, _)| problems.iter().any(|p| p.starts_with(&format!("{tool} "))))
        .map(|(_, line)| format!("  {line}"))
        .collect();
    bail!(
        "{}.\nInstall with:\n{}",
        problems.join("; "),
        install.join("\n")
    )
}

// ---------------------------------------------------------------------------
// check

/// Every book check; fails with all problems listed, or names the install command of a missing tool.
///
/// A failed source check does not stop the build and the rendering: one run
/// lists every problem.
pub fn check() -> Result<()> {
    let book = book_dir();
    let src = book.join("src");
    let mut failures = Vec::new();
    let fail = |failures: &[String]| -> Result<()> {
        if failures.is_empty() {
            Ok(())
        } else {
            bail!("book check failed:\n  - {}", failures.join("\n  - "))
        }
    };

    println!("==> book check: sources");
    let pages = markdown_pages(&src)?;
    failures.extend(check_includes(&pages)?);
    failures.extend(check_step_chapters(&src)?);
    failures.extend(check_go_links(&pages));
    failures.extend(check_summary(&src, &pages)?);
    println!("==> book check: Go excerpts and Go line links against the pinned Go module");
    failures.extend(crate::gosource::check(&pages)?);

    println!("==> book check: tools");
    let tools = require_tools(&[MDBOOK, MDBOOK_MERMAID, MDBOOK_LINKCHECK2, ("chromium", "")])
        .and_then(|()| crate::gosource::check_preprocessor(&book));
    if let Err(err) = tools {
        failures.push(format!("{err:#}"));
        return fail(&failures);
    }

    println!("==> book check: mdbook build (html and linkcheck2)");
    if let Err(err) = build() {
        failures.push(format!("{err:#}"));
        return fail(&failures);
    }

    println!("==> book check: links and anchors in the rendered HTML");
    failures.extend(check_rendered_links(&book.join("book/html"))?);

    println!("==> book check: every page in headless Chromium (diagrams, console, Go panes)");
    failures.extend(crate::chromium::check_pages(
        &book.join("book/html"),
        &crate::repo_root().join("target/book-screenshots"),
    )?);
    fail(&failures)?;
    println!("book check: all good");
    Ok(())
}

/// Every `.md` file under `dir`, with its text.
fn markdown_pages(dir: &Path) -> Result<BTreeMap<PathBuf, String>> {
    let mut pages = BTreeMap::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            pages.extend(markdown_pages(&path)?);
        } else if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path)?;
            pages.insert(path, text);
        }
    }
    Ok(pages)
}

/// An `{{#include path:anchor}}` (or `#rustdoc_include`) in a page.
#[derive(Debug)]
struct Include {
    page: PathBuf,
    file: PathBuf,
    /// The anchor name, if the selector is not a line range.
    anchor: Option<String>,
    raw: String,
}

fn includes(page: &Path, text: &str) -> Vec<Include> {
    let mut found = Vec::new();
    for directive in ["{{#include ", "{{#rustdoc_include "] {
        let mut rest = text;
        while let Some(start) = rest.find(directive) {
            let after = &rest[start + directive.len()..];
            let Some(end) = after.find("}}") else { break };
            let target = after[..end].trim();
            let (file, selector) = match target.split_once(':') {
                Some((file, selector)) => (file, Some(selector)),
                None => (target, None),
            };
            let anchor = selector
                .filter(|s| !s.is_empty() && !s.chars().all(|c| c.is_ascii_digit() || c == ':'))
                .map(str::to_string);
            found.push(Include {
                page: page.to_path_buf(),
                file: page.parent().unwrap_or(Path::new(".")).join(file),
                anchor,
                raw: format!("{directive}{target}}}}}"),
            });
            rest = &after[end..];
        }
    }
    found
}

/// mdBook only warns about a missing anchor (and includes nothing): make it an error.
fn check_includes(pages: &BTreeMap<PathBuf, String>) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let mut count = 0;
    for (page, text) in pages {
        for include in includes(page, text) {
            count += 1;
            let Ok(content) = std::fs::read_to_string(&include.file) else {
                failures.push(format!(
                    "{}: {} names a file that does not exist",
                    rel(&include.page),
                    include.raw
                ));
                continue;
            };
            if let Some(anchor) = &include.anchor {
                let start = content
                    .lines()
                    .any(|l| anchor_name(l, "ANCHOR:") == Some(anchor.as_str()));
                let end = content
                    .lines()
                    .any(|l| anchor_name(l, "ANCHOR_END:") == Some(anchor.as_str()));
                if !(start && end) {
                    failures.push(format!(
                        "{}: {}: {} has no ANCHOR/ANCHOR_END pair named {anchor:?}",
                        rel(&include.page),
                        include.raw,
                        rel(&include.file)
                    ));
                }
            }
            if content.trim().is_empty() {
                failures.push(format!(
                    "{}: {} includes an empty file",
                    rel(&include.page),
                    include.raw
                ));
            }
        }
    }
    println!("    {count} includes checked");
    Ok(failures)
}

/// `Some("name")` for a line holding `ANCHOR: name` (mdBook's rule: the marker,
/// then the name up to the first non-word character).
fn anchor_name<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let at = line.find(marker)?;
    let rest = line[at + marker.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Every step 1–8 has a chapter that includes code from its step file and its
/// captured output.
fn check_step_chapters(src: &Path) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    for n in 1..=8 {
        let chapter = src.join(format!("step-{n}.md"));
        let Ok(text) = std::fs::read_to_string(&chapter) else {
            failures.push(format!("step {n} has no chapter ({})", rel(&chapter)));
            continue;
        };
        if !text.contains(&format!("{{{{#include ../../steps/step-{n}.rs")) {
            failures.push(format!(
                "{}: does not include code from steps/step-{n}.rs",
                rel(&chapter)
            ));
        }
        if !text.contains(&format!("{{{{#include outputs/step-{n}.txt}}}}")) {
            failures.push(format!(
                "{}: does not include its captured output outputs/step-{n}.txt",
                rel(&chapter)
            ));
        }
        if !text.contains("```mermaid") {
            failures.push(format!(
                "{}: has no \"you are here\" diagram",
                rel(&chapter)
            ));
        }
    }
    Ok(failures)
}

/// Every link to the Go sample-controller is pinned to the tag the port follows.
fn check_go_links(pages: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let tag = sample_controller::GO_SOURCE_TAG;
    let prefix = "github.com/kubernetes/sample-controller";
    let mut failures = Vec::new();
    let mut count = 0;
    for (page, text) in pages {
        let mut rest = text.as_str();
        while let Some(at) = rest.find(prefix) {
            let link: String = rest[at..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '>' | '"' | ']' | '`'))
                .collect();
            count += 1;
            let pinned = [
                format!("{prefix}/blob/{tag}/"),
                format!("{prefix}/tree/{tag}"),
            ];
            if !pinned.iter().any(|p| link.starts_with(p.as_str())) {
                failures.push(format!(
                    "{}: {link} is not pinned to /blob/{tag}/ or /tree/{tag}",
                    rel(page)
                ));
            }
            rest = &rest[at + prefix.len()..];
        }
    }
    println!("    {count} links to the Go sample-controller checked");
    failures
}

/// Every page is in SUMMARY.md (mdBook silently leaves out the others).
fn check_summary(src: &Path, pages: &BTreeMap<PathBuf, String>) -> Result<Vec<String>> {
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).context("book/src/SUMMARY.md")?;
    let mut failures = Vec::new();
    for page in pages.keys() {
        let Ok(name) = page.strip_prefix(src) else {
            continue;
        };
        let name = name.to_string_lossy();
        if name != "SUMMARY.md" && !summary.contains(&format!("]({name})")) {
            failures.push(format!("{} is not in SUMMARY.md", rel(page)));
        }
    }
    Ok(failures)
}

/// Every relative `href` and `src` in the rendered book points at a file that
/// exists and, with a `#fragment`, at an element with that id.
fn check_rendered_links(html: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    collect_files(html, &mut files)?;
    let mut ids: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    let mut texts = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "html"))
    {
        let text = std::fs::read_to_string(file)?;
        ids.insert(
            file.clone(),
            attribute_values(&text, "id").into_iter().collect(),
        );
        texts.push((file.clone(), text));
    }
    let mut failures = Vec::new();
    let mut count = 0;
    for (file, text) in &texts {
        // The print page repeats every chapter with rewritten links; the
        // 404 page uses absolute paths from `site-url`.
        let name = file.file_name().unwrap_or_default();
        if name == "print.html" || name == "404.html" {
            continue;
        }
        for target in attribute_values(text, "href")
            .into_iter()
            .chain(attribute_values(text, "src"))
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

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
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

/// The values of every `name="…"` attribute in `html`, entity `&amp;` decoded.
fn attribute_values(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    let mut values = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&needle) {
        let after = &rest[at + needle.len()..];
        let Some(end) = after.find('"') else { break };
        values.push(after[..end].replace("&amp;", "&"));
        rest = &after[end..];
    }
    values
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
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

fn rel(path: &Path) -> String {
    let root = crate::repo_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

// ---------------------------------------------------------------------------
// outputs

/// Every file `outputs` writes, in the order it writes them.
const OUTPUT_FILES: &[&str] = &[
    "example-step4-backoff.txt",
    "crd-missing.txt",
    "protected-group.txt",
    "watch-list.txt",
    "step-1.txt",
    "step-2.txt",
    "step-3.txt",
    "step-4.txt",
    "step-5.txt",
    "step-6.txt",
    "step-7.txt",
    "step-7-events.txt",
    "step-8.txt",
    "step-8-events.txt",
    "rbac-forbidden.txt",
    "rbac-warnings.txt",
    "metrics.txt",
    "leader-election.txt",
    "leader-lost.txt",
    "musl-binary.txt",
];

/// Runs every scenario (or those writing `only`) against one fresh control
/// plane and writes the transcripts.
async fn outputs(only: &[String]) -> Result<()> {
    for name in only {
        ensure!(
            OUTPUT_FILES.contains(&name.as_str()),
            "{name} is not an output file; the files are: {}",
            OUTPUT_FILES.join(", ")
        );
    }
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let started = std::time::Instant::now();
    let root = crate::repo_root();
    println!("==> cargo build --bins --examples");
    run_tool(
        Command::new(env!("CARGO"))
            .args(["build", "--bins", "--examples"])
            .current_dir(&root),
    )?;
    let out = book_dir().join("src/outputs");
    std::fs::create_dir_all(&out)?;
    // Needs no cluster; reuses the build tests/image.rs made, if current.
    if wanted("musl-binary.txt") {
        let lines = timed("musl-binary.txt", musl_binary()).await?;
        write_file(&out, "musl-binary.txt", &lines)?;
    }
    if OUTPUT_FILES
        .iter()
        .all(|f| *f == "musl-binary.txt" || !wanted(f))
    {
        println!("Wrote {} in {:.0?}", rel(&out), started.elapsed());
        return Ok(());
    }
    println!("==> Starting a local control plane");
    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    let env = Env {
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        server: cp.server_url().to_string(),
        client: client.clone(),
        bin: root.join("target/debug"),
    };

    // The exercise solutions that need no cluster.
    if wanted("example-step4-backoff.txt") {
        let backoff = Command::new(root.join("target/debug/examples/step4_backoff_table"))
            .output()
            .context("running examples/step4_backoff_table")?;
        ensure!(backoff.status.success(), "step4_backoff_table failed");
        let mut lines = vec!["$ cargo run --example step4_backoff_table".to_string()];
        lines.extend(
            String::from_utf8_lossy(&backoff.stdout)
                .lines()
                .map(str::to_string),
        );
        write(&out, "example-step4-backoff.txt", &env, lines)?;
    }

    // Before the CRD exists: the message every step prints, and what the API
    // server says to the CRD without its protected-group annotation.
    if wanted("crd-missing.txt") {
        write(&out, "crd-missing.txt", &env, crd_missing(&env).await?)?;
    }
    if wanted("protected-group.txt") {
        let lines = protected_group(&client).await?;
        write(&out, "protected-group.txt", &env, lines)?;
    }
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;
    if wanted("watch-list.txt") {
        write(&out, "watch-list.txt", &env, watch_list(&env, &cp).await?)?;
    }
    if wanted("step-1.txt") {
        write(&out, "step-1.txt", &env, step_1(&env).await?)?;
    }
    if wanted("step-2.txt") {
        write(&out, "step-2.txt", &env, step_2(&env).await?)?;
    }
    if wanted("step-3.txt") {
        write(&out, "step-3.txt", &env, step_3(&env).await?)?;
    }
    if wanted("step-4.txt") {
        write(&out, "step-4.txt", &env, step_4(&env).await?)?;
    }
    if wanted("step-5.txt") {
        write(&out, "step-5.txt", &env, step_5(&env).await?)?;
    }
    if wanted("step-6.txt") {
        write(&out, "step-6.txt", &env, step_6(&env).await?)?;
    }
    if wanted("step-7.txt") || wanted("step-7-events.txt") {
        let (step_7, events) = timed("step-7.txt", whole_controller(&env, "step-7")).await?;
        write(&out, "step-7.txt", &env, step_7)?;
        write(&out, "step-7-events.txt", &env, events)?;
    }
    if wanted("step-8.txt") || wanted("step-8-events.txt") {
        let (step_8, events) = timed("step-8.txt", whole_controller(&env, "step-8")).await?;
        write(&out, "step-8.txt", &env, step_8)?;
        write(&out, "step-8-events.txt", &env, events)?;
    }
    if wanted("rbac-forbidden.txt") {
        let lines = rbac_forbidden(&env, &cp).await?;
        write(&out, "rbac-forbidden.txt", &env, lines)?;
    }

    // Running in a cluster.
    if wanted("rbac-warnings.txt") {
        let lines = timed("rbac-warnings.txt", rbac_warnings(&env, &cp)).await?;
        write(&out, "rbac-warnings.txt", &env, lines)?;
    }
    if wanted("metrics.txt") {
        let lines = timed("metrics.txt", metrics(&env)).await?;
        write(&out, "metrics.txt", &env, lines)?;
    }
    if wanted("leader-election.txt") {
        let lines = timed("leader-election.txt", leader_election(&env, &cp)).await?;
        write(&out, "leader-election.txt", &env, lines)?;
    }
    if wanted("leader-lost.txt") {
        let lines = timed("leader-lost.txt", leader_lost(&env, &cp)).await?;
        write(&out, "leader-lost.txt", &env, lines)?;
    }
    println!("Wrote {} in {:.0?}", rel(&out), started.elapsed());
    Ok(())
}

/// Awaits one capture and prints how long it took.
async fn timed<T>(name: &str, capture: impl Future<Output = Result<T>>) -> Result<T> {
    let started = std::time::Instant::now();
    let result = capture.await.with_context(|| format!("capturing {name}"));
    println!("    {name}: captured in {:.1?}", started.elapsed());
    result
}

struct Env {
    kubeconfig: PathBuf,
    server: String,
    client: Client,
    bin: PathBuf,
}

/// Writes a transcript with what varies between runs normalised: log
/// timestamps are dropped and the API server's random port is replaced.
fn write(dir: &Path, name: &str, env: &Env, lines: Vec<String>) -> Result<()> {
    let port = env
        .server
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/');
    let lines: Vec<String> = lines
        .iter()
        .map(|line| strip_timestamp(line).replace(&format!("127.0.0.1:{port}"), "127.0.0.1:PORT"))
        .collect();
    write_file(dir, name, &lines)
}

/// Writes `lines` to `dir/name`, trailing spaces trimmed.
fn write_file(dir: &Path, name: &str, lines: &[String]) -> Result<()> {
    let mut text = String::new();
    for line in lines {
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    println!("    wrote {}", rel(&path));
    Ok(())
}

/// `2026-11-30T09:51:00.123456Z  INFO x: y` → `INFO x: y`.
fn strip_timestamp(line: &str) -> String {
    let bytes = line.as_bytes();
    let looks_like_time = bytes.len() > 20
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[10] == b'T';
    match line.find("Z ") {
        Some(end) if looks_like_time && end < 40 => line[end + 1..].trim_start().to_string(),
        _ => line.to_string(),
    }
}

/// A step binary running as a child process; stdout and stderr merged line by
/// line, with the scenario's own actions interleaved as `>>>` lines.
struct Run {
    name: String,
    child: tokio::process::Child,
    lines: mpsc::UnboundedReceiver<String>,
    transcript: Vec<String>,
}

impl Run {
    fn start(env: &Env, bin: &str, namespace: &str, extra: &[&str]) -> Result<Run> {
        Self::start_with(env, &env.kubeconfig, bin, namespace, extra)
    }

    fn start_with(
        env: &Env,
        kubeconfig: &Path,
        bin: &str,
        namespace: &str,
        extra: &[&str],
    ) -> Result<Run> {
        let mut child = tokio::process::Command::new(env.bin.join(bin))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", namespace])
            .args(extra)
            .env("RUST_LOG", "info")
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {bin} (run `cargo build --bins`)"))?;
        let (tx, lines) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().context("stdout")?;
        let stderr = child.stderr.take().context("stderr")?;
        let streams: [Box<dyn tokio::io::AsyncRead + Unpin + Send>; 2] =
            [Box::new(stdout), Box::new(stderr)];
        for stream in streams {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut shown = vec![format!(
            "$ cargo run --bin {bin} -- --namespace {namespace}"
        )];
        if !extra.is_empty() {
            shown[0].push(' ');
            shown[0].push_str(&extra.join(" "));
        }
        println!("==> {}", shown[0]);
        Ok(Run {
            name: bin.to_string(),
            child,
            lines,
            transcript: shown,
        })
    }

    /// Records an action of the scenario in the transcript, after letting
    /// the step finish printing what the previous action caused.
    async fn note(&mut self, action: impl Into<String>) {
        self.drain_for(Duration::from_millis(500)).await;
        let line = format!(">>> {}", action.into());
        println!("[{}] {line}", self.name);
        self.transcript.push(line);
    }

    fn take(&mut self, line: String) {
        println!("[{}] {line}", self.name);
        self.transcript.push(line);
    }

    /// Waits for a line containing every one of `parts`.
    async fn expect(&mut self, parts: &[&str]) -> Result<String> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) => {
                    self.take(line.clone());
                    if parts.iter().all(|p| line.contains(p)) {
                        return Ok(line);
                    }
                }
                Ok(None) => bail!("{} exited before printing {parts:?}", self.name),
                Err(_) => bail!("{} did not print {parts:?} within {WAIT:?}", self.name),
            }
        }
    }

    /// Takes whatever the step prints during `period`.
    async fn drain_for(&mut self, period: Duration) {
        let deadline = tokio::time::Instant::now() + period;
        while let Ok(Some(line)) = tokio::time::timeout_at(deadline, self.lines.recv()).await {
            self.take(line);
        }
    }

    /// Waits for the step to exit by itself.
    async fn wait(mut self) -> Result<Vec<String>> {
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .context("the step did not exit")??;
        while let Some(line) = self.lines.recv().await {
            self.take(line);
        }
        self.transcript
            .push(format!("(exit status {})", status.code().unwrap_or(-1)));
        Ok(self.transcript)
    }

    /// Sends SIGTERM, as Ctrl-C would send SIGINT, and waits for the exit.
    async fn terminate(mut self) -> Result<Vec<String>> {
        let pid = self.child.id().context("the step already exited")?;
        self.note("Ctrl-C   # the capture sends SIGTERM, which stops a step the same way")
            .await;
        // SAFETY: kill(2) on the PID of the child we started, with a valid signal.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        self.wait().await
    }
}

/// The LIST and WATCH requests of Foos and Deployments that Go's
/// sample-controller, step 7 and step 8 send while they start, each alone,
/// from kube-apiserver's `apiserver_request_total` (a watch is counted when
/// it ends, so each program is stopped before the count).
async fn watch_list(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let go = testcluster::binaries::ensure(testcluster::Binary::SampleController)?;
    let kubeconfig = env.kubeconfig.display().to_string();
    let programs = [
        (
            "Go sample-controller v0.36.3",
            go,
            vec![format!("-kubeconfig={kubeconfig}")],
        ),
        (
            "step-7",
            env.bin.join("step-7"),
            vec!["--kubeconfig".into(), kubeconfig.clone()],
        ),
        (
            "step-8",
            env.bin.join("step-8"),
            vec!["--kubeconfig".into(), kubeconfig.clone()],
        ),
    ];
    let mut lines = vec![
        "$ kubectl get --raw /metrics | grep apiserver_request_total   # before and after each program; LIST and WATCH of foos and deployments".to_string(),
    ];
    for (name, exe, args) in programs {
        let before = crate::bench::request_counts(&env.client).await?;
        let log = cp
            .log_dir()
            .join(format!("watch-list-{}.log", name.replace(' ', "-")));
        let mut child = crate::bench::start(&exe, &args, &log).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Some(pid) = child.id() {
            // SAFETY: kill(2) on the PID of the child we started, with a valid signal.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
        tokio::time::timeout(Duration::from_secs(15), child.wait())
            .await
            .context("a program did not stop on SIGTERM")??;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = crate::bench::request_counts(&env.client).await?;
        let counts = crate::bench::diff(&before, &after);
        let of = |resource: &str| {
            let verbs: Vec<String> = ["LIST", "WATCH"]
                .iter()
                .filter_map(|verb| {
                    let n = counts.get(&format!("{verb} {resource}"))?;
                    Some(format!("{verb} {n}"))
                })
                .collect();
            format!("{resource}: {}", verbs.join(", "))
        };
        lines.push(format!(
            "{name:<30} {:<24} {}",
            of("foos"),
            of("deployments")
        ));
    }
    Ok(lines)
}

/// The `kubectl` command that creates the Foo [`create_foo`] creates.
fn create_foo_command(ns: &str, name: &str, deployment: &str, replicas: i32) -> String {
    format!(
        r#"kubectl -n {ns} create -f - <<<'{{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": {{"name": "{name}"}}, "spec": {{"deploymentName": "{deployment}", "replicas": {replicas}}}}}'"#
    )
}

async fn create_foo(
    run: &mut Run,
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> Result<Foo> {
    run.note(create_foo_command(ns, name, deployment, replicas))
        .await;
    let foo = Foo::new(
        name,
        FooSpec {
            deployment_name: deployment.into(),
            replicas: Some(replicas),
        },
    );
    Ok(Api::<Foo>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &foo)
        .await?)
}

/// A Deployment nobody owns.
fn foreign_deployment(name: &str) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:latest"}]}
            }
        }
    }))?)
}

async fn create_foreign_deployment(
    run: Option<&mut Run>,
    client: &Client,
    ns: &str,
    name: &str,
) -> Result<()> {
    if let Some(run) = run {
        run.note(format!(
            "kubectl -n {ns} create deployment {name} --image nginx:latest   # no owner"
        ))
        .await;
    }
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &foreign_deployment(name)?)
        .await?;
    Ok(())
}

async fn patch_replicas<K>(run: &mut Run, api: &Api<K>, kind: &str, name: &str, n: i32) -> Result<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let ns = api.namespace().unwrap_or("default");
    run.note(format!(
        "kubectl -n {ns} patch {kind} {name} --type merge -p '{{\"spec\":{{\"replicas\":{n}}}}}'"
    ))
    .await;
    Ok(api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": n}})),
        )
        .await?)
}

async fn delete<K>(run: &mut Run, api: &Api<K>, kind: &str, name: &str) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let ns = api.namespace().unwrap_or("default");
    run.note(format!("kubectl -n {ns} delete {kind} {name}"))
        .await;
    api.delete(name, &DeleteParams::default()).await?;
    Ok(())
}

/// Polls `check` every 200 ms until it returns `Some`.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `kubectl get foos,deployments` as the steps print tables.
async fn kubectl_get(run: &mut Run, client: &Client, ns: &str) -> Result<()> {
    let foos = Api::<Foo>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?;
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await?;
    run.note(format!("kubectl -n {ns} get foos,deployments"))
        .await;
    for line in show::foos(&foos.items).lines() {
        run.transcript.push(line.to_string());
    }
    run.transcript.push(String::new());
    for line in show::deployments(&deployments.items).lines() {
        run.transcript.push(line.to_string());
    }
    Ok(())
}

async fn crd_missing(env: &Env) -> Result<Vec<String>> {
    let run = Run::start(env, "step-1", "default", &[])?;
    run.wait().await
}

/// The API server's answer to the Foo CRD without `api-approved.kubernetes.io`
/// (a dry run: nothing is stored).
async fn protected_group(client: &Client) -> Result<Vec<String>> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::CustomResourceExt;
    let mut crd = Foo::crd();
    crd.metadata.annotations = None;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut lines = vec![
        "$ kubectl apply --dry-run=server -f crd-without-annotation.yaml   # manifests/crd.yaml minus the annotation".to_string(),
    ];
    match api.create(&params, &crd).await {
        Ok(_) => bail!("the API server accepted a *.k8s.io CRD without the approval annotation"),
        Err(kube::Error::Api(status)) => lines.push(format!(
            "{} ({} {}): {}",
            status.status.map(|s| format!("{s:?}")).unwrap_or_default(),
            status.code,
            status.reason,
            status.message
        )),
        Err(other) => return Err(other.into()),
    }
    Ok(lines)
}

async fn step_1(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step1";
    testcluster::create_namespace(&env.client, ns).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let foo = Foo::new(
        "example-foo",
        FooSpec {
            deployment_name: "example-foo".into(),
            replicas: Some(1),
        },
    );
    foos.create(&PostParams::default(), &foo).await?;
    create_foreign_deployment(None, &env.client, ns, "plain-deployment").await?;
    let mut run = Run::start(env, "step-1", ns, &[])?;
    run.transcript.splice(
        0..0,
        [
            format!(
                ">>> {}   # before the step starts",
                create_foo_command(ns, "example-foo", "example-foo", 1)
            ),
            format!(
                ">>> kubectl -n {ns} create deployment plain-deployment --image nginx:latest   # no owner"
            ),
        ],
    );
    run.wait().await
}

async fn step_2(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step2";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-2", ns, &[])?;
    run.expect(&["Caches synced"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    create_foo(&mut run, &env.client, ns, "later-foo", "later-foo", 3).await?;
    run.expect(&["later-foo"]).await?;
    create_foreign_deployment(Some(&mut run), &env.client, ns, "later-deployment").await?;
    run.expect(&["later-deployment"]).await?;
    run.drain_for(Duration::from_secs(4)).await;
    run.terminate().await
}

async fn step_3(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step3";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-3", ns, &["--resync", "10"])?;
    tokio::time::sleep(Duration::from_secs(2)).await; // let the watches start
    let foo = create_foo(&mut run, &env.client, ns, "watched", "watched-nginx", 1).await?;
    run.expect(&["Foo added"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let updated = patch_replicas(&mut run, &foos, "foo", "watched", 2).await?;
    run.expect(&["Foo updated"]).await?;
    drop(foo);
    run.note(format!(
        "kubectl -n {ns} create deployment watched-nginx --image nginx:latest   # the capture creates it as step 5 would: controlled by Foo watched"
    )).await;
    Api::<Deployment>::namespaced(env.client.clone(), ns)
        .create(&PostParams::default(), &new_deployment(&updated))
        .await?;
    run.expect(&["Deployment added"]).await?;
    create_foreign_deployment(Some(&mut run), &env.client, ns, "unowned").await?;
    run.expect(&["Deployment added", "unowned"]).await?;
    run.note("sleep 10   # the resync period").await;
    run.expect(&["same resourceVersion"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    delete(&mut run, &deployments, "deployment", "watched-nginx").await?;
    run.expect(&["Deployment deleted", "watched-nginx"]).await?;
    delete(&mut run, &foos, "foo", "watched").await?;
    run.expect(&["Foo deleted"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    run.terminate().await
}

async fn step_4(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step4";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-4", ns, &["--fail-first", "3"])?;
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, &env.client, ns, "flaky", "flaky", 1).await?;
    run.expect(&["done attempt 4"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    run.note(format!(
        "kubectl -n {ns} label foo flaky round=1   # a change: synced again, without failures now"
    ))
    .await;
    foos.patch(
        "flaky",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"round": "1"}}})),
    )
    .await?;
    run.expect(&["done attempt 5"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    run.terminate().await
}

async fn step_5(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step5";
    testcluster::create_namespace(&env.client, ns).await?;
    create_foreign_deployment(None, &env.client, ns, "taken").await?;
    let mut run = Run::start(env, "step-5", ns, &[])?;
    run.transcript.insert(
        0,
        format!(">>> kubectl -n {ns} create deployment taken --image nginx:latest   # before the step starts; no owner"),
    );
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, &env.client, ns, "web", "web-nginx", 2).await?;
    run.expect(&["creating Deployment"]).await?;
    run.expect(&["Successfully synced", "web"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    create_foo(&mut run, &env.client, ns, "squatter", "taken", 3).await?;
    run.expect(&["Error syncing", "squatter"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    patch_replicas(&mut run, &deployments, "deployment", "web-nginx", 5).await?;
    run.expect(&["updating Deployment"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    delete(&mut run, &deployments, "deployment", "web-nginx").await?;
    run.expect(&["creating Deployment", "web-nginx"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;
    run.terminate().await
}

async fn step_6(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step6";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-6", ns, &[])?;
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, &env.client, ns, "status", "status-nginx", 2).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let available = |want: i32| {
        let foos = foos.clone();
        async move {
            let foo = foos.get("status").await.ok()?;
            (foo.status?.available_replicas == want).then_some(())
        }
    };
    eventually("2 available replicas in the Foo's status", || available(2)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;
    patch_replicas(&mut run, &foos, "foo", "status", 3).await?;
    eventually("3 available replicas in the Foo's status", || available(3)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;
    run.terminate().await
}

/// Steps 7 and 8 through one scenario, so that their chapters can be read
/// side by side: a Foo that syncs and one whose Deployment name is taken;
/// others label the owned Deployment and change its image; the Foo scales;
/// nothing happens for longer than Go's 30 s resync period; the Foo is
/// deleted. Returns the transcript and the Events listed after the step
/// exited, so that their counts are those of the whole transcript.
async fn whole_controller(env: &Env, bin: &str) -> Result<(Vec<String>, Vec<String>)> {
    let ns = format!("book-{}", bin.replace('-', ""));
    let ns = ns.as_str();
    testcluster::create_namespace(&env.client, ns).await?;
    create_foreign_deployment(None, &env.client, ns, "occupied").await?;
    let mut run = Run::start(env, bin, ns, &[])?;
    run.transcript.insert(
        0,
        format!(">>> kubectl -n {ns} create deployment occupied --image nginx:latest   # before the step starts; no owner"),
    );
    run.expect(&["Starting workers"]).await?;
    create_foo(&mut run, &env.client, ns, "good", "good-nginx", 1).await?;
    run.expect(&["Successfully synced", "good"]).await?;
    create_foo(&mut run, &env.client, ns, "blocked", "occupied", 1).await?;
    run.expect(&["Error syncing", "blocked"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let available = |want: i32| {
        let foos = foos.clone();
        async move { (foos.get("good").await.ok()?.status?.available_replicas == want).then_some(()) }
    };
    eventually("1 available replica in good's status", || available(1)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;

    // Others edit the Deployment good owns, each under its own field manager,
    // with what `kubectl label` and `kubectl set image` send.
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    let edits = [
        (
            format!("kubectl -n {ns} label deployment good-nginx team=blue"),
            "kubectl-label",
            Patch::Merge(json!({"metadata": {"labels": {"team": "blue"}}})),
        ),
        (
            format!("kubectl -n {ns} set image deployment/good-nginx nginx=nginx:1.27"),
            "kubectl-set",
            Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.27"}]}}}})),
        ),
    ];
    for (command, manager, patch) in edits {
        run.note(command).await;
        let params = PatchParams {
            field_manager: Some(manager.into()),
            ..PatchParams::default()
        };
        deployments.patch("good-nginx", &params, &patch).await?;
    }
    run.drain_for(Duration::from_secs(2)).await;
    deployment_state(&mut run, &deployments, "good-nginx").await?;
    patch_replicas(&mut run, &foos, "foo", "good", 2).await?;
    eventually("2 available replicas in good's status", || available(2)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    deployment_state(&mut run, &deployments, "good-nginx").await?;

    run.note("sleep 35   # nothing changes, for longer than Go's 30 s resync period")
        .await;
    run.drain_for(Duration::from_secs(35)).await;

    delete(&mut run, &foos, "foo", "good").await?;
    eventually("good-nginx garbage-collected", || {
        let deployments = deployments.clone();
        async move {
            deployments
                .get_opt("good-nginx")
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await?;
    run.note(format!(
        "kubectl -n {ns} get deployment good-nginx   # NotFound: the garbage collector deleted it with its owner"
    ))
    .await;
    run.drain_for(Duration::from_secs(1)).await;
    let transcript = run.terminate().await?;
    Ok((transcript, events_table(&env.client, ns).await?))
}

/// `kubectl get deployment NAME` with the fields others edit in the scenario
/// of [`whole_controller`]: replicas, image, the label `team`.
async fn deployment_state(run: &mut Run, deployments: &Api<Deployment>, name: &str) -> Result<()> {
    let d = deployments.get(name).await?;
    let ns = deployments.namespace().unwrap_or_default();
    run.note(format!(
        "kubectl -n {ns} get deployment {name} -o custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas,IMAGE:.spec.template.spec.containers[0].image,TEAM:.metadata.labels.team"
    ))
    .await;
    let spec = d.spec.as_ref();
    let image = spec
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone());
    let row = vec![
        d.name_any(),
        spec.and_then(|s| s.replicas)
            .map_or("<none>".into(), |r| r.to_string()),
        image.unwrap_or_else(|| "<none>".into()),
        d.labels()
            .get("team")
            .cloned()
            .unwrap_or_else(|| "<none>".into()),
    ];
    run.transcript.extend(
        show::table(&["NAME", "REPLICAS", "IMAGE", "TEAM"], &[row])
            .lines()
            .map(str::to_string),
    );
    Ok(())
}

/// The Events sample-controller recorded in `ns`, as the `$` line lists them.
async fn events_table(client: &Client, ns: &str) -> Result<Vec<String>> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().fields("reportingController=sample-controller");
    let mut items = events.list(&params).await?.items;
    items.sort_by_key(|e| {
        let regarding = e.regarding.as_ref().and_then(|r| r.name.clone());
        (
            regarding,
            e.metadata.creation_timestamp.clone().map(|t| t.0),
        )
    });
    let rows: Vec<Vec<String>> = items
        .into_iter()
        .map(|e| {
            vec![
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.regarding.and_then(|r| r.name).unwrap_or_default(),
                e.action.unwrap_or_default(),
                e.series.map_or("<none>".into(), |s| s.count.to_string()),
                e.note.unwrap_or_default(),
            ]
        })
        .collect();
    let mut lines = vec![format!(
        "$ kubectl -n {ns} get events.events.k8s.io --field-selector reportingController=sample-controller --sort-by .regarding.name -o custom-columns=TYPE:.type,REASON:.reason,REGARDING:.regarding.name,ACTION:.action,COUNT:.series.count,NOTE:.note"
    )];
    lines.extend(
        show::table(
            &["TYPE", "REASON", "REGARDING", "ACTION", "COUNT", "NOTE"],
            &rows,
        )
        .lines()
        .map(str::to_string),
    );
    Ok(lines)
}

/// Step 6 as a ServiceAccount that RBAC grants nothing: the preflight message
/// of steps 1–7, which exit (step 8 warns instead: [`rbac_warnings`]).
async fn rbac_forbidden(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let ns = "book-rbac";
    testcluster::create_namespace(&env.client, ns).await?;
    let path = cp.service_account_kubeconfig(ns, "controller").await?;
    let mut run = Run::start_with(env, &path, "step-6", ns, &[])?;
    run.transcript[0] = format!(
        "$ cargo run --bin step-6 -- --kubeconfig sa.kubeconfig --namespace {ns}   # a token of ServiceAccount {ns}/controller, which no RoleBinding names"
    );
    run.wait().await
}

// ---------------------------------------------------------------------------
// outputs: running in a cluster

/// The loopback ports of `--http-address` in the transcripts (the chapter
/// quotes them); each is checked free before use.
const METRICS_PORT: u16 = 18090;
const PORT_A: u16 = 18091;
const PORT_B: u16 = 18092;

/// The lease the leader-election transcripts use: shorter than the defaults
/// (15 s and 5 s) so that a takeover after a crash is quick to show.
const LEASE_FLAGS: [&str; 4] = [
    "--leader-elect-lease-duration",
    "10",
    "--leader-elect-renew-grace",
    "3",
];

/// Where `manifests/rbac.yaml` puts the ServiceAccount and the Lease.
const CONTROLLER_NS: &str = "sample-controller";

/// The namespace of the leader-election transcripts' Foo.
const LEADER_NS: &str = "book-leader";

/// Fails, naming the port, if something listens on `127.0.0.1:port`.
fn port_free(port: u16) -> Result<()> {
    std::net::TcpListener::bind(("127.0.0.1", port))
        .map(drop)
        .with_context(|| {
            format!(
                "127.0.0.1:{port} is in use; the book's transcripts serve step 8's endpoints there"
            )
        })
}

/// What `curl` on a replica's endpoints shows, as transcript lines: the
/// command, `/readyz`'s status code and the two metrics that tell a leader
/// from a standby.
async fn curl_lines(port: u16) -> Result<Vec<String>> {
    let (ready, _) = testcluster::http_get(port, "/readyz").await?;
    let (_, metrics) = testcluster::http_get(port, "/metrics").await?;
    let mut lines = vec![
        format!(
            ">>> curl -s -o /dev/null -w '%{{http_code}}\\n' 127.0.0.1:{port}/readyz; curl -s 127.0.0.1:{port}/metrics | grep -E '^sample_controller_(leader|reconciles_total) '"
        ),
        ready.to_string(),
    ];
    lines.extend(
        metrics
            .lines()
            .filter(|l| {
                [
                    "sample_controller_leader ",
                    "sample_controller_reconciles_total ",
                ]
                .iter()
                .any(|m| l.starts_with(m))
            })
            .map(str::to_string),
    );
    Ok(lines)
}

/// Step 8 as a ServiceAccount that RBAC grants nothing: it warns about every
/// missing permission, then runs, and each watcher logs its 403 and retries.
async fn rbac_warnings(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let ns = "book-rbac-warnings";
    testcluster::create_namespace(&env.client, ns).await?;
    let path = cp.service_account_kubeconfig(ns, "controller").await?;
    let mut run = Run::start_with(env, &path, "step-8", ns, &[])?;
    run.transcript[0] = format!(
        "$ cargo run --bin step-8 -- --kubeconfig sa.kubeconfig --namespace {ns}   # a token of ServiceAccount {ns}/controller, which no RoleBinding names"
    );
    run.expect(&["Waiting for informer caches to sync"]).await?;
    // The first 403 of each of the two watches, in whichever order they come
    // (a streaming list starts with a watch, so the refused verb may be either).
    let mut first = BTreeSet::new();
    while first.len() < 2 {
        let line = run.expect(&["RBAC forbids it"]).await?;
        for resource in ["foos", "deployments"] {
            if [" list ", " watch "]
                .iter()
                .any(|verb| line.contains(&format!("cannot{verb}{resource}")))
            {
                first.insert(resource);
            }
        }
    }
    run.drain_for(Duration::from_millis(300)).await;
    run.transcript.push(
        "   (… the watchers retry with backoff and log the same 403s until RBAC allows them)"
            .to_string(),
    );
    ensure!(
        run.child.try_wait()?.is_none(),
        "step 8 exited although only RBAC was missing"
    );
    run.terminate().await
}

/// Step 8's `/metrics` after it synced one Foo and kept failing on another.
async fn metrics(env: &Env) -> Result<Vec<String>> {
    let ns = "book-metrics";
    testcluster::create_namespace(&env.client, ns).await?;
    create_foreign_deployment(None, &env.client, ns, "occupied").await?;
    port_free(METRICS_PORT)?;
    let address = format!("127.0.0.1:{METRICS_PORT}");
    let mut run = Run::start(env, "step-8", ns, &["--http-address", &address])?;
    run.expect(&["Starting workers"]).await?;
    create_foo(&mut run, &env.client, ns, "example-foo", "example-foo", 1).await?;
    create_foo(&mut run, &env.client, ns, "blocked", "occupied", 1).await?;
    let blocked_at = tokio::time::Instant::now();
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    eventually("1 available replica in example-foo's status", || {
        let foos = foos.clone();
        async move {
            (foos
                .get("example-foo")
                .await
                .ok()?
                .status?
                .available_replicas
                == 1)
                .then_some(())
        }
    })
    .await?;
    // Let blocked's retries pile up for 10 s.
    run.drain_for(
        (blocked_at + Duration::from_secs(10))
            .saturating_duration_since(tokio::time::Instant::now()),
    )
    .await;
    let (code, body) = testcluster::http_get(METRICS_PORT, "/metrics").await?;
    ensure!(code == 200, "/metrics answered {code}");
    let mut lines = vec![
        format!("$ kubectl -n {ns} create deployment occupied --image nginx:latest   # no owner"),
        format!("$ cargo run --bin step-8 -- --namespace {ns} --http-address {address} &"),
        format!(
            "$ {}",
            create_foo_command(ns, "example-foo", "example-foo", 1)
        ),
        format!("$ {}", create_foo_command(ns, "blocked", "occupied", 1)),
        "$ sleep 10".to_string(),
        format!("$ curl -s {address}/metrics"),
    ];
    lines.extend(body.lines().map(str::to_string));
    run.terminate().await?;
    Ok(lines)
}

/// `kubectl apply --server-side -f manifests/<file>`: applies every object in it.
async fn apply_manifest(client: &Client, file: &str) -> Result<()> {
    let path = crate::repo_root().join("manifests").join(file);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    for object in testcluster::yaml_documents(&text)? {
        testcluster::apply_object(client, &object, "book-outputs", false).await?;
    }
    Ok(())
}

/// The leader-election transcripts' setup (idempotent): `manifests/rbac.yaml`,
/// the namespace `book-leader` with `manifests/example-foo.yaml` in it, and a
/// kubeconfig with a token of the manifests' ServiceAccount.
async fn leader_setup(env: &Env, cp: &ControlPlane) -> Result<PathBuf> {
    apply_manifest(&env.client, "rbac.yaml").await?;
    match testcluster::create_namespace(&env.client, LEADER_NS).await {
        Err(err) if format!("{err:#}").contains("already exists") => {}
        other => other?,
    }
    let path = crate::repo_root().join("manifests/example-foo.yaml");
    let foo: Foo = serde_yaml::from_str(&std::fs::read_to_string(&path)?)?;
    match Api::<Foo>::namespaced(env.client.clone(), LEADER_NS)
        .create(&PostParams::default(), &foo)
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        other => {
            other?;
        }
    }
    cp.service_account_kubeconfig(CONTROLLER_NS, "sample-controller")
        .await
}

/// The command line that starts replica `name` in the transcripts.
fn replica_command(name: &str, port: u16) -> String {
    format!(
        "$ POD_NAME={name} cargo run --bin step-8 -- --kubeconfig sa.kubeconfig --namespace {LEADER_NS} --leader-elect {} --http-address 127.0.0.1:{port} &",
        LEASE_FLAGS.join(" ")
    )
}

/// `kubectl get lease` in the transcripts: holder, duration, transitions.
async fn lease_table(client: &Client) -> Result<Vec<String>> {
    use k8s_openapi::api::coordination::v1::Lease;
    let lease = Api::<Lease>::namespaced(client.clone(), CONTROLLER_NS)
        .get("sample-controller")
        .await?;
    let spec = lease.spec.unwrap_or_default();
    let row = vec![
        spec.holder_identity.unwrap_or_else(|| "<none>".into()),
        spec.lease_duration_seconds
            .map_or("<none>".into(), |d| d.to_string()),
        spec.lease_transitions
            .map_or("<none>".into(), |t| t.to_string()),
    ];
    let mut lines = vec![format!(
        ">>> kubectl -n {CONTROLLER_NS} get lease sample-controller -o custom-columns=HOLDER:.spec.holderIdentity,DURATION:.spec.leaseDurationSeconds,TRANSITIONS:.spec.leaseTransitions"
    )];
    lines.extend(
        show::table(&["HOLDER", "DURATION", "TRANSITIONS"], &[row])
            .lines()
            .map(str::to_string),
    );
    Ok(lines)
}

/// Waits until `/readyz` on `port` answers 200.
async fn until_ready(port: u16) -> Result<()> {
    eventually(&format!("/readyz 200 on port {port}"), || async move {
        (testcluster::http_get(port, "/readyz").await.ok()?.0 == 200).then_some(())
    })
    .await
}

/// Two replicas: `a` leads, `b` stands by; `a` gets SIGTERM, releases the
/// Lease, and `b` takes it at its next look (every retry period, 2 s).
async fn leader_election(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let kubeconfig = leader_setup(env, cp).await?;
    let mut replicas = Replicas::new(vec![
        "$ kubectl apply -f manifests/rbac.yaml".to_string(),
        format!(
            "$ kubectl create namespace {LEADER_NS} && kubectl -n {LEADER_NS} apply -f manifests/example-foo.yaml"
        ),
        format!(
            "$ export POD_NAMESPACE={CONTROLLER_NS}   # what the downward API sets in the Pods"
        ),
        "$ # sa.kubeconfig: a token of the ServiceAccount sample-controller/sample-controller (kubectl create token)".to_string(),
        replica_command("a", PORT_A),
        replica_command("b", PORT_B),
        "   (each line below is prefixed with the replica that printed it)".to_string(),
    ]);
    replicas.start(env, &kubeconfig, "a", PORT_A)?;
    replicas.expect("a", &["Starting workers"]).await?;
    replicas.start(env, &kubeconfig, "b", PORT_B)?;
    replicas.expect("b", &["waiting to become leader"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), LEADER_NS);
    let available = |want: i32| {
        let foos = foos.clone();
        async move {
            (foos
                .get("example-foo")
                .await
                .ok()?
                .status?
                .available_replicas
                == want)
                .then_some(())
        }
    };
    eventually("1 available replica in example-foo's status", || {
        available(1)
    })
    .await?;
    // b reads the Lease every 2 s: let it see a as the holder before a stops.
    replicas.drain_for(Duration::from_secs(3)).await;
    let table = lease_table(&env.client).await?;
    replicas.lines(table).await;
    let (curl_a, curl_b) = (curl_lines(PORT_A).await?, curl_lines(PORT_B).await?);
    replicas.lines(curl_a).await;
    replicas.lines(curl_b).await;

    replicas
        .note("kill -TERM %1   # a: SIGTERM, what the kubelet sends when a Pod is deleted")
        .await;
    let stopped = tokio::time::Instant::now();
    replicas.signal("a", libc::SIGTERM)?;
    let status = replicas.wait("a").await?;
    replicas.mark(format!("a exited with status {status}"));
    ensure!(status == 0, "a did not exit cleanly on SIGTERM");
    let became = replicas.expect("b", &["became leader"]).await?;
    let handover = became.duration_since(stopped);
    replicas.mark(format!(
        "b became leader {:.1} s after a's SIGTERM",
        handover.as_secs_f64()
    ));
    replicas.expect("b", &["Starting workers"]).await?;
    until_ready(PORT_B).await?;
    let table = lease_table(&env.client).await?;
    replicas.lines(table).await;
    let curl_b = curl_lines(PORT_B).await?;
    replicas.lines(curl_b).await;

    // b reconciles now.
    replicas
        .note(format!(
            "kubectl -n {LEADER_NS} patch foo example-foo --type merge -p '{{\"spec\":{{\"replicas\":2}}}}'"
        ))
        .await;
    foos.patch(
        "example-foo",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await?;
    eventually("2 available replicas in example-foo's status", || {
        available(2)
    })
    .await?;
    replicas.note("kill -TERM %2   # b").await;
    replicas.signal("b", libc::SIGTERM)?;
    let status = replicas.wait("b").await?;
    replicas.mark(format!("b exited with status {status}"));
    println!(
        "    leader-election: b took over {:.1} s after a's SIGTERM",
        handover.as_secs_f64()
    );
    Ok(replicas.transcript)
}

/// A frozen leader (SIGSTOP) loses the Lease to the standby; resumed
/// (SIGCONT), it finds another holder and exits with status 1.
async fn leader_lost(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let kubeconfig = leader_setup(env, cp).await?;
    let mut replicas = Replicas::new(vec![
        replica_command("a", PORT_A),
        replica_command("b", PORT_B),
        "   (same setup as above)".to_string(),
    ]);
    replicas.start(env, &kubeconfig, "a", PORT_A)?;
    replicas.expect("a", &["Starting workers"]).await?;
    replicas.start(env, &kubeconfig, "b", PORT_B)?;
    replicas.expect("b", &["waiting to become leader"]).await?;
    replicas.drain_for(Duration::from_secs(3)).await;

    replicas
        .note("kill -STOP %1   # a: a frozen leader neither renews nor releases the Lease, as if it had crashed")
        .await;
    let frozen = tokio::time::Instant::now();
    replicas.signal("a", libc::SIGSTOP)?;
    let became = replicas.expect("b", &["became leader"]).await?;
    let takeover = became.duration_since(frozen);
    replicas.mark(format!(
        "b became leader {:.1} s after a froze",
        takeover.as_secs_f64()
    ));
    replicas.expect("b", &["Starting workers"]).await?;
    until_ready(PORT_B).await?;
    let table = lease_table(&env.client).await?;
    replicas.lines(table).await;

    replicas.note("kill -CONT %1   # a").await;
    let resumed = tokio::time::Instant::now();
    replicas.signal("a", libc::SIGCONT)?;
    let status = replicas.wait("a").await?;
    let exited = resumed.elapsed();
    replicas.mark(format!(
        "a exited with status {status}, {:.1} s after it resumed",
        exited.as_secs_f64()
    ));
    ensure!(
        status == 1
            && replicas
                .transcript
                .iter()
                .any(|l| l.starts_with("a | Error: lost the leader Lease")),
        "the resumed leader did not exit 1 with the loss message"
    );
    let curl_b = curl_lines(PORT_B).await?;
    replicas.lines(curl_b).await;
    replicas.note("kill -TERM %2   # b").await;
    replicas.signal("b", libc::SIGTERM)?;
    let status = replicas.wait("b").await?;
    replicas.mark(format!("b exited with status {status}"));
    println!(
        "    leader-lost: b took over {:.1} s after a froze; a exited {:.1} s after SIGCONT",
        takeover.as_secs_f64(),
        exited.as_secs_f64()
    );
    Ok(replicas.transcript)
}

/// Replicas of step 8 with `--leader-elect`, run at once as the
/// ServiceAccount of `manifests/rbac.yaml`; their output merged into one
/// transcript, each line prefixed with the replica's name (`a | …`).
struct Replicas {
    tx: mpsc::UnboundedSender<(String, Option<String>)>,
    rx: mpsc::UnboundedReceiver<(String, Option<String>)>,
    /// Each running replica and how many of its two output streams are open.
    running: BTreeMap<String, (tokio::process::Child, u8)>,
    /// Every line received: replica, line, when.
    seen: Vec<(String, String, tokio::time::Instant)>,
    /// `expect` looks at `seen` from here on (moved to the end by `note`).
    cursor: BTreeMap<String, usize>,
    transcript: Vec<String>,
}

impl Replicas {
    fn new(header: Vec<String>) -> Replicas {
        for line in &header {
            println!("==> {line}");
        }
        let (tx, rx) = mpsc::unbounded_channel();
        Replicas {
            tx,
            rx,
            running: BTreeMap::new(),
            seen: Vec::new(),
            cursor: BTreeMap::new(),
            transcript: header,
        }
    }

    /// Starts replica `name` as a Pod would run it: POD_NAME and POD_NAMESPACE
    /// set, `--leader-elect`, the endpoints on `port`; plus the short lease.
    fn start(&mut self, env: &Env, kubeconfig: &Path, name: &str, port: u16) -> Result<()> {
        port_free(port)?;
        let mut child = tokio::process::Command::new(env.bin.join("step-8"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", LEADER_NS, "--leader-elect"])
            .args(LEASE_FLAGS)
            .args(["--http-address", &format!("127.0.0.1:{port}")])
            .env("POD_NAMESPACE", CONTROLLER_NS)
            .env("POD_NAME", name)
            .env("RUST_LOG", "info")
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting step-8 (run `cargo build --bins`)")?;
        let stdout = child.stdout.take().context("stdout")?;
        let stderr = child.stderr.take().context("stderr")?;
        let streams: [Box<dyn tokio::io::AsyncRead + Unpin + Send>; 2] =
            [Box::new(stdout), Box::new(stderr)];
        for stream in streams {
            let (tx, name) = (self.tx.clone(), name.to_string());
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    let _ = tx.send((name.clone(), Some(line)));
                }
                let _ = tx.send((name, None)); // this stream ended
            });
        }
        self.running.insert(name.to_string(), (child, 2));
        self.cursor.insert(name.to_string(), self.seen.len());
        Ok(())
    }

    /// Records a line (or the end of a stream) from replica `name`.
    fn take(&mut self, name: String, line: Option<String>) {
        match line {
            Some(line) => {
                let shown = format!("{name} | {}", strip_timestamp(&line));
                println!("[replicas] {shown}");
                self.transcript.push(shown);
                self.seen.push((name, line, tokio::time::Instant::now()));
            }
            None => {
                if let Some((_, open)) = self.running.get_mut(&name) {
                    *open = open.saturating_sub(1);
                }
            }
        }
    }

    /// Receives one line or end of stream, or `false` at `deadline`.
    async fn receive(&mut self, deadline: tokio::time::Instant) -> bool {
        match tokio::time::timeout_at(deadline, self.rx.recv()).await {
            Ok(Some((name, line))) => {
                self.take(name, line);
                true
            }
            _ => false,
        }
    }

    /// Waits for a line of replica `name` containing every one of `parts`,
    /// printed since the last `note`; returns when it arrived.
    async fn expect(&mut self, name: &str, parts: &[&str]) -> Result<tokio::time::Instant> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let from = self.cursor.get(name).copied().unwrap_or(0);
            let found = self.seen[from..]
                .iter()
                .position(|(who, line, _)| who == name && parts.iter().all(|p| line.contains(p)));
            if let Some(at) = found {
                self.cursor.insert(name.to_string(), from + at + 1);
                return Ok(self.seen[from + at].2);
            }
            ensure!(
                self.running.get(name).is_some_and(|(_, open)| *open > 0),
                "replica {name} exited before printing {parts:?}"
            );
            ensure!(
                self.receive(deadline).await,
                "replica {name} did not print {parts:?} within {WAIT:?}"
            );
        }
    }

    /// Takes whatever the replicas print during `period`.
    async fn drain_for(&mut self, period: Duration) {
        let deadline = tokio::time::Instant::now() + period;
        while self.receive(deadline).await {}
    }

    /// Records an action (`>>> …`) after letting the replicas finish printing
    /// what the previous one caused; later `expect`s look only at what follows.
    async fn note(&mut self, action: impl Into<String>) {
        self.drain_for(Duration::from_millis(500)).await;
        let line = format!(">>> {}", action.into());
        println!("[replicas] {line}");
        self.transcript.push(line);
        for cursor in self.cursor.values_mut() {
            *cursor = self.seen.len();
        }
    }

    /// Records an observation (`(…)`) at once, in order with the lines received so far.
    fn mark(&mut self, text: impl Into<String>) {
        let line = format!("({})", text.into());
        println!("[replicas] {line}");
        self.transcript.push(line);
    }

    /// Records several transcript lines (a table) after letting output settle.
    async fn lines(&mut self, lines: Vec<String>) {
        self.drain_for(Duration::from_millis(500)).await;
        for line in lines {
            println!("[replicas] {line}");
            self.transcript.push(line);
        }
    }

    /// Sends `signal` to replica `name`, by its PID.
    fn signal(&self, name: &str, signal: libc::c_int) -> Result<()> {
        let (child, _) = self.running.get(name).context("no such replica")?;
        let pid = child.id().context("the replica already exited")?;
        // SAFETY: kill(2) on the PID of a child we started and have not reaped, with a valid signal.
        let sent = unsafe { libc::kill(pid as libc::pid_t, signal) };
        ensure!(
            sent == 0,
            "kill({pid}, {signal}): {}",
            std::io::Error::last_os_error()
        );
        Ok(())
    }

    /// Waits until replica `name` has closed its output and exited; its exit code.
    async fn wait(&mut self, name: &str) -> Result<i32> {
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.running.get(name).is_some_and(|(_, open)| *open > 0) {
            ensure!(
                self.receive(deadline).await,
                "replica {name} did not exit within {WAIT:?}"
            );
        }
        let (mut child, _) = self.running.remove(name).context("no such replica")?;
        let status = tokio::time::timeout_at(deadline, child.wait())
            .await
            .with_context(|| format!("replica {name} did not exit"))??;
        Ok(status.code().unwrap_or(-1))
    }
}

/// The static musl build of step 8 (the Dockerfile's command, into the
/// target directory tests/image.rs builds in): what it links and how
/// big it is. Reuses the binary that test built if there is one: cargo run
/// from here sees other `CARGO_PKG_*` variables than the test does, which
/// would make ring's build script, and all that depends on it, build again.
async fn musl_binary() -> Result<Vec<String>> {
    const TARGET: &str = "x86_64-unknown-linux-musl";
    let root = crate::repo_root();
    let build = [
        "build",
        "--release",
        "--locked",
        "--target",
        TARGET,
        "--bin",
        "step-8",
    ];
    let binary = format!("target/musl/{TARGET}/release/step-8");
    if root.join(&binary).is_file() {
        println!("==> {binary} exists (built by tests/image.rs): not building it again");
    } else {
        println!("==> CARGO_TARGET_DIR=target/musl cargo {}", build.join(" "));
        let status = tokio::process::Command::new(env!("CARGO"))
            .args(build)
            .env("CARGO_TARGET_DIR", root.join("target/musl"))
            .current_dir(&root)
            .status()
            .await
            .context("running cargo build")?;
        ensure!(
            status.success(),
            "the musl build failed: it needs `rustup target add {TARGET}` and musl-gcc (Debian: musl-tools)"
        );
    }
    let mut lines = vec![format!(
        "$ CARGO_TARGET_DIR=target/musl cargo {}",
        build.join(" ")
    )];
    for tool in ["file", "ldd", "wc -c"] {
        let mut words = tool.split(' ');
        let program = words.next().unwrap_or(tool);
        let output = Command::new(program)
            .args(words)
            .arg(&binary)
            .current_dir(&root)
            .output()
            .with_context(|| format!("running {program}"))?;
        lines.push(format!("$ {tool} {binary}"));
        for stream in [&output.stdout, &output.stderr] {
            lines.extend(String::from_utf8_lossy(stream).lines().map(str::to_string));
        }
    }
    Ok(lines)
}
