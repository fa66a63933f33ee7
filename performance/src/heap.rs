//! `cargo xtask heap-profile`: where step 8's heap goes, by dhat.
//!
//! Builds step 8's controller under dhat (`steps/step-8/examples/heap_profile.rs`,
//! feature `dhat-heap`: dhat as the global allocator, recording the call
//! stack of every allocation; a release build with debug
//! info, in `target/heap` so the benchmark's binary is untouched), runs it
//! against the local control plane while the benchmark's workload happens —
//! N Foos created at once, until every Foo has converged and 30 s after —
//! stops it with SIGTERM, and reads the `dhat-heap.json` it writes on the
//! way out.
//! The report is the heap at its largest (dhat's t-gmax): how many bytes,
//! which crates asked for them, and the ten largest allocation sites.
//!
//! Writes the report to `book/src/outputs/heap-profile.txt` and its figures,
//! as data, to `heap-profile.json` (`{{#figure heap-profile KEY}}` reads
//! them: `peak`, `peak-at`, `recorded`, `blocks`; `fn NAME`, `fn NAME
//! share`, `fn NAME blocks` for a function of the table; `site FRAME sizes`
//! for the first frame of the largest sites). Figures, not pass/fail. The JSON stays in `target/heap/run/` for dhat's own viewer
//! (`dh_view.html`, from Valgrind).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use testcluster::{ControlPlane, Options};

use crate::measure;

/// Seconds the profile goes on after every Foo has converged.
const STEADY_SECONDS: u64 = 30;

/// Options of `cargo xtask heap-profile`.
#[derive(clap::Args, Debug)]
pub struct HeapArgs {
    /// Number of Foos to create at once.
    #[arg(long, default_value_t = 500)]
    foos: usize,
    /// Only report on a dhat file from an earlier run (its `--foos` given again).
    #[arg(long)]
    from_json: Option<std::path::PathBuf>,
}

/// The parts of dhat's JSON file (format version 2) that the report reads.
#[derive(Deserialize)]
struct DhatFile {
    /// Microseconds from the start to the heap's largest size.
    tg: Option<u64>,
    /// Microseconds from the start to the end of the recording.
    te: u64,
    /// One entry per distinct allocation stack.
    pps: Vec<ProgramPoint>,
    /// The frames the stacks index into, as `0xADDR: symbol (file:line:col)`.
    ftbl: Vec<String>,
}

/// One allocation stack's figures.
#[derive(Deserialize)]
struct ProgramPoint {
    /// Total bytes and blocks allocated there over the run.
    tb: u64,
    /// Bytes and blocks live at t-gmax.
    gb: Option<u64>,
    gbk: Option<u64>,
    /// Its frames, innermost first (indices into `ftbl`).
    fs: Vec<usize>,
}

/// Crates whose frames say how memory is allocated, not who wants it: the
/// allocator, collections, serde's machinery. The report attributes a block
/// to the first frame from another crate.
const PLUMBING: &[&str] = &[
    "alloc",
    "core",
    "std",
    "dhat",
    "hashbrown",
    "indexmap",
    "smallvec",
    "bytes",
    "serde",
    "serde_core",
    "serde_json",
    "backtrace",
    "ahash",
    // The Kubernetes types themselves: a block of a Deployment belongs to
    // whoever decoded or copied it.
    "k8s_openapi",
];

