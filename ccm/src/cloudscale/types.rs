//! Resource and request types of the cloudscale.ch API v1, written from the API's public
//! documentation (https://www.cloudscale.ch/en/api/v1); not shared with fakecloud.
//!
//! Responses: unknown fields are ignored, nullable fields are `Option`, collections that may
//! be absent default to empty. Requests: optional fields are omitted when `None`, and the
//! fields the CCM must always send (as the reference CCM does) are not optional.
//! UUIDs, of resources, of the stubs that refer to them and in request bodies, are
//! [`Uuid`]s: text only on the wire, and a response with one that is none fails to decode
//! (the error names the field).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;
use uuid::Uuid;

/// Tags: an object of strings, `{}` when empty.
pub type Tags = BTreeMap<String, String>;

/// A string-valued enum that keeps values it does not know (`Other`), so a new status on the
/// API side never breaks decoding.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $($variant,)+
            Other(String),
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::Other(s) => s,
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $($text => $name::$variant,)+
                    _ => $name::Other(s),
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name::from(s.to_string())
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.as_str().to_string()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// Server `status` (4.2).
    ServerStatus { Changing = "changing", Running = "running", Stopped = "stopped" }
);
string_enum!(
    /// Load balancer `status` (9.2).
    LoadBalancerStatus { Changing = "changing", Running = "running", Degraded = "degraded", Error = "error" }
);
string_enum!(
    /// Pool member `monitor_status` (11).
    MonitorStatus { Up = "up", Down = "down", Changing = "changing", NoMonitor = "no_monitor", Unknown = "unknown" }
);
string_enum!(
    /// Pool `algorithm` (10).
    PoolAlgorithm { RoundRobin = "round_robin", LeastConnections = "least_connections", SourceIp = "source_ip" }
);
string_enum!(
    /// Pool `protocol` (10).
    PoolProtocol { Tcp = "tcp", Proxy = "proxy", ProxyV2 = "proxyv2", Udp = "udp" }
);
string_enum!(
    /// Listener `protocol` (12).
    ListenerProtocol { Tcp = "tcp", Udp = "udp" }
);
string_enum!(
    /// Health monitor `type` (13).
    HealthMonitorType {
        Ping = "ping",
        Tcp = "tcp",
        Http = "http",
        Https = "https",
        TlsHello = "tls-hello",
        UdpConnect = "udp-connect",
    }
);
string_enum!(
    /// Server interface `type` (4.2).
    InterfaceType { Public = "public", Private = "private" }
);
string_enum!(
    /// Floating IP `type` (8).
    FloatingIpType { Regional = "regional", Global = "global" }
);

