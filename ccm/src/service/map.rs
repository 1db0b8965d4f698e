//! Mapping: a parsed Service, the cluster's Nodes and their servers → the desired load
//! balancer, with the reference's naming rules so existing load balancers are adopted
//! without changes. Pure.

use super::annotations::{
    ExternalTrafficPolicy, HttpOptions, MonitorType, PortProtocol, ServiceConfig,
};
use super::model::{DesiredLb, DesiredPool, HttpCheck, Listener, Member, Monitor, Vip};
use std::collections::BTreeMap;
use std::net::IpAddr;
use uuid::Uuid;

/// Nodes carrying this label (any value) never receive load-balancer traffic.
pub const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// What mapping needs of a Node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub provider_id: Option<Uuid>,
    /// Being deleted.
    pub deleting: bool,
}

/// What mapping needs of a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    pub uuid: Uuid,
    pub name: String,
    pub zone: String,
    /// Private addresses with their subnet, interface by interface, in API order.
    pub private: Vec<(IpAddr, Uuid)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error(
        "no load balancer zone is set and the selected nodes are in several zones ({0}): set k8s.cloudscale.ch/loadbalancer-zone"
    )]
    ZoneAmbiguous(String),
}

/// Why a Node contributes no members (reported as Warning Events, never blocking others).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeProblem {
    NoServer { node: String },
    AmbiguousName { node: String, count: usize },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub desired: DesiredLb,
    /// Nodes that match but map to no single server: skipped (the reference failed the whole
    /// Service for one bad Node).
    pub problems: Vec<NodeProblem>,
    /// No node selected at all: every member is removed (the reference's `NoValidNodes`).
    pub no_nodes: bool,
}

fn member_name(address: IpAddr, port: u16) -> String {
    match address {
        IpAddr::V4(a) => format!("{a}:{port}"),
        IpAddr::V6(a) => format!("[{a}]:{port}"),
    }
}

fn http_check(o: &HttpOptions) -> HttpCheck {
    HttpCheck {
        method: o.method.as_str().to_string(),
        url_path: o.url_path.clone(),
        version: o.version.as_str().to_string(),
        host: o.host.clone(),
        expected_codes: o.expected_codes.clone(),
    }
}

/// The health monitor of every pool.
fn monitor(cfg: &ServiceConfig) -> Monitor {
    let local = cfg.external_traffic_policy == ExternalTrafficPolicy::Local;
    let udp_only = cfg.ports.iter().all(|p| p.protocol == PortProtocol::Udp);
    let kind = if local {
        // kube-proxy's health-check node port speaks HTTP.
        MonitorType::Http
    } else if udp_only && !cfg.monitor.kind_explicit {
        // A TCP check cannot probe a UDP-only Service (the reference's gap 16).
        MonitorType::UdpConnect
    } else {
        cfg.monitor.kind
    };
    let http = match (&cfg.monitor.http, local) {
        (Some(o), _) => Some(http_check(o)),
        (None, true) => Some(http_check(&HttpOptions::livez())),
        (None, false) if matches!(kind, MonitorType::Http | MonitorType::Https) => {
            Some(http_check(&HttpOptions::default()))
        }
        (None, false) => None,
    };
    Monitor {
        kind: kind.as_str().to_string(),
        delay_s: cfg.monitor.delay_s,
        timeout_s: cfg.monitor.timeout_s,
        up_threshold: cfg.monitor.up_threshold,
        down_threshold: cfg.monitor.down_threshold,
        http,
    }
}

