//! The parse step of the load balancer controller: a `Service` (its annotations and spec) in,
//! a typed and validated [`ServiceConfig`] out. Pure: no I/O, no clock, no logging.
//!
//! Annotation keys, value formats and defaults are byte-identical to the Go reference CCM
//! (github.com/cloudscale-ch/cloudscale-cloud-controller-manager), so operators can migrate
//! without touching their Services. What differs is validation: every value the
//! cloudscale.ch API (or Kubernetes, for the status) would reject is refused here, before the
//! planner deletes anything (the reference sent them and failed half-way), and every problem
//! is reported at once, naming the annotation or spec field at fault and the bad value (the
//! reference's messages named the delay annotation for any int or list error).
//!
//! Empty strings, as in the reference: a key present with an empty value is not absent. List parsers
//! read it as an empty list, JSON object parsers and int parsers reject it, optional strings
//! (zone, force-hostname, uuid) read it as unset.

use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;
use std::ops::RangeInclusive;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------------
// Keys, numbered in the order of the README's annotation table
// ---------------------------------------------------------------------------------------------

/// 1. UUID of the load balancer; written by the CCM after every successful ensure.
pub const LOADBALANCER_UUID: &str = "k8s.cloudscale.ch/loadbalancer-uuid";
/// 2. Configuration version; written by the CCM as [`CONFIG_VERSION`].
pub const LOADBALANCER_CONFIG_VERSION: &str = "k8s.cloudscale.ch/loadbalancer-config-version";
/// 3. Load balancer name; default `k8s-service-<metadata.uid>`.
pub const LOADBALANCER_NAME: &str = "k8s.cloudscale.ch/loadbalancer-name";
/// 4. Flavor slug; default [`DEFAULT_FLAVOR`].
pub const LOADBALANCER_FLAVOR: &str = "k8s.cloudscale.ch/loadbalancer-flavor";
/// 5. Zone slug; default: derived from the nodes. Also written by the CCM.
pub const LOADBALANCER_ZONE: &str = "k8s.cloudscale.ch/loadbalancer-zone";
/// 6. JSON array of `{"subnet": "<uuid>", "address": "<ip>"}`; default `[]` (API chooses).
pub const LOADBALANCER_VIP_ADDRESSES: &str = "k8s.cloudscale.ch/loadbalancer-vip-addresses";
/// 7. JSON string list of Floating IP networks; default `[]`.
pub const LOADBALANCER_FLOATING_IPS: &str = "k8s.cloudscale.ch/loadbalancer-floating-ips";
/// 8. `round_robin`, `least_connections` or `source_ip`; default `round_robin`.
pub const LOADBALANCER_POOL_ALGORITHM: &str = "k8s.cloudscale.ch/loadbalancer-pool-algorithm";
/// 9. `tcp`, `proxy` or `proxyv2`; default `tcp` (TCP ports only).
pub const LOADBALANCER_POOL_PROTOCOL: &str = "k8s.cloudscale.ch/loadbalancer-pool-protocol";
/// 10. A DNS name reported as the only ingress entry; default empty (report the VIPs).
pub const LOADBALANCER_FORCE_HOSTNAME: &str = "k8s.cloudscale.ch/loadbalancer-force-hostname";
/// 11. `Proxy` or `VIP` (case-sensitive); default `Proxy`.
pub const LOADBALANCER_IP_MODE: &str = "k8s.cloudscale.ch/loadbalancer-ip-mode";
/// 12. Seconds between health checks; default 2.
pub const LOADBALANCER_HEALTH_MONITOR_DELAY_S: &str =
    "k8s.cloudscale.ch/loadbalancer-health-monitor-delay-s";
/// 13. Seconds a health check may take; default 1.
pub const LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S: &str =
    "k8s.cloudscale.ch/loadbalancer-health-monitor-timeout-s";
/// 14. Successful checks before a member is up; default 2.
pub const LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD: &str =
    "k8s.cloudscale.ch/loadbalancer-health-monitor-up-threshold";
/// 15. Failed checks before a member is down; default 3.
pub const LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD: &str =
    "k8s.cloudscale.ch/loadbalancer-health-monitor-down-threshold";
/// 16. `ping`, `tcp`, `http`, `https`, `tls-hello` or `udp-connect`; default `tcp`.
pub const LOADBALANCER_HEALTH_MONITOR_TYPE: &str =
    "k8s.cloudscale.ch/loadbalancer-health-monitor-type";
