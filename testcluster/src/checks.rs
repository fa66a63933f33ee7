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
//! This crate does not depend on the crate under check: the Foo here is a
//! private copy of its shape.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use futures::future::join_all;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::harness::{self, Process};

/// The steps a check exists for (step 1 only lists; `tests/steps.rs` checks it).
pub const STEPS: std::ops::RangeInclusive<u8> = 2..=8;

/// How long a check waits for a line or a state before calling it failed.
pub const WAIT: Duration = Duration::from_secs(60);

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
}

/// Every behaviour of one step's check, in order.
#[derive(Clone, Debug)]
pub struct Report {
    /// The step checked.
    pub step: u8,
    /// One per behaviour.
    pub lines: Vec<Line>,
    /// The namespaces the check created: deleted when every behaviour
    /// passed, left in place otherwise (what the program did is still there
    /// to look at) and named at the end of the report.
    pub namespaces: Vec<String>,
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
        if !self.passed() && !self.namespaces.is_empty() {
            writeln!(
                f,
                "  kept for you to look at: {} (kubectl get foos,deployments,events -n NAMESPACE; \
                 kubectl delete namespace NAMESPACE when done)",
                self.namespaces.join(", ")
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

/// Every behaviour of `step`'s check, in report order.
pub fn behaviours(step: u8) -> Vec<Behaviour> {
    scenarios(step).into_iter().flatten().copied().collect()
}

/// Runs `step`'s check against `target`. Its scenarios run at once, each in
/// a namespace of its own. An `Err` means the check could not run (no
/// such step, the CRD missing); a failing program is a failing [`Report`].
pub async fn check(step: u8, target: &Target) -> Result<Report> {
    if !STEPS.contains(&step) {
        bail!("there is no check for step {step}: steps 2 to 8 have one");
    }
    let crd = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(target.client.clone());
    crd.get_opt("foos.samplecontroller.k8s.io")
        .await
        .context("reading the Foo CRD")?
        .context("the Foo CRD is not installed: kubectl apply -f manifests/crd.yaml")?;
    let runs: Vec<std::pin::Pin<Box<dyn Future<Output = Vec<Line>> + Send + '_>>> = match step {
        2 => vec![Box::pin(run(target, STEP_2, step_2))],
        3 => vec![Box::pin(run(target, STEP_3, step_3))],
        4 => vec![
            Box::pin(run(target, STEP_4_BURST, step_4_burst)),
            Box::pin(run(target, STEP_4_EXCLUSIVE, step_4_exclusive)),
            Box::pin(run(target, STEP_4_RETRY, step_4_retry)),
        ],
        5 => vec![Box::pin(run(target, STEP_5, step_5))],
        6 => vec![
            Box::pin(run(target, STEP_6, step_6)),
            Box::pin(run(target, &[STEP_6_FOREIGN], |s| {
                foreign_untouched(s, STEP_6_FOREIGN)
            })),
        ],
        7 => vec![
            Box::pin(run(target, STEP_7_EVENTS, step_7_events)),
            Box::pin(run(target, STEP_7_WRITES, step_7_writes)),
            Box::pin(run(target, &[STEP_7_FOREIGN], |s| {
                foreign_untouched(s, STEP_7_FOREIGN)
            })),
        ],
        _ => vec![
            Box::pin(run(target, STEP_8_APPLY, step_8_apply)),
            Box::pin(run(target, STEP_8_RESTARTS, step_8_restarts)),
            Box::pin(run(target, &[STEP_8_FOREIGN], |s| {
                foreign_untouched(s, STEP_8_FOREIGN)
            })),
        ],
    };
    let (lines, namespaces): (Vec<Line>, Vec<String>) = CREATED
        .scope(std::sync::Mutex::new(Vec::new()), async {
            let lines = join_all(runs).await.into_iter().flatten().collect();
            let namespaces = CREATED.with(|c| c.lock().map(|c| c.clone()).unwrap_or_default());
            (lines, namespaces)
        })
        .await;
    let report = Report {
        step,
        lines,
        namespaces,
    };
    if report.passed() {
        let api = Api::<k8s_openapi::api::core::v1::Namespace>::all(target.client.clone());
        for ns in &report.namespaces {
            match api.delete(ns, &Default::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => {
                    return Err(err).with_context(|| format!("deleting namespace {ns}"));
                }
            }
        }
    }
    Ok(report)
}

tokio::task_local! {
    /// The namespaces the running check created (every scenario of one
    /// check runs in the task that calls [`check`]).
    static CREATED: std::sync::Mutex<Vec<String>>;
}

/// The behaviour lists of `step`'s scenarios.
fn scenarios(step: u8) -> Vec<&'static [Behaviour]> {
    match step {
        2 => vec![STEP_2],
        3 => vec![STEP_3],
        4 => vec![STEP_4_BURST, STEP_4_EXCLUSIVE, STEP_4_RETRY],
        5 => vec![STEP_5],
        6 => vec![STEP_6, &[STEP_6_FOREIGN]],
        7 => vec![STEP_7_EVENTS, STEP_7_WRITES, &[STEP_7_FOREIGN]],
        8 => vec![STEP_8_APPLY, STEP_8_RESTARTS, &[STEP_8_FOREIGN]],
        _ => vec![],
    }
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
    crate::create_namespace(client, &name)
        .await
        .map_err(|e| failure("a namespace for the check", format!("{e:#}")))?;
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
        Ok(Program { process })
    }

    /// Waits for a line containing every one of `parts`.
    async fn expect(&mut self, parts: &[&str]) -> Checked<String> {
        let wanted = format!("a line containing {}", quoted(parts));
        match self.process.expect(parts).await {
            Ok(line) => Ok(line),
            Err(e) => Err(self.explain(wanted, e)),
        }
    }

