//! Cargo, run from a program that Cargo itself started (`cargo xtask …`,
//! `cargo test`), so that it builds exactly what the user's own `cargo build`
//! builds.
//!
//! `cargo run` and `cargo test` hand the program they start variables that
//! describe *that* package (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …). A
//! nested `cargo build` that inherits them passes them on to build scripts,
//! and a build script that watches one (ring's watches `CARGO_MANIFEST_DIR`)
//! is then out of date: ring, rustls, kube and everything above them were
//! rebuilt, and rebuilt again by the next plain `cargo build`. [`command`]
//! removes those variables and nothing else (the user's `CARGO_HOME`,
//! `CARGO_TARGET_DIR`, `CARGO_INCREMENTAL`, `CARGO_PROFILE_*`, … stay).

use std::ffi::OsStr;
use std::fmt;
use std::path::Path;

/// The variables Cargo sets for a process it runs (`cargo run`, `cargo
/// test`) that describe the package, not the user's configuration.
const SET_FOR_THE_RUNNING_PACKAGE: &[&str] = &[
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

/// Whether `name` is one of the variables [`command`] removes.
pub fn describes_running_package(name: &OsStr) -> bool {
    name.to_str().is_some_and(|name| {
        name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
            || SET_FOR_THE_RUNNING_PACKAGE.contains(&name)
    })
}

/// `cargo ARGS` in `dir`, with the environment the user's shell would give it.
pub fn command(dir: &Path, args: &[&str]) -> Cargo {
    Cargo {
        args: args.iter().map(|a| a.to_string()).collect(),
        env: Vec::new(),
        dir: dir.to_path_buf(),
    }
}

/// A cargo invocation that can be printed as the command it runs
/// (`Display`: `cargo build -p workshop --bin workshop-step-5`) and turned
/// into a process ([`Cargo::std`], [`Cargo::tokio`]).
#[derive(Clone, Debug)]
pub struct Cargo {
    args: Vec<String>,
    env: Vec<(String, String)>,
    dir: std::path::PathBuf,
}

impl Cargo {
    /// Sets `key=value` for this cargo (shown before the command).
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.env.push((
            key.to_string(),
            value.as_ref().to_string_lossy().into_owned(),
        ));
        self
    }

    /// The process, for `std::process`.
    pub fn std(&self) -> std::process::Command {
        let mut command = std::process::Command::new(cargo_exe());
        command.args(&self.args).current_dir(&self.dir);
        for (key, _) in std::env::vars_os() {
            if describes_running_package(&key) {
                command.env_remove(key);
            }
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    /// The process, for `tokio::process`.
    pub fn tokio(&self) -> tokio::process::Command {
        tokio::process::Command::from(self.std())
    }
}

impl fmt::Display for Cargo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (key, value) in &self.env {
            write!(f, "{key}={value} ")?;
        }
        write!(f, "cargo {}", self.args.join(" "))
    }
}

/// The static (musl) release build of step 8, with the command the
/// Dockerfile runs, into `root`'s `target/musl` (a directory of its own, so
/// that it never waits on the debug builds' lock), and the binary it writes.
/// tests/image.rs runs it; `cargo xtask test` starts it early, beside the
/// other tests.
pub fn musl_step_8(root: &Path) -> (Cargo, std::path::PathBuf) {
    let target_dir = root.join("target/musl");
    let cargo = command(
        root,
        &[
            "build",
            "--release",
            "--locked",
            "--target",
            "x86_64-unknown-linux-musl",
            "--bin",
            "step-8",
        ],
    )
    .env("CARGO_TARGET_DIR", &target_dir);
    let binary = target_dir.join("x86_64-unknown-linux-musl/release/step-8");
    (cargo, binary)
}

/// Lowers the calling thread, and so every process it starts from now on,
/// to the lowest CPU priority (nice 19): on Linux a thread's nice value is
/// its own, and a child inherits its parent thread's. For builds run beside
/// tests that wait on API servers: the tests' processes always come first,
/// the builds take the cores they leave idle. A warning if it cannot.
pub fn lower_this_thread() {
    // SAFETY: both calls only read their integer arguments; gettid cannot fail.
    let lowered =
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
    if lowered != 0 {
        eprintln!(
            "warning: cannot lower the priority of a build beside the tests ({}); it runs at theirs",
            std::io::Error::last_os_error()
        );
    }
}

/// The cargo that started this process (`$CARGO`), else the one on `PATH`.
fn cargo_exe() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_describing_the_running_package_are_removed_and_the_users_kept() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_EXE_step-8",
            "OUT_DIR",
        ] {
            assert!(describes_running_package(OsStr::new(name)), "{name}");
        }
        for name in [
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_PROFILE_DEV_DEBUG",
            "CARGO_TERM_COLOR",
            "CARGO",
            "PATH",
        ] {
            assert!(!describes_running_package(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn a_command_prints_as_what_it_runs() {
        let cargo = command(Path::new("/repo"), &["build", "--bin", "step-5"])
            .env("CARGO_TARGET_DIR", "target/musl");
        assert_eq!(
            cargo.to_string(),
            "CARGO_TARGET_DIR=target/musl cargo build --bin step-5"
        );
        let std = cargo.std();
        let args: Vec<_> = std.get_args().collect();
        assert_eq!(args, ["build", "--bin", "step-5"]);
        assert_eq!(std.get_current_dir(), Some(Path::new("/repo")));
        // Under `cargo test`, CARGO_MANIFEST_DIR is set for this process: the
        // child must not inherit it.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        assert!(
            std.get_envs()
                .any(|(k, v)| k == "CARGO_MANIFEST_DIR" && v.is_none())
        );
    }
}
