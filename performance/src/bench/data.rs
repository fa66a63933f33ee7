//! The run as data, `NAME.json`: how the runs were made, every figure and
//! every run, written by a run and read back by `--report-only` and `--add`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};

use super::report::figures;
use super::{CachedBytes, Conditions, LinesOfCode, Measurement, Results, Subject, WORKERS, writes};
use crate::timeline::Timeline;

/// `NAME.json`: how the runs were made, every figure and every run. It is
/// written through a `serde_json::Value`, whose objects keep their keys in
/// alphabetical order, as the file has had them since its first run.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Data {
    pub(super) written_by: String,
    pub(super) conditions: DataConditions,
    pub(super) figures: BTreeMap<String, String>,
    pub(super) runs: Vec<RunRecord>,
}

impl Data {
    /// What a run (or `--report-only`) writes.
    pub(super) fn of(
        sizes: &[usize],
        results: &Results,
        conditions: &Conditions,
        lines: &[LinesOfCode],
    ) -> Data {
        Data {
            written_by: "cargo xtask bench".into(),
            conditions: DataConditions {
                sizes: sizes.to_vec(),
                repeat: conditions.repeat,
                timeout_seconds: conditions
                    .limit(sizes.first().copied().unwrap_or(0))
                    .as_secs(),
                timeout_seconds_by_size: (conditions.limits.iter())
                    .map(|(n, l)| (n.to_string(), l.as_secs()))
                    .collect(),
                idle_seconds: conditions.idle_seconds,
                workers: WORKERS,
                binary_bytes: conditions.binaries.clone(),
            },
            figures: figures(sizes, results, conditions, lines),
            runs: (results.iter())
                .flat_map(|(&(foos, subject), runs)| {
                    let record = move |(i, m)| RunRecord::of(foos, subject, i + 1, m);
                    runs.iter().enumerate().map(record)
                })
                .collect(),
        }
    }
}

/// How the runs were made ([`Conditions`], as recorded).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct DataConditions {
    pub(super) sizes: Vec<usize>,
    pub(super) repeat: usize,
    /// The smallest size's; every size's before `--add` could differ them.
    pub(super) timeout_seconds: u64,
    #[serde(default)]
    pub(super) timeout_seconds_by_size: BTreeMap<String, u64>,
    pub(super) idle_seconds: u64,
    pub(super) workers: usize,
    /// Recorded since `--add` checks it.
    #[serde(default)]
    pub(super) binary_bytes: BTreeMap<String, u64>,
}

/// One run ([`Measurement`], as recorded).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct RunRecord {
    pub(super) subject: String,
    pub(super) foos: usize,
    pub(super) round: usize,
    pub(super) converged: bool,
    pub(super) not_converged: Option<String>,
    pub(super) seconds: f64,
    pub(super) cpu_seconds: Option<f64>,
    pub(super) peak_rss_kib: Option<u64>,
    pub(super) rss_anon_kib_at_end: Option<u64>,
    pub(super) rss_file_kib_at_end: Option<u64>,
    pub(super) writes: f64,
    #[serde(default)]
    pub(super) requests: BTreeMap<String, f64>,
    pub(super) idle_writes: Option<f64>,
    pub(super) flow_lines: Option<usize>,
    pub(super) timeline: Option<Timeline>,
    pub(super) cached_bytes: Option<CachedBytes>,
}

impl RunRecord {
    /// Run `round` of `subject` at `foos` Foos.
    pub(super) fn of(foos: usize, subject: Subject, round: usize, m: &Measurement) -> RunRecord {
        RunRecord {
            subject: subject.key().into(),
            foos,
            round,
            converged: m.unconverged.is_none(),
            not_converged: m.unconverged.clone(),
            seconds: m.converge.as_secs_f64(),
            cpu_seconds: m.cpu,
            peak_rss_kib: m.peak_rss_kib,
            rss_anon_kib_at_end: m.rss_at_end_kib.map(|r| r.0),
            rss_file_kib_at_end: m.rss_at_end_kib.map(|r| r.1),
            writes: writes(&m.requests),
            requests: m.requests.clone(),
            idle_writes: m.idle_writes,
            flow_lines: m.flow_lines,
            timeline: m.timeline,
            cached_bytes: m.cached_bytes,
        }
    }

    /// What the run measured, as [`RunRecord::of`] recorded it.
    pub(super) fn measurement(self) -> Measurement {
        Measurement {
            converge: Duration::from_secs_f64(self.seconds),
            cpu: self.cpu_seconds,
            peak_rss_kib: self.peak_rss_kib,
            rss_at_end_kib: self.rss_anon_kib_at_end.zip(self.rss_file_kib_at_end),
            requests: self.requests,
            idle_writes: self.idle_writes,
            flow_lines: self.flow_lines,
            timeline: self.timeline,
            cached_bytes: self.cached_bytes,
            unconverged: self.not_converged,
        }
    }
}

/// The conditions, sizes and runs a data file recorded.
pub(super) fn runs_from_data(text: &str) -> Result<(Conditions, Vec<usize>, Results)> {
    let data: Data = serde_json::from_str(text)?;
    let given = data.conditions;
    let limit = |n: usize| given.timeout_seconds_by_size.get(&n.to_string()).copied();
    let conditions = Conditions {
        idle_seconds: given.idle_seconds,
        repeat: given.repeat,
        limits: (given.sizes.iter())
            .map(|&n| {
                (
                    n,
                    Duration::from_secs(limit(n).unwrap_or(given.timeout_seconds)),
                )
            })
            .collect(),
        binaries: given.binary_bytes,
    };
    let mut results = Results::new();
    for run in data.runs {
        let subject = Subject::RUN_ORDER
            .into_iter()
            .find(|s| s.key() == run.subject)
            .with_context(|| format!("unknown subject {:?}", run.subject))?;
        results
            .entry((run.foos, subject))
            .or_default()
            .push(run.measurement());
    }
    Ok((conditions, given.sizes, results))
}