    /// Waits for a line matching `matches` (described by `what`).
    async fn expect_where(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Checked<String> {
        match self.process.expect_where(what, matches).await {
            Ok(line) => Ok(line),
            Err(e) => Err(self.explain(what.to_string(), e)),
        }
    }

    /// A failure of `expected`, saying how the program fared meanwhile.
    fn explain(&mut self, expected: String, err: impl fmt::Display) -> Failure {
        let mut happened = err.to_string();
        if !self.process.is_running() {
            happened.push_str("; it exited");
        }
        // Its first panic (where and why), then its last lines.
        let output = &self.process.output;
        let mut shown: Vec<usize> = Vec::new();
        if let Some(at) = output.iter().position(|l| l.contains("panicked at")) {
            shown.extend([at, at + 1]);
        }
        shown.extend(output.len().saturating_sub(4)..output.len());
        shown.sort_unstable();
        shown.dedup();
        shown.retain(|i| *i < output.len() && !output[*i].trim().is_empty());
        if !shown.is_empty() {
            happened.push_str(", it printed:");
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
    /// the program has exited, saying how.
    async fn until<T, F, Fut>(&mut self, expected: &str, wait: Duration, mut probe: F) -> Checked<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, String>>,
    {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let now = match probe().await {
                Ok(value) => return Ok(value),
                Err(now) => now,
            };
            if !self.process.is_running() {
                // Read what it printed last (a panic, say) before explaining.
                self.process.drain_for(Duration::from_millis(200)).await;
                return Err(self.explain(expected.to_string(), format!("meanwhile {now}")));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(self.explain(expected.to_string(), format!("after {wait:?}: {now}")));
            }
            self.process.drain_for(Duration::from_millis(200)).await;
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
            Ok(s) => Err(self.explain(expected, format!("it exited with {s}"))),
            Err(e) => {
                let _ = self.process.kill().await;
                Err(self.explain(expected, format!("{e:#}")))
            }
        }
    }

    fn output(&self) -> &[String] {
        &self.process.output
    }
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

// ---------------------------------------------------------------------------
// The cluster as the checks see it.

/// The Foo of the crate under check, as far as the checks need it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
struct FooSpec {
    deployment_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct FooStatus {
    #[serde(default)]
    available_replicas: i32,
}

fn foos(client: &Client, ns: &str) -> Api<Foo> {
    Api::namespaced(client.clone(), ns)
}

fn deployments(client: &Client, ns: &str) -> Api<Deployment> {
    Api::namespaced(client.clone(), ns)
}

async fn create_foo(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> Checked<Foo> {
    harness::create_foo::<Foo>(client, ns, name, deployment, Some(replicas))
        .await
        .map_err(|e| failure(format!("Foo {ns}/{name} created"), format!("{e:#}")))
}

async fn create_foreign_deployment(client: &Client, ns: &str, name: &str) -> Checked<Deployment> {
    harness::create_foreign_deployment(
        client,
        ns,
        name,
        "example.invalid/web:1",
        &[("owner", "someone-else")],
    )
    .await
    .map_err(|e| failure(format!("Deployment {ns}/{name} created"), format!("{e:#}")))
}

/// A Deployment controlled by `owner`, as someone other than the controller
/// might create it.
async fn create_owned_deployment(
    client: &Client,
    ns: &str,
    name: &str,
    owner: &Foo,
) -> Checked<Deployment> {
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "ownerReferences": [{
                "apiVersion": "samplecontroller.k8s.io/v1alpha1",
                "kind": "Foo",
                "name": owner.name_any(),
                "uid": owner.uid().unwrap_or_default(),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "nginx", "controller": owner.name_any()}},
            "template": {
                "metadata": {"labels": {"app": "nginx", "controller": owner.name_any()}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}
            }
        }
    }))
    .map_err(|e| failure("an owned Deployment", e))?;
    deployments(client, ns)
        .create(&PostParams::default(), &d)
        .await
        .map_err(|e| failure(format!("Deployment {ns}/{name} created"), e))
}

async fn merge<K>(api: &Api<K>, name: &str, patch: serde_json::Value) -> Checked<K>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch.clone()))
        .await
        .map_err(|e| failure(format!("{name} patched with {patch}"), e))
}

async fn delete<K>(api: &Api<K>, name: &str) -> Checked<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    harness::delete(api, name)
        .await
        .map(|_| ())
        .map_err(|e| failure(format!("{name} deleted"), format!("{e:#}")))
}

/// The Deployment `name`, or why not.
async fn get_deployment(
    client: &Client,
    ns: &str,
    name: &str,
) -> std::result::Result<Deployment, String> {
    match deployments(client, ns).get_opt(name).await {
        Ok(Some(d)) => Ok(d),
        Ok(None) => Err(format!("there is no Deployment {ns}/{name}")),
        Err(e) => Err(format!("reading Deployment {ns}/{name}: {e}")),
    }
}

/// The owner reference marked `controller: true`.
fn controller_of(
    d: &Deployment,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    d.owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
}

fn replicas(d: &Deployment) -> Option<i32> {
    d.spec.as_ref().and_then(|s| s.replicas)
}

fn available(d: &Deployment) -> i32 {
    d.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

/// Whether Foo `name` controls Deployment `deployment` with `want` replicas
/// and reports them all available; `Err` says what is not there yet.
async fn converged(
    client: &Client,
    ns: &str,
    name: &str,
    deployment: &str,
    want: i32,
) -> std::result::Result<(), String> {
    let foo = foos(client, ns)
        .get_opt(name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or(format!("there is no Foo {ns}/{name}"))?;
    let d = get_deployment(client, ns, deployment).await?;
    let owner = controller_of(&d).map(|r| r.uid.clone());
    if owner != foo.uid() {
        return Err(format!(
            "Deployment {deployment} is not controlled by Foo {name}"
        ));
    }
    let status = foo.status.as_ref().map(|s| s.available_replicas);
    if replicas(&d) != Some(want) || status != Some(want) {
        return Err(format!(
            "Deployment replicas {:?}, available {}; Foo status.availableReplicas {status:?}",
            replicas(&d),
            available(&d)
        ));
    }
    Ok(())
}

/// The Events about Foo `name`, as `(type, reason, note, count)`.
async fn events_for(
    client: &Client,
    ns: &str,
    name: &str,
) -> std::result::Result<Vec<(String, String, String, i32)>, String> {
    let list = Api::<Event>::namespaced(client.clone(), ns)
        .list(&Default::default())
        .await
        .map_err(|e| format!("listing Events: {e}"))?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("Foo") && r.name.as_deref() == Some(name)
            })
        })
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
                e.series.map_or(1, |s| s.count),
            )
        })
        .collect())
}

/// How many times the Synced Event about Foo `name` was recorded.
async fn synced_count(client: &Client, ns: &str, name: &str) -> Checked<i32> {
    let events = events_for(client, ns, name)
        .await
        .map_err(|e| failure("the Events can be listed", e))?;
    Ok(events
        .iter()
        .filter(|(_, reason, _, _)| reason == "Synced")
        .map(|(_, _, _, count)| count)
        .sum())
}

/// `(manager, operation)` of each managedFields entry for `subresource`.
fn writers<K: kube::Resource>(obj: &K, subresource: Option<&str>) -> Vec<(String, String)> {
    obj.meta()
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.subresource.as_deref() == subresource)
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// What of a foreign Deployment nobody but its owner may change.
fn untouchable(d: &Deployment) -> serde_json::Value {
    let mut v = serde_json::to_value(d).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("status");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    v
}

