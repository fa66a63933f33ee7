//! A fault-injecting HTTP proxy in front of the real API server.
//!
//! The controller under test gets a kubeconfig pointing at the proxy
//! (plain HTTP on 127.0.0.1); the proxy forwards every request, watches
//! included, through an admin `kube::Client` to the real kube-apiserver,
//! except where the rule says to delay it or to answer it itself.
//! It lets a test or a check place a fault at an exact request (the first
//! status write, say) instead of hoping to hit a race, hold one watch behind
//! the others ([`Action::Lag`]), or end every watch the way the API server
//! ends one it can no longer serve ([`Action::Expire`]).
//!
//! The fault suite (`tests/faults/`) and step 8's check
//! ([`crate::checks`]) both use it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use anyhow::{Context as _, Result};

/// What the proxy does with one request.
pub enum Action {
    /// Pass it to the API server.
    Forward,
    /// Wait, then pass it on.
    Delay(Duration),
    /// Pass it on, and the response too, but every byte of the response
    /// arrives this much later than the API server sent it: a watch that
    /// lags behind the others, as one does while it lists again or when its
    /// connection is slow. Order is kept.
    Lag(Duration),
    /// Answer it with this status code and `metav1.Status` body; the API server never sees it.
    Reply(StatusCode, serde_json::Value),
    /// Pass a watch on, then end it as the API server ends a watch whose
    /// resourceVersion its watch cache no longer holds: an `ERROR` event
    /// whose object is a `metav1.Status` of code 410 (`Expired`, "too old
    /// resource version"), then the end of the response. The client must
    /// list again. It ends after `events` events (bookmarks not counted) or
    /// after `after`, whichever comes first, both counted from the end of
    /// the initial events of a streaming list (`sendInitialEvents=true`), so
    /// that every list still arrives whole.
    Expire { events: usize, after: Duration },
}

/// Decides per request, from its method and path-and-query.
pub type Rule = Arc<dyn Fn(&http::Method, &str) -> Action + Send + Sync>;

/// A running proxy; stops when dropped.
pub struct Proxy {
    /// A kubeconfig whose server is the proxy.
    pub kubeconfig: PathBuf,
    /// How many watches [`Action::Expire`] has ended so far.
    pub expired: Arc<AtomicU32>,
    /// How many chunks of lagging responses ([`Action::Lag`]) have arrived
    /// from the API server and not yet been passed on.
    held: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Waits, at most `within`, until every lagging response has passed on
    /// all the API server sent so far: the program has seen every change
    /// made before the call. Whether it got there in time.
    pub async fn caught_up(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while self.held.load(Ordering::SeqCst) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        true
    }
}

/// What every request handler shares.
#[derive(Clone)]
struct Shared {
    upstream: kube::Client,
    rule: Rule,
    expired: Arc<AtomicU32>,
    held: Arc<AtomicUsize>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

/// A `metav1.Status` body as the API server writes it.
pub fn status(code: u16, reason: &str, message: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    })
}

/// Starts a proxy to `upstream` on a free loopback port, writing its
/// kubeconfig into `dir` as `kubeconfig-proxy-{name}` (removed when the
/// proxy is dropped).
pub async fn start(upstream: kube::Client, dir: &Path, name: &str, rule: Rule) -> Result<Proxy> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the proxy to a port of 127.0.0.1")?;
    let port = listener.local_addr().context("the proxy's address")?.port();
    let kubeconfig = dir.join(format!("kubeconfig-proxy-{name}"));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\n\
             clusters: [{{name: proxy, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n\
             users: [{{name: proxy, user: {{}}}}]\n\
             contexts: [{{name: proxy, context: {{cluster: proxy, user: proxy}}}}]\n\
             current-context: proxy\n"
        ),
    )
    .with_context(|| format!("writing {}", kubeconfig.display()))?;
    let expired = Arc::new(AtomicU32::new(0));
    let held = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().fallback(forward).with_state(Shared {
        upstream,
        rule,
        expired: expired.clone(),
        held: held.clone(),
    });
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Proxy {
        kubeconfig,
        expired,
        held,
        task,
    })
}

/// Hop-by-hop headers, and the ones the upstream client sets itself.
const SKIP: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "authorization",
];

