//! `{{#figure RUN KEY}}`: a figure of a benchmark run the book shows, read
//! from that run's capture when the book is built, so that the prose around
//! a table says what the table says, and a new run changes both.
//!
//! A report written as data has its figures in `book/src/outputs/RUN.json`,
//! under `figures`, each a string as the page shows it: what `cargo xtask
//! bench` writes (`performance`; `performance/src/bench/report.rs`' `figures` makes
//! them), `cargo xtask first-build` and `cargo xtask heap-profile`. Keys of a
//! bench run, for a number of Foos and a subject (`go`, `step7`, `step8`,
//! `floor`, `floor2`: the floor with 2 Foos in flight):
//!
//! - `500 step8 converged` (`5.3 s`), `fastest`, `slowest`, `vs-go`,
//!   `vs-floor`, `vs-floor2`, `cpu` (`0.84 s`), `cpu-lowest`,
//!   `cpu-highest`, `cpu-per-foo` (`1.68 ms`), `rss`, `rss-lowest`,
//!   `rss-highest`, `writes`, `idle`, `anon`, `file`;
//! - `500 step8 PUT foos/status`: the median count of one request;
//! - `500 step8/go rss` (a ratio of medians; `converged`, `cpu` too) and
//!   `500 step8/go rss-verdict`: `lower in every run`, `higher in every
//!   run` or `inconclusive: the runs overlap`;
//! - `500 step8 met rss-vs-go` (`yes` or `no`, for step 7 and step 8): a
//!   target of the project, its ratio as shown within its bound;
//!   `time-vs-go` (0.5), `time-vs-floor` and `time-vs-floor2` (2),
//!   `cpu-vs-go` (0.3), `rss-vs-go` (0.45), `flow` (on over off, 1.1);
//! - `100-500 step8 per-foo` (seconds per extra Foo), `cpu-slope` and
//!   `rss-slope` (per 100 more Foos), for each size and the next
//!   (`500-2000`);
//! - `500 json`, `managed`, `managed-share`, `cached`, `cached-share`: the
//!   listed objects' size, their managedFields and what step 8 caches;
//! - `loc step7`, `loc step8`: lines of code;
//! - `500 step8 flow-off`, `flow-on` (with `-fastest`, `-slowest`),
//!   `flow-ratio`, `flow-lines`: the step with its JSON log off and on;
//! - `500 step8-flow fastest-run busy` (and `slowest-run`): where the time
//!   of the fastest and slowest flow-on run went (`performance/src/timeline.rs`):
//!   `converged`, `last-seen`, `last-created`, `syncs`, `sync-ms`, `busy`,
//!   `busy-share`, `wait`, `wait-max`, `requests`, `request-ms`,
//!   `request-p90`, `request-total`.
//!
//! `cargo xtask first-build` writes, for a target (`floor`, `step-1`,
//! `bins`) and a revision (`HEAD`, or a commit as its table names it):
//!
//! - `step-1 HEAD wall` (the median, `89.7 s`), `wall-min`, `wall-max`,
//!   `cpu`, `crates`, `target`, `vs-floor` (the median over the floor's,
//!   when the floor was built): a row of the table;
//! - `step-1 HEAD crate k8s-openapi`: one of its crates.
//!
//! (`first-build.json` holds the figures of the one table it wrote as text
//! only, `first-build.txt`, taken from that table once.)
//!
//! `cargo xtask heap-profile` writes `heap-profile.json`: `peak`
//! (`8.5 MiB`), `peak-at`, `recorded`, `blocks`; for a function of its
//! table, `fn NAME` (its size, in KiB or MiB), `fn NAME share`, `fn NAME
//! blocks`; for the first frame of an allocation site (without
//! `::{{closure}}`), `site NAME sizes` (the average block sizes of its
//! sites, largest site first).
//!
//! A flow recording (`flow/step-8`: `book/src/outputs/flow/step-8.jsonl`,
//! the `{{#flow}}` a chapter replays) has `syncs` (the syncs that ended),
//! `quiet-syncs` (those that sent no request), `failed-syncs`, `triggers`
//! (keys handed to the queue: `add` and `merge`), `merged`, `ignored` (the
//! handlers' `ignore` lines), `requests` (API requests of syncs), and
//! `wait median`, `wait max`: from a key's `add` to the `take` that starts
//! its sync, in ms.
//!
//! Any other capture (a step's run, a scenario's transcript: whatever
//! `cargo xtask book outputs` wrote) is read by a line pattern: KEY is the
//! line, with `{}` where the figure is (a number, with its unit if one
//! follows) and `{..}` for any text, matched
//! against the whole of each line with runs of spaces taken as one. Every
//! line it matches must give the same figure:
//!
//! - `{{#figure leader-lost (b became leader {} after a froze)}}` → `6.6 s`;
//! - `count PATTERN` (without `{}`): how many lines match, as
//!   `{{#figure check-step-8-ordinary count FAIL {..}}}`;
//! - `PATTERN as MB` (or `as MiB`): a number of bytes in that unit, with
//!   one decimal.
//!
//! An unknown RUN or KEY fails the build with the page, the line and the
//! keys the run has.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use regex::Regex;

