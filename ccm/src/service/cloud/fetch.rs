//! Reading the actual state: the account-wide lists one sync reads once and shares across
//! Services ([`Snapshot`]), which load balancer is a Service's ([`fetch_in`], deciding with
//! [`ownership`](crate::service::pure::ownership)), and the planner's view of it ([`actual_from`]): one
//! member list per pool on top of the shared lists. Any API failure is an error, never
//! "absent".

use super::cloud_error::{ApplyError, api_err, invalid};
use crate::cloudscale::{self as api, Client, Filter, InterfaceType};
use crate::service::pure::map::{NodeView, ServerView};
use crate::service::pure::model::*;
use crate::service::pure::ownership::{self, Candidate, Claimant, Resolution, Seeker};
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use std::collections::HashMap;
use std::net::IpAddr;
use uuid::Uuid;

pub use crate::cloudscale::{FloatingIp, HealthMonitor, LoadBalancer, Pool, PoolMember};

pub fn node_view(n: &Node) -> NodeView {
    NodeView {
        name: n.name_any(),
        labels: n.labels().clone(),
        provider_id: crate::node::provider_id_of(n)
            .and_then(|p| crate::node::provider_id::parse(p).ok()),
        deleting: n.metadata.deletion_timestamp.is_some()
            || crate::node::metadata::has_taint(
                n,
                crate::service::pure::map::AUTOSCALER_DELETION_TAINT,
            ),
        ready: crate::node::lifecycle::ready(n),
    }
}

pub fn server_view(s: &api::Server) -> Option<ServerView> {
    let private = s
        .interfaces
        .iter()
        .filter(|i| i.kind != InterfaceType::Public)
        .flat_map(|i| i.addresses.iter())
        .filter_map(|a| Some((a.address, a.subnet.as_ref()?.uuid)))
        .collect();
    Some(ServerView {
        uuid: s.uuid,
        name: s.name.clone(),
        zone: s.zone.slug.clone(),
        private,
    })
}

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
        let (load_balancers, pools, listeners, monitors, floating_ips) = futures::try_join!(
            async {
                client
                    .list_load_balancers(&all)
                    .await
                    .map_err(api_err("list load balancers"))
            },
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
        )?;
        Ok(Snapshot {
            load_balancers,
            pools,
            listeners,
            monitors,
            floating_ips,
        })
    }

    /// The load balancer with `uuid`.
    pub fn load_balancer(&self, uuid: Uuid) -> Option<&LoadBalancer> {
        self.load_balancers.iter().find(|lb| lb.uuid == uuid)
    }

    /// What deleting the load balancer with `uuid` would remove, for a preview.
    pub fn doomed(&self, uuid: Uuid) -> Option<Doomed> {
        let lb = self.load_balancer(uuid)?;
        Some(Doomed {
            uuid,
            name: lb.name.clone(),
            addresses: lb.vip_addresses.iter().map(|v| v.address).collect(),
            floating_ips: self
                .floating_ips
                .iter()
                .filter(|f| f.load_balancer.as_ref().is_some_and(|l| l.uuid == uuid))
                .map(|f| f.network.clone())
                .collect(),
        })
    }

    /// The pools of a load balancer, in API order.
    pub fn pools_of<'a>(&'a self, lb: &'a LoadBalancer) -> impl Iterator<Item = &'a Pool> + 'a {
        self.pools
            .iter()
            .filter(move |p| p.load_balancer.uuid == lb.uuid)
    }
}

/// What a successful write did to the account-wide lists, so that the shared snapshot can
/// follow the CCM's own writes instead of being read again after each one (the API answers
/// a create with the whole object, and a delete removes exactly the object named). Writes
/// whose effect is not one of these (renames, PATCHes, pool deletions, floating IP
/// assignments, tags) discard the snapshot instead.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    LoadBalancer(LoadBalancer),
    Pool(Pool),
    Listener(api::Listener),
    Monitor(HealthMonitor),
    ListenerDeleted(Uuid),
    MonitorDeleted(Uuid),
    /// The load balancer applies a write (members included): it shows `changing`.
    Changing(Uuid),
}

/// Replaces the item with `uuid` or appends `item`.
fn upsert<T: Clone>(items: &mut Vec<T>, item: &T, uuid: impl Fn(&T) -> Uuid) {
    match items.iter_mut().find(|i| uuid(i) == uuid(item)) {
        Some(slot) => *slot = item.clone(),
        None => items.push(item.clone()),
    }
}

