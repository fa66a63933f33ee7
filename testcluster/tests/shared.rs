//! Two tests on one control plane per test binary ([`testcluster::shared`]); each test uses
//! its own namespace and its own client (clients are bound to the test's tokio runtime).

use anyhow::Result;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};

async fn namespaced_configmap_roundtrip(namespace: &str) -> Result<()> {
    let cp = testcluster::shared().await?;
    let client = cp.client().await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({ "metadata": { "name": namespace } }))?,
        )
        .await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(client, namespace);
    configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
                "metadata": { "name": "settings" },
                "data": { "namespace": namespace },
            }))?,
        )
        .await?;
    let read = configmaps.get("settings").await?;
    assert_eq!(
        read.data
            .and_then(|d| d.get("namespace").cloned())
            .as_deref(),
        Some(namespace)
    );
    Ok(())
}

#[tokio::test]
async fn first_test_on_the_shared_control_plane() -> Result<()> {
    namespaced_configmap_roundtrip("shared-one").await
}

#[tokio::test]
async fn second_test_on_the_shared_control_plane() -> Result<()> {
    namespaced_configmap_roundtrip("shared-two").await
}