const DIRECTIVE: &str = "figure";

/// `page` with every `{{#figure RUN KEY}}` replaced by the figure, read
/// from `outputs/RUN.json` (or `.txt`, `.jsonl`) under `src` (`book/src`).
/// A figure that is words (a verdict such as "lower in every run") is put
/// in the edition's words where `words` has them (book/po/LANG.toml).
pub(super) fn expand(
    page_name: &str,
    page: &str,
    src: &Path,
    words: &BTreeMap<String, String>,
) -> Result<String> {
    let mut runs: BTreeMap<String, Capture> = BTreeMap::new();
    super::replace_directives(page_name, page, DIRECTIVE, |inside, line| {
        let (run, key) = inside.split_once(' ').unwrap_or((inside, ""));
        if !runs.contains_key(run) {
            // A report written as data: its figures, by key.
            let data = src.join("outputs").join(format!("{run}.json"));
            if data.is_file() {
                runs.insert(run.to_string(), data_figures(&data)?);
            }
        }
        if !runs.contains_key(run) {
            let extension = if run.starts_with("flow/") {
                "jsonl"
            } else {
                "txt"
            };
            let path = src.join("outputs").join(format!("{run}.{extension}"));
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "{page_name}:{line}: {{{{#figure {inside}}}}}: reading {}",
                    path.display()
                )
            })?;
            runs.insert(run.to_string(), Capture::read(text));
        }
        let key = key.split_whitespace().collect::<Vec<_>>().join(" ");
        let figures = match &runs[run] {
            Capture::Lines(text) => {
                return by_pattern(text, &key).with_context(|| {
                    format!("{page_name}:{line}: {{{{#figure {inside}}}}} in outputs/{run}.txt")
                });
            }
            Capture::Table(figures) => figures,
        };
        let Some(figure) = figures.get(&key) else {
            let known: Vec<&str> = figures.keys().map(String::as_str).collect();
            bail!(
                "{page_name}:{line}: {{{{#figure {inside}}}}}: outputs/{run} has no figure \
                 {key:?}; it has: {}",
                known.join(", ")
            );
        };
        Ok(words.get(figure).unwrap_or(figure).clone())
    })
}

/// The figures of a report written as data (`RUN.json`, as `cargo xtask
/// first-build` writes it): its `figures` object, each a string.
fn data_figures(path: &Path) -> Result<Capture> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let data: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let figures = data
        .get("figures")
        .and_then(serde_json::Value::as_object)
        .with_context(|| format!("{}: no \"figures\" object", path.display()))?;
    let mut found = BTreeMap::new();
    for (key, value) in figures {
        let value = value
            .as_str()
            .with_context(|| format!("{}: figure {key:?} is not a string", path.display()))?;
        found.insert(key.clone(), value.to_string());
    }
    Ok(Capture::Table(found))
}

