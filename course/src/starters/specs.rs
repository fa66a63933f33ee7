//! What each starter takes from the steps, and what only it says: the
//! header, each gap's instructions, and the edits that call the learner's
//! code. Every other line of a starter is copied from the files named there
//! when `cargo xtask workshop` runs.
//!
//! Each step's spec lives in its folder, `steps/step-N/starter.rs`, and is
//! module `stepN` here, listed in `SPECS`. `cargo xtask steps` writes the
//! lines between BEGIN and END from the step folders (`--check` says when
//! they are stale); nothing else lists the steps.

use super::Spec;

// BEGIN: the step folders' starter.rs, written by `cargo xtask steps`
#[path = "../../../steps/step-2/starter.rs"]
mod step2;
const _: () = assert!(
    step2::SPEC.step == 2,
    "steps/step-2/starter.rs: its SPEC's step must be 2"
);
#[path = "../../../steps/step-3/starter.rs"]
mod step3;
const _: () = assert!(
    step3::SPEC.step == 3,
    "steps/step-3/starter.rs: its SPEC's step must be 3"
);
#[path = "../../../steps/step-4/starter.rs"]
mod step4;
const _: () = assert!(
    step4::SPEC.step == 4,
    "steps/step-4/starter.rs: its SPEC's step must be 4"
);
#[path = "../../../steps/step-5/starter.rs"]
mod step5;
const _: () = assert!(
    step5::SPEC.step == 5,
    "steps/step-5/starter.rs: its SPEC's step must be 5"
);
#[path = "../../../steps/step-6/starter.rs"]
mod step6;
const _: () = assert!(
    step6::SPEC.step == 6,
    "steps/step-6/starter.rs: its SPEC's step must be 6"
);
#[path = "../../../steps/step-7/starter.rs"]
mod step7;
const _: () = assert!(
    step7::SPEC.step == 7,
    "steps/step-7/starter.rs: its SPEC's step must be 7"
);
#[path = "../../../steps/step-8/starter.rs"]
mod step8;
const _: () = assert!(
    step8::SPEC.step == 8,
    "steps/step-8/starter.rs: its SPEC's step must be 8"
);
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
// END: the step folders' starter.rs
