//! The fault of a verb the step's RBAC does not grant: warned about and
//! recovered from in step 8, refused at start in step 7.

use super::*;

/// `rules` without `verb` on Deployments.
pub(super) fn without_deployment_verb(
    rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>,
    verb: &str,
) -> Vec<k8s_openapi::api::rbac::v1::PolicyRule> {
    rules
        .into_iter()
        .map(|mut rule| {
            if rule.resources.as_deref() == Some(&["deployments".to_string()]) {
                rule.verbs.retain(|v| v != verb);
            }
            rule
        })
        .collect()
}

/// Fault 9, step 8: without `create deployments` it warns, logs each
/// forbidden sync, and converges once the verb is granted.
pub(super) async fn forbidden_verb_step_8(cp: &ControlPlane, client: &Client) -> String {
    let scene = Scene::new(client, 9, Eight).await;
    let kubeconfig = cp
        .service_account_kubeconfig(&scene.ns, "controller")
        .await
        .unwrap();
    // ClusterRole sample-controller (step 8's) from manifests/rbac.yaml.
    let (cluster_role, _) = manifest_roles();
    let all_rules = cluster_role.rules.unwrap();
    let without_create = without_deployment_verb(all_rules.clone(), "create");
    grant(
        client,
        &scene.ns,
        "controller",
        "controller",
        without_create,
    )
    .await;

    let mut step = Step::start("step-8", &kubeconfig, Some(&scene.ns), &[]);
    let warning = step.expect(&["RBAC denies", "create deployments"]).await;
    step.expect(&["Starting workers"]).await;
    create_foo(client, &scene.ns, "blocked", "blocked-nginx", Some(1)).await;
    let forbidden = step
        .expect(&[
            "Error syncing",
            "cannot create resource",
            "deployments",
            "forbidden",
        ])
        .await;
    step.expect(&["Error syncing", "cannot create resource"])
        .await; // retried
    assert!(step.is_running());

    grant(client, &scene.ns, "controller", "controller", all_rules).await;
    let granted = Instant::now();
    scene
        .until_converged(&mut step, "blocked", "blocked-nginx", 1)
        .await;
    let recovered = granted.elapsed();
    let (status, output) = step.terminate().await;
    assert!(status.success(), "step 8:\n{output}");
    scene.assert_nothing_else_touched(&output).await;
    let why = forbidden
        .split("error=")
        .nth(1)
        .unwrap_or(&forbidden)
        .chars()
        .take(150)
        .collect::<String>();
    assert!(warning.contains("create deployments"), "{warning}");
    format!(
        "RBAC without `create deployments`: warned at start, each sync logged {why:?}…, \
         no crash; converged {:.1}s after the verb was granted",
        recovered.as_secs_f64()
    )
}

/// Fault 9, step 7: without `create deployments` its preflight exits 1
/// before any sync, naming the permission.
pub(super) async fn forbidden_verb_step_7(cp: &ControlPlane, client: &Client) -> String {
    let scene = Scene::new(client, 9, Seven).await;
    let kubeconfig = cp
        .service_account_kubeconfig(&scene.ns, "controller")
        .await
        .unwrap();
    let all_rules = manifest_cluster_role("sample-controller-step-7")
        .rules
        .unwrap();
    let without_create = without_deployment_verb(all_rules, "create");
    grant(
        client,
        &scene.ns,
        "controller",
        "controller",
        without_create,
    )
    .await;
    create_foo(client, &scene.ns, "blocked", "blocked-nginx", Some(1)).await;

    let started = Instant::now();
    let (status, output) = Step::start("step-7", &kubeconfig, Some(&scene.ns), &[])
        .wait()
        .await;
    let took = started.elapsed();
    assert_eq!(status.code(), Some(1), "step 7:\n{output}");
    // src/diagnose.rs preflight: the scope, then one line per missing
    // permission; only this one is missing.
    let expected = format!(
        "Error: RBAC forbids the user in your kubeconfig to do what this step needs in namespace {:?}:\n  \
         - create deployments (API group \"apps\")\n\
         Grant these (manifests/rbac.yaml has the controller's full list), or use a kubeconfig with more rights.",
        scene.ns
    );
    assert!(output.contains(&expected), "step 7:\n{output}");
    assert!(
        !output.contains("Starting workers"),
        "step 7 started:\n{output}"
    );
    assert!(
        get_deployment(client, &scene.ns, "blocked-nginx")
            .await
            .is_none()
    );
    scene.assert_nothing_else_touched(&output).await;
    format!(
        "RBAC without `create deployments`: exit 1 after {:.1}s, before any sync, saying {:?}",
        took.as_secs_f64(),
        expected.lines().take(2).collect::<Vec<_>>().join(" ")
    )
}
