//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics.
//!
//! kube-rs has no leader election. `kube-lease-manager` (0.13, kube 5) exists, but it takes
//! the lock with server-side apply field ownership and renews with a strategic merge patch
//! without a resourceVersion precondition, and it has no renew deadline: a holder cut off
//! from the API server is not told to stop before the lease expires for the others. This
//! module is the small replacement the landscape notes suggest: a pure decision function
//! ([`evaluate_lease`], [`release_spec`]) and an async holder ([`LeaderElector`]).
//!
//! Semantics (those of client-go's `leaderelection` with `ReleaseOnCancel`):
//!
//! - every write is a `replace` carrying the `resourceVersion` that was read (or a `create`
//!   when there is no Lease); a 409 means another candidate wrote first, and the Lease is
//!   read again before anything else is decided;
//! - a Lease held by someone else is expired only when both the holder's own claim
//!   (`renewTime` + `leaseDurationSeconds`) and this candidate's observation (the local
//!   monotonic time at which it first saw the current record, + the lease duration) have
//!   passed. The observation makes take-over independent of clock offsets between nodes
//!   (a `renewTime` far in the past because our clock runs ahead does not count); a
//!   `renewTime` more than one lease duration in the future is ignored as a broken clock;
//! - the leader counts its renew deadline from the moment it *sent* the last successful
//!   write, on the monotonic clock; when the deadline passes without another successful
//!   renewal (errors, 409s, hanging requests) it stops leading, before the lease (renew
//!   deadline < lease duration) can expire for anybody else. When a renewal shows that
//!   another identity holds the Lease (written out of band), it stops at once;
//! - the leader's work (the `leading` future of [`LeaderElector::run`]) is polled only
//!   while leading and dropped when leadership ends, before the status turns `false` and
//!   before the Lease is released;
//! - on shutdown the leader releases the Lease (empty `holderIdentity`, 1 s duration, as
//!   client-go's `ReleaseOnCancel`), so a follower takes over at its next retry instead of
//!   waiting for the lease to expire. A process that dies without releasing is replaced
//!   after the lease duration (plus the followers' polling period);
//! - leadership is reported on a watch channel ([`LeaderStatus`]), for metrics and readiness.

use crate::ambient::Ambient;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use std::future::Future;
use std::pin::pin;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Upstream's Lease name for the cloud controller manager.
pub const DEFAULT_LEASE_NAME: &str = "cloud-controller-manager";
/// Upstream's Lease namespace.
pub const DEFAULT_LEASE_NAMESPACE: &str = "kube-system";
/// Upstream default `--leader-elect-lease-duration`.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// Upstream default `--leader-elect-renew-deadline`.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Upstream default `--leader-elect-retry-period`.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go's jitter factor: the renew deadline must exceed this multiple of the retry
/// period, and candidates wait up to this fraction of a retry period longer between
/// acquisition attempts (ours is 0.2: a smaller spread, since writes are conditional
/// anyway).
const JITTER_FACTOR: f64 = 1.2;
const ACQUIRE_JITTER: f64 = 0.2;
/// Consecutive 409s answered by an immediate re-read before waiting a retry period.
const MAX_IMMEDIATE_REREADS: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("invalid leader election configuration: {0}")]
    InvalidConfig(String),
}

/// Configuration of a [`LeaderElector`]; [`Default`] gives upstream's values and a fresh
/// identity.
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    pub lease_name: String,
    pub lease_namespace: String,
    /// Unique per process: two processes with the same identity would both lead.
    pub identity: String,
    /// How long followers wait, after the last renewal they observed, before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// Interval between acquisition attempts and between renewals.
    pub retry_period: Duration,
    /// Wall clock (the Lease's times) and the jitter of acquisition attempts.
    pub ambient: Ambient,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_name: DEFAULT_LEASE_NAME.to_string(),
            lease_namespace: DEFAULT_LEASE_NAMESPACE.to_string(),
            identity: default_identity(&Ambient::system()),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            ambient: Ambient::system(),
        }
    }
}