/// A Deployment `taken` that no Foo controls (someone else's), created in
/// `ns` and settled (kube-controller-manager has observed it) before the
/// program under check starts.
async fn settled_foreign_deployment(client: &Client, ns: &str) -> Checked<Deployment> {
    create_foreign_deployment(client, ns, "taken").await?;
    until("the foreign Deployment settled", WAIT, || async {
        let d = get_deployment(client, ns, "taken").await?;
        let observed = d.status.as_ref().and_then(|s| s.observed_generation);
        let revised = d
            .annotations()
            .contains_key("deployment.kubernetes.io/revision");
        if observed == d.metadata.generation && revised {
            Ok(d)
        } else {
            Err("not yet observed by kube-controller-manager".into())
        }
    })
    .await
}

/// Creates Foo `squatter` asking for Deployment `taken` (`foreign`, which it
/// does not control) and watches both the program and the Deployment: the
/// program must log the refusal twice (a retry) and never write to `taken`.
/// A write fails at once, naming what changed.
async fn refuses_foreign_deployment(
    p: &mut Program,
    client: &Client,
    ns: &str,
    foreign: &Deployment,
) -> Checked<()> {
    create_foo(client, ns, "squatter", "taken", 3).await?;
    let refusal = r#"Resource "taken" already exists and is not managed by Foo"#;
    let expected = format!(
        "Deployment taken never written (Foo squatter does not control it) and the refusal \"{refusal}\" logged twice (retried)"
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        p.process.drain_for(Duration::from_millis(200)).await;
        let now = get_deployment(client, ns, "taken")
            .await
            .map_err(|e| failure(expected.clone(), format!("Deployment taken: {e}")))?;
        let changed = changed_paths("", &untouchable(foreign), &untouchable(&now));
        let ours = writers(&now, None)
            .into_iter()
            .filter(|(m, _)| m == "sample-controller")
            .collect::<Vec<_>>();
        if !changed.is_empty() || !ours.is_empty() {
            return Err(failure(
                expected,
                format!(
                    "your sync wrote to a Deployment this Foo does not control: changed {changed:?}, written by {ours:?}"
                ),
            ));
        }
        let refused = p.output().iter().filter(|l| l.contains(refusal)).count();
        if refused >= 2 {
            return Ok(());
        }
        if !p.process.is_running() {
            return Err(p.explain(expected, format!("it exited after {refused} refusal(s)")));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(p.explain(
                expected,
                format!("after {WAIT:?}: the refusal logged {refused} time(s)"),
            ));
        }
    }
}

/// The JSON paths where `a` and `b` differ (`spec.replicas`, …).
fn changed_paths(at: &str, a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    let path = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    let null = serde_json::Value::Null;
                    changed_paths(&path, a.get(k).unwrap_or(&null), b.get(k).unwrap_or(&null))
                })
                .collect()
        }
        _ if a == b => Vec::new(),
        _ => vec![at.to_string()],
    }
}

/// Steps 6 to 8 must keep step 5's refusal: a scenario of its own, in a
/// namespace of its own, for each.
async fn foreign_untouched(mut s: Scenario<'_>, behaviour: Behaviour) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(behaviour, async {
            let ns = namespace(&client, "foreign").await?;
            let foreign = settled_foreign_deployment(&client, &ns).await?;
            let mut p = Program::start(target, &ns, &[])?;
            p.expect(&["Starting", "workers"]).await?;
            refuses_foreign_deployment(&mut p, &client, &ns, &foreign).await?;
            p.stops_cleanly(Duration::from_secs(10)).await
        })
        .await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Step 2: informers.

const STEP_2_SYNC: Behaviour = Behaviour {
    what: "waits for both caches to sync, then reports what they hold",
    chapter: "step-2.md#the-rust-code",
};
const STEP_2_CURRENT: Behaviour = Behaviour {
    what: "keeps both caches current: a new Foo and a new Deployment show up",
    chapter: "step-2.md#the-rust-code",
};
const STEP_2_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-2.md#the-rust-code",
};
const STEP_2: &[Behaviour] = &[STEP_2_SYNC, STEP_2_CURRENT, STEP_2_STOP];

