//! Apply: the only step of the service controller that writes, and only to the
//! cloudscale.ch API (no Kubernetes here).
//!
//! [`execute`] runs a [`Plan`]'s steps in order and stops at the first failure (the
//! controller re-plans on its next pass, so partial progress is fine). Creates carry the
//! caller's tags and use natural-key idempotency, so a retried POST never duplicates a
//! resource.
//!
//! Barriers never block: each is checked once when reached. One that does not hold yet makes
//! the executor skip every later step of its group (all later steps, for
//! [`Action::WaitLbReady`]) and report it as pending; the controller plans again a little
//! later from what then exists, so a newer edit or a deletion of the Service always comes
//! first, and no worker waits.

mod barrier;
mod bodies;
mod step;

pub use barrier::{Cause, Pending, Recheck, wait_not_changing};

use super::cloud_error::{ApplyError, invalid};
use super::fetch::Edit;
use crate::cloudscale::{Client, Tags};
use crate::service::pure::model::DesiredLb;
use crate::service::pure::plan::{Action, Plan, PoolRef, describe};
use std::collections::HashSet;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// Timing of [`execute`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Interval between status polls (of [`ApplyOptions::wait_between_writes`], and between
    /// the controller's passes while a change waits).
    pub poll: Duration,
    /// How long a load balancer may stay `changing` before a write, when waiting for it.
    pub lb_timeout: Duration,
    /// How long a change may wait for new members before the controller warns that it is
    /// held (the old members keep serving meanwhile).
    pub members_timeout: Duration,
    /// Wait until the load balancer is no longer `changing` before every write on it or its
    /// sub-resources (the API applies one change at a time). Off by default: fakecloud and,
    /// as far as known, the API queue such writes.
    pub wait_between_writes: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            poll: Duration::from_secs(2),
            lb_timeout: Duration::from_secs(300),
            members_timeout: Duration::from_secs(300),
            wait_between_writes: false,
        }
    }
}

/// What [`execute`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The load balancer (created or given).
    pub lb_uuid: Option<Uuid>,
    /// API writes (POST/PATCH/DELETE attempts, retries included).
    pub writes: u64,
    /// API reads (GETs: idempotency lookups and barrier checks included).
    pub reads: u64,
    /// Barriers that did not hold; their steps were skipped.
    pub pending: Vec<Pending>,
    /// What the writes did to the account-wide lists, when every write was one a
    /// [`Edit`] describes (`None`: the shared snapshot must be read again).
    pub edits: Option<Vec<Edit>>,
    /// The run stopped after a step because the Service changed meanwhile
    /// (`superseded`): its remaining steps were planned for what it no longer asks.
    pub superseded: bool,
}

/// The state [`execute`] carries from step to step.
struct Run<'a> {
    client: Client,
    desired: &'a DesiredLb,
    opts: &'a ApplyOptions,
    tags: &'a Tags,
    lb: Option<Uuid>,
    /// UUIDs of the pools created for `PoolRef::New(i)`.
    new_pools: Vec<Option<Uuid>>,
    /// What the writes so far did to the account-wide lists; `None` once a write did what
    /// no [`Edit`] describes.
    edits: Option<Vec<Edit>>,
}

impl Run<'_> {
    /// Notes what a successful write did: `edit` on the lists (`None`: something no edit
    /// describes), and the load balancer applying it.
    fn wrote(&mut self, edit: Option<Edit>) {
        let changing = self.lb.map(Edit::Changing);
        match (&mut self.edits, edit) {
            (Some(edits), Some(edit)) => edits.extend([Some(edit), changing].into_iter().flatten()),
            _ => self.edits = None,
        }
    }

    /// Members change nothing the lists hold but their load balancer's status.
    fn wrote_members(&mut self) {
        if let (Some(edits), Some(lb)) = (&mut self.edits, self.lb) {
            edits.push(Edit::Changing(lb));
        }
    }

    fn lb(&self, action: &str) -> Result<Uuid, ApplyError> {
        self.lb.ok_or_else(|| {
            invalid(
                action,
                "no load balancer: neither given nor created by the plan",
            )
        })
    }

    fn pool(&self, action: &str, r: &PoolRef) -> Result<Uuid, ApplyError> {
        match r {
            PoolRef::Existing(u) => Ok(*u),
            PoolRef::New(i) => self.new_pools.get(*i).copied().flatten().ok_or_else(|| {
                invalid(
                    action,
                    format!("new pool #{i} was not created earlier in the plan"),
                )
            }),
        }
    }

    /// Before a write on the load balancer or below it, when asked to.
    async fn settle(&self, action: &str) -> Result<(), ApplyError> {
        if self.opts.wait_between_writes {
            let lb = self.lb(action)?;
            wait_not_changing(&self.client, lb, self.opts.poll, self.opts.lb_timeout).await?;
        }
        Ok(())
    }
}

