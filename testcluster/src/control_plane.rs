//! [`ControlPlane`]: the processes started, waited for, stopped and
//! recorded; the control plane a test binary shares ([`shared`]); and the
//! one `cargo xtask cluster up` keeps running ([`cluster_dir`]).

use std::fs;
use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::api::{Api, PostParams};

use crate::args;
use crate::binaries::{self, Binary};
use crate::objects::{http_get, kube_config};
use crate::sweep::{data_dir, keep_requested, mark_kept};

use crate::pki::Pki;
use crate::process::{self, Process, RecordedProcess, STOP_GRACE};

/// Name of the fake node managed by kwok.
pub const KWOK_NODE_NAME: &str = "kwok-node-0";

/// Time allowed for kube-apiserver to become ready (slow on a loaded 2-core machine).
const APISERVER_TIMEOUT: Duration = Duration::from_secs(180);
/// Time allowed for each of the other components to become ready.
const COMPONENT_TIMEOUT: Duration = Duration::from_secs(90);

/// What to start.
#[derive(Clone, Debug)]
pub struct Options {
    /// Start kube-controller-manager (all default controllers).
    pub controller_manager: bool,
    /// Start kube-scheduler and kwok, and create the fake node [`KWOK_NODE_NAME`].
    pub scheduler_and_kwok: bool,
    /// Data directory to use instead of a fresh temporary one. It must not hold a previous
    /// run, and it is never removed by the harness.
    pub data_dir: Option<PathBuf>,
    /// Start the processes in their own session so they outlive this process (for
    /// `cargo xtask cluster up`); see [`ControlPlane::detach`].
    pub detached: bool,
    /// More kube-apiserver flags, e.g. `--feature-gates=WatchList=false`.
    pub apiserver_flags: Vec<String>,
}

impl Default for Options {
    /// Everything: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
    fn default() -> Self {
        Options {
            controller_manager: true,
            scheduler_and_kwok: true,
            data_dir: None,
            detached: false,
            apiserver_flags: Vec::new(),
        }
    }
}

impl Options {
    /// Only etcd and kube-apiserver (like envtest): no ReplicaSets, Pods or garbage collection.
    pub fn api_server_only() -> Self {
        Options {
            controller_manager: false,
            scheduler_and_kwok: false,
            ..Options::default()
        }
    }

    /// The binaries these options need, in start order.
    pub fn binaries(&self) -> Vec<Binary> {
        let mut list = vec![Binary::Etcd, Binary::KubeApiserver];
        if self.controller_manager {
            list.push(Binary::KubeControllerManager);
        }
        if self.scheduler_and_kwok {
            list.extend([Binary::KubeScheduler, Binary::Kwok]);
        }
        list
    }
}

/// A running control plane. Dropping it stops every process it started.
pub struct ControlPlane {
    data_dir: PathBuf,
    /// The data directory is a temporary one created by [`ControlPlane::start`].
    temporary: bool,
    keep: AtomicBool,
    detached: bool,
    kubeconfig: PathBuf,
    server: String,
    processes: Vec<Process>,
    /// The processes stopped to be started again (kube-apiserver, etcd): which, the path of
    /// its binary and its flags.
    stopped: Vec<(Binary, PathBuf, Vec<String>)>,
}

/// A process died because a port chosen for it was taken in the meantime.
#[derive(Debug)]
struct PortInUse(String);

impl std::fmt::Display for PortInUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PortInUse {}

