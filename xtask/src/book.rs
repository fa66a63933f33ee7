//! `cargo xtask book <command>`: the book in `book/`.
//!
//! * `outputs`: start a local control plane, run every step binary through a
//!   short scripted scenario, and write what it printed to
//!   `book/src/outputs/*.txt`, the output blocks the chapters include.
//! * `build`: `mdbook-mermaid install book` (regenerates the gitignored
//!   mermaid JS), then `mdbook build book`.
//! * `check`: source checks (every include and anchor resolves, every step has
//!   a chapter that includes its code and its output, every Go link is pinned),
//!   the build, a link check of the rendered HTML, and headless Chromium
//!   confirming that a step chapter's mermaid diagram rendered. Installs
//!   nothing: a missing tool is an error that names its install command.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use clap::Subcommand;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
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
    Outputs,
    /// Build the book into book/book (mdbook-mermaid install, then mdbook build).
    Build,
    /// Check includes, anchors, links, pinned Go links and the rendered diagrams.
    Check,
}

/// Runs a `cargo xtask book` subcommand.
pub async fn run(command: BookCommand) -> Result<()> {
    match command {
        BookCommand::Outputs => outputs().await,
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
pub fn check() -> Result<()> {
    let book = book_dir();
    let src = book.join("src");
    let mut failures = Vec::new();

    println!("==> book check: sources");
    let pages = markdown_pages(&src)?;
    failures.extend(check_includes(&pages)?);
    failures.extend(check_step_chapters(&src)?);
    failures.extend(check_go_links(&pages));
    failures.extend(check_summary(&src, &pages)?);
    if !failures.is_empty() {
        bail!("book check failed:\n  - {}", failures.join("\n  - "));
    }

    println!("==> book check: tools");
    require_tools(&[MDBOOK, MDBOOK_MERMAID, MDBOOK_LINKCHECK2, ("chromium", "")])?;

    println!("==> book check: mdbook build (html and linkcheck2)");
    build()?;

    println!("==> book check: links and anchors in the rendered HTML");
    failures.extend(check_rendered_links(&book.join("book/html"))?);
    if !failures.is_empty() {
        bail!("book check failed:\n  - {}", failures.join("\n  - "));
    }

    println!("==> book check: headless Chromium renders a step chapter's diagram");
    check_in_chromium(&book.join("book/html/step-3.html"))?;
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

/// Every step 1–7 has a chapter that includes code from its step file and its
/// captured output.
fn check_step_chapters(src: &Path) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    for n in 1..=7 {
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

/// Opens `page` in headless Chromium, lets its scripts run, and checks the DOM:
/// the mermaid diagram was replaced by an SVG, and highlighted Rust code is there.
fn check_in_chromium(page: &Path) -> Result<()> {
    ensure!(page.is_file(), "{} was not rendered", rel(page));
    let profile = std::env::temp_dir().join(format!("book-check-chromium-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile)?;
    let url = format!("file://{}", page.display());
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(&url)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("running chromium")?;
    let _ = std::fs::remove_dir_all(&profile);
    ensure!(
        output.status.success(),
        "chromium failed ({})",
        output.status
    );
    let dom = String::from_utf8_lossy(&output.stdout);
    let diagram = dom
        .find("class=\"mermaid\"")
        .map(|at| &dom[at..dom.len().min(at + 4000)]);
    ensure!(
        diagram.is_some(),
        "{url}: no mermaid diagram container in the DOM"
    );
    ensure!(
        diagram.is_some_and(|d| d.contains("data-processed=\"true\"") && d.contains("<svg")),
        "{url}: the mermaid diagram was not rendered to an <svg> (did mermaid.min.js load?)"
    );
    let code_blocks = dom.matches("<code class=\"language-rust").count();
    ensure!(
        code_blocks > 0 && dom.contains("hljs"),
        "{url}: no highlighted Rust code blocks in the DOM"
    );
    println!("    {url}: diagram rendered as SVG, {code_blocks} Rust code blocks");
    Ok(())
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

/// Runs every scenario against one fresh control plane and writes the transcripts.
async fn outputs() -> Result<()> {
    let root = crate::repo_root();
    println!("==> cargo build --bins --examples");
    run_tool(
        Command::new(env!("CARGO"))
            .args(["build", "--bins", "--examples"])
            .current_dir(&root),
    )?;
    println!("==> Starting a local control plane");
    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    let out = book_dir().join("src/outputs");
    std::fs::create_dir_all(&out)?;
    let env = Env {
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        server: cp.server_url().to_string(),
        client: client.clone(),
        bin: root.join("target/debug"),
    };

    // The exercise solutions that need no cluster.
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

    // Before the CRD exists: the message every step prints, and what the API
    // server says to the CRD without its protected-group annotation.
    write(&out, "crd-missing.txt", &env, crd_missing(&env).await?)?;
    write(
        &out,
        "protected-group.txt",
        &env,
        protected_group(&client).await?,
    )?;
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;
    write(&out, "step-1.txt", &env, step_1(&env).await?)?;
    write(&out, "step-2.txt", &env, step_2(&env).await?)?;
    write(&out, "step-3.txt", &env, step_3(&env).await?)?;
    write(&out, "step-4.txt", &env, step_4(&env).await?)?;
    write(&out, "step-5.txt", &env, step_5(&env).await?)?;
    write(&out, "step-6.txt", &env, step_6(&env).await?)?;
    let (step_7, events) = step_7(&env).await?;
    write(&out, "step-7.txt", &env, step_7)?;
    write(&out, "step-7-events.txt", &env, events)?;
    write(
        &out,
        "rbac-forbidden.txt",
        &env,
        rbac_forbidden(&env, &cp).await?,
    )?;
    println!("Wrote {}", rel(&out));
    Ok(())
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
    let mut text = String::new();
    for line in lines {
        let line = strip_timestamp(&line).replace(&format!("127.0.0.1:{port}"), "127.0.0.1:PORT");
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
        self.note("SIGTERM (Ctrl-C sends SIGINT; both stop the step)")
            .await;
        // SAFETY: kill(2) on the PID of the child we started, with a valid signal.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        self.wait().await
    }
}

async fn create_foo(
    run: &mut Run,
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> Result<Foo> {
    run.note(format!(
        "kubectl -n {ns} create foo {name}: deploymentName {deployment}, replicas {replicas}"
    ))
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
            "kubectl -n {ns} create deployment {name} --image nginx:latest   (no owner)"
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
    run.note(format!(
        "kubectl patch {kind} {name} --type merge -p '{{\"spec\":{{\"replicas\":{n}}}}}'"
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
    run.note(format!("kubectl delete {kind} {name}")).await;
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
        "$ kubectl apply --dry-run=server -f crd-without-annotation.yaml   (manifests/crd.yaml minus the annotation)".to_string(),
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
    run.transcript.insert(
        0,
        format!(
            ">>> (before: kubectl -n {ns} create foo example-foo; kubectl -n {ns} create deployment plain-deployment)"
        ),
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
        "kubectl -n {ns} create deployment watched-nginx   (controlled by Foo watched, as step 5 would create it)"
    )).await;
    Api::<Deployment>::namespaced(env.client.clone(), ns)
        .create(&PostParams::default(), &new_deployment(&updated))
        .await?;
    run.expect(&["Deployment added"]).await?;
    create_foreign_deployment(Some(&mut run), &env.client, ns, "unowned").await?;
    run.expect(&["Deployment added", "unowned"]).await?;
    run.note("(waiting for the 10 s resync)").await;
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
        "kubectl -n {ns} label foo flaky round=1   (a change: synced again, without failures now)"
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
        format!(">>> (before: kubectl -n {ns} create deployment taken --image nginx:latest   (no owner))"),
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

async fn step_7(env: &Env) -> Result<(Vec<String>, Vec<String>)> {
    let ns = "book-step7";
    testcluster::create_namespace(&env.client, ns).await?;
    create_foreign_deployment(None, &env.client, ns, "occupied").await?;
    let mut run = Run::start(env, "step-7", ns, &[])?;
    run.transcript.insert(
        0,
        format!(">>> (before: kubectl -n {ns} create deployment occupied --image nginx:latest   (no owner))"),
    );
    run.expect(&["Starting workers"]).await?;
    create_foo(&mut run, &env.client, ns, "good", "good-nginx", 1).await?;
    run.expect(&["Successfully synced", "good"]).await?;
    create_foo(&mut run, &env.client, ns, "blocked", "occupied", 1).await?;
    run.expect(&["Error syncing", "blocked"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    eventually("1 available replica in good's status", || {
        let foos = foos.clone();
        async move { (foos.get("good").await.ok()?.status?.available_replicas == 1).then_some(()) }
    })
    .await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;

    // The Events, as `kubectl get events.events.k8s.io` would list them.
    let events: Api<Event> = Api::namespaced(env.client.clone(), ns);
    let mut rows: Vec<Vec<String>> = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("sample-controller"))
        .map(|e| {
            let regarding = e.regarding.unwrap_or_default();
            let count = e.series.map_or(1, |s| s.count);
            vec![
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                format!(
                    "{}/{}",
                    regarding.kind.unwrap_or_default().to_lowercase(),
                    regarding.name.unwrap_or_default()
                ),
                e.action.unwrap_or_default(),
                count.to_string(),
                e.note.unwrap_or_default(),
            ]
        })
        .collect();
    rows.sort();
    let mut events_out = vec![format!(
        "$ kubectl -n {ns} get events.events.k8s.io   (reporting controller sample-controller; columns as listed by the book's xtask)"
    )];
    events_out.extend(
        show::table(
            &["TYPE", "REASON", "OBJECT", "ACTION", "COUNT", "NOTE"],
            &rows,
        )
        .lines()
        .map(str::to_string),
    );

    delete(&mut run, &foos, "foo", "good").await?;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
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
    run.note("(good-nginx is gone: the garbage collector deleted it with its owner)")
        .await;
    run.drain_for(Duration::from_secs(1)).await;
    Ok((run.terminate().await?, events_out))
}

/// Step 7 as a ServiceAccount that RBAC grants nothing: the preflight message.
async fn rbac_forbidden(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let ns = "book-rbac";
    testcluster::create_namespace(&env.client, ns).await?;
    let path = cp.service_account_kubeconfig(ns, "controller").await?;
    let mut run = Run::start_with(env, &path, "step-7", ns, &[])?;
    run.transcript[0] = format!(
        "$ cargo run --bin step-7 -- --namespace {ns}   (as ServiceAccount {ns}/controller, no RoleBinding)"
    );
    run.wait().await
}