/// Builds the profiling binary, runs the workload, and prints the report.
pub async fn heap_profile(args: HeapArgs) -> Result<()> {
    let root = course::workspace::repo_root();
    if let Some(json) = &args.from_json {
        return write_report(&root, json, args.foos);
    }
    let target = root.join("target/heap");
    println!(
        "==> cargo build --release -p sample-controller-step8 --features dhat-heap --example heap_profile \
         (in target/heap, with debug info so that every frame resolves)"
    );
    let status = course::workspace::cargo(&[
        "build",
        "--release",
        "--quiet",
        "-p",
        "sample-controller-step8",
        "--features",
        "dhat-heap",
        "--example",
        "heap_profile",
    ])
    .env("CARGO_TARGET_DIR", &target)
    // Full debug info: inlined frames then have their whole path
    // (`kube_runtime::events::Recorder::publish`), not just `publish`.
    .env("CARGO_PROFILE_RELEASE_DEBUG", "full")
    .std()
    .status()
    .context("running cargo build")?;
    if !status.success() {
        bail!("building step 8 with dhat failed");
    }
    let exe = target.join("release/examples/heap_profile");
    let run_dir = target.join("run");
    let json = run_dir.join("dhat-heap.json");
    std::fs::create_dir_all(&run_dir)?;
    let _ = std::fs::remove_file(&json);

    let cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;
    let ns = "heap-profile";
    testcluster::create_namespace(&client, ns).await?;
    let log = run_dir.join("step-8.log");
    let args_ = [
        "--kubeconfig".to_string(),
        cp.kubeconfig_path().display().to_string(),
    ];
    println!("==> step 8 (dhat) with {} Foos", args.foos);
    let mut child = measure::start_in(&exe, &args_, &log, Some(&run_dir), &[]).await?;
    let started = Instant::now();
    measure::create_foos(&client, ns, args.foos).await?;
    if let Some(state) =
        measure::wait_converged(&client, ns, args.foos, Duration::from_secs(600)).await?
    {
        bail!("step 8 under dhat did not converge in 600 s: {state}");
    }
    println!("    converged in {:.1} s", started.elapsed().as_secs_f64());
    // Then it keeps up with the Deployments rolling out (the kwok node runs
    // 110 Pods, so most stay Pending: the statuses stop changing) for a while.
    tokio::time::sleep(Duration::from_secs(STEADY_SECONDS)).await;
    let pid = child.id().context("step 8 exited early")?;
    testcluster::signal(pid, libc::SIGTERM).context("SIGTERM to step 8")?;
    // dhat resolves every stack's symbols and writes the file as it stops.
    let exit = tokio::time::timeout(Duration::from_secs(300), child.wait())
        .await
        .context("step 8 did not exit within 300 s of SIGTERM")??;
    drop(cp);
    if !exit.success() {
        bail!("step 8 exited with {exit}; log: {}", log.display());
    }
    write_report(&root, &json, args.foos)
}

/// Reads dhat's file, prints the report and writes it for the book.
fn write_report(root: &std::path::Path, json: &std::path::Path, foos: usize) -> Result<()> {
    let text = std::fs::read_to_string(json)
        .with_context(|| format!("reading {} (dhat writes it on exit)", json.display()))?;
    let file: DhatFile = serde_json::from_str(&text).context("parsing dhat's JSON")?;
    let (report, figures) = report(&file, foos)?;
    print!("\n{report}");
    let out = root.join("book/src/outputs/heap-profile.txt");
    std::fs::write(&out, &report).with_context(|| format!("writing {}", out.display()))?;
    let data = serde_json::json!({
        "written_by": "cargo xtask heap-profile",
        "foos": foos,
        "figures": figures,
    });
    let data_out = out.with_extension("json");
    std::fs::write(&data_out, serde_json::to_string_pretty(&data)? + "\n")
        .with_context(|| format!("writing {}", data_out.display()))?;
    println!(
        "(written to {} and {}; dhat's file: {})",
        out.display(),
        data_out.display(),
        json.display()
    );
    Ok(())
}

/// `2577.0` KiB as `2.5 MiB`, `89.0` as `89 KiB`.
fn kib(bytes: u64) -> String {
    let kib = bytes as f64 / 1024.0;
    if kib >= 1024.0 {
        format!("{:.1} MiB", kib / 1024.0)
    } else {
        format!("{kib:.0} KiB")
    }
}

/// `2488` as `2488 B`, `1106704` as `1.1 MB`.
fn block_size(bytes: u64) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{bytes} B")
    }
}

