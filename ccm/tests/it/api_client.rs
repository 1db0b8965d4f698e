//! The cloudscale.ch API client against an in-process fakecloud (manual clock): typed round
//! trips, 404 handling, retries and `Retry-After`, POST idempotency after lost requests and
//! lost answers, validation errors, token rotation, rate limit, metrics labels and
//! call counters.

use crate::support;
use ccm::cloudscale::*;
use ccm::metrics::Metrics;
use ccm::secret::TokenSource;
use fakecloud::{Config, FakeCloud, FaultEffect, FaultRule};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::admin;
use support::client::*;

fn client(fc: &FakeCloud) -> Client {
    Client::new(config(fc, TOKEN)).expect("client")
}

/// The fake's request log: `(method, path, status)`, oldest first (status 0: dropped).
async fn requests(fc: &FakeCloud) -> Vec<(String, String, u64)> {
    let log = admin(fc, reqwest::Method::GET, "/requests", None).await;
    log.as_array()
        .expect("log array")
        .iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap_or_default().to_string(),
                e["path"].as_str().unwrap_or_default().to_string(),
                e["status"].as_u64().unwrap_or(999),
            )
        })
        .collect()
}

async fn count_requests(fc: &FakeCloud, method: &str, path: &str) -> usize {
    requests(fc)
        .await
        .iter()
        .filter(|(m, p, _)| m == method && p == path)
        .count()
}

async fn clear_log(fc: &FakeCloud) {
    admin(fc, reqwest::Method::DELETE, "/requests", None).await;
}

fn status_fault(status: u16, retry_after: Option<u64>) -> FaultEffect {
    FaultEffect::Status {
        status,
        body: None,
        retry_after,
    }
}

/// A private network `k8s` (10.100.0.0/24) and two servers on it.
async fn seed(fc: &FakeCloud) {
    admin(
        fc,
        reqwest::Method::POST,
        "/seed",
        Some(json!({
            "networks": [{"name": "k8s", "subnets": [{"cidr": "10.100.0.0/24", "gateway_address": "10.100.0.1"}]}],
            "servers": [
                {"name": "worker-1", "flavor": "flex-4-2", "tags": {"role": "worker"},
                 "private": [{"network": "k8s", "address": "10.100.0.11"}]},
                {"name": "control-1", "tags": {"role": "control-plane"}, "status": "stopped",
                 "private": [{"network": "k8s", "address": "10.100.0.10"}]}
            ]
        })),
    )
    .await;
}

// -------------------------------------------------------------------------------------------
// Typed round trips
// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn servers_networks_and_subnets_round_trip() {
    let fc = start(Config::for_tests()).await;
    seed(&fc).await;
    let c = client(&fc);

    let servers = c.list_servers(&Filter::all()).await.expect("list servers");
    assert_eq!(servers.len(), 2);
    let workers = c
        .list_servers(&Filter::tag("role", "worker"))
        .await
        .expect("filtered");
    assert_eq!(workers.len(), 1);
    let w = &workers[0];
    assert_eq!(w.name, "worker-1");
    assert_eq!(w.status, ServerStatus::Running);
    assert_eq!(w.flavor.slug, "flex-4-2");
    assert_eq!(w.zone.slug, "rma1");
    assert_eq!(w.tags.get("role").map(String::as_str), Some("worker"));
    assert_eq!(w.interfaces[0].kind, InterfaceType::Public);
    assert!(w.interfaces[0].addresses[0].address.is_ipv4());
    let private: Vec<_> = w
        .addresses()
        .filter(|(k, _)| **k != InterfaceType::Public)
        .collect();
    assert_eq!(private.len(), 1);
    assert_eq!(private[0].1.address.to_string(), "10.100.0.11");
    assert!(w.href.ends_with(&w.uuid.to_string()));

    let got = c.get_server(w.uuid).await.expect("get").expect("present");
    assert_eq!(&got, w);
    let stopped = c
        .list_servers(&Filter::all().and_has_tag("role"))
        .await
        .expect("has tag");
    assert_eq!(stopped.len(), 2);
    assert!(stopped.iter().any(|s| s.status == ServerStatus::Stopped));

    let networks = c.list_networks(&Filter::all()).await.expect("networks");
    let net = networks
        .iter()
        .find(|n| n.name == "k8s")
        .expect("k8s network");
    assert_eq!(net.subnets.len(), 1);
    let net2 = c
        .get_network(net.uuid)
        .await
        .expect("get net")
        .expect("present");
    assert_eq!(&net2, net);
    let subnet = c
        .get_subnet(net.subnets[0].uuid)
        .await
        .expect("get subnet")
        .expect("present");
    assert_eq!(subnet.cidr, "10.100.0.0/24");
    assert_eq!(subnet.network.uuid, net.uuid);
    assert_eq!(subnet.gateway_address.as_deref(), Some("10.100.0.1"));
    assert!(
        c.list_subnets(&Filter::all())
            .await
            .expect("subnets")
            .iter()
            .any(|s| s.uuid == subnet.uuid)
    );

    // 404 is absent, for every getter.
    assert_eq!(c.get_server(random_uuid()).await.expect("404 is Ok"), None);
    assert_eq!(c.get_network(random_uuid()).await.expect("ok"), None);
    assert_eq!(c.get_subnet(random_uuid()).await.expect("ok"), None);
}

