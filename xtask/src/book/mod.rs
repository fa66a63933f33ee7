//! `cargo xtask book <command>`: the book in `book/`.
//!
//! * `outputs [FILE…]`: start a local control plane, run every step binary
//!   through a short scripted scenario, and write what it printed to
//!   `book/src/outputs/*.txt`, the output blocks the chapters include (only
//!   the files named, if any). "Running in a cluster" adds two replicas of
//!   step 8 handing the leader Lease over, `/metrics`, missing RBAC, and the
//!   static musl binary. With `--check` it writes into target/outputs-fresh
//!   instead and fails when a committed capture is stale (fresh.rs says what
//!   counts as the same).
//! * `build`: `mdbook-mermaid install book` (regenerates the gitignored
//!   mermaid JS), then `mdbook build book`, for English and then for each
//!   translated edition (i18n.rs).
//! * `po`: the translators' command: the English messages extracted and
//!   merged into each edition's catalogue (i18n.rs).
//! * `check`: source checks (every include and anchor resolves, each
//!   edition's coverage and its translations' directives, links and terms, every step has
//!   a chapter that includes its code and its output, whose "Run it" block runs
//!   the commands of its captures (runit.rs), every Go link is pinned,
//!   every Go excerpt and Go line link names what it shows: gosource/), the
//!   build, a link check of the rendered HTML, and every page in headless
//!   Chromium (diagrams drawn, silent console, Go panes; chromium.rs), with
//!   screenshots in target/book-screenshots/. Installs nothing: a missing tool
//!   is an error that names its install command.
//! * `preprocess`, `go-link` (registered in main.rs, code in gosource/): the
//!   mdBook preprocessor of `{{#go …}}`, and the pinned link of a Go declaration.
//!
//! The module's files, one job each: `tools.rs` (the pinned mdBook tools,
//! what installs them, `build`), `check.rs` (`check` and its helpers),
//! `runit.rs` (the step chapters' "Run it" blocks against their captures),
//! `fresh.rs` (a committed capture against a new run of it),
//! `outputs.rs` (`outputs`: the list of captures, running their scenarios),
//! `capture.rs` (the machinery the scenarios share: writing the files, the
//! transcript of a step run) and `scenarios/` (one capture a file of
//! `book/src/outputs/`; a step chapter's is in the step's folder).

mod capture;
mod check;
mod fresh;
pub mod i18n;
mod outputs;
mod recordings;
mod runit;
mod scenarios;
mod search;
mod tools;
mod typed;

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use clap::Subcommand;

pub use check::check;
use tools::{MDBOOK, MDBOOK_I18N_HELPERS, MDBOOK_MERMAID, require_tools};

#[derive(Subcommand)]
pub enum BookCommand {
    /// Run every step against a fresh local control plane and write book/src/outputs/*.txt.
    Outputs {
        /// Write only these files (e.g. `leader-lost.txt`); all of them if none is named.
        only: Vec<String>,
        /// Write nothing in the book: capture into target/outputs-fresh and fail
        /// if a committed capture no longer says what the new run printed.
        #[arg(long)]
        check: bool,
    },
    /// Build the book into book/book, and each translated edition into
    /// book/book/LANG (mdbook-mermaid install, then mdbook build).
    Build,
    /// Extract the English messages into book/po/messages.pot and merge them
    /// into each edition's catalogue (book/po/LANG.po); print its coverage.
    Po,
    /// Check includes, anchors, links, pinned Go links and the rendered diagrams.
    Check,
}

/// Runs a `cargo xtask book` subcommand.
pub async fn run(command: BookCommand) -> Result<()> {
    match command {
        BookCommand::Outputs { only, check } => outputs::outputs(&only, check).await,
        BookCommand::Build => {
            require_tools(&[MDBOOK, MDBOOK_MERMAID, MDBOOK_I18N_HELPERS], false)?;
            build()
        }
        BookCommand::Po => {
            require_tools(&[MDBOOK, MDBOOK_I18N_HELPERS], false)?;
            i18n::update()
        }
        BookCommand::Check => check(),
    }
}

/// Builds the book: mdbook-mermaid's files, then mdbook for English and for
/// each translated edition.
fn build() -> Result<()> {
    let book = book_dir();
    // Regenerates mermaid.min.js and mermaid-init.js (gitignored build tooling).
    crate::workspace::run_tool(Command::new("mdbook-mermaid").arg("install").arg(&book))?;
    crate::workspace::run_tool(Command::new("mdbook").arg("build").arg(&book))?;
    println!("Built {}", book.join("book/index.html").display());
    i18n::build_editions(&book)
}

pub(super) fn book_dir() -> PathBuf {
    crate::workspace::repo_root().join("book")
}
