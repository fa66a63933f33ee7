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
//! kube-lease-manager's standby does not watch the Lease: it sleeps until the
//! expiry it last read. Alone, that makes a standby wait up to a whole lease
//! duration after the leader released the Lease. So a standby here also
//! reads the Lease every `--leader-elect-retry-period` (client-go's
//! `RetryPeriod`), and when it sees the Lease free, starts a new manager,
//! which takes it at once.
//!
//! Nor does the crate have client-go's `RenewDeadline`: a leader that cannot
//! renew would keep leading in its own view. So a leader here also reads the
//! Lease, and stops once the last renewal it can confirm is older than
//! `duration − grace/2`, before a standby may take the Lease at `duration`.

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::probes::Probes;
use sample_controller::signals::Shutdown;

// ANCHOR: flags
/// Leader election settings (names as in kube-controller-manager).
#[derive(clap::Args, Debug, Clone)]
pub struct LeaderFlags {
    /// Run for leader through a Lease; only the leader reconciles. Use it when
    /// running more than one replica.
    #[arg(long)]
    pub leader_elect: bool,

    /// Name of the Lease.
    #[arg(long, value_name = "NAME", default_value = "sample-controller")]
    pub leader_elect_lease_name: String,

    /// Namespace of the Lease (in a Pod, set POD_NAMESPACE from the downward API).
    #[arg(
        long,
        value_name = "NS",
        env = "POD_NAMESPACE",
        default_value = "default"
    )]
    pub leader_elect_namespace: String,

    /// This replica's name in the Lease (in a Pod, set POD_NAME from the
    /// downward API). Default: host name and process ID.
    #[arg(long, value_name = "ID", env = "POD_NAME")]
    pub leader_elect_identity: Option<String>,

    /// Seconds a leader that stops renewing keeps the Lease; a standby takes
    /// over at most this long after the leader dies.
    #[arg(long, value_name = "SECONDS", default_value_t = 15)]
    pub leader_elect_lease_duration: u64,

    /// Seconds before expiry at which the leader renews.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub leader_elect_renew_grace: u64,

    /// Seconds between a standby's looks at the Lease (to take it as soon
    /// as the leader releases it).
    #[arg(long, value_name = "SECONDS", default_value_t = 2)]
    pub leader_elect_retry_period: u64,
}
// ANCHOR_END: flags

impl LeaderFlags {
    /// How often a standby, and the leader's own check, read the Lease.
    fn retry_period(&self) -> Duration {
        Duration::from_secs(self.leader_elect_retry_period.max(1))
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
    /// leading: the manager renews `grace` before expiry, and a standby may
    /// take over at expiry, so half the grace is left as a margin.
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
        flags.leader_elect_namespace, flags.leader_elect_lease_name
    );
    tracing::info!(%lease, %identity, "waiting to become leader");
    loop {
        let manager = LeaseManagerBuilder::new(client.clone(), &flags.leader_elect_lease_name)
            .with_namespace(&flags.leader_elect_namespace)
            .with_identity(&identity)
            .with_duration(flags.leader_elect_lease_duration)
            .with_grace(flags.leader_elect_renew_grace)
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
                let duration = Duration::from_secs(flags.leader_elect_lease_duration);
                let check = LeaseCheck {
                    leases: Api::namespaced(client.clone(), &flags.leader_elect_namespace),
                    name: flags.leader_elect_lease_name.clone(),
                    identity,
                    period: flags.retry_period(),
                    renew_deadline: duration
                        .saturating_sub(Duration::from_secs(flags.leader_elect_renew_grace) / 2),
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
    let leases: Api<Lease> = Api::namespaced(client.clone(), &flags.leader_elect_namespace);
    let period = flags.retry_period();
    let mut held_by_other = false;
    loop {
        tokio::time::sleep(period).await;
        let Ok(Some(lease)) = leases.get_opt(&flags.leader_elect_lease_name).await else {
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
            // that the renewal due `grace` before expiry is seen in time.
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
