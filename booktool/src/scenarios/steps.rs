//! What the step chapters' captures share: the scenario steps 7 and 8 both
//! run ([`whole_controller`]), and the chapters' captures that are not one
//! step's run: the missing CRD, the protected group, the LIST and WATCH
//! counts, RBAC refusing step 6.

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use sample_controller::Foo;
use testcluster::ControlPlane;

use crate::capture::*;

/// The LIST and WATCH requests of Foos and Deployments that Go's
/// sample-controller, step 7 and step 8 send while they start, each alone,
/// from kube-apiserver's `apiserver_request_total` (a watch is counted when
/// it ends, so each program is stopped before the count).
pub(crate) async fn watch_list(env: &Env, cp: &ControlPlane) -> Result<Vec<String>> {
    let go = testcluster::binaries::ensure(testcluster::Binary::SampleController)?;
    let kubeconfig = env.kubeconfig.display().to_string();
    let programs = [
        (
            format!(
                "Go sample-controller {}",
                testcluster::binaries::STAGING_VERSION
            ),
            go,
            vec![format!("-kubeconfig={kubeconfig}")],
        ),
        (
            "step-7".to_string(),
            env.bin.join("step-7"),
            vec!["--kubeconfig".into(), kubeconfig.clone()],
        ),
        (
            "step-8".to_string(),
            env.bin.join("step-8"),
            vec!["--kubeconfig".into(), kubeconfig.clone()],
        ),
    ];
    let mut lines = vec![
        "(LIST and WATCH requests of foos and deployments per program: the difference in kube-apiserver's apiserver_request_total, as `kubectl get --raw /metrics` shows it, before and after the program ran for a second)".to_string(),
    ];
    for (name, exe, args) in programs {
        let before = performance::measure::request_counts(&env.client).await?;
        let log = cp
            .log_dir()
            .join(format!("watch-list-{}.log", name.replace(' ', "-")));
        let mut child = performance::measure::start(&exe, &args, &log).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Some(pid) = child.id() {
            let _ = testcluster::signal(pid, libc::SIGTERM); // gone already: wait() says so
        }
        tokio::time::timeout(Duration::from_secs(15), child.wait())
            .await
            .context("a program did not stop on SIGTERM")??;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = performance::measure::request_counts(&env.client).await?;
        let counts = performance::measure::diff(&before, &after);
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
    lines.extend(watch_list_bytes(env).await?);
    Ok(lines)
}

/// How many Foos the watch-list size is measured with.
const MEASURED_FOOS: usize = 200;

/// The bytes of one watch-list of [`MEASURED_FOOS`] Foos (their initial
/// events and the bookmark after them), asked as kube asks (no
/// `Accept-Encoding`) and as client-go asks (`Accept-Encoding: gzip`, which
/// Go's HTTP transport adds): what Kubernetes 1.37's `WatchListCompression`
/// saves a client that asks.
async fn watch_list_bytes(env: &Env) -> Result<Vec<String>> {
    let ns = "book-watch-list-bytes";
    testcluster::create_namespace(&env.client, ns).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let creates = (0..MEASURED_FOOS).map(|i| {
        let foo = Foo::new(
            &format!("foo-{i}"),
            sample_controller::FooSpec {
                deployment_name: format!("foo-{i}"),
                replicas: Some(1),
            },
        );
        let foos = foos.clone();
        async move { foos.create(&Default::default(), &foo).await }
    });
    for created in futures::future::join_all(creates).await {
        created.context("creating a Foo to measure the watch-list with")?;
    }
    let path = format!(
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/{ns}/foos?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    );
    let mut lines = vec![format!(
        "(the bytes of one watch-list of {MEASURED_FOOS} Foos, their initial events and the bookmark after them, read for 3 s)"
    )];
    for (who, gzip) in [
        ("kube (no Accept-Encoding)", false),
        ("client-go (Accept-Encoding: gzip)", true),
    ] {
        let (bytes, encoding) = response_bytes(&env.client, &path, gzip).await?;
        lines.push(format!(
            "{who:<36} {bytes} bytes, Content-Encoding: {encoding}"
        ));
    }
    Api::<k8s_openapi::api::core::v1::Namespace>::all(env.client.clone())
        .delete(ns, &Default::default())
        .await
        .context("deleting the namespace of the measured Foos")?;
    Ok(lines)
}

/// The bytes of the response to a GET of `path` within 3 s, with or without
/// `Accept-Encoding: gzip`, and the encoding the API server answered with.
async fn response_bytes(client: &kube::Client, path: &str, gzip: bool) -> Result<(usize, String)> {
    use http_body_util::BodyExt;
    let mut request = http::Request::get(path);
    if gzip {
        request = request.header(http::header::ACCEPT_ENCODING, "gzip");
    }
    let response = client
        .send(request.body(kube::client::Body::from(Vec::new()))?)
        .await
        .with_context(|| format!("GET {path}"))?;
    anyhow::ensure!(
        response.status().is_success(),
        "GET {path}: {}",
        response.status()
    );
    let encoding = response
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_string();
    let mut body = response.into_body();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    let mut bytes = 0;
    while let Ok(Some(frame)) = tokio::time::timeout_at(deadline, body.frame()).await {
        if let Some(data) = frame.context("reading the watch")?.data_ref() {
            bytes += data.len();
        }
    }
    Ok((bytes, encoding))
}

pub(crate) async fn crd_missing(env: &Env) -> Result<Vec<String>> {
    let run = Run::start(env, "step-1", "default", &[])?;
    run.wait().await
}

/// The API server's answer to the Foo CRD without `api-approved.kubernetes.io`
/// (a dry run: nothing is stored; run before the CRD is installed).
pub(crate) async fn protected_group(env: &Env) -> Result<Vec<String>> {
    let line = "kubectl annotate --local -f manifests/crd.yaml api-approved.kubernetes.io- -o yaml | kubectl create --dry-run=server -f -   # manifests/crd.yaml minus the annotation";
    let mut lines = vec![format!("$ {line}")];
    lines.extend(env.shell_expecting(line, 1).await?);
    Ok(lines)
}

/// The command line that creates `manifests/watched-nginx.yaml`'s Deployment,
/// controlled by the Foo `watched` of `ns` (whose UID it fills in).
pub(crate) fn owned_deployment_command(ns: &str) -> String {
    format!(
        r#"sed "s/FOO_UID/$(kubectl -n {ns} get foo watched -o jsonpath='{{.metadata.uid}}')/" manifests/watched-nginx.yaml | kubectl -n {ns} create -f -   # controlled by Foo watched, as step 5 would create it"#
    )
}

/// Steps 7 and 8 through one scenario, so that their chapters can be read
/// side by side: a Foo that syncs and one whose Deployment name is taken;
/// others label the owned Deployment and change its image; the Foo scales;
/// nothing happens for longer than Go's 30 s resync period; the Foo is
/// deleted. Returns the transcript and the Events listed after the step
/// exited, so that their counts are those of the whole transcript.
pub(crate) async fn whole_controller(env: &Env, bin: &str) -> Result<(Vec<String>, Vec<String>)> {
    let ns = &step_namespace(bin);
    let before = env
        .before(&[
            create_namespace_command(ns),
            foreign_deployment_command(ns, "occupied"),
        ])
        .await?;
    let mut run = Run::start(env, bin, ns, &[])?;
    run.transcript.splice(0..0, before);
    run.expect(&["Starting workers"]).await?;
    create_foo(&mut run, env, ns, "good", "good-nginx", 1).await?;
    run.expect(&["Successfully synced", "good"]).await?;
    create_foo(&mut run, env, ns, "blocked", "occupied", 1).await?;
    run.expect(&["Error syncing", "blocked"]).await?;
    let foos: Api<Foo> = Api::namespaced(env.client.clone(), ns);
    let available = |want: i32| {
        let foos = foos.clone();
        async move { (foos.get("good").await.ok()?.status?.available_replicas == want).then_some(()) }
    };
    eventually("1 available replica in good's status", || available(1)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    kubectl_get(&mut run, env, ns).await?;

    // Others edit the Deployment good owns.
    run.run(
        env,
        format!("kubectl -n {ns} label deployment good-nginx team=blue"),
    )
    .await?;
    run.run(
        env,
        format!("kubectl -n {ns} set image deployment/good-nginx nginx=nginx:1.27"),
    )
    .await?;
    run.drain_for(Duration::from_secs(2)).await;
    run.show(env, deployment_state_command(ns, "good-nginx"))
        .await?;
    patch_replicas(&mut run, env, ns, "foo", "good", 2).await?;
    eventually("2 available replicas in good's status", || available(2)).await?;
    run.drain_for(Duration::from_secs(1)).await;
    run.show(env, deployment_state_command(ns, "good-nginx"))
        .await?;

    run.note("sleep 35   # nothing changes, for longer than Go's 30 s resync period")
        .await;
    run.drain_for(Duration::from_secs(35)).await;

    delete(&mut run, env, ns, "foo", "good").await?;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
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
    run.show_expecting(
        env,
        format!(
            "kubectl -n {ns} get deployment good-nginx   # the garbage collector deleted it with its owner"
        ),
        1,
    )
    .await?;
    run.drain_for(Duration::from_secs(1)).await;
    let transcript = run.terminate().await?;
    let events = events_command(ns);
    let mut lines = vec![format!("$ {events}")];
    lines.extend(env.shell(&events).await?);
    Ok((transcript, lines))
}

/// `kubectl get deployment NAME` with the fields others edit in the scenario
/// of [`whole_controller`]: replicas, image, the label `team`.
fn deployment_state_command(ns: &str, name: &str) -> String {
    format!(
        "kubectl -n {ns} get deployment {name} -o 'custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas,IMAGE:.spec.template.spec.containers[0].image,TEAM:.metadata.labels.team'"
    )
}

/// The Events sample-controller recorded in `ns`, one line per Event series.
fn events_command(ns: &str) -> String {
    format!(
        "kubectl -n {ns} get events.events.k8s.io --field-selector reportingController=sample-controller --sort-by .regarding.name -o 'custom-columns=TYPE:.type,REASON:.reason,REGARDING:.regarding.name,ACTION:.action,COUNT:.series.count,NOTE:.note'"
    )
}

/// Step 6 as a ServiceAccount that RBAC grants nothing: the preflight message
/// of steps 1–7, which exit (step 8 warns instead: [`super::cluster::rbac_warnings`]).
pub(crate) async fn rbac_forbidden(env: &Env) -> Result<Vec<String>> {
    let ns = "book-rbac";
    let (path, setup) = no_rbac_setup(env, ns).await?;
    let mut run = Run::start_with(env, &path, "step-6", ns, &[])?;
    run.transcript[0] =
        format!("$ cargo run --bin step-6 -- --kubeconfig {SA_KUBECONFIG} --namespace {ns}");
    run.transcript.splice(0..0, setup);
    run.wait().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sample_controller::FooSpec;
    use sample_controller::deployment::new_deployment;

    #[test]
    fn watched_nginx_is_what_step_5_would_create() {
        let path = course::workspace::repo_root().join("manifests/watched-nginx.yaml");
        let text = std::fs::read_to_string(path).expect("read manifests/watched-nginx.yaml");
        let manifest: Deployment =
            serde_saphyr::from_str(&text.replace("FOO_UID", "0123")).expect("a Deployment");
        let mut foo = Foo::new(
            "watched",
            FooSpec {
                deployment_name: "watched-nginx".into(),
                replicas: Some(2),
            },
        );
        foo.metadata.uid = Some("0123".into());
        assert_eq!(manifest, new_deployment(&foo));
        // The manifest's comment quotes the command step 3's capture runs.
        let command = owned_deployment_command("book-step3");
        let command = command.split("   #").next().unwrap_or_default();
        assert!(text.contains(command), "{command}");
    }
}
