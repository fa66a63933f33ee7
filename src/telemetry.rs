//! Logging. Go: klog, with `-v` levels; here `tracing` with `RUST_LOG` filters.

use std::fs::OpenOptions;
use std::io::{IsTerminal, Write};
use std::path::Path;

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::fmt::time::Uptime;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

/// The environment variable that asks for the log as JSON too: the file to
/// append it to.
pub const JSON_LOG: &str = "SAMPLE_CONTROLLER_LOG_JSON";

/// What the JSON log holds: everything down to debug level, kube's spans
/// included, but the HTTP and TLS machinery's own chatter.
pub const JSON_FILTER: &str = "debug,hyper=info,hyper_util=info,h2=info,rustls=info,tower=info";

/// Logs to stderr, filtered by `RUST_LOG` (default `info`), e.g.
/// `RUST_LOG=debug,kube=info cargo run --bin step-N`.
///
/// Steps print what a learner should read to stdout; logs go to stderr so the
/// two never interleave mid-line. With `SAMPLE_CONTROLLER_LOG_JSON=PATH`, the
/// same events also go to PATH as JSON, one object per line, for programs
/// to read: see [`json_layer`].
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let text = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal()) // no colour codes in files and pipes
        .with_filter(filter);
    let (json, unwritable) = match std::env::var_os(JSON_LOG) {
        None => (None, None),
        Some(path) => match OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => (Some(json_layer(file)), None),
            Err(err) => (None, Some((Path::new(&path).display().to_string(), err))),
        },
    };
    tracing_subscriber::registry().with(text).with(json).init();
    if let Some((path, err)) = unwritable {
        tracing::warn!("{JSON_LOG}={path}: cannot open it ({err}); no JSON log is written");
    }
}

/// The log as JSON lines, written to `out` (the crate's `json` format):
/// each event with its fields at the top level, `timestamp` in seconds since
/// the program started, `span`, the span it happened in, and `spans`, all
/// the spans around it, outermost first, each with its `name` and fields;
/// each span's opening and closing as events of their own (`message` `new`
/// and `close`, the span in `span`, the spans around it in `spans`). Filtered by
/// [`JSON_FILTER`], whatever `RUST_LOG` says.
pub fn json_layer<S>(out: impl Write + Send + 'static) -> impl Layer<S> + Send + Sync
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(true)
        .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
        .with_timer(Uptime::default())
        .with_writer(std::sync::Mutex::new(out))
        .with_filter(EnvFilter::new(JSON_FILTER))
}
