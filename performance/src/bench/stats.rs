//! The runs of one subject and size summed up: medians with their lowest
//! and highest run, ratios of medians, and whether a comparison is a
//! finding or inconclusive.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::{Measurement, Results, Subject, writes};
use crate::measure::{median, spread};

/// A measure over a subject's runs at one size: the median, the lowest and
/// the highest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Spread {
    pub(super) mid: f64,
    pub(super) low: f64,
    pub(super) high: f64,
    /// How many runs it is of.
    pub(super) runs: usize,
}

impl Spread {
    /// Of `values`; `None` if there are none.
    pub(super) fn of(values: Vec<f64>) -> Option<Spread> {
        let runs = values.len();
        let (mid, low, high) = spread(values)?;
        Some(Spread {
            mid,
            low,
            high,
            runs,
        })
    }

    /// `median unit (lowest–highest)`, or the median alone when every run
    /// gave the same.
    pub(super) fn shown(&self, decimals: usize, unit: &str) -> String {
        let Spread { mid, low, high, .. } = *self;
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        if format!("{low:.decimals$}") == format!("{high:.decimals$}") {
            format!("{mid:.decimals$}{unit}")
        } else {
            format!("{mid:.decimals$}{unit} ({low:.decimals$}–{high:.decimals$})")
        }
    }
}

/// A subject's runs at one size, summed up.
pub(super) struct Stats {
    /// Seconds to converge, a run that did not counted as infinitely long.
    pub(super) converge: Option<Spread>,
    /// How many runs did not converge.
    pub(super) unconverged: usize,
    /// CPU seconds from the Foos' creation to convergence.
    pub(super) cpu: Option<Spread>,
    /// Peak RSS, MiB.
    pub(super) rss: Option<Spread>,
    /// API writes while converging.
    pub(super) writes: Option<Spread>,
    /// Writes while idle (the first run).
    pub(super) idle: Option<f64>,
    /// Resident anonymous and file-backed memory at the end, MiB, medians.
    pub(super) anon: Option<f64>,
    pub(super) file: Option<f64>,
    /// Lines of the flow (flow-on subjects), median.
    pub(super) flow_lines: Option<f64>,
}

impl Stats {
    pub(super) fn of(runs: &[Measurement]) -> Stats {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let middle = |values: Vec<f64>| Spread::of(values).map(|s| s.mid);
        Stats {
            converge: Spread::of(
                runs.iter()
                    .map(|m| match m.unconverged {
                        None => m.converge.as_secs_f64(),
                        Some(_) => f64::INFINITY,
                    })
                    .collect(),
            ),
            unconverged: runs.iter().filter(|m| m.unconverged.is_some()).count(),
            cpu: Spread::of(runs.iter().filter_map(|m| m.cpu).collect()),
            rss: Spread::of(
                runs.iter()
                    .filter_map(|m| m.peak_rss_kib)
                    .map(mib)
                    .collect(),
            ),
            writes: Spread::of(runs.iter().map(|m| writes(&m.requests)).collect()),
            idle: runs.iter().find_map(|m| m.idle_writes),
            anon: middle(
                runs.iter()
                    .filter_map(|m| m.rss_at_end_kib)
                    .map(|r| mib(r.0))
                    .collect(),
            ),
            file: middle(
                runs.iter()
                    .filter_map(|m| m.rss_at_end_kib)
                    .map(|r| mib(r.1))
                    .collect(),
            ),
            flow_lines: middle(
                runs.iter()
                    .filter_map(|m| m.flow_lines)
                    .map(|l| l as f64)
                    .collect(),
            ),
        }
    }

    /// The median convergence time, if the median run converged.
    pub(super) fn converged(&self) -> Option<f64> {
        self.converge.map(|s| s.mid).filter(|m| m.is_finite())
    }

    /// `10.5 s (8.7–11.8)`, `over 300 s`, and how many runs did not converge.
    pub(super) fn converge_cell(&self, limit: Duration) -> String {
        let Some(c) = self.converge else {
            return "-".into();
        };
        let over = format!("over {}", limit.as_secs());
        let mut cell = if !c.mid.is_finite() {
            format!("{over} s")
        } else if format!("{:.1}", c.low) == format!("{:.1}", c.high) {
            format!("{:.1} s", c.mid)
        } else {
            let high = if c.high.is_finite() {
                format!("{:.1}", c.high)
            } else {
                over
            };
            format!("{:.1} s ({:.1}–{high})", c.mid, c.low)
        };
        if self.unconverged > 0 {
            let _ = write!(
                cell,
                "; {} of {} did not converge in {} s",
                self.unconverged,
                c.runs,
                limit.as_secs()
            );
        }
        cell
    }
}

/// Each subject's [`Stats`] at each size.
pub(super) fn stats(results: &Results) -> BTreeMap<(usize, Subject), Stats> {
    results
        .iter()
        .map(|(key, runs)| (*key, Stats::of(runs)))
        .collect()
}

/// The median count of each request over `runs`, by `VERB resource`.
pub(super) fn request_medians(runs: &[Measurement]) -> BTreeMap<String, f64> {
    let mut keys: Vec<&String> = runs.iter().flat_map(|m| m.requests.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let mut values: Vec<f64> = runs
                .iter()
                .map(|m| m.requests.get(k).copied().unwrap_or(0.0))
                .collect();
            Some((k.clone(), median(&mut values)?))
        })
        .collect()
}

/// `a / b`, two decimals, if both are there.
pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(format!("{:.2}", a / b)),
        _ => None,
    }
}

/// Whether every run of `a` was below every run of `b`, every one above, or
/// neither: a difference of medians that the runs' spread covers is no
/// finding. Values are compared as shown, to `decimals` places, so that a
/// verdict never contradicts the figures beside it.
pub(super) fn verdict(a: &Spread, b: &Spread, decimals: i32) -> &'static str {
    let shown = |x: f64| (x * 10f64.powi(decimals)).round();
    if a.runs < 2 || b.runs < 2 {
        "one run: no spread to judge by"
    } else if shown(a.high) < shown(b.low) {
        "lower in every run"
    } else if shown(a.low) > shown(b.high) {
        "higher in every run"
    } else {
        "inconclusive: the runs overlap"
    }
}
