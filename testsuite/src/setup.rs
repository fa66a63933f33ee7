//! What `cargo xtask test` needs besides Rust and Go, set up before the first
//! test so that a fresh machine fails (or is ready) in the first seconds, not
//! after six minutes of tests.
//!
//! * System packages: Chromium (the book check renders every page),
//!   `musl-gcc` (tests/image.rs builds step 8 as a static musl binary, and
//!   ring's C needs musl's compiler) and a CJK font (the Chinese edition's
//!   pages). Installed through the system's package
//!   manager when this process may (root, or `sudo -n` works); otherwise the
//!   command stops at once with the commands to run.
//! * Rust's `x86_64-unknown-linux-musl` target: `rustup target add`.
//! * The book's tools, pinned: `cargo install --locked`, each skipped when the
//!   right version is already on `PATH`. Their versions and install commands
//!   are `booktool::tools`', which the book's commands check against.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use booktool::tools::{BOOK_TOOLS, BookTool, installed_version};
use course::programs::{chromium, which};

use course::workspace::run_tool as run;

/// Rust's target for the static binary of the image (Dockerfile, tests/image.rs).
pub const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// A system package the tests need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemNeed {
    /// Headless Chromium, for the book check.
    Chromium,
    /// `musl-gcc`, for the static musl build.
    MuslGcc,
    /// A font with Chinese glyphs, for the zh-CN edition's pages in Chromium
    /// (without one they show boxes).
    CjkFont,
}

impl SystemNeed {
    fn what(self) -> &'static str {
        match self {
            SystemNeed::Chromium => "Chromium (the book check renders every page headless)",
            SystemNeed::MuslGcc => {
                "musl-gcc (tests/image.rs builds step 8 as a static musl binary)"
            }
            SystemNeed::CjkFont => "Noto CJK fonts (the book check renders the Chinese edition)",
        }
    }

    /// The package that provides it, by package manager.
    fn package(self, manager: Manager) -> &'static str {
        match (self, manager) {
            (SystemNeed::Chromium, Manager::Apt) => "chromium",
            (SystemNeed::Chromium, Manager::Dnf) => "chromium",
            (SystemNeed::Chromium, Manager::Brew) => "--cask chromium",
            (SystemNeed::MuslGcc, Manager::Apt) => "musl-tools",
            (SystemNeed::MuslGcc, Manager::Dnf) => "musl-gcc",
            (SystemNeed::MuslGcc, Manager::Brew) => "filosottile/musl-cross/musl-cross",
            (SystemNeed::CjkFont, Manager::Apt) => "fonts-noto-cjk",
            (SystemNeed::CjkFont, Manager::Dnf) => "google-noto-sans-cjk-fonts",
            (SystemNeed::CjkFont, Manager::Brew) => "--cask font-noto-sans-cjk",
        }
    }
}

/// A package manager this module knows how to drive (or quote).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Manager {
    /// Debian and Ubuntu.
    Apt,
    /// Fedora.
    Dnf,
    /// macOS (Homebrew).
    Brew,
}

/// Whether this process may install system packages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privilege {
    /// Running as root.
    Root,
    /// `sudo -n true` works (no password asked).
    Sudo,
    /// Neither.
    None,
}

/// The commands that install `missing` with `manager`, privileged as `privilege` allows
/// (an argv each), or `None` when this process may not install them.
pub fn install_commands(
    missing: &[SystemNeed],
    manager: Manager,
    privilege: Privilege,
) -> Option<Vec<Vec<String>>> {
    if missing.is_empty() {
        return Some(Vec::new());
    }
    let sudo: &[&str] = match privilege {
        Privilege::Root => &[],
        Privilege::Sudo => &["sudo", "-n"],
        Privilege::None => return None,
    };
    let argv = |words: &[&str]| -> Vec<String> {
        sudo.iter()
            .chain(words)
            .map(|w| w.to_string())
            .collect::<Vec<_>>()
    };
    let packages: Vec<&str> = missing
        .iter()
        .flat_map(|need| need.package(manager).split(' '))
        .collect();
    let commands = match manager {
        Manager::Apt => {
            let mut install = vec![
                "env",
                "DEBIAN_FRONTEND=noninteractive",
                "apt-get",
                "install",
                "-y",
                "-qq",
                "--no-install-recommends",
            ];
            install.extend(&packages);
            vec![argv(&["apt-get", "update", "-qq"]), argv(&install)]
        }
        Manager::Dnf => {
            let mut install = vec!["dnf", "install", "-y", "-q"];
            install.extend(&packages);
            vec![argv(&install)]
        }
        // Homebrew refuses to run as root and needs no sudo: it is never
        // driven from here (the suite needs Linux anyway).
        Manager::Brew => return None,
    };
    Some(commands)
}