impl LeaderElectionConfig {
    /// client-go's checks: lease duration > renew deadline > 1.2 × retry period > 0, and a
    /// non-empty identity and lease name.
    pub fn validate(&self) -> Result<(), LeaderError> {
        let invalid = |m: String| Err(LeaderError::InvalidConfig(m));
        if self.identity.is_empty() {
            return invalid("identity must not be empty".into());
        }
        if self.lease_name.is_empty() || self.lease_namespace.is_empty() {
            return invalid("lease name and namespace must not be empty".into());
        }
        if self.retry_period.is_zero() {
            return invalid("retry period must be positive".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid(format!(
                "lease duration ({:?}) must be greater than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return invalid(format!(
                "renew deadline ({:?}) must be greater than {JITTER_FACTOR} × the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if lease_duration_seconds(self.lease_duration) < 1 {
            return invalid("lease duration must be at least 1 s".into());
        }
        Ok(())
    }
}

/// Upstream's identity: the host name, `_`, a random UUID.
pub fn default_identity(ambient: &Ambient) -> String {
    format!("{}_{}", hostname(), ambient.uuid())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "cloud-controller-manager".to_string())
}

/// `leaseDurationSeconds` for a duration: whole seconds, rounded up (a Lease must not
/// promise less than the holder's real duration).
fn lease_duration_seconds(d: Duration) -> i32 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(secs).unwrap_or(i32::MAX)
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

fn plus(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.saturating_add(d).unwrap_or(Timestamp::MAX)
}

/// `now` truncated to microseconds, the precision a `MicroTime` keeps on the wire (so a
/// record reads back equal to what was written).
fn micro(now: Timestamp) -> MicroTime {
    MicroTime(Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now))
}

/// What a candidate should do with the Lease it has just read.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// There is no Lease: create it with this spec.
    Create(LeaseSpec),
    /// The Lease has no holder (never held, or released): replace it with this spec.
    Acquire(LeaseSpec),
    /// We hold the Lease: replace it with this spec (fresh `renewTime`).
    Renew(LeaseSpec),
    /// Another holder let the Lease expire: replace it with this spec.
    TakeOver {
        spec: LeaseSpec,
        previous_holder: String,
    },
    /// Another holder's Lease is valid until `expires_at` (our clock): do nothing.
    Wait {
        holder: String,
        expires_at: Timestamp,
    },
}

impl Decision {
    /// The spec to write, unless the decision is to wait.
    pub fn spec(&self) -> Option<&LeaseSpec> {
        match self {
            Decision::Create(s) | Decision::Acquire(s) | Decision::Renew(s) => Some(s),
            Decision::TakeOver { spec, .. } => Some(spec),
            Decision::Wait { .. } => None,
        }
    }
}

/// Decides, from the current Lease spec (`None`: no Lease object), what candidate
/// `identity` does at `now` (its wall clock) with its configured `lease_duration`.
///
/// `observed_since` is the time (our clock) at which this candidate first saw the current
/// record unchanged; `None` means it is seeing the record for the first time, i.e. `now`.
/// A Lease held by another identity expires only when both `observed_since` and the
/// holder's `renewTime` (or `acquireTime`) are older than the record's
/// `leaseDurationSeconds` (ours when missing or not positive); a `renewTime` more than that
/// duration in our future is ignored (a broken clock must not block take-over forever).
///
/// Holder changes increment `leaseTransitions` (a missing count is 0); `acquireTime` is set
/// on acquisition (and kept on renewal); `renewTime` is `now` in microseconds.
pub fn evaluate_lease(
    current: Option<&LeaseSpec>,
    identity: &str,
    now: Timestamp,
    lease_duration: Duration,
    observed_since: Option<Timestamp>,
) -> Decision {
    let now_micro = micro(now);
    let ours = lease_duration_seconds(lease_duration);
    let Some(current) = current else {
        return Decision::Create(LeaseSpec {
            holder_identity: Some(identity.to_string()),
            lease_duration_seconds: Some(ours),
            acquire_time: Some(now_micro.clone()),
            renew_time: Some(now_micro),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        });
    };
    let holder = current.holder_identity.as_deref().unwrap_or_default();
    let transitions = current.lease_transitions.unwrap_or(0).max(0);
    let acquired = |transitions: i32| LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(ours),
        acquire_time: Some(now_micro.clone()),
        renew_time: Some(now_micro.clone()),
        lease_transitions: Some(transitions),
        ..current.clone()
    };
    if holder == identity {
        return Decision::Renew(LeaseSpec {
            holder_identity: Some(identity.to_string()),
            lease_duration_seconds: Some(ours),
            acquire_time: current
                .acquire_time
                .clone()
                .or_else(|| Some(now_micro.clone())),
            renew_time: Some(now_micro.clone()),
            lease_transitions: Some(transitions),
            ..current.clone()
        });
    }
    let next = transitions.saturating_add(1);
    if holder.is_empty() {
        return Decision::Acquire(acquired(next));
    }
    let duration = match current.lease_duration_seconds {
        Some(s) if s > 0 => SignedDuration::from_secs(i64::from(s)),
        _ => signed(lease_duration),
    };
    let mut expires_at = plus(observed_since.unwrap_or(now).min(now), duration);
    let claim = current
        .renew_time
        .as_ref()
        .or(current.acquire_time.as_ref());
    if let Some(MicroTime(claimed)) = claim
        && *claimed <= plus(now, duration)
    {
        expires_at = expires_at.max(plus(*claimed, duration));
    }
    if now < expires_at {
        Decision::Wait {
            holder: holder.to_string(),
            expires_at,
        }
    } else {
        Decision::TakeOver {
            spec: acquired(next),
            previous_holder: holder.to_string(),
        }
    }
}

