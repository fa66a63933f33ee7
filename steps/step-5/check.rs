//! Step 5 (syncHandler): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into the course crate (`checks::step5`, declared
//! in course/src/checks/mod.rs by `cargo xtask steps`); `cargo xtask check step-5` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;

/// Step 5's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_5, |s| Box::pin(step_5(s))),
    CheckScenario::new(STEP_5_NAMELESS, |s| Box::pin(step_5_nameless(s))),
    CheckScenario::new(STEP_5_COUNTLESS, |s| Box::pin(step_5_countless(s))),
    CheckScenario::new(STEP_5_FAILED_CREATE, |s| Box::pin(step_5_failed_create(s))),
];

pub(super) const STEP_5_CREATES: Behaviour = Behaviour {
    what: "creates the Foo's Deployment, controlled by the Foo",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5_REFUSES: Behaviour = Behaviour {
    what: "refuses a Deployment the Foo does not control, retries, never changes it",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5_SCALES: Behaviour = Behaviour {
    what: "puts back the replica count someone changed",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5_RECREATES: Behaviour = Behaviour {
    what: "recreates a deleted Deployment",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5: &[Behaviour] = &[
    STEP_5_CREATES,
    STEP_5_REFUSES,
    STEP_5_SCALES,
    STEP_5_RECREATES,
    STEP_5_STOP,
];

pub(super) const STEP_5_EMPTY_NAME: Behaviour = Behaviour {
    what: "an empty deploymentName: synced once, not retried, nothing created",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5_NAMELESS: &[Behaviour] = &[STEP_5_EMPTY_NAME];

async fn step_5_nameless(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_5_EMPTY_NAME, async {
            let ns = namespace(&client, "step5nameless").await?;
            let mut p = Program::start(target, &ns, &[])?;
            p.started(&["Starting 2 workers"]).await?;
            create_foo(&client, &ns, "nameless", "", 1).await?;
            // The workers' verdict on the key (src/workqueue.rs logs one or
            // the other): Go's syncHandler returns nil, so no retry.
            let key = format!("objectRef={ns}/nameless");
            let first = p
                .expect_where(
                    "the first sync of Foo nameless, a success or a failure",
                    |l| {
                        has_whole(l, &key)
                            && (logs(l, "Successfully synced")
                                || logs(l, "Error syncing; requeuing for later retry"))
                    },
                )
                .await?;
            p.process.drain_for(Duration::from_secs(2)).await;
            p.stop(Duration::from_secs(10)).await;
            let retried = p
                .output()
                .iter()
                .filter(|l| {
                    has_whole(l, &key) && logs(l, "Error syncing; requeuing for later retry")
                })
                .count();
            if retried > 0 {
                return Err(failure(
                    "a sync that succeeds: an empty deploymentName is logged and dropped, \
                     since retrying cannot help (Go: syncHandler returns nil)",
                    format!("{retried} failed syncs, the first: {first}"),
                ));
            }
            let created = deployments(&client, &ns)
                .list(&ListParams::default())
                .await
                .map_err(|e| failure("the namespace's Deployments", e))?;
            match created.items.first() {
                None => Ok(()),
                Some(d) => Err(failure(
                    "no Deployment for a Foo without a deploymentName",
                    format!("Deployment {} was created", d.name_any()),
                )),
            }
        })
        .await?;
        Ok(())
    })
}

pub(super) const STEP_5_NO_COUNT: Behaviour = Behaviour {
    what: "a Foo without replicas: leaves the Deployment's count as someone set it",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5_COUNTLESS: &[Behaviour] = &[STEP_5_NO_COUNT];

async fn step_5_countless(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_5_NO_COUNT, async {
            let ns = namespace(&client, "step5countless").await?;
            let mut p = Program::start(target, &ns, &[])?;
            p.started(&["Starting 2 workers"]).await?;
            harness::create_foo::<Foo>(&client, &ns, "countless", "countless-nginx", None)
                .await
                .map_err(|e| {
                    failure("Foo countless created, without replicas", format!("{e:#}"))
                })?;
            p.until("Deployment countless-nginx created", WAIT, || {
                programs_turn(get_deployment(&client, &ns, "countless-nginx"))
            })
            .await?;
            // Let the syncs of the create settle, then someone scales it;
            // that change queues the Foo (handleObject), and the first sync
            // after the quiet is that one, which must leave the count alone
            // (Go: only a Foo that sets replicas updates the Deployment).
            p.process.drain_for(Duration::from_secs(2)).await;
            merge(
                &deployments(&client, &ns),
                "countless-nginx",
                json!({"spec": {"replicas": 3}}),
            )
            .await?;
            let key = format!("objectRef={ns}/countless");
            let synced = p
                .expect_where("a sync of Foo countless after the scale", |l| {
                    has_whole(l, &key) && logs(l, "Successfully synced")
                })
                .await?;
            p.stop(Duration::from_secs(10)).await;
            let d = get_deployment(&client, &ns, "countless-nginx")
                .await
                .map_err(|e| failure("Deployment countless-nginx", e))?;
            match replicas(&d) {
                Some(3) => Ok(()),
                other => Err(failure(
                    "replicas still 3 after the Foo's sync: a Foo without replicas asks for \
                     no count (Go: Update only when spec.replicas is set and differs)",
                    format!("replicas {other:?} after the sync that logged: {synced}"),
                )),
            }
        })
        .await?;
        Ok(())
    })
}

