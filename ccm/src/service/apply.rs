//! Apply: the only step of the service controller that does I/O, and only against the
//! cloudscale.ch API (no Kubernetes here).
//!
//! - [`fetch`] finds a Service's load balancer (by the uuid annotation and by exact name, never
//!   guessing between two) and reads its actual state with as few requests as possible: the
//!   lookup (1 + U), one account-wide list each of pools, listeners, health monitors and
//!   floating IPs, and one member list per pool of the load balancer.
//! - [`Snapshot`] holds the account-wide lists so that one sync over many Services reads them
//!   once ([`Snapshot::fetch`], [`fetch_in`], [`actual_from`]).
//! - [`execute`] runs a [`Plan`]'s steps in order and stops at the first failure (the
//!   controller re-plans on its next pass, so partial progress is fine). Creates carry the
//!   caller's tags and use natural-key idempotency, so a retried POST never duplicates a
//!   resource. `WaitMembersUp` barriers wait until the load balancer has applied every queued
//!   change and the named members report `up` (or `no_monitor`).

use super::model::*;
use super::plan::{Action, ListenerChanges, MonitorChanges, Plan, PoolRef};
use crate::cloudscale::{
    self as api, Client, ClientError, Filter, Idempotency, LoadBalancerStatus, MonitorStatus, Tags,
};
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

pub use crate::cloudscale::{FloatingIp, HealthMonitor, LoadBalancer, Pool, PoolMember};

/// What can go wrong fetching or applying. Never "absent" for an API failure.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// An API request failed; `action` says which step (or which read).
    #[error("{action}: {source}")]
    Api {
        action: String,
        #[source]
        source: ClientError,
    },
    /// More than one load balancer matches the Service (uuid annotation and/or name).
    #[error(
        "found more than one load balancer for {name:?}: {} (delete the extra one or fix the uuid annotation)",
        .uuids.join(", ")
    )]
    Ambiguous { name: String, uuids: Vec<String> },
    /// A wait ran out of time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: String, after: Duration },
    /// The load balancer disappeared while it was being worked on.
    #[error("load balancer {uuid} disappeared")]
    Vanished { uuid: Uuid },
    /// An inconsistent input (plan, API data or value out of the API's range).
    #[error("{action}: {message}")]
    Invalid { action: String, message: String },
}

impl ApplyError {
    /// The API status of an [`ApplyError::Api`] failure.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApplyError::Api { source, .. } => source.status(),
            _ => None,
        }
    }
}

fn api_err(action: impl Into<String>) -> impl FnOnce(ClientError) -> ApplyError {
    let action = action.into();
    move |source| ApplyError::Api { action, source }
}

fn invalid(action: impl Into<String>, message: impl Into<String>) -> ApplyError {
    ApplyError::Invalid {
        action: action.into(),
        message: message.into(),
    }
}

fn parse_uuid(what: &str, s: &str) -> Result<Uuid, ApplyError> {
    Uuid::parse_str(s).map_err(|e| invalid(format!("decode {what}"), format!("{s:?}: {e}")))
}

/// Timing of [`execute`]'s waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Interval between status polls.
    pub poll: Duration,
    /// How long a load balancer may stay `changing` (provisioning, queued changes).
    pub lb_timeout: Duration,
    /// How long new members may take to report `up` at a `WaitMembersUp` barrier.
    pub members_timeout: Duration,
    /// Wait until the load balancer is no longer `changing` before every write on it or its
    /// sub-resources (the API applies one change at a time). Off by default: fakecloud and,
    /// as far as known, the API queue such writes. Barriers always wait.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The load balancer (created or given).
    pub lb_uuid: Uuid,
    /// API writes (POST/PATCH/DELETE attempts, retries included).
    pub writes: u64,
    /// API reads (GETs: idempotency lookups and status polls included).
    pub reads: u64,
}

// ---------------------------------------------------------------------------------------------
// Fetching the actual state
// ---------------------------------------------------------------------------------------------

/// The account-wide lists one sync reads once and shares across Services.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub load_balancers: Vec<LoadBalancer>,
    pub pools: Vec<Pool>,
    pub listeners: Vec<api::Listener>,
    pub monitors: Vec<HealthMonitor>,
    pub floating_ips: Vec<FloatingIp>,
}

