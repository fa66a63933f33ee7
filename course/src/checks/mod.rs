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

/// The program under check, running in one namespace.
struct Program {
    process: Process,
    /// The names the behaviour being checked is about ([`Program::about`]).
    about: Vec<String>,
}

impl Program {
    /// Starts the program with `--kubeconfig`, `--namespace ns` and `args`.
    fn start(target: &Target, ns: &str, args: &[&str]) -> Checked<Program> {
        let mut argv = vec![
            "--kubeconfig".to_string(),
            target.kubeconfig.display().to_string(),
            "--namespace".to_string(),
            ns.to_string(),
        ];
        argv.extend(args.iter().map(|a| a.to_string()));
        let name = target
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "program".into());
        // A panic shows where and why; its backtrace would bury that (run
        // the program yourself for one).
        let process = Process::start(&name, &target.program, &argv, &[("RUST_BACKTRACE", "0")])
            .map_err(|e| failure("the program starts", format!("{e:#}")))?
            .with_wait(WAIT)
            .echo(target.echo);
        Ok(Program {
            process,
            about: Vec::new(),
        })
    }

    /// Names the objects the behaviours checked next are about (a Foo, its
    /// Deployment): a failure shows the program's last lines that name one
    /// of them, not the lines about some other Foo it is busy retrying.
    fn about(&mut self, names: &[&str]) {
        self.about = names.iter().map(|n| n.to_string()).collect();
    }

    /// Waits for a line containing every one of `parts` as whole words
    /// ([`has_whole`]): `attempt 1` is not found in `attempt 12`, nor
    /// `ns/foo` in `ns/foo-2`. Like [`Program::expect_where`], it gives up
    /// once the program has printed nothing for [`QUIET`].
    async fn expect(&mut self, parts: &[&str]) -> Checked<String> {
        self.expect_parts(parts, QUIET).await
    }

    /// Waits for the line that says the program is running (its caches
    /// synced, its workers started) as [`Program::expect`] does, but for
    /// the whole [`WAIT`] however long it is silent: syncing caches on a
    /// loaded machine prints nothing for a while.
    async fn started(&mut self, parts: &[&str]) -> Checked<String> {
        self.expect_parts(parts, WAIT).await
    }

    /// A line containing every one of `parts`, giving up after `silence`.
    async fn expect_parts(&mut self, parts: &[&str], silence: Duration) -> Checked<String> {
        let wanted = format!("a line containing {}", quoted(parts));
        let matches = |line: &str| parts.iter().all(|part| has_whole(line, part));
        self.expect_within(&parts.join(" … "), wanted, silence, matches)
            .await
    }

    /// Waits for a line matching `matches` (described by `what`). Once the
    /// program runs, every line a check expects answers what the check just
    /// did, so a program that has printed nothing for [`QUIET`] has shown
    /// what it does: that fails then, not after [`WAIT`]. One still printing
    /// (retrying, syncing the same key again and again) is waited for until
    /// [`WAIT`].
    async fn expect_where(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Checked<String> {
        self.expect_within(what, what.to_string(), QUIET, matches)
            .await
    }

    /// A line matching `matches` (`what` in the process's error), giving up
    /// after `silence`; a failure of `expected` that shows what it printed.
    async fn expect_within(
        &mut self,
        what: &str,
        expected: String,
        silence: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> Checked<String> {
        let found = self
            .process
            .expect_unless_silent(what, silence, matches)
            .await;
        found.map_err(|e| {
            let exited = exited_first(&e);
            self.explain(expected, e, exited)
        })
    }

    /// A failure of `expected`, saying how the program fared meanwhile
    /// (`told_exit`: `err` already says that it exited).
    fn explain(&mut self, expected: String, err: impl fmt::Display, told_exit: bool) -> Failure {
        let mut happened = err.to_string();
        let running = self.process.is_running();
        if !told_exit && !running {
            happened.push_str("; it exited");
        }
        // Its first panic (where and why), then its last lines: while it
        // runs, those about what the behaviour is about, if it printed any.
        let output = &self.process.output;
        let mut shown: Vec<usize> = Vec::new();
        if let Some(at) = output.iter().position(|l| l.contains("panicked at")) {
            shown.extend([at, at + 1]);
        }
        let focused = running && !told_exit;
        let names_one = |line: &str| self.about.iter().any(|name| has_whole(line, name));
        let about: Vec<usize> = (0..output.len())
            .filter(|&i| focused && names_one(&output[i]))
            .collect();
        let printed = if about.is_empty() {
            shown.extend(output.len().saturating_sub(4)..output.len());
            ", it printed:".to_string()
        } else {
            shown.extend(about.iter().rev().take(4));
            format!(", it printed about {}:", self.about.join(", "))
        };
        shown.sort_unstable();
        shown.dedup();
        shown.retain(|i| *i < output.len() && !output[*i].trim().is_empty());
        if !shown.is_empty() {
            happened.push_str(&printed);
            let mut last = None;
            for i in shown {
                if last.is_some_and(|l: usize| i > l + 1) {
                    happened.push_str("\n  …");
                }
                happened.push_str("\n  ");
                happened.push_str(&output[i]);
                last = Some(i);
            }
        }
        Failure { expected, happened }
    }

    /// [`until`] for a state the program must bring about: fails as soon as
    /// the program has exited, saying how, or once the probe has seen the
    /// same [`Pending::Program`] for [`QUIET`] (a program that will not write
    /// it costs 20 s, not [`WAIT`]). Other lines of its log do not count: a
    /// program retrying another Foo is not working on this one.
    async fn until<T, P, F, Fut>(
        &mut self,
        expected: &str,
        wait: Duration,
        mut probe: F,
    ) -> Checked<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, P>>,
        P: Into<Pending>,
    {
        let deadline = tokio::time::Instant::now() + wait;
        // What the probe saw last, and since when.
        let mut same: Option<(Pending, tokio::time::Instant)> = None;
        loop {
            let now = match probe().await {
                Ok(value) => return Ok(value),
                Err(now) => now.into(),
            };
            let at = tokio::time::Instant::now();
            let since = match &same {
                Some((seen, since)) if *seen == now => *since,
                _ => at,
            };
            same = Some((now.clone(), since));
            if !self.process.is_running() {
                // Read what it printed last (a panic, say) before explaining.
                self.process.drain_for(Duration::from_millis(200)).await;
                let happened = format!("meanwhile {}", now.text());
                return Err(self.explain(expected.to_string(), happened, false));
            }
            if matches!(now, Pending::Program(_)) && at - since >= QUIET {
                let happened = format!(
                    "unchanged for {QUIET:?}, and only the program could change it: {}",
                    now.text()
                );
                return Err(self.explain(expected.to_string(), happened, false));
            }
            if at >= deadline {
                let happened = format!("after {wait:?}: {}", now.text());
                return Err(self.explain(expected.to_string(), happened, false));
            }
            self.process.drain_for(Duration::from_millis(200)).await;
        }
    }

    /// Stops the program in a scenario that checks something else: SIGTERM,
    /// then SIGKILL if it still runs after `within`. How it stops is the
    /// business of its step's "exits 0 on SIGTERM" line
    /// ([`Program::stops_cleanly`]): one mistake fails one line.
    async fn stop(&mut self, within: Duration) {
        if !matches!(
            tokio::time::timeout(within, self.process.terminate()).await,
            Ok(Ok(_))
        ) {
            let _ = self.process.kill().await;
        }
    }

    /// Sends SIGTERM and expects an exit with status 0 within `within`.
    async fn stops_cleanly(&mut self, within: Duration) -> Checked<()> {
        let expected = format!("exits with status 0 within {within:?} of a SIGTERM");
        let status: Result<ExitStatus> =
            match tokio::time::timeout(within, self.process.terminate()).await {
                Ok(status) => status,
                Err(_) => Err(anyhow::anyhow!("still running {within:?} after SIGTERM")),
            };
        match status {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(self.explain(expected, format!("it exited with {s}"), true)),
            Err(e) => {
                let _ = self.process.kill().await;
                Err(self.explain(expected, format!("{e:#}, so it was killed"), true))
            }
        }
    }

    fn output(&self) -> &[String] {
        &self.process.output
    }
}

/// Whether a wait for a line ended because the program exited first.
fn exited_first(err: &anyhow::Error) -> bool {
    err.downcast_ref::<crate::harness::NoLine>()
        .is_some_and(|no_line| no_line.exited)
}

/// Whether `line` contains `part` with no name character (a letter, a
/// digit, `-` or `_`, what Kubernetes names and numbers are made of) right
/// before or after it, where `part` itself starts or ends with one: so a
/// key, a name or a count in the line is the one expected, not one that
/// merely begins or ends with it.
fn has_whole(line: &str, part: &str) -> bool {
    let name_char = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    let starts = part.chars().next().is_some_and(name_char);
    let ends = part.chars().next_back().is_some_and(name_char);
    line.match_indices(part).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + part.len()..].chars().next();
        let joined_before = starts && before.is_some_and(name_char);
        let joined_after = ends && after.is_some_and(name_char);
        !joined_before && !joined_after
    })
}

