//! `cargo xtask book outputs --check`: whether a committed capture still says
//! what a new run of its scenario prints.
//!
//! Two runs of a scenario never print the same bytes: durations, ages, UIDs,
//! resourceVersions and generated names change, kubectl pads its columns to
//! fit them, and how many times a step logs "Successfully synced" while a
//! Deployment rolls out, or where a retry's line falls between two actions,
//! depends on timing. What must not change is what a reader is shown:
//!
//! - the scenario's own lines (`$ …` and `>>> …`: what was run), in order;
//! - every other line's *shape* (the line with what varies replaced by a
//!   placeholder), as a set: a module path that moved, a message reworded, a
//!   log line that is new or gone, a column kubectl no longer prints.
//!
//! Order and count of the step's own lines are not compared: those race with
//! the scenario's actions, and the chapters say so where it shows. A line that
//! only a race prints (a 409 retried, say) may be missing from either side
//! where [`MAY_APPEAR_IN`] allows it for that capture, and nowhere else.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

/// What varies between runs, and what stands for it.
static VARYING: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // RFC 3339 times (Events, Leases, conditions).
        (
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)",
            "<time>",
        ),
        // UIDs.
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uid>",
        ),
        // Generated names: a pod's `-<template hash>-<suffix>`, a
        // ReplicaSet's `-<template hash>`.
        // (Kubernetes draws both from an alphabet without vowels.)
        (
            r"-[bcdfghjklmnpqrstvwxz2456789]{8,10}-[bcdfghjklmnpqrstvwxz2456789]{5}\b",
            "-<hash>-<id>",
        ),
        (r"-[bcdfghjklmnpqrstvwxz2456789]{9,10}\b", "-<hash>"),
        // resourceVersions (step 3 prints `resourceVersion 12 -> 15`).
        (
            r#"(resource_?[vV]ersion[=:"\s(]*(Some\()?"?)\d+"#,
            "${1}<rv>",
        ),
        (r"(<rv> -> )\d+", "${1}<rv>"),
        // A binary's build ID.
        (r"BuildID\[sha1\]=[0-9a-f]+", "BuildID[sha1]=<id>"),
        // Durations and ages: `1.28s`, `350.2µs`, `3m2s`, `45s`, `2d`;
        // kubectl's `(x3 over 5s)`.
        (
            r"\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h|d)(\d+(\.\d+)?(ms|s|m|h))*\b",
            "<dur>",
        ),
        (r"\b\d+(\.\d+)? (ns|µs|ms|s)\b", "<dur>"),
        (r"\(x\d+ over <dur>\)", "(x<n> over <dur>)"),
        // Process IDs.
        (r"\b(pid|PID)[ =]\d+", "$1 <pid>"),
        // A test control plane's directory, and the namespaces a check creates.
        (r"/tmp/sample-controller-rs-\d+-[0-9A-Za-z]+/", "<tmp>/"),
        (r"\bcheck-([a-z0-9]+)-\d+-\d+\b", "check-$1-<n>"),
        // A panicking thread's ID.
        (r"thread '([^']*)' \(\d+\)", "thread '$1' (<tid>)"),
        // The namespaces a failed check leaves, in the order its scenarios ended.
        (
            r"kept for you to look at: [^(]*\(",
            "kept for you to look at: <namespaces> (",
        ),
    ]
    .into_iter()
    .map(|(pattern, with)| (Regex::new(pattern).expect("a valid pattern"), with))
    .collect()
});

