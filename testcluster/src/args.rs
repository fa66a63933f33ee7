//! The command-line flags of each component. Every listener is on 127.0.0.1.

use std::path::Path;

use crate::pki::Pki;

/// Service IP range given to kube-apiserver and kube-controller-manager.
const SERVICE_CIDR: &str = "10.0.0.0/24";
/// Pod IP range kwok assigns from.
const POD_CIDR: &str = "10.1.0.0/16";

/// Free loopback ports for one start attempt.
pub(crate) struct Ports {
    pub etcd: u16,
    pub etcd_peer: u16,
    pub apiserver: u16,
    pub controller_manager: u16,
    pub scheduler: u16,
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// etcd, single member, data in `data_dir`. No fsync: the data is thrown away anyway.
pub(crate) fn etcd(data_dir: &Path, ports: &Ports) -> Vec<String> {
    let client_url = format!("http://127.0.0.1:{}", ports.etcd);
    let peer_url = format!("http://127.0.0.1:{}", ports.etcd_peer);
    vec![
        "--name=default".into(),
        format!("--data-dir={}", path(data_dir)),
        format!("--listen-client-urls={client_url}"),
        format!("--advertise-client-urls={client_url}"),
        format!("--listen-peer-urls={peer_url}"),
        format!("--initial-advertise-peer-urls={peer_url}"),
        format!("--initial-cluster=default={peer_url}"),
        "--unsafe-no-fsync=true".into(),
    ]
}

/// kube-apiserver with token authentication (admin in system:masters) and RBAC.
///
/// `service_account_admission: false` disables the ServiceAccount admission plugin, for runs
/// without kube-controller-manager: nobody would create the `default` ServiceAccount it
/// insists on (envtest does the same).
pub(crate) fn kube_apiserver(
    pki: &Pki,
    ports: &Ports,
    service_account_admission: bool,
) -> Vec<String> {
    let mut args = vec![
        format!("--etcd-servers=http://127.0.0.1:{}", ports.etcd),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--secure-port={}", ports.apiserver),
        format!("--cert-dir={}", path(&pki.dir)),
        format!("--tls-cert-file={}", path(&pki.serving_cert)),
        format!("--tls-private-key-file={}", path(&pki.serving_key)),
        format!("--client-ca-file={}", path(&pki.ca_cert)),
        format!("--token-auth-file={}", path(&pki.token_file)),
        // Lets kube-controller-manager and kube-scheduler find a request-header CA in the
        // extension-apiserver-authentication ConfigMap instead of logging errors about it.
        format!(
            "--requestheader-client-ca-file={}",
            path(&pki.front_proxy_ca_cert)
        ),
        "--requestheader-allowed-names=front-proxy-client".into(),
        "--requestheader-username-headers=X-Remote-User".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        "--authorization-mode=Node,RBAC".into(),
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        format!(
            "--service-account-issuer=https://127.0.0.1:{}",
            ports.apiserver
        ),
        format!("--service-account-key-file={}", path(&pki.sa_pub)),
        format!("--service-account-signing-key-file={}", path(&pki.sa_key)),
        "--allow-privileged=true".into(),
        // The `kubernetes` Service cannot get 127.0.0.1 as an endpoint (loopback addresses
        // are invalid there); don't try every 10 s and log an error each time.
        "--endpoint-reconciler-type=none".into(),
    ];
    if !service_account_admission {
        args.push("--disable-admission-plugins=ServiceAccount".into());
    }
    args
}

/// Flags shared by kube-controller-manager and kube-scheduler: admin kubeconfig for the API
/// and for delegated authentication/authorization, HTTPS health endpoint on `port`.
fn component(pki: &Pki, kubeconfig: &Path, port: u16) -> Vec<String> {
    let kubeconfig = path(kubeconfig);
    vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", path(&pki.serving_cert)),
        format!("--tls-private-key-file={}", path(&pki.serving_key)),
        "--leader-elect=false".into(),
    ]
}

/// kube-controller-manager with all default controllers.
pub(crate) fn kube_controller_manager(pki: &Pki, kubeconfig: &Path, port: u16) -> Vec<String> {
    let mut args = component(pki, kubeconfig, port);
    args.extend([
        "--controllers=*".into(),
        format!("--service-account-private-key-file={}", path(&pki.sa_key)),
        format!("--root-ca-file={}", path(&pki.ca_cert)),
        format!("--cluster-signing-cert-file={}", path(&pki.ca_cert)),
        format!("--cluster-signing-key-file={}", path(&pki.ca_key)),
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        // All controllers share the admin identity: no per-controller ServiceAccount tokens
        // to mint at start-up, which keeps the start fast and simple.
        "--use-service-account-credentials=false".into(),
        // The fake node's heartbeat is kwok's Lease renewal, which can lapse for
        // tens of seconds around a kube-apiserver restart (the parity and fault
        // suites restart it). After the default grace period the node lifecycle
        // controller marks the node NotReady and its pods' Ready condition
        // False; a real kubelet would report them Ready again, kwok's stages do
        // not, so those Deployments never became available again (seen in CI:
        // three of 20 Deployments at 0 available for 240 s after the restart).
        // Five minutes outlasts any outage a test makes.
        "--node-monitor-grace-period=5m".into(),
    ]);
    args
}

/// kube-scheduler with the default profile.
pub(crate) fn kube_scheduler(pki: &Pki, kubeconfig: &Path, port: u16) -> Vec<String> {
    component(pki, kubeconfig, port)
}

/// kwok controller for the nodes annotated `kwok.x-k8s.io/node=fake`, with the Stage objects
/// in `stages`. No `--server-address` or `--node-port`: kwok then listens on nothing.
pub(crate) fn kwok(kubeconfig: &Path, stages: &Path) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", path(kubeconfig)),
        format!("--config={}", path(stages)),
        "--manage-all-nodes=false".into(),
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".into(),
        "--node-ip=127.0.0.1".into(),
        format!("--cidr={POD_CIDR}"),
        "--node-lease-duration-seconds=40".into(),
    ]
}
