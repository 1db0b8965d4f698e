//! Service semantics as the real API server implements them: defaulting, validation,
//! cluster IP, node port and health-check node port allocation, and the clearing of
//! type-dependent fields when a Service changes type.

use super::status::{ApiError, Cause};
use serde_json::{Value, json};
use std::collections::HashSet;

use super::cluster_ips;
pub const NODE_PORT_MIN: i64 = 30000;
pub const NODE_PORT_MAX: i64 = 32767;

const TYPES: &[&str] = &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];
const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];

fn external(ty: &str) -> bool {
    ty == "NodePort" || ty == "LoadBalancer"
}

struct Causes(Vec<Cause>);

impl Causes {
    fn add(&mut self, reason: &'static str, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(Cause {
            reason,
            field: field.into(),
            message: message.into(),
        });
    }
}

/// What other Services hold: cluster IPs and node ports in use.
pub struct Taken {
    pub cluster_ips: HashSet<String>,
    pub node_ports: HashSet<i64>,
}

impl Taken {
    /// Collects from every Service except the one being written (`uid`).
    pub fn from_services<'a>(
        services: impl Iterator<Item = &'a Value>,
        uid: Option<&str>,
    ) -> Taken {
        let mut t = Taken {
            cluster_ips: HashSet::new(),
            node_ports: HashSet::new(),
        };
        for s in services {
            if uid.is_some() && s.pointer("/metadata/uid").and_then(Value::as_str) == uid {
                continue;
            }
            let ips = s.pointer("/spec/clusterIPs").and_then(Value::as_array);
            for ip in ips.into_iter().flatten().filter_map(Value::as_str) {
                t.cluster_ips.insert(ip.to_string());
            }
            if let Some(ip) = s.pointer("/spec/clusterIP").and_then(Value::as_str) {
                t.cluster_ips.insert(ip.to_string());
            }
            for p in s
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                    t.node_ports.insert(n);
                }
            }
            if let Some(n) = s
                .pointer("/spec/healthCheckNodePort")
                .and_then(Value::as_i64)
            {
                t.node_ports.insert(n);
            }
        }
        t
    }

    fn allocate_node_port(&mut self) -> Option<i64> {
        let port = (NODE_PORT_MIN..=NODE_PORT_MAX).find(|p| !self.node_ports.contains(p))?;
        self.node_ports.insert(port);
        Some(port)
    }
}

/// A `loadBalancerClass` as Kubernetes quotes an invalid value: `"class"`, or `"null"` for
/// none.
fn class_text(class: Option<&Value>) -> String {
    match class {
        Some(Value::String(s)) => format!("{s:?}"),
        Some(other) => format!("{:?}", other.to_string()),
        None => "\"null\"".to_string(),
    }
}

/// Defaults, validates and allocates `new` (created when `old` is `None`, else updated from
/// `old`). Errors are 422 `Invalid` with one cause per problem.
pub fn prepare(new: &mut Value, old: Option<&Value>, taken: &mut Taken) -> Result<(), ApiError> {
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut c = Causes(Vec::new());
    if !new.get("spec").is_some_and(Value::is_object) {
        new["spec"] = json!({});
    }
    let old_spec = old
        .and_then(|o| o.get("spec"))
        .cloned()
        .unwrap_or(json!({}));
    let spec = &mut new["spec"];
    let ty = default_type(spec, &mut c);
    let old_ty = old_spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if old.is_some() {
        clear_fields_of_old_type(spec, &old_spec, old_ty, &ty);
    }
    default_policies(spec, &ty);
    validate_external_traffic_policy(spec, &ty, &mut c);
    validate_load_balancer_class(spec, &old_spec, old.map(|_| old_ty), &ty, &mut c);
    let old_health = prepare_ports(spec, &old_spec, &ty, taken, &mut c);
    prepare_health_check_node_port(spec, &ty, old_health, taken, &mut c);
    prepare_addresses(spec, &old_spec, &ty, taken, &mut c);

    if old.is_none() {
        new["status"] = json!({"loadBalancer": {}});
    }
    if c.0.is_empty() {
        Ok(())
    } else {
        Err(ApiError::Invalid {
            kind: "Service".to_string(),
            name,
            causes: c.0,
        })
    }
}

