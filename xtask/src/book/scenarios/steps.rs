//! The captures of the step chapters: steps 1 to 8, the missing CRD, the
//! protected group, the LIST and WATCH counts, RBAC refusing step 6.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use sample_controller::deployment::new_deployment;
use sample_controller::{Foo, FooSpec, show};
use serde_json::json;
use testcluster::ControlPlane;

use crate::book::capture::*;

/// The LIST and WATCH requests of Foos and Deployments that Go's
/// sample-controller, step 7 and step 8 send while they start, each alone,
/// from kube-apiserver's `apiserver_request_total` (a watch is counted when
/// it ends, so each program is stopped before the count).
pub(in crate::book) async fn watch_list(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let go = testcluster::binaries::ensure(testcluster::Binary::SampleController)?;
    let kubeconfig = env.kubeconfig.display().to_string();
    let programs = [
        (
            "Go sample-controller v0.36.3",
            go,
            vec![format!("-kubeconfig={kubeconfig}")],
        ),
        (
            "step-7",
            env.bin.join("step-7"),
            vec!["--kubeconfig".into(), kubeconfig.clone()],
        ),
        (
            "step-8",
            env.bin.join("step-8"),
            vec!["--kubeconfig".into(), kubeconfig.clone()],
        ),
    ];
    let mut lines = vec![
        "$ kubectl get --raw /metrics | grep apiserver_request_total   # before and after each program; LIST and WATCH of foos and deployments".to_string(),
    ];
    for (name, exe, args) in programs {
        let before = crate::bench::request_counts(&env.client).await?;
        let log = cp
            .log_dir()
            .join(format!("watch-list-{}.log", name.replace(' ', "-")));
        let mut child = crate::bench::start(&exe, &args, &log).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Some(pid) = child.id() {
            // SAFETY: kill(2) on the PID of the child we started, with a valid signal.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
        tokio::time::timeout(Duration::from_secs(15), child.wait())
            .await
            .context("a program did not stop on SIGTERM")??;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = crate::bench::request_counts(&env.client).await?;
        let counts = crate::bench::diff(&before, &after);
        let of = |resource: &str| {
            let verbs: Vec<String> = ["LIST", "WATCH"]
                .iter()
                .filter_map(|verb| {
                    let n = counts.get(&format!("{verb} {resource}"))?;
                    Some(format!("{verb} {n}"))
                })
                .collect();
            format!("{resource}: {}", verbs.join(", "))
        };
        lines.push(format!(
            "{name:<30} {:<24} {}",
            of("foos"),
            of("deployments")
        ));
    }
    Ok(lines)
}

pub(in crate::book) async fn crd_missing(env: &Env) -> Result<Vec<String>> {
    let run = Run::start(env, "step-1", "default", &[])?;
    run.wait().await
}

/// The API server's answer to the Foo CRD without `api-approved.kubernetes.io`
/// (a dry run: nothing is stored).
pub(in crate::book) async fn protected_group(client: &Client) -> Result<Vec<String>> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::CustomResourceExt;
    let mut crd = Foo::crd();
    crd.metadata.annotations = None;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut lines = vec![
        "$ kubectl apply --dry-run=server -f crd-without-annotation.yaml   # manifests/crd.yaml minus the annotation".to_string(),
    ];
    match api.create(&params, &crd).await {
        Ok(_) => bail!("the API server accepted a *.k8s.io CRD without the approval annotation"),
        Err(kube::Error::Api(status)) => lines.push(format!(
            "{} ({} {}): {}",
            status.status.map(|s| format!("{s:?}")).unwrap_or_default(),
            status.code,
            status.reason,
            status.message
        )),
        Err(other) => return Err(other.into()),
    }
    Ok(lines)
}

