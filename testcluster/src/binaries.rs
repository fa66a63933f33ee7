//! Finding and building the control-plane binaries, and the kubectl of the same version.
//!
//! Order of precedence for each [`Binary`]:
//!
//! 1. `TEST_ASSET_<NAME>` (e.g. `TEST_ASSET_KUBE_APISERVER`): path to the binary; an error if
//!    it does not exist.
//! 2. `$KUBEBUILDER_ASSETS/<name>` if that file exists (the envtest layout, e.g. from
//!    `setup-envtest`; it usually holds only kube-apiserver, etcd and kubectl).
//! 3. The cache: `${XDG_CACHE_HOME:-$HOME/.cache}/sample-controller-rs/bin/<component>-<version>/<name>`.
//! 4. Otherwise [`ensure`] builds it with `go build` from the pinned wrapper module in
//!    `controlplane/<component>` of this repository, writing to a temporary name and
//!    renaming it into the cache, so an interrupted build never leaves a partial binary.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

// KUBERNETES_VERSION, STAGING_VERSION, SAMPLE_CONTROLLER_VERSION,
// KUBERNETES_MINOR, K8S_OPENAPI_FEATURE, ETCD_VERSION, KWOK_VERSION: written by
// build.rs from versions.toml at the repository root (the `controlplane/*/go.mod`
// wrapper modules must require the same versions: see the tests below).
include!(concat!(env!("OUT_DIR"), "/versions.rs"));

/// A Kubernetes release and its staging modules' version (client-go, the
/// Go sample-controller: `v0.<minor>.<patch>`): what the control plane is
/// built at, and what the book's Go links resolve at.
#[derive(Clone, Debug, PartialEq)]
pub struct Release {
    /// `v1.37.1`.
    pub kubernetes: String,
    /// `v0.37.1`.
    pub staging: String,
}

impl Release {
    /// The release of `versions.toml`, the one the course is built on.
    pub fn pinned() -> Release {
        Release {
            kubernetes: KUBERNETES_VERSION.to_string(),
            staging: STAGING_VERSION.to_string(),
        }
    }

    /// Kubernetes `1.MINOR.PATCH` (or `v1.MINOR.PATCH`) and its staging modules.
    pub fn of(kubernetes: &str) -> Result<Release> {
        let bare = kubernetes.trim_start_matches('v');
        let rest = bare
            .strip_prefix("1.")
            .filter(|r| {
                let parts: Vec<&str> = r.split('.').collect();
                parts.len() == 2
                    && parts
                        .iter()
                        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            })
            .with_context(|| format!("{kubernetes:?} is not a Kubernetes release 1.MINOR.PATCH"))?;
        Ok(Release {
            kubernetes: format!("v{bare}"),
            staging: format!("v0.{rest}"),
        })
    }
}

/// One of the programs the control plane is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binary {
    /// etcd, the API server's storage.
    Etcd,
    /// kube-apiserver.
    KubeApiserver,
    /// kube-controller-manager (Deployments → ReplicaSets → Pods, garbage collection, namespaces).
    KubeControllerManager,
    /// kube-scheduler (binds Pods to the fake node).
    KubeScheduler,
    /// kubectl, of the control plane's version: not part of the control plane, but what the
    /// book's commands, the demo and the captures of `cargo xtask book outputs` run.
    Kubectl,
    /// kwok controller (fakes a node and makes its Pods Running and Ready).
    Kwok,
    /// The Go sample-controller itself, for the parity tests and benchmarks.
    SampleController,
}

impl Binary {
    /// All binaries, in build and start order.
    pub const ALL: [Binary; 7] = [
        Binary::Etcd,
        Binary::KubeApiserver,
        Binary::KubeControllerManager,
        Binary::KubeScheduler,
        Binary::Kubectl,
        Binary::Kwok,
        Binary::SampleController,
    ];

