//! A check sweeps the namespaces earlier checks on this machine left behind
//! (their process gone), and nothing else: not a namespace kept on purpose,
//! not one of a check still running, not one another machine's check made
//! on a shared cluster, not one a user made.

use std::collections::BTreeMap;
use std::path::PathBuf;

use course::checks::{self, Target};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use testcluster::{ControlPlane, Options};

use checks::{CHECK_LABEL as BY, KEPT_LABEL as KEPT};

/// This machine's name as the checks label it.
fn host() -> String {
    let mine = checks::creator();
    let (host, _pid) = mine.rsplit_once('.').expect("HOST.PID");
    host.to_string()
}

/// A pid no process has: past the kernel's maximum.
fn dead_pid() -> u32 {
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    max + 1
}

#[tokio::test]
async fn a_check_sweeps_only_what_dead_checks_on_this_machine_left() {
    let cp = ControlPlane::start(Options::api_server_only())
        .await
        .unwrap();
    let client = cp.client().await.unwrap();
    testcluster::install_crd(
        &client,
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests/crd.yaml"),
    )
    .await
    .unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let (here, dead, alive) = (host(), dead_pid(), std::process::id());
    let cases = [
        (
            "left-by-a-dead-check",
            vec![(BY, format!("{here}.{dead}"))],
            true,
        ),
        (
            "kept-on-purpose",
            vec![(BY, format!("{here}.{dead}")), (KEPT, "true".into())],
            false,
        ),
        (
            "of-a-running-check",
            vec![(BY, format!("{here}.{alive}"))],
            false,
        ),
        (
            "of-another-machine",
            vec![(BY, format!("elsewhere.{dead}"))],
            false,
        ),
        ("a-users-own", vec![], false),
    ];
    for (name, labels, _) in &cases {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let ns = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_string()),
                labels: Some(labels),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }

    // A check with no scenario: what it does before and after them.
    let target = Target {
        program: PathBuf::from("/nonexistent"),
        kubeconfig: cp.kubeconfig_path().to_path_buf(),
        client: client.clone(),
        echo: false,
        keep: false,
    };
    let report = checks::check_scenarios(9, &[], &target).await.unwrap();
    assert!(report.namespaces.is_empty());

    for (name, _, swept) in cases {
        // Without a namespace controller, a deleted namespace stays
        // Terminating: its deletion timestamp says it was deleted.
        let deleted = namespaces
            .get(name)
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some();
        assert_eq!(deleted, swept, "namespace {name}");
    }
}
