//! What can go wrong reconciling a Service.

use crate::cloudscale;
use crate::service::cloud::cloud_error;
use crate::service::pure::annotations::{self, ConfigError, ConfigErrors};
use crate::service::pure::map;
use std::fmt;
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The Service's annotations or spec are invalid, as the parser found them.
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigErrors),
    /// The allowed-subnets annotation names subnets the account does not have.
    #[error("invalid configuration: {0}")]
    UnknownSubnets(UnknownSubnets),
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

/// Subnets named in the allowed-subnets annotation that the account does not have. Reads
/// like one of the parser's invalid settings (a [`ConfigErrors`] of one [`ConfigError`]):
/// to the user it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSubnets {
    /// The Service's `namespace/name`.
    pub service: String,
    /// The annotation that names them.
    pub annotation: &'static str,
    /// The subnets the account lacks (never empty), in the annotation's order.
    pub subnets: Vec<Uuid>,
}

impl UnknownSubnets {
    /// The allowed-subnets annotation naming `subnets`.
    pub fn allowed(service: String, subnets: Vec<Uuid>) -> Self {
        UnknownSubnets {
            service,
            annotation: annotations::LOADBALANCER_LISTENER_ALLOWED_SUBNETS,
            subnets,
        }
    }

    /// As the parser reports an invalid setting.
    fn as_config_errors(&self) -> ConfigErrors {
        let list = self
            .subnets
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        ConfigErrors {
            service: self.service.clone(),
            errors: vec![ConfigError {
                field: self.annotation.to_string(),
                // Quoted like the parser's values; a UUID list needs no escapes.
                value: Some(format!("\"{list}\"")),
                problem: format!("no such subnet in this account: {list}"),
                hint: "name the UUIDs of subnets the nodes are attached to".to_string(),
            }],
        }
    }
}

impl fmt::Display for UnknownSubnets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_config_errors().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_errors_read_as_the_parsers_list() {
        let e = ServiceError::from(ConfigErrors {
            service: "default/web".into(),
            errors: vec![
                ConfigError {
                    field: annotations::LOADBALANCER_FLAVOR.into(),
                    value: Some("\"big\"".into()),
                    problem: "unknown flavor".into(),
                    hint: "use lb-standard".into(),
                },
                ConfigError {
                    field: "spec.ports[0].protocol".into(),
                    value: None,
                    problem: "missing".into(),
                    hint: String::new(),
                },
            ],
        });
        assert_eq!(
            e.to_string(),
            format!(
                "invalid configuration: Service default/web has 2 invalid settings: annotation {}: invalid value \"big\": unknown flavor (use lb-standard); spec.ports[0].protocol: missing",
                annotations::LOADBALANCER_FLAVOR
            )
        );
    }

    #[test]
    fn unknown_subnets_read_as_one_invalid_setting() {
        let one = ServiceError::UnknownSubnets(UnknownSubnets::allowed(
            "default/web".into(),
            vec![Uuid::from_u128(8)],
        ));
        let a = "k8s.cloudscale.ch/loadbalancer-listener-allowed-subnets";
        assert_eq!(annotations::LOADBALANCER_LISTENER_ALLOWED_SUBNETS, a);
        assert_eq!(
            one.to_string(),
            format!(
                "invalid configuration: Service default/web has 1 invalid setting: annotation {a}: invalid value \"00000000-0000-0000-0000-000000000008\": no such subnet in this account: 00000000-0000-0000-0000-000000000008 (name the UUIDs of subnets the nodes are attached to)"
            )
        );
        let two = UnknownSubnets::allowed(
            "ns/svc".into(),
            vec![Uuid::from_u128(8), Uuid::from_u128(9)],
        );
        assert_eq!(
            two.to_string(),
            format!(
                "Service ns/svc has 1 invalid setting: annotation {a}: invalid value \"00000000-0000-0000-0000-000000000008, 00000000-0000-0000-0000-000000000009\": no such subnet in this account: 00000000-0000-0000-0000-000000000008, 00000000-0000-0000-0000-000000000009 (name the UUIDs of subnets the nodes are attached to)"
            )
        );
    }
}
