//! Step 6 (the status): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into the course crate (`checks::step6`, declared
//! in course/src/checks/mod.rs by `cargo xtask steps`); `cargo xtask check step-6` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;

/// Step 6's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_6, |s| Box::pin(step_6(s))),
    CheckScenario::new(&[STEP_6_QUOTA], |s| Box::pin(step_6_quota(s))),
    CheckScenario::new(&[STEP_6_FOREIGN], |s| {
        Box::pin(foreign_untouched(s, STEP_6_FOREIGN))
    }),
    CheckScenario::new(&[STEP_6_WRITE_FAILS], |s| Box::pin(step_6_failed_write(s))),
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
pub(super) const STEP_6_QUOTA: Behaviour = Behaviour {
    what: "a Foo asking for 3 Pods where a quota lets 1 run: the status says 1 available, not 3",
    chapter: "step-6.md#the-rust-code",
};
pub(super) const STEP_6_WRITE_FAILS: Behaviour = Behaviour {
    what: "a status write the API server fails twice: the error returned, the key retried until the status is written",
    chapter: "step-6.md#the-rust-code",
};
pub(super) const STEP_6_FOREIGN: Behaviour = Behaviour {
    what: "still refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-5.md#the-rust-code",
};

/// Whether Foo `status` and Deployment `status-nginx` both say `want` available.
async fn both_available(client: &Client, ns: &str, want: i32) -> std::result::Result<(), Pending> {
    foo_and_deployment_available(client, ns, "status", "status-nginx", want).await
}

/// Whether Foo `foo` and Deployment `deployment` both say `want` available;
/// once the Deployment does, the Foo's status is the program's to write.
async fn foo_and_deployment_available(
    client: &Client,
    ns: &str,
    foo: &str,
    deployment: &str,
    want: i32,
) -> std::result::Result<(), Pending> {
    let foo = foos(client, ns)
        .get_opt(foo)
        .await
        .map_err(|e| e.to_string())?
        .ok_or(format!("there is no Foo {foo}"))?;
    let d = get_deployment(client, ns, deployment)
        .await
        .map_err(Pending::Program)?;
    let foo_has = foo.status.map(|s| s.available_replicas);
    let text = format!(
        "the Deployment has {} available, the Foo's status says {foo_has:?}",
        available(&d)
    );
    match (available(&d) == want, foo_has == Some(want)) {
        (true, true) => Ok(()),
        (true, false) => Err(Pending::Program(text)),
        (false, _) => Err(Pending::Cluster(text)),
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
                p.started(&["Starting 2 workers"]).await?;
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

/// A Deployment that cannot get all its Pods: the namespace's ResourceQuota
/// allows one, the Foo asks for three. What is available (1) and what is
/// asked for (3) differ only here, so a status copied from the Deployment's
/// spec, or from the Foo's, shows.
async fn step_6_quota(mut s: Scenario<'_>) -> Vec<Line> {
    use k8s_openapi::api::core::v1::{ResourceQuota, ResourceQuotaSpec};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_6_QUOTA, async {
            let ns = namespace(&client, "step6-quota").await?;
            let quota = ResourceQuota {
                metadata: kube::api::ObjectMeta {
                    name: Some("one-pod".into()),
                    ..Default::default()
                },
                spec: Some(ResourceQuotaSpec {
                    hard: Some([("pods".to_string(), Quantity("1".into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            };
            Api::<ResourceQuota>::namespaced(client.clone(), &ns)
                .create(&PostParams::default(), &quota)
                .await
                .map_err(|e| failure("a quota of one Pod", e.to_string()))?;
            let mut p = Program::start(target, &ns, &[])?;
            p.started(&["Starting 2 workers"]).await?;
            create_foo(&client, &ns, "quota", "quota-nginx", 3).await?;
            p.until(
                "1 available in the Deployment and in the Foo's status",
                WAIT,
                || foo_and_deployment_available(&client, &ns, "quota", "quota-nginx", 1),
            )
            .await?;
            p.stop(Duration::from_secs(10)).await;
            Ok(())
        })
        .await?;
        Ok(())
    })
}

/// The first two writes of Foo `flaky`'s status fail: the error must reach
/// the work queue (logged, the key retried with its backoff), and the status
/// be written in the end.
async fn step_6_failed_write(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_6_WRITE_FAILS, async {
            let ns = namespace(&client, "step6failedwrite").await?;
            let rule = failing(
                vec![http::Method::PUT, http::Method::PATCH],
                "/foos/flaky/status".into(),
                2,
            );
            let (_proxy, mut p) =
                flaky_behind_failing_proxy(target, &client, &ns, rule, "status write").await?;
            p.until(
                "1 available in the Deployment and in the Foo's status",
                WAIT,
                || foo_and_deployment_available(&client, &ns, "flaky", "flaky-nginx", 1),
            )
            .await?;
            p.stop(Duration::from_secs(10)).await;
            Ok(())
        })
        .await?;
        Ok(())
    })
}
