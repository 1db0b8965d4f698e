//! Planning: desired × actual → ordered actions, each with its impact class. Pure.
//!
//! Where the reference deletes before it creates (its 15 s and 60-120 s outages), this
//! planner makes before it breaks, within what the API allows. A plan has three phases:
//!
//! 1. **make**: everything that cannot disturb traffic: pools, members and monitors that are
//!    missing, renames, in-place listener and monitor settings (a replaced monitor re-checks
//!    its members: minimal);
//! 2. **wait**: barriers ([`Action::WaitMembersUp`]) before anything that takes traffic away
//!    from members that serve it, until the members that replace them are up;
//! 3. **switch and break**: listener moves, switches and deletions in an order the API
//!    accepts (a protocol and port take one listener per load balancer), surplus members,
//!    pools no longer wanted.
//!
//! Pools are matched to Service ports by what they serve (node port and protocol), then by
//! listener port, then by name ([`matching`]); a pool whose immutable attributes differ is
//! replaced by a new one next to it, which a later pass finds and reuses. Listeners keep
//! their pool: a listener is never routed to another port's backend, even for a moment;
//! swapping ports goes through deleting and re-creating one listener of the cycle
//! ([`schedule`]).
//!
//! Waits do not block: the executor checks a barrier once; if it does not hold, the steps
//! behind it are skipped and the controller plans again a little later from what then
//! exists (see `cloud/apply/`).
//!
//! Refused changes (flavor, zone, VIP addresses, floating IPs that cannot be assigned) leave
//! the load balancer untouched in those respects; every other pending change still applies,
//! and the refusal is reported.

mod build;
pub mod describe;
mod matching;
mod names;
mod schedule;

use super::model::*;
use ipnet::IpNet;
use std::fmt;
use uuid::Uuid;

/// How much a change disturbs new connections, in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Impact {
    /// No effect on connections.
    None,
    /// New connections may be affected briefly (a few seconds at most).
    Minimal,
    /// A port is unavailable while its listener is recreated or moved (about 10-15 s).
    ListenerRecreate,
    /// A port is served again only once its new members are up (about 15 s): its node port
    /// changed, and Kubernetes stopped serving the old one at once.
    MemberRecreate,
    /// A port's pool is deleted and rebuilt (60-120 s in the reference).
    PoolRecreate,
    /// A port loses every member (nodes or subnets no longer selected): no traffic until
    /// members are selected again.
    Outage,
    /// Not done: the change needs the Service to be re-created.
    Refused,
}

impl Impact {
    pub fn as_str(self) -> &'static str {
        match self {
            Impact::None => "none",
            Impact::Minimal => "minimal",
            Impact::ListenerRecreate => "listener-recreate",
            Impact::MemberRecreate => "member-recreate",
            Impact::PoolRecreate => "pool-recreate",
            Impact::Outage => "outage",
            Impact::Refused => "refused",
        }
    }
}

impl fmt::Display for Impact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pool an action refers to: one that exists, or one an earlier action of the plan
/// creates (by its index in the desired pools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolRef {
    Existing(Uuid),
    New(usize),
}

/// In-place listener changes (only what differs is `Some`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerChanges {
    pub name: Option<String>,
    pub protocol: Option<ListenerProtocol>,
    pub port: Option<u16>,
    pub allowed_cidrs: Option<Vec<String>>,
    pub timeout_client_data_ms: Option<i64>,
    pub timeout_member_connect_ms: Option<i64>,
    pub timeout_member_data_ms: Option<i64>,
}

impl ListenerChanges {
    pub fn between(actual: &Listener, desired: &Listener) -> ListenerChanges {
        fn differs<T: PartialEq + Clone>(a: &T, d: &T) -> Option<T> {
            (a != d).then(|| d.clone())
        }
        ListenerChanges {
            name: differs(&actual.name, &desired.name),
            protocol: differs(&actual.protocol, &desired.protocol),
            port: differs(&actual.port, &desired.port),
            allowed_cidrs: differs(&actual.allowed_cidrs, &desired.allowed_cidrs),
            timeout_client_data_ms: differs(
                &actual.timeout_client_data_ms,
                &desired.timeout_client_data_ms,
            ),
            timeout_member_connect_ms: differs(
                &actual.timeout_member_connect_ms,
                &desired.timeout_member_connect_ms,
            ),
            timeout_member_data_ms: differs(
                &actual.timeout_member_data_ms,
                &desired.timeout_member_data_ms,
            ),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == ListenerChanges::default()
    }

    /// Whether the listener moves to another protocol or port.
    pub fn moves(&self) -> bool {
        self.port.is_some() || self.protocol.is_some()
    }
}

/// In-place monitor changes (only what differs is `Some`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MonitorChanges {
    pub delay_s: Option<i64>,
    pub timeout_s: Option<i64>,
    pub up_threshold: Option<i64>,
    pub down_threshold: Option<i64>,
    /// The whole HTTP options to PATCH (HTTP checks only; the version never changes in
    /// place).
    pub http: Option<HttpCheck>,
}

