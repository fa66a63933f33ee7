//! The program under check, as a check sees it: started in one namespace,
//! its output read line by line, and the waits that tell a program still
//! working from one that has stopped.

use super::*;

/// The program under check, running in one namespace.
pub(super) struct Program {
    pub(super) process: Process,
    /// The names the behaviour being checked is about ([`Program::about`]).
    pub(super) about: Vec<String>,
}

impl Program {
    /// Starts the program with `--kubeconfig`, `--namespace ns` and `args`.
    pub(super) fn start(target: &Target, ns: &str, args: &[&str]) -> Checked<Program> {
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
    pub(super) fn about(&mut self, names: &[&str]) {
        self.about = names.iter().map(|n| n.to_string()).collect();
    }

    /// Waits for a line containing every one of `parts` as whole words
    /// ([`has_whole`]): `attempt 1` is not found in `attempt 12`, nor
    /// `ns/foo` in `ns/foo-2`. Like [`Program::expect_where`], it gives up
    /// once the program has printed nothing for [`QUIET`].
    pub(super) async fn expect(&mut self, parts: &[&str]) -> Checked<String> {
        self.expect_parts(parts, QUIET).await
    }

    /// Waits for the line that says the program is running (its caches
    /// synced, its workers started) as [`Program::expect`] does, but for
    /// the whole [`WAIT`] however long it is silent: syncing caches on a
    /// loaded machine prints nothing for a while.
    pub(super) async fn started(&mut self, parts: &[&str]) -> Checked<String> {
        self.expect_parts(parts, WAIT).await
    }

    /// A line containing every one of `parts`, giving up after `silence`.
    pub(super) async fn expect_parts(
        &mut self,
        parts: &[&str],
        silence: Duration,
    ) -> Checked<String> {
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
    pub(super) async fn expect_where(
        &mut self,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> Checked<String> {
        self.expect_within(what, what.to_string(), QUIET, matches)
            .await
    }

    /// A line matching `matches` (`what` in the process's error), giving up
    /// after `silence`; a failure of `expected` that shows what it printed.
    pub(super) async fn expect_within(
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
    pub(super) fn explain(
        &mut self,
        expected: String,
        err: impl fmt::Display,
        told_exit: bool,
    ) -> Failure {
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
    pub(super) async fn until<T, P, F, Fut>(
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
    pub(super) async fn stop(&mut self, within: Duration) {
        if !matches!(
            tokio::time::timeout(within, self.process.terminate()).await,
            Ok(Ok(_))
        ) {
            let _ = self.process.kill().await;
        }
    }

    /// Sends SIGTERM and expects an exit with status 0 within `within`.
    pub(super) async fn stops_cleanly(&mut self, within: Duration) -> Checked<()> {
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

    pub(super) fn output(&self) -> &[String] {
        &self.process.output
    }
}

/// Whether a wait for a line ended because the program exited first.
pub(super) fn exited_first(err: &anyhow::Error) -> bool {
    err.downcast_ref::<crate::harness::NoLine>()
        .is_some_and(|no_line| no_line.exited)
}

/// Whether `line` contains `part` with no name character (a letter, a
/// digit, `-` or `_`, what Kubernetes names and numbers are made of) right
/// before or after it, where `part` itself starts or ends with one: so a
/// key, a name or a count in the line is the one expected, not one that
/// merely begins or ends with it.
pub(super) fn has_whole(line: &str, part: &str) -> bool {
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
pub(super) fn logs(line: &str, message: &str) -> bool {
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

pub(super) fn quoted(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| format!("{p:?}"))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Polls `probe` every 200 ms until it returns `Ok`; after `wait`, fails
/// with `expected` and what the last probe saw.
pub(super) async fn until<T, F, Fut>(expected: &str, wait: Duration, mut probe: F) -> Checked<T>
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
}
