//! Step 7 (Go's whole program): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into the course crate (`checks::step7`, declared
//! in course/src/checks/mod.rs by `cargo xtask steps`); `cargo xtask check step-7` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;

/// Step 7's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_7_EVENTS, |s| Box::pin(step_7_events(s))),
    CheckScenario::new(STEP_7_WRITES, |s| Box::pin(step_7_writes(s))),
    CheckScenario::new(&[STEP_7_FOREIGN], |s| {
        Box::pin(foreign_untouched(s, STEP_7_FOREIGN))
    }),
];

pub(super) const STEP_7_SYNCED_EVENT: Behaviour = Behaviour {
    what: "records a Normal Synced Event \"Foo synced successfully\"",
    chapter: "step-7.md#the-rust-code",
};
pub(super) const STEP_7_WARNING_EVENT: Behaviour = Behaviour {
    what: "records a Warning ErrResourceExists Event for a Deployment it does not own",
    chapter: "step-7.md#the-rust-code",
};
pub(super) const STEP_7_NO_SYNCED_ON_FAILURE: Behaviour = Behaviour {
    what: "records Synced only after a sync that succeeded: the refused Foo has none",
    chapter: "step-7.md#the-rust-code",
};
pub(super) const STEP_7_GARBAGE_COLLECTED: Behaviour = Behaviour {
    what: "a deleted Foo's Deployment is garbage-collected (its owner reference)",
    chapter: "step-7.md#the-rust-code",
};
pub(super) const STEP_7_SHUTDOWN: Behaviour = Behaviour {
    what: "on SIGTERM, says \"Shutting down workers\" and exits 0",
    chapter: "step-7.md#the-rust-code",
};
pub(super) const STEP_7_EVENTS: &[Behaviour] = &[
    STEP_7_SYNCED_EVENT,
    STEP_7_WARNING_EVENT,
    STEP_7_NO_SYNCED_ON_FAILURE,
    STEP_7_GARBAGE_COLLECTED,
    STEP_7_SHUTDOWN,
];

pub(super) const STEP_7_FOREIGN: Behaviour = Behaviour {
    what: "refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-7.md#the-rust-code",
};

pub(super) const STEP_7_REPLACES: Behaviour = Behaviour {
    what: "writes like Go: a replica change replaces the Deployment (Update), dropping others' labels",
    chapter: "step-7.md#differences-from-go",
};
pub(super) const STEP_7_UPDATE_STATUS: Behaviour = Behaviour {
    what: "writes the status with UpdateStatus (a PUT, operation Update)",
    chapter: "step-7.md#the-rust-code",
};
pub(super) const STEP_7_RESYNCS: Behaviour = Behaviour {
    what: "resyncs every 30 s: with nothing changed, Synced is recorded again",
    chapter: "step-7.md#the-rust-code",
};
pub(super) const STEP_7_WRITES: &[Behaviour] =
    &[STEP_7_REPLACES, STEP_7_UPDATE_STATUS, STEP_7_RESYNCS];

async fn step_7_events(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_7_SYNCED_EVENT, async {
                let ns = namespace(&client, "step7").await?;
                create_foreign_deployment(&client, &ns, "occupied").await?;
                let mut p = Program::start(target, &ns, &[])?;
                // Ready: the reference logs `Starting workers workers=2`
                // (Go's klog line), its starter prints step 6's `Starting 2
                // workers`; this waits for either, and checks nothing else.
                p.started(&["Starting", "workers"]).await?;
                create_foo(&client, &ns, "good", "good-nginx", 1).await?;
                create_foo(&client, &ns, "blocked", "occupied", 1).await?;
                p.about(&["good", "good-nginx"]);
                p.until("a Normal Synced Event about Foo good", WAIT, || {
                    programs_turn(async {
                        let events = events_for(&client, &ns, "good").await?;
                        events
                            .iter()
                            .any(|(t, r, n, _)| {
                                t == "Normal" && r == "Synced" && n == "Foo synced successfully"
                            })
                            .then_some(())
                            .ok_or(format!("its Events: {events:?}"))
                    })
                })
                .await?;
                Ok((p, ns))
            })
            .await?;
        s.check(STEP_7_WARNING_EVENT, async {
            let want = r#"Resource "occupied" already exists and is not managed by Foo"#;
            p.about(&["blocked", "occupied"]);
            p.until(
                "a Warning ErrResourceExists Event about Foo blocked",
                WAIT,
                || {
                    programs_turn(async {
                        let events = events_for(&client, &ns, "blocked").await?;
                        events
                            .iter()
                            .any(|(t, r, n, _)| {
                                t == "Warning" && r == "ErrResourceExists" && n == want
                            })
                            .then_some(())
                            .ok_or(format!("its Events: {events:?}"))
                    })
                },
            )
            .await
        })
        .await?;
        s.check(STEP_7_NO_SYNCED_ON_FAILURE, async {
            // The refused key is retried with backoff (5, 10, 20 ms …): in
            // two seconds it fails several more times, and the Events of
            // each attempt are listed by then.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let events = events_for(&client, &ns, "blocked")
                .await
                .map_err(|e| failure("the Events of Foo blocked", e))?;
            match events.iter().find(|(_, reason, _, _)| reason == "Synced") {
                None => Ok(()),
                Some(synced) => Err(failure(
                    "no Synced Event for Foo blocked, whose every sync fails (Go records \
                     Synced at the end of syncHandler, after the last error return)",
                    format!("{synced:?}, among {events:?}"),
                )),
            }
        })
        .await?;
        s.check(STEP_7_GARBAGE_COLLECTED, async {
            delete(&foos(&client, &ns), "good").await?;
            p.about(&["good", "good-nginx"]);
            p.until(
                "good-nginx deleted by the garbage collector",
                WAIT,
                || async {
                    match get_deployment(&client, &ns, "good-nginx").await {
                        Err(_) => Ok(()),
                        Ok(d) => Err(format!(
                            "it is still there, owners {:?}",
                            d.owner_references()
                        )),
                    }
                },
            )
            .await
        })
        .await?;
        s.check(STEP_7_SHUTDOWN, async {
            p.stops_cleanly(Duration::from_secs(10)).await?;
            if p.output().iter().any(|l| logs(l, "Shutting down workers")) {
                Ok(())
            } else {
                Err(failure(
                    "a line \"Shutting down workers\" before it exits",
                    "it exited 0 without one",
                ))
            }
        })
        .await?;
        Ok(())
    })
}

