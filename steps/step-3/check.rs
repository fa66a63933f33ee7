//! Step 3 (event handlers): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into the course crate (`checks::step3`, declared
//! in course/src/checks/mod.rs by `cargo xtask steps`); `cargo xtask check step-3` runs it
//! against a starter or, with `--reference`, this step.

use super::cluster::*;
use super::*;
use sample_controller::handlers::Ignored;

/// Step 3's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] =
    &[CheckScenario::new(STEP_3, |s| Box::pin(step_3(s)))];

pub(super) const STEP_3_FOO_ADDED: Behaviour = Behaviour {
    what: "a Foo added: enqueues its key",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_FOO_UPDATED: Behaviour = Behaviour {
    what: "a Foo updated: enqueues its key",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_OWNED_ADDED: Behaviour = Behaviour {
    what: "a Deployment the Foo controls added: enqueues the Foo",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_REPLAY: Behaviour = Behaviour {
    what: "a resync replay of a Deployment (same resourceVersion): ignored",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_FOREIGN: Behaviour = Behaviour {
    what: "a Deployment without a controller owner reference: ignored",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_NOT_A_FOO: Behaviour = Behaviour {
    what: "a Deployment controlled by another kind: ignored",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_ORPHAN: Behaviour = Behaviour {
    what: "a Deployment whose Foo is not in the cache: ignored (an orphan)",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_OWNED_DELETED: Behaviour = Behaviour {
    what: "a Deployment the Foo controls deleted: enqueues the Foo",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_FOO_DELETED: Behaviour = Behaviour {
    what: "a Foo deleted: ignored (its Deployment goes with it)",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-3.md#the-rust-code",
};
pub(super) const STEP_3: &[Behaviour] = &[
    STEP_3_FOO_ADDED,
    STEP_3_FOO_UPDATED,
    STEP_3_OWNED_ADDED,
    STEP_3_REPLAY,
    STEP_3_FOREIGN,
    STEP_3_NOT_A_FOO,
    STEP_3_ORPHAN,
    STEP_3_OWNED_DELETED,
    STEP_3_FOO_DELETED,
    STEP_3_STOP,
];

/// The handler's decision on the first change the program prints as `what`
/// (`Deployment added NS/NAME`): `Ok` if it is exactly `decision`
/// (`enqueue NS/NAME`, `ignored (why)`), else a failure that shows what the
/// handler decided instead, at once.
async fn decides(p: &mut Program, what: &str, decision: &str) -> Checked<()> {
    let line = p.expect(&[what]).await?;
    if has_whole(&line, &format!("-> {decision}")) {
        Ok(())
    } else {
        Err(failure(format!("{what} -> {decision}"), line))
    }
}

/// `ignored (why)`, as step 3 prints a handler's `Err(why)`.
fn ignored(why: Ignored) -> String {
    format!("ignored ({why})")
}

/// `("41", "42")` from `… (resourceVersion 41 -> 42) …`.
fn resource_versions(line: &str) -> Option<(String, String)> {
    let rest = line.split("(resourceVersion ").nth(1)?;
    let (old, rest) = rest.split_once(" -> ")?;
    Some((old.to_string(), rest.split(')').next()?.to_string()))
}

async fn step_3(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns, foo) = s
            .check(STEP_3_FOO_ADDED, async {
                let ns = namespace(&client, "step3").await?;
                let mut p = Program::start(target, &ns, &["--resync", "2"])?;
                let foo = create_foo(&client, &ns, "watched", "watched-nginx", 1).await?;
                let added = format!("Foo added {ns}/watched");
                decides(&mut p, &added, &format!("enqueue {ns}/watched")).await?;
                Ok((p, ns, foo))
            })
            .await?;
        let foos = foos(&client, &ns);
        let updated = s
            .check(STEP_3_FOO_UPDATED, async {
                let updated = merge(&foos, "watched", json!({"spec": {"replicas": 2}})).await?;
                let (old, new) = (foo.resource_version(), updated.resource_version());
                let (old, new) = (old.unwrap_or_default(), new.unwrap_or_default());
                let change = format!("Foo updated {ns}/watched (resourceVersion {old} -> {new})");
                decides(&mut p, &change, &format!("enqueue {ns}/watched")).await?;
                Ok(updated)
            })
            .await?;
        s.check(STEP_3_OWNED_ADDED, async {
            create_owned_deployment(&client, &ns, "watched-nginx", &updated).await?;
            let added = format!("Deployment added {ns}/watched-nginx");
            decides(&mut p, &added, &format!("enqueue {ns}/watched")).await
        })
        .await?;
        s.check(STEP_3_REPLAY, async {
            // The first replay (the same resourceVersion on both sides),
            // then its decision, compared at once.
            let updated = format!("Deployment updated {ns}/watched-nginx");
            let replay = p
                .expect_where(
                    "a replayed update of Deployment watched-nginx (the same resourceVersion on both sides)",
                    |l| {
                        has_whole(l, &updated)
                            && resource_versions(l).is_some_and(|(old, new)| old == new)
                    },
                )
                .await?;
            let decision = format!("-> {}", ignored(Ignored::ResyncReplay));
            if has_whole(&replay, &decision) {
                Ok(())
            } else {
                Err(failure(
                    format!("a replayed update of Deployment watched-nginx {decision}"),
                    replay,
                ))
            }
        })
        .await?;
        s.check(STEP_3_FOREIGN, async {
            create_foreign_deployment(&client, &ns, "unowned").await?;
            let added = format!("Deployment added {ns}/unowned");
            decides(&mut p, &added, &ignored(Ignored::NoController)).await?;
            // Owned by the Foo, but not as its controller: no controller
            // owner reference either (Go: GetControllerOf returns nil).
            let owners = json!([
                {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                 "name": "watched", "uid": updated.uid().unwrap_or_default()},
            ]);
            create_deployment_with_owners(&client, &ns, "not-controlled", owners).await?;
            let added = format!("Deployment added {ns}/not-controlled");
            decides(&mut p, &added, &ignored(Ignored::NoController)).await
        })
        .await?;
        s.check(STEP_3_NOT_A_FOO, async {
            // Its owner references name the Foo first, as an owner that is
            // not the controller, then a ReplicaSet of the Foo's name as the
            // controller: neither the first reference nor the controller's
            // name alone says which Foo (Go: GetControllerOf, then Kind).
            let owners = json!([
                {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                 "name": "watched", "uid": updated.uid().unwrap_or_default()},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "watched",
                 "uid": "00000000-0000-0000-0000-000000000001", "controller": true},
            ]);
            create_deployment_with_owners(&client, &ns, "by-replicaset", owners).await?;
            let added = format!("Deployment added {ns}/by-replicaset");
            let kind = Ignored::NotAFoo("ReplicaSet".into());
            decides(&mut p, &added, &ignored(kind)).await
        })
        .await?;
        s.check(STEP_3_ORPHAN, async {
            let owners = json!([
                {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                 "name": "ghost", "uid": "00000000-0000-0000-0000-000000000002",
                 "controller": true},
            ]);
            create_deployment_with_owners(&client, &ns, "orphaned", owners).await?;
            let added = format!("Deployment added {ns}/orphaned");
            let orphan = Ignored::Orphan("ghost".into());
            decides(&mut p, &added, &ignored(orphan)).await
        })
        .await?;
        s.check(STEP_3_OWNED_DELETED, async {
            delete(&deployments(&client, &ns), "watched-nginx").await?;
            let deleted = format!("Deployment deleted {ns}/watched-nginx");
            decides(&mut p, &deleted, &format!("enqueue {ns}/watched")).await
        })
        .await?;
        s.check(STEP_3_FOO_DELETED, async {
            delete(&foos, "watched").await?;
            let deleted = format!("Foo deleted {ns}/watched");
            decides(&mut p, &deleted, &ignored(Ignored::FooDeleted)).await
        })
        .await?;
        s.check(STEP_3_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}
