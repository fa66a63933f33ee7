//! Shutdown on SIGINT / SIGTERM. Go: `pkg/signals.SetupSignalHandler`.

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

/// A future that completes on the first SIGINT (Ctrl-C) or SIGTERM; clone it
/// to wait for it in several places.
pub type Shutdown = Shared<BoxFuture<'static, ()>>;

// ANCHOR: setup
/// Installs the signal handlers. The first signal completes the returned
/// future so the program can stop cleanly; a second one exits at once with
/// status 1, for when a clean stop hangs. Go: `SetupSignalHandler`.
#[cfg(unix)]
pub fn setup_signal_handler() -> anyhow::Result<Shutdown> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        tokio::select! { _ = interrupt.recv() => {}, _ = terminate.recv() => {} }
        tracing::info!("shutdown signal received; a second signal exits immediately");
        let _ = first_tx.send(());
        tokio::select! { _ = interrupt.recv() => {}, _ = terminate.recv() => {} }
        tracing::warn!("second shutdown signal: exiting now");
        std::process::exit(1);
    });
    Ok(first_rx.map(|_| ()).boxed().shared())
}

/// Elsewhere (Windows without WSL): Ctrl-C only, the one signal there is.
#[cfg(not(unix))]
pub fn setup_signal_handler() -> anyhow::Result<Shutdown> {
    let (first_tx, first_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            tracing::info!("Ctrl-C received; a second Ctrl-C exits immediately");
            let _ = first_tx.send(());
        }
        if tokio::signal::ctrl_c().await.is_ok() {
            tracing::warn!("second Ctrl-C: exiting now");
            std::process::exit(1);
        }
    });
    Ok(first_rx.map(|_| ()).boxed().shared())
}
// ANCHOR_END: setup
