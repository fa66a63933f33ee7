//! main.go's pieces, in Rust: the flags and the kubeconfig, one client for
//! every type, the shutdown signal, and the logs' spans.

use super::*;

// Cheat sheet: `klog.InitFlags(nil)`
// Cheat sheet: `clientcmd.BuildConfigFromFlags(master, kubeconfig)`
#[tokio::test]
async fn flags_parse_with_clap_and_master_overrides_the_kubeconfigs_server() {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        client: ClientFlags,
    }
    let (cp, admin) = (cluster().await, api_server().await);
    let kubeconfig = cp.kubeconfig_path().to_path_buf();
    let cli = Cli::try_parse_from([
        "step-1",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--master",
        "https://127.0.0.1:1",
    ])
    .unwrap();
    let config = config_from_flags(&cli.client).await.unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:1/");
    // Without --master, the kubeconfig's server: the API server above.
    let flags = ClientFlags {
        kubeconfig: Some(kubeconfig.clone()),
        master: None,
    };
    let config = config_from_flags(&flags).await.unwrap();
    let client = Client::try_from(config).unwrap();
    assert_eq!(
        client.apiserver_version().await.unwrap().git_version,
        admin.apiserver_version().await.unwrap().git_version
    );
    // A bad flag is an error naming it, as Go's flag package does.
    let err = config_from_flags(&ClientFlags {
        kubeconfig: Some(kubeconfig),
        master: Some("not a url".into()),
    })
    .await
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("--master \"not a url\""),
        "{err:#}"
    );
    assert!(Cli::try_parse_from(["step-1", "--kubeconfig"]).is_err());
    // RUST_LOG's directives instead of -v: what the steps' subscriber reads.
    assert!(tracing_subscriber::EnvFilter::try_new("info,sample_controller=debug").is_ok());
}

// Cheat sheet: `kubernetes.NewForConfig(cfg)`
// Cheat sheet: `factory.Apps().V1().Deployments()`
// Cheat sheet: `klog.FlushAndExit(klog.ExitFlushTimeout, 1)`
#[tokio::test]
async fn one_client_serves_every_type_and_an_error_from_main_exits_1() {
    let client = &api_server().await;
    let ns = support::namespace(client, "cheat-client").await;
    stored_foo(client, &ns, "a").await;
    let foos = Api::<Foo>::namespaced(client.clone(), &ns);
    let deployments = Api::<Deployment>::all(client.clone());
    assert_eq!(
        foos.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    deployments.list(&ListParams::default()).await.unwrap();
    // `main` returns the error: Rust prints it and exits with status 1.
    let output = std::process::Command::new(support::step_binary("step-1"))
        .args(["--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Error: cannot read the kubeconfig /nonexistent/kubeconfig"),
        "{stderr}"
    );
}

// Cheat sheet: `signals.SetupSignalHandler()`
// Cheat sheet: `defer c.workqueue.ShutDown()`
#[tokio::test]
async fn the_first_sigterm_completes_the_shutdown_future_and_ends_the_queue() {
    let shutdown = sample_controller::signals::setup_signal_handler().unwrap();
    let (tx, rx) = futures::channel::mpsc::unbounded::<u32>();
    let queue = rx.take_until(shutdown.clone());
    tx.unbounded_send(1).unwrap();
    // SAFETY: kill(2) with this process's own PID and a signal it handles.
    assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGTERM) }, 0);
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .expect("the shutdown future completes on SIGTERM");
    // Keys sent before the signal may come out; after it the queue ends
    // although its sender is still open.
    let rest: Vec<u32> = tokio::time::timeout(Duration::from_secs(5), queue.collect())
        .await
        .expect("the queue ends at shutdown");
    assert!(rest.len() <= 1, "{rest:?}");
    drop(tx);
}

/// Log lines written to memory, for the logging rows.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// Cheat sheet: `klog.FromContext(ctx)`
// Cheat sheet: `klog.LoggerWithValues(logger, "objectRef", ref)`
// Cheat sheet: `utilruntime.HandleErrorWithContext(ctx, err, msg, kv...)`
#[test]
fn a_spans_fields_are_on_every_line_logged_inside_it_errors_included() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("sync", objectRef = "default/a");
        let _in = span.enter();
        tracing::info!(deployment = "a-nginx", "Creating deployment");
        let err = std::io::Error::other("boom");
        tracing::error!(error = %err, "Error syncing; requeuing for later retry");
    });
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("INFO sync{objectRef=\"default/a\"}: ")
            && lines[0].ends_with("Creating deployment deployment=\"a-nginx\""),
        "{text}"
    );
    assert!(
        lines[1].contains("ERROR sync{objectRef=\"default/a\"}: ")
            && lines[1].ends_with("Error syncing; requeuing for later retry error=boom"),
        "{text}"
    );
}
