//! Repository automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! * `cargo xtask cluster build`: build the missing control-plane binaries (and kubectl) into the cache.
//! * `cargo xtask cluster up`: start a control plane in the background (kubeconfig in
//!   `~/.cache/sample-controller-rs/cluster/kubeconfig`), install `manifests/crd.yaml`, and
//!   print the `export` lines for the cached kubectl and that kubeconfig.
//! * `cargo xtask cluster status` / `cluster down`.
//! * `cargo xtask demo`: step 8 and the example Foo, on your cluster or a local one.
//! * `cargo xtask watch step-N`: a step's flow (watch events, handlers, queue, workers,
//!   requests, Events) drawn live on a page at 127.0.0.1, for a projector.
//! * `cargo xtask steps`: write what the step folders make (the README's table of steps, the
//!   teacher notes' table of Go's branches, the workshop starters and their `[[bin]]` list).
//! * `cargo xtask check step-N`: a workshop starter (or `--reference`, the step) against its
//!   behaviour checks on a real API server, one line per behaviour.
//! * `cargo xtask prepare`: ready a machine for the workshop the day before (builds everything,
//!   starts the control plane once, runs one check), then work offline.
//! * `cargo xtask test`: the README's test command (it starts with `cargo xtask setup`).
//! * `cargo xtask setup`: install what the tests need and a fresh machine lacks.
//! * `cargo xtask parity`: the Go-versus-Rust parity tests alone.
//! * `cargo xtask faults`: the fault suite alone, one line per fault.
//! * `cargo xtask bench`: figures for the book's Performance page.
//! * `cargo xtask heap-profile`: step 8's heap at its largest, by dhat.
//! * `cargo xtask first-build`: cold builds of the floor (the shared crate's dependencies), a step or every step, per revision.

mod bench;
mod beside;
mod book;
mod bump;
mod check;
mod chromium;
mod demo;
#[cfg(test)]
mod devtools;
mod firstbuild;
mod generated;
mod gosource;
mod heap;
mod html;
#[cfg(test)]
mod imports;
mod kubectl;
mod lanes;
mod markdown;
mod measure;
mod oldest;
#[cfg(test)]
mod pins;
mod prepare;
mod preprocess;
mod setup;
mod steps;
mod timeline;
mod watch;
mod workshop;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use testcluster::{Binary, ControlPlane, Options};

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
    #[command(about = watch::about())]
    Watch(watch::WatchArgs),
    /// Check a workshop starter (workshop/step-N.rs) against a real API server: one line per
    /// behaviour, exit 0 when all pass.
    Check(check::CheckArgs),
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
    /// Only the fault suite (tests/faults.rs): steps 7 and 8 on the local control plane while things
    /// go wrong; prints one line per fault with what was checked.
    Faults,
    /// Measure Rust steps 7 and 8 against the Go original and a bare client (takes about half an hour).
    Bench(bench::BenchArgs),
    /// Time cold builds (`--bin step-1`, `--bins`) of two revisions, with cargo's per-crate
    /// timings: the first-build table of the Performance page.
    FirstBuild(firstbuild::FirstBuildArgs),
    /// Profile step 8's heap with dhat while it converges N Foos: the heap at its largest,
    /// by crate and by allocation site.
    HeapProfile(heap::HeapArgs),
    /// Move the course to another Kubernetes release (versions.toml, the Go wrapper
    /// modules, the k8s-openapi feature) and list the book passages whose Go source
    /// changed; `--dry-run` only lists them.
    BumpKubernetes(bump::BumpArgs),
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
    /// xtask/src/workshop/specs.rs; `--check` only says which are stale.
    Workshop {
        /// Fail if a committed starter is not what would be written.
        #[arg(long)]
        check: bool,
        /// Write every starter finished (each gap with the reference's code)
        /// into DIR instead (workshop/tests/starters.rs checks them).
        #[arg(long, value_name = "DIR", conflicts_with = "check")]
        finished: Option<PathBuf>,
    },
    /// The book in book/: `outputs` (captured step runs), `build`, `check`, `preprocess`, `go-link`.
    #[command(subcommand)]
    Book(BookCli),
}