    /// File name of the binary, e.g. `kube-apiserver`.
    pub fn name(self) -> &'static str {
        match self {
            Binary::Etcd => "etcd",
            Binary::KubeApiserver => "kube-apiserver",
            Binary::KubeControllerManager => "kube-controller-manager",
            Binary::KubeScheduler => "kube-scheduler",
            Binary::Kubectl => "kubectl",
            Binary::Kwok => "kwok",
            Binary::SampleController => "sample-controller",
        }
    }

    /// Pinned version (versions.toml).
    pub fn version(self) -> &'static str {
        match self.component() {
            "etcd" => ETCD_VERSION,
            "kwok" => KWOK_VERSION,
            "sample-controller" => SAMPLE_CONTROLLER_VERSION,
            _ => KUBERNETES_VERSION,
        }
    }

    /// Environment variable naming a prebuilt binary, e.g. `TEST_ASSET_KUBE_APISERVER`.
    pub fn env_var(self) -> &'static str {
        match self {
            Binary::Etcd => "TEST_ASSET_ETCD",
            Binary::KubeApiserver => "TEST_ASSET_KUBE_APISERVER",
            Binary::KubeControllerManager => "TEST_ASSET_KUBE_CONTROLLER_MANAGER",
            Binary::KubeScheduler => "TEST_ASSET_KUBE_SCHEDULER",
            Binary::Kubectl => "TEST_ASSET_KUBECTL",
            Binary::Kwok => "TEST_ASSET_KWOK",
            Binary::SampleController => "TEST_ASSET_SAMPLE_CONTROLLER",
        }
    }

    /// Wrapper module directory under `controlplane/` and cache directory prefix.
    fn component(self) -> &'static str {
        match self {
            Binary::Etcd => "etcd",
            Binary::Kwok => "kwok",
            Binary::SampleController => "sample-controller",
            _ => "kubernetes",
        }
    }

    /// Go main package to build.
    fn package(self) -> &'static str {
        match self {
            Binary::Etcd => "go.etcd.io/etcd/server/v3",
            Binary::KubeApiserver => "k8s.io/kubernetes/cmd/kube-apiserver",
            Binary::KubeControllerManager => "k8s.io/kubernetes/cmd/kube-controller-manager",
            Binary::KubeScheduler => "k8s.io/kubernetes/cmd/kube-scheduler",
            Binary::Kubectl => "k8s.io/kubernetes/cmd/kubectl",
            Binary::Kwok => "sigs.k8s.io/kwok/cmd/kwok",
            Binary::SampleController => "k8s.io/sample-controller",
        }
    }

    /// `-ldflags` value: strip symbols and, for Kubernetes, stamp the version so that
    /// `--version` and `/version` report it instead of `v0.0.0-master`.
    fn ldflags(self, version: &str) -> String {
        if self.component() != "kubernetes" {
            return "-s -w".to_string();
        }
        let mut parts = version.trim_start_matches('v').split('.');
        let major = parts.next().unwrap_or("1");
        let minor = parts.next().unwrap_or("0");
        let mut flags = String::from("-s -w");
        for pkg in [
            "k8s.io/component-base/version",
            "k8s.io/client-go/pkg/version",
        ] {
            flags.push_str(&format!(
                " -X {pkg}.gitVersion={version} -X {pkg}.gitMajor={major} -X {pkg}.gitMinor={minor}"
            ));
        }
        flags
    }

    /// What to expect of a cold build on 2 cores (empty Go build cache,
    /// module downloads included, in `ALL`'s order), shown in the progress
    /// line.
    fn cold_build_estimate(self) -> &'static str {
        match self {
            Binary::Etcd => "~45 seconds",
            Binary::KubeApiserver => "~4 minutes",
            Binary::KubeControllerManager => "~75 seconds after kube-apiserver",
            Binary::KubeScheduler => "~10 seconds after kube-apiserver",
            Binary::Kubectl => "~3 minutes alone, ~20 seconds after kube-apiserver",
            Binary::Kwok => "~65 seconds",
            Binary::SampleController => "~3 minutes alone, seconds after kube-apiserver",
        }
    }
}

impl std::str::FromStr for Binary {
    type Err = String;

    /// Parses a binary name such as `kube-apiserver`.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Binary::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Binary::ALL.iter().map(|b| b.name()).collect();
                format!("unknown binary {name:?} (one of: {})", names.join(", "))
            })
    }
}

impl std::fmt::Display for Binary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `${XDG_CACHE_HOME:-$HOME/.cache}/sample-controller-rs`.
pub fn cache_dir() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or_else(|| anyhow!("neither XDG_CACHE_HOME nor HOME is set"))?;
            PathBuf::from(home).join(".cache")
        }
    };
    Ok(base.join("sample-controller-rs"))
}