/// The spec that releases a Lease `identity` holds (client-go's `ReleaseOnCancel`: empty
/// holder, 1 s duration, times `now`, transitions kept), or `None` when it holds nothing.
pub fn release_spec(current: &LeaseSpec, identity: &str, now: Timestamp) -> Option<LeaseSpec> {
    if current.holder_identity.as_deref() != Some(identity) {
        return None;
    }
    let now = micro(now);
    Some(LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(now.clone()),
        renew_time: Some(now),
        lease_transitions: Some(current.lease_transitions.unwrap_or(0).max(0)),
        ..current.clone()
    })
}

/// Whether this process leads, as a watch channel: `true` while the elector leads.
/// Turns `false` when leadership ends and when the elector is dropped (or its task
/// aborted).
#[derive(Clone, Debug)]
pub struct LeaderStatus {
    rx: watch::Receiver<bool>,
}

impl LeaderStatus {
    pub fn is_leader(&self) -> bool {
        *self.rx.borrow() && self.rx.has_changed().is_ok()
    }

    /// Waits until the status is `leading`; `false` also when the elector is gone.
    pub async fn wait_for(&mut self, leading: bool) {
        if self.rx.wait_for(|l| *l == leading).await.is_err() && leading {
            std::future::pending::<()>().await;
        }
    }

    /// The underlying receiver (e.g. to drive a metric).
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }
}

/// The result of one read-decide-write round.
enum Attempt {
    /// We hold the Lease; the write that says so was sent at this instant.
    Held(Instant),
    /// Another identity holds a valid Lease.
    HeldByOther(String),
    /// Our write lost against another (409): read again.
    Conflict,
    /// The API server could not be reached or refused: try again later.
    Failed,
}

/// The elector: campaigns for the Lease, renews it while leading, releases it on shutdown.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    status: watch::Sender<bool>,
    /// The last record read and the monotonic instant it was first seen.
    observed: Option<(Option<LeaseSpec>, Instant)>,
    /// A write was sent whose effect is unknown or positive: release on shutdown.
    may_hold: bool,
    /// The Lease as our last successful write returned it (with its resourceVersion): the
    /// leader renews from it without reading first.
    written: Option<Lease>,
}

impl Drop for LeaderElector {
    fn drop(&mut self) {
        self.status.send_replace(false);
    }
}