/// Runs the plan's steps in order against the API and stops at the first failure (no
/// rollback: the next pass re-plans from what exists). `lb` is the load balancer the plan was
/// made against (`None` when the plan creates it); `tags` go on every created resource.
/// Barriers that do not hold skip their group and are reported in [`Outcome::pending`].
/// After each write, `superseded` says whether the Service changed since the plan was
/// made: then the run stops there ([`Outcome::superseded`]), so that a change made while a
/// long pass goes on (API trouble, a busy load balancer) is planned at once, its urgent
/// steps first, rather than after steps planned for what the Service no longer asks.
pub async fn execute(
    client: &Client,
    desired: &DesiredLb,
    lb: Option<Uuid>,
    plan: &Plan,
    opts: &ApplyOptions,
    tags: &Tags,
    superseded: &(dyn Fn() -> bool + Send + Sync),
) -> Result<Outcome, ApplyError> {
    let mut run = Run {
        client: client.with_own_counters(),
        desired,
        opts,
        tags,
        lb,
        new_pools: vec![None; desired.pools.len()],
        edits: Some(Vec::new()),
    };
    let mut pending = Vec::new();
    let mut blocked: HashSet<Option<u32>> = HashSet::new();
    let mut stopped = false;
    let mut replan = false;
    for (i, step) in plan.steps.iter().enumerate() {
        if stopped || (step.group.is_some() && blocked.contains(&step.group)) {
            continue;
        }
        if superseded() {
            tracing::info!(
                lb = %run.lb.map(|u| u.to_string()).unwrap_or_default(),
                done = i,
                steps = plan.steps.len(),
                "the Service changed while its plan ran: planned again"
            );
            replan = true;
            break;
        }
        let what = describe::action(&step.action);
        let started = Instant::now();
        let port = step.port.as_deref().unwrap_or("");
        let result = if step.action.is_barrier() {
            match run.barrier(&step.action, &what, port).await {
                Ok(None) => Ok("held"),
                Ok(Some(why)) => {
                    if matches!(step.action, Action::WaitLbReady) {
                        stopped = true;
                    }
                    blocked.insert(step.group);
                    pending.push(why);
                    Ok("pending")
                }
                Err(e) => Err(e),
            }
        } else {
            run.step(&step.action, &what).await.map(|()| "done")
        };
        let lb = run.lb.map(|u| u.to_string()).unwrap_or_default();
        match result {
            Ok(outcome) => tracing::info!(
                lb = %lb,
                step = i + 1,
                steps = plan.steps.len(),
                port,
                impact = %step.impact,
                action = %what,
                elapsed_ms = started.elapsed().as_millis() as u64,
                outcome,
                "load balancer step"
            ),
            Err(e) => {
                tracing::warn!(
                    lb = %lb,
                    step = i + 1,
                    steps = plan.steps.len(),
                    port,
                    impact = %step.impact,
                    action = %what,
                    outcome = "failed",
                    error = %e,
                    "load balancer step"
                );
                return Err(e);
            }
        }
    }
    let counts = run.client.counters();
    Ok(Outcome {
        lb_uuid: run.lb,
        writes: counts.writes,
        reads: counts.reads,
        pending,
        edits: run.edits,
        superseded: replan,
    })
}