impl MonitorChanges {
    pub fn between(actual: &Monitor, desired: &Monitor) -> MonitorChanges {
        let http = match (actual.http_options(), desired.http_options()) {
            (Some(a), Some(d)) if a != d => Some(d.clone()),
            (None, Some(d)) => Some(d.clone()),
            _ => None,
        };
        MonitorChanges {
            delay_s: (actual.delay_s != desired.delay_s).then_some(desired.delay_s),
            timeout_s: (actual.timeout_s != desired.timeout_s).then_some(desired.timeout_s),
            up_threshold: (actual.up_threshold != desired.up_threshold)
                .then_some(desired.up_threshold),
            down_threshold: (actual.down_threshold != desired.down_threshold)
                .then_some(desired.down_threshold),
            http,
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == MonitorChanges::default()
    }
}

/// An old member whose traffic new members take over (see [`Action::WaitMembersUp`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    pub pool: Uuid,
    pub member: Uuid,
    pub address: std::net::IpAddr,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    CreateLb {
        name: String,
        flavor: String,
        zone: Option<String>,
    },
    /// Barrier: the load balancer is provisioned (no longer `changing`). Nothing after it
    /// runs before.
    WaitLbReady,
    RenameLb {
        uuid: Uuid,
        from: String,
        to: String,
    },
    /// Adds the tags that mark the load balancer as this Service's (adoption).
    TagLb {
        uuid: Uuid,
        tags: Tags,
    },
    CreatePool {
        new: usize,
        name: String,
        algorithm: PoolAlgorithm,
        protocol: PoolProtocol,
        /// Pools of the load balancer that bear this name already (the pool it replaces):
        /// what a lookup after a lost answer must not take for the new one.
        besides: Vec<Uuid>,
    },
    RenamePool {
        uuid: Uuid,
        from: String,
        to: String,
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
        name: String,
    },
    RenameMember {
        pool: Uuid,
        uuid: Uuid,
        from: String,
        to: String,
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
        from: Listener,
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
        from: Monitor,
        changes: MonitorChanges,
    },
    DeleteMonitor {
        uuid: Uuid,
        kind: HealthMonitorType,
    },
    /// Make-before-break barrier, checked once when reached: it holds when the load
    /// balancer is not `changing` and (1) every new member on a node whose replaced member
    /// is up (or being checked anew by a replaced monitor) is up too, unless found down,
    /// and (2) if any replaced member is up, at least one member of `pool` that is not
    /// being replaced is up. Members that cannot come up (a node without a
    /// local endpoint under `externalTrafficPolicy: Local`, a stopped node) are not waited
    /// for, because the member they replace is not up either.
    WaitMembersUp {
        pool: PoolRef,
        /// Names of the new members in `pool`.
        members: Vec<String>,
        replacing: Vec<Replaced>,
    },
    /// Points the floating IP at the load balancer; `from`: what it pointed at before.
    AssignFloatingIp {
        network: IpNet,
        from: Option<Holder>,
    },
}

/// What a floating IP points at, besides the Service's own load balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// A server (its name, or its UUID when the API gave no name).
    Server { name: String },
    LoadBalancer {
        name: String,
        uuid: Uuid,
        owner: LbOwner,
    },
}

/// Whose a load balancer holding a floating IP is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LbOwner {
    /// A Service of this cluster (`namespace/name`), which does not claim it any more.
    Service(String),
    /// Another cluster's (its `k8s.cloudscale.ch/cluster` tag).
    OtherCluster(String),
    /// Made by hand, or tagged for a Service this cluster does not have.
    Unknown,
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Server { name } => write!(f, "server {name}"),
            Holder::LoadBalancer { name, uuid, owner } => {
                write!(f, "load balancer {name} ({uuid})")?;
                match owner {
                    LbOwner::Service(s) => write!(f, " of Service {s}, which no longer claims it"),
                    LbOwner::OtherCluster(c) => write!(f, " of cluster {c}"),
                    LbOwner::Unknown => write!(f, ", not made for a Service of this cluster"),
                }
            }
        }
    }
}

