//! The HTTP endpoints a cluster asks a controller Pod for: `/healthz`
//! (liveness), `/readyz` (readiness) and `/metrics` (Prometheus).
//!
//! Not in Go's sample-controller, which serves nothing. kube-controller-manager
//! and controller-runtime serve the same three paths.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::probes::Probes;
use sample_controller::signals::Shutdown;

// ANCHOR: flags
/// Where step 8 serves its probes and metrics.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServeFlags {
    /// Serve /healthz, /readyz and /metrics on this address, e.g.
    /// 127.0.0.1:8080 (in a Pod: 0.0.0.0:8080; port 0 takes any free port
    /// and logs it). Off unless given.
    #[arg(long, value_name = "ADDR", env = "HTTP_ADDRESS")]
    pub http_address: Option<SocketAddr>,
}
// ANCHOR_END: flags

// ANCHOR: serve
/// Binds `addr` (failing at once with a clear message if it cannot), logs
/// the address it got, and serves the three endpoints until `shutdown`.
pub async fn serve(
    addr: SocketAddr,
    probes: Arc<Probes>,
    shutdown: Shutdown,
) -> anyhow::Result<impl Future<Output = ()>> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on --http-address {addr}"))?;
    // The address bound, so that port 0 ("any free port") says which one it got.
    let addr = listener.local_addr().unwrap_or(addr);
    tracing::info!(%addr, "serving /healthz, /readyz and /metrics");
    let app = Router::new()
        // Liveness: the process answers. Restarting it would not help a
        // controller that cannot reach the API server, so this checks nothing else.
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(probes);
    Ok(async move {
        if let Err(err) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(error = %err, "HTTP server failed");
        }
    })
}
// ANCHOR_END: serve

/// `/readyz`: 200 once ready, 503 before.
async fn readyz(State(probes): State<Arc<Probes>>) -> impl IntoResponse {
    if probes.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: caches not synced",
        )
    }
}

/// `/metrics`: every metric in the OpenMetrics text format.
async fn metrics(State(probes): State<Arc<Probes>>) -> impl IntoResponse {
    match probes.metrics.encode() {
        Ok(text) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        ),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("cannot encode metrics: {err}"),
        ),
    }
}
