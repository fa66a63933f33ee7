//! The figures of a run, by key (what `{{#figure}}` reads), and the tables
//! the Performance page includes by anchor (`NAME.txt`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::stats::{Spread, Stats, ratio, request_medians, stats, verdict};
use super::{Conditions, LinesOfCode, Measurement, Results, Subject};
use crate::timeline::Timeline;

/// The comparisons the page can draw, as `{{#figure performance N A/B
/// converged}}` and `… converged-verdict` (and `cpu`, `rss`).
pub(super) const PAIRS: [(Subject, Subject); 12] = [
    (Subject::Step7, Subject::Go),
    (Subject::Step8, Subject::Go),
    (Subject::Step8, Subject::Step7),
    (Subject::Go, Subject::FloorWorkers),
    (Subject::Step7, Subject::FloorWorkers),
    (Subject::Step8, Subject::FloorWorkers),
    (Subject::Go, Subject::BareClient),
    (Subject::Step7, Subject::BareClient),
    (Subject::Step8, Subject::BareClient),
    (Subject::FloorWorkers, Subject::BareClient),
    (Subject::Step7Flow, Subject::Step7),
    (Subject::Step8Flow, Subject::Step8),
];

/// Every figure of the run, by the key `{{#figure performance KEY}}` names
/// (preprocess/figures.rs lists them), each as the page shows it.
pub(super) fn figures(
    sizes: &[usize],
    results: &Results,
    conditions: &Conditions,
    lines: &[LinesOfCode],
) -> BTreeMap<String, String> {
    let stats = stats(results);
    let mut found = BTreeMap::new();
    subject_figures(&mut found, results, &stats);
    pair_figures(&mut found, sizes, &stats);
    target_figures(&mut found, sizes, &stats);
    cost_figures(&mut found, sizes, &stats);
    run_figures(&mut found, results, conditions, lines);
    found
}

/// The statistics of every size and subject of a run.
type AllStats = BTreeMap<(usize, Subject), Stats>;

fn put(found: &mut BTreeMap<String, String>, key: String, value: String) {
    found.insert(key, value);
}

fn secs(s: f64) -> String {
    format!("{s:.1} s")
}

fn mib(m: f64) -> String {
    format!("{m:.1} MiB")
}

/// Each subject's own figures at each size: times, CPU, memory, writes,
/// requests, its fastest and slowest runs' timelines, its ratios to Go and
/// the floors, and the flow view's cost beside the same step without it.
fn subject_figures(found: &mut BTreeMap<String, String>, results: &Results, stats: &AllStats) {
    let cpu = |s: f64| format!("{s:.2} s");
    for (&(n, subject), s) in stats {
        let at = |what: &str| format!("{n} {} {what}", subject.key());
        if let Some(c) = s.converge {
            for (what, value) in [
                ("converged", c.mid),
                ("fastest", c.low),
                ("slowest", c.high),
            ] {
                if value.is_finite() {
                    put(found, at(what), secs(value));
                }
            }
        }
        if let Some(c) = s.cpu {
            put(found, at("cpu"), cpu(c.mid));
            put(found, at("cpu-lowest"), cpu(c.low));
            put(found, at("cpu-highest"), cpu(c.high));
            put(
                found,
                at("cpu-per-foo"),
                format!("{:.2} ms", c.mid * 1000.0 / n as f64),
            );
        }
        if let Some(r) = s.rss {
            put(found, at("rss"), mib(r.mid));
            put(found, at("rss-lowest"), mib(r.low));
            put(found, at("rss-highest"), mib(r.high));
        }
        if let Some(w) = s.writes {
            put(found, at("writes"), format!("{:.0}", w.mid));
        }
        if let Some(idle) = s.idle {
            put(found, at("idle"), format!("{idle:.0}"));
        }
        if let (Some(anon), Some(file)) = (s.anon, s.file) {
            put(found, at("anon"), mib(anon));
            put(found, at("file"), mib(file));
        }
        for (request, count) in request_medians(&results[&(n, subject)]) {
            put(found, at(&request), format!("{count}"));
        }
        for (which, m, t) in extremes(&results[&(n, subject)]).into_iter().flatten() {
            for (name, value) in timeline_figures(m, t) {
                put(found, at(&format!("{which}-run {name}")), value);
            }
        }
        ratio_figures(found, stats, n, subject, s);
        flow_figures(found, stats, n, subject, s);
    }
}

