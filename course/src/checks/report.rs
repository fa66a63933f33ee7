//! A check's report: one [`Line`] per [`Behaviour`], passed or failed with
//! what was expected, what happened and where the book explains it.

use super::*;

/// One behaviour a step must show, and where the book explains it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// What the step does, as a sentence without a subject.
    pub what: &'static str,
    /// The chapter section: `step-5.md#the-rust-code`.
    pub chapter: &'static str,
}

/// How a behaviour fared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It did what the behaviour says.
    Passed,
    /// It did not.
    Failed {
        /// What the check waited for.
        expected: String,
        /// What it saw instead.
        happened: String,
    },
    /// An earlier behaviour of the same scenario failed, so this one could
    /// not be checked.
    NotReached,
}

/// A behaviour and its outcome.
#[derive(Clone, Debug)]
pub struct Line {
    /// The behaviour checked.
    pub behaviour: Behaviour,
    /// What happened.
    pub outcome: Outcome,
    /// What Go does there: the branches of the step's Go counterpart that
    /// this behaviour shows, as `text (file)` (the step registry fills them
    /// in from its step.toml; see `steps::check`).
    pub go: Vec<String>,
}

/// Every behaviour of one step's check, in order.
#[derive(Clone, Debug)]
pub struct Report {
    /// The step checked.
    pub step: u8,
    /// One per behaviour.
    pub lines: Vec<Line>,
    /// The namespaces the check created: deleted when it ended, unless
    /// [`Target::keep`] asked to keep them (then named at the end of the
    /// report).
    pub namespaces: Vec<String>,
    /// Whether the namespaces were kept.
    pub kept: bool,
}

impl Report {
    /// Whether every behaviour passed.
    pub fn passed(&self) -> bool {
        self.lines.iter().all(|l| l.outcome == Outcome::Passed)
    }

    /// One line per behaviour without the details: `step-5 FAIL creates …`.
    /// What CI compares with the expected result of an untouched starter.
    pub fn summary(&self) -> Vec<String> {
        self.lines
            .iter()
            .map(|l| {
                let mark = match l.outcome {
                    Outcome::Passed => "pass",
                    Outcome::Failed { .. } => "FAIL",
                    Outcome::NotReached => "skip",
                };
                format!("step-{} {mark} {}", self.step, l.behaviour.what)
            })
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            let what = line.behaviour.what;
            match &line.outcome {
                Outcome::Passed => writeln!(f, "  pass  {what}")?,
                Outcome::Failed { expected, happened } => {
                    writeln!(f, "  FAIL  {what}")?;
                    writeln!(f, "        expected: {expected}")?;
                    for (i, l) in happened.lines().enumerate() {
                        let label = if i == 0 { "happened:" } else { "         " };
                        writeln!(f, "        {label} {l}")?;
                    }
                    for branch in &line.go {
                        writeln!(f, "        Go:       {branch}")?;
                    }
                    writeln!(f, "        read:     book/src/{}", line.behaviour.chapter)?;
                }
                Outcome::NotReached => writeln!(
                    f,
                    "  skip  {what} (not reached: an earlier failure stopped its scenario)"
                )?,
            }
        }
        let passed = self
            .lines
            .iter()
            .filter(|l| l.outcome == Outcome::Passed)
            .count();
        if self.kept && !self.namespaces.is_empty() {
            writeln!(
                f,
                "  kept for you to look at: {} (kubectl get foos,deployments,events -n NAMESPACE; \
                 kubectl delete namespace NAMESPACE when done)",
                self.namespaces.join(", ")
            )?;
        } else if !self.passed() && !self.namespaces.is_empty() {
            writeln!(
                f,
                "  its namespaces are deleted; run the check with --keep to look at what the \
                 program did there"
            )?;
        }
        write!(
            f,
            "step-{}: {passed} of {} behaviours pass",
            self.step,
            self.lines.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_summary_marks_each_outcome() {
        let report = Report {
            step: 5,
            lines: vec![
                Line {
                    behaviour: step5::STEP_5_CREATES,
                    outcome: Outcome::Passed,
                    go: vec!["`syncHandler`: no Deployment, create it (controller.go)".into()],
                },
                Line {
                    behaviour: step5::STEP_5_REFUSES,
                    outcome: Outcome::Failed {
                        expected: "x".into(),
                        happened: "y".into(),
                    },
                    go: vec!["`syncHandler`: not controlled, refuse (controller.go)".into()],
                },
                Line {
                    behaviour: step5::STEP_5_SCALES,
                    outcome: Outcome::NotReached,
                    go: Vec::new(),
                },
            ],
            namespaces: vec!["check-step5-1-0".into()],
            kept: false,
        };
        assert!(!report.passed());
        assert!(
            report
                .to_string()
                .contains("its namespaces are deleted; run the check with --keep"),
            "{report}"
        );
        let kept = Report {
            kept: true,
            ..report.clone()
        };
        assert!(
            kept.to_string()
                .contains("kept for you to look at: check-step5-1-0 (")
        );
        assert_eq!(
            report.summary(),
            [
                format!("step-5 pass {}", step5::STEP_5_CREATES.what),
                format!("step-5 FAIL {}", step5::STEP_5_REFUSES.what),
                format!("step-5 skip {}", step5::STEP_5_SCALES.what),
            ]
        );
        let text = report.to_string();
        assert!(
            text.contains(
                "        Go:       `syncHandler`: not controlled, refuse (controller.go)\n        read:     book/src/step-5.md#the-rust-code"
            ),
            "a failure says what Go does, then where to read: {text}"
        );
        assert!(
            !text.contains("no Deployment, create it"),
            "a behaviour that passed shows no Go branch: {text}"
        );
        assert!(text.ends_with("step-5: 1 of 3 behaviours pass"), "{text}");
    }
}
