//! The spec fields a load balancer reads: ports, traffic policy, health check node port,
//! source ranges.

use super::*;

pub(super) fn spec_error(
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

pub(super) fn parse_ports(spec: &ServiceSpec, errors: &mut Vec<ConfigError>) -> Vec<PortSpec> {
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

pub(super) fn parse_traffic_policy(
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

pub(super) fn parse_health_check_node_port(
    spec: &ServiceSpec,
    errors: &mut Vec<ConfigError>,
) -> Option<u16> {
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

/// Whether the Service asks for IPv6 alone: `spec.ipFamilies` exactly `[IPv6]` with a
/// `SingleStack` (or unset) policy. `[IPv4]` is not read as "no IPv6": it is what the API
/// server writes into every Service of an IPv4 cluster, whose clients reach the load
/// balancer's IPv6 VIP all the same.
pub(super) fn parse_ipv6_only(spec: &ServiceSpec) -> bool {
    let single = spec
        .ip_family_policy
        .as_deref()
        .is_none_or(|p| p == "SingleStack");
    single && spec.ip_families.as_deref() == Some(&["IPv6".to_string()][..])
}

/// Kubernetes trims spaces and clears host bits of source ranges; so do we.
pub(super) fn parse_source_ranges(spec: &ServiceSpec, errors: &mut Vec<ConfigError>) -> Vec<IpNet> {
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
