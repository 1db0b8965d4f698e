//! The testbed: simulated kubelets register Nodes for fakecloud servers (also for servers
//! created later through fakecloud, with `kubelets_for_new_servers`), heartbeat while the
//! server runs, go NotReady when it stops and fall silent when it is deleted; the kube-proxy
//! view declares node-port and health-check answers to fakecloud, and closes released node
//! ports; the cluster backends skip with a reason.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams, PostParams};
use scenarios::testbed::{Backend, Cluster, ClusterError};
use scenarios::testbed::{KubeletConfig, UNINITIALIZED_TAINT};
use scenarios::testbed::{Testbed, TestbedConfig};
use std::time::Duration;

async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    // An upper bound, not a pause: alone these take well under a second, but CI runs eight
    // tests at once on two cores.
    scenarios::testbed::eventually(what, Duration::from_secs(30), check).await
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
        let machine = scenarios::testbed::machine(tb.cloud.app(), server).expect("machine");
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
        scenarios::testbed::machine(tb.cloud.app(), server)
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
            Some(st.dataplane().behaviour(addr, hc, now).http_status)
        }
    };
    // The view is declared node by node: wait for both.
    eventually("503 on node-1 and 200 on node-2", || {
        let (f1, f2) = (status_of(n1), status_of(n2));
        async move { (f1.await? == 503 && f2.await? == 200).then_some(()) }
    })
    .await;
}

/// The private (InternalIP) address of a testbed node.
fn node_ip(tb: &Testbed, node: &str) -> std::net::IpAddr {
    let server = tb.server_of(node).expect("server");
    scenarios::testbed::machine(tb.cloud.app(), server)
        .and_then(|m| m.private_ip)
        .and_then(|ip| ip.parse().ok())
        .expect("private ip")
}

/// How fakecloud's data plane answers `address:port` now.
fn answers(tb: &Testbed, address: std::net::IpAddr, port: u16) -> fakecloud::dataplane::Behaviour {
    let app = tb.cloud.app();
    let now = app.now();
    app.0.state.read().dataplane().behaviour(address, port, now)
}

#[tokio::test]
async fn kube_proxy_view_closes_a_released_node_port_and_opens_the_new_one() {
    let tb = testbed(2).await;
    let services: Api<Service> = Api::namespaced(tb.cluster.client(), "default");
    let svc: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80}]}
    }))
    .expect("service");
    let svc = services
        .create(&PostParams::default(), &svc)
        .await
        .expect("create");
    let node_port = |s: &Service| {
        s.spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|p| p[0].node_port)
            .and_then(|n| u16::try_from(n).ok())
            .expect("node port")
    };
    let old = node_port(&svc);
    let (n1, n2) = (node_ip(&tb, "node-1"), node_ip(&tb, "node-2"));
    // Declared as kube-proxy serves a TCP port (fakecloud's default would answer UDP too).
    let tcp_only = |b: fakecloud::dataplane::Behaviour| b.tcp && !b.udp && b.http_status == 200;
    eventually("the node port declared TCP on both nodes", || async {
        (tcp_only(answers(&tb, n1, old)) && tcp_only(answers(&tb, n2, old))).then_some(())
    })
    .await;

    let new = if old == 32000 { 32001 } else { 32000 };
    let patch =
        serde_json::json!({"spec": {"ports": [{"name": "http", "port": 80, "nodePort": new}]}});
    let changed = services
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("change the node port");
    assert_eq!(node_port(&changed), new);
    eventually("the old node port closed and the new one open", || async {
        let closed = |b: fakecloud::dataplane::Behaviour| !b.tcp && !b.udp;
        (closed(answers(&tb, n1, old))
            && closed(answers(&tb, n2, old))
            && tcp_only(answers(&tb, n1, new))
            && tcp_only(answers(&tb, n2, new)))
        .then_some(())
    })
    .await;
    // And fakecloud's admin view lists the closed declaration, not a return to the default.
    let listed: Vec<serde_json::Value> =
        reqwest::get(format!("{}/_fake/backends", tb.cloud.base_url()))
            .await
            .expect("GET /_fake/backends")
            .json()
            .await
            .expect("JSON");
    let old_on_n1 = listed
        .iter()
        .find(|d| d["address"] == n1.to_string() && d["port"] == old)
        .unwrap_or_else(|| panic!("{n1}:{old} declared: {listed:?}"));
    assert_eq!(
        (&old_on_n1["tcp"], &old_on_n1["udp"]),
        (&false.into(), &false.into())
    );
}

