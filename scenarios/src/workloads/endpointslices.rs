//! The EndpointSlice controller (Kubernetes' `pkg/controller/endpointslice`,
//! https://kubernetes.io/docs/concepts/services-networking/endpoint-slices/): for every
//! Service with a selector, `discovery.k8s.io/v1` EndpointSlices labelled
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`, owned by the
//! Service, with one endpoint per Pod that matches the selector and has an address
//! (`addresses`, `nodeName`, `targetRef`, `conditions.ready`/`serving`/`terminating`) and the
//! Service's ports resolved against each Pod (a named `targetPort` is looked up among its
//! containers' ports). Pods that resolve the ports differently go to different slices; a
//! Service without such Pods keeps one empty slice, as Kubernetes' placeholder.
//!
//! Slices without the `managed-by` label (written by hand or by a test) are left alone, as
//! the real controller leaves them; kube-proxy (`src/testbed/proxy.rs`) reads them all. Left out:
//! the 100-endpoint limit per slice, topology hints and zones, IPv6 and dual-stack, the
//! legacy `v1` Endpoints object, `publishNotReadyAddresses`.

use super::{
    Action, Kind, Snapshot, canonical, deleting, name, namespace, pod_active, pod_ready, text, uid,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// The `managed-by` value of Kubernetes' own controller, which this one stands in for.
pub const CONTROLLER: &str = "endpointslice-controller.k8s.io";

/// Whether a slice is this controller's.
pub fn managed(slice: &Value) -> bool {
    slice
        .pointer("/metadata/labels")
        .and_then(|l| l.get(MANAGED_BY))
        .and_then(Value::as_str)
        == Some(CONTROLLER)
}

fn service_of(slice: &Value) -> &str {
    slice
        .pointer("/metadata/labels")
        .and_then(|l| l.get(SERVICE_NAME))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The selector of a Service that gets slices (`None`: none, or an ExternalName Service).
fn selector(svc: &Value) -> Option<&serde_json::Map<String, Value>> {
    if text(svc, "/spec/type") == "ExternalName" || deleting(svc) {
        return None;
    }
    svc.pointer("/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
}

/// Every write the Services of `snap` need.
pub fn sync(snap: &Snapshot) -> Vec<Action> {
    let mut out = Vec::new();
    for svc in &snap.services {
        let Some(sel) = selector(svc) else { continue };
        let existing: Vec<&Value> = snap
            .slices
            .iter()
            .filter(|s| managed(s) && namespace(s) == namespace(svc) && service_of(s) == name(svc))
            .collect();
        out.extend(reconcile(svc, &desired(svc, sel, &snap.pods), &existing));
    }
    // Slices of Services that no longer select Pods (those of a deleted Service are the
    // garbage collector's: they are owned by it).
    for slice in snap.slices.iter().filter(|s| managed(s)) {
        let unserved = snap.services.iter().any(|svc| {
            namespace(svc) == namespace(slice)
                && name(svc) == service_of(slice)
                && selector(svc).is_none()
        });
        if unserved {
            out.push(delete(slice));
        }
    }
    out
}

fn delete(slice: &Value) -> Action {
    Action::Delete {
        kind: Kind::EndpointSlice,
        namespace: namespace(slice).into(),
        name: name(slice).into(),
        uid: uid(slice).into(),
        foreground: false,
    }
}

/// The Service's ports as `pod` serves them: (name, port, protocol), ports it cannot
/// resolve left out.
fn ports_for(svc: &Value, pod: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for p in svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let protocol = match text(p, "/protocol") {
            "" => "TCP",
            other => other,
        };
        let port = match p.get("targetPort") {
            Some(Value::String(named)) => pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|c| {
                    c.get("ports")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                })
                .find(|cp| {
                    let cp_protocol = match text(cp, "/protocol") {
                        "" => "TCP",
                        other => other,
                    };
                    text(cp, "/name") == named && cp_protocol == protocol
                })
                .and_then(|cp| cp.get("containerPort").and_then(Value::as_i64)),
            Some(Value::Number(n)) => n.as_i64(),
            _ => p.get("port").and_then(Value::as_i64),
        };
        if let Some(port) = port {
            out.push(json!({"name": text(p, "/name"), "port": port, "protocol": protocol}));
        }
    }
    out
}

/// The slices the Service should have: ports → endpoints (sorted by Pod name).
fn desired(
    svc: &Value,
    sel: &serde_json::Map<String, Value>,
    pods: &[Value],
) -> BTreeMap<String, (Value, Vec<Value>)> {
    let mut groups: BTreeMap<String, (Value, Vec<Value>)> = BTreeMap::new();
    let mut chosen: Vec<&Value> = pods
        .iter()
        .filter(|p| namespace(p) == namespace(svc) && pod_active(p))
        .filter(|p| !text(p, "/status/podIP").is_empty())
        .filter(|p| {
            let labels = p.pointer("/metadata/labels");
            sel.iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        })
        .collect();
    chosen.sort_by_key(|p| name(p));
    for pod in chosen {
        let ports = Value::Array(ports_for(svc, pod));
        let ready = pod_ready(pod);
        let mut endpoint = json!({
            "addresses": [text(pod, "/status/podIP")],
            "conditions": {"ready": ready, "serving": ready, "terminating": false},
            "targetRef": {"kind": "Pod", "namespace": namespace(pod), "name": name(pod), "uid": uid(pod)},
        });
        let node = text(pod, "/spec/nodeName");
        if !node.is_empty() {
            endpoint["nodeName"] = json!(node);
        }
        groups
            .entry(canonical(&ports).to_string())
            .or_insert_with(|| (ports, Vec::new()))
            .1
            .push(endpoint);
    }
    if groups.is_empty() {
        // The placeholder: no ports, no endpoints.
        groups.insert(String::new(), (Value::Null, Vec::new()));
    }
    groups
}

fn body(ports: &Value, endpoints: &[Value]) -> Value {
    let mut b = json!({"addressType": "IPv4", "endpoints": endpoints});
    if !ports.is_null() {
        b["ports"] = ports.clone();
    }
    b
}

/// Matches existing slices to the wanted ones by their ports, patches what differs,
/// creates what is missing and deletes what is left over.
fn reconcile(
    svc: &Value,
    want: &BTreeMap<String, (Value, Vec<Value>)>,
    existing: &[&Value],
) -> Vec<Action> {
    let key = |s: &Value| match s.get("ports").filter(|p| !p.is_null()) {
        Some(p) => canonical(p).to_string(),
        None => String::new(),
    };
    let mut unused: Vec<&Value> = existing.to_vec();
    let mut unmatched = Vec::new();
    let mut out = Vec::new();
    for (k, (ports, endpoints)) in want {
        match unused.iter().position(|s| key(s) == *k) {
            Some(i) => {
                let slice = unused.remove(i);
                out.extend(update(slice, ports, endpoints));
            }
            None => unmatched.push((ports, endpoints)),
        }
    }
    for (ports, endpoints) in unmatched {
        if unused.is_empty() {
            let mut object = body(ports, endpoints);
            object["apiVersion"] = json!("discovery.k8s.io/v1");
            object["kind"] = json!("EndpointSlice");
            object["metadata"] = json!({
                "generateName": format!("{}-", name(svc)),
                "namespace": namespace(svc),
                "labels": {SERVICE_NAME: name(svc), MANAGED_BY: CONTROLLER},
                "ownerReferences": [super::owner_reference("v1", "Service", svc)],
            });
            out.push(Action::Create {
                kind: Kind::EndpointSlice,
                namespace: namespace(svc).into(),
                object,
            });
        } else {
            let slice = unused.remove(0);
            out.extend(update(slice, ports, endpoints));
        }
    }
    out.extend(unused.into_iter().map(delete));
    out
}

fn update(slice: &Value, ports: &Value, endpoints: &[Value]) -> Option<Action> {
    let have_ports = slice
        .get("ports")
        .filter(|p| !p.is_null())
        .cloned()
        .unwrap_or(Value::Null);
    let have_endpoints = slice.get("endpoints").cloned().unwrap_or(json!([]));
    let want_endpoints = json!(endpoints);
    if canonical(&have_ports) == canonical(ports)
        && canonical(&have_endpoints) == canonical(&want_endpoints)
    {
        return None;
    }
    // A merge patch replaces both lists whole (a null `ports` removes them).
    Some(Action::Patch {
        kind: Kind::EndpointSlice,
        namespace: namespace(slice).into(),
        name: name(slice).into(),
        status: false,
        patch: json!({"ports": ports, "endpoints": endpoints}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(target: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "uid": "s1"},
               "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
                        "ports": [{"name": "http", "port": 80, "targetPort": target, "protocol": "TCP"}]}})
    }

    fn pod(name: &str, ip: &str, node: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                            "labels": {"app": "web"}},
               "spec": {"nodeName": node, "containers": [{"name": "c", "ports": [{"name": "web", "containerPort": 8080}]}]},
               "status": {"phase": "Running", "podIP": ip,
                          "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn created(actions: &[Action]) -> Vec<Value> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Create { object, .. } => Some(object.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ready_and_unready_pods_become_endpoints_with_resolved_ports() {
        let snap = Snapshot {
            services: vec![svc(json!("web"))],
            pods: vec![
                pod("b", "10.244.1.2", "n2", false),
                pod("a", "10.244.0.2", "n1", true),
            ],
            ..Snapshot::default()
        };
        let slices = created(&sync(&snap));
        assert_eq!(slices.len(), 1);
        let s = &slices[0];
        assert_eq!(s["metadata"]["labels"][SERVICE_NAME], "web");
        assert_eq!(s["metadata"]["labels"][MANAGED_BY], CONTROLLER);
        assert_eq!(
            s["ports"],
            json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
        );
        assert_eq!(s["endpoints"][0]["addresses"], json!(["10.244.0.2"]));
        assert_eq!(s["endpoints"][0]["nodeName"], "n1");
        assert_eq!(s["endpoints"][0]["conditions"]["ready"], true);
        assert_eq!(s["endpoints"][1]["conditions"]["ready"], false);
    }

    #[test]
    fn a_service_without_pods_keeps_a_placeholder_and_hand_written_slices_stay() {
        let hand = json!({"metadata": {"name": "web-hand", "namespace": "default", "uid": "h",
                                       "labels": {SERVICE_NAME: "web"}}, "endpoints": []});
        let snap = Snapshot {
            services: vec![svc(json!(80))],
            slices: vec![hand],
            ..Snapshot::default()
        };
        let slices = created(&sync(&snap));
        assert_eq!(slices.len(), 1);
        assert_eq!(slices[0]["endpoints"], json!([]));
        assert!(slices[0].get("ports").is_none());
    }

    #[test]
    fn slices_follow_pods_and_go_when_their_service_stops_selecting() {
        let mut slice = json!({"metadata": {"name": "web-x", "namespace": "default", "uid": "x",
                                            "labels": {SERVICE_NAME: "web", MANAGED_BY: CONTROLLER}},
                               "addressType": "IPv4", "endpoints": []});
        let snap = Snapshot {
            services: vec![svc(json!(8080))],
            pods: vec![pod("a", "10.244.0.2", "n1", true)],
            slices: vec![slice.clone()],
            ..Snapshot::default()
        };
        let actions = sync(&snap);
        let [Action::Patch { patch, .. }] = actions.as_slice() else {
            panic!("one patch: {actions:?}");
        };
        assert_eq!(patch["endpoints"][0]["targetRef"]["name"], "a");
        slice["ports"] = patch["ports"].clone();
        slice["endpoints"] = patch["endpoints"].clone();
        let snap = Snapshot {
            slices: vec![slice.clone()],
            ..snap
        };
        assert!(sync(&snap).is_empty(), "in step: nothing to write");
        let mut unselecting = svc(json!(8080));
        unselecting["spec"]["selector"] = json!({});
        let snap = Snapshot {
            services: vec![unselecting],
            slices: vec![slice.clone()],
            ..Snapshot::default()
        };
        assert!(matches!(sync(&snap).as_slice(), [Action::Delete { name, .. }] if name == "web-x"));
        // A deleted Service's slices are left to the garbage collector.
        let snap = Snapshot {
            slices: vec![slice],
            ..Snapshot::default()
        };
        assert!(sync(&snap).is_empty());
    }
}
