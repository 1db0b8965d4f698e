//! The load balancer as the planner sees it: what should exist ([`DesiredLb`]) and what
//! does exist ([`ActualLb`]), in the planner's own plain types (no API client types), so
//! planning stays pure and easy to test.

use std::net::IpAddr;
use uuid::Uuid;

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
    pub kind: String,
    pub delay_s: i64,
    pub timeout_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    pub http: Option<HttpCheck>,
}

impl Monitor {
    /// What cannot change in place: the type and the HTTP version (`1.1` when unset).
    pub fn identity(&self) -> (&str, &str) {
        (
            self.kind.as_str(),
            self.http.as_ref().map_or("1.1", |h| h.version.as_str()),
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub protocol: String,
    pub port: u16,
    /// Network form, e.g. `10.0.0.0/8`; empty: everyone.
    pub allowed_cidrs: Vec<String>,
    pub timeout_client_data_ms: i64,
    pub timeout_member_connect_ms: i64,
    pub timeout_member_data_ms: i64,
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
}

/// One Service port: its pool, members, listener and monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredPool {
    /// `tcp`, `tcp/http`, `udp/dns`: protocol and port name, as the reference names pools.
    pub name: String,
    pub algorithm: String,
    pub protocol: String,
    pub members: Vec<Member>,
    pub listener: Listener,
    pub monitor: Monitor,
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
    /// Floating IP networks (`1.2.3.4/32`) that must point at the load balancer.
    pub floating_ips: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualMember {
    pub uuid: Uuid,
    pub member: Member,
    pub enabled: bool,
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
    pub algorithm: String,
    pub protocol: String,
    pub members: Vec<ActualMember>,
    pub listeners: Vec<ActualListener>,
    pub monitors: Vec<ActualMonitor>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActualLb {
    pub uuid: Uuid,
    pub name: String,
    pub flavor: String,
    pub zone: String,
    pub status: String,
    /// (subnet, address) of each VIP, in API order.
    pub vips: Vec<(Uuid, IpAddr)>,
    pub pools: Vec<ActualPool>,
    /// Floating IP networks pointing at this load balancer.
    pub floating_ips: Vec<String>,
}