/// What to run by hand, for every system this project names: the message a
/// user without root sees.
pub fn manual_instructions(missing: &[SystemNeed]) -> String {
    let list = |manager| {
        missing
            .iter()
            .map(|need| need.package(manager))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let whats: Vec<String> = missing
        .iter()
        .map(|n| format!("  - {}", n.what()))
        .collect();
    let mut text = format!(
        "cargo xtask test needs system packages this user may not install (not root, and no password-less `sudo -n`):\n{}\n\nInstall them, then run `cargo xtask test` again (it installs the rest itself: Rust's {MUSL_TARGET} target and the book's tools):\n\n",
        whats.join("\n")
    );
    text.push_str(&format!(
        "  Debian/Ubuntu:  sudo apt-get update && sudo apt-get install -y {}\n",
        list(Manager::Apt)
    ));
    if missing.contains(&SystemNeed::Chromium) {
        text.push_str(
            "                  (Ubuntu ships Chromium as a snap: sudo snap install chromium)\n",
        );
    }
    text.push_str(&format!(
        "  Fedora:         sudo dnf install -y {}\n",
        list(Manager::Dnf)
    ));
    let brew: Vec<String> = missing
        .iter()
        .map(|need| format!("brew install {}", need.package(Manager::Brew)))
        .collect();
    text.push_str(&format!(
        "  macOS:          {}\n                  (the suite itself needs Linux: the local control plane reads /proc; see book/src/workshop.md)",
        brew.join(" && ")
    ));
    text
}

/// Sets up everything `cargo xtask test` needs, saying what it installs:
/// system packages first (without the right to install them, it stops
/// now), then Rust's musl target, then the book's tools.
pub fn ensure_test_prerequisites() -> Result<()> {
    let started = Instant::now();
    let system = install_system_packages()?;
    let musl = install_musl_target()?;
    let tools = install_book_tools()?;
    if system || musl || tools {
        println!(
            "==> Set up in {:.0} s; the next `cargo xtask test` skips all of this",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Installs the system packages that are missing; whether it installed any.
fn install_system_packages() -> Result<bool> {
    let mut missing = Vec::new();
    if chromium().is_none() {
        missing.push(SystemNeed::Chromium);
    }
    if cfg!(target_os = "linux") && which("musl-gcc").is_none() {
        missing.push(SystemNeed::MuslGcc);
    }
    if cfg!(target_os = "linux") && !cjk_font_installed() {
        missing.push(SystemNeed::CjkFont);
    }
    if missing.is_empty() {
        return Ok(false);
    }
    let manager = package_manager();
    let privilege = privilege();
    let commands = manager.and_then(|m| install_commands(&missing, m, privilege));
    let Some(commands) = commands else {
        bail!("{}", manual_instructions(&missing));
    };
    let names: Vec<&str> = missing.iter().map(|n| n.what()).collect();
    println!(
        "==> Installing system packages: {} (the first time: 1-3 minutes)",
        names.join("; ")
    );
    for argv in commands {
        println!("    $ {}", argv.join(" "));
        let status = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .status()
            .with_context(|| format!("running {}", argv[0]))?;
        ensure!(
            status.success(),
            "`{}` failed ({status}); install the packages by hand:\n{}",
            argv.join(" "),
            manual_instructions(&missing)
        );
    }
    ensure!(
        chromium().is_some() || !missing.contains(&SystemNeed::Chromium),
        "Chromium was installed but neither chromium nor chromium-browser is on PATH"
    );
    Ok(true)
}

/// Adds Rust's musl target (a download of about 40 MB) if it is missing;
/// whether it did.
fn install_musl_target() -> Result<bool> {
    if !cfg!(target_os = "linux") || musl_target_installed()? {
        return Ok(false);
    }
    println!("==> rustup target add {MUSL_TARGET} (the first time: under a minute)");
    run(Command::new("rustup").args(["target", "add", MUSL_TARGET]))?;
    Ok(true)
}

/// Installs each book tool missing or of another version; whether it
/// installed any.
fn install_book_tools() -> Result<bool> {
    let wanted: Vec<BookTool> = BOOK_TOOLS
        .into_iter()
        .filter(|tool| installed_version(tool).as_deref() != Some(tool.version))
        .collect();
    if wanted.is_empty() {
        return Ok(false);
    }
    let names: Vec<String> = wanted
        .iter()
        .map(|t| format!("{} {}", t.name, t.version))
        .collect();
    println!(
        "==> Installing the book's tools: {} (cargo install; the first time: about 2 minutes on 2 cores)",
        names.join(", ")
    );
    for tool in &wanted {
        let cargo = course::cargo::command(&course::workspace::repo_root(), &tool.install_args());
        println!("    $ {cargo}");
        run(&mut cargo.std())?;
        let found = installed_version(tool);
        ensure!(
            found.as_deref() == Some(tool.version),
            "{} {} was installed, but the version on PATH is {:?}: is cargo's bin directory ({}) on PATH, before any other {}?",
            tool.name,
            tool.version,
            found,
            cargo_bin().display(),
            tool.name
        );
    }
    Ok(true)
}

/// Whether fontconfig knows a font with Chinese glyphs (macOS ships them).
fn cjk_font_installed() -> bool {
    Command::new("fc-list")
        .arg(":lang=zh")
        .output()
        .is_ok_and(|out| out.status.success() && !out.stdout.is_empty())
}

fn musl_target_installed() -> Result<bool> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context(
            "running rustup (the musl target is added with rustup; without rustup, install your toolchain's x86_64-unknown-linux-musl standard library)",
        )?;
    ensure!(out.status.success(), "rustup target list failed");
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == MUSL_TARGET))
}

fn cargo_bin() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_default()
        .join("bin")
}