/// Maps a Service onto the desired load balancer.
pub fn desired(
    cfg: &ServiceConfig,
    nodes: &[NodeView],
    servers: &[ServerView],
) -> Result<Mapped, MapError> {
    let mut problems = Vec::new();
    let mut selected: Vec<&ServerView> = Vec::new();
    for node in nodes {
        if node.deleting
            || node.labels.contains_key(EXCLUDE_LABEL)
            || !cfg.node_selector.matches(&node.labels)
        {
            continue;
        }
        let server = match node.provider_id {
            Some(id) => servers.iter().find(|s| s.uuid == id),
            None => {
                let named: Vec<&ServerView> =
                    servers.iter().filter(|s| s.name == node.name).collect();
                if named.len() > 1 {
                    problems.push(NodeProblem::AmbiguousName {
                        node: node.name.clone(),
                        count: named.len(),
                    });
                    continue;
                }
                named.first().copied()
            }
        };
        match server {
            Some(s) => selected.push(s),
            None => problems.push(NodeProblem::NoServer {
                node: node.name.clone(),
            }),
        }
    }

    let zone = match &cfg.zone {
        Some(z) => Some(z.clone()),
        None => {
            let mut zones: Vec<&str> = selected.iter().map(|s| s.zone.as_str()).collect();
            zones.sort_unstable();
            zones.dedup();
            match zones.as_slice() {
                [] => None,
                [one] => Some(one.to_string()),
                many => return Err(MapError::ZoneAmbiguous(many.join(", "))),
            }
        }
    };

    let local = cfg.external_traffic_policy == ExternalTrafficPolicy::Local;
    let monitor = monitor(cfg);
    let pools = cfg
        .ports
        .iter()
        .map(|p| {
            let proto = match p.protocol {
                PortProtocol::Tcp => "tcp",
                PortProtocol::Udp => "udp",
            };
            let name = if p.name.is_empty() {
                proto.to_string()
            } else {
                format!("{proto}/{}", p.name)
            };
            let monitor_port = match (local, cfg.health_check_node_port) {
                (true, Some(hc)) if hc > 0 => hc,
                _ => p.node_port,
            };
            let mut members = Vec::new();
            for s in &selected {
                for (address, subnet) in &s.private {
                    if !cfg.allowed_subnets.is_empty() && !cfg.allowed_subnets.contains(subnet) {
                        continue;
                    }
                    members.push(Member {
                        name: member_name(*address, p.node_port),
                        address: *address,
                        subnet: *subnet,
                        protocol_port: p.node_port,
                        monitor_port,
                    });
                }
            }
            DesiredPool {
                name,
                algorithm: cfg.pool_algorithm.as_str().to_string(),
                protocol: match p.protocol {
                    PortProtocol::Tcp => cfg.pool_protocol.as_str().to_string(),
                    PortProtocol::Udp => "udp".to_string(),
                },
                members,
                listener: Listener {
                    name: format!("{proto}/{}", p.port),
                    protocol: match p.protocol {
                        PortProtocol::Tcp => cfg.listener_protocol.as_str().to_string(),
                        PortProtocol::Udp => "udp".to_string(),
                    },
                    port: p.port,
                    allowed_cidrs: cfg.allowed_cidrs.iter().map(|c| c.to_string()).collect(),
                    timeout_client_data_ms: cfg.timeout_client_data_ms,
                    timeout_member_connect_ms: cfg.timeout_member_connect_ms,
                    timeout_member_data_ms: cfg.timeout_member_data_ms,
                },
                monitor: monitor.clone(),
            }
        })
        .collect();
    Ok(Mapped {
        desired: DesiredLb {
            name: cfg.lb_name.clone(),
            flavor: cfg.flavor.clone(),
            zone,
            vips: cfg.vip_addresses.as_ref().map(|v| {
                v.iter()
                    .map(|r| Vip {
                        subnet: r.subnet,
                        address: r.address,
                    })
                    .collect()
            }),
            pools,
            floating_ips: cfg.floating_ips.iter().map(|n| n.to_string()).collect(),
        },
        problems,
        no_nodes: selected.is_empty(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::annotations::parse_service;
    use serde_json::json;

    fn config(annotations: serde_json::Value, spec_extra: serde_json::Value) -> ServiceConfig {
        let mut spec = json!({"type": "LoadBalancer", "ports": [
            {"name": "http", "protocol": "TCP", "port": 80, "nodePort": 30080},
            {"name": "https", "protocol": "TCP", "port": 443, "nodePort": 30443},
        ]});
        if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            for (k, v) in extra {
                s.insert(k.clone(), v.clone());
            }
        }
        let svc = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "abc", "annotations": annotations},
            "spec": spec,
        }))
        .expect("service");
        parse_service(&svc).expect("valid").expect("handled")
    }

    fn subnet() -> Uuid {
        Uuid::parse_str("0b4e4b9a-9d1b-4bd3-9a39-6b2c1a8b3c6d").expect("uuid")
    }

    fn cluster() -> (Vec<NodeView>, Vec<ServerView>) {
        let mut nodes = Vec::new();
        let mut servers = Vec::new();
        for i in 1..=3u8 {
            let uuid = Uuid::new_v4();
            nodes.push(NodeView {
                name: format!("node-{i}"),
                labels: [(
                    "role".to_string(),
                    if i == 3 { "db" } else { "web" }.to_string(),
                )]
                .into(),
                provider_id: Some(uuid),
                deleting: false,
            });
            servers.push(ServerView {
                uuid,
                name: format!("node-{i}"),
                zone: "rma1".into(),
                private: vec![(IpAddr::from([10, 0, 0, 10 + i]), subnet())],
            });
        }
        (nodes, servers)
    }

    #[test]
    fn the_reference_naming_rules() {
        let (nodes, servers) = cluster();
        let m = desired(&config(json!({}), json!({})), &nodes, &servers).expect("mapped");
        let d = &m.desired;
        assert_eq!(d.name, "k8s-service-abc");
        assert_eq!(d.flavor, "lb-standard");
        assert_eq!(d.zone.as_deref(), Some("rma1"));
        assert_eq!(d.pools[0].name, "tcp/http");
        assert_eq!(d.pools[0].listener.name, "tcp/80");
        assert_eq!(d.pools[0].members[0].name, "10.0.0.11:30080");
        assert_eq!(d.pools[0].members.len(), 3);
        assert_eq!(d.pools[1].members[0].monitor_port, 30443);
        assert_eq!(d.pools[0].monitor.kind, "tcp");
        assert!(d.pools[0].monitor.http.is_none());
        assert!(d.vips.is_none());
        assert!(m.problems.is_empty() && !m.no_nodes);
    }

    #[test]
    fn local_policy_checks_the_health_check_node_port_over_http() {
        let (nodes, servers) = cluster();
        let cfg = config(
            json!({}),
            json!({"externalTrafficPolicy": "Local", "healthCheckNodePort": 32000}),
        );
        let d = desired(&cfg, &nodes, &servers).expect("mapped").desired;
        assert_eq!(d.pools[0].monitor.kind, "http");
        let http = d.pools[0].monitor.http.clone().expect("http");
        assert_eq!(
            (http.url_path.as_str(), http.version.as_str()),
            ("/livez", "1.0")
        );
        assert!(
            d.pools
                .iter()
                .all(|p| p.members.iter().all(|m| m.monitor_port == 32000))
        );
    }

    #[test]
    fn selectors_subnets_and_exclusions_pick_members() {
        let (mut nodes, servers) = cluster();
        nodes[1].labels.insert(EXCLUDE_LABEL.into(), String::new());
        let cfg = config(
            json!({"k8s.cloudscale.ch/loadbalancer-node-selector": "role=web"}),
            json!({}),
        );
        let d = desired(&cfg, &nodes, &servers).expect("mapped").desired;
        let names: Vec<&str> = d.pools[0].members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["10.0.0.11:30080"]);
        let other = Uuid::new_v4();
        let cfg = config(
            json!({"k8s.cloudscale.ch/loadbalancer-listener-allowed-subnets": format!("[\"{other}\"]")}),
            json!({}),
        );
        let m = desired(&cfg, &nodes, &servers).expect("mapped");
        assert!(m.desired.pools[0].members.is_empty());
        let cfg = config(
            json!({"k8s.cloudscale.ch/loadbalancer-node-selector": "role=none"}),
            json!({}),
        );
        assert!(desired(&cfg, &nodes, &servers).expect("mapped").no_nodes);
    }

    #[test]
    fn one_bad_node_does_not_block_the_others() {
        let (mut nodes, servers) = cluster();
        nodes[0].provider_id = Some(Uuid::new_v4());
        let m = desired(&config(json!({}), json!({})), &nodes, &servers).expect("mapped");
        assert_eq!(
            m.problems,
            [NodeProblem::NoServer {
                node: "node-1".into()
            }]
        );
        assert_eq!(m.desired.pools[0].members.len(), 2);
    }

    #[test]
    fn nodes_in_two_zones_need_the_zone_annotation() {
        let (nodes, mut servers) = cluster();
        servers[2].zone = "lpg1".into();
        assert!(matches!(
            desired(&config(json!({}), json!({})), &nodes, &servers),
            Err(MapError::ZoneAmbiguous(_))
        ));
        let cfg = config(
            json!({"k8s.cloudscale.ch/loadbalancer-zone": "rma1"}),
            json!({}),
        );
        assert_eq!(
            desired(&cfg, &nodes, &servers)
                .expect("mapped")
                .desired
                .zone
                .as_deref(),
            Some("rma1")
        );
    }

    #[test]
    fn udp_ports_use_udp_pools_listeners_and_a_udp_check_by_default() {
        let (nodes, servers) = cluster();
        let svc = serde_json::from_value(json!({
            "metadata": {"name": "dns", "namespace": "default", "uid": "u1"},
            "spec": {"type": "LoadBalancer", "ports": [{"name": "dns", "protocol": "UDP", "port": 53, "nodePort": 30053}]},
        }))
        .expect("service");
        let cfg = parse_service(&svc).expect("valid").expect("handled");
        let d = desired(&cfg, &nodes, &servers).expect("mapped").desired;
        assert_eq!(d.pools[0].name, "udp/dns");
        assert_eq!(d.pools[0].protocol, "udp");
        assert_eq!(d.pools[0].listener.protocol, "udp");
        assert_eq!(d.pools[0].listener.name, "udp/53");
        assert_eq!(d.pools[0].monitor.kind, "udp-connect");
    }

    #[test]
    fn ipv6_member_names_are_bracketed() {
        assert_eq!(
            member_name("fd00::1".parse().expect("ip"), 30080),
            "[fd00::1]:30080"
        );
    }
}