impl LeaderElector {
    pub fn new(client: kube::Client, config: LeaderElectionConfig) -> Result<Self, LeaderError> {
        config.validate()?;
        let api = Api::namespaced(client, &config.lease_namespace);
        let (status, _) = watch::channel(false);
        Ok(LeaderElector {
            api,
            config,
            status,
            observed: None,
            may_hold: false,
            written: None,
        })
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// Leadership as a watch channel (for the `leader_election_master_status` metric and `/readyz`).
    pub fn status(&self) -> LeaderStatus {
        LeaderStatus {
            rx: self.status.subscribe(),
        }
    }

    /// Campaigns until `shutdown` completes. Each time leadership is gained, `leading()` is
    /// called and its future polled while this process leads; the future is dropped as soon
    /// as leadership ends (renew deadline passed, or the Lease was taken out of band), and
    /// the elector campaigns again. Returns when `shutdown` completes or a `leading` future
    /// finishes by itself, in both cases after dropping that future and releasing the Lease.
    ///
    /// For status-only use, pass `|| std::future::pending()` and watch [`Self::status`].
    pub async fn run<S, F, Fut>(mut self, shutdown: S, mut leading: F)
    where
        S: Future<Output = ()>,
        F: FnMut() -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut shutdown = pin!(shutdown);
        let identity = self.config.identity.clone();
        loop {
            let valid_until = tokio::select! {
                biased;
                v = self.acquire() => v,
                () = &mut shutdown => break,
            };
            tracing::info!(
                identity = %identity,
                lease = %self.config.lease_name,
                "leader election: started leading"
            );
            self.status.send_replace(true);
            let work = leading();
            let ended = tokio::select! {
                biased;
                () = self.keep_renewing(valid_until) => End::Lost,
                () = work => End::WorkDone,
                () = &mut shutdown => End::Shutdown,
            };
            // `work` is dropped here: the leader's work has stopped before anything else.
            self.status.send_replace(false);
            match ended {
                End::Lost => {
                    tracing::warn!(identity = %identity, "leader election: stopped leading");
                    tokio::select! {
                        biased;
                        () = tokio::time::sleep(self.config.retry_period) => {}
                        () = &mut shutdown => break,
                    }
                }
                End::WorkDone | End::Shutdown => {
                    let why = if matches!(ended, End::WorkDone) {
                        "the work is done"
                    } else {
                        "shutting down"
                    };
                    tracing::info!(identity = %identity, why, "leader election: stopping");
                    break;
                }
            }
        }
        self.status.send_replace(false);
        if self.may_hold {
            self.release().await;
        }
    }

    /// Tries until this candidate holds the Lease; returns the end of its leadership
    /// (write instant + renew deadline).
    async fn acquire(&mut self) -> Instant {
        let mut rereads = 0;
        loop {
            let attempt = self.attempt(None).await;
            match attempt {
                Attempt::Held(sent) => {
                    let valid_until = sent + self.config.renew_deadline;
                    if Instant::now() < valid_until {
                        return valid_until;
                    }
                    // The answer came too late to lead safely; renew at the next round.
                }
                Attempt::Conflict if rereads < MAX_IMMEDIATE_REREADS => {
                    rereads += 1;
                    continue;
                }
                Attempt::HeldByOther(_) | Attempt::Conflict | Attempt::Failed => {}
            }
            rereads = 0;
            let jitter = 1.0 + ACQUIRE_JITTER * self.config.ambient.unit();
            tokio::time::sleep(self.config.retry_period.mul_f64(jitter)).await;
        }
    }

    /// Renews every retry period; returns when leadership is over: the renew deadline
    /// passed without a successful renewal, or another identity holds the Lease.
    async fn keep_renewing(&mut self, mut valid_until: Instant) {
        let mut next = Instant::now() + self.config.retry_period;
        loop {
            if next >= valid_until {
                tokio::time::sleep_until(valid_until).await;
                return;
            }
            tokio::time::sleep_until(next).await;
            let mut rereads = 0;
            let outcome = loop {
                let round = async {
                    match self.renew_written().await {
                        Some(a) => a,
                        None => self.attempt(Some(valid_until)).await,
                    }
                };
                match tokio::time::timeout_at(valid_until, round).await {
                    Err(_) => break None,
                    Ok(Attempt::Conflict) if rereads < MAX_IMMEDIATE_REREADS => rereads += 1,
                    Ok(a) => break Some(a),
                }
            };
            match outcome {
                None => {
                    tracing::warn!(
                        identity = %self.config.identity,
                        "leader election: renew deadline passed without a renewal"
                    );
                    return;
                }
                Some(Attempt::Held(sent)) => {
                    valid_until = valid_until.max(sent + self.config.renew_deadline);
                    next = Instant::now() + self.config.retry_period;
                }
                Some(Attempt::HeldByOther(holder)) => {
                    tracing::warn!(
                        identity = %self.config.identity,
                        holder = %holder,
                        "leader election: the lease is held by another identity"
                    );
                    return;
                }
                Some(Attempt::Conflict | Attempt::Failed) => {
                    next = Instant::now() + self.config.retry_period;
                }
            }
        }
    }

