//! Step 8 (the kube-rs way): the behaviours its check reports, and the
//! scenarios that show them.

use super::cluster::*;
use super::*;

/// Step 8's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_8_APPLY, |s| Box::pin(step_8_apply(s))),
    CheckScenario::new(STEP_8_RESTARTS, |s| Box::pin(step_8_restarts(s))),
    CheckScenario::new(&[STEP_8_FOREIGN], |s| {
        Box::pin(foreign_untouched(s, STEP_8_FOREIGN))
    }),
];

pub(super) const STEP_8_CONVERGES: Behaviour = Behaviour {
    what: "creates the Deployment and reports its available replicas",
    chapter: "step-8.md#the-rust-code",
};
pub(super) const STEP_8_TAKES_BACK: Behaviour = Behaviour {
    what: "takes back an image someone changed, at once",
    chapter: "step-8.md#apply-only-what-drifted",
};
pub(super) const STEP_8_KEEPS_OTHERS: Behaviour = Behaviour {
    what: "keeps a label someone else set when it scales (server-side apply)",
    chapter: "step-8.md#server-side-apply-instead-of-update",
};
pub(super) const STEP_8_APPLIES: Behaviour = Behaviour {
    what: "writes the Deployment and the status by server-side apply (operation Apply)",
    chapter: "step-8.md#the-status-applied-and-only-when-it-differs",
};
pub(super) const STEP_8_NO_WRITE: Behaviour = Behaviour {
    what: "a change that needs nothing (a label on the Foo, three times): no write, no Event",
    chapter: "step-8.md#the-status-applied-and-only-when-it-differs",
};
pub(super) const STEP_8_IDLE: Behaviour = Behaviour {
    what: "while nothing changes: no reconcile, no write, no Event for 35 s",
    chapter: "step-8.md#no-resync",
};
pub(super) const STEP_8_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-8.md#graceful-shutdown",
};
pub(super) const STEP_8_APPLY: &[Behaviour] = &[
    STEP_8_CONVERGES,
    STEP_8_TAKES_BACK,
    STEP_8_KEEPS_OTHERS,
    STEP_8_APPLIES,
    STEP_8_NO_WRITE,
    STEP_8_IDLE,
    STEP_8_STOP,
];

pub(super) const STEP_8_RESTARTED: Behaviour = Behaviour {
    what: "started beside 5 existing Foos, starts its workers and stops on SIGTERM, 5 times in a row",
    chapter: "step-8.md#graceful-shutdown",
};
pub(super) const STEP_8_RESTARTS: &[Behaviour] = &[STEP_8_RESTARTED];
pub(super) const STEP_8_FOREIGN: Behaviour = Behaviour {
    what: "refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-8.md#the-rust-code",
};