/// What else varies in one capture: (file, pattern, placeholder, why).
pub(super) const VARYING_IN: &[(&str, &str, &str, &str)] = &[
    (
        "check-step-8-ordinary.txt",
        r#"\(\d+, Some\("\d+"\)\) became \(\d+, Some\("\d+"\)\)"#,
        "(<count>, Some(<rv>)) became (<count>, Some(<rv>))",
        "the Synced Events counted and the Deployment's resourceVersion, as many as the timing allowed",
    ),
    (
        "check-step-8-ordinary.txt",
        r"^\s+<time>\s+[A-Z]+ .*$",
        "<a line the program printed>",
        "which of its last lines a failure quotes depends on what the program was doing when it failed",
    ),
    (
        "check-step-8-ordinary.txt",
        r"happened: (still running <dur> after SIGTERM, so it was killed|it exited with signal: 15 \(SIGTERM\)),",
        "happened: <no clean exit>,",
        "a SIGTERM before kube's Controller installed its handler kills it, one after leaves it running: both fail the behaviour (hardening.md says why)",
    ),
    (
        "check-step-8-ordinary.txt",
        r"\d+ more Event\(s\) about the Foos",
        "<n> more Event(s) about the Foos",
        "a Synced Event per reconcile, and how many reconciles a restart makes depends on when its watches deliver",
    ),
    (
        "step-7-events.txt",
        r"(Sync\s+)\d+",
        "${1}<count>",
        "an Event's count is one per sync or retry above it, as many as the timing allowed",
    ),
    (
        "step-8-events.txt",
        r"(Sync\s+)\d+",
        "${1}<count>",
        "an Event's count is one per reconcile that wrote (Synced) or was refused (Warning), as many as the timing allowed; `outputs` checks each against the same run's flow (capture.rs events_follow_the_flow)",
    ),
    (
        "metrics.txt",
        r"^([a-z_]+(\{[^}]*\})?) \S+$",
        "$1 <value>",
        "a sample's value: how many reconciles, and how long each took",
    ),
    (
        "musl-binary.txt",
        r"^\d+ (target/)",
        "<size> $1",
        "the binary's size in bytes changes with every change to the code",
    ),
    (
        "watch-list.txt",
        r"\b\d+ bytes,",
        "<n> bytes,",
        "the size of a watch-list's events: resourceVersions, UIDs and times differ in length, and gzip's output with them",
    ),
    (
        "watch-list.txt",
        r"^(Go sample-controller \S+\s+foos: WATCH) [12]\b",
        "$1 <1 or 2>",
        "client-go's Foo informer sometimes starts its WATCH twice within the second measured (step-2.md says so)",
    ),
];

/// Lines that may or may not appear in one capture, as a race allows:
/// (file, pattern on the line's shape, why). Each is a race Go's program has
/// too, and the capture's chapter says so beside it.
pub(super) const MAY_APPEAR_IN: &[(&str, &str, &str)] = &[
    (
        "step-6.txt",
        RETRIED_CONFLICT,
        "a sync that runs before the cache has its own last status write sends a stale resourceVersion (step-6.md says so)",
    ),
    (
        "step-7.txt",
        RETRIED_CONFLICT,
        "as in step 6: a status PUT with a resourceVersion the cache has not caught up with (step-6.md says so)",
    ),
    (
        "step-6.txt",
        RETRIED_ALREADY_EXISTS,
        "the Foo's own status write can start a sync before the Deployment watch has delivered the Deployment just created (step-6.md says so)",
    ),
    (
        "step-7.txt",
        RETRIED_ALREADY_EXISTS,
        "as in step 6: a sync that starts before the cache has the Deployment just created (step-6.md says so)",
    ),
];

/// A create that failed with 409 because the Deployment cache had not yet seen
/// the Deployment an earlier sync created, and was retried.
const RETRIED_ALREADY_EXISTS: &str = r#"Error syncing; requeuing for later retry objectRef=\S+ error=ApiError: deployments\.apps "\S+" already exists: AlreadyExists \("#;

/// A sync that failed with 409 because the cached resourceVersion was stale,
/// and was retried.
const RETRIED_CONFLICT: &str = r"Error syncing; requeuing for later retry objectRef=\S+ error=ApiError: Operation cannot be fulfilled on foos\.samplecontroller\.k8s\.io \S+: the object has been modified; .*: Conflict \(";

/// The patterns of [`MAY_APPEAR_IN`], compiled.
static MAY_APPEAR_IN_FILES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    MAY_APPEAR_IN
        .iter()
        .map(|(file, pattern, _)| (*file, Regex::new(pattern).expect("a valid pattern")))
        .collect()
});

/// Whether a line's shape is one that capture `file` may or may not show.
fn may_appear(file: &str, shape: &str) -> bool {
    MAY_APPEAR_IN_FILES
        .iter()
        .any(|(f, pattern)| *f == file && pattern.is_match(shape))
}

/// The per-file patterns of [`VARYING_IN`], compiled.
static VARYING_IN_FILES: LazyLock<Vec<(&'static str, Regex, &'static str)>> = LazyLock::new(|| {
    VARYING_IN
        .iter()
        .map(|(file, pattern, with, _)| {
            (*file, Regex::new(pattern).expect("a valid pattern"), *with)
        })
        .collect()
});