/// Every figure of a text capture, by key: a flow recording (its first
/// line is a JSON object); `None` for any other capture.
fn figures(text: &str) -> Option<BTreeMap<String, String>> {
    text.starts_with('{').then(|| flow_figures(text))
}

/// A capture as `{{#figure}}` reads it.
enum Capture {
    /// A report written as data, or a flow recording: its figures by key.
    Table(BTreeMap<String, String>),
    /// Anything else: read by a line pattern.
    Lines(String),
}

impl Capture {
    fn read(text: String) -> Capture {
        match figures(&text) {
            Some(figures) => Capture::Table(figures),
            None => Capture::Lines(text),
        }
    }
}

/// The figure a line pattern (the module's doc) finds in `text`.
fn by_pattern(text: &str, key: &str) -> Result<String> {
    let (counting, pattern) = match key.strip_prefix("count ") {
        Some(pattern) => (true, pattern),
        None => (false, key),
    };
    let (pattern, unit) = match pattern.rsplit_once(" as ") {
        Some((pattern, unit @ ("MB" | "MiB"))) => (pattern, Some(unit)),
        _ => (pattern, None),
    };
    let holes = pattern.matches("{}").count();
    match (counting, holes) {
        (true, 0) | (false, 1) => {}
        (true, _) => bail!("a `count` pattern has no `{{}}`: {pattern:?}"),
        (false, _) => {
            bail!("the pattern needs exactly one `{{}}` where the figure is: {pattern:?}")
        }
    }
    let mut regex = String::from("^");
    for (i, piece) in pattern.split("{..}").enumerate() {
        if i > 0 {
            regex.push_str(".*?");
        }
        for (j, literal) in piece.split("{}").enumerate() {
            if j > 0 {
                // A figure: a number, with its unit if one follows.
                regex.push_str(r"(\d[\d.,]*(?: [[:alpha:]%×]+)?)");
            }
            regex.push_str(&regex::escape(literal));
        }
    }
    regex.push('$');
    let regex = Regex::new(&regex).context("the pattern")?;
    let lines: Vec<String> = text
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let found: Vec<&str> = lines
        .iter()
        .filter_map(|line| regex.captures(line))
        .map(|m| m.get(1).map_or("", |g| g.as_str()))
        .collect();
    if counting {
        return Ok(found.len().to_string());
    }
    let Some(&figure) = found.first() else {
        bail!("no line matches {pattern:?}");
    };
    if let Some(other) = found.iter().find(|&&f| f != figure) {
        bail!("{pattern:?} matches lines with different figures: {figure:?} and {other:?}");
    }
    let Some(unit) = unit else {
        return Ok(figure.to_string());
    };
    let bytes: f64 = figure
        .replace(',', "")
        .parse()
        .with_context(|| format!("`as {unit}`: {figure:?} is no number of bytes"))?;
    Ok(match unit {
        "MB" => format!("{:.1} MB", bytes / 1e6),
        _ => format!("{:.1} MiB", bytes / (1024.0 * 1024.0)),
    })
}

