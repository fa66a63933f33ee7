//! The capture scenarios of `cargo xtask book outputs`, one async fn per
//! output file: each step chapter's in its folder (`steps/step-N/capture.rs`,
//! module `stepN` here), what they share in `steps.rs`, "Running in a
//! cluster"'s in `cluster.rs`.

use std::future::Future;
use std::pin::Pin;

use anyhow::Result;

use super::capture::Env;

mod cluster;
mod steps;
mod workshop;

pub(super) use cluster::*;
pub(super) use steps::*;
pub(super) use workshop::*;

/// What a step's capture scenario wrote: each capture's file name (one of
/// its step.toml's `captures`, in that order) and its lines.
pub(super) type Captured = Vec<(&'static str, Vec<String>)>;

/// A step's capture scenario: `steps/step-N/capture.rs`'s `capture`.
pub(super) type StepCapture =
    for<'a> fn(&'a Env) -> Pin<Box<dyn Future<Output = Result<Captured>> + 'a>>;

// `stepN` for every steps/step-N/capture.rs, and `STEP_CAPTURES`: written
// by build.rs. (`cargo fmt` does not reach them through the generated
// declarations; .ci/run checks steps/*/*.rs with rustfmt itself.)
include!(concat!(env!("OUT_DIR"), "/captures.rs"));
