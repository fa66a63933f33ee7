//! Headless Chromium driven over the DevTools protocol, for pages that never
//! finish loading (the live page of `cargo xtask watch`, fed by server-sent
//! events): `--dump-dom` takes the DOM at the load event, before the first
//! event arrives, and `--virtual-time-budget` waits forever on the open
//! connection. Here a test opens the page, waits until its text shows what
//! it expects, clicks, and reads the console.
//!
//! The protocol runs over `--remote-debugging-pipe`: Chromium reads commands
//! on its file descriptor 3 and writes answers and events on 4, each a JSON
//! object ended by a NUL byte. No WebSocket, no port.
//!
//! Written by hand, in about 250 lines, because the few commands it sends
//! (navigate, evaluate, screenshot, console) do not pay for a DevTools
//! crate: `chromiumoxide` 0.7 with its tokio runtime alone brings 53 crates
//! the course does not build otherwise (`cargo tree`), one of them
//! `chromiumoxide_cdp`, 99k lines of generated protocol types, the size of
//! k8s-openapi (122k lines), which is the slowest crate of a step's first
//! build (book: Performance, "The first build").

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use serde_json::{Value, json};

/// A headless Chromium with one page.
pub struct Browser {
    child: Child,
    commands: File,
    messages: mpsc::Receiver<Value>,
    session: String,
    next_id: u64,
    /// Chromium's profile, removed when the browser is dropped (after it stops).
    _profile: tempfile::TempDir,
    /// Console messages and uncaught exceptions of the page so far.
    pub console: Vec<String>,
}

/// A pipe: (read end, write end), both close-on-exec.
fn pipe() -> Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    let done = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    ensure!(done == 0, "pipe2: {}", std::io::Error::last_os_error());
    Ok((fds[0], fds[1]))
}

impl Browser {
    /// Starts Chromium and opens a page of `width`×`height`, blank.
    pub fn start(width: u32, height: u32) -> Result<Browser> {
        let chromium = crate::programs::chromium().context("chromium is not installed")?;
        let profile = tempfile::Builder::new()
            .prefix("devtools-")
            .tempdir()
            .context("creating Chromium's profile directory")?;
        let (their_in, our_out) = pipe()?;
        let (our_in, their_out) = pipe()?;
        let mut command = Command::new(chromium);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only dup2 runs, which is
        // async-signal-safe; it gives the child our pipe ends as 3 and 4.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(their_in, 3) < 0 || libc::dup2(their_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().context("starting chromium")?;
        // SAFETY: each descriptor is ours, open, and owned by one File only.
        let (commands, answers) = unsafe {
            libc::close(their_in);
            libc::close(their_out);
            (File::from_raw_fd(our_out), File::from_raw_fd(our_in))
        };
        let messages = read_messages(answers);
        let mut browser = Browser {
            child,
            commands,
            messages,
            session: String::new(),
            next_id: 0,
            _profile: profile,
            console: Vec::new(),
        };
        browser.attach()?;
        Ok(browser)
    }

    /// Opens a page target and attaches a session to it, with its runtime
    /// (the console) and page events on.
    fn attach(&mut self) -> Result<()> {
        let target = self.call("Target.createTarget", json!({"url": "about:blank"}))?;
        let target = target["targetId"]
            .as_str()
            .context("no targetId")?
            .to_string();
        let attached = self.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )?;
        self.session = attached["sessionId"]
            .as_str()
            .context("no sessionId")?
            .to_string();
        self.call("Runtime.enable", json!({}))?;
        self.call("Page.enable", json!({}))?;
        Ok(())
    }

    /// Sends a command (to the page once attached) and returns its result.
    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message)?;
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .with_context(|| format!("sending {method} to chromium"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .messages
                .recv_timeout(left)
                .with_context(|| format!("chromium did not answer {method}"))?;
            if message["id"] == json!(id) {
                if let Some(error) = message.get("error") {
                    bail!("{method}: {error}");
                }
                return Ok(message["result"].clone());
            }
            self.note(&message);
        }
    }

    /// Keeps what the page's console said.
    fn note(&mut self, message: &Value) {
        match message["method"].as_str() {
            Some("Runtime.consoleAPICalled") => {
                let args: Vec<String> = message["params"]["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| a["value"].to_string())
                    .collect();
                self.console.push(args.join(" "));
            }
            Some("Runtime.exceptionThrown") => {
                let details = &message["params"]["exceptionDetails"];
                self.console.push(format!(
                    "uncaught: {}",
                    details["exception"]["description"]
                        .as_str()
                        .or(details["text"].as_str())
                        .unwrap_or_default()
                ));
            }
            _ => {}
        }
    }

    /// Opens `url` in the page.
    pub fn open(&mut self, url: &str) -> Result<()> {
        let navigated = self.call("Page.navigate", json!({"url": url}))?;
        if let Some(error) = navigated["errorText"].as_str() {
            bail!("opening {url}: {error}");
        }
        Ok(())
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expression: &str) -> Result<Value> {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        )?;
        if let Some(exception) = result.get("exceptionDetails") {
            bail!("{expression}: {exception}");
        }
        Ok(result["result"]["value"].clone())
    }

    /// The text the page shows (`document.body.innerText`).
    pub fn text(&mut self) -> Result<String> {
        Ok(self
            .eval("document.body ? document.body.innerText : ''")?
            .as_str()
            .unwrap_or_default()
            .to_string())
    }

    /// Waits until the page's text contains every one of `wanted`.
    pub fn wait_for_text(&mut self, wanted: &[String], within: Duration) -> Result<String> {
        let deadline = Instant::now() + within;
        loop {
            let text = self.text()?;
            let missing: Vec<&String> = wanted.iter().filter(|w| !text.contains(*w)).collect();
            if missing.is_empty() {
                return Ok(text);
            }
            if Instant::now() > deadline {
                bail!("after {within:?} the page does not show {missing:?}; it shows:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Writes a PNG of the page to `path`.
    pub fn screenshot(&mut self, path: &std::path::Path) -> Result<()> {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}))?;
        let data = shot["data"].as_str().context("no screenshot data")?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // DevTools sends the PNG as standard base64.
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .context("the screenshot is not base64")?;
        std::fs::write(path, png)?;
        Ok(())
    }
}

impl Drop for Browser {
    /// Asks Chromium to quit, so that it removes what it keeps outside its
    /// profile (a `/tmp/org.chromium.Chromium.*` folder holding its singleton
    /// socket, which a killed Chromium leaves behind), and kills it only if it
    /// has not gone within five seconds.
    fn drop(&mut self) {
        self.session.clear();
        let _ = self.call("Browser.close", json!({}));
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The messages Chromium writes on `answers`, each a JSON object ended by
/// a NUL byte, read by a thread of their own as they come.
fn read_messages(answers: File) -> mpsc::Receiver<Value> {
    let (tx, messages) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(answers);
        let mut buf = Vec::new();
        while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
            buf.pop();
            if let Ok(message) = serde_json::from_slice::<Value>(&buf)
                && tx.send(message).is_err()
            {
                break;
            }
            buf.clear();
        }
    });
    messages
}
