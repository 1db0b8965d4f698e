//! The invariants every schedule is checked against once its faults have stopped and the
//! CCM had [`super::run::CONVERGE`] of virtual time to converge.

use super::world::World;
use k8s_openapi::api::core::v1::Service;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// A short, stable name (`two-load-balancers`, `orphan`, ...).
    pub invariant: &'static str,
    pub detail: String,
}

fn violation(invariant: &'static str, detail: String) -> Violation {
    Violation { invariant, detail }
}

/// What the checks know of the run besides the world.
#[derive(Debug, Clone)]
pub struct Context {
    /// The foreign load balancer (another cluster's) and its JSON at the start.
    pub foreign: (Uuid, serde_json::Value),
    /// The Service no step touches, and the window in which it must serve without a break
    /// (none when nodes changed: stopped or deleted servers can take every member).
    pub steady: Option<(String, fakecloud::clock::Time, fakecloud::clock::Time)>,
    /// Cloud writes the CCMs made in the final quiet window, after convergence.
    pub quiet_writes: Vec<String>,
}

fn uid_of(s: &Service) -> String {
    s.metadata.uid.clone().unwrap_or_default()
}

fn is_lb(s: &Service) -> bool {
    s.spec.as_ref().and_then(|sp| sp.type_.as_deref()) == Some("LoadBalancer")
        && s.metadata.deletion_timestamp.is_none()
}