/// The heap at t-gmax: total, by function, and the ten largest sites; as
/// text, and as figures by key.
fn report(file: &DhatFile, foos: usize) -> Result<(String, BTreeMap<String, String>)> {
    let Some(tg) = file.tg else {
        bail!("dhat's file has no t-gmax: was it a heap profile?");
    };
    let live: Vec<&ProgramPoint> = file
        .pps
        .iter()
        .filter(|pp| pp.gb.unwrap_or(0) > 0)
        .collect();
    let bytes: u64 = live.iter().filter_map(|pp| pp.gb).sum();
    let blocks: u64 = live.iter().filter_map(|pp| pp.gbk).sum();
    let total: u64 = file.pps.iter().map(|pp| pp.tb).sum();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let mut figures = BTreeMap::from([
        (
            "recorded".to_string(),
            format!("{:.1} s", file.te as f64 / 1e6),
        ),
        ("peak-at".to_string(), format!("{:.1} s", tg as f64 / 1e6)),
        ("peak".to_string(), format!("{:.1} MiB", mib(bytes))),
        ("blocks".to_string(), blocks.to_string()),
    ]);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Step 8 under dhat (release build), {foos} Foos created at once, until {STEADY_SECONDS} s after every Foo had converged."
    );
    let _ = writeln!(
        out,
        "Recorded {:.1} s; the heap was largest at {:.1} s: {:.1} MiB in {blocks} blocks \
         ({:.0} MiB allocated over the whole run).",
        file.te as f64 / 1e6,
        tg as f64 / 1e6,
        mib(bytes),
        mib(total)
    );
    let _ = writeln!(
        out,
        "\nAt that moment, by the first function that is not the allocator, a collection, serde \
         or a Kubernetes type's Clone (the twelve largest):"
    );
    by_function(&mut out, &mut figures, &live, &file.ftbl, bytes);
    largest_sites(&mut out, &mut figures, &live, &file.ftbl);
    Ok((out, figures))
}

/// The heap at its largest by the first function past the plumbing that
/// allocated it, the twelve largest and the rest: into `out` and `figures`.
fn by_function(
    out: &mut String,
    figures: &mut BTreeMap<String, String>,
    live: &[&ProgramPoint],
    ftbl: &[String],
    bytes: u64,
) {
    let mut by_owner: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for pp in live {
        let frames = owning_frames(pp, ftbl);
        let owner = frames
            .first()
            .map_or("(no frame past the plumbing)".to_string(), |f| {
                short(f).trim_end_matches("::{{closure}}").to_string()
            });
        let entry = by_owner.entry(owner).or_default();
        entry.0 += pp.gb.unwrap_or(0);
        entry.1 += pp.gbk.unwrap_or(0);
    }
    let mut rows: Vec<_> = by_owner.into_iter().collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.1.0));
    for (name, (b, k)) in rows.iter().take(12) {
        let share = 100.0 * *b as f64 / bytes.max(1) as f64;
        figures.insert(format!("fn {name}"), kib(*b));
        figures.insert(format!("fn {name} share"), format!("{share:.1} %"));
        figures.insert(format!("fn {name} blocks"), k.to_string());
        let _ = writeln!(
            out,
            "  {:>8.1} KiB {share:>5.1} % {k:>6} blocks  {name}",
            *b as f64 / 1024.0,
        );
    }
    let rest: u64 = rows.iter().skip(12).map(|(_, (b, _))| b).sum();
    let _ = writeln!(
        out,
        "  {:>8.1} KiB {:>5.1} %         the other {} functions",
        rest as f64 / 1024.0,
        100.0 * rest as f64 / bytes.max(1) as f64,
        rows.len().saturating_sub(12)
    );
}

