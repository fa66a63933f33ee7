//! Step 8 (the kube-rs way): the behaviours its check reports, and the
//! scenarios that show them.
//!
//! Part of the checker, compiled into the course crate (`checks::step8`, declared
//! in course/src/checks/mod.rs by `cargo xtask steps`); `cargo xtask check step-8` runs it
//! against a starter or, with `--reference`, this step.

use futures::StreamExt;

use super::cluster::*;
use super::*;

/// Step 8's check: its scenarios, run at once, each in a namespace of its own.
pub(crate) const SCENARIOS: &[CheckScenario] = &[
    CheckScenario::new(STEP_8_APPLY, |s| Box::pin(step_8_apply(s))),
    CheckScenario::new(STEP_8_RESTARTS, |s| Box::pin(step_8_restarts(s))),
    CheckScenario::new(&[STEP_8_STOPS_BEFORE_THE_LIST], |s| {
        Box::pin(stops_before_the_list(s, STEP_8_STOPS_BEFORE_THE_LIST))
    }),
    CheckScenario::new(&[STEP_8_FOREIGN], |s| {
        Box::pin(foreign_untouched(s, STEP_8_FOREIGN))
    }),
    CheckScenario::new(STEP_8_FOOS_LAG, |s| Box::pin(step_8_foos_lag(s))),
    CheckScenario::new(STEP_8_DEPLOYMENTS_LAG, |s| {
        Box::pin(step_8_deployments_lag(s))
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

pub(super) const STEP_8_RESTART_WRITES_NOTHING: Behaviour = Behaviour {
    what: "restarted 3 times beside its 5 synced Foos, its Deployments listed 3 s late: \
           writes nothing, records no Event",
    chapter: "hardening.md#the-deployment-cache-waited-for",
};
pub(super) const STEP_8_RESTARTS: &[Behaviour] = &[STEP_8_RESTART_WRITES_NOTHING];
pub(super) const STEP_8_STOPS_BEFORE_THE_LIST: Behaviour = Behaviour {
    what: STOPS_BEFORE_THE_LIST,
    chapter: "hardening.md#a-shutdown-before-the-first-list",
};
pub(super) const STEP_8_FOREIGN: Behaviour = Behaviour {
    what: "refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-8.md#the-rust-code",
};

pub(super) const STEP_8_DELETED_FOO: Behaviour = Behaviour {
    what: "its Foo watch 8 s behind, recreates a live Foo's deleted Deployment but never a deleted Foo's",
    chapter: "step-8.md#the-foo-proved-before-the-create",
};
pub(super) const STEP_8_FOOS_LAG: &[Behaviour] = &[STEP_8_DELETED_FOO];
pub(super) const STEP_8_UNSEEN: Behaviour = Behaviour {
    what: "its Deployment watch 8 s behind, never merges into a Deployment it has not seen (create, not apply)",
    chapter: "step-8.md#server-side-apply-instead-of-update",
};
pub(super) const STEP_8_REPLACED: Behaviour = Behaviour {
    what: "its Deployment watch 8 s behind, never applies to a Deployment that replaced its own",
    chapter: "step-8.md#server-side-apply-instead-of-update",
};
pub(super) const STEP_8_DEPLOYMENTS_LAG: &[Behaviour] = &[STEP_8_UNSEEN, STEP_8_REPLACED];

async fn step_8_apply(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_8_CONVERGES, async {
                let ns = namespace(&client, "step8").await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.started(&["Starting workers"]).await?;
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
            p.until("the image back to nginx:latest", WAIT, || {
                programs_turn(async {
                    let d = get_deployment(&client, &ns, "applied").await?;
                    let image = d
                        .spec
                        .template
                        .spec
                        .and_then(|p| p.containers.first().and_then(|c| c.image.clone()));
                    (image.as_deref() == Some("nginx:latest"))
                        .then_some(())
                        .ok_or(format!("image {image:?}"))
                })
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
            // The scale-up over: its last status and Synced Event written.
            settled(&client, &ns, "applied", "applied", 2).await?;
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
            settled(&client, &ns, "applied", "applied", 2).await?;
            p.process.drain_for(Duration::from_millis(100)).await;
            let before = Quiet::now(&client, &ns, p.output()).await?;
            tokio::time::sleep(Duration::from_secs(35)).await;
            p.process.drain_for(Duration::from_millis(100)).await;
            let after = Quiet::now(&client, &ns, p.output()).await?;
            let mut changed = Vec::new();
            if after.synced_events != before.synced_events {
                changed.push(format!(
                    "{} more Synced Event(s)",
                    after.synced_events - before.synced_events
                ));
            }
            if after.foo_version != before.foo_version {
                changed.push(format!(
                    "the Foo was written (resourceVersion {:?} -> {:?})",
                    before.foo_version, after.foo_version
                ));
            }
            if after.deployment_version != before.deployment_version {
                changed.push(format!(
                    "the Deployment was written (resourceVersion {:?} -> {:?})",
                    before.deployment_version, after.deployment_version
                ));
            }
            if after.reconciles != before.reconciles {
                changed.push(format!(
                    "{} more reconcile(s) (\"Successfully synced\" lines)",
                    after.reconciles.saturating_sub(before.reconciles)
                ));
            }
            if changed.is_empty() {
                Ok(())
            } else {
                Err(failure(
                    "35 s with nothing changed: no reconcile, no write, no Event",
                    changed.join("; "),
                ))
            }
        })
        .await?;
        s.check(STEP_8_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

/// What the idle check compares before and after its wait, for the Foo
/// `applied`: each differs when the program wrote or recorded something.
struct Quiet {
    synced_events: i32,
    foo_version: Option<String>,
    deployment_version: Option<String>,
    /// Reconciles that ended (the program's "Successfully synced" lines).
    reconciles: usize,
}

impl Quiet {
    async fn now(client: &Client, ns: &str, output: &[String]) -> Checked<Quiet> {
        Ok(Quiet {
            synced_events: synced_count(client, ns, "applied").await?,
            foo_version: foos(client, ns)
                .get("applied")
                .await
                .ok()
                .and_then(|foo| foo.resource_version()),
            deployment_version: get_deployment(client, ns, "applied")
                .await
                .ok()
                .and_then(|d| d.resource_version()),
            reconciles: output
                .iter()
                .filter(|l| logs(l, "Successfully synced"))
                .count(),
        })
    }
}

async fn step_8_restarts(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_8_RESTART_WRITES_NOTHING, async {
            let ns = namespace(&client, "step8restarts").await?;
            let names: Vec<String> = (0..5).map(|i| format!("existing-{i}")).collect();
            for name in &names {
                create_foo(&client, &ns, name, name, 1).await?;
            }
            // The first run creates the Deployments and reports them available.
            let mut p = Program::start(target, &ns, &[])?;
            for name in &names {
                p.until(&format!("Foo {name} synced"), WAIT, || {
                    converged(&client, &ns, name, name, 1)
                })
                .await?;
            }
            p.stop(Duration::from_secs(10)).await;
            // Then restarts with nothing to do, behind a proxy that answers
            // the Deployments' list 3 s late: the Foo cache fills first, as
            // it may on any start, and a sync that does not wait for the
            // Deployment cache (Go: WaitForCacheSync) finds no Deployment.
            let (_proxy, behind) = behind_proxy(
                target,
                &ns,
                held("deployments", Duration::from_secs(3), None),
            )
            .await?;
            for round in 1..=3 {
                let before = Written::now(&client, &ns, &names).await?;
                let mut p = Program::start(&behind, &ns, &[])?;
                p.process = p.process.with_wait(Duration::from_secs(20));
                let in_round =
                    |f: Failure| failure(format!("restart {round}: {}", f.expected), f.happened);
                synced_all(&mut p, &names).await.map_err(in_round)?;
                p.stop(Duration::from_secs(10)).await;
                let changed = before.changes(&Written::now(&client, &ns, &names).await?);
                if !changed.is_empty() {
                    return Err(failure(
                        format!(
                            "restart {round}: nothing written, no Event (every Foo is synced; \
                             Go's Run waits for both caches before its workers start)"
                        ),
                        changed.join("; "),
                    ));
                }
            }
            Ok(())
        })
        .await?;
        Ok(())
    })
}

/// Waits until the program has logged "Successfully synced" for every one of
/// `names`, in whatever order and whenever its caches let it.
async fn synced_all(p: &mut Program, names: &[String]) -> Checked<()> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let missing: Vec<&str> = names
            .iter()
            .filter(|name| {
                !p.output()
                    .iter()
                    .any(|l| has_whole(l, "Successfully synced") && has_whole(l, name))
            })
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let running = p.process.is_running();
        if !running || tokio::time::Instant::now() >= deadline {
            let expected = format!("\"Successfully synced\" for {}", missing.join(", "));
            // `explain` adds that it exited, and how.
            let happened = if running {
                format!("none after {WAIT:?}")
            } else {
                "none".to_string()
            };
            return Err(p.explain(expected, happened, false));
        }
        p.process.drain_for(Duration::from_millis(200)).await;
    }
}

/// What the restarts compare before and after a run, per Foo: its
/// resourceVersion (a status write changes it), its Deployment's UID and
/// generation (a create or a spec write changes them; the cluster's own
/// status writes do not); and the Events about the Foos.
struct Written {
    seen: Vec<Seen>,
    events: usize,
}

/// One Foo and its Deployment, as [`Written`] saw them.
struct Seen {
    name: String,
    foo_version: Option<String>,
    deployment_uid: Option<String>,
    generation: Option<i64>,
}

impl Written {
    async fn now(client: &Client, ns: &str, names: &[String]) -> Checked<Written> {
        let mut written = Written {
            seen: Vec::new(),
            events: 0,
        };
        for name in names {
            let foo = foos(client, ns)
                .get(name)
                .await
                .map_err(|e| failure(format!("Foo {name} can be read"), e.to_string()))?;
            let d = get_deployment(client, ns, name)
                .await
                .map_err(|e| failure(format!("Deployment {name} can be read"), e))?;
            written.seen.push(Seen {
                name: name.clone(),
                foo_version: foo.resource_version(),
                deployment_uid: d.uid(),
                generation: d.metadata.generation,
            });
            written.events += events_for(client, ns, name)
                .await
                .map_err(|e| failure("the Events can be listed", e))?
                .len();
        }
        Ok(written)
    }

    /// What differs in `after`, in words: which Foos and Deployments were
    /// written, by name, and how many Events more.
    fn changes(&self, after: &Written) -> Vec<String> {
        type Differs = fn(&Seen, &Seen) -> bool;
        let kinds: [(&str, Differs); 3] = [
            ("Foos written (a new resourceVersion)", |a, b| {
                a.foo_version != b.foo_version
            }),
            ("Deployments replaced (a new UID)", |a, b| {
                a.deployment_uid != b.deployment_uid
            }),
            ("Deployments' spec written (a new generation)", |a, b| {
                a.deployment_uid == b.deployment_uid && a.generation != b.generation
            }),
        ];
        let mut changed = Vec::new();
        for (what, differs) in kinds {
            let names: Vec<&str> = (self.seen.iter().zip(&after.seen))
                .filter(|(was, is)| differs(was, is))
                .map(|(was, _)| was.name.as_str())
                .collect();
            if !names.is_empty() {
                changed.push(format!("{what}: {}", names.join(", ")));
            }
        }
        if after.events != self.events {
            changed.push(format!(
                "{} more Event(s) about the Foos",
                after.events.saturating_sub(self.events)
            ));
        }
        changed
    }
}

/// What a program that created a deleted Foo's Deployment did.
const RECREATED: &str = "Deployment gone was created again for a Foo the API server had deleted \
                         (the program's Foo cache still had it: create only once a write to the Foo, \
                         its status, has shown that it exists)";

/// How far behind the other watches a lagging watch is held: longer than the
/// check's own requests take, so that the program acts on a cache that has
/// not seen them.
const LAG: Duration = Duration::from_secs(8);

/// A proxy in front of the API server that holds every watch of `resource`
/// (`foos`, `deployments`) [`LAG`] behind, and the program started behind it.
async fn behind_a_lag(
    target: &Target,
    ns: &str,
    resource: &'static str,
) -> Checked<(crate::proxy::Proxy, Program)> {
    let rule: crate::proxy::Rule = std::sync::Arc::new(move |_, path| {
        let watch = path.contains("watch=true") || path.contains("watch=1");
        let path = path.split('?').next().unwrap_or_default();
        if watch && path.ends_with(&format!("/{resource}")) {
            crate::proxy::Action::Lag(LAG)
        } else {
            crate::proxy::Action::Forward
        }
    });
    let (proxy, behind) = behind_proxy(target, ns, rule).await?;
    let mut p = Program::start(&behind, ns, &[])?;
    p.started(&["Starting", "workers"]).await?;
    Ok((proxy, p))
}

/// Fault 12 of `tests/faults/`, made certain: with the Foo watch behind,
/// the Deployment watch reports the garbage collector's delete of a deleted
/// Foo's Deployment while the Foo is still in the program's cache. A program
/// that creates a missing Deployment without proving first that its Foo
/// still exists (the status write) creates it again. Beside it, a live
/// Foo's Deployment is deleted too and must come back, which shows that the
/// program reacted to the deletes at all.
async fn step_8_foos_lag(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_8_DELETED_FOO, async {
            let ns = namespace(&client, "step8foolag").await?;
            let (_proxy, mut p) = behind_a_lag(target, &ns, "foos").await?;
            for name in ["kept", "gone"] {
                create_foo(&client, &ns, name, name, 1).await?;
            }
            for name in ["kept", "gone"] {
                p.until(&format!("Foo {name} converged at 1"), WAIT, || {
                    converged(&client, &ns, name, name, 1)
                })
                .await?;
            }
            let deployments = deployments(&client, &ns);
            let kept = get_deployment(&client, &ns, "kept")
                .await
                .map_err(|e| failure("Deployment kept", e))?;
            // The Foo, then its Deployment, as the garbage collector would
            // (at once, not when it gets round to it).
            delete(&foos(&client, &ns), "gone").await?;
            delete(&deployments, "gone").await?;
            delete(&deployments, "kept").await?;
            let since = deployments
                .list(&Default::default())
                .await
                .map_err(|e| failure("the Deployments listed", e))?;
            let expected = format!(
                "Deployment kept created again (its Foo lives) and Deployment gone not, in the {:?} its Foo watch is behind and 5 s after",
                LAG
            );
            if since.items.iter().any(|d| d.name_any() == "gone") {
                return Err(p.explain(expected, RECREATED, false));
            }
            let rv = since.metadata.resource_version.unwrap_or_default();
            let mut created = deployments
                .watch(&kube::api::WatchParams::default(), &rv)
                .await
                .map_err(|e| failure("a watch on the Deployments", e))?
                .boxed();
            let until = tokio::time::Instant::now() + LAG + Duration::from_secs(5);
            let mut recreated = false;
            loop {
                let event = tokio::select! {
                    event = created.next() => event,
                    () = tokio::time::sleep_until(until) => break,
                    () = p.process.drain_for(Duration::from_millis(500)) => continue,
                };
                match event {
                    Some(Ok(kube::api::WatchEvent::Added(d))) if d.name_any() == "gone" => {
                        return Err(p.explain(expected, RECREATED, false));
                    }
                    Some(Ok(kube::api::WatchEvent::Added(d)))
                        if d.name_any() == "kept" && d.uid() != kept.uid() =>
                    {
                        recreated = true;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(failure("a watch on the Deployments", e)),
                    None => return Err(failure("a watch on the Deployments", "it ended")),
                }
            }
            if !recreated {
                p.until(&expected, WAIT, || {
                    programs_turn(async {
                        let d = get_deployment(&client, &ns, "kept").await?;
                        (d.uid() != kept.uid())
                            .then_some(())
                            .ok_or("Deployment kept was not created again".to_string())
                    })
                })
                .await?;
            }
            p.stops_cleanly(Duration::from_secs(10)).await
        })
        .await?;
        Ok(())
    })
}

