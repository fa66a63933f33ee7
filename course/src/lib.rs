//! The course's engine: what the tooling knows of the steps, and how it runs
//! and checks them against a real API server.
//!
//! - [`steps`]: the step registry, read from each `steps/step-N/step.toml`
//!   by this crate's build script (a step exists because its folder does);
//! - [`checks`]: what steps 2–8 must do, one report line per behaviour, for
//!   `tests/steps.rs` and `cargo xtask check step-N` (each step's scenarios
//!   are its folder's `check.rs`);
//! - [`harness`]: a step, a starter or the Go sample-controller run as a
//!   child process, its output read line by line, and the objects its
//!   scenarios create;
//! - [`proxy`]: a fault-injecting proxy between a step and the API server
//!   (a watch held behind, a request refused, a cut);
//! - [`flow`]: a step's JSON log read as the flow of queue, worker, API and
//!   Event lines the book replays;
//! - [`starters`]: the workshop's starters, written from the steps (each
//!   step's spec is its folder's `starter.rs`; [`generated`] writes or checks
//!   a file the tooling makes);
//! - the commands a learner and a teacher run: [`exercise`] (`cargo xtask
//!   check`, a starter built and checked), [`cluster`] (`cargo xtask cluster`, the control plane kept
//!   running), [`demo`] and [`watch`] (a step's flow drawn live);
//! - [`kubectl`]: the control plane's kubectl, run in the repository (the
//!   demo, the captures and a reader's shell lines use the same one);
//!   [`programs`]: programs found on `PATH` (Chromium);
//! - [`cargo`]: cargo run from a program cargo started, building what the
//!   user's own `cargo build` builds; [`workspace`]: the repository as
//!   every tool sees it (its root, target directory and packages).
//!
//! It depends on the control plane (`testcluster`) to have somewhere to run,
//! and on the lesson's shared crate for the Foo and the RBAC tables. It never
//! depends on a step's package: a step is a binary it runs, never code it
//! calls. Nothing of the book or of the performance tooling is here, nor
//! of the project's own test runs.

pub mod cargo;
pub mod checks;
pub mod cluster;
pub mod demo;
pub mod exercise;
pub mod flow;
pub mod generated;
pub mod harness;
pub mod kubectl;
pub mod programs;
pub mod proxy;
pub mod starters;
pub mod steps;
pub mod watch;
pub mod workspace;

/// Where this crate's build script wrote what it makes from the step
/// folders (the registry, the list of the steps' check modules), for
/// tools that read this crate's modules as the compiler does.
pub const OUT_DIR: &str = env!("OUT_DIR");
