//! Port edits end to end, checked against every configuration fakecloud's data plane
//! applied (not only the end state): swapping port numbers or names and cutting a port
//! over to a removed port's number complete without an API refusal, and no listener is
//! ever routed to another port's backend; switching the traffic policy completes both ways;
//! a TCP port added to a UDP Service leaves the UDP port's check alone.

use fakecloud::{ApiRules, Strictness};
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, LIMIT, Route, downtime, lb_service};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// (protocol, port) → node port, as the Service says now.
async fn node_ports(bed: &Bed, name: &str) -> BTreeMap<(String, u16), u16> {
    let svc = bed.services().get(name).await.expect("service");
    svc.spec
        .and_then(|s| s.ports)
        .unwrap_or_default()
        .iter()
        .map(|p| {
            (
                (
                    p.protocol.clone().unwrap_or("TCP".into()).to_lowercase(),
                    p.port as u16,
                ),
                p.node_port.unwrap_or_default() as u16,
            )
        })
        .collect()
}

/// The Service's ports as JSON, with `edit` applied to each (name, port) and the node
/// ports Kubernetes allocated kept.
async fn ports_edited(
    bed: &Bed,
    name: &str,
    edit: impl Fn(&str, u16) -> Option<(String, u16)>,
) -> Value {
    let svc = bed.services().get(name).await.expect("service");
    let ports: Vec<Value> = svc
        .spec
        .and_then(|s| s.ports)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            let (n, port) = edit(p.name.as_deref().unwrap_or(""), p.port as u16)?;
            Some(json!({"name": n, "port": port, "protocol": p.protocol,
                        "nodePort": p.node_port, "targetPort": 8080}))
        })
        .collect();
    json!(ports)
}

/// Every route of every applied configuration goes from a port to the node port that
/// served it before the edit or to the one that serves it after, never to both at once.
fn assert_never_misrouted(
    history: &[(String, BTreeSet<Route>)],
    before: &BTreeMap<(String, u16), u16>,
    after: &BTreeMap<(String, u16), u16>,
) {
    for (op, routes) in history {
        let mut by_port: BTreeMap<(String, u16), BTreeSet<u16>> = BTreeMap::new();
        for (proto, port, np) in routes {
            by_port
                .entry((proto.clone(), *port))
                .or_default()
                .insert(*np);
        }
        for (key, nps) in by_port {
            let old = before.get(&key).copied();
            let new = after.get(&key).copied();
            let only_old = old.is_some_and(|o| nps == BTreeSet::from([o]));
            let only_new = new.is_some_and(|n| nps == BTreeSet::from([n]));
            assert!(
                only_old || only_new,
                "after {op}: {key:?} routes to node ports {nps:?} (before {old:?}, after {new:?})"
            );
        }
    }
}

/// Waits until every listener routes as `after` says and the load balancer is settled.
async fn converge_to(bed: &Bed, after: &BTreeMap<(String, u16), u16>) {
    let ports = after.len();
    bed.converge("the ports as edited", ports, |s| {
        s.listeners.iter().all(|l| {
            let key = (
                l["protocol"].as_str().unwrap_or_default().to_string(),
                l["protocol_port"].as_u64().unwrap_or_default() as u16,
            );
            let pool = s
                .pools
                .iter()
                .find(|p| p["uuid"] == l["pool"]["uuid"])
                .and_then(|p| p["name"].as_str())
                .unwrap_or_default();
            let want = after.get(&key).copied();
            let members = s.members.get(pool).cloned().unwrap_or_default();
            want.is_some()
                && !members.is_empty()
                && members
                    .iter()
                    .all(|m| m["protocol_port"].as_u64() == want.map(u64::from))
        })
    })
    .await;
}

/// No write since the log was cleared was refused (reads may miss: the test's own
/// snapshots race with deletions).
async fn assert_no_refused_request(bed: &Bed) {
    let refused: Vec<Value> = bed
        .writes()
        .await
        .into_iter()
        .filter(|r| {
            r["status"]
                .as_u64()
                .is_some_and(|s| (400..500).contains(&s))
        })
        .collect();
    assert!(refused.is_empty(), "refused by the API: {refused:#?}");
}

/// Creates the Service `name` with `ports`, waits until it is converged; its load balancer.
async fn converged_service(bed: &Bed, name: &str, ports: Value) -> String {
    let n = ports.as_array().map_or(0, Vec::len);
    bed.create_converged(&lb_service(name, ports, json!({})), n)
        .await;
    bed.lb_uuid_of(name).await
}

