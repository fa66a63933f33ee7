//! The repository's commands, run as `cargo xtask <command>` (alias in
//! `.cargo/config.toml`). This file is the command line and nothing else:
//! each command parses its flags and calls one function of the crate whose
//! purpose it is (ARCHITECTURE.md maps them).
//!
//! | Command | Crate |
//! |---|---|
//! | `cluster build`, `up`, `status`, `down`; `demo`; `watch step-N`; `check step-N`; `workshop` | `course` (the control plane a learner keeps, the live flow, the checker, the starters) |
//! | `book outputs`, `build`, `po`, `check`, `preprocess`, `go-link` | `booktool` |
//! | `bench`, `first-build`, `heap-profile` | `performance` |
//! | `test`, `setup`, `parity`, `faults`, `oldest`, `prepare` | `testsuite` |
//! | `steps`, `bump-kubernetes` | `upkeep` |

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use testcluster::Binary;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Automation for sample-controller-rs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Local Kubernetes control plane on 127.0.0.1 (no Docker needed; Go builds the binaries).
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Same as `cluster build`.
    BuildCluster,
    /// Run the controller against a cluster (yours, or a local one) and watch a Foo converge.
    Demo,
    // Its help line names the steps it draws, from the step registry.
    #[command(about = course::watch::about())]
    Watch(course::watch::WatchArgs),
    /// Check a workshop starter (workshop/step-N.rs) against a real API server: one line per
    /// behaviour, exit 0 when all pass.
    Check(course::exercise::CheckArgs),
    /// Ready a machine for the workshop, the day before: fetch crates, build the control plane,
    /// kubectl and the whole workspace, start the control plane once and run one check.
    Prepare,
    /// Every test: sets up what is missing (see `setup`), builds the control plane if needed,
    /// then `cargo test --workspace`, every step against the oldest Kubernetes claimed, and the
    /// book check.
    Test,
    /// Only the set-up `test` starts with: Chromium and musl-gcc (as root or with `sudo -n`),
    /// Rust's musl target, the book's tools; each skipped when present.
    Setup,
    /// Only the parity tests: Go sample-controller, Rust step 7 and step 8, same scenarios, same end state.
    Parity,
    /// Only the check of every step against the oldest Kubernetes the course claims
    /// (versions.toml's `oldest_kubernetes`; its servers are built once, ~4.5 minutes on 2 cores).
    Oldest,
    /// Only the fault suite (tests/faults/): steps 7 and 8 on the local control plane while things
    /// go wrong; prints one line per fault with what was checked.
    Faults,
    /// Measure Rust steps 7 and 8 against the Go original and a bare client (takes about half an hour).
    Bench(performance::bench::BenchArgs),
    /// Time cold builds (`--bin step-1`, `--bins`) of two revisions, with cargo's per-crate
    /// timings: the first-build table of the Performance page.
    FirstBuild(performance::firstbuild::FirstBuildArgs),
    /// Profile step 8's heap with dhat while it converges N Foos: the heap at its largest,
    /// by crate and by allocation site.
    HeapProfile(performance::heap::HeapArgs),
    /// Move the course to another Kubernetes release (versions.toml, the Go wrapper
    /// modules, the k8s-openapi feature) and list the book passages whose Go source
    /// changed; `--dry-run` only lists them.
    BumpKubernetes(upkeep::bump::BumpArgs),
    /// Write what the step folders make: README.md's table of steps and the
    /// teacher notes' table of Go's branches (from each
    /// steps/step-N/step.toml), then what `workshop` writes; `--check` only
    /// says what is stale. Run it after changing a step.toml.
    Steps {
        /// Fail if a committed file is not what would be written.
        #[arg(long)]
        check: bool,
    },
    /// Write the workshop starters (workshop/step-N.rs) from the steps and
    /// course/src/starters/specs.rs; `--check` only says which are stale.
    Workshop {
        /// Fail if a committed starter is not what would be written.
        #[arg(long)]
        check: bool,
        /// Write every starter finished (each gap with the reference's code)
        /// into DIR instead (workshop/tests/starters.rs checks them).
        #[arg(long, value_name = "DIR", conflicts_with = "check")]
        finished: Option<PathBuf>,
    },
    /// The book in book/: `outputs` (captured step runs), `build`, `po`, `check`, and mdBook's
    /// `preprocess`, `go-link` (the booktool crate).
    #[command(subcommand)]
    Book(booktool::BookCommand),
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Build the missing binaries (etcd, kube-apiserver, kube-controller-manager,
    /// kube-scheduler, kubectl, kwok, sample-controller) into ~/.cache/sample-controller-rs/bin.
    Build {
        /// Only these binaries (default: all).
        binaries: Vec<Binary>,
    },
    /// Start the control plane in the background and print the `export PATH=…` (kubectl)
    /// and `export KUBECONFIG=…` lines that use it.
    Up {
        /// Do not start kube-scheduler and kwok (no fake node: Pods stay Pending).
        #[arg(long)]
        no_kwok: bool,
        /// Only etcd and kube-apiserver (implies --no-kwok).
        #[arg(long)]
        api_server_only: bool,
    },
    /// Stop the background control plane and delete its state.
    Down,
    /// Say whether the background control plane is running and reachable.
    Status,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Cluster(ClusterCommand::Build { binaries }) => course::cluster::build(&binaries),
        Command::BuildCluster => course::cluster::build(&[]),
        Command::Cluster(ClusterCommand::Up {
            no_kwok,
            api_server_only,
        }) => course::cluster::up(no_kwok || api_server_only, api_server_only).await,
        Command::Cluster(ClusterCommand::Down) => course::cluster::down(),
        Command::Cluster(ClusterCommand::Status) => course::cluster::status().await,
        Command::Demo => course::demo::demo().await,
        Command::Watch(args) => course::watch::watch(args).await,
        Command::Check(args) => return exit_code(course::exercise::check(args).await),
        Command::Prepare => testsuite::prepare::prepare().await,
        Command::Test => testsuite::suites::test().await,
        Command::Setup => testsuite::setup::ensure_test_prerequisites(),
        Command::Parity => testsuite::suites::parity(),
        Command::Oldest => testsuite::oldest::oldest(),
        Command::Faults => testsuite::suites::faults(),
        Command::Bench(args) => performance::bench::bench(args).await,
        Command::FirstBuild(args) => performance::firstbuild::first_build(args),
        Command::HeapProfile(args) => performance::heap::heap_profile(args).await,
        Command::Workshop {
            finished: Some(dir),
            ..
        } => course::starters::write_finished(&dir),
        Command::Workshop { check, .. } => course::starters::workshop(check),
        Command::Steps { check } => upkeep::steps::steps(check),
        Command::BumpKubernetes(args) => upkeep::bump::bump(args),
        Command::Book(command) => booktool::run(command).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The exit code of a command that decides its own success (`check`), or
/// 1 after printing its error.
fn exit_code(result: Result<ExitCode>) -> ExitCode {
    result.unwrap_or_else(|err| {
        eprintln!("error: {err:#}");
        ExitCode::FAILURE
    })
}
