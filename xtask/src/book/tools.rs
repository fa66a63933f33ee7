//! The tools the book is built and checked with: their pinned versions, the
//! commands that install them, and `build` (mdbook-mermaid, then mdbook for
//! English and for each translated edition).

use std::process::Command;

use anyhow::{Result, bail};

use super::book_dir;

use crate::setup::BookTool;
pub(super) use crate::setup::{MDBOOK, MDBOOK_I18N_HELPERS, MDBOOK_MERMAID};

// ---------------------------------------------------------------------------
// build

pub(super) fn build() -> Result<()> {
    let book = book_dir();
    // Regenerates mermaid.min.js and mermaid-init.js (gitignored build tooling).
    crate::run_tool(Command::new("mdbook-mermaid").arg("install").arg(&book))?;
    crate::run_tool(Command::new("mdbook").arg("build").arg(&book))?;
    println!("Built {}", book.join("book/index.html").display());
    super::i18n::build_editions(&book)
}

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
