//! Mapping: a parsed Service, the cluster's Nodes and their servers → the desired load
//! balancer, with the reference's naming rules so existing load balancers are adopted
//! without changes. Pure.

use super::annotations::{
    ExternalTrafficPolicy, HttpOptions, LOADBALANCER_HEALTH_MONITOR_HTTP,
    LOADBALANCER_LISTENER_ALLOWED_CIDRS, MonitorType, PortProtocol, PortSpec, ServiceConfig,
};
use super::model::{
    DesiredLb, DesiredPool, HttpCheck, Listener, ListenerProtocol, Member, Monitor, PoolProtocol,
    Vip,
};
use super::plan::Note;
use std::collections::BTreeMap;
use std::net::IpAddr;
use uuid::Uuid;

/// Nodes carrying this label (any value) never receive load-balancer traffic.
pub const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// The taint cluster-autoscaler puts on a Node it is about to delete: Kubernetes' service
/// controller takes such Nodes out of load balancers first (its `nodeUnTaintedPredicate`),
/// so that they get no new connections while they drain.
pub const AUTOSCALER_DELETION_TAINT: &str = "ToBeDeletedByClusterAutoscaler";

/// What mapping needs of a Node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub provider_id: Option<Uuid>,
    /// Being deleted, or tainted [`AUTOSCALER_DELETION_TAINT`] (about to be).
    pub deleting: bool,
    /// Its Ready condition is `True`. Readiness selects nothing (as upstream: a NotReady
    /// node keeps its members, the monitors judge them); it only orders new members, so
    /// that those on nodes that run are created first.
    pub ready: bool,
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
    /// Settings that are not applied as written (reported as Warning Events).
    pub notes: Vec<Note>,
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

/// The health monitor type of one pool. `externalTrafficPolicy: Local` checks kube-proxy's
/// health-check node port over HTTP. A UDP pool needs a check that works without TCP on its
/// node port: `udp-connect`, unless the type annotation names another such type (`ping`);
/// TCP pools use the annotation (default `tcp`). So adding a TCP port to a UDP Service
/// never switches its UDP pools to a TCP check.
pub fn monitor_type(cfg: &ServiceConfig, protocol: PortProtocol) -> MonitorType {
    if cfg.external_traffic_policy == ExternalTrafficPolicy::Local {
        return MonitorType::Http;
    }
    match (protocol, cfg.monitor.kind) {
        (PortProtocol::Udp, MonitorType::UdpConnect | MonitorType::Ping) => cfg.monitor.kind,
        (PortProtocol::Udp, _) => MonitorType::UdpConnect,
        (PortProtocol::Tcp, kind) => kind,
    }
}

/// The health monitor of a pool for a port of `protocol`. HTTP options belong to HTTP
/// checks only.
fn monitor(cfg: &ServiceConfig, protocol: PortProtocol) -> Monitor {
    let kind = monitor_type(cfg, protocol);
    let is_http = matches!(kind, MonitorType::Http | MonitorType::Https);
    let local = cfg.external_traffic_policy == ExternalTrafficPolicy::Local;
    let http = match (&cfg.monitor.http, is_http, local) {
        (_, false, _) => None,
        (Some(o), true, _) => Some(http_check(o)),
        (None, true, true) => Some(http_check(&HttpOptions::livez())),
        (None, true, false) => Some(http_check(&HttpOptions::default())),
    };
    Monitor {
        kind: kind.into(),
        delay_s: cfg.monitor.delay_s,
        timeout_s: cfg.monitor.timeout_s,
        up_threshold: cfg.monitor.up_threshold,
        down_threshold: cfg.monitor.down_threshold,
        http,
    }
}

