//! Every page of the built book in headless Chromium (`cargo xtask book check`).
//!
//! One `chromium --headless` per page (two at a time) with
//! `--virtual-time-budget` (the page's scripts run to completion),
//! `--dump-dom` (the DOM after them, on stdout), `--screenshot` into
//! `target/book-screenshots/<page>.png` at 1280×2000, and
//! `--enable-logging=stderr --v=0`, which prints every console message and
//! uncaught exception as an `INFO:CONSOLE` line. A page fails when:
//!
//! * its console shows anything: the book's own pages log nothing, so any
//!   message is an error, a failed load (`net::ERR_FILE_NOT_FOUND`) or an
//!   uncaught exception (Chromium prints `console.log` and `console.error`
//!   alike, so they are not told apart);
//! * a mermaid diagram of the page is not an `<svg>` in the DOM afterwards,
//!   or mermaid drew its error diagram;
//! * its code blocks were not highlighted, or a Go pane (`{{#go}}`) has no
//!   highlighted Go code or no license notice;
//! * its language picker (book/theme/editions.js) is missing or links a page
//!   that was not built.
//!
//! A page with Go panes is rendered a second time with the Go tabs shown,
//! scrolled to its first excerpt (`<page>.html?gosource=go#<id>` in a
//! 1280×2000 iframe of `target/book-screenshots/<page>-go.html`: headless
//! Chromium paints a scrolled main frame blank, a scrolled iframe correctly),
//! screenshot `<page>-go.png`; again its console must stay silent.
//!
//! A page with flow replays (`{{#flow}}`, book/theme/flow.js) must show
//! each one drawn: its six lanes, and its status saying that all the lines
//! of its recording were played (a page shows a replay's end state until the
//! reader presses play). It is rendered a second time scrolled to its first
//! replay (`<page>.html?flow#flow-NAME` in an iframe, as for the Go side),
//! screenshot `<page>-flow.png`, with a silent console.
//!
//! `404.html` is skipped: mdBook writes it with absolute asset paths for a
//! web server (`site-url`), which a `file://` URL cannot load.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use anyhow::{Context, Result, ensure};
use scraper::Html;

use crate::html::{select, select_in, text};

/// One rendering: a page, with the Go tabs shown or not.
struct Job {
    page: PathBuf,
    /// `?gosource=go#…` for the Go side, `?flow#…` for the first flow
    /// replay (both rendered in an iframe), `?search=…` for a search, or "".
    suffix: String,
    /// Whether the page is shown in an iframe (a scrolled page: see above).
    framed: bool,
    screenshot: PathBuf,
}

impl Job {
    /// The URL Chromium opens: the page, or for the Go side a wrapper page
    /// next to the screenshot that shows it in an iframe.
    fn url(&self) -> Result<String> {
        let page = format!("file://{}{}", self.page.display(), self.suffix);
        if !self.framed {
            return Ok(page);
        }
        let wrapper = self.screenshot.with_extension("html");
        std::fs::write(
            &wrapper,
            format!(
                "<!DOCTYPE html>\n<html><body style=\"margin:0\"><iframe src=\"{page}\" \
                 style=\"border:0;width:1280px;height:2000px\"></iframe></body></html>\n"
            ),
        )?;
        Ok(format!("file://{}", wrapper.display()))
    }
}

/// What one rendering showed.
struct Rendered {
    page: PathBuf,
    dom: String,
    console: Vec<String>,
}

/// Renders every page of `html` and checks it; the failures, one per problem.
pub fn check_pages(html: &Path, screenshots: &Path) -> Result<Vec<String>> {
    let _ = std::fs::remove_dir_all(screenshots);
    std::fs::create_dir_all(screenshots)?;
    let mut pages: Vec<PathBuf> = std::fs::read_dir(html)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .filter(|p| p.file_name().is_some_and(|n| n != "404.html"))
        .collect();
    pages.sort();
    ensure!(!pages.is_empty(), "no pages in {}", html.display());
    let mut jobs = Vec::new();
    for page in &pages {
        jobs.extend(jobs_of(page, screenshots)?);
    }
    let count = jobs.len();
    let mut failures = Vec::new();
    for (job, rendered) in render_all(jobs) {
        let name = format!(
            "{}{}",
            job.page.file_name().unwrap_or_default().to_string_lossy(),
            job.suffix.split('#').next().unwrap_or_default()
        );
        let judged = rendered.and_then(|r| {
            if job.suffix.is_empty() {
                judge(&r)
            } else if job.suffix.starts_with("?flow") {
                judge_scrolled(&r, "scrolled to the first flow replay")
            } else {
                judge_scrolled(&r, "Go tabs shown, scrolled to the first excerpt")
            }
        });
        match judged {
            Ok((summary, problems)) => {
                println!("    {name}: {summary}");
                failures.extend(problems.into_iter().map(|p| format!("{name}: {p}")));
            }
            Err(err) => failures.push(format!("{name}: {err:#}")),
        }
    }
    println!(
        "    {} pages, {count} renderings; screenshots in {}",
        pages.len(),
        screenshots.display()
    );
    Ok(failures)
}