impl Snapshot {
    /// Five list requests, concurrently.
    pub async fn fetch(client: &Client) -> Result<Snapshot, ApplyError> {
        let all = Filter::all();
        let (load_balancers, rest) = futures::try_join!(
            async {
                client
                    .list_load_balancers(&all)
                    .await
                    .map_err(api_err("list load balancers"))
            },
            sub_resources(client),
        )?;
        let (pools, listeners, monitors, floating_ips) = rest;
        Ok(Snapshot {
            load_balancers,
            pools,
            listeners,
            monitors,
            floating_ips,
        })
    }

    /// The Service's load balancer in the snapshot: the one with this uuid and/or the one
    /// named exactly `name`. Two distinct ones: [`ApplyError::Ambiguous`].
    pub fn find(
        &self,
        name: &str,
        uuid: Option<Uuid>,
    ) -> Result<Option<&LoadBalancer>, ApplyError> {
        let uuid = uuid.map(|u| u.to_string());
        let found: Vec<&LoadBalancer> = self
            .load_balancers
            .iter()
            .filter(|lb| {
                uuid.as_deref() == Some(lb.uuid.as_str()) || (!name.is_empty() && lb.name == name)
            })
            .collect();
        match found.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => Err(ApplyError::Ambiguous {
                name: name.to_string(),
                uuids: many.iter().map(|lb| lb.uuid.clone()).collect(),
            }),
        }
    }

    /// The pools of a load balancer, in API order.
    pub fn pools_of<'a>(&'a self, lb: &'a LoadBalancer) -> impl Iterator<Item = &'a Pool> + 'a {
        self.pools
            .iter()
            .filter(move |p| p.load_balancer.uuid == lb.uuid)
    }
}

type SubResources = (
    Vec<Pool>,
    Vec<api::Listener>,
    Vec<HealthMonitor>,
    Vec<FloatingIp>,
);

/// The four account-wide lists besides the load balancers, concurrently.
async fn sub_resources(client: &Client) -> Result<SubResources, ApplyError> {
    let all = Filter::all();
    futures::try_join!(
        async { client.list_pools(&all).await.map_err(api_err("list pools")) },
        async {
            client
                .list_listeners(&all)
                .await
                .map_err(api_err("list listeners"))
        },
        async {
            client
                .list_health_monitors(&all)
                .await
                .map_err(api_err("list health monitors"))
        },
        async {
            client
                .list_floating_ips(&all)
                .await
                .map_err(api_err("list floating IPs"))
        },
    )
}

/// De-duplicates by UUID; more than one: ambiguous.
fn one_of(name: &str, found: Vec<LoadBalancer>) -> Result<Option<LoadBalancer>, ApplyError> {
    let mut unique: Vec<LoadBalancer> = Vec::new();
    for lb in found {
        if !unique.iter().any(|u| u.uuid == lb.uuid) {
            unique.push(lb);
        }
    }
    if unique.len() > 1 {
        return Err(ApplyError::Ambiguous {
            name: name.to_string(),
            uuids: unique.into_iter().map(|lb| lb.uuid).collect(),
        });
    }
    Ok(unique.pop())
}

/// Finds the Service's load balancer: `GET` by the uuid annotation (404: none) and the list
/// filtered by exact name, merged by UUID (1 + U reads). Any API failure is an error.
pub async fn find_load_balancer(
    client: &Client,
    name: &str,
    uuid: Option<Uuid>,
) -> Result<Option<LoadBalancer>, ApplyError> {
    if name.is_empty() && uuid.is_none() {
        return Err(invalid(
            "find load balancer",
            "neither a name nor a uuid to look for",
        ));
    }
    let (by_uuid, by_name) = futures::try_join!(
        async {
            match uuid {
                Some(u) => client
                    .get_load_balancer(&u.to_string())
                    .await
                    .map_err(api_err(format!("get load balancer {u}"))),
                None => Ok(None),
            }
        },
        async {
            if name.is_empty() {
                return Ok(Vec::new());
            }
            client
                .list_load_balancers(&Filter::all().and_name(name))
                .await
                .map_err(api_err(format!("list load balancers named {name:?}")))
        },
    )?;
    let found = by_uuid
        .into_iter()
        .chain(by_name.into_iter().filter(|lb| lb.name == name))
        .collect();
    one_of(name, found)
}

