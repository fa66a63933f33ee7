//! Leader election over a `coordination.k8s.io/v1` Lease, so that two or more
//! replicas of step 8 can run and exactly one of them reconciles.
//!
//! Not in Go's sample-controller (it runs one replica). The Go equivalent is
//! client-go's `tools/leaderelection` with a `LeaseLock`, as
//! kube-controller-manager uses; here the Lease is held by
//! [`kube_lease_manager`], which takes it with server-side apply and renews
//! it with patches.
//!
//! The life of a replica: stand by until it holds the Lease, then start the
//! informers and workers; if it ever loses the Lease, exit (a Pod restarts and
//! stands by again, like client-go's `OnStoppedLeading` in most controllers);
//! on SIGTERM, finish the syncs in flight and release the Lease.
//!
//! The settings are client-go's, as kube-controller-manager's flags name
//! them (`LeaderFlags`); kube-lease-manager counts in whole seconds and calls
//! its renewal point a grace, so they are translated:
//!
//! - the leader renews every `--leader-elect-retry-period`, as client-go's
//!   does: the grace (how long before expiry it renews) is the lease
//!   duration minus the retry period, rounded up to whole seconds;
//! - kube-lease-manager's standby does not watch the Lease: it sleeps until
//!   the expiry it last read. Alone, that makes a standby wait up to a whole
//!   lease duration after the leader released the Lease. So a standby here
//!   also reads the Lease every retry period, and when it sees the Lease
//!   free, starts a new manager, which takes it at once;
//! - nor does the crate have client-go's `RenewDeadline`: a leader that
//!   cannot renew would keep leading in its own view. So a leader here also
//!   reads the Lease, and stops once the last renewal it can confirm is older
//!   than `--leader-elect-renew-deadline`, before a standby may take the
//!   Lease at `--leader-elect-lease-duration`.

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::SignedDuration;
use k8s_openapi::jiff::fmt::friendly::{Designator, FractionalUnit, Spacing, SpanPrinter};
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::probes::Probes;
use sample_controller::signals::Shutdown;

// ANCHOR: flags
/// Leader election settings: kube-controller-manager's flags, with their
/// names, meanings, defaults and Go's duration syntax (`15s`, `1m30s`,
/// `1.5h`, `300ms`), so that a manifest written for a Go controller runs
/// this one; only the Lease's name and namespace default to this
/// controller's own. Not in kube-controller-manager: `--leader-elect-identity`,
/// and reading `POD_NAMESPACE` and `POD_NAME` from the environment.
#[derive(clap::Args, Debug, Clone)]
pub struct LeaderFlags {
    /// Run for leader through a Lease; only the leader reconciles. Use it when
    /// running more than one replica.
    #[arg(long)]
    pub leader_elect: bool,

    /// How long a standby waits after the last renewal it saw before it
    /// takes the Lease: the longest a dead leader goes unreplaced. Whole
    /// seconds (a Lease stores its duration in seconds).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = go_duration)]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps leading without a renewal it can confirm;
    /// then it stops, before a standby may take the Lease. Shorter than the
    /// lease duration.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = go_duration)]
    pub leader_elect_renew_deadline: Duration,

    /// How often the leader renews the Lease and a standby reads it (to
    /// take it as soon as the leader releases it).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = go_duration)]
    pub leader_elect_retry_period: Duration,

    /// The kind of object that holds the lock: `leases`, the only kind
    /// client-go still supports.
    #[arg(long, value_name = "LOCK", default_value = "leases", value_parser = resource_lock)]
    pub leader_elect_resource_lock: String,

    /// Name of the Lease.
    #[arg(long, value_name = "NAME", default_value = "sample-controller")]
    pub leader_elect_resource_name: String,

    /// Namespace of the Lease (in a Pod, set POD_NAMESPACE from the downward
    /// API; reading it is not in kube-controller-manager).
    #[arg(
        long,
        value_name = "NS",
        env = "POD_NAMESPACE",
        default_value = "default"
    )]
    pub leader_elect_resource_namespace: String,

    /// This replica's name in the Lease (in a Pod, set POD_NAME from the
    /// downward API). Default: host name and process ID. Not in
    /// kube-controller-manager, which names itself host name and a UUID.
    #[arg(long, value_name = "ID", env = "POD_NAME")]
    pub leader_elect_identity: Option<String>,
}
// ANCHOR_END: flags