// ---------------------------------------------------------------------------------------------
// Stubs (1.4)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneStub {
    pub slug: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionStub {
    pub slug: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFlavorStub {
    pub slug: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub vcpu_count: u32,
    #[serde(default)]
    pub memory_gb: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancerFlavorStub {
    pub slug: String,
    #[serde(default)]
    pub name: String,
}

// Stubs keep what the CCM reads: their `href`s, like every `created_at`, are left unparsed
// (a pool's member list repeats three stubs per member).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStub {
    pub uuid: Uuid,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStub {
    pub uuid: Uuid,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubnetStub {
    pub uuid: Uuid,
    #[serde(default)]
    pub cidr: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadBalancerStub {
    pub uuid: Uuid,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStub {
    pub uuid: Uuid,
    #[serde(default)]
    pub name: String,
}

// ---------------------------------------------------------------------------------------------
// Servers (4)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Server {
    pub href: String,
    pub uuid: Uuid,
    pub name: String,
    pub status: ServerStatus,
    pub zone: ZoneStub,
    pub flavor: ServerFlavorStub,
    #[serde(default)]
    pub interfaces: Vec<Interface>,
    // The image, server groups and SSH keys are not read: the host keys alone are most of
    // a server's JSON, and every server list would copy them.
    #[serde(default)]
    pub tags: Tags,
}

impl Server {
    /// Addresses of public interfaces (ExternalIP) and of the others (InternalIP).
    pub fn addresses(&self) -> impl Iterator<Item = (&InterfaceType, &Address)> {
        self.interfaces
            .iter()
            .flat_map(|i| i.addresses.iter().map(move |a| (&i.kind, a)))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interface {
    #[serde(rename = "type")]
    pub kind: InterfaceType,
    #[serde(default)]
    pub network: Option<NetworkStub>,
    #[serde(default)]
    pub addresses: Vec<Address>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Address {
    pub version: u8,
    pub address: IpAddr,
    #[serde(default)]
    pub prefix_length: Option<u8>,
    #[serde(default)]
    pub gateway: Option<String>,
    #[serde(default)]
    pub reverse_ptr: Option<String>,
    #[serde(default)]
    pub subnet: Option<SubnetStub>,
}

// ---------------------------------------------------------------------------------------------
// Networks and subnets (6, 7)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Network {
    pub href: String,
    pub uuid: Uuid,
    pub name: String,
    pub zone: ZoneStub,
    pub mtu: u32,
    #[serde(default)]
    pub subnets: Vec<SubnetStub>,
    #[serde(default)]
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subnet {
    pub href: String,
    pub uuid: Uuid,
    pub cidr: String,
    pub network: NetworkStub,
    #[serde(default)]
    pub gateway_address: Option<String>,
    #[serde(default)]
    pub dns_servers: Vec<String>,
    #[serde(default)]
    pub tags: Tags,
}

// ---------------------------------------------------------------------------------------------
// Floating IPs (8)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloatingIp {
    pub href: String,
    /// CIDR: `192.0.2.123/32`, `2001:db8::cafe/128` or a /56.
    pub network: String,
    pub ip_version: u8,
    #[serde(rename = "type", default)]
    pub kind: Option<FloatingIpType>,
    #[serde(default)]
    pub region: Option<RegionStub>,
    #[serde(default)]
    pub server: Option<ServerStub>,
    #[serde(default)]
    pub load_balancer: Option<LoadBalancerStub>,
    #[serde(default)]
    pub next_hop: Option<String>,
    #[serde(default)]
    pub reverse_ptr: Option<String>,
    #[serde(default)]
    pub tags: Tags,
}

impl FloatingIp {
    /// The address without prefix length: the floating IP's identifier in paths.
    pub fn ip(&self) -> &str {
        self.network
            .split_once('/')
            .map_or(self.network.as_str(), |(ip, _)| ip)
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CreateFloatingIp {
    pub ip_version: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_length: Option<u8>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<FloatingIpType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse_ptr: Option<String>,
    pub tags: Tags,
}

/// PATCH of a floating IP: assigning `server` or `load_balancer` moves it (8).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpdateFloatingIp {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse_ptr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

// ---------------------------------------------------------------------------------------------
// Load balancers (9)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadBalancer {
    pub href: String,
    pub uuid: Uuid,
    pub name: String,
    pub status: LoadBalancerStatus,
    pub flavor: LoadBalancerFlavorStub,
    pub zone: ZoneStub,
    #[serde(default)]
    pub vip_addresses: Vec<VipAddress>,
    #[serde(default)]
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VipAddress {
    pub version: u8,
    pub address: IpAddr,
    #[serde(default)]
    pub subnet: Option<SubnetStub>,
}

/// `POST /v1/load-balancers`: name, flavor, vip_addresses always, zone when set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CreateLoadBalancer {
    pub name: String,
    pub flavor: String,
    /// Sent even when empty: `[]` means one public IPv4 and one public IPv6 VIP.
    pub vip_addresses: Vec<VipAddressRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct VipAddressRequest {
    pub subnet: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpdateLoadBalancer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

// ---------------------------------------------------------------------------------------------
// Pools (10)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    pub href: String,
    pub uuid: Uuid,
    pub name: String,
    pub load_balancer: LoadBalancerStub,
    pub algorithm: PoolAlgorithm,
    pub protocol: PoolProtocol,
    #[serde(default)]
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatePool {
    pub name: String,
    pub load_balancer: Uuid,
    pub algorithm: PoolAlgorithm,
    pub protocol: PoolProtocol,
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpdatePool {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

// ---------------------------------------------------------------------------------------------
// Pool members (11)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolMember {
    pub href: String,
    pub uuid: Uuid,
    pub name: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    pub pool: PoolStub,
    pub load_balancer: LoadBalancerStub,
    pub protocol_port: u16,
    #[serde(default)]
    pub monitor_port: Option<u16>,
    pub address: IpAddr,
    pub subnet: SubnetStub,
    #[serde(default)]
    pub monitor_status: Option<MonitorStatus>,
    #[serde(default)]
    pub tags: Tags,
}

fn yes() -> bool {
    true
}

/// `POST .../pools/{pool}/members` (5.7: name, protocol_port, monitor_port, address, subnet;
/// `enabled` only when set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatePoolMember {
    pub name: String,
    pub protocol_port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor_port: Option<u16>,
    pub address: IpAddr,
    pub subnet: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpdatePoolMember {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

// ---------------------------------------------------------------------------------------------
// Listeners (12)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listener {
    pub href: String,
    pub uuid: Uuid,
    pub name: String,
    #[serde(default)]
    pub pool: Option<PoolStub>,
    pub load_balancer: LoadBalancerStub,
    pub protocol: ListenerProtocol,
    pub protocol_port: u16,
    #[serde(default)]
    pub allowed_cidrs: Vec<String>,
    pub timeout_client_data_ms: u32,
    pub timeout_member_connect_ms: u32,
    pub timeout_member_data_ms: u32,
    #[serde(default)]
    pub tags: Tags,
}

/// `POST /v1/load-balancers/listeners` (5.7: pool, name, protocol, protocol_port,
/// allowed_cidrs always, the timeouts when set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateListener {
    pub pool: Uuid,
    pub name: String,
    pub protocol: ListenerProtocol,
    pub protocol_port: u16,
    /// Always sent; `[]` admits everyone.
    pub allowed_cidrs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_client_data_ms: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_member_connect_ms: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_member_data_ms: Option<u32>,
    pub tags: Tags,
}

/// PATCH of a listener; `allowed_cidrs: Some(vec![])` sends `[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpdateListener {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ListenerProtocol>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_cidrs: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_client_data_ms: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_member_connect_ms: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_member_data_ms: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

// ---------------------------------------------------------------------------------------------
// Health monitors (13)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthMonitor {
    pub href: String,
    pub uuid: Uuid,
    pub pool: PoolStub,
    pub load_balancer: LoadBalancerStub,
    #[serde(rename = "type")]
    pub kind: HealthMonitorType,
    pub delay_s: u32,
    pub timeout_s: u32,
    pub up_threshold: u32,
    pub down_threshold: u32,
    #[serde(default)]
    pub http: Option<HealthMonitorHttp>,
    #[serde(default)]
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthMonitorHttp {
    #[serde(default)]
    pub expected_codes: Vec<String>,
    pub method: String,
    pub url_path: String,
    pub version: String,
    #[serde(default)]
    pub host: Option<String>,
}

/// The `http` object of a monitor create or PATCH: only the keys that are set are sent
/// (`{}` when none); a PATCH merges key by key.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HealthMonitorHttpRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_codes: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `None`: not sent; `Some(None)`: sent as `null`, which clears a host in a PATCH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Option<String>>,
}

/// `POST /v1/load-balancers/health-monitors` (5.7: pool, the four numbers when set, type, and
/// always an `http` object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateHealthMonitor {
    pub pool: Uuid,
    #[serde(rename = "type")]
    pub kind: HealthMonitorType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_s: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_threshold: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_threshold: Option<u32>,
    pub http: HealthMonitorHttpRequest,
    pub tags: Tags,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UpdateHealthMonitor {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_s: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_threshold: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_threshold: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HealthMonitorHttpRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

// ---------------------------------------------------------------------------------------------
// List filters (1.7)
// ---------------------------------------------------------------------------------------------

/// Query filters of a list request: `tag:KEY=VALUE` (exact), `tag:KEY=` (has key), several
/// ANDed, and `name=`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    tags: Vec<(String, Option<String>)>,
    name: Option<String>,
}

impl Filter {
    /// No filter: every resource.
    pub fn all() -> Filter {
        Filter::default()
    }

    /// Tag `key` with exactly `value`.
    pub fn tag(key: impl Into<String>, value: impl Into<String>) -> Filter {
        Filter::default().and_tag(key, value)
    }

    pub fn and_tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Filter {
        self.tags.push((key.into(), Some(value.into())));
        self
    }

    /// Tag `key` with any value.
    pub fn and_has_tag(mut self, key: impl Into<String>) -> Filter {
        self.tags.push((key.into(), None));
        self
    }

    /// `name=VALUE` (undocumented on the API side; callers should still check names).
    pub fn and_name(mut self, name: impl Into<String>) -> Filter {
        self.name = Some(name.into());
        self
    }

    /// The query string, without `?` (empty when there is no filter). The colon is
    /// percent-encoded like the Go SDK does (`tag%3AKEY=VALUE`).
    pub fn query(&self) -> String {
        let mut parts = Vec::new();
        for (k, v) in &self.tags {
            parts.push(format!(
                "{}={}",
                encode_query(&format!("tag:{k}")),
                encode_query(v.as_deref().unwrap_or(""))
            ));
        }
        if let Some(n) = &self.name {
            parts.push(format!("name={}", encode_query(n)));
        }
        parts.join("&")
    }

    /// Whether `tags` (and `name`) satisfy the filter (the same check, client-side).
    pub fn matches(&self, tags: &Tags, name: Option<&str>) -> bool {
        self.tags.iter().all(|(k, v)| match v {
            Some(v) => tags.get(k) == Some(v),
            None => tags.contains_key(k),
        }) && self
            .name
            .as_deref()
            .is_none_or(|n| name.is_none_or(|have| have == n))
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn encode_query(s: &str) -> String {
    encode(s, b"-._~")
}

/// Percent-encodes a path segment: unreserved characters and `:` (IPv6 floating IPs are sent
/// with their colons, like every official client does) stay.
pub(crate) fn encode_segment(s: &str) -> String {
    encode(s, b"-._~:")
}

fn encode(s: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || keep.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_encode_like_the_go_sdk() {
        assert_eq!(Filter::all().query(), "");
        assert_eq!(
            Filter::tag("ccm/service", "a b").and_has_tag("x").query(),
            "tag%3Accm%2Fservice=a%20b&tag%3Ax="
        );
        assert_eq!(encode_segment("2001:db8::1"), "2001:db8::1");
        assert_eq!(encode_segment("../x"), "..%2Fx");
    }

    #[test]
    fn unknown_enum_values_survive() {
        let s: LoadBalancerStatus = serde_json::from_str("\"rebuilding\"").expect("decode");
        assert_eq!(s, LoadBalancerStatus::Other("rebuilding".into()));
        assert_eq!(serde_json::to_string(&s).expect("encode"), "\"rebuilding\"");
        let s: LoadBalancerStatus = serde_json::from_str("\"running\"").expect("decode");
        assert_eq!(s, LoadBalancerStatus::Running);
    }
}
