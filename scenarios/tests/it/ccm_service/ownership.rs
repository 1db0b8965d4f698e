//! Which load balancer is a Service's, end to end: a Service copied with its
//! `loadbalancer-uuid` annotation, or named like another Service's load balancer, never
//! adopts, changes or deletes it; a rename together with removing the uuid annotation keeps
//! the one load balancer (found by its `k8s.cloudscale.ch/service-uid` tag).

use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, LIMIT, downtime, lb_service};
use serde_json::{Value, json};

const UUID: &str = "k8s.cloudscale.ch/loadbalancer-uuid";
const NAME: &str = "k8s.cloudscale.ch/loadbalancer-name";

fn port(number: u16) -> Value {
    json!([{"name": "http", "port": number, "targetPort": 8080}])
}

/// The load balancer as fakecloud has it: name, listener ports, member node ports.
async fn lb_state(bed: &Bed, uuid: &str) -> (String, Vec<u64>, Vec<u64>) {
    let lb = bed
        .cloud(
            reqwest::Method::GET,
            &format!("/load-balancers/{uuid}"),
            None,
        )
        .await;
    let name = lb["name"]
        .as_str()
        .unwrap_or_else(|| panic!("load balancer {uuid} is gone: {lb}"))
        .to_string();
    let snap = bed.snap().await;
    let mut ports: Vec<u64> = snap
        .listeners
        .iter()
        .filter(|l| l["load_balancer"]["uuid"] == uuid)
        .filter_map(|l| l["protocol_port"].as_u64())
        .collect();
    ports.sort();
    let pools: Vec<String> = snap
        .pools
        .iter()
        .filter(|p| p["load_balancer"]["uuid"] == uuid)
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    let mut node_ports: Vec<u64> = pools
        .iter()
        .flat_map(|p| snap.members.get(p).cloned().unwrap_or_default())
        .filter_map(|m| m["protocol_port"].as_u64())
        .collect();
    node_ports.sort();
    node_ports.dedup();
    (name, ports, node_ports)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copied_service_never_takes_over_the_originals_load_balancer() {
    let bed = Bed::start_default().await;
    bed.create_converged(&lb_service("a1", port(80), json!({})), 1)
        .await;
    let lb = bed.lb_uuid_of("a1").await;
    let before = lb_state(&bed, &lb).await;
    let t0 = bed.now();

    // `kubectl get -o yaml` of a1, renamed, another port: it carries a1's uuid annotation.
    bed.create(&lb_service("a1copy", port(8081), json!({UUID: lb})))
        .await;
    let refusal = bed
        .wait_event(
            "a1copy",
            "SyncLoadBalancerFailed",
            "belongs to Service default/a1",
        )
        .await;
    eprintln!("{:?}", refusal.message);
    // a1 reconciles again (any edit), then the copy goes away.
    bed.annotate("a1", "qa/touch", "1").await;
    bed.services()
        .delete("a1copy", &Default::default())
        .await
        .expect("delete the copy");
    bed.wait_service_gone("a1copy").await;

    assert_eq!(lb_state(&bed, &lb).await, before, "a1's load balancer");
    let a1 = bed.services().get("a1").await.expect("a1");
    assert_eq!(
        a1.metadata.annotations.unwrap_or_default().get(UUID),
        Some(&lb)
    );
    assert_eq!(
        bed.cloud_list("/load-balancers").await.len(),
        1,
        "no load balancer made for the copy while it was refused"
    );
    let av = bed.availability(&lb, &t0).await;
    assert_eq!(downtime(&av, 80), 0.0, "{av:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_named_like_another_services_load_balancer_is_refused() {
    let bed = Bed::start_default().await;
    bed.create_converged(&lb_service("a1", port(80), json!({})), 1)
        .await;
    let lb = bed.lb_uuid_of("a1").await;
    let before = lb_state(&bed, &lb).await;
    bed.create(&lb_service("b", port(81), json!({NAME: before.0})))
        .await;
    bed.wait_event(
        "b",
        "SyncLoadBalancerFailed",
        "belongs to Service default/a1",
    )
    .await;
    bed.annotate("a1", "qa/touch", "1").await;
    bed.annotate("b", "qa/touch", "1").await;
    bed.wait_event("a1", "EnsuredLoadBalancer", "").await;
    assert_eq!(lb_state(&bed, &lb).await, before);
    assert_eq!(bed.cloud_list("/load-balancers").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_uuid_annotation_with_a_rename_keeps_the_one_load_balancer() {
    let bed = Bed::start_default().await;
    bed.create_converged(&lb_service("a1", port(80), json!({})), 1)
        .await;
    let lb = bed.lb_uuid_of("a1").await;
    bed.patch(
        "a1",
        &json!({"metadata": {"annotations": {UUID: null, NAME: "a1-renamed"}}}),
    )
    .await;
    eventually("the load balancer renamed", LIMIT, || async {
        let lbs = bed.cloud_list("/load-balancers").await;
        (lbs.len() == 1 && lbs[0]["name"] == "a1-renamed").then_some(())
    })
    .await;
    let lbs = bed.cloud_list("/load-balancers").await;
    assert_eq!(lbs.len(), 1, "no second load balancer: {lbs:#?}");
    assert_eq!(lbs[0]["uuid"], lb.as_str());
    assert_eq!(bed.lb_uuid_of("a1").await, lb);
}