/// `subject`'s convergence at `n` Foos against Go's, the bare client's and
/// the floor's (for the subjects of the table).
fn ratio_figures(
    found: &mut BTreeMap<String, String>,
    stats: &AllStats,
    n: usize,
    subject: Subject,
    s: &Stats,
) {
    let at = |what: &str| format!("{n} {} {what}", subject.key());
    if Subject::TABLE.contains(&subject) {
        let of = |other: Subject| stats.get(&(n, other)).and_then(Stats::converged);
        for (what, other) in [
            ("vs-go", Subject::Go),
            ("vs-floor", Subject::BareClient),
            ("vs-floor2", Subject::FloorWorkers),
        ] {
            if other != subject
                && let Some(r) = ratio(s.converged(), of(other))
            {
                put(found, at(what), r);
            }
        }
    }
}

/// A step's runs with its flow on beside the same step's runs with it off.
fn flow_figures(
    found: &mut BTreeMap<String, String>,
    stats: &AllStats,
    n: usize,
    subject: Subject,
    s: &Stats,
) {
    if let Some(off) = subject.flow_off()
        && let Some(without) = stats.get(&(n, off))
    {
        let at = |what: &str| format!("{n} {} {what}", off.key());
        for (name, side) in [("flow-off", without), ("flow-on", s)] {
            if let Some(c) = side.converge.filter(|c| c.high.is_finite()) {
                put(found, at(name), secs(c.mid));
                put(found, at(&format!("{name}-fastest")), secs(c.low));
                put(found, at(&format!("{name}-slowest")), secs(c.high));
            }
        }
        if let Some(r) = ratio(s.converged(), without.converged()) {
            put(found, at("flow-ratio"), r);
        }
        if let Some(lines) = s.flow_lines {
            put(found, at("flow-lines"), format!("{lines:.0}"));
        }
    }
}

/// Every pair of subjects the page compares ([`PAIRS`]), at each size: the
/// ratio of medians and whether the runs' spreads overlap.
fn pair_figures(found: &mut BTreeMap<String, String>, sizes: &[usize], stats: &AllStats) {
    for &n in sizes {
        for (a, b) in PAIRS {
            let (Some(sa), Some(sb)) = (stats.get(&(n, a)), stats.get(&(n, b))) else {
                continue;
            };
            let pair = format!("{n} {}/{}", a.key(), b.key());
            for (what, x, y, decimals) in [
                ("converged", sa.converge, sb.converge, 1),
                ("cpu", sa.cpu, sb.cpu, 2),
                ("rss", sa.rss, sb.rss, 1),
            ] {
                let (Some(x), Some(y)) = (x, y) else { continue };
                if let Some(r) = ratio(Some(x.mid).filter(|m| m.is_finite()), Some(y.mid)) {
                    put(found, format!("{pair} {what}"), r);
                }
                put(
                    found,
                    format!("{pair} {what}-verdict"),
                    verdict(&x, &y, decimals).into(),
                );
            }
        }
    }
}

/// The project's targets ("Against the project's targets" on the page),
/// each a ratio of medians and the most it may be: `N SUBJECT met KEY` is
/// "yes" or "no", for the ratio as the page shows it (two decimals).
fn target_figures(found: &mut BTreeMap<String, String>, sizes: &[usize], stats: &AllStats) {
    for &n in sizes {
        for (subject, flow_on) in [
            (Subject::Step7, Subject::Step7Flow),
            (Subject::Step8, Subject::Step8Flow),
        ] {
            let median = |of: Subject, measure: fn(&Stats) -> Option<f64>| {
                stats.get(&(n, of)).and_then(measure)
            };
            let time: fn(&Stats) -> Option<f64> = Stats::converged;
            let cpu: fn(&Stats) -> Option<f64> = |s| s.cpu.map(|c| c.mid);
            let rss: fn(&Stats) -> Option<f64> = |s| s.rss.map(|r| r.mid);
            let targets = [
                (
                    "time-vs-go",
                    median(subject, time),
                    median(Subject::Go, time),
                    0.5,
                ),
                (
                    "time-vs-floor",
                    median(subject, time),
                    median(Subject::BareClient, time),
                    2.0,
                ),
                (
                    "time-vs-floor2",
                    median(subject, time),
                    median(Subject::FloorWorkers, time),
                    2.0,
                ),
                (
                    "cpu-vs-go",
                    median(subject, cpu),
                    median(Subject::Go, cpu),
                    0.3,
                ),
                (
                    "rss-vs-go",
                    median(subject, rss),
                    median(Subject::Go, rss),
                    0.45,
                ),
                ("flow", median(flow_on, time), median(subject, time), 1.1),
            ];
            for (key, x, y, most) in targets {
                if let (Some(x), Some(y)) = (x, y)
                    && y > 0.0
                {
                    let shown = (x / y * 100.0).round() / 100.0;
                    let met = if shown <= most { "yes" } else { "no" };
                    put(
                        found,
                        format!("{n} {} met {key}", subject.key()),
                        met.into(),
                    );
                }
            }
        }
    }
}