/// A Deployment that no Foo controls but is otherwise what Foo `foo`'s
/// would be (the step's own `new_deployment`, so that an apply to it
/// succeeds), with one replica of another container: someone else's, as
/// `kubectl create` of a copied manifest makes it.
async fn lookalike(client: &Client, ns: &str, foo: &str) -> Checked<Deployment> {
    let mut owner = Foo::new(
        foo,
        sample_controller::FooSpec {
            deployment_name: foo.to_string(),
            replicas: Some(1),
        },
    );
    owner.metadata.namespace = Some(ns.to_string());
    let mut d = sample_controller::deployment::new_deployment(&owner);
    d.metadata.owner_references = None;
    d.metadata.labels = Some([("owner".to_string(), "someone-else".to_string())].into());
    let containers = d
        .spec
        .template
        .spec
        .iter_mut()
        .flat_map(|pod| &mut pod.containers);
    for container in containers {
        container.name = "web".into();
        container.image = Some("example.invalid/web:1".into());
    }
    deployments(client, ns)
        .create(&PostParams::default(), &d)
        .await
        .map_err(|e| failure(format!("Deployment {ns}/{foo} created"), e))
}

/// What an apply to someone else's Deployment would change: its owner
/// references, replicas and containers. (Not [`crate::harness::untouchable`]: a look-alike
/// is checked at once, while kube-controller-manager still annotates it.)
fn taken_over(d: &Deployment) -> serde_json::Value {
    json!({
        "ownerReferences": d.metadata.owner_references,
        "replicas": d.spec.replicas,
        "containers": d.spec.template.spec.as_ref().map(|p| &p.containers),
    })
}

