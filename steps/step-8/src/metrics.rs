//! What step 8 counts, for Prometheus: reconciles, failures, how long a
//! reconcile takes, and whether this replica is the leader.
//!
//! Not in Go's sample-controller. A client-go controller gets workqueue
//! metrics by registering a `MetricsProvider`; controller-runtime exposes
//! `controller_runtime_reconcile_total` and friends. The names here follow
//! the same Prometheus conventions with a `sample_controller_` prefix.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The label of a failed reconcile: which kind of error ended it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// `resource_exists` (the Deployment name is taken) or `api` (a failed API call).
    pub error: &'static str,
}

/// The controller's metrics and the registry that encodes them.
pub struct Metrics {
    registry: Registry,
    reconciles: Counter,
    failures: Family<FailureLabels, Counter>,
    duration: Histogram,
    leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric, all at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("sample_controller");
        let reconciles = Counter::default();
        let failures = Family::<FailureLabels, Counter>::default();
        // 1 ms … ~16 s: a sync is a few API calls, each a few milliseconds.
        let duration = Histogram::new(exponential_buckets(0.001, 2.0, 15));
        let leader = Gauge::default();
        registry.register(
            "reconciles",
            "Syncs of a Foo, successful or not",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_failures",
            "Syncs of a Foo that ended in an error (and were retried)",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "How long one sync of a Foo took",
            duration.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader lease (or runs without leader election)",
            leader.clone(),
        );
        Self {
            registry,
            reconciles,
            failures,
            duration,
            leader,
        }
    }

    /// Counts one sync that took `took`; `error` names the failure, if any.
    pub fn reconciled(&self, took: Duration, error: Option<&'static str>) {
        self.reconciles.inc();
        self.duration.observe(took.as_secs_f64());
        if let Some(error) = error {
            self.failures.get_or_create(&FailureLabels { error }).inc();
        }
    }

    /// Records whether this replica leads.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The metrics in the OpenMetrics text format Prometheus scrapes.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reconciles_and_failures_by_error_kind() {
        let metrics = Metrics::new();
        metrics.reconciled(Duration::from_millis(3), None);
        metrics.reconciled(Duration::from_millis(3), Some("api"));
        metrics.set_leader(true);
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("sample_controller_reconciles_total 2\n"),
            "{text}"
        );
        assert!(
            text.contains("sample_controller_reconcile_failures_total{error=\"api\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("sample_controller_reconcile_duration_seconds_count 2\n"),
            "{text}"
        );
        assert!(text.contains("sample_controller_leader 1\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
