//! What steps 2–8 must do, checked against a real API server: the
//! behaviours `tests/steps.rs` asserts for the project's own steps and
//! `cargo xtask check step-N` reports for a learner's workshop starter.
//!
//! A check runs the program under test as a child process in fresh
//! namespaces, changes the cluster as a user would (Foos created, scaled and
//! deleted, Deployments edited by someone else) and reads what the program
//! prints and what it wrote. Its [`Report`] has one [`Line`] per behaviour:
//! passed, or failed with what was expected, what happened and the chapter
//! section that explains it. A scenario stops at its first failure (what
//! follows depends on it); its later behaviours are reported as not reached.
//!
//! Which scenarios make up a step's check is the step registry's business
//! ([`crate::steps`]); each step's behaviours and scenarios live in a module
//! of their own (`step2` … `step8`), what they share in `cluster`.
//! `cargo xtask check` runs them on a learner's starter (`crate::exercise`). The Foo
//! is the steps' own (`sample_controller::Foo`).

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::future::join_all;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use sample_controller::Foo;
use serde_json::json;

use crate::harness::{self, Process};

/// How long a check waits for a line or a state before calling it failed.
pub const WAIT: Duration = Duration::from_secs(60);

/// How long what a check waits for may stay missing, unchanged, for a
/// reason only the program can remove, before the check stops waiting:
/// the program has shown what it does. Longer than any pause a correct
/// step makes in a scenario (step 8's lagging watches hold events for 8 s).
pub const QUIET: Duration = Duration::from_secs(20);

/// Why a state a check waits for is not there yet, as its probe saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pending {
    /// Someone else's work may still bring it (a rollout, the garbage
    /// collector, the API server): only [`WAIT`] ends the wait.
    Cluster(String),
    /// Everything the program needs to act on has happened; what is
    /// missing is the program's to write. Unchanged for [`QUIET`], the
    /// program will not write it.
    Program(String),
}

impl Pending {
    fn text(&self) -> &str {
        match self {
            Pending::Cluster(text) | Pending::Program(text) => text,
        }
    }
}

/// A probe's plain message: nothing says the program is the one to act.
impl From<String> for Pending {
    fn from(text: String) -> Self {
        Pending::Cluster(text)
    }
}

/// A probe each of whose `Err`s is the program's to fix ([`Pending::Program`]).
async fn programs_turn<T>(
    probe: impl Future<Output = std::result::Result<T, String>>,
) -> std::result::Result<T, Pending> {
    probe.await.map_err(Pending::Program)
}

/// What a check runs and where.
#[derive(Clone)]
pub struct Target {
    /// The step's program: a built binary.
    pub program: PathBuf,
    /// Kubeconfig of the cluster, passed to the program as `--kubeconfig`.
    pub kubeconfig: PathBuf,
    /// An admin client of the same cluster, for the check's own requests.
    pub client: Client,
    /// Echo the program's output (`[step-N] line`) as it is read.
    pub echo: bool,
    /// Keep the namespaces the check creates, to look at what the program
    /// did (`--keep`); otherwise they are deleted when it ends, passed or
    /// failed.
    pub keep: bool,
}

/// One scenario of a step's check: the behaviours it reports, in order,
/// and what runs it (in a namespace of its own, beside the step's other
/// scenarios). Each step module lists its own (`stepN::SCENARIOS`); the
/// step registry ([`crate::steps`]) says which list is whose.
#[derive(Clone, Copy, Debug)]
pub struct CheckScenario {
    /// What it reports, in order.
    pub behaviours: &'static [Behaviour],
    run: RunScenario,
}

/// A running scenario: its lines once it ends.
type ScenarioFuture<'a> = std::pin::Pin<Box<dyn Future<Output = Vec<Line>> + Send + 'a>>;
/// What starts a scenario.
type RunScenario = for<'a> fn(Scenario<'a>) -> ScenarioFuture<'a>;

impl CheckScenario {
    const fn new(behaviours: &'static [Behaviour], run: RunScenario) -> Self {
        CheckScenario { behaviours, run }
    }
}