/// The clients the listeners admit: the CIDR annotation, else
/// `spec.loadBalancerSourceRanges`. When both are set and differ, the annotation wins (it
/// is this CCM's own setting, as in the reference) and a note says so.
fn allowed_cidrs(cfg: &ServiceConfig, notes: &mut Vec<Note>) -> Vec<String> {
    let mut annotation: Vec<_> = cfg.allowed_cidrs.clone();
    let mut ranges: Vec<_> = cfg.source_ranges.clone();
    let chosen = if annotation.is_empty() {
        &cfg.source_ranges
    } else {
        annotation.sort();
        ranges.sort();
        if !ranges.is_empty() && annotation != ranges {
            notes.push(Note {
                field: LOADBALANCER_LISTENER_ALLOWED_CIDRS,
                message: format!(
                    "spec.loadBalancerSourceRanges ({}) differs from the annotation; the annotation applies: set one of them, or both alike",
                    cfg.source_ranges
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        &cfg.allowed_cidrs
    };
    chosen.iter().map(ToString::to_string).collect()
}

/// Notes about settings the Service has that are not applied as written.
fn notes(cfg: &ServiceConfig, out: &mut Vec<Note>) {
    if let Some(ip) = &cfg.load_balancer_ip {
        out.push(Note {
            field: "spec.loadBalancerIP",
            message: format!(
                "spec.loadBalancerIP {ip} is ignored: cloudscale.ch assigns load balancer addresses; for a fixed address use a floating IP (k8s.cloudscale.ch/loadbalancer-floating-ips) or a private VIP (k8s.cloudscale.ch/loadbalancer-vip-addresses)"
            ),
        });
    }
    let any_http = cfg.ports.iter().any(|p| {
        matches!(
            monitor_type(cfg, p.protocol),
            MonitorType::Http | MonitorType::Https
        )
    });
    if cfg.monitor.http.is_some() && !any_http {
        out.push(Note {
            field: LOADBALANCER_HEALTH_MONITOR_HTTP,
            message: format!(
                "the HTTP options are ignored: the health monitor type is {} (they apply to http and https monitors)",
                cfg.monitor.kind
            ),
        });
    }
}

/// Whether the Service's load balancer may send traffic to `node` (a member candidate: not
/// being deleted nor about to be, not excluded by label, picked by the node selector).
pub fn selects(cfg: &ServiceConfig, node: &NodeView) -> bool {
    !node.deleting
        && !node.labels.contains_key(EXCLUDE_LABEL)
        && cfg.node_selector.matches(&node.labels)
}

/// What of `node` the Service's members depend on: for a candidate, the server it maps to
/// (by provider ID, else by name); `None` for a Node the Service does not select. A Node
/// change that leaves this as it was cannot change the Service's members.
pub fn membership<'a>(cfg: &ServiceConfig, node: &'a NodeView) -> Option<(Option<Uuid>, &'a str)> {
    selects(cfg, node).then_some((node.provider_id, node.name.as_str()))
}

/// The nodes' servers the Service's load balancer sends traffic to, and why others are
/// left out.
fn select<'a>(
    cfg: &ServiceConfig,
    nodes: &[NodeView],
    servers: &'a [ServerView],
    problems: &mut Vec<NodeProblem>,
) -> Vec<&'a ServerView> {
    let mut selected: Vec<(bool, &ServerView)> = Vec::new();
    for node in nodes {
        if !selects(cfg, node) {
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
            Some(s) => selected.push((node.ready, s)),
            None => problems.push(NodeProblem::NoServer {
                node: node.name.clone(),
            }),
        }
    }
    // Ready nodes first (stable): a port whose node port moved is back once one new member
    // is up, and each member created is one reconfiguration of the load balancer.
    selected.sort_by_key(|(ready, _)| !ready);
    selected.into_iter().map(|(_, s)| s).collect()
}

fn pool(
    cfg: &ServiceConfig,
    p: &PortSpec,
    selected: &[&ServerView],
    allowed_cidrs: &[String],
) -> DesiredPool {
    let (proto, listener_protocol, pool_protocol) = match p.protocol {
        PortProtocol::Tcp => (
            "tcp",
            cfg.listener_protocol.into(),
            cfg.pool_protocol.into(),
        ),
        PortProtocol::Udp => ("udp", ListenerProtocol::Udp, PoolProtocol::Udp),
    };
    let name = if p.name.is_empty() {
        proto.to_string()
    } else {
        format!("{proto}/{}", p.name)
    };
    let local = cfg.external_traffic_policy == ExternalTrafficPolicy::Local;
    let monitor_port = match (local, cfg.health_check_node_port) {
        (true, Some(hc)) if hc > 0 => hc,
        _ => p.node_port,
    };
    let mut members = Vec::new();
    for s in selected {
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
        algorithm: cfg.pool_algorithm.into(),
        protocol: pool_protocol,
        node_port: p.node_port,
        members,
        listener: Listener {
            name: format!("{proto}/{}", p.port),
            protocol: listener_protocol,
            port: p.port,
            allowed_cidrs: allowed_cidrs.to_vec(),
            timeout_client_data_ms: cfg.timeout_client_data_ms,
            timeout_member_connect_ms: cfg.timeout_member_connect_ms,
            timeout_member_data_ms: cfg.timeout_member_data_ms,
        },
        monitor: monitor(cfg, p.protocol),
    }
}

/// Maps a Service onto the desired load balancer.
pub fn desired(
    cfg: &ServiceConfig,
    nodes: &[NodeView],
    servers: &[ServerView],
) -> Result<Mapped, MapError> {
    let mut problems = Vec::new();
    let selected = select(cfg, nodes, servers, &mut problems);
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
    let mut notes_out = Vec::new();
    let allowed = allowed_cidrs(cfg, &mut notes_out);
    notes(cfg, &mut notes_out);
    let pools = cfg
        .ports
        .iter()
        .map(|p| pool(cfg, p, &selected, &allowed))
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
            floating_ips: cfg.floating_ips.clone(),
        },
        problems,
        no_nodes: selected.is_empty(),
        notes: notes_out,
    })
}

