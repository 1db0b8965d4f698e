//! Sample desired load balancers for tests and examples: two TCP ports (`http` on 80,
//! `https` on 443) on a set of nodes, with the reference's default timeouts and monitor.
//! The planner's unit tests and the apply tests against fakecloud build on the same shape.

use crate::service::pure::model::{
    DesiredLb, DesiredPool, Family, HealthMonitorType, Listener, ListenerProtocol, Member, Monitor,
    PoolAlgorithm, PoolProtocol,
};
use std::net::IpAddr;
use uuid::Uuid;

/// A running load balancer as the API lists it: UUID `uuid`, named `name`, tagged `tags`
/// (a JSON object), in rma1.
pub fn load_balancer(
    uuid: u128,
    name: &str,
    tags: serde_json::Value,
) -> crate::cloudscale::LoadBalancer {
    serde_json::from_value(serde_json::json!({
        "href": "x", "uuid": Uuid::from_u128(uuid).to_string(), "name": name,
        "status": "running", "flavor": {"slug": "lb-standard"}, "zone": {"slug": "rma1"},
        "tags": tags,
    }))
    .unwrap_or_else(|e| panic!("a sample load balancer: {e}"))
}

/// Where the sample's members live: the nodes' subnet and addresses.
#[derive(Debug, Clone)]
pub struct Sample {
    pub subnet: Uuid,
    pub nodes: Vec<IpAddr>,
}

impl Sample {
    /// A member named as the CCM names them (`address:port`), monitored on its node port.
    pub fn member(&self, address: IpAddr, node_port: u16) -> Member {
        Member {
            name: format!("{address}:{node_port}"),
            address,
            subnet: self.subnet,
            protocol_port: node_port,
            monitor_port: node_port,
        }
    }

    /// A round-robin TCP pool with one member per node, a TCP listener on `port` and the
    /// default TCP monitor.
    pub fn pool(&self, name: &str, port: u16, node_port: u16) -> DesiredPool {
        DesiredPool {
            name: name.into(),
            algorithm: PoolAlgorithm::RoundRobin,
            protocol: PoolProtocol::Tcp,
            node_port,
            members: self
                .nodes
                .iter()
                .map(|a| self.member(*a, node_port))
                .collect(),
            listener: Listener {
                name: format!("tcp/{port}"),
                protocol: ListenerProtocol::Tcp,
                port,
                allowed_cidrs: vec![],
                timeout_client_data_ms: 50000,
                timeout_member_connect_ms: 5000,
                timeout_member_data_ms: 50000,
            },
            monitor: Monitor {
                kind: HealthMonitorType::Tcp,
                delay_s: 2,
                timeout_s: 1,
                up_threshold: 2,
                down_threshold: 3,
                http: None,
            },
        }
    }

    /// A port as the map step builds it: pool `tcp/<name>` or `udp/<name>` (just the
    /// protocol when `name` is empty), listener `<protocol>/<port>`, members on `node_port`,
    /// a `udp-connect` check for UDP.
    pub fn port(&self, name: &str, family: Family, port: u16, node_port: u16) -> DesiredPool {
        let proto = match family {
            Family::Tcp => "tcp",
            Family::Udp => "udp",
        };
        let mut p = self.pool(name, port, node_port);
        p.name = if name.is_empty() {
            proto.to_string()
        } else {
            format!("{proto}/{name}")
        };
        p.listener.name = format!("{proto}/{port}");
        if family == Family::Udp {
            p.protocol = PoolProtocol::Udp;
            p.listener.protocol = ListenerProtocol::Udp;
            p.monitor.kind = HealthMonitorType::UdpConnect;
        }
        p
    }

    /// `k8s-service-abc` in rma1 on lb-standard: `tcp/http` (80 → 30080) and `tcp/https`
    /// (443 → 30443).
    pub fn desired(&self) -> DesiredLb {
        DesiredLb {
            name: "k8s-service-abc".into(),
            flavor: "lb-standard".into(),
            zone: Some("rma1".into()),
            vips: None,
            pools: vec![
                self.pool("tcp/http", 80, 30080),
                self.pool("tcp/https", 443, 30443),
            ],
            floating_ips: vec![],
        }
    }
}