/// Lists the members of each pool (one request per pool, concurrently), keyed by pool UUID.
pub async fn fetch_members<'a>(
    client: &Client,
    pools: impl IntoIterator<Item = &'a Pool>,
) -> Result<HashMap<String, Vec<PoolMember>>, ApplyError> {
    let lists = futures::future::try_join_all(pools.into_iter().map(|p| async move {
        let members = client
            .list_pool_members(&p.uuid, &Filter::all())
            .await
            .map_err(api_err(format!(
                "list members of pool {} ({})",
                p.name, p.uuid
            )))?;
        Ok::<_, ApplyError>((p.uuid.clone(), members))
    }))
    .await?;
    Ok(lists.into_iter().collect())
}

/// The Service's load balancer and its actual state, or `None` when there is none.
/// Reads: 1 + U for the lookup; when found, 4 account-wide lists plus one per pool.
pub async fn fetch(
    client: &Client,
    name: &str,
    uuid: Option<Uuid>,
) -> Result<Option<(LoadBalancer, ActualLb)>, ApplyError> {
    let Some(lb) = find_load_balancer(client, name, uuid).await? else {
        return Ok(None);
    };
    let (pools, listeners, monitors, floating_ips) = sub_resources(client).await?;
    let snapshot = Snapshot {
        load_balancers: Vec::new(),
        pools,
        listeners,
        monitors,
        floating_ips,
    };
    let members = fetch_members(client, snapshot.pools_of(&lb)).await?;
    let actual = actual_from(&snapshot, &lb, &members)?;
    Ok(Some((lb, actual)))
}

/// Like [`fetch`], from a shared [`Snapshot`]: only the member lists are read.
pub async fn fetch_in(
    client: &Client,
    snapshot: &Snapshot,
    name: &str,
    uuid: Option<Uuid>,
) -> Result<Option<(LoadBalancer, ActualLb)>, ApplyError> {
    let Some(lb) = snapshot.find(name, uuid)? else {
        return Ok(None);
    };
    let members = fetch_members(client, snapshot.pools_of(lb)).await?;
    let actual = actual_from(snapshot, lb, &members)?;
    Ok(Some((lb.clone(), actual)))
}

/// Builds the planner's view of `lb` from account-wide lists and the member lists of its
/// pools (keyed by pool UUID; a pool without an entry is an error, never "no members").
pub fn actual_from(
    snapshot: &Snapshot,
    lb: &LoadBalancer,
    members_by_pool: &HashMap<String, Vec<PoolMember>>,
) -> Result<ActualLb, ApplyError> {
    let mut vips = Vec::new();
    for v in &lb.vip_addresses {
        let subnet = match &v.subnet {
            Some(s) => parse_uuid("VIP subnet", &s.uuid)?,
            None => Uuid::nil(),
        };
        vips.push((subnet, v.address));
    }
    let mut pools = Vec::new();
    for p in snapshot.pools_of(lb) {
        let members = members_by_pool.get(&p.uuid).ok_or_else(|| {
            invalid(
                "build the actual state",
                format!(
                    "the members of pool {} ({}) were not fetched",
                    p.name, p.uuid
                ),
            )
        })?;
        let members = members
            .iter()
            .map(actual_member)
            .collect::<Result<Vec<_>, _>>()?;
        let listeners = snapshot
            .listeners
            .iter()
            .filter(|l| l.pool.as_ref().is_some_and(|s| s.uuid == p.uuid))
            .map(actual_listener)
            .collect::<Result<Vec<_>, _>>()?;
        let monitors = snapshot
            .monitors
            .iter()
            .filter(|m| m.pool.uuid == p.uuid)
            .map(actual_monitor)
            .collect::<Result<Vec<_>, _>>()?;
        pools.push(ActualPool {
            uuid: parse_uuid("pool", &p.uuid)?,
            name: p.name.clone(),
            algorithm: p.algorithm.as_str().to_string(),
            protocol: p.protocol.as_str().to_string(),
            members,
            listeners,
            monitors,
        });
    }
    let floating_ips = snapshot
        .floating_ips
        .iter()
        .filter(|f| f.load_balancer.as_ref().is_some_and(|l| l.uuid == lb.uuid))
        .map(|f| f.network.clone())
        .collect();
    Ok(ActualLb {
        uuid: parse_uuid("load balancer", &lb.uuid)?,
        name: lb.name.clone(),
        flavor: lb.flavor.slug.clone(),
        zone: lb.zone.slug.clone(),
        status: lb.status.as_str().to_string(),
        vips,
        pools,
        floating_ips,
    })
}