/// What more Foos cost, between every two sizes.
fn cost_figures(found: &mut BTreeMap<String, String>, sizes: &[usize], stats: &AllStats) {
    for (small, large) in size_pairs(sizes) {
        for subject in Subject::TABLE {
            let (Some(a), Some(b)) = (stats.get(&(small, subject)), stats.get(&(large, subject)))
            else {
                continue;
            };
            let at = |what: &str| format!("{small}-{large} {} {what}", subject.key());
            let more = (large - small) as f64;
            if let (Some(x), Some(y)) = (a.converged(), b.converged()) {
                put(found, at("per-foo"), format!("{:.2} s", (y - x) / more));
                put(
                    found,
                    at("per-100"),
                    format!("{:.1} s", (y - x) / more * 100.0),
                );
            }
            if let Some(slope) = slope(a.cpu, b.cpu, more) {
                put(found, at("cpu-slope"), format!("{:.0} ms", slope * 1000.0));
            }
            if let Some(slope) = slope(a.rss, b.rss, more) {
                put(found, at("rss-slope"), format!("{slope:.2} MiB"));
            }
        }
    }
}

/// What the caches could hold, the lines of code and the binaries' sizes.
fn run_figures(
    found: &mut BTreeMap<String, String>,
    results: &Results,
    conditions: &Conditions,
    lines: &[LinesOfCode],
) {
    for ((n, _), runs) in results.iter().filter(|((_, s), _)| *s == Subject::Go) {
        if let Some(bytes) = runs.iter().find_map(|m| m.cached_bytes) {
            let kib = |b: usize| format!("{:.0} KiB", b as f64 / 1024.0);
            let share =
                |b: usize| format!("{:.0} %", 100.0 * b as f64 / bytes.listed.max(1) as f64);
            put(found, format!("{n} json"), kib(bytes.listed));
            put(found, format!("{n} managed"), kib(bytes.managed_fields));
            put(
                found,
                format!("{n} managed-share"),
                share(bytes.managed_fields),
            );
            put(found, format!("{n} cached"), kib(bytes.step_8));
            put(found, format!("{n} cached-share"), share(bytes.step_8));
        }
    }
    for loc in lines {
        put(found, format!("loc {}", loc.key), loc.lines.to_string());
    }
    for (key, &bytes) in &conditions.binaries {
        put(
            found,
            format!("binary {key}"),
            mib(bytes as f64 / (1024.0 * 1024.0)),
        );
    }
}

/// Each size with the next larger one: the segments of the cost curve.
pub(super) fn size_pairs(sizes: &[usize]) -> Vec<(usize, usize)> {
    let mut sorted = sizes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.windows(2).map(|w| (w[0], w[1])).collect()
}

/// How much the median grows per 100 more Foos, from `more` more.
pub(super) fn slope(small: Option<Spread>, large: Option<Spread>, more: f64) -> Option<f64> {
    Some((large?.mid - small?.mid) / more * 100.0)
}

/// The tables the page shows, each between anchors it includes by name.
pub(super) fn report(
    sizes: &[usize],
    results: &Results,
    build: Option<(Duration, Duration)>,
    conditions: &Conditions,
    lines: &[LinesOfCode],
) -> String {
    let stats = stats(results);
    // The cells that are also figures are read from them, formatted once.
    let figures = figures(sizes, results, conditions, lines);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- Written by `cargo xtask bench`; do not edit. Its figures, as data: the .json beside it. -->\n"
    );
    main_table(&mut out, sizes, &stats, conditions);
    cost_table(&mut out, sizes, &stats, &figures);
    memory_report(&mut out, sizes, &stats, &figures);
    idle_table(&mut out, &stats, conditions);
    flow_report(&mut out, sizes, &stats, conditions);
    timeline_report(&mut out, results);
    requests_report(&mut out, results, build, lines);
    out
}