impl Action {
    /// Whether it writes to the API (barriers do not).
    pub fn is_write(&self) -> bool {
        !self.is_barrier()
    }

    pub fn is_barrier(&self) -> bool {
        matches!(self, Action::WaitLbReady | Action::WaitMembersUp { .. })
    }

    /// A write of pool members only: it changes nothing the account-wide lists hold (members
    /// are read per pool), only the load balancer's status.
    pub fn writes_members_only(&self) -> bool {
        matches!(
            self,
            Action::CreateMember { .. }
                | Action::EnableMember { .. }
                | Action::RenameMember { .. }
                | Action::DeleteMember { .. }
        )
    }

    /// A short name for the kind of action (`create-member`, `update-listener`, …), for
    /// logs and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::CreateLb { .. } => "create-lb",
            Action::WaitLbReady => "wait-lb",
            Action::RenameLb { .. } => "rename-lb",
            Action::TagLb { .. } => "tag-lb",
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
    /// The annotation (or spec field) whose change is refused.
    pub annotation: &'static str,
    pub message: String,
    pub kind: RefusalKind,
}

/// Why something is refused, for the Event reason and for whether a fresh read may help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// A change the load balancer cannot take (`ChangeRefused`).
    Change,
    /// A floating IP the account lacks (`ChangeRefused`; it may have just been created).
    Missing,
    /// A floating IP another Service or cluster keeps (`FloatingIPConflict`).
    Conflict,
}

impl Refusal {
    fn change(annotation: &'static str, message: String) -> Refusal {
        Refusal {
            annotation,
            message,
            kind: RefusalKind::Change,
        }
    }

    /// The Warning Event's reason (the reconcile publishes the same, see `ensure.rs`).
    pub fn reason(&self) -> &'static str {
        match self.kind {
            RefusalKind::Change | RefusalKind::Missing => "ChangeRefused",
            RefusalKind::Conflict => "FloatingIPConflict",
        }
    }
}

/// A warning that blocks nothing (the change it is about still applies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub field: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    pub impact: Impact,
    /// Which Service port (pool name) it concerns, for messages.
    pub port: Option<String>,
    /// The barriers it waits for: when one of the group does not hold, the executor skips
    /// every later step of the group. `None`: waits for nothing (but [`Action::WaitLbReady`]).
    pub group: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub refusals: Vec<Refusal>,
    pub notes: Vec<Note>,
    /// A new load balancer serves once the first this many steps are carried out (every
    /// port its listener and a first member, and its floating IPs); the rest only adds
    /// members. `None`: no such point before the end.
    pub serves_after: Option<usize>,
}

impl Plan {
    /// The worst impact of the steps (refusals count as `Refused`).
    pub fn impact(&self) -> Impact {
        let worst = self.steps_impact();
        if self.refusals.is_empty() {
            worst
        } else {
            worst.max(Impact::Refused)
        }
    }

    /// The worst impact of what the plan does (refusals aside).
    pub fn steps_impact(&self) -> Impact {
        self.steps
            .iter()
            .map(|s| s.impact)
            .max()
            .unwrap_or(Impact::None)
    }

    /// Nothing to do (refusals may remain).
    pub fn is_converged(&self) -> bool {
        self.steps.is_empty()
    }

    /// A one-line-per-step description in plain words, for Events and the `plan` preview.
    pub fn describe(&self) -> String {
        describe::plan(self)
    }

    /// [`Plan::describe`] on one line, its items separated by `; `.
    pub fn describe_inline(&self) -> String {
        describe::inline(self)
    }

    /// The plan in one line (the `PlannedChange` Event's message): see [`describe::summary`].
    pub fn summary(&self, service: &str) -> String {
        describe::summary(self, service)
    }
}

// The annotations a refusal names.
use super::annotations::{
    LOADBALANCER_FLAVOR, LOADBALANCER_FLOATING_IPS, LOADBALANCER_VIP_ADDRESSES, LOADBALANCER_ZONE,
};

/// What the planner needs to know of the account beyond the load balancer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Account {
    /// Every floating IP in the account.
    pub floating_ips: Vec<AccountFloatingIp>,
    /// Addresses another Service of the cluster keeps (see `claims.rs`), with why.
    pub claimed_elsewhere: std::collections::BTreeMap<std::net::IpAddr, String>,
}

/// A floating IP of the account.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountFloatingIp {
    pub network: IpNet,
    /// The region of a regional floating IP (`rma`); `None` for a global one.
    pub region: Option<String>,
    /// What it points at now, if anything.
    pub holder: Option<Holder>,
}