/// A line of capture `file` with what varies between runs replaced, and its
/// runs of spaces (kubectl's padding) made one.
pub(super) fn shape(file: &str, line: &str) -> String {
    let mut line = line.trim_end().to_string();
    for (pattern, with) in VARYING.iter() {
        line = pattern.replace_all(&line, *with).into_owned();
    }
    for (_, pattern, with) in VARYING_IN_FILES.iter().filter(|(f, ..)| *f == file) {
        line = pattern.replace_all(&line, *with).into_owned();
    }
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a line is the scenario's (a command run), not the program's.
fn is_action(line: &str) -> bool {
    line.starts_with("$ ") || line.starts_with(">>> ")
}

/// What differs between a committed capture and a new run of it, in words;
/// `None` when they agree.
pub(super) fn differences(file: &str, committed: &str, fresh: &str) -> Option<String> {
    let actions = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| is_action(l))
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    let shapes = |text: &str| -> BTreeSet<String> {
        text.lines()
            .filter(|l| !is_action(l))
            .map(|l| shape(file, l))
            .filter(|l| !l.is_empty() && !may_appear(file, l))
            .collect()
    };
    let mut report = Vec::new();
    let (was, now) = (actions(committed), actions(fresh));
    if was != now {
        report.push("the scenario's commands differ:".to_string());
        for line in was.iter().filter(|l| !now.contains(l)) {
            report.push(format!("  - {line}"));
        }
        for line in now.iter().filter(|l| !was.contains(l)) {
            report.push(format!("  + {line}"));
        }
        if report.len() == 1 {
            report.push("  (the same commands, in another order)".into());
        }
    }
    let (was, now) = (shapes(committed), shapes(fresh));
    let gone: Vec<_> = was.difference(&now).collect();
    let new: Vec<_> = now.difference(&was).collect();
    if !gone.is_empty() || !new.is_empty() {
        report.push("lines only in the committed capture (-) or only in the new run (+), with what varies as <…>:".into());
        report.extend(gone.iter().map(|l| format!("  - {l}")));
        report.extend(new.iter().map(|l| format!("  + {l}")));
    }
    (!report.is_empty()).then(|| report.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checks_run_directories_namespaces_and_thread_ids_vary_and_its_verdicts_do_not() {
        let a = "  kept for you to look at: check-step8-3006-0, check-foreign-3006-2 (kubectl get foos)";
        let b =
            "  kept for you to look at: check-foreign-41-2, check-step8-41-0 (kubectl get foos)";
        assert_eq!(shape("x.txt", a), shape("x.txt", b));
        let a = "happened: meanwhile there is no Deployment check-step5-26715-0/web-nginx; in /tmp/sample-controller-rs-3006-94483740/kubeconfig";
        let b = "happened: meanwhile there is no Deployment check-step5-1-0/web-nginx; in /tmp/sample-controller-rs-77-0a/kubeconfig";
        assert_eq!(shape("x.txt", a), shape("x.txt", b));
        // tempfile's suffix: letters of both cases.
        let c = "happened: meanwhile there is no Deployment check-step5-1-0/web-nginx; in /tmp/sample-controller-rs-77-zGvQX2/kubeconfig";
        assert_eq!(shape("x.txt", a), shape("x.txt", c));
        assert_eq!(
            shape(
                "x.txt",
                "thread 'main' (28662) panicked at workshop/step-5.rs:101:5:"
            ),
            shape(
                "x.txt",
                "thread 'main' (1) panicked at workshop/step-5.rs:101:5:"
            )
        );
        assert_ne!(
            shape("x.txt", "  pass  creates the Foo's Deployment"),
            shape("x.txt", "  FAIL  creates the Foo's Deployment")
        );
        let printed = "                    2026-12-02T04:08:40.041087Z  INFO step8_ordinary: Starting workers";
        assert_eq!(
            shape("check-step-8-ordinary.txt", printed),
            "<a line the program printed>"
        );
        assert_ne!(shape("step-8.txt", printed), "<a line the program printed>");
    }

    #[test]
    fn what_varies_between_two_runs_has_one_shape() {
        let pairs = [
            (
                "ERROR x: Error syncing; requeuing for later retry objectRef=ns/blocked error=e retry_in=1.28s",
                "ERROR x: Error syncing; requeuing for later retry objectRef=ns/blocked error=e retry_in=640ms",
            ),
            (
                "foo.samplecontroller.k8s.io/good      good-nginx   1          1           2s",
                "foo.samplecontroller.k8s.io/good   good-nginx   1   1   12s",
            ),
            (
                "Normal  ScalingReplicaSet  deployment/good-nginx  Scaled up replica set good-nginx-5869d7778c from 0 to 1",
                "Normal  ScalingReplicaSet  deployment/good-nginx  Scaled up replica set good-nginx-7d4c9cbd4f from 0 to 1",
            ),
            (
                "good-nginx-5869d7778c-x2kqp   1/1     Running   0          3m2s",
                "good-nginx-7d4c9cbd4f-8bzt6   1/1     Running   0          45s",
            ),
            (
                "uid: 0c6f3f3e-1f7a-4b5e-9a51-0d1e2f3a4b5c resourceVersion: \"1234\"",
                "uid: 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d resourceVersion: \"98\"",
            ),
            (
                "Deployment updated ns/unowned (resourceVersion 297 -> 304) -> ignored",
                "Deployment updated ns/unowned (resourceVersion 299 -> 310) -> ignored",
            ),
            (
                "sync ns/flaky start attempt 5 (1073 ms after attempt 4)",
                "sync ns/flaky start attempt 5 (1174 ms after attempt 4)",
            ),
            (
                "(b became leader 6.5 s after a froze)",
                "(b became leader 6.6 s after a froze)",
            ),
        ];
        for (one, other) in pairs {
            assert_eq!(
                shape("any.txt", one),
                shape("any.txt", other),
                "{one}\n{other}"
            );
        }
    }

    #[test]
    fn what_varies_in_one_capture_varies_only_there() {
        let one = "Normal    Synced   good   Sync     21      Foo synced successfully";
        let other = "Normal    Synced   good   Sync     24      Foo synced successfully";
        assert_eq!(
            shape("step-7-events.txt", one),
            shape("step-7-events.txt", other)
        );
        assert_eq!(
            shape("step-8-events.txt", one),
            shape("step-8-events.txt", other)
        );
        assert_ne!(
            shape("step-6.txt", one),
            shape("step-6.txt", other),
            "a count elsewhere is compared"
        );
        let metric = |v: &str| shape("metrics.txt", &format!("x_bucket{{le=\"0.008\"}} {v}"));
        assert_eq!(metric("10"), metric("3"));
        // A renamed metric or label is still a difference.
        assert_ne!(
            metric("3"),
            shape("metrics.txt", "x_bucket{le=\"0.016\"} 3")
        );
    }

    /// The line a clean-clone CI run printed in step 6's scenario (its Status
    /// cut short), which the committed capture did not have.
    const CONFLICT: &str = "ERROR reconciling object{object.ref=Foo.v1alpha1.samplecontroller.k8s.io/status.book-step6 object.reason=unknown}: sample_controller::workqueue: Error syncing; requeuing for later retry objectRef=book-step6/status error=ApiError: Operation cannot be fulfilled on foos.samplecontroller.k8s.io \"status\": the object has been modified; please apply your changes to the latest version and try again: Conflict (Status { status: Some(Failure), code: 409, reason: \"Conflict\" }) retry_in=5ms";

    #[test]
    fn a_retried_conflict_or_create_race_may_appear_in_the_status_steps_captures_and_nowhere_else()
    {
        let committed =
            "$ cargo run --bin step-6\nINFO Successfully synced objectRef=book-step6/status\n";
        let with_conflict = format!("{committed}{CONFLICT}\n");
        for file in ["step-6.txt", "step-7.txt"] {
            assert_eq!(differences(file, committed, &with_conflict), None);
            assert_eq!(differences(file, &with_conflict, committed), None);
        }
        for file in ["step-5.txt", "step-8.txt", "any.txt"] {
            assert!(differences(file, committed, &with_conflict).is_some());
        }
        let exists = "ERROR reconciling object{object.ref=Foo.v1alpha1.samplecontroller.k8s.io/status.book-step6 object.reason=unknown}: sample_controller::workqueue: Error syncing; requeuing for later retry objectRef=book-step6/status error=ApiError: deployments.apps \"status-nginx\" already exists: AlreadyExists (Status { code: 409 }) retry_in=5ms";
        let with_exists = format!("{committed}{exists}\n");
        assert_eq!(differences("step-6.txt", committed, &with_exists), None);
        assert!(differences("step-5.txt", committed, &with_exists).is_some());
    }

    #[test]
    fn another_error_in_a_status_step_is_still_a_difference() {
        let committed =
            "$ cargo run --bin step-6\nINFO Successfully synced objectRef=book-step6/status\n";
        let forbidden = CONFLICT.replace(
            "the object has been modified; please apply your changes to the latest version and try again: Conflict (",
            "forbidden: User cannot update resource: Forbidden (",
        );
        let report = differences(
            "step-6.txt",
            committed,
            &format!("{committed}{forbidden}\n"),
        )
        .expect("a difference");
        assert!(report.contains("Forbidden"), "{report}");
        // Nor is a Deployment someone else owns: that is the step's lesson.
        let not_ours = CONFLICT.replace(
            "ApiError: Operation cannot be fulfilled on foos.samplecontroller.k8s.io \"status\": the object has been modified; please apply your changes to the latest version and try again: Conflict (Status { status: Some(Failure), code: 409, reason: \"Conflict\" })",
            "Resource \"taken\" already exists and is not managed by Foo",
        );
        assert!(
            differences("step-6.txt", committed, &format!("{committed}{not_ours}\n")).is_some()
        );
        // A conflict on a Deployment is not the status race either.
        let deployment = CONFLICT.replace(
            "foos.samplecontroller.k8s.io \"status\": the object has been modified",
            "deployments.apps \"status-nginx\": the object has been modified",
        );
        assert!(
            differences(
                "step-6.txt",
                committed,
                &format!("{committed}{deployment}\n")
            )
            .is_some()
        );
    }

    #[test]
    fn the_ordinary_step_8_killed_or_left_running_by_its_sigterm_is_one_shape() {
        let file = "check-step-8-ordinary.txt";
        let running =
            "        happened: still running 10s after SIGTERM, so it was killed, it printed:";
        let killed = "        happened: it exited with signal: 15 (SIGTERM), it printed:";
        assert_eq!(shape(file, running), shape(file, killed));
        assert_eq!(
            shape(file, killed),
            "happened: <no clean exit>, it printed:"
        );
        // Elsewhere, a kill is a difference.
        assert_ne!(shape("any.txt", running), shape("any.txt", killed));
    }

    #[test]
    fn names_that_only_look_generated_are_kept() {
        let line = "Compiling sample-controller-step8 v0.1.0 (deployment good-nginx)";
        assert_eq!(shape("any.txt", line), line);
    }

    #[test]
    fn a_moved_module_or_a_reworded_message_is_a_difference() {
        let committed = "$ cargo run --bin step-8 -- --namespace n\n\
                         INFO sample_controller::reconciler: Starting workers workers=2\n";
        let fresh = "$ cargo run --bin step-8 -- --namespace n\n\
                     INFO step8::reconciler: Starting workers workers=2\n";
        let report = differences("any.txt", committed, fresh).expect("a difference");
        assert!(
            report.contains("- INFO sample_controller::reconciler"),
            "{report}"
        );
        assert!(report.contains("+ INFO step8::reconciler"), "{report}");

        let reworded = committed.replace("Starting workers", "Started workers");
        assert!(differences("any.txt", committed, &reworded).is_some());
    }

    #[test]
    fn a_changed_or_reordered_command_is_a_difference() {
        let committed = ">>> kubectl get foos\n>>> kubectl delete foo a\n";
        let other = ">>> kubectl get foos\n>>> kubectl delete foo b\n";
        assert!(differences("any.txt", committed, other).is_some());
        let reordered = ">>> kubectl delete foo a\n>>> kubectl get foos\n";
        let report = differences("any.txt", committed, reordered).expect("a difference");
        assert!(report.contains("another order"), "{report}");
    }

    #[test]
    fn more_or_fewer_repeats_of_a_line_and_where_they_fall_are_not() {
        let committed = ">>> kubectl create -f foo.yaml\n\
                         INFO Successfully synced objectRef=ns/good\n\
                         INFO Successfully synced objectRef=ns/good\n\
                         ERROR retry objectRef=ns/blocked retry_in=5.12s\n\
                         >>> kubectl get foos\n";
        let fresh = ">>> kubectl create -f foo.yaml\n\
                     INFO Successfully synced objectRef=ns/good\n\
                     >>> kubectl get foos\n\
                     ERROR retry objectRef=ns/blocked retry_in=2.56s\n";
        assert_eq!(differences("any.txt", committed, fresh), None);
    }
}
