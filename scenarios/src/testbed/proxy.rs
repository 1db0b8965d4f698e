//! A simulated kube-proxy view: what each Node's InternalIP answers on the node ports
//! Kubernetes allocated, declared to fakecloud (`/_fake/backends`) so its load-balancer
//! health checks and data-plane oracle see what real ones would.
//!
//! - Every port of a `NodePort` or `LoadBalancer` Service answers on its `nodePort`: TCP
//!   (HTTP 200) for a TCP port, UDP for a UDP port, both when a TCP and a UDP port share the
//!   node port. With `externalTrafficPolicy: Local` only nodes with a ready endpoint of the
//!   Service answer; kube-proxy drops the traffic elsewhere. With `Cluster` every node
//!   answers while the Service has a ready endpoint anywhere; a Service with a selector
//!   whose controller-managed EndpointSlices have none answers nowhere. Without such slices
//!   (no selector, or no EndpointSlice controller, as in the simulation) its backends are
//!   assumed healthy and every node answers.
//! - The health-check node port of a `Local` `LoadBalancer` Service answers 200 on nodes
//!   with a ready endpoint and 503 elsewhere.
//! - A port declared once and no longer allocated is declared closed: fakecloud's default
//!   for an undeclared port is to answer, which a released node port must not.

use fakecloud::dataplane::{BackendDecl, Behaviour};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::Duration;
use tokio::task::JoinHandle;

/// What kube-proxy would answer: (node address, health-check node port) → HTTP status.
pub type HealthView = BTreeMap<(IpAddr, u16), u16>;

/// How each (node address, port) kube-proxy serves answers; both node ports and
/// health-check node ports.
pub type ProxyView = BTreeMap<(IpAddr, u16), Behaviour>;

/// Nothing answers: what a port kube-proxy does not serve (or drops) looks like.
pub const CLOSED: Behaviour = Behaviour {
    tcp: false,
    udp: false,
    http_status: 0,
};

/// The EndpointSlices of `svc` (by their `kubernetes.io/service-name` label).
fn slices_of<'a>(
    svc: &Service,
    slices: &'a [EndpointSlice],
) -> impl Iterator<Item = &'a EndpointSlice> {
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    slices.iter().filter(move |s| {
        s.metadata.namespace.as_deref() == Some(ns.as_str())
            && s.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("kubernetes.io/service-name"))
                .map(String::as_str)
                == Some(name.as_str())
    })
}

/// The ready endpoints of `svc` (an endpoint without a `ready` condition counts as ready,
/// as kube-proxy reads it).
fn ready_endpoints<'a>(
    svc: &Service,
    slices: &'a [EndpointSlice],
) -> impl Iterator<Item = &'a k8s_openapi::api::discovery::v1::Endpoint> {
    slices_of(svc, slices)
        .flat_map(|s| s.endpoints.iter().flatten())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
}

/// The names of the nodes with a ready endpoint of `svc`.
fn ready_nodes<'a>(svc: &Service, slices: &'a [EndpointSlice]) -> BTreeSet<&'a str> {
    ready_endpoints(svc, slices)
        .filter_map(|e| e.node_name.as_deref())
        .collect()
}

/// Whether a `Cluster` Service is known to have no backend: it selects Pods, the
/// EndpointSlice controller publishes slices for it (`managed-by`, as the testbed's
/// controllers in `src/workloads/` and a real cluster's do), and no endpoint of any of its
/// slices is ready. kube-proxy then rejects its traffic on every node. Without such slices
/// (a Service without a selector, or the simulation, which runs no Pods) nothing is known
/// and its backends are assumed healthy.
fn known_without_backends(svc: &Service, slices: &[EndpointSlice]) -> bool {
    let selects = svc
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_some_and(|s| !s.is_empty());
    let managed = slices_of(svc, slices).any(|s| {
        s.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("endpointslice.kubernetes.io/managed-by"))
    });
    selects && managed && ready_endpoints(svc, slices).next().is_none()
}

/// Each Node's name with its InternalIP addresses.
fn node_addresses(nodes: &[Node]) -> impl Iterator<Item = (&str, Vec<IpAddr>)> {
    nodes.iter().map(|node| {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let addresses = node
            .status
            .as_ref()
            .and_then(|s| s.addresses.as_ref())
            .into_iter()
            .flatten()
            .filter(|a| a.type_ == "InternalIP")
            .filter_map(|a| a.address.parse::<IpAddr>().ok())
            .collect();
        (name, addresses)
    })
}