/// Runs step `step`'s check, its `scenarios` (the step registry's
/// [`crate::steps::check`] finds them), against `target`. The scenarios run
/// at once, each in a namespace of its own. An `Err` means the check could
/// not run (the CRD missing); a failing program is a failing [`Report`].
/// First it deletes what earlier checks from this machine left behind (their
/// process gone, their namespaces not kept); at the end it
/// deletes the namespaces it created, unless [`Target::keep`] says to keep
/// them.
pub async fn check_scenarios(
    step: u8,
    scenarios: &'static [CheckScenario],
    target: &Target,
) -> Result<Report> {
    let crd = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(target.client.clone());
    crd.get_opt("foos.samplecontroller.k8s.io")
        .await
        .context("reading the Foo CRD")?
        .context("the Foo CRD is not installed: kubectl apply -f manifests/crd.yaml")?;
    sweep(&target.client).await?;
    let runs = scenarios
        .iter()
        .map(|scenario| run(target, scenario.behaviours, scenario.run));
    let (lines, namespaces): (Vec<Line>, Vec<String>) = CREATED
        .scope(std::sync::Mutex::new(Vec::new()), async {
            let lines = join_all(runs).await.into_iter().flatten().collect();
            let namespaces = CREATED.with(|c| c.lock().map(|c| c.clone()).unwrap_or_default());
            (lines, namespaces)
        })
        .await;
    let api = Api::<Namespace>::all(target.client.clone());
    for ns in &namespaces {
        if target.keep {
            let kept = json!({"metadata": {"labels": {KEPT_LABEL: "true"}}});
            api.patch(ns, &PatchParams::default(), &Patch::Merge(&kept))
                .await
                .with_context(|| format!("labelling namespace {ns} as kept"))?;
        } else {
            delete_namespace(&api, ns).await?;
        }
    }
    Ok(Report {
        step,
        lines,
        namespaces,
        kept: target.keep,
    })
}

/// The label every namespace a check creates carries: the machine and the
/// process that created it (`HOST.PID`), for the next check to sweep.
pub const CHECK_LABEL: &str = "checks.sample-controller-rs.dev/by";
/// The label of a namespace kept on purpose (`--keep`): never swept.
pub const KEPT_LABEL: &str = "checks.sample-controller-rs.dev/kept";

/// This machine and process, as [`CHECK_LABEL`] has them.
pub fn creator() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(50)
        .collect();
    format!("{}.{}", host.trim_matches('-'), std::process::id())
}

/// Deletes the namespaces earlier checks on this machine created and left
/// behind (a check killed before its end), never one kept on purpose, one
/// another machine's check created (a workshop may share a cluster), or one
/// whose check still runs.
async fn sweep(client: &Client) -> Result<()> {
    let api = Api::<Namespace>::all(client.clone());
    let mine = creator();
    let (host, _) = mine.rsplit_once('.').unwrap_or_default();
    let left = api
        .list(&ListParams::default().labels(&format!("{CHECK_LABEL},!{KEPT_LABEL}")))
        .await
        .context("listing the namespaces of earlier checks")?;
    for ns in left {
        let by = ns.labels().get(CHECK_LABEL).cloned().unwrap_or_default();
        let gone = by
            .rsplit_once('.')
            .filter(|(h, _)| *h == host)
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
            .is_some_and(|pid| !testcluster::pid_exists(pid));
        if gone {
            delete_namespace(&api, &ns.name_any()).await?;
        }
    }
    Ok(())
}

/// Deletes a namespace; one already gone is fine.
async fn delete_namespace(api: &Api<Namespace>, ns: &str) -> Result<()> {
    match api.delete(ns, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(err) => Err(err).with_context(|| format!("deleting namespace {ns}")),
    }
}

tokio::task_local! {
    /// The namespaces the running check created (every scenario of one
    /// check runs in the task that calls [`check_scenarios`]).
    static CREATED: std::sync::Mutex<Vec<String>>;
}

// ---------------------------------------------------------------------------
// The machinery: scenarios, failures, the program under check.

/// A behaviour that did not happen.
#[derive(Debug)]
struct Failure {
    expected: String,
    happened: String,
}

type Checked<T> = std::result::Result<T, Failure>;

