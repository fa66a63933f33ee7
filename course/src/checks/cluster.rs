//! The cluster as the checks see it: the objects they create and read, the
//! proxy rules that fail or hold requests, and the scenarios several steps
//! share (a Deployment their Foo does not control, a stop before the list).

use super::*;

/// A proxy in front of the API server that does what `rule` says with each
/// request (see [`crate::proxy`]), and a target whose program goes through
/// it. The proxy stops when dropped.
pub(super) async fn behind_proxy(
    target: &Target,
    ns: &str,
    rule: crate::proxy::Rule,
) -> Checked<(crate::proxy::Proxy, Target)> {
    let proxy = crate::proxy::start(target.client.clone(), &std::env::temp_dir(), ns, rule)
        .await
        .map_err(|e| failure("a proxy in front of the API server", format!("{e:#}")))?;
    let behind = Target {
        kubeconfig: proxy.kubeconfig.clone(),
        ..target.clone()
    };
    Ok((proxy, behind))
}

/// What the proxy of [`failing`] says in the errors it makes up.
pub(super) const FAILED_ON_PURPOSE: &str = "the checker's proxy failed this request on purpose";

/// Starts the program behind a proxy that fails the writes `rule` names
/// ([`failing`]), creates Foo `flaky` (Deployment `flaky-nginx`) and waits
/// for the failed `write` to reach the work queue: "Error syncing" for the
/// Foo's key with the made-up error (Go: `syncHandler` returns the error,
/// `processNextWorkItem` logs it and requeues the key). The proxy stays up
/// while the returned guard lives.
pub(super) async fn flaky_behind_failing_proxy(
    target: &Target,
    client: &Client,
    ns: &str,
    rule: crate::proxy::Rule,
    write: &str,
) -> Checked<(crate::proxy::Proxy, Program)> {
    let (proxy, behind) = behind_proxy(target, ns, rule).await?;
    let mut p = Program::start(&behind, ns, &[])?;
    p.started(&["Starting 2 workers"]).await?;
    p.about(&["flaky", "flaky-nginx"]);
    create_foo(client, ns, "flaky", "flaky-nginx", 1).await?;
    let key = format!("objectRef={ns}/flaky");
    p.expect_where(
        &format!("\"Error syncing\" for Foo flaky, with the failed {write}'s error"),
        |l| {
            has_whole(l, &key)
                && logs(l, "Error syncing; requeuing for later retry")
                // Inside the error field, wrapped in the client's words.
                && l.contains(FAILED_ON_PURPOSE)
        },
    )
    .await?;
    Ok((proxy, p))
}

/// A rule for [`behind_proxy`] that answers the first `times` requests whose
/// method is one of `methods` and whose path ends with `suffix` with a 500,
/// as an API server that could not write to etcd would ([`FAILED_ON_PURPOSE`]
/// in its message), and passes every other request on.
pub(super) fn failing(
    methods: Vec<http::Method>,
    suffix: String,
    times: usize,
) -> crate::proxy::Rule {
    let seen = std::sync::atomic::AtomicUsize::new(0);
    std::sync::Arc::new(move |method, path| {
        let path = path.split('?').next().unwrap_or_default();
        let matching = methods.contains(method) && path.ends_with(&suffix);
        if matching && seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < times {
            crate::proxy::Action::Reply(
                http::StatusCode::INTERNAL_SERVER_ERROR,
                crate::proxy::status(500, "InternalError", FAILED_ON_PURPOSE),
            )
        } else {
            crate::proxy::Action::Forward
        }
    })
}

/// A rule for [`behind_proxy`] that holds the program's list or watch of
/// `resource` for `hold` before passing it on (its one-item preflight list
/// goes through at once), and raises `asked` when one arrives.
pub(super) fn held(
    resource: &'static str,
    hold: Duration,
    asked: Option<std::sync::Arc<tokio::sync::Notify>>,
) -> crate::proxy::Rule {
    std::sync::Arc::new(move |method, path| {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let preflight = query.split('&').any(|pair| pair == "limit=1");
        if method == http::Method::GET && path.ends_with(&format!("/{resource}")) && !preflight {
            if let Some(asked) = &asked {
                asked.notify_one();
            }
            crate::proxy::Action::Delay(hold)
        } else {
            crate::proxy::Action::Forward
        }
    })
}

/// The behaviour [`stops_before_the_list`] checks.
pub(super) const STOPS_BEFORE_THE_LIST: &str =
    "stops on SIGTERM while its Foos are still being listed, 3 times in a row";

/// How long [`stops_before_the_list`] holds the list of Foos: longer than
/// the wait for the exit, so that a program waiting for its caches first
/// fails however it goes on.
const LIST_HELD: Duration = Duration::from_secs(15);