impl ControlPlane {
    /// Builds missing binaries (see [`binaries`]), starts the processes and waits until they
    /// are ready: kube-apiserver's `/readyz`; kube-controller-manager's and kube-scheduler's
    /// `/healthz` and the `default` ServiceAccount; the fake node `Ready`.
    ///
    /// If a process dies during start-up, the error holds the last 20 lines of its log; the
    /// data directory is kept and its path printed.
    pub async fn start(options: Options) -> Result<ControlPlane> {
        let wanted = options.binaries();
        let paths = tokio::task::spawn_blocking(move || {
            wanted
                .into_iter()
                .map(|binary| Ok((binary, binaries::ensure(binary)?)))
                .collect::<Result<Vec<_>>>()
        })
        .await
        .context("the binary build task panicked")??;
        let exe = |binary: Binary| -> Result<PathBuf> {
            paths
                .iter()
                .find(|(b, _)| *b == binary)
                .map(|(_, path)| fs::canonicalize(path).unwrap_or_else(|_| path.clone()))
                .ok_or_else(|| anyhow!("{binary} was not resolved"))
        };

        let (data_dir, temporary) = data_dir(options.data_dir.as_deref())?;
        let mut cp = ControlPlane {
            kubeconfig: data_dir.join("kubeconfig"),
            data_dir,
            temporary,
            keep: AtomicBool::new(false),
            detached: false,
            server: String::new(),
            processes: Vec::new(),
            stopped: Vec::new(),
        };
        let started = Instant::now();
        let result = async {
            let pki = Pki::generate(&cp.data_dir.join("pki"))?;
            fs::create_dir_all(cp.log_dir())?;
            for attempt in 1.. {
                match cp.boot(&options, &pki, &exe).await {
                    Err(err) if attempt < 3 && err.downcast_ref::<PortInUse>().is_some() => {
                        eprintln!(
                            "testcluster: a port was taken while starting ({err:#}); retrying with new ports"
                        );
                        process::stop_all(&mut cp.processes, STOP_GRACE);
                    }
                    other => return other,
                }
            }
            Ok(())
        }
        .await;
        let result = match result {
            Ok(()) => cp.expected_version().await,
            Err(err) => Err(err),
        };
        match result {
            Ok(version) => {
                eprintln!(
                    "testcluster: control plane {version} ready in {:.1}s at {} (kubeconfig {})",
                    started.elapsed().as_secs_f64(),
                    cp.server,
                    cp.kubeconfig.display()
                );
                Ok(cp)
            }
            Err(err) => {
                cp.keep_data_dir();
                let dir = cp.data_dir.clone();
                drop(cp);
                Err(err.context(format!(
                    "starting the control plane failed (data and logs kept in {})",
                    dir.display()
                )))
            }
        }
    }

    /// The version kube-apiserver reports; an error if it is not the one
    /// [`EXPECT_KUBERNETES`] names (so that a run meant for another release,
    /// `cargo xtask oldest`, cannot test the pinned one by mistake).
    async fn expected_version(&self) -> Result<String> {
        let info = self.client().await?.apiserver_version().await?;
        the_expected_version(
            std::env::var_os(EXPECT_KUBERNETES).as_deref(),
            &info.git_version,
        )?;
        Ok(info.git_version)
    }