fn package_manager() -> Option<Manager> {
    if cfg!(target_os = "macos") {
        Some(Manager::Brew)
    } else if which("apt-get").is_some() {
        Some(Manager::Apt)
    } else if which("dnf").is_some() {
        Some(Manager::Dnf)
    } else {
        None
    }
}

fn privilege() -> Privilege {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Privilege::Root;
    }
    let sudo = Command::new("sudo")
        .args(["-n", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if sudo.is_ok_and(|s| s.success()) {
        Privilege::Sudo
    } else {
        Privilege::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_installs_with_the_package_manager_directly() {
        let commands = install_commands(
            &[SystemNeed::Chromium, SystemNeed::MuslGcc],
            Manager::Apt,
            Privilege::Root,
        )
        .unwrap();
        assert_eq!(commands[0], ["apt-get", "update", "-qq"]);
        assert_eq!(
            commands[1].join(" "),
            "env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium musl-tools"
        );
    }

    #[test]
    fn a_user_with_passwordless_sudo_installs_through_sudo_n() {
        let commands =
            install_commands(&[SystemNeed::MuslGcc], Manager::Dnf, Privilege::Sudo).unwrap();
        assert_eq!(
            commands,
            [["sudo", "-n", "dnf", "install", "-y", "-q", "musl-gcc"]]
        );
    }

    #[test]
    fn without_root_or_sudo_nothing_is_run_and_the_message_names_every_system() {
        assert_eq!(
            install_commands(&[SystemNeed::Chromium], Manager::Apt, Privilege::None),
            None
        );
        let text = manual_instructions(&[SystemNeed::Chromium, SystemNeed::MuslGcc]);
        for expected in [
            "sudo apt-get update && sudo apt-get install -y chromium musl-tools",
            "sudo dnf install -y chromium musl-gcc",
            "brew install --cask chromium && brew install filosottile/musl-cross/musl-cross",
            "sudo snap install chromium",
            "needs Linux",
        ] {
            assert!(
                text.contains(expected),
                "{expected:?} missing from:\n{text}"
            );
        }
    }

    #[test]
    fn nothing_missing_means_nothing_to_run() {
        assert_eq!(
            install_commands(&[], Manager::Apt, Privilege::None),
            Some(Vec::new())
        );
    }

    #[test]
    fn the_install_line_pins_the_exact_version() {
        assert_eq!(
            booktool::tools::MDBOOK.install_line(),
            "cargo install --locked mdbook --version 0.5.4 --no-default-features --features search"
        );
    }
}