/// The scenario of [`STOPS_BEFORE_THE_LIST`]: three times, the program
/// started behind a proxy that holds its list of Foos, and SIGTERM sent
/// once it has asked for them. Go's `WaitForCacheSync` returns when its
/// context is done; a program that waits for its caches and ignores the
/// signal runs on (a kube `Controller` stopped before its first list never
/// returns at all).
pub(super) async fn stops_before_the_list(mut s: Scenario<'_>, behaviour: Behaviour) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(behaviour, async {
            let ns = namespace(&client, "earlystop").await?;
            create_foo(&client, &ns, "existing", "existing", 1).await?;
            for round in 1..=3 {
                let asked = std::sync::Arc::new(tokio::sync::Notify::new());
                let rule = held("foos", LIST_HELD, Some(asked.clone()));
                let (_proxy, behind) = behind_proxy(target, &ns, rule).await?;
                let mut p = Program::start(&behind, &ns, &[])?;
                let in_round =
                    |f: Failure| failure(format!("round {round}: {}", f.expected), f.happened);
                // Until it asks for its Foos, or exits first.
                let deadline = tokio::time::Instant::now() + WAIT;
                loop {
                    tokio::select! {
                        () = asked.notified() => break,
                        () = p.process.drain_for(Duration::from_millis(200)) => {}
                    }
                    if !p.process.is_running() || tokio::time::Instant::now() >= deadline {
                        let happened = format!("it did not ask for its Foos within {WAIT:?}");
                        let expected = "a list or watch of Foos".to_string();
                        return Err(in_round(p.explain(expected, happened, false)));
                    }
                }
                p.stops_cleanly(Duration::from_secs(10))
                    .await
                    .map_err(in_round)?;
            }
            Ok(())
        })
        .await?;
        Ok(())
    })
}

pub(super) fn foos(client: &Client, ns: &str) -> Api<Foo> {
    Api::namespaced(client.clone(), ns)
}

pub(super) fn deployments(client: &Client, ns: &str) -> Api<Deployment> {
    Api::namespaced(client.clone(), ns)
}

pub(super) async fn create_foo(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> Checked<Foo> {
    harness::create_foo::<Foo>(client, ns, name, deployment, Some(replicas))
        .await
        .map_err(|e| failure(format!("Foo {ns}/{name} created"), format!("{e:#}")))
}

pub(super) async fn create_foreign_deployment(
    client: &Client,
    ns: &str,
    name: &str,
) -> Checked<Deployment> {
    harness::create_foreign_deployment(
        client,
        ns,
        name,
        "example.invalid/web:1",
        &[("owner", "someone-else")],
    )
    .await
    .map_err(|e| failure(format!("Deployment {ns}/{name} created"), format!("{e:#}")))
}

/// A Deployment controlled by `owner`, as someone other than the controller
/// might create it.
pub(super) async fn create_owned_deployment(
    client: &Client,
    ns: &str,
    name: &str,
    owner: &Foo,
) -> Checked<Deployment> {
    let owners = json!([{
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "name": owner.name_any(),
        "uid": owner.uid().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    create_deployment_with_owners(client, ns, name, owners).await
}

/// A Deployment with the owner references `owners` (a JSON array), as
/// someone other than the controller might create it.
pub(super) async fn create_deployment_with_owners(
    client: &Client,
    ns: &str,
    name: &str,
    owners: serde_json::Value,
) -> Checked<Deployment> {
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": owners},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "nginx", "controller": name}},
            "template": {
                "metadata": {"labels": {"app": "nginx", "controller": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}
            }
        }
    }))
    .map_err(|e| failure("a Deployment with owner references", e))?;
    deployments(client, ns)
        .create(&PostParams::default(), &d)
        .await
        .map_err(|e| failure(format!("Deployment {ns}/{name} created"), e))
}

pub(super) async fn merge<K>(api: &Api<K>, name: &str, patch: serde_json::Value) -> Checked<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch.clone()))
        .await
        .map_err(|e| failure(format!("{name} patched with {patch}"), e))
}

pub(super) async fn delete<K>(api: &Api<K>, name: &str) -> Checked<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    harness::delete(api, name)
        .await
        .map(|_| ())
        .map_err(|e| failure(format!("{name} deleted"), format!("{e:#}")))
}

/// The Deployment `name`, or why not.
pub(super) async fn get_deployment(
    client: &Client,
    ns: &str,
    name: &str,
) -> std::result::Result<Deployment, String> {
    match deployments(client, ns).get_opt(name).await {
        Ok(Some(d)) => Ok(d),
        Ok(None) => Err(format!("there is no Deployment {ns}/{name}")),
        Err(e) => Err(format!("reading Deployment {ns}/{name}: {e}")),
    }
}

