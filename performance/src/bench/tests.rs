//! The benchmark's arithmetic and reports, on runs made up here.

use super::chart::axis;
use super::data::*;
use super::report::*;
use super::stats::*;
use super::*;

/// How the runs of these tests were made: 3 of each, no binary sizes.
fn conditions() -> Conditions {
    Conditions {
        idle_seconds: 300,
        repeat: 3,
        limits: [
            (100, Duration::from_secs(300)),
            (500, Duration::from_secs(300)),
        ]
        .into(),
        binaries: BTreeMap::new(),
    }
}

#[test]
fn each_program_is_sized_once_under_the_subject_it_belongs_to() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: usize| {
        let path = dir.path().join(name);
        std::fs::write(&path, vec![0u8; bytes]).unwrap();
        path
    };
    let binaries = Binaries {
        go: file("go", 4),
        step_7: file("step-7", 7),
        step_8: file("step-8", 8),
        floor: file("floor", 1),
    };
    let sizes = binaries.sizes().unwrap();
    assert_eq!(
        sizes,
        BTreeMap::from([
            ("floor".to_string(), 1),
            ("go".to_string(), 4),
            ("step7".to_string(), 7),
            ("step8".to_string(), 8),
        ])
    );
    assert_eq!(binaries.of(Subject::FloorWorkers), binaries.floor);
    assert_eq!(binaries.of(Subject::Step8Flow), binaries.step_8);
}

/// A run that converged in `secs`, with `cpu` seconds, `rss` MiB and
/// `writes` status PUTs.
fn run(secs: f64, cpu: f64, rss: u64, writes: f64) -> Measurement {
    Measurement {
        converge: Duration::from_secs_f64(secs),
        cpu: Some(cpu),
        peak_rss_kib: Some(rss * 1024),
        requests: BTreeMap::from([("PUT foos/status".to_string(), writes)]),
        ..Measurement::default()
    }
}

fn results() -> Results {
    BTreeMap::from([
        (
            (100, Subject::Go),
            vec![
                run(20.0, 1.0, 30, 100.0),
                run(21.0, 1.2, 31, 100.0),
                run(19.0, 1.1, 32, 102.0),
            ],
        ),
        (
            (500, Subject::Go),
            vec![
                run(100.0, 5.0, 38, 500.0),
                run(101.0, 5.4, 38, 510.0),
                run(99.0, 5.2, 39, 505.0),
            ],
        ),
        (
            (100, Subject::Step8),
            vec![
                run(2.0, 0.2, 13, 100.0),
                run(3.0, 0.3, 14, 100.0),
                run(2.5, 0.25, 14, 100.0),
            ],
        ),
        (
            (500, Subject::Step8),
            vec![
                run(10.0, 1.0, 20, 500.0),
                run(12.0, 1.1, 21, 500.0),
                run(8.0, 0.9, 20, 500.0),
            ],
        ),
    ])
}

#[test]
fn a_target_is_met_when_its_ratio_as_the_page_shows_it_is_within_its_bound() {
    let mut results = results();
    let f = figures(&[100, 500], &results, &conditions(), &[]);
    // Step 8 at 500: 10 s against Go's 100 s, 1.0 s of CPU against 5.2 s,
    // 20 MiB against 38 MiB.
    assert_eq!(f["500 step8 met time-vs-go"], "yes");
    assert_eq!(f["500 step8 met cpu-vs-go"], "yes");
    assert_eq!(f["500 step8 met rss-vs-go"], "no");
    // No floor and no flow run: no verdict against them.
    assert!(!f.contains_key("500 step8 met time-vs-floor"));
    assert!(!f.contains_key("500 step8 met flow"));
    // 17.2 MiB against 38 MiB is 0.4526..., shown as 0.45: met.
    for m in results.get_mut(&(500, Subject::Step8)).unwrap() {
        m.peak_rss_kib = Some((17.2 * 1024.0) as u64);
    }
    let f = figures(&[100, 500], &results, &conditions(), &[]);
    assert_eq!(f["500 step8/go rss"], "0.45");
    assert_eq!(f["500 step8 met rss-vs-go"], "yes");
}

