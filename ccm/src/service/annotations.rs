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

    let namespace = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    if uid.is_empty() {
        p.errors.push(ConfigError {
            field: "metadata.uid".to_string(),
            value: None,
            problem: "is not set".to_string(),
            hint: "the API server sets it; parse Services as read from the API".to_string(),
        });
    }

    let lb_uuid = parse_uuid_annotation(p.get(LOADBALANCER_UUID), &mut p.errors);
    let config_version = p.config_version();
    let lb_name = p.lb_name(&uid);
    let flavor = p.flavor();
    let zone = p.zone();
    let vip_addresses = p.vip_addresses();
    let floating_ips = p.floating_ips();
    let pool_algorithm = p.choice(LOADBALANCER_POOL_ALGORITHM, "pool algorithm", "");
    let pool_protocol = p.choice(
        LOADBALANCER_POOL_PROTOCOL,
        "pool protocol",
        "UDP ports always use udp, whatever this says",
    );
    let listener_protocol = p.choice(
        LOADBALANCER_LISTENER_PROTOCOL,
        "listener protocol",
        "UDP listeners follow spec.ports[].protocol, not this annotation",
    );
    let allowed_cidrs = p.allowed_cidrs();
    let allowed_subnets = p.allowed_subnets();
    let timeout_client_data_ms = p.int(
        LOADBALANCER_TIMEOUT_CLIENT_DATA_MS,
        DEFAULT_TIMEOUT_CLIENT_DATA_MS,
    );
    let timeout_member_connect_ms = p.int(
        LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
        DEFAULT_TIMEOUT_MEMBER_CONNECT_MS,
    );
    let timeout_member_data_ms = p.int(
        LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
        DEFAULT_TIMEOUT_MEMBER_DATA_MS,
    );
    let monitor = MonitorConfig {
        kind: p.choice(LOADBALANCER_HEALTH_MONITOR_TYPE, "health monitor type", ""),
        kind_explicit: p.get(LOADBALANCER_HEALTH_MONITOR_TYPE).is_some(),
        delay_s: p.int(
            LOADBALANCER_HEALTH_MONITOR_DELAY_S,
            DEFAULT_HEALTH_MONITOR_DELAY_S,
        ),
        timeout_s: p.int(
            LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S,
            DEFAULT_HEALTH_MONITOR_TIMEOUT_S,
        ),
        up_threshold: p.int(
            LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
            DEFAULT_HEALTH_MONITOR_UP_THRESHOLD,
        ),
        down_threshold: p.int(
            LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD,
            DEFAULT_HEALTH_MONITOR_DOWN_THRESHOLD,
        ),
        http: p.http_options(),
    };
    let node_selector = p.node_selector();
    let force_hostname = p.force_hostname();
    let ip_mode = p.choice(
        LOADBALANCER_IP_MODE,
        "IP mode",
        "the value is case-sensitive",
    );

    let ports = parse_ports(spec, &mut p.errors);
    let external_traffic_policy = parse_traffic_policy(spec, &mut p.errors);
    let health_check_node_port = parse_health_check_node_port(spec, &mut p.errors);
    let source_ranges = parse_source_ranges(spec, &mut p.errors);
    let load_balancer_ip = spec
        .load_balancer_ip
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);

    if !p.errors.is_empty() {
        return Err(ConfigErrors {
            service: format!("{namespace}/{name}"),
            errors: p.errors,
        });
    }
    Ok(Some(ServiceConfig {
        namespace,
        name,
        uid,
        lb_uuid,
        config_version,
        lb_name,
        flavor,
        zone,
        vip_addresses,
        floating_ips,
        pool_algorithm,
        pool_protocol,
        listener_protocol,
        allowed_cidrs,
        allowed_subnets,
        timeout_client_data_ms,
        timeout_member_connect_ms,
        timeout_member_data_ms,
        monitor,
        node_selector,
        force_hostname,
        ip_mode,
        ports,
        external_traffic_policy,
        health_check_node_port,
        source_ranges,
        load_balancer_ip,
    }))
}

// ---------------------------------------------------------------------------------------------
// Annotation parsers
// ---------------------------------------------------------------------------------------------

/// A string enum that [`Parser::choice`] can read.
trait Choice: Copy + Default {
    fn from_name(s: &str) -> Option<Self>;
    fn choices() -> String;
}

macro_rules! impl_choice {
    ($($t:ty),+) => {
        $(impl Choice for $t {
            fn from_name(s: &str) -> Option<Self> {
                <$t>::from_name(s)
            }
            fn choices() -> String {
                <$t>::choices()
            }
        })+
    };
}
impl_choice!(
    PoolAlgorithm,
    PoolProtocol,
    ListenerProtocol,
    MonitorType,
    IpMode
);

struct Parser<'a> {
    ann: &'a BTreeMap<String, String>,
    errors: Vec<ConfigError>,
}