/// 17. JSON object of HTTP check options; default `{}` (no HTTP options).
pub const LOADBALANCER_HEALTH_MONITOR_HTTP: &str =
    "k8s.cloudscale.ch/loadbalancer-health-monitor-http";
/// 18. Listener protocol of TCP ports; only `tcp`; default `tcp`.
pub const LOADBALANCER_LISTENER_PROTOCOL: &str = "k8s.cloudscale.ch/loadbalancer-listener-protocol";
/// 19. JSON string list of source CIDRs (or bare addresses); default `[]` (everyone).
pub const LOADBALANCER_LISTENER_ALLOWED_CIDRS: &str =
    "k8s.cloudscale.ch/loadbalancer-listener-allowed-cidrs";
/// 20. Listener client data timeout in ms; default 50000.
pub const LOADBALANCER_TIMEOUT_CLIENT_DATA_MS: &str =
    "k8s.cloudscale.ch/loadbalancer-timeout-client-data-ms";
/// 21. Listener member connect timeout in ms; default 5000.
pub const LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS: &str =
    "k8s.cloudscale.ch/loadbalancer-timeout-member-connect-ms";
/// 22. Listener member data timeout in ms; default 50000.
pub const LOADBALANCER_TIMEOUT_MEMBER_DATA_MS: &str =
    "k8s.cloudscale.ch/loadbalancer-timeout-member-data-ms";
/// 23. JSON string list of subnet UUIDs members may come from; default `[]` (all).
pub const LOADBALANCER_LISTENER_ALLOWED_SUBNETS: &str =
    "k8s.cloudscale.ch/loadbalancer-listener-allowed-subnets";
/// 24. Kubernetes label selector over Node labels; default empty (all nodes).
pub const LOADBALANCER_NODE_SELECTOR: &str = "k8s.cloudscale.ch/loadbalancer-node-selector";

/// Every annotation the CCM reads, in the order of the README's annotation table.
pub const ALL_ANNOTATIONS: [&str; 24] = [
    LOADBALANCER_UUID,
    LOADBALANCER_CONFIG_VERSION,
    LOADBALANCER_NAME,
    LOADBALANCER_FLAVOR,
    LOADBALANCER_ZONE,
    LOADBALANCER_VIP_ADDRESSES,
    LOADBALANCER_FLOATING_IPS,
    LOADBALANCER_POOL_ALGORITHM,
    LOADBALANCER_POOL_PROTOCOL,
    LOADBALANCER_FORCE_HOSTNAME,
    LOADBALANCER_IP_MODE,
    LOADBALANCER_HEALTH_MONITOR_DELAY_S,
    LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S,
    LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
    LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD,
    LOADBALANCER_HEALTH_MONITOR_TYPE,
    LOADBALANCER_HEALTH_MONITOR_HTTP,
    LOADBALANCER_LISTENER_PROTOCOL,
    LOADBALANCER_LISTENER_ALLOWED_CIDRS,
    LOADBALANCER_TIMEOUT_CLIENT_DATA_MS,
    LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
    LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
    LOADBALANCER_LISTENER_ALLOWED_SUBNETS,
    LOADBALANCER_NODE_SELECTOR,
];

/// The annotations the CCM writes after every successful ensure.
pub const CCM_WRITTEN_ANNOTATIONS: [&str; 3] = [
    LOADBALANCER_UUID,
    LOADBALANCER_CONFIG_VERSION,
    LOADBALANCER_ZONE,
];

/// The value written to [`LOADBALANCER_CONFIG_VERSION`], and the only one understood.
pub const CONFIG_VERSION: &str = "1";

// ---------------------------------------------------------------------------------------------
// Defaults (frozen: changing one silently changes existing clusters)
// ---------------------------------------------------------------------------------------------

pub const DEFAULT_LB_NAME_PREFIX: &str = "k8s-service-";
pub const DEFAULT_FLAVOR: &str = "lb-standard";
pub const DEFAULT_HEALTH_MONITOR_DELAY_S: i64 = 2;
pub const DEFAULT_HEALTH_MONITOR_TIMEOUT_S: i64 = 1;
pub const DEFAULT_HEALTH_MONITOR_UP_THRESHOLD: i64 = 2;
pub const DEFAULT_HEALTH_MONITOR_DOWN_THRESHOLD: i64 = 3;
/// Exactly this value of the HTTP annotation means "no HTTP options".
pub const DEFAULT_HEALTH_MONITOR_HTTP: &str = "{}";
pub const DEFAULT_TIMEOUT_CLIENT_DATA_MS: i64 = 50_000;
pub const DEFAULT_TIMEOUT_MEMBER_CONNECT_MS: i64 = 5_000;
pub const DEFAULT_TIMEOUT_MEMBER_DATA_MS: i64 = 50_000;

