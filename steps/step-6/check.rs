//! Step 6 (the status): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into testcluster (`checks::step6`, declared
//! by testcluster/build.rs because this file exists); `cargo xtask check step-6` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;

/// Step 6's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_6, |s| Box::pin(step_6(s))),
    CheckScenario::new(&[STEP_6_FOREIGN], |s| {
        Box::pin(foreign_untouched(s, STEP_6_FOREIGN))
    }),
];

pub(super) const STEP_6_STATUS: Behaviour = Behaviour {
    what: "the Foo's status.availableReplicas follows its Deployment (2 available)",
    chapter: "step-6.md#the-rust-code",
};
pub(super) const STEP_6_SCALED: Behaviour = Behaviour {
    what: "after a scale to 3, the status follows again (3 available)",
    chapter: "step-6.md#the-rust-code",
};
pub(super) const STEP_6_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-6.md#the-rust-code",
};
pub(super) const STEP_6: &[Behaviour] = &[STEP_6_STATUS, STEP_6_SCALED, STEP_6_STOP];
pub(super) const STEP_6_FOREIGN: Behaviour = Behaviour {
    what: "still refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-5.md#the-rust-code",
};

/// Whether Foo `status` and Deployment `status-nginx` both say `want` available.
async fn both_available(client: &Client, ns: &str, want: i32) -> std::result::Result<(), String> {
    let foo = foos(client, ns)
        .get_opt("status")
        .await
        .map_err(|e| e.to_string())?
        .ok_or("there is no Foo status")?;
    let d = get_deployment(client, ns, "status-nginx").await?;
    let foo_has = foo.status.map(|s| s.available_replicas);
    if available(&d) == want && foo_has == Some(want) {
        Ok(())
    } else {
        Err(format!(
            "the Deployment has {} available, the Foo's status says {foo_has:?}",
            available(&d)
        ))
    }
}

async fn step_6(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_6_STATUS, async {
                let ns = namespace(&client, "step6").await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting 2 workers"]).await?;
                create_foo(&client, &ns, "status", "status-nginx", 2).await?;
                p.until(
                    "2 available in the Deployment and in the Foo's status",
                    WAIT,
                    || both_available(&client, &ns, 2),
                )
                .await?;
                Ok((p, ns))
            })
            .await?;
        s.check(STEP_6_SCALED, async {
            merge(
                &foos(&client, &ns),
                "status",
                json!({"spec": {"replicas": 3}}),
            )
            .await?;
            p.until(
                "3 available in the Deployment and in the Foo's status",
                WAIT,
                || both_available(&client, &ns, 3),
            )
            .await
        })
        .await?;
        s.check(STEP_6_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}
