//! A fault-injecting HTTP proxy in front of the real API server.
//!
//! The controller under test gets a kubeconfig pointing at the proxy
//! (plain HTTP on 127.0.0.1); the proxy forwards every request, watches
//! included, through an admin `kube::Client` to the real kube-apiserver,
//! except where the test's rule says to delay it or to answer it itself.
//! It lets a test place a fault at an exact request (the first status write,
//! say) instead of hoping to hit a race.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// What the proxy does with one request.
pub enum Action {
    /// Pass it to the API server.
    Forward,
    /// Wait, then pass it on.
    Delay(Duration),
    /// Answer it with this status code and `metav1.Status` body; the API server never sees it.
    Reply(StatusCode, serde_json::Value),
}

/// Decides per request, from its method and path-and-query.
pub type Rule = Arc<dyn Fn(&http::Method, &str) -> Action + Send + Sync>;

/// A running proxy; stops when dropped.
pub struct Proxy {
    /// A kubeconfig whose server is the proxy.
    pub kubeconfig: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
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
/// kubeconfig into `dir` as `name`.
pub async fn start(upstream: kube::Client, dir: &Path, name: &str, rule: Rule) -> Proxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind proxy");
    let port = listener.local_addr().expect("proxy address").port();
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
    .expect("write proxy kubeconfig");
    let app = axum::Router::new()
        .fallback(forward)
        .with_state((upstream, rule));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Proxy { kubeconfig, task }
}

/// Hop-by-hop headers, and the ones the upstream client sets itself.
const SKIP: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "authorization",
];

async fn forward(State((upstream, rule)): State<(kube::Client, Rule)>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    match rule(&parts.method, &target) {
        Action::Forward => {}
        Action::Delay(period) => tokio::time::sleep(period).await,
        Action::Reply(code, body) => {
            let json = [(http::header::CONTENT_TYPE, "application/json")];
            return (code, json, body.to_string()).into_response();
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
    let request = request
        .body(kube::client::Body::from(body.to_vec()))
        .expect("request");
    match upstream.send(request).await {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            let mut out = Response::new(Body::new(body));
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