/// The mapping to apply while Nodes deleted moments ago (`returning`, each with the end of
/// its grace; `service/reconcile/context.rs`, `RETURN_GRACE`) may register again: those the Service
/// selects whose servers still exist keep their members beside the live Nodes' (`live`),
/// so that a Node its restarted kubelet registers again finds its members where they were.
/// Deleting them and creating them again would queue two writes per port on the load
/// balancer, each re-created member would start its health checks from scratch behind
/// everything queued before it, and a port whose other nodes fail meanwhile would have no
/// member up. Returns `mapped` unchanged and `None` when no such Node exists, else the
/// mapping with them (the live mapping's problems and notes kept) and the earliest end of
/// their grace.
pub fn with_returning<T: Copy + Ord>(
    cfg: &ServiceConfig,
    mapped: Mapped,
    live: &[NodeView],
    returning: &[(NodeView, T)],
    servers: &[ServerView],
) -> (Mapped, Option<T>) {
    // A stand-in whose server is gone stands for nothing.
    let kept: Vec<&(NodeView, T)> = returning
        .iter()
        .filter(|(v, _)| !live.iter().any(|n| n.name == v.name))
        .filter(|(v, _)| !select(cfg, std::slice::from_ref(v), servers, &mut Vec::new()).is_empty())
        .collect();
    let Some(until) = kept.iter().map(|(_, t)| *t).min() else {
        return (mapped, None);
    };
    let views: Vec<NodeView> = live
        .iter()
        .cloned()
        .chain(kept.iter().map(|(v, _)| v.clone()))
        .collect();
    // Zones that disagree: the Service is left as the live Nodes say.
    let Ok(with) = desired(cfg, &views, servers) else {
        return (mapped, None);
    };
    (
        Mapped {
            desired: with.desired,
            no_nodes: false,
            ..mapped
        },
        Some(until),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::pure::annotations::parse_service;
    use crate::service::pure::model::HealthMonitorType;
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
                ready: true,
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
        assert_eq!(d.pools[0].monitor.kind, HealthMonitorType::Tcp);
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
        assert_eq!(d.pools[0].monitor.kind, HealthMonitorType::Http);
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
    fn a_node_deleted_moments_ago_keeps_the_members_of_a_service_it_alone_served() {
        let (nodes, servers) = cluster();
        // The selector picks node-3 alone; its Node was deleted, its server runs.
        let cfg = config(
            json!({"k8s.cloudscale.ch/loadbalancer-node-selector": "role=db"}),
            json!({}),
        );
        let live = desired(&cfg, &nodes[..2], &servers).expect("mapped");
        assert!(live.no_nodes);
        let returning = [(nodes[2].clone(), 30u32), (nodes[0].clone(), 10)];
        let (m, until) = with_returning(&cfg, live.clone(), &nodes[..2], &returning, &servers);
        let names: Vec<&str> = m.desired.pools[0]
            .members
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(names, ["10.0.0.13:30080"]);
        assert!(!m.no_nodes);
        // Only the grace of a Node the Service selects counts.
        assert_eq!(until, Some(30));
        // Its server gone too: nothing stands in, the pools empty as before.
        let (m, until) = with_returning(&cfg, live.clone(), &nodes[..2], &returning, &servers[..2]);
        assert!(m.no_nodes && m.desired.pools[0].members.is_empty());
        assert_eq!(until, None);
        // Registered again: nothing stands in.
        let (m, until) = with_returning(&cfg, live.clone(), &nodes, &returning, &servers);
        assert_eq!((m, until), (live, None));
    }

    #[test]
    fn a_node_deleted_moments_ago_keeps_its_members_beside_the_other_nodes() {
        let (nodes, servers) = cluster();
        let all = config(json!({}), json!({}));
        let live = desired(&all, &nodes[1..], &servers).expect("mapped");
        let members = |m: &Mapped| -> Vec<String> {
            m.desired.pools[0]
                .members
                .iter()
                .map(|m| m.name.clone())
                .collect()
        };
        assert_eq!(members(&live).len(), 2);
        let returning = [(nodes[0].clone(), 30u32)];
        let (m, until) = with_returning(&all, live.clone(), &nodes[1..], &returning, &servers);
        assert_eq!(until, Some(30));
        let mut names = members(&m);
        names.sort();
        let mut expected = members(&desired(&all, &nodes, &servers).expect("mapped"));
        expected.sort();
        assert_eq!(
            names, expected,
            "the deleted Node's member stays beside the others'"
        );
        // Its server gone: the live mapping as it was.
        let (m, until) = with_returning(&all, live.clone(), &nodes[1..], &returning, &servers[1..]);
        assert_eq!((m, until), (live, None));
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
        assert_eq!(d.pools[0].protocol, PoolProtocol::Udp);
        assert_eq!(d.pools[0].listener.protocol, ListenerProtocol::Udp);
        assert_eq!(d.pools[0].listener.name, "udp/53");
        assert_eq!(d.pools[0].monitor.kind, HealthMonitorType::UdpConnect);
    }

    #[test]
    fn each_pool_gets_a_check_its_protocol_can_answer() {
        let (nodes, servers) = cluster();
        let svc = serde_json::from_value(json!({
            "metadata": {"name": "syslog", "namespace": "default", "uid": "u1"},
            "spec": {"type": "LoadBalancer", "ports": [
                {"name": "syslog", "protocol": "UDP", "port": 514, "nodePort": 30514},
                {"name": "tls", "protocol": "TCP", "port": 6514, "nodePort": 30615}]},
        }))
        .expect("service");
        let cfg = parse_service(&svc).expect("valid").expect("handled");
        let d = desired(&cfg, &nodes, &servers).expect("mapped").desired;
        assert_eq!(d.pools[0].monitor.kind, HealthMonitorType::UdpConnect);
        assert_eq!(d.pools[1].monitor.kind, HealthMonitorType::Tcp);
        // `ping` works for both; an explicit TCP type stays on TCP pools only.
        for (explicit, udp) in [("ping", "ping"), ("tls-hello", "udp-connect")] {
            let mut svc = svc.clone();
            svc.metadata.annotations = Some(
                [(
                    "k8s.cloudscale.ch/loadbalancer-health-monitor-type".to_string(),
                    explicit.to_string(),
                )]
                .into(),
            );
            let cfg = parse_service(&svc).expect("valid").expect("handled");
            let d = desired(&cfg, &nodes, &servers).expect("mapped").desired;
            assert_eq!(d.pools[0].monitor.kind.as_str(), udp);
            assert_eq!(d.pools[1].monitor.kind.as_str(), explicit);
        }
    }

    #[test]
    fn source_ranges_restrict_the_listeners_unless_the_annotation_says_otherwise() {
        let (nodes, servers) = cluster();
        let ranges = json!({"loadBalancerSourceRanges": ["10.0.0.0/8"]});
        let m = desired(&config(json!({}), ranges.clone()), &nodes, &servers).expect("mapped");
        assert_eq!(m.desired.pools[0].listener.allowed_cidrs, ["10.0.0.0/8"]);
        assert!(m.notes.is_empty());
        let both =
            json!({"k8s.cloudscale.ch/loadbalancer-listener-allowed-cidrs": r#"["192.0.2.0/24"]"#});
        let m = desired(&config(both, ranges), &nodes, &servers).expect("mapped");
        assert_eq!(m.desired.pools[0].listener.allowed_cidrs, ["192.0.2.0/24"]);
        assert_eq!(m.notes.len(), 1);
        assert!(m.notes[0].message.contains("the annotation applies"));
    }

    #[test]
    fn settings_that_are_not_applied_are_noted() {
        let (nodes, servers) = cluster();
        let cfg = config(
            json!({"k8s.cloudscale.ch/loadbalancer-health-monitor-http": r#"{"url_path": "/x"}"#}),
            json!({"loadBalancerIP": "45.132.236.99"}),
        );
        let m = desired(&cfg, &nodes, &servers).expect("mapped");
        let fields: Vec<&str> = m.notes.iter().map(|n| n.field).collect();
        assert_eq!(
            fields,
            [
                "spec.loadBalancerIP",
                "k8s.cloudscale.ch/loadbalancer-health-monitor-http"
            ]
        );
        assert!(m.desired.pools.iter().all(|p| p.monitor.http.is_none()));
    }

    #[test]
    fn ipv6_member_names_are_bracketed() {
        assert_eq!(
            member_name("fd00::1".parse().expect("ip"), 30080),
            "[fd00::1]:30080"
        );
    }
}
