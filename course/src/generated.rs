//! Files the tooling writes from the project's sources (the README's and
//! the teacher notes' tables, the starters, the workshop's manifest, the
//! declarations of the step folders' Rust files): write one, or with
//! `--check` only say whether it is what it would write.

use std::io::Write as _;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};

/// Writes `path` (from the repository root) as `make` turns what it holds
/// (empty if it does not exist yet), or with `check` only compares. Returns
/// `path` if it is stale.
pub fn write(
    path: &str,
    check: bool,
    make: impl Fn(&str) -> Result<String>,
) -> Result<Option<String>> {
    let full = crate::workspace::repo_root().join(path);
    let committed = match std::fs::read_to_string(&full) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", full.display())),
    };
    let written = make(&committed).with_context(|| path.to_string())?;
    if written == committed {
        println!("    {path}: current");
        Ok(None)
    } else if check {
        println!("    {path}: STALE");
        Ok(Some(path.to_string()))
    } else {
        std::fs::write(&full, written).with_context(|| format!("writing {}", full.display()))?;
        println!("    {path}: written");
        Ok(None)
    }
}

/// `text` with the lines between its `// BEGIN: {what}` and `// END: {what}`
/// lines (each a whole line, the BEGIN line possibly longer) replaced by
/// `body`; the rest as it was. An error if either marker is missing.
pub fn with_region(text: &str, what: &str, body: &str) -> Result<String> {
    let begin = format!("// BEGIN: {what}");
    let end = format!("// END: {what}");
    let mut lines = text.split_inclusive('\n');
    let mut out = String::new();
    let mut found = false;
    for line in lines.by_ref() {
        out.push_str(line);
        if line.trim_start().starts_with(&begin) {
            found = true;
            break;
        }
    }
    ensure!(found, "no line {begin:?}");
    out.push_str(body);
    let mut closed = false;
    for line in lines {
        if closed {
            out.push_str(line);
        } else if line.trim_start().starts_with(&end) {
            closed = true;
            out.push_str(line);
        }
    }
    ensure!(closed, "no line {end:?} after {begin:?}");
    Ok(out)
}

/// Rust source as `rustfmt` (edition 2024) prints it, so that what the
/// tooling writes is what `cargo fmt --check` accepts.
pub fn rustfmt(source: &str) -> Result<String> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running rustfmt (rustup component add rustfmt)")?;
    child
        .stdin
        .take()
        .context("rustfmt's stdin")?
        .write_all(source.as_bytes())
        .context("writing to rustfmt")?;
    let output = child.wait_with_output().context("waiting for rustfmt")?;
    if !output.status.success() {
        bail!(
            "rustfmt refused what the tooling wrote: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).context("rustfmt's output")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_is_replaced_and_what_surrounds_it_kept() {
        let text =
            "a\n    // BEGIN: the steps, written by a tool\nold\nlines\n    // END: the steps\nb\n";
        assert_eq!(
            with_region(text, "the steps", "new\n").unwrap(),
            "a\n    // BEGIN: the steps, written by a tool\nnew\n    // END: the steps\nb\n"
        );
        let err = with_region("a\n// BEGIN: the steps\n", "the steps", "").unwrap_err();
        assert!(
            format!("{err}").contains("no line \"// END: the steps\""),
            "{err}"
        );
        assert!(with_region("a\n", "the steps", "").is_err());
    }

    #[test]
    fn rustfmt_prints_source_as_cargo_fmt_wants_it() {
        assert_eq!(rustfmt("fn  f( ){}").unwrap(), "fn f() {}\n");
        assert!(rustfmt("fn {").is_err());
    }
}