pub(in crate::book) async fn step_1(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step1";
    testcluster::create_namespace(&env.client, ns).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let foo = Foo::new(
        "example-foo",
        FooSpec {
            deployment_name: "example-foo".into(),
            replicas: Some(1),
        },
    );
    foos.create(&PostParams::default(), &foo).await?;
    create_foreign_deployment(None, &env.client, ns, "plain-deployment").await?;
    let mut run = Run::start(env, "step-1", ns, &[])?;
    run.transcript.splice(
        0..0,
        [
            format!(
                ">>> {}   # before the step starts",
                create_foo_command(ns, "example-foo", "example-foo", 1)
            ),
            format!(
                ">>> kubectl -n {ns} create deployment plain-deployment --image nginx:latest   # no owner"
            ),
        ],
    );
    run.wait().await
}

pub(in crate::book) async fn step_2(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step2";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-2", ns, &[])?;
    run.expect(&["Caches synced"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    create_foo(&mut run, &env.client, ns, "later-foo", "later-foo", 3).await?;
    run.expect(&["later-foo"]).await?;
    create_foreign_deployment(Some(&mut run), &env.client, ns, "later-deployment").await?;
    run.expect(&["later-deployment"]).await?;
    run.drain_for(Duration::from_secs(4)).await;
    run.terminate().await
}

pub(in crate::book) async fn step_3(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step3";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-3", ns, &["--resync", "10"])?;
    tokio::time::sleep(Duration::from_secs(2)).await; // let the watches start
    let foo = create_foo(&mut run, &env.client, ns, "watched", "watched-nginx", 1).await?;
    run.expect(&["Foo added"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let updated = patch_replicas(&mut run, &foos, "foo", "watched", 2).await?;
    run.expect(&["Foo updated"]).await?;
    drop(foo);
    run.note(format!(
        "kubectl -n {ns} create deployment watched-nginx --image nginx:latest   # the capture creates it as step 5 would: controlled by Foo watched"
    )).await;
    Api::<Deployment>::namespaced(env.client.clone(), ns)
        .create(&PostParams::default(), &new_deployment(&updated))
        .await?;
    run.expect(&["Deployment added"]).await?;
    create_foreign_deployment(Some(&mut run), &env.client, ns, "unowned").await?;
    run.expect(&["Deployment added", "unowned"]).await?;
    run.note("sleep 10   # the resync period").await;
    run.expect(&["same resourceVersion"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    delete(&mut run, &deployments, "deployment", "watched-nginx").await?;
    run.expect(&["Deployment deleted", "watched-nginx"]).await?;
    delete(&mut run, &foos, "foo", "watched").await?;
    run.expect(&["Foo deleted"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    run.terminate().await
}

pub(in crate::book) async fn step_4(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step4";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-4", ns, &["--fail-first", "3"])?;
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, &env.client, ns, "flaky", "flaky", 1).await?;
    run.expect(&["done attempt 4"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    run.note(format!(
        "kubectl -n {ns} label foo flaky round=1   # a change: synced again, without failures now"
    ))
    .await;
    foos.patch(
        "flaky",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"round": "1"}}})),
    )
    .await?;
    run.expect(&["done attempt 5"]).await?;
    run.drain_for(Duration::from_millis(500)).await;
    run.terminate().await
}

pub(in crate::book) async fn step_5(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step5";
    testcluster::create_namespace(&env.client, ns).await?;
    create_foreign_deployment(None, &env.client, ns, "taken").await?;
    let mut run = Run::start(env, "step-5", ns, &[])?;
    run.transcript.insert(
        0,
        format!(">>> kubectl -n {ns} create deployment taken --image nginx:latest   # before the step starts; no owner"),
    );
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, &env.client, ns, "web", "web-nginx", 2).await?;
    run.expect(&["creating Deployment"]).await?;
    run.expect(&["Successfully synced", "web"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    create_foo(&mut run, &env.client, ns, "squatter", "taken", 3).await?;
    run.expect(&["Error syncing", "squatter"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    patch_replicas(&mut run, &deployments, "deployment", "web-nginx", 5).await?;
    run.expect(&["updating Deployment"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    delete(&mut run, &deployments, "deployment", "web-nginx").await?;
    run.expect(&["creating Deployment", "web-nginx"]).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;
    run.terminate().await
}

pub(in crate::book) async fn step_6(env: &Env) -> Result<Vec<String>> {
    let ns = "book-step6";
    testcluster::create_namespace(&env.client, ns).await?;
    let mut run = Run::start(env, "step-6", ns, &[])?;
    run.expect(&["Starting 2 workers"]).await?;
    create_foo(&mut run, &env.client, ns, "status", "status-nginx", 2).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let available = |want: i32| {
        let foos = foos.clone();
        async move {
            let foo = foos.get("status").await.ok()?;
            (foo.status?.available_replicas == want).then_some(())
        }
    };
    eventually("2 available replicas in the Foo's status", || available(2)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;
    patch_replicas(&mut run, &foos, "foo", "status", 3).await?;
    eventually("3 available replicas in the Foo's status", || available(3)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;
    run.terminate().await
}

/// Steps 7 and 8 through one scenario, so that their chapters can be read
/// side by side: a Foo that syncs and one whose Deployment name is taken;
/// others label the owned Deployment and change its image; the Foo scales;
/// nothing happens for longer than Go's 30 s resync period; the Foo is
/// deleted. Returns the transcript and the Events listed after the step
/// exited, so that their counts are those of the whole transcript.
pub(in crate::book) async fn whole_controller(
    env: &Env,
    bin: &str,
) -> Result<(Vec<String>, Vec<String>)> {
    let ns = format!("book-{}", bin.replace('-', ""));
    let ns = ns.as_str();
    testcluster::create_namespace(&env.client, ns).await?;
    create_foreign_deployment(None, &env.client, ns, "occupied").await?;
    let mut run = Run::start(env, bin, ns, &[])?;
    run.transcript.insert(
        0,
        format!(">>> kubectl -n {ns} create deployment occupied --image nginx:latest   # before the step starts; no owner"),
    );
    run.expect(&["Starting workers"]).await?;
    create_foo(&mut run, &env.client, ns, "good", "good-nginx", 1).await?;
    run.expect(&["Successfully synced", "good"]).await?;
    create_foo(&mut run, &env.client, ns, "blocked", "occupied", 1).await?;
    run.expect(&["Error syncing", "blocked"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let available = |want: i32| {
        let foos = foos.clone();
        async move { (foos.get("good").await.ok()?.status?.available_replicas == want).then_some(()) }
    };
    eventually("1 available replica in good's status", || available(1)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, &env.client, ns).await?;

    // Others edit the Deployment good owns, each under its own field manager,
    // with what `kubectl label` and `kubectl set image` send.
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    let edits = [
        (
            format!("kubectl -n {ns} label deployment good-nginx team=blue"),
            "kubectl-label",
            Patch::Merge(json!({"metadata": {"labels": {"team": "blue"}}})),
        ),
        (
            format!("kubectl -n {ns} set image deployment/good-nginx nginx=nginx:1.27"),
            "kubectl-set",
            Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.27"}]}}}})),
        ),
    ];
    for (command, manager, patch) in edits {
        run.note(command).await;
        let params = PatchParams {
            field_manager: Some(manager.into()),
            ..PatchParams::default()
        };
        deployments.patch("good-nginx", &params, &patch).await?;
    }
    run.drain_for(Duration::from_secs(2)).await;
    deployment_state(&mut run, &deployments, "good-nginx").await?;
    patch_replicas(&mut run, &foos, "foo", "good", 2).await?;
    eventually("2 available replicas in good's status", || available(2)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    deployment_state(&mut run, &deployments, "good-nginx").await?;

    run.note("sleep 35   # nothing changes, for longer than Go's 30 s resync period")
        .await;
    run.drain_for(Duration::from_secs(35)).await;

    delete(&mut run, &foos, "foo", "good").await?;
    eventually("good-nginx garbage-collected", || {
        let deployments = deployments.clone();
        async move {
            deployments
                .get_opt("good-nginx")
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await?;
    run.note(format!(
        "kubectl -n {ns} get deployment good-nginx   # NotFound: the garbage collector deleted it with its owner"
    ))
    .await;
    run.drain_for(Duration::from_secs(1)).await;
    let transcript = run.terminate().await?;
    Ok((transcript, events_table(&env.client, ns).await?))
}

/// `kubectl get deployment NAME` with the fields others edit in the scenario
/// of [`whole_controller`]: replicas, image, the label `team`.
async fn deployment_state(run: &mut Run, deployments: &Api<Deployment>, name: &str) -> Result<()> {
    let d = deployments.get(name).await?;
    let ns = deployments.namespace().unwrap_or_default();
    run.note(format!(
        "kubectl -n {ns} get deployment {name} -o custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas,IMAGE:.spec.template.spec.containers[0].image,TEAM:.metadata.labels.team"
    ))
    .await;
    let spec = d.spec.as_ref();
    let image = spec
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone());
    let row = vec![
        d.name_any(),
        spec.and_then(|s| s.replicas)
            .map_or("<none>".into(), |r| r.to_string()),
        image.unwrap_or_else(|| "<none>".into()),
        d.labels()
            .get("team")
            .cloned()
            .unwrap_or_else(|| "<none>".into()),
    ];
    run.transcript.extend(
        show::table(&["NAME", "REPLICAS", "IMAGE", "TEAM"], &[row])
            .lines()
            .map(str::to_string),
    );
    Ok(())
}

/// The Events sample-controller recorded in `ns`, as the `$` line lists them.
async fn events_table(client: &Client, ns: &str) -> Result<Vec<String>> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().fields("reportingController=sample-controller");
    let mut items = events.list(&params).await?.items;
    items.sort_by_key(|e| {
        let regarding = e.regarding.as_ref().and_then(|r| r.name.clone());
        (
            regarding,
            e.metadata.creation_timestamp.clone().map(|t| t.0),
        )
    });
    let rows: Vec<Vec<String>> = items
        .into_iter()
        .map(|e| {
            vec![
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.regarding.and_then(|r| r.name).unwrap_or_default(),
                e.action.unwrap_or_default(),
                e.series.map_or("<none>".into(), |s| s.count.to_string()),
                e.note.unwrap_or_default(),
            ]
        })
        .collect();
    let mut lines = vec![format!(
        "$ kubectl -n {ns} get events.events.k8s.io --field-selector reportingController=sample-controller --sort-by .regarding.name -o custom-columns=TYPE:.type,REASON:.reason,REGARDING:.regarding.name,ACTION:.action,COUNT:.series.count,NOTE:.note"
    )];
    lines.extend(
        show::table(
            &["TYPE", "REASON", "REGARDING", "ACTION", "COUNT", "NOTE"],
            &rows,
        )
        .lines()
        .map(str::to_string),
    );
    Ok(lines)
}

/// Step 6 as a ServiceAccount that RBAC grants nothing: the preflight message
/// of steps 1–7, which exit (step 8 warns instead: [`rbac_warnings`]).
pub(in crate::book) async fn rbac_forbidden(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let ns = "book-rbac";
    testcluster::create_namespace(&env.client, ns).await?;
    let path = cp.service_account_kubeconfig(ns, "controller").await?;
    let mut run = Run::start_with(env, &path, "step-6", ns, &[])?;
    run.transcript[0] = format!(
        "$ cargo run --bin step-6 -- --kubeconfig sa.kubeconfig --namespace {ns}   # a token of ServiceAccount {ns}/controller, which no RoleBinding names"
    );
    run.wait().await
}
