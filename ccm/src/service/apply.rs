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

use super::cloud_error::{ApplyError, api_err, invalid, parse_uuid};
use super::fetch::Edit;
use super::model::*;
use super::plan::{Action, ListenerChanges, MonitorChanges, Plan, PoolRef, Replaced, describe};
use crate::cloudscale::{
    self as api, Client, Filter, Idempotency, LoadBalancerStatus, MonitorStatus, Tags,
};
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
    pub(super) fn new(what: impl Into<String>, detail: impl Into<String>) -> Pending {
        Pending {
            what: what.into(),
            detail: detail.into(),
            recheck: None,
            cause: Cause::LoadBalancer,
        }
    }

    fn caused_by(mut self, cause: Cause) -> Pending {
        self.cause = cause;
        self
    }

    pub(super) fn rechecked_by(mut self, recheck: Recheck) -> Pending {
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
                        .list_pool_members(&p.to_string(), &Filter::all())
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

// ---------------------------------------------------------------------------------------------
// Barriers
// ---------------------------------------------------------------------------------------------

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
        .get_load_balancer(&uuid.to_string())
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
            .list_pool_members(&p.to_string(), &Filter::all())
            .await
            .map_err(api_err(format!(
                "check new members: list members of pool {p}"
            )))
    };
    let members = list(pool).await?;
    let mut replaced_serving = Vec::new();
    // Replaced members without a monitor (outside hands deleted it) count as serving, but
    // nothing checks them: where a monitor of the new pool found the same address down,
    // the old member cannot be serving either, and waiting for it would hold the change
    // for good (found by the simulation: a monitor deleted by hand, then a node stopped).
    let mut unmonitored = Vec::new();
    // Replaced members a new monitor checks anew (`changing`: their health monitor was
    // just replaced) are likely to serve again in a moment: switching before their
    // replacements are up would leave the port without a member up for a whole recheck
    // (found by the simulation: a monitor type change, then a port renamed). They are
    // waited for too, unless the new member at the same address is found down.
    let mut rechecked = Vec::new();
    let mut pools: Vec<Uuid> = replacing.iter().map(|r| r.pool).collect();
    pools.sort();
    pools.dedup();
    for p in pools {
        let old = if p == pool {
            members.clone()
        } else {
            list(p).await?
        };
        for r in replacing.iter().filter(|r| r.pool == p) {
            let Some(m) = old.iter().find(|m| m.uuid == r.member.to_string()) else {
                continue;
            };
            if serving(m) {
                replaced_serving.push(r.address);
                if matches!(m.monitor_status, Some(MonitorStatus::NoMonitor)) {
                    unmonitored.push(r.address);
                }
            } else if m.enabled && matches!(m.monitor_status, Some(MonitorStatus::Changing)) {
                rechecked.push(r.address);
            }
        }
    }
    let waiting: Vec<String> = names
        .iter()
        .filter_map(|n| match members.iter().find(|m| &m.name == n) {
            None => Some(format!("{n} (missing)")),
            Some(m)
                if unmonitored.contains(&m.address)
                    && matches!(m.monitor_status, Some(MonitorStatus::Down)) =>
            {
                None
            }
            Some(m) if replaced_serving.contains(&m.address) && !serving(m) => {
                Some(format!("{n} ({})", status_of(m)))
            }
            Some(m)
                if rechecked.contains(&m.address)
                    && !serving(m)
                    && !matches!(m.monitor_status, Some(MonitorStatus::Down)) =>
            {
                Some(format!("{n} ({})", status_of(m)))
            }
            Some(_) => None,
        })
        .collect();
    // A wanted member found down points at its backend; one still unchecked, or not made
    // yet, at the load balancer's queue.
    let cause = if names.iter().any(|n| {
        members
            .iter()
            .any(|m| &m.name == n && matches!(m.monitor_status, Some(MonitorStatus::Down)))
    }) {
        Cause::MembersDown
    } else {
        Cause::LoadBalancer
    };
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
    let replaced: HashSet<String> = replacing.iter().map(|r| r.member.to_string()).collect();
    let carrying = members
        .iter()
        .any(|m| !replaced.contains(&m.uuid) && serving(m));
    // Replaced members in their checks come up in a moment, maybe before the members that
    // take over (found by the simulation: a node excluded from a Service whose load
    // balancer was new, every member in its first checks): wait for one of the wanted
    // members that are still checked, as for replaced members that serve. Wanted members
    // found down are not waited for.
    let checked_soon = !rechecked.is_empty()
        && names.iter().any(|n| {
            members.iter().any(|m| {
                &m.name == n
                    && m.enabled
                    && matches!(m.monitor_status, Some(MonitorStatus::Changing))
            })
        });
    if (!replaced_serving.is_empty() || checked_soon) && !carrying {
        return Ok(Some(
            Pending::new(what, "one of them before the members they replace go").caused_by(cause),
        ));
    }
    Ok(None)
}

