//! The flow recordings the step chapters replay (`{{#flow NAME}}`): the
//! flow of the JSON log a step writes with `SAMPLE_CONTROLLER_LOG_JSON` set
//! (`course::flow`), during the very run whose transcript is its
//! chapter's capture, so the replay and the text show the same run.
//!
//! `cargo xtask book outputs` runs each step with the variable pointing at
//! `target/flow-captures/NAMESPACE.log.jsonl` ([`log_path`]) and writes the
//! flow of that log to `book/src/outputs/flow/NAME.jsonl` ([`record`]) once it shows
//! what the chapter says it shows (its step.toml's `[[flow]]`). With `--check`, a new
//! recording is compared with the committed one by shape ([`differences`]),
//! as the captures are (fresh.rs).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::{Context, Result, ensure};
use regex::Regex;
use serde_json::{Map, Value};

use course::workspace::rel;

/// The recordings' directory, under `book/src/outputs`.
pub(super) const DIR: &str = "flow";

/// Where a step run in namespace `ns` writes its JSON log during `outputs`
/// (a step's scenario runs in `capture::step_namespace`).
pub(super) fn log_path(ns: &str) -> PathBuf {
    course::workspace::repo_root()
        .join("target/flow-captures")
        .join(format!("{ns}.log.jsonl"))
}

/// A flow line with what varies between runs left out: its lane and `what`,
/// the key it is about, and the fields that say what happened (resource,
/// request, status code, outcome, reason). Not its time, resourceVersion,
/// duration, worker number or delay: those change from run to run.
pub(super) fn shape(line: &Map<String, Value>) -> String {
    let text = |name: &str| match line.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let mut parts = vec![text("lane"), text("what")];
    match text("lane").as_str() {
        "watch" => parts.extend([text("resource"), text("key")]),
        "handler" => {
            parts.extend([text("resource"), text("object")]);
            if line.contains_key("reason") {
                parts.push(format!("reason={}", text("reason")));
            }
        }
        "queue" => parts.push(text("key")),
        "worker" if text("what") == "end" => {
            parts.extend([text("key"), format!("outcome={}", text("outcome"))]);
        }
        "worker" => parts.push(text("key")),
        "api" => {
            let resource = [text("resource"), text("subresource")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("/");
            parts.extend([text("method"), resource]);
            parts.push(match line.get("code") {
                Some(code) => format!("code={code}"),
                None => "no answer".into(),
            });
        }
        "event" => parts.extend([text("key"), format!("reason={}", text("reason"))]),
        _ => {}
    }
    parts.retain(|p| !p.is_empty());
    parts.join(" ")
}

/// The lines of a trace as JSON objects; an error names the first line
/// that is not one.
fn parse(name: &str, trace: &str) -> Result<Vec<Map<String, Value>>> {
    trace
        .lines()
        .enumerate()
        .map(|(n, line)| match serde_json::from_str(line) {
            Ok(Value::Object(fields)) => Ok(fields),
            _ => anyhow::bail!("{name}: line {} is not a JSON object: {line}", n + 1),
        })
        .collect()
}

/// The shapes of a trace's lines, as a set.
fn shapes(name: &str, trace: &str) -> Result<BTreeSet<String>> {
    Ok(parse(name, trace)?
        .iter()
        .map(shape)
        .filter(|s| !may_appear(name, s))
        .collect())
}

/// Lines that a race decides, in any recording: (`*`, pattern on the
/// line's shape, why). Those of one step's recording are its step.toml's
/// `[[race]]` tables.
const MAY_APPEAR: &[(&str, &str, &str)] = &[
    (
        "*",
        r"^queue merge ",
        "whether a second change arrives while the key still waits depends on timing",
    ),
    (
        "*",
        r"^api (replace_status PUT foos/status|create POST deployments) code=409$",
        "a sync that starts before the cache has its own last write: a stale resourceVersion, or a Deployment just created (step-6.md says so)",
    ),
    (
        "*",
        r"^worker end \S+ outcome=error$",
        "a sync that fails on one of the races above; the failures a chapter shows are in its step.toml's [[flow]]",
    ),
    (
        "*",
        r"^queue requeue ",
        "the retry after a failure; the ones a chapter shows are in its step.toml's [[flow]]",
    ),
];

/// The patterns of [`MAY_APPEAR`], compiled.
static MAY_APPEAR_PATTERNS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    let races = course::steps::STEPS.iter().flat_map(|step| {
        let recording = step.flow.unwrap_or_default();
        step.flow_races
            .iter()
            .map(move |(pattern, _)| (recording, *pattern))
    });
    MAY_APPEAR
        .iter()
        .map(|(recording, pattern, _)| (*recording, *pattern))
        .chain(races)
        .map(|(recording, pattern)| {
            let regex = Regex::new(pattern)
                .unwrap_or_else(|err| panic!("the race pattern {pattern:?} of {recording}: {err}"));
            (recording, regex)
        })
        .collect()
});

