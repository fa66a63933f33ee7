//! What each starter takes from the steps, and what only it says: the
//! header, each gap's instructions, and the edits that call the learner's
//! code. Every other line of a starter is copied from the files named there
//! when `cargo xtask workshop` runs.
//!
//! Each step's spec lives in its folder, `steps/step-N/starter.rs`, and is
//! module `stepN` here: build.rs declares one for every step folder that
//! has a starter.rs, and lists them in `SPECS`. (`cargo fmt` does not reach
//! them through the generated declarations; .ci/run checks steps/*/*.rs
//! with rustfmt itself.)

use super::Spec;

include!(concat!(env!("OUT_DIR"), "/specs.rs"));