/// Creates a server as a user adding a machine does (`POST /_fake/servers`), optionally with
/// a fixed private address.
async fn post_server(tb: &Testbed, name: &str, address: Option<&str>) -> uuid::Uuid {
    let mut private = serde_json::json!({"network": "k8s-private"});
    if let Some(a) = address {
        private["address"] = a.into();
    }
    let r = reqwest::Client::new()
        .post(format!("{}/_fake/servers", tb.cloud.base_url()))
        .json(&serde_json::json!({"name": name, "private": [private]}))
        .send()
        .await
        .expect("POST /_fake/servers");
    assert_eq!(r.status(), 201);
    let server: serde_json::Value = r.json().await.expect("JSON");
    server["uuid"]
        .as_str()
        .and_then(|u| u.parse().ok())
        .expect("server uuid")
}

/// The server of the kubelet that registered `node`. The watcher of new servers records a
/// kubelet when its start returns, just after the kubelet made its Node Ready.
async fn recorded_server_of(tb: &Testbed, node: &str) -> uuid::Uuid {
    eventually(&format!("the kubelet of {node} recorded"), || async {
        tb.server_of(node)
    })
    .await
}

async fn wait_ready(nodes: &Api<Node>, name: &str) -> Node {
    eventually(&format!("{name} registered and Ready"), || async {
        let n = nodes.get_opt(name).await.ok()??;
        (ready_status(&n).as_deref() == Some("True")).then_some(n)
    })
    .await
}

#[tokio::test]
async fn a_server_created_through_fakecloud_gets_a_kubelet_and_its_node_registers() {
    let cluster = Cluster::embedded().await.expect("embedded cluster");
    let tb = Testbed::start(
        cluster,
        TestbedConfig {
            kubelets_for_new_servers: true,
            ..fast_config(2)
        },
    )
    .await
    .expect("testbed");
    let nodes: Api<Node> = Api::all(tb.cluster.client());
    let server = post_server(&tb, "node-3", None).await;
    let node = wait_ready(&nodes, "node-3").await;
    assert_eq!(recorded_server_of(&tb, "node-3").await, server);
    // Registered as a kubelet with an external cloud provider does, with the server's
    // private address.
    let spec = node.spec.as_ref().expect("spec");
    assert!(spec.provider_id.is_none());
    assert!(
        spec.taints
            .iter()
            .flatten()
            .any(|t| t.key == UNINITIALIZED_TAINT)
    );
    let internal = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
        .map(|a| a.address.clone());
    let machine = scenarios::testbed::machine(tb.cloud.app(), server).expect("machine");
    assert_eq!(internal, machine.private_ip);
}