async fn step_8_apply(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_8_CONVERGES, async {
                let ns = namespace(&client, "step8").await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting workers"]).await?;
                create_foo(&client, &ns, "applied", "applied", 1).await?;
                p.until("Foo applied converged at 1", WAIT, || {
                    converged(&client, &ns, "applied", "applied", 1)
                })
                .await?;
                Ok((p, ns))
            })
            .await?;
        let deployments = deployments(&client, &ns);
        let foos = foos(&client, &ns);
        s.check(STEP_8_TAKES_BACK, async {
            let params = PatchParams {
                field_manager: Some("kubectl-label".into()),
                ..PatchParams::default()
            };
            let label = json!({"metadata": {"labels": {"team": "blue"}}});
            deployments
                .patch("applied", &params, &Patch::Merge(label))
                .await
                .map_err(|e| failure("a label set on Deployment applied", e))?;
            let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}});
            deployments
                .patch("applied", &PatchParams::default(), &Patch::Strategic(image))
                .await
                .map_err(|e| failure("the image of Deployment applied changed", e))?;
            p.until("the image back to nginx:latest", WAIT, || async {
                let d = get_deployment(&client, &ns, "applied").await?;
                let image = d
                    .spec
                    .and_then(|s| s.template.spec)
                    .and_then(|p| p.containers.first().and_then(|c| c.image.clone()));
                (image.as_deref() == Some("nginx:latest"))
                    .then_some(())
                    .ok_or(format!("image {image:?}"))
            })
            .await
        })
        .await?;
        let scaled = s
            .check(STEP_8_KEEPS_OTHERS, async {
                merge(&foos, "applied", json!({"spec": {"replicas": 2}})).await?;
                p.until("Foo applied converged at 2", WAIT, || {
                    converged(&client, &ns, "applied", "applied", 2)
                })
                .await?;
                let d = get_deployment(&client, &ns, "applied")
                    .await
                    .map_err(|e| failure("Deployment applied", e))?;
                match d.labels().get("team").map(String::as_str) {
                    Some("blue") => Ok(d),
                    other => Err(failure(
                        "the label team=blue still there",
                        format!("team={other:?}"),
                    )),
                }
            })
            .await?;
        s.check(STEP_8_APPLIES, async {
            let wrote = writers(&scaled, None);
            if !wrote.contains(&("sample-controller".into(), "Apply".into())) {
                return Err(failure(
                    "the Deployment written by sample-controller, operation Apply",
                    format!("{wrote:?}"),
                ));
            }
            let foo = foos
                .get("applied")
                .await
                .map_err(|e| failure("Foo applied", e))?;
            let wrote = writers(&foo, Some("status"));
            if wrote == [("sample-controller".to_string(), "Apply".to_string())] {
                Ok(())
            } else {
                Err(failure(
                    "the status written by sample-controller, operation Apply only",
                    format!("{wrote:?}"),
                ))
            }
        })
        .await?;
        s.check(STEP_8_NO_WRITE, async {
            // Let the scale-up settle: the status write of the last replica
            // and its Synced Event.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let deployment_version = || async {
                get_deployment(&client, &ns, "applied")
                    .await
                    .map_err(|e| failure("Deployment applied", e))
                    .map(|d| d.resource_version())
            };
            let before = (
                synced_count(&client, &ns, "applied").await?,
                deployment_version().await?,
            );
            let mut labelled = None;
            for i in 1..=3 {
                let foo = merge(&foos, "applied", json!({"metadata": {"labels": {"touched": i.to_string()}}})).await?;
                labelled = foo.resource_version();
            }
            // Each label is a Foo update the controller reconciles; give it time to.
            tokio::time::sleep(Duration::from_secs(5)).await;
            let foo = foos.get("applied").await.map_err(|e| failure("Foo applied", e))?;
            let after = (
                synced_count(&client, &ns, "applied").await?,
                deployment_version().await?,
            );
            if before != after {
                return Err(failure(
                    "the same Synced Event count and Deployment resourceVersion after three labels on the Foo (nothing to change, so nothing written and no Event)",
                    format!("(Synced Events, Deployment resourceVersion) {before:?} became {after:?}"),
                ));
            }
            if foo.resource_version() != labelled {
                return Err(failure(
                    "the Foo as the third label left it (no status write)",
                    format!(
                        "its resourceVersion went from {labelled:?} to {:?}: something wrote to it",
                        foo.resource_version()
                    ),
                ));
            }
            Ok(())
        })
        .await?;
        s.check(STEP_8_IDLE, async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            p.process.drain_for(Duration::from_millis(100)).await;
            let syncs = |output: &[String]| output.iter().filter(|l| l.contains("Successfully synced")).count();
            let version = |r: std::result::Result<Foo, kube::Error>| r.ok().and_then(|o| o.resource_version());
            let before = (
                synced_count(&client, &ns, "applied").await?,
                version(foos.get("applied").await),
                get_deployment(&client, &ns, "applied").await.ok().and_then(|d| d.resource_version()),
                syncs(p.output()),
            );
            tokio::time::sleep(Duration::from_secs(35)).await;
            p.process.drain_for(Duration::from_millis(100)).await;
            let after = (
                synced_count(&client, &ns, "applied").await?,
                version(foos.get("applied").await),
                get_deployment(&client, &ns, "applied").await.ok().and_then(|d| d.resource_version()),
                syncs(p.output()),
            );
            if before == after {
                Ok(())
            } else {
                Err(failure(
                    "the same (Synced count, Foo resourceVersion, Deployment resourceVersion, \"Successfully synced\" lines) 35 s later",
                    format!("{before:?} became {after:?}"),
                ))
            }
        })
        .await?;
        s.check(STEP_8_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

async fn step_8_restarts(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_8_RESTARTED, async {
            let ns = namespace(&client, "step8restarts").await?;
            for i in 0..5 {
                let name = format!("existing-{i}");
                create_foo(&client, &ns, &name, &name, 1).await?;
            }
            for round in 1..=5 {
                let mut p = Program::start(target, &ns, &[])?;
                p.process = p.process.with_wait(Duration::from_secs(20));
                p.expect(&["Starting workers"])
                    .await
                    .map_err(|f| failure(format!("round {round}: {}", f.expected), f.happened))?;
                p.stops_cleanly(Duration::from_secs(10))
                    .await
                    .map_err(|f| failure(format!("round {round}: {}", f.expected), f.happened))?;
            }
            Ok(())
        })
        .await?;
        Ok(())
    })
}