/// Whether `line`, a line of the program's text log (tracing's format:
/// `LEVEL spans: target: message field=value …`), or a line it printed
/// itself, says exactly `message`: the whole message, not one that merely
/// begins with it (`Error syncing` is not `Error syncing; requeuing for
/// later retry`). A printed line is its message; a logged one's message
/// follows its target and ends where its fields begin.
fn logs(line: &str, message: &str) -> bool {
    let field = |rest: &str| {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        !name.is_empty() && rest[name.len()..].starts_with('=')
    };
    line.trim() == message
        || line.match_indices(&format!(": {message}")).any(|(at, m)| {
            let rest = &line[at + m.len()..];
            rest.is_empty() || rest.strip_prefix(' ').is_some_and(field)
        })
}

fn quoted(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| format!("{p:?}"))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Polls `probe` every 200 ms until it returns `Ok`; after `wait`, fails
/// with `expected` and what the last probe saw.
async fn until<T, F, Fut>(expected: &str, wait: Duration, mut probe: F) -> Checked<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match probe().await {
            Ok(value) => return Ok(value),
            Err(now) if tokio::time::Instant::now() >= deadline => {
                return Err(failure(expected, format!("after {wait:?}: {now}")));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

mod cluster;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that runs and prints nothing.
    fn silent_program() -> Program {
        let args = ["600".to_string()];
        let process = Process::start("sleep", std::path::Path::new("sleep"), &args, &[])
            .unwrap()
            .echo(false);
        Program {
            process,
            about: Vec::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn what_only_the_program_can_write_fails_once_unchanged_for_the_quiet_not_the_whole_wait()
    {
        let mut p = silent_program();
        let started = tokio::time::Instant::now();
        let failed = p
            .until("Deployment web created", WAIT, || async {
                Err::<(), _>(Pending::Program("there is no Deployment web".into()))
            })
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert!(
            waited >= QUIET && waited < QUIET + Duration::from_secs(1),
            "{waited:?}"
        );
        assert_eq!(failed.expected, "Deployment web created");
        assert_eq!(
            failed.happened,
            "unchanged for 20s, and only the program could change it: there is no Deployment web"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_expected_line_fails_once_the_program_has_been_silent_for_the_quiet() {
        let mut p = silent_program();
        let started = tokio::time::Instant::now();
        let failed = p.expect(&["Starting 2 workers"]).await.unwrap_err();
        let waited = started.elapsed();
        assert!(
            waited >= QUIET && waited < QUIET + Duration::from_secs(1),
            "{waited:?}"
        );
        assert_eq!(failed.expected, "a line containing \"Starting 2 workers\"");
        assert_eq!(
            failed.happened,
            "sleep printed nothing for 20s, and not \"Starting 2 workers\""
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_state_the_cluster_is_still_bringing_about_is_waited_for_until_the_deadline() {
        let mut p = silent_program();
        let started = tokio::time::Instant::now();
        let wait = Duration::from_secs(45);
        let failed = p
            .until("2 available", wait, || async {
                Err::<(), _>(Pending::Cluster("1 available".into()))
            })
            .await
            .unwrap_err();
        assert!(started.elapsed() >= wait, "{:?}", started.elapsed());
        assert_eq!(failed.happened, "after 45s: 1 available");
    }

    #[tokio::test(start_paused = true)]
    async fn the_quiet_is_counted_from_the_last_change_the_probe_saw() {
        let mut p = silent_program();
        let started = tokio::time::Instant::now();
        let failed = p
            .until("replicas 2", WAIT, || async move {
                let replicas = if started.elapsed() < Duration::from_secs(15) {
                    5
                } else {
                    3
                };
                Err::<(), _>(Pending::Program(format!("replicas {replicas}")))
            })
            .await
            .unwrap_err();
        let waited = started.elapsed();
        let quiet_after_the_change = Duration::from_secs(15) + QUIET;
        assert!(
            waited >= quiet_after_the_change
                && waited < quiet_after_the_change + Duration::from_secs(1),
            "{waited:?}"
        );
        assert!(
            failed.happened.ends_with(": replicas 3"),
            "{}",
            failed.happened
        );
    }

    #[tokio::test]
    async fn a_failure_shows_the_last_lines_about_its_objects_not_another_foos_retries() {
        let mut p = silent_program();
        p.process.output = vec![
            "creating Deployment ns/web-nginx".into(),
            "Error syncing objectRef=ns/squatter error=taken".into(),
            "Successfully synced objectRef=ns/web".into(),
        ];
        p.process
            .output
            .extend((0..4).map(|i| format!("Error syncing objectRef=ns/squatter {i}")));
        p.about(&["web", "web-nginx"]);
        let failed = p.explain("replicas 2".into(), "replicas Some(5)", false);
        assert_eq!(
            failed.happened,
            "replicas Some(5), it printed about web, web-nginx:\n  \
             creating Deployment ns/web-nginx\n  …\n  \
             Successfully synced objectRef=ns/web"
        );
        // Nothing about them: its last lines, whatever they name.
        p.about(&["gone"]);
        let failed = p.explain("replicas 2".into(), "replicas Some(5)", false);
        assert!(
            failed.happened.starts_with(
                "replicas Some(5), it printed:\n  Error syncing objectRef=ns/squatter 0"
            ),
            "{}",
            failed.happened
        );
    }

    #[test]
    fn an_expected_part_is_found_only_as_whole_words() {
        let line = "sync ns/busy start attempt 12 (80 ms after attempt 11)";
        assert!(has_whole(line, "sync ns/busy start attempt 12"));
        assert!(!has_whole(line, "sync ns/busy start attempt 1"));
        assert!(!has_whole(line, "sync ns/bus"));
        assert!(has_whole(line, "(80 ms"));
        let listed = "ns  cached-foo-2  3";
        assert!(!has_whole(listed, "cached-foo"));
        assert!(has_whole(listed, "cached-foo-2"));
        assert!(!has_whole("workers=20", "workers=2"));
        assert!(has_whole("Starting workers workers=2", "workers=2"));
        assert!(has_whole("a line with \" 3 \" inside", " 3 "));
    }

    #[test]
    fn a_logged_message_is_found_only_whole() {
        let failed = "2026-12-06T11:31:35Z ERROR reconciling object{object.ref=Foo/a.ns}: \
                      sample_controller::workqueue: Error syncing; requeuing for later retry \
                      objectRef=ns/a error=boom retry_in=5ms";
        assert!(logs(failed, "Error syncing; requeuing for later retry"));
        assert!(!logs(failed, "Error syncing"));
        assert!(!logs(failed, "requeuing for later retry"));
        let synced = "INFO sample_controller::workqueue: Successfully synced objectRef=ns/a";
        assert!(logs(synced, "Successfully synced"));
        assert!(!logs(synced, "Successfully"));
        assert!(logs(
            "INFO step_7: Shutting down workers",
            "Shutting down workers"
        ));
        assert!(logs("Shutting down workers", "Shutting down workers"));
        assert!(!logs("Shutting down workers now", "Shutting down workers"));
    }

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
