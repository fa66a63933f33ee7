//! Generates, from `versions.toml` at the repository root, the constants of
//! `src/binaries.rs`: the one place each version is written.

use std::collections::BTreeMap;
use std::path::Path;

fn main() {
    versions();
}

fn versions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../versions.toml");
    println!("cargo::rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
    let versions: BTreeMap<String, String> =
        toml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let get = |key: &str| {
        versions
            .get(key)
            .unwrap_or_else(|| panic!("{}: no `{key} = \"…\"`", path.display()))
    };
    let kubernetes = get("kubernetes");
    let (minor, patch) = kubernetes
        .strip_prefix("1.")
        .and_then(|rest| rest.split_once('.'))
        .unwrap_or_else(|| panic!("kubernetes = \"{kubernetes}\" is not 1.<minor>.<patch>"));
    let consts = [
        (
            "KUBERNETES_VERSION",
            format!("v{kubernetes}"),
            "Kubernetes version of kube-apiserver, kube-controller-manager, kube-scheduler and kubectl.",
        ),
        (
            "STAGING_VERSION",
            format!("v0.{minor}.{patch}"),
            "The same release's staging modules: client-go, apimachinery, the Go sample-controller.",
        ),
        (
            "KUBERNETES_MINOR",
            format!("1.{minor}"),
            "The minor release, as the book says it (`1.MINOR`).",
        ),
        (
            "K8S_OPENAPI_FEATURE",
            format!("v1_{minor}"),
            "The k8s-openapi feature of that minor release.",
        ),
        (
            "OLDEST_KUBERNETES_VERSION",
            format!("v{}", get("oldest_kubernetes")),
            "The oldest Kubernetes the course claims: every step is checked against it.",
        ),
        ("ETCD_VERSION", format!("v{}", get("etcd")), "etcd version."),
        ("KWOK_VERSION", format!("v{}", get("kwok")), "kwok version."),
    ];
    let mut out = String::new();
    for (name, value, doc) in consts {
        out.push_str(&format!(
            "/// {doc} From `versions.toml`.\npub const {name}: &str = {value:?};\n"
        ));
    }
    out.push_str(
        "/// The Go sample-controller this project ports: a staging module of that release.\n\
         pub const SAMPLE_CONTROLLER_VERSION: &str = STAGING_VERSION;\n",
    );
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("versions.rs");
    std::fs::write(&dest, out).expect("writing versions.rs");
}
