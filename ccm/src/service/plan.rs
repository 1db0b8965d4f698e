//! Planning: desired × actual → ordered actions, each with its impact class. Pure.
//!
//! Where the reference deletes before it creates (its 15 s and 60-120 s outages), this
//! planner makes before it breaks, within what the API allows:
//!
//! - a renamed port renames its pool and listener in place;
//! - a changed port number PATCHes the listener's `protocol_port`;
//! - a changed pool algorithm or protocol (immutable) builds a new pool with its members and
//!   monitor, waits until the members are up, replaces the listener (a listener's pool is
//!   immutable and a port takes one listener), then deletes the old pool: a listener
//!   recreation instead of a pool recreation;
//! - changed members (node ports, health-check node port, nodes joining or leaving) are
//!   created first and waited for, and only then are the old ones deleted;
//! - a monitor whose type or HTTP version changes is replaced (a pool has one monitor); its
//!   members are briefly re-checked: minimal impact.
//!
//! Refused changes (flavor, zone, VIP addresses) leave the load balancer untouched in those
//! respects; every other pending change still applies, and the refusal is reported.

use super::model::*;
use std::fmt;
use uuid::Uuid;

/// How much a change disturbs new connections, in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Impact {
    /// No effect on connections.
    None,
    /// New connections may be affected briefly (a few seconds at most).
    Minimal,
    /// A port is unavailable while its listener is recreated (about 10-15 s).
    ListenerRecreate,
    /// A port's members are all replaced at once (the reference's policy switch).
    MemberRecreate,
    /// A port's pool is deleted and rebuilt (60-120 s in the reference).
    PoolRecreate,
    /// Not done: the change needs the Service to be re-created.
    Refused,
}

impl fmt::Display for Impact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Impact::None => "none",
            Impact::Minimal => "minimal",
            Impact::ListenerRecreate => "listener-recreate",
            Impact::MemberRecreate => "member-recreate",
            Impact::PoolRecreate => "pool-recreate",
            Impact::Refused => "refused",
        })
    }
}

/// A pool an action refers to: one that exists, or one an earlier action of the plan
/// creates (by its index in the desired pools, plus a marker for replacements).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolRef {
    Existing(Uuid),
    New(usize),
}

/// In-place listener changes (only what differs is `Some`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerChanges {
    pub name: Option<String>,
    pub protocol: Option<String>,
    pub port: Option<u16>,
    pub allowed_cidrs: Option<Vec<String>>,
    pub timeout_client_data_ms: Option<i64>,
    pub timeout_member_connect_ms: Option<i64>,
    pub timeout_member_data_ms: Option<i64>,
}

impl ListenerChanges {
    fn between(actual: &Listener, desired: &Listener) -> ListenerChanges {
        ListenerChanges {
            name: (actual.name != desired.name).then(|| desired.name.clone()),
            protocol: (actual.protocol != desired.protocol).then(|| desired.protocol.clone()),
            port: (actual.port != desired.port).then_some(desired.port),
            allowed_cidrs: (actual.allowed_cidrs != desired.allowed_cidrs)
                .then(|| desired.allowed_cidrs.clone()),
            timeout_client_data_ms: (actual.timeout_client_data_ms
                != desired.timeout_client_data_ms)
                .then_some(desired.timeout_client_data_ms),
            timeout_member_connect_ms: (actual.timeout_member_connect_ms
                != desired.timeout_member_connect_ms)
                .then_some(desired.timeout_member_connect_ms),
            timeout_member_data_ms: (actual.timeout_member_data_ms
                != desired.timeout_member_data_ms)
                .then_some(desired.timeout_member_data_ms),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == ListenerChanges::default()
    }
}

/// In-place monitor changes (only what differs is `Some`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MonitorChanges {
    pub delay_s: Option<i64>,
    pub timeout_s: Option<i64>,
    pub up_threshold: Option<i64>,
    pub down_threshold: Option<i64>,
    pub http: Option<HttpCheck>,
}

