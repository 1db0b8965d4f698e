//! Service settings end to end: monitor options the API does not echo converge under
//! either API rule, `spec.loadBalancerSourceRanges` restricts the listeners and
//! `spec.loadBalancerIP` is reported, an IPv6-only Service is given IPv6 addresses, the ingress appears only once every port serves,
//! floating IPs are matched by address, a selection that leaves no member is announced as
//! an outage and an unknown subnet refused, the status is cleared when a Service stops being
//! a load balancer, a refused zone stays as written, and messages name things once.

use fakecloud::faults::{FaultEffect, FaultRule};
use fakecloud::{ApiRules, Strictness};
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, LIMIT, downtime, ingress, lb_service, web_service as web};
use serde_json::{Value, json};

const A: &str = "k8s.cloudscale.ch/loadbalancer-";

fn key(suffix: &str) -> String {
    format!("{A}{suffix}")
}

async fn http_options_on_a_tcp_monitor(rule: Strictness) {
    let bed = Bed::start_default().await;
    bed.set_rules(ApiRules {
        non_http_monitor_http: rule,
        ..ApiRules::default()
    });
    bed.create_converged(
        &web(json!({key("health-monitor-http"): r#"{"version": "1.0"}"#})),
        2,
    )
    .await;
    // Its other members come after it is published: from then on, nothing more.
    bed.quiet().await;
    let writes = bed.writes_of_two_passes().await;
    assert!(writes.is_empty(), "{rule}: {writes:#?}");
    bed.wait_event("web", "SettingIgnored", "the HTTP options are ignored")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_options_of_a_tcp_monitor_cause_no_writes_when_the_api_drops_them() {
    http_options_on_a_tcp_monitor(Strictness::Strict).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_options_of_a_tcp_monitor_cause_no_writes_when_the_api_echoes_them() {
    http_options_on_a_tcp_monitor(Strictness::Lenient).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_http_host_clears_it_once() {
    let bed = Bed::start_default().await;
    bed.create_converged(
        &web(json!({
            key("health-monitor-type"): "http",
            key("health-monitor-http"): r#"{"host": "Example.COM"}"#,
        })),
        2,
    )
    .await;
    bed.annotate("web", &key("health-monitor-http"), r#"{"url_path": "/"}"#)
        .await;
    bed.converge("no host", 2, |s| {
        s.monitors.iter().all(|m| m["http"]["host"].is_null())
    })
    .await;
    let writes = bed.writes_of_two_passes().await;
    assert!(writes.is_empty(), "{writes:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancer_source_ranges_restrict_the_listeners() {
    let bed = Bed::start_default().await;
    let s = bed.create_converged(&web(json!({})), 2).await;
    let lb = s.lb_uuid();
    bed.patch(
        "web",
        &json!({"spec": {"loadBalancerSourceRanges": ["10.0.0.0/8"]}}),
    )
    .await;
    bed.converge("source ranges on every listener", 2, |s| {
        s.listeners
            .iter()
            .all(|l| l["allowed_cidrs"] == json!(["10.0.0.0/8"]))
    })
    .await;
    let t = bed.now_minus(1.0);
    let outside = bed.availability_for(&lb, &t, "198.51.100.7").await;
    assert!(downtime(&outside, 80) > 0.0, "{outside:#?}");
    let inside = bed.availability_for(&lb, &t, "10.1.2.3").await;
    assert_eq!(downtime(&inside, 80), 0.0, "{inside:#?}");

    // Both set and different: the annotation applies, and a Warning says so.
    bed.annotate("web", &key("listener-allowed-cidrs"), r#"["192.0.2.0/24"]"#)
        .await;
    bed.converge("the annotation's CIDRs", 2, |s| {
        s.listeners
            .iter()
            .all(|l| l["allowed_cidrs"] == json!(["192.0.2.0/24"]))
    })
    .await;
    bed.wait_event(
        "web",
        "SettingIgnored",
        "spec.loadBalancerSourceRanges (10.0.0.0/8) differs from the annotation",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_balancer_ip_is_reported_as_not_supported() {
    let bed = Bed::start_default().await;
    let mut svc = web(json!({}));
    if let Some(spec) = svc.spec.as_mut() {
        spec.load_balancer_ip = Some("45.132.236.99".into());
    }
    bed.create_converged(&svc, 2).await;
    let e = bed
        .wait_event("web", "SettingIgnored", "spec.loadBalancerIP 45.132.236.99")
        .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
}

/// An IPv6-only Service: the API server gives it an IPv6 cluster IP, as kube-apiserver on a
/// dual-stack cluster does, and its status lists the load balancer's IPv6 VIP alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv6_only_service_gets_an_ipv6_cluster_ip_and_ingress() {
    let bed = Bed::start_default().await;
    let mut svc = web(json!({}));
    if let Some(spec) = svc.spec.as_mut() {
        spec.ip_families = Some(vec!["IPv6".into()]);
        spec.ip_family_policy = Some("SingleStack".into());
    }
    let snap = bed.create_converged(&svc, 2).await;
    let live = bed.services().get("web").await.expect("web");
    let cluster_ips = live
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ips.clone())
        .unwrap_or_default();
    assert_eq!(cluster_ips.len(), 1, "{cluster_ips:?}");
    assert!(
        cluster_ips[0].parse::<std::net::Ipv6Addr>().is_ok(),
        "an IPv6 cluster IP: {cluster_ips:?}"
    );
    let vips: Vec<&str> = snap.lbs[0]["vip_addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["address"].as_str())
        .collect();
    assert_eq!(
        vips.len(),
        2,
        "a public load balancer has an IPv4 and an IPv6 VIP"
    );
    let listed: Vec<Value> = ingress(&live).iter().map(|e| e["ip"].clone()).collect();
    assert_eq!(listed, [json!(vips[1])], "the IPv6 VIP alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ingress_appears_only_once_every_port_serves() {
    let bed = Bed::start_default().await;
    let ports: Vec<Value> = (0..6)
        .map(|i| json!({"name": format!("p{i}"), "port": 8000 + i, "targetPort": 8080}))
        .collect();
    bed.create(&lb_service("big", json!(ports), json!({})))
        .await;
    bed.wait_ingress("big").await;
    // The moment the ingress is there, every port answers (a new load balancer is
    // published once each port has its listener and a member up; it may still be taking
    // its other members).
    let lb = bed.lb_uuid_of("big").await;
    let now = bed.now();
    let av = bed.availability(&lb, &now).await;
    for i in 0..6 {
        assert_eq!(downtime(&av, 8000 + i), 0.0, "port {}: {av:#?}", 8000 + i);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floating_ip_written_with_another_prefix_is_assigned_once() {
    let bed = Bed::start_default().await;
    let s = bed.create_converged(&web(json!({})), 2).await;
    let fip = bed
        .cloud(
            reqwest::Method::POST,
            "/floating-ips",
            Some(json!({"ip_version": 6, "prefix_length": 56})),
        )
        .await;
    let network = fip["network"].as_str().expect("network").to_string();
    let address = network.split('/').next().expect("address").to_string();
    bed.annotate("web", &key("floating-ips"), &format!("[\"{address}/64\"]"))
        .await;
    bed.wait_floating_ip_on(&address, &s.lb_uuid()).await;
    bed.wait_event(
        "web",
        "SettingIgnored",
        &format!("is the floating IP {network}"),
    )
    .await;
    let writes = bed.writes_of_two_passes().await;
    assert!(writes.is_empty(), "re-assigned: {writes:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_allowed_subnet_is_refused_before_any_write() {
    let bed = Bed::start_default().await;
    let before = bed.create_converged(&web(json!({})), 2).await;
    bed.clear_request_log().await;
    bed.annotate(
        "web",
        &key("listener-allowed-subnets"),
        r#"["00000000-0000-0000-0000-000000000001"]"#,
    )
    .await;
    let e = bed
        .wait_event("web", "SyncLoadBalancerFailed", "no such subnet")
        .await;
    assert!(
        e.message
            .unwrap_or_default()
            .contains("k8s.cloudscale.ch/loadbalancer-listener-allowed-subnets"),
        "names the annotation"
    );
    assert!(bed.writes().await.is_empty());
    assert_eq!(bed.snap().await.member_counts(), before.member_counts());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_that_leaves_no_member_is_announced_as_an_outage() {
    let bed = Bed::start_default().await;
    bed.create_converged(&web(json!({})), 2).await;
    bed.annotate("web", &key("node-selector"), "role=none")
        .await;
    bed.wait_event("web", "NoValidNodes", "").await;
    let planned = bed
        .wait_event("web", "PlannedChange", "impact outage")
        .await;
    let message = planned.message.unwrap_or_default();
    assert!(
        message.starts_with("impact outage: tcp/http outage, tcp/https outage;"),
        "each removal is an outage step of its port: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_type_load_balancer_clears_the_ingress() {
    let bed = Bed::start_default().await;
    bed.create_converged(&web(json!({})), 2).await;
    bed.patch("web", &json!({"spec": {"type": "ClusterIP"}}))
        .await;
    eventually("the ingress and the finalizer gone", LIMIT, || async {
        let s = bed.services().get("web").await.ok()?;
        let finalized = s
            .metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .iter()
            .any(|f| f == ccm::service::reconcile::controller::FINALIZER);
        (ingress(&s).is_empty() && !finalized).then_some(())
    })
    .await;
    assert!(bed.cloud_list("/load-balancers").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_zone_change_stays_as_the_user_wrote_it() {
    let bed = Bed::start_default().await;
    bed.create_converged(&web(json!({})), 2).await;
    bed.annotate("web", &key("zone"), "lpg1").await;
    bed.wait_event("web", "ChangeRefused", &key("zone")).await;
    bed.writes_of_two_passes().await;
    let svc = bed.services().get("web").await.expect("web");
    assert_eq!(
        svc.metadata
            .annotations
            .unwrap_or_default()
            .get(&key("zone"))
            .map(String::as_str),
        Some("lpg1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_name_the_api_once_and_say_a_load_balancer_vanished() {
    let bed = Bed::start_default().await;
    let s = bed.create_converged(&web(json!({})), 2).await;
    // The load balancer deleted out of band: the re-creation says so.
    bed.cloud(
        reqwest::Method::DELETE,
        &format!("/load-balancers/{}", s.lb_uuid()),
        None,
    )
    .await;
    bed.wait_event("web", "LoadBalancerMissing", "no longer exists")
        .await;
    bed.wait_ingress("web").await;
    // An API failure names the API once.
    bed.tb
        .cloud
        .faults()
        .add(FaultRule::new(
            Some("GET"),
            "/v1/servers",
            FaultEffect::status(500),
        ))
        .expect("fault");
    bed.annotate("web", "qa/touch", "1").await;
    let e = bed
        .wait_event("web", "SyncLoadBalancerFailed", "/v1/servers")
        .await;
    let message = e.message.unwrap_or_default();
    assert_eq!(message.matches("cloudscale API").count(), 1, "{message}");
    bed.tb.cloud.faults().clear();
}

/// How many times an Event with `reason` about `object` was recorded (series included).
async fn times(bed: &Bed, object: &str, reason: &str) -> i32 {
    bed.events(object)
        .await
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| {
            e.series
                .as_ref()
                .and_then(|s| s.count)
                .or(e.count)
                .unwrap_or(1)
                .max(1)
        })
        .sum()
}

/// A user watching `kubectl describe service` sees each change framed as Kubernetes'
/// service controller frames it: `EnsuringLoadBalancer` when it starts, what it waits for,
/// `EnsuredLoadBalancer` with the addresses once done; Node churn is not announced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_change_is_framed_by_ensuring_and_ensured_events_with_the_addresses() {
    let bed = Bed::start_default().await;
    let svc = lb_service(
        "framed",
        json!([{"name": "http", "port": 80, "targetPort": 8080}]),
        json!({}),
    );
    bed.create_converged(&svc, 1).await;
    let served = bed.wait_ingress("framed").await;
    let ensured = bed
        .wait_event("framed", "EnsuredLoadBalancer", " at ")
        .await;
    let message = ensured.message.clone().unwrap_or_default();
    // Written after the status: a user reading it finds the ingress.
    let version = |m: &kube::api::ObjectMeta| {
        m.resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_default()
    };
    assert!(
        version(&ensured.metadata) > version(&served.metadata),
        "EnsuredLoadBalancer before the status: {message}"
    );
    for entry in ingress(&served) {
        let ip = entry["ip"].as_str().unwrap_or_default();
        assert!(
            !ip.is_empty() && message.contains(ip),
            "{message} names {ip}"
        );
    }
    let ensuring = bed
        .wait_event("framed", "EnsuringLoadBalancer", "changes (impact")
        .await;
    let waited = bed
        .wait_event("framed", "WaitingForLoadBalancer", "provisioned")
        .await;
    let at = |e: &k8s_openapi::api::core::v1::Event| {
        e.event_time
            .as_ref()
            .map(|t| t.0)
            .or(e.first_timestamp.as_ref().map(|t| t.0))
    };
    assert!(at(&ensuring).is_some(), "{ensuring:?}");
    // The first Event of a new Service speaks of creation.
    let first = ensuring.message.clone().unwrap_or_default();
    assert!(
        first.starts_with("Creating load balancer k8s-service-"),
        "{first}"
    );
    assert!(at(&ensuring) <= at(&waited) && at(&waited) <= at(&ensured));
    assert_eq!(times(&bed, "framed", "EnsuringLoadBalancer").await, 1);

    // A change of the Service: framed again.
    bed.patch(
        "framed",
        &json!({"spec": {"ports": [{"name": "http", "port": 81, "targetPort": 8080}]}}),
    )
    .await;
    eventually("a second EnsuredLoadBalancer", LIMIT, || async {
        (times(&bed, "framed", "EnsuredLoadBalancer").await >= 2).then_some(())
    })
    .await;
    assert_eq!(times(&bed, "framed", "EnsuringLoadBalancer").await, 2);

    // Node churn on a load balancer that serves: members follow, nothing is announced.
    bed.delete_server_of("node-3").await;
    let node3 = bed.node_ip("node-3").await;
    bed.converge("members without node-3", 1, |s| {
        s.members
            .values()
            .flatten()
            .all(|m| m["address"] != node3.as_str())
    })
    .await;
    assert_eq!(times(&bed, "framed", "EnsuringLoadBalancer").await, 2);
}
