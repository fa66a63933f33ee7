//! The tools the book is built and checked with: their pinned versions, the
//! commands that install them, and `build` (mdbook-mermaid, then mdbook).

use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};

use super::book_dir;

/// The tool versions the book is built and checked with.
pub(super) const MDBOOK: (&str, &str) = ("mdbook", "0.5.");
pub(super) const MDBOOK_MERMAID: (&str, &str) = ("mdbook-mermaid", "0.17.");
pub(super) const MDBOOK_LINKCHECK2: (&str, &str) = ("mdbook-linkcheck2", "0.13.");
/// How to install each tool, quoted when it is missing.
const INSTALL: &[(&str, &str)] = &[
    (
        "mdbook",
        "cargo install --locked mdbook --version 0.5.4 --no-default-features --features search",
    ),
    (
        "mdbook-mermaid",
        "cargo install --locked mdbook-mermaid --version 0.17.1",
    ),
    (
        "mdbook-linkcheck2",
        "cargo install --locked mdbook-linkcheck2 --version 0.13.0",
    ),
    (
        "chromium",
        "apt-get update && apt-get install -y chromium   (Debian/Ubuntu)",
    ),
];

// ---------------------------------------------------------------------------
// build

pub(super) fn build() -> Result<()> {
    let book = book_dir();
    // Regenerates mermaid.min.js and mermaid-init.js (gitignored build tooling).
    run_tool(Command::new("mdbook-mermaid").arg("install").arg(&book))?;
    run_tool(Command::new("mdbook").arg("build").arg(&book))?;
    println!("Built {}", book.join("book/html/index.html").display());
    Ok(())
}

pub(super) fn run_tool(command: &mut Command) -> Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("running {shown}"))?;
    ensure!(status.success(), "{shown} failed ({status})");
    Ok(())
}

/// Fails with the install lines of every missing or wrongly versioned tool.
pub(super) fn require_tools(tools: &[(&str, &str)]) -> Result<()> {
    let mut problems = Vec::new();
    for &(tool, prefix) in tools {
        let found = Command::new(tool)
            .arg("--version")
            .stderr(Stdio::null())
            .output();
        let version = match found {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).to_string(),
            _ => String::new(),
        };
        // `mdbook v0.5.4`, `mdbook-mermaid 0.17.1`, `Chromium 1xx.…`
        let number = version
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .trim_start_matches('v');
        if version.is_empty() {
            problems.push(format!("{tool} is not installed"));
        } else if !number.starts_with(prefix) {
            problems.push(format!("{tool} {number} found, the book needs {prefix}x"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let install: Vec<String> = INSTALL
        .iter()
        .filter(|(tool, _)| problems.iter().any(|p| p.starts_with(&format!("{tool} "))))
        .map(|(_, line)| format!("  {line}"))
        .collect();
    bail!(
        "{}.\nInstall with:\n{}",
        problems.join("; "),
        install.join("\n")
    )
}
