//! The course's steps in one table: for each step, its binary, its chapter,
//! the permissions it needs, its workshop starter, the scenarios of its
//! check and the captures and flow recording its chapter shows.
//!
//! Everything that goes over the steps reads this table: `cargo xtask
//! check`, the checks themselves ([`crate::checks`]), tests/steps.rs, the
//! starters' tests, the book's captures, the RBAC tests. Adding a step is its
//! own files, one entry here, its chapter and a line in SUMMARY.md
//! (CONTRIBUTING.md has the recipe; testcluster/tests/registry.rs checks
//! that every entry is complete).

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
    /// The Cargo package that builds it, and its source file from the
    /// repository root: `steps/step-5.rs` in the root package; step 8, whose
    /// dependencies steps 1–7 must not compile, is a package of its own.
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

/// The root package: the shared crate (`src/`) and the binaries of steps 1–7.
pub const ROOT_PACKAGE: &str = "sample-controller-rs";

/// Every step, in order.
pub const STEPS: &[Step] = &[
    Step {
        number: 1,
        binary: "step-1",
        package: ROOT_PACKAGE,
        source: "steps/step-1.rs",
        chapter: "step-1.md",
        permissions: rbac::STEP_1,
        starter: None,
        check: &[],
        captures: &["step-1.txt"],
        flow: None,
    },
    Step {
        number: 2,
        binary: "step-2",
        package: ROOT_PACKAGE,
        source: "steps/step-2.rs",
        chapter: "step-2.md",
        permissions: rbac::STEP_2_TO_4,
        starter: Some(Starter {
            file: "workshop/step-2.rs",
            binary: "workshop-step-2",
        }),
        check: checks::step2::SCENARIOS,
        captures: &["step-2.txt"],
        flow: None,
    },
    Step {
        number: 3,
        binary: "step-3",
        package: ROOT_PACKAGE,
        source: "steps/step-3.rs",
        chapter: "step-3.md",
        permissions: rbac::STEP_2_TO_4,
        starter: Some(Starter {
            file: "workshop/step-3.rs",
            binary: "workshop-step-3",
        }),
        check: checks::step3::SCENARIOS,
        captures: &["step-3.txt"],
        flow: Some("step-3"),
    },
    Step {
        number: 4,
        binary: "step-4",
        package: ROOT_PACKAGE,
        source: "steps/step-4.rs",
        chapter: "step-4.md",
        permissions: rbac::STEP_2_TO_4,
        starter: Some(Starter {
            file: "workshop/step-4.rs",
            binary: "workshop-step-4",
        }),
        check: checks::step4::SCENARIOS,
        captures: &["step-4.txt"],
        flow: Some("step-4"),
    },
    Step {
        number: 5,
        binary: "step-5",
        package: ROOT_PACKAGE,
        source: "steps/step-5.rs",
        chapter: "step-5.md",
        permissions: rbac::STEP_5,
        starter: Some(Starter {
            file: "workshop/step-5.rs",
            binary: "workshop-step-5",
        }),
        check: checks::step5::SCENARIOS,
        captures: &["step-5.txt"],
        flow: Some("step-5"),
    },
    Step {
        number: 6,
        binary: "step-6",
        package: ROOT_PACKAGE,
        source: "steps/step-6.rs",
        chapter: "step-6.md",
        permissions: rbac::STEP_6,
        starter: Some(Starter {
            file: "workshop/step-6.rs",
            binary: "workshop-step-6",
        }),
        check: checks::step6::SCENARIOS,
        captures: &["step-6.txt"],
        flow: Some("step-6"),
    },
    Step {
        number: 7,
        binary: "step-7",
        package: ROOT_PACKAGE,
        source: "steps/step-7.rs",
        chapter: "step-7.md",
        permissions: rbac::STEP_7,
        starter: Some(Starter {
            file: "workshop/step-7.rs",
            binary: "workshop-step-7",
        }),
        check: checks::step7::SCENARIOS,
        captures: &["step-7.txt", "step-7-events.txt"],
        flow: Some("step-7"),
    },
    Step {
        number: 8,
        binary: "step-8",
        package: "sample-controller-step8",
        source: "step8/step-8.rs",
        chapter: "step-8.md",
        permissions: rbac::STEP_8,
        starter: Some(Starter {
            file: "workshop/step-8.rs",
            binary: "workshop-step-8",
        }),
        check: checks::step8::SCENARIOS,
        captures: &["step-8.txt", "step-8-events.txt"],
        flow: Some("step-8"),
    },
];

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