fn actual_member(m: &PoolMember) -> Result<ActualMember, ApplyError> {
    Ok(ActualMember {
        uuid: parse_uuid("pool member", &m.uuid)?,
        member: Member {
            name: m.name.clone(),
            address: m.address,
            subnet: parse_uuid("member subnet", &m.subnet.uuid)?,
            protocol_port: m.protocol_port,
            // No monitor port: the monitor checks the protocol port.
            monitor_port: m.monitor_port.unwrap_or(m.protocol_port),
        },
        enabled: m.enabled,
    })
}

/// `10.0.0.0/8` as the map step writes it (`IpNet` display); anything unparsable verbatim.
fn network_string(cidr: &str) -> String {
    cidr.parse::<ipnet::IpNet>()
        .map(|n| n.to_string())
        .or_else(|_| {
            cidr.parse::<IpAddr>()
                .map(|a| ipnet::IpNet::from(a).to_string())
        })
        .unwrap_or_else(|_| cidr.to_string())
}

fn actual_listener(l: &api::Listener) -> Result<ActualListener, ApplyError> {
    Ok(ActualListener {
        uuid: parse_uuid("listener", &l.uuid)?,
        listener: Listener {
            name: l.name.clone(),
            protocol: l.protocol.as_str().to_string(),
            port: l.protocol_port,
            allowed_cidrs: l.allowed_cidrs.iter().map(|c| network_string(c)).collect(),
            timeout_client_data_ms: i64::from(l.timeout_client_data_ms),
            timeout_member_connect_ms: i64::from(l.timeout_member_connect_ms),
            timeout_member_data_ms: i64::from(l.timeout_member_data_ms),
        },
    })
}

fn actual_monitor(m: &HealthMonitor) -> Result<ActualMonitor, ApplyError> {
    Ok(ActualMonitor {
        uuid: parse_uuid("health monitor", &m.uuid)?,
        monitor: Monitor {
            kind: m.kind.as_str().to_string(),
            delay_s: i64::from(m.delay_s),
            timeout_s: i64::from(m.timeout_s),
            up_threshold: i64::from(m.up_threshold),
            down_threshold: i64::from(m.down_threshold),
            http: m.http.as_ref().map(|h| HttpCheck {
                method: h.method.clone(),
                url_path: h.url_path.clone(),
                version: h.version.clone(),
                host: h.host.clone(),
                expected_codes: h.expected_codes.clone(),
            }),
        },
    })
}

// ---------------------------------------------------------------------------------------------
// Executing a plan
// ---------------------------------------------------------------------------------------------

