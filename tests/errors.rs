//! End-to-end: what a learner sees when the cluster is not ready for the steps.
//!
//! Its own control plane (kube-apiserver and etcd only) without the Foo CRD,
//! and one whose API server cannot stream initial lists.

mod support;

use support::Step;
use testcluster::{ControlPlane, Options};

/// This binary's control plane: never gets the CRD.
async fn bare_cluster() -> &'static ControlPlane {
    static CP: tokio::sync::OnceCell<ControlPlane> = tokio::sync::OnceCell::const_new();
    CP.get_or_init(|| async {
        ControlPlane::start(Options::api_server_only())
            .await
            .expect("control plane")
    })
    .await
}

#[tokio::test]
async fn every_step_without_the_crd_exits_non_zero_naming_the_install_command() {
    let cp = bare_cluster().await;
    // Every step of the registry: a new step folder is held to this too.
    for bin in course::steps::STEPS.iter().map(|step| step.binary) {
        let (status, output) = Step::start(bin, cp.kubeconfig_path(), Some("default"), &[])
            .wait()
            .await;
        assert!(!status.success(), "{bin}: {output}");
        assert!(
            output.contains("the Foo CRD (foos.samplecontroller.k8s.io) is not installed"),
            "{bin}: {output}"
        );
        assert!(
            output.contains("kubectl apply -f manifests/crd.yaml"),
            "{bin}: {output}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_api_server_is_named_with_a_way_to_start_one() {
    let cp = bare_cluster().await;
    // A loopback port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let master = format!("https://127.0.0.1:{port}");
    let args = [
        "--kubeconfig".to_string(),
        cp.kubeconfig_path().display().to_string(),
        "--master".into(),
        master.clone(),
    ];
    let (status, output) = Step::start_with_args("step-1", &args).wait().await;
    assert!(!status.success(), "{output}");
    assert!(
        output.contains(&format!("the API server at {master}/ is unreachable")),
        "{output}"
    );
    assert!(output.contains("cargo xtask cluster up"), "{output}");
}

#[tokio::test]
async fn a_missing_kubeconfig_file_is_named() {
    let args = ["--kubeconfig".to_string(), "/nonexistent/kubeconfig".into()];
    let (status, output) = Step::start_with_args("step-1", &args).wait().await;
    assert!(!status.success(), "{output}");
    assert!(
        output.contains("cannot read the kubeconfig /nonexistent/kubeconfig"),
        "{output}"
    );
}

#[tokio::test]
async fn an_error_for_the_user_prints_once_without_a_backtrace_even_with_rust_backtrace_set() {
    let args = ["--kubeconfig".to_string(), "/nonexistent/kubeconfig".into()];
    for bin in ["step-1", "step-7", "step-8"] {
        let path = std::path::PathBuf::from(Step::binary_path(bin));
        let (status, output) = Step::start_program_with_env(
            bin,
            &path,
            &args,
            &[("RUST_BACKTRACE", "1"), ("RUST_LIB_BACKTRACE", "1")],
        )
        .wait()
        .await;
        assert_eq!(status.code(), Some(1), "{bin}: {output}");
        assert!(
            output.starts_with("Error: cannot read the kubeconfig /nonexistent/kubeconfig"),
            "{bin}: {output}"
        );
        assert_eq!(
            output.matches("No such file or directory").count(),
            1,
            "{bin}: each cause once:\n{output}"
        );
        assert!(
            !output.to_lowercase().contains("backtrace"),
            "{bin}: no backtrace:\n{output}"
        );
        assert!(output.lines().count() <= 3, "{bin}: {output}");
    }
}

#[tokio::test]
async fn an_invalid_flag_is_rejected_with_usage() {
    let args = ["--workers".to_string(), "many".into()];
    let (status, output) = Step::start_with_args("step-7", &args).wait().await;
    assert_eq!(status.code(), Some(2), "{output}");
    assert!(
        output.contains("invalid value 'many' for '--workers <WORKERS>'"),
        "{output}"
    );
}

#[tokio::test]
async fn an_api_server_without_watch_list_gets_a_list_then_a_watch_instead() {
    // Kubernetes 1.33 ships with the WatchList gate off (1.32 and 1.34+ on):
    // client-go's reflector falls back to LIST then WATCH there, and so does
    // src/informer.rs's watch_list.
    let (cp, _client) = support::own_cluster(support::without_watch_list()).await;
    for (bin, ready) in [("step-2", "Caches synced"), ("step-8", "Starting workers")] {
        let mut step = Step::start(bin, cp.kubeconfig_path(), Some("default"), &[]);
        step.expect(&[ready]).await;
        let (status, output) = step.terminate().await;
        assert!(status.success(), "{bin}: {output}");
        assert!(
            output.contains("does not stream initial lists"),
            "{bin} fell back:\n{output}"
        );
    }
}