/// A flag's duration, in Go's syntax: jiff's "friendly" format reads every
/// duration Go's `time.Duration` prints (`15s`, `1m30s`, `1.5h`, `300ms`).
fn go_duration(text: &str) -> Result<Duration, String> {
    let parsed: SignedDuration = text.parse().map_err(|_| {
        "not a duration; write it as Go does, e.g. 15s, 1m30s, 1.5h, 300ms".to_string()
    })?;
    if !parsed.is_positive() {
        return Err("must be longer than zero".into());
    }
    Duration::try_from(parsed).map_err(|err| err.to_string())
}

/// The lock kind: a Lease, which kube-lease-manager holds.
fn resource_lock(text: &str) -> Result<String, String> {
    match text {
        "leases" => Ok(text.into()),
        "endpoints" | "configmaps" | "endpointsleases" | "configmapsleases" => Err(format!(
            "client-go removed the `{text}` lock, and step 8 has none either: \
             use `leases` (a coordination.k8s.io/v1 Lease)"
        )),
        _ => Err(
            "not a lock kind: step 8 locks with a coordination.k8s.io/v1 Lease, `leases`".into(),
        ),
    }
}

/// client-go's `JitterFactor`: a standby's reads and a leader's renewals come
/// up to 1.2 retry periods apart.
const JITTER_FACTOR: f64 = 1.2;

impl LeaderFlags {
    /// Checks the flags against each other, as client-go's
    /// `NewLeaderElector` checks its settings, so that a bad combination is
    /// refused before anything starts, naming the flags and the rule.
    pub fn check(&self) -> Result<(), clap::Error> {
        let refuse = |message: String| {
            Err(clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                message,
            ))
        };
        let lease = self.leader_elect_lease_duration;
        let deadline = self.leader_elect_renew_deadline;
        if lease.subsec_nanos() != 0 {
            return refuse(format!(
                "--leader-elect-lease-duration={}: a Lease holds its duration in whole seconds \
                 (spec.leaseDurationSeconds); give a whole number of seconds, such as {}s",
                shown(lease),
                lease.as_secs().max(1)
            ));
        }
        if deadline >= lease {
            return refuse(format!(
                "--leader-elect-renew-deadline={} must be shorter than \
                 --leader-elect-lease-duration={}: a leader that cannot renew must stop \
                 before a standby may take the Lease",
                shown(deadline),
                shown(lease)
            ));
        }
        let period = self.leader_elect_retry_period;
        let renewals = self.renewal_interval();
        if deadline.as_secs_f64() <= JITTER_FACTOR * renewals.as_secs_f64() {
            let rounded = if renewals == period {
                String::new()
            } else {
                format!(
                    ", {} rounded up to the whole seconds the Lease is renewed in",
                    shown(period)
                )
            };
            return refuse(format!(
                "--leader-elect-renew-deadline={} must be longer than {JITTER_FACTOR} × \
                 --leader-elect-retry-period ({}{rounded}): otherwise one late renewal stops \
                 a healthy leader",
                shown(deadline),
                shown(renewals),
            ));
        }
        Ok(())
    }

    /// How often the leader renews: every retry period, as client-go's does,
    /// rounded up to the whole seconds kube-lease-manager counts in.
    fn renewal_interval(&self) -> Duration {
        let period = self.leader_elect_retry_period;
        Duration::from_secs(period.as_secs() + u64::from(period.subsec_nanos() > 0))
    }

    /// kube-lease-manager's grace, the time before the Lease expires at which
    /// the leader renews it: lease duration − renewal interval, so that the
    /// leader renews every retry period.
    fn grace_secs(&self) -> u64 {
        let lease = self.leader_elect_lease_duration.as_secs();
        lease
            .saturating_sub(self.renewal_interval().as_secs())
            .max(1)
    }

    /// The identity this replica writes into the Lease.
    pub fn identity(&self) -> String {
        self.leader_elect_identity.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "localhost".into());
            format!("{host}-{}", std::process::id())
        })
    }
}

/// A duration as Go prints it (`1m30s`, `1.5s`).
fn shown(duration: Duration) -> String {
    let printer = SpanPrinter::new()
        .designator(Designator::Compact)
        .spacing(Spacing::None)
        .fractional(Some(FractionalUnit::Second));
    printer.unsigned_duration_to_string(&duration)
}