impl MonitorChanges {
    fn between(actual: &Monitor, desired: &Monitor) -> MonitorChanges {
        MonitorChanges {
            delay_s: (actual.delay_s != desired.delay_s).then_some(desired.delay_s),
            timeout_s: (actual.timeout_s != desired.timeout_s).then_some(desired.timeout_s),
            up_threshold: (actual.up_threshold != desired.up_threshold)
                .then_some(desired.up_threshold),
            down_threshold: (actual.down_threshold != desired.down_threshold)
                .then_some(desired.down_threshold),
            http: match (&actual.http, &desired.http) {
                (Some(a), Some(d)) if a != d => Some(d.clone()),
                _ => None,
            },
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == MonitorChanges::default()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    CreateLb,
    RenameLb {
        uuid: Uuid,
        name: String,
    },
    CreatePool {
        new: usize,
        name: String,
        algorithm: String,
        protocol: String,
    },
    RenamePool {
        uuid: Uuid,
        name: String,
    },
    DeletePool {
        uuid: Uuid,
        name: String,
    },
    CreateMember {
        pool: PoolRef,
        member: Member,
    },
    EnableMember {
        pool: Uuid,
        uuid: Uuid,
    },
    RenameMember {
        pool: Uuid,
        uuid: Uuid,
        name: String,
    },
    DeleteMember {
        pool: Uuid,
        uuid: Uuid,
        name: String,
    },
    CreateListener {
        pool: PoolRef,
        listener: Listener,
    },
    UpdateListener {
        uuid: Uuid,
        changes: ListenerChanges,
    },
    DeleteListener {
        uuid: Uuid,
        name: String,
    },
    CreateMonitor {
        pool: PoolRef,
        monitor: Monitor,
    },
    UpdateMonitor {
        uuid: Uuid,
        changes: MonitorChanges,
    },
    DeleteMonitor {
        uuid: Uuid,
    },
    /// Make-before-break barrier: wait until these members of the pool report `up` (or
    /// `no_monitor`) before going on.
    WaitMembersUp {
        pool: PoolRef,
        members: Vec<String>,
    },
    AssignFloatingIp {
        network: String,
    },
}

impl Action {
    /// Whether it writes to the API (waits do not).
    pub fn is_write(&self) -> bool {
        !matches!(self, Action::WaitMembersUp { .. })
    }

    /// A short name for the kind of action (`create-member`, `update-listener`, …), for
    /// logs and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::CreateLb => "create-lb",
            Action::RenameLb { .. } => "rename-lb",
            Action::CreatePool { .. } => "create-pool",
            Action::RenamePool { .. } => "rename-pool",
            Action::DeletePool { .. } => "delete-pool",
            Action::CreateMember { .. } => "create-member",
            Action::EnableMember { .. } => "enable-member",
            Action::RenameMember { .. } => "rename-member",
            Action::DeleteMember { .. } => "delete-member",
            Action::CreateListener { .. } => "create-listener",
            Action::UpdateListener { .. } => "update-listener",
            Action::DeleteListener { .. } => "delete-listener",
            Action::CreateMonitor { .. } => "create-monitor",
            Action::UpdateMonitor { .. } => "update-monitor",
            Action::DeleteMonitor { .. } => "delete-monitor",
            Action::WaitMembersUp { .. } => "wait",
            Action::AssignFloatingIp { .. } => "assign-fip",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The annotation whose change is refused.
    pub annotation: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    pub impact: Impact,
    /// Which Service port (pool name) it concerns, for messages.
    pub port: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub refusals: Vec<Refusal>,
}

impl Plan {
    /// The worst impact of the plan (refusals count as `Refused`).
    pub fn impact(&self) -> Impact {
        let worst = self
            .steps
            .iter()
            .map(|s| s.impact)
            .max()
            .unwrap_or(Impact::None);
        if self.refusals.is_empty() {
            worst
        } else {
            worst.max(Impact::Refused)
        }
    }

    pub fn is_converged(&self) -> bool {
        self.steps.is_empty()
    }

    /// A one-line-per-step description, for Events and the `plan` preview.
    pub fn describe(&self) -> String {
        let mut out = Vec::new();
        for s in &self.steps {
            let port = s
                .port
                .as_deref()
                .map(|p| format!(" [{p}]"))
                .unwrap_or_default();
            out.push(format!(
                "{}{port}: {}",
                s.impact,
                describe_action(&s.action)
            ));
        }
        for r in &self.refusals {
            out.push(format!("refused: {} ({})", r.message, r.annotation));
        }
        out.join("\n")
    }
}

fn describe_action(a: &Action) -> String {
    match a {
        Action::CreateLb => "create load balancer".into(),
        Action::RenameLb { name, .. } => format!("rename load balancer to {name}"),
        Action::CreatePool {
            name,
            algorithm,
            protocol,
            ..
        } => format!("create pool {name} ({protocol}, {algorithm})"),
        Action::RenamePool { name, .. } => format!("rename pool to {name}"),
        Action::DeletePool { name, .. } => format!("delete pool {name}"),
        Action::CreateMember { member, .. } => format!("add member {}", member.name),
        Action::EnableMember { uuid, .. } => format!("enable member {uuid}"),
        Action::RenameMember { name, .. } => format!("rename member to {name}"),
        Action::DeleteMember { name, .. } => format!("remove member {name}"),
        Action::CreateListener { listener, .. } => format!(
            "create listener {} ({} {})",
            listener.name, listener.protocol, listener.port
        ),
        Action::UpdateListener { changes, .. } => format!("update listener {changes:?}"),
        Action::DeleteListener { name, .. } => format!("delete listener {name}"),
        Action::CreateMonitor { monitor, .. } => format!("create {} health monitor", monitor.kind),
        Action::UpdateMonitor { changes, .. } => format!("update health monitor {changes:?}"),
        Action::DeleteMonitor { .. } => "delete health monitor".into(),
        Action::WaitMembersUp { members, .. } => {
            format!("wait until {} new member(s) are up", members.len())
        }
        Action::AssignFloatingIp { network } => format!("assign floating IP {network}"),
    }
}

pub const ANNOTATION_FLAVOR: &str = "k8s.cloudscale.ch/loadbalancer-flavor";
pub const ANNOTATION_ZONE: &str = "k8s.cloudscale.ch/loadbalancer-zone";
pub const ANNOTATION_VIPS: &str = "k8s.cloudscale.ch/loadbalancer-vip-addresses";

struct Builder {
    steps: Vec<Step>,
}

impl Builder {
    fn push(&mut self, action: Action, impact: Impact, port: &str) {
        self.steps.push(Step {
            action,
            impact,
            port: Some(port.to_string()),
        });
    }
}

/// Which actual pool serves a desired one: the same name, else the pool whose listener has
/// the same protocol and port (a renamed port), never one already taken.
fn match_pools(desired: &[DesiredPool], actual: &[ActualPool]) -> Vec<Option<usize>> {
    let mut taken = vec![false; actual.len()];
    let mut out = vec![None; desired.len()];
    for (i, d) in desired.iter().enumerate() {
        if let Some(j) = actual
            .iter()
            .enumerate()
            .position(|(j, a)| !taken[j] && a.name == d.name)
        {
            taken[j] = true;
            out[i] = Some(j);
        }
    }
    for (i, d) in desired.iter().enumerate() {
        if out[i].is_some() {
            continue;
        }
        let same_port = |a: &ActualPool| {
            a.listeners.iter().any(|l| {
                l.listener.port == d.listener.port && l.listener.protocol == d.listener.protocol
            })
        };
        if let Some(j) = actual
            .iter()
            .enumerate()
            .position(|(j, a)| !taken[j] && same_port(a))
        {
            taken[j] = true;
            out[i] = Some(j);
        }
    }
    out
}

/// Creates a whole new pool (members, monitor, listener).
fn build_pool(b: &mut Builder, new: usize, d: &DesiredPool, with_listener: bool, impact: Impact) {
    b.push(
        Action::CreatePool {
            new,
            name: d.name.clone(),
            algorithm: d.algorithm.clone(),
            protocol: d.protocol.clone(),
        },
        impact,
        &d.name,
    );
    for m in &d.members {
        b.push(
            Action::CreateMember {
                pool: PoolRef::New(new),
                member: m.clone(),
            },
            impact,
            &d.name,
        );
    }
    b.push(
        Action::CreateMonitor {
            pool: PoolRef::New(new),
            monitor: d.monitor.clone(),
        },
        impact,
        &d.name,
    );
    if with_listener {
        b.push(
            Action::CreateListener {
                pool: PoolRef::New(new),
                listener: d.listener.clone(),
            },
            impact,
            &d.name,
        );
    }
}

/// Brings one existing pool in line with its desired state.
fn update_pool(b: &mut Builder, new_index: usize, d: &DesiredPool, a: &ActualPool) {
    let port = d.name.as_str();
    if a.algorithm != d.algorithm || a.protocol != d.protocol {
        // Immutable attributes: build the replacement next to it, switch the listener over
        // once its members are up, then drop the old pool with everything in it.
        build_pool(b, new_index, d, false, Impact::ListenerRecreate);
        if !d.members.is_empty() {
            b.push(
                Action::WaitMembersUp {
                    pool: PoolRef::New(new_index),
                    members: d.members.iter().map(|m| m.name.clone()).collect(),
                },
                Impact::ListenerRecreate,
                port,
            );
        }
        for l in &a.listeners {
            b.push(
                Action::DeleteListener {
                    uuid: l.uuid,
                    name: l.listener.name.clone(),
                },
                Impact::ListenerRecreate,
                port,
            );
        }
        b.push(
            Action::CreateListener {
                pool: PoolRef::New(new_index),
                listener: d.listener.clone(),
            },
            Impact::ListenerRecreate,
            port,
        );
        b.push(
            Action::DeletePool {
                uuid: a.uuid,
                name: a.name.clone(),
            },
            Impact::None,
            port,
        );
        return;
    }
    if a.name != d.name {
        b.push(
            Action::RenamePool {
                uuid: a.uuid,
                name: d.name.clone(),
            },
            Impact::None,
            port,
        );
    }
    let pool = PoolRef::Existing(a.uuid);

    // Members: keep those whose immutable identity matches (renaming/enabling in place),
    // create the missing ones first, delete the surplus last.
    let mut kept = vec![false; a.members.len()];
    let mut created = Vec::new();
    for m in &d.members {
        match a
            .members
            .iter()
            .enumerate()
            .find(|(j, am)| !kept[*j] && am.member.identity() == m.identity())
        {
            Some((j, am)) => {
                kept[j] = true;
                if am.member.name != m.name {
                    b.push(
                        Action::RenameMember {
                            pool: a.uuid,
                            uuid: am.uuid,
                            name: m.name.clone(),
                        },
                        Impact::None,
                        port,
                    );
                }
                if !am.enabled {
                    b.push(
                        Action::EnableMember {
                            pool: a.uuid,
                            uuid: am.uuid,
                        },
                        Impact::Minimal,
                        port,
                    );
                }
            }
            None => {
                created.push(m.name.clone());
                b.push(
                    Action::CreateMember {
                        pool: pool.clone(),
                        member: m.clone(),
                    },
                    Impact::Minimal,
                    port,
                );
            }
        }
    }

    // The monitor: one per pool.
    let mut monitors = a.monitors.iter();
    match monitors.next() {
        None => b.push(
            Action::CreateMonitor {
                pool: pool.clone(),
                monitor: d.monitor.clone(),
            },
            Impact::Minimal,
            port,
        ),
        Some(m) if m.monitor.identity() != d.monitor.identity() => {
            b.push(
                Action::DeleteMonitor { uuid: m.uuid },
                Impact::Minimal,
                port,
            );
            b.push(
                Action::CreateMonitor {
                    pool: pool.clone(),
                    monitor: d.monitor.clone(),
                },
                Impact::Minimal,
                port,
            );
        }
        Some(m) => {
            let changes = MonitorChanges::between(&m.monitor, &d.monitor);
            if !changes.is_empty() {
                b.push(
                    Action::UpdateMonitor {
                        uuid: m.uuid,
                        changes,
                    },
                    Impact::Minimal,
                    port,
                );
            }
        }
    }
    for extra in monitors {
        b.push(
            Action::DeleteMonitor { uuid: extra.uuid },
            Impact::Minimal,
            port,
        );
    }

    // New members must carry traffic before old ones go.
    let removing = a.members.iter().zip(&kept).any(|(_, k)| !k);
    if !created.is_empty() && removing {
        b.push(
            Action::WaitMembersUp {
                pool: pool.clone(),
                members: created,
            },
            Impact::Minimal,
            port,
        );
    }

    // The listener: changed in place (name, port, protocol, CIDRs, timeouts).
    let mut listeners = a.listeners.iter();
    match listeners.next() {
        None => b.push(
            Action::CreateListener {
                pool,
                listener: d.listener.clone(),
            },
            Impact::None,
            port,
        ),
        Some(l) => {
            let changes = ListenerChanges::between(&l.listener, &d.listener);
            if !changes.is_empty() {
                // A new port or protocol moves traffic to another entry point: brief.
                let impact = if changes.port.is_some()
                    || changes.protocol.is_some()
                    || changes.allowed_cidrs.is_some()
                {
                    Impact::Minimal
                } else {
                    Impact::None
                };
                b.push(
                    Action::UpdateListener {
                        uuid: l.uuid,
                        changes,
                    },
                    impact,
                    port,
                );
            }
        }
    }
    for extra in listeners {
        b.push(
            Action::DeleteListener {
                uuid: extra.uuid,
                name: extra.listener.name.clone(),
            },
            Impact::None,
            port,
        );
    }

    for (am, k) in a.members.iter().zip(&kept) {
        if !k {
            b.push(
                Action::DeleteMember {
                    pool: a.uuid,
                    uuid: am.uuid,
                    name: am.member.name.clone(),
                },
                Impact::Minimal,
                port,
            );
        }
    }
}

/// Plans the way from `actual` (or nothing) to `desired`.
pub fn plan(desired: &DesiredLb, actual: Option<&ActualLb>) -> Plan {
    let mut b = Builder { steps: Vec::new() };
    let mut refusals = Vec::new();
    let Some(actual) = actual else {
        b.steps.push(Step {
            action: Action::CreateLb,
            impact: Impact::None,
            port: None,
        });
        for (i, d) in desired.pools.iter().enumerate() {
            build_pool(&mut b, i, d, true, Impact::None);
        }
        for f in &desired.floating_ips {
            b.steps.push(Step {
                action: Action::AssignFloatingIp { network: f.clone() },
                impact: Impact::Minimal,
                port: None,
            });
        }
        return Plan {
            steps: b.steps,
            refusals,
        };
    };

    if actual.flavor != desired.flavor {
        refusals.push(Refusal {
            annotation: ANNOTATION_FLAVOR,
            message: format!(
                "the flavor of a load balancer cannot change ({} is running, {} is asked for): put back {} or re-create the Service",
                actual.flavor, desired.flavor, actual.flavor
            ),
        });
    }
    if let Some(zone) = &desired.zone
        && *zone != actual.zone
    {
        refusals.push(Refusal {
            annotation: ANNOTATION_ZONE,
            message: format!(
                "the zone of a load balancer cannot change ({} is running, {zone} is asked for): put back {} or re-create the Service",
                actual.zone, actual.zone
            ),
        });
    }
    if let Some(vips) = &desired.vips {
        let same = vips.len() == actual.vips.len()
            && vips.iter().zip(&actual.vips).all(|(d, (subnet, addr))| {
                d.subnet == *subnet && d.address.is_none_or(|x| x == *addr)
            });
        // An empty list on a load balancer with public VIPs asks for nothing specific.
        if !same && !vips.is_empty() {
            refusals.push(Refusal {
                annotation: ANNOTATION_VIPS,
                message: "the VIP addresses of a load balancer cannot change: put back the previous value or re-create the Service".into(),
            });
        }
    }
    if actual.name != desired.name {
        b.steps.push(Step {
            action: Action::RenameLb {
                uuid: actual.uuid,
                name: desired.name.clone(),
            },
            impact: Impact::None,
            port: None,
        });
    }

    let matches = match_pools(&desired.pools, &actual.pools);
    for (i, d) in desired.pools.iter().enumerate() {
        match matches[i] {
            Some(j) => update_pool(&mut b, i, d, &actual.pools[j]),
            None => build_pool(&mut b, i, d, true, Impact::None),
        }
    }
    for (j, a) in actual.pools.iter().enumerate() {
        if !matches.contains(&Some(j)) {
            b.push(
                Action::DeletePool {
                    uuid: a.uuid,
                    name: a.name.clone(),
                },
                Impact::None,
                &a.name,
            );
        }
    }
    for f in &desired.floating_ips {
        if !actual.floating_ips.contains(f) {
            b.steps.push(Step {
                action: Action::AssignFloatingIp { network: f.clone() },
                impact: Impact::Minimal,
                port: None,
            });
        }
    }
    Plan {
        steps: b.steps,
        refusals,
    }
}

/// The state a load balancer would have once `desired` is fully applied (for tests and
/// property checks: planning against it must find nothing to do).
pub fn converged(desired: &DesiredLb) -> ActualLb {
    let id = |s: &str| Uuid::new_v5(&Uuid::NAMESPACE_OID, s.as_bytes());
    ActualLb {
        uuid: id(&desired.name),
        name: desired.name.clone(),
        flavor: desired.flavor.clone(),
        zone: desired.zone.clone().unwrap_or_else(|| "rma1".into()),
        status: "running".into(),
        vips: desired
            .vips
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|v| {
                (
                    v.subnet,
                    v.address.unwrap_or(std::net::IpAddr::from([10, 0, 0, 100])),
                )
            })
            .collect(),
        pools: desired
            .pools
            .iter()
            .map(|p| ActualPool {
                uuid: id(&format!("pool/{}", p.name)),
                name: p.name.clone(),
                algorithm: p.algorithm.clone(),
                protocol: p.protocol.clone(),
                members: p
                    .members
                    .iter()
                    .map(|m| ActualMember {
                        uuid: id(&format!("member/{}/{}", p.name, m.name)),
                        member: m.clone(),
                        enabled: true,
                    })
                    .collect(),
                listeners: vec![ActualListener {
                    uuid: id(&format!("listener/{}", p.name)),
                    listener: p.listener.clone(),
                }],
                monitors: vec![ActualMonitor {
                    uuid: id(&format!("monitor/{}", p.name)),
                    monitor: p.monitor.clone(),
                }],
            })
            .collect(),
        floating_ips: desired.floating_ips.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::fixtures::Sample;
    use std::net::IpAddr;

    fn sample() -> Sample {
        Sample {
            subnet: Uuid::from_u128(0x0b4e4b9a_9d1b_4bd3_9a39_6b2c1a8b3c6d),
            nodes: vec![ip("10.0.0.11"), ip("10.0.0.12")],
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn member(address: &str, node_port: u16) -> Member {
        sample().member(ip(address), node_port)
    }

    fn pool(name: &str, port: u16, node_port: u16) -> DesiredPool {
        sample().pool(name, port, node_port)
    }

    fn desired() -> DesiredLb {
        sample().desired()
    }

    fn kinds(p: &Plan) -> Vec<&'static str> {
        p.steps.iter().map(|s| s.action.kind()).collect()
    }

    #[test]
    fn a_converged_load_balancer_plans_nothing() {
        let d = desired();
        let p = plan(&d, Some(&converged(&d)));
        assert!(p.is_converged(), "{}", p.describe());
        assert_eq!(p.impact(), Impact::None);
    }

    #[test]
    fn a_new_service_builds_everything_once() {
        let p = plan(&desired(), None);
        let k = kinds(&p);
        assert_eq!(k[0], "create-lb");
        assert_eq!(k.iter().filter(|k| **k == "create-pool").count(), 2);
        assert_eq!(k.iter().filter(|k| **k == "create-member").count(), 4);
        assert_eq!(k.iter().filter(|k| **k == "create-listener").count(), 2);
        assert_eq!(k.iter().filter(|k| **k == "create-monitor").count(), 2);
        assert_eq!(p.impact(), Impact::None);
    }

    #[test]
    fn a_renamed_port_renames_pool_and_listener_in_place() {
        let before = desired();
        let mut after = before.clone();
        after.pools[0].name = "tcp/web".into();
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(kinds(&p), ["rename-pool"], "{}", p.describe());
        assert_eq!(p.impact(), Impact::None);
    }

    #[test]
    fn a_renumbered_port_patches_the_listener() {
        let before = desired();
        let mut after = before.clone();
        after.pools[0].listener.port = 8080;
        after.pools[0].listener.name = "tcp/8080".into();
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(kinds(&p), ["update-listener"], "{}", p.describe());
        let Action::UpdateListener { changes, .. } = &p.steps[0].action else {
            panic!("not an update")
        };
        assert_eq!(changes.port, Some(8080));
        assert_eq!(changes.name.as_deref(), Some("tcp/8080"));
        assert!(p.impact() <= Impact::Minimal);
    }

    #[test]
    fn an_algorithm_change_builds_a_new_pool_before_switching_the_listener() {
        let before = desired();
        let mut after = before.clone();
        after.pools[0].algorithm = "least_connections".into();
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(
            kinds(&p),
            [
                "create-pool",
                "create-member",
                "create-member",
                "create-monitor",
                "wait",
                "delete-listener",
                "create-listener",
                "delete-pool"
            ],
            "{}",
            p.describe()
        );
        assert_eq!(
            p.impact(),
            Impact::ListenerRecreate,
            "better than the reference's pool recreation"
        );
    }

    #[test]
    fn a_node_port_change_adds_new_members_before_removing_old_ones() {
        let before = desired();
        let mut after = before.clone();
        after.pools[1] = pool("tcp/https", 443, 31443);
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(
            kinds(&p),
            [
                "create-member",
                "create-member",
                "wait",
                "delete-member",
                "delete-member"
            ],
            "{}",
            p.describe()
        );
        assert_eq!(p.impact(), Impact::Minimal);
    }

    #[test]
    fn a_joining_node_costs_only_its_members() {
        let before = desired();
        let mut after = before.clone();
        for p in &mut after.pools {
            let np = p.members[0].protocol_port;
            p.members.push(member("10.0.0.13", np));
        }
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(kinds(&p), ["create-member", "create-member"]);
        assert_eq!(p.impact(), Impact::Minimal);
    }

    #[test]
    fn a_monitor_type_change_replaces_the_monitor_and_fields_update_in_place() {
        let before = desired();
        let mut after = before.clone();
        after.pools[0].monitor.delay_s = 5;
        after.pools[1].monitor.kind = "http".into();
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(
            kinds(&p),
            ["update-monitor", "delete-monitor", "create-monitor"],
            "{}",
            p.describe()
        );
        assert_eq!(p.impact(), Impact::Minimal);
    }

    #[test]
    fn timeouts_and_names_are_impact_free() {
        let before = desired();
        let mut after = before.clone();
        after.name = "renamed".into();
        after.pools[0].listener.timeout_client_data_ms = 60000;
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(kinds(&p), ["rename-lb", "update-listener"]);
        assert_eq!(p.impact(), Impact::None);
    }

    #[test]
    fn flavor_zone_and_vip_changes_are_refused_but_the_rest_applies() {
        let before = desired();
        let mut after = before.clone();
        after.flavor = "lb-large".into();
        after.zone = Some("lpg1".into());
        after.vips = Some(vec![Vip {
            subnet: sample().subnet,
            address: None,
        }]);
        after.pools[0].listener.timeout_member_data_ms = 1;
        let p = plan(&after, Some(&converged(&before)));
        let refused: Vec<&str> = p.refusals.iter().map(|r| r.annotation).collect();
        assert_eq!(
            refused,
            [ANNOTATION_FLAVOR, ANNOTATION_ZONE, ANNOTATION_VIPS]
        );
        assert_eq!(kinds(&p), ["update-listener"], "safe changes still apply");
        assert_eq!(p.impact(), Impact::Refused);
        assert!(p.describe().contains("re-create the Service"));
    }

    #[test]
    fn removed_ports_and_foreign_pools_are_deleted_floating_ips_assigned() {
        let before = desired();
        let mut after = before.clone();
        after.pools.truncate(1);
        after.floating_ips = vec!["45.132.236.10/32".into()];
        let p = plan(&after, Some(&converged(&before)));
        assert_eq!(kinds(&p), ["delete-pool", "assign-fip"]);
    }

    #[test]
    fn disabled_members_are_enabled_in_place() {
        let d = desired();
        let mut actual = converged(&d);
        actual.pools[0].members[0].enabled = false;
        let p = plan(&d, Some(&actual));
        assert_eq!(kinds(&p), ["enable-member"]);
    }
}