/// A figure of `figures` as a cell: `-` when the run has none.
fn cell(figures: &BTreeMap<String, String>, key: String) -> &str {
    figures.get(&key).map_or("-", String::as_str)
}

/// The page's main table (`ANCHOR: main`): each size and subject's time,
/// ratios, CPU, memory and writes.
fn main_table(out: &mut String, sizes: &[usize], stats: &AllStats, conditions: &Conditions) {
    let repeat = conditions.repeat;
    let _ = writeln!(out, "<!-- ANCHOR: main -->");
    let _ = writeln!(
        out,
        "Each figure: the median of {repeat} runs, with the lowest and highest in brackets; \
         ratios are of medians. A run not converged after {} is counted as slower than any \
         that did. CPU time: user and system, from the Foos' creation to convergence.\n",
        conditions.limit_shown()
    );
    let _ = writeln!(
        out,
        "| Foos | Subject | Converged in | vs Go | vs floor | vs floor, 2 in flight | CPU time | Peak RSS | API writes |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for &n in sizes {
        for subject in Subject::TABLE {
            let Some(s) = stats.get(&(n, subject)) else {
                continue;
            };
            let of = |other: Subject| stats.get(&(n, other)).and_then(Stats::converged);
            let vs = |other: Subject| {
                if other == subject || subject == Subject::BareClient {
                    String::new()
                } else {
                    ratio(s.converged(), of(other)).unwrap_or_else(|| "-".into())
                }
            };
            let shown = |x: Option<Spread>, decimals, unit| {
                x.map_or("-".into(), |x: Spread| x.shown(decimals, unit))
            };
            let _ = writeln!(
                out,
                "| {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
                subject.label(),
                s.converge_cell(conditions.limit(n)),
                vs(Subject::Go),
                vs(Subject::BareClient),
                if subject == Subject::FloorWorkers {
                    String::new()
                } else {
                    vs(Subject::FloorWorkers)
                },
                shown(s.cpu, 2, "s"),
                shown(s.rss, 1, "MiB"),
                shown(s.writes, 0, ""),
            );
        }
    }
    let _ = writeln!(out, "<!-- ANCHOR_END: main -->");
}

/// What 100 more Foos cost (`ANCHOR: cost`), between every two sizes.
fn cost_table(
    out: &mut String,
    sizes: &[usize],
    stats: &AllStats,
    figures: &BTreeMap<String, String>,
) {
    let figure = |key: String| cell(figures, key);
    let pairs = size_pairs(sizes);
    if !pairs.is_empty() {
        let _ = writeln!(out, "\n<!-- ANCHOR: cost -->");
        let _ = writeln!(
            out,
            "What 100 more Foos cost, from the medians at each size and the next:\n\n\
             | Foos | Subject | CPU time | Peak RSS | Converged in |\n\
             |---|---|---:|---:|---:|"
        );
        for (small, large) in pairs {
            for subject in Subject::TABLE {
                if !(stats.contains_key(&(small, subject)) && stats.contains_key(&(large, subject)))
                {
                    continue;
                }
                let at = |what: &str| format!("{small}-{large} {} {what}", subject.key());
                let _ = writeln!(
                    out,
                    "| {small} → {large} | {} | {} | {} | {} |",
                    subject.label(),
                    figure(at("cpu-slope")),
                    figure(at("rss-slope")),
                    figure(at("per-100")),
                );
            }
        }
        let _ = writeln!(out, "<!-- ANCHOR_END: cost -->");
    }
}

/// Resident memory at the largest size and what the caches could hold
/// (`ANCHOR: memory`).
fn memory_report(
    out: &mut String,
    sizes: &[usize],
    stats: &AllStats,
    figures: &BTreeMap<String, String>,
) {
    let figure = |key: String| cell(figures, key);
    if let Some(&largest) = sizes.iter().max() {
        let _ = writeln!(out, "\n<!-- ANCHOR: memory -->");
        let _ = writeln!(
            out,
            "Resident memory at the end of the runs at {largest} Foos (medians), anonymous \
             (heap, stacks) + file-backed (the binary and libraries):\n"
        );
        for subject in Subject::TABLE {
            if let Some(Stats {
                anon: Some(anon),
                file: Some(file),
                ..
            }) = stats.get(&(largest, subject))
            {
                let binary = figures
                    .get(&format!("binary {}", subject.program().key()))
                    .map_or(String::new(), |size| format!(" (its binary: {size})"));
                let _ = writeln!(
                    out,
                    "- {}: {anon:.1} MiB + {file:.1} MiB{binary}",
                    subject.label()
                );
            }
        }
        for &n in sizes {
            if figures.contains_key(&format!("{n} json")) {
                let _ = writeln!(
                    out,
                    "\n{n} Foos and their Deployments as listed after convergence: {} of \
                     JSON (what Go and step 7 cache), of which managedFields {} ({}); \
                     step 8 caches {} of it ({}).",
                    figure(format!("{n} json")),
                    figure(format!("{n} managed")),
                    figure(format!("{n} managed-share")),
                    figure(format!("{n} cached")),
                    figure(format!("{n} cached-share")),
                );
            }
        }
        let _ = writeln!(out, "<!-- ANCHOR_END: memory -->");
    }
}

