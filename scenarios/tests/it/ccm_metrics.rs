//! The CCM's metrics count what happened: over a run that creates a load balancer, changes
//! it and deletes it, its cloudscale.ch API counters match fakecloud's request log request
//! for request, and the per-controller counters add up to them.

use scenarios::testbed::{CcmBed as Bed, web_service as web};
use serde_json::json;
use std::collections::BTreeMap;

/// A route template with its parameters unnamed (`/v1/servers/{}`): the CCM and fakecloud
/// name them differently.
fn unnamed(route: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in route.chars() {
        match c {
            '{' => {
                inside = true;
                out.push_str("{}");
            }
            '}' => inside = false,
            _ if !inside => out.push(c),
            _ => {}
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_request_counters_match_fakecloud_request_log() {
    let mut bed = Bed::start_default().await;
    bed.create_converged(&web(json!({})), 2).await;
    bed.patch(
        "web",
        &json!({"spec": {"ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
            {"name": "alt", "port": 8081, "targetPort": 8081, "protocol": "TCP"}
        ]}}),
    )
    .await;
    bed.converge("a changed port", 2, |s| {
        s.listeners.iter().any(|l| l["protocol_port"] == 8081)
    })
    .await;
    bed.services()
        .delete("web", &Default::default())
        .await
        .expect("delete the Service");
    bed.wait_service_gone("web").await;
    // Stopped, the CCM sends nothing more: both sides are final (its shutdown lets a
    // reconcile in flight finish). Nothing here clears fakecloud's log.
    let ccm = bed.ccm.as_mut().expect("the bed's CCM");
    ccm.stop();
    let stopped = tokio::time::timeout(std::time::Duration::from_secs(20), &mut ccm.task).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "a clean stop: {stopped:?}"
    );
    let metrics = ccm.metrics().expect("the CCM's metrics");

    let mut logged: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    let log = bed.request_log().await;
    for e in &log {
        let ua = e["user_agent"].as_str().unwrap_or_default();
        if !ua.starts_with(&format!("{}/", ccm::COMPONENT)) {
            continue;
        }
        let route = unnamed(e["route"].as_str().unwrap_or("(unmatched)"));
        let key = (
            route,
            e["method"].as_str().unwrap_or_default().to_string(),
            e["status"].to_string(),
        );
        *logged.entry(key).or_insert(0) += 1;
    }
    let counted: BTreeMap<(String, String, String), u64> = metrics
        .api_requests()
        .into_iter()
        .map(|((e, m, c), n)| ((unnamed(&e), m, c), n))
        .collect();
    assert!(
        log.len() < 10_000,
        "fakecloud's log holds its newest 10,000 requests: the run must fit"
    );
    assert!(
        counted.values().sum::<u64>() > 20,
        "the run made few requests: {counted:?}"
    );
    assert_eq!(
        counted, logged,
        "cloudscale_api_requests_total against fakecloud's log of the CCM's requests"
    );
    // Every request but the start-up check is counted for the controller that made it.
    let by_controller = metrics.api_calls_by_controller();
    let total: u64 = counted.values().sum();
    assert_eq!(
        by_controller.values().sum::<u64>() + 1,
        total,
        "{by_controller:?}"
    );
    let logged_reads: u64 = logged
        .iter()
        .filter(|((_, m, _), _)| m == "GET")
        .map(|(_, n)| n)
        .sum();
    let counted_reads: u64 = by_controller
        .iter()
        .filter(|((_, k), _)| k == "read")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(counted_reads + 1, logged_reads, "reads: {by_controller:?}");
    assert!(
        by_controller
            .get(&("service".to_string(), "read".to_string()))
            .is_some_and(|n| *n > 10),
        "the service controller's reads, shared lists and polls included: {by_controller:?}"
    );
}
