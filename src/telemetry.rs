//! Logging. Go: klog, with `-v` levels; here `tracing` with `RUST_LOG` filters.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Logs to stderr, filtered by `RUST_LOG` (default `info`), e.g.
/// `RUST_LOG=debug,kube=info cargo run --bin step-7`.
///
/// Steps print what a learner should read to stdout; logs go to stderr so the
/// two never interleave mid-line.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal()) // no colour codes in files and pipes
        .init();
}
