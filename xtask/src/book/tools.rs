//! The tools the book is built and checked with: their pinned versions and
//! the commands that install them.

use anyhow::{Result, bail};

use crate::setup::BookTool;
pub(super) use crate::setup::{MDBOOK, MDBOOK_I18N_HELPERS, MDBOOK_MERMAID};

/// Fails with the install lines of every missing or wrongly versioned tool
/// (the pins of `setup`), and Chromium's when `chromium` is asked for and missing.
pub(super) fn require_tools(tools: &[BookTool], chromium: bool) -> Result<()> {
    let mut problems = Vec::new();
    let mut install = Vec::new();
    for tool in tools {
        match crate::setup::installed_version(tool) {
            Some(version) if version == tool.version => continue,
            Some(version) => problems.push(format!(
                "{} {version} found, the book needs {}",
                tool.name, tool.version
            )),
            None => problems.push(format!("{} is not installed", tool.name)),
        }
        install.push(format!("  {}", tool.install_line()));
    }
    if chromium && crate::setup::chromium().is_none() {
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
