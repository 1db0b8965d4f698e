//! The testbed: simulated kubelets register Nodes for fakecloud servers, heartbeat while the
//! server runs, go NotReady when it stops and fall silent when it is deleted; the kube-proxy
//! view declares health-check answers to fakecloud; the cluster backends skip with a reason.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, PostParams};
use scenarios::cluster::{Backend, Cluster, ClusterError};
use scenarios::kubelet::{KubeletConfig, UNINITIALIZED_TAINT};
use scenarios::testbed::{Testbed, TestbedConfig};
use std::time::Duration;

async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    scenarios::wait::eventually(what, Duration::from_secs(10), check).await
}

fn fast_config(nodes: usize) -> TestbedConfig {
    TestbedConfig {
        nodes,
        kubelet: KubeletConfig {
            heartbeat: Duration::from_millis(100),
            ..KubeletConfig::default()
        },
        proxy_interval: Duration::from_millis(100),
        ..TestbedConfig::default()
    }
}

async fn testbed(nodes: usize) -> Testbed {
    let cluster = Cluster::embedded().await.expect("embedded cluster");
    Testbed::start(cluster, fast_config(nodes))
        .await
        .expect("testbed")
}

fn ready_status(node: &Node) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

async fn renew_time(leases: &Api<Lease>, name: &str) -> Option<String> {
    let lease = leases.get(name).await.ok()?;
    lease.spec?.renew_time.map(|t| format!("{:?}", t.0))
}

#[tokio::test]
async fn kubelets_register_nodes_as_external_cloud_kubelets_do() {
    let tb = testbed(3).await;
    let nodes: Api<Node> = Api::all(tb.cluster.client());
    let list = nodes.list(&Default::default()).await.expect("list nodes");
    let mut names: Vec<String> = list
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["node-1", "node-2", "node-3"]);
    for node in &list.items {
        let spec = node.spec.as_ref().expect("spec");
        assert!(spec.provider_id.is_none(), "no provider ID before the CCM");
        let taints = spec.taints.as_ref().expect("taints");
        assert!(
            taints
                .iter()
                .any(|t| t.key == UNINITIALIZED_TAINT && t.effect == "NoSchedule")
        );
        assert_eq!(ready_status(node).as_deref(), Some("True"));
        let status = node.status.as_ref().expect("status");
        let capacity = status.capacity.as_ref().expect("capacity");
        assert_eq!(
            capacity.get("cpu").map(|q| q.0.as_str()),
            Some("4"),
            "flex-8-4 has 4 vCPUs"
        );
        // The Node's internal address is its server's private address in fakecloud.
        let internal = status
            .addresses
            .as_ref()
            .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
            .map(|a| a.address.clone())
            .expect("InternalIP");
        let name = node.metadata.name.clone().unwrap_or_default();
        let server = tb.server_of(&name).expect("server");
        let machine = scenarios::kubelet::machine(tb.cloud.app(), server).expect("machine");
        assert_eq!(machine.private_ip.as_deref(), Some(internal.as_str()));
        assert_eq!(machine.name, name);
    }
}

#[tokio::test]
async fn kubelets_heartbeat_on_their_lease_while_the_server_runs() {
    let tb = testbed(1).await;
    let leases: Api<Lease> = Api::namespaced(tb.cluster.client(), "kube-node-lease");
    let first = eventually("a lease", || renew_time(&leases, "node-1")).await;
    let later = eventually("a renewed lease", || {
        let (leases, first) = (leases.clone(), first.clone());
        async move { renew_time(&leases, "node-1").await.filter(|t| *t != first) }
    })
    .await;
    assert_ne!(first, later);
}

#[tokio::test]
async fn a_stopped_server_makes_its_node_not_ready_and_a_started_one_ready_again() {
    let tb = testbed(2).await;
    let server = tb.server_of("node-1").expect("server");
    let api = reqwest::Client::new();
    let action = |what: &'static str| {
        let url = format!("{}/servers/{server}/{what}", tb.cloud.api_url());
        let api = api.clone();
        let token = tb.cloud.token().to_string();
        async move {
            let r = api
                .post(url)
                .bearer_auth(token)
                .send()
                .await
                .expect("action");
            assert_eq!(r.status(), 204);
        }
    };
    action("stop").await;
    tb.cloud.advance(Duration::from_secs(60));
    let nodes: Api<Node> = Api::all(tb.cluster.client());
    eventually("node-1 NotReady", || {
        let nodes = nodes.clone();
        async move { (ready_status(&nodes.get("node-1").await.ok()?)? == "Unknown").then_some(()) }
    })
    .await;
    assert_eq!(
        ready_status(&nodes.get("node-2").await.expect("node-2")).as_deref(),
        Some("True"),
        "other nodes stay Ready"
    );
    action("start").await;
    tb.cloud.advance(Duration::from_secs(60));
    eventually("node-1 Ready again", || {
        let nodes = nodes.clone();
        async move { (ready_status(&nodes.get("node-1").await.ok()?)? == "True").then_some(()) }
    })
    .await;
}

