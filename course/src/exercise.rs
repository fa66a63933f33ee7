//! `cargo xtask check step-N`: builds a workshop starter (or a step) and
//! runs that step's behaviour checks (`crate::checks`, the same ones
//! tests/steps.rs runs on the steps) against a real API server, printing one
//! line per behaviour.
//!
//! The cluster: `--kubeconfig` (yours), else the one `cargo xtask cluster up`
//! started, else a control plane of the check's own, started for it and
//! stopped after (about 30 s more).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::checks::Target;
use crate::steps::{self, Step};
use anyhow::{Context, Result, bail};
use testcluster::{ControlPlane, Options};

use crate::workspace::repo_root;

/// Arguments of `cargo xtask check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The step to check: `step-2` … `step-8` (or just the number).
    step: String,
    /// Check the project's own step (`steps/step-N/main.rs`) instead of your
    /// starter (`workshop/step-N.rs`): what a finished starter does.
    #[arg(long)]
    reference: bool,
    /// Check this binary instead of building one.
    #[arg(long, value_name = "PATH", conflicts_with = "reference")]
    program: Option<PathBuf>,
    /// Run against this cluster (the check creates namespaces `check-…` in it
    /// and applies manifests/crd.yaml) instead of the local control plane.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Print everything the program prints, as it prints it.
    #[arg(long, short)]
    verbose: bool,
    /// Keep the namespaces the check creates, to look at what the program
    /// did there (`kubectl get foos,deployments,events -n NAMESPACE`);
    /// without it they are deleted when the check ends.
    #[arg(long)]
    keep: bool,
}

/// Runs `cargo xtask check`; exit 0 only when every behaviour passed.
pub async fn check(args: CheckArgs) -> Result<ExitCode> {
    let step = parse_step(&args.step)?;
    let program = match &args.program {
        Some(path) => path.clone(),
        None => build(step, args.reference)?,
    };
    let step = step.number;

    // Keeps a control plane started for this check alive until the end.
    let mut own: Option<ControlPlane> = None;
    let kubeconfig = match args.kubeconfig {
        Some(path) => path,
        None => match running_cluster()? {
            Some(path) => {
                println!("==> On the local cluster (`cargo xtask cluster up`)");
                path
            }
            None => {
                println!(
                    "==> Starting a control plane for this check (start one with `cargo xtask cluster up` to skip this)"
                );
                let cp = ControlPlane::start(Options::default()).await?;
                let path = cp.kubeconfig_path().to_path_buf();
                own = Some(cp);
                path
            }
        },
    };
    let client = testcluster::client_for_kubeconfig(&kubeconfig).await?;
    testcluster::install_crd(&client, repo_root().join("manifests/crd.yaml")).await?;

    println!(
        "==> Checking step {step}: {} against the API server in {}",
        program.display(),
        kubeconfig.display()
    );
    let target = Target {
        program,
        kubeconfig,
        client,
        echo: args.verbose,
        keep: args.keep,
    };
    let report = crate::steps::check(step, &target).await?;
    println!("{report}");
    drop(own);
    if report.passed() {
        println!("All of step {step} works. On to the next chapter.");
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "Not yet: fix the first FAIL above (its `read:` line says where the book explains it), then run `cargo xtask check step-{step}` again."
        );
        Ok(ExitCode::FAILURE)
    }
}

/// `step-5`, `5` → step 5, if the step registry gives it a check.
fn parse_step(text: &str) -> Result<&'static Step> {
    match steps::parse(text) {
        Some(step) if !step.check().is_empty() => Ok(step),
        _ => {
            let checked: Vec<String> = steps::checked().map(|s| s.binary.to_string()).collect();
            bail!("no check for {text:?}: name one of {}", checked.join(", "))
        }
    }
}

/// Builds the starter (or the step) with cargo and returns its path.
///
/// Built as the user's own `cargo build` would (no `-p xtask`, none of
/// `cargo xtask`'s variables): the same features, the same artifacts, so a
/// check after a `cargo build` compiles only what changed, and the other way
/// round.
fn build(step: &Step, reference: bool) -> Result<PathBuf> {
    let (cargo, bin) = match (reference, step.starter) {
        (true, _) => (
            crate::workspace::cargo(&["build", "--bin", step.binary]),
            step.binary,
        ),
        (false, Some(starter)) => (
            crate::workspace::cargo(&["build", "-p", "workshop", "--bin", starter.binary]),
            starter.binary,
        ),
        (false, None) => bail!(
            "step {} has no workshop starter: check the step itself with --reference",
            step.number
        ),
    };
    println!("==> {cargo}");
    let status = cargo.std().status().context("running cargo build")?;
    if !status.success() {
        bail!("{bin} does not compile yet: fix the errors above, then run the check again");
    }
    Ok(crate::workspace::debug_dir().join(bin))
}

/// The kubeconfig of the cluster `cargo xtask cluster up` started, if it is running.
fn running_cluster() -> Result<Option<PathBuf>> {
    let dir = testcluster::cluster_dir()?;
    let running = testcluster::recorded_processes(&dir)?
        .iter()
        .any(|p| p.is_running());
    let kubeconfig = dir.join("kubeconfig");
    Ok((running && Path::new(&kubeconfig).is_file()).then_some(kubeconfig))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_named_with_or_without_its_prefix_and_only_steps_with_a_check_have_one() {
        use crate::steps::{STEPS, checked};
        assert_eq!(parse_step("step-5").unwrap().number, 5);
        assert_eq!(parse_step("8").unwrap().number, 8);
        // The steps with a check, as the error lists them; a step after the
        // last is none, whatever the last is.
        let listed: Vec<String> = checked().map(|s| format!("step-{}", s.number)).collect();
        assert_eq!(listed.first().map(String::as_str), Some("step-2"));
        let after_the_last = format!("step-{}", STEPS.len() + 1);
        for bad in ["step-1", after_the_last.as_str(), "five", ""] {
            let err = parse_step(bad).unwrap_err().to_string();
            assert!(err.contains(&listed.join(", ")), "{bad}: {err}");
        }
    }
}
