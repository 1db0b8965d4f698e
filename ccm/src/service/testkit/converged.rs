//! The load balancer a desired state becomes once applied.

use crate::cloudscale::{LoadBalancerStatus, MonitorStatus};
use crate::service::pure::model::{
    ActualLb, ActualListener, ActualMember, ActualMonitor, ActualPool, DesiredLb,
};
use crate::service::pure::plan::Ownership;
use uuid::Uuid;

/// The state a load balancer would have once `desired` is fully applied (for tests and
/// property checks: planning against it must find nothing to do).
pub fn converged(desired: &DesiredLb, owner: &Ownership) -> ActualLb {
    let id = |s: &str| Uuid::new_v5(&Uuid::NAMESPACE_OID, s.as_bytes());
    ActualLb {
        uuid: id(&desired.name),
        name: desired.name.clone(),
        flavor: desired.flavor.clone(),
        zone: desired.zone.clone().unwrap_or_else(|| "rma1".into()),
        status: LoadBalancerStatus::Running,
        vips: desired
            .vips
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|v| {
                (
                    v.subnet,
                    v.address.unwrap_or(std::net::IpAddr::from([10, 0, 0, 100])),
                )
            })
            .collect(),
        pools: desired
            .pools
            .iter()
            .map(|p| ActualPool {
                uuid: id(&format!("pool/{}", p.name)),
                name: p.name.clone(),
                algorithm: p.algorithm.clone(),
                protocol: p.protocol.clone(),
                members: p
                    .members
                    .iter()
                    .map(|m| ActualMember {
                        uuid: id(&format!("member/{}/{}", p.name, m.name)),
                        member: m.clone(),
                        enabled: true,
                        health: MonitorStatus::Up,
                    })
                    .collect(),
                listeners: vec![ActualListener {
                    uuid: id(&format!("listener/{}", p.name)),
                    listener: p.listener.clone(),
                }],
                monitors: vec![ActualMonitor {
                    uuid: id(&format!("monitor/{}", p.name)),
                    monitor: p.monitor.clone(),
                }],
            })
            .collect(),
        orphan_listeners: Vec::new(),
        floating_ips: desired.floating_ips.clone(),
        tags: owner.created_tags(),
    }
}