/// Where a built binary is cached: `<cache_dir>/bin/<component>-<version>/<name>`.
fn cached_path(binary: Binary) -> Result<PathBuf> {
    cached_path_at(binary, binary.version())
}

/// Where `binary` built at another `version` (`v1.MINOR.PATCH`) is cached, beside the pinned one.
pub fn cached_path_at(binary: Binary, version: &str) -> Result<PathBuf> {
    Ok(cache_dir()?
        .join("bin")
        .join(format!("{}-{}", binary.component(), version))
        .join(binary.name()))
}

/// The `controlplane/` directory of this repository (Go wrapper modules, kwok stages).
pub fn controlplane_dir() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().unwrap_or(crate_dir).join("controlplane")
}

/// Finds a binary without building it: `TEST_ASSET_*`, then `KUBEBUILDER_ASSETS`, then the
/// cache. `Ok(None)` means it would have to be built.
pub fn locate(binary: Binary) -> Result<Option<PathBuf>> {
    if let Some(path) = std::env::var_os(binary.env_var()).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!(
                "{}={} does not name an existing file",
                binary.env_var(),
                path.display()
            );
        }
        return Ok(Some(path));
    }
    if let Some(dir) = std::env::var_os("KUBEBUILDER_ASSETS").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(dir).join(binary.name());
        if path.is_file() {
            return Ok(Some(path));
        }
    }
    let cached = cached_path(binary)?;
    Ok(cached.is_file().then_some(cached))
}

/// Finds a binary like [`locate`], building it into the cache if it is not found.
pub fn ensure(binary: Binary) -> Result<PathBuf> {
    match locate(binary)? {
        Some(path) => Ok(path),
        None => build(binary),
    }
}

/// Builds `binary` into the cache unless it is already there; returns its path.
///
/// Holds a lock file next to the output while building, so two processes (an xtask and a
/// test, say) never build the same binary at once.
pub fn build(binary: Binary) -> Result<PathBuf> {
    let module_dir = controlplane_dir().join(binary.component());
    build_at(binary, &module_dir, binary.version())
}

/// Builds `binary` at `version` from the wrapper module in `module_dir` (one that
/// requires that version) into the cache ([`cached_path_at`]) unless it is there.
/// [`build`] is this with the pinned version and `controlplane/<component>`.
pub fn build_at(binary: Binary, module_dir: &Path, version: &str) -> Result<PathBuf> {
    let dest = cached_path_at(binary, version)?;
    let dir = dest
        .parent()
        .ok_or_else(|| anyhow!("cache path {} has no parent", dest.display()))?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock = fs::File::create(dir.join(format!(".{}.lock", binary.name())))
        .context("creating the build lock file")?;
    lock.lock().context("locking the build lock file")?;
    if dest.is_file() {
        return Ok(dest);
    }
    check_go(binary)?;

    let tmp = dir.join(format!(".{}.tmp-{}", binary.name(), std::process::id()));
    progress(&format!(
        "building {} {} with go build in {} (a first build takes {} on 2 cores; later builds reuse Go's cache)...",
        binary,
        version,
        module_dir.display(),
        binary.cold_build_estimate()
    ));
    let started = Instant::now();
    let mut child = Command::new("go")
        .current_dir(module_dir)
        .args([
            "build",
            "-trimpath",
            "-ldflags",
            &binary.ldflags(version),
            "-o",
        ])
        .arg(&tmp)
        .arg(binary.package())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running go build in {}", module_dir.display()))?;
    // Echo Go's messages ("go: downloading …") as they come, and keep them for the error.
    let mut stderr_text = String::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            progress(&format!("  {line}"));
            stderr_text.push_str(&line);
            stderr_text.push('\n');
        }
    }
    let status = child.wait().context("waiting for go build")?;
    if !status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(explain_go_failure(binary, &stderr_text));
    }
    fs::rename(&tmp, &dest)
        .with_context(|| format!("renaming {} to {}", tmp.display(), dest.display()))?;
    progress(&format!(
        "built {} in {:.0}s: {}",
        binary,
        started.elapsed().as_secs_f64(),
        dest.display()
    ));
    Ok(dest)
}