impl AccountFloatingIp {
    /// A global floating IP pointing nowhere.
    pub fn free(network: IpNet) -> AccountFloatingIp {
        AccountFloatingIp {
            network,
            region: None,
            holder: None,
        }
    }
}

/// The tags a load balancer carries once it is this Service's, and the others it has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ownership {
    /// Tags the load balancer must carry (cluster and Service UID); added when absent.
    pub tags: Tags,
    /// Tags that describe (the Service's name): on what the CCM creates and whenever it
    /// tags the load balancer anyway; their absence is never a reason to write.
    pub labels: Tags,
}

impl Ownership {
    /// The tags of a resource the CCM creates: [`Ownership::tags`] and the labels.
    pub fn created_tags(&self) -> Tags {
        let mut tags = self.labels.clone();
        tags.extend(self.tags.clone());
        tags
    }
}

/// Plans the way from `actual` (or nothing) to `desired`.
pub fn plan(
    desired: &DesiredLb,
    actual: Option<&ActualLb>,
    account: &Account,
    owner: &Ownership,
) -> Plan {
    let mut plan = Plan::default();
    let empty;
    let mut rename = None;
    let actual = match actual {
        Some(a) => {
            refusals(desired, a, &mut plan.refusals);
            lb_level(desired, a, owner, &mut plan.steps);
            rename = renamed(desired, a);
            a
        }
        None => {
            plan.steps.push(step(
                Action::CreateLb {
                    name: desired.name.clone(),
                    flavor: desired.flavor.clone(),
                    zone: desired.zone.clone(),
                },
                Impact::None,
            ));
            plan.steps.push(step(Action::WaitLbReady, Impact::None));
            empty = empty_lb(desired, owner);
            &empty
        }
    };
    let serves_after = build::pools(desired, actual, &mut plan.steps);
    let before_fips = plan.steps.len();
    floating_ips(desired, actual, account, &mut plan);
    // The floating IPs of a new load balancer go with what makes it serve, not after all
    // its members.
    plan.serves_after = serves_after.map(|n| {
        let fips: Vec<Step> = plan.steps.drain(before_fips..).collect();
        let count = fips.len();
        plan.steps.splice(n..n, fips);
        n + count
    });
    // A rename serves nobody: it goes last, not between a change and the load balancer
    // reconfigurations that serve it (each write is one, applied in order).
    plan.steps.extend(rename);
    names::at_most_two_of_a_name(&mut plan.steps, &mut plan.serves_after, desired, actual);
    plan
}

fn step(action: Action, impact: Impact) -> Step {
    Step {
        action,
        impact,
        port: None,
        group: None,
    }
}

/// The load balancer a create produces, to plan its contents against.
fn empty_lb(desired: &DesiredLb, owner: &Ownership) -> ActualLb {
    ActualLb {
        uuid: Uuid::nil(),
        name: desired.name.clone(),
        flavor: desired.flavor.clone(),
        zone: desired.zone.clone().unwrap_or_default(),
        status: LoadBalancerStatus::Running,
        vips: Vec::new(),
        pools: Vec::new(),
        orphan_listeners: Vec::new(),
        floating_ips: Vec::new(),
        tags: owner.created_tags(),
    }
}

fn refusals(desired: &DesiredLb, actual: &ActualLb, out: &mut Vec<Refusal>) {
    if actual.flavor != desired.flavor {
        out.push(Refusal::change(
            LOADBALANCER_FLAVOR,
            format!(
                "the flavor of a load balancer cannot change ({} is running, {} is asked for): put back {} or re-create the Service",
                actual.flavor, desired.flavor, actual.flavor
            ),
        ));
    }
    if let Some(zone) = &desired.zone
        && *zone != actual.zone
    {
        out.push(Refusal::change(
            LOADBALANCER_ZONE,
            format!(
                "the zone of a load balancer cannot change ({} is running, {zone} is asked for): put back {} or re-create the Service",
                actual.zone, actual.zone
            ),
        ));
    }
    if let Some(vips) = &desired.vips {
        let same = vips.len() == actual.vips.len()
            && vips.iter().zip(&actual.vips).all(|(d, (subnet, addr))| {
                d.subnet == *subnet && d.address.is_none_or(|x| x == *addr)
            });
        // An empty list on a load balancer with public VIPs asks for nothing specific.
        if !same && !vips.is_empty() {
            out.push(Refusal::change(
                LOADBALANCER_VIP_ADDRESSES,
                "the VIP addresses of a load balancer cannot change: put back the previous value or re-create the Service".into(),
            ));
        }
    }
}