/// Range of the four health monitor numbers and the three listener timeouts. The API
/// (as modelled by fakecloud) refuses values below 1 ("greater than or equal to 1") and the
/// client sends them as `u32`. Zeros are therefore refused here, with the key named, instead
/// of being silently omitted (the reference omitted zero fields and PATCHed forever) or failing
/// mid-pass.
pub const API_NUMBER_RANGE: RangeInclusive<i64> = 1..=u32::MAX as i64;

/// Prefix of every annotation key of this CCM.
pub const ANNOTATION_PREFIX: &str = "k8s.cloudscale.ch/";

// ---------------------------------------------------------------------------------------------
// Closed enums
// ---------------------------------------------------------------------------------------------

/// An enum of fixed string values: `as_str`, `from_name` (exact, case-sensitive), `ALL`,
/// `Display`, and `Default`.
macro_rules! closed_enum {
    ($(#[$meta:meta])* $name:ident default $default:ident {
        $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire / annotation spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value spelled exactly `s` (case-sensitive), if any.
            pub fn from_name(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// `a, b, c`: the accepted spellings, for hints.
            pub fn choices() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_enum!(
    /// Pool `algorithm` ([`LOADBALANCER_POOL_ALGORITHM`]).
    PoolAlgorithm default RoundRobin {
        RoundRobin = "round_robin",
        LeastConnections = "least_connections",
        SourceIp = "source_ip",
    }
);
closed_enum!(
    /// Pool `protocol` of TCP ports ([`LOADBALANCER_POOL_PROTOCOL`]); UDP ports always use
    /// `udp`, which is not a valid annotation value.
    PoolProtocol default Tcp {
        Tcp = "tcp",
        Proxy = "proxy",
        ProxyV2 = "proxyv2",
    }
);
closed_enum!(
    /// Listener `protocol` of TCP ports ([`LOADBALANCER_LISTENER_PROTOCOL`]); UDP ports
    /// always use `udp`.
    ListenerProtocol default Tcp {
        Tcp = "tcp",
    }
);
closed_enum!(
    /// Health monitor `type` ([`LOADBALANCER_HEALTH_MONITOR_TYPE`]).
    MonitorType default Tcp {
        Ping = "ping",
        Tcp = "tcp",
        Http = "http",
        Https = "https",
        TlsHello = "tls-hello",
        UdpConnect = "udp-connect",
    }
);
closed_enum!(
    /// `ipMode` of the status ingress entries ([`LOADBALANCER_IP_MODE`]).
    IpMode default Proxy {
        Proxy = "Proxy",
        Vip = "VIP",
    }
);
closed_enum!(
    /// HTTP monitor `method`.
    HttpMethod default Get {
        Connect = "CONNECT",
        Delete = "DELETE",
        Get = "GET",
        Head = "HEAD",
        Options = "OPTIONS",
        Patch = "PATCH",
        Post = "POST",
        Put = "PUT",
        Trace = "TRACE",
    }
);
closed_enum!(
    /// HTTP monitor `version`.
    HttpVersion default V1_1 {
        V1_0 = "1.0",
        V1_1 = "1.1",
    }
);
closed_enum!(
    /// `spec.ports[].protocol` values the CCM supports.
    PortProtocol default Tcp {
        Tcp = "TCP",
        Udp = "UDP",
    }
);
closed_enum!(
    /// `spec.externalTrafficPolicy`.
    ExternalTrafficPolicy default Cluster {
        Cluster = "Cluster",
        Local = "Local",
    }
);

// The parsed values become the API's own enums variant by variant, never through a string.

impl From<PoolAlgorithm> for crate::cloudscale::PoolAlgorithm {
    fn from(v: PoolAlgorithm) -> Self {
        match v {
            PoolAlgorithm::RoundRobin => Self::RoundRobin,
            PoolAlgorithm::LeastConnections => Self::LeastConnections,
            PoolAlgorithm::SourceIp => Self::SourceIp,
        }
    }
}

impl From<PoolProtocol> for crate::cloudscale::PoolProtocol {
    fn from(v: PoolProtocol) -> Self {
        match v {
            PoolProtocol::Tcp => Self::Tcp,
            PoolProtocol::Proxy => Self::Proxy,
            PoolProtocol::ProxyV2 => Self::ProxyV2,
        }
    }
}

impl From<ListenerProtocol> for crate::cloudscale::ListenerProtocol {
    fn from(v: ListenerProtocol) -> Self {
        match v {
            ListenerProtocol::Tcp => Self::Tcp,
        }
    }
}

impl From<MonitorType> for crate::cloudscale::HealthMonitorType {
    fn from(v: MonitorType) -> Self {
        match v {
            MonitorType::Ping => Self::Ping,
            MonitorType::Tcp => Self::Tcp,
            MonitorType::Http => Self::Http,
            MonitorType::Https => Self::Https,
            MonitorType::TlsHello => Self::TlsHello,
            MonitorType::UdpConnect => Self::UdpConnect,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The configuration
// ---------------------------------------------------------------------------------------------

/// Everything the map, plan and apply steps need from one `Service`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceConfig {
    /// `metadata.namespace` (empty if unset).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`; never empty.
    pub uid: String,
    /// [`LOADBALANCER_UUID`]; `None` when absent or empty.
    pub lb_uuid: Option<Uuid>,
    /// [`LOADBALANCER_CONFIG_VERSION`]; always 1 (other values are refused).
    pub config_version: u32,
    /// [`LOADBALANCER_NAME`] or `k8s-service-<uid>`; never empty.
    pub lb_name: String,
    /// [`LOADBALANCER_FLAVOR`]; never empty.
    pub flavor: String,
    /// [`LOADBALANCER_ZONE`]; `None` when absent or empty (derive from the nodes).
    pub zone: Option<String>,
    /// [`LOADBALANCER_VIP_ADDRESSES`]: `None` when the annotation is absent (nothing
    /// requested: a new LB gets the API's default VIPs), `Some(list)` when set, including an
    /// explicit `[]`. On an existing LB an explicit value that differs from the LB's VIPs, `[]`
    /// included, is a change the planner refuses (the reference silently ignored an empty list).
    pub vip_addresses: Option<Vec<VipRequest>>,
    /// [`LOADBALANCER_FLOATING_IPS`], normalised to the API's `network` form (`/32`,
    /// `/128`, canonical IPv6), duplicates removed, order kept.
    pub floating_ips: Vec<IpNet>,
    pub pool_algorithm: PoolAlgorithm,
    /// For TCP ports; UDP ports use `udp`.
    pub pool_protocol: PoolProtocol,
    /// For TCP ports; UDP ports use `udp`.
    pub listener_protocol: ListenerProtocol,
    /// [`LOADBALANCER_LISTENER_ALLOWED_CIDRS`] in network form (bare addresses become
    /// `/32` or `/128`), duplicates removed, order kept. Empty admits everyone.
    pub allowed_cidrs: Vec<IpNet>,
    /// [`LOADBALANCER_LISTENER_ALLOWED_SUBNETS`], duplicates removed, order kept. Empty
    /// allows every subnet of the nodes.
    pub allowed_subnets: Vec<Uuid>,
    pub timeout_client_data_ms: i64,
    pub timeout_member_connect_ms: i64,
    pub timeout_member_data_ms: i64,
    pub monitor: MonitorConfig,
    /// [`LOADBALANCER_NODE_SELECTOR`]; empty matches every node.
    pub node_selector: Selector,
    /// [`LOADBALANCER_FORCE_HOSTNAME`]; `None` when absent or empty.
    pub force_hostname: Option<String>,
    pub ip_mode: IpMode,
    /// `spec.ports`, in order; never empty.
    pub ports: Vec<PortSpec>,
    pub external_traffic_policy: ExternalTrafficPolicy,
    /// `spec.healthCheckNodePort` when set and > 0.
    pub health_check_node_port: Option<u16>,
    /// `spec.loadBalancerSourceRanges`, in network form (host bits cleared, like Kubernetes
    /// does). The reference ignores the field; it is parsed here so the map step can
    /// decide how to combine it with `allowed_cidrs`, which it does not replace.
    pub source_ranges: Vec<IpNet>,
    /// `spec.loadBalancerIP` when set and not blank (not supported: reported, ignored).
    pub load_balancer_ip: Option<String>,
    /// `spec.ipFamilies` is `[IPv6]`, single-stack: the status lists the IPv6 VIPs only.
    pub ipv6_only: bool,
}

/// One entry of [`LOADBALANCER_VIP_ADDRESSES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VipRequest {
    pub subnet: Uuid,
    pub address: Option<IpAddr>,
}

/// Health monitor settings shared by every pool of the Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorConfig {
    /// [`LOADBALANCER_HEALTH_MONITOR_TYPE`] as given (the map step forces `http` for
    /// `externalTrafficPolicy: Local`).
    pub kind: MonitorType,
    /// Whether the type annotation was set. When it was not, the map step may pick a
    /// protocol-aware type (e.g. `udp-connect` for UDP pools) without
    /// overriding an operator's explicit choice.
    pub kind_explicit: bool,
    pub delay_s: i64,
    pub timeout_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    /// `None` when the HTTP annotation is absent or exactly `{}`; otherwise the options with
    /// the API's defaults filled in.
    pub http: Option<HttpOptions>,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        Self {
            kind: MonitorType::default(),
            kind_explicit: false,
            delay_s: DEFAULT_HEALTH_MONITOR_DELAY_S,
            timeout_s: DEFAULT_HEALTH_MONITOR_TIMEOUT_S,
            up_threshold: DEFAULT_HEALTH_MONITOR_UP_THRESHOLD,
            down_threshold: DEFAULT_HEALTH_MONITOR_DOWN_THRESHOLD,
            http: None,
        }
    }
}

/// HTTP check options, defaults filled in (method `GET`, url_path `/`, version `1.1`,
/// expected_codes `["200"]`, no host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    pub method: HttpMethod,
    pub url_path: String,
    pub version: HttpVersion,
    /// Only with version 1.1.
    pub host: Option<String>,
    /// Codes (`"200"`) or ranges (`"200-204"`); never empty.
    pub expected_codes: Vec<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            method: HttpMethod::Get,
            url_path: "/".to_string(),
            version: HttpVersion::V1_1,
            host: None,
            expected_codes: vec!["200".to_string()],
        }
    }
}

