//! The kubectl of the control plane's version (`testcluster::Binary::Kubectl`,
//! built from `k8s.io/kubernetes` into the same cache as kube-apiserver), run
//! by the demo and the book's captures, and the shell lines that give a reader
//! the same kubectl and kubeconfig.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result};
use testcluster::Binary;

/// The cached kubectl, pointed at one cluster.
pub struct Kubectl {
    exe: PathBuf,
    /// `--kubeconfig`; `None`: kubectl's own default (`KUBECONFIG`, `~/.kube/config`).
    kubeconfig: Option<PathBuf>,
    /// Where kubectl caches API discovery (`KUBECACHEDIR`); `None`: `~/.kube/cache`.
    cache_dir: Option<PathBuf>,
}

/// What one kubectl (or shell) command printed, and how it exited.
pub struct Output {
    /// Exit code (-1 if killed by a signal).
    pub code: i32,
    /// Standard output, then standard error, line by line.
    pub lines: Vec<String>,
}

impl Kubectl {
    /// The kubectl of `Binary::Kubectl` (built into the cache if missing: about
    /// a minute after the control plane, longer on a cold Go cache), talking to
    /// the cluster of `kubeconfig`.
    pub async fn ensure(kubeconfig: Option<&Path>) -> Result<Kubectl> {
        let exe = tokio::task::spawn_blocking(|| testcluster::binaries::ensure(Binary::Kubectl))
            .await??;
        Ok(Kubectl {
            exe,
            kubeconfig: kubeconfig.map(Path::to_path_buf),
            cache_dir: None,
        })
    }

    /// Keeps kubectl's discovery cache in `dir` rather than `~/.kube/cache`
    /// (a throw-away control plane's random port would leave one directory there per run).
    pub fn with_cache_dir(mut self, dir: &Path) -> Kubectl {
        self.cache_dir = Some(dir.to_path_buf());
        self
    }

    /// The kubectl binary.
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    /// Runs `kubectl ARGS`.
    pub async fn run(&self, args: &[&str]) -> Result<Output> {
        let mut command = tokio::process::Command::new(&self.exe);
        if let Some(kubeconfig) = &self.kubeconfig {
            command.arg("--kubeconfig").arg(kubeconfig);
        }
        command.args(args);
        self.output(command, &format!("kubectl {}", args.join(" ")))
            .await
    }

    /// Runs `line` with bash, as a reader would paste it: this kubectl first
    /// on `PATH`, `KUBECONFIG` set, in the repository root (so that
    /// `manifests/…` resolves), without the variables `cargo run` set for
    /// this program (a `cargo` in the line would otherwise rebuild ring and
    /// everything linking it, whose build script watches `CARGO_PKG_NAME`).
    pub async fn shell(&self, line: &str) -> Result<Output> {
        let mut command = tokio::process::Command::new("bash");
        command.args(["-c", line]);
        for (key, _) in std::env::vars_os() {
            if crate::cargo::describes_running_package(&key) {
                command.env_remove(key);
            }
        }
        let dir = self.exe.parent().unwrap_or(Path::new("."));
        let mut path = std::ffi::OsString::from(dir);
        if let Some(old) = std::env::var_os("PATH") {
            path.push(":");
            path.push(old);
        }
        command.env("PATH", path);
        if let Some(kubeconfig) = &self.kubeconfig {
            command.env("KUBECONFIG", kubeconfig);
        }
        self.output(command, line).await
    }

    async fn output(&self, mut command: tokio::process::Command, shown: &str) -> Result<Output> {
        if let Some(dir) = &self.cache_dir {
            command.env("KUBECACHEDIR", dir);
        }
        let out = command
            .current_dir(crate::workspace::repo_root())
            .stdin(Stdio::null())
            .output()
            .await
            .with_context(|| format!("running {shown}"))?;
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        lines.extend(
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .map(str::to_string),
        );
        Ok(Output {
            code: out.status.code().unwrap_or(-1),
            lines,
        })
    }
}

/// The lines to paste into a shell to use the cached kubectl (if it is
/// there) against the cluster of `kubeconfig`; paths under `$HOME` are
/// written with `$HOME`, as the book writes them.
pub fn export_lines(kubeconfig: &Path) -> Vec<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut lines = Vec::new();
    if let Ok(Some(kubectl)) = testcluster::binaries::locate(Binary::Kubectl)
        && let Some(dir) = kubectl.parent()
    {
        lines.push(format!(
            "export PATH=\"{}:$PATH\"   # kubectl {}",
            in_double_quotes(dir, home.as_deref()),
            Binary::Kubectl.version()
        ));
    }
    lines.push(format!(
        "export KUBECONFIG=\"{}\"",
        in_double_quotes(kubeconfig, home.as_deref())
    ));
    lines
}

/// `path` for use between double quotes: `$HOME/…` if it is under `home`,
/// with `"`, `$`, `` ` `` and `\` escaped.
fn in_double_quotes(path: &Path, home: Option<&Path>) -> String {
    let escape = |text: &str| {
        let mut out = String::new();
        for c in text.chars() {
            if matches!(c, '"' | '$' | '`' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    let home = home.filter(|h| !h.as_os_str().is_empty());
    match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) => format!("$HOME/{}", escape(&rest.display().to_string())),
        None => escape(&path.display().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_shell_line_does_not_see_the_variables_cargo_run_set_for_xtask() {
        // `cargo test` sets them for this test as `cargo xtask` does for xtask.
        assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
        let kubectl = Kubectl {
            exe: PathBuf::from("/usr/bin/kubectl"),
            kubeconfig: None,
            cache_dir: None,
        };
        let out = kubectl
            .shell(r#"echo "${CARGO_PKG_NAME-unset} ${CARGO_MANIFEST_DIR-unset} ${PATH%%:*}""#)
            .await
            .unwrap();
        assert_eq!(out.lines, ["unset unset /usr/bin"]);
    }

    #[test]
    fn paths_are_written_for_double_quotes() {
        let home = Some(Path::new("/home/me"));
        assert_eq!(
            in_double_quotes(Path::new("/home/me/.cache/x-v1.2.3"), home),
            "$HOME/.cache/x-v1.2.3"
        );
        assert_eq!(
            in_double_quotes(Path::new("/srv/a b/$x\"q\""), home),
            r#"/srv/a b/\$x\"q\""#
        );
        assert_eq!(
            in_double_quotes(Path::new("/home/me2/k"), home),
            "/home/me2/k"
        );
    }
}
