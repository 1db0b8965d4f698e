//! The barriers of a plan and the waits they leave: each barrier is checked once when
//! reached, and one that does not hold yet leaves a [`Pending`] with the check
//! ([`Recheck`]) that tells, on a later poll, whether the wait may be over.

use super::Run;
use crate::cloudscale::{self as api, Client, Filter, LoadBalancerStatus, MonitorStatus};
use crate::service::cloud::cloud_error::{ApplyError, api_err};
use crate::service::pure::plan::{Action, Replaced};
use std::collections::HashSet;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// A barrier that did not hold: what it waits for (stable while the wait lasts) and how far
/// it is (changes as members come up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub what: String,
    pub detail: String,
    /// The one check that tells whether the wait may be over, so that polling a wait costs
    /// one or two reads instead of a whole fetch and plan (`None`: plan again to know).
    pub recheck: Option<Recheck>,
    /// Whose turn it is, for the advice of a change held too long.
    pub cause: Cause,
}

/// What a wait waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The load balancer: it is `changing`, working through the operations queued on it, or
    /// has not yet given new members a health verdict. Nothing outside needs fixing.
    LoadBalancer,
    /// Backends: a new member's health monitor finds it down.
    MembersDown,
    /// This CCM: most of the wait was spent in its own queue, behind other Services' work
    /// (its request budget, `--api-rate-limit`), not on the load balancer.
    Budget,
}

impl Pending {
    pub(in crate::service) fn new(what: impl Into<String>, detail: impl Into<String>) -> Pending {
        Pending {
            what: what.into(),
            detail: detail.into(),
            recheck: None,
            cause: Cause::LoadBalancer,
        }
    }

    pub(super) fn caused_by(mut self, cause: Cause) -> Pending {
        self.cause = cause;
        self
    }

    pub(in crate::service) fn rechecked_by(mut self, recheck: Recheck) -> Pending {
        self.recheck = Some(recheck);
        self
    }
}

/// A barrier's check, kept to be asked again while the Service waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recheck {
    /// The load balancer is no longer `changing`.
    Settled(Uuid),
    /// The load balancer is no longer `changing`, or already serves: every pool of
    /// `pools` has a member up (a Service not yet published whose load balancer takes its
    /// other members after; see `ensure.rs`).
    Serves { lb: Uuid, pools: Vec<Uuid> },
    /// New members of the pool named `port` are up (a [`Action::WaitMembersUp`] barrier).
    MembersUp {
        lb: Uuid,
        pool: Uuid,
        port: String,
        names: Vec<String>,
        replacing: Vec<Replaced>,
    },
}

impl Recheck {
    /// `None` when what was awaited holds now (plan again), else what is still awaited.
    pub async fn ask(&self, client: &Client) -> Result<Option<Pending>, ApplyError> {
        match self {
            Recheck::Settled(uuid) => Ok((get_lb(client, *uuid).await?.status
                == LoadBalancerStatus::Changing)
                .then(|| Pending::new("the load balancer to apply its configuration", ""))),
            Recheck::Serves { lb, pools } => {
                for p in pools {
                    let members = client
                        .list_pool_members(*p, &Filter::all())
                        .await
                        .map_err(api_err(format!("check serving: list members of pool {p}")))?;
                    if !members.iter().any(serving) {
                        return Ok((get_lb(client, *lb).await?.status
                            == LoadBalancerStatus::Changing)
                            .then(|| {
                                Pending::new("the load balancer to apply its configuration", "")
                            }));
                    }
                }
                Ok(None)
            }
            Recheck::MembersUp {
                lb,
                pool,
                port,
                names,
                replacing,
            } => members_ready(client, *lb, (*pool, port), names, replacing).await,
        }
    }
}

impl std::fmt::Display for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.detail.is_empty() {
            f.write_str(&self.what)
        } else {
            write!(f, "{} ({})", self.what, self.detail)
        }
    }
}