/// Provisioning wait, rename and ownership tags.
fn lb_level(desired: &DesiredLb, actual: &ActualLb, owner: &Ownership, steps: &mut Vec<Step>) {
    if actual.changing() && actual.pools.is_empty() && !desired.pools.is_empty() {
        // Still being provisioned: the reference never writes to a changing load balancer
        // it just created, and neither does this planner.
        steps.push(step(Action::WaitLbReady, Impact::None));
    }
    // Only tags it lacks: a load balancer found as this Service's already has the right
    // UID, and a cluster name that differs (the flag changed) is worth no write.
    let missing: Tags = owner
        .tags
        .iter()
        .filter(|(k, _)| !actual.tags.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !missing.is_empty() {
        let mut tags = actual.tags.clone();
        for (k, v) in &owner.labels {
            tags.entry(k.clone()).or_insert_with(|| v.clone());
        }
        tags.extend(missing);
        steps.push(step(
            Action::TagLb {
                uuid: actual.uuid,
                tags,
            },
            Impact::None,
        ));
    }
}

/// The rename of the load balancer, if its name is not the desired one.
fn renamed(desired: &DesiredLb, actual: &ActualLb) -> Option<Step> {
    (actual.name != desired.name).then(|| {
        step(
            Action::RenameLb {
                uuid: actual.uuid,
                from: actual.name.clone(),
                to: desired.name.clone(),
            },
            Impact::None,
        )
    })
}

/// The region of a zone (`rma1` → `rma`), as the API names regions.
pub fn region_of(zone: &str) -> &str {
    zone.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// Floating IPs are matched to the account's by address: a network written with another
/// prefix length than the floating IP has still means that floating IP (and a note says
/// how to write it). Refused, before any write: one the account lacks, a regional one of
/// another region than the load balancer's, one another Service of the cluster keeps
/// ([`Account::claimed_elsewhere`]) and one another cluster's load balancer holds. Any
/// other is assigned, and the step names what it pointed at before.
fn floating_ips(desired: &DesiredLb, actual: &ActualLb, account: &Account, plan: &mut Plan) {
    let zone = if actual.zone.is_empty() {
        desired.zone.clone().unwrap_or_default()
    } else {
        actual.zone.clone()
    };
    for wanted in &desired.floating_ips {
        let refuse = |kind, message| Refusal {
            annotation: LOADBALANCER_FLOATING_IPS,
            message,
            kind,
        };
        let Some(real) = account
            .floating_ips
            .iter()
            .find(|f| f.network.addr() == wanted.addr())
        else {
            plan.refusals.push(refuse(
                RefusalKind::Missing,
                format!(
                    "floating IP {wanted} does not exist in this account: create it first or remove it from the list"
                ),
            ));
            continue;
        };
        let network = real.network;
        if network.prefix_len() != wanted.prefix_len() {
            plan.notes.push(Note {
                field: LOADBALANCER_FLOATING_IPS,
                message: format!(
                    "{wanted} is the floating IP {network}: it is assigned as {network}; write {network} to silence this warning"
                ),
            });
        }
        if actual
            .floating_ips
            .iter()
            .any(|f| f.addr() == network.addr())
        {
            continue;
        }
        if let Some(region) = &real.region
            && !zone.is_empty()
            && region_of(&zone) != region
        {
            plan.refusals.push(refuse(
                RefusalKind::Change,
                format!(
                    "floating IP {network} is regional in {region}, the load balancer is in zone {zone} (region {}): it cannot point there; use a floating IP of region {} or a global one",
                    region_of(&zone),
                    region_of(&zone)
                ),
            ));
            continue;
        }
        if let Some(why) = account.claimed_elsewhere.get(&network.addr()) {
            plan.refusals
                .push(refuse(RefusalKind::Conflict, why.clone()));
            continue;
        }
        if let Some(
            holder @ Holder::LoadBalancer {
                owner: LbOwner::OtherCluster(_),
                ..
            },
        ) = &real.holder
        {
            plan.refusals.push(refuse(
                RefusalKind::Conflict,
                format!(
                    "floating IP {network} points at {holder}: it is not taken from another cluster (both would take it back at every resync); remove it from that cluster's Service, or from this one"
                ),
            ));
            continue;
        }
        plan.steps.push(step(
            Action::AssignFloatingIp {
                network,
                from: real.holder.clone(),
            },
            Impact::Minimal,
        ));
    }
}

#[cfg(test)]
mod tests;
