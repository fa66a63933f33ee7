//! The tools the book is built and checked with: their pinned versions, the
//! commands that install them (`cargo xtask setup` runs them), how an
//! installed one is found (Chromium is found by `course::programs`).

use std::process::{Command, Stdio};

use anyhow::{Result, bail};
use course::programs::{chromium, which};

/// A tool the book is built or checked with, pinned.
#[derive(Clone, Copy, Debug)]
pub struct BookTool {
    /// Its crate name.
    pub name: &'static str,
    /// How its installed version is found.
    pub probe: Probe,
    /// The exact version `cargo install` gets.
    pub version: &'static str,
    /// Extra `cargo install` arguments.
    pub features: &'static [&'static str],
}

impl BookTool {
    /// `cargo install --locked NAME --version V …`.
    pub fn install_args(&self) -> Vec<&'static str> {
        let mut args = vec!["install", "--locked", self.name, "--version", self.version];
        args.extend_from_slice(self.features);
        args
    }

    /// The install command, as a person would type it.
    pub fn install_line(&self) -> String {
        format!("cargo {}", self.install_args().join(" "))
    }
}

/// How the installed version of a book tool is found.
#[derive(Clone, Copy, Debug)]
pub enum Probe {
    /// `COMMAND --version` prints `NAME vX.Y.Z` (the command is the crate's name).
    VersionFlag,
    /// The command has no `--version`: the crate's line in `cargo install
    /// --list`, if the command is on `PATH`.
    CargoList(&'static str),
}

/// mdBook itself (with search, without the live-reload server's extras).
pub const MDBOOK: BookTool = BookTool {
    name: "mdbook",
    probe: Probe::VersionFlag,
    version: "0.5.4",
    features: &["--no-default-features", "--features", "search"],
};
/// The mermaid preprocessor (diagrams).
pub const MDBOOK_MERMAID: BookTool = BookTool {
    name: "mdbook-mermaid",
    probe: Probe::VersionFlag,
    version: "0.17.1",
    features: &[],
};
/// gettext for mdBook: the `gettext` preprocessor renders the Chinese edition
/// from book/po/zh-CN.po, the `xgettext` renderer extracts the English
/// messages (i18n/).
pub const MDBOOK_I18N_HELPERS: BookTool = BookTool {
    name: "mdbook-i18n-helpers",
    probe: Probe::CargoList("mdbook-gettext"),
    version: "0.4.0",
    features: &[],
};
/// Every pinned book tool. Links and anchors are checked in the rendered
/// pages by `cargo xtask book check` itself (a link-checker backend would
/// cost a fresh machine minutes of `cargo install` to check the same links).
pub const BOOK_TOOLS: [BookTool; 3] = [MDBOOK, MDBOOK_MERMAID, MDBOOK_I18N_HELPERS];

/// Fails with the install lines of every missing or wrongly versioned tool
/// (the pins above), and Chromium's when `chromium` is asked for and missing.
pub(crate) fn require_tools(tools: &[BookTool], chromium: bool) -> Result<()> {
    let mut problems = Vec::new();
    let mut install = Vec::new();
    for tool in tools {
        match installed_version(tool) {
            Some(version) if version == tool.version => continue,
            Some(version) => problems.push(format!(
                "{} {version} found, the book needs {}",
                tool.name, tool.version
            )),
            None => problems.push(format!("{} is not installed", tool.name)),
        }
        install.push(format!("  {}", tool.install_line()));
    }
    if chromium && self::chromium().is_none() {
        problems.push("chromium is not installed".to_string());
        install.push("  apt-get install chromium (Debian), dnf install chromium (Fedora)".into());
    }
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "{}.\nInstall with (or run `cargo xtask test`, which installs them):\n{}",
        problems.join("; "),
        install.join("\n")
    )
}

/// The installed version of `tool`, if it is on `PATH`: what `NAME
/// --version` prints (`mdbook v0.5.4` → `0.5.4`), or its crate's line in
/// `cargo install --list` (`mdbook-i18n-helpers v0.4.0:`).
pub fn installed_version(tool: &BookTool) -> Option<String> {
    let name = match tool.probe {
        Probe::VersionFlag => tool.name,
        Probe::CargoList(command) => {
            which(command)?;
            let out = Command::new("cargo")
                .args(["install", "--list"])
                .stderr(Stdio::null())
                .output()
                .ok()?;
            let list = String::from_utf8_lossy(&out.stdout);
            let line = list
                .lines()
                .find(|l| l.split_whitespace().next() == Some(tool.name))?;
            let version = line.split_whitespace().nth(1)?;
            return Some(
                version
                    .trim_start_matches('v')
                    .trim_end_matches(':')
                    .to_string(),
            );
        }
    };
    let out = Command::new(name)
        .arg("--version")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let number = text.split_whitespace().nth(1)?.trim_start_matches('v');
    Some(number.to_string())
}
