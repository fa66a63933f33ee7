//! What only step 8 uses: the controller the kube-rs way and what running it
//! in production needs.
//!
//! The shared pieces (the Foo type, `new_deployment`, flags, the informer
//! helpers, the work queue's rate limiter) are the `sample_controller` crate
//! in `src/`, as for steps 1–7. This crate adds axum, prometheus-client and
//! kube-lease-manager to them; keeping it apart means a learner's first
//! `cargo run --bin step-1` compiles none of those (book: Performance, "The
//! first build").

pub mod caches;
pub mod error;
pub mod leader;
pub mod metrics;
pub mod probes;
pub mod reconciler;
pub mod server;