/// Defaults `spec.type` to `ClusterIP`, refusing an unknown one, and returns it.
fn default_type(spec: &mut Value, c: &mut Causes) -> String {
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if !TYPES.contains(&ty.as_str()) {
        c.add("FieldValueNotSupported", "spec.type", format!("Unsupported value: \"{ty}\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""));
    }
    spec["type"] = json!(ty);
    ty
}

/// On update: fields that only make sense for some types are dropped when the type changes
/// away, as long as the client left them as they were.
fn clear_fields_of_old_type(spec: &mut Value, old_spec: &Value, old_ty: &str, ty: &str) {
    let unchanged = |spec: &Value, k: &str| spec.get(k) == old_spec.get(k);
    let remove_unchanged = |spec: &mut Value, keys: &[&str]| {
        for k in keys {
            if unchanged(spec, k)
                && let Some(m) = spec.as_object_mut()
            {
                m.remove(*k);
            }
        }
    };
    if external(old_ty) && !external(ty) {
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports {
                if let Some(m) = p.as_object_mut() {
                    m.remove("nodePort");
                }
            }
        }
        remove_unchanged(spec, &["externalTrafficPolicy", "healthCheckNodePort"]);
    }
    if old_ty == "LoadBalancer" && ty != "LoadBalancer" {
        remove_unchanged(
            spec,
            &[
                "allocateLoadBalancerNodePorts",
                "loadBalancerClass",
                "healthCheckNodePort",
            ],
        );
    }
}

/// Defaults the affinity and traffic policies, and node port allocation of a LoadBalancer.
fn default_policies(spec: &mut Value, ty: &str) {
    let defaults = [
        ("sessionAffinity", "None"),
        ("internalTrafficPolicy", "Cluster"),
    ];
    for (k, v) in defaults {
        if spec.get(k).is_none() && ty != "ExternalName" {
            spec[k] = json!(v);
        }
    }
    if external(ty) && spec.get("externalTrafficPolicy").is_none() {
        spec["externalTrafficPolicy"] = json!("Cluster");
    }
    if ty == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none() {
        spec["allocateLoadBalancerNodePorts"] = json!(true);
    }
}

fn validate_external_traffic_policy(spec: &Value, ty: &str, c: &mut Causes) {
    let Some(etp) = spec.get("externalTrafficPolicy").and_then(Value::as_str) else {
        return;
    };
    if !external(ty) {
        c.add(
            "FieldValueInvalid",
            "spec.externalTrafficPolicy",
            format!("Invalid value: \"{etp}\": may only be set for externally-accessible services"),
        );
    } else if etp != "Cluster" && etp != "Local" {
        c.add(
            "FieldValueNotSupported",
            "spec.externalTrafficPolicy",
            format!("Unsupported value: \"{etp}\": supported values: \"Cluster\", \"Local\""),
        );
    }
}

/// As Kubernetes' validateLoadBalancerClassField: between two LoadBalancer Services the
/// class may not be added, removed or changed (it is set when the Service becomes a
/// LoadBalancer, or at create); other types may not carry one. `old_ty` is `None` at create.
fn validate_load_balancer_class(
    spec: &Value,
    old_spec: &Value,
    old_ty: Option<&str>,
    ty: &str,
    c: &mut Causes,
) {
    let new_class = spec.get("loadBalancerClass").filter(|v| !v.is_null());
    let old_class = old_spec.get("loadBalancerClass").filter(|v| !v.is_null());
    if old_ty == Some("LoadBalancer") && ty == "LoadBalancer" && new_class != old_class {
        c.add(
            "FieldValueInvalid",
            "spec.loadBalancerClass",
            format!(
                "Invalid value: {}: may not change once set",
                class_text(new_class)
            ),
        );
    }
    if ty != "LoadBalancer" && new_class.is_some() {
        c.add(
            "FieldValueForbidden",
            "spec.loadBalancerClass",
            "Forbidden: may only be used when `type` is 'LoadBalancer'",
        );
    }
}

/// The name of field `k` of port `i`, as causes name it.
fn port_field(i: usize, k: &str) -> String {
    format!("spec.ports[{i}].{k}")
}

/// Validates and defaults `spec.ports` and gives out their node ports. Returns the old
/// health-check node port, which it holds in `taken` for the Service.
fn prepare_ports(
    spec: &mut Value,
    old_spec: &Value,
    ty: &str,
    taken: &mut Taken,
    c: &mut Causes,
) -> Option<i64> {
    let ports_len = spec
        .get("ports")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if ports_len == 0
        && ty != "ExternalName"
        && spec.get("clusterIP").and_then(Value::as_str) != Some("None")
    {
        c.add("FieldValueRequired", "spec.ports", "Required value");
    }
    let old_ports: Vec<Value> = old_spec
        .get("ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let old_health = hold_old_node_ports(&old_ports, old_spec, taken);
    let allocate = external(ty)
        && !(ty == "LoadBalancer"
            && spec.get("allocateLoadBalancerNodePorts") == Some(&json!(false)));
    let mut node_ports = NodePorts {
        old_ports: &old_ports,
        requested: requested_node_ports(spec),
        own: Vec::new(),
    };
    let mut seen = SeenPorts::default();
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for (i, p) in ports.iter_mut().enumerate() {
            if !p.is_object() {
                c.add(
                    "FieldValueInvalid",
                    format!("spec.ports[{i}]"),
                    "must be an object",
                );
                continue;
            }
            let port = prepare_port(p, i, ports_len, &mut seen, c);
            if allocate {
                node_ports.assign(p, i, &port, taken, c);
            } else if !external(ty)
                && let Some(m) = p.as_object_mut()
                && m.contains_key("nodePort")
            {
                c.add(
                    "FieldValueForbidden",
                    port_field(i, "nodePort"),
                    format!("Forbidden: may not be used when `type` is '{ty}'"),
                );
            }
        }
    }
    old_health
}

/// Marks the Service's old node ports taken and returns its old health-check node port.
fn hold_old_node_ports(old_ports: &[Value], old_spec: &Value, taken: &mut Taken) -> Option<i64> {
    // The old node ports stay allocated while the update allocates new ones (kube-apiserver
    // releases them only after), so a port that gets a new one never gets an old one back.
    for n in old_ports
        .iter()
        .filter_map(|o| o.get("nodePort").and_then(Value::as_i64))
    {
        taken.node_ports.insert(n);
    }
    // So is the Service's own health-check node port: a port added by the update must not
    // be given it (the health check and the port would answer on one node port).
    let old_health = old_spec.get("healthCheckNodePort").and_then(Value::as_i64);
    if let Some(n) = old_health {
        taken.node_ports.insert(n);
    }
    old_health
}

/// Node ports the new ports ask for by value.
fn requested_node_ports(spec: &Value) -> HashSet<i64> {
    spec.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        .collect()
}

/// Port names and (port, protocol) pairs met so far, to refuse duplicates.
#[derive(Default)]
struct SeenPorts {
    names: HashSet<String>,
    ports: HashSet<(i64, String)>,
}

/// One port's fields that the node port assignment needs.
struct PortKey {
    port: Option<i64>,
    protocol: String,
    name: String,
}

/// Validates and defaults port `i` (an object) other than its node port.
fn prepare_port(
    p: &mut Value,
    i: usize,
    ports_len: usize,
    seen: &mut SeenPorts,
    c: &mut Causes,
) -> PortKey {
    let protocol = p
        .get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("TCP")
        .to_string();
    if !PROTOCOLS.contains(&protocol.as_str()) {
        c.add(
            "FieldValueNotSupported",
            port_field(i, "protocol"),
            format!(
                "Unsupported value: \"{protocol}\": supported values: \"SCTP\", \"TCP\", \"UDP\""
            ),
        );
    }
    p["protocol"] = json!(protocol);
    let port = p.get("port").and_then(Value::as_i64);
    match port {
        Some(n) if (1..=65535).contains(&n) => {}
        Some(n) => c.add(
            "FieldValueInvalid",
            port_field(i, "port"),
            format!("Invalid value: {n}: must be between 1 and 65535, inclusive"),
        ),
        None => c.add(
            "FieldValueRequired",
            port_field(i, "port"),
            "Required value",
        ),
    }
    let name = p
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if ports_len > 1 && name.is_empty() {
        c.add(
            "FieldValueRequired",
            port_field(i, "name"),
            "Required value",
        );
    }
    if !name.is_empty() && !seen.names.insert(name.clone()) {
        c.add(
            "FieldValueDuplicate",
            port_field(i, "name"),
            format!("Duplicate value: \"{name}\""),
        );
    }
    if let Some(n) = port
        && !seen.ports.insert((n, protocol.clone()))
    {
        c.add(
            "FieldValueDuplicate",
            format!("spec.ports[{i}]"),
            format!("Duplicate value: {{\"port\": {n}, \"protocol\": \"{protocol}\"}}"),
        );
    }
    if p.get("targetPort").is_none()
        && let Some(n) = port
    {
        p["targetPort"] = json!(n);
    }
    PortKey {
        port,
        protocol,
        name,
    }
}

/// The node port assignment of one Service's ports, across its ports.
struct NodePorts<'a> {
    old_ports: &'a [Value],
    /// Node ports the new ports ask for by value.
    requested: HashSet<i64>,
    /// Node ports given out to earlier ports of this Service: a TCP and a UDP port with the
    /// same number may share one (the DNS case). With each: the port number and protocol it
    /// was given to.
    own: Vec<(i64, Option<i64>, String)>,
}

