//! The course's steps in one table: for each step, its binary, its chapter,
//! the permissions it needs, its workshop starter, the scenarios of its
//! check and the captures and flow recording its chapter shows.
//!
//! The table is read from the step folders: build.rs turns each
//! `steps/step-N/step.toml` into an entry of [`STEPS`], so a step exists
//! because its folder does. Everything that goes over the steps reads this
//! table: `cargo xtask check`, the checks themselves ([`crate::checks`]),
//! tests/steps.rs, the starters' tests, the book's captures, the RBAC tests
//! (CONTRIBUTING.md has the recipe for a new step;
//! testcluster/tests/registry.rs checks that every entry is complete).

use sample_controller::diagnose::Permission;
use sample_controller::rbac;

use crate::checks::{self, CheckScenario};

/// One step of the course.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// Its number: `cargo run --bin step-N`.
    pub number: u8,
    /// The reference binary: `step-5`.
    pub binary: &'static str,
    /// What it adds, as the README's table says it.
    pub title: &'static str,
    /// Its Go counterpart, as the README's table says it.
    pub go: &'static str,
    /// The Cargo package that builds it, and its main file from the
    /// repository root: `steps/step-1/main.rs` in package `step-1`.
    pub package: &'static str,
    pub source: &'static str,
    /// The chapter, in book/src.
    pub chapter: &'static str,
    /// What RBAC must allow it (the table its preflight or warnings use).
    pub permissions: &'static [Permission],
    /// Its workshop starter, if it has one.
    pub starter: Option<Starter>,
    /// The scenarios of its check (`cargo xtask check step-N`); empty for a
    /// step without one.
    pub check: &'static [CheckScenario],
    /// The captures (book/src/outputs) its chapter shows.
    pub captures: &'static [&'static str],
    /// The recording of its flow that its chapter replays (`{{#flow NAME}}`,
    /// book/src/outputs/flow/NAME.jsonl), written by the run of its first
    /// capture; `None` for a step with no queue to show (steps 1 and 2).
    pub flow: Option<&'static str>,
}

/// A workshop starter: the step with its layer left as gaps.
#[derive(Clone, Copy, Debug)]
pub struct Starter {
    /// Its file, from the repository root.
    pub file: &'static str,
    /// Its binary (package `workshop`).
    pub binary: &'static str,
}

// `STEPS`: one entry per steps/step-N/step.toml, written by build.rs.
include!(concat!(env!("OUT_DIR"), "/steps.rs"));

/// Step `number`, if there is one.
pub fn step(number: u8) -> Option<&'static Step> {
    STEPS.iter().find(|s| s.number == number)
}

/// The steps that have a check (`cargo xtask check step-N`).
pub fn checked() -> impl Iterator<Item = &'static Step> {
    STEPS.iter().filter(|s| !s.check.is_empty())
}

/// The steps with a flow to draw (`cargo xtask watch`, the chapters'
/// replays), in order.
pub fn drawn() -> impl Iterator<Item = &'static Step> {
    STEPS.iter().filter(|s| s.flow.is_some())
}

/// `step-5`, `5` → step 5, if it exists.
pub fn parse(text: &str) -> Option<&'static Step> {
    let number = text.strip_prefix("step-").unwrap_or(text);
    number.parse().ok().and_then(step)
}