    /// The leader's renewal without a read (client-go's leader election takes the same fast
    /// path): the Lease our last write returned, renewed and written with its
    /// resourceVersion. `None` when there is no such Lease or someone wrote it since (409):
    /// then the full read-decide-write round decides.
    async fn renew_written(&mut self) -> Option<Attempt> {
        let mut lease = self.written.take()?;
        let current = lease.spec.clone().unwrap_or_default();
        let now = self.config.ambient.now();
        let decision = evaluate_lease(
            Some(&current),
            &self.config.identity,
            now,
            self.config.lease_duration,
            None,
        );
        let Decision::Renew(spec) = decision else {
            return None;
        };
        lease.spec = Some(spec);
        let sent = Instant::now();
        let result = self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await;
        match result {
            Ok(written) => {
                self.observed = Some((written.spec.clone(), sent));
                self.written = Some(written);
                Some(Attempt::Held(sent))
            }
            Err(kube::Error::Api(e)) if e.code == 409 => None,
            Err(e) => {
                tracing::warn!(error = %crate::kube_text::KubeText(&e), "leader election: cannot write the lease");
                // The resourceVersion still holds unless someone wrote since: keep it.
                lease.spec = Some(current);
                self.written = Some(lease);
                Some(Attempt::Failed)
            }
        }
    }

    /// Reads the Lease, records when its current record was first seen, decides and writes.
    /// `leading_until`: when leading, a renewal must be sent before this instant.
    async fn attempt(&mut self, leading_until: Option<Instant>) -> Attempt {
        let lease = match self.api.get_opt(&self.config.lease_name).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %crate::kube_text::KubeText(&e), lease = %self.config.lease_name, "leader election: cannot read the lease");
                return Attempt::Failed;
            }
        };
        let spec = lease.as_ref().and_then(|l| l.spec.clone());
        let read_at = Instant::now();
        let first_seen = match &self.observed {
            Some((seen, at)) if *seen == spec && lease.is_some() => *at,
            _ => read_at,
        };
        self.observed = Some((spec.clone(), first_seen));
        let now = self.config.ambient.now();
        let observed_since = now
            .checked_sub(signed(read_at.saturating_duration_since(first_seen)))
            .unwrap_or(now);
        let current = lease.as_ref().map(|l| l.spec.clone().unwrap_or_default());
        let decision = evaluate_lease(
            current.as_ref(),
            &self.config.identity,
            now,
            self.config.lease_duration,
            Some(observed_since),
        );
        if let Decision::Wait { holder, .. } = &decision {
            self.may_hold = false;
            return Attempt::HeldByOther(holder.clone());
        }
        if let Some(until) = leading_until
            && Instant::now() >= until
        {
            return Attempt::Failed;
        }
        if let Decision::TakeOver {
            previous_holder, ..
        } = &decision
        {
            tracing::info!(
                identity = %self.config.identity,
                previous = %previous_holder,
                "leader election: taking over an expired lease"
            );
        }
        let new_spec = decision.spec().cloned();
        let sent = Instant::now();
        self.may_hold = true;
        let result = match (lease, decision) {
            (None, _) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.lease_name.clone()),
                        namespace: Some(self.config.lease_namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: new_spec.clone(),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            (Some(mut lease), _) => {
                lease.spec = new_spec.clone();
                self.api
                    .replace(&self.config.lease_name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(written) => {
                self.observed = Some((written.spec.clone(), sent));
                self.written = Some(written);
                Attempt::Held(sent)
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                tracing::debug!(identity = %self.config.identity, "leader election: conflict, reading again");
                self.may_hold = false;
                Attempt::Conflict
            }
            Err(e) => {
                tracing::warn!(error = %crate::kube_text::KubeText(&e), "leader election: cannot write the lease");
                Attempt::Failed
            }
        }
    }

    /// Gives the Lease up if we hold it, bounded by the renew deadline.
    async fn release(&mut self) {
        let release =
            async {
                let lease = self.api.get_opt(&self.config.lease_name).await?;
                let Some(mut lease) = lease else {
                    return Ok(false);
                };
                let Some(spec) = lease.spec.as_ref().and_then(|s| {
                    release_spec(s, &self.config.identity, self.config.ambient.now())
                }) else {
                    return Ok(false);
                };
                lease.spec = Some(spec);
                self.api
                    .replace(&self.config.lease_name, &PostParams::default(), &lease)
                    .await
                    .map(|_| true)
            };
        match tokio::time::timeout(self.config.renew_deadline, release).await {
            Ok(Ok(true)) => {
                tracing::info!(identity = %self.config.identity, "leader election: released the lease")
            }
            Ok(Ok(false)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %crate::kube_text::KubeText(&e), "leader election: cannot release the lease")
            }
            Err(_) => tracing::warn!("leader election: releasing the lease timed out"),
        }
        self.may_hold = false;
    }
}