/// The renderings of `page`: the page itself, and, scrolled to the first of
/// each, its Go tabs shown and its first flow replay (not for print.html,
/// which repeats every chapter).
fn jobs_of(page: &Path, screenshots: &Path) -> Result<Vec<Job>> {
    let stem = page.file_stem().unwrap_or_default().to_string_lossy();
    let mut jobs = vec![Job {
        page: page.to_path_buf(),
        suffix: String::new(),
        framed: false,
        screenshot: screenshots.join(format!("{stem}.png")),
    }];
    let html = Html::parse_document(&std::fs::read_to_string(page)?);
    let scrolled = [
        (
            "div.gosource-tabs, div.gosource-single",
            "?gosource=go",
            "go",
        ),
        ("div.flow-view", "?flow", "flow"),
    ];
    for (selector, query, name) in scrolled {
        if let Some(id) = first_id(&html, selector).filter(|_| stem != "print") {
            jobs.push(Job {
                page: page.to_path_buf(),
                suffix: format!("{query}#{id}"),
                framed: true,
                screenshot: screenshots.join(format!("{stem}-{name}.png")),
            });
        }
    }
    Ok(jobs)
}

/// Every job rendered, two Chromiums at a time, in the order of their pages.
fn render_all(jobs: Vec<Job>) -> Vec<(Job, Result<Rendered>)> {
    let queue = Mutex::new(jobs);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..2 {
            let (queue, results) = (&queue, &results);
            scope.spawn(move || {
                loop {
                    let Some(job) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
                        break;
                    };
                    let rendered = render(&job, worker);
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((job, rendered));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by(|a, b| (&a.0.page, &a.0.suffix).cmp(&(&b.0.page, &b.0.suffix)));
    results
}

/// Searches an edition for each of `terms` in headless Chromium, as a reader
/// would (`index.html?search=TERM`, mdBook's searcher runs the search from
/// the URL): each must find at least one section, the first result's page
/// must hold the term, and the console must stay silent. The failures.
pub fn check_search(edition: &Path, terms: &[&str], screenshots: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(screenshots)?;
    let page = edition.join("index.html");
    let mut failures = Vec::new();
    for (n, term) in terms.iter().enumerate() {
        let encoded: String = term
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let job = Job {
            page: page.clone(),
            suffix: format!("?search={encoded}"),
            framed: false,
            screenshot: screenshots.join(format!("search-{n}.png")),
        };
        let rendered = match render(&job, n % 2) {
            Ok(rendered) => rendered,
            Err(err) => {
                failures.push(format!("search {term:?}: {err:#}"));
                continue;
            }
        };
        let dom = Html::parse_document(&rendered.dom);
        let header = select(&dom, "#mdbook-searchresults-header")
            .first()
            .map(|h| text(*h).trim().to_string())
            .unwrap_or_default();
        let results = select(&dom, "#mdbook-searchresults li").len();
        let first = select(&dom, "#mdbook-searchresults a[href]")
            .first()
            .and_then(|a| a.attr("href")?.split(['?', '#']).next())
            .map(str::to_string);
        for message in &rendered.console {
            failures.push(format!("search {term:?}: console: {message}"));
        }
        if results == 0 {
            failures.push(format!("search {term:?} found nothing ({header:?})"));
            continue;
        }
        let Some(first) = first else {
            failures.push(format!("search {term:?}: a result without a link"));
            continue;
        };
        let text = std::fs::read_to_string(edition.join(&first)).unwrap_or_default();
        if !text.contains(term) {
            failures.push(format!(
                "search {term:?}: the first result, {first}, does not contain it"
            ));
        }
        println!("    search {term:?}: {results} results, the first in {first}");
    }
    Ok(failures)
}

/// The id of the first element of `page` that `selector` matches, if it
/// has one: a page's first Go excerpt, its first flow replay.
fn first_id(page: &Html, selector: &str) -> Option<String> {
    let first = *select(page, selector).first()?;
    first.attr("id").map(str::to_string)
}

/// Opens `page` in headless Chromium; its DOM afterwards and its console.
fn render(job: &Job, worker: usize) -> Result<Rendered> {
    let profile = tempfile::Builder::new()
        .prefix(&format!("book-check-chromium-{worker}-"))
        .tempdir()
        .context("creating Chromium's profile directory")?;
    let screenshot = &job.screenshot;
    let url = job.url()?;
    let chromium = course::programs::chromium().context("chromium is not installed")?;
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--virtual-time-budget=10000",
            "--window-size=1280,2000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(&url)
        .stdin(Stdio::null())
        .output()
        .context("running chromium")?;
    drop(profile);
    ensure!(
        output.status.success(),
        "chromium failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .last()
            .unwrap_or_default()
    );
    ensure!(screenshot.is_file(), "chromium wrote no screenshot");
    // [pid:tid:time:INFO:CONSOLE:12] "message", source: file:///…/step-5.html (12)
    let console = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(|l| l.split_once(":CONSOLE").map(|(_, m)| m))
        .map(|m| m.split_once("] ").map_or(m, |(_, m)| m).to_string())
        .collect();
    Ok(Rendered {
        page: job.page.clone(),
        dom: String::from_utf8_lossy(&output.stdout).into_owned(),
        console,
    })
}

/// The page's summary line and its problems.
fn judge(rendered: &Rendered) -> Result<(String, Vec<String>)> {
    let source = Html::parse_document(&std::fs::read_to_string(&rendered.page)?);
    ensure!(rendered.dom.contains("</html>"), "chromium printed no DOM");
    let dom = Html::parse_document(&rendered.dom);
    let mut problems = Vec::new();

    for message in &rendered.console {
        problems.push(format!("console: {message}"));
    }

    // mermaid: every <pre class="mermaid"> became an SVG, and not mermaid's error picture.
    let diagrams = select(&source, "pre.mermaid").len();
    let mut drawn = 0;
    for (n, element) in select(&dom, "pre.mermaid").into_iter().enumerate() {
        let n = n + 1;
        if select_in(element, "svg").is_empty() {
            problems.push(format!("mermaid diagram {n} was not rendered to an <svg>"));
        } else if !select_in(element, "[aria-roledescription=error]").is_empty()
            || text(element).contains("Syntax error in text")
        {
            problems.push(format!("mermaid diagram {n} has a syntax error"));
        } else {
            drawn += 1;
        }
    }
    if drawn < diagrams && problems.iter().all(|p| !p.starts_with("mermaid")) {
        problems.push(format!(
            "{diagrams} mermaid diagrams in the page, {drawn} drawn (did mermaid.min.js load?)"
        ));
    }

    // Highlighted code.
    let code_blocks = select(&source, "pre > code[class^=language-]").len();
    if code_blocks > 0 && select(&dom, "code.hljs").is_empty() {
        problems.push(format!(
            "{code_blocks} code blocks, none highlighted (did highlight.js run?)"
        ));
    }

    // Go panes: highlighted Go and the license notice.
    let panes = select(&dom, "div.gosource-pane-go");
    for (n, pane) in panes.iter().enumerate() {
        let n = n + 1;
        if select_in(*pane, "code.language-go.hljs").is_empty() {
            problems.push(format!("Go pane {n} has no highlighted Go code"));
        }
        let notices = select_in(*pane, ".gosource-notice");
        if !notices.iter().any(|p| text(*p).contains("Apache License")) {
            problems.push(format!("Go pane {n} has no license notice"));
        }
    }
    let numbered = select(&dom, ".gosource-numbered").len();
    if numbered != panes.len() {
        problems.push(format!(
            "{} Go panes, {numbered} with line numbers (did gosource.js run?)",
            panes.len()
        ));
    }
    let tabs = select(&dom, "div.gosource-tabs").len();
    let (flow_problems, replays) = judge_flows(&source, &dom);
    problems.extend(judge_picker(&dom));
    problems.extend(flow_problems);

    let mut summary = vec![format!("{drawn}/{diagrams} diagrams drawn as SVG")];
    if !panes.is_empty() {
        summary.push(format!("{} Go panes ({tabs} as Go/Rust tabs)", panes.len()));
    }
    if replays > 0 {
        summary.push(format!("{replays} flow replays drawn"));
    }
    summary.push(format!("{code_blocks} code blocks"));
    summary.push(format!("{} console messages", rendered.console.len()));
    Ok((summary.join(", "), problems))
}

/// The language picker (book/theme/editions.js): a link to the same page in
/// every other edition, each to a page that exists.
fn judge_picker(dom: &Html) -> Vec<String> {
    // toc.html is the sidebar alone (for readers without JavaScript): no menu bar.
    if select(dom, ".right-buttons").is_empty() {
        return Vec::new();
    }
    let links = select(dom, "a.edition-picker");
    if links.is_empty() {
        return vec!["no language picker in the menu bar (did editions.js run?)".to_string()];
    }
    let mut problems = Vec::new();
    for link in links {
        let target = link.attr("href").unwrap_or_default();
        let file = target.strip_prefix("file://").unwrap_or(target);
        let file = file.split(['#', '?']).next().unwrap_or_default();
        if !Path::new(file).is_file() {
            problems.push(format!(
                "the language picker links {target}, which does not exist"
            ));
        }
    }
    problems
}

/// The page's flow replays, drawn: their lanes, and every line of each
/// recording played. (problems, how many replays).
fn judge_flows(source: &Html, dom: &Html) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let replays = select(source, "div.flow-view").len();
    if replays == 0 {
        return (problems, 0);
    }
    let lanes = select(dom, "section.flow-lane").len();
    if lanes != replays * 6 {
        problems.push(format!(
            "{replays} flow replays, {lanes} lanes drawn (6 each; did flow.js run?)"
        ));
    }
    // The recordings' lines, as the page holds them, and where each view's
    // replay is (its status's `data-played` and `data-total`, in any edition).
    let recorded = select(source, "script[id^=flow-trace-]")
        .into_iter()
        .map(|script| {
            let lines = text(script);
            lines
                .lines()
                .filter(|l| l.trim_start().starts_with('{'))
                .count()
        });
    let wanted: Vec<(usize, usize)> = recorded.map(|n| (n, n)).collect();
    let played: Vec<(usize, usize)> = select(dom, "span.flow-status")
        .into_iter()
        .filter_map(|status| {
            let number = |name| status.attr(name)?.parse().ok();
            Some((number("data-played")?, number("data-total")?))
        })
        .collect();
    if played != wanted {
        problems.push(format!(
            "flow replays should show all of their recordings' lines {wanted:?}, they show {played:?}"
        ));
    }
    // A note the recording carries is prose: in the Chinese edition, Chinese.
    let chinese = dom.root_element().value().attr("lang") == Some("zh-CN");
    for note in select(dom, "div.flow-note") {
        let shown = text(note);
        if chinese
            && !shown
                .chars()
                .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
        {
            problems.push(format!(
                "a flow replay's note is not translated (book/theme/flow.js ZH): {shown:?}"
            ));
        }
    }
    (problems, replays)
}

/// A page rendered scrolled in its iframe wrapper (the Go side, a flow
/// replay): no console message.
fn judge_scrolled(rendered: &Rendered, what: &str) -> Result<(String, Vec<String>)> {
    let dom = Html::parse_document(&rendered.dom);
    ensure!(
        !select(&dom, "iframe").is_empty(),
        "chromium printed no DOM"
    );
    let problems = rendered
        .console
        .iter()
        .map(|m| format!("console: {m}"))
        .collect();
    Ok((
        format!("{what}, {} console messages", rendered.console.len()),
        problems,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "<div class=\"flow-view\" id=\"flow-a\" data-trace=\"a\"></div>\n\
        <script type=\"application/json\" id=\"flow-trace-a\">\n{\"t\":1}\n{\"t\":2}\n</script>\n";

    fn flows(source: &str, dom: &str) -> (Vec<String>, usize) {
        judge_flows(&Html::parse_document(source), &Html::parse_document(dom))
    }

    fn dom(lanes: usize, played: usize, total: usize, text: &str) -> String {
        let lanes = "<section class=\"flow-lane flow-lane-x\"></section>".repeat(lanes);
        format!(
            "<div class=\"flow-view\"><div class=\"flow-bar\"><span class=\"flow-status\" \
             data-played=\"{played}\" data-total=\"{total}\">{text}</span></div>{lanes}</div>"
        )
    }

    #[test]
    fn a_page_is_judged_by_its_elements_not_by_text_that_looks_like_them() {
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("step-1.html");
        let pane = "<div class=\"gosource-pane gosource-pane-go\"><pre><code class=\"language-go \
                    hljs\">// Apache License, &lt;svg&gt;</code></pre><p class=\"gosource-notice\">\
                    Go: controller.go</p></div>";
        let body = format!(
            "<pre class=\"mermaid\">graph TD; a--&gt;b; %% &lt;svg&gt;</pre>\n\
             <pre><code class=\"language-rust\">fn main() {{}}</code></pre>\n{pane}"
        );
        std::fs::write(&page, &body).unwrap();
        let rendered = Rendered {
            page,
            dom: format!("<html><body>{body}</body></html>"),
            console: vec!["Uncaught ReferenceError: mermaid is not defined".to_string()],
        };
        let (summary, problems) = judge(&rendered).unwrap();
        assert_eq!(
            problems,
            [
                "console: Uncaught ReferenceError: mermaid is not defined",
                "mermaid diagram 1 was not rendered to an <svg>",
                "Go pane 1 has no license notice",
                "1 Go panes, 0 with line numbers (did gosource.js run?)",
            ],
            "an <svg> or a license only as text is none"
        );
        assert_eq!(
            summary,
            "0/1 diagrams drawn as SVG, 1 Go panes (0 as Go/Rust tabs), 2 code blocks, \
             1 console messages"
        );
    }

    #[test]
    fn a_replay_is_drawn_when_its_lanes_are_there_and_all_its_lines_were_played() {
        let (problems, replays) = flows(SOURCE, &dom(6, 2, 2, "played 2 of 2 lines"));
        assert_eq!((problems, replays), (vec![], 1));
        let (problems, _) = flows(SOURCE, &dom(6, 2, 2, "已播放 2 / 2 行（安静的时段已缩短）"));
        assert!(
            problems.is_empty(),
            "in the Chinese edition too: {problems:?}"
        );
    }

    #[test]
    fn a_replay_that_did_not_run_or_stopped_short_is_a_problem() {
        let (problems, _) = flows(SOURCE, "<div class=\"flow-view\"></div>");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("0 lanes drawn"), "{problems:?}");
        let (problems, _) = flows(SOURCE, &dom(6, 1, 2, "paused at 1 of 2 lines"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("[(2, 2)]"), "{problems:?}");
        // A page without replays asks nothing of them.
        assert_eq!(flows("<p>text</p>", "<p>text</p>"), (vec![], 0));
    }

    #[test]
    fn a_replays_note_in_english_on_a_chinese_page_is_a_problem() {
        let note = |lang: &str, text: &str| {
            format!(
                "<html lang=\"{lang}\"><body><div class=\"flow-note\">{text}</div>{}</body></html>",
                dom(6, 2, 2, "played 2 of 2 lines")
            )
        };
        let (problems, _) = flows(
            SOURCE,
            &note("zh-CN", "The queue is kube-runtime's scheduler"),
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("not translated"), "{problems:?}");
        let (problems, _) = flows(SOURCE, &note("zh-CN", "这里的队列是 kube-runtime 的调度器"));
        assert_eq!(problems, Vec::<String>::new());
        let (problems, _) = flows(SOURCE, &note("en", "The queue is kube-runtime's scheduler"));
        assert_eq!(problems, Vec::<String>::new());
    }

    #[test]
    fn flow_js_translates_the_note_the_recordings_carry() {
        let script =
            std::fs::read_to_string(course::workspace::repo_root().join("book/theme/flow.js"))
                .unwrap();
        let key = format!("{:?}:", course::flow::SCHEDULER_NOTE);
        assert!(
            script.contains(&key),
            "book/theme/flow.js's ZH has no translation of course::flow::SCHEDULER_NOTE \
             as it reads now: translate the new English there"
        );
    }
}