/// Every figure of a flow recording (course/src/flow/mod.rs has its fields), by key.
fn flow_figures(text: &str) -> BTreeMap<String, String> {
    let lines: Vec<FlowLine> = text
        .lines()
        .filter_map(|line| match serde_json::from_str(line) {
            Ok(serde_json::Value::Object(fields)) => Some(fields),
            _ => None,
        })
        .collect();
    let count = |lane: &str, what: &str| lines.iter().filter(|l| is(l, lane, what)).count();
    let (syncs, quiet, failed, mut waits) = syncs_and_waits(&lines);
    let mut found = BTreeMap::new();
    found.insert("syncs".into(), syncs.to_string());
    found.insert("quiet-syncs".into(), quiet.to_string());
    found.insert("failed-syncs".into(), failed.to_string());
    found.insert(
        "triggers".into(),
        (count("queue", "add") + count("queue", "merge")).to_string(),
    );
    found.insert("merged".into(), count("queue", "merge").to_string());
    found.insert("ignored".into(), count("handler", "ignore").to_string());
    let requests = lines
        .iter()
        .filter(|l| is(l, "api", "") && l.contains_key("worker"))
        .count();
    found.insert("requests".into(), requests.to_string());
    waits.sort_by(f64::total_cmp);
    if let (Some(max), false) = (waits.last(), waits.is_empty()) {
        let median = waits[waits.len() / 2];
        let shown = |ms: f64| {
            if ms < 10.0 {
                format!("{ms:.1} ms")
            } else {
                format!("{ms:.0} ms")
            }
        };
        found.insert("wait median".into(), shown(median));
        found.insert("wait max".into(), shown(*max));
    }
    found
}

/// A line of a flow recording: its fields.
type FlowLine = serde_json::Map<String, serde_json::Value>;