/// Whether a line of this shape may or may not be in recording `name`.
fn may_appear(name: &str, shape: &str) -> bool {
    MAY_APPEAR_PATTERNS.iter().any(|(recording, pattern)| {
        (*recording == "*" || *recording == name) && pattern.is_match(shape)
    })
}

/// Writes the flow of the run in namespace `ns` to `out/flow/NAME.jsonl`,
/// after checking that it shows what its step.toml's `[[flow]]` lists.
pub(super) fn record(out: &Path, name: &str, ns: &str) -> Result<()> {
    let from = log_path(ns);
    let log = std::fs::read_to_string(&from)
        .with_context(|| format!("reading the JSON log of {name}'s run, {}", rel(&from)))?;
    let trace = course::flow::from_log(&log);
    let lines = parse(name, &trace)?;
    let all: BTreeSet<String> = lines.iter().map(shape).collect();
    let shows = course::steps::STEPS
        .iter()
        .filter(|step| step.flow == Some(name))
        .flat_map(|step| step.flow_shows);
    let missing: Vec<String> = shows
        .filter(|(shape, _)| !all.contains(*shape))
        .map(|(shape, what)| format!("{what} (a line `{shape}`)"))
        .collect();
    ensure!(
        missing.is_empty(),
        "the flow of {name}'s run does not show {}; its log is in {}",
        missing.join(", "),
        rel(&from)
    );
    let dir = out.join(DIR);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, &trace).with_context(|| format!("writing {}", rel(&path)))?;
    println!("    wrote {} ({} lines)", rel(&path), lines.len());
    Ok(())
}

/// How many times a `kubectl get events` capture with a COUNT column (TYPE
/// REASON REGARDING ACTION COUNT NOTE) counts Events of `type_` and `reason`
/// about `name`. An Event recorded once has no series: its COUNT is `<none>`.
pub(super) fn events_counted(events: &str, type_: &str, reason: &str, name: &str) -> usize {
    events
        .lines()
        .map(|row| row.split_whitespace().collect::<Vec<_>>())
        .filter(|cols| cols.len() > 4 && cols[..3] == [type_, reason, name])
        .map(|cols| cols[4].parse().unwrap_or(1))
        .sum()
}

/// One reconcile of a key in a flow, from its start to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reconciled {
    /// Whether a write other than an Event succeeded in it.
    pub wrote: bool,
    /// Whether it ended without an error.
    pub ok: bool,
}

/// The reconciles (syncs) of `key` in a flow, in the order they ended.
pub(super) fn reconciles(trace: &str, key: &str) -> Result<Vec<Reconciled>> {
    // By worker: whether the reconcile running on it has written.
    let mut running = std::collections::BTreeMap::new();
    let mut ended = Vec::new();
    for line in parse("the flow", trace)? {
        let text = |field: &str| line.get(field).and_then(Value::as_str).unwrap_or_default();
        if text("key") != key {
            continue;
        }
        let worker = line.get("worker").cloned().unwrap_or_default().to_string();
        match (text("lane"), text("what")) {
            ("worker", "start") => {
                running.insert(worker, false);
            }
            ("worker", "end") => {
                if let Some(wrote) = running.remove(&worker) {
                    let ok = text("outcome") == "ok";
                    ended.push(Reconciled { wrote, ok });
                }
            }
            ("api", _) => {
                let write = ["POST", "PUT", "PATCH", "DELETE"].contains(&text("method"));
                let code = line.get("code").and_then(Value::as_u64).unwrap_or_default();
                if write && text("resource") != "events" && (200..300).contains(&code) {
                    running.entry(worker).and_modify(|w| *w = true);
                }
            }
            _ => {}
        }
    }
    Ok(ended)
}

