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
//! course/tests/registry.rs checks that every entry is complete).

use sample_controller::diagnose::Permission;
use sample_controller::rbac;

use anyhow::{Result, bail};

use crate::checks::{self, Behaviour, CheckScenario, Report, Target};

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
    /// The captures (book/src/outputs) its chapter shows.
    pub captures: &'static [&'static str],
    /// The recording of its flow that its chapter replays (`{{#flow NAME}}`,
    /// book/src/outputs/flow/NAME.jsonl), written by the run of its first
    /// capture; `None` for a step with no queue to show (steps 1 and 2).
    pub flow: Option<&'static str>,
    /// What that recording must show: a line of each shape
    /// (`booktool/src/recordings.rs` `shape`) and what the chapter calls
    /// it. A scenario that no longer makes one happen fails the recording.
    pub flow_shows: &'static [(&'static str, &'static str)],
    /// Lines of that recording that a race decides, each a pattern on its
    /// shape and why (step.toml's `[[race]]` tables): a fresh run may show
    /// them or not without the recording being stale.
    pub flow_races: &'static [(&'static str, &'static str)],
    /// What RBAC allowed the step before that this one no longer needs
    /// (step.toml's `no_longer_needs`: step 8 patches where step 7 updates).
    pub no_longer_needs: &'static [&'static str],
    /// The branches of its Go counterpart, each with the behaviour of its
    /// check that shows it (step.toml's `[[branch]]` tables): the teacher
    /// notes' table (book/src/workshop.md, written by `cargo xtask steps`).
    pub branches: &'static [Branch],
}

/// A branch of Go's code (an `if`, a handler, a return) that a step ports,
/// and what shows that the step takes it as Go does. Exactly one of
/// `check`, `rust` and `unchecked` is set.
#[derive(Clone, Copy, Debug)]
pub struct Branch {
    /// The branch, as a Markdown link to it in the Go source
    /// (`[text](go:controller.go#syncHandler/IsControlledBy)`).
    pub go: &'static str,
    /// The behaviour of the step's check that shows it (its `what`).
    pub check: Option<&'static str>,
    /// The wrong solution that line catches: `steps/step-N/wrong/NAME.patch`.
    pub wrong: Option<&'static str>,
    /// What that wrong solution does, as an attendee would have written it.
    pub mistake: Option<&'static str>,
    /// What fixes it, for the teacher.
    pub fix: Option<&'static str>,
    /// Why the Rust step has no such branch.
    pub rust: Option<&'static str>,
    /// Why no check shows it yet.
    pub unchecked: Option<&'static str>,
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

impl Step {
    /// The scenarios of its check (`cargo xtask check step-N`): its folder's
    /// `check.rs`, compiled in as `checks::stepN`; empty for a step without
    /// one.
    pub fn check(&self) -> &'static [CheckScenario] {
        checks::BY_STEP
            .iter()
            .find(|(number, _)| *number == self.number)
            .map_or(&[], |(_, scenarios)| *scenarios)
    }
}

/// Step `number`, if there is one.
pub fn step(number: u8) -> Option<&'static Step> {
    STEPS.iter().find(|s| s.number == number)
}

/// The steps that have a check (`cargo xtask check step-N`).
pub fn checked() -> impl Iterator<Item = &'static Step> {
    STEPS.iter().filter(|s| !s.check().is_empty())
}

/// The steps with a flow to draw (`cargo xtask watch`, the chapters'
/// replays), in order.
pub fn drawn() -> impl Iterator<Item = &'static Step> {
    STEPS.iter().filter(|s| s.flow.is_some())
}

/// The scenarios of `step`'s check; an error naming the steps that have one
/// for a step without.
fn scenarios(step: u8) -> Result<&'static [CheckScenario]> {
    match self::step(step) {
        Some(s) if !s.check().is_empty() => Ok(s.check()),
        _ => {
            let checked: Vec<String> = checked().map(|s| format!("step-{}", s.number)).collect();
            bail!(
                "there is no check for step {step}: {} have one",
                checked.join(", ")
            )
        }
    }
}

/// Every behaviour of `step`'s check, in report order (none for a step
/// without a check).
pub fn behaviours(step: u8) -> Vec<Behaviour> {
    scenarios(step)
        .unwrap_or_default()
        .iter()
        .flat_map(|s| s.behaviours.iter().copied())
        .collect()
}