/// `cargo xtask book …`: the commands of book/ (mod.rs), and the Go-source ones of gosource.rs.
#[derive(Subcommand)]
enum BookCli {
    #[command(flatten)]
    Book(book::BookCommand),
    /// The mdBook preprocessor of book.toml's `[preprocessor.gosource]`: expands `{{#go …}}`
    /// into the Go source from the module cache (reads `[context, book]` JSON on stdin).
    Preprocess {
        #[command(subcommand)]
        command: Option<preprocess::PreprocessCommand>,
    },
    /// Print the book's `go:` link to a Go declaration, with the pinned URL it resolves to,
    /// e.g. `go-link controller.go syncHandler`.
    GoLink {
        /// A .go file of the Go sample-controller, relative to its module root.
        file: String,
        /// A top-level function, method, type, const or var.
        name: String,
    },
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
        Command::Cluster(ClusterCommand::Build { binaries }) => build(&binaries),
        Command::BuildCluster => build(&[]),
        Command::Cluster(ClusterCommand::Up {
            no_kwok,
            api_server_only,
        }) => up(no_kwok || api_server_only, api_server_only).await,
        Command::Cluster(ClusterCommand::Down) => down(),
        Command::Cluster(ClusterCommand::Status) => status().await,
        Command::Demo => demo::demo().await,
        Command::Watch(args) => watch::watch(args).await,
        Command::Check(args) => return exit_code(check::check(args).await),
        Command::Prepare => prepare::prepare().await,
        Command::Test => test().await,
        Command::Setup => setup::ensure_test_prerequisites(),
        Command::Parity => parity(),
        Command::Oldest => oldest::oldest(),
        Command::Faults => faults(),
        Command::Bench(args) => bench::bench(args).await,
        Command::FirstBuild(args) => firstbuild::first_build(args),
        Command::HeapProfile(args) => heap::heap_profile(args).await,
        Command::Workshop {
            finished: Some(dir),
            ..
        } => workshop::write_finished(&dir),
        Command::Workshop { check, .. } => workshop::workshop(check),
        Command::Steps { check } => steps::steps(check),
        Command::BumpKubernetes(args) => bump::bump(args),
        Command::Book(BookCli::Book(command)) => book::run(command).await,
        Command::Book(BookCli::Preprocess { command }) => preprocess::preprocess(command),
        Command::Book(BookCli::GoLink { file, name }) => gosource::print_link(&file, &name),
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

/// `cargo ARGS` in the repository, as the user's own shell would run it
/// (none of the variables `cargo xtask` got for xtask itself: see
/// `testcluster::cargo`), so that it shares their builds.
fn cargo(args: &[&str]) -> testcluster::cargo::Cargo {
    testcluster::cargo::command(&repo_root(), args)
}

/// The repository root (parent of `xtask/`).
fn repo_root() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir.parent().unwrap_or(xtask_dir).to_path_buf()
}

/// The workspace's own packages, as `cargo metadata --no-deps` lists them
/// from `root`.
fn workspace_packages(root: &Path) -> Result<Vec<cargo_metadata::Package>> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .current_dir(root)
        .no_deps()
        .exec()
        .context("cargo metadata")?;
    Ok(metadata.workspace_packages().into_iter().cloned().collect())
}