// ANCHOR: lead
/// Runs `work` (the informers and workers) on the leader only. Without
/// `--leader-elect`, runs it at once. With it: stands by (ready, not leading)
/// until this replica holds the Lease, then runs `work`; releases the Lease
/// when `work` ends; fails if the Lease is lost, or cannot be confirmed by
/// the renew deadline, while `work` runs.
pub async fn run_when_leader<Fut>(
    client: &Client,
    flags: &LeaderFlags,
    shutdown: Shutdown,
    probes: &Probes,
    work: impl FnOnce() -> Fut,
) -> anyhow::Result<()>
where
    Fut: Future<Output = anyhow::Result<()>>,
{
    if !flags.leader_elect {
        probes.metrics.set_leader(true);
        return work().await;
    }
    flags.check()?; // main checked them already; a library caller may not have
    probes.set_ready(true); // a standby is healthy
    let Some(mut leadership) = acquire(client, flags, shutdown).await? else {
        return Ok(()); // shut down while standing by
    };
    probes.set_ready(false); // until the caches are synced
    probes.metrics.set_leader(true);
    let lost = tokio::select! {
        result = work() => Ok(result),
        why = leadership.lost() => Err(why),
    };
    probes.metrics.set_leader(false);
    match lost {
        Ok(result) => {
            leadership.release().await;
            result
        }
        Err(why) => anyhow::bail!(
            "lost the leader Lease {}: {why}; exiting so that this replica restarts as a standby",
            leadership.lease
        ),
    }
}
// ANCHOR_END: lead

/// The Lease this replica holds, renewed in the background.
pub struct Leadership {
    state: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<LeaseManager>>,
    lease: String,
    check: LeaseCheck,
}

/// What a leader needs to check its own hold on the Lease.
struct LeaseCheck {
    leases: Api<Lease>,
    name: String,
    identity: String,
    /// How often to read the Lease.
    period: Duration,
    /// How old the last renewal this replica has seen may be before it stops
    /// leading (`--leader-elect-renew-deadline`): shorter than the lease
    /// duration, after which a standby may take over.
    renew_deadline: Duration,
}

/// How standing by ended.
enum Standby {
    Leader,
    Shutdown,
    TaskEnded,
    Released,
}

// ANCHOR: acquire
/// Stands by until this replica holds the Lease. Returns `None` if `shutdown`
/// comes first.
pub async fn acquire(
    client: &Client,
    flags: &LeaderFlags,
    shutdown: Shutdown,
) -> anyhow::Result<Option<Leadership>> {
    let identity = flags.identity();
    let lease = format!(
        "{}/{}",
        flags.leader_elect_resource_namespace, flags.leader_elect_resource_name
    );
    tracing::info!(%lease, %identity, "waiting to become leader");
    loop {
        let manager = LeaseManagerBuilder::new(client.clone(), &flags.leader_elect_resource_name)
            .with_namespace(&flags.leader_elect_resource_namespace)
            .with_identity(&identity)
            .with_duration(flags.leader_elect_lease_duration.as_secs())
            .with_grace(flags.grace_secs())
            .build()
            .await
            .with_context(|| {
                format!(
                    "cannot get or create the Lease {lease}: does the namespace exist, and may \
                     this user get, create and patch leases.coordination.k8s.io there? \
                     (manifests/rbac.yaml grants it in the namespace sample-controller)"
                )
            })?;
        // The manager renews (or tries to take) the Lease in a background task
        // and reports every change of "am I the holder?" on this channel.
        let (mut state, task) = manager.watch().await;
        let outcome = tokio::select! {
            became = state.wait_for(|leading| *leading) => {
                if became.is_ok() { Standby::Leader } else { Standby::TaskEnded }
            }
            () = released_by_other(client, flags, &identity) => Standby::Released,
            () = shutdown.clone() => Standby::Shutdown,
        };
        match outcome {
            Standby::Leader => {
                tracing::info!(%lease, %identity, "became leader");
                let check = LeaseCheck {
                    leases: Api::namespaced(client.clone(), &flags.leader_elect_resource_namespace),
                    name: flags.leader_elect_resource_name.clone(),
                    identity,
                    period: flags.leader_elect_retry_period,
                    renew_deadline: flags.leader_elect_renew_deadline,
                };
                return Ok(Some(Leadership {
                    state,
                    task,
                    lease,
                    check,
                }));
            }
            Standby::Shutdown => {
                drop(state); // closing the channel stops the task
                let _ = task.await;
                return Ok(None);
            }
            Standby::TaskEnded => {
                let error = match task.await {
                    Ok(Err(err)) => err.to_string(),
                    _ => "no error given".into(),
                };
                anyhow::bail!("the leader-election task for {lease} stopped: {error}");
            }
            Standby::Released => {
                // The leader let go: a fresh manager reads the free Lease and takes it.
                drop(state);
                let _ = task.await;
            }
        }
    }
}
// ANCHOR_END: acquire

