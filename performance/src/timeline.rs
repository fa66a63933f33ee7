//! Where a benchmark run's time went, read from the flow of its JSON log
//! (`course::flow`): when the watch showed the Foos, how long their
//! keys waited in the queue, how busy the workers were, and how long the
//! requests of the syncs took. `cargo xtask bench` keeps one for each run
//! with the flow on, so that the page can set a slow run beside a fast one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::measure::median;

/// One flow-on run's time, taken apart. Times are seconds from the moment
/// the benchmark began to create the Foos.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// When the watch showed the last Foo (its first event).
    pub last_seen: f64,
    /// When the last Deployment was created.
    pub last_created: f64,
    /// How many syncs ran (a Foo's own writes queue it again).
    pub syncs: usize,
    /// The median sync, in milliseconds.
    pub sync_ms: f64,
    /// The workers' busy time, summed over the workers.
    pub busy: f64,
    /// That busy time's share of what the workers could have given from
    /// the first sync to the last Deployment's creation.
    pub busy_share: f64,
    /// The median and longest wait of a Foo's key between its first add
    /// to the queue and its first sync, in milliseconds.
    pub wait_ms: f64,
    pub wait_max_ms: f64,
    /// The requests the syncs made, their median and 90th-percentile
    /// latency in milliseconds, and their latencies summed.
    pub requests: usize,
    pub request_ms: f64,
    pub request_p90_ms: f64,
    pub request_total: f64,
}

impl Timeline {
    /// Reads the flow `flow` (one JSON object a line), whose clock (`t`)
    /// read `start` when the Foos' creation began; `workers` is how many
    /// syncs the step runs at once. `None` if no Deployment was created.
    pub fn of(flow: &str, start: f64, workers: usize) -> Option<Timeline> {
        let mut seen = std::collections::HashMap::new();
        let mut added = std::collections::HashMap::new();
        let mut waits = Vec::new();
        let mut syncs = Vec::new();
        let mut latencies = Vec::new();
        let mut first_take: Option<f64> = None;
        let mut last_created: Option<f64> = None;
        for line in flow.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let text = |field: &str| record.get(field).and_then(Value::as_str);
            let number = |field: &str| record.get(field).and_then(Value::as_f64);
            let (Some(t), Some(lane), Some(what)) = (number("t"), text("lane"), text("what"))
            else {
                continue;
            };
            let key = text("key").map(String::from);
            match (lane, what, key) {
                ("watch", _, Some(key)) if text("resource") == Some("foos") => {
                    seen.entry(key).or_insert(t);
                }
                ("queue", "add", Some(key)) => {
                    added.entry(key).or_insert(Some(t));
                }
                ("queue", "take", Some(key)) => {
                    first_take.get_or_insert(t);
                    if let Some(at) = added.get_mut(&key).and_then(Option::take) {
                        waits.push((t - at) * 1000.0);
                    }
                }
                ("worker", "end", _) => syncs.extend(number("ms")),
                ("api", what, Some(_)) if record.get("worker").is_some() => {
                    latencies.extend(number("ms"));
                    if what == "create" && text("resource") == Some("deployments") {
                        last_created = Some(t);
                    }
                }
                _ => {}
            }
        }
        let last_created = last_created?;
        let first_take = first_take?;
        let busy = syncs.iter().sum::<f64>() / 1000.0;
        let window = (last_created - first_take) * workers as f64;
        let request_total = latencies.iter().sum::<f64>() / 1000.0;
        let requests = latencies.len();
        latencies.sort_by(f64::total_cmp);
        let p90 = latencies
            .get((requests * 9).div_ceil(10).saturating_sub(1))
            .copied()
            .unwrap_or(0.0);
        Some(Timeline {
            last_seen: seen.values().copied().fold(f64::MIN, f64::max) - start,
            last_created: last_created - start,
            syncs: syncs.len(),
            sync_ms: median(&mut syncs).unwrap_or(0.0),
            busy,
            busy_share: if window > 0.0 { busy / window } else { 0.0 },
            wait_max_ms: waits.iter().copied().fold(0.0, f64::max),
            wait_ms: median(&mut waits).unwrap_or(0.0),
            requests,
            request_ms: median(&mut latencies).unwrap_or(0.0),
            request_p90_ms: p90,
            request_total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two Foos, one worker: `b` waits while `a` syncs.
    const FLOW: &str = r#"{"lane":"watch","resource":"foos","key":"ns/a","t":1.0,"what":"apply"}
{"lane":"queue","key":"ns/a","t":1.0,"what":"add"}
{"lane":"watch","resource":"foos","key":"ns/b","t":1.1,"what":"apply"}
{"lane":"queue","key":"ns/b","t":1.1,"what":"add"}
{"lane":"queue","key":"ns/a","t":1.2,"what":"take","worker":0}
{"lane":"api","key":"ns/a","worker":0,"resource":"foos","t":1.3,"what":"patch_status","ms":100.0}
{"lane":"api","key":"ns/a","worker":0,"resource":"deployments","t":1.4,"what":"create","ms":100.0}
{"lane":"worker","key":"ns/a","t":1.4,"what":"end","ms":200.0}
{"lane":"watch","resource":"foos","key":"ns/a","t":1.45,"what":"apply"}
{"lane":"queue","key":"ns/a","t":1.45,"what":"add"}
{"lane":"queue","key":"ns/b","t":1.5,"what":"take","worker":0}
{"lane":"api","resource":"events","t":1.55,"what":"create","ms":50.0}
{"lane":"api","key":"ns/b","worker":0,"resource":"foos","t":1.6,"what":"patch_status","ms":100.0}
{"lane":"api","key":"ns/b","worker":0,"resource":"deployments","t":1.9,"what":"create","ms":300.0}
{"lane":"worker","key":"ns/b","t":1.9,"what":"end","ms":400.0}
not a record
"#;

    #[test]
    fn a_flow_is_taken_apart_into_watch_queue_workers_and_requests() {
        let t = Timeline::of(FLOW, 0.5, 1).expect("a timeline");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(t.last_seen, 0.6), "{t:?}");
        assert!(close(t.last_created, 1.4), "{t:?}");
        assert_eq!((t.syncs, t.requests), (2, 4));
        assert!(close(t.sync_ms, 300.0), "{t:?}");
        assert!(close(t.busy, 0.6), "{t:?}");
        // 0.6 s busy of the 0.7 s from the first take to the last create.
        assert!(close(t.busy_share, 0.6 / 0.7), "{t:?}");
        // a waited 200 ms, b 400 ms; a's second add is not a first wait.
        assert!(
            close(t.wait_ms, 300.0) && close(t.wait_max_ms, 400.0),
            "{t:?}"
        );
        assert!(
            close(t.request_ms, 100.0) && close(t.request_p90_ms, 300.0),
            "{t:?}"
        );
        assert!(close(t.request_total, 0.6), "{t:?}");
    }

    #[test]
    fn a_flow_without_a_created_deployment_has_no_timeline() {
        let flow = FLOW
            .lines()
            .filter(|l| !l.contains("deployments"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(Timeline::of(&flow, 0.0, 2), None);
    }
}