async fn step_2(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_2_SYNC, async {
                let ns = namespace(&client, "step2").await?;
                create_foo(&client, &ns, "cached-foo", "cached-foo", 1).await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Caches synced: 1 foos, 0 deployments"]).await?;
                p.expect(&[&ns, "cached-foo"]).await?;
                Ok((p, ns))
            })
            .await?;
        s.check(STEP_2_CURRENT, async {
            create_foo(&client, &ns, "later-foo", "later-foo", 3).await?;
            create_foreign_deployment(&client, &ns, "later-deployment").await?;
            p.expect(&[&ns, "later-foo", " 3 "]).await?;
            p.expect(&[&ns, "later-deployment"]).await?;
            Ok(())
        })
        .await?;
        s.check(STEP_2_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Step 3: event handlers.

const STEP_3_FOO_ADDED: Behaviour = Behaviour {
    what: "a Foo added: enqueues its key",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3_FOO_UPDATED: Behaviour = Behaviour {
    what: "a Foo updated: enqueues its key",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3_OWNED_ADDED: Behaviour = Behaviour {
    what: "a Deployment the Foo controls added: enqueues the Foo",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3_REPLAY: Behaviour = Behaviour {
    what: "a resync replay of a Deployment (same resourceVersion): ignored",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3_FOREIGN: Behaviour = Behaviour {
    what: "a Deployment without a controller owner reference: ignored",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3_OWNED_DELETED: Behaviour = Behaviour {
    what: "a Deployment the Foo controls deleted: enqueues the Foo",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3_FOO_DELETED: Behaviour = Behaviour {
    what: "a Foo deleted: ignored (its Deployment goes with it)",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-3.md#the-rust-code",
};
const STEP_3: &[Behaviour] = &[
    STEP_3_FOO_ADDED,
    STEP_3_FOO_UPDATED,
    STEP_3_OWNED_ADDED,
    STEP_3_REPLAY,
    STEP_3_FOREIGN,
    STEP_3_OWNED_DELETED,
    STEP_3_FOO_DELETED,
    STEP_3_STOP,
];

/// `("41", "42")` from `… (resourceVersion 41 -> 42) …`.
fn resource_versions(line: &str) -> Option<(String, String)> {
    let rest = line.split("(resourceVersion ").nth(1)?;
    let (old, rest) = rest.split_once(" -> ")?;
    Some((old.to_string(), rest.split(')').next()?.to_string()))
}

async fn step_3(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns, foo) = s
            .check(STEP_3_FOO_ADDED, async {
                let ns = namespace(&client, "step3").await?;
                let mut p = Program::start(target, &ns, &["--resync", "2"])?;
                let foo = create_foo(&client, &ns, "watched", "watched-nginx", 1).await?;
                p.expect(&[
                    &format!("Foo added {ns}/watched"),
                    &format!("enqueue {ns}/watched"),
                ])
                .await?;
                Ok((p, ns, foo))
            })
            .await?;
        let foos = foos(&client, &ns);
        let updated = s
            .check(STEP_3_FOO_UPDATED, async {
                let updated = merge(&foos, "watched", json!({"spec": {"replicas": 2}})).await?;
                let (old, new) = (foo.resource_version(), updated.resource_version());
                let (old, new) = (old.unwrap_or_default(), new.unwrap_or_default());
                p.expect(&[
                    &format!("Foo updated {ns}/watched (resourceVersion {old} -> {new})"),
                    &format!("enqueue {ns}/watched"),
                ])
                .await?;
                Ok(updated)
            })
            .await?;
        s.check(STEP_3_OWNED_ADDED, async {
            create_owned_deployment(&client, &ns, "watched-nginx", &updated).await?;
            p.expect(&[
                &format!("Deployment added {ns}/watched-nginx"),
                &format!("enqueue {ns}/watched"),
            ])
            .await?;
            Ok(())
        })
        .await?;
        s.check(STEP_3_REPLAY, async {
            let replay = p
                .expect_where(
                    "a replayed update of Deployment watched-nginx, ignored (same resourceVersion)",
                    |l| {
                        l.contains(&format!("Deployment updated {ns}/watched-nginx"))
                            && l.contains("ignored (same resourceVersion")
                    },
                )
                .await?;
            match resource_versions(&replay) {
                Some((old, new)) if old == new => Ok(()),
                _ => Err(failure("the same resourceVersion on both sides", replay)),
            }
        })
        .await?;
        s.check(STEP_3_FOREIGN, async {
            create_foreign_deployment(&client, &ns, "unowned").await?;
            p.expect(&[
                &format!("Deployment added {ns}/unowned"),
                "ignored (no controller owner reference)",
            ])
            .await?;
            Ok(())
        })
        .await?;
        s.check(STEP_3_OWNED_DELETED, async {
            delete(&deployments(&client, &ns), "watched-nginx").await?;
            p.expect(&[
                &format!("Deployment deleted {ns}/watched-nginx"),
                &format!("enqueue {ns}/watched"),
            ])
            .await?;
            Ok(())
        })
        .await?;
        s.check(STEP_3_FOO_DELETED, async {
            delete(&foos, "watched").await?;
            p.expect(&[&format!("Foo deleted {ns}/watched"), "ignored"])
                .await?;
            Ok(())
        })
        .await?;
        s.check(STEP_3_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Step 4: the work queue.

const STEP_4_COLLAPSES: Behaviour = Behaviour {
    what: "ten changes during a sync: the key is synced once more, not ten times",
    chapter: "step-4.md#the-rust-code",
};
const STEP_4_BURST: &[Behaviour] = &[STEP_4_COLLAPSES];

const STEP_4_ONE_WORKER_PER_KEY: Behaviour = Behaviour {
    what: "never syncs one key in two workers at once, while two keys do run at once",
    chapter: "step-4.md#the-rust-code",
};
const STEP_4_EXCLUSIVE: &[Behaviour] = &[STEP_4_ONE_WORKER_PER_KEY];

const STEP_4_BACKS_OFF: Behaviour = Behaviour {
    what: "retries a failing key with delays doubling from 5 ms, then succeeds",
    chapter: "step-4.md#the-rust-code",
};
const STEP_4_LOGS_FAILURES: Behaviour = Behaviour {
    what: "logs each failure as Go does: \"Error syncing; requeuing for later retry\"",
    chapter: "step-4.md#the-rust-code",
};
const STEP_4_RETRY: &[Behaviour] = &[STEP_4_BACKS_OFF, STEP_4_LOGS_FAILURES];

async fn step_4_burst(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_4_COLLAPSES, async {
            let ns = namespace(&client, "step4burst").await?;
            let mut p = Program::start(target, &ns, &["--sync-millis", "3000"])?;
            p.expect(&["Starting 2 workers"]).await?;
            create_foo(&client, &ns, "busy", "busy", 1).await?;
            let key = format!("{ns}/busy");
            p.expect(&[&format!("sync {key} start attempt 1")]).await?;
            let foos = foos(&client, &ns);
            for i in 0..10 {
                merge(
                    &foos,
                    "busy",
                    json!({"metadata": {"labels": {"burst": i.to_string()}}}),
                )
                .await?;
            }
            p.expect(&[&format!("sync {key} done attempt 1")]).await?;
            p.expect(&[&format!("sync {key} start attempt 2")]).await?;
            p.expect(&[&format!("sync {key} done attempt 2")]).await?;
            p.process.drain_for(Duration::from_secs(4)).await;
            let starts = p
                .output()
                .iter()
                .filter(|l| l.contains(&format!("sync {key} start")))
                .count();
            p.stops_cleanly(Duration::from_secs(10)).await?;
            if starts != 2 {
                return Err(failure(
                    "2 syncs: one for the create, one for the whole burst",
                    format!("{starts} syncs"),
                ));
            }
            Ok(())
        })
        .await?;
        Ok(())
    })
}

async fn step_4_exclusive(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_4_ONE_WORKER_PER_KEY, async {
            let ns = namespace(&client, "step4excl").await?;
            let mut p = Program::start(target, &ns, &["--sync-millis", "400"])?;
            p.expect(&["Starting 2 workers"]).await?;
            let foos = foos(&client, &ns);
            for name in ["left", "right"] {
                create_foo(&client, &ns, name, name, 1).await?;
            }
            for i in 0..15 {
                for name in ["left", "right"] {
                    merge(
                        &foos,
                        name,
                        json!({"metadata": {"labels": {"round": i.to_string()}}}),
                    )
                    .await?;
                }
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            p.process.drain_for(Duration::from_secs(2)).await;
            p.stops_cleanly(Duration::from_secs(10)).await?;
            let mut running: std::collections::HashMap<String, bool> = Default::default();
            let mut both_at_once = false;
            for line in p.output().iter().filter(|l| l.starts_with("sync ")) {
                let Some(key) = line.split_whitespace().nth(1) else {
                    continue;
                };
                if line.contains(" start attempt") {
                    if running.get(key).copied().unwrap_or(false) {
                        return Err(failure(
                            "a key starts again only after its sync is done",
                            format!("{key} started while running: {line}"),
                        ));
                    }
                    running.insert(key.to_string(), true);
                    both_at_once |= running.values().filter(|r| **r).count() == 2;
                } else {
                    running.insert(key.to_string(), false);
                }
            }
            if !both_at_once {
                return Err(failure(
                    "the two keys synced at the same time by the two workers",
                    "they never overlapped: are there two workers?",
                ));
            }
            Ok(())
        })
        .await?;
        Ok(())
    })
}

async fn step_4_retry(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let output = s
            .check(STEP_4_BACKS_OFF, async {
                let ns = namespace(&client, "step4retry").await?;
                let mut p = Program::start(target, &ns, &["--fail-first", "5"])?;
                p.expect(&["Starting 2 workers"]).await?;
                create_foo(&client, &ns, "flaky", "flaky", 1).await?;
                let key = format!("{ns}/flaky");
                p.expect(&[&format!("sync {key} done attempt 6")]).await?;
                p.stops_cleanly(Duration::from_secs(10)).await?;
                let gaps: Vec<u64> = p
                    .output()
                    .iter()
                    .filter(|l| l.contains(&format!("sync {key} start attempt")))
                    .filter_map(|l| l.split('(').nth(1)?.split(" ms").next()?.parse().ok())
                    .collect();
                if gaps.len() != 5 {
                    return Err(failure(
                        "5 retries, each printed with its delay",
                        format!("{gaps:?}"),
                    ));
                }
                for (n, gap) in gaps.iter().enumerate() {
                    if *gap < 5 << n {
                        return Err(failure(
                            format!(
                                "retry {} at least {} ms after the attempt before",
                                n + 1,
                                5 << n
                            ),
                            format!("it came after {gap} ms (all delays: {gaps:?} ms)"),
                        ));
                    }
                }
                Ok(p.output().to_vec())
            })
            .await?;
        s.check(STEP_4_LOGS_FAILURES, async {
            let logged = output
                .iter()
                .filter(|l| l.contains("Error syncing; requeuing for later retry"))
                .count();
            if logged == 5 {
                Ok(())
            } else {
                Err(failure(
                    "5 lines \"Error syncing; requeuing for later retry\"",
                    format!("{logged}"),
                ))
            }
        })
        .await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Step 5: syncHandler.

const STEP_5_CREATES: Behaviour = Behaviour {
    what: "creates the Foo's Deployment, controlled by the Foo",
    chapter: "step-5.md#the-rust-code",
};
const STEP_5_REFUSES: Behaviour = Behaviour {
    what: "refuses a Deployment the Foo does not control, retries, never changes it",
    chapter: "step-5.md#the-rust-code",
};
const STEP_5_SCALES: Behaviour = Behaviour {
    what: "puts back the replica count someone changed",
    chapter: "step-5.md#the-rust-code",
};
const STEP_5_RECREATES: Behaviour = Behaviour {
    what: "recreates a deleted Deployment",
    chapter: "step-5.md#the-rust-code",
};
const STEP_5_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-5.md#the-rust-code",
};
const STEP_5: &[Behaviour] = &[
    STEP_5_CREATES,
    STEP_5_REFUSES,
    STEP_5_SCALES,
    STEP_5_RECREATES,
    STEP_5_STOP,
];

async fn step_5(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns, foreign, created) = s
            .check(STEP_5_CREATES, async {
                let ns = namespace(&client, "step5").await?;
                let foreign = settled_foreign_deployment(&client, &ns).await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting 2 workers"]).await?;
                let foo = create_foo(&client, &ns, "web", "web-nginx", 2).await?;
                let created = p
                    .until(
                        "Deployment web-nginx controlled by Foo web, 2 replicas",
                        WAIT,
                        || async {
                            let d = get_deployment(&client, &ns, "web-nginx").await?;
                            let owner =
                                controller_of(&d).ok_or("it has no controller owner reference")?;
                            if (owner.kind.as_str(), owner.name.as_str()) != ("Foo", "web")
                                || Some(&owner.uid) != foo.uid().as_ref()
                            {
                                return Err(format!(
                                    "its controller is {} {} (uid {})",
                                    owner.kind, owner.name, owner.uid
                                ));
                            }
                            if owner.block_owner_deletion != Some(true) {
                                return Err(
                                    "its owner reference lacks blockOwnerDeletion: true".into()
                                );
                            }
                            if replicas(&d) != Some(2) {
                                return Err(format!("replicas {:?}", replicas(&d)));
                            }
                            Ok(d)
                        },
                    )
                    .await?;
                Ok((p, ns, foreign, created))
            })
            .await?;
        s.check(
            STEP_5_REFUSES,
            refuses_foreign_deployment(&mut p, &client, &ns, &foreign),
        )
        .await?;
        s.check(STEP_5_SCALES, async {
            merge(
                &deployments(&client, &ns),
                "web-nginx",
                json!({"spec": {"replicas": 5}}),
            )
            .await?;
            p.until("replicas back to 2 after someone set 5", WAIT, || async {
                let d = get_deployment(&client, &ns, "web-nginx").await?;
                match replicas(&d) {
                    Some(2) => Ok(()),
                    other => Err(format!("replicas {other:?}")),
                }
            })
            .await
        })
        .await?;
        s.check(STEP_5_RECREATES, async {
            let old_uid = created.uid();
            delete(&deployments(&client, &ns), "web-nginx").await?;
            p.until("web-nginx recreated (a new UID)", WAIT, || async {
                let d = get_deployment(&client, &ns, "web-nginx").await?;
                if d.uid() != old_uid && d.metadata.deletion_timestamp.is_none() {
                    Ok(())
                } else {
                    Err("still the old one".into())
                }
            })
            .await
        })
        .await?;
        s.check(STEP_5_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Step 6: status.

const STEP_6_STATUS: Behaviour = Behaviour {
    what: "the Foo's status.availableReplicas follows its Deployment (2 available)",
    chapter: "step-6.md#the-rust-code",
};
const STEP_6_SCALED: Behaviour = Behaviour {
    what: "after a scale to 3, the status follows again (3 available)",
    chapter: "step-6.md#the-rust-code",
};
const STEP_6_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-6.md#the-rust-code",
};
const STEP_6: &[Behaviour] = &[STEP_6_STATUS, STEP_6_SCALED, STEP_6_STOP];
const STEP_6_FOREIGN: Behaviour = Behaviour {
    what: "still refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-5.md#the-rust-code",
};

/// Whether Foo `status` and Deployment `status-nginx` both say `want` available.
async fn both_available(client: &Client, ns: &str, want: i32) -> std::result::Result<(), String> {
    let foo = foos(client, ns)
        .get_opt("status")
        .await
        .map_err(|e| e.to_string())?
        .ok_or("there is no Foo status")?;
    let d = get_deployment(client, ns, "status-nginx").await?;
    let foo_has = foo.status.map(|s| s.available_replicas);
    if available(&d) == want && foo_has == Some(want) {
        Ok(())
    } else {
        Err(format!(
            "the Deployment has {} available, the Foo's status says {foo_has:?}",
            available(&d)
        ))
    }
}

async fn step_6(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_6_STATUS, async {
                let ns = namespace(&client, "step6").await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting 2 workers"]).await?;
                create_foo(&client, &ns, "status", "status-nginx", 2).await?;
                p.until(
                    "2 available in the Deployment and in the Foo's status",
                    WAIT,
                    || both_available(&client, &ns, 2),
                )
                .await?;
                Ok((p, ns))
            })
            .await?;
        s.check(STEP_6_SCALED, async {
            merge(
                &foos(&client, &ns),
                "status",
                json!({"spec": {"replicas": 3}}),
            )
            .await?;
            p.until(
                "3 available in the Deployment and in the Foo's status",
                WAIT,
                || both_available(&client, &ns, 3),
            )
            .await
        })
        .await?;
        s.check(STEP_6_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Step 7: the whole Go program.

const STEP_7_SYNCED_EVENT: Behaviour = Behaviour {
    what: "records a Normal Synced Event \"Foo synced successfully\"",
    chapter: "step-7.md#the-rust-code",
};
const STEP_7_WARNING_EVENT: Behaviour = Behaviour {
    what: "records a Warning ErrResourceExists Event for a Deployment it does not own",
    chapter: "step-7.md#the-rust-code",
};
const STEP_7_GARBAGE_COLLECTED: Behaviour = Behaviour {
    what: "a deleted Foo's Deployment is garbage-collected (its owner reference)",
    chapter: "step-7.md#the-rust-code",
};
const STEP_7_SHUTDOWN: Behaviour = Behaviour {
    what: "on SIGTERM, says \"Shutting down workers\" and exits 0",
    chapter: "step-7.md#the-rust-code",
};
const STEP_7_EVENTS: &[Behaviour] = &[
    STEP_7_SYNCED_EVENT,
    STEP_7_WARNING_EVENT,
    STEP_7_GARBAGE_COLLECTED,
    STEP_7_SHUTDOWN,
];

const STEP_7_FOREIGN: Behaviour = Behaviour {
    what: "refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-7.md#the-rust-code",
};

const STEP_7_REPLACES: Behaviour = Behaviour {
    what: "writes like Go: a replica change replaces the Deployment (Update), dropping others' labels",
    chapter: "step-7.md#differences-from-go",
};
const STEP_7_UPDATE_STATUS: Behaviour = Behaviour {
    what: "writes the status with UpdateStatus (a PUT, operation Update)",
    chapter: "step-7.md#the-rust-code",
};
const STEP_7_RESYNCS: Behaviour = Behaviour {
    what: "resyncs every 30 s: with nothing changed, Synced is recorded again",
    chapter: "step-7.md#the-rust-code",
};
const STEP_7_WRITES: &[Behaviour] = &[STEP_7_REPLACES, STEP_7_UPDATE_STATUS, STEP_7_RESYNCS];

async fn step_7_events(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_7_SYNCED_EVENT, async {
                let ns = namespace(&client, "step7").await?;
                create_foreign_deployment(&client, &ns, "occupied").await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting workers"]).await?;
                create_foo(&client, &ns, "good", "good-nginx", 1).await?;
                create_foo(&client, &ns, "blocked", "occupied", 1).await?;
                p.until("a Normal Synced Event about Foo good", WAIT, || async {
                    let events = events_for(&client, &ns, "good").await?;
                    events
                        .iter()
                        .any(|(t, r, n, _)| {
                            t == "Normal" && r == "Synced" && n == "Foo synced successfully"
                        })
                        .then_some(())
                        .ok_or(format!("its Events: {events:?}"))
                })
                .await?;
                Ok((p, ns))
            })
            .await?;
        s.check(STEP_7_WARNING_EVENT, async {
            let want = r#"Resource "occupied" already exists and is not managed by Foo"#;
            p.until(
                "a Warning ErrResourceExists Event about Foo blocked",
                WAIT,
                || async {
                    let events = events_for(&client, &ns, "blocked").await?;
                    events
                        .iter()
                        .any(|(t, r, n, _)| t == "Warning" && r == "ErrResourceExists" && n == want)
                        .then_some(())
                        .ok_or(format!("its Events: {events:?}"))
                },
            )
            .await
        })
        .await?;
        s.check(STEP_7_GARBAGE_COLLECTED, async {
            delete(&foos(&client, &ns), "good").await?;
            p.until(
                "good-nginx deleted by the garbage collector",
                WAIT,
                || async {
                    match get_deployment(&client, &ns, "good-nginx").await {
                        Err(_) => Ok(()),
                        Ok(d) => Err(format!(
                            "it is still there, owners {:?}",
                            d.owner_references()
                        )),
                    }
                },
            )
            .await
        })
        .await?;
        s.check(STEP_7_SHUTDOWN, async {
            p.stops_cleanly(Duration::from_secs(10)).await?;
            if p.output()
                .iter()
                .any(|l| l.contains("Shutting down workers"))
            {
                Ok(())
            } else {
                Err(failure(
                    "a line \"Shutting down workers\"",
                    "none was printed",
                ))
            }
        })
        .await?;
        Ok(())
    })
}

async fn step_7_writes(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_7_REPLACES, async {
                let ns = namespace(&client, "step7go").await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting workers"]).await?;
                create_foo(&client, &ns, "literal", "literal", 1).await?;
                p.until("Foo literal converged at 1", WAIT, || {
                    converged(&client, &ns, "literal", "literal", 1)
                })
                .await?;
                let deployments = deployments(&client, &ns);
                merge(
                    &deployments,
                    "literal",
                    json!({"metadata": {"labels": {"team": "blue"}}}),
                )
                .await?;
                merge(
                    &foos(&client, &ns),
                    "literal",
                    json!({"spec": {"replicas": 2}}),
                )
                .await?;
                let replaced = p
                    .until("Deployment literal at 2 replicas", WAIT, || async {
                        let d = get_deployment(&client, &ns, "literal").await?;
                        (replicas(&d) == Some(2))
                            .then_some(d)
                            .ok_or("not yet 2 replicas".to_string())
                    })
                    .await?;
                if replaced.labels().contains_key("team") {
                    return Err(failure(
                        "the label team=blue dropped by the replace",
                        "it is still there",
                    ));
                }
                let wrote = writers(&replaced, None);
                if !wrote.contains(&("sample-controller".into(), "Update".into())) {
                    return Err(failure(
                        "a write by sample-controller, operation Update",
                        format!("{wrote:?}"),
                    ));
                }
                Ok((p, ns))
            })
            .await?;
        s.check(STEP_7_UPDATE_STATUS, async {
            let foo = foos(&client, &ns)
                .get("literal")
                .await
                .map_err(|e| failure("Foo literal", e))?;
            let wrote = writers(&foo, Some("status"));
            if wrote == [("sample-controller".to_string(), "Update".to_string())] {
                Ok(())
            } else {
                Err(failure(
                    "the status written by sample-controller, operation Update",
                    format!("{wrote:?}"),
                ))
            }
        })
        .await?;
        s.check(STEP_7_RESYNCS, async {
            p.until("Foo literal converged at 2", WAIT, || {
                converged(&client, &ns, "literal", "literal", 2)
            })
            .await?;
            tokio::time::sleep(Duration::from_secs(3)).await;
            let before = synced_count(&client, &ns, "literal").await?;
            tokio::time::sleep(Duration::from_secs(33)).await;
            let after = synced_count(&client, &ns, "literal").await?;
            p.stops_cleanly(Duration::from_secs(10)).await?;
            if after > before {
                Ok(())
            } else {
                Err(failure(
                    "the Synced Event counted again within 33 s (a resync syncs every Foo)",
                    format!("its count stayed at {before}"),
                ))
            }
        })
        .await?;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Step 8: the kube-rs way.

const STEP_8_CONVERGES: Behaviour = Behaviour {
    what: "creates the Deployment and reports its available replicas",
    chapter: "step-8.md#the-rust-code",
};
const STEP_8_TAKES_BACK: Behaviour = Behaviour {
    what: "takes back an image someone changed, at once",
    chapter: "step-8.md#apply-only-what-drifted",
};
const STEP_8_KEEPS_OTHERS: Behaviour = Behaviour {
    what: "keeps a label someone else set when it scales (server-side apply)",
    chapter: "step-8.md#server-side-apply-instead-of-update",
};
const STEP_8_APPLIES: Behaviour = Behaviour {
    what: "writes the Deployment and the status by server-side apply (operation Apply)",
    chapter: "step-8.md#the-status-applied-and-only-when-it-differs",
};
const STEP_8_NO_WRITE: Behaviour = Behaviour {
    what: "a change that needs nothing (a label on the Foo, three times): no write, no Event",
    chapter: "step-8.md#the-status-applied-and-only-when-it-differs",
};
const STEP_8_IDLE: Behaviour = Behaviour {
    what: "while nothing changes: no reconcile, no write, no Event for 35 s",
    chapter: "step-8.md#no-resync",
};
const STEP_8_STOP: Behaviour = Behaviour {
    what: "exits 0 on SIGTERM",
    chapter: "step-8.md#graceful-shutdown",
};
const STEP_8_APPLY: &[Behaviour] = &[
    STEP_8_CONVERGES,
    STEP_8_TAKES_BACK,
    STEP_8_KEEPS_OTHERS,
    STEP_8_APPLIES,
    STEP_8_NO_WRITE,
    STEP_8_IDLE,
    STEP_8_STOP,
];

const STEP_8_RESTARTED: Behaviour = Behaviour {
    what: "started beside 5 existing Foos, starts its workers and stops on SIGTERM, 5 times in a row",
    chapter: "step-8.md#graceful-shutdown",
};
const STEP_8_RESTARTS: &[Behaviour] = &[STEP_8_RESTARTED];
const STEP_8_FOREIGN: Behaviour = Behaviour {
    what: "refuses a Deployment the Foo does not control, and never writes to it",
    chapter: "step-8.md#the-rust-code",
};

async fn step_8_apply(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        let (mut p, ns) = s
            .check(STEP_8_CONVERGES, async {
                let ns = namespace(&client, "step8").await?;
                let mut p = Program::start(target, &ns, &[])?;
                p.expect(&["Starting workers"]).await?;
                create_foo(&client, &ns, "applied", "applied", 1).await?;
                p.until("Foo applied converged at 1", WAIT, || {
                    converged(&client, &ns, "applied", "applied", 1)
                })
                .await?;
                Ok((p, ns))
            })
            .await?;
        let deployments = deployments(&client, &ns);
        let foos = foos(&client, &ns);
        s.check(STEP_8_TAKES_BACK, async {
            let params = PatchParams {
                field_manager: Some("kubectl-label".into()),
                ..PatchParams::default()
            };
            let label = json!({"metadata": {"labels": {"team": "blue"}}});
            deployments
                .patch("applied", &params, &Patch::Merge(label))
                .await
                .map_err(|e| failure("a label set on Deployment applied", e))?;
            let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}});
            deployments
                .patch("applied", &PatchParams::default(), &Patch::Strategic(image))
                .await
                .map_err(|e| failure("the image of Deployment applied changed", e))?;
            p.until("the image back to nginx:latest", WAIT, || async {
                let d = get_deployment(&client, &ns, "applied").await?;
                let image = d
                    .spec
                    .and_then(|s| s.template.spec)
                    .and_then(|p| p.containers.first().and_then(|c| c.image.clone()));
                (image.as_deref() == Some("nginx:latest"))
                    .then_some(())
                    .ok_or(format!("image {image:?}"))
            })
            .await
        })
        .await?;
        let scaled = s
            .check(STEP_8_KEEPS_OTHERS, async {
                merge(&foos, "applied", json!({"spec": {"replicas": 2}})).await?;
                p.until("Foo applied converged at 2", WAIT, || {
                    converged(&client, &ns, "applied", "applied", 2)
                })
                .await?;
                let d = get_deployment(&client, &ns, "applied")
                    .await
                    .map_err(|e| failure("Deployment applied", e))?;
                match d.labels().get("team").map(String::as_str) {
                    Some("blue") => Ok(d),
                    other => Err(failure(
                        "the label team=blue still there",
                        format!("team={other:?}"),
                    )),
                }
            })
            .await?;
        s.check(STEP_8_APPLIES, async {
            let wrote = writers(&scaled, None);
            if !wrote.contains(&("sample-controller".into(), "Apply".into())) {
                return Err(failure(
                    "the Deployment written by sample-controller, operation Apply",
                    format!("{wrote:?}"),
                ));
            }
            let foo = foos
                .get("applied")
                .await
                .map_err(|e| failure("Foo applied", e))?;
            let wrote = writers(&foo, Some("status"));
            if wrote == [("sample-controller".to_string(), "Apply".to_string())] {
                Ok(())
            } else {
                Err(failure(
                    "the status written by sample-controller, operation Apply only",
                    format!("{wrote:?}"),
                ))
            }
        })
        .await?;
        s.check(STEP_8_NO_WRITE, async {
            // Let the scale-up settle: the status write of the last replica
            // and its Synced Event.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let deployment_version = || async {
                get_deployment(&client, &ns, "applied")
                    .await
                    .map_err(|e| failure("Deployment applied", e))
                    .map(|d| d.resource_version())
            };
            let before = (
                synced_count(&client, &ns, "applied").await?,
                deployment_version().await?,
            );
            let mut labelled = None;
            for i in 1..=3 {
                let foo = merge(&foos, "applied", json!({"metadata": {"labels": {"touched": i.to_string()}}})).await?;
                labelled = foo.resource_version();
            }
            // Each label is a Foo update the controller reconciles; give it time to.
            tokio::time::sleep(Duration::from_secs(5)).await;
            let foo = foos.get("applied").await.map_err(|e| failure("Foo applied", e))?;
            let after = (
                synced_count(&client, &ns, "applied").await?,
                deployment_version().await?,
            );
            if before != after {
                return Err(failure(
                    "the same Synced Event count and Deployment resourceVersion after three labels on the Foo (nothing to change, so nothing written and no Event)",
                    format!("(Synced Events, Deployment resourceVersion) {before:?} became {after:?}"),
                ));
            }
            if foo.resource_version() != labelled {
                return Err(failure(
                    "the Foo as the third label left it (no status write)",
                    format!(
                        "its resourceVersion went from {labelled:?} to {:?}: something wrote to it",
                        foo.resource_version()
                    ),
                ));
            }
            Ok(())
        })
        .await?;
        s.check(STEP_8_IDLE, async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            p.process.drain_for(Duration::from_millis(100)).await;
            let syncs = |output: &[String]| output.iter().filter(|l| l.contains("Successfully synced")).count();
            let version = |r: std::result::Result<Foo, kube::Error>| r.ok().and_then(|o| o.resource_version());
            let before = (
                synced_count(&client, &ns, "applied").await?,
                version(foos.get("applied").await),
                get_deployment(&client, &ns, "applied").await.ok().and_then(|d| d.resource_version()),
                syncs(p.output()),
            );
            tokio::time::sleep(Duration::from_secs(35)).await;
            p.process.drain_for(Duration::from_millis(100)).await;
            let after = (
                synced_count(&client, &ns, "applied").await?,
                version(foos.get("applied").await),
                get_deployment(&client, &ns, "applied").await.ok().and_then(|d| d.resource_version()),
                syncs(p.output()),
            );
            if before == after {
                Ok(())
            } else {
                Err(failure(
                    "the same (Synced count, Foo resourceVersion, Deployment resourceVersion, \"Successfully synced\" lines) 35 s later",
                    format!("{before:?} became {after:?}"),
                ))
            }
        })
        .await?;
        s.check(STEP_8_STOP, p.stops_cleanly(Duration::from_secs(10)))
            .await?;
        Ok(())
    })
}