/// The text of `line`'s field `name` (empty if it has none).
fn text_of(line: &FlowLine, name: &str) -> String {
    line.get(name)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Whether `line` is in `lane` and says `what` (any, if empty).
fn is(line: &FlowLine, lane: &str, what: &str) -> bool {
    text_of(line, "lane") == lane && (what.is_empty() || text_of(line, "what") == what)
}

/// The syncs of a recording: how many, how many sent no request, how many
/// failed; and each key's wait in the queue from added to taken, in ms.
fn syncs_and_waits(lines: &[FlowLine]) -> (usize, usize, usize, Vec<f64>) {
    use serde_json::Value;
    // Per sync (key and worker, from its start): whether it sent a request.
    let mut running: BTreeMap<(String, String), bool> = BTreeMap::new();
    let (mut syncs, mut quiet, mut failed) = (0, 0, 0);
    // Per key: when it was added and not yet taken.
    let mut added: BTreeMap<String, f64> = BTreeMap::new();
    let mut waits: Vec<f64> = Vec::new();
    for line in lines {
        let key = text_of(line, "key");
        let worker = line.get("worker").map(Value::to_string).unwrap_or_default();
        let t = line.get("t").and_then(Value::as_f64).unwrap_or_default();
        if is(line, "worker", "start") {
            running.insert((key, worker), false);
        } else if is(line, "api", "") {
            if let Some(sent) = running.get_mut(&(key, worker)) {
                *sent = true;
            }
        } else if is(line, "worker", "end") {
            syncs += 1;
            if text_of(line, "outcome") != "ok" {
                failed += 1;
            }
            if running.remove(&(key, worker)) == Some(false) {
                quiet += 1;
            }
        } else if is(line, "queue", "add") {
            added.entry(key).or_insert(t);
        } else if is(line, "queue", "take") {
            if let Some(since) = added.remove(&key) {
                waits.push((t - since) * 1000.0);
            }
        } else if is(line, "queue", "drop") {
            added.remove(&key);
        }
    }
    (syncs, quiet, failed, waits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_recording_counts_its_syncs_and_the_wait_from_trigger_to_sync() {
        let trace = [
            r#"{"t":1.0,"lane":"queue","what":"add","key":"ns/a"}"#,
            r#"{"t":1.001,"lane":"queue","what":"merge","key":"ns/a"}"#,
            r#"{"t":1.004,"lane":"queue","what":"take","key":"ns/a","worker":0}"#,
            r#"{"t":1.004,"lane":"worker","what":"start","key":"ns/a","worker":0}"#,
            r#"{"t":1.01,"lane":"api","what":"create","method":"POST","resource":"deployments","key":"ns/a","worker":0,"code":201}"#,
            r#"{"t":1.02,"lane":"worker","what":"end","key":"ns/a","worker":0,"outcome":"ok","ms":16}"#,
            r#"{"t":2.0,"lane":"handler","what":"ignore","resource":"deployments","object":"ns/d","reason":"x"}"#,
            r#"{"t":3.0,"lane":"queue","what":"add","key":"ns/a"}"#,
            r#"{"t":3.1,"lane":"queue","what":"take","key":"ns/a","worker":1}"#,
            r#"{"t":3.1,"lane":"worker","what":"start","key":"ns/a","worker":1}"#,
            r#"{"t":3.11,"lane":"worker","what":"end","key":"ns/a","worker":1,"outcome":"error","ms":1}"#,
        ]
        .join("\n");
        let found = figures(&trace).unwrap();
        let get = |key: &str| found.get(key).map(String::as_str);
        assert_eq!(get("syncs"), Some("2"));
        assert_eq!(get("quiet-syncs"), Some("1"), "the second sent nothing");
        assert_eq!(get("failed-syncs"), Some("1"));
        assert_eq!(get("triggers"), Some("3"));
        assert_eq!(get("merged"), Some("1"));
        assert_eq!(get("ignored"), Some("1"));
        assert_eq!(get("requests"), Some("1"));
        assert_eq!(get("wait median"), Some("100 ms"));
        assert_eq!(get("wait max"), Some("100 ms"));
        let mut waits = trace.lines().take(3).collect::<Vec<_>>().join("\n");
        waits.push('\n');
        assert_eq!(
            figures(&waits)
                .unwrap()
                .get("wait median")
                .map(String::as_str),
            Some("4.0 ms")
        );
    }

    #[test]
    fn a_report_written_as_data_gives_its_figures_as_they_are() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("outputs")).unwrap();
        std::fs::write(
            dir.join("outputs/build.json"),
            r#"{"figures": {"step-1 HEAD wall": "64.0 s", "step-1 HEAD vs-floor": "0.91"}, "runs": []}"#,
        )
        .unwrap();
        let page = "{{#figure build step-1 HEAD wall}}, {{#figure build step-1  HEAD vs-floor}}×";
        assert_eq!(
            expand("p.md", page, &dir, &BTreeMap::new()).unwrap(),
            "64.0 s, 0.91×"
        );
        let err = expand(
            "p.md",
            "{{#figure build floor HEAD wall}}",
            &dir,
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("step-1 HEAD wall"), "{err:#}");
        std::fs::write(dir.join("outputs/bad.json"), r#"{"runs": []}"#).unwrap();
        let err = expand("p.md", "{{#figure bad x}}", &dir, &BTreeMap::new()).unwrap_err();
        assert!(format!("{err:#}").contains("no \"figures\""), "{err:#}");
    }

    #[test]
    fn a_verdict_is_written_in_the_editions_words_and_a_number_as_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("outputs")).unwrap();
        std::fs::write(
            dir.join("outputs/run.json"),
            r#"{"figures": {"500 step8/go rss-verdict": "lower in every run", "500 go rss": "90 MiB"}}"#,
        )
        .unwrap();
        let words: BTreeMap<String, String> = [(
            "lower in every run".to_string(),
            "每次运行都更低".to_string(),
        )]
        .into();
        let page = "{{#figure run 500 step8/go rss-verdict}}, {{#figure run 500 go rss}}";
        assert_eq!(
            expand("p.md", page, &dir, &words).unwrap(),
            "每次运行都更低, 90 MiB"
        );
        assert_eq!(
            expand("p.md", page, &dir, &BTreeMap::new()).unwrap(),
            "lower in every run, 90 MiB"
        );
    }

    #[test]
    fn a_figure_is_written_in_and_an_unknown_one_fails_with_its_line() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("outputs")).unwrap();
        std::fs::write(
            dir.join("outputs/run.json"),
            r#"{"figures": {"500 step8 converged": "5.3 s", "500 go converged": "100.5 s"}}"#,
        )
        .unwrap();
        let page =
            "Step 8 took {{#figure run 500 step8 converged}}, Go {{#figure run 500 go converged}}.";
        assert_eq!(
            expand("p.md", page, &dir, &BTreeMap::new()).unwrap(),
            "Step 8 took 5.3 s, Go 100.5 s."
        );
        let err = expand(
            "p.md",
            "a\n{{#figure run 500 step9 converged}}",
            &dir,
            &BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("p.md:2") && err.contains("500 step8 converged"),
            "{err}"
        );
        let err = expand(
            "p.md",
            "{{#figure nothing 500 go rss}}",
            &dir,
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("nothing.txt"), "{err:#}");
    }

    #[test]
    fn every_figure_the_book_names_is_in_its_capture() {
        let src = course::workspace::repo_root().join("book/src");
        let mut directives = 0;
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let page = std::fs::read_to_string(&path).unwrap();
            directives += page.matches("{{#figure ").count();
            let name = path.file_name().unwrap().to_string_lossy();
            let expanded =
                expand(&name, &page, &src, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e:#}"));
            assert!(!expanded.contains("{{#figure "), "{name}");
        }
        assert!(directives > 100, "{directives} figures in the book");
    }

    /// A capture of a step run, as `cargo xtask book outputs` writes it.
    const TRANSCRIPT: &str = "\
$ wc -c target/release/step-8
17877112 target/release/step-8
b | INFO step8::leader: became leader identity=b
(b became leader 6.6 s after a froze)
  pass  creates the Deployment
  FAIL  scales it
  pass  reports its status
  control plane started                 5.4 s
