//! Turning API errors into messages a learner can act on.
//!
//! Go logs the raw error and, for a missing CRD, waits forever in
//! `WaitForCacheSync`. The steps check up front instead ([`preflight`]) and
//! exit non-zero with a message that names the fix.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{ListParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};

use crate::Foo;
use crate::config::{Connection, NamespaceFlag};
use crate::crd::{CRD_NAME, INSTALL_CRD_HINT};

/// One permission a step needs, e.g. `create` on `deployments.apps`.
#[derive(Debug, Clone, Copy)]
pub struct Permission {
    /// The verb: `list`, `watch`, `create`, `update`, `patch`, …
    pub verb: &'static str,
    /// API group (`""` for core, `apps`, `samplecontroller.k8s.io`, …).
    pub group: &'static str,
    /// Plural resource name.
    pub resource: &'static str,
    /// Subresource, such as `status`.
    pub subresource: Option<&'static str>,
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if let Some(sub) = self.subresource {
            write!(f, "/{sub}")?;
        }
        if !self.group.is_empty() {
            write!(f, " (API group {:?})", self.group)?;
        }
        Ok(())
    }
}

/// Shorthand for a [`Permission`] without subresource.
pub const fn permission(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
) -> Permission {
    Permission {
        verb,
        group,
        resource,
        subresource: None,
    }
}

/// Explains a failed API call: `what` says what was attempted ("list foos
/// in all namespaces"), `url` is the API server's address.
/// An empty `url` leaves the address out.
pub fn explain(err: &kube::Error, what: &str, url: &str) -> String {
    let at = if url.is_empty() {
        String::new()
    } else {
        format!(" at {url}")
    };
    match err {
        // Compare the code, not `is_not_found()`: for an API group that does not
        // exist the server answers a plain-text "404 page not found", which
        // carries no `NotFound` reason.
        kube::Error::Api(status) if status.code == 404 && what.contains("foos") => format!(
            "cannot {what}: the Foo CRD ({CRD_NAME}) is not installed in the cluster{at}.\n\
             Install it with: {INSTALL_CRD_HINT}"
        ),
        kube::Error::Api(status) if status.is_forbidden() => format!(
            "cannot {what}: RBAC forbids it for the user in your kubeconfig ({}).\n\
             Grant the verbs listed in manifests/rbac.yaml, or use a kubeconfig with more rights.",
            status.message
        ),
        kube::Error::Api(status) if status.code == 401 => format!(
            "cannot {what}: the API server{at} rejected the credentials (401 Unauthorized). \
             Check the user in your kubeconfig."
        ),
        kube::Error::Api(status) => format!(
            "cannot {what}: the API server answered {} {}: {}",
            status.code, status.reason, status.message
        ),
        kube::Error::HyperError(_) | kube::Error::Service(_) => format!(
            "cannot {what}: the API server{at} is unreachable ({err}).\n\
             Is the cluster running? Start one with `cargo xtask cluster up` (or kind/k3d), \
             or point --kubeconfig / --master / KUBECONFIG at a running cluster."
        ),
        other => format!("cannot {what}: {other}"),
    }
}

/// Explains a watcher error (the informer retries these with backoff; the
/// explanation says what would stop the retries from succeeding).
pub fn explain_watch(err: &watcher::Error, resource: &str) -> String {
    let url = "";
    match err {
        watcher::Error::InitialListFailed(e) => explain(e, &format!("list {resource}"), url),
        watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            explain(e, &format!("watch {resource}"), url)
        }
        other => format!("watching {resource}: {other}"),
    }
}

