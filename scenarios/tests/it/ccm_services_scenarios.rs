//! More service-controller scenarios end to end: a whole CCM in-process against the testbed
//! (embedded API server, simulated kubelets, fakecloud with its clock at 100×). Downtime is
//! measured with fakecloud's data-plane oracle (`fakecloud/MODEL.md`).

use ccm::node::metadata::is_initialized;
use ccm::service::reconcile::controller::FINALIZER;
use fakecloud::faults::{FaultEffect, FaultRule};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams, PostParams};
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, LIMIT, downtime, ingress, web_service as web};
use serde_json::{Value, json};

fn all(values: &[Value], f: impl Fn(&Value) -> bool) -> bool {
    !values.is_empty() && values.iter().all(f)
}

const A: &str = "k8s.cloudscale.ch/loadbalancer-";

fn key(suffix: &str) -> String {
    format!("{A}{suffix}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_joining_and_leaving_changes_members_without_downtime() {
    let mut bed = Bed::start_default().await;
    let start = bed.create_converged(&web(json!({})), 2).await;
    let lb = start.lb_uuid();
    assert_eq!(start.member_counts(), [3, 3]);

    let t0 = bed.now();
    let server = bed.tb.add_node("node-4").await.expect("node-4");
    let nodes: Api<Node> = Api::all(bed.tb.cluster.client());
    eventually("node-4 initialized", LIMIT, || async {
        let n = nodes.get("node-4").await.ok()?;
        (n.spec.as_ref()?.provider_id.is_some() && is_initialized(&n)).then_some(())
    })
    .await;
    let joined = bed
        .converge("a 4th member in every pool", 2, |s| {
            s.member_counts() == [4, 4]
        })
        .await;
    let av = bed.availability(&lb, &t0).await;
    let join = [downtime(&av, 80), downtime(&av, 443)];
    eprintln!("node join: downtime 80/443 {join:?} s");
    assert_eq!(join, [0.0, 0.0], "{av:#?}");
    assert_eq!(joined.lb_uuid(), lb);

    let t1 = bed.now();
    let r = bed
        .http
        .delete(format!("{}/servers/{server}", bed.tb.cloud.api_url()))
        .bearer_auth(bed.tb.cloud.token())
        .send()
        .await
        .expect("delete server");
    assert!(r.status().is_success(), "{}", r.status());
    eventually("node-4 deleted", LIMIT, || async {
        nodes.get_opt("node-4").await.ok()?.is_none().then_some(())
    })
    .await;
    let left = bed
        .converge("node-4's members removed", 2, |s| {
            s.member_counts() == [3, 3]
        })
        .await;
    let node4_address = joined
        .members
        .values()
        .flatten()
        .map(|m| m["address"].clone())
        .find(|a| !start.members.values().flatten().any(|m| m["address"] == *a))
        .expect("node-4's member address");
    assert!(
        !left
            .members
            .values()
            .flatten()
            .any(|m| m["address"] == node4_address),
        "node-4's members are gone"
    );
    let av = bed.availability(&lb, &t1).await;
    let leave = [downtime(&av, 80), downtime(&av, 443)];
    eprintln!("node leave: downtime 80/443 {leave:?} s");
    assert_eq!(leave, [0.0, 0.0], "{av:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_on_listener_creation_are_retried_to_one_complete_load_balancer() {
    let bed = Bed::start_default().await;
    bed.tb
        .cloud
        .faults()
        .add(
            FaultRule::new(
                Some("POST"),
                "/v1/load-balancers/listeners",
                FaultEffect::status(500),
            )
            .times(2),
        )
        .expect("fault");
    let s = bed.create_converged(&web(json!({})), 2).await;
    assert_eq!(s.lbs.len(), 1, "exactly one load balancer");
    assert_eq!(s.listener_names(), ["tcp/443", "tcp/80"]);
    assert_eq!(s.pool_names(), ["tcp/http", "tcp/https"]);
    assert_eq!(s.member_counts(), [3, 3]);
    let hits: u64 = bed.tb.cloud.faults().list().iter().map(|r| r.hits).sum();
    assert_eq!(hits, 2, "both injected errors were hit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_on_pool_creation_makes_no_duplicate_pool() {
    let bed = Bed::start_default().await;
    // `pools/**` matches what is created under a pool (members); the pool creation itself
    // is `POST /v1/load-balancers/pools`: drop one of each, once.
    let faults = bed.tb.cloud.faults();
    let deep = faults
        .add(
            FaultRule::new(
                Some("POST"),
                "/v1/load-balancers/pools/**",
                FaultEffect::Drop,
            )
            .times(1),
        )
        .expect("fault");
    let pool = faults
        .add(FaultRule::new(Some("POST"), "/v1/load-balancers/pools", FaultEffect::Drop).times(1))
        .expect("fault");
    let s = bed.create_converged(&web(json!({})), 2).await;
    for id in [deep, pool] {
        let rule = faults
            .list()
            .into_iter()
            .find(|r| r.id == id)
            .expect("rule");
        assert_eq!(rule.hits, 1, "{} dropped once", rule.path);
    }
    assert_eq!(s.lbs.len(), 1);
    assert_eq!(s.pools.len(), 2, "no duplicate pool: {:?}", s.pools);
    assert_eq!(s.pool_names(), ["tcp/http", "tcp/https"]);
    assert_eq!(s.member_counts(), [3, 3], "no duplicate member");
    assert_eq!(s.listener_names(), ["tcp/443", "tcp/80"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_and_udp_on_the_same_port_get_two_pools_and_listeners() {
    let bed = Bed::start_default().await;
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "dns"},
        "spec": {"type": "LoadBalancer", "ports": [
            {"name": "dns-tcp", "protocol": "TCP", "port": 53, "targetPort": 53},
            {"name": "dns-udp", "protocol": "UDP", "port": 53, "targetPort": 53},
        ]},
    }))
    .expect("service");
    bed.create(&svc).await;
    let s = eventually("two pools and listeners", LIMIT, || async {
        let s = bed.snap().await;
        (s.listeners.len() == 2 && s.pools.len() == 2 && s.member_counts() == [3, 3]).then_some(s)
    })
    .await;
    assert_eq!(s.pool_names(), ["tcp/dns-tcp", "udp/dns-udp"]);
    assert_eq!(s.listener_names(), ["tcp/53", "udp/53"]);
    let udp_pool = s
        .pools
        .iter()
        .find(|p| p["name"] == "udp/dns-udp")
        .expect("udp pool");
    assert_eq!(udp_pool["protocol"], "udp");
    let udp_listener = s
        .listeners
        .iter()
        .find(|l| l["name"] == "udp/53")
        .expect("udp listener");
    assert_eq!(udp_listener["protocol"], "udp");
    assert_eq!(udp_listener["protocol_port"], 53);
    let tcp_pool = s
        .pools
        .iter()
        .find(|p| p["name"] == "tcp/dns-tcp")
        .expect("tcp pool");
    assert_eq!(tcp_pool["protocol"], "tcp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_traffic_policy_checks_kube_proxy_and_only_the_endpoint_node_is_up() {
    let bed = Bed::start_default().await;
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [
            {"name": "http", "port": 80, "targetPort": 8080},
        ]},
    }))
    .expect("service");
    bed.create(&svc).await;
    let created = eventually("health-check node port", LIMIT, || async {
        let s = bed.services().get("web").await.ok()?;
        s.spec.as_ref()?.health_check_node_port.map(|p| (s, p))
    })
    .await;
    let (created, hc_port) = created;
    let node_port = created
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .expect("ports")[0]
        .node_port
        .expect("node port");
    let nodes: Api<Node> = Api::all(bed.tb.cluster.client());
    let node2 = nodes.get("node-2").await.expect("node-2");
    let node2_ip = node2
        .status
        .and_then(|s| s.addresses)
        .into_iter()
        .flatten()
        .find(|a| a.type_ == "InternalIP")
        .map(|a| a.address)
        .expect("node-2 InternalIP");
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.2.5"], "nodeName": "node-2",
                       "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }))
    .expect("slice");
    let slices: Api<EndpointSlice> = Api::namespaced(bed.tb.cluster.client(), "default");
    slices
        .create(&PostParams::default(), &slice)
        .await
        .expect("endpoint slice");

    let s = eventually("node-2 up, the others down", LIMIT, || async {
        let s = bed.snap().await;
        let members: Vec<&Value> = s.members.values().flatten().collect();
        (s.lbs.len() == 1
            && s.lbs[0]["status"] == "running"
            && s.listeners.len() == 1
            && members.len() == 3
            && members.iter().all(|m| {
                let want = if m["address"] == node2_ip.as_str() {
                    "up"
                } else {
                    "down"
                };
                m["monitor_status"] == want
            }))
        .then_some(s)
    })
    .await;
    let monitor = &s.monitors[0];
    assert_eq!(s.monitors.len(), 1);
    assert_eq!(monitor["type"], "http");
    assert_eq!(monitor["http"]["url_path"], "/livez");
    for m in s.members.values().flatten() {
        assert_eq!(m["monitor_port"], hc_port, "{m}");
        assert_eq!(m["protocol_port"], node_port, "{m}");
    }
    // Traffic flows through node-2 (over 5 virtual s from the settled state on).
    let from = bed.now();
    let t_end = bed.tb.cloud.app().now() + fakecloud::clock::delta_from_secs(5.0);
    eventually("5 virtual s", LIMIT, || async {
        (bed.tb.cloud.app().now() >= t_end).then_some(())
    })
    .await;
    let av = bed.availability(&s.lb_uuid(), &from).await;
    assert_eq!(downtime(&av, 80), 0.0, "{av:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floating_ip_annotation_assigns_it_to_the_load_balancer() {
    let bed = Bed::start_default().await;
    let (network, address) = bed.create_floating_ip().await;
    let s = bed.create_converged(&web(json!({})), 2).await;
    let lb = s.lb_uuid();
    let t0 = bed.now();
    bed.annotate(
        "web",
        &key("floating-ips"),
        &serde_json::to_string(&[format!("{address}/32")]).unwrap_or_default(),
    )
    .await;
    let assigned = bed.wait_floating_ip_on(&address, &lb).await;
    assert_eq!(assigned["network"], network.as_str());
    assert_eq!(bed.snap().await.lbs.len(), 1);
    // The floating IP carries traffic once propagated (10 virtual s after assignment).
    let assigned_at = bed.now();
    let t_end = bed.tb.cloud.app().now() + fakecloud::clock::delta_from_secs(15.0);
    eventually("15 virtual s", LIMIT, || async {
        (bed.tb.cloud.app().now() >= t_end).then_some(())
    })
    .await;
    let fip_downtime = |av: &[Value]| {
        av.iter()
            .find(|e| {
                e["kind"] == "floating_ip" && e["address"] == address.as_str() && e["port"] == 80
            })
            .and_then(|e| e["downtime_s"].as_f64())
    };
    let since = fip_downtime(&bed.availability(&lb, &assigned_at).await);
    let recent = fip_downtime(&bed.availability(&lb, &bed.now_minus(4.0)).await);
    eprintln!("floating IP added: {since:?} s down on it after the assignment was seen");
    assert!(since.is_some_and(|d| d <= 10.0), "{since:?}");
    assert_eq!(recent, Some(0.0), "it answers now");
    let vips = bed.availability(&lb, &t0).await;
    assert_eq!(downtime(&vips, 80), 0.0, "the VIPs are untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_protocol_ip_mode_and_forced_hostname() {
    let bed = Bed::start_default().await;
    let svc = web(json!({
        key("pool-protocol"): "proxyv2",
        key("ip-mode"): "VIP",
    }));
    let s = bed.create_converged(&svc, 2).await;
    assert!(
        all(&s.pools, |p| p["protocol"] == "proxyv2"),
        "{:?}",
        s.pools
    );
    let status = eventually("two VIP entries", LIMIT, || async {
        let i = ingress(&bed.services().get("web").await.ok()?);
        (i.len() == 2).then_some(i)
    })
    .await;
    assert!(status.iter().all(|e| e["ipMode"] == "VIP"), "{status:?}");

    bed.annotate("web", &key("force-hostname"), "lb.example.com")
        .await;
    let status = eventually("hostname entry", LIMIT, || async {
        let i = ingress(&bed.services().get("web").await.ok()?);
        (i.len() == 1 && i[0]["hostname"] == "lb.example.com").then_some(i)
    })
    .await;
    assert!(status[0].get("ip").is_none(), "{status:?}");
    assert!(status[0].get("ipMode").is_none(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_type_away_from_load_balancer_deletes_it_and_the_finalizer() {
    let bed = Bed::start_default().await;
    bed.create_converged(&web(json!({})), 2).await;
    let patch = json!({"spec": {"type": "ClusterIP"}});
    bed.services()
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch type");
    eventually(
        "load balancer deleted, finalizer removed",
        LIMIT,
        || async {
            let s = bed.services().get("web").await.ok()?;
            let finalized = s
                .metadata
                .finalizers
                .unwrap_or_default()
                .iter()
                .any(|f| f == FINALIZER);
            (!finalized && bed.cloud_list("/load-balancers").await.is_empty()).then_some(())
        },
    )
    .await;
    assert!(bed.cloud_list("/load-balancers/pools").await.is_empty());
    let svc = bed.services().get("web").await.expect("still there");
    assert_eq!(svc.spec.and_then(|s| s.type_).as_deref(), Some("ClusterIP"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_vip_is_created_and_a_later_change_is_refused() {
    let bed = Bed::start_default().await;
    let subnet = bed.subnet_uuid().await;
    let svc = web(json!({
        key("vip-addresses"): json!([{"subnet": subnet}]).to_string(),
    }));
    let s = bed.create_converged(&svc, 2).await;
    let vips = s.lbs[0]["vip_addresses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(vips.len(), 1, "{vips:?}");
    let address = vips[0]["address"].as_str().expect("address").to_string();
    assert!(address.starts_with("10.0.0."), "{address}");
    assert_eq!(vips[0]["subnet"]["uuid"], subnet.as_str());
    let status = eventually("one private ingress entry", LIMIT, || async {
        let i = ingress(&bed.services().get("web").await.ok()?);
        (i.len() == 1).then_some(i)
    })
    .await;
    assert_eq!(status[0]["ip"], address.as_str());

    bed.annotate(
        "web",
        &key("vip-addresses"),
        &json!([{"subnet": subnet, "address": "10.0.0.200"}]).to_string(),
    )
    .await;
    let refused = bed.wait_event("web", "ChangeRefused", "").await;
    assert_eq!(refused.type_.as_deref(), Some("Warning"));
    assert!(
        refused
            .message
            .unwrap_or_default()
            .contains("loadbalancer-vip-addresses")
    );
    let after = bed.snap().await;
    assert_eq!(after.lbs.len(), 1);
    assert_eq!(after.lb_uuid(), s.lb_uuid(), "the same load balancer");
    assert_eq!(after.lbs[0]["vip_addresses"], s.lbs[0]["vip_addresses"]);
}