#[test]
fn each_figure_is_the_median_of_the_runs_with_the_lowest_and_highest() {
    let f = figures(&[100, 500], &results(), &conditions(), &[]);
    for (key, value) in [
        ("500 step8 converged", "10.0 s"),
        ("500 step8 fastest", "8.0 s"),
        ("500 step8 slowest", "12.0 s"),
        ("500 step8 cpu", "1.00 s"),
        ("500 step8 cpu-lowest", "0.90 s"),
        ("500 step8 cpu-per-foo", "2.00 ms"),
        ("500 step8 rss", "20.0 MiB"),
        ("500 step8 rss-highest", "21.0 MiB"),
        ("500 go writes", "505"),
        ("500 go PUT foos/status", "505"),
        ("500 step8 vs-go", "0.10"),
        ("500 step8/go rss", "0.53"),
    ] {
        assert_eq!(f.get(key).map(String::as_str), Some(value), "{key}");
    }
    // No subject is compared with itself, and a floor that did not run gives no ratio.
    assert_eq!(f.get("500 go vs-go"), None);
    assert_eq!(f.get("500 step8 vs-floor"), None);
}

#[test]
fn a_comparison_is_a_finding_only_when_every_run_is_on_one_side() {
    let f = figures(&[100, 500], &results(), &conditions(), &[]);
    let verdict = |key: &str| f.get(key).map(String::as_str);
    assert_eq!(
        verdict("500 step8/go converged-verdict"),
        Some("lower in every run")
    );
    let overlapping = BTreeMap::from([
        (
            (500, Subject::Step7),
            vec![
                run(9.0, 1.0, 26, 1.0),
                run(21.0, 1.0, 26, 1.0),
                run(15.0, 1.0, 26, 1.0),
            ],
        ),
        (
            (500, Subject::Step8),
            results()[&(500, Subject::Step8)].clone(),
        ),
    ]);
    let f = figures(&[500], &overlapping, &conditions(), &[]);
    assert_eq!(
        f.get("500 step8/step7 converged-verdict")
            .map(String::as_str),
        Some("inconclusive: the runs overlap")
    );
    assert_eq!(
        f.get("500 step8/step7 rss-verdict").map(String::as_str),
        Some("lower in every run")
    );
    // 0.46 s against 0.49 s is 0.5 s against 0.5 s on the page: no finding.
    let close = BTreeMap::from([
        (
            (500, Subject::Step7),
            vec![run(0.46, 1.0, 26, 1.0), run(0.46, 1.0, 26, 1.0)],
        ),
        (
            (500, Subject::Step8),
            vec![run(0.49, 1.0, 20, 1.0), run(0.49, 1.0, 20, 1.0)],
        ),
    ]);
    let f = figures(&[500], &close, &conditions(), &[]);
    assert_eq!(
        f.get("500 step7/step8 converged-verdict")
            .map(String::as_str),
        None,
        "only the pairs the page can use"
    );
    assert_eq!(
        f.get("500 step8/step7 converged-verdict")
            .map(String::as_str),
        Some("inconclusive: the runs overlap")
    );
    let single = BTreeMap::from([
        ((500, Subject::Step7), vec![run(9.0, 1.0, 26, 1.0)]),
        ((500, Subject::Step8), vec![run(8.0, 1.0, 20, 1.0)]),
    ]);
    let f = figures(&[500], &single, &conditions(), &[]);
    assert_eq!(
        f.get("500 step8/step7 converged-verdict")
            .map(String::as_str),
        Some("one run: no spread to judge by")
    );
}

#[test]
fn two_sizes_give_what_100_more_foos_cost() {
    let f = figures(&[100, 500], &results(), &conditions(), &[]);
    // Go: 1.1 s to 5.2 s of CPU, 31 to 38 MiB, 20 s to 100 s, over 400 more Foos.
    assert_eq!(
        f.get("100-500 go cpu-slope").map(String::as_str),
        Some("1025 ms")
    );
    assert_eq!(
        f.get("100-500 go rss-slope").map(String::as_str),
        Some("1.75 MiB")
    );
    assert_eq!(
        f.get("100-500 go per-foo").map(String::as_str),
        Some("0.20 s")
    );
    let table = report(&[100, 500], &results(), None, &conditions(), &[]);
    assert!(
        table.contains("| 100 → 500 | Go sample-controller | 1025 ms | 1.75 MiB | 20.0 s |"),
        "{table}"
    );
}