#[tokio::test]
async fn new_server_kubelets_and_add_node_never_double_up() {
    let cluster = Cluster::embedded().await.expect("embedded cluster");
    let mut tb = Testbed::start(
        cluster,
        TestbedConfig {
            kubelets_for_new_servers: true,
            ..fast_config(1)
        },
    )
    .await
    .expect("testbed");
    let nodes: Api<Node> = Api::all(tb.cluster.client());
    // node-1 has 10.0.0.11; node-2 takes the address add_node would pick next.
    post_server(&tb, "node-2", Some("10.0.0.12")).await;
    wait_ready(&nodes, "node-2").await;
    // add_node still works next to the watcher, on the next free address.
    let added = tb.add_node("node-3").await.expect("add_node");
    wait_ready(&nodes, "node-3").await;
    assert_eq!(tb.server_of("node-3"), Some(added));
    let machine = scenarios::testbed::machine(tb.cloud.app(), added).expect("machine");
    assert_eq!(machine.private_ip.as_deref(), Some("10.0.0.13"));
    // Once a server created after node-3 has its Node, the watcher has looked at node-3's
    // server at least once: it must have left it alone.
    post_server(&tb, "node-4", None).await;
    wait_ready(&nodes, "node-4").await;
    // The watcher records a kubelet once its Node is up: wait for the record, then count.
    recorded_server_of(&tb, "node-4").await;
    assert_eq!(tb.kubelet_count(), 4);
    let api = tb.cluster.api_server().expect("embedded API server");
    let creates: Vec<String> = api
        .shared()
        .requests()
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "nodes")
        .map(|r| format!("{} by {}", r.code, r.user_agent))
        .collect();
    assert_eq!(
        creates.len(),
        4,
        "one Node registration per server: {creates:?}"
    );
    let mut names: Vec<String> = nodes
        .list(&Default::default())
        .await
        .expect("list nodes")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names, ["node-1", "node-2", "node-3", "node-4"]);
}

/// Waits until node-1's kubelet renewed its lease twice: with `fast_config`, as long as two
/// rounds of the watcher of new servers.
async fn two_heartbeats(tb: &Testbed) {
    let leases: Api<Lease> = Api::namespaced(tb.cluster.client(), "kube-node-lease");
    let mut last = eventually("a lease", || renew_time(&leases, "node-1")).await;
    for _ in 0..2 {
        last = eventually("a renewed lease", || {
            let (leases, last) = (leases.clone(), last.clone());
            async move { renew_time(&leases, "node-1").await.filter(|t| *t != last) }
        })
        .await;
    }
}

#[tokio::test]
async fn a_server_created_through_the_api_registers_once_it_has_booted() {
    let cluster = Cluster::embedded().await.expect("embedded cluster");
    let tb = Testbed::start(
        cluster,
        TestbedConfig {
            kubelets_for_new_servers: true,
            // Manual clock: the new server stays `changing` until the test advances it.
            cloud: fakecloud::Config::for_tests(),
            ..fast_config(1)
        },
    )
    .await
    .expect("testbed");
    let network = tb
        .cloud
        .app()
        .read("", |ctx| {
            ctx.st
                .networks
                .values()
                .find(|n| n.name == scenarios::testbed::NETWORK_NAME)
                .map(|n| n.uuid)
        })
        .expect("the testbed network");
    let r = reqwest::Client::new()
        .post(format!("{}/servers", tb.cloud.api_url()))
        .bearer_auth(tb.cloud.token())
        .json(
            &serde_json::json!({"name": "node-2", "flavor": "flex-4-2", "image": "debian-12",
                                  "interfaces": [{"network": network.to_string()}]}),
        )
        .send()
        .await
        .expect("POST /v1/servers");
    assert_eq!(r.status(), 201);
    let nodes: Api<Node> = Api::all(tb.cluster.client());
    // Still booting: two heartbeats of node-1 later (each as long as a watcher round), no
    // Node.
    two_heartbeats(&tb).await;
    assert!(nodes.get_opt("node-2").await.expect("get").is_none());
    tb.cloud.advance(Duration::from_secs(60));
    wait_ready(&nodes, "node-2").await;
}

#[tokio::test]
async fn without_the_option_a_new_server_gets_no_kubelet() {
    let tb = testbed(1).await;
    let nodes: Api<Node> = Api::all(tb.cluster.client());
    post_server(&tb, "node-2", None).await;
    // Nothing watches for new servers. Two heartbeats of node-1 (each as long as a watcher's
    // round) give a wrongly started watcher its chance.
    two_heartbeats(&tb).await;
    assert!(nodes.get_opt("node-2").await.expect("get").is_none());
    assert_eq!(tb.server_of("node-2"), None);
    assert_eq!(tb.kubelet_count(), 1);
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
