//! [`parse_service`](super::parse_service) by group of settings. Each group reads its
//! annotations (or spec fields) in the order their problems are reported, which is the order
//! of the README's tables: a new annotation joins its group at its place in that order.

use super::*;

/// `metadata`: which Service this is.
pub(super) struct Identity {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
}

/// The load balancer itself: which one, its name, flavor, zone and addresses.
pub(super) struct LoadBalancerSettings {
    pub(super) lb_uuid: Option<Uuid>,
    pub(super) config_version: u32,
    pub(super) lb_name: String,
    pub(super) flavor: String,
    pub(super) zone: Option<String>,
    pub(super) vip_addresses: Option<Vec<VipRequest>>,
    pub(super) floating_ips: Vec<IpNet>,
}

/// How traffic passes: the pools' and listeners' protocols, who may connect, timeouts.
pub(super) struct TrafficSettings {
    pub(super) pool_algorithm: PoolAlgorithm,
    pub(super) pool_protocol: PoolProtocol,
    pub(super) listener_protocol: ListenerProtocol,
    pub(super) allowed_cidrs: Vec<IpNet>,
    pub(super) allowed_subnets: Vec<Uuid>,
    pub(super) timeout_client_data_ms: i64,
    pub(super) timeout_member_connect_ms: i64,
    pub(super) timeout_member_data_ms: i64,
}

/// Which nodes serve, and how the status reports the load balancer.
pub(super) struct NodesAndStatus {
    pub(super) node_selector: Selector,
    pub(super) force_hostname: Option<String>,
    pub(super) ip_mode: IpMode,
}

/// What the load balancer reads of `spec`.
pub(super) struct SpecSettings {
    pub(super) ports: Vec<PortSpec>,
    pub(super) external_traffic_policy: ExternalTrafficPolicy,
    pub(super) health_check_node_port: Option<u16>,
    pub(super) source_ranges: Vec<IpNet>,
    pub(super) ipv6_only: bool,
    pub(super) load_balancer_ip: Option<String>,
}

pub(super) fn identity(svc: &Service, errors: &mut Vec<ConfigError>) -> Identity {
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    if uid.is_empty() {
        errors.push(ConfigError {
            field: "metadata.uid".to_string(),
            value: None,
            problem: "is not set".to_string(),
            hint: "the API server sets it; parse Services as read from the API".to_string(),
        });
    }
    Identity {
        namespace: svc.metadata.namespace.clone().unwrap_or_default(),
        name: svc.metadata.name.clone().unwrap_or_default(),
        uid,
    }
}

pub(super) fn spec_settings(spec: &ServiceSpec, errors: &mut Vec<ConfigError>) -> SpecSettings {
    SpecSettings {
        ports: parse_ports(spec, errors),
        external_traffic_policy: parse_traffic_policy(spec, errors),
        health_check_node_port: parse_health_check_node_port(spec, errors),
        source_ranges: parse_source_ranges(spec, errors),
        ipv6_only: parse_ipv6_only(spec),
        load_balancer_ip: spec
            .load_balancer_ip
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    }
}

// The struct literals below are evaluated in the order written, which is the order the
// problems are reported in: keep each new field at its place.
impl Parser<'_> {
    pub(super) fn load_balancer_settings(&mut self, uid: &str) -> LoadBalancerSettings {
        LoadBalancerSettings {
            lb_uuid: parse_uuid_annotation(self.get(LOADBALANCER_UUID), &mut self.errors),
            config_version: self.config_version(),
            lb_name: self.lb_name(uid),
            flavor: self.flavor(),
            zone: self.zone(),
            vip_addresses: self.vip_addresses(),
            floating_ips: self.floating_ips(),
        }
    }

    pub(super) fn traffic_settings(&mut self) -> TrafficSettings {
        TrafficSettings {
            pool_algorithm: self.choice(LOADBALANCER_POOL_ALGORITHM, "pool algorithm", ""),
            pool_protocol: self.choice(
                LOADBALANCER_POOL_PROTOCOL,
                "pool protocol",
                "UDP ports always use udp, whatever this says",
            ),
            listener_protocol: self.choice(
                LOADBALANCER_LISTENER_PROTOCOL,
                "listener protocol",
                "UDP listeners follow spec.ports[].protocol, not this annotation",
            ),
            allowed_cidrs: self.allowed_cidrs(),
            allowed_subnets: self.allowed_subnets(),
            timeout_client_data_ms: self.int(
                LOADBALANCER_TIMEOUT_CLIENT_DATA_MS,
                DEFAULT_TIMEOUT_CLIENT_DATA_MS,
            ),
            timeout_member_connect_ms: self.int(
                LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
                DEFAULT_TIMEOUT_MEMBER_CONNECT_MS,
            ),
            timeout_member_data_ms: self.int(
                LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
                DEFAULT_TIMEOUT_MEMBER_DATA_MS,
            ),
        }
    }

    pub(super) fn monitor(&mut self) -> MonitorConfig {
        MonitorConfig {
            kind: self.choice(LOADBALANCER_HEALTH_MONITOR_TYPE, "health monitor type", ""),
            kind_explicit: self.get(LOADBALANCER_HEALTH_MONITOR_TYPE).is_some(),
            delay_s: self.int(
                LOADBALANCER_HEALTH_MONITOR_DELAY_S,
                DEFAULT_HEALTH_MONITOR_DELAY_S,
            ),
            timeout_s: self.int(
                LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S,
                DEFAULT_HEALTH_MONITOR_TIMEOUT_S,
            ),
            up_threshold: self.int(
                LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
                DEFAULT_HEALTH_MONITOR_UP_THRESHOLD,
            ),
            down_threshold: self.int(
                LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD,
                DEFAULT_HEALTH_MONITOR_DOWN_THRESHOLD,
            ),
            http: self.http_options(),
        }
    }

    pub(super) fn nodes_and_status(&mut self) -> NodesAndStatus {
        NodesAndStatus {
            node_selector: self.node_selector(),
            force_hostname: self.force_hostname(),
            ip_mode: self.choice(
                LOADBALANCER_IP_MODE,
                "IP mode",
                "the value is case-sensitive",
            ),
        }
    }
}
