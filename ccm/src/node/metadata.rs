//! Pure mapping from a server to the Node data the CCM owns: provider ID, topology and
//! instance-type labels, addresses. No I/O here.

use super::provider_id;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use uuid::Uuid;

pub const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";
pub const SHUTDOWN_TAINT: &str = "node.cloudprovider.kubernetes.io/shutdown";
/// Set by kubelets started with `--node-ip`.
pub const PROVIDED_NODE_IP: &str = "alpha.kubernetes.io/provided-node-ip";

/// Whether the Node carries a taint with this key.
pub fn has_taint(node: &k8s_openapi::api::core::v1::Node, key: &str) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == key))
}

/// Whether the CCM has initialized the Node (the uninitialized taint is gone).
pub fn is_initialized(node: &k8s_openapi::api::core::v1::Node) -> bool {
    !has_taint(node, UNINITIALIZED_TAINT)
}

pub const LABEL_INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_REGION: &str = "topology.kubernetes.io/region";
const LEGACY_INSTANCE_TYPE: &str = "beta.kubernetes.io/instance-type";
const LEGACY_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const LEGACY_REGION: &str = "failure-domain.beta.kubernetes.io/region";

/// What the node side needs to know about a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerFacts {
    pub uuid: Uuid,
    pub name: String,
    pub status: String,
    pub flavor: String,
    pub zone: String,
    /// Interfaces in API order: (public?, addresses in API order).
    pub interfaces: Vec<(bool, Vec<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAddress {
    pub kind: &'static str,
    pub address: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeMetadata {
    pub provider_id: String,
    pub instance_type: String,
    pub zone: String,
    pub region: String,
    pub addresses: Vec<NodeAddress>,
}

/// The region of a zone: the zone slug without its trailing digits (`rma1` → `rma`).
pub fn region_of(zone: &str) -> &str {
    zone.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// Provider ID, labels' values and addresses in the reference's order: Hostname, then per
/// interface in API order, per address in API order, ExternalIP for public interfaces and
/// InternalIP for the others.
pub fn node_metadata(s: &ServerFacts) -> NodeMetadata {
    let mut addresses = vec![NodeAddress {
        kind: "Hostname",
        address: s.name.clone(),
    }];
    for (public, addrs) in &s.interfaces {
        for a in addrs {
            addresses.push(NodeAddress {
                kind: if *public { "ExternalIP" } else { "InternalIP" },
                address: a.clone(),
            });
        }
    }
    NodeMetadata {
        provider_id: provider_id::format(s.uuid),
        instance_type: s.flavor.clone(),
        zone: s.zone.clone(),
        region: region_of(&s.zone).to_string(),
        addresses,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("the kubelet's node IP {0} is not one of the server's addresses")]
    NodeIpNotFound(String),
}

/// With a kubelet-provided node IP (`--node-ip`), that address comes first and other
/// addresses of its type are dropped, as the upstream node controller does; a node IP the
/// server does not have is an error (the Node stays uninitialized).
pub fn prefer_node_ip(
    addresses: &[NodeAddress],
    node_ip: Option<&str>,
) -> Result<Vec<NodeAddress>, AddressError> {
    let Some(ip) = node_ip.filter(|ip| !ip.is_empty()) else {
        return Ok(addresses.to_vec());
    };
    let chosen = addresses
        .iter()
        .find(|a| a.kind != "Hostname" && a.address == ip)
        .cloned()
        .ok_or_else(|| AddressError::NodeIpNotFound(ip.to_string()))?;
    let mut out = vec![chosen.clone()];
    out.extend(addresses.iter().filter(|a| a.kind != chosen.kind).cloned());
    Ok(out)
}

/// The labels the CCM sets (current and legacy names).
pub fn labels(md: &NodeMetadata) -> BTreeMap<String, String> {
    [
        (LABEL_INSTANCE_TYPE, &md.instance_type),
        (LEGACY_INSTANCE_TYPE, &md.instance_type),
        (LABEL_ZONE, &md.zone),
        (LEGACY_ZONE, &md.zone),
        (LABEL_REGION, &md.region),
        (LEGACY_REGION, &md.region),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.clone()))
    .collect()
}

pub fn addresses_json(addresses: &[NodeAddress]) -> Value {
    Value::Array(
        addresses
            .iter()
            .map(|a| json!({"type": a.kind, "address": a.address}))
            .collect(),
    )
}

/// Which server a Node is, by provider ID (always wins) or else by exact name.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMatch {
    One(ServerFacts),
    None,
    /// Several servers carry the Node's name: never guess.
    Ambiguous(Vec<Uuid>),
}

/// Matches by name among `servers` (a full list).
pub fn match_by_name(servers: &[ServerFacts], node_name: &str) -> ServerMatch {
    let found: Vec<&ServerFacts> = servers.iter().filter(|s| s.name == node_name).collect();
    match found.as_slice() {
        [] => ServerMatch::None,
        [one] => ServerMatch::One((*one).clone()),
        many => ServerMatch::Ambiguous(many.iter().map(|s| s.uuid).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ServerFacts {
        ServerFacts {
            uuid: Uuid::parse_str("08d56bfe-40d0-4c68-a915-54f846c28c9e").expect("uuid"),
            name: "node-1".into(),
            status: "running".into(),
            flavor: "flex-8-4".into(),
            zone: "rma1".into(),
            interfaces: vec![
                (true, vec!["185.98.120.10".into(), "2a06:c01:1:1::a".into()]),
                (false, vec!["10.0.0.11".into()]),
            ],
        }
    }

    #[test]
    fn metadata_follows_the_reference_order() {
        let md = node_metadata(&server());
        assert_eq!(
            md.provider_id,
            "cloudscale://08d56bfe-40d0-4c68-a915-54f846c28c9e"
        );
        assert_eq!(md.instance_type, "flex-8-4");
        assert_eq!((md.zone.as_str(), md.region.as_str()), ("rma1", "rma"));
        let kinds: Vec<(&str, &str)> = md
            .addresses
            .iter()
            .map(|a| (a.kind, a.address.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("Hostname", "node-1"),
                ("ExternalIP", "185.98.120.10"),
                ("ExternalIP", "2a06:c01:1:1::a"),
                ("InternalIP", "10.0.0.11"),
            ]
        );
        let l = labels(&md);
        assert_eq!(l[LABEL_INSTANCE_TYPE], "flex-8-4");
        assert_eq!(l[LABEL_REGION], "rma");
        assert_eq!(l["failure-domain.beta.kubernetes.io/zone"], "rma1");
    }

    #[test]
    fn regions_drop_all_trailing_digits() {
        assert_eq!(region_of("rma1"), "rma");
        assert_eq!(region_of("lpg12"), "lpg");
        assert_eq!(region_of("x"), "x");
    }

    #[test]
    fn node_ip_comes_first_and_must_exist() {
        let md = node_metadata(&server());
        let addrs = prefer_node_ip(&md.addresses, Some("10.0.0.11")).expect("known ip");
        assert_eq!(addrs[0].address, "10.0.0.11");
        assert!(addrs.iter().filter(|a| a.kind == "InternalIP").count() == 1);
        assert!(addrs.iter().any(|a| a.kind == "Hostname"));
        assert_eq!(
            prefer_node_ip(&md.addresses, None).expect("none"),
            md.addresses
        );
        assert!(prefer_node_ip(&md.addresses, Some("192.0.2.1")).is_err());
    }

    #[test]
    fn name_matching_never_guesses() {
        let a = server();
        let mut b = server();
        b.uuid = Uuid::new_v4();
        assert!(matches!(
            match_by_name(std::slice::from_ref(&a), "node-1"),
            ServerMatch::One(_)
        ));
        assert_eq!(
            match_by_name(std::slice::from_ref(&a), "node-2"),
            ServerMatch::None
        );
        assert!(
            matches!(match_by_name(&[a, b], "node-1"), ServerMatch::Ambiguous(v) if v.len() == 2)
        );
    }
}
