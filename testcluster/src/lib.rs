//! A real Kubernetes control plane on 127.0.0.1 for end-to-end tests and demos.
//!
//! [`ControlPlane::start`] runs etcd and kube-apiserver, and optionally
//! kube-controller-manager (Deployments get ReplicaSets and Pods, garbage collection and
//! namespace deletion work) and kube-scheduler plus kwok with one fake node (Pods become
//! Running and Ready, so `status.availableReplicas` of a Deployment is real). Binaries come
//! from the environment or the cache, or are built with Go from the pinned modules in
//! `controlplane/` (see [`binaries`]).
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! let cp = testcluster::ControlPlane::start(testcluster::Options::default()).await?;
//! let client = cp.client().await?;
//! testcluster::install_crd(&client, "manifests/crd.yaml").await?;
//! // … test against `client`; dropping `cp` stops every process.
//! # Ok(()) }
//! ```
//!
//! It knows no step and no lesson: what runs against it, and how it is
//! checked, is the `course` crate's.
//!
//! Every listener binds to 127.0.0.1 on a free port. Each run gets a fresh data directory
//! (`$TMPDIR/sample-controller-rs-<pid>-<random>`) with certificates, an admin token, the
//! admin kubeconfig (`kubeconfig`), etcd's data and one log file per process (`logs/`).
//!
//! Lifetime: dropping a [`ControlPlane`] stops its processes by PID (SIGTERM, then SIGKILL
//! after 5 s) and removes the data directory, or keeps it and prints its path if the thread
//! is panicking (a failed test: logs, kubeconfig and certificates, without etcd's data),
//! [`ControlPlane::keep_data_dir`] was called, or `TESTCLUSTER_KEEP` is set (everything). The processes also die with the process that started them
//! (`PR_SET_PDEATHSIG`, see the `process` module), which is what stops the [`shared`] control
//! plane and any other kept in a static: Rust never drops statics.
//!
//! What a run leaves in `$TMPDIR`: a kept directory holds a `.kept` marker; every other
//! directory of a process that has exited (a static's, a killed run's) is removed by the
//! next [`ControlPlane::start`] ([`sweep_stale_data_dirs`]).
//!
//! Environment variables:
//!
//! | Variable | Effect |
//! |---|---|
//! | `TEST_ASSET_ETCD`, `TEST_ASSET_KUBE_APISERVER`, `TEST_ASSET_KUBE_CONTROLLER_MANAGER`, `TEST_ASSET_KUBE_SCHEDULER`, `TEST_ASSET_KWOK` | path of a prebuilt binary; wins over everything else |
//! | `KUBEBUILDER_ASSETS` | directory with prebuilt binaries (envtest layout); used for those present |
//! | `XDG_CACHE_HOME` (else `$HOME/.cache`) | base of the binary cache and of the `cluster up` state |
//! | `TMPDIR` | base of the temporary data directories |
//! | `TESTCLUSTER_KEEP` | non-empty: keep every data directory (logs) after the run |
//! | `GOPROXY`, `GOFLAGS`, `GOCACHE`, … | passed to `go build` unchanged |

mod args;
pub mod binaries;
mod control_plane;
mod objects;
mod pki;
mod process;
mod sweep;

pub use binaries::Binary;
pub use control_plane::{
    ControlPlane, EXPECT_KUBERNETES, KWOK_NODE_NAME, Options, cluster_dir, recorded_processes,
    shared, stop_recorded,
};
pub use objects::{
    apply_object, client_for_kubeconfig, create_namespace, http_get, install_crd, install_crd_yaml,
    yaml_documents,
};
pub use process::{ProcStat, RecordedProcess, die_with_parent, pid_exists, signal};
pub use sweep::{KEPT_MARKER, sweep_stale_data_dirs};

/// Where this crate's build script wrote what it makes from `versions.toml`,
/// for tools that read this crate's modules as the compiler does.
pub const OUT_DIR: &str = env!("OUT_DIR");