fn is_local(svc: &Service) -> bool {
    svc.spec
        .as_ref()
        .is_some_and(|s| s.external_traffic_policy.as_deref() == Some("Local"))
}

/// Computes the health-check part from Services, EndpointSlices and Nodes (pure).
pub fn health_view(services: &[Service], slices: &[EndpointSlice], nodes: &[Node]) -> HealthView {
    let mut view = HealthView::new();
    for svc in services {
        let Some(spec) = &svc.spec else { continue };
        let local = spec.type_.as_deref() == Some("LoadBalancer") && is_local(svc);
        let Some(port) = spec.health_check_node_port.filter(|_| local) else {
            continue;
        };
        let Ok(port) = u16::try_from(port) else {
            continue;
        };
        let ready = ready_nodes(svc, slices);
        for (node, addresses) in node_addresses(nodes) {
            let status = if ready.contains(node) { 200 } else { 503 };
            for addr in addresses {
                view.insert((addr, port), status);
            }
        }
    }
    view
}

/// Computes the node-port part from Services, EndpointSlices and Nodes (pure): every node
/// address gets an entry for every allocated node port, open or closed.
pub fn node_port_view(services: &[Service], slices: &[EndpointSlice], nodes: &[Node]) -> ProxyView {
    let mut view = ProxyView::new();
    for svc in services {
        let Some(spec) = &svc.spec else { continue };
        if !matches!(spec.type_.as_deref(), Some("NodePort" | "LoadBalancer")) {
            continue;
        }
        // (node port, answers TCP, answers UDP); SCTP ports are not modelled.
        let mut ports: BTreeMap<u16, (bool, bool)> = BTreeMap::new();
        for p in spec.ports.iter().flatten() {
            let Some(node_port) = p.node_port.and_then(|n| u16::try_from(n).ok()) else {
                continue;
            };
            let entry = ports.entry(node_port).or_default();
            match p.protocol.as_deref().unwrap_or("TCP") {
                "TCP" => entry.0 = true,
                "UDP" => entry.1 = true,
                _ => {}
            }
        }
        let ready = is_local(svc).then(|| ready_nodes(svc, slices));
        let down = !is_local(svc) && known_without_backends(svc, slices);
        for (node, addresses) in node_addresses(nodes) {
            let serves = !down && ready.as_ref().is_none_or(|r| r.contains(node));
            for (&port, &(tcp, udp)) in &ports {
                for &addr in &addresses {
                    let b = view.entry((addr, port)).or_insert(CLOSED);
                    // Another Service claiming the same node port cannot happen in
                    // Kubernetes; if it did, whatever one of them serves answers.
                    b.tcp |= serves && tcp;
                    b.udp |= serves && udp;
                    if b.tcp {
                        b.http_status = 200;
                    }
                }
            }
        }
    }
    view
}

/// The whole view: node ports, with the health-check node ports over them (pure).
pub fn proxy_view(services: &[Service], slices: &[EndpointSlice], nodes: &[Node]) -> ProxyView {
    let mut view = node_port_view(services, slices, nodes);
    for (key, status) in health_view(services, slices, nodes) {
        view.insert(
            key,
            Behaviour {
                http_status: status,
                ..Behaviour::default()
            },
        );
    }
    view
}

/// Declares the changes between `old` and `new` to fakecloud. A port in `old` but not in
/// `new` was released: it is declared closed, not reverted to fakecloud's default (which
/// answers).
pub fn declare(cloud: &fakecloud::App, old: &ProxyView, new: &ProxyView) {
    let _ = cloud.write(|st, now| {
        let changed = new
            .iter()
            .filter(|(key, b)| old.get(*key) != Some(*b))
            .map(|(key, b)| (*key, *b));
        let released = old
            .keys()
            .filter(|k| !new.contains_key(*k))
            .map(|key| (*key, CLOSED));
        for ((address, port), behaviour) in changed.chain(released) {
            st.backends_mut().push(BackendDecl {
                at: now,
                address,
                port: Some(port),
                behaviour: Some(behaviour),
            });
        }
        Ok(())
    });
}

/// Runs the view, refreshing every `interval`, until dropped.
pub struct KubeProxy {
    task: JoinHandle<()>,
}

