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

// `stepN` for every steps/step-N/capture.rs, and `STEP_CAPTURES`:
// `cargo xtask steps` writes the lines between BEGIN and END from the step
// folders (`--check` says when they are stale); nothing else lists the steps.
// BEGIN: the step folders' capture.rs, written by `cargo xtask steps`
#[path = "../../../steps/step-1/capture.rs"]
mod step1;
#[path = "../../../steps/step-2/capture.rs"]
mod step2;
#[path = "../../../steps/step-3/capture.rs"]
mod step3;
#[path = "../../../steps/step-4/capture.rs"]
mod step4;
#[path = "../../../steps/step-5/capture.rs"]
mod step5;
#[path = "../../../steps/step-6/capture.rs"]
mod step6;
#[path = "../../../steps/step-7/capture.rs"]
mod step7;
#[path = "../../../steps/step-8/capture.rs"]
mod step8;
/// Every step's capture scenario, by step number.
pub(crate) const STEP_CAPTURES: &[(u8, StepCapture)] = &[
    (1, |env| Box::pin(step1::capture(env))),
    (2, |env| Box::pin(step2::capture(env))),
    (3, |env| Box::pin(step3::capture(env))),
    (4, |env| Box::pin(step4::capture(env))),
    (5, |env| Box::pin(step5::capture(env))),
    (6, |env| Box::pin(step6::capture(env))),
    (7, |env| Box::pin(step7::capture(env))),
    (8, |env| Box::pin(step8::capture(env))),
];
// END: the step folders' capture.rs
