//! The captures of `cargo xtask check`: a workshop starter as handed out and
//! the project's own step 5 (the workshop page), and the ordinary kube-rs
//! controller against step 8's check (the step 8 chapter).

use anyhow::Result;

use crate::capture::*;

/// Runs `cargo xtask check ARGS` against the capture's control plane, as a
/// reader would with `KUBECONFIG` set, expecting exit status `status`; the
/// transcript without cargo's own progress lines, paths relative to the
/// repository, and the exit status when it is not 0.
pub(crate) async fn xtask_check(env: &Env, args: &str, status: i32) -> Result<Vec<String>> {
    let line = format!("cargo xtask check {args} --kubeconfig \"$KUBECONFIG\"");
    let printed = env.shell_expecting(&line, status).await?;
    let root = format!("{}/", course::workspace::repo_root().display());
    let mut lines = vec![format!("$ {line}")];
    lines.extend(
        printed
            .into_iter()
            .filter(|l| !is_cargo_progress(l))
            .map(|l| l.replace(&root, "")),
    );
    if status != 0 {
        lines.push(format!("(exit status {status})"));
    }
    Ok(lines)
}

/// cargo's own lines on stderr (`Compiling …`, `Finished …`, `Running …`).
fn is_cargo_progress(line: &str) -> bool {
    let word = line.trim_start().split(' ').next().unwrap_or_default();
    line.starts_with(' ')
        && ["Compiling", "Finished", "Running", "Blocking", "Fresh"].contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargos_progress_lines_are_left_out_and_the_checks_lines_are_not() {
        assert!(is_cargo_progress(
            "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.3s"
        ));
        assert!(is_cargo_progress(
            "     Running `target/debug/xtask check step-5`"
        ));
        assert!(!is_cargo_progress(
            "  pass  creates the Foo's Deployment, controlled by the Foo"
        ));
        assert!(!is_cargo_progress("Running a workshop"));
    }
}