#[tokio::test]
async fn a_deleted_server_silences_its_kubelet() {
    let tb = testbed(1).await;
    let server = tb.server_of("node-1").expect("server");
    let leases: Api<Lease> = Api::namespaced(tb.cluster.client(), "kube-node-lease");
    eventually("a lease", || renew_time(&leases, "node-1")).await;
    let r = reqwest::Client::new()
        .delete(format!("{}/servers/{server}", tb.cloud.api_url()))
        .bearer_auth(tb.cloud.token())
        .send()
        .await
        .expect("delete");
    assert_eq!(r.status(), 204);
    let nodes: Api<Node> = Api::all(tb.cluster.client());
    eventually("node-1 unknown", || {
        let nodes = nodes.clone();
        async move { (ready_status(&nodes.get("node-1").await.ok()?)? == "Unknown").then_some(()) }
    })
    .await;
    // The kubelet has stopped for good: nothing renews the lease any more.
    eventually("the kubelet to stop", || {
        let running = tb.kubelets[0].is_running();
        async move { (!running).then_some(()) }
    })
    .await;
    let frozen = renew_time(&leases, "node-1").await;
    assert!(frozen.is_some());
    assert_eq!(renew_time(&leases, "node-1").await, frozen);
    assert!(
        nodes.get("node-1").await.is_ok(),
        "the Node stays until the CCM removes it"
    );
}

#[tokio::test]
async fn kube_proxy_view_declares_health_check_answers_for_local_services() {
    let tb = testbed(2).await;
    let client = tb.cluster.client();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80}]}
    }))
    .expect("service");
    let svc = services
        .create(&PostParams::default(), &svc)
        .await
        .expect("create");
    let hc = svc
        .spec
        .and_then(|s| s.health_check_node_port)
        .expect("health check node port") as u16;
    let slices: Api<EndpointSlice> = Api::namespaced(client, "default");
    let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.42.0.7"], "nodeName": "node-2", "conditions": {"ready": true}}]
    }))
    .expect("slice");
    slices
        .create(&PostParams::default(), &slice)
        .await
        .expect("slice");
    let ip = |node: &str| {
        let server = tb.server_of(node).expect("server");
        scenarios::kubelet::machine(tb.cloud.app(), server)
            .and_then(|m| m.private_ip)
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
            .expect("private ip")
    };
    let (n1, n2) = (ip("node-1"), ip("node-2"));
    let status_of = |addr: std::net::IpAddr| {
        let app = tb.cloud.app().clone();
        async move {
            let now = app.now();
            let st = app.0.state.read();
            Some(st.dataplane.behaviour(addr, hc, now).http_status)
        }
    };
    eventually("503 on node-1", || {
        let f = status_of(n1);
        async move { (f.await? == 503).then_some(()) }
    })
    .await;
    assert_eq!(status_of(n2).await, Some(200));
}

#[tokio::test]
async fn unavailable_backends_say_why() {
    // This machine has no Docker engine and the test does not opt into an existing cluster.
    match Cluster::k3s().await {
        Err(ClusterError::Unavailable(reason)) => {
            eprintln!("k3s backend skipped: {reason}");
            assert!(!reason.is_empty());
        }
        Ok(c) => assert_eq!(c.backend, Backend::K3s, "a Docker engine is reachable here"),
        Err(e) => panic!("unexpected error: {e}"),
    }
    if std::env::var("SCENARIOS_CLUSTER").as_deref() != Ok("existing") {
        match Cluster::existing().await {
            Err(ClusterError::Unavailable(reason)) => {
                assert!(reason.contains("SCENARIOS_CLUSTER"), "{reason}")
            }
            other => panic!("existing must be opt-in: {:?}", other.map(|c| c.backend)),
        }
    }
    let embedded = Cluster::from_env().await.expect("default backend");
    assert_eq!(embedded.backend, Backend::Embedded);
}