// ---------------------------------------------------------------------------------------------
// Executing a plan
// ---------------------------------------------------------------------------------------------

fn u32_of(action: &str, field: &str, v: i64) -> Result<u32, ApplyError> {
    u32::try_from(v).map_err(|_| invalid(action, format!("{field} {v} is out of range")))
}

fn listener_update(action: &str, c: &ListenerChanges) -> Result<api::UpdateListener, ApplyError> {
    let t = |field: &str, v: Option<i64>| v.map(|v| u32_of(action, field, v)).transpose();
    Ok(api::UpdateListener {
        name: c.name.clone(),
        protocol: c.protocol.clone(),
        protocol_port: c.port,
        allowed_cidrs: c.allowed_cidrs.clone(),
        timeout_client_data_ms: t("timeout_client_data_ms", c.timeout_client_data_ms)?,
        timeout_member_connect_ms: t("timeout_member_connect_ms", c.timeout_member_connect_ms)?,
        timeout_member_data_ms: t("timeout_member_data_ms", c.timeout_member_data_ms)?,
        tags: None,
    })
}

fn http_request(h: &HttpCheck) -> api::HealthMonitorHttpRequest {
    api::HealthMonitorHttpRequest {
        expected_codes: Some(h.expected_codes.clone()),
        method: Some(h.method.clone()),
        url_path: Some(h.url_path.clone()),
        version: Some(h.version.clone()),
        host: h.host.clone().map(Some),
    }
}

