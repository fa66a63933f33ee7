//! Logging. Go: klog, with `-v` levels; here `tracing` with `RUST_LOG` filters.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::flow;

/// Logs to stderr, filtered by `RUST_LOG` (default `info`), e.g.
/// `RUST_LOG=debug,kube=info cargo run --bin step-7`.
///
/// Steps print what a learner should read to stdout; logs go to stderr so the
/// two never interleave mid-line. With `SAMPLE_CONTROLLER_FLOW=PATH`, the
/// step also writes its flow to PATH ([`flow`]), derived from the same events
/// and spans; the log shows them only as `RUST_LOG` asks.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal()) // no colour codes in files and pipes
        .with_filter(filter);
    let (flow, unwritable) = match flow::layer() {
        Ok(layer) => (layer, None),
        Err(err) => (None, Some(err)),
    };
    tracing_subscriber::registry().with(logs).with(flow).init();
    if let Some(err) = unwritable {
        tracing::warn!("{err:#}; the flow is not written");
    }
}