impl Snapshot {
    /// The snapshot as it is after `edit` (idempotent: applying it twice changes nothing).
    pub fn apply(&mut self, edit: &Edit) {
        match edit {
            Edit::LoadBalancer(lb) => upsert(&mut self.load_balancers, lb, |l| l.uuid),
            Edit::Pool(p) => upsert(&mut self.pools, p, |p| p.uuid),
            Edit::Listener(l) => upsert(&mut self.listeners, l, |l| l.uuid),
            Edit::Monitor(m) => upsert(&mut self.monitors, m, |m| m.uuid),
            Edit::ListenerDeleted(u) => self.listeners.retain(|l| l.uuid != *u),
            Edit::MonitorDeleted(u) => self.monitors.retain(|m| m.uuid != *u),
            Edit::Changing(u) => {
                for lb in self.load_balancers.iter_mut().filter(|l| l.uuid == *u) {
                    lb.status = api::LoadBalancerStatus::Changing;
                }
            }
        }
    }
}

/// A load balancer a deletion would remove: its VIP addresses go with it; the floating
/// IPs that point at it (their networks) stay in the account, unassigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doomed {
    pub uuid: Uuid,
    pub name: String,
    pub addresses: Vec<IpAddr>,
    pub floating_ips: Vec<String>,
}

/// Who is looking, for [`fetch_in`].
#[derive(Debug, Clone)]
pub struct Lookup<'a> {
    pub seeker: Seeker<'a>,
    pub cluster: &'a str,
    /// The cluster's other LoadBalancer Services.
    pub others: &'a [Claimant],
}

/// A Service's load balancer, as found.
#[derive(Debug, Clone)]
pub enum Found {
    /// None yet.
    Absent,
    /// Its own, or an untagged one it may adopt (the plan tags it), as the planner sees it.
    Mine(Box<ActualLb>),
    /// Not usable: another Service's, contested or ambiguous; why, in words.
    Refused(String),
}

/// Decides which load balancer of `snapshot` is the seeker's and reads its state (one member
/// list per pool).
pub async fn fetch_in(
    client: &Client,
    snapshot: &Snapshot,
    lookup: &Lookup<'_>,
) -> Result<Found, ApplyError> {
    let candidates = candidates(&snapshot.load_balancers);
    let r = ownership::resolve(&lookup.seeker, &candidates, lookup.cluster, lookup.others);
    let uuid = match &r {
        Resolution::None => return Ok(Found::Absent),
        Resolution::Owned(c) | Resolution::Adopt(c) => c.uuid,
        _ => {
            return Ok(Found::Refused(
                ownership::refusal(&r, lookup.seeker.uid).unwrap_or_default(),
            ));
        }
    };
    let lb = snapshot.load_balancer(uuid).ok_or_else(|| {
        invalid(
            "find the load balancer",
            format!("load balancer {uuid} is not in the list it was chosen from"),
        )
    })?;
    let members = fetch_members(client, snapshot.pools_of(lb)).await?;
    Ok(Found::Mine(Box::new(actual_from(snapshot, lb, &members)?)))
}

/// What ownership decides by, of each of `lbs`.
pub fn candidates(lbs: &[LoadBalancer]) -> Vec<Candidate<'_>> {
    lbs.iter().map(candidate).collect()
}

fn candidate(lb: &LoadBalancer) -> Candidate<'_> {
    Candidate {
        uuid: lb.uuid,
        name: &lb.name,
        tags: &lb.tags,
    }
}

/// A floating IP as the claims rule sees it (`reconcile::claims`): its network, region and
/// what it points at, borrowed from the snapshot.
#[derive(Debug, Clone, Copy)]
pub struct FloatingIpView<'a> {
    pub network: ipnet::IpNet,
    pub region: Option<&'a str>,
    pub target: Option<FipTarget<'a>>,
}

/// Where a floating IP points.
#[derive(Debug, Clone, Copy)]
pub enum FipTarget<'a> {
    Server {
        uuid: Uuid,
        name: Option<&'a str>,
    },
    /// `lb`: the load balancer itself, when the account lists it (the floating IP's stub
    /// names it either way).
    LoadBalancer {
        uuid: Uuid,
        name: &'a str,
        lb: Option<Candidate<'a>>,
    },
}

/// The account's floating IPs for the claims rule; one whose network does not parse is
/// left out (no Service can name it).
pub fn floating_ip_views<'a>(
    fips: &'a [FloatingIp],
    lbs: &'a [LoadBalancer],
) -> Vec<FloatingIpView<'a>> {
    fips.iter()
        .filter_map(|f| {
            let target = match (&f.server, &f.load_balancer) {
                (Some(s), _) => Some(FipTarget::Server {
                    uuid: s.uuid,
                    name: s.name.as_deref(),
                }),
                (None, Some(stub)) => Some(FipTarget::LoadBalancer {
                    uuid: stub.uuid,
                    name: &stub.name,
                    lb: lbs.iter().find(|l| l.uuid == stub.uuid).map(candidate),
                }),
                (None, None) => None,
            };
            Some(FloatingIpView {
                network: network(&f.network)?,
                region: f.region.as_ref().map(|r| r.slug.as_str()),
                target,
            })
        })
        .collect()
}