fn check_go(binary: Binary) -> Result<()> {
    match Command::new("go")
        .arg("version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => bail!(
            "`go version` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => bail!(
            "{binary} {version} was not found and building it needs Go (1.26 or newer), but `go` is not on PATH.\n\
             Either install Go from https://go.dev/doc/install and retry (the first build downloads \
             modules from the Go module proxy and takes several minutes),\n\
             or point {env} at a prebuilt {binary}, or KUBEBUILDER_ASSETS at a directory holding \
             kube-apiserver and etcd (e.g. `setup-envtest use -p path`),\n\
             or run the tests against an existing cluster through KUBECONFIG.",
            version = binary.version(),
            env = binary.env_var(),
        ),
        Err(err) => Err(err).context("running `go version`"),
    }
}

/// Turns go's stderr into an error naming the module that could not be fetched, if any.
fn explain_go_failure(binary: Binary, stderr: &str) -> anyhow::Error {
    let download_markers = [
        "404 Not Found",
        "410 Gone",
        "not found",
        "unknown revision",
        "invalid version",
        "dial tcp",
        "no such host",
        "connection refused",
        "i/o timeout",
        "verifying module",
        "missing go.sum entry",
        "disabled by GOPROXY",
        "disabled by GOFLAGS",
    ];
    let module_line = stderr
        .lines()
        .find(|line| download_markers.iter().any(|m| line.contains(m)));
    let tail = last_lines(stderr, 20);
    match module_line {
        Some(line) => {
            // "go: k8s.io/x@v1: reading …: 404 Not Found", else the last "go: downloading k8s.io/x v1".
            let module = line
                .split_whitespace()
                .map(|word| word.trim_end_matches(':'))
                .find(|word| word.contains('@'))
                .map(str::to_string)
                .or_else(|| {
                    stderr.lines().rev().find_map(|l| {
                        let rest = l.strip_prefix("go: downloading ")?;
                        let (module, version) = rest.split_once(' ')?;
                        Some(format!("{module}@{version}"))
                    })
                })
                .unwrap_or_else(|| "(see the message below)".to_string());
            anyhow!(
                "building {binary} failed: Go could not fetch module {module}.\n\
                 Is the Go module proxy reachable (GOPROXY={})?\n{tail}",
                std::env::var("GOPROXY").unwrap_or_else(|_| "default".into())
            )
        }
        None => anyhow!("building {binary} with go build failed:\n{tail}"),
    }
}

/// The last `n` lines of `text`.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Prints a progress line straight to the process's stderr.
///
/// This bypasses the test harness's output capture on purpose: a first build takes minutes,
/// and `cargo test` would otherwise show nothing at all until it is over.
pub fn progress(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "[testcluster] {line}");
}

/// kwok's "fast" Stage definitions (nodes become Ready, pods become Ready, complete and
/// go away when deleted), read from the kwok module in Go's module cache: they are kwok's
/// own files, so they are used from there rather than copied into this repository.
/// `TEST_ASSET_KWOK_STAGES` names a YAML file to use instead (for a prebuilt kwok without Go).
pub fn kwok_stages() -> Result<String> {
    if let Some(path) = std::env::var_os("TEST_ASSET_KWOK_STAGES") {
        return fs::read_to_string(&path).with_context(|| {
            format!(
                "reading TEST_ASSET_KWOK_STAGES={}",
                Path::new(&path).display()
            )
        });
    }
    let module = format!("sigs.k8s.io/kwok@{KWOK_VERSION}");
    let dir = go_mod_download(&module, &controlplane_dir().join("kwok"))
        .with_context(|| {
            format!("kwok's stage files come from the Go module {module} (or set TEST_ASSET_KWOK_STAGES)")
        })?
        .dir;
    let files = [
        "kustomize/stage/node/fast/node-initialize.yaml",
        "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "kustomize/stage/pod/fast/pod-ready.yaml",
        "kustomize/stage/pod/fast/pod-complete.yaml",
        "kustomize/stage/pod/fast/pod-delete.yaml",
    ];
    let mut stages = String::new();
    for file in files {
        let path = dir.join(file);
        stages.push_str("---\n");
        stages.push_str(
            &fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
        );
        stages.push('\n');
    }
    Ok(stages)
}

/// A module in Go's module cache, as `go mod download -json` names it.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct GoModule {
    /// Its source, unpacked.
    pub dir: PathBuf,
    /// Its `go.mod`.
    pub go_mod: PathBuf,
}

