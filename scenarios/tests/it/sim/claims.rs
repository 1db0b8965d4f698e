//! Floating IPs several Services claim, and floating IPs held by something else: the
//! holder is never frozen, the newcomer is refused the address alone, resolving a conflict
//! takes effect at once, another cluster's address is never taken, and every move names
//! the previous holder. Each runs in the simulated world (one CCM, virtual time).

use k8s_openapi::api::core::v1::{Event, Node, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use scenarios::sim::{World, WorldConfig, runtime};
use serde_json::{Value, json};
use std::time::Duration;

pub const FIPS: &str = "k8s.cloudscale.ch/loadbalancer-floating-ips";

/// A LoadBalancer Service manifest: one TCP port 80 (or `protocol`), `annotations`.
pub fn manifest(ns: &str, name: &str, annotations: Value, protocol: &str) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": protocol}]},
    }))
    .expect("service")
}

pub async fn create(world: &World, ns: &str, name: &str, annotations: Value) -> Service {
    create_with(world, ns, name, annotations, "TCP").await
}

pub async fn create_with(
    world: &World,
    ns: &str,
    name: &str,
    annotations: Value,
    protocol: &str,
) -> Service {
    Api::<Service>::namespaced(world.kube.clone(), ns)
        .create(
            &PostParams::default(),
            &manifest(ns, name, annotations, protocol),
        )
        .await
        .expect("create")
}

pub async fn annotate(world: &World, ns: &str, name: &str, annotations: Value) {
    Api::<Service>::namespaced(world.kube.clone(), ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": annotations}})),
        )
        .await
        .expect("annotate");
}

/// A new floating IP (`body` as the API takes it); its address.
pub async fn floating_ip(world: &World, body: Value) -> String {
    let fip = world
        .outside_with("POST", "/v1/floating-ips", Some(body))
        .await
        .expect("floating IP");
    fip["network"]
        .as_str()
        .and_then(|n| n.split('/').next())
        .expect("network")
        .to_string()
}

/// The load balancer a floating IP points at, if any.
pub fn target_of(world: &World, address: &str) -> Option<uuid::Uuid> {
    let ip: std::net::IpAddr = address.parse().expect("ip");
    world.cloud.read("", |ctx| {
        ctx.st.floating_ips().get(&ip).and_then(|f| f.load_balancer)
    })
}

/// The load balancer of the Service `ns/name` (by its ownership tag).
pub fn lb_of(world: &World, ns: &str, name: &str) -> Option<uuid::Uuid> {
    let uid = world
        .api
        .objects::<Service>("services")
        .into_iter()
        .find(|s| {
            s.metadata.namespace.as_deref() == Some(ns) && s.metadata.name.as_deref() == Some(name)
        })?
        .metadata
        .uid?;
    scenarios::sim::load_balancers_of(&world.cloud, &uid)
        .into_iter()
        .next()
}

