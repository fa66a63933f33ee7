//! `cargo xtask watch step-N`: a step at work, drawn live for a projector.
//!
//! Uses the cluster in `KUBECONFIG` (or `~/.kube/config`) if one answers,
//! otherwise starts the local control plane; installs the CRD; builds the
//! step and runs it with `SAMPLE_CONTROLLER_LOG_JSON` pointing at
//! `target/flow/step-N.log.jsonl`, its log as JSON; serves, on 127.0.0.1
//! only, a page that draws the flow of that log (`crate::flow`) as it
//! is written (book/theme/flow.js and flow.css, the same view the book's
//! replays use) over server-sent events. Whatever anyone does to the cluster from another
//! terminal (`kubectl apply`, `scale`, `delete`) flows through the step and
//! onto the page. Ctrl-C stops the step (SIGTERM, by its PID), the server
//! and the control plane if it started one.

use std::convert::Infallible;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use futures::{Stream, StreamExt, stream};
use kube::Client;
use serde_json::Value;
use testcluster::{ControlPlane, Options};

use crate::kubectl::Kubectl;
use crate::steps::Step;

// A headless Chromium driven over its DevTools pipe: the live page's test
// looks at what it draws.
#[cfg(test)]
mod devtools;

/// The view, shared with the book (one source for both).
const FLOW_JS: &str = include_str!("../../../book/theme/flow.js");
const FLOW_CSS: &str = include_str!("../../../book/theme/flow.css");

/// Options of `cargo xtask watch`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The step to run and draw (`step-N` or just N): one with a flow, from
    /// step 3 on.
    step: String,
    /// The port of the page, on 127.0.0.1.
    #[arg(long, default_value_t = 8790)]
    port: u16,
    /// Only watch this namespace (default: all namespaces, as the step does).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
}

/// The page: the view, live.
fn page(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}: the flow, live</title>\n<link rel=\"stylesheet\" href=\"flow.css\">\n\
         </head>\n<body style=\"margin:0\">\n\
         <div class=\"flow-view flow-live\" id=\"flow\" data-live=\"events\"></div>\n\
         <script src=\"flow.js\"></script>\n</body>\n</html>\n"
    )
}

/// `step-3 to step-8`: the steps with a flow, from the step registry.
pub fn drawable() -> String {
    let mut drawn = crate::steps::drawn().map(|s| s.binary);
    let first = drawn.next().unwrap_or_default();
    format!("{first} to {}", drawn.last().unwrap_or(first))
}

/// The `cli`'s help line: what `watch` does, with the steps it draws.
pub fn about() -> String {
    format!(
        "Run a step ({}) and draw its flow live on a page at http://127.0.0.1:8790/: \
         every kubectl action from another terminal flows through it",
        drawable()
    )
}

/// The step `text` names (`step-5` or `5`), if it has a flow to draw; else
/// an error that says which steps do.
fn drawn_step(text: &str) -> Result<&'static crate::steps::Step> {
    let Some(step) = crate::steps::parse(text) else {
        bail!("{text:?} is not a step: give {}", drawable());
    };
    if step.flow.is_none() {
        bail!(
            "{} lists and caches but queues nothing, so it has no flow to draw: give {}",
            step.binary,
            drawable()
        );
    }
    Ok(step)
}

/// Runs the command until Ctrl-C.
pub async fn watch(args: WatchArgs) -> Result<()> {
    let step = drawn_step(&args.step)?;
    let root = crate::workspace::repo_root();
    // The port first: a second `cargo xtask watch` fails at once, not after a build.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| {
            format!(
                "cannot listen on 127.0.0.1:{}: is another `cargo xtask watch` running? \
                 (--port picks another)",
                args.port
            )
        })?;

    let (client, own) = cluster().await?;
    let kubeconfig = own.as_ref().map(|cp| cp.kubeconfig_path().to_path_buf());
    testcluster::install_crd(&client, root.join("manifests/crd.yaml")).await?;

    let (mut child, log) = start_step(step, kubeconfig.as_deref(), args.namespace.as_deref())?;
    println!(
        "==> The flow of {}: http://127.0.0.1:{}/ (put it on the projector)",
        step.binary, args.port
    );
    tell_how_to_act(kubeconfig.as_deref(), &args.namespace).await;

    let app = router(log.clone(), step.binary);
    let server = axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
    });
    tokio::select! {
        served = server => served.context("serving the page")?,
        exited = child.wait() => {
            let status = exited?;
            bail!("{} stopped ({status}); its output is above", step.binary);
        }
    }

    stop_step(step, &mut child).await?;
    println!("    its whole log, as JSON, is in {}", log.display());
    drop(own);
    Ok(())
}