impl<'a> Parser<'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        self.ann.get(key).map(String::as_str)
    }

    fn error(&mut self, key: &str, value: &str, problem: impl Into<String>, hint: &str) {
        self.errors.push(ConfigError {
            field: key.to_string(),
            value: Some(shown(value)),
            problem: problem.into(),
            hint: hint.to_string(),
        });
    }

    /// *int* (3.1): a decimal integer, sign allowed, within [`API_NUMBER_RANGE`].
    fn int(&mut self, key: &str, default: i64) -> i64 {
        let Some(raw) = self.get(key) else {
            return default;
        };
        let hint = format!(
            "use a whole number from {} to {}, or remove the annotation for the default {default}",
            API_NUMBER_RANGE.start(),
            API_NUMBER_RANGE.end()
        );
        match raw.parse::<i64>() {
            Ok(v) if API_NUMBER_RANGE.contains(&v) => v,
            Ok(_) => {
                self.error(key, raw, "out of the range the API accepts", &hint);
                default
            }
            Err(_) => {
                self.error(key, raw, "not a decimal integer", &hint);
                default
            }
        }
    }

    /// A closed set of strings, case-sensitive; the empty string is an error.
    fn choice<T: Choice>(&mut self, key: &str, what: &str, note: &str) -> T {
        let Some(raw) = self.get(key) else {
            return T::default();
        };
        match T::from_name(raw) {
            Some(v) => v,
            None => {
                let mut hint = format!("use one of {}", T::choices());
                if !note.is_empty() {
                    hint.push_str("; ");
                    hint.push_str(note);
                }
                self.error(key, raw, format!("not a supported {what}"), &hint);
                T::default()
            }
        }
    }

    /// *string list* (3.1): a JSON array of strings; empty or blank is the empty list (so is
    /// JSON `null`, as in the reference). `None` after an error.
    fn string_list(&mut self, key: &str, example: &str) -> Option<Vec<String>> {
        let raw = self.get(key)?;
        if raw.trim().is_empty() {
            return Some(Vec::new());
        }
        let hint = format!("write a JSON array of strings, e.g. '{example}'");
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Null) => Some(Vec::new()),
            Ok(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                let mut ok = true;
                for (i, item) in items.into_iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s),
                        other => {
                            ok = false;
                            self.error(
                                key,
                                raw,
                                format!("entry [{i}] is {}, not a string", json_kind(&other)),
                                &hint,
                            );
                        }
                    }
                }
                ok.then_some(out)
            }
            Ok(other) => {
                self.error(
                    key,
                    raw,
                    format!("is a JSON {}, not an array of strings", json_kind(&other)),
                    &hint,
                );
                None
            }
            Err(e) => {
                self.error(key, raw, format!("not valid JSON ({e})"), &hint);
                None
            }
        }
    }

    fn config_version(&mut self) -> u32 {
        match self.get(LOADBALANCER_CONFIG_VERSION) {
            None => 1,
            Some(CONFIG_VERSION) => 1,
            Some(raw) => {
                self.error(
                    LOADBALANCER_CONFIG_VERSION,
                    raw,
                    "unsupported configuration version",
                    "this CCM understands version 1 only; the CCM writes this annotation, \
                     remove it or set it to \"1\"",
                );
                1
            }
        }
    }

    fn lb_name(&mut self, uid: &str) -> String {
        match self.get(LOADBALANCER_NAME) {
            None => format!("{DEFAULT_LB_NAME_PREFIX}{uid}"),
            Some(raw) if raw.trim().is_empty() => {
                self.error(
                    LOADBALANCER_NAME,
                    raw,
                    "the load balancer name must not be blank",
                    "set a name, or remove the annotation for the default k8s-service-<uid>",
                );
                format!("{DEFAULT_LB_NAME_PREFIX}{uid}")
            }
            Some(raw) => raw.to_string(),
        }
    }

    fn flavor(&mut self) -> String {
        match self.get(LOADBALANCER_FLAVOR) {
            None => DEFAULT_FLAVOR.to_string(),
            Some(raw) if raw.trim().is_empty() || raw.trim() != raw => {
                self.error(
                    LOADBALANCER_FLAVOR,
                    raw,
                    "not a flavor slug",
                    "use a flavor slug such as lb-standard, or remove the annotation",
                );
                DEFAULT_FLAVOR.to_string()
            }
            Some(raw) => raw.to_string(),
        }
    }

    fn zone(&mut self) -> Option<String> {
        match self.get(LOADBALANCER_ZONE) {
            None | Some("") => None,
            Some(raw) if raw.chars().any(char::is_whitespace) => {
                self.error(
                    LOADBALANCER_ZONE,
                    raw,
                    "not a zone slug",
                    "use a zone slug such as rma1 or lpg1, or remove the annotation to \
                     derive the zone from the nodes",
                );
                None
            }
            Some(raw) => Some(raw.to_string()),
        }
    }

    /// JSON array of `{"subnet": "<uuid>", "address": "<ip>"}`; strict: the empty string and
    /// unknown keys are errors.
    fn vip_addresses(&mut self) -> Option<Vec<VipRequest>> {
        let key = LOADBALANCER_VIP_ADDRESSES;
        let raw = self.get(key)?;
        let hint = "write a JSON array of objects, e.g. \
                    '[{\"subnet\": \"<subnet uuid>\", \"address\": \"10.0.0.10\"}]' \
                    (address optional), or '[]'";
        let items = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Array(items)) => items,
            Ok(other) => {
                self.error(
                    key,
                    raw,
                    format!("is a JSON {}, not an array of objects", json_kind(&other)),
                    hint,
                );
                return Some(Vec::new());
            }
            Err(e) => {
                self.error(key, raw, format!("not valid JSON ({e})"), hint);
                return Some(Vec::new());
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Value::Object(obj) = item else {
                self.error(
                    key,
                    raw,
                    format!("entry [{i}] is {}, not an object", json_kind(item)),
                    hint,
                );
                continue;
            };
            for k in obj.keys() {
                if k != "subnet" && k != "address" {
                    self.error(
                        key,
                        raw,
                        format!("entry [{i}] has the unknown key {k:?}"),
                        "only \"subnet\" and \"address\" are allowed",
                    );
                }
            }
            let subnet = match obj.get("subnet") {
                Some(Value::String(s)) => match Uuid::try_parse(s) {
                    Ok(u) => Some(u),
                    Err(_) => {
                        self.error(
                            key,
                            raw,
                            format!("entry [{i}]: subnet {s:?} is not a UUID"),
                            "use the UUID of a subnet, as listed by the API",
                        );
                        None
                    }
                },
                None | Some(Value::Null) => {
                    self.error(
                        key,
                        raw,
                        format!("entry [{i}] has no subnet"),
                        "every entry needs \"subnet\": \"<subnet uuid>\"",
                    );
                    None
                }
                Some(other) => {
                    self.error(
                        key,
                        raw,
                        format!("entry [{i}]: subnet is {}, not a string", json_kind(other)),
                        hint,
                    );
                    None
                }
            };
            let address = match obj.get("address") {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => match s.parse::<IpAddr>() {
                    Ok(a) => Ok(Some(a)),
                    Err(_) => {
                        self.error(
                            key,
                            raw,
                            format!("entry [{i}]: address {s:?} is not an IP address"),
                            "use a single address inside the subnet without a prefix length, \
                             or leave \"address\" out to let the API choose",
                        );
                        Err(())
                    }
                },
                Some(other) => {
                    self.error(
                        key,
                        raw,
                        format!("entry [{i}]: address is {}, not a string", json_kind(other)),
                        hint,
                    );
                    Err(())
                }
            };
            if let (Some(subnet), Ok(address)) = (subnet, address) {
                out.push(VipRequest { subnet, address });
            }
        }
        Some(out)
    }

    fn floating_ips(&mut self) -> Vec<IpNet> {
        let key = LOADBALANCER_FLOATING_IPS;
        let Some(raw) = self.get(key) else {
            return Vec::new();
        };
        let Some(list) = self.string_list(key, r#"["5.102.150.123/32", "2a06:c01::123/128"]"#)
        else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            match parse_network(entry) {
                Ok(net) => push_unique(&mut out, net),
                Err(problem) => self.error(
                    key,
                    raw,
                    format!("entry [{i}] {entry:?} {problem}"),
                    "list Floating IP networks as the API shows them, e.g. \
                     \"5.102.150.123/32\" or \"2a06:c01::/56\"; a bare address means /32 or \
                     /128",
                ),
            }
        }
        out
    }

    fn allowed_cidrs(&mut self) -> Vec<IpNet> {
        let key = LOADBALANCER_LISTENER_ALLOWED_CIDRS;
        let Some(raw) = self.get(key) else {
            return Vec::new();
        };
        let Some(list) = self.string_list(key, r#"["1.2.3.0/24", "2001:db8::/32"]"#) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            match parse_network(entry) {
                Ok(net) => push_unique(&mut out, net),
                Err(problem) => self.error(
                    key,
                    raw,
                    format!("entry [{i}] {entry:?} {problem}"),
                    "list networks in CIDR notation with the host bits zero, e.g. \
                     \"1.2.3.0/24\", or single addresses",
                ),
            }
        }
        out
    }

    fn allowed_subnets(&mut self) -> Vec<Uuid> {
        let key = LOADBALANCER_LISTENER_ALLOWED_SUBNETS;
        let Some(raw) = self.get(key) else {
            return Vec::new();
        };
        let Some(list) = self.string_list(key, r#"["<subnet uuid>"]"#) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            match Uuid::try_parse(entry) {
                Ok(u) => push_unique(&mut out, u),
                Err(_) => self.error(
                    key,
                    raw,
                    format!("entry [{i}] {entry:?} is not a UUID"),
                    "list subnet UUIDs as shown by the API",
                ),
            }
        }
        out
    }

    /// Absent or exactly `{}`: no HTTP options. Otherwise a strict JSON object.
    fn http_options(&mut self) -> Option<HttpOptions> {
        let key = LOADBALANCER_HEALTH_MONITOR_HTTP;
        let raw = self.get(key)?;
        if raw == DEFAULT_HEALTH_MONITOR_HTTP {
            return None;
        }
        let hint = "write a JSON object with any of \"method\", \"url_path\", \"version\", \
                    \"host\", \"expected_codes\", e.g. '{\"url_path\": \"/healthz\"}', \
                    or '{}' for none";
        let obj: Map<String, Value> = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(obj)) => obj,
            Ok(other) => {
                self.error(
                    key,
                    raw,
                    format!("is a JSON {}, not an object", json_kind(&other)),
                    hint,
                );
                return None;
            }
            Err(e) => {
                self.error(key, raw, format!("not valid JSON ({e})"), hint);
                return None;
            }
        };
        let mut opts = HttpOptions::default();
        let before = self.errors.len();
        for (k, v) in &obj {
            if v.is_null() {
                continue;
            }
            match k.as_str() {
                "method" => match v.as_str().and_then(HttpMethod::from_name) {
                    Some(m) => opts.method = m,
                    None => self.error(
                        key,
                        raw,
                        format!("method {v} is not supported"),
                        &format!("use one of {} (upper case)", HttpMethod::choices()),
                    ),
                },
                "url_path" => match v.as_str() {
                    Some(p) if p.starts_with('/') && !p.chars().any(char::is_whitespace) => {
                        opts.url_path = p.to_string()
                    }
                    _ => self.error(
                        key,
                        raw,
                        format!("url_path {v} is not an absolute path"),
                        "use a path starting with \"/\", without spaces",
                    ),
                },
                "version" => match v.as_str().and_then(HttpVersion::from_name) {
                    Some(ver) => opts.version = ver,
                    None => self.error(
                        key,
                        raw,
                        format!("version {v} is not supported"),
                        "use \"1.0\" or \"1.1\"",
                    ),
                },
                "host" => match v.as_str() {
                    Some(h) if !h.is_empty() && !h.chars().any(|c| c.is_whitespace()) => {
                        opts.host = Some(h.to_string())
                    }
                    _ => self.error(
                        key,
                        raw,
                        format!("host {v} is not a host name"),
                        "use a host name such as \"www.example.com\", or leave \"host\" out",
                    ),
                },
                "expected_codes" => match expected_codes(v) {
                    Some(codes) => opts.expected_codes = codes,
                    None => self.error(
                        key,
                        raw,
                        format!("expected_codes {v} is not a list of status codes"),
                        "use a non-empty list of three-digit codes or ranges, e.g. [\"200\"] \
                         or [\"200-204\"]",
                    ),
                },
                other => self.error(
                    key,
                    raw,
                    format!("unknown key {other:?}"),
                    "allowed keys are method, url_path, version, host and expected_codes",
                ),
            }
        }
        if opts.host.is_some() && opts.version == HttpVersion::V1_0 {
            self.error(
                key,
                raw,
                "host cannot be used with HTTP version 1.0",
                "use version \"1.1\" (the default), or leave \"host\" out",
            );
        }
        (self.errors.len() == before).then_some(opts)
    }

    fn node_selector(&mut self) -> Selector {
        let key = LOADBALANCER_NODE_SELECTOR;
        let Some(raw) = self.get(key) else {
            return Selector::default();
        };
        match Selector::parse(raw) {
            Ok(s) => s,
            Err(reason) => {
                self.error(
                    key,
                    raw,
                    format!("unable to parse selector: {reason}"),
                    "use the Kubernetes label selector syntax, e.g. \
                     'role=lb,zone in (rma1,lpg1),!excluded'",
                );
                Selector::default()
            }
        }
    }

    fn force_hostname(&mut self) -> Option<String> {
        let key = LOADBALANCER_FORCE_HOSTNAME;
        match self.get(key) {
            None | Some("") => None,
            Some(raw) if raw.parse::<IpAddr>().is_ok() => {
                self.error(
                    key,
                    raw,
                    "an IP address is not a host name",
                    "Kubernetes refuses IP addresses as ingress host names; use a DNS name",
                );
                None
            }
            Some(raw) if !is_dns1123_subdomain(raw) => {
                self.error(
                    key,
                    raw,
                    "not a valid DNS name",
                    "Kubernetes only accepts lower-case DNS names (RFC 1123), e.g. \
                     lb.example.com",
                );
                None
            }
            Some(raw) => Some(raw.to_string()),
        }
    }
}