/// Polls the load balancer until it is no longer `changing` (every `poll`, up to `timeout`)
/// and returns it. 404 is [`ApplyError::Vanished`].
pub async fn wait_not_changing(
    client: &Client,
    uuid: Uuid,
    poll: Duration,
    timeout: Duration,
) -> Result<api::LoadBalancer, ApplyError> {
    let start = Instant::now();
    loop {
        let lb = get_lb(client, uuid).await?;
        if lb.status != LoadBalancerStatus::Changing {
            return Ok(lb);
        }
        if start.elapsed() >= timeout {
            return Err(ApplyError::Timeout {
                what: format!("load balancer {uuid} to leave status changing"),
                after: timeout,
            });
        }
        tokio::time::sleep(poll).await;
    }
}

async fn get_lb(client: &Client, uuid: Uuid) -> Result<api::LoadBalancer, ApplyError> {
    client
        .get_load_balancer(uuid)
        .await
        .map_err(api_err(format!("get load balancer {uuid}")))?
        .ok_or(ApplyError::Vanished { uuid })
}

fn serving(m: &api::PoolMember) -> bool {
    m.enabled
        && matches!(
            m.monitor_status,
            Some(MonitorStatus::Up | MonitorStatus::NoMonitor)
        )
}

fn status_of(m: &api::PoolMember) -> String {
    m.monitor_status
        .as_ref()
        .map_or("no status".to_string(), |s| s.to_string())
}

/// Checks a [`Action::WaitMembersUp`] barrier of the pool named `port` once: `None` when
/// it holds, else what it waits for.
async fn members_ready(
    client: &Client,
    lb: Uuid,
    (pool, port): (Uuid, &str),
    names: &[String],
    replacing: &[Replaced],
) -> Result<Option<Pending>, ApplyError> {
    let what = format!("new members of pool {port} to be up");
    if get_lb(client, lb).await?.status == LoadBalancerStatus::Changing {
        return Ok(Some(Pending::new(
            what,
            "the load balancer is still applying the changes",
        )));
    }
    let list = |p: Uuid| async move {
        client
            .list_pool_members(p, &Filter::all())
            .await
            .map_err(api_err(format!(
                "check new members: list members of pool {p}"
            )))
    };
    let members = list(pool).await?;
    let mut replaced = Replacing::default();
    let mut pools: Vec<Uuid> = replacing.iter().map(|r| r.pool).collect();
    pools.sort();
    pools.dedup();
    for p in pools {
        let old = if p == pool {
            members.clone()
        } else {
            list(p).await?
        };
        replaced.note(&old, replacing.iter().filter(|r| r.pool == p));
    }
    let waiting = replaced.still_awaited(names, &members);
    let cause = cause_of(names, &members);
    if !waiting.is_empty() {
        return Ok(Some(
            Pending::new(
                what,
                format!(
                    "{}: they take over from members that serve now",
                    waiting.join(", ")
                ),
            )
            .caused_by(cause),
        ));
    }
    if replaced.must_carry(names, replacing, &members) {
        return Ok(Some(
            Pending::new(what, "one of them before the members they replace go").caused_by(cause),
        ));
    }
    Ok(None)
}

/// What the members being replaced do now, by address.
#[derive(Default)]
struct Replacing {
    serving: Vec<std::net::IpAddr>,
    /// Replaced members without a monitor (outside hands deleted it) count as serving, but
    /// nothing checks them: where a monitor of the new pool found the same address down,
    /// the old member cannot be serving either, and waiting for it would hold the change
    /// for good (found by the simulation: a monitor deleted by hand, then a node stopped).
    unmonitored: Vec<std::net::IpAddr>,
    /// Replaced members a new monitor checks anew (`changing`: their health monitor was
    /// just replaced) are likely to serve again in a moment: switching before their
    /// replacements are up would leave the port without a member up for a whole recheck
    /// (found by the simulation: a monitor type change, then a port renamed). They are
    /// waited for too, unless the new member at the same address is found down.
    rechecked: Vec<std::net::IpAddr>,
}

