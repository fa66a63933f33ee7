//! Shared pieces of the sample-controller walkthrough.
//!
//! Each module is named after the Go piece it mirrors; the step binaries in
//! `steps/` use them so that each step file shows only the layer its chapter
//! teaches. What only one step uses lives in that step's folder, so that no
//! step compiles what only another needs: the modules built on kube's
//! runtime come with the `runtime` feature (on by default), which step 1,
//! a client that only lists, leaves off.
pub mod config;
pub mod crd;
pub mod deployment;
pub mod diagnose;
pub mod rbac;
pub mod show;
pub mod signals;
pub mod telemetry;
pub mod types;

pub use types::{Foo, FooSpec, FooStatus};

#[cfg(feature = "runtime")]
pub mod handlers;
#[cfg(feature = "runtime")]
pub mod informer;
#[cfg(feature = "runtime")]
pub mod vocabulary;
#[cfg(feature = "runtime")]
pub mod workqueue;

// Steps 7 and 8's unit tests use these too (their dev-dependency on this
// crate turns the feature on).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
