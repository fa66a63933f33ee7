//! Shared pieces of the sample-controller walkthrough.
//!
//! Each module is named after the Go piece it mirrors; the step binaries in
//! `steps/` use them so that each step file shows only the layer its chapter
//! teaches. What only one step uses lives in that step's folder, so that no
//! step compiles what only another needs.
pub mod config;
pub mod crd;
pub mod deployment;
pub mod diagnose;
pub mod telemetry;
pub mod types;
pub mod vocabulary;

pub use types::{Foo, FooSpec, FooStatus};

// Steps 7 and 8's unit tests use these too (their dev-dependency on this
// crate turns the feature on).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod handlers;
pub mod informer;
pub mod rbac;
pub mod show;
pub mod signals;
pub mod workqueue;