async fn two_port_service(bed: &Bed) -> String {
    let ports = json!([{"name": "web", "port": 80, "targetPort": 8080},
                       {"name": "https", "port": 8443, "targetPort": 8443}]);
    converged_service(bed, "web", ports).await
}

/// A bed with the two-port Service converged: its load balancer, node ports and the
/// virtual time the edit starts at (the request log cleared).
async fn two_ports_before_an_edit() -> (Bed, String, BTreeMap<(String, u16), u16>, String) {
    let bed = Bed::start_default().await;
    let lb = two_port_service(&bed).await;
    let before = node_ports(&bed, "web").await;
    bed.clear_request_log().await;
    let t0 = bed.now();
    (bed, lb, before, t0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_two_port_numbers_never_routes_a_port_to_the_other_backend() {
    let (bed, lb, before, _) = two_ports_before_an_edit().await;
    let applied_before = bed.applied_routes(&lb).len();
    let ports = ports_edited(&bed, "web", |name, port| {
        Some((name.to_string(), if port == 80 { 8443 } else { 80 }))
    })
    .await;
    bed.patch("web", &json!({"spec": {"ports": ports}})).await;
    let after = node_ports(&bed, "web").await;
    assert_ne!(before, after);
    converge_to(&bed, &after).await;
    assert_no_refused_request(&bed).await;
    assert_never_misrouted(&bed.applied_routes(&lb), &before, &after);
    // At most a listener recreation: each port is without a listener for at most one
    // applied reconfiguration (counted in operations, which the scaled clock cannot
    // stretch; the time follows from the model's 10 s per operation).
    let history = bed.applied_routes(&lb);
    for port in [80, 8443] {
        let mut gap = 0;
        let mut longest = 0;
        for (_, routes) in &history[applied_before..] {
            if routes.iter().any(|(_, p, _)| *p == port) {
                gap = 0;
            } else {
                gap += 1;
                longest = longest.max(gap);
            }
        }
        assert!(
            longest <= 1,
            "port {port} had no listener for {longest} reconfigurations"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_two_port_names_renames_the_pools_and_routes_nothing_anew() {
    let (bed, lb, before, t0) = two_ports_before_an_edit().await;
    let ports = ports_edited(&bed, "web", |name, port| {
        Some((
            if name == "web" { "https" } else { "web" }.to_string(),
            port,
        ))
    })
    .await;
    bed.patch("web", &json!({"spec": {"ports": ports}})).await;
    bed.converge("pools renamed", 2, |s| {
        let names = s.pool_names();
        names == ["tcp/https", "tcp/web"]
            && s.listeners.iter().all(|l| {
                let pool = s
                    .pools
                    .iter()
                    .find(|p| p["uuid"] == l["pool"]["uuid"])
                    .and_then(|p| p["name"].as_str())
                    .unwrap_or_default();
                (l["protocol_port"] == 80) == (pool == "tcp/https")
            })
    })
    .await;
    assert_no_refused_request(&bed).await;
    assert_eq!(
        node_ports(&bed, "web").await,
        before,
        "Kubernetes routing kept"
    );
    assert_never_misrouted(&bed.applied_routes(&lb), &before, &before);
    let writes = bed.writes().await;
    assert!(
        writes.iter().all(|w| w["method"] == "PATCH"),
        "renames only: {writes:#?}"
    );
    let av = bed.availability(&lb, &t0).await;
    assert_eq!((downtime(&av, 80), downtime(&av, 8443)), (0.0, 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cutting_over_to_a_removed_ports_number_completes() {
    let bed = Bed::start_default().await;
    let ports = json!([{"name": "old", "port": 80, "targetPort": 8080},
                       {"name": "new", "port": 8080, "targetPort": 8081}]);
    let lb = converged_service(&bed, "cut", ports).await;
    let before = node_ports(&bed, "cut").await;
    bed.clear_request_log().await;
    let ports = ports_edited(&bed, "cut", |name, _| {
        (name == "new").then(|| ("new".to_string(), 80))
    })
    .await;
    bed.patch("cut", &json!({"spec": {"ports": ports}})).await;
    let after = node_ports(&bed, "cut").await;
    converge_to(&bed, &after).await;
    assert_no_refused_request(&bed).await;
    assert_never_misrouted(&bed.applied_routes(&lb), &before, &after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_the_traffic_policy_completes_both_ways() {
    switch_traffic_policy(Strictness::Strict).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_the_traffic_policy_completes_both_ways_when_the_api_allows_duplicate_members() {
    switch_traffic_policy(Strictness::Lenient).await;
}

/// Cluster → Local → Cluster under fakecloud's `duplicate_members` rule set to `rule`.
async fn switch_traffic_policy(rule: Strictness) {
    let bed = Bed::start_default().await;
    bed.set_rules(ApiRules {
        duplicate_members: rule,
        ..ApiRules::default()
    });
    let lb = two_port_service(&bed).await;
    bed.endpoint_on("web", "node-2").await;
    let node2 = bed.node_ip("node-2").await;
    bed.clear_request_log().await;
    bed.patch("web", &json!({"spec": {"externalTrafficPolicy": "Local"}}))
        .await;
    let hc = eventually("a health-check node port", LIMIT, || async {
        let s = bed.services().get("web").await.ok()?;
        s.spec?.health_check_node_port
    })
    .await;
    // An unrelated change made meanwhile is applied too.
    bed.annotate(
        "web",
        "k8s.cloudscale.ch/loadbalancer-timeout-client-data-ms",
        "60000",
    )
    .await;
    let local = eventually(
        "Local: http checks of the health-check node port",
        LIMIT,
        || async {
            let s = bed.snap().await;
            let members: Vec<&Value> = s.members.values().flatten().collect();
            (s.lbs[0]["status"] == "running"
                && s.pools.len() == 2
                && s.monitors.iter().all(|m| m["type"] == "http")
                && s.listeners
                    .iter()
                    .all(|l| l["timeout_client_data_ms"] == 60000)
                && !members.is_empty()
                && members.iter().all(|m| m["monitor_port"] == hc)
                && members
                    .iter()
                    .all(|m| (m["monitor_status"] == "up") == (m["address"] == node2.as_str())))
            .then_some(s)
        },
    )
    .await;
    assert_eq!(local.listeners.len(), 2);
    assert_no_refused_request(&bed).await;

    bed.patch(
        "web",
        &json!({"spec": {"externalTrafficPolicy": "Cluster"}}),
    )
    .await;
    bed.converge("Cluster: tcp checks of the node ports, all up", 2, |s| {
        s.monitors.iter().all(|m| m["type"] == "tcp")
            && s.members
                .values()
                .flatten()
                .all(|m| m["monitor_port"] == m["protocol_port"])
    })
    .await;
    assert_no_refused_request(&bed).await;
    assert_eq!(bed.cloud_list("/load-balancers").await.len(), 1);
    let writes = bed.writes_of_two_passes().await;
    assert!(writes.is_empty(), "converged, yet: {writes:#?}");
    let _ = lb;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_a_tcp_port_to_a_udp_service_keeps_the_udp_check() {
    let bed = Bed::start_default().await;
    let ports = json!([{"name": "syslog", "port": 514, "protocol": "UDP", "targetPort": 514}]);
    let lb = converged_service(&bed, "syslog", ports).await;
    let t0 = bed.now();
    let mut ports = ports_edited(&bed, "syslog", |n, p| Some((n.to_string(), p))).await;
    if let Some(list) = ports.as_array_mut() {
        list.push(json!({"name": "tls", "port": 6514, "protocol": "TCP", "targetPort": 6514}));
    }
    bed.patch("syslog", &json!({"spec": {"ports": ports}}))
        .await;
    let s = bed
        .converge("a TCP port next to the UDP one", 2, |s| {
            s.listeners.len() == 2
        })
        .await;
    let kind_of = |pool: &str| {
        let uuid = s
            .pools
            .iter()
            .find(|p| p["name"] == pool)
            .map(|p| p["uuid"].clone())
            .unwrap_or_default();
        s.monitors
            .iter()
            .find(|m| m["pool"]["uuid"] == uuid)
            .map(|m| m["type"].clone())
            .unwrap_or_default()
    };
    assert_eq!(kind_of("udp/syslog"), "udp-connect");
    assert_eq!(kind_of("tcp/tls"), "tcp");
    let av = bed.availability(&lb, &t0).await;
    let udp_down: f64 = av
        .iter()
        .filter(|e| e["kind"] == "vip" && e["port"] == 514 && e["protocol"] == "udp")
        .map(|e| e["downtime_s"].as_f64().unwrap_or(f64::INFINITY))
        .fold(0.0, f64::max);
    assert_eq!(udp_down, 0.0, "{av:#?}");
}
