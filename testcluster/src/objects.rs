//! What tests and tools do to a running control plane: a client for a
//! kubeconfig, a namespace, CRDs and any object applied from YAML, and a
//! plain HTTP GET of a local server (a controller's probes).

use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};

/// Creates the namespace `name` (for a test, a demo or a benchmark run).
pub async fn create_namespace(client: &kube::Client, name: &str) -> Result<()> {
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// Applies every CustomResourceDefinition in a YAML file (server-side apply) and waits until
/// each is Established.
pub async fn install_crd(client: &kube::Client, crd_yaml_path: impl AsRef<Path>) -> Result<()> {
    let path = crd_yaml_path.as_ref();
    let yaml =
        fs::read_to_string(path).with_context(|| format!("reading CRD file {}", path.display()))?;
    install_crd_yaml(client, &yaml)
        .await
        .with_context(|| format!("installing {}", path.display()))
}

/// Like [`install_crd`], from YAML text (one or more `---`-separated CRDs).
pub async fn install_crd_yaml(client: &kube::Client, yaml: &str) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for value in yaml_documents(yaml)? {
        let crd: CustomResourceDefinition = serde_json::from_value(value)?;
        let name = crd
            .metadata
            .name
            .clone()
            .ok_or_else(|| anyhow!("a CustomResourceDefinition has no metadata.name"))?;
        api.patch(
            &name,
            &PatchParams::apply("testcluster").force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("applying CRD {name}"))?;
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(30), established)
            .await
            .with_context(|| format!("CRD {name} not Established within 30s"))??;
    }
    Ok(())
}

/// The documents of a YAML stream (a manifest file), as JSON values; empty
/// documents are skipped.
pub fn yaml_documents(yaml: &str) -> Result<Vec<serde_json::Value>> {
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(yaml)?;
    Ok(documents
        .into_iter()
        .filter(|value| !value.is_null())
        .collect())
}

/// Server-side applies one object of any kind (its resource found by
/// discovery) as `field_manager`. With `dry_run`, the API server validates
/// and admits it without storing it (`kubectl apply --dry-run=server`).
pub async fn apply_object(
    client: &kube::Client,
    object: &serde_json::Value,
    field_manager: &str,
    dry_run: bool,
) -> Result<()> {
    use kube::ResourceExt;
    use kube::api::{DynamicObject, GroupVersionKind};
    use kube::discovery::{Scope, pinned_kind};
    let object: DynamicObject = serde_json::from_value(object.clone())?;
    let types = object.types.as_ref().context("an object without kind")?;
    let what = format!("{} {}", types.kind, object.name_any());
    let (resource, capabilities) = pinned_kind(client, &GroupVersionKind::try_from(types)?)
        .await
        .with_context(|| format!("discovering the resource of {what}"))?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => {
            let ns = object
                .namespace()
                .with_context(|| format!("{what} has no namespace"))?;
            Api::namespaced_with(client.clone(), &ns, &resource)
        }
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let mut params = PatchParams::apply(field_manager).force();
    params.dry_run = dry_run;
    api.patch(&object.name_any(), &params, &Patch::Apply(&object))
        .await
        .with_context(|| format!("applying {what}"))?;
    Ok(())
}

/// `GET http://127.0.0.1:{port}{path}` (HTTP/1.1, no TLS): the status code
/// and the body. For the endpoints a step serves with `--http-address`.
pub async fn http_get(port: u16, path: &str) -> Result<(u16, String)> {
    use http_body_util::BodyExt;
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .with_context(|| format!("connecting to 127.0.0.1:{port}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let request = http::Request::get(path)
            .header(http::header::HOST, "127.0.0.1")
            .body(http_body_util::Empty::<hyper::body::Bytes>::new())?;
        let response = sender.send_request(request).await?;
        let code = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        anyhow::Ok((code, String::from_utf8_lossy(&body).into_owned()))
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .with_context(|| format!("GET 127.0.0.1:{port}{path}: no answer within 10 s"))?
}

/// A kube client for the kubeconfig at `path` (its current context).
pub async fn client_for_kubeconfig(path: &Path) -> Result<kube::Client> {
    Ok(kube::Client::try_from(kube_config(path).await?)?)
}

pub(crate) async fn kube_config(path: &Path) -> Result<kube::Config> {
    let kubeconfig = Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}