/// Runs `step`'s check against `target` ([`checks::check_scenarios`]); an
/// error for a step without a check.
pub async fn check(step: u8, target: &Target) -> Result<Report> {
    let mut report = checks::check_scenarios(step, scenarios(step)?, target).await?;
    for line in &mut report.lines {
        line.go = go_does(step, line.behaviour.what);
    }
    Ok(report)
}

/// What Go does where `step`'s check shows `what`: each branch of its Go
/// counterpart whose row names that behaviour, as `text (file)`.
fn go_does(step: u8, what: &str) -> Vec<String> {
    self::step(step)
        .into_iter()
        .flat_map(|s| s.branches)
        .filter(|b| b.check == Some(what))
        .map(|b| plain_link(b.go))
        .collect()
}

/// A row's Go branch, `[text](go:file#place)`, as `text (file)`: the link's
/// place is for the book's Go pane, not for a terminal.
fn plain_link(markdown: &str) -> String {
    let link = markdown
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|rest| rest.rsplit_once("]("));
    match link {
        Some((text, target)) => {
            let target = target.strip_prefix("go:").unwrap_or(target);
            let file = target.split('#').next().unwrap_or(target);
            format!("{text} ({file})")
        }
        None => markdown.to_string(),
    }
}

/// `step-5`, `5` → step 5, if it exists.
pub fn parse(text: &str) -> Option<&'static Step> {
    let number = text.strip_prefix("step-").unwrap_or(text);
    number.parse().ok().and_then(step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_behaviour_is_told_what_go_does_from_its_steps_branch_rows() {
        assert_eq!(
            go_does(
                6,
                "the Foo's status.availableReplicas follows its Deployment (2 available)"
            ),
            ["`syncHandler`: the status after every sync (controller.go)"]
        );
        assert!(go_does(6, "no such behaviour").is_empty());
        assert_eq!(
            plain_link(
                "[the work queue: a key added while it waits is queued once](go:k8s.io/client-go/util/workqueue/queue.go)"
            ),
            "the work queue: a key added while it waits is queued once (k8s.io/client-go/util/workqueue/queue.go)"
        );
        assert_eq!(plain_link("no link"), "no link");
    }

    /// The ids mdBook gives the headings of `page`: a `{#id}` written after
    /// the heading, else its text (code spans included) lower case, spaces
    /// to dashes, only alphanumerics, `-` and `_` kept.
    fn heading_ids(page: &str) -> Vec<String> {
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        let mut ids = Vec::new();
        let mut text: Option<String> = None;
        for event in Parser::new_ext(page, Options::ENABLE_HEADING_ATTRIBUTES) {
            match event {
                Event::Start(Tag::Heading { id: Some(id), .. }) => ids.push(id.to_string()),
                Event::Start(Tag::Heading { .. }) => text = Some(String::new()),
                Event::Text(t) | Event::Code(t) => text.iter_mut().for_each(|s| s.push_str(&t)),
                Event::End(TagEnd::Heading(_)) => ids.extend(text.take().map(|heading| {
                    heading
                        .trim()
                        .to_lowercase()
                        .chars()
                        .filter_map(|c| match c {
                            ' ' => Some('-'),
                            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                            _ => None,
                        })
                        .collect()
                })),
                _ => {}
            }
        }
        ids
    }

    #[test]
    fn a_headings_id_is_its_own_or_made_from_its_text_and_code_never_from_a_code_block() {
        let page =
            "# Step 5: `syncHandler`\n\n```sh\n# not a heading\n```\n\n## Done {#finished}\n";
        assert_eq!(heading_ids(page), ["step-5-synchandler", "finished"]);
    }

    #[test]
    fn every_behaviour_points_at_a_section_that_exists_in_the_book() {
        let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src");
        for step in checked().map(|s| s.number) {
            let list = behaviours(step);
            assert!(!list.is_empty(), "step {step} has no behaviours");
            for b in list {
                let (file, section) = b.chapter.split_once('#').expect("file#section");
                let text = std::fs::read_to_string(book.join(file)).expect(file);
                let anchors = heading_ids(&text);
                assert!(
                    anchors.iter().any(|a| a == section),
                    "{}: no heading #{section} in {file} (has {anchors:?})",
                    b.what
                );
            }
        }
    }

    #[test]
    fn behaviours_are_unique_within_a_step() {
        for step in checked().map(|s| s.number) {
            let list = behaviours(step);
            for (i, b) in list.iter().enumerate() {
                assert!(!list[..i].contains(b), "step {step}: {b:?} twice");
            }
        }
    }
}