impl HttpOptions {
    /// The options used for `externalTrafficPolicy: Local` when the HTTP annotation is not
    /// set: kube-proxy's health check endpoint (`/livez` over HTTP 1.0, as the reference uses).
    pub fn livez() -> Self {
        Self {
            url_path: "/livez".to_string(),
            version: HttpVersion::V1_0,
            ..Self::default()
        }
    }
}

/// One entry of `spec.ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// `""` when unnamed.
    pub name: String,
    pub protocol: PortProtocol,
    pub port: u16,
    pub node_port: u16,
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// One problem: the annotation key or spec field at fault, the value found (quoted and
/// shortened), what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_error(.field, .value.as_deref(), .problem, .hint))]
pub struct ConfigError {
    /// An annotation key (`k8s.cloudscale.ch/...`) or a spec path (`spec.ports[1].protocol`).
    pub field: String,
    /// The offending value as written (quoted, at most [`SHOWN_VALUE_CHARS`] characters);
    /// `None` when the problem is that the field is missing.
    pub value: Option<String>,
    pub problem: String,
    pub hint: String,
}

impl ConfigError {
    /// Whether the field is one of this CCM's annotations.
    pub fn is_annotation(&self) -> bool {
        self.field.starts_with(ANNOTATION_PREFIX)
    }
}