/// A cluster: the learner's, if their kubeconfig names one that answers, or
/// a local control plane started for the page (returned, to be stopped).
async fn cluster() -> Result<(Client, Option<ControlPlane>)> {
    Ok(match existing_cluster().await {
        Some(client) => {
            println!("==> Using the cluster in your kubeconfig (KUBECONFIG or ~/.kube/config)");
            (client, None)
        }
        None => {
            println!(
                "==> No reachable cluster in your kubeconfig: starting the local control plane"
            );
            let cp = ControlPlane::start(Options::default()).await?;
            let client = cp.client().await?;
            (client, Some(cp))
        }
    })
}

/// Builds `step` and starts it with its JSON log in
/// `target/flow/step-N.log.jsonl` (emptied first), in a process group of
/// its own; the child and the log's path.
fn start_step(
    step: &Step,
    kubeconfig: Option<&Path>,
    namespace: Option<&str>,
) -> Result<(tokio::process::Child, PathBuf)> {
    let root = crate::workspace::repo_root();
    println!("==> Building {}", step.binary);
    let build = crate::workspace::cargo(&["build", "--bin", step.binary]);
    if !build
        .std()
        .status()
        .context("running cargo build")?
        .success()
    {
        bail!("{build} failed");
    }

    let log = root
        .join("target/flow")
        .join(format!("{}.log.jsonl", step.binary));
    std::fs::create_dir_all(log.parent().unwrap_or(&root))?;
    std::fs::write(&log, "").with_context(|| format!("emptying {}", log.display()))?;

    let mut command = tokio::process::Command::new(crate::workspace::debug_dir().join(step.binary));
    command
        .env(sample_controller::telemetry::JSON_LOG, &log)
        .stdin(Stdio::null())
        // Its own process group: Ctrl-C reaches this command only, which
        // then stops the step with SIGTERM and waits for it.
        .process_group(0)
        .kill_on_drop(true);
    if let Some(path) = kubeconfig {
        command.arg("--kubeconfig").arg(path);
    }
    if let Some(ns) = namespace {
        command.args(["--namespace", ns]);
    }
    let child = command
        .spawn()
        .with_context(|| format!("starting {}", step.binary))?;

    Ok((child, log))
}

/// Stops `step`'s `child` with SIGTERM, and kills it if it is still there
/// after 10 s.
async fn stop_step(step: &Step, child: &mut tokio::process::Child) -> Result<()> {
    println!("==> Stopping {}", step.binary);
    if let Some(pid) = child.id() {
        let _ = testcluster::signal(pid, libc::SIGTERM); // gone already: wait() says so
    }
    match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
        Ok(status) => println!("    {} exited: {}", step.binary, status?),
        Err(_) => {
            child.kill().await?;
            println!("    {} did not stop within 10 s: killed", step.binary);
        }
    }
    Ok(())
}

