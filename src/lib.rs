//! Shared pieces of the sample-controller walkthrough.
//!
//! Each module is named after the Go piece it mirrors; the step binaries in
//! `steps/` use them so that each step file shows only the layer its chapter
//! teaches.
pub mod config;
pub mod crd;
pub mod deployment;
pub mod diagnose;
pub mod telemetry;
pub mod types;

pub use types::{Foo, FooSpec, FooStatus};

/// The Go sample-controller release this port follows; every link in code
/// comments and in the book points at this tag.
pub const GO_SOURCE_TAG: &str = "v0.36.3";
pub mod controller;
#[cfg(test)]
pub mod fixtures;
pub mod handlers;
pub mod informer;
pub mod leader;
pub mod metrics;
pub mod probes;
pub mod rbac;
pub mod reconciler;
pub mod server;
pub mod show;
pub mod signals;
pub mod workqueue;
