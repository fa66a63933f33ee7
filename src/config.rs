//! Command-line flags and the client built from them.
//!
//! Go: the `-kubeconfig` and `-master` flags and `clientcmd.BuildConfigFromFlags`
//! in main.go ([the flags](https://github.com/kubernetes/sample-controller/blob/v0.37.1/main.go),
//! [`BuildConfigFromFlags`](https://github.com/kubernetes/sample-controller/blob/v0.37.1/main.go)).

use std::path::PathBuf;

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config, Resource};

// ANCHOR: flags
/// How to reach the cluster. Go: main.go's `-kubeconfig` and `-master`.
///
/// With neither flag, kube's usual inference applies: `$KUBECONFIG`, then
/// `~/.kube/config`, then the in-cluster service account. (Go's
/// `BuildConfigFromFlags` tries in-cluster first and never reads the default
/// kubeconfig; the book explains the difference where it meets it.)
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClientFlags {
    /// Path to a kubeconfig. Only required if out-of-cluster and neither
    /// $KUBECONFIG nor ~/.kube/config points at the cluster.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The address of the Kubernetes API server. Overrides any value in the kubeconfig.
    #[arg(long, value_name = "URL")]
    pub master: Option<String>,
}

/// Which namespace a step lists or watches.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct NamespaceFlag {
    /// Only look at this namespace (default: all namespaces, like Go's informers).
    #[arg(long, short = 'n', value_name = "NAME")]
    pub namespace: Option<String>,
}
// ANCHOR_END: flags

impl NamespaceFlag {
    /// An `Api<K>` over the chosen namespace, or over all namespaces.
    pub fn api<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match &self.namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }

    /// Human-readable scope for messages: `namespace "x"` or `all namespaces`.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("namespace {ns:?}"),
            None => "all namespaces".to_string(),
        }
    }
}

// ANCHOR: client
/// Builds the client configuration from the flags. Go: `clientcmd.BuildConfigFromFlags`.
pub async fn config_from_flags(flags: &ClientFlags) -> anyhow::Result<Config> {
    let mut config = match &flags.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("cannot use the kubeconfig {}", path.display()))?
        }
        None => Config::infer().await.context(
            "no cluster configuration found: pass --kubeconfig PATH, set KUBECONFIG, \
             or start a local cluster with `cargo xtask cluster up`",
        )?,
    };
    if let Some(master) = &flags.master {
        config.cluster_url = master
            .parse()
            .with_context(|| format!("--master {master:?} is not a URL"))?;
    }
    Ok(config)
}

/// A client, and the address of the API server it talks to.
#[derive(Clone)]
pub struct Connection {
    /// One client for every resource type. Go: the two clientsets.
    pub client: Client,
    /// The API server's URL, for messages that say which cluster failed.
    pub url: String,
}

/// A client for the cluster the flags point at. Go: `kubernetes.NewForConfig`
/// and `clientset.NewForConfig`; in Rust one `Client` serves every resource type.
pub async fn client_from_flags(flags: &ClientFlags) -> anyhow::Result<Connection> {
    let config = config_from_flags(flags).await?;
    let url = config.cluster_url.to_string();
    let client = Client::try_from(config).context("cannot build a Kubernetes client")?;
    Ok(Connection { client, url })
}
// ANCHOR_END: client
