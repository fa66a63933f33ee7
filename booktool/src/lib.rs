//! The book's tooling: everything that turns `book/` into the two published
//! editions and proves every page of them. `cargo xtask book …` and
//! book.toml's `[preprocessor.gosource]` call it; nothing else does.
//!
//! * **The preprocessor** (`preprocess/`): mdBook runs it on every build; it
//!   expands `{{#go}}` excerpts and `go:` links from the pinned Go source
//!   ([`gosource`]), `{{#version}}`, `{{#figure}}`, `{{#flow}}` and `{{#terms}}`.
//! * **The captures** (`outputs [FILE…]`): a local control plane, every step
//!   binary through a short scripted scenario, and what it printed written to
//!   `book/src/outputs/*.txt`, the output blocks the chapters include.
//!   "Running in a cluster" adds two replicas of step 8 handing the leader
//!   Lease over, `/metrics`, missing RBAC, and the static musl binary. With
//!   `--check` it writes into target/outputs-fresh instead and fails when a
//!   committed capture is stale (`fresh.rs` says what counts as the same).
//! * **The editions** (`build`, `po`; [`i18n`]): `mdbook-mermaid install
//!   book`, then `mdbook build book` for English and each translated
//!   edition; `po` is the translators' command (the English messages
//!   extracted and merged into each edition's catalogue).
//! * **The check** (`check`): every include and anchor resolves, each
//!   edition's coverage and its translations' directives, links and terms,
//!   every step has a chapter that includes its code and its output, whose
//!   "Run it" block runs the commands of its captures (`runit.rs`), every Go
//!   link is pinned and every Go excerpt names what it shows ([`gosource`]);
//!   then the build, a link check of the rendered HTML, and every page in
//!   headless Chromium (diagrams drawn, silent console, Go panes; `chromium.rs`),
//!   with screenshots in target/book-screenshots/. It installs nothing: a
//!   missing tool is an error that names its install command ([`tools`]).
//!
//! One job a file: `tools.rs` (the pinned mdBook tools and Chromium),
//! `check.rs`, `links.rs` (the rendered pages' links and anchors), `runit.rs`, `fresh.rs`, `outputs.rs` (the list of captures),
//! `capture.rs` (what the capture scenarios share: writing the files, the
//! transcript of a step run), `scenarios/` (one capture a file of
//! `book/src/outputs/`; a step chapter's is in the step's folder,
//! `steps/step-N/capture.rs`), `recordings.rs` (the flow recordings the
//! replays show), `search.rs`, `typed.rs`, `solutions.rs` (the workshop's
//! answers stay folded), and the readers every check
//! shares: [`markdown`] (the book's Markdown, as mdBook reads it) and
//! [`html`] (the rendered pages, as a browser parses them).
//!
//! Never: is called by a step or by the course's checks; writes outside
//! `book/` and the target directory.

mod capture;
mod check;
mod chromium;
mod fresh;
pub mod gosource;
pub mod html;
pub mod i18n;
mod links;
pub mod markdown;
mod outputs;
mod preprocess;
mod recordings;
mod runit;
mod scenarios;
mod search;
mod solutions;
pub mod tools;
mod typed;

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use clap::Subcommand;

pub use check::check;
pub use preprocess::PreprocessCommand;
use tools::{MDBOOK, MDBOOK_I18N_HELPERS, MDBOOK_MERMAID, require_tools};

/// `cargo xtask book <command>`.
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
    /// The mdBook preprocessor of book.toml's `[preprocessor.gosource]`: expands `{{#go …}}`
    /// into the Go source from the module cache (reads `[context, book]` JSON on stdin).
    Preprocess {
        #[command(subcommand)]
        command: Option<PreprocessCommand>,
    },
    /// Print the book's `go:` link to a Go declaration, with the pinned URL it resolves to,
    /// e.g. `go-link controller.go syncHandler`.
    GoLink {
        /// A .go file of the Go sample-controller, relative to its module root.
        file: String,
        /// A top-level function, method, type, const or var.
        name: String,
    },
}

/// Runs a `cargo xtask book` command.
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
        BookCommand::Preprocess { command } => preprocess::preprocess(command),
        BookCommand::GoLink { file, name } => gosource::print_link(&file, &name),
    }
}

/// Builds the book: mdbook-mermaid's files, then mdbook for English and for
/// each translated edition.
fn build() -> Result<()> {
    let book = book_dir();
    // Regenerates mermaid.min.js and mermaid-init.js (gitignored build tooling).
    course::workspace::run_tool(Command::new("mdbook-mermaid").arg("install").arg(&book))?;
    course::workspace::run_tool(Command::new("mdbook").arg("build").arg(&book))?;
    println!("Built {}", book.join("book/index.html").display());
    i18n::build_editions(&book)
}

/// `book/`: book.toml, the chapters in `src/`, the catalogues in `po/`.
pub(crate) fn book_dir() -> PathBuf {
    course::workspace::repo_root().join("book")
}