impl Replacing {
    /// Notes the replaced members `of` one pool as its member list `old` shows them.
    fn note<'a>(&mut self, old: &[api::PoolMember], of: impl Iterator<Item = &'a Replaced>) {
        for r in of {
            let Some(m) = old.iter().find(|m| m.uuid == r.member) else {
                continue;
            };
            if serving(m) {
                self.serving.push(r.address);
                if matches!(m.monitor_status, Some(MonitorStatus::NoMonitor)) {
                    self.unmonitored.push(r.address);
                }
            } else if m.enabled && matches!(m.monitor_status, Some(MonitorStatus::Changing)) {
                self.rechecked.push(r.address);
            }
        }
    }

    /// The wanted members `names` still awaited, each with why.
    fn still_awaited(&self, names: &[String], members: &[api::PoolMember]) -> Vec<String> {
        names
            .iter()
            .filter_map(|n| match members.iter().find(|m| &m.name == n) {
                None => Some(format!("{n} (missing)")),
                Some(m)
                    if self.unmonitored.contains(&m.address)
                        && matches!(m.monitor_status, Some(MonitorStatus::Down)) =>
                {
                    None
                }
                Some(m) if self.serving.contains(&m.address) && !serving(m) => {
                    Some(format!("{n} ({})", status_of(m)))
                }
                Some(m)
                    if self.rechecked.contains(&m.address)
                        && !serving(m)
                        && !matches!(m.monitor_status, Some(MonitorStatus::Down)) =>
                {
                    Some(format!("{n} ({})", status_of(m)))
                }
                Some(_) => None,
            })
            .collect()
    }

    /// Whether the pool needs a member other than the replaced ones up before they go.
    /// Replaced members in their checks come up in a moment, maybe before the members that
    /// take over (found by the simulation: a node excluded from a Service whose load
    /// balancer was new, every member in its first checks): wait for one of the wanted
    /// members that are still checked, as for replaced members that serve. Wanted members
    /// found down are not waited for.
    fn must_carry(
        &self,
        names: &[String],
        replacing: &[Replaced],
        members: &[api::PoolMember],
    ) -> bool {
        let replaced: HashSet<Uuid> = replacing.iter().map(|r| r.member).collect();
        let carrying = members
            .iter()
            .any(|m| !replaced.contains(&m.uuid) && serving(m));
        let checked_soon = !self.rechecked.is_empty()
            && names.iter().any(|n| {
                members.iter().any(|m| {
                    &m.name == n
                        && m.enabled
                        && matches!(m.monitor_status, Some(MonitorStatus::Changing))
                })
            });
        (!self.serving.is_empty() || checked_soon) && !carrying
    }
}

/// A wanted member found down points at its backend; one still unchecked, or not made
/// yet, at the load balancer's queue.
fn cause_of(names: &[String], members: &[api::PoolMember]) -> Cause {
    if names.iter().any(|n| {
        members
            .iter()
            .any(|m| &m.name == n && matches!(m.monitor_status, Some(MonitorStatus::Down)))
    }) {
        Cause::MembersDown
    } else {
        Cause::LoadBalancer
    }
}

impl Run<'_> {
    /// Checks a barrier of the pool named `port`: `None` when it holds, else what it waits
    /// for.
    pub(super) async fn barrier(
        &self,
        action: &Action,
        what: &str,
        port: &str,
    ) -> Result<Option<Pending>, ApplyError> {
        match action {
            Action::WaitLbReady => {
                let uuid = self.lb(what)?;
                let lb = get_lb(&self.client, uuid).await?;
                Ok((lb.status == LoadBalancerStatus::Changing).then(|| {
                    Pending::new("the load balancer to be provisioned", "")
                        .rechecked_by(Recheck::Settled(uuid))
                }))
            }
            Action::WaitMembersUp {
                pool,
                members,
                replacing,
            } => {
                let recheck = Recheck::MembersUp {
                    lb: self.lb(what)?,
                    pool: self.pool(what, pool)?,
                    port: port.to_string(),
                    names: members.clone(),
                    replacing: replacing.clone(),
                };
                Ok(recheck
                    .ask(&self.client)
                    .await?
                    .map(|p| p.rechecked_by(recheck)))
            }
            _ => Ok(None),
        }
    }
}