/// What a new recording says that the committed one does not, or the other
/// way round, by shape; `None` if they show the same.
pub(super) fn differences(name: &str, committed: &str, fresh: &str) -> Result<Option<String>> {
    let (was, now) = (shapes(name, committed)?, shapes(name, fresh)?);
    let mut report = Vec::new();
    for gone in was.difference(&now) {
        report.push(format!("  - {gone}"));
    }
    for new in now.difference(&was) {
        report.push(format!("  + {new}"));
    }
    Ok((!report.is_empty()).then(|| {
        format!(
            "flow lines only in the committed recording (-) or only in the new run (+), by shape:\n{}",
            report.join("\n")
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_race_of_a_steps_toml_excuses_its_own_recording_only() {
        let step5 = "watch update deployments book-step5/taken";
        assert!(may_appear("step-5", step5));
        assert!(!may_appear("step-6", step5));
        assert!(
            may_appear("step-6", "queue merge book-step6/a"),
            "one for all recordings"
        );
        assert!(!may_appear(
            "step-5",
            "watch update deployments book-step5/web"
        ));
    }

    fn line(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_shape_keeps_what_happened_and_drops_what_varies() {
        let a = line(
            r#"{"t":1.5,"lane":"api","what":"create","method":"POST","namespace":"ns","resource":"deployments","key":"ns/a","worker":1,"code":201,"ms":3.2}"#,
        );
        let b = line(
            r#"{"t":9.1,"lane":"api","what":"create","method":"POST","namespace":"ns","resource":"deployments","key":"ns/a","worker":0,"code":201,"ms":7.0}"#,
        );
        assert_eq!(shape(&a), "api create POST deployments code=201");
        assert_eq!(shape(&a), shape(&b));
        let refused = line(
            r#"{"t":1,"lane":"handler","what":"ignore","resource":"deployments","object":"ns/d","reason":"not controlled by a Foo"}"#,
        );
        assert_eq!(
            shape(&refused),
            "handler ignore deployments ns/d reason=not controlled by a Foo"
        );
        let watch = line(
            r#"{"t":1,"lane":"watch","what":"update","resource":"foos","key":"ns/a","rv":"12"}"#,
        );
        assert_eq!(shape(&watch), "watch update foos ns/a");
    }

    #[test]
    fn a_recording_that_lost_a_kind_of_line_is_stale_and_a_race_is_not() {
        let committed = concat!(
            r#"{"t":0.1,"lane":"queue","what":"add","key":"ns/a"}"#,
            "\n",
            r#"{"t":0.2,"lane":"event","what":"Normal","key":"ns/a","reason":"Synced","note":"x"}"#,
            "\n",
        );
        let same = concat!(
            r#"{"t":0.3,"lane":"queue","what":"add","key":"ns/a"}"#,
            "\n",
            r#"{"t":0.3,"lane":"queue","what":"merge","key":"ns/a"}"#,
            "\n",
            r#"{"t":0.5,"lane":"event","what":"Normal","key":"ns/a","reason":"Synced","note":"y"}"#,
            "\n",
        );
        assert_eq!(differences("step-5", committed, same).unwrap(), None);
        let reworded = committed.replace("Synced", "SyncedOK");
        let report = differences("step-5", committed, &reworded)
            .unwrap()
            .unwrap();
        assert!(
            report.contains("- event Normal ns/a reason=Synced"),
            "{report}"
        );
        assert!(
            report.contains("+ event Normal ns/a reason=SyncedOK"),
            "{report}"
        );
        assert!(differences("step-5", committed, "not json\n").is_err());
    }

    #[test]
    fn a_late_status_write_to_step_5s_foreign_deployment_is_a_race_elsewhere_a_difference() {
        let late = "watch update deployments book-step5/taken";
        assert!(may_appear("step-5", late));
        assert!(!may_appear(
            "step-5",
            "watch update deployments book-step5/web-nginx"
        ));
        assert!(!may_appear("step-6", late));
    }

    #[test]
    fn events_are_counted_by_type_reason_and_object_and_once_is_one() {
        let events = "$ kubectl get events\n\
            TYPE      REASON              REGARDING   ACTION   COUNT    NOTE\n\
            Warning   ErrResourceExists   blocked     Sync     14       Resource exists\n\
            Normal    Synced              good        Sync     2        Foo synced successfully\n\
            Normal    Synced              other       Sync     <none>   Foo synced successfully\n";
        assert_eq!(events_counted(events, "Normal", "Synced", "good"), 2);
        assert_eq!(events_counted(events, "Normal", "Synced", "other"), 1);
        assert_eq!(
            events_counted(events, "Warning", "ErrResourceExists", "blocked"),
            14
        );
        assert_eq!(events_counted(events, "Warning", "Synced", "good"), 0);
        assert_eq!(events_counted(events, "Normal", "Synced", "blocked"), 0);
    }

    #[test]
    fn a_reconcile_wrote_if_a_write_other_than_an_event_succeeded_in_it() {
        let reconcile = |worker: u8, request: &str, outcome: &str| {
            format!(
                "{{\"lane\":\"worker\",\"what\":\"start\",\"key\":\"ns/good\",\"worker\":{worker}}}\n\
                 {request}\
                 {{\"lane\":\"worker\",\"what\":\"end\",\"key\":\"ns/good\",\"worker\":{worker},\"outcome\":\"{outcome}\"}}\n"
            )
        };
        let request = |method: &str, resource: &str, code: u16| {
            format!(
                "{{\"lane\":\"api\",\"method\":\"{method}\",\"resource\":\"{resource}\",\"key\":\"ns/good\",\"worker\":0,\"code\":{code}}}\n"
            )
        };
        let trace = [
            reconcile(0, &request("PATCH", "foos", 200), "ok"),
            reconcile(0, "", "ok"),
            reconcile(0, &request("POST", "events", 201), "ok"),
            reconcile(0, &request("GET", "deployments", 200), "ok"),
            reconcile(0, &request("POST", "deployments", 409), "error"),
            reconcile(0, &request("POST", "deployments", 201), "error"),
            // Another Foo's reconcile on the same worker is not this one's.
            reconcile(0, "", "ok").replace("ns/good", "ns/other"),
        ]
        .concat();
        let wrote = |wrote, ok| Reconciled { wrote, ok };
        assert_eq!(
            reconciles(&trace, "ns/good").unwrap(),
            [
                wrote(true, true),
                wrote(false, true),
                wrote(false, true),
                wrote(false, true),
                wrote(false, false),
                wrote(true, false),
            ]
        );
        assert!(reconciles("not json\n", "ns/good").is_err());
    }

    #[test]
    fn a_recording_must_show_what_its_chapter_says() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let ns = format!("recording-test-{}", std::process::id());
        let log = log_path(&ns);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        // A sync of step 4's flaky Foo, as the JSON log has it.
        let sync = |message: &str| {
            format!(
                r#"{{"timestamp":"   0.1s","level":"INFO","message":"{message}","target":"kube_runtime::controller","span":{{"object.ref":"Foo.v1alpha1.samplecontroller.k8s.io/flaky.book-step4","name":"reconciling object"}},"spans":[]}}"#
            )
        };
        let failed = r#"{"timestamp":"   0.1s","level":"ERROR","message":"m","objectRef":"book-step4/flaky","error":"x","retry_in":"5ms","target":"sample_controller::workqueue","span":{"object.ref":"Foo.v1alpha1.samplecontroller.k8s.io/flaky.book-step4","name":"reconciling object"},"spans":[{"object.ref":"Foo.v1alpha1.samplecontroller.k8s.io/flaky.book-step4","name":"reconciling object"}]}"#;
        // step 4's run without its failure.
        std::fs::write(&log, [sync("new"), sync("close")].join("\n")).unwrap();
        let err = record(&dir, "step-4", &ns).unwrap_err().to_string();
        assert!(err.contains("the failed sync requeued"), "{err}");
        assert!(!dir.join("flow/step-4.jsonl").exists());
        std::fs::write(
            &log,
            [sync("new"), failed.to_string(), sync("close")].join("\n"),
        )
        .unwrap();
        record(&dir, "step-4", &ns).unwrap();
        let recorded = std::fs::read_to_string(dir.join("flow/step-4.jsonl")).unwrap();
        assert!(recorded.contains(r#""what":"requeue""#), "{recorded}");
        std::fs::remove_file(&log).unwrap();
    }

    #[test]
    fn every_committed_recording_shows_what_its_step_toml_says() {
        let dir = course::workspace::repo_root()
            .join("book/src/outputs")
            .join(DIR);
        for step in course::steps::drawn() {
            let name = step.flow.unwrap();
            let trace = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).unwrap();
            let all: BTreeSet<String> = parse(name, &trace).unwrap().iter().map(shape).collect();
            assert!(!step.flow_shows.is_empty(), "{name} lists nothing it shows");
            for (shape, what) in step.flow_shows {
                assert!(
                    all.contains(*shape),
                    "{name} does not show {what}: `{shape}`"
                );
            }
        }
    }
}