fn render_error(field: &str, value: Option<&str>, problem: &str, hint: &str) -> String {
    let what = if field.starts_with(ANNOTATION_PREFIX) {
        format!("annotation {field}")
    } else {
        field.to_string()
    };
    let mut out = match value {
        Some(v) => format!("{what}: invalid value {v}: {problem}"),
        None => format!("{what}: {problem}"),
    };
    if !hint.is_empty() {
        out.push_str(" (");
        out.push_str(hint);
        out.push(')');
    }
    out
}

/// All problems of one Service (never empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_errors(.service, .errors))]
pub struct ConfigErrors {
    /// `namespace/name`.
    pub service: String,
    pub errors: Vec<ConfigError>,
}

impl ConfigErrors {
    /// The distinct fields at fault, in order of first appearance.
    pub fn fields(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.errors
            .iter()
            .map(|e| e.field.as_str())
            .filter(|f| seen.insert(*f))
            .collect()
    }
}

fn render_errors(service: &str, errors: &[ConfigError]) -> String {
    let list = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    let n = errors.len();
    let s = if n == 1 { "" } else { "s" };
    format!("Service {service} has {n} invalid setting{s}: {list}")
}

/// At most this many characters of a bad value are echoed in an error.
pub const SHOWN_VALUE_CHARS: usize = 100;