/// With the Deployment watch behind, the program's cache still holds a
/// Deployment after someone replaced it (deleted it and created their own of
/// the same name), and does not yet hold one someone created before its
/// Foo. Scaling the first Foo and creating the second must not write to
/// either: the apply carries the UID the cache saw (the API server rejects
/// it for another object), and a Deployment missing from the cache is
/// created, which fails on an existing one, not applied, which would merge
/// into it. Once the watch catches up, the program refuses both.
async fn step_8_deployments_lag(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns, replaced, unseen) = s
            .check(STEP_8_UNSEEN, async {
                let ns = namespace(&client, "step8deploylag").await?;
                let (proxy, mut p) = behind_a_lag(target, &ns, "deployments").await?;
                create_foo(&client, &ns, "replaced", "replaced", 1).await?;
                p.until("Foo replaced converged at 1", WAIT, || {
                    converged(&client, &ns, "replaced", "replaced", 1)
                })
                .await?;
                // The rollout's last Deployment events are still in the lag
                // and would start reconciles while the Deployment is
                // replaced below. Let them through first, and the program
                // finish what they start, so that every reconcile after the
                // replacement is one the scale below starts, on a cache that
                // still holds the old Deployment.
                if !proxy.caught_up(WAIT).await {
                    return Err(failure(
                        "the lagging Deployment watch passes on the rollout's events",
                        format!("some still held after {WAIT:?}"),
                    ));
                }
                p.process.drain_for(Duration::from_secs(1)).await;
                delete(&deployments(&client, &ns), "replaced").await?;
                let replaced = lookalike(&client, &ns, "replaced").await?;
                merge(
                    &foos(&client, &ns),
                    "replaced",
                    json!({"spec": {"replicas": 3}}),
                )
                .await?;
                let unseen = lookalike(&client, &ns, "unseen").await?;
                create_foo(&client, &ns, "unseen", "unseen", 3).await?;
                untouched_until_refused(&mut p, &client, &ns, &unseen, taken_over, 1).await?;
                Ok(((p, proxy), ns, replaced, unseen))
            })
            .await?;
        s.check(STEP_8_REPLACED, async {
            untouched_until_refused(&mut p.0, &client, &ns, &replaced, taken_over, 1).await?;
            // Neither was written meanwhile.
            for d in [&unseen, &replaced] {
                let now = get_deployment(&client, &ns, &d.name_any())
                    .await
                    .map_err(|e| failure("the Deployment", e))?;
                if taken_over(&now) != taken_over(d) {
                    return Err(failure(
                        format!("Deployment {} as its owner created it", d.name_any()),
                        format!("it became {}", taken_over(&now)),
                    ));
                }
            }
            p.0.stops_cleanly(Duration::from_secs(10)).await
        })
        .await?;
        Ok(())
    })
}
