//! Step 5 (syncHandler): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into testcluster (`checks::step5`, declared
//! by testcluster/build.rs because this file exists); `cargo xtask check step-5` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;

/// Step 5's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] =
    &[CheckScenario::new(STEP_5, |s| Box::pin(step_5(s)))];

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

async fn step_5(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns, foreign, created) = s
            .check(STEP_5_CREATES, async {
                let ns = namespace(&client, "step5").await?;
                let foreign = settled_foreign_deployment(&client, &ns).await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting 2 workers"]).await?;
                let foo = create_foo(&client, &ns, "web", "web-nginx", 2).await?;
                let created = p
                    .until(
                        "Deployment web-nginx controlled by Foo web, 2 replicas",
                        WAIT,
                        || async {
                            let d = get_deployment(&client, &ns, "web-nginx").await?;
                            let owner =
                                controller_of(&d).ok_or("it has no controller owner reference")?;
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
                                    "its owner reference lacks blockOwnerDeletion: true".into()
                                );
                            }
                            if replicas(&d) != Some(2) {
                                return Err(format!("replicas {:?}", replicas(&d)));
                            }
                            Ok(d)
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
            merge(
                &deployments(&client, &ns),
                "web-nginx",
                json!({"spec": {"replicas": 5}}),
            )
            .await?;
            p.until("replicas back to 2 after someone set 5", WAIT, || async {
                let d = get_deployment(&client, &ns, "web-nginx").await?;
                match replicas(&d) {
                    Some(2) => Ok(()),
                    other => Err(format!("replicas {other:?}")),
                }
            })
            .await
        })
        .await?;
        s.check(STEP_5_RECREATES, async {
            let old_uid = created.uid();
            delete(&deployments(&client, &ns), "web-nginx").await?;
            p.until("web-nginx recreated (a new UID)", WAIT, || async {
                let d = get_deployment(&client, &ns, "web-nginx").await?;
                if d.uid() != old_uid && d.metadata.deletion_timestamp.is_none() {
                    Ok(())
                } else {
                    Err("still the old one".into())
                }
            })
            .await
        })
        .await?;
        s.check(STEP_5_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}