    /// One start attempt with fresh ports.
    async fn boot(
        &mut self,
        options: &Options,
        pki: &Pki,
        exe: &dyn Fn(Binary) -> Result<PathBuf>,
    ) -> Result<()> {
        let [etcd, etcd_peer, apiserver, controller_manager, scheduler] = free_ports()?;
        let ports = args::Ports {
            etcd,
            etcd_peer,
            apiserver,
            controller_manager,
            scheduler,
        };
        let detached = options.detached;

        let etcd_dir = self.data_dir.join("etcd");
        if etcd_dir.exists() {
            fs::remove_dir_all(&etcd_dir)?;
        }
        self.spawn(
            Binary::Etcd,
            exe,
            args::etcd(&etcd_dir, &ports),
            &[],
            detached,
        )?;

        self.server = format!("https://127.0.0.1:{}", ports.apiserver);
        pki.write_kubeconfig(&self.kubeconfig, &self.server)?;
        let mut apiserver_args = args::kube_apiserver(pki, &ports, options.controller_manager);
        apiserver_args.extend(options.apiserver_flags.iter().cloned());
        self.spawn(Binary::KubeApiserver, exe, apiserver_args, &[], detached)?;
        let client = self.client().await?;
        self.wait_for("kube-apiserver /readyz", APISERVER_TIMEOUT, || {
            get_ok(&client, "/readyz")
        })
        .await?;

        let kubeconfig = self.kubeconfig.clone();
        if options.controller_manager {
            let kcm_args =
                args::kube_controller_manager(pki, &kubeconfig, ports.controller_manager);
            self.spawn(Binary::KubeControllerManager, exe, kcm_args, &[], detached)?;
        }
        if options.scheduler_and_kwok {
            let scheduler_args = args::kube_scheduler(pki, &kubeconfig, ports.scheduler);
            self.spawn(Binary::KubeScheduler, exe, scheduler_args, &[], detached)?;
            let stages = self.data_dir.join("kwok-stages.yaml");
            fs::write(&stages, binaries::kwok_stages()?)?;
            // kwok also loads ~/.kwok/kwok.yaml if it exists; give it an empty home.
            let kwok_home = self.data_dir.join("kwok-home");
            fs::create_dir_all(&kwok_home)?;
            let kwok_args = args::kwok(&kubeconfig, &stages);
            self.spawn(
                Binary::Kwok,
                exe,
                kwok_args,
                &[("HOME", &kwok_home)],
                detached,
            )?;
            create_fake_node(&client).await?;
        }

        self.components_ready(options, &ports, &client).await
    }

    /// Waits until each component `options` starts is healthy: the
    /// controller manager and the `default` ServiceAccount it makes, the
    /// scheduler and kwok's fake node `Ready`.
    async fn components_ready(
        &mut self,
        options: &Options,
        ports: &args::Ports,
        client: &kube::Client,
    ) -> Result<()> {
        if options.controller_manager {
            let kcm = self.component_client(ports.controller_manager).await?;
            self.wait_for(
                "kube-controller-manager /healthz",
                COMPONENT_TIMEOUT,
                || get_ok(&kcm, "/healthz"),
            )
            .await?;
            let service_accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
            let service_accounts = &service_accounts;
            self.wait_for(
                "the default ServiceAccount (kube-controller-manager)",
                COMPONENT_TIMEOUT,
                || async move { Ok(service_accounts.get_opt("default").await?.is_some()) },
            )
            .await?;
        }
        if options.scheduler_and_kwok {
            let scheduler = self.component_client(ports.scheduler).await?;
            self.wait_for("kube-scheduler /healthz", COMPONENT_TIMEOUT, || {
                get_ok(&scheduler, "/healthz")
            })
            .await?;
            let nodes: Api<Node> = Api::all(client.clone());
            let nodes = &nodes;
            self.wait_for(
                &format!("node {KWOK_NODE_NAME} Ready (kwok)"),
                COMPONENT_TIMEOUT,
                || async move { Ok(node_is_ready(&nodes.get(KWOK_NODE_NAME).await?)) },
            )
            .await?;
        }
        Ok(())
    }