/// Prints what to paste into another terminal to act on the cluster.
async fn tell_how_to_act(kubeconfig: Option<&Path>, namespace: &Option<String>) {
    let ns = namespace
        .as_deref()
        .map(|ns| format!(" -n {ns}"))
        .unwrap_or_default();
    println!("==> In another terminal, act on the cluster and watch the page:");
    if let Some(path) = kubeconfig {
        println!("      export KUBECONFIG={}", path.display());
        if let Ok(kubectl) = Kubectl::ensure(Some(path)).await
            && let Some(dir) = kubectl.exe().parent()
        {
            println!("      export PATH={}:$PATH", dir.display());
        }
    }
    println!("      kubectl{ns} apply -f manifests/example-foo.yaml");
    println!(
        "      kubectl{ns} patch foo example-foo --type merge -p '{{\"spec\":{{\"replicas\":3}}}}'"
    );
    println!("      kubectl{ns} scale deployment example-foo --replicas 2");
    println!("      kubectl{ns} delete deployment example-foo");
    println!("    Ctrl-C here stops the step and the page.");
}

/// A client for the kubeconfig's cluster, if it answers within 5 seconds.
async fn existing_cluster() -> Option<Client> {
    let client = Client::try_default().await.ok()?;
    match tokio::time::timeout(Duration::from_secs(5), client.apiserver_version()).await {
        Ok(Ok(_)) => Some(client),
        _ => None,
    }
}

/// The page, its script and style, and `/events`: the flow of the JSON log
/// at `log`, from its first line, then as each new one is written.
pub fn router(log: PathBuf, title: &str) -> Router {
    let html = page(title);
    Router::new()
        .route("/", get(move || async move { Html(html) }))
        .route(
            "/flow.js",
            get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], FLOW_JS) }),
        )
        .route(
            "/flow.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css")], FLOW_CSS) }),
        )
        .route("/events", get(events))
        .with_state(Arc::new(log))
}

/// Server-sent events: one per line of the flow, read from the log as it
/// grows (each client reads it from the start, with a flow of its own).
async fn events(State(log): State<Arc<PathBuf>>) -> impl IntoResponse {
    let mut flow = crate::flow::Flow::default();
    let lines = follow(log.as_ref().clone())
        .flat_map(move |record| stream::iter(flow.read(&record)))
        .map(|line| Ok::<_, Infallible>(Event::default().data(Value::Object(line).to_string())));
    Sse::new(lines).keep_alive(KeepAlive::default())
}

