//! End-to-end: the static musl build of step 8 (what the Dockerfile puts
//! in the image, built with the same command), run against the control
//! plane with the arguments, environment, ServiceAccount and probes of
//! manifests/controller.yaml and manifests/rbac.yaml.
//!
//! Its own test binary: the release build takes minutes of both cores.
//! `cargo xtask test` starts it earlier, beside the tests that mostly wait
//! on API servers, at the lowest CPU priority (testsuite/src/beside.rs), so
//! that here it is usually done.

mod support;

use std::path::PathBuf;

use support::*;

/// Builds step 8 for x86_64-unknown-linux-musl exactly as the Dockerfile
/// does (in its own target directory, so it never waits on this test's
/// cargo), and returns the binary's path. Under `cargo xtask test` it is
/// usually built already: the build starts beside the earlier tests.
fn build_musl_step_8() -> PathBuf {
    let (cargo, binary) =
        course::cargo::musl_step_8(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    let status = cargo.std().status().expect("run cargo build");
    assert!(
        status.success(),
        "the musl build failed: it needs `rustup target add x86_64-unknown-linux-musl` and musl-gcc (Debian: musl-tools), which `cargo xtask test` installs"
    );
    binary
}

/// Whether an ELF file asks for a dynamic loader (has a PT_INTERP header).
fn has_interpreter(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "an ELF file");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let at = phoff + i * size;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 3 // PT_INTERP
    })
}

#[tokio::test]
async fn the_static_musl_binary_runs_with_the_manifests_args_rbac_and_probes() {
    let (cp, client) = cluster().await;
    let binary = build_musl_step_8();
    let bytes = std::fs::read(&binary).unwrap();
    assert!(
        !has_interpreter(&bytes),
        "statically linked: no dynamic loader"
    );

    // The real RBAC objects from manifests/rbac.yaml.
    for doc in manifest("rbac.yaml") {
        apply(&client, &doc, true).await.unwrap();
    }
    let deployment = manifest("controller.yaml")
        .into_iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let account = pod["serviceAccountName"].as_str().unwrap();
    let lease_ns = deployment["metadata"]["namespace"].as_str().unwrap();
    let container = &pod["containers"][0];
    let kubeconfig = cp
        .service_account_kubeconfig(lease_ns, account)
        .await
        .unwrap();

    // The manifest's arguments, bound to any free loopback port instead of
    // every interface's 8080.
    let ns = namespace(&client, "musl").await;
    let mut args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().replace("0.0.0.0:8080", ANY_PORT))
        .collect();
    assert!(args.iter().any(|a| a == ANY_PORT), "{args:?}");
    args.extend(["--kubeconfig".into(), kubeconfig.display().to_string()]);
    args.extend(["--namespace".into(), ns.clone()]);
    // What the downward API would set.
    let envs: Vec<&str> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(envs.contains(&"POD_NAME") && envs.contains(&"POD_NAMESPACE"));
    let downward = [
        ("POD_NAMESPACE", lease_ns),
        ("POD_NAME", "sample-controller-test-0"),
    ];
    let mut step = Step::start_program_with_env("musl step-8", &binary, &args, &downward);
    step.expect(&["became leader", &format!("lease={lease_ns}/")])
        .await;
    let port = step.http_port().await;

    let liveness = container["livenessProbe"]["httpGet"]["path"]
        .as_str()
        .unwrap();
    let readiness = container["readinessProbe"]["httpGet"]["path"]
        .as_str()
        .unwrap();
    eventually("the readiness probe passes", || async {
        (http_get(port, readiness).await.map(|r| r.0) == Some(200)).then_some(())
    })
    .await;
    assert_eq!(http_get(port, liveness).await.map(|r| r.0), Some(200));

    create_foo(&client, &ns, "static", "static-nginx", Some(2)).await;
    eventually("static converged", || async {
        converged(&client, &ns, "static", "static-nginx", 2)
            .await
            .then_some(())
    })
    .await;
    assert!(metric(port, "sample_controller_reconciles_total").await >= 1.0);
    let (status, output) = step.terminate().await;
    assert!(status.success(), "{output}");
    assert!(
        !output.contains("RBAC denies"),
        "rbac.yaml grants everything:\n{output}"
    );
    println!(
        "static musl step-8 ({:.1} MiB) ran as {lease_ns}/{account} with {args:?}",
        bytes.len() as f64 / 1048576.0
    );
}