impl Drop for KubeProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl KubeProxy {
    pub fn start(client: kube::Client, cloud: fakecloud::App, interval: Duration) -> KubeProxy {
        let task = tokio::spawn(async move {
            let services: Api<Service> = Api::all(client.clone());
            let slices: Api<EndpointSlice> = Api::all(client.clone());
            let nodes: Api<Node> = Api::all(client);
            let mut declared = ProxyView::new();
            loop {
                let lp = ListParams::default();
                let fetched =
                    tokio::try_join!(services.list(&lp), slices.list(&lp), nodes.list(&lp));
                match fetched {
                    Ok((s, e, n)) => {
                        let view = proxy_view(&s.items, &e.items, &n.items);
                        if view != declared {
                            declare(&cloud, &declared, &view);
                            declared = view;
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "kube-proxy view refresh failed"),
                }
                tokio::time::sleep(interval).await;
            }
        });
        KubeProxy { task }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn service(v: Value) -> Service {
        serde_json::from_value(v).expect("service")
    }

    fn node(name: &str, ip: &str) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]}}))
        .expect("node")
    }

    fn nodes() -> Vec<Node> {
        vec![
            node("n1", "10.0.0.1"),
            node("n2", "10.0.0.2"),
            node("n3", "10.0.0.3"),
        ]
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    /// A slice of `web` with a ready endpoint on n1 and a not-ready one on n2.
    fn web_slice() -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.42.0.5"], "nodeName": "n1", "conditions": {"ready": true}},
                {"addresses": ["10.42.1.5"], "nodeName": "n2", "conditions": {"ready": false}},
            ]
        }))
        .expect("slice")
    }

    const TCP_ONLY: Behaviour = Behaviour {
        tcp: true,
        udp: false,
        http_status: 200,
    };
    const UDP_ONLY: Behaviour = Behaviour {
        tcp: false,
        udp: true,
        http_status: 0,
    };
    const BOTH: Behaviour = Behaviour {
        tcp: true,
        udp: true,
        http_status: 200,
    };

    #[test]
    fn local_policy_gives_200_only_on_nodes_with_ready_endpoints() {
        let svc = service(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000,
                     "ports": [{"port": 80}]}
        }));
        let cluster = service(json!({
            "metadata": {"name": "other", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Cluster", "ports": [{"port": 80}]}
        }));
        let view = health_view(&[svc, cluster], &[web_slice()], &nodes());
        assert_eq!(view.get(&(ip("10.0.0.1"), 31000)), Some(&200));
        assert_eq!(view.get(&(ip("10.0.0.2"), 31000)), Some(&503));
        assert_eq!(view.get(&(ip("10.0.0.3"), 31000)), Some(&503));
        assert_eq!(
            view.len(),
            3,
            "the Cluster-policy Service has no health-check port"
        );
    }

    #[test]
    fn node_ports_answer_tcp_udp_or_both_by_protocol() {
        let svc = service(json!({
            "metadata": {"name": "dns", "namespace": "default"},
            "spec": {"type": "NodePort", "ports": [
                {"name": "http", "port": 80, "nodePort": 30080},
                {"name": "dns-udp", "port": 53, "protocol": "UDP", "nodePort": 30053},
                {"name": "both-tcp", "port": 54, "protocol": "TCP", "nodePort": 30054},
                {"name": "both-udp", "port": 54, "protocol": "UDP", "nodePort": 30054},
            ]}
        }));
        let view = proxy_view(&[svc], &[], &nodes());
        for n in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
            assert_eq!(view.get(&(ip(n), 30080)), Some(&TCP_ONLY), "{n} TCP port");
            assert_eq!(view.get(&(ip(n), 30053)), Some(&UDP_ONLY), "{n} UDP port");
            assert_eq!(view.get(&(ip(n), 30054)), Some(&BOTH), "{n} shared port");
        }
        assert_eq!(view.len(), 9, "nothing else: {view:?}");
    }

    #[test]
    fn cluster_policy_answers_on_every_node_and_cluster_ip_services_on_none() {
        let lb = service(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Cluster",
                     "ports": [{"port": 80, "nodePort": 30080}]}
        }));
        let internal = service(json!({
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"type": "ClusterIP", "ports": [{"port": 5432, "nodePort": 30432}]}
        }));
        let without_node_ports = service(json!({
            "metadata": {"name": "direct", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                     "ports": [{"port": 443}]}
        }));
        // No endpoints at all: a Cluster Service's backends are assumed healthy.
        let view = proxy_view(&[lb, internal, without_node_ports], &[], &nodes());
        let want: ProxyView = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
            .iter()
            .map(|n| ((ip(n), 30080), TCP_ONLY))
            .collect();
        assert_eq!(view, want);
    }

    #[test]
    fn a_cluster_service_whose_managed_slices_have_no_ready_endpoint_answers_nowhere() {
        let svc = service(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Cluster", "selector": {"app": "web"},
                     "ports": [{"port": 80, "nodePort": 30080}]}
        }));
        let slice = |ready: bool| -> EndpointSlice {
            serde_json::from_value(json!({
                "metadata": {"name": "web-x", "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "web",
                                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.244.0.5"], "nodeName": "n1", "conditions": {"ready": ready}}]
            }))
            .expect("slice")
        };
        let answering = |slices: &[EndpointSlice]| {
            proxy_view(std::slice::from_ref(&svc), slices, &nodes())
                .values()
                .filter(|b| b.tcp)
                .count()
        };
        // One ready endpoint anywhere: every node forwards to it.
        assert_eq!(answering(&[slice(true)]), 3);
        assert_eq!(answering(&[slice(false)]), 0, "no ready endpoint: nowhere");
        // No controller publishes slices for it: assumed healthy, as before.
        assert_eq!(answering(&[]), 3);
        let mut without_selector = svc.clone();
        if let Some(spec) = without_selector.spec.as_mut() {
            spec.selector = None;
        }
        let view = proxy_view(&[without_selector], &[slice(false)], &nodes());
        assert_eq!(view.values().filter(|b| b.tcp).count(), 3);
    }

    #[test]
    fn local_policy_node_ports_answer_only_on_nodes_with_ready_endpoints() {
        let svc = service(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000,
                     "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP", "nodePort": 30053}]}
        }));
        let view = proxy_view(std::slice::from_ref(&svc), &[web_slice()], &nodes());
        assert_eq!(view.get(&(ip("10.0.0.1"), 30080)), Some(&TCP_ONLY));
        assert_eq!(view.get(&(ip("10.0.0.1"), 30053)), Some(&UDP_ONLY));
        for n in ["10.0.0.2", "10.0.0.3"] {
            // n2's endpoint is not ready, n3 has none: kube-proxy drops the traffic.
            assert_eq!(view.get(&(ip(n), 30080)), Some(&CLOSED), "{n}");
            assert_eq!(view.get(&(ip(n), 30053)), Some(&CLOSED), "{n}");
        }
        // The health-check node port keeps its 200/503 over TCP.
        let hc = |n: &str| view.get(&(ip(n), 31000)).map(|b| (b.tcp, b.http_status));
        assert_eq!(hc("10.0.0.1"), Some((true, 200)));
        assert_eq!(hc("10.0.0.2"), Some((true, 503)));

        // Without any endpoint, no node answers the node ports.
        let view = proxy_view(&[svc], &[], &nodes());
        let open: Vec<_> = view
            .iter()
            .filter(|((_, port), b)| *port != 31000 && (b.tcp || b.udp))
            .collect();
        assert!(open.is_empty(), "{open:?}");
        assert_eq!(view.len(), 9, "every node and port declared: {view:?}");
    }

    #[test]
    fn a_released_node_port_is_declared_closed_not_default() {
        let cloud = fakecloud::App::new(fakecloud::Config::for_tests());
        let with_port = |node_port: u16| {
            service(json!({
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": node_port}]}
            }))
        };
        let behaviour = |port: u16| {
            let now = cloud.now();
            cloud
                .0
                .state
                .read()
                .dataplane()
                .behaviour(ip("10.0.0.1"), port, now)
        };
        assert_eq!(
            behaviour(30080),
            Behaviour::default(),
            "undeclared: answers"
        );

        let before = proxy_view(&[with_port(30080)], &[], &nodes());
        declare(&cloud, &ProxyView::new(), &before);
        assert_eq!(behaviour(30080), TCP_ONLY);

        // The Service moves to another node port: the old one is released.
        let after = proxy_view(&[with_port(30081)], &[], &nodes());
        assert!(!after.contains_key(&(ip("10.0.0.1"), 30080)));
        declare(&cloud, &before, &after);
        assert_eq!(behaviour(30080), CLOSED, "released: nothing answers");
        assert_eq!(behaviour(30081), TCP_ONLY);

        // And the Service deleted: its port closes too.
        declare(&cloud, &after, &ProxyView::new());
        assert_eq!(behaviour(30081), CLOSED);
    }
}
