//! Step 4 (the work queue): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into the course crate (`checks::step4`, declared
//! in course/src/checks/mod.rs by `cargo xtask steps`); `cargo xtask check step-4` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;

/// Step 4's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_4_BURST, |s| Box::pin(step_4_burst(s))),
    CheckScenario::new(STEP_4_EXCLUSIVE, |s| Box::pin(step_4_exclusive(s))),
    CheckScenario::new(STEP_4_RETRY, |s| Box::pin(step_4_retry(s))),
    CheckScenario::new(&[STEP_4_DROPS_THE_GONE], |s| Box::pin(step_4_gone(s))),
];

pub(super) const STEP_4_COLLAPSES: Behaviour = Behaviour {
    what: "ten changes during a sync: the key is synced once more, not ten times",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_BURST: &[Behaviour] = &[STEP_4_COLLAPSES, STEP_4_STOP];

pub(super) const STEP_4_ONE_WORKER_PER_KEY: Behaviour = Behaviour {
    what: "never syncs one key in two workers at once, while two keys do run at once",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_TWO_AT_MOST: Behaviour = Behaviour {
    what: "runs at most 2 syncs at once, however many keys wait (Go: Run(ctx, 2))",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_EXCLUSIVE: &[Behaviour] = &[STEP_4_ONE_WORKER_PER_KEY, STEP_4_TWO_AT_MOST];

/// The keys of the exclusive scenario: more than the 2 workers, so that
/// running them all at once (no worker limit) shows.
const EXCLUSIVE_KEYS: [&str; 5] = ["north", "east", "south", "west", "centre"];

pub(super) const STEP_4_BACKS_OFF: Behaviour = Behaviour {
    what: "retries a failing key with delays doubling from 5 ms, then succeeds",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_LOGS_FAILURES: Behaviour = Behaviour {
    what: "logs each failure as Go does: \"Error syncing; requeuing for later retry\"",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_FORGETS: Behaviour = Behaviour {
    what: "a success resets the key's delays: after a change, retries start again at 5 ms",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_DROPS_THE_GONE: Behaviour = Behaviour {
    what: "a Foo deleted while its key waits for a retry: dropped, not retried, \
           and a new Foo of that name retries from 5 ms",
    chapter: "step-4.md#the-rust-code",
};
pub(super) const STEP_4_RETRY: &[Behaviour] =
    &[STEP_4_BACKS_OFF, STEP_4_LOGS_FAILURES, STEP_4_FORGETS];

/// The delays (ms) the program printed before attempts `first..=last` of `key`.
fn retry_gaps(output: &[String], key: &str, first: u32, last: u32) -> Vec<u64> {
    (first..=last)
        .filter_map(|n| {
            let line = output
                .iter()
                .find(|l| l.starts_with(&format!("sync {key} start attempt {n} (")))?;
            line.split('(').nth(1)?.split(" ms").next()?.parse().ok()
        })
        .collect()
}

async fn step_4_burst(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let mut p = s
            .check(STEP_4_COLLAPSES, async {
                let ns = namespace(&client, "step4burst").await?;
                let mut p = Program::start(target, &ns, &["--sync-millis", "3000"])?;
                p.started(&["Starting 2 workers"]).await?;
                create_foo(&client, &ns, "busy", "busy", 1).await?;
                let key = format!("{ns}/busy");
                p.expect(&[&format!("sync {key} start attempt 1")]).await?;
                let foos = foos(&client, &ns);
                for i in 0..10 {
                    merge(
                        &foos,
                        "busy",
                        json!({"metadata": {"labels": {"burst": i.to_string()}}}),
                    )
                    .await?;
                }
                p.expect(&[&format!("sync {key} done attempt 1")]).await?;
                // A second sync started during the first is another mistake (two
                // workers on one key): say so, rather than wait for a start that
                // has gone by.
                let second = format!("sync {key} start attempt 2");
                if let Some(early) = p.output().iter().find(|l| has_whole(l, &second)) {
                    return Err(failure(
                        format!("{second:?} after the first sync is done"),
                        format!("it started during the first sync: {early}"),
                    ));
                }
                p.expect(&[&second]).await?;
                p.expect(&[&format!("sync {key} done attempt 2")]).await?;
                p.process.drain_for(Duration::from_secs(4)).await;
                let starts = p
                    .output()
                    .iter()
                    .filter(|l| l.starts_with(&format!("sync {key} start ")))
                    .count();
                if starts != 2 {
                    return Err(failure(
                        "2 syncs: one for the create, one for the whole burst",
                        format!("{starts} syncs"),
                    ));
                }
                Ok(p)
            })
            .await?;
        s.check(STEP_4_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

async fn step_4_exclusive(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let most = s
            .check(STEP_4_ONE_WORKER_PER_KEY, async {
                let ns = namespace(&client, "step4excl").await?;
                let mut p = Program::start(target, &ns, &["--sync-millis", "400"])?;
                p.started(&["Starting 2 workers"]).await?;
                let foos = foos(&client, &ns);
                for name in EXCLUSIVE_KEYS {
                    create_foo(&client, &ns, name, name, 1).await?;
                }
                for name in EXCLUSIVE_KEYS {
                    // In whatever order the workers finish them.
                    let done = format!("sync {ns}/{name} done attempt 1");
                    if !p.output().iter().any(|l| has_whole(l, &done)) {
                        p.expect(&[&done]).await?;
                    }
                }
                // With every worker idle: a change, and a second one while
                // its sync runs, which must wait for it (a second worker
                // handed the key would start at once).
                let first = EXCLUSIVE_KEYS[0];
                merge(
                    &foos,
                    first,
                    json!({"metadata": {"labels": {"again": "1"}}}),
                )
                .await?;
                p.expect(&[&format!("sync {ns}/{first} start attempt 2")])
                    .await?;
                merge(
                    &foos,
                    first,
                    json!({"metadata": {"labels": {"again": "2"}}}),
                )
                .await?;
                for i in 0..10 {
                    for name in EXCLUSIVE_KEYS {
                        merge(
                            &foos,
                            name,
                            json!({"metadata": {"labels": {"round": i.to_string()}}}),
                        )
                        .await?;
                    }
                    tokio::time::sleep(Duration::from_millis(150)).await;
                }
                p.process.drain_for(Duration::from_secs(2)).await;
                p.stop(Duration::from_secs(10)).await;
                // Which keys are syncing, line by line: a key may start
                // only when it is not running; count how many run at once.
                let mut running: std::collections::BTreeSet<String> = Default::default();
                let mut most = (0, String::new());
                for line in p.output().iter().filter(|l| l.starts_with("sync ")) {
                    let Some(key) = line.split_whitespace().nth(1) else {
                        continue;
                    };
                    if line.split_whitespace().nth(2) == Some("start") {
                        if !running.insert(key.to_string()) {
                            return Err(failure(
                                "a key starts again only after its sync is done",
                                format!("{key} started while running: {line}"),
                            ));
                        }
                        if running.len() > most.0 {
                            most = (running.len(), line.clone());
                        }
                    } else {
                        running.remove(key);
                    }
                }
                if most.0 < 2 {
                    return Err(failure(
                        "two keys synced at the same time by the two workers",
                        "they never overlapped: are there two workers?",
                    ));
                }
                Ok(most)
            })
            .await?;
        s.check(STEP_4_TWO_AT_MOST, async {
            let (count, line) = most;
            if count <= 2 {
                Ok(())
            } else {
                Err(failure(
                    format!(
                        "at most 2 of the {} keys syncing at once (the workers' number \
                         limits how many syncs run: concurrency)",
                        EXCLUSIVE_KEYS.len()
                    ),
                    format!("{count} at once, at the line {line:?}"),
                ))
            }
        })
        .await?;
        Ok(())
    })
}

async fn step_4_retry(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let output = s
            .check(STEP_4_BACKS_OFF, async {
                let ns = namespace(&client, "step4retry").await?;
                let mut p = Program::start(target, &ns, &["--fail-first", "5"])?;
                p.started(&["Starting 2 workers"]).await?;
                create_foo(&client, &ns, "flaky", "flaky", 1).await?;
                let key = format!("{ns}/flaky");
                p.expect(&[&format!("sync {key} done attempt 6")]).await?;
                let gaps = retry_gaps(p.output(), &key, 2, 6);
                if gaps.len() != 5 {
                    return Err(failure(
                        "5 retries, each printed with its delay",
                        format!("{gaps:?}"),
                    ));
                }
                for (n, gap) in gaps.iter().enumerate() {
                    if *gap < 5 << n {
                        return Err(failure(
                            format!(
                                "retry {} at least {} ms after the attempt before",
                                n + 1,
                                5 << n
                            ),
                            format!("it came after {gap} ms (all delays: {gaps:?} ms)"),
                        ));
                    }
                }
                Ok((p, ns))
            })
            .await?;
        let (mut p, ns) = output;
        let output = p.output().to_vec();
        s.check(STEP_4_LOGS_FAILURES, async {
            let logged = output
                .iter()
                .filter(|l| logs(l, "Error syncing; requeuing for later retry"))
                .count();
            if logged == 5 {
                Ok(())
            } else {
                Err(failure(
                    "5 lines \"Error syncing; requeuing for later retry\"",
                    format!("{logged}"),
                ))
            }
        })
        .await?;
        s.check(STEP_4_FORGETS, async {
            // A change to the spec: five more failures (attempts 7 to 11).
            let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
            merge(&foos, "flaky", serde_json::json!({"spec": {"replicas": 2}})).await?;
            let key = format!("{ns}/flaky");
            p.expect(&[&format!("sync {key} done attempt 12")]).await?;
            p.stop(Duration::from_secs(10)).await;
            let gaps = retry_gaps(p.output(), &key, 8, 12);
            let total: u64 = gaps.iter().sum();
            // With Forget: 5 + 10 + 20 + 40 + 80 ms. Without: 160 ms and up,
            // about 5 s in all.
            if gaps.len() == 5 && total < 2000 {
                Ok(())
            } else {
                Err(failure(
                    "after the success and a change, retries again from 5 ms (5, 10, 20, 40, 80: \
                     about 155 ms in all); the key's failures must be forgotten on success (Go: Forget)",
                    format!("delays {gaps:?} ms, {total} ms in all"),
                ))
            }
        })
        .await?;
        Ok(())
    })
}

/// A failing Foo deleted while its key waits 1280 ms for its tenth attempt,
/// then created again under its name. Go's `syncHandler` finds no Foo in
/// the lister, logs it and returns nil, so `processNextWorkItem` forgets
/// the key: no retry, and the new Foo's failures start at 5 ms again.
async fn step_4_gone(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_4_DROPS_THE_GONE, async {
            let ns = namespace(&client, "step4gone").await?;
            let mut p = Program::start(target, &ns, &["--fail-first", "100"])?;
            p.started(&["Starting 2 workers"]).await?;
            let foos = foos(&client, &ns);
            let key = format!("{ns}/gone");
            create_foo(&client, &ns, "gone", "gone", 1).await?;
            // Nine failures: the next retry waits 5 ms · 2^8 = 1280 ms.
            p.expect(&[&format!("sync {key} failed attempt 9")]).await?;
            delete(&foos, "gone").await?;
            p.expect(&["Foo referenced by item in work queue no longer exists", &key])
                .await?;
            // Past the retry that was due: nothing may sync the key.
            p.process.drain_for(Duration::from_millis(2500)).await;
            let tenth = format!("sync {key} start attempt 10");
            if let Some(retried) = p.output().iter().find(|l| has_whole(l, &tenth)) {
                return Err(failure(
                    "no sync of the deleted Foo's key (Go: syncHandler returns nil when the \
                     lister has no Foo, so the key is not requeued)",
                    retried,
                ));
            }
            create_foo(&client, &ns, "gone", "gone", 1).await?;
            p.expect(&[&format!("sync {key} start attempt 11")]).await?;
            p.stop(Duration::from_secs(10)).await;
            let gaps = retry_gaps(p.output(), &key, 11, 11);
            match gaps[..] {
                [gap] if gap < 1000 => Ok(()),
                _ => Err(failure(
                    "the new Foo's first retry after about 5 ms: the deleted Foo's failures \
                     forgotten (Go: Forget, since syncHandler returned nil)",
                    format!(
                        "it came after {gaps:?} ms: the delays went on from the deleted Foo's nine failures"
                    ),
                )),
            }
        })
        .await?;
        Ok(())
    })
}
