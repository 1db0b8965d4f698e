//! What can go wrong reconciling a Service.

use super::{apply, map};
use crate::cloudscale;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Map(#[from] map::MapError),
    #[error(transparent)]
    Cloud(#[from] cloudscale::ClientError),
    #[error(transparent)]
    Apply(#[from] apply::ApplyError),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// Changes were applied, yet planning again still finds these steps to do.
    #[error(
        "the load balancer did not converge after {passes} passes; still differing:\n{remaining}"
    )]
    NotConverged { passes: usize, remaining: String },
    #[error(
        "floating IP {ip} is also claimed by Service {other} (k8s.cloudscale.ch/loadbalancer-floating-ips): refusing to go on so it does not flap between load balancers; remove it from one of them"
    )]
    FloatingIpConflict { ip: String, other: String },
    /// The load balancer the Service names is not its own.
    #[error("{0}")]
    NotOwned(String),
}