/// The value quoted (escapes visible) and shortened to [`SHOWN_VALUE_CHARS`] characters.
fn shown(value: &str) -> String {
    let mut chars = value.chars();
    let head: String = chars.by_ref().take(SHOWN_VALUE_CHARS).collect();
    if chars.next().is_some() {
        format!("{head:?}...")
    } else {
        format!("{head:?}")
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

/// Whether the CCM handles this Service: type `LoadBalancer` and no `loadBalancerClass`.
pub fn is_handled(svc: &Service) -> bool {
    svc.spec.as_ref().is_some_and(|spec| {
        spec.type_.as_deref() == Some("LoadBalancer") && spec.load_balancer_class.is_none()
    })
}

/// The load balancer name: [`LOADBALANCER_NAME`] when set and not blank, else
/// `k8s-service-<metadata.uid>`. Never fails, so deletion can use it even when other
/// annotations are invalid ([`parse_service`] refuses a blank name annotation).
pub fn lb_name(svc: &Service) -> String {
    match annotation(svc, LOADBALANCER_NAME) {
        Some(name) if !name.trim().is_empty() => name.to_string(),
        _ => format!(
            "{DEFAULT_LB_NAME_PREFIX}{}",
            svc.metadata.uid.as_deref().unwrap_or_default()
        ),
    }
}

/// The [`LOADBALANCER_UUID`] annotation alone (`None` when absent or empty), for paths such
/// as deletion that must not depend on the other annotations being valid.
pub fn lb_uuid(svc: &Service) -> Result<Option<Uuid>, ConfigError> {
    let mut errors = Vec::new();
    let uuid = parse_uuid_annotation(annotation(svc, LOADBALANCER_UUID), &mut errors);
    match errors.pop() {
        Some(e) => Err(e),
        None => Ok(uuid),
    }
}

fn annotation<'a>(svc: &'a Service, key: &str) -> Option<&'a str> {
    svc.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// Parses and validates a Service. `Ok(None)` for Services the CCM must leave alone (not type
/// `LoadBalancer`, or `spec.loadBalancerClass` set). Otherwise every problem found is
/// returned together.
pub fn parse_service(svc: &Service) -> Result<Option<ServiceConfig>, ConfigErrors> {
    let Some(spec) = svc.spec.as_ref() else {
        return Ok(None);
    };
    if !is_handled(svc) {
        return Ok(None);
    }
    let empty = BTreeMap::new();
    let mut p = Parser {
        ann: svc.metadata.annotations.as_ref().unwrap_or(&empty),
        errors: Vec::new(),
    };
    // Read in the order problems are reported.
    let id = identity(svc, &mut p.errors);
    let lb = p.load_balancer_settings(&id.uid);
    let traffic = p.traffic_settings();
    let monitor = p.monitor();
    let nodes = p.nodes_and_status();
    let spec = spec_settings(spec, &mut p.errors);

    if !p.errors.is_empty() {
        return Err(ConfigErrors {
            service: format!("{}/{}", id.namespace, id.name),
            errors: p.errors,
        });
    }
    Ok(Some(ServiceConfig {
        namespace: id.namespace,
        name: id.name,
        uid: id.uid,
        lb_uuid: lb.lb_uuid,
        config_version: lb.config_version,
        lb_name: lb.lb_name,
        flavor: lb.flavor,
        zone: lb.zone,
        vip_addresses: lb.vip_addresses,
        floating_ips: lb.floating_ips,
        pool_algorithm: traffic.pool_algorithm,
        pool_protocol: traffic.pool_protocol,
        listener_protocol: traffic.listener_protocol,
        allowed_cidrs: traffic.allowed_cidrs,
        allowed_subnets: traffic.allowed_subnets,
        timeout_client_data_ms: traffic.timeout_client_data_ms,
        timeout_member_connect_ms: traffic.timeout_member_connect_ms,
        timeout_member_data_ms: traffic.timeout_member_data_ms,
        monitor,
        node_selector: nodes.node_selector,
        force_hostname: nodes.force_hostname,
        ip_mode: nodes.ip_mode,
        ports: spec.ports,
        external_traffic_policy: spec.external_traffic_policy,
        health_check_node_port: spec.health_check_node_port,
        source_ranges: spec.source_ranges,
        load_balancer_ip: spec.load_balancer_ip,
        ipv6_only: spec.ipv6_only,
    }))
}

mod groups;
mod parser;
mod selector;
mod spec;
#[cfg(test)]
mod tests;

use groups::*;
pub use parser::parse_network;
use parser::*;
pub use selector::*;
use spec::*;