#[derive(Debug)]
enum End {
    Lost,
    WorkDone,
    Shutdown,
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "me";
    const OTHER: &str = "other";
    const D: Duration = Duration::from_secs(15);

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn mt(secs: i64) -> MicroTime {
        MicroTime(ts(secs))
    }

    fn held(holder: &str, renew: i64, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(mt(renew - 100)),
            renew_time: Some(mt(renew)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    fn spec_of(d: Decision) -> LeaseSpec {
        d.spec().cloned().expect("a write")
    }

    #[test]
    fn no_lease_creates_it() {
        let d = evaluate_lease(None, ME, ts(0), D, None);
        let Decision::Create(s) = d else {
            panic!("{d:?}")
        };
        assert_eq!(s.holder_identity.as_deref(), Some(ME));
        assert_eq!(s.lease_duration_seconds, Some(15));
        assert_eq!(s.acquire_time, Some(mt(0)));
        assert_eq!(s.renew_time, Some(mt(0)));
        assert_eq!(s.lease_transitions, Some(0));
    }

    #[test]
    fn own_lease_is_renewed_keeping_acquire_time_and_transitions() {
        let cur = held(ME, 0, 4);
        let d = evaluate_lease(Some(&cur), ME, ts(5), D, Some(ts(0)));
        let Decision::Renew(s) = d else {
            panic!("{d:?}")
        };
        assert_eq!(s.renew_time, Some(mt(5)));
        assert_eq!(s.acquire_time, Some(mt(-100)));
        assert_eq!(s.lease_transitions, Some(4));
        assert_eq!(s.holder_identity.as_deref(), Some(ME));
    }

    #[test]
    fn own_expired_lease_is_renewed_not_taken_over() {
        let cur = held(ME, 0, 4);
        let d = evaluate_lease(Some(&cur), ME, ts(100), D, Some(ts(0)));
        assert!(matches!(&d, Decision::Renew(s) if s.lease_transitions == Some(4)));
    }

    #[test]
    fn valid_lease_of_another_means_wait() {
        let cur = held(OTHER, 0, 2);
        let d = evaluate_lease(Some(&cur), ME, ts(10), D, Some(ts(0)));
        assert_eq!(
            d,
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(15)
            }
        );
        assert!(d.spec().is_none());
    }

    #[test]
    fn expired_lease_of_another_is_taken_over_with_a_transition() {
        let cur = held(OTHER, 0, 2);
        let d = evaluate_lease(Some(&cur), ME, ts(16), D, Some(ts(0)));
        let Decision::TakeOver {
            spec,
            previous_holder,
        } = d
        else {
            panic!("{d:?}")
        };
        assert_eq!(previous_holder, OTHER);
        assert_eq!(spec.holder_identity.as_deref(), Some(ME));
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.acquire_time, Some(mt(16)));
        assert_eq!(spec.renew_time, Some(mt(16)));
        assert_eq!(spec.lease_duration_seconds, Some(15));
    }

    #[test]
    fn expiry_is_exactly_at_renew_time_plus_duration() {
        let cur = held(OTHER, 0, 0);
        let at = |s| evaluate_lease(Some(&cur), ME, ts(s), D, Some(ts(0)));
        assert!(matches!(at(14), Decision::Wait { .. }));
        assert!(matches!(at(15), Decision::TakeOver { .. }));
    }

    #[test]
    fn released_lease_is_acquired_at_once() {
        let mut cur = held("", 0, 7);
        cur.lease_duration_seconds = Some(1);
        let d = evaluate_lease(Some(&cur), ME, ts(0), D, None);
        let Decision::Acquire(s) = d else {
            panic!("{d:?}")
        };
        assert_eq!(s.lease_transitions, Some(8));
        assert_eq!(s.holder_identity.as_deref(), Some(ME));
        assert_eq!(s.lease_duration_seconds, Some(15));
    }