/// Polls the load balancer until it is no longer `changing` (every `poll`, up to `timeout`)
/// and returns it. 404 is [`ApplyError::Vanished`].
pub async fn wait_not_changing(
    client: &Client,
    uuid: Uuid,
    poll: Duration,
    timeout: Duration,
) -> Result<LoadBalancer, ApplyError> {
    let start = Instant::now();
    loop {
        let lb = client
            .get_load_balancer(&uuid.to_string())
            .await
            .map_err(api_err(format!("get load balancer {uuid}")))?
            .ok_or(ApplyError::Vanished { uuid })?;
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

/// Polls the pool's member list until every named member reports `up` or `no_monitor`.
async fn wait_members_up(
    client: &Client,
    pool: Uuid,
    names: &[String],
    opts: &ApplyOptions,
) -> Result<(), ApplyError> {
    let start = Instant::now();
    loop {
        let members = client
            .list_pool_members(&pool.to_string(), &Filter::all())
            .await
            .map_err(api_err(format!(
                "wait for new members: list members of pool {pool}"
            )))?;
        let pending: Vec<String> = names
            .iter()
            .filter_map(|n| match members.iter().find(|m| &m.name == n) {
                None => Some(format!("{n} (missing)")),
                Some(m) => match &m.monitor_status {
                    Some(MonitorStatus::Up | MonitorStatus::NoMonitor) => None,
                    Some(s) => Some(format!("{n} ({s})")),
                    None => Some(format!("{n} (no status)")),
                },
            })
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= opts.members_timeout {
            return Err(ApplyError::Timeout {
                what: format!("members of pool {pool} to be up: {}", pending.join(", ")),
                after: opts.members_timeout,
            });
        }
        tokio::time::sleep(opts.poll).await;
    }
}

fn u32_of(action: &str, field: &str, v: i64) -> Result<u32, ApplyError> {
    u32::try_from(v).map_err(|_| invalid(action, format!("{field} {v} is out of range")))
}

/// A short label of an action, for logs and errors.
fn label(a: &Action) -> String {
    match a {
        Action::CreateLb => "create load balancer".into(),
        Action::RenameLb { uuid, name } => format!("rename load balancer {uuid} to {name:?}"),
        Action::CreatePool {
            name,
            algorithm,
            protocol,
            ..
        } => format!("create pool {name} ({protocol}, {algorithm})"),
        Action::RenamePool { uuid, name } => format!("rename pool {uuid} to {name:?}"),
        Action::DeletePool { uuid, name } => format!("delete pool {name} ({uuid})"),
        Action::CreateMember { member, .. } => format!("create member {}", member.name),
        Action::EnableMember { uuid, .. } => format!("enable member {uuid}"),
        Action::RenameMember { uuid, name, .. } => format!("rename member {uuid} to {name:?}"),
        Action::DeleteMember { uuid, name, .. } => format!("delete member {name} ({uuid})"),
        Action::CreateListener { listener, .. } => format!(
            "create listener {} ({} {})",
            listener.name, listener.protocol, listener.port
        ),
        Action::UpdateListener { uuid, .. } => format!("update listener {uuid}"),
        Action::DeleteListener { uuid, name } => format!("delete listener {name} ({uuid})"),
        Action::CreateMonitor { monitor, .. } => format!("create {} health monitor", monitor.kind),
        Action::UpdateMonitor { uuid, .. } => format!("update health monitor {uuid}"),
        Action::DeleteMonitor { uuid } => format!("delete health monitor {uuid}"),
        Action::WaitMembersUp { members, .. } => {
            format!("wait until members {} are up", members.join(", "))
        }
        Action::AssignFloatingIp { network } => format!("assign floating IP {network}"),
    }
}

fn listener_update(action: &str, c: &ListenerChanges) -> Result<api::UpdateListener, ApplyError> {
    let t = |field: &str, v: Option<i64>| v.map(|v| u32_of(action, field, v)).transpose();
    Ok(api::UpdateListener {
        name: c.name.clone(),
        protocol: c.protocol.as_deref().map(api::ListenerProtocol::from),
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
        host: h.host.clone(),
    }
}

fn monitor_update(
    action: &str,
    c: &MonitorChanges,
) -> Result<api::UpdateHealthMonitor, ApplyError> {
    let n = |field: &str, v: Option<i64>| v.map(|v| u32_of(action, field, v)).transpose();
    Ok(api::UpdateHealthMonitor {
        delay_s: n("delay_s", c.delay_s)?,
        timeout_s: n("timeout_s", c.timeout_s)?,
        up_threshold: n("up_threshold", c.up_threshold)?,
        down_threshold: n("down_threshold", c.down_threshold)?,
        // The version is part of the monitor's identity (a change replaces the monitor), so
        // it is never PATCHed.
        http: c.http.as_ref().map(|h| api::HealthMonitorHttpRequest {
            version: None,
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
}

impl Run<'_> {
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

    async fn step(&mut self, action: &Action, what: &str) -> Result<(), ApplyError> {
        let c = self.client.clone();
        let idem = || Idempotency::NaturalKey;
        match action {
            Action::CreateLb => {
                let d = self.desired;
                let body = api::CreateLoadBalancer {
                    name: d.name.clone(),
                    flavor: d.flavor.clone(),
                    vip_addresses: d
                        .vips
                        .iter()
                        .flatten()
                        .map(|v| api::VipAddressRequest {
                            subnet: v.subnet.to_string(),
                            address: v.address.map(|a| a.to_string()),
                        })
                        .collect(),
                    zone: d.zone.clone(),
                    tags: self.tags.clone(),
                };
                let lb = c
                    .create_load_balancer(&body, idem())
                    .await
                    .map_err(api_err(what))?;
                let uuid = parse_uuid("load balancer", &lb.uuid)?;
                self.lb = Some(uuid);
                wait_not_changing(&c, uuid, self.opts.poll, self.opts.lb_timeout).await?;
            }
            Action::RenameLb { uuid, name } => {
                self.settle(what).await?;
                let body = api::UpdateLoadBalancer {
                    name: Some(name.clone()),
                    tags: None,
                };
                c.update_load_balancer(&uuid.to_string(), &body)
                    .await
                    .map_err(api_err(what))?;
            }
            Action::CreatePool {
                new,
                name,
                algorithm,
                protocol,
            } => {
                let lb = self.lb(what)?;
                if *new >= self.new_pools.len() {
                    return Err(invalid(what, format!("no desired pool #{new}")));
                }
                self.settle(what).await?;
                let body = api::CreatePool {
                    name: name.clone(),
                    load_balancer: lb.to_string(),
                    algorithm: api::PoolAlgorithm::from(algorithm.as_str()),
                    protocol: api::PoolProtocol::from(protocol.as_str()),
                    tags: self.tags.clone(),
                };
                let pool = c.create_pool(&body, idem()).await.map_err(api_err(what))?;
                self.new_pools[*new] = Some(parse_uuid("pool", &pool.uuid)?);
            }
            Action::RenamePool { uuid, name } => {
                self.settle(what).await?;
                let body = api::UpdatePool {
                    name: Some(name.clone()),
                    tags: None,
                };
                c.update_pool(&uuid.to_string(), &body)
                    .await
                    .map_err(api_err(what))?;
            }
            Action::DeletePool { uuid, .. } => {
                self.settle(what).await?;
                c.delete_pool(&uuid.to_string())
                    .await
                    .map_err(api_err(what))?;
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
                    .map_err(api_err(what))?;
            }
            Action::EnableMember { pool, uuid } => {
                self.settle(what).await?;
                let body = api::UpdatePoolMember {
                    enabled: Some(true),
                    ..Default::default()
                };
                c.update_pool_member(&pool.to_string(), &uuid.to_string(), &body)
                    .await
                    .map_err(api_err(what))?;
            }
            Action::RenameMember { pool, uuid, name } => {
                self.settle(what).await?;
                let body = api::UpdatePoolMember {
                    name: Some(name.clone()),
                    ..Default::default()
                };
                c.update_pool_member(&pool.to_string(), &uuid.to_string(), &body)
                    .await
                    .map_err(api_err(what))?;
            }
            Action::DeleteMember { pool, uuid, .. } => {
                self.settle(what).await?;
                c.delete_pool_member(&pool.to_string(), &uuid.to_string())
                    .await
                    .map_err(api_err(what))?;
            }
            Action::CreateListener { pool, listener } => {
                let pool = self.pool(what, pool)?;
                let body = api::CreateListener {
                    pool: pool.to_string(),
                    name: listener.name.clone(),
                    protocol: api::ListenerProtocol::from(listener.protocol.as_str()),
                    protocol_port: listener.port,
                    allowed_cidrs: listener.allowed_cidrs.clone(),
                    timeout_client_data_ms: Some(u32_of(
                        what,
                        "timeout_client_data_ms",
                        listener.timeout_client_data_ms,
                    )?),
                    timeout_member_connect_ms: Some(u32_of(
                        what,
                        "timeout_member_connect_ms",
                        listener.timeout_member_connect_ms,
                    )?),
                    timeout_member_data_ms: Some(u32_of(
                        what,
                        "timeout_member_data_ms",
                        listener.timeout_member_data_ms,
                    )?),
                    tags: self.tags.clone(),
                };
                self.settle(what).await?;
                c.create_listener(&body, idem())
                    .await
                    .map_err(api_err(what))?;
            }
            Action::UpdateListener { uuid, changes } => {
                if changes.is_empty() {
                    return Ok(());
                }
                let body = listener_update(what, changes)?;
                self.settle(what).await?;
                c.update_listener(&uuid.to_string(), &body)
                    .await
                    .map_err(api_err(what))?;
            }
            Action::DeleteListener { uuid, .. } => {
                self.settle(what).await?;
                c.delete_listener(&uuid.to_string())
                    .await
                    .map_err(api_err(what))?;
            }
            Action::CreateMonitor { pool, monitor } => {
                let pool = self.pool(what, pool)?;
                let body = api::CreateHealthMonitor {
                    pool: pool.to_string(),
                    kind: api::HealthMonitorType::from(monitor.kind.as_str()),
                    delay_s: Some(u32_of(what, "delay_s", monitor.delay_s)?),
                    timeout_s: Some(u32_of(what, "timeout_s", monitor.timeout_s)?),
                    up_threshold: Some(u32_of(what, "up_threshold", monitor.up_threshold)?),
                    down_threshold: Some(u32_of(what, "down_threshold", monitor.down_threshold)?),
                    http: monitor.http.as_ref().map(http_request).unwrap_or_default(),
                    tags: self.tags.clone(),
                };
                self.settle(what).await?;
                c.create_health_monitor(&body, idem())
                    .await
                    .map_err(api_err(what))?;
            }
            Action::UpdateMonitor { uuid, changes } => {
                if changes.is_empty() {
                    return Ok(());
                }
                let body = monitor_update(what, changes)?;
                self.settle(what).await?;
                c.update_health_monitor(&uuid.to_string(), &body)
                    .await
                    .map_err(api_err(what))?;
            }
            Action::DeleteMonitor { uuid } => {
                self.settle(what).await?;
                c.delete_health_monitor(&uuid.to_string())
                    .await
                    .map_err(api_err(what))?;
            }
            Action::WaitMembersUp { pool, members } => {
                let pool = self.pool(what, pool)?;
                let lb = self.lb(what)?;
                // Member health only means something once the load balancer has applied
                // every queued change (members and monitor included).
                wait_not_changing(&c, lb, self.opts.poll, self.opts.lb_timeout).await?;
                wait_members_up(&c, pool, members, self.opts).await?;
            }
            Action::AssignFloatingIp { network } => {
                let lb = self.lb(what)?;
                c.assign_floating_ip_to_load_balancer(network, &lb.to_string())
                    .await
                    .map_err(api_err(what))?;
            }
        }
        Ok(())
    }
}

/// Runs the plan's steps in order against the API and stops at the first failure (no
/// rollback: the next pass re-plans from what exists). `lb` is the load balancer the plan was
/// made against (`None` when the plan creates it); `tags` go on every created resource.
pub async fn execute(
    client: &Client,
    desired: &DesiredLb,
    lb: Option<&LoadBalancer>,
    plan: &Plan,
    opts: &ApplyOptions,
    tags: &Tags,
) -> Result<Outcome, ApplyError> {
    let lb = lb
        .map(|l| parse_uuid("load balancer", &l.uuid))
        .transpose()?;
    let mut run = Run {
        client: client.with_own_counters(),
        desired,
        opts,
        tags,
        lb,
        new_pools: vec![None; desired.pools.len()],
    };
    for (i, step) in plan.steps.iter().enumerate() {
        let what = label(&step.action);
        let started = Instant::now();
        match run.step(&step.action, &what).await {
            Ok(()) => tracing::info!(
                lb = %run.lb.map(|u| u.to_string()).unwrap_or_default(),
                step = i + 1,
                steps = plan.steps.len(),
                port = step.port.as_deref().unwrap_or(""),
                impact = %step.impact,
                action = %what,
                elapsed_ms = started.elapsed().as_millis() as u64,
                outcome = "done",
                "load balancer step"
            ),
            Err(e) => {
                tracing::warn!(
                    lb = %run.lb.map(|u| u.to_string()).unwrap_or_default(),
                    step = i + 1,
                    steps = plan.steps.len(),
                    port = step.port.as_deref().unwrap_or(""),
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
    let lb_uuid = run.lb("finish")?;
    let counts = run.client.counters();
    Ok(Outcome {
        lb_uuid,
        writes: counts.writes,
        reads: counts.reads,
    })
}