/// The writes of each subject while nothing changes (`ANCHOR: idle`).
fn idle_table(out: &mut String, stats: &AllStats, conditions: &Conditions) {
    let idle_seconds = conditions.idle_seconds;
    let idle: Vec<(usize, Subject, f64)> = stats
        .iter()
        .filter_map(|(&(n, subject), s)| Some((n, subject, s.idle?)))
        .collect();
    if !idle.is_empty() {
        let _ = writeln!(out, "\n<!-- ANCHOR: idle -->");
        let _ = writeln!(
            out,
            "| Foos | Subject | Writes in {idle_seconds} s idle |\n|---:|---|---:|"
        );
        for (n, subject, writes) in idle {
            let _ = writeln!(out, "| {n} | {} | {writes:.0} |", subject.label());
        }
        let _ = writeln!(out, "<!-- ANCHOR_END: idle -->");
    }
}

/// Every request by verb and resource (`ANCHOR: requests`), the lines of
/// code and the learner's build.
fn requests_report(
    out: &mut String,
    results: &Results,
    build: Option<(Duration, Duration)>,
    lines: &[LinesOfCode],
) {
    let _ = writeln!(out, "\n<!-- ANCHOR: requests -->");
    let _ = writeln!(
        out,
        "*API writes*: creates, updates, patches and applies of Foos, Deployments and Events \
         while the run converged (kube-apiserver's `apiserver_request_total`), without \
         `deployments/status`, which only kube-controller-manager writes. They include the \
         benchmark's own Foo creates and kube-controller-manager's Events. All requests by verb \
         and resource, medians over the runs (the LISTs include the benchmark's polling):\n"
    );
    for ((n, subject), runs) in results {
        let detail: Vec<String> = request_medians(runs)
            .into_iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            out,
            "- {n} Foos, {}: {}",
            subject.label(),
            detail.join(", ")
        );
    }
    let _ = writeln!(out, "<!-- ANCHOR_END: requests -->");
    let _ = writeln!(
        out,
        "\nLines of code (non-blank, non-comment, without tests):"
    );
    for loc in lines {
        let _ = writeln!(out, "- {}: {}", loc.what, loc.lines);
    }
    if let Some((cold, rebuild)) = build {
        let _ = writeln!(
            out,
            "\nLearner's build: cold `cargo build --bins` {:.0} s; rebuild after editing one step file {:.1} s.",
            cold.as_secs_f64(),
            rebuild.as_secs_f64()
        );
    }
}