    #[test]
    fn lease_with_missing_fields() {
        // An empty spec: free.
        let d = evaluate_lease(Some(&LeaseSpec::default()), ME, ts(0), D, None);
        let s = spec_of(d.clone());
        assert!(matches!(d, Decision::Acquire(_)));
        assert_eq!(s.lease_transitions, Some(1));
        assert_eq!(s.acquire_time, Some(mt(0)));

        // A holder but no times, duration or transitions: expiry by our observation and
        // our duration.
        let bare = LeaseSpec {
            holder_identity: Some(OTHER.into()),
            ..LeaseSpec::default()
        };
        let d = evaluate_lease(Some(&bare), ME, ts(10), D, None);
        assert_eq!(
            d,
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(25)
            }
        );
        let d = evaluate_lease(Some(&bare), ME, ts(15), D, Some(ts(0)));
        assert!(matches!(&d, Decision::TakeOver { spec, .. } if spec.lease_transitions == Some(1)));

        // Our own lease without acquireTime or transitions: renewed, fields filled in.
        let mine = LeaseSpec {
            holder_identity: Some(ME.into()),
            ..LeaseSpec::default()
        };
        let s = spec_of(evaluate_lease(Some(&mine), ME, ts(3), D, None));
        assert_eq!(s.acquire_time, Some(mt(3)));
        assert_eq!(s.lease_transitions, Some(0));
        assert_eq!(s.lease_duration_seconds, Some(15));

        // Non-positive recorded duration: ours is used.
        let mut zero = held(OTHER, 0, 1);
        zero.lease_duration_seconds = Some(0);
        assert!(matches!(
            evaluate_lease(Some(&zero), ME, ts(14), D, Some(ts(0))),
            Decision::Wait { .. }
        ));