/// Completes once the Lease, after being held by another replica, has no
/// holder (its leader released it). Reads it every retry period; a failed
/// read is only retried (the manager reports errors itself).
async fn released_by_other(client: &Client, flags: &LeaderFlags, identity: &str) {
    let leases: Api<Lease> =
        Api::namespaced(client.clone(), &flags.leader_elect_resource_namespace);
    let period = flags.leader_elect_retry_period;
    let mut held_by_other = false;
    loop {
        tokio::time::sleep(period).await;
        let Ok(Some(lease)) = leases.get_opt(&flags.leader_elect_resource_name).await else {
            continue;
        };
        match lease.spec.and_then(|s| s.holder_identity) {
            Some(holder) if !holder.is_empty() => held_by_other = holder != identity,
            _ if held_by_other => return,
            _ => {}
        }
    }
}

impl Leadership {
    /// Completes, saying why, when this replica must stop leading: the
    /// manager found another holder, or this replica cannot confirm that it
    /// renewed the Lease within the renew deadline (the API server is
    /// unreachable, or the renewals fail). Stopping then, before the Lease
    /// expires for the standbys, is what client-go's `RenewDeadline` does;
    /// kube-lease-manager has no such deadline, so this reads the Lease itself.
    pub async fn lost(&mut self) -> String {
        let check = &self.check;
        // Just acquired: the Lease was renewed now.
        let mut renewed = k8s_openapi::jiff::Timestamp::now();
        loop {
            let age = k8s_openapi::jiff::Timestamp::now().duration_since(renewed);
            let age = Duration::try_from(age).unwrap_or_default();
            let Some(left) = check.renew_deadline.checked_sub(age) else {
                return format!(
                    "its last renewal this replica can confirm is {:.1} s old, past the renew \
                     deadline of {:.1} s (API server unreachable, renewals failing, or this \
                     process stalled)",
                    age.as_secs_f64(),
                    check.renew_deadline.as_secs_f64()
                );
            };
            // kube's client retries a failing request for a while: bound
            // the read by the deadline, so that it cannot postpone it.
            let deadline = tokio::time::Instant::now() + left;
            // Near the deadline, read more often (half the time left), so
            // that a renewal just before it is seen in time.
            let read = async {
                tokio::time::sleep(check.period.min(left / 2)).await;
                tokio::time::timeout_at(deadline, check.leases.get_opt(&check.name)).await
            };
            let read = tokio::select! {
                _ = self.state.wait_for(|leading| !*leading) => {
                    return "another replica holds it (this one did not renew it in time)".into();
                }
                read = read => read,
            };
            // A failed or late read changes nothing: the deadline above decides.
            if let Ok(Ok(Some(lease))) = read {
                let spec = lease.spec.unwrap_or_default();
                match spec.holder_identity {
                    Some(holder) if holder == check.identity => {
                        if let Some(time) = spec.renew_time {
                            renewed = time.0;
                        }
                    }
                    other => {
                        return format!(
                            "the Lease names {} as its holder",
                            other.as_deref().unwrap_or("no one")
                        );
                    }
                }
            }
        }
    }

    /// Gives the Lease up (clears its holder), so that no replica has to wait
    /// for it to expire and force it free.
    pub async fn release(self) {
        let Leadership {
            state, task, lease, ..
        } = self;
        drop(state); // the task releases the Lease when its channel closes
        match task.await {
            Ok(Ok(_)) => tracing::info!(%lease, "released the leader lease"),
            Ok(Err(err)) => {
                tracing::warn!(%lease, error = %err, "cannot release the leader lease; it expires by itself")
            }
            Err(err) => tracing::warn!(%lease, error = %err, "leader-election task failed"),
        }
    }
}