/// The ten largest allocation sites at the heap's largest, each with its
/// first three frames past the plumbing, and each first frame's average
/// block sizes as a figure: into `out` and `figures`.
fn largest_sites(
    out: &mut String,
    figures: &mut BTreeMap<String, String>,
    live: &[&ProgramPoint],
    ftbl: &[String],
) {
    let _ = writeln!(
        out,
        "\nThe ten largest allocation sites at that moment (their first three frames past that plumbing):"
    );
    let mut sites: Vec<&&ProgramPoint> = live.iter().collect();
    sites.sort_by_key(|pp| std::cmp::Reverse(pp.gb));
    // Per first frame: the average block sizes of its sites, largest site first.
    let mut site_sizes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pp in sites.iter().take(10) {
        let frames = owning_frames(pp, ftbl);
        let average = pp.gb.unwrap_or(0) / pp.gbk.unwrap_or(1).max(1);
        if let Some(first) = frames.first() {
            let sizes = site_sizes
                .entry(short(first).trim_end_matches("::{{closure}}").to_string())
                .or_default();
            if !sizes.contains(&block_size(average)) {
                sizes.push(block_size(average));
            }
        }
        let _ = writeln!(
            out,
            "  {:>8.1} KiB {:>7} blocks of {} B on average",
            pp.gb.unwrap_or(0) as f64 / 1024.0,
            pp.gbk.unwrap_or(0),
            average
        );
        for frame in frames.iter().take(3) {
            let _ = writeln!(out, "      {}", short(frame));
        }
    }
    for (frame, sizes) in site_sizes {
        let sizes = match sizes.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => sizes.join(""),
        };
        figures.insert(format!("site {frame} sizes"), sizes);
    }
}

/// The symbols of `pp`'s frames, innermost first, leaving out plumbing.
fn owning_frames<'a>(pp: &ProgramPoint, ftbl: &'a [String]) -> Vec<&'a str> {
    pp.fs
        .iter()
        .filter_map(|&i| ftbl.get(i))
        .map(|frame| symbol(frame))
        .filter(|s| !is_plumbing(s))
        .collect()
}

/// Whether a frame only says how memory is allocated: a function of a
/// [`PLUMBING`] crate, a generic one (`<T as …>`), or an implementation of
/// serde's or the standard library's traits for some type (a Deployment's
/// `Clone` or `Deserialize`: the caller is the one that wants the copy).
fn is_plumbing(symbol: &str) -> bool {
    match crate_of(symbol) {
        None => true,
        Some(name) => {
            PLUMBING.contains(&name)
                || [" as serde", " as core::", " as alloc::", " as std::"]
                    .iter()
                    .any(|t| symbol.contains(t))
        }
    }
}

/// The symbol of a dhat frame string `0xADDR: symbol (file:line:col)`.
fn symbol(frame: &str) -> &str {
    let rest = frame.split_once(": ").map_or(frame, |(_, rest)| rest);
    rest.rsplit_once(" (").map_or(rest, |(symbol, _)| symbol)
}

/// The crate a symbol belongs to: the first path segment, or for
/// `<Type as Trait>::method` the type's; `None` for a generic parameter
/// (`<T as …>`) or an unresolved frame.
fn crate_of(symbol: &str) -> Option<&str> {
    let path = symbol.trim_start_matches('<');
    let end = path
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(path.len());
    let name = &path[..end];
    let is_crate = path[end..].starts_with("::")
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    is_crate.then_some(name)
}

