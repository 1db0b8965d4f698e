//! A simulated kube-proxy health-check view: for every `LoadBalancer` Service with
//! `externalTrafficPolicy: Local`, kube-proxy answers the Service's health-check node port
//! with 200 on nodes that have a ready endpoint of it and 503 elsewhere. The testbed declares
//! exactly that to fakecloud (`/_fake/backends`), so its load-balancer health checks see
//! what real ones would.

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

/// Computes the view from Services, EndpointSlices and Nodes (pure).
pub fn health_view(services: &[Service], slices: &[EndpointSlice], nodes: &[Node]) -> HealthView {
    let mut view = HealthView::new();
    for svc in services {
        let Some(spec) = &svc.spec else { continue };
        let local = spec.type_.as_deref() == Some("LoadBalancer")
            && spec.external_traffic_policy.as_deref() == Some("Local");
        let Some(port) = spec.health_check_node_port.filter(|_| local) else {
            continue;
        };
        let Ok(port) = u16::try_from(port) else {
            continue;
        };
        let (ns, name) = (
            svc.metadata.namespace.as_deref().unwrap_or_default(),
            svc.metadata.name.as_deref().unwrap_or_default(),
        );
        let ready_nodes: BTreeSet<&str> = slices
            .iter()
            .filter(|s| {
                s.metadata.namespace.as_deref() == Some(ns)
                    && s.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("kubernetes.io/service-name"))
                        .map(String::as_str)
                        == Some(name)
            })
            .flat_map(|s| s.endpoints.iter().flatten())
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
            .filter_map(|e| e.node_name.as_deref())
            .collect();
        for node in nodes {
            let node_name = node.metadata.name.as_deref().unwrap_or_default();
            let addresses = node
                .status
                .as_ref()
                .and_then(|s| s.addresses.as_ref())
                .into_iter()
                .flatten()
                .filter(|a| a.type_ == "InternalIP")
                .filter_map(|a| a.address.parse::<IpAddr>().ok());
            let status = if ready_nodes.contains(node_name) {
                200
            } else {
                503
            };
            for addr in addresses {
                view.insert((addr, port), status);
            }
        }
    }
    view
}

/// Declares the changes between `old` and `new` to fakecloud.
pub fn declare(cloud: &fakecloud::App, old: &HealthView, new: &HealthView) {
    let _ = cloud.write(|st, now| {
        for (key @ (address, port), status) in new {
            if old.get(key) != Some(status) {
                st.dataplane.backends.push(BackendDecl {
                    at: now,
                    address: *address,
                    port: Some(*port),
                    behaviour: Some(Behaviour {
                        http_status: *status,
                        ..Behaviour::default()
                    }),
                });
            }
        }
        for (address, port) in old.keys().filter(|k| !new.contains_key(k)) {
            st.dataplane.backends.push(BackendDecl {
                at: now,
                address: *address,
                port: Some(*port),
                behaviour: None,
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
            let mut declared = HealthView::new();
            loop {
                let lp = ListParams::default();
                let fetched =
                    tokio::try_join!(services.list(&lp), slices.list(&lp), nodes.list(&lp));
                match fetched {
                    Ok((s, e, n)) => {
                        let view = health_view(&s.items, &e.items, &n.items);
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
    use serde_json::json;

    #[test]
    fn local_policy_gives_200_only_on_nodes_with_ready_endpoints() {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000,
                     "ports": [{"port": 80}]}
        }))
        .expect("service");
        let cluster: Service = serde_json::from_value(json!({
            "metadata": {"name": "other", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Cluster", "ports": [{"port": 80}]}
        }))
        .expect("service");
        let slice: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.42.0.5"], "nodeName": "n1", "conditions": {"ready": true}},
                {"addresses": ["10.42.1.5"], "nodeName": "n2", "conditions": {"ready": false}},
            ]
        }))
        .expect("slice");
        let node = |name: &str, ip: &str| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name},
                "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]}}))
            .expect("node")
        };
        let nodes = vec![
            node("n1", "10.0.0.1"),
            node("n2", "10.0.0.2"),
            node("n3", "10.0.0.3"),
        ];
        let view = health_view(&[svc, cluster], &[slice], &nodes);
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert_eq!(view.get(&(ip("10.0.0.1"), 31000)), Some(&200));
        assert_eq!(view.get(&(ip("10.0.0.2"), 31000)), Some(&503));
        assert_eq!(view.get(&(ip("10.0.0.3"), 31000)), Some(&503));
        assert_eq!(
            view.len(),
            3,
            "the Cluster-policy Service has no health-check port"
        );
    }
}