/// The Events of `ns/name` as (type, reason, message).
pub fn events_of(world: &World, ns: &str, name: &str) -> Vec<(String, String, String)> {
    world
        .api
        .objects::<Event>("events")
        .into_iter()
        .filter(|e| {
            e.involved_object.namespace.as_deref() == Some(ns)
                && e.involved_object.name.as_deref() == Some(name)
        })
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

fn has_event(world: &World, ns: &str, name: &str, reason: &str, text: &str) -> bool {
    events_of(world, ns, name)
        .iter()
        .any(|(_, r, m)| r == reason && m.contains(text))
}

/// The listeners' client-data timeouts and the members' addresses of a load balancer.
fn listeners_and_members(world: &World, lb: uuid::Uuid) -> (Vec<i64>, Vec<String>) {
    world.cloud.read("", |ctx| {
        let st = ctx.st;
        let timeouts = st
            .listeners()
            .values()
            .filter(|l| l.load_balancer == lb)
            .map(|l| l.timeout_client_data_ms)
            .collect();
        let pools: Vec<uuid::Uuid> = st
            .pools()
            .values()
            .filter(|p| p.load_balancer == lb)
            .map(|p| p.uuid)
            .collect();
        let mut members: Vec<String> = st
            .members()
            .values()
            .filter(|m| pools.contains(&m.pool))
            .map(|m| m.address.to_string())
            .collect();
        members.sort();
        (timeouts, members)
    })
}

fn has_ingress(world: &World, ns: &str, name: &str) -> bool {
    world
        .api
        .objects::<Service>("services")
        .iter()
        .find(|s| {
            s.metadata.namespace.as_deref() == Some(ns) && s.metadata.name.as_deref() == Some(name)
        })
        .is_some_and(scenarios::testbed::has_ingress)
}

/// The private addresses of the running nodes' servers.
fn node_addresses(world: &World) -> Vec<String> {
    let mut out: Vec<String> = world
        .api
        .objects::<Node>("nodes")
        .iter()
        .filter_map(|n| world.server_of(n.metadata.name.as_deref()?))
        .flat_map(|u| {
            world.cloud.read("", |ctx| {
                ctx.st
                    .servers()
                    .get(&u)
                    .map(|s| {
                        s.interfaces
                            .iter()
                            .filter(|i| !i.public)
                            .flat_map(|i| i.addresses.iter().map(|a| a.address.to_string()))
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
            })
        })
        .collect();
    out.sort();
    out
}

/// Any Service naming another's floating IP, in any namespace, valid or not, never freezes
/// the Service that holds it: the holder's edits and node changes still apply, the
/// newcomer gets its own load balancer without that address, and once the holder lets go
/// the newcomer takes it at once, naming where it came from.
#[test]
fn a_floating_ip_claimed_by_another_service_never_freezes_its_holder() {
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let mut world = World::start(WorldConfig::new(31)).await.expect("world");
        world.revive();
        let ip = floating_ip(&world, json!({"ip_version": 4, "region": "rma"})).await;
        let claim = json!({FIPS: format!("[\"{ip}/32\"]")});
        create(&world, "default", "s4", claim.clone()).await;
        world.run_for(Duration::from_secs(150)).await;
        let s4 = lb_of(&world, "default", "s4").expect("s4's load balancer");
        assert_eq!(target_of(&world, &ip), Some(s4), "s4 holds it");
        // Another team names it, and a Service that can never be served (SCTP) as well.
        let ns: k8s_openapi::api::core::v1::Namespace =
            serde_json::from_value(json!({"metadata": {"name": "other-team"}})).expect("ns");
        Api::all(world.kube.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("namespace");
        create(&world, "other-team", "s6", claim.clone()).await;
        create_with(&world, "other-team", "sctp", claim.clone(), "SCTP").await;
        world.run_for(Duration::from_secs(150)).await;
        assert_eq!(target_of(&world, &ip), Some(s4), "the holder keeps it");
        let s6 = lb_of(&world, "other-team", "s6").expect("s6 gets a load balancer");
        assert_ne!(s6, s4);
        assert!(has_ingress(&world, "other-team", "s6"), "s6 is served");
        assert!(
            has_event(
                &world,
                "other-team",
                "s6",
                "FloatingIPConflict",
                "default/s4"
            ),
            "{:#?}",
            events_of(&world, "other-team", "s6")
        );
        assert!(
            !events_of(&world, "default", "s4")
                .iter()
                .any(|(t, _, _)| t == "Warning"),
            "the holder is not refused anything: {:#?}",
            events_of(&world, "default", "s4")
        );
        // The holder still takes edits.
        annotate(
            &world,
            "default",
            "s4",
            json!({"k8s.cloudscale.ch/loadbalancer-timeout-client-data-ms": "40000"}),
        )
        .await;
        world.run_for(Duration::from_secs(60)).await;
        assert_eq!(listeners_and_members(&world, s4).0, [40000]);
        // Every node replaced: the holder's pool follows.
        for node in ["node-1", "node-2", "node-3"] {
            let server = world.server_of(node).expect("server");
            world
                .outside("DELETE", &format!("/v1/servers/{server}"))
                .await
                .expect("delete server");
        }
        for node in ["node-4", "node-5"] {
            world.add_node(node).await.expect("node");
        }
        world.run_for(Duration::from_secs(240)).await;
        let (_, members) = listeners_and_members(&world, s4);
        assert_eq!(
            members,
            node_addresses(&world),
            "s4's members follow the nodes"
        );
        assert_eq!(target_of(&world, &ip), Some(s4));
        // The holder lets go: s6 takes it at once, well before a resync (60 s here).
        annotate(&world, "default", "s4", json!({FIPS: null})).await;
        world.run_for(Duration::from_secs(20)).await;
        assert_eq!(target_of(&world, &ip), Some(s6), "s6 took it within 20 s");
        assert!(
            has_event(
                &world,
                "other-team",
                "s6",
                "PlannedChange",
                "of Service default/s4, which no longer claims it"
            ),
            "{:#?}",
            events_of(&world, "other-team", "s6")
        );
    });
}

/// Two new Services naming one floating IP: exactly one gets it (the one created first),
/// the other is served without it; deleting the winner hands it over at once.
#[test]
fn of_two_new_claimants_exactly_one_wins_and_the_other_follows_when_it_goes() {
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let mut world = World::start(WorldConfig::new(32)).await.expect("world");
        world.revive();
        let ip = floating_ip(&world, json!({"ip_version": 4, "type": "global"})).await;
        let claim = json!({FIPS: format!("[\"{ip}/32\"]")});
        create(&world, "default", "fa", claim.clone()).await;
        world.run_for(Duration::from_secs(2)).await;
        create(&world, "default", "fb", claim.clone()).await;
        world.run_for(Duration::from_secs(180)).await;
        let fa = lb_of(&world, "default", "fa").expect("fa's load balancer");
        let fb = lb_of(&world, "default", "fb").expect("fb's load balancer");
        assert_eq!(target_of(&world, &ip), Some(fa), "the first created wins");
        for name in ["fa", "fb"] {
            assert!(has_ingress(&world, "default", name), "{name} is served");
            let (timeouts, members) =
                listeners_and_members(&world, lb_of(&world, "default", name).expect("lb"));
            assert_eq!(timeouts.len(), 1, "{name}: not an empty load balancer");
            assert_eq!(members.len(), 3, "{name}");
        }
        assert!(has_event(
            &world,
            "default",
            "fb",
            "FloatingIPConflict",
            "default/fa"
        ));
        Api::<Service>::namespaced(world.kube.clone(), "default")
            .delete("fa", &DeleteParams::default())
            .await
            .expect("delete");
        world.run_for(Duration::from_secs(25)).await;
        assert_eq!(target_of(&world, &ip), Some(fb), "handed over within 25 s");
    });
}