fn parse_uuid_annotation(raw: Option<&str>, errors: &mut Vec<ConfigError>) -> Option<Uuid> {
    match raw {
        None | Some("") => None,
        Some(raw) => match Uuid::try_parse(raw) {
            Ok(u) => Some(u),
            Err(_) => {
                errors.push(ConfigError {
                    field: LOADBALANCER_UUID.to_string(),
                    value: Some(shown(raw)),
                    problem: "not a UUID".to_string(),
                    hint: "the CCM writes this annotation; remove it to look the load \
                           balancer up by name"
                        .to_string(),
                });
                None
            }
        },
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn push_unique<T: PartialEq>(out: &mut Vec<T>, v: T) {
    if !out.contains(&v) {
        out.push(v);
    }
}

/// A network in the API's form: `a.b.c.d/n` or `x::y/n` with the host bits zero (the API
/// refuses others); a bare address is the single-address network (`/32`, `/128`). The
/// result prints canonically (lower-case, compressed IPv6).
pub fn parse_network(s: &str) -> Result<IpNet, String> {
    if let Ok(addr) = s.parse::<IpAddr>() {
        return Ok(IpNet::from(addr));
    }
    match s.parse::<IpNet>() {
        Ok(net) if net.trunc() == net => Ok(net),
        Ok(net) => Err(format!(
            "has host bits set (the network is {})",
            net.trunc()
        )),
        Err(_) => Err("is neither an IP address nor a network in CIDR notation".to_string()),
    }
}

/// `["200"]`, `["200", "201"]`, `["200-204"]`: three-digit codes or ascending ranges.
fn expected_codes(v: &Value) -> Option<Vec<String>> {
    let items = v.as_array()?;
    if items.is_empty() {
        return None;
    }
    let code = |s: &str| -> Option<u16> {
        (s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let s = item.as_str()?;
        let ok = match s.split_once('-') {
            None => code(s).is_some(),
            Some((lo, hi)) => matches!((code(lo), code(hi)), (Some(l), Some(h)) if l <= h),
        };
        if !ok {
            return None;
        }
        out.push(s.to_string());
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// Spec fields
// ---------------------------------------------------------------------------------------------

fn spec_error(
    errors: &mut Vec<ConfigError>,
    field: String,
    value: Option<&str>,
    problem: &str,
    hint: &str,
) {
    errors.push(ConfigError {
        field,
        value: value.map(shown),
        problem: problem.to_string(),
        hint: hint.to_string(),
    });
}

fn parse_ports(spec: &ServiceSpec, errors: &mut Vec<ConfigError>) -> Vec<PortSpec> {
    let ports: &[ServicePort] = spec.ports.as_deref().unwrap_or_default();
    if ports.is_empty() {
        spec_error(
            errors,
            "spec.ports".to_string(),
            None,
            "no ports: a LoadBalancer Service needs at least one",
            "add a port",
        );
    }
    let mut out = Vec::with_capacity(ports.len());
    for (i, p) in ports.iter().enumerate() {
        let protocol = match p.protocol.as_deref() {
            None => Some(PortProtocol::Tcp),
            Some(raw) => {
                let proto = PortProtocol::from_name(raw);
                if proto.is_none() {
                    spec_error(
                        errors,
                        format!("spec.ports[{i}].protocol"),
                        Some(raw),
                        "not supported by cloudscale.ch load balancers",
                        "use TCP or UDP",
                    );
                }
                proto
            }
        };
        let port = match u16::try_from(p.port) {
            Ok(v) if v > 0 => Some(v),
            _ => {
                spec_error(
                    errors,
                    format!("spec.ports[{i}].port"),
                    Some(&p.port.to_string()),
                    "not a port number",
                    "use 1 to 65535",
                );
                None
            }
        };
        let node_port = match p.node_port {
            None | Some(0) => {
                let hint = if spec.allocate_load_balancer_node_ports == Some(false) {
                    "remove allocateLoadBalancerNodePorts: false (or set it to true) so \
                     Kubernetes allocates node ports"
                } else {
                    "Kubernetes allocates it when the Service is stored; parse Services as read \
                     from the API"
                };
                spec_error(
                    errors,
                    format!("spec.ports[{i}].nodePort"),
                    None,
                    "is not set; the load balancer sends traffic to node ports",
                    hint,
                );
                None
            }
            Some(n) => match u16::try_from(n) {
                Ok(v) => Some(v),
                Err(_) => {
                    spec_error(
                        errors,
                        format!("spec.ports[{i}].nodePort"),
                        Some(&n.to_string()),
                        "not a port number",
                        "let Kubernetes allocate the node port",
                    );
                    None
                }
            },
        };
        if let (Some(protocol), Some(port), Some(node_port)) = (protocol, port, node_port) {
            out.push(PortSpec {
                name: p.name.clone().unwrap_or_default(),
                protocol,
                port,
                node_port,
            });
        }
    }
    out
}

fn parse_traffic_policy(
    spec: &ServiceSpec,
    errors: &mut Vec<ConfigError>,
) -> ExternalTrafficPolicy {
    match spec.external_traffic_policy.as_deref() {
        None | Some("") => ExternalTrafficPolicy::Cluster,
        Some(raw) => ExternalTrafficPolicy::from_name(raw).unwrap_or_else(|| {
            spec_error(
                errors,
                "spec.externalTrafficPolicy".to_string(),
                Some(raw),
                "not a supported traffic policy",
                "use Cluster or Local",
            );
            ExternalTrafficPolicy::Cluster
        }),
    }
}

fn parse_health_check_node_port(spec: &ServiceSpec, errors: &mut Vec<ConfigError>) -> Option<u16> {
    match spec.health_check_node_port {
        None | Some(0) => None,
        Some(n) => match u16::try_from(n) {
            Ok(v) => Some(v),
            Err(_) => {
                spec_error(
                    errors,
                    "spec.healthCheckNodePort".to_string(),
                    Some(&n.to_string()),
                    "not a port number",
                    "let Kubernetes allocate the health check node port",
                );
                None
            }
        },
    }
}

/// Kubernetes trims spaces and clears host bits of source ranges; so do we.
fn parse_source_ranges(spec: &ServiceSpec, errors: &mut Vec<ConfigError>) -> Vec<IpNet> {
    let mut out = Vec::new();
    for (i, raw) in spec
        .load_balancer_source_ranges
        .iter()
        .flatten()
        .enumerate()
    {
        let s = raw.trim();
        let parsed = s
            .parse::<IpNet>()
            .map(|n| n.trunc())
            .or_else(|_| s.parse::<IpAddr>().map(IpNet::from));
        match parsed {
            Ok(net) => push_unique(&mut out, net),
            Err(_) => spec_error(
                errors,
                format!("spec.loadBalancerSourceRanges[{i}]"),
                Some(raw),
                "not a network in CIDR notation",
                "use CIDRs such as 1.2.3.0/24",
            ),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Label selector (k8s.io/apimachinery/pkg/labels grammar)
// ---------------------------------------------------------------------------------------------

/// A parsed Kubernetes label selector: requirements ANDed; empty matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

/// One requirement of a [`Selector`]. `values` are sorted and distinct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `k=v`
    Equals,
    /// `k==v`
    DoubleEquals,
    /// `k!=v`
    NotEquals,
    /// `k in (a,b)`
    In,
    /// `k notin (a,b)`
    NotIn,
    /// `k`
    Exists,
    /// `!k`
    DoesNotExist,
    /// `k>5`
    GreaterThan,
    /// `k<5`
    LessThan,
}

impl Selector {
    /// Parses the string form (`a=b,c!=d`, `k in (x,y)`, `k notin (x)`, `k`, `!k`, `k>1`,
    /// `k<1`); blank selects everything. The error is the parser's reason.
    pub fn parse(s: &str) -> Result<Self, String> {
        let tokens = lex(s)?;
        let mut p = SelectorParser { tokens, pos: 0 };
        let mut requirements = p.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// Whether the selector has no requirements (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a label set satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl Requirement {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        let contains = |v: &String| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(contains),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(contains),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), Some(want)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.first().map(String::as_str).unwrap_or_default();
        match self.operator {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::DoubleEquals => write!(f, "{}=={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::GreaterThan => write!(f, "{}>{first}", self.key),
            Operator::LessThan => write!(f, "{}<{first}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Ident,
    In,
    NotIn,
    Bang,
    NotEquals,
    Equals,
    DoubleEquals,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
    End,
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn symbol(s: &str) -> Option<Tok> {
    Some(match s {
        "!" => Tok::Bang,
        "!=" => Tok::NotEquals,
        "=" => Tok::Equals,
        "==" => Tok::DoubleEquals,
        ">" => Tok::Gt,
        "<" => Tok::Lt,
        "(" => Tok::Open,
        ")" => Tok::Close,
        "," => Tok::Comma,
        _ => return None,
    })
}

fn lex(s: &str) -> Result<Vec<(Tok, String)>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < chars.len() && matches!(chars[i], ' ' | '\t' | '\r' | '\n') {
            i += 1;
        }
        let Some(&c) = chars.get(i) else {
            out.push((Tok::End, String::new()));
            return Ok(out);
        };
        if is_special(c) {
            // Longest known operator (the lexer of apimachinery).
            let mut buf = String::new();
            let mut last: Option<(Tok, String, usize)> = None;
            let mut j = i;
            while let Some(&c) = chars.get(j) {
                if !is_special(c) {
                    break;
                }
                buf.push(c);
                j += 1;
                if let Some(t) = symbol(&buf) {
                    last = Some((t, buf.clone(), j));
                } else if last.is_some() {
                    break;
                }
            }
            match last {
                Some((t, lit, end)) => {
                    out.push((t, lit));
                    i = end;
                }
                None => return Err(format!("unexpected symbol '{buf}'")),
            }
        } else {
            let start = i;
            while i < chars.len()
                && !is_special(chars[i])
                && !matches!(chars[i], ' ' | '\t' | '\r' | '\n')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let tok = match word.as_str() {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            };
            out.push((tok, word));
        }
    }
}

struct SelectorParser {
    tokens: Vec<(Tok, String)>,
    pos: usize,
}

fn describe(tok: Tok, lit: &str) -> String {
    if tok == Tok::End {
        "end of string".to_string()
    } else {
        format!("'{lit}'")
    }
}

impl SelectorParser {
    /// The next token; with `values`, keywords read as identifiers.
    fn peek(&self, values: bool) -> (Tok, String) {
        let (t, lit) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        if values && matches!(t, Tok::In | Tok::NotIn) {
            (Tok::Ident, lit)
        } else {
            (t, lit)
        }
    }

    fn next(&mut self, values: bool) -> (Tok, String) {
        let t = self.peek(values);
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut out = Vec::new();
        loop {
            let (t, lit) = self.peek(true);
            match t {
                Tok::Ident | Tok::Bang => {
                    out.push(self.requirement()?);
                    let (t, lit) = self.next(true);
                    match t {
                        Tok::End => return Ok(out),
                        Tok::Comma => {
                            let (t2, l2) = self.peek(true);
                            if !matches!(t2, Tok::Ident | Tok::Bang) {
                                return Err(format!(
                                    "found {}, expected: identifier after ','",
                                    describe(t2, &l2)
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found {}, expected: ',' or end of string",
                                describe(t, &lit)
                            ));
                        }
                    }
                }
                Tok::End => return Ok(out),
                _ => {
                    return Err(format!(
                        "found {}, expected: !, identifier, or end of string",
                        describe(t, &lit)
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut t, mut key) = self.next(true);
        let mut operator = None;
        if t == Tok::Bang {
            operator = Some(Operator::DoesNotExist);
            (t, key) = self.next(true);
        }
        if t != Tok::Ident {
            return Err(format!("found {}, expected: identifier", describe(t, &key)));
        }
        if !is_qualified_name(&key) {
            return Err(format!(
                "invalid label key {key:?}: must be a name of at most 63 characters \
                 (alphanumerics, '-', '_', '.'; starting and ending alphanumeric), optionally \
                 prefixed by a DNS subdomain and '/'"
            ));
        }
        if operator.is_none() && matches!(self.peek(true).0, Tok::End | Tok::Comma) {
            operator = Some(Operator::Exists);
        }
        if let Some(op) = operator {
            return Ok(Requirement {
                key,
                operator: op,
                values: Vec::new(),
            });
        }
        let (t, lit) = self.next(false);
        let op = match t {
            Tok::In => Operator::In,
            Tok::NotIn => Operator::NotIn,
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::NotEquals => Operator::NotEquals,
            Tok::Gt => Operator::GreaterThan,
            Tok::Lt => Operator::LessThan,
            _ => {
                return Err(format!(
                    "found {}, expected: in, notin, =, ==, !=, >, <",
                    describe(t, &lit)
                ));
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        for v in &values {
            if !(v.is_empty() || is_label_name(v)) {
                return Err(format!(
                    "invalid label value {v:?}: must be empty or at most 63 characters \
                     (alphanumerics, '-', '_', '.'; starting and ending alphanumeric)"
                ));
            }
        }
        if matches!(op, Operator::GreaterThan | Operator::LessThan)
            && values.iter().any(|v| v.parse::<i64>().is_err())
        {
            return Err(format!(
                "for '>' and '<' the value must be an integer, found {:?}",
                values.first().map(String::as_str).unwrap_or_default()
            ));
        }
        Ok(Requirement {
            key,
            operator: op,
            values: values.into_iter().collect(),
        })
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (t, _) = self.peek(true);
        if matches!(t, Tok::End | Tok::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.next(true) {
            (Tok::Ident, lit) => Ok(BTreeSet::from([lit])),
            (t, lit) => Err(format!("found {}, expected: identifier", describe(t, &lit))),
        }
    }

    fn set_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (t, lit) = self.next(true);
        if t != Tok::Open {
            return Err(format!("found {}, expected: '('", describe(t, &lit)));
        }
        let (t, lit) = self.peek(true);
        match t {
            Tok::Ident | Tok::Comma => {
                let set = self.identifier_list()?;
                let (t, lit) = self.next(true);
                if t != Tok::Close {
                    return Err(format!("found {}, expected: ')'", describe(t, &lit)));
                }
                Ok(set)
            }
            Tok::Close => {
                self.next(true);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found {}, expected: ',', ')' or identifier",
                describe(t, &lit)
            )),
        }
    }

    fn identifier_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (t, lit) = self.next(true);
            match t {
                Tok::Ident => {
                    set.insert(lit);
                    let (t2, l2) = self.peek(true);
                    match t2 {
                        Tok::Comma => {}
                        Tok::Close => return Ok(set),
                        _ => {
                            return Err(format!(
                                "found {}, expected: ',' or ')'",
                                describe(t2, &l2)
                            ));
                        }
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    match self.peek(true).0 {
                        Tok::Close => {
                            set.insert(String::new());
                            return Ok(set);
                        }
                        Tok::Comma => {
                            self.next(true);
                            set.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => {
                    return Err(format!(
                        "found {}, expected: ',' or identifier",
                        describe(t, &lit)
                    ));
                }
            }
        }
    }
}

/// A label name: 1-63 characters of `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// RFC 1123 subdomain as Kubernetes checks it: at most 253 characters, dot-separated
/// non-empty labels of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b.first().is_some_and(|c| *c != b'-')
                && b.last().is_some_and(|c| *c != b'-')
        })
}

/// A label key: `[prefix/]name`, prefix a DNS subdomain.
fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        None => is_label_name(s),
        Some((prefix, name)) => {
            !name.contains('/') && is_dns1123_subdomain(prefix) && is_label_name(name)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const UID: &str = "abc-123";
    const SUBNET: &str = "0f3f2e6c-0000-4000-8000-000000000001";

    fn port(name: &str, protocol: &str, port: i32, node_port: Option<i32>) -> ServicePort {
        ServicePort {
            name: (!name.is_empty()).then(|| name.to_string()),
            protocol: Some(protocol.to_string()),
            port,
            node_port,
            ..Default::default()
        }
    }

    fn svc(annotations: &[(&str, &str)]) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some(UID.into()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(vec![port("http", "TCP", 80, Some(30080))]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn ok(annotations: &[(&str, &str)]) -> ServiceConfig {
        match parse_service(&svc(annotations)) {
            Ok(Some(c)) => c,
            other => panic!("expected a config, got {other:?}"),
        }
    }

    fn errs(s: &Service) -> ConfigErrors {
        match parse_service(s) {
            Err(e) => e,
            other => panic!("expected errors, got {other:?}"),
        }
    }

    /// Exactly one error, on `key`, whose message names the key and the value.
    fn bad(key: &str, value: &str) -> ConfigError {
        let e = errs(&svc(&[(key, value)]));
        assert_eq!(e.errors.len(), 1, "{key}={value:?}: {e}");
        let err = e.errors[0].clone();
        assert_eq!(err.field, key);
        let msg = err.to_string();
        assert!(msg.contains(key), "{msg}");
        assert!(msg.contains(&format!("{value:?}")), "{msg}");
        assert!(!err.hint.is_empty());
        err
    }

    #[test]
    fn defaults_match_the_reference() {
        let c = ok(&[]);
        assert_eq!(c.lb_name, "k8s-service-abc-123");
        assert_eq!(c.flavor, "lb-standard");
        assert_eq!(c.zone, None);
        assert_eq!(c.lb_uuid, None);
        assert_eq!(c.config_version, 1);
        assert_eq!(c.vip_addresses, None);
        assert!(c.floating_ips.is_empty());
        assert_eq!(c.pool_algorithm, PoolAlgorithm::RoundRobin);
        assert_eq!(c.pool_protocol, PoolProtocol::Tcp);
        assert_eq!(c.listener_protocol, ListenerProtocol::Tcp);
        assert!(c.allowed_cidrs.is_empty());
        assert!(c.allowed_subnets.is_empty());
        assert_eq!(c.timeout_client_data_ms, 50000);
        assert_eq!(c.timeout_member_connect_ms, 5000);
        assert_eq!(c.timeout_member_data_ms, 50000);
        assert_eq!(c.monitor, MonitorConfig::default());
        assert_eq!(c.monitor.kind, MonitorType::Tcp);
        assert!(!c.monitor.kind_explicit);
        assert_eq!(
            (
                c.monitor.delay_s,
                c.monitor.timeout_s,
                c.monitor.up_threshold,
                c.monitor.down_threshold
            ),
            (2, 1, 2, 3)
        );
        assert_eq!(c.monitor.http, None);
        assert!(c.node_selector.is_empty());
        assert_eq!(c.force_hostname, None);
        assert_eq!(c.ip_mode, IpMode::Proxy);
        assert_eq!(
            c.ports,
            vec![PortSpec {
                name: "http".into(),
                protocol: PortProtocol::Tcp,
                port: 80,
                node_port: 30080
            }]
        );
        assert_eq!(c.external_traffic_policy, ExternalTrafficPolicy::Cluster);
        assert_eq!(c.health_check_node_port, None);
        assert!(c.source_ranges.is_empty());
        assert_eq!((c.namespace.as_str(), c.name.as_str()), ("default", "web"));
        assert_eq!(c.uid, UID);
    }

    #[test]
    fn key_list_is_complete_and_distinct() {
        let set: BTreeSet<_> = ALL_ANNOTATIONS.iter().collect();
        assert_eq!(set.len(), 24);
        assert!(
            ALL_ANNOTATIONS
                .iter()
                .all(|k| k.starts_with(ANNOTATION_PREFIX))
        );
        assert!(
            CCM_WRITTEN_ANNOTATIONS
                .iter()
                .all(|k| ALL_ANNOTATIONS.contains(k))
        );
        // Byte-identical to the reference, spot-checked where it is easy to slip.
        assert_eq!(
            LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
            "k8s.cloudscale.ch/loadbalancer-timeout-member-connect-ms"
        );
        assert_eq!(
            LOADBALANCER_NODE_SELECTOR,
            "k8s.cloudscale.ch/loadbalancer-node-selector"
        );
    }

    #[test]
    fn not_handled_services_are_skipped() {
        let mut s = svc(&[(LOADBALANCER_POOL_ALGORITHM, "bogus")]);
        if let Some(sp) = s.spec.as_mut() {
            sp.type_ = Some("ClusterIP".into());
        }
        assert_eq!(parse_service(&s), Ok(None));
        if let Some(sp) = s.spec.as_mut() {
            sp.type_ = None;
        }
        assert_eq!(parse_service(&s), Ok(None));
        let mut s = svc(&[(LOADBALANCER_POOL_ALGORITHM, "bogus")]);
        if let Some(sp) = s.spec.as_mut() {
            sp.load_balancer_class = Some("example.com/other".into());
        }
        assert_eq!(parse_service(&s), Ok(None));
        assert!(!is_handled(&s));
        let mut s = svc(&[]);
        s.spec = None;
        assert_eq!(parse_service(&s), Ok(None));
    }

    #[test]
    fn lb_name_and_uuid_helpers() {
        assert_eq!(lb_name(&svc(&[])), "k8s-service-abc-123");
        assert_eq!(lb_name(&svc(&[(LOADBALANCER_NAME, "my-lb")])), "my-lb");
        assert_eq!(
            lb_name(&svc(&[(LOADBALANCER_NAME, "  ")])),
            "k8s-service-abc-123"
        );
        assert_eq!(ok(&[(LOADBALANCER_NAME, "my-lb")]).lb_name, "my-lb");
        bad(LOADBALANCER_NAME, "");
        bad(LOADBALANCER_NAME, " ");
        let u = "5e3b0e2f-8c7a-4a52-9a0f-6f6a1d0f1e2d";
        assert_eq!(
            lb_uuid(&svc(&[(LOADBALANCER_UUID, u)])),
            Ok(Some(Uuid::parse_str(u).unwrap_or_default()))
        );
        assert_eq!(lb_uuid(&svc(&[(LOADBALANCER_UUID, "")])), Ok(None));
        assert!(lb_uuid(&svc(&[(LOADBALANCER_UUID, "nope")])).is_err());
    }

    #[test]
    fn uuid_and_config_version() {
        let u = "5E3B0E2F-8C7A-4A52-9A0F-6F6A1D0F1E2D";
        let c = ok(&[(LOADBALANCER_UUID, u), (LOADBALANCER_CONFIG_VERSION, "1")]);
        assert_eq!(
            c.lb_uuid.map(|u| u.to_string()).as_deref(),
            Some("5e3b0e2f-8c7a-4a52-9a0f-6f6a1d0f1e2d")
        );
        assert_eq!(c.config_version, 1);
        assert_eq!(ok(&[(LOADBALANCER_UUID, "")]).lb_uuid, None);
        bad(LOADBALANCER_UUID, "not-a-uuid");
        bad(LOADBALANCER_CONFIG_VERSION, "2");
        bad(LOADBALANCER_CONFIG_VERSION, "");
    }

    #[test]
    fn flavor_and_zone() {
        assert_eq!(ok(&[(LOADBALANCER_FLAVOR, "lb-large")]).flavor, "lb-large");
        bad(LOADBALANCER_FLAVOR, "");
        bad(LOADBALANCER_FLAVOR, " lb-standard");
        assert_eq!(
            ok(&[(LOADBALANCER_ZONE, "rma1")]).zone.as_deref(),
            Some("rma1")
        );
        assert_eq!(ok(&[(LOADBALANCER_ZONE, "")]).zone, None);
        bad(LOADBALANCER_ZONE, "rma 1");
    }

    #[test]
    fn vip_addresses_keep_absent_and_empty_apart() {
        assert_eq!(ok(&[]).vip_addresses, None);
        assert_eq!(
            ok(&[(LOADBALANCER_VIP_ADDRESSES, "[]")]).vip_addresses,
            Some(vec![])
        );
        let v = format!(
            r#"[{{"subnet": "{SUBNET}", "address": "10.0.0.10"}}, {{"subnet": "{SUBNET}"}}]"#
        );
        let subnet = Uuid::parse_str(SUBNET).unwrap_or_default();
        assert_eq!(
            ok(&[(LOADBALANCER_VIP_ADDRESSES, &v)]).vip_addresses,
            Some(vec![
                VipRequest {
                    subnet,
                    address: Some("10.0.0.10".parse().unwrap_or(IpAddr::from([0, 0, 0, 0])))
                },
                VipRequest {
                    subnet,
                    address: None
                },
            ])
        );
        // Empty string: a JSON parser's error (3.1).
        bad(LOADBALANCER_VIP_ADDRESSES, "");
        bad(LOADBALANCER_VIP_ADDRESSES, "{}");
        bad(LOADBALANCER_VIP_ADDRESSES, r#"[{"subnet": "nope"}]"#);
        bad(LOADBALANCER_VIP_ADDRESSES, r#"[{"address": "10.0.0.1"}]"#);
        bad(
            LOADBALANCER_VIP_ADDRESSES,
            &format!(r#"[{{"subnet": "{SUBNET}", "address": "10.0.0.1/24"}}]"#),
        );
        bad(
            LOADBALANCER_VIP_ADDRESSES,
            &format!(r#"[{{"subnet": "{SUBNET}", "adress": "10.0.0.1"}}]"#),
        );
        bad(LOADBALANCER_VIP_ADDRESSES, r#"["10.0.0.1"]"#);
    }

    #[test]
    fn floating_ips_are_normalised() {
        let c = ok(&[(
            LOADBALANCER_FLOATING_IPS,
            r#"["5.102.150.123", "2A06:C01:0:0::123", "5.102.150.123/32", "2a06:c01::/56"]"#,
        )]);
        let shown: Vec<String> = c.floating_ips.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["5.102.150.123/32", "2a06:c01::123/128", "2a06:c01::/56"]
        );
        assert!(
            ok(&[(LOADBALANCER_FLOATING_IPS, "")])
                .floating_ips
                .is_empty()
        );
        assert!(
            ok(&[(LOADBALANCER_FLOATING_IPS, "  ")])
                .floating_ips
                .is_empty()
        );
        assert!(
            ok(&[(LOADBALANCER_FLOATING_IPS, "[]")])
                .floating_ips
                .is_empty()
        );
        let e = bad(LOADBALANCER_FLOATING_IPS, r#"["5.102.150.123/24"]"#);
        assert!(e.problem.contains("5.102.150.0/24"), "{e}");
        bad(LOADBALANCER_FLOATING_IPS, r#"["example.com"]"#);
        bad(LOADBALANCER_FLOATING_IPS, "5.102.150.123/32");
        bad(LOADBALANCER_FLOATING_IPS, r#"[1]"#);
    }

    #[test]
    fn pool_settings() {
        let c = ok(&[
            (LOADBALANCER_POOL_ALGORITHM, "least_connections"),
            (LOADBALANCER_POOL_PROTOCOL, "proxyv2"),
        ]);
        assert_eq!(c.pool_algorithm, PoolAlgorithm::LeastConnections);
        assert_eq!(c.pool_protocol, PoolProtocol::ProxyV2);
        assert_eq!(
            ok(&[(LOADBALANCER_POOL_ALGORITHM, "source_ip")]).pool_algorithm,
            PoolAlgorithm::SourceIp
        );
        assert_eq!(
            ok(&[(LOADBALANCER_POOL_PROTOCOL, "proxy")]).pool_protocol,
            PoolProtocol::Proxy
        );
        let e = bad(LOADBALANCER_POOL_ALGORITHM, "roundrobin");
        assert!(e.hint.contains("round_robin"));
        bad(LOADBALANCER_POOL_ALGORITHM, "");
        bad(LOADBALANCER_POOL_PROTOCOL, "udp");
        bad(LOADBALANCER_POOL_PROTOCOL, "TCP");
        bad(LOADBALANCER_POOL_PROTOCOL, "");
        assert_eq!(
            crate::cloudscale::PoolAlgorithm::from(PoolAlgorithm::SourceIp),
            crate::cloudscale::PoolAlgorithm::SourceIp
        );
        assert_eq!(
            crate::cloudscale::PoolProtocol::from(PoolProtocol::ProxyV2),
            crate::cloudscale::PoolProtocol::ProxyV2
        );
    }

    #[test]
    fn listener_settings() {
        assert_eq!(
            ok(&[(LOADBALANCER_LISTENER_PROTOCOL, "tcp")]).listener_protocol,
            ListenerProtocol::Tcp
        );
        bad(LOADBALANCER_LISTENER_PROTOCOL, "udp");
        bad(LOADBALANCER_LISTENER_PROTOCOL, "");
        let c = ok(&[
            (LOADBALANCER_TIMEOUT_CLIENT_DATA_MS, "+1"),
            (LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS, "4294967295"),
            (LOADBALANCER_TIMEOUT_MEMBER_DATA_MS, "007"),
        ]);
        assert_eq!(
            (
                c.timeout_client_data_ms,
                c.timeout_member_connect_ms,
                c.timeout_member_data_ms
            ),
            (1, 4_294_967_295, 7)
        );
        for key in [
            LOADBALANCER_TIMEOUT_CLIENT_DATA_MS,
            LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
            LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
        ] {
            bad(key, "");
            bad(key, "5s");
            bad(key, " 5");
            bad(key, "0");
            bad(key, "-1");
            bad(key, "4294967296");
        }
    }

    #[test]
    fn allowed_cidrs_and_subnets() {
        let c = ok(&[(
            LOADBALANCER_LISTENER_ALLOWED_CIDRS,
            r#"["1.2.3.4", "10.0.0.0/8", "2001:DB8::/32", "1.2.3.4/32"]"#,
        )]);
        let shown: Vec<String> = c.allowed_cidrs.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["1.2.3.4/32", "10.0.0.0/8", "2001:db8::/32"]);
        assert!(
            ok(&[(LOADBALANCER_LISTENER_ALLOWED_CIDRS, "")])
                .allowed_cidrs
                .is_empty()
        );
        bad(LOADBALANCER_LISTENER_ALLOWED_CIDRS, r#"["10.0.0.1/8"]"#);
        bad(LOADBALANCER_LISTENER_ALLOWED_CIDRS, r#"["10.0.0.0/33"]"#);
        bad(LOADBALANCER_LISTENER_ALLOWED_CIDRS, r#"{"a": 1}"#);

        let upper = SUBNET.to_uppercase();
        let v = format!(r#"["{upper}", "{SUBNET}"]"#);
        let c = ok(&[(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, &v)]);
        assert_eq!(c.allowed_subnets.len(), 1);
        assert_eq!(c.allowed_subnets[0].to_string(), SUBNET);
        assert!(
            ok(&[(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, "")])
                .allowed_subnets
                .is_empty()
        );
        bad(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, r#"["subnet-a"]"#);
        bad(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, "[");
    }

    #[test]
    fn monitor_numbers_and_type() {
        let c = ok(&[
            (LOADBALANCER_HEALTH_MONITOR_DELAY_S, "10"),
            (LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S, "5"),
            (LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD, "1"),
            (LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD, "9"),
            (LOADBALANCER_HEALTH_MONITOR_TYPE, "udp-connect"),
        ]);
        assert_eq!(
            (
                c.monitor.delay_s,
                c.monitor.timeout_s,
                c.monitor.up_threshold,
                c.monitor.down_threshold
            ),
            (10, 5, 1, 9)
        );
        assert_eq!(c.monitor.kind, MonitorType::UdpConnect);
        assert!(c.monitor.kind_explicit);
        for (name, kind) in [
            ("ping", MonitorType::Ping),
            ("tcp", MonitorType::Tcp),
            ("http", MonitorType::Http),
            ("https", MonitorType::Https),
            ("tls-hello", MonitorType::TlsHello),
        ] {
            assert_eq!(
                ok(&[(LOADBALANCER_HEALTH_MONITOR_TYPE, name)]).monitor.kind,
                kind
            );
        }
        assert_eq!(
            crate::cloudscale::HealthMonitorType::from(MonitorType::TlsHello),
            crate::cloudscale::HealthMonitorType::TlsHello
        );
        bad(LOADBALANCER_HEALTH_MONITOR_TYPE, "HTTP");
        bad(LOADBALANCER_HEALTH_MONITOR_TYPE, "");
        for key in [
            LOADBALANCER_HEALTH_MONITOR_DELAY_S,
            LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S,
            LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
            LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD,
        ] {
            let e = bad(key, "two");
            // Gap 25: the key at fault, not always the delay annotation.
            assert_eq!(e.field, key);
            bad(key, "");
            bad(key, "0");
            bad(key, "1.5");
        }
    }

    #[test]
    fn http_options() {
        assert_eq!(
            ok(&[(LOADBALANCER_HEALTH_MONITOR_HTTP, "{}")]).monitor.http,
            None
        );
        // Only exactly `{}` means "none"; other spellings are options with defaults.
        assert_eq!(
            ok(&[(LOADBALANCER_HEALTH_MONITOR_HTTP, "{ }")])
                .monitor
                .http,
            Some(HttpOptions::default())
        );
        let c = ok(&[(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"method": "HEAD", "url_path": "/healthz", "version": "1.1",
                "host": "example.com", "expected_codes": ["200", "301-302"]}"#,
        )]);
        assert_eq!(
            c.monitor.http,
            Some(HttpOptions {
                method: HttpMethod::Head,
                url_path: "/healthz".into(),
                version: HttpVersion::V1_1,
                host: Some("example.com".into()),
                expected_codes: vec!["200".into(), "301-302".into()],
            })
        );
        let c = ok(&[(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"version": "1.0", "host": null}"#,
        )]);
        assert_eq!(
            c.monitor.http.map(|h| (h.version, h.url_path, h.host)),
            Some((HttpVersion::V1_0, "/".to_string(), None))
        );
        assert_eq!(HttpOptions::livez().url_path, "/livez");
        assert_eq!(HttpOptions::livez().version, HttpVersion::V1_0);

        bad(LOADBALANCER_HEALTH_MONITOR_HTTP, "");
        bad(LOADBALANCER_HEALTH_MONITOR_HTTP, "[]");
        bad(LOADBALANCER_HEALTH_MONITOR_HTTP, "{url_path: /}");
        bad(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"version": "1.0", "host": "example.com"}"#,
        );
        bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"version": "2"}"#);
        bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"method": "get"}"#);
        bad(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"url_path": "healthz"}"#,
        );
        bad(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"expected_codes": []}"#,
        );
        bad(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"expected_codes": "200"}"#,
        );
        bad(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"expected_codes": ["2xx"]}"#,
        );
        bad(
            LOADBALANCER_HEALTH_MONITOR_HTTP,
            r#"{"expected_codes": ["204-200"]}"#,
        );
        bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"host": ""}"#);
        bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"path": "/"}"#);
    }

    #[test]
    fn status_settings() {
        assert_eq!(
            ok(&[(LOADBALANCER_FORCE_HOSTNAME, "lb.example.com")])
                .force_hostname
                .as_deref(),
            Some("lb.example.com")
        );
        assert_eq!(
            ok(&[(LOADBALANCER_FORCE_HOSTNAME, "")]).force_hostname,
            None
        );
        bad(LOADBALANCER_FORCE_HOSTNAME, "LB.example.com");
        bad(LOADBALANCER_FORCE_HOSTNAME, "5.102.150.1");
        bad(LOADBALANCER_FORCE_HOSTNAME, "lb..example.com");
        assert_eq!(ok(&[(LOADBALANCER_IP_MODE, "VIP")]).ip_mode, IpMode::Vip);
        assert_eq!(
            ok(&[(LOADBALANCER_IP_MODE, "Proxy")]).ip_mode,
            IpMode::Proxy
        );
        bad(LOADBALANCER_IP_MODE, "vip");
        bad(LOADBALANCER_IP_MODE, "");
    }

    #[test]
    fn node_selector_annotation() {
        let c = ok(&[(LOADBALANCER_NODE_SELECTOR, "role=lb,!excluded")]);
        let mut labels = BTreeMap::from([("role".to_string(), "lb".to_string())]);
        assert!(c.node_selector.matches(&labels));
        labels.insert("excluded".into(), "".into());
        assert!(!c.node_selector.matches(&labels));
        assert!(
            ok(&[(LOADBALANCER_NODE_SELECTOR, "")])
                .node_selector
                .is_empty()
        );
        assert_eq!(
            ok(&[(LOADBALANCER_NODE_SELECTOR, "role==")])
                .node_selector
                .to_string(),
            "role=="
        );
        bad(LOADBALANCER_NODE_SELECTOR, "role=(");
        let e = bad(LOADBALANCER_NODE_SELECTOR, "a in b");
        assert!(e.to_string().contains("unable to parse selector"), "{e}");
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selector_grammar() {
        let m = |sel: &str, l: &[(&str, &str)]| match Selector::parse(sel) {
            Ok(s) => s.matches(&labels(l)),
            Err(e) => panic!("{sel:?}: {e}"),
        };
        assert!(m("", &[]));
        assert!(m("  ", &[("a", "b")]));
        assert!(m("a=b", &[("a", "b")]));
        assert!(!m("a=b", &[("a", "c")]));
        assert!(!m("a=b", &[]));
        assert!(m("a==b", &[("a", "b")]));
        assert!(m("a!=b", &[]));
        assert!(m("a!=b", &[("a", "c")]));
        assert!(!m("a!=b", &[("a", "b")]));
        assert!(m("a in (x, y)", &[("a", "y")]));
        assert!(!m("a in (x,y)", &[("a", "z")]));
        assert!(!m("a in (x,y)", &[]));
        assert!(m("a notin (x,y)", &[]));
        assert!(m("a notin (x,y)", &[("a", "z")]));
        assert!(!m("a notin (x,y)", &[("a", "x")]));
        assert!(m("a", &[("a", "")]));
        assert!(!m("a", &[]));
        assert!(m("!a", &[]));
        assert!(!m("!a", &[("a", "x")]));
        assert!(m("a>5", &[("a", "6")]));
        assert!(!m("a>5", &[("a", "5")]));
        assert!(!m("a>5", &[("a", "x")]));
        assert!(m("a<5", &[("a", "-1")]));
        assert!(m("a=", &[("a", "")]));
        assert!(m("a in ()", &[("a", "")]));
        assert!(m("a in (,x)", &[("a", "")]));
        assert!(m("in=notin", &[("in", "notin")]));
        assert!(m("a in (in,notin)", &[("a", "notin")]));
        assert!(m(
            "node-role.kubernetes.io/worker,topology.kubernetes.io/zone in (rma1,lpg1),x!=y",
            &[
                ("node-role.kubernetes.io/worker", ""),
                ("topology.kubernetes.io/zone", "lpg1")
            ]
        ));

        for bad_sel in [
            "a=b=c",
            "a in b",
            ",a",
            "a,",
            "a,,b",
            "!a=b",
            "a b",
            "=b",
            "a in (x",
            "a in (x y)",
            "-a=b",
            "a/b/c",
            "A.B/c",
            "a=-b",
            "a>x",
            "a>",
            "a in (x,(",
            "a=(b)",
            "a!",
            "a=>b",
            "!",
            "()",
            "a notin x",
        ] {
            assert!(Selector::parse(bad_sel).is_err(), "{bad_sel:?} should fail");
        }

        let s = Selector::parse("z=1, a in (y,x), !m, k").unwrap_or_default();
        assert_eq!(s.to_string(), "a in (x,y),k,!m,z=1");
        assert_eq!(
            Selector::parse(&s.to_string()).map(|t| t.to_string()),
            Ok(s.to_string())
        );
        assert_eq!(s.requirements().len(), 4);
    }

    #[test]
    fn spec_fields() {
        let mut s = svc(&[]);
        if let Some(sp) = s.spec.as_mut() {
            sp.ports = Some(vec![
                port("", "TCP", 53, Some(30053)),
                port("dns", "UDP", 53, Some(30054)),
            ]);
            sp.external_traffic_policy = Some("Local".into());
            sp.health_check_node_port = Some(32000);
            sp.load_balancer_source_ranges = Some(vec![" 10.1.2.3/8".into(), "1.2.3.4".into()]);
        }
        let c = match parse_service(&s) {
            Ok(Some(c)) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(c.ports[0].name, "");
        assert_eq!(c.ports[1].protocol, PortProtocol::Udp);
        assert_eq!(c.ports[1].node_port, 30054);
        assert_eq!(c.external_traffic_policy, ExternalTrafficPolicy::Local);
        assert_eq!(c.health_check_node_port, Some(32000));
        let ranges: Vec<String> = c.source_ranges.iter().map(ToString::to_string).collect();
        assert_eq!(ranges, ["10.0.0.0/8", "1.2.3.4/32"]);

        // Protocol defaults to TCP.
        let mut s = svc(&[]);
        if let Some(p) = s
            .spec
            .as_mut()
            .and_then(|sp| sp.ports.as_mut())
            .and_then(|p| p.first_mut())
        {
            p.protocol = None;
        }
        assert!(
            matches!(parse_service(&s), Ok(Some(c)) if c.ports[0].protocol == PortProtocol::Tcp)
        );
    }

    #[test]
    fn spec_errors_name_the_field() {
        let mut s = svc(&[]);
        if let Some(sp) = s.spec.as_mut() {
            sp.ports = Some(vec![
                port("a", "TCP", 80, None),
                port("b", "SCTP", 81, Some(30081)),
                port("c", "UDP", 0, Some(30082)),
                port("d", "TCP", 83, Some(70000)),
            ]);
            sp.external_traffic_policy = Some("Global".into());
            sp.health_check_node_port = Some(-1);
            sp.load_balancer_source_ranges = Some(vec!["nope".into()]);
        }
        let e = errs(&s);
        assert_eq!(
            e.fields(),
            [
                "spec.ports[0].nodePort",
                "spec.ports[1].protocol",
                "spec.ports[2].port",
                "spec.ports[3].nodePort",
                "spec.externalTrafficPolicy",
                "spec.healthCheckNodePort",
                "spec.loadBalancerSourceRanges[0]",
            ]
        );
        let msg = e.to_string();
        assert!(msg.contains("\"SCTP\""), "{msg}");
        assert!(
            !msg.contains("allocateLoadBalancerNodePorts"),
            "the Service does not set it: {msg}"
        );
        if let Some(sp) = s.spec.as_mut() {
            sp.allocate_load_balancer_node_ports = Some(false);
        }
        let msg = errs(&s).to_string();
        assert!(msg.contains("allocateLoadBalancerNodePorts"), "{msg}");

        let mut s = svc(&[]);
        if let Some(sp) = s.spec.as_mut() {
            sp.ports = None;
        }
        assert_eq!(errs(&s).fields(), ["spec.ports"]);
        let mut s = svc(&[]);
        s.metadata.uid = None;
        assert_eq!(errs(&s).fields(), ["metadata.uid"]);
    }

    #[test]
    fn all_errors_are_collected() {
        let mut s = svc(&[
            (LOADBALANCER_POOL_ALGORITHM, "fastest"),
            (LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD, "x"),
            (LOADBALANCER_TIMEOUT_MEMBER_DATA_MS, "-5"),
            (
                LOADBALANCER_FLOATING_IPS,
                r#"["1.2.3.4/33", "::1", "nope"]"#,
            ),
            (LOADBALANCER_NODE_SELECTOR, "a in"),
            (LOADBALANCER_IP_MODE, "proxy"),
        ]);
        if let Some(sp) = s.spec.as_mut() {
            sp.ports = Some(vec![port("x", "SCTP", 80, Some(30080))]);
        }
        let e = errs(&s);
        assert_eq!(e.errors.len(), 8, "{e}");
        let fields = e.fields();
        for key in [
            LOADBALANCER_POOL_ALGORITHM,
            LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
            LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
            LOADBALANCER_FLOATING_IPS,
            LOADBALANCER_NODE_SELECTOR,
            LOADBALANCER_IP_MODE,
            "spec.ports[0].protocol",
        ] {
            assert!(fields.contains(&key), "{key} missing in {fields:?}");
        }
        let msg = e.to_string();
        assert!(
            msg.starts_with("Service default/web has 8 invalid settings: "),
            "{msg}"
        );
        assert!(msg.contains("\"fastest\""));
        assert!(e.errors.iter().filter(|e| e.is_annotation()).count() == 7);
    }

    #[test]
    fn long_values_are_shortened() {
        let long = "x".repeat(500);
        let e = errs(&svc(&[(LOADBALANCER_POOL_ALGORITHM, &long)]));
        let v = e.errors[0].value.clone().unwrap_or_default();
        assert!(v.len() < 110 && v.ends_with("..."), "{v}");
        assert_eq!(shown("ä\"b"), "\"ä\\\"b\"");
    }

    #[test]
    fn parse_network_forms() {
        let s = |x: &str| parse_network(x).map(|n| n.to_string());
        assert_eq!(s("1.2.3.4"), Ok("1.2.3.4/32".into()));
        assert_eq!(s("::FFFF:1.2.3.4"), Ok("::ffff:1.2.3.4/128".into()));
        assert_eq!(s("2a06:0c01::0123/128"), Ok("2a06:c01::123/128".into()));
        assert_eq!(s("0.0.0.0/0"), Ok("0.0.0.0/0".into()));
        assert!(s("1.2.3.4/").is_err());
        assert!(s("1.2.3.4/24").is_err());
        assert!(s("").is_err());
    }
}