async fn step_7_writes(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_7_REPLACES, async {
                let ns = namespace(&client, "step7go").await?;
                let mut p = Program::start(target, &ns, &[])?;
                // Ready: the reference logs `Starting workers workers=2`
                // (Go's klog line), its starter prints step 6's `Starting 2
                // workers`; this waits for either, and checks nothing else.
                p.started(&["Starting", "workers"]).await?;
                create_foo(&client, &ns, "literal", "literal", 1).await?;
                p.until("Foo literal converged at 1", WAIT, || {
                    converged(&client, &ns, "literal", "literal", 1)
                })
                .await?;
                let deployments = deployments(&client, &ns);
                merge(
                    &deployments,
                    "literal",
                    json!({"metadata": {"labels": {"team": "blue"}}}),
                )
                .await?;
                merge(
                    &foos(&client, &ns),
                    "literal",
                    json!({"spec": {"replicas": 2}}),
                )
                .await?;
                let replaced = p
                    .until("Deployment literal at 2 replicas", WAIT, || {
                        programs_turn(async {
                            let d = get_deployment(&client, &ns, "literal").await?;
                            (replicas(&d) == Some(2))
                                .then_some(d)
                                .ok_or("not yet 2 replicas".to_string())
                        })
                    })
                    .await?;
                if replaced.labels().contains_key("team") {
                    return Err(failure(
                        "the label team=blue dropped by the replace",
                        "it is still there",
                    ));
                }
                let wrote = writers(&replaced, None);
                if !wrote.contains(&("sample-controller".into(), "Update".into())) {
                    return Err(failure(
                        "a write by sample-controller, operation Update",
                        format!("{wrote:?}"),
                    ));
                }
                Ok((p, ns))
            })
            .await?;
        s.check(STEP_7_UPDATE_STATUS, async {
            let foo = foos(&client, &ns)
                .get("literal")
                .await
                .map_err(|e| failure("Foo literal", e))?;
            let wrote = writers(&foo, Some("status"));
            if wrote == [("sample-controller".to_string(), "Update".to_string())] {
                Ok(())
            } else {
                Err(failure(
                    "the status written by sample-controller, operation Update",
                    format!("{wrote:?}"),
                ))
            }
        })
        .await?;
        s.check(STEP_7_RESYNCS, async {
            p.until("Foo literal converged at 2", WAIT, || {
                converged(&client, &ns, "literal", "literal", 2)
            })
            .await?;
            // The scale-up over, so that only a resync can sync it again.
            settled(&client, &ns, "literal", "literal", 2).await?;
            let before = synced_count(&client, &ns, "literal").await?;
            tokio::time::sleep(Duration::from_secs(33)).await;
            let after = synced_count(&client, &ns, "literal").await?;
            p.stops_cleanly(Duration::from_secs(10)).await?;
            if after > before {
                Ok(())
            } else {
                Err(failure(
                    "the Synced Event counted again within 33 s (a resync syncs every Foo)",
                    format!("its count stayed at {before}"),
                ))
            }
        })
        .await?;
        Ok(())
    })
}