step-8: 2 of 3 behaviours pass
";

    #[test]
    fn any_other_capture_is_read_by_a_line_pattern() {
        let figure = |key: &str| by_pattern(TRANSCRIPT, key);
        assert_eq!(
            figure("(b became leader {} after a froze)").unwrap(),
            "6.6 s"
        );
        assert_eq!(
            figure("control plane started {}").unwrap(),
            "5.4 s",
            "spaces as one"
        );
        assert_eq!(figure("step-8: {} of {..} behaviours pass").unwrap(), "2");
        assert_eq!(figure("step-8: {..} of {} behaviours pass").unwrap(), "3");
        assert_eq!(figure("count pass {..}").unwrap(), "2");
        assert_eq!(figure("count FAIL {..}").unwrap(), "1");
        assert_eq!(figure("{} target/release/step-8 as MB").unwrap(), "17.9 MB");
        assert_eq!(
            figure("{} target/release/step-8 as MiB").unwrap(),
            "17.0 MiB"
        );
        // A pattern matches whole lines: a prefix is not enough.
        let err = figure("(b became leader {}").unwrap_err().to_string();
        assert!(err.contains("no line matches"), "{err}");
        let err = figure("{..} {} {..}").unwrap_err().to_string();
        assert!(err.contains("different figures"), "{err}");
        assert!(figure("pass {..}").is_err(), "no `{{}}`");
        assert!(figure("count {} {..}").is_err(), "a count has no `{{}}`");
        assert!(figure("{} target/release/step-8 as MB").is_ok());
        assert!(
            figure("(b became leader {} after a froze) as MB").is_err(),
            "not bytes"
        );
    }

    #[test]
    fn a_line_pattern_is_read_from_the_page_with_its_braces() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("outputs")).unwrap();
        std::fs::write(dir.join("outputs/lost.txt"), TRANSCRIPT).unwrap();
        let page = "took {{#figure lost (b became leader {} after a froze)}}; \
                    {{#figure lost count pass {..}}} passed.";
        assert_eq!(
            expand("p.md", page, &dir, &BTreeMap::new()).unwrap(),
            "took 6.6 s; 2 passed."
        );
        let err = expand(
            "p.md",
            "\n\n{{#figure lost (c became leader {})}}",
            &dir,
            &BTreeMap::new(),
        )
        .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.contains("p.md:3") && err.contains("no line matches"),
            "{err}"
        );
    }
}
