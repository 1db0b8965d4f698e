//! What can go wrong reconciling a Service.

use crate::cloudscale;
use crate::service::cloud::cloud_error;
use crate::service::pure::map;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Map(#[from] map::MapError),
    #[error(transparent)]
    Cloud(#[from] cloudscale::ClientError),
    #[error(transparent)]
    Apply(#[from] cloud_error::ApplyError),
    #[error("Kubernetes API: {}", crate::kube_text::KubeText(.0))]
    Kube(#[from] kube::Error),
    /// Changes were applied, yet planning again still finds these steps to do (`remaining`
    /// on one line: the message becomes an Event's).
    #[error(
        "the load balancer did not converge after {passes} passes; still differing: {remaining}"
    )]
    NotConverged { passes: usize, remaining: String },
    /// The API token reaches an account that holds none of the cluster's servers.
    #[error("{0}")]
    ForeignAccount(String),
    /// The load balancer the Service names is not its own.
    #[error("{0}")]
    NotOwned(String),
}