        // acquireTime stands in for a missing renewTime.
        let mut no_renew = held(OTHER, 0, 1);
        no_renew.renew_time = None;
        no_renew.acquire_time = Some(mt(20));
        assert_eq!(
            evaluate_lease(Some(&no_renew), ME, ts(16), D, Some(ts(0))),
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(35)
            }
        );

        // Negative transitions are treated as 0.
        let mut neg = held(OTHER, 0, -5);
        neg.renew_time = Some(mt(-100));
        let s = spec_of(evaluate_lease(Some(&neg), ME, ts(20), D, Some(ts(0))));
        assert_eq!(s.lease_transitions, Some(1));
    }

    #[test]
    fn recorded_lease_duration_wins_over_ours() {
        let mut cur = held(OTHER, 0, 0);
        cur.lease_duration_seconds = Some(60);
        let d = evaluate_lease(Some(&cur), ME, ts(30), D, Some(ts(0)));
        assert_eq!(
            d,
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(60)
            }
        );
    }

    #[test]
    fn skew_renew_time_in_the_future_extends_the_wait() {
        // The holder's clock runs 5 s ahead of ours: its claim holds until 20 s.
        let cur = held(OTHER, 5, 0);
        let d = evaluate_lease(Some(&cur), ME, ts(16), D, Some(ts(0)));
        assert_eq!(
            d,
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(20)
            }
        );
        assert!(matches!(
            evaluate_lease(Some(&cur), ME, ts(20), D, Some(ts(0))),
            Decision::TakeOver { .. }
        ));
    }

    #[test]
    fn skew_renew_time_far_in_the_future_is_ignored() {
        // One hour ahead: a broken clock; our observation decides.
        let cur = held(OTHER, 3600, 0);
        let d = evaluate_lease(Some(&cur), ME, ts(15), D, Some(ts(0)));
        assert!(matches!(d, Decision::TakeOver { .. }), "{d:?}");
        // Exactly one duration ahead still counts.
        let cur = held(OTHER, 30, 0);
        let d = evaluate_lease(Some(&cur), ME, ts(15), D, Some(ts(0)));
        assert_eq!(
            d,
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(45)
            }
        );
    }

    #[test]
    fn skew_old_renew_time_first_seen_now_waits_a_full_duration() {
        // Our clock runs ahead (or the holder only just stopped): an old renewTime alone is
        // no proof of expiry; we wait one duration from our first observation.
        let cur = held(OTHER, -3600, 0);
        assert_eq!(
            evaluate_lease(Some(&cur), ME, ts(0), D, None),
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(15)
            }
        );
        assert!(matches!(
            evaluate_lease(Some(&cur), ME, ts(15), D, Some(ts(0))),
            Decision::TakeOver { .. }
        ));
    }

    #[test]
    fn observation_in_the_future_is_clamped_to_now() {
        let cur = held(OTHER, -3600, 0);
        assert_eq!(
            evaluate_lease(Some(&cur), ME, ts(0), D, Some(ts(100))),
            Decision::Wait {
                holder: OTHER.into(),
                expires_at: ts(15)
            }
        );
    }

    #[test]
    fn renew_time_has_microsecond_precision() {
        let now = Timestamp::from_nanosecond(1_700_000_000_123_456_789).unwrap();
        let s = spec_of(evaluate_lease(None, ME, now, D, None));
        let renew = s.renew_time.clone().unwrap();
        assert_eq!(renew.0.as_nanosecond(), 1_700_000_000_123_456_000);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["renewTime"], "2023-11-14T22:13:20.123456Z");
        let back: LeaseSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn fractional_durations_round_up() {
        let s = spec_of(evaluate_lease(
            None,
            ME,
            ts(0),
            Duration::from_millis(1500),
            None,
        ));
        assert_eq!(s.lease_duration_seconds, Some(2));
    }

    #[test]
    fn other_spec_fields_are_kept() {
        let mut cur = held(OTHER, 0, 1);
        cur.preferred_holder = Some("p".into());
        cur.strategy = Some("OldestEmulationVersion".into());
        let s = spec_of(evaluate_lease(Some(&cur), ME, ts(20), D, Some(ts(0))));
        assert_eq!(s.preferred_holder.as_deref(), Some("p"));
        assert_eq!(s.strategy.as_deref(), Some("OldestEmulationVersion"));
    }

    #[test]
    fn release_only_by_the_holder() {
        let cur = held(ME, 0, 3);
        let s = release_spec(&cur, ME, ts(7)).expect("held by me");
        assert_eq!(s.holder_identity.as_deref(), Some(""));
        assert_eq!(s.lease_duration_seconds, Some(1));
        assert_eq!(s.lease_transitions, Some(3));
        assert_eq!(s.renew_time, Some(mt(7)));
        assert_eq!(s.acquire_time, Some(mt(7)));
        assert_eq!(release_spec(&held(OTHER, 0, 3), ME, ts(7)), None);
        assert_eq!(release_spec(&LeaseSpec::default(), ME, ts(7)), None);
        // A released lease is free for the next candidate, transitions counting on.
        let d = evaluate_lease(Some(&s), OTHER, ts(7), D, None);
        assert!(matches!(&d, Decision::Acquire(n) if n.lease_transitions == Some(4)));
    }

    #[test]
    fn config_validation() {
        let ok = LeaderElectionConfig::default();
        assert!(ok.validate().is_ok());
        assert_eq!(ok.lease_name, "cloud-controller-manager");
        assert_eq!(ok.lease_namespace, "kube-system");
        assert_eq!(ok.lease_duration, Duration::from_secs(15));
        assert_eq!(ok.renew_deadline, Duration::from_secs(10));
        assert_eq!(ok.retry_period, Duration::from_secs(2));
        let with = |f: &dyn Fn(&mut LeaderElectionConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate()
        };
        assert!(with(&|c| c.renew_deadline = c.lease_duration).is_err());
        assert!(with(&|c| c.retry_period = Duration::from_secs(9)).is_err());
        assert!(with(&|c| c.retry_period = Duration::ZERO).is_err());
        assert!(with(&|c| c.identity.clear()).is_err());
        assert!(with(&|c| c.lease_name.clear()).is_err());
        assert!(
            with(&|c| {
                c.lease_duration = Duration::from_secs(2);
                c.renew_deadline = Duration::from_millis(1500);
                c.retry_period = Duration::from_millis(200);
            })
            .is_ok()
        );
    }

    #[test]
    fn default_identities_are_unique_and_start_with_the_host_name() {
        let a = default_identity(&Ambient::system());
        let b = default_identity(&Ambient::system());
        assert_ne!(a, b);
        let host = hostname();
        assert!(a.starts_with(&format!("{host}_")), "{a}");
        assert!(uuid::Uuid::parse_str(&a[host.len() + 1..]).is_ok());
    }
}
