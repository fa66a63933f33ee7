//! Step 2 (informers): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into the course crate (`checks::step2`, declared
//! in course/src/checks/mod.rs by `cargo xtask steps`); `cargo xtask check step-2` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;

/// Step 2's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_2, |s| Box::pin(step_2(s))),
    CheckScenario::new(&[STEP_2_STOPS_BEFORE_THE_LIST], |s| {
        Box::pin(stops_before_the_list(s, STEP_2_STOPS_BEFORE_THE_LIST))
    }),
];

pub(super) const STEP_2_SYNC: Behaviour = Behaviour {
    what: "waits for both caches to sync, then reports what they hold",
    chapter: "step-2.md#the-rust-code",
};
pub(super) const STEP_2_CURRENT: Behaviour = Behaviour {
    what: "keeps both caches current: a new Foo and a new Deployment show up",
    chapter: "step-2.md#the-rust-code",
};
pub(super) const STEP_2_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-2.md#the-rust-code",
};
pub(super) const STEP_2: &[Behaviour] = &[STEP_2_SYNC, STEP_2_CURRENT, STEP_2_STOP];
pub(super) const STEP_2_STOPS_BEFORE_THE_LIST: Behaviour = Behaviour {
    what: STOPS_BEFORE_THE_LIST,
    chapter: "step-2.md#the-rust-code",
};

async fn step_2(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns, _proxy) = s
            .check(STEP_2_SYNC, async {
                let ns = namespace(&client, "step2").await?;
                create_foo(&client, &ns, "cached-foo", "cached-foo", 1).await?;
                // Every request for Foos answered SLOW_LIST late, so that a
                // program reporting before its Foo cache has synced reports it
                // empty however fast the API server and the machine are.
                let (proxy, slow) = behind_proxy(target, &ns, slow_foos()).await?;
                let mut p = Program::start(&slow, &ns, &[])?;
                // Its first report, compared exactly: a report of an empty
                // cache fails at once, showing what it said.
                let wanted = "Caches synced: 1 foos, 0 deployments";
                let synced = p.started(&["Caches synced:"]).await?;
                if !has_whole(&synced, wanted) {
                    return Err(failure(format!("a line {wanted:?}"), synced));
                }
                p.expect(&[&ns, "cached-foo"]).await?;
                Ok((p, ns, proxy))
            })
            .await?;
        s.check(STEP_2_CURRENT, async {
            create_foo(&client, &ns, "later-foo", "later-foo", 3).await?;
            create_foreign_deployment(&client, &ns, "later-deployment").await?;
            p.expect(&[&ns, "later-foo", " 3 "]).await?;
            p.expect(&[&ns, "later-deployment"]).await?;
            Ok(())
        })
        .await?;
        s.check(STEP_2_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

/// How late the proxy in front of step 2 passes on each request for Foos.
const SLOW_LIST: Duration = Duration::from_secs(2);

/// The proxy's rule for step 2: every request for Foos, the first list
/// included, waits [`SLOW_LIST`]; everything else goes straight through.
fn slow_foos() -> crate::proxy::Rule {
    std::sync::Arc::new(|_, path| {
        let path = path.split('?').next().unwrap_or_default();
        if path.ends_with("/foos") {
            crate::proxy::Action::Delay(SLOW_LIST)
        } else {
            crate::proxy::Action::Forward
        }
    })
}