/// The owner reference marked `controller: true`.
pub(super) fn controller_of(
    d: &Deployment,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    d.owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
}

pub(super) fn replicas(d: &Deployment) -> Option<i32> {
    d.spec.replicas
}

pub(super) fn available(d: &Deployment) -> i32 {
    d.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

/// Whether Foo `name` controls Deployment `deployment` with `want` replicas
/// and reports them all available: both objects as read, or what is not
/// there yet and whose turn it is (only Pods becoming available are the
/// cluster's).
pub(super) async fn converged(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    want: i32,
) -> std::result::Result<(Foo, Deployment), Pending> {
    let foo = foos(client, ns)
        .get_opt(name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or(format!("there is no Foo {ns}/{name}"))?;
    let d = get_deployment(client, ns, deployment)
        .await
        .map_err(Pending::Program)?;
    let owner = controller_of(&d).map(|r| r.uid.clone());
    if owner != foo.uid() {
        return Err(Pending::Program(format!(
            "Deployment {deployment} is not controlled by Foo {name}"
        )));
    }
    let status = foo.status.as_ref().map(|s| s.available_replicas);
    if replicas(&d) != Some(want) || status != Some(want) {
        let text = format!(
            "Deployment replicas {:?}, available {}; Foo status.availableReplicas {status:?}",
            replicas(&d),
            available(&d)
        );
        let rolling_out = replicas(&d) == Some(want) && available(&d) != want;
        return Err(if rolling_out {
            Pending::Cluster(text)
        } else {
            Pending::Program(text)
        });
    }
    Ok((foo, d))
}

/// Waits until Foo `name`'s Deployment `deployment` has finished rolling out
/// `want` replicas (kube-controller-manager has observed its last change;
/// every Pod is updated and available, no old one left), the Foo reports
/// them, and neither object has been written for 2 s. After that, a write
/// to either is the program's own and not the rollout's last status.
pub(super) async fn settled(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    want: i32,
) -> Checked<()> {
    let expected = format!(
        "Deployment {deployment} rolled out at {want} and Foo {name} reporting it, neither written for 2 s"
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut seen = None;
    loop {
        let now = rolled_out(client, ns, name, deployment, want).await;
        let late = tokio::time::Instant::now() >= deadline;
        match now {
            Ok(versions) if seen.as_ref() == Some(&versions) => return Ok(()),
            Ok(versions) if late => {
                return Err(failure(
                    &expected,
                    format!(
                        "after {WAIT:?} still written: resourceVersions {seen:?}, then {versions:?}"
                    ),
                ));
            }
            Ok(versions) => seen = Some(versions),
            Err(e) if late => return Err(failure(&expected, format!("after {WAIT:?}: {e}"))),
            Err(_) => seen = None,
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The resourceVersions of Deployment `deployment` and Foo `name` once they
/// have [`converged`] at `want` replicas and the rollout is over
/// (kube-controller-manager has observed the last change, every Pod is
/// updated and available); `Err` says what is still moving.
async fn rolled_out(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    want: i32,
) -> std::result::Result<(Option<String>, Option<String>), String> {
    let (foo, d) = converged(client, ns, name, deployment, want)
        .await
        .map_err(|pending| pending.text().to_string())?;
    let status = d.status.clone().unwrap_or_default();
    let pods = (
        status.replicas,
        status.updated_replicas,
        status.available_replicas,
    );
    let observed = status.observed_generation == d.metadata.generation;
    if !observed || pods != (Some(want), Some(want), Some(want)) {
        return Err(format!(
            "Deployment observed: {observed}, Pods (all, updated, available) {pods:?}"
        ));
    }
    Ok((d.resource_version(), foo.resource_version()))
}

/// The Events about Foo `name` ([`harness::events_for`]), or why not.
pub(super) async fn events_for(
    client: &Client,
    ns: &str,
    name: &str,
) -> std::result::Result<Vec<(String, String, String, i32)>, String> {
    harness::events_for(client, ns, name)
        .await
        .map_err(|e| format!("{e:#}"))
}

/// How many times the Synced Event about Foo `name` was recorded.
pub(super) async fn synced_count(client: &Client, ns: &str, name: &str) -> Checked<i32> {
    let events = events_for(client, ns, name)
        .await
        .map_err(|e| failure("the Events can be listed", e))?;
    Ok(events
        .iter()
        .filter(|(_, reason, _, _)| reason == "Synced")
        .map(|(_, _, _, count)| count)
        .sum())
}

/// `(manager, operation)` of each managedFields entry for `subresource`.
pub(super) fn writers<K: kube::Resource>(
    obj: &K,
    subresource: Option<&str>,
) -> Vec<(String, String)> {
    obj.meta()
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.subresource.as_deref() == subresource)
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// A Deployment `taken` that no Foo controls (someone else's), created in
/// `ns` and settled (kube-controller-manager has observed it) before the
/// program under check starts.
pub(super) async fn settled_foreign_deployment(client: &Client, ns: &str) -> Checked<Deployment> {
    create_foreign_deployment(client, ns, "taken").await?;
    until("the foreign Deployment settled", WAIT, || async {
        let d = get_deployment(client, ns, "taken").await?;
        let observed = d.status.as_ref().and_then(|s| s.observed_generation);
        let revised = d
            .annotations()
            .contains_key("deployment.kubernetes.io/revision");
        if observed == d.metadata.generation && revised {
            Ok(d)
        } else {
            Err("not yet observed by kube-controller-manager".into())
        }
    })
    .await
}

/// Creates Foo `squatter` asking for Deployment `taken` (`foreign`, which it
/// does not control) and watches both the program and the Deployment: the
/// program must log the refusal twice (a retry) and never write to `taken`.
/// A write fails at once, naming what changed.
pub(super) async fn refuses_foreign_deployment(
    p: &mut Program,
    client: &Client,
    ns: &str,
    foreign: &Deployment,
) -> Checked<()> {
    create_foo(client, ns, "squatter", "taken", 3).await?;
    p.about(&["squatter", "taken"]);
    untouched_until_refused(p, client, ns, foreign, harness::untouchable, 2).await
}

/// Watches `theirs`, a Deployment no Foo controls, until the program has
/// logged its refusal of it `times` times; fails at the first write to it:
/// a change to what `view` shows of it, or a managedFields entry of
/// `sample-controller`.
pub(super) async fn untouched_until_refused(
    p: &mut Program,
    client: &Client,
    ns: &str,
    theirs: &Deployment,
    view: fn(&Deployment) -> serde_json::Value,
    times: usize,
) -> Checked<()> {
    let name = theirs.name_any();
    let refusal = format!(r#"Resource "{name}" already exists and is not managed by Foo"#);
    let logged = match times {
        1 => "logged".to_string(),
        2 => "logged twice (retried)".to_string(),
        n => format!("logged {n} times (retried)"),
    };
    let expected = format!(
        "Deployment {name} (no Foo controls it) never written, and the refusal \"{refusal}\" {logged}"
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        p.process.drain_for(Duration::from_millis(200)).await;
        let now = get_deployment(client, ns, &name)
            .await
            .map_err(|e| failure(expected.clone(), format!("Deployment {name}: {e}")))?;
        let changed = changed_paths("", &view(theirs), &view(&now));
        let ours = writers(&now, None)
            .into_iter()
            .filter(|(m, _)| m == "sample-controller")
            .collect::<Vec<_>>();
        if !changed.is_empty() || !ours.is_empty() {
            return Err(failure(
                expected,
                format!(
                    "your sync wrote to a Deployment this Foo does not control: changed {changed:?}, written by {ours:?}"
                ),
            ));
        }
        // Go's error text, inside the error field of the failure's line
        // (and of the Warning Event's, for the steps that record one).
        let refused = p.output().iter().filter(|l| l.contains(&refusal)).count();
        if refused >= times {
            return Ok(());
        }
        if !p.process.is_running() {
            return Err(p.explain(
                expected,
                format!("it exited after {refused} refusal(s)"),
                true,
            ));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(p.explain(
                expected,
                format!("after {WAIT:?}: the refusal logged {refused} time(s)"),
                false,
            ));
        }
    }
}

/// The JSON paths where `a` and `b` differ (`spec.replicas`, …).
pub(super) fn changed_paths(at: &str, a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    let path = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    let null = serde_json::Value::Null;
                    changed_paths(&path, a.get(k).unwrap_or(&null), b.get(k).unwrap_or(&null))
                })
                .collect()
        }
        _ if a == b => Vec::new(),
        _ => vec![at.to_string()],
    }
}

/// Steps 6 to 8 must keep step 5's refusal: a scenario of its own, in a
/// namespace of its own, for each.
pub(super) async fn foreign_untouched(mut s: Scenario<'_>, behaviour: Behaviour) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(behaviour, async {
            let ns = namespace(&client, "foreign").await?;
            let foreign = settled_foreign_deployment(&client, &ns).await?;
            let mut p = Program::start(target, &ns, &[])?;
            p.started(&["Starting", "workers"]).await?;
            refuses_foreign_deployment(&mut p, &client, &ns, &foreign).await?;
            p.stops_cleanly(Duration::from_secs(10)).await
        })
        .await?;
        Ok(())
    })
}