/// The complete lines of the file at `path`, from its start, and then each
/// new one as it is appended (polled every 50 ms; a missing file is waited
/// for).
pub fn follow(path: PathBuf) -> impl Stream<Item = String> + Send {
    stream::unfold(
        (path, 0u64, String::new()),
        |(path, mut offset, mut partial)| async move {
            loop {
                let mut fresh = String::new();
                if let Ok(mut file) = std::fs::File::open(&path)
                    && file.seek(SeekFrom::Start(offset)).is_ok()
                    && let Ok(read) = file.read_to_string(&mut fresh)
                {
                    offset += read as u64;
                }
                partial.push_str(&fresh);
                if let Some(end) = partial.rfind('\n') {
                    let complete: Vec<String> =
                        partial[..end].lines().map(str::to_string).collect();
                    partial.drain(..=end);
                    return Some((stream::iter(complete), (path, offset, partial)));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        },
    )
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use devtools::Browser;

    #[test]
    fn the_steps_it_draws_are_the_registrys_steps_with_a_flow() {
        let first = crate::steps::drawn().next().unwrap().number;
        let last = crate::steps::drawn().last().unwrap().number;
        assert_eq!(first, 3, "the first step with a queue");
        let range = format!("step-{first} to step-{last}");
        assert_eq!(drawable(), range);
        assert!(about().contains(&format!("({range})")), "{}", about());
        assert_eq!(drawn_step(&format!("step-{last}")).unwrap().number, last);
        assert_eq!(drawn_step("3").unwrap().number, 3);
        let error = drawn_step("step-2").unwrap_err().to_string();
        assert!(
            error.contains("step-2 lists and caches but queues nothing"),
            "{error}"
        );
        assert!(error.ends_with(&format!("give {range}")), "{error}");
        let after_the_last = format!("step-{}", crate::steps::STEPS.len() + 1);
        for wrong in [after_the_last.as_str(), "nine", ""] {
            let error = drawn_step(wrong).unwrap_err().to_string();
            assert!(
                error.contains(&format!("is not a step: give {range}")),
                "{error}"
            );
        }
    }

    #[tokio::test]
    async fn follow_yields_every_complete_line_then_the_ones_appended_later() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let path = dir.join("trace.jsonl");
        std::fs::write(&path, "one\ntwo\nhalf").unwrap();
        let mut lines = Box::pin(follow(path.clone()));
        assert_eq!(lines.next().await.as_deref(), Some("one"));
        assert_eq!(lines.next().await.as_deref(), Some("two"));
        // The half line is not a line until its end is written.
        let waiting = tokio::time::timeout(Duration::from_millis(200), lines.next()).await;
        assert!(waiting.is_err(), "{waiting:?}");
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b" done\nthree\n").unwrap();
        assert_eq!(lines.next().await.as_deref(), Some("half done"));
        assert_eq!(lines.next().await.as_deref(), Some("three"));
    }

    /// Waits until the flow of the JSON log at `path` has a line with each `needle`.
    async fn traced(path: &Path, needles: &[&str]) {
        let started = std::time::Instant::now();
        loop {
            let log = std::fs::read_to_string(path).unwrap_or_default();
            let trace = crate::flow::from_log(&log);
            if trace
                .lines()
                .any(|line| needles.iter().all(|n| line.contains(n)))
            {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no line with {needles:?} in the flow:\n{trace}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Runs `f` on the browser away from the runtime (it blocks), which
    /// keeps serving the page meanwhile.
    async fn on<T: Send + 'static>(
        browser: Browser,
        f: impl FnOnce(&mut Browser) -> anyhow::Result<T> + Send + 'static,
    ) -> (Browser, T) {
        tokio::task::spawn_blocking(move || {
            let mut browser = browser;
            let value = f(&mut browser).unwrap_or_else(|e| panic!("{e:#}"));
            (browser, value)
        })
        .await
        .unwrap()
    }

    /// Clicks the element `selector` of `key` and returns the history the
    /// page then shows.
    fn history_of(b: &mut Browser, selector: &str, key: &str) -> anyhow::Result<String> {
        b.eval(&format!(
            "document.querySelector('{selector}[data-key=\"{key}\"]').click()"
        ))?;
        b.wait_for_text(&[format!("History of {key}")], Duration::from_secs(10))?;
        Ok(b.eval("document.querySelector('.flow-history').innerText")?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Asserts that `text` has each of `wanted`, in that order.
    fn in_order(text: &str, wanted: &[&str]) {
        let at: Vec<Option<usize>> = wanted.iter().map(|w| text.find(w)).collect();
        assert!(
            at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1]),
            "not {wanted:?} in this order:\n{text}"
        );
    }

    /// The live page, driven by headless Chromium against step 7 on a real
    /// control plane. The page is opened first; then a Foo is created, and
    /// the page shows it in every lane it passes through; clicking it shows
    /// its history; a Foo whose Deployment someone else owns shows its
    /// refusal and a backoff that grows. Screenshots in
    /// target/watch-screenshots/.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_live_page_draws_a_foo_flowing_and_a_refusal_backing_off() {
        use k8s_openapi::api::apps::v1::Deployment;
        use kube::api::{Api, PostParams};
        use sample_controller::{Foo, FooSpec};

        let root = crate::workspace::repo_root();
        let cp = testcluster::shared().await.unwrap();
        let client = cp.client().await.unwrap();
        testcluster::install_crd(&client, root.join("manifests/crd.yaml"))
            .await
            .unwrap();
        let ns = format!("watch-{}", std::process::id());
        testcluster::create_namespace(&client, &ns).await.unwrap();
        let build = crate::workspace::cargo(&["build", "--bin", "step-7"]);
        assert!(build.std().status().unwrap().success(), "{build}");

        let dir = root.join("target/watch-test");
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join(format!("step-7-{}.log.jsonl", std::process::id()));
        std::fs::write(&log, "").unwrap();
        let mut step = tokio::process::Command::new(crate::workspace::debug_dir().join("step-7"))
            .arg("--kubeconfig")
            .arg(cp.kubeconfig_path())
            .args(["--namespace", &ns])
            .env(sample_controller::telemetry::JSON_LOG, &log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let app = router(log.clone(), "step-7");
        let server = tokio::spawn(async move { axum::serve(listener, app).await });

        // The page is open before anything happens: what it shows arrives live.
        let browser = tokio::task::spawn_blocking(move || {
            let mut browser = Browser::start(1600, 1000)?;
            browser.open(&url)?;
            anyhow::Ok(browser)
        })
        .await
        .unwrap()
        .unwrap();

        let foos: Api<Foo> = Api::namespaced(client.clone(), &ns);
        let foo = |name: &str, deployment: &str| {
            let mut foo = Foo::new(
                name,
                FooSpec {
                    deployment_name: deployment.into(),
                    replicas: Some(1),
                },
            );
            foo.metadata.namespace = Some(ns.clone());
            foo
        };
        foos.create(&PostParams::default(), &foo("traced", "traced-nginx"))
            .await
            .unwrap();
        let key = format!("{ns}/traced");
        // A lane keeps its latest cards only, and a burst of status writes
        // pushes the Deployment's POST out of the requests' lane within
        // milliseconds: the page is caught once the Foo is synced, and its
        // history, which keeps everything, shows the way it took.
        let wanted = vec![
            format!("synced {key} in"),
            format!("Normal Synced on {key}"),
        ];
        let shots = root.join("target/watch-screenshots");
        let shot = shots.join("created.png");
        let (browser, _) = on(browser, move |b| {
            b.wait_for_text(&wanted, Duration::from_secs(60))?;
            b.screenshot(&shot)
        })
        .await;

        // A click on the Foo shows what happened to it, in order.
        let clicked = key.clone();
        let shot = shots.join("history.png");
        let (browser, history) = on(browser, move |b| {
            let history = history_of(b, ".flow-card", &clicked)?;
            b.screenshot(&shot)?;
            Ok(history)
        })
        .await;
        in_order(
            &history,
            &[
                "add Foo",
                "enqueue",
                "takes",
                "POST deployments",
                "PUT foos/status",
                "Normal Synced",
            ],
        );

        // A Deployment of that name made by someone else.
        let mut foreign = sample_controller::deployment::new_deployment(&foo("x", "taken"));
        foreign.metadata.owner_references = None;
        Api::<Deployment>::namespaced(client.clone(), &ns)
            .create(&PostParams::default(), &foreign)
            .await
            .unwrap();
        foos.create(&PostParams::default(), &foo("refused", "taken"))
            .await
            .unwrap();
        let refused = format!("{ns}/refused");
        let wanted = vec![
            format!("Deployment {ns}/taken ignored: no controller owner reference"),
            format!("Warning ErrResourceExists on {refused}"),
            format!("failed {refused} in"),
            "retry ".to_string(),
        ];
        let shot = shots.join("refused.png");
        let clicked = refused.clone();
        let (browser, history) = on(browser, move |b| {
            b.wait_for_text(&wanted, Duration::from_secs(60))?;
            b.screenshot(&shot)?;
            // Any of its cards (its chip in the queue comes and goes as
            // workers take it).
            history_of(b, ".flow-card", &clicked)
        })
        .await;
        // The backoff grows as Go's does: 5 ms, then twice as long each time.
        in_order(
            &history,
            &[
                &format!("requeue {refused} in 5 ms (failure 1)"),
                &format!("requeue {refused} in 10 ms (failure 2)"),
                &format!("requeue {refused} in 20 ms (failure 3)"),
            ],
        );
        traced(&log, &[&refused, "\"requeues\":3"]).await;
        assert!(
            browser.console.is_empty(),
            "the page's console: {:?}",
            browser.console
        );
        drop(browser);

        if let Some(pid) = step.id() {
            testcluster::signal(pid, libc::SIGTERM).unwrap();
        }
        assert!(step.wait().await.unwrap().success());
        server.abort();
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
        let _ = namespaces.delete(&ns, &Default::default()).await;
        let _ = std::fs::remove_file(&log);
    }
}