impl NodePorts<'_> {
    /// Checks the node port port `i` asks for, or gives it one.
    fn assign(
        &mut self,
        p: &mut Value,
        i: usize,
        key: &PortKey,
        taken: &mut Taken,
        c: &mut Causes,
    ) {
        match p.get("nodePort").and_then(Value::as_i64) {
            Some(n) => self.check_requested(n, i, key, taken, c),
            None => match self.default_for(key, taken) {
                Some(n) => {
                    p["nodePort"] = json!(n);
                    self.own.push((n, key.port, key.protocol.clone()));
                }
                None => c.add(
                    "FieldValueInvalid",
                    port_field(i, "nodePort"),
                    "range of valid ports is full",
                ),
            },
        }
    }

    fn check_requested(
        &mut self,
        n: i64,
        i: usize,
        key: &PortKey,
        taken: &mut Taken,
        c: &mut Causes,
    ) {
        let own = self
            .old_ports
            .iter()
            .any(|o| o.get("nodePort").and_then(Value::as_i64) == Some(n));
        if !(NODE_PORT_MIN..=NODE_PORT_MAX).contains(&n) {
            c.add("FieldValueInvalid", port_field(i, "nodePort"), format!("Invalid value: {n}: provided port is not in the valid range. The range of valid ports is {NODE_PORT_MIN}-{NODE_PORT_MAX}"));
        } else if !own
            && taken.node_ports.contains(&n)
            // kube-apiserver refuses a node port twice for one protocol;
            // a TCP and a UDP port may share one whatever their numbers.
            && !self
                .own
                .iter()
                .any(|(m, _, proto)| *m == n && *proto != key.protocol)
        {
            c.add(
                "FieldValueInvalid",
                port_field(i, "nodePort"),
                format!("Invalid value: {n}: provided port is already allocated"),
            );
        } else {
            taken.node_ports.insert(n);
            self.own.push((n, key.port, key.protocol.clone()));
        }
    }

    /// The node port of a port that asks for none: `None` when the range is full.
    fn default_for(&self, key: &PortKey, taken: &mut Taken) -> Option<i64> {
        // Keep the node port the port of the same name had, unless another port now asks
        // for it, as kube-apiserver does on update (its `patchAllocatedValues` maps old node
        // ports by port name).
        let kept = self
            .old_ports
            .iter()
            .find(|o| o.get("name").and_then(Value::as_str).unwrap_or_default() == key.name)
            .and_then(|o| o.get("nodePort").and_then(Value::as_i64))
            .filter(|n| !self.requested.contains(n));
        let twin = self
            .own
            .iter()
            .find(|(_, q, proto)| *q == key.port && *proto != key.protocol)
            .map(|(n, _, _)| *n);
        kept.or(twin).or_else(|| taken.allocate_node_port())
    }
}