/// [`fetch_in`] on a fresh snapshot.
pub async fn fetch(client: &Client, lookup: &Lookup<'_>) -> Result<Found, ApplyError> {
    let snapshot = Snapshot::fetch(client).await?;
    fetch_in(client, &snapshot, lookup).await
}

/// Lists the members of each pool (one request per pool, concurrently), keyed by pool UUID.
pub async fn fetch_members<'a>(
    client: &Client,
    pools: impl IntoIterator<Item = &'a Pool>,
) -> Result<HashMap<Uuid, Vec<PoolMember>>, ApplyError> {
    let lists = futures::future::try_join_all(pools.into_iter().map(|p| async move {
        let members = client
            .list_pool_members(p.uuid, &Filter::all())
            .await
            .map_err(api_err(format!(
                "list members of pool {} ({})",
                p.name, p.uuid
            )))?;
        Ok::<_, ApplyError>((p.uuid, members))
    }))
    .await?;
    Ok(lists.into_iter().collect())
}

/// Builds the planner's view of `lb` from account-wide lists and the member lists of its
/// pools (keyed by pool UUID; a pool without an entry is an error, never "no members").
pub fn actual_from(
    snapshot: &Snapshot,
    lb: &LoadBalancer,
    members_by_pool: &HashMap<Uuid, Vec<PoolMember>>,
) -> Result<ActualLb, ApplyError> {
    let mut vips = Vec::new();
    for v in &lb.vip_addresses {
        let subnet = v.subnet.as_ref().map_or(Uuid::nil(), |s| s.uuid);
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
        let members = members.iter().map(actual_member).collect();
        let listeners = snapshot
            .listeners
            .iter()
            .filter(|l| l.pool.as_ref().is_some_and(|s| s.uuid == p.uuid))
            .map(actual_listener)
            .collect();
        let monitors = snapshot
            .monitors
            .iter()
            .filter(|m| m.pool.uuid == p.uuid)
            .map(actual_monitor)
            .collect();
        pools.push(ActualPool {
            uuid: p.uuid,
            name: p.name.clone(),
            algorithm: p.algorithm.clone(),
            protocol: p.protocol.clone(),
            members,
            listeners,
            monitors,
        });
    }
    let orphan_listeners = snapshot
        .listeners
        .iter()
        .filter(|l| l.pool.is_none() && l.load_balancer.uuid == lb.uuid)
        .map(actual_listener)
        .collect();
    let floating_ips = snapshot
        .floating_ips
        .iter()
        .filter(|f| f.load_balancer.as_ref().is_some_and(|l| l.uuid == lb.uuid))
        .filter_map(|f| network(&f.network))
        .collect();
    Ok(ActualLb {
        uuid: lb.uuid,
        name: lb.name.clone(),
        flavor: lb.flavor.slug.clone(),
        zone: lb.zone.slug.clone(),
        status: lb.status.clone(),
        vips,
        pools,
        orphan_listeners,
        floating_ips,
        tags: lb.tags.clone(),
    })
}

/// A floating IP's `network` (or a bare address) as a network.
pub fn network(s: &str) -> Option<ipnet::IpNet> {
    s.parse::<ipnet::IpNet>()
        .ok()
        .or_else(|| s.parse::<IpAddr>().ok().map(ipnet::IpNet::from))
}

fn actual_member(m: &PoolMember) -> ActualMember {
    ActualMember {
        uuid: m.uuid,
        member: Member {
            name: m.name.clone(),
            address: m.address,
            subnet: m.subnet.uuid,
            protocol_port: m.protocol_port,
            // No monitor port: the monitor checks the protocol port.
            monitor_port: m.monitor_port.unwrap_or(m.protocol_port),
        },
        enabled: m.enabled,
        health: m.monitor_status.clone().unwrap_or(MonitorStatus::Unknown),
    }
}

/// `10.0.0.0/8` as the map step writes it (`IpNet` display); anything unparsable verbatim.
fn network_string(cidr: &str) -> String {
    network(cidr).map_or_else(|| cidr.to_string(), |n| n.to_string())
}

fn actual_listener(l: &api::Listener) -> ActualListener {
    ActualListener {
        uuid: l.uuid,
        listener: Listener {
            name: l.name.clone(),
            protocol: l.protocol.clone(),
            port: l.protocol_port,
            allowed_cidrs: l.allowed_cidrs.iter().map(|c| network_string(c)).collect(),
            timeout_client_data_ms: i64::from(l.timeout_client_data_ms),
            timeout_member_connect_ms: i64::from(l.timeout_member_connect_ms),
            timeout_member_data_ms: i64::from(l.timeout_member_data_ms),
        },
    }
}

fn actual_monitor(m: &HealthMonitor) -> ActualMonitor {
    ActualMonitor {
        uuid: m.uuid,
        monitor: Monitor {
            kind: m.kind.clone(),
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
    }
}
