//! What `cargo xtask bench`, `heap-profile`, `first-build` and the book's
//! scenarios share: starting a controller and waiting for its workers,
//! creating Foos and waiting for them to converge, counting the API
//! server's requests, reading a process's memory and CPU time from /proc,
//! and the median of a few runs.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use sample_controller::{Foo, FooSpec};

/// Starts a controller with its output in `log`, and waits until its workers run.
pub async fn start(exe: &Path, args: &[String], log: &Path) -> Result<tokio::process::Child> {
    start_in(exe, args, log, None, &[]).await
}

/// [`start`] in the working directory `cwd` (else this process's), with
/// the environment variables `env` besides this process's.
pub(crate) async fn start_in(
    exe: &Path,
    args: &[String],
    log: &Path,
    cwd: Option<&Path>,
    env: &[(&str, &Path)],
) -> Result<tokio::process::Child> {
    let file = std::fs::File::create(log)?;
    let mut command = tokio::process::Command::new(exe);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    command.envs(env.iter().copied());
    // Stopped by PID below; killed by the kernel if this process dies first.
    testcluster::die_with_parent(command.as_std_mut());
    let child = command
        .args(args)
        .env("RUST_LOG", "info") // Go logs every sync at its default level too
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // Both controllers log this once their caches are synced.
        if std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains("Starting workers")
        {
            return Ok(child);
        }
        if Instant::now() > deadline {
            bail!(
                "{} did not start within 60s; log: {}",
                exe.display(),
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates `n` Foos in `ns`, 50 requests in flight.
pub(crate) async fn create_foos(client: &Client, ns: &str, n: usize) -> Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let results: Vec<_> = stream::iter(0..n)
        .map(|i| {
            let foos = foos.clone();
            async move {
                let name = format!("foo-{i:04}");
                let foo = Foo::new(
                    &name,
                    FooSpec {
                        deployment_name: name.clone(),
                        replicas: Some(1),
                    },
                );
                foos.create(&PostParams::default(), &foo).await
            }
        })
        .buffer_unordered(50)
        .collect()
        .await;
    for r in results {
        r?;
    }
    Ok(())
}

/// Waits until `n` Deployments exist and all `n` Foos have a status, for at
/// most `limit`; returns `Some("x/n Deployments, y/n statuses")` if that did
/// not happen.
pub(crate) async fn wait_converged(
    client: &Client,
    ns: &str,
    n: usize,
    limit: Duration,
) -> Result<Option<String>> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + limit;
    loop {
        let with_status = foos
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|f| f.status.is_some())
            .count();
        let existing = deployments
            .list_metadata(&ListParams::default())
            .await?
            .items
            .len();
        if with_status == n && existing == n {
            return Ok(None);
        }
        if Instant::now() > deadline {
            return Ok(Some(format!(
                "{existing}/{n} Deployments, {with_status}/{n} statuses"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until every Foo reports as available what it asked for; returns when.
pub(crate) async fn wait_settled(client: &Client, ns: &str) -> Result<Instant> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = foos.list(&ListParams::default()).await?.items;
        let settled = list
            .iter()
            .all(|f| f.status.as_ref().map(|s| s.available_replicas) == f.spec.replicas);
        if settled {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!("{ns}: Foo statuses did not settle within 30 minutes");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `apiserver_request_total` summed by `VERB resource[/subresource]`, for the
/// resources a sample controller touches.
pub async fn request_counts(client: &Client) -> Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let mut counts = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let Some((labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(&format!("{name}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or("")
                .to_string()
        };
        let resource = label("resource");
        if !["foos", "deployments", "events"].contains(&resource.as_str()) {
            continue;
        }
        let subresource = label("subresource");
        let key = match subresource.as_str() {
            "" => format!("{} {resource}", label("verb")),
            sub => format!("{} {resource}/{sub}", label("verb")),
        };
        *counts.entry(key).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
    }
    Ok(counts)
}

/// What `after` counts beyond `before`, leaving out what did not grow.
pub fn diff(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

/// A memory figure of a process from `/proc/<pid>/status`, in KiB: `VmHWM`
/// (peak resident set size), `RssAnon`, `RssFile`.
pub(crate) fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU time a process has used so far, user and system, in seconds.
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    testcluster::ProcStat::of(pid)?.cpu_seconds()
}

/// The median of `values` (sorted in place; the mean of the middle two for
/// an even count), `None` if there are none.
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// Median, minimum and maximum of `values`.
pub(crate) fn spread(mut values: Vec<f64>) -> Option<(f64, f64, f64)> {
    let mid = median(&mut values)?;
    Some((mid, values[0], values[values.len() - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_time_of_a_process_grows_as_it_works() {
        let pid = std::process::id();
        let before = cpu_seconds(pid).expect("this process's CPU time");
        let (started, mut after, mut x) = (Instant::now(), before, 1u64);
        // Work until the reading has grown by 0.1 s, however busy the
        // machine is (a reading that never grows fails after 10 s).
        while after - before < 0.1 && started.elapsed() < Duration::from_secs(10) {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            after = cpu_seconds(pid).expect("this process's CPU time");
        }
        assert!(after - before >= 0.1, "{before} s, then {after} s");
        assert_eq!(cpu_seconds(u32::MAX), None, "no such process");
    }
}