/// A symbol without its generic arguments (a `<` right after a name opens
/// them; any other `<` is a qualified path, `<Type as Trait>::f`, and stays).
fn short(symbol: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut previous = ' ';
    for c in symbol.chars() {
        if depth > 0 {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
        } else if c == '<' && (previous.is_ascii_alphanumeric() || previous == '_') {
            depth = 1;
        } else {
            out.push(c);
        }
        previous = c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_string_gives_its_symbol_and_the_symbol_its_crate() {
        let frame = "0x55d0c3a1: <k8s_openapi::api::apps::v1::Deployment as serde_core::de::Deserialize>::deserialize (apps/v1/deployment.rs:12:5)";
        let symbol = symbol(frame);
        assert_eq!(
            symbol,
            "<k8s_openapi::api::apps::v1::Deployment as serde_core::de::Deserialize>::deserialize"
        );
        assert_eq!(crate_of(symbol), Some("k8s_openapi"));
        assert_eq!(crate_of("alloc::raw_vec::RawVec<T>::grow"), Some("alloc"));
        assert_eq!(crate_of("<T as alloc::borrow::ToOwned>::to_owned"), None);
        assert_eq!(crate_of("???"), None);
    }

    #[test]
    fn a_block_belongs_to_the_first_frame_past_the_allocator_and_serde() {
        let ftbl: Vec<String> = [
            "[root]",
            "0x1: alloc::raw_vec::RawVec<T,A>::grow_one (raw_vec.rs:1:1)",
            "0x2: serde_json::de::Deserializer<R>::parse_str (de.rs:1:1)",
            "0x3: kube_client::client::Client::request_events::{{closure}} (mod.rs:1:1)",
            "0x4: kube_runtime::watcher::step::{{closure}} (watcher.rs:1:1)",
        ]
        .map(String::from)
        .to_vec();
        let pp = ProgramPoint {
            tb: 10,
            gb: Some(10),
            gbk: Some(1),
            fs: vec![1, 2, 3, 4],
        };
        let frames = owning_frames(&pp, &ftbl);
        assert_eq!(crate_of(frames[0]), Some("kube_client"));
        assert_eq!(frames.len(), 2);
        assert!(is_plumbing(
            "<k8s_openapi::api::apps::v1::Deployment as core::clone::Clone>::clone"
        ));
        assert!(is_plumbing("<T as alloc::borrow::ToOwned>::to_owned"));
        assert!(!is_plumbing(
            "kube_runtime::reflector::store::Writer<K>::apply_watcher_event"
        ));
        assert_eq!(
            short("kube_runtime::watcher::step<K>::{{closure}}"),
            "kube_runtime::watcher::step::{{closure}}"
        );
    }

    #[test]
    fn the_report_gives_as_figures_what_its_text_shows() {
        let ftbl: Vec<String> = [
            "[root]",
            "0x1: alloc::raw_vec::RawVec<T,A>::grow_one (raw_vec.rs:1:1)",
            "0x2: step8::caches::relevant_changes::{{closure}} (caches.rs:1:1)",
            "0x3: kube_runtime::reflector::store::Writer<K>::apply_watcher_event (store.rs:1:1)",
        ]
        .map(String::from)
        .to_vec();
        let point = |bytes: u64, blocks: u64, frame: usize| ProgramPoint {
            tb: bytes * 2,
            gb: Some(bytes),
            gbk: Some(blocks),
            fs: vec![1, frame],
        };
        let file = DhatFile {
            tg: Some(12_300_000),
            te: 45_600_000,
            pps: vec![
                point(2_638_848, 1, 2),
                point(1_048_576, 512, 3),
                point(2_048, 2, 3),
            ],
            ftbl,
        };
        let (text, figures) = report(&file, 500).unwrap();
        let figure = |key: &str| figures.get(key).map(String::as_str);
        assert_eq!(figure("peak"), Some("3.5 MiB"));
        assert_eq!(figure("peak-at"), Some("12.3 s"));
        assert_eq!(figure("recorded"), Some("45.6 s"));
        assert_eq!(figure("blocks"), Some("515"));
        assert_eq!(
            figure("fn step8::caches::relevant_changes"),
            Some("2.5 MiB")
        );
        assert_eq!(
            figure("fn step8::caches::relevant_changes share"),
            Some("71.5 %")
        );
        assert_eq!(
            figure("site kube_runtime::reflector::store::Writer::apply_watcher_event sizes"),
            Some("2048 B and 1024 B")
        );
        assert!(
            text.contains("   2577.0 KiB  71.5 %      1 blocks  step8::caches::relevant_changes"),
            "{text}"
        );
    }
}