/// `path` relative to the repository (as it is, if outside it).
fn rel(path: &Path) -> String {
    let root = repo_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` (relative to the
/// repository when relative), else `target/` in the repository.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                repo_root().join(dir)
            }
        }
        None => repo_root().join("target"),
    }
}

/// Where `cargo build` puts the dev profile's binaries (and `examples/`).
fn debug_dir() -> PathBuf {
    target_dir().join("debug")
}

/// The README's test command: what a fresh machine lacks (system packages,
/// the musl target, the book's tools; see `setup`), the control-plane
/// binaries (so their build shows its progress), then every test of the
/// workspace, every step against the oldest Kubernetes claimed, the captures
/// re-run and compared, and the book check.
async fn test() -> Result<()> {
    setup::ensure_test_prerequisites()?;
    println!(
        "==> Control-plane binaries (built once into ~/.cache/sample-controller-rs; a first build takes about 8 minutes on 2 cores)"
    );
    build(&[])?;
    println!(
        "==> The workspace's tests (unit, mock API server, end-to-end and parity against local control planes), in two lanes"
    );
    clear_fault_report()?;
    // Every step is a package of its own, so `cargo test` builds no step
    // binary for the end-to-end tests; built first, their own `cargo build
    // -p step-N` (tests/support) finds nothing to do.
    let status = cargo(&["build", "--bins"])
        .std()
        .status()
        .context("running cargo build --bins")?;
    if !status.success() {
        anyhow::bail!("cargo build --bins failed");
    }
    // The image test's musl build and the oldest release's servers, built
    // meanwhile on the cores the tests leave idle.
    let beside = beside::start();
    let tested = lanes::run();
    let built = beside.finish();
    tested?;
    built?;
    println!("==> The fault suite (tests/faults.rs, run above)");
    print_fault_report()?;
    println!("==> cargo xtask oldest (every step against the oldest Kubernetes the README claims)");
    oldest::oldest()?;
    println!(
        "==> cargo xtask book outputs --check (every capture re-run against a new control plane and compared with the committed one)"
    );
    book::run(book::BookCommand::Outputs {
        only: Vec::new(),
        check: true,
    })
    .await?;
    println!(
        "==> cargo xtask book check (includes, anchors, links, pinned Go links, diagrams in Chromium)"
    );
    book::check()
}

/// Runs `command`; an error naming it if it cannot start or fails.
pub(crate) fn run_tool(command: &mut std::process::Command) -> Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("running {shown}"))?;
    anyhow::ensure!(status.success(), "{shown} failed ({status})");
    Ok(())
}

/// `cargo test --test parity`, after building what it needs.
fn parity() -> Result<()> {
    build(&[])?;
    let status = cargo(&[
        "test",
        "--test",
        "parity",
        "--",
        "--nocapture",
        "--test-threads=1",
    ])
    .std()
    .status()
    .context("running cargo test --test parity")?;
    if !status.success() {
        anyhow::bail!("the parity tests failed");
    }
    Ok(())
}

/// `cargo test --test faults`, then the one-line summary each fault wrote.
fn faults() -> Result<()> {
    build(&[])?;
    clear_fault_report()?;
    let status = cargo(&["test", "--test", "faults", "--", "--test-threads=9"])
        .std()
        .status()
        .context("running cargo test --test faults")?;
    print_fault_report()?;
    if !status.success() {
        anyhow::bail!("the fault suite failed");
    }
    Ok(())
}

/// Where each fault test writes its summary line (tests/support `report`).
fn fault_report_dir() -> PathBuf {
    repo_root().join("target").join("fault-report")
}