/// Every invariant, in a fixed order.
pub fn check(world: &World, cx: &Context) -> Vec<Violation> {
    let mut out = Vec::new();
    let services: Vec<Service> = world.api.objects("services");
    let lb_uids: BTreeMap<String, &Service> = services
        .iter()
        .filter(|s| is_lb(s))
        .map(|s| (uid_of(s), s))
        .collect();
    let cluster_tag = ccm::service::controller::TAG_CLUSTER;
    let uid_tag = ccm::service::controller::TAG_SERVICE_UID;
    world.cloud.read("", |ctx| {
        let st = ctx.st;
        // One load balancer per Service; none for a Service that is gone or no longer one.
        let mut per_service: BTreeMap<String, Vec<Uuid>> = BTreeMap::new();
        for lb in st.load_balancers.values() {
            if lb.uuid == cx.foreign.0 {
                continue;
            }
            let uid = lb.tags.get(uid_tag).cloned().unwrap_or_default();
            per_service.entry(uid.clone()).or_default().push(lb.uuid);
            if !lb_uids.contains_key(&uid) {
                out.push(violation(
                    "orphan",
                    format!(
                        "load balancer {} ({}) of cluster {:?} belongs to no LoadBalancer Service",
                        lb.uuid,
                        lb.name,
                        lb.tags.get(cluster_tag)
                    ),
                ));
            }
        }
        for (uid, lbs) in &per_service {
            if lbs.len() > 1 {
                out.push(violation(
                    "two-load-balancers",
                    format!(
                        "Service uid {uid} has {} load balancers: {lbs:?}",
                        lbs.len()
                    ),
                ));
            }
        }
        // No duplicate pool, listener, member or monitor.
        for lb in st.load_balancers.values() {
            let pools: Vec<_> = st
                .pools
                .values()
                .filter(|p| p.load_balancer == lb.uuid)
                .collect();
            let mut names = BTreeSet::new();
            for p in &pools {
                if !names.insert(&p.name) {
                    out.push(violation(
                        "duplicate",
                        format!("two pools named {} on {}", p.name, lb.uuid),
                    ));
                }
                let mut members = BTreeSet::new();
                for m in st.members.values().filter(|m| m.pool == p.uuid) {
                    if !members.insert((m.address, m.protocol_port)) {
                        out.push(violation(
                            "duplicate",
                            format!(
                                "two members {}:{} in pool {}",
                                m.address, m.protocol_port, p.name
                            ),
                        ));
                    }
                }
                let monitors = st
                    .health_monitors
                    .values()
                    .filter(|m| m.pool == p.uuid)
                    .count();
                if monitors > 1 {
                    out.push(violation(
                        "duplicate",
                        format!("{monitors} monitors on pool {}", p.name),
                    ));
                }
            }
            let mut listeners = BTreeSet::new();
            for l in st.listeners.values().filter(|l| l.load_balancer == lb.uuid) {
                if !listeners.insert((l.protocol.clone(), l.protocol_port)) {
                    out.push(violation(
                        "duplicate",
                        format!(
                            "two {} listeners on port {} of {}",
                            l.protocol, l.protocol_port, lb.uuid
                        ),
                    ));
                }
            }
        }
        // Converged: each LoadBalancer Service has its load balancer, listening on its ports,
        // and its ingress.
        for (uid, svc) in &lb_uids {
            let name = svc.metadata.name.clone().unwrap_or_default();
            let Some(lb) = per_service.get(uid).and_then(|l| l.first()) else {
                out.push(violation(
                    "not-converged",
                    format!("Service {name} has no load balancer"),
                ));
                continue;
            };
            let want: BTreeSet<(String, u16)> = svc
                .spec
                .iter()
                .flat_map(|s| s.ports.iter().flatten())
                .map(|p| {
                    (
                        p.protocol.as_deref().unwrap_or("TCP").to_lowercase(),
                        u16::try_from(p.port).unwrap_or(0),
                    )
                })
                .collect();
            let have: BTreeSet<(String, u16)> = st
                .listeners
                .values()
                .filter(|l| l.load_balancer == *lb)
                .map(|l| (l.protocol.clone(), l.protocol_port))
                .collect();
            if want != have {
                out.push(violation(
                    "not-converged",
                    format!(
                        "Service {name} wants listeners {want:?}, its load balancer has {have:?}"
                    ),
                ));
            }
            let ingress = svc
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|l| l.ingress.as_ref())
                .is_some_and(|i| !i.is_empty());
            if !ingress {
                out.push(violation(
                    "not-converged",
                    format!("Service {name} has no ingress"),
                ));
            }
        }
        // Nothing of another cluster touched.
        let foreign_now = st
            .load_balancers
            .get(&cx.foreign.0)
            .map(|lb| lb.render(ctx));
        if foreign_now.as_ref() != Some(&cx.foreign.1) {
            out.push(violation(
                "foreign-touched",
                format!("the other cluster's load balancer is now {foreign_now:?}"),
            ));
        }
        if let Some((svc, from, to)) = &cx.steady {
            if let Some(lb) = per_service
                .get(
                    &services
                        .iter()
                        .find(|s| s.metadata.name.as_deref() == Some(svc.as_str()))
                        .map(uid_of)
                        .unwrap_or_default(),
                )
                .and_then(|l| l.first())
            {
                let client = std::net::IpAddr::from([198, 51, 100, 7]);
                let propagation = world.cloud.config().timing.floating_ip_propagation_s;
                let entries = fakecloud::dataplane::availability(
                    &st.dataplane,
                    *lb,
                    *from,
                    *to,
                    client,
                    propagation,
                )
                .unwrap_or_default();
                for e in entries.iter().filter(|e| e.downtime_s > 0.0) {
                    out.push(violation(
                        "steady-downtime",
                        format!(
                            "{svc} {}:{}/{} down {:.1} s: {:?}",
                            e.address, e.port, e.protocol, e.downtime_s, e.down
                        ),
                    ));
                }
            } else {
                out.push(violation(
                    "steady-downtime",
                    format!("{svc} lost its load balancer"),
                ));
            }
        }
    });
    // Nodes deleted by a CCM: their servers must be gone.
    for line in world.trace.lines() {
        let mut parts = line.split(' ');
        let (_, kind, actor, method, path, status) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        );
        if kind == Some("kube")
            && actor.is_some_and(|a| a.starts_with("ccm-"))
            && method == Some("DELETE")
            && status.is_some_and(|s| s.starts_with('2'))
            && let Some(node) = path.and_then(|p| p.strip_prefix("/api/v1/nodes/"))
        {
            let node = node.split('?').next().unwrap_or(node);
            if let Some(server) = world.server_of(node)
                && world
                    .cloud
                    .read("", |ctx| ctx.st.servers.contains_key(&server))
            {
                out.push(violation(
                    "node-deleted-with-server",
                    format!("Node {node} was deleted while its server {server} exists"),
                ));
            }
        }
    }
    if !cx.quiet_writes.is_empty() {
        out.push(violation(
            "writes-after-convergence",
            format!(
                "{} cloud writes in the quiet window: {:?}",
                cx.quiet_writes.len(),
                cx.quiet_writes
            ),
        ));
    }
    // The token never leaves the client.
    let events: Vec<k8s_openapi::api::core::v1::Event> = world.api.objects("events");
    let leaked_event = events.iter().any(|e| {
        e.message
            .as_deref()
            .is_some_and(|m| m.contains(&world.token))
    });
    let leaked_trace = world.trace.lines().iter().any(|l| l.contains(&world.token));
    if leaked_event || leaked_trace {
        out.push(violation(
            "token-leaked",
            "the API token appears in an Event or the trace".into(),
        ));
    }
    out
}