/// A floating IP on a server or on a load balancer made by hand moves, and the change names
/// where from; one on another cluster's load balancer is never taken; a regional one of
/// another region is refused before any write.
#[test]
fn floating_ips_held_elsewhere_are_named_and_never_taken_from_another_cluster() {
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let mut world = World::start(WorldConfig::new(33)).await.expect("world");
        world.revive();
        let server = world.server_of("node-1").expect("node-1");
        let on_server = floating_ip(
            &world,
            json!({"ip_version": 4, "region": "rma", "server": server.to_string()}),
        )
        .await;
        let theirs = world
            .outside_with(
                "POST",
                "/v1/load-balancers",
                Some(json!({"name": "theirs", "flavor": "lb-standard", "zone": "rma1",
                            "tags": {"k8s.cloudscale.ch/cluster": "prod-2",
                                     "k8s.cloudscale.ch/service-uid": "0f0f0f0f-0000-4000-8000-000000000000"}})),
            )
            .await
            .expect("their load balancer");
        let theirs: uuid::Uuid = theirs["uuid"]
            .as_str()
            .and_then(|u| u.parse().ok())
            .expect("uuid");
        world.run_for(Duration::from_secs(90)).await;
        let on_theirs = floating_ip(
            &world,
            json!({"ip_version": 4, "type": "global", "load_balancer": theirs.to_string()}),
        )
        .await;
        let elsewhere = floating_ip(&world, json!({"ip_version": 4, "region": "lpg"})).await;
        create(&world, "default", "x", json!({FIPS: format!("[\"{on_server}\"]")})).await;
        create(&world, "default", "y", json!({FIPS: format!("[\"{on_theirs}\"]")})).await;
        create(&world, "default", "z", json!({FIPS: format!("[\"{elsewhere}\"]")})).await;
        world.run_for(Duration::from_secs(300)).await;
        let x = lb_of(&world, "default", "x").expect("x's load balancer");
        assert_eq!(target_of(&world, &on_server), Some(x));
        assert!(
            has_event(&world, "default", "x", "PlannedChange", "taking it from server node-1"),
            "{:#?}",
            events_of(&world, "default", "x")
        );
        assert_eq!(target_of(&world, &on_theirs), Some(theirs), "never taken");
        assert!(
            has_event(&world, "default", "y", "FloatingIPConflict", "of cluster prod-2"),
            "{:#?}",
            events_of(&world, "default", "y")
        );
        assert!(has_ingress(&world, "default", "y"), "y is served without it");
        assert_eq!(target_of(&world, &elsewhere), None);
        assert!(
            has_event(&world, "default", "z", "ChangeRefused", "regional in lpg"),
            "{:#?}",
            events_of(&world, "default", "z")
        );
        let patches: Vec<String> = world
            .trace
            .lines()
            .into_iter()
            .filter(|l| l.contains(" cloud ccm-") && l.contains(" PATCH /v1/floating-ips/"))
            .filter(|l| l.contains(&on_theirs) || l.contains(&elsewhere))
            .collect();
        assert!(patches.is_empty(), "{patches:#?}");
    });
}