/// Health check node port: LoadBalancer with policy Local only.
fn prepare_health_check_node_port(
    spec: &mut Value,
    ty: &str,
    old_health: Option<i64>,
    taken: &mut Taken,
    c: &mut Causes,
) {
    let local = ty == "LoadBalancer"
        && spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local");
    match (
        local,
        spec.get("healthCheckNodePort").and_then(Value::as_i64),
    ) {
        (true, Some(n)) => {
            let own = old_health == Some(n);
            let a_port = spec
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|p| p.get("nodePort").and_then(Value::as_i64) == Some(n));
            if (!own && taken.node_ports.contains(&n)) || a_port {
                c.add(
                    "FieldValueInvalid",
                    "spec.healthCheckNodePort",
                    format!("Invalid value: {n}: provided port is already allocated"),
                );
            }
        }
        (true, None) => match old_health.or_else(|| taken.allocate_node_port()) {
            Some(n) => spec["healthCheckNodePort"] = json!(n),
            None => c.add(
                "FieldValueInvalid",
                "spec.healthCheckNodePort",
                "range of valid ports is full",
            ),
        },
        (false, Some(_)) => {
            if let Some(m) = spec.as_object_mut() {
                m.remove("healthCheckNodePort");
            }
        }
        (false, None) => {}
    }
}