#[test]
fn a_run_that_did_not_converge_counts_as_slower_than_any_that_did() {
    let mut runs = results()[&(500, Subject::Step8)].clone();
    runs[0].unconverged = Some("499/500 Deployments".into());
    let s = Stats::of(&runs);
    assert_eq!(s.converged(), Some(12.0));
    assert_eq!(
        s.converge_cell(Duration::from_secs(300)),
        "12.0 s (8.0–over 300); 1 of 3 did not converge in 300 s"
    );
    runs[1].unconverged = Some("0/500 Deployments".into());
    let s = Stats::of(&runs);
    assert_eq!(s.converged(), None);
    assert!(
        s.converge_cell(Duration::from_secs(300))
            .starts_with("over 300 s")
    );
}

#[test]
fn a_size_added_to_an_earlier_run_keeps_its_runs_and_its_own_timeout() {
    let earlier = (conditions(), vec![100, 500], results());
    let added = Conditions {
        idle_seconds: 0,
        repeat: 3,
        limits: [
            (500, Duration::from_secs(600)),
            (2000, Duration::from_secs(600)),
        ]
        .into(),
        binaries: BTreeMap::new(),
    };
    let again = vec![run(9.0, 0.9, 19, 500.0)];
    let big = vec![run(40.0, 4.0, 30, 2000.0)];
    let new_runs = BTreeMap::from([
        ((500, Subject::Step8), again.clone()),
        ((2000, Subject::Step8), big.clone()),
    ]);
    let (conditions, sizes, results) = added_to(earlier, (added, vec![2000, 500], new_runs));
    assert_eq!(sizes, [100, 500, 2000]);
    // 100 is the earlier run's, with its runs and timeout; 500 was run again.
    assert_eq!(results[&(100, Subject::Go)].len(), 3);
    assert_eq!(results[&(500, Subject::Step8)].len(), again.len());
    assert!(!results.contains_key(&(500, Subject::Go)));
    assert_eq!(results[&(2000, Subject::Step8)].len(), big.len());
    assert_eq!(conditions.limit(100), Duration::from_secs(300));
    assert_eq!(conditions.limit(2000), Duration::from_secs(600));
    assert_eq!(conditions.idle_seconds, 300);
    assert_eq!(
        conditions.limit_shown(),
        "300 s (600 s at 500 Foos, 600 s at 2000 Foos)"
    );
    let data = Data::of(&sizes, &results, &conditions, &[]);
    let (read, ..) = runs_from_data(&serde_json::to_string(&data).unwrap()).unwrap();
    assert_eq!(read.limits, conditions.limits);
}

#[test]
fn runs_are_added_only_to_runs_of_the_same_programs_and_repeats() {
    let mut before = conditions();
    before.binaries = BTreeMap::from([("step8".to_string(), 100)]);
    let same = BTreeMap::from([("step8".to_string(), 100)]);
    assert!(same_programs(&before, &same, 3).is_ok());
    let rebuilt = BTreeMap::from([("step8".to_string(), 101)]);
    let refused = same_programs(&before, &rebuilt, 3).unwrap_err().to_string();
    assert!(
        refused.contains("step8 is 101 bytes, but the earlier run's was 100 bytes"),
        "{refused}"
    );
    let refused = same_programs(&before, &same, 5).unwrap_err().to_string();
    assert!(refused.contains("--repeat 3"), "{refused}");
}

#[test]
fn a_report_written_again_from_the_recorded_runs_is_the_same() {
    let mut results = results();
    results.get_mut(&(500, Subject::Go)).unwrap()[0].cached_bytes = Some(CachedBytes {
        listed: 2_000_000,
        managed_fields: 900_000,
        step_8: 550_000,
    });
    results.get_mut(&(100, Subject::Step8)).unwrap()[1].unconverged = Some("late".into());
    for (i, m) in results
        .get_mut(&(500, Subject::Step8))
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        m.timeline = Some(timeline(4.0 + i as f64));
    }
    let mut conditions = conditions();
    conditions.binaries = BTreeMap::from([("step8".to_string(), 15_728_640)]);
    let data = Data::of(&[100, 500], &results, &conditions, &[]);
    let (conditions, sizes, again) =
        runs_from_data(&serde_json::to_string(&data).unwrap()).unwrap();
    assert_eq!(sizes, [100, 500]);
    assert_eq!(conditions.limit(500), Duration::from_secs(300));
    assert_eq!(conditions.binaries["step8"], 15_728_640);
    assert_eq!(
        figures(&sizes, &again, &conditions, &[]),
        figures(&sizes, &results, &conditions, &[])
    );
    assert_eq!(
        figures(&sizes, &again, &conditions, &[])["binary step8"],
        "15.0 MiB"
    );
    let first = Conditions {
        idle_seconds: 300,
        repeat: 3,
        limits: [
            (100, Duration::from_secs(300)),
            (500, Duration::from_secs(300)),
        ]
        .into(),
        binaries: BTreeMap::new(),
    };
    assert_eq!(
        report(&sizes, &again, None, &conditions, &[]),
        report(&sizes, &results, None, &first, &[])
    );
}