fn clear_fault_report() -> Result<()> {
    match std::fs::remove_dir_all(fault_report_dir()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Prints the faults' summary lines in order; fails unless all twelve reported.
fn print_fault_report() -> Result<()> {
    let mut lines = Vec::new();
    for n in 1..=12 {
        let path = fault_report_dir().join(format!("fault-{n}.txt"));
        match std::fs::read_to_string(&path) {
            Ok(line) => lines.push(line.trim_end().to_string()),
            Err(_) => lines.push(format!(
                "fault {n}: FAILED (no report; see the test output above)"
            )),
        }
    }
    for line in &lines {
        println!("  {line}");
    }
    if lines
        .iter()
        .any(|l| l.ends_with("see the test output above)"))
    {
        anyhow::bail!("not every fault passed");
    }
    Ok(())
}

fn build(binaries: &[Binary]) -> Result<()> {
    let binaries = if binaries.is_empty() {
        &Binary::ALL[..]
    } else {
        binaries
    };
    for &binary in binaries {
        let path = testcluster::binaries::ensure(binary)?;
        println!(
            "{:<24} {:<8} {}",
            binary.name(),
            binary.version(),
            path.display()
        );
    }
    Ok(())
}

async fn up(no_kwok: bool, api_server_only: bool) -> Result<()> {
    let dir = testcluster::cluster_dir()?;
    let kubeconfig = dir.join("kubeconfig");
    if testcluster::recorded_processes(&dir)?
        .iter()
        .any(|p| p.is_running())
    {
        println!(
            "The cluster is already up (`cargo xtask cluster status` for details). To use it:"
        );
        print_exports(&kubeconfig);
        return Ok(());
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("removing the stale state in {}", dir.display()))?;
    }

    let mut scheduler_and_kwok = !no_kwok;
    if scheduler_and_kwok {
        // kube-scheduler and kwok are optional here: without them Pods stay Pending.
        let ensured = tokio::task::spawn_blocking(|| {
            testcluster::binaries::ensure(Binary::KubeScheduler)?;
            testcluster::binaries::ensure(Binary::Kwok)
        })
        .await?;
        if let Err(err) = ensured {
            eprintln!(
                "warning: starting without kube-scheduler and kwok (Pods will stay Pending): {err:#}"
            );
            scheduler_and_kwok = false;
        }
    }
    // kubectl is not part of the control plane: without it, the cluster still starts.
    let kubectl = tokio::task::spawn_blocking(|| testcluster::binaries::ensure(Binary::Kubectl));
    if let Err(err) = kubectl.await? {
        eprintln!(
            "warning: no kubectl {} (use your own): {err:#}",
            Binary::Kubectl.version()
        );
    }
    let cp = ControlPlane::start(Options {
        controller_manager: !api_server_only,
        scheduler_and_kwok,
        data_dir: Some(dir.clone()),
        detached: true,
        apiserver_flags: Vec::new(),
    })
    .await?;

    let crd = repo_root().join("manifests/crd.yaml");
    if crd.is_file() {
        let client = cp.client().await?;
        match testcluster::install_crd(&client, &crd).await {
            Ok(()) => println!("Installed {}", crd.display()),
            Err(err) => eprintln!("warning: the cluster is up, but {err:#}"),
        }
    }

    let log_dir = cp.log_dir();
    let server = cp.server_url().to_string();
    let processes = cp.detach();
    println!(
        "Control plane running at {server} (logs in {}):",
        log_dir.display()
    );
    for p in &processes {
        println!("  {:<24} pid {}", p.name, p.pid);
    }
    println!("Stop it with `cargo xtask cluster down`. To use it, paste:");
    print_exports(&kubeconfig);
    Ok(())
}

/// The lines that put the cached kubectl on `PATH` and point `KUBECONFIG` at the cluster.
fn print_exports(kubeconfig: &Path) {
    for line in kubectl::export_lines(kubeconfig) {
        println!("{line}");
    }
}

fn down() -> Result<()> {
    let dir = testcluster::cluster_dir()?;
    if !dir.exists() {
        println!("No cluster state in {}: nothing to stop.", dir.display());
        return Ok(());
    }
    let stopped = testcluster::stop_recorded(&dir)?;
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    println!(
        "Stopped {stopped} process(es) and removed {}.",
        dir.display()
    );
    Ok(())
}

async fn status() -> Result<()> {
    let dir = testcluster::cluster_dir()?;
    let processes = testcluster::recorded_processes(&dir)?;
    if processes.is_empty() {
        anyhow::bail!("the cluster is not up (start it with `cargo xtask cluster up`)");
    }
    let mut all_running = true;
    for p in &processes {
        let state = if p.is_running() { "running" } else { "gone" };
        all_running &= p.is_running();
        println!("  {:<24} pid {:<8} {state}", p.name, p.pid);
    }
    let kubeconfig = dir.join("kubeconfig");
    let client = testcluster::client_for_kubeconfig(&kubeconfig).await?;
    let request = http::Request::get("/readyz").body(Vec::new())?;
    let ready = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.request_text(request),
    )
    .await;
    match ready {
        Ok(Ok(body)) if body.trim() == "ok" => {}
        Ok(Ok(body)) => anyhow::bail!("kube-apiserver is not ready: {body}"),
        Ok(Err(err)) => anyhow::bail!("kube-apiserver is not reachable: {err}"),
        Err(_) => anyhow::bail!("kube-apiserver did not answer /readyz within 10s"),
    }
    let nodes: Api<Node> = Api::all(client);
    let node_names: Vec<String> = nodes
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    println!("kube-apiserver is ready; nodes: {node_names:?}");
    print_exports(&kubeconfig);
    if !all_running {
        anyhow::bail!(
            "some processes are gone; restart with `cargo xtask cluster down && cargo xtask cluster up`"
        );
    }
    Ok(())
}