async fn step_5(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns, foreign, created) = s
            .check(STEP_5_CREATES, async {
                let ns = namespace(&client, "step5").await?;
                let foreign = settled_foreign_deployment(&client, &ns).await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.started(&["Starting 2 workers"]).await?;
                let foo = create_foo(&client, &ns, "web", "web-nginx", 2).await?;
                p.about(&["web", "web-nginx"]);
                let created = p
                    .until(
                        "Deployment web-nginx controlled by Foo web, 2 replicas",
                        WAIT,
                        || {
                            programs_turn(async {
                                let d = get_deployment(&client, &ns, "web-nginx").await?;
                                let owner = controller_of(&d)
                                    .ok_or("it has no controller owner reference")?;
                                if (owner.kind.as_str(), owner.name.as_str()) != ("Foo", "web")
                                    || Some(&owner.uid) != foo.uid().as_ref()
                                {
                                    return Err(format!(
                                        "its controller is {} {} (uid {})",
                                        owner.kind, owner.name, owner.uid
                                    ));
                                }
                                if owner.block_owner_deletion != Some(true) {
                                    return Err(
                                        "its owner reference lacks blockOwnerDeletion: true".into(),
                                    );
                                }
                                if replicas(&d) != Some(2) {
                                    return Err(format!("replicas {:?}", replicas(&d)));
                                }
                                Ok(d)
                            })
                        },
                    )
                    .await?;
                Ok((p, ns, foreign, created))
            })
            .await?;
        s.check(
            STEP_5_REFUSES,
            refuses_foreign_deployment(&mut p, &client, &ns, &foreign),
        )
        .await?;
        s.check(STEP_5_SCALES, async {
            p.about(&["web", "web-nginx"]);
            merge(
                &deployments(&client, &ns),
                "web-nginx",
                json!({"spec": {"replicas": 5}}),
            )
            .await?;
            p.until("replicas back to 2 after someone set 5", WAIT, || {
                programs_turn(async {
                    let d = get_deployment(&client, &ns, "web-nginx").await?;
                    match replicas(&d) {
                        Some(2) => Ok(()),
                        other => Err(format!("replicas {other:?}")),
                    }
                })
            })
            .await
        })
        .await?;
        s.check(STEP_5_RECREATES, async {
            let old_uid = created.uid();
            delete(&deployments(&client, &ns), "web-nginx").await?;
            p.until("web-nginx recreated (a new UID)", WAIT, || {
                programs_turn(async {
                    let d = get_deployment(&client, &ns, "web-nginx").await?;
                    if d.uid() != old_uid && d.metadata.deletion_timestamp.is_none() {
                        Ok(())
                    } else {
                        Err("still the old one".into())
                    }
                })
            })
            .await
        })
        .await?;
        s.check(STEP_5_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

pub(super) const STEP_5_CREATE_FAILS: Behaviour = Behaviour {
    what: "a create the API server fails twice: the error returned, the key retried until the Deployment exists",
    chapter: "step-5.md#the-rust-code",
};
pub(super) const STEP_5_FAILED_CREATE: &[Behaviour] = &[STEP_5_CREATE_FAILS];

/// How many creates of a Deployment the proxy fails before it passes one on.
const FAILED_CREATES: usize = 2;

async fn step_5_failed_create(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_5_CREATE_FAILS, async {
            let ns = namespace(&client, "step5failedcreate").await?;
            // The first creates of a Deployment fail, as on an API server
            // that could not write to etcd; later ones go through.
            let rule = failing(
                vec![http::Method::POST],
                "/deployments".into(),
                FAILED_CREATES,
            );
            let (_proxy, mut p) =
                flaky_behind_failing_proxy(target, &client, &ns, rule, "create").await?;
            p.until(
                "Deployment flaky-nginx created after the failed creates",
                WAIT,
                || programs_turn(get_deployment(&client, &ns, "flaky-nginx")),
            )
            .await?;
            p.stop(Duration::from_secs(10)).await;
            Ok(())
        })
        .await?;
        Ok(())
    })
}