#[tokio::test]
async fn floating_ips_round_trip() {
    let fc = start(Config::for_tests()).await;
    seed(&fc).await;
    let c = client(&fc);
    let worker = c
        .list_servers(&Filter::tag("role", "worker"))
        .await
        .expect("list")
        .remove(0);

    let fip = c
        .create_floating_ip(
            &CreateFloatingIp {
                ip_version: 4,
                tags: Tags::from([("ccm/cluster".to_string(), "test".to_string())]),
                ..CreateFloatingIp::default()
            },
            Idempotency::RequestId,
        )
        .await
        .expect("create floating IP");
    assert!(fip.network.ends_with("/32"), "{}", fip.network);
    assert_eq!(fip.server, None);
    assert_eq!(fip.kind, Some(FloatingIpType::Regional));
    assert!(
        fip.tags.contains_key(REQUEST_ID_TAG),
        "the request-id tag is set"
    );
    assert!(fip.href.ends_with(fip.ip()));

    let got = c
        .get_floating_ip(fip.ip())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got, fip);
    // The prefix length is ignored.
    assert!(
        c.get_floating_ip(&fip.network)
            .await
            .expect("get /32")
            .is_some()
    );
    let listed = c
        .list_floating_ips(&Filter::tag("ccm/cluster", "test"))
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);

    c.assign_floating_ip_to_server(fip.ip(), worker.uuid)
        .await
        .expect("assign to server");
    let got = c
        .get_floating_ip(fip.ip())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.server.map(|s| s.uuid), Some(worker.uuid));
    assert_eq!(
        got.next_hop,
        Some(worker.interfaces[0].addresses[0].address.to_string())
    );

    let lb = c
        .create_load_balancer(&new_lb("fip-lb"), Idempotency::NaturalKey)
        .await
        .expect("lb");
    c.assign_floating_ip_to_load_balancer(fip.ip(), lb.uuid)
        .await
        .expect("assign to LB");
    let got = c
        .get_floating_ip(fip.ip())
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.load_balancer.map(|l| l.uuid), Some(lb.uuid));
    assert_eq!(got.server, None);

    c.update_floating_ip(
        fip.ip(),
        &UpdateFloatingIp {
            tags: Some(Tags::new()),
            ..UpdateFloatingIp::default()
        },
    )
    .await
    .expect("clear tags");
    assert!(
        c.get_floating_ip(fip.ip())
            .await
            .expect("get")
            .expect("present")
            .tags
            .is_empty()
    );

    c.delete_floating_ip(fip.ip()).await.expect("delete");
    assert_eq!(c.get_floating_ip(fip.ip()).await.expect("get"), None);
    c.delete_floating_ip(fip.ip())
        .await
        .expect("deleting again is success");
}

