//! Sample desired load balancers for tests and examples: two TCP ports (`http` on 80,
//! `https` on 443) on a set of nodes, with the reference's default timeouts and monitor.
//! The planner's unit tests and the apply tests against fakecloud build on the same shape.

use super::model::{DesiredLb, DesiredPool, Listener, Member, Monitor};
use std::net::IpAddr;
use uuid::Uuid;

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
            algorithm: "round_robin".into(),
            protocol: "tcp".into(),
            members: self
                .nodes
                .iter()
                .map(|a| self.member(*a, node_port))
                .collect(),
            listener: Listener {
                name: format!("tcp/{port}"),
                protocol: "tcp".into(),
                port,
                allowed_cidrs: vec![],
                timeout_client_data_ms: 50000,
                timeout_member_connect_ms: 5000,
                timeout_member_data_ms: 50000,
            },
            monitor: Monitor {
                kind: "tcp".into(),
                delay_s: 2,
                timeout_s: 1,
                up_threshold: 2,
                down_threshold: 3,
                http: None,
            },
        }
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