fn failure(expected: impl Into<String>, happened: impl fmt::Display) -> Failure {
    Failure {
        expected: expected.into(),
        happened: happened.to_string(),
    }
}

/// A scenario stopped at a failure (already recorded).
struct Stop;

/// The outcomes of one scenario, filled in as it runs.
struct Scenario<'a> {
    target: &'a Target,
    lines: Vec<Line>,
}

impl<'a> Scenario<'a> {
    /// Records whether `run` showed `behaviour`; stops the scenario if not.
    async fn check<T>(
        &mut self,
        behaviour: Behaviour,
        run: impl Future<Output = Checked<T>>,
    ) -> std::result::Result<T, Stop> {
        let outcome = run.await;
        let recorded = match &outcome {
            Ok(_) => Outcome::Passed,
            Err(f) => Outcome::Failed {
                expected: f.expected.clone(),
                happened: f.happened.clone(),
            },
        };
        match self.lines.iter_mut().find(|l| l.behaviour == behaviour) {
            Some(line) => line.outcome = recorded,
            None => self.lines.push(Line {
                behaviour,
                outcome: recorded,
                go: Vec::new(),
            }),
        }
        outcome.map_err(|_| Stop)
    }

    fn client(&self) -> &Client {
        &self.target.client
    }
}

/// A fresh namespace named after the scenario.
async fn namespace(client: &Client, prefix: &str) -> Checked<String> {
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "check-{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            labels: Some([(CHECK_LABEL.to_string(), creator())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&Default::default(), &namespace)
        .await
        .map_err(|e| failure("a namespace for the check", format!("creating {name}: {e}")))?;
    // Outside a check (a unit test calling a scenario helper) nothing records it.
    let _ = CREATED.try_with(|created| {
        if let Ok(mut created) = created.lock() {
            created.push(name.clone());
        }
    });
    Ok(name)
}

/// Runs one scenario: every behaviour in `declared` starts as not reached.
async fn run<'a, F, Fut>(target: &'a Target, declared: &[Behaviour], scenario: F) -> Vec<Line>
where
    F: FnOnce(Scenario<'a>) -> Fut,
    Fut: Future<Output = Vec<Line>>,
{
    let lines = declared
        .iter()
        .map(|b| Line {
            behaviour: *b,
            outcome: Outcome::NotReached,
            go: Vec::new(),
        })
        .collect();
    scenario(Scenario { target, lines }).await
}

/// Ends a scenario function: its lines, whether it ran through or stopped.
macro_rules! scenario {
    ($s:ident, $body:block) => {{
        let result: std::result::Result<(), Stop> = async { $body }.await;
        let _ = result;
        $s.lines
    }};
}

mod cluster;
mod program;
mod report;

use program::*;
pub use report::*;

// Each step's check lives in its folder, `steps/step-N/check.rs`, and is
// module `stepN` here. `cargo xtask steps` writes the lines between BEGIN and
// END from the step folders (`--check` says when they are stale); nothing
// else lists the steps.
// BEGIN: the step folders' check.rs, written by `cargo xtask steps`
#[path = "../../../steps/step-2/check.rs"]
pub(crate) mod step2;
#[path = "../../../steps/step-3/check.rs"]
pub(crate) mod step3;
#[path = "../../../steps/step-4/check.rs"]
pub(crate) mod step4;
#[path = "../../../steps/step-5/check.rs"]
pub(crate) mod step5;
#[path = "../../../steps/step-6/check.rs"]
pub(crate) mod step6;
#[path = "../../../steps/step-7/check.rs"]
pub(crate) mod step7;
#[path = "../../../steps/step-8/check.rs"]
pub(crate) mod step8;
/// Each step's check, by step number.
pub(crate) const BY_STEP: &[(u8, &[CheckScenario])] = &[
    (2, step2::SCENARIOS),
    (3, step3::SCENARIOS),
    (4, step4::SCENARIOS),
    (5, step5::SCENARIOS),
    (6, step6::SCENARIOS),
    (7, step7::SCENARIOS),
    (8, step8::SCENARIOS),
];
// END: the step folders' check.rs