/// Cluster IPs and IP families (allocated once, the primary family immutable), or the
/// external name of an ExternalName Service.
fn prepare_addresses(
    spec: &mut Value,
    old_spec: &Value,
    ty: &str,
    taken: &mut Taken,
    c: &mut Causes,
) {
    if ty == "ExternalName" {
        if spec
            .get("externalName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            c.add("FieldValueRequired", "spec.externalName", "Required value");
        }
    } else {
        let had_ips = old_spec.get("clusterIP").is_some().then_some(old_spec);
        for (reason, field, message) in cluster_ips::assign(spec, had_ips, &mut taken.cluster_ips) {
            c.add(reason, field, message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cluster_ips::in_service_cidr;

    fn empty() -> Taken {
        Taken::from_services(std::iter::empty(), None)
    }

    #[test]
    fn defaults_and_allocations_of_a_load_balancer() {
        let mut svc = json!({"metadata": {"name": "web"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
        prepare(&mut svc, None, &mut empty()).expect("valid");
        let spec = &svc["spec"];
        assert_eq!(spec["sessionAffinity"], "None");
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        assert_eq!(spec["internalTrafficPolicy"], "Cluster");
        assert_eq!(spec["externalTrafficPolicy"], "Cluster");
        assert_eq!(spec["ports"][0]["protocol"], "TCP");
        assert_eq!(spec["ports"][0]["targetPort"], 80);
        assert_eq!(spec["ports"][0]["nodePort"], 30000);
        assert!(spec["clusterIP"].as_str().is_some_and(in_service_cidr));
        assert_eq!(svc["status"], json!({"loadBalancer": {}}));
    }

    #[test]
    fn an_update_without_node_ports_keeps_them_by_port_name() {
        let mut old = json!({"metadata": {"name": "a", "uid": "1"}, "spec": {"type": "NodePort",
            "ports": [{"name": "web", "port": 80}, {"name": "tls", "port": 443}]}});
        prepare(&mut old, None, &mut empty()).expect("create");
        let np = |s: &Value, i: usize| s["spec"]["ports"][i]["nodePort"].clone();
        // Renumbered: the same name keeps its node port.
        let mut renumbered = json!({"metadata": {"name": "a", "uid": "1"}, "spec": {"type": "NodePort",
            "ports": [{"name": "web", "port": 8080}, {"name": "tls", "port": 443}]}});
        let mut taken = Taken::from_services([&old].into_iter(), Some("1"));
        prepare(&mut renumbered, Some(&old), &mut taken).expect("renumber");
        assert_eq!(np(&renumbered, 0), np(&old, 0));
        // Renamed: a new node port, as kube-apiserver does.
        let mut renamed = json!({"metadata": {"name": "a", "uid": "1"}, "spec": {"type": "NodePort",
            "ports": [{"name": "http", "port": 80}, {"name": "tls", "port": 443}]}});
        let mut taken = Taken::from_services([&old].into_iter(), Some("1"));
        prepare(&mut renamed, Some(&old), &mut taken).expect("rename");
        assert_ne!(np(&renamed, 0), np(&old, 0));
        assert_eq!(np(&renamed, 1), np(&old, 1));
    }

    #[test]
    fn a_port_added_to_a_local_service_never_gets_its_health_check_node_port() {
        let mut old = json!({"metadata": {"name": "a", "uid": "1"}, "spec": {"type": "LoadBalancer",
            "externalTrafficPolicy": "Local", "ports": [{"name": "web", "port": 80}]}});
        prepare(&mut old, None, &mut empty()).expect("create");
        let health = old["spec"]["healthCheckNodePort"].clone();
        let mut added = json!({"metadata": {"name": "a", "uid": "1"}, "spec": {"type": "LoadBalancer",
            "externalTrafficPolicy": "Local", "healthCheckNodePort": health,
            "ports": [{"name": "web", "port": 80}, {"name": "dns", "port": 53}]}});
        let mut taken = Taken::from_services([&old].into_iter(), Some("1"));
        prepare(&mut added, Some(&old), &mut taken).expect("add a port");
        assert_eq!(added["spec"]["healthCheckNodePort"], health);
        assert_ne!(added["spec"]["ports"][1]["nodePort"], health);
        assert_ne!(
            added["spec"]["ports"][1]["nodePort"],
            added["spec"]["ports"][0]["nodePort"]
        );
        // Asking for one of its own node ports as the health check's is refused.
        let mut clash = added.clone();
        clash["spec"]["healthCheckNodePort"] = added["spec"]["ports"][0]["nodePort"].clone();
        let mut taken = Taken::from_services([&added].into_iter(), Some("1"));
        assert!(prepare(&mut clash, Some(&added), &mut taken).is_err());
    }

    #[test]
    fn node_ports_are_unique_and_kept_on_update() {
        let mut a = json!({"metadata": {"name": "a", "uid": "1"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        prepare(&mut a, None, &mut empty()).expect("a");
        let mut b = json!({"metadata": {"name": "b", "uid": "2"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let mut taken = Taken::from_services([&a].into_iter(), Some("2"));
        prepare(&mut b, None, &mut taken).expect("b");
        assert_ne!(
            a["spec"]["ports"][0]["nodePort"],
            b["spec"]["ports"][0]["nodePort"]
        );
        // An update that omits the node port keeps it; one that takes another's is refused.
        let mut update = json!({"metadata": {"name": "b", "uid": "2"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let mut taken = Taken::from_services([&a].into_iter(), Some("2"));
        prepare(&mut update, Some(&b), &mut taken).expect("update");
        assert_eq!(
            update["spec"]["ports"][0]["nodePort"],
            b["spec"]["ports"][0]["nodePort"]
        );
        update["spec"]["ports"][0]["nodePort"] = a["spec"]["ports"][0]["nodePort"].clone();
        let mut taken = Taken::from_services([&a].into_iter(), Some("2"));
        let err = prepare(&mut update.clone(), Some(&b), &mut taken).expect_err("taken");
        assert!(err.to_string().contains("already allocated"), "{err}");
    }

    #[test]
    fn health_check_node_port_follows_the_traffic_policy() {
        let mut svc = json!({"metadata": {"name": "l"}, "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}});
        prepare(&mut svc, None, &mut empty()).expect("local");
        let hc = svc["spec"]["healthCheckNodePort"]
            .as_i64()
            .expect("allocated");
        assert!((NODE_PORT_MIN..=NODE_PORT_MAX).contains(&hc));
        let mut cluster = svc.clone();
        cluster["spec"]["externalTrafficPolicy"] = json!("Cluster");
        prepare(&mut cluster, Some(&svc), &mut empty()).expect("cluster");
        assert!(cluster["spec"].get("healthCheckNodePort").is_none());
    }

    #[test]
    fn changing_to_cluster_ip_drops_node_ports_and_policy() {
        let mut svc = json!({"metadata": {"name": "x"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
        prepare(&mut svc, None, &mut empty()).expect("lb");
        let mut changed = svc.clone();
        changed["spec"]["type"] = json!("ClusterIP");
        prepare(&mut changed, Some(&svc), &mut empty()).expect("to ClusterIP");
        assert!(changed["spec"]["ports"][0].get("nodePort").is_none());
        assert!(changed["spec"].get("externalTrafficPolicy").is_none());
        assert_eq!(changed["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
    }

    #[test]
    fn validation_errors_name_the_fields() {
        let mut svc = json!({"metadata": {"name": "bad"}, "spec": {"type": "Weird", "ports": [{"port": 0}, {"port": 70000, "protocol": "ICMP"}]}});
        let err = prepare(&mut svc, None, &mut empty()).expect_err("invalid");
        let ApiError::Invalid { causes, .. } = &err else {
            panic!("not Invalid: {err:?}")
        };
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        for f in [
            "spec.type",
            "spec.ports[0].port",
            "spec.ports[1].port",
            "spec.ports[1].protocol",
            "spec.ports[0].name",
        ] {
            assert!(fields.contains(&f), "{f} in {fields:?}");
        }
    }

    #[test]
    fn tcp_and_udp_twins_share_a_node_port() {
        let mut svc = json!({"metadata": {"name": "dns"}, "spec": {"type": "LoadBalancer", "ports": [
            {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
            {"name": "dns-udp", "port": 53, "protocol": "UDP"},
        ]}});
        prepare(&mut svc, None, &mut empty()).expect("dns");
        assert_eq!(
            svc["spec"]["ports"][0]["nodePort"],
            svc["spec"]["ports"][1]["nodePort"]
        );
        // Asked for explicitly, a TCP and a UDP port share one whatever their numbers; two
        // TCP ports never do.
        let mut apart = json!({"metadata": {"name": "dns2"}, "spec": {"type": "LoadBalancer", "ports": [
            {"name": "dns-tcp", "port": 53, "protocol": "TCP", "nodePort": 31053},
            {"name": "alt-udp", "port": 5353, "protocol": "UDP", "nodePort": 31053},
        ]}});
        prepare(&mut apart, None, &mut empty()).expect("TCP and UDP on one node port");
        let mut twice = json!({"metadata": {"name": "dns3"}, "spec": {"type": "LoadBalancer", "ports": [
            {"name": "a", "port": 53, "protocol": "TCP", "nodePort": 31054},
            {"name": "b", "port": 54, "protocol": "TCP", "nodePort": 31054},
        ]}});
        assert!(prepare(&mut twice, None, &mut empty()).is_err());
    }

    /// The causes of a refused `prepare`, as `(reason, field, message)`.
    fn causes(r: Result<(), ApiError>) -> Vec<(&'static str, String, String)> {
        match r {
            Err(ApiError::Invalid { causes, .. }) => causes
                .into_iter()
                .map(|c| (c.reason, c.field, c.message))
                .collect(),
            other => panic!("not Invalid: {other:?}"),
        }
    }

    fn load_balancer(class: Option<&str>) -> Value {
        let mut svc = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
        if let Some(c) = class {
            svc["spec"]["loadBalancerClass"] = json!(c);
        }
        prepare(&mut svc, None, &mut empty()).expect("create");
        svc
    }

    #[test]
    fn load_balancer_class_may_not_change_between_load_balancers() {
        let invalid = |v: &str| {
            vec![(
                "FieldValueInvalid",
                "spec.loadBalancerClass".to_string(),
                format!("Invalid value: {v}: may not change once set"),
            )]
        };
        // Added.
        let old = load_balancer(None);
        let mut new = old.clone();
        new["spec"]["loadBalancerClass"] = json!("example.com/lb");
        assert_eq!(
            causes(prepare(&mut new, Some(&old), &mut empty())),
            invalid("\"example.com/lb\"")
        );
        // Removed (left out, or null).
        let old = load_balancer(Some("example.com/lb"));
        for gone in [None, Some(Value::Null)] {
            let mut new = old.clone();
            match gone {
                Some(v) => new["spec"]["loadBalancerClass"] = v,
                None => {
                    new["spec"]
                        .as_object_mut()
                        .map(|m| m.remove("loadBalancerClass"));
                }
            }
            assert_eq!(
                causes(prepare(&mut new, Some(&old), &mut empty())),
                invalid("\"null\"")
            );
        }
        // Changed.
        let mut new = old.clone();
        new["spec"]["loadBalancerClass"] = json!("other.example/lb");
        assert_eq!(
            causes(prepare(&mut new, Some(&old), &mut empty())),
            invalid("\"other.example/lb\"")
        );
        // Unchanged is fine.
        let mut same = old.clone();
        prepare(&mut same, Some(&old), &mut empty()).expect("unchanged");
    }

    #[test]
    fn load_balancer_class_is_set_with_the_type_and_only_on_load_balancers() {
        let mut cip = json!({"metadata": {"name": "lb"}, "spec": {"ports": [{"port": 80}]}});
        prepare(&mut cip, None, &mut empty()).expect("ClusterIP");
        let mut to_lb = cip.clone();
        to_lb["spec"]["type"] = json!("LoadBalancer");
        to_lb["spec"]["loadBalancerClass"] = json!("example.com/lb");
        prepare(&mut to_lb, Some(&cip), &mut empty()).expect("set with the type change");
        assert_eq!(to_lb["spec"]["loadBalancerClass"], "example.com/lb");

        let forbidden = vec![(
            "FieldValueForbidden",
            "spec.loadBalancerClass".to_string(),
            "Forbidden: may only be used when `type` is 'LoadBalancer'".to_string(),
        )];
        let mut created = json!({"metadata": {"name": "x"}, "spec": {"type": "NodePort", "loadBalancerClass": "example.com/lb", "ports": [{"port": 80}]}});
        assert_eq!(causes(prepare(&mut created, None, &mut empty())), forbidden);
        let mut updated = cip.clone();
        updated["spec"]["loadBalancerClass"] = json!("example.com/lb");
        assert_eq!(
            causes(prepare(&mut updated, Some(&cip), &mut empty())),
            forbidden
        );
        // A LoadBalancer turning ClusterIP drops the class it kept as it was.
        let lb = load_balancer(Some("example.com/lb"));
        let mut back = lb.clone();
        back["spec"]["type"] = json!("ClusterIP");
        prepare(&mut back, Some(&lb), &mut empty()).expect("to ClusterIP");
        assert!(back["spec"].get("loadBalancerClass").is_none());
    }

    #[test]
    fn cluster_ip_is_immutable() {
        let mut svc = json!({"metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}]}});
        prepare(&mut svc, None, &mut empty()).expect("create");
        let mut changed = svc.clone();
        changed["spec"]["clusterIP"] = json!("10.43.99.99");
        assert!(prepare(&mut changed, Some(&svc), &mut empty()).is_err());
    }
}