/// A flow-on run's timeline whose workers were busy `busy` seconds.
fn timeline(busy: f64) -> Timeline {
    Timeline {
        last_seen: 1.25,
        last_created: busy + 0.5,
        syncs: 1000,
        sync_ms: 8.0,
        busy,
        busy_share: 0.9,
        wait_ms: 120.0,
        wait_max_ms: 2500.0,
        requests: 1500,
        request_ms: 5.0,
        request_p90_ms: 9.25,
        request_total: 7.5,
    }
}

#[test]
fn the_spread_table_sets_the_slowest_flow_run_beside_the_fastest() {
    let mut runs = vec![
        run(9.0, 1.0, 30, 0.0),
        run(6.0, 1.0, 30, 0.0),
        run(12.0, 1.0, 30, 0.0),
    ];
    for (m, busy) in runs.iter_mut().zip([8.0, 5.0, 11.0]) {
        m.timeline = Some(timeline(busy));
    }
    let results = BTreeMap::from([((500, Subject::Step8Flow), runs)]);
    let found = figures(&[500], &results, &conditions(), &[]);
    assert_eq!(found["500 step8-flow fastest-run converged"], "6.0 s");
    assert_eq!(found["500 step8-flow fastest-run busy"], "5.0 s");
    assert_eq!(found["500 step8-flow slowest-run busy"], "11.0 s");
    assert_eq!(found["500 step8-flow slowest-run busy-share"], "90 %");
    assert_eq!(found["500 step8-flow slowest-run wait-max"], "2.5 s");
    let table = report(&[500], &results, None, &conditions(), &[]);
    let spread = table
        .split("<!-- ANCHOR: spread -->\n")
        .nth(1)
        .and_then(|t| t.split("<!-- ANCHOR_END: spread -->").next())
        .unwrap();
    assert_eq!(
        spread,
        "| 500 Foos, Rust step 8, flow on | Fastest run | Slowest run |
|---|---:|---:|
| Converged | 6.0 s | 12.0 s |
| Last Foo seen | 1.2 s | 1.2 s |
| Last Deployment created | 5.5 s | 11.5 s |
| Syncs | 1000 | 1000 |
| Median sync | 8.0 ms | 8.0 ms |
| Workers busy (share of their time) | 5.0 s (90 %) | 11.0 s (90 %) |
| Wait in the queue: median (longest) | 0.1 s (2.5 s) | 0.1 s (2.5 s) |
| Requests of the syncs | 1500 | 1500 |
| Their latency: median (90th percentile) | 5.0 ms (9.2 ms) | 5.0 ms (9.2 ms) |
| Their latency summed | 7.5 s | 7.5 s |
"
    );
}

#[test]
fn a_chart_axis_steps_in_round_values_past_the_highest_point() {
    assert_eq!(axis(1.99), (0.5, 4));
    assert_eq!(axis(38.6), (10.0, 4));
    assert_eq!(axis(0.0).1, 1);
}

#[test]
fn the_report_has_each_section_the_page_includes_by_anchor() {
    let mut results = results();
    results.get_mut(&(100, Subject::Go)).unwrap()[0].idle_writes = Some(2124.0);
    results.insert(
        (500, Subject::Step8Flow),
        results[&(500, Subject::Step8)].clone(),
    );
    for m in results.get_mut(&(500, Subject::Step8Flow)).unwrap() {
        m.timeline = Some(timeline(4.0));
    }
    let table = report(&[100, 500], &results, None, &conditions(), &[]);
    for anchor in [
        "main", "cost", "memory", "idle", "flow", "spread", "requests",
    ] {
        assert!(
            table.contains(&format!("<!-- ANCHOR: {anchor} -->")),
            "{anchor}"
        );
        assert!(
            table.contains(&format!("<!-- ANCHOR_END: {anchor} -->")),
            "{anchor}"
        );
    }
}
