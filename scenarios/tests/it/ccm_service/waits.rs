//! Changes that wait for new members, end to end: the wait holds no worker (other Services
//! are served meanwhile), requires only the members that can come up (those on nodes whose
//! current member is up), is superseded by a newer edit or a deletion, reuses its
//! replacement pool on every pass, and is reported as held after
//! `--load-balancer-members-timeout`.

use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, CcmBedConfig, FAST_FLAGS, LIMIT, lb_service};
use serde_json::{Value, json};
use std::time::Instant;

const A: &str = "k8s.cloudscale.ch/loadbalancer-";

fn key(suffix: &str) -> String {
    format!("{A}{suffix}")
}

fn one_port() -> Value {
    json!([{"name": "http", "port": 80, "targetPort": 8080}])
}

/// Pools of the Service's load balancer: (name, algorithm, has a listener).
async fn pools_of(bed: &Bed, lb: &str) -> Vec<(String, String, bool)> {
    let s = bed.snap().await;
    s.pools
        .iter()
        .filter(|p| p["load_balancer"]["uuid"] == lb)
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["algorithm"].as_str().unwrap_or_default().to_string(),
                s.listeners.iter().any(|l| l["pool"]["uuid"] == p["uuid"]),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_policy_changes_complete_although_nodes_without_endpoints_never_come_up() {
    let bed = Bed::start_default().await;
    let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(json!({
        "metadata": {"name": "loc"},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": one_port()},
    }))
    .expect("service");
    bed.create(&svc).await;
    bed.endpoint_on("loc", "node-1").await;
    let lb = bed.lb_uuid_of("loc").await;
    let node1 = bed.node_ip("node-1").await;
    let node1_only = |s: &scenarios::testbed::Snap| {
        s.members
            .values()
            .flatten()
            .all(|m| (m["monitor_status"] == "up") == (m["address"] == node1.as_str()))
    };
    let settled = |s: &scenarios::testbed::Snap| {
        s.lbs.len() == 1
            && s.lbs[0]["status"] == "running"
            && s.pools.len() == 1
            && s.listeners.len() == 1
            && s.monitors.len() == 1
            && node1_only(s)
    };
    eventually("node-1 up, the others down", LIMIT, || async {
        settled(&bed.snap().await).then_some(())
    })
    .await;
    // The usual ingress-nginx setup: the PROXY protocol, a new pool next to the old one.
    let started = Instant::now();
    bed.annotate("loc", &key("pool-protocol"), "proxy").await;
    eventually("the PROXY protocol pool serving alone", LIMIT, || async {
        let s = bed.snap().await;
        (settled(&s) && s.pools[0]["protocol"] == "proxy").then_some(())
    })
    .await;
    eprintln!("Local policy change done in {:?}", started.elapsed());
    assert_eq!(pools_of(&bed, &lb).await.len(), 1);
}

/// A CCM with one service worker, whose changes are reported as held after 2 s.
fn one_worker_held_after_two_seconds() -> CcmBedConfig {
    let mut flags: Vec<String> = FAST_FLAGS.iter().map(|s| s.to_string()).collect();
    flags.extend([
        "--load-balancer-members-timeout".into(),
        "2s".into(),
        "--concurrent-service-syncs".into(),
        "1".into(),
    ]);
    CcmBedConfig {
        ccm_flags: Some(flags),
        ..CcmBedConfig::default()
    }
}

/// A change whose new members can never come up while the old ones serve: another
/// algorithm (a new pool) checked over HTTP for a status the backends never answer.
fn impossible_change() -> Value {
    json!({"metadata": {"annotations": {
        key("pool-algorithm"): "source_ip",
        key("health-monitor-type"): "http",
        key("health-monitor-http"): r#"{"expected_codes": ["204"]}"#,
    }}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_cannot_complete_is_held_without_holding_a_worker() {
    let bed = Bed::start(one_worker_held_after_two_seconds()).await;
    bed.create_converged(&lb_service("stuck", one_port(), json!({})), 1)
        .await;
    let lb = bed.lb_uuid_of("stuck").await;
    bed.patch("stuck", &impossible_change()).await;
    bed.wait_event("stuck", "WaitingForLoadBalancer", "to be up")
        .await;

    // The only worker is free: another Service is served while the change still waits.
    bed.create(&lb_service(
        "other",
        json!([{"name": "http", "port": 81, "targetPort": 8080}]),
        json!({}),
    ))
    .await;
    bed.wait_ingress("other").await;
    assert_eq!(pools_of(&bed, &lb).await.len(), 2, "the change still waits");

    bed.wait_event("stuck", "ChangeHeld", "New members found down usually mean")
        .await;
    // Pass after pass, one replacement pool, and the old one still serves.
    let pools = pools_of(&bed, &lb).await;
    assert_eq!(pools.len(), 2, "{pools:?}");
    assert!(
        pools
            .iter()
            .any(|(_, algorithm, listener)| algorithm == "round_robin" && *listener),
        "{pools:?}"
    );

    // A revert supersedes the wait: the replacement goes, the old pool stays.
    bed.patch(
        "stuck",
        &json!({"metadata": {"annotations": {
            key("pool-algorithm"): null,
            key("health-monitor-type"): null,
            key("health-monitor-http"): null,
        }}}),
    )
    .await;
    eventually("the replacement pool removed", LIMIT, || async {
        let pools = pools_of(&bed, &lb).await;
        (pools.len() == 1 && pools[0].1 == "round_robin").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_service_whose_change_waits_is_not_delayed() {
    let bed = Bed::start_default().await;
    bed.create_converged(&lb_service("stuck", one_port(), json!({})), 1)
        .await;
    let lb = bed.lb_uuid_of("stuck").await;
    bed.patch("stuck", &impossible_change()).await;
    // The replacement pool is there: from now on the change waits.
    eventually("the replacement pool", LIMIT, || async {
        (pools_of(&bed, &lb).await.len() == 2).then_some(())
    })
    .await;
    bed.services()
        .delete("stuck", &Default::default())
        .await
        .expect("delete");
    // Within the scenario limit: the waiting change does not hold the deletion back.
    bed.wait_service_gone("stuck").await;
    assert!(bed.cloud_list("/load-balancers").await.is_empty());
}
