//! What a running controller reports about itself: whether it is ready, and
//! its metrics. The HTTP server (`steps/step-8/src/server.rs`) serves them; the controller
//! and leader election (`steps/step-8/src/leader.rs`) only update them.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::metrics::Metrics;

/// What the endpoints report: the metrics, and whether the process is ready.
#[derive(Default)]
pub struct Probes {
    /// The controller's metrics, served on `/metrics`.
    pub metrics: Metrics,
    ready: AtomicBool,
}

impl Probes {
    /// Marks the process ready (`/readyz` answers 200) or not (503).
    ///
    /// Step 8 is ready once its caches are synced, or, under leader election,
    /// while it stands by: a standby replica is healthy, and a Deployment
    /// rollout must not wait for it to become leader.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}