    /// Creates ServiceAccount `name` in namespace `ns` (unless it exists), asks for a one-hour
    /// token, and writes a kubeconfig that authenticates with it (same cluster
    /// as the admin kubeconfig): for tests of what a user without RBAC grants
    /// sees. Returns the kubeconfig's path (in the data directory).
    pub async fn service_account_kubeconfig(&self, ns: &str, name: &str) -> Result<PathBuf> {
        use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
        let client = self.client().await?;
        let accounts: Api<ServiceAccount> = Api::namespaced(client, ns);
        let account = ServiceAccount {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        // An existing one (from manifests/rbac.yaml, say) is used as it is.
        match accounts.create(&PostParams::default(), &account).await {
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            other => {
                other.with_context(|| format!("creating ServiceAccount {ns}/{name}"))?;
            }
        }
        // No token Secret is created for a ServiceAccount any more; request one.
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let token = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await?
            .status
            .map(|status| status.token)
            .context("no token in the TokenRequest answer")?;
        // The admin kubeconfig with every user's credentials replaced by the token.
        let admin = fs::read_to_string(&self.kubeconfig)?;
        let mut kubeconfig: serde_json::Value = serde_saphyr::from_str(&admin)?;
        for user in kubeconfig["users"]
            .as_array_mut()
            .context("no users in the admin kubeconfig")?
        {
            user["user"] = serde_json::json!({ "token": token });
        }
        let path = self.data_dir.join(format!("kubeconfig-{ns}-{name}"));
        fs::write(&path, serde_saphyr::to_string(&kubeconfig)?)?;
        Ok(path)
    }

    /// Stops kube-apiserver and starts it again with the same flags (same port, same etcd),
    /// then waits until it is ready: for tests of how clients live through an API server
    /// restart. Its new log is `kube-apiserver-restarted.log`.
    pub async fn restart_apiserver(&mut self) -> Result<()> {
        self.stop_apiserver()?;
        self.start_apiserver().await
    }

    /// Stops kube-apiserver (by PID; etcd and the rest keep running). Start it
    /// again with [`ControlPlane::start_apiserver`].
    pub fn stop_apiserver(&mut self) -> Result<()> {
        self.stop(Binary::KubeApiserver)
    }

    /// Starts the kube-apiserver that [`ControlPlane::stop_apiserver`] stopped,
    /// with the same flags, and waits until it is ready. Its new log is
    /// `kube-apiserver-restarted.log`.
    pub async fn start_apiserver(&mut self) -> Result<()> {
        self.start_again(Binary::KubeApiserver)?;
        self.wait_for_apiserver("kube-apiserver /readyz after a restart")
            .await
    }

    /// Stops kwok (by PID), the fake kubelet: the fake node's Lease is no
    /// longer renewed, as when a node loses touch with the control plane.
    /// Start it again with [`ControlPlane::start_kwok`].
    pub fn stop_kwok(&mut self) -> Result<()> {
        self.stop(Binary::Kwok)
    }

    /// Starts the kwok that [`ControlPlane::stop_kwok`] stopped, with the same
    /// flags. Its new log is `kwok-restarted.log`.
    pub fn start_kwok(&mut self) -> Result<()> {
        self.start_again(Binary::Kwok)
    }

    /// Stops etcd (by PID, SIGTERM: a clean stop) under a running kube-apiserver, which
    /// then cannot read or write anything: for tests of how clients live through a storage
    /// outage. Start it again with [`ControlPlane::start_etcd`].
    pub fn stop_etcd(&mut self) -> Result<()> {
        self.stop(Binary::Etcd)
    }

    /// Starts the etcd that [`ControlPlane::stop_etcd`] stopped, with the same flags (same
    /// ports, same data directory, so every object is still there), and waits until etcd is
    /// healthy and, if it runs, kube-apiserver is ready again (its `/readyz` checks etcd).
    /// Its new log is `etcd-restarted.log`.
    pub async fn start_etcd(&mut self) -> Result<()> {
        let port = self
            .stopped
            .iter()
            .find(|(binary, ..)| *binary == Binary::Etcd)
            .and_then(|(_, _, args)| {
                args.iter().find_map(|arg| {
                    arg.strip_prefix("--listen-client-urls=http://127.0.0.1:")?
                        .parse::<u16>()
                        .ok()
                })
            })
            .ok_or_else(|| anyhow!("etcd was not stopped"))?;
        self.start_again(Binary::Etcd)?;
        self.wait_for(
            "etcd /health after a restart",
            COMPONENT_TIMEOUT,
            || async move {
                let (code, body) = http_get(port, "/health").await?;
                Ok(code == 200 && body.contains(r#""health":"true""#))
            },
        )
        .await?;
        if self.is_running(Binary::KubeApiserver) {
            self.wait_for_apiserver("kube-apiserver /readyz after etcd restarted")
                .await?;
        }
        Ok(())
    }

    /// Whether a process of `binary` is running (not stopped).
    fn is_running(&self, binary: Binary) -> bool {
        self.processes.iter().any(|p| p.name == binary.name())
    }

    /// Stops the process of `binary` (SIGTERM by PID, SIGKILL after the grace period),
    /// remembering how to start it again ([`ControlPlane::start_again`]).
    fn stop(&mut self, binary: Binary) -> Result<()> {
        let index = self
            .processes
            .iter()
            .position(|p| p.name == binary.name())
            .ok_or_else(|| anyhow!("{binary} is not running"))?;
        let old = self.processes.remove(index);
        self.stopped
            .push((binary, old.exe.clone(), old.args.clone()));
        process::stop_all(&mut vec![old], STOP_GRACE);
        process::write_record(&self.data_dir, &self.recorded())
    }

    /// Starts a process that [`ControlPlane::stop`] stopped, with the same flags, logging to
    /// `<name>-restarted.log`. It takes its place in start order again, which stopping reverses.
    fn start_again(&mut self, binary: Binary) -> Result<()> {
        let at = self
            .stopped
            .iter()
            .position(|(b, ..)| *b == binary)
            .ok_or_else(|| anyhow!("{binary} was not stopped"))?;
        let (_, exe, args) = self.stopped.remove(at);
        let name = binary.name();
        let log = self.log_dir().join(format!("{name}-restarted.log"));
        let restarted = process::spawn(name, &exe, &args, &[], &log, self.detached)?;
        let rank = |name: &str| Binary::ALL.iter().position(|b| b.name() == name);
        let index = self
            .processes
            .iter()
            .position(|p| rank(&p.name) > rank(name))
            .unwrap_or(self.processes.len());
        self.processes.insert(index, restarted);
        process::write_record(&self.data_dir, &self.recorded())
    }

    /// Waits until kube-apiserver answers `/readyz` with `ok`.
    async fn wait_for_apiserver(&mut self, what: &str) -> Result<()> {
        let client = self.client().await?;
        self.wait_for(what, APISERVER_TIMEOUT, || get_ok(&client, "/readyz"))
            .await
    }

    /// Starts `binary` (path from `exe`) with its log in the log directory and records it.
    fn spawn(
        &mut self,
        binary: Binary,
        exe: &dyn Fn(Binary) -> Result<PathBuf>,
        args: Vec<String>,
        envs: &[(&str, &Path)],
        detached: bool,
    ) -> Result<()> {
        let log = self.log_dir().join(format!("{binary}.log"));
        let process = process::spawn(binary.name(), &exe(binary)?, &args, envs, &log, detached)?;
        self.processes.push(process);
        process::write_record(&self.data_dir, &self.recorded())
    }

    /// Polls `check` every 250 ms until it returns `Ok(true)`, failing early if a process dies.
    async fn wait_for<F, Fut>(&mut self, what: &str, timeout: Duration, mut check: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<bool>>,
    {
        let deadline = Instant::now() + timeout;
        let mut last_error = None;
        loop {
            for process in &mut self.processes {
                if let Some(status) = process.exited() {
                    let err = process.died_error(&status);
                    if process.failed_to_bind() {
                        return Err(anyhow::Error::new(PortInUse(format!("{err:#}"))));
                    }
                    return Err(err);
                }
            }
            // Kube clients have no read timeout by default; never let one probe hang.
            match tokio::time::timeout(Duration::from_secs(10), check()).await {
                Ok(Ok(true)) => return Ok(()),
                Ok(Ok(false)) => {}
                Ok(Err(err)) => last_error = Some(err),
                Err(_) => last_error = Some(anyhow!("no answer within 10s")),
            }
            if Instant::now() > deadline {
                let last = last_error.map(|e| format!("{e:#}")).unwrap_or_default();
                bail!(
                    "timed out after {}s waiting for {what} (last error: {last}); logs in {}",
                    timeout.as_secs(),
                    self.log_dir().display()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// A client for `https://127.0.0.1:<port>` with the admin credentials and CA (for the
    /// health endpoints of kube-controller-manager and kube-scheduler).
    async fn component_client(&self, port: u16) -> Result<kube::Client> {
        let mut config = kube_config(&self.kubeconfig).await?;
        config.cluster_url = format!("https://127.0.0.1:{port}").parse()?;
        Ok(kube::Client::try_from(config)?)
    }

    /// Path of the admin kubeconfig (`<data dir>/kubeconfig`; user in group system:masters).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// URL of kube-apiserver, e.g. `https://127.0.0.1:41234`.
    pub fn server_url(&self) -> &str {
        &self.server
    }

    /// The data directory (certificates, kubeconfig, etcd data, logs).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Directory with one `<binary>.log` per process.
    pub fn log_dir(&self) -> PathBuf {
        self.data_dir.join("logs")
    }

    /// A new admin client. Create one per test (or per tokio runtime): a client keeps
    /// background tasks on the runtime that created it.
    pub async fn client(&self) -> Result<kube::Client> {
        Ok(kube::Client::try_from(
            kube_config(&self.kubeconfig).await?,
        )?)
    }

    /// The running processes (name, PID, binary), in start order.
    pub fn processes(&self) -> Vec<RecordedProcess> {
        self.recorded()
    }

    /// Keeps the data directory when this control plane is dropped (e.g. before returning an
    /// error from a test), and prints its path then.
    pub fn keep_data_dir(&self) {
        self.keep.store(true, Ordering::Relaxed);
    }

    /// Leaves the processes running and forgets them (for `cargo xtask cluster up`); they
    /// stay recorded in `<data dir>/pids.json` for [`stop_recorded`]. Only meaningful with
    /// [`Options::detached`]; otherwise they still die with this process.
    pub fn detach(mut self) -> Vec<RecordedProcess> {
        self.detached = true;
        self.recorded()
    }

    fn recorded(&self) -> Vec<RecordedProcess> {
        self.processes
            .iter()
            .map(|p| RecordedProcess {
                name: p.name.clone(),
                pid: p.pid(),
                exe: p.exe.clone(),
                start_time: p.start_time,
            })
            .collect()
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        process::stop_all(&mut self.processes, STOP_GRACE);
        let _ = process::write_record(&self.data_dir, &[]);
        let keep_everything = self.keep.load(Ordering::Relaxed) || keep_requested();
        let failed = std::thread::panicking();
        if keep_everything || failed {
            mark_kept(&self.data_dir);
        }
        if keep_everything || (failed && !self.temporary) {
            eprintln!(
                "testcluster: control-plane data and logs kept in {}",
                self.data_dir.display()
            );
        } else if failed {
            // A failed test keeps its logs, kubeconfig and certificates, not etcd's
            // data: etcd preallocates 60 MiB of write-ahead log, and a day of failing
            // runs filled the disk. `TESTCLUSTER_KEEP=1` keeps etcd's data too.
            let _ = fs::remove_dir_all(self.data_dir.join("etcd"));
            eprintln!(
                "testcluster: control-plane logs kept in {} (etcd's data removed; \
                 TESTCLUSTER_KEEP=1 keeps it)",
                self.data_dir.display()
            );
        } else if self.temporary {
            let _ = fs::remove_dir_all(&self.data_dir);
        }
    }
}

/// An environment variable: when set (`v1.MINOR.PATCH`), every control plane checks
/// that its kube-apiserver reports this version, and fails to start otherwise.
pub const EXPECT_KUBERNETES: &str = "TESTCLUSTER_EXPECT_KUBERNETES";

/// Fails when `wanted` ([`EXPECT_KUBERNETES`]) is set and is not `reported`.
fn the_expected_version(wanted: Option<&std::ffi::OsStr>, reported: &str) -> Result<()> {
    if let Some(wanted) = wanted {
        ensure!(
            wanted.to_str() == Some(reported),
            "{EXPECT_KUBERNETES} is {}, but kube-apiserver reports {reported} (is {} set to another build?)",
            wanted.to_string_lossy(),
            Binary::KubeApiserver.env_var()
        );
    }
    Ok(())
}

/// A control plane shared by all tests of one test binary, started on first use with
/// [`Options::default`].
///
/// It is never dropped (Rust does not drop statics): its processes are killed by the kernel
/// when the test process exits (`PR_SET_PDEATHSIG`), and its data directory is removed by
/// the next run's start (kept, marked, when `TESTCLUSTER_KEEP` is set). Its path is printed once. A failed start is
/// remembered, so later tests fail fast with the same error.
pub async fn shared() -> Result<&'static ControlPlane> {
    static SHARED: tokio::sync::OnceCell<Result<ControlPlane, String>> =
        tokio::sync::OnceCell::const_new();
    let result = SHARED
        .get_or_init(|| async {
            let cp = ControlPlane::start(Options::default())
                .await
                .map_err(|err| format!("{err:#}"))?;
            let fate = if keep_requested() {
                "kept: TESTCLUSTER_KEEP is set"
            } else {
                "removed by the next run"
            };
            binaries::progress(&format!(
                "shared control plane for this test binary: logs in {} ({fate})",
                cp.log_dir().display()
            ));
            Ok(cp)
        })
        .await;
    result
        .as_ref()
        .map_err(|err| anyhow!("the shared control plane failed to start: {err}"))
}

/// `${XDG_CACHE_HOME:-$HOME/.cache}/sample-controller-rs/cluster`: data directory of the
/// long-running cluster of `cargo xtask cluster up` (kubeconfig, logs, `pids.json`).
pub fn cluster_dir() -> Result<PathBuf> {
    Ok(binaries::cache_dir()?.join("cluster"))
}

/// The processes recorded in `<dir>/pids.json` (empty if there is none).
pub fn recorded_processes(dir: &Path) -> Result<Vec<RecordedProcess>> {
    Ok(process::read_record(dir)?
        .map(|(_, processes)| processes)
        .unwrap_or_default())
}

/// Stops the processes recorded in `<dir>/pids.json` (SIGTERM, then SIGKILL after 5 s),
/// skipping processes that are already gone. Returns how many were running.
pub fn stop_recorded(dir: &Path) -> Result<usize> {
    let processes = recorded_processes(dir)?;
    let running = processes.iter().filter(|p| p.is_running()).count();
    process::stop_recorded(&processes, STOP_GRACE);
    Ok(running)
}

/// `GET path` answered with `ok`.
async fn get_ok(client: &kube::Client, path: &str) -> Result<bool> {
    let request = http::Request::get(path).body(Vec::new())?;
    Ok(client.request_text(request).await?.trim() == "ok")
}

/// Creates the node kwok manages (selected by its annotation). No taint, so ordinary
/// Deployments (like the sample-controller's nginx) are scheduled onto it. Room for
/// 2,500 Pods, so that every Deployment of the benchmark's largest run (2,000 Foos)
/// gets its Pod, as on a real cluster, rather than a kubelet's default of 110.
async fn create_fake_node(client: &kube::Client) -> Result<()> {
    let resources = serde_json::json!({ "cpu": "32", "memory": "256Gi", "pods": "2500" });
    let node: Node = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": KWOK_NODE_NAME,
            "annotations": {
                "kwok.x-k8s.io/node": "fake",
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": KWOK_NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok",
            },
        },
        "status": { "allocatable": resources, "capacity": resources },
    }))?;
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(err) => Err(err).context("creating the kwok node"),
    }
}

fn node_is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// `N` distinct free loopback ports. The listeners are held until all are chosen, so the
/// ports differ; another process may still take one before it is used (then start retries).
fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .context("binding 127.0.0.1:0 to find a free port")?;
    let mut ports = [0u16; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_control_plane_of_another_version_than_expected_is_refused() {
        let err = the_expected_version(Some(OsStr::new("v1.90.0")), "v1.91.2").unwrap_err();
        assert!(err.to_string().contains("reports v1.91.2"), "{err}");
        the_expected_version(Some(OsStr::new("v1.91.2")), "v1.91.2").unwrap();
        the_expected_version(None, "v1.91.2").unwrap();
    }
}
