//! The load balancer as the planner sees it: what should exist ([`DesiredLb`]) and what
//! does exist ([`ActualLb`]). Plain data, typed with the API's own enums (which keep values
//! they do not know), so planning stays pure and strings appear only on the wire.

use ipnet::IpNet;
use std::net::IpAddr;
use uuid::Uuid;

pub use crate::cloudscale::{
    HealthMonitorType, ListenerProtocol, LoadBalancerStatus, MonitorStatus, PoolAlgorithm,
    PoolProtocol, Tags,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vip {
    pub subnet: Uuid,
    pub address: Option<IpAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCheck {
    pub method: String,
    pub url_path: String,
    pub version: String,
    pub host: Option<String>,
    pub expected_codes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Monitor {
    pub kind: HealthMonitorType,
    pub delay_s: i64,
    pub timeout_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    /// Only meaningful for `http` and `https` checks: the planner never compares or sends it
    /// for other types (the API may drop it or echo it back).
    pub http: Option<HttpCheck>,
}

impl Monitor {
    /// Whether the check speaks HTTP (the only types whose `http` options matter).
    pub fn is_http(&self) -> bool {
        matches!(
            self.kind,
            HealthMonitorType::Http | HealthMonitorType::Https
        )
    }

    /// The HTTP options that matter: `None` for non-HTTP checks, whatever the API reports.
    pub fn http_options(&self) -> Option<&HttpCheck> {
        self.http.as_ref().filter(|_| self.is_http())
    }

    /// What cannot change in place: the type and, for HTTP checks, the HTTP version (`1.1`
    /// when unset).
    pub fn identity(&self) -> (&HealthMonitorType, Option<&str>) {
        let version = self
            .is_http()
            .then(|| self.http.as_ref().map_or("1.1", |h| h.version.as_str()));
        (&self.kind, version)
    }
}

/// What a listener is known by on a load balancer: one listener per protocol and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListenerKey {
    pub protocol: ListenerProtocol,
    pub port: u16,
}

impl std::fmt::Display for ListenerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.protocol, self.port)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub protocol: ListenerProtocol,
    pub port: u16,
    /// Network form, e.g. `10.0.0.0/8`; empty: everyone.
    pub allowed_cidrs: Vec<String>,
    pub timeout_client_data_ms: i64,
    pub timeout_member_connect_ms: i64,
    pub timeout_member_data_ms: i64,
}

impl Listener {
    pub fn key(&self) -> ListenerKey {
        ListenerKey {
            protocol: self.protocol.clone(),
            port: self.port,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub address: IpAddr,
    pub subnet: Uuid,
    pub protocol_port: u16,
    pub monitor_port: u16,
}

impl Member {
    /// What cannot change in place (the API's immutable fields).
    pub fn identity(&self) -> (IpAddr, Uuid, u16, u16) {
        (
            self.address,
            self.subnet,
            self.protocol_port,
            self.monitor_port,
        )
    }

    /// What the API may keep unique within a pool: one member per address and port.
    pub fn endpoint(&self) -> (IpAddr, u16) {
        (self.address, self.protocol_port)
    }
}

/// The protocol family of a Service port, pool or listener: which kind of traffic reaches
/// the node port behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Tcp,
    Udp,
}

impl Family {
    pub fn of_pool(protocol: &PoolProtocol) -> Family {
        if *protocol == PoolProtocol::Udp {
            Family::Udp
        } else {
            Family::Tcp
        }
    }
}

/// One Service port: its pool, members, listener and monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredPool {
    /// `tcp`, `tcp/http`, `udp/dns`: protocol and port name, as the reference names pools.
    pub name: String,
    pub algorithm: PoolAlgorithm,
    pub protocol: PoolProtocol,
    /// The Service port's node port: where every member sends traffic.
    pub node_port: u16,
    pub members: Vec<Member>,
    pub listener: Listener,
    pub monitor: Monitor,
}

impl DesiredPool {
    pub fn family(&self) -> Family {
        Family::of_pool(&self.protocol)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredLb {
    pub name: String,
    pub flavor: String,
    /// `None`: the API (or the nodes' common zone) decides.
    pub zone: Option<String>,
    /// `None`: not specified (public VIPs on create, anything accepted later); `Some`: exactly
    /// these.
    pub vips: Option<Vec<Vip>>,
    pub pools: Vec<DesiredPool>,
    /// Floating IP networks that must point at the load balancer, as the user wrote them
    /// (the planner matches them to the account's floating IPs by address).
    pub floating_ips: Vec<IpNet>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualMember {
    pub uuid: Uuid,
    pub member: Member,
    pub enabled: bool,
    /// `monitor_status` as last read.
    pub health: MonitorStatus,
}

impl ActualMember {
    /// Whether it carries traffic as far as the API says (`up`, or `no_monitor` without a
    /// health monitor).
    pub fn serving(&self) -> bool {
        self.enabled && matches!(self.health, MonitorStatus::Up | MonitorStatus::NoMonitor)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualListener {
    pub uuid: Uuid,
    pub listener: Listener,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualMonitor {
    pub uuid: Uuid,
    pub monitor: Monitor,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualPool {
    pub uuid: Uuid,
    pub name: String,
    pub algorithm: PoolAlgorithm,
    pub protocol: PoolProtocol,
    pub members: Vec<ActualMember>,
    pub listeners: Vec<ActualListener>,
    pub monitors: Vec<ActualMonitor>,
}

impl ActualPool {
    pub fn family(&self) -> Family {
        Family::of_pool(&self.protocol)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualLb {
    pub uuid: Uuid,
    pub name: String,
    pub flavor: String,
    pub zone: String,
    pub status: LoadBalancerStatus,
    /// (subnet, address) of each VIP, in API order.
    pub vips: Vec<(Uuid, IpAddr)>,
    pub pools: Vec<ActualPool>,
    /// Listeners of this load balancer without a pool (left behind by a pool deletion that
    /// did not take them along): they still hold their port.
    pub orphan_listeners: Vec<ActualListener>,
    /// Floating IP networks pointing at this load balancer.
    pub floating_ips: Vec<IpNet>,
    pub tags: Tags,
}

impl ActualLb {
    /// Whether it is still applying changes (or being provisioned).
    pub fn changing(&self) -> bool {
        self.status == LoadBalancerStatus::Changing
    }
}