/// The fastest and the slowest converged run of `runs` that have a
/// [`Timeline`], each named so (`fastest`, `slowest`): the two runs whose
/// difference the page explains.
pub(super) fn extremes(
    runs: &[Measurement],
) -> Option<[(&'static str, &Measurement, &Timeline); 2]> {
    let timed = || {
        runs.iter()
            .filter(|m| m.unconverged.is_none())
            .filter_map(|m| Some((m, m.timeline.as_ref()?)))
    };
    if timed().count() < 2 {
        return None;
    }
    let fastest = timed().min_by(|a, b| a.0.converge.cmp(&b.0.converge))?;
    let slowest = timed().max_by(|a, b| a.0.converge.cmp(&b.0.converge))?;
    Some([
        ("fastest", fastest.0, fastest.1),
        ("slowest", slowest.0, slowest.1),
    ])
}

/// A [`Timeline`]'s figures as the page shows them, by name.
pub(super) fn timeline_figures(m: &Measurement, t: &Timeline) -> [(&'static str, String); 13] {
    [
        ("converged", format!("{:.1} s", m.converge.as_secs_f64())),
        ("last-seen", format!("{:.1} s", t.last_seen)),
        ("last-created", format!("{:.1} s", t.last_created)),
        ("syncs", format!("{}", t.syncs)),
        ("sync-ms", format!("{:.1} ms", t.sync_ms)),
        ("busy", format!("{:.1} s", t.busy)),
        ("busy-share", format!("{:.0} %", t.busy_share * 100.0)),
        ("wait", format!("{:.1} s", t.wait_ms / 1000.0)),
        ("wait-max", format!("{:.1} s", t.wait_max_ms / 1000.0)),
        ("requests", format!("{}", t.requests)),
        ("request-ms", format!("{:.1} ms", t.request_ms)),
        ("request-p90", format!("{:.1} ms", t.request_p90_ms)),
        ("request-total", format!("{:.1} s", t.request_total)),
    ]
}

/// The tables of where the time went: for each flow-on subject at each
/// size, its fastest and slowest run taken apart ([`Timeline`]), a row a
/// measure and a column a run.
pub(super) fn timeline_report(out: &mut String, results: &Results) {
    // Each row: its label, the figure it shows, and the one in brackets.
    const ROWS: [(&str, &str, Option<&str>); 10] = [
        ("Converged", "converged", None),
        ("Last Foo seen", "last-seen", None),
        ("Last Deployment created", "last-created", None),
        ("Syncs", "syncs", None),
        ("Median sync", "sync-ms", None),
        (
            "Workers busy (share of their time)",
            "busy",
            Some("busy-share"),
        ),
        (
            "Wait in the queue: median (longest)",
            "wait",
            Some("wait-max"),
        ),
        ("Requests of the syncs", "requests", None),
        (
            "Their latency: median (90th percentile)",
            "request-ms",
            Some("request-p90"),
        ),
        ("Their latency summed", "request-total", None),
    ];
    let mut tables = Vec::new();
    for (&(n, subject), runs) in results {
        let Some(extremes) = extremes(runs) else {
            continue;
        };
        let [fastest, slowest] = extremes.map(|(_, m, t)| {
            let figures = timeline_figures(m, t);
            let figure = |key: &str| {
                figures
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or_else(|| "-".to_string(), |(_, value)| value.clone())
            };
            ROWS.map(|(_, shown, beside)| match beside {
                Some(beside) => format!("{} ({})", figure(shown), figure(beside)),
                None => figure(shown),
            })
        });
        let mut table = format!(
            "| {n} Foos, {} | Fastest run | Slowest run |\n|---|---:|---:|\n",
            subject.label()
        );
        for (i, (row, ..)) in ROWS.iter().enumerate() {
            let _ = writeln!(table, "| {row} | {} | {} |", fastest[i], slowest[i]);
        }
        tables.push(table);
    }
    if tables.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n<!-- ANCHOR: spread -->");
    let _ = write!(out, "{}", tables.join("\n"));
    let _ = writeln!(out, "<!-- ANCHOR_END: spread -->");
}

/// The table of the flow's cost: each Rust step's convergence with the flow
/// off and on, run after run, when the flow subjects ran.
pub(super) fn flow_report(
    out: &mut String,
    sizes: &[usize],
    stats: &BTreeMap<(usize, Subject), Stats>,
    conditions: &Conditions,
) {
    let mut rows = Vec::new();
    for &n in sizes {
        let limit = conditions.limit(n);
        for on in [Subject::Step7Flow, Subject::Step8Flow] {
            let Some(off) = on.flow_off() else { continue };
            if let (Some(a), Some(b)) = (stats.get(&(n, off)), stats.get(&(n, on))) {
                let step = if off == Subject::Step7 {
                    "step 7"
                } else {
                    "step 8"
                };
                let lines = b.flow_lines.map_or("-".into(), |l| format!("{l:.0}"));
                rows.push(format!(
                    "| {n} | {step} | {} | {} | {} | {lines} |",
                    a.converge_cell(limit),
                    b.converge_cell(limit),
                    ratio(b.converged(), a.converged()).unwrap_or_else(|| "-".into()),
                ));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n<!-- ANCHOR: flow -->");
    let _ = writeln!(
        out,
        "| Foos | Step | Flow off | Flow on | on / off | Flow lines |\n|---:|---|---:|---:|---:|---:|"
    );
    for row in rows {
        let _ = writeln!(out, "{row}");
    }
    let _ = writeln!(out, "<!-- ANCHOR_END: flow -->");
}