/// `go mod download -json MODULE@VERSION`, run in `dir`: the module put in
/// Go's module cache (if it is not there yet), and where. An error says
/// what Go said.
pub fn go_mod_download(module: &str, dir: &Path) -> Result<GoModule> {
    /// What Go prints: the module, or an error.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Said {
        dir: Option<PathBuf>,
        go_mod: Option<PathBuf>,
        error: Option<String>,
    }
    let shown = format!("`go mod download -json {module}`");
    let output = Command::new("go")
        .args(["mod", "download", "-json", module])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {shown} (is Go on the PATH?)"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said: Said = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{shown} printed no JSON: {}", stderr.trim()))?;
    if let Some(error) = said.error {
        bail!("{shown}: {error}");
    }
    match (output.status.success(), said.dir, said.go_mod) {
        (true, Some(dir), Some(go_mod)) => Ok(GoModule { dir, go_mod }),
        (true, ..) => bail!("{shown} named no Dir and GoMod"),
        (false, ..) => bail!("{shown} failed ({}): {}", output.status, stderr.trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_names_its_staging_modules_and_rejects_what_is_not_one() {
        // A release far from any real one, so that the versions test (which
        // reads every file) finds no second Kubernetes version here.
        let release = Release::of("1.90.2").unwrap();
        assert_eq!(release.kubernetes, "v1.90.2");
        assert_eq!(release.staging, "v0.90.2");
        assert_eq!(Release::of("v1.90.2").unwrap(), release);
        for wrong in ["1.90", "0.90.2", "1.90.x", "v2.0.0", ""] {
            assert!(Release::of(wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn versions_match_the_go_modules() {
        for (binary, module) in [
            (Binary::KubeApiserver, "k8s.io/kubernetes"),
            (Binary::Etcd, "go.etcd.io/etcd/server/v3"),
            (Binary::Kwok, "sigs.k8s.io/kwok"),
            (Binary::SampleController, "k8s.io/sample-controller"),
        ] {
            let go_mod = controlplane_dir().join(binary.component()).join("go.mod");
            let text = fs::read_to_string(&go_mod).expect("read go.mod");
            let wanted = format!("{module} {}", binary.version());
            assert!(
                text.lines().any(|l| l.trim().starts_with(&wanted)),
                "{} does not require {wanted}",
                go_mod.display()
            );
        }
    }

    #[test]
    fn every_kubernetes_binary_is_a_tool_of_the_wrapper_module() {
        let go_mod = controlplane_dir().join("kubernetes/go.mod");
        let text = fs::read_to_string(&go_mod).expect("read go.mod");
        for binary in Binary::ALL
            .into_iter()
            .filter(|b| b.component() == "kubernetes")
        {
            assert!(
                text.lines().any(|l| l.trim() == binary.package()),
                "{} does not list {} as a tool",
                go_mod.display(),
                binary.package()
            );
        }
    }

    #[test]
    fn kubernetes_builds_are_version_stamped() {
        let flags = Binary::KubeScheduler.ldflags(KUBERNETES_VERSION);
        assert!(flags.contains(&format!(
            "-X k8s.io/component-base/version.gitVersion={KUBERNETES_VERSION}"
        )));
        let minor = KUBERNETES_MINOR.trim_start_matches("1.");
        assert!(flags.contains(&format!("-X k8s.io/client-go/pkg/version.gitMinor={minor}")));
        assert_eq!(Binary::Etcd.ldflags(ETCD_VERSION), "-s -w");
    }

    #[test]
    fn module_errors_name_the_module() {
        let stderr = "go: downloading k8s.io/foo v0.99.0\n\
                      go: k8s.io/foo@v0.99.0: reading https://proxy.golang.org/k8s.io/foo/@v/v0.99.0.mod: 404 Not Found\n";
        let err = explain_go_failure(Binary::KubeApiserver, stderr).to_string();
        assert!(
            err.contains("could not fetch module k8s.io/foo@v0.99.0"),
            "{err}"
        );
        let stderr = format!(
            "go: downloading sigs.k8s.io/kwok {KWOK_VERSION}\nmodule lookup disabled by GOPROXY=off\n"
        );
        let err = explain_go_failure(Binary::Kwok, &stderr).to_string();
        assert!(
            err.contains(&format!(
                "could not fetch module sigs.k8s.io/kwok@{KWOK_VERSION}"
            )),
            "{err}"
        );
    }
}