fn monitor_update(
    action: &str,
    from: &Monitor,
    c: &MonitorChanges,
) -> Result<api::UpdateHealthMonitor, ApplyError> {
    let n = |field: &str, v: Option<i64>| v.map(|v| u32_of(action, field, v)).transpose();
    let had_host = from.http_options().is_some_and(|h| h.host.is_some());
    Ok(api::UpdateHealthMonitor {
        delay_s: n("delay_s", c.delay_s)?,
        timeout_s: n("timeout_s", c.timeout_s)?,
        up_threshold: n("up_threshold", c.up_threshold)?,
        down_threshold: n("down_threshold", c.down_threshold)?,
        // The version is part of the monitor's identity (a change replaces the monitor), so
        // it is never PATCHed. A host that is no longer wanted is cleared with an explicit
        // null: a PATCH merges key by key, so leaving it out would keep it.
        http: c.http.as_ref().map(|h| api::HealthMonitorHttpRequest {
            version: None,
            host: match (&h.host, had_host) {
                (Some(host), _) => Some(Some(host.clone())),
                (None, true) => Some(None),
                (None, false) => None,
            },
            ..http_request(h)
        }),
        tags: None,
    })
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
        let changing = self.lb.map(|u| Edit::Changing(u.to_string()));
        match (&mut self.edits, edit) {
            (Some(edits), Some(edit)) => edits.extend([Some(edit), changing].into_iter().flatten()),
            _ => self.edits = None,
        }
    }

    /// Members change nothing the lists hold but their load balancer's status.
    fn wrote_members(&mut self) {
        if let (Some(edits), Some(lb)) = (&mut self.edits, self.lb) {
            edits.push(Edit::Changing(lb.to_string()));
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

    /// Checks a barrier of the pool named `port`: `None` when it holds, else what it waits
    /// for.
    async fn barrier(
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

    /// One write. A flat dispatch over the action kinds, each arm the request body of one
    /// API call: long, but every arm reads alone.
    async fn step(&mut self, action: &Action, what: &str) -> Result<(), ApplyError> {
        let c = self.client.clone();
        let idem = || Idempotency::NaturalKey;
        let failed = api_err(what);
        match action {
            Action::CreateLb { name, flavor, zone } => {
                let body = api::CreateLoadBalancer {
                    name: name.clone(),
                    flavor: flavor.clone(),
                    vip_addresses: self
                        .desired
                        .vips
                        .iter()
                        .flatten()
                        .map(|v| api::VipAddressRequest {
                            subnet: v.subnet.to_string(),
                            address: v.address.map(|a| a.to_string()),
                        })
                        .collect(),
                    zone: zone.clone(),
                    tags: self.tags.clone(),
                };
                let lb = c
                    .create_load_balancer(&body, idem())
                    .await
                    .map_err(failed)?;
                self.lb = Some(parse_uuid("load balancer", &lb.uuid)?);
                self.wrote(Some(Edit::LoadBalancer(lb)));
            }
            Action::WaitLbReady | Action::WaitMembersUp { .. } => {}
            Action::RenameLb { uuid, to, .. } => {
                self.settle(what).await?;
                let body = api::UpdateLoadBalancer {
                    name: Some(to.clone()),
                    tags: None,
                };
                c.update_load_balancer(&uuid.to_string(), &body)
                    .await
                    .map_err(failed)?;
                self.wrote(None);
            }
            Action::TagLb { uuid, tags } => {
                let body = api::UpdateLoadBalancer {
                    name: None,
                    tags: Some(tags.clone()),
                };
                c.update_load_balancer(&uuid.to_string(), &body)
                    .await
                    .map_err(failed)?;
                self.wrote(None);
            }
            Action::CreatePool {
                new,
                name,
                algorithm,
                protocol,
                besides,
            } => {
                let lb = self.lb(what)?;
                if *new >= self.new_pools.len() {
                    return Err(invalid(what, format!("no desired pool #{new}")));
                }
                self.settle(what).await?;
                let body = api::CreatePool {
                    name: name.clone(),
                    load_balancer: lb.to_string(),
                    algorithm: algorithm.clone(),
                    protocol: protocol.clone(),
                    tags: self.tags.clone(),
                };
                let pool = c
                    .create_pool(&body, idem(), besides)
                    .await
                    .map_err(failed)?;
                self.new_pools[*new] = Some(parse_uuid("pool", &pool.uuid)?);
                self.wrote(Some(Edit::Pool(pool)));
            }
            Action::RenamePool { uuid, to, .. } => {
                self.settle(what).await?;
                let body = api::UpdatePool {
                    name: Some(to.clone()),
                    tags: None,
                };
                c.update_pool(&uuid.to_string(), &body)
                    .await
                    .map_err(failed)?;
                self.wrote(None);
            }
            Action::DeletePool { uuid, .. } => {
                self.settle(what).await?;
                c.delete_pool(&uuid.to_string()).await.map_err(failed)?;
                self.wrote(None);
            }
            Action::CreateMember { pool, member } => {
                let pool = self.pool(what, pool)?;
                self.settle(what).await?;
                let body = api::CreatePoolMember {
                    name: member.name.clone(),
                    protocol_port: member.protocol_port,
                    monitor_port: Some(member.monitor_port),
                    address: member.address,
                    subnet: member.subnet.to_string(),
                    enabled: None,
                    tags: self.tags.clone(),
                };
                c.create_pool_member(&pool.to_string(), &body, idem())
                    .await
                    .map_err(failed)?;
                self.wrote_members();
            }
            Action::EnableMember { pool, uuid, .. } | Action::RenameMember { pool, uuid, .. } => {
                self.settle(what).await?;
                let body = match action {
                    Action::RenameMember { to, .. } => api::UpdatePoolMember {
                        name: Some(to.clone()),
                        ..Default::default()
                    },
                    _ => api::UpdatePoolMember {
                        enabled: Some(true),
                        ..Default::default()
                    },
                };
                c.update_pool_member(&pool.to_string(), &uuid.to_string(), &body)
                    .await
                    .map_err(failed)?;
                self.wrote_members();
            }
            Action::DeleteMember { pool, uuid, .. } => {
                self.settle(what).await?;
                c.delete_pool_member(&pool.to_string(), &uuid.to_string())
                    .await
                    .map_err(failed)?;
                self.wrote_members();
            }
            Action::CreateListener { pool, listener } => {
                let pool = self.pool(what, pool)?;
                let t = |field: &str, v: i64| u32_of(what, field, v).map(Some);
                let body = api::CreateListener {
                    pool: pool.to_string(),
                    name: listener.name.clone(),
                    protocol: listener.protocol.clone(),
                    protocol_port: listener.port,
                    allowed_cidrs: listener.allowed_cidrs.clone(),
                    timeout_client_data_ms: t(
                        "timeout_client_data_ms",
                        listener.timeout_client_data_ms,
                    )?,
                    timeout_member_connect_ms: t(
                        "timeout_member_connect_ms",
                        listener.timeout_member_connect_ms,
                    )?,
                    timeout_member_data_ms: t(
                        "timeout_member_data_ms",
                        listener.timeout_member_data_ms,
                    )?,
                    tags: self.tags.clone(),
                };
                self.settle(what).await?;
                let listener = c.create_listener(&body, idem()).await.map_err(failed)?;
                self.wrote(Some(Edit::Listener(listener)));
            }
            Action::UpdateListener { uuid, changes, .. } => {
                if changes.is_empty() {
                    return Ok(());
                }
                let body = listener_update(what, changes)?;
                self.settle(what).await?;
                c.update_listener(&uuid.to_string(), &body)
                    .await
                    .map_err(failed)?;
                self.wrote(None);
            }
            Action::DeleteListener { uuid, .. } => {
                self.settle(what).await?;
                c.delete_listener(&uuid.to_string()).await.map_err(failed)?;
                self.wrote(Some(Edit::ListenerDeleted(uuid.to_string())));
            }
            Action::CreateMonitor { pool, monitor } => {
                let pool = self.pool(what, pool)?;
                let n = |field: &str, v: i64| u32_of(what, field, v).map(Some);
                let body = api::CreateHealthMonitor {
                    pool: pool.to_string(),
                    kind: monitor.kind.clone(),
                    delay_s: n("delay_s", monitor.delay_s)?,
                    timeout_s: n("timeout_s", monitor.timeout_s)?,
                    up_threshold: n("up_threshold", monitor.up_threshold)?,
                    down_threshold: n("down_threshold", monitor.down_threshold)?,
                    // HTTP options only for HTTP checks: other types ignore or echo them.
                    http: monitor.http_options().map(http_request).unwrap_or_default(),
                    tags: self.tags.clone(),
                };
                self.settle(what).await?;
                let monitor = c
                    .create_health_monitor(&body, idem())
                    .await
                    .map_err(failed)?;
                self.wrote(Some(Edit::Monitor(monitor)));
            }
            Action::UpdateMonitor {
                uuid,
                from,
                changes,
            } => {
                if changes.is_empty() {
                    return Ok(());
                }
                let body = monitor_update(what, from, changes)?;
                self.settle(what).await?;
                c.update_health_monitor(&uuid.to_string(), &body)
                    .await
                    .map_err(failed)?;
                self.wrote(None);
            }
            Action::DeleteMonitor { uuid, .. } => {
                self.settle(what).await?;
                c.delete_health_monitor(&uuid.to_string())
                    .await
                    .map_err(failed)?;
                self.wrote(Some(Edit::MonitorDeleted(uuid.to_string())));
            }
            Action::AssignFloatingIp { network, .. } => {
                let lb = self.lb(what)?;
                c.assign_floating_ip_to_load_balancer(&network.addr().to_string(), &lb.to_string())
                    .await
                    .map_err(failed)?;
                self.wrote(None);
            }
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
