//! What each starter takes from the steps, and what only it says: the
//! header, each gap's instructions, and the edits that call the learner's
//! code. Every other line of a starter is copied from the files named there
//! when `cargo xtask workshop` runs.
//!
//! Each step's spec lives in its folder, `steps/step-N/starter.rs`, declared
//! here with `#[path]` (rustfmt and rust-analyzer follow it); the workshop's
//! tests check that the specs are the registry's starters.

use super::Spec;

#[path = "../../../steps/step-2/starter.rs"]
mod step2;
#[path = "../../../steps/step-3/starter.rs"]
mod step3;
#[path = "../../../steps/step-4/starter.rs"]
mod step4;
#[path = "../../../steps/step-5/starter.rs"]
mod step5;
#[path = "../../../steps/step-6/starter.rs"]
mod step6;
#[path = "../../../steps/step-7/starter.rs"]
mod step7;
#[path = "../../../steps/step-8/starter.rs"]
mod step8;

/// Every starter, by step.
pub const SPECS: &[Spec] = &[
    step2::SPEC,
    step3::SPEC,
    step4::SPEC,
    step5::SPEC,
    step6::SPEC,
    step7::SPEC,
    step8::SPEC,
];