async fn forward(State(shared): State<Shared>, req: Request) -> Response {
    let Shared {
        upstream,
        rule,
        expired,
        held,
    } = shared;
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let mut expire = None;
    let mut lag = None;
    match rule(&parts.method, &target) {
        Action::Forward => {}
        Action::Delay(period) => tokio::time::sleep(period).await,
        Action::Lag(period) => lag = Some(period),
        Action::Reply(code, body) => {
            let json = [(http::header::CONTENT_TYPE, "application/json")];
            return (code, json, body.to_string()).into_response();
        }
        Action::Expire { events, after } => {
            let listing = target.contains("sendInitialEvents=true");
            expire = Some(Expiry {
                listing,
                left: events,
                after,
                expired,
            });
        }
    }
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(err) => return (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    };
    let mut request = http::Request::builder()
        .method(parts.method.clone())
        .uri(&target);
    for (name, value) in &parts.headers {
        if !SKIP.contains(&name.as_str()) {
            request = request.header(name, value);
        }
    }
    let request = match request.body(kube::client::Body::from(body.to_vec())) {
        Ok(request) => request,
        Err(err) => return (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    };
    match upstream.send(request).await {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            let body = match (expire, lag) {
                (Some(expiry), _) if parts.status.is_success() => expiry.apply(Body::new(body)),
                (_, Some(period)) => lagging(Body::new(body), period, held),
                _ => Body::new(body),
            };
            let mut out = Response::new(body);
            *out.status_mut() = parts.status;
            for (name, value) in &parts.headers {
                if !SKIP.contains(&name.as_str()) {
                    out.headers_mut().append(name.clone(), value.clone());
                }
            }
            out
        }
        Err(err) => (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
    }
}

/// `body`, each chunk of it passed on `period` after it arrived, in order
/// ([`Action::Lag`]). A task reads the API server's response as it comes,
/// so that the lag does not grow; it ends when the client hangs up.
fn lagging(body: Body, period: Duration, held: Arc<AtomicUsize>) -> Body {
    use futures::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut upstream = body.into_data_stream();
    let arrived = held.clone();
    tokio::spawn(async move {
        while let Some(chunk) = upstream.next().await {
            let due = tokio::time::Instant::now() + period;
            arrived.fetch_add(1, Ordering::SeqCst);
            if tx.send((due, chunk)).is_err() {
                arrived.fetch_sub(1, Ordering::SeqCst);
                break;
            }
        }
    });
    Body::from_stream(futures::stream::unfold(
        (rx, held),
        |(mut rx, held)| async move {
            let (due, chunk) = rx.recv().await?;
            tokio::time::sleep_until(due).await;
            held.fetch_sub(1, Ordering::SeqCst);
            Some((chunk, (rx, held)))
        },
    ))
}

/// How [`Action::Expire`] ends one watch.
struct Expiry {
    /// Still in the initial events of a streaming list.
    listing: bool,
    /// Events to pass on before the end.
    left: usize,
    after: Duration,
    expired: Arc<AtomicU32>,
}

/// A watch response being passed on, event (line) by event.
struct Passing {
    upstream: axum::body::BodyDataStream,
    /// Bytes of an event not yet complete.
    partial: Vec<u8>,
    expiry: Expiry,
    /// When the watch ends, once its initial events are through.
    deadline: Option<tokio::time::Instant>,
    done: bool,
}

impl Expiry {
    /// `body`, a watch response, ended as this expiry says.
    fn apply(self, body: Body) -> Body {
        let deadline = (!self.listing).then(|| tokio::time::Instant::now() + self.after);
        let passing = Passing {
            upstream: body.into_data_stream(),
            partial: Vec::new(),
            expiry: self,
            deadline,
            done: false,
        };
        Body::from_stream(futures::stream::unfold(passing, Passing::next))
    }
}

impl Passing {
    /// The next bytes to send, or `None` once the response is over.
    async fn next(mut self) -> Option<(Result<Bytes, axum::Error>, Passing)> {
        use futures::StreamExt;
        if self.done {
            return None;
        }
        let expired = async {
            match self.deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let chunk = tokio::select! {
            chunk = self.upstream.next() => chunk,
            () = expired => return Some((Ok(self.end()), self)),
        };
        match chunk {
            Some(Ok(bytes)) => {
                self.partial.extend_from_slice(&bytes);
                let mut out = Vec::new();
                while let Some(newline) = self.partial.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = self.partial.drain(..=newline).collect();
                    self.count(&line);
                    out.extend_from_slice(&line);
                    if !self.expiry.listing && self.expiry.left == 0 {
                        out.extend_from_slice(&self.end());
                        break;
                    }
                }
                Some((Ok(Bytes::from(out)), self))
            }
            Some(Err(err)) => {
                self.done = true;
                Some((Err(err), self))
            }
            None => {
                self.done = true;
                Some((Ok(Bytes::from(std::mem::take(&mut self.partial))), self))
            }
        }
    }

    /// Counts one event passed on.
    fn count(&mut self, line: &[u8]) {
        let event: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
        let bookmark = event["type"] == "BOOKMARK";
        if self.expiry.listing {
            let initial_end = bookmark
                && event["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"]
                    == "true";
            if initial_end {
                self.expiry.listing = false;
                self.deadline = Some(tokio::time::Instant::now() + self.expiry.after);
            }
        } else if !bookmark {
            self.expiry.left = self.expiry.left.saturating_sub(1);
        }
    }

    /// The 410 `ERROR` event that ends the watch.
    fn end(&mut self) -> Bytes {
        self.done = true;
        self.expiry.expired.fetch_add(1, Ordering::SeqCst);
        let gone = status(
            410,
            "Expired",
            "too old resource version (the watch was ended by the test's fault proxy)",
        );
        let event = serde_json::json!({"type": "ERROR", "object": gone});
        Bytes::from(format!("{event}\n"))
    }
}
