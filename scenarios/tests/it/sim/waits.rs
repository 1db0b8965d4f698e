//! How a Service waits: a failing one is retried once per backoff step, the step doubling
//! from 5 s, even though each failing reconcile writes to the Service itself (its finalizer,
//! its annotations) and the watch reports those writes; a change held by the load
//! balancer's own queue says so, and does not send the user to the backends.

use super::claims::{create, events_of};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};
use scenarios::sim::Request;
use scenarios::sim::{World, WorldConfig, runtime};
use serde_json::json;
use std::time::Duration;

const ROLE: &str = "system:cloudscale-cloud-controller-manager";

/// The ClusterRole without the rule that lets the CCM write Services' status: every
/// reconcile then fails at its last step, after its other writes (as an operator's
/// mistake in the RBAC manifest would make it).
async fn revoke_status_writes(world: &World) {
    let api: Api<ClusterRole> = Api::all(world.kube.clone());
    let mut role = api.get(ROLE).await.expect("cluster role");
    let rules = role.rules.take().unwrap_or_default();
    role.rules = Some(
        rules
            .into_iter()
            .filter(|r| {
                !r.resources
                    .iter()
                    .flatten()
                    .any(|res| res == "services/status")
            })
            .collect(),
    );
    api.replace(ROLE, &PostParams::default(), &role)
        .await
        .expect("replace cluster role");
}

/// The virtual times (ms) of the CCM's status writes for the Service `name`.
fn status_writes(world: &World, name: &str) -> Vec<u128> {
    let path = format!("/api/v1/namespaces/default/services/{name}/status");
    world
        .trace
        .lines()
        .iter()
        .filter_map(|l| Request::parse(l))
        .filter(|r| r.by_ccm() && r.method == "PATCH" && r.bare_path() == path)
        .map(|r| r.millis)
        .collect()
}

#[test]
fn a_failing_service_is_tried_once_per_backoff_step() {
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let mut world = World::start(WorldConfig::new(41)).await.expect("world");
        world.revive();
        revoke_status_writes(&world).await;
        create(&world, "default", "nostat", json!({})).await;
        world.run_for(Duration::from_secs(240)).await;
        let writes = status_writes(&world, "nostat");
        assert!(
            writes.len() >= 4,
            "the status write is tried again and again: {writes:?}"
        );
        // Each try after the first waits the whole of its step: 5 s, 10 s, 20 s, 40 s...
        // (a reconcile takes some milliseconds more). One reconcile more per step, run by
        // the watch event of the CCM's own writes, would halve a gap.
        for (i, pair) in writes.windows(2).enumerate() {
            let step = 5_000u128 << i.min(6);
            let gap = pair[1] - pair[0];
            assert!(
                gap >= step,
                "try {} came {gap} ms after the one before, within its backoff step of \
                 {step} ms: {writes:?}",
                i + 2
            );
        }
    });
}

/// A Service of 30 ports on 12 nodes: its new load balancer has some 400 operations to
/// apply, one after another, which takes longer than the members timeout (5 minutes).
#[test]
fn a_change_held_by_the_load_balancers_queue_does_not_blame_the_backends() {
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let mut config = WorldConfig::new(42);
        config.nodes = 12;
        let mut world = World::start(config).await.expect("world");
        world.revive();
        let ports: Vec<_> = (0..30)
            .map(|i| json!({"name": format!("p{i}"), "port": 1000 + i, "targetPort": 8080}))
            .collect();
        let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(json!({
            "metadata": {"name": "wide", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "wide"}, "ports": ports},
        }))
        .expect("service");
        Api::namespaced(world.kube.clone(), "default")
            .create(&PostParams::default(), &svc)
            .await
            .expect("create");
        world.run_for(Duration::from_secs(420)).await;
        let held: Vec<String> = events_of(&world, "default", "wide")
            .into_iter()
            .filter(|(_, reason, _)| reason == "ChangeHeld")
            .map(|(_, _, message)| message)
            .collect();
        assert!(
            !held.is_empty(),
            "the wait is longer than the members timeout"
        );
        for message in &held {
            assert!(
                message
                    .contains("the load balancer is still working through the operations queued"),
                "{message}"
            );
            assert!(!message.contains("backend"), "{message}");
        }
    });
}