// ANCHOR: preflight
/// Checks, before anything starts, that the cluster is reachable, the Foo CRD
/// is installed and RBAC grants `needed` in the chosen namespace. Each
/// failure is an error whose message names the fix.
pub async fn preflight(
    connection: &Connection,
    ns: &NamespaceFlag,
    needed: &[Permission],
) -> anyhow::Result<()> {
    check_reachable(connection, ns).await?;
    let denied = missing_permissions(&connection.client, ns, needed).await;
    if !denied.is_empty() {
        anyhow::bail!(
            "RBAC forbids the user in your kubeconfig to do what this step needs in {}:\n  - {}\n\
             Grant these (manifests/rbac.yaml has the controller's full list), or use a kubeconfig with more rights.",
            ns.describe(),
            denied.join("\n  - ")
        );
    }
    Ok(())
}
// ANCHOR_END: preflight

/// Fails with an explanation if the API server cannot be reached or the Foo
/// CRD is not installed. A forbidden list passes: that is RBAC's business,
/// which [`missing_permissions`] names verb by verb.
pub async fn check_reachable(connection: &Connection, ns: &NamespaceFlag) -> anyhow::Result<()> {
    let Connection { client, url } = connection;
    let scope = ns.describe();
    let one = ListParams::default().limit(1);
    // Reachability first: a one-item list of Deployments exists in every cluster.
    let forbidden = |err: &kube::Error| matches!(err, kube::Error::Api(s) if s.is_forbidden());
    if let Err(err) = ns.api::<Deployment>(client).list_metadata(&one).await
        && !forbidden(&err)
    {
        anyhow::bail!(explain(&err, &format!("list deployments in {scope}"), url));
    }
    if let Err(err) = ns.api::<Foo>(client).list_metadata(&one).await
        && !forbidden(&err)
    {
        anyhow::bail!(explain(&err, &format!("list foos in {scope}"), url));
    }
    Ok(())
}

/// The permissions in `needed` that RBAC denies the current user, each as
/// "verb resource.group (in scope)". A review that cannot be asked counts as allowed:
/// the real request will say what is wrong.
pub async fn missing_permissions(
    client: &Client,
    ns: &NamespaceFlag,
    needed: &[Permission],
) -> Vec<String> {
    let mut denied = Vec::new();
    for permission in needed {
        if !allowed(client, ns, permission).await.unwrap_or(true) {
            denied.push(permission.to_string());
        }
    }
    denied
}

/// Asks the API server whether the current user may do `permission`
/// (a SelfSubjectAccessReview, what `kubectl auth can-i` sends).
async fn allowed(
    client: &Client,
    ns: &NamespaceFlag,
    permission: &Permission,
) -> kube::Result<bool> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: ns.namespace.clone(),
                verb: Some(permission.verb.into()),
                group: Some(permission.group.into()),
                resource: Some(permission.resource.into()),
                subresource: permission.subresource.map(Into::into),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

// ANCHOR: fatal
/// An error that ends a step: `main` returns it, and Rust prints it once as
/// `Error: …` and exits 1. Unlike `anyhow::Error`, it prints no backtrace,
/// whatever `RUST_BACKTRACE` says (the message is meant for the user, and
/// panics keep theirs), and it leaves out a cause whose text the message
/// before it already contains.
pub struct Fatal(anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for Fatal {
    fn from(err: E) -> Self {
        Fatal(err.into())
    }
}

impl std::fmt::Debug for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = self.0.to_string();
        write!(f, "{shown}")?;
        for cause in self.0.chain().skip(1) {
            let text = cause.to_string();
            if !shown.contains(&text) {
                write!(f, "\n  caused by: {text}")?;
                shown = text;
            }
        }
        Ok(())
    }
}
// ANCHOR_END: fatal

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fatal_error_prints_each_cause_once_and_no_backtrace() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let read =
            anyhow::Error::new(io).context("failed to read kubeconfig: No such file or directory");
        let err = Fatal::from(read.context("cannot read the kubeconfig /nonexistent"));
        assert_eq!(
            format!("{err:?}"),
            "cannot read the kubeconfig /nonexistent\n  caused by: failed to read kubeconfig: No such file or directory"
        );
    }
}