async fn step_8_restarts(mut s: Scenario<'_>) -> Vec<Line> {
    scenario!(s, {
        let client = s.client().clone();
        let target = s.target;
        s.check(STEP_8_RESTARTED, async {
            let ns = namespace(&client, "step8restarts").await?;
            for i in 0..5 {
                let name = format!("existing-{i}");
                create_foo(&client, &ns, &name, &name, 1).await?;
            }
            for round in 1..=5 {
                let mut p = Program::start(target, &ns, &[])?;
                p.process = p.process.with_wait(Duration::from_secs(20));
                p.expect(&["Starting workers"])
                    .await
                    .map_err(|f| failure(format!("round {round}: {}", f.expected), f.happened))?;
                p.stops_cleanly(Duration::from_secs(10))
                    .await
                    .map_err(|f| failure(format!("round {round}: {}", f.expected), f.happened))?;
            }
            Ok(())
        })
        .await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// mdBook's id for a heading: lower case, spaces to dashes, only
    /// alphanumerics, `-` and `_` kept.
    fn anchor(heading: &str) -> String {
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
    }

    #[test]
    fn every_behaviour_points_at_a_section_that_exists_in_the_book() {
        let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src");
        for step in STEPS {
            let list = behaviours(step);
            assert!(!list.is_empty(), "step {step} has no behaviours");
            for b in list {
                let (file, section) = b.chapter.split_once('#').expect("file#section");
                let text = std::fs::read_to_string(book.join(file)).expect(file);
                let anchors: Vec<String> = text
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .map(|l| anchor(l.trim_start_matches('#')))
                    .collect();
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
        for step in STEPS {
            let list = behaviours(step);
            for (i, b) in list.iter().enumerate() {
                assert!(!list[..i].contains(b), "step {step}: {b:?} twice");
            }
        }
    }

    #[test]
    fn a_report_summary_marks_each_outcome() {
        let report = Report {
            step: 5,
            lines: vec![
                Line {
                    behaviour: STEP_5_CREATES,
                    outcome: Outcome::Passed,
                },
                Line {
                    behaviour: STEP_5_REFUSES,
                    outcome: Outcome::Failed {
                        expected: "x".into(),
                        happened: "y".into(),
                    },
                },
                Line {
                    behaviour: STEP_5_SCALES,
                    outcome: Outcome::NotReached,
                },
            ],
            namespaces: vec!["check-step5-1-0".into()],
        };
        assert!(!report.passed());
        assert!(
            report
                .to_string()
                .contains("kept for you to look at: check-step5-1-0 (")
        );
        assert_eq!(
            report.summary(),
            [
                format!("step-5 pass {}", STEP_5_CREATES.what),
                format!("step-5 FAIL {}", STEP_5_REFUSES.what),
                format!("step-5 skip {}", STEP_5_SCALES.what),
            ]
        );
        let text = report.to_string();
        assert!(
            text.contains("read:     book/src/step-5.md#the-rust-code"),
            "{text}"
        );
        assert!(text.ends_with("step-5: 1 of 3 behaviours pass"), "{text}");
    }
}