#[tokio::test]
async fn load_balancer_stack_round_trip() {
    let fc = start(Config::for_tests()).await;
    seed(&fc).await;
    let c = client(&fc);
    let net = c
        .list_networks(&Filter::all())
        .await
        .expect("nets")
        .into_iter()
        .find(|n| n.name == "k8s")
        .expect("k8s");
    let subnet = net.subnets[0].uuid;

    // Load balancer.
    let lb = c
        .create_load_balancer(&new_lb("svc-web"), Idempotency::RequestId)
        .await
        .expect("create LB");
    assert_eq!(lb.status, LoadBalancerStatus::Changing);
    assert_eq!(lb.flavor.slug, "lb-standard");
    assert_eq!(lb.zone.slug, "rma1");
    assert_eq!(
        lb.vip_addresses.len(),
        2,
        "empty vip_addresses: public IPv4 + IPv6"
    );
    assert!(lb.vip_addresses[0].address.is_ipv4() && lb.vip_addresses[1].address.is_ipv6());
    assert_eq!(
        lb.tags.get("ccm/service").map(String::as_str),
        Some("default/web")
    );
    assert_eq!(
        c.get_load_balancer(lb.uuid).await.expect("get").as_ref(),
        Some(&lb)
    );
    let by_tag = c
        .list_load_balancers(&Filter::tag("ccm/service", "default/web"))
        .await
        .expect("list");
    assert_eq!(by_tag.len(), 1);
    assert!(
        c.list_load_balancers(&Filter::tag("ccm/service", "other"))
            .await
            .expect("list")
            .is_empty()
    );
    c.update_load_balancer(
        lb.uuid,
        &UpdateLoadBalancer {
            name: Some("svc-web-2".into()),
            tags: None,
        },
    )
    .await
    .expect("rename");
    fc.advance(Duration::from_secs(120));
    let lb = c
        .get_load_balancer(lb.uuid)
        .await
        .expect("get")
        .expect("present");
    assert_eq!(lb.name, "svc-web-2");
    assert_eq!(lb.status, LoadBalancerStatus::Running);

    // Pool.
    let pool = c
        .create_pool(&new_pool(lb.uuid, "tcp/80"), Idempotency::NaturalKey, &[])
        .await
        .expect("pool");
    assert_eq!(pool.load_balancer.uuid, lb.uuid);
    assert_eq!(
        (pool.algorithm.clone(), pool.protocol.clone()),
        (PoolAlgorithm::RoundRobin, PoolProtocol::Tcp)
    );
    assert_eq!(
        c.get_pool(pool.uuid).await.expect("get").as_ref(),
        Some(&pool)
    );
    assert!(
        c.list_pools(&Filter::all())
            .await
            .expect("pools")
            .iter()
            .any(|p| p.uuid == pool.uuid)
    );
    c.update_pool(
        pool.uuid,
        &UpdatePool {
            name: Some("tcp/80-b".into()),
            tags: None,
        },
    )
    .await
    .expect("rename pool");

    // Member.
    let member = c
        .create_pool_member(
            pool.uuid,
            &CreatePoolMember {
                name: "worker-1".into(),
                protocol_port: 30080,
                monitor_port: Some(30081),
                address: "10.100.0.11".parse().expect("ip"),
                subnet,
                enabled: None,
                tags: Tags::from([("ccm/node".to_string(), "worker-1".to_string())]),
            },
            Idempotency::Tag {
                key: "ccm/node".into(),
                value: "worker-1".into(),
            },
        )
        .await
        .expect("member");
    assert!(member.enabled);
    assert_eq!(member.pool.uuid, pool.uuid);
    assert_eq!(member.load_balancer.uuid, lb.uuid);
    assert_eq!(
        (member.protocol_port, member.monitor_port),
        (30080, Some(30081))
    );
    assert_eq!(member.subnet.uuid, subnet);
    assert_eq!(member.monitor_status, Some(MonitorStatus::NoMonitor));
    assert_eq!(
        c.get_pool_member(pool.uuid, member.uuid)
            .await
            .expect("get")
            .as_ref(),
        Some(&member)
    );
    let members = c
        .list_pool_members(pool.uuid, &Filter::tag("ccm/node", "worker-1"))
        .await
        .expect("members");
    assert_eq!(members.len(), 1);
    c.update_pool_member(
        pool.uuid,
        member.uuid,
        &UpdatePoolMember {
            enabled: Some(false),
            ..Default::default()
        },
    )
    .await
    .expect("disable");
    assert!(
        !c.get_pool_member(pool.uuid, member.uuid)
            .await
            .expect("get")
            .expect("present")
            .enabled
    );

    // Listener.
    let listener = c
        .create_listener(
            &CreateListener {
                pool: pool.uuid,
                name: "tcp/80".into(),
                protocol: ListenerProtocol::Tcp,
                protocol_port: 80,
                allowed_cidrs: vec![],
                timeout_client_data_ms: None,
                timeout_member_connect_ms: Some(4000),
                timeout_member_data_ms: None,
                tags: Tags::new(),
            },
            Idempotency::NaturalKey,
        )
        .await
        .expect("listener");
    assert_eq!(listener.pool.as_ref().map(|p| p.uuid), Some(pool.uuid));
    assert_eq!(listener.load_balancer.uuid, lb.uuid);
    assert!(listener.allowed_cidrs.is_empty());
    assert_eq!(
        (
            listener.timeout_client_data_ms,
            listener.timeout_member_connect_ms,
            listener.timeout_member_data_ms
        ),
        (50000, 4000, 50000)
    );
    c.update_listener(
        listener.uuid,
        &UpdateListener {
            allowed_cidrs: Some(vec!["10.0.0.0/24".into()]),
            ..Default::default()
        },
    )
    .await
    .expect("cidrs");
    c.update_listener(
        listener.uuid,
        &UpdateListener {
            timeout_client_data_ms: Some(60000),
            ..Default::default()
        },
    )
    .await
    .expect("timeout");
    let l = c
        .get_listener(listener.uuid)
        .await
        .expect("get")
        .expect("present");
    assert_eq!(l.allowed_cidrs, vec!["10.0.0.0/24".to_string()]);
    assert_eq!(l.timeout_client_data_ms, 60000);
    c.update_listener(
        listener.uuid,
        &UpdateListener {
            allowed_cidrs: Some(vec![]),
            ..Default::default()
        },
    )
    .await
    .expect("cidrs cleared");
    assert!(
        c.get_listener(listener.uuid)
            .await
            .expect("get")
            .expect("present")
            .allowed_cidrs
            .is_empty()
    );
    assert!(
        c.list_listeners(&Filter::all())
            .await
            .expect("listeners")
            .iter()
            .any(|x| x.uuid == listener.uuid)
    );

    // Health monitor.
    let monitor = c
        .create_health_monitor(
            &CreateHealthMonitor {
                pool: pool.uuid,
                kind: HealthMonitorType::Http,
                delay_s: Some(5),
                timeout_s: None,
                up_threshold: None,
                down_threshold: Some(4),
                http: HealthMonitorHttpRequest {
                    host: Some(Some("example.com".into())),
                    ..Default::default()
                },
                tags: Tags::new(),
            },
            Idempotency::NaturalKey,
        )
        .await
        .expect("monitor");
    assert_eq!(monitor.kind, HealthMonitorType::Http);
    assert_eq!(
        (
            monitor.delay_s,
            monitor.timeout_s,
            monitor.up_threshold,
            monitor.down_threshold
        ),
        (5, 1, 2, 4)
    );
    let http = monitor.http.clone().expect("http object");
    assert_eq!(
        (
            http.method.as_str(),
            http.url_path.as_str(),
            http.version.as_str()
        ),
        ("GET", "/", "1.1")
    );
    assert_eq!(http.expected_codes, vec!["200".to_string()]);
    assert_eq!(http.host.as_deref(), Some("example.com"));
    c.update_health_monitor(
        monitor.uuid,
        &UpdateHealthMonitor {
            http: Some(HealthMonitorHttpRequest {
                expected_codes: Some(vec!["200-204".into()]),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .await
    .expect("patch http");
    c.update_health_monitor(
        monitor.uuid,
        &UpdateHealthMonitor {
            up_threshold: Some(3),
            ..Default::default()
        },
    )
    .await
    .expect("patch number");
    let m = c
        .get_health_monitor(monitor.uuid)
        .await
        .expect("get")
        .expect("present");
    let http = m.http.expect("http");
    assert_eq!(http.expected_codes, vec!["200-204".to_string()]);
    assert_eq!(
        http.host.as_deref(),
        Some("example.com"),
        "the other http keys are kept"
    );
    assert_eq!(m.up_threshold, 3);
    assert!(
        c.list_health_monitors(&Filter::all())
            .await
            .expect("monitors")
            .iter()
            .any(|x| x.uuid == m.uuid)
    );

    // Deletes: by href and by id; 404 afterwards is success.
    c.delete_href(&l.href)
        .await
        .expect("delete listener by href");
    assert_eq!(c.get_listener(l.uuid).await.expect("get"), None);
    c.delete_health_monitor(monitor.uuid)
        .await
        .expect("delete monitor");
    assert_eq!(c.get_health_monitor(monitor.uuid).await.expect("get"), None);
    c.delete_href(&member.href)
        .await
        .expect("delete member by href");
    assert_eq!(
        c.get_pool_member(pool.uuid, member.uuid)
            .await
            .expect("get"),
        None
    );
    c.delete_pool_member(pool.uuid, member.uuid)
        .await
        .expect("already gone");
    c.delete_pool(pool.uuid).await.expect("delete pool");
    assert_eq!(c.get_pool(pool.uuid).await.expect("get"), None);
    c.delete_href(&lb.href).await.expect("delete LB by href");
    assert_eq!(c.get_load_balancer(lb.uuid).await.expect("get"), None);
    c.delete_load_balancer(lb.uuid)
        .await
        .expect("deleting again is success");
    c.delete_href(&l.href)
        .await
        .expect("href of a deleted listener");
}

#[tokio::test]
async fn base_url_forms_are_normalised() {
    let fc = start(Config::for_tests()).await;
    for base in [
        fc.base_url(),
        format!("{}/", fc.base_url()),
        fc.api_url(),
        format!("{}/", fc.api_url()),
    ] {
        let mut cfg = config(&fc, TOKEN);
        cfg.base_url = base.clone();
        let c = Client::new(cfg).expect("client");
        assert_eq!(c.base_url(), fc.base_url());
        c.list_servers(&Filter::all())
            .await
            .unwrap_or_else(|e| panic!("{base}: {e}"));
    }
    let mut cfg = config(&fc, TOKEN);
    cfg.base_url = "not a url".into();
    assert!(matches!(Client::new(cfg), Err(ClientError::Config(_))));
}

// -------------------------------------------------------------------------------------------
// 404 and errors
// -------------------------------------------------------------------------------------------

/// A mistyped API path: fakecloud answers it with 404 in the API's own words, as the real
/// API does for any unknown path. A missing collection shows the root is wrong: nothing is
/// "absent" then, not even a single server, and the error names the full URL.
#[tokio::test]
async fn a_wrong_api_root_is_never_taken_for_absence() {
    let fc = start(Config::for_tests()).await;
    let mut cfg = config(&fc, TOKEN);
    cfg.base_url = format!("{}/foo", fc.base_url());
    let c = Client::new(cfg).expect("client");
    let err = c
        .list_servers(&Filter::all())
        .await
        .expect_err("a wrong root");
    assert!(err.is_not_the_api(), "{err}");
    let url = format!("{}/foo/v1/servers", fc.base_url());
    let text = err.to_string();
    assert!(
        text.contains(&url) && text.contains("CLOUDSCALE_API_URL"),
        "{text}"
    );
    assert_eq!(c.root_health().wrong().map(|w| w.url), Some(url));
    assert!(!text.contains(TOKEN));
    let root = c.check_root().await.expect_err("the start-up check");
    assert!(root.is_not_the_api(), "{root}");
    // Nor is a deletion's 404: under the wrong root, deleting a load balancer that exists
    // is an error, not "already absent" (a Service's cleanup would drop its finalizer).
    let right = client(&fc);
    let wrong = Client::new({
        let mut cfg = config(&fc, TOKEN);
        cfg.base_url = format!("{}/foo", fc.base_url());
        cfg
    })
    .expect("client");
    let lb = right
        .create_load_balancer(&new_lb("kept"), Idempotency::NaturalKey)
        .await
        .expect("create")
        .uuid;
    let err = wrong
        .delete_load_balancer(lb)
        .await
        .expect_err("a wrong root's 404 on DELETE");
    assert!(err.is_not_the_api(), "{err}");
    assert!(right.get_load_balancer(lb).await.expect("read").is_some());
    // From the right root, a 404 on DELETE is "already absent".
    right
        .delete_load_balancer(random_uuid())
        .await
        .expect("absent is deleted");
    // A single server's 404 is the API's own body: absent, from the right root only.
    assert_eq!(right.get_server(random_uuid()).await.expect("ok"), None);
    right.check_root().await.expect("the right root");
    assert!(right.root_health().wrong().is_none());
}

#[tokio::test]
async fn not_found_only_for_404_and_failures_are_never_absent() {
    let fc = start(Config::for_tests()).await;
    let c = client(&fc);
    let id = random_uuid();
    assert_eq!(c.get_load_balancer(id).await.expect("ok"), None);
    assert_eq!(c.get_pool(id).await.expect("ok"), None);
    assert_eq!(c.get_pool_member(id, id).await.expect("ok"), None);
    assert_eq!(c.get_listener(id).await.expect("ok"), None);
    assert_eq!(c.get_health_monitor(id).await.expect("ok"), None);
    assert_eq!(c.get_floating_ip("192.0.2.1").await.expect("ok"), None);
    let err = c
        .update_load_balancer(
            id,
            &UpdateLoadBalancer {
                name: Some("x".into()),
                tags: None,
            },
        )
        .await
        .expect_err("PATCH of a missing LB");
    assert!(err.is_not_found(), "{err:?}");

    // A persistent 500 on the lookup is an error, never "absent".
    fault(
        &fc,
        FaultRule::new(Some("GET"), "/v1/load-balancers/*", status_fault(500, None)),
    );
    let err = c.get_load_balancer(id).await.expect_err("500 is not None");
    assert!(
        matches!(err, ClientError::Api { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(err.status(), Some(500));
    // All attempts were made.
    assert_eq!(
        count_requests(&fc, "GET", &format!("/v1/load-balancers/{id}")).await,
        1 + 5
    );
    // Nor is a 403 on a delete success.
    fault(
        &fc,
        FaultRule::new(Some("DELETE"), "/v1/**", status_fault(403, None)),
    );
    let err = c.delete_load_balancer(id).await.expect_err("403 on DELETE");
    assert_eq!(err.status(), Some(403));
}

#[tokio::test]
async fn validation_errors_are_not_retried_and_name_the_field() {
    let fc = start(Config::for_tests()).await;
    let c = client(&fc);
    let mut body = new_lb("bad");
    body.flavor = "lb-standard-non-existent".into();
    let err = c
        .create_load_balancer(&body, Idempotency::RequestId)
        .await
        .expect_err("400");
    match &err {
        ClientError::Api {
            status,
            body,
            endpoint,
            method,
        } => {
            assert_eq!(*status, 400);
            assert!(
                body.get("flavor")
                    .is_some_and(|m| m.contains("is not a valid choice")),
                "{body:?}"
            );
            assert_eq!(endpoint, "/v1/load-balancers");
            assert_eq!(method, "POST");
        }
        other => panic!("expected Api, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("400") && text.contains("flavor:"), "{text}");
    assert!(err.field("flavor").is_some());
    assert_eq!(
        count_requests(&fc, "POST", "/v1/load-balancers").await,
        1,
        "a 400 is not retried"
    );
    assert_eq!(
        count_requests(&fc, "GET", "/v1/load-balancers").await,
        0,
        "and not looked up"
    );
}

// -------------------------------------------------------------------------------------------
// Retries
// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn transient_failures_are_retried_until_success() {
    let fc = start(Config::for_tests()).await;
    seed(&fc).await;
    let c = client(&fc);
    let worker = c
        .list_servers(&Filter::all())
        .await
        .expect("list")
        .remove(0);
    clear_log(&fc).await;

    // 500, 502 on a GET one.
    fault(
        &fc,
        FaultRule::new(Some("GET"), "/v1/servers/*", status_fault(500, None)).times(1),
    );
    fault(
        &fc,
        FaultRule::new(Some("GET"), "/v1/servers/*", status_fault(502, None)).times(1),
    );
    let got = c
        .get_server(worker.uuid)
        .await
        .expect("succeeds after retries");
    assert_eq!(got.map(|s| s.uuid), Some(worker.uuid));
    let log = requests(&fc).await;
    let statuses: Vec<u64> = log
        .iter()
        .filter(|(m, _, _)| m == "GET")
        .map(|(_, _, s)| *s)
        .collect();
    assert_eq!(statuses, vec![500, 502, 200]);

    // A dropped connection and a timeout on a list.
    clear_log(&fc).await;
    fault(
        &fc,
        FaultRule::new(Some("GET"), "/v1/servers", FaultEffect::Drop).times(1),
    );
    let mut cfg = config(&fc, TOKEN);
    cfg.timeout = Duration::from_millis(300);
    let short = Client::new(cfg).expect("client");
    fault(
        &fc,
        FaultRule::new(Some("GET"), "/v1/servers", FaultEffect::Latency { ms: 800 }).times(1),
    );
    assert_eq!(
        short
            .list_servers(&Filter::all())
            .await
            .expect("list")
            .len(),
        2
    );
    // Three attempts: dropped, timed out (fakecloud abandons a held GET when the client
    // hangs up, so it never reaches the log), answered.
    assert_eq!(
        short.counters(),
        CallCounts {
            reads: 3,
            writes: 0
        }
    );
    let log = requests(&fc).await;
    assert_eq!(
        log.iter()
            .filter(|(m, p, _)| m == "GET" && p == "/v1/servers")
            .map(|(_, _, s)| *s)
            .collect::<Vec<_>>(),
        vec![0, 200]
    );

    // PATCH and DELETE are retried too; a DELETE whose answer got lost is repeated and
    // succeeds (204, or 404 if the first one was executed after all).
    let fip = c
        .create_floating_ip(
            &CreateFloatingIp {
                ip_version: 4,
                ..Default::default()
            },
            Idempotency::RequestId,
        )
        .await
        .expect("fip");
    let fip_path = format!("/v1/floating-ips/{}", fip.ip());
    fault(
        &fc,
        FaultRule::new(Some("PATCH"), "/v1/floating-ips/*", status_fault(503, None)).times(2),
    );
    c.assign_floating_ip_to_server(fip.ip(), worker.uuid)
        .await
        .expect("PATCH after 503s");
    assert_eq!(count_requests(&fc, "PATCH", &fip_path).await, 3);
    fault(
        &fc,
        FaultRule::new(
            Some("DELETE"),
            "/v1/floating-ips/*",
            FaultEffect::Latency { ms: 800 },
        )
        .times(1),
    );
    short
        .delete_floating_ip(fip.ip())
        .await
        .expect("DELETE: timeout, then 404 = gone");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let deletes: Vec<u64> = requests(&fc)
        .await
        .into_iter()
        .filter(|(m, p, _)| m == "DELETE" && *p == fip_path)
        .map(|(_, _, s)| s)
        .collect();
    assert!(deletes.contains(&204), "{deletes:?}");
    assert_eq!(c.get_floating_ip(fip.ip()).await.expect("get"), None);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let fc = start(Config::for_tests()).await;
    let c = client(&fc);
    fault(
        &fc,
        FaultRule::new(
            Some("GET"),
            "/v1/load-balancers",
            status_fault(503, Some(1)),
        )
        .times(1),
    );
    fault(
        &fc,
        FaultRule::new(
            Some("GET"),
            "/v1/load-balancers",
            status_fault(429, Some(1)),
        )
        .times(1),
    );
    let started = Instant::now();
    c.list_load_balancers(&Filter::all())
        .await
        .expect("succeeds after 503 and 429");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2),
        "Retry-After: 1 twice, took {took:?}"
    );
    assert!(took < Duration::from_millis(3500), "took {took:?}");
    let statuses: Vec<u64> = requests(&fc).await.into_iter().map(|(_, _, s)| s).collect();
    assert_eq!(statuses, vec![503, 429, 200]);

    // Retry-After is capped by the policy.
    let mut cfg = config(&fc, TOKEN);
    cfg.retry.max_retry_after = Duration::from_millis(100);
    let capped = Client::new(cfg).expect("client");
    fault(
        &fc,
        FaultRule::new(Some("GET"), "/v1/networks", status_fault(503, Some(30))).times(1),
    );
    let started = Instant::now();
    capped
        .list_networks(&Filter::all())
        .await
        .expect("succeeds");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retries_give_up_after_max_attempts() {
    let fc = start(Config::for_tests()).await;
    let mut cfg = config(&fc, TOKEN);
    cfg.retry.max_attempts = 3;
    let c = Client::new(cfg).expect("client");
    fault(
        &fc,
        FaultRule::new(None, "/v1/load-balancers/**", status_fault(503, None)),
    );
    let err = c.list_pools(&Filter::all()).await.expect_err("503 forever");
    assert_eq!(err.status(), Some(503));
    assert!(err.is_transient());
    assert_eq!(
        count_requests(&fc, "GET", "/v1/load-balancers/pools").await,
        3
    );
}

// -------------------------------------------------------------------------------------------
// POST idempotency
// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn dropped_post_is_looked_up_then_retried_once() {
    let fc = start(Config::for_tests()).await;
    let c = client(&fc);
    fault(
        &fc,
        FaultRule::new(Some("POST"), "/v1/load-balancers", FaultEffect::Drop).times(1),
    );
    let lb = c
        .create_load_balancer(&new_lb("svc-a"), Idempotency::RequestId)
        .await
        .expect("created after a drop");
    let all = c.list_load_balancers(&Filter::all()).await.expect("list");
    assert_eq!(all.len(), 1, "exactly one LB");
    assert_eq!(all[0].uuid, lb.uuid);
    let log: Vec<(String, u64)> = requests(&fc)
        .await
        .into_iter()
        .filter(|(_, p, _)| p == "/v1/load-balancers")
        .map(|(m, _, s)| (m, s))
        .collect();
    // POST dropped, lookup by request-id tag finds nothing, POST again; then the test's list.
    assert_eq!(
        log,
        vec![
            ("POST".into(), 0),
            ("GET".into(), 200),
            ("POST".into(), 201),
            ("GET".into(), 200)
        ]
    );

    // The same with the natural key, for a pool, and with 5xx (outcome unknown as well).
    fault(
        &fc,
        FaultRule::new(
            Some("POST"),
            "/v1/load-balancers/pools",
            status_fault(502, None),
        )
        .times(2),
    );
    let pool = c
        .create_pool(&new_pool(lb.uuid, "tcp/80"), Idempotency::NaturalKey, &[])
        .await
        .expect("pool");
    let pools = c.list_pools(&Filter::all()).await.expect("pools");
    assert_eq!(pools.len(), 1);
    assert_eq!(pools[0].uuid, pool.uuid);
    assert_eq!(
        count_requests(&fc, "POST", "/v1/load-balancers/pools").await,
        3
    );
}

#[tokio::test]
async fn a_replacement_pool_is_not_mistaken_for_the_pool_it_replaces() {
    // Make-before-break keeps the old pool (same name, other algorithm) while the new one
    // is created: a create whose outcome is unknown must find the new one or retry, never
    // return the old one.
    let fc = start(Config::for_tests()).await;
    let c = Client::new(config(&fc, TOKEN)).expect("client");
    let lb = c
        .create_load_balancer(&new_lb("svc-r"), Idempotency::NaturalKey)
        .await
        .expect("lb");
    let old = c
        .create_pool(&new_pool(lb.uuid, "tcp/http"), Idempotency::NaturalKey, &[])
        .await
        .expect("old pool");
    let replacement = CreatePool {
        algorithm: PoolAlgorithm::LeastConnections,
        ..new_pool(lb.uuid, "tcp/http")
    };
    for effect in [status_fault(502, None), FaultEffect::LoseAnswer] {
        fault(
            &fc,
            FaultRule::new(Some("POST"), "/v1/load-balancers/pools", effect).times(1),
        );
        let new = c
            .create_pool(&replacement, Idempotency::NaturalKey, &[])
            .await
            .expect("replacement pool");
        assert_ne!(new.uuid, old.uuid, "the old pool returned as the new one");
        assert_eq!(new.algorithm, PoolAlgorithm::LeastConnections);
        let pools = c.list_pools(&Filter::all()).await.expect("pools");
        assert_eq!(pools.len(), 2, "old and new, no duplicate: {pools:?}");
        c.delete_pool(new.uuid).await.expect("delete");
    }
    // Found by the simulation (seed 43016960): a replacement of the same algorithm and
    // protocol (leaving externalTrafficPolicy: Local) whose POST was dropped. Only the
    // pools it is made beside tell the old one apart.
    let besides = [old.uuid];
    for effect in [FaultEffect::Drop, FaultEffect::LoseAnswer] {
        fault(
            &fc,
            FaultRule::new(Some("POST"), "/v1/load-balancers/pools", effect).times(1),
        );
        let new = c
            .create_pool(
                &new_pool(lb.uuid, "tcp/http"),
                Idempotency::NaturalKey,
                &besides,
            )
            .await
            .expect("replacement pool");
        assert_ne!(new.uuid, old.uuid, "the old pool returned as the new one");
        let pools = c.list_pools(&Filter::all()).await.expect("pools");
        assert_eq!(pools.len(), 2, "old and new, no duplicate: {pools:?}");
        c.delete_pool(new.uuid).await.expect("delete");
    }
}

#[tokio::test]
async fn lost_answer_to_an_executed_post_returns_the_created_resource() {
    let fc = start(Config::for_tests()).await;
    let mut cfg = config(&fc, TOKEN);
    // The POST is held 600 ms, then executed; the client gives up after 300 ms and looks the
    // resource up once the request had time to land.
    cfg.timeout = Duration::from_millis(300);
    cfg.retry.settle_before_lookup = Duration::from_millis(800);
    let c = Client::new(cfg).expect("client");
    fault(
        &fc,
        FaultRule::new(
            Some("POST"),
            "/v1/load-balancers",
            FaultEffect::Latency { ms: 600 },
        )
        .times(1),
    );
    let started = Instant::now();
    let lb = c
        .create_load_balancer(&new_lb("svc-b"), Idempotency::RequestId)
        .await
        .expect("found by lookup");
    assert!(
        started.elapsed() >= Duration::from_millis(1100),
        "{:?}",
        started.elapsed()
    );
    let all = c.list_load_balancers(&Filter::all()).await.expect("list");
    assert_eq!(all.len(), 1, "no second LB: {all:?}");
    assert_eq!(all[0].uuid, lb.uuid);
    assert_eq!(
        count_requests(&fc, "POST", "/v1/load-balancers").await,
        1,
        "POST sent once"
    );

    // Same for a member, looked up by name within its pool.
    seed(&fc).await;
    let subnet = c
        .list_subnets(&Filter::all())
        .await
        .expect("subnets")
        .into_iter()
        .find(|s| s.cidr == "10.100.0.0/24")
        .expect("subnet");
    let pool = c
        .create_pool(&new_pool(lb.uuid, "tcp/443"), Idempotency::NaturalKey, &[])
        .await
        .expect("pool");
    let members = format!("/v1/load-balancers/pools/{}/members", pool.uuid);
    fault(
        &fc,
        FaultRule::new(Some("POST"), &members, FaultEffect::Latency { ms: 600 }).times(1),
    );
    let m = c
        .create_pool_member(
            pool.uuid,
            &CreatePoolMember {
                name: "worker-1".into(),
                protocol_port: 30443,
                monitor_port: None,
                address: "10.100.0.11".parse().expect("ip"),
                subnet: subnet.uuid,
                enabled: None,
                tags: Tags::new(),
            },
            Idempotency::NaturalKey,
        )
        .await
        .expect("member found by lookup");
    let listed = c
        .list_pool_members(pool.uuid, &Filter::all())
        .await
        .expect("members");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].uuid, m.uuid);
    assert_eq!(count_requests(&fc, "POST", &members).await, 1);
}

#[tokio::test]
async fn never_idempotency_returns_the_unknown_outcome() {
    let fc = start(Config::for_tests()).await;
    let c = client(&fc);
    fault(
        &fc,
        FaultRule::new(Some("POST"), "/v1/load-balancers", FaultEffect::Drop).times(1),
    );
    let err = c
        .create_load_balancer(&new_lb("svc-c"), Idempotency::Never)
        .await
        .expect_err("not repeated");
    assert!(matches!(err, ClientError::Transport { .. }), "{err:?}");
    assert_eq!(count_requests(&fc, "POST", "/v1/load-balancers").await, 1);
    assert_eq!(count_requests(&fc, "GET", "/v1/load-balancers").await, 0);
    // A 429 proves nothing happened: repeated without a lookup even then.
    fault(
        &fc,
        FaultRule::new(Some("POST"), "/v1/load-balancers", status_fault(429, None)).times(1),
    );
    c.create_load_balancer(&new_lb("svc-c"), Idempotency::Never)
        .await
        .expect("after 429");
    assert_eq!(count_requests(&fc, "POST", "/v1/load-balancers").await, 3);
    assert_eq!(count_requests(&fc, "GET", "/v1/load-balancers").await, 0);
}

// -------------------------------------------------------------------------------------------
// Token: rotated from a file (never shown: tests/token_logs.rs)
// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_rotated_token_file_is_used_on_the_next_request() {
    let mut fcfg = Config::for_tests();
    fcfg.tokens = vec!["token-one".into(), "token-two".into()];
    let fc = start(fcfg).await;
    let dir = std::env::temp_dir().join(format!("ccm-api-client-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("token");
    std::fs::write(&path, "token-one\n").expect("write");
    let mut cfg = config(&fc, TOKEN);
    cfg.token = Arc::new(TokenSource::from_file(&path).expect("source"));
    let c = Client::new(cfg).expect("client");

    c.list_servers(&Filter::all()).await.expect("first token");
    std::fs::write(&path, "token-two\n").expect("rotate");
    c.create_load_balancer(&new_lb("rot"), Idempotency::RequestId)
        .await
        .expect("second token, a write");
    // A read-only token: reads pass, writes get 403.
    std::fs::write(&path, "read-only-token").expect("rotate");
    c.list_servers(&Filter::all())
        .await
        .expect("read-only token reads");
    let err = c
        .create_load_balancer(&new_lb("ro"), Idempotency::RequestId)
        .await
        .expect_err("403");
    assert_eq!(err.status(), Some(403), "{err}");
    // An unknown token: 401 at once, proving the file is read per request; not retried.
    clear_log(&fc).await;
    std::fs::write(&path, "unknown-token").expect("rotate");
    let err = c.list_servers(&Filter::all()).await.expect_err("401");
    assert_eq!(err.status(), Some(401), "{err}");
    assert!(!err.to_string().contains("unknown-token"));
    assert_eq!(count_requests(&fc, "GET", "/v1/servers").await, 1);
    // A missing file is a token error, no request is sent.
    std::fs::remove_file(&path).expect("remove");
    let err = c.list_servers(&Filter::all()).await.expect_err("no token");
    assert!(matches!(err, ClientError::Token(_)), "{err:?}");
    assert_eq!(count_requests(&fc, "GET", "/v1/servers").await, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

// -------------------------------------------------------------------------------------------
// Rate limit, metrics, counters
// -------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_rate_limit_paces_requests() {
    let fc = start(Config::for_tests()).await;
    let mut cfg = config(&fc, TOKEN);
    cfg.rate_limit = Some(RateLimit {
        requests_per_second: 20.0,
        burst: 5,
    });
    let c = Client::new(cfg).expect("client");
    let started = Instant::now();
    for _ in 0..5 {
        c.list_servers(&Filter::all()).await.expect("burst");
    }
    let burst = started.elapsed();
    assert!(
        burst < Duration::from_millis(200),
        "the burst passes at once: {burst:?}"
    );
    // 15 more at 20/s (the bucket is empty now): at least 0.7 s.
    let tasks: Vec<_> = (0..15)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.list_servers(&Filter::all()).await.map(|v| v.len()) })
        })
        .collect();
    for t in tasks {
        t.await.expect("join").expect("list");
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(700),
        "(20 - 5) / 20 s at least: {took:?}"
    );
    assert!(took < Duration::from_millis(2000), "{took:?}");
}

#[tokio::test]
async fn metrics_use_endpoint_templates_and_counters_count_calls() {
    let fc = start(Config::for_tests()).await;
    seed(&fc).await;
    let metrics = Arc::new(Metrics::new());
    let mut cfg = config(&fc, TOKEN);
    cfg.metrics = Some(metrics.clone());
    let c = Client::new(cfg).expect("client");
    let server = c
        .list_servers(&Filter::all())
        .await
        .expect("list")
        .remove(0);
    let scoped = c.with_own_counters();
    scoped.get_server(server.uuid).await.expect("get");
    let lb = scoped
        .create_load_balancer(&new_lb("m"), Idempotency::RequestId)
        .await
        .expect("lb");
    let pool = scoped
        .create_pool(&new_pool(lb.uuid, "tcp/80"), Idempotency::RequestId, &[])
        .await
        .expect("pool");
    scoped
        .list_pool_members(pool.uuid, &Filter::tag("a", "b"))
        .await
        .expect("members");
    scoped
        .get_pool_member(pool.uuid, random_uuid())
        .await
        .expect("member 404");
    let fip = scoped
        .create_floating_ip(
            &CreateFloatingIp {
                ip_version: 6,
                ..Default::default()
            },
            Idempotency::RequestId,
        )
        .await
        .expect("fip");
    scoped.get_floating_ip(fip.ip()).await.expect("fip get");
    scoped.delete_href(&pool.href).await.expect("delete pool");
    fault(
        &fc,
        FaultRule::new(Some("GET"), "/v1/load-balancers/*", FaultEffect::Drop).times(1),
    );
    scoped
        .get_load_balancer(lb.uuid)
        .await
        .expect("after a drop");

    assert_eq!(
        scoped.counters(),
        CallCounts {
            reads: 6,
            writes: 4
        }
    );
    assert_eq!(
        c.counters(),
        CallCounts {
            reads: 1,
            writes: 0
        },
        "the parent counts only its own"
    );

    let by_endpoint = metrics.api_requests_by_endpoint();
    let expected = [
        ("/v1/servers", "GET", 1),
        ("/v1/servers/{uuid}", "GET", 1),
        ("/v1/load-balancers", "POST", 1),
        ("/v1/load-balancers/pools", "POST", 1),
        ("/v1/load-balancers/pools/{uuid}/members", "GET", 1),
        ("/v1/load-balancers/pools/{uuid}/members/{uuid}", "GET", 1),
        ("/v1/floating-ips", "POST", 1),
        ("/v1/floating-ips/{ip}", "GET", 1),
        ("/v1/load-balancers/pools/{uuid}", "DELETE", 1),
        ("/v1/load-balancers/{uuid}", "GET", 2),
    ];
    for (e, m, n) in expected {
        assert_eq!(
            by_endpoint.get(&(e.to_string(), m.to_string())),
            Some(&n),
            "{e} {m}: {by_endpoint:?}"
        );
    }
    assert_eq!(metrics.api_request_total(), 11);
    let text = metrics.render();
    for id in [server.uuid, lb.uuid, pool.uuid].map(|u| u.to_string()) {
        assert!(!text.contains(&id), "{id} in the metrics");
    }
    assert!(!text.contains(fip.ip()), "{} in the metrics", fip.ip());
    assert!(
        text.contains(r#"endpoint="/v1/load-balancers/{uuid}",method="GET",code="<error>""#),
        "{text}"
    );
    assert!(text.contains(
        r#"endpoint="/v1/load-balancers/pools/{uuid}/members/{uuid}",method="GET",code="404""#
    ));
}
