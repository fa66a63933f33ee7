//! Starts a real control plane (building missing binaries first), rolls out a Deployment,
//! installs a CRD, deletes a namespace, and checks that dropping the harness stops every
//! process.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use testcluster::{Binary, ControlPlane, KWOK_NODE_NAME, Options};

const TIMEOUT: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_rolls_out_and_processes_stop() -> Result<()> {
    // kube-scheduler and kwok only if they are already available (they are not built here).
    let kwok = testcluster::binaries::locate(Binary::Kwok)?.is_some()
        && testcluster::binaries::locate(Binary::KubeScheduler)?.is_some();
    let cp = ControlPlane::start(Options {
        scheduler_and_kwok: kwok,
        ..Options::default()
    })
    .await?;
    let processes = cp.processes();
    assert_eq!(processes.len(), if kwok { 5 } else { 3 });
    assert!(processes.iter().all(|p| p.is_running()));

    if let Err(err) = exercise(&cp, kwok).await {
        cp.keep_data_dir();
        return Err(err);
    }

    drop(cp);
    for p in &processes {
        assert!(!p.is_running(), "{} (pid {}) still running", p.name, p.pid);
        assert!(
            !std::path::Path::new(&format!("/proc/{}", p.pid)).exists(),
            "{} (pid {}) not reaped",
            p.name,
            p.pid
        );
    }
    Ok(())
}

async fn exercise(cp: &ControlPlane, kwok: bool) -> Result<()> {
    let client = cp.client().await?;

    testcluster::install_crd_yaml(&client, WIDGET_CRD).await?;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({ "metadata": { "name": "e2e" } }))?,
        )
        .await?;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "e2e");
    create_web(&deployments).await?;

    if kwok {
        let available = await_condition(deployments.clone(), "web", |d: Option<&Deployment>| {
            d.and_then(|d| d.status.as_ref())
                .and_then(|s| s.available_replicas)
                == Some(1)
        });
        tokio::time::timeout(TIMEOUT, available)
            .await
            .context("Deployment web never had availableReplicas == 1")??;
        let pods: Api<Pod> = Api::namespaced(client.clone(), "e2e");
        let pods = pods.list(&ListParams::default()).await?.items;
        assert_eq!(pods.len(), 1);
        let pod = &pods[0];
        assert_eq!(
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            Some(KWOK_NODE_NAME)
        );
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
    } else {
        let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "e2e");
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let owned_by_web = replica_sets
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .flat_map(|rs| rs.metadata.owner_references.iter().flatten())
                .any(|owner| owner.kind == "Deployment" && owner.name == "web");
            if owned_by_web {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                bail!("no ReplicaSet owned by Deployment web");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    // Namespace deletion completes only if kube-controller-manager's namespace controller
    // (and kwok, for scheduled pods) do their part.
    namespaces.delete("e2e", &DeleteParams::default()).await?;
    let uid = ns.metadata.uid.context("namespace without uid")?;
    let deleted = await_condition(namespaces.clone(), "e2e", conditions::is_deleted(&uid));
    tokio::time::timeout(TIMEOUT, deleted)
        .await
        .context("namespace e2e was not deleted")??;
    Ok(())
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: { kind: Widget, listKind: WidgetList, plural: widgets, singular: widget }
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// The fake node's heartbeat lapses for a minute (kwok stopped; around a
/// kube-apiserver restart its Lease renewals can lapse as long): pods that
/// were Ready stay Ready and the Deployment stays available. With
/// kube-controller-manager's default grace period (50 s) the node was marked
/// NotReady, its pods' Ready condition False, and kwok never set it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_stay_ready_through_a_minute_without_the_fake_nodes_heartbeat() -> Result<()> {
    let mut cp = ControlPlane::start(Options::default()).await?;
    let client = cp.client().await?;
    testcluster::create_namespace(&client, "lapse").await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "lapse");
    create_web(&deployments).await?;
    let available = |n: i32| {
        await_condition(deployments.clone(), "web", move |d: Option<&Deployment>| {
            d.and_then(|d| d.status.as_ref())
                .and_then(|s| s.available_replicas)
                .unwrap_or(0)
                == n
        })
    };
    tokio::time::timeout(TIMEOUT, available(1))
        .await
        .context("Deployment web never had availableReplicas == 1")??;

    cp.stop_kwok()?;
    tokio::time::sleep(Duration::from_secs(65)).await;
    cp.start_kwok()?;
    tokio::time::sleep(Duration::from_secs(15)).await;

    let web = deployments.get("web").await?;
    let now = web.status.and_then(|s| s.available_replicas).unwrap_or(0);
    if now != 1 {
        cp.keep_data_dir();
        bail!("after a minute without the node's heartbeat, web has {now} available, not 1");
    }
    Ok(())
}

/// Creates Deployment `web`: one nginx replica.
async fn create_web(deployments: &Api<Deployment>) -> Result<()> {
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": { "name": "web" },
                "spec": {
                    "replicas": 1,
                    "selector": { "matchLabels": { "app": "web" } },
                    "template": {
                        "metadata": { "labels": { "app": "web" } },
                        "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] },
                    },
                },
            }))?,
        )
        .await?;
    Ok(())
}
