//! The invariants every schedule is checked against once its faults have stopped and the
//! CCM had `CONVERGE` (`run.rs`) of virtual time to converge.

use super::invariants::violation;
pub use super::invariants::{Violation, after_create};
use super::world::World;
use k8s_openapi::api::core::v1::Service;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

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
    /// The quiet window, in which every converged Service must serve.
    pub quiet: Option<(fakecloud::clock::Time, fakecloud::clock::Time)>,
}

/// A client inside every allowed CIDR the workload sets (`10.0.0.0/8`).
const CLIENT: [u8; 4] = [10, 1, 2, 3];

fn uid_of(s: &Service) -> String {
    s.metadata.uid.clone().unwrap_or_default()
}

/// A Service's (protocol, port)s, as listeners name them (`tcp`, 80).
fn wanted_ports(svc: &Service) -> BTreeSet<(String, u16)> {
    svc.spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| {
            (
                p.protocol.as_deref().unwrap_or("TCP").to_lowercase(),
                u16::try_from(p.port).unwrap_or(0),
            )
        })
        .collect()
}

fn is_lb(s: &Service) -> bool {
    s.spec.as_ref().and_then(|sp| sp.type_.as_deref()) == Some("LoadBalancer")
        && s.metadata.deletion_timestamp.is_none()
}

/// Whether the Service can be served at all: a node its node selector picks runs (its
/// server is `running`), and, under `externalTrafficPolicy: Local`, has a ready endpoint
/// (the simulation runs no pods, so a Local Service never has one). Otherwise its change is
/// held, with a Warning, and the members that serve now stay: the documented behaviour.
fn can_converge(
    world: &World,
    svc: &Service,
    st: &fakecloud::state::State,
    now: fakecloud::clock::Time,
) -> bool {
    let local = svc
        .spec
        .as_ref()
        .and_then(|s| s.external_traffic_policy.as_deref())
        == Some("Local");
    let slices: Vec<k8s_openapi::api::discovery::v1::EndpointSlice> =
        world.api.objects("endpointslices");
    let has_endpoints = slices.iter().any(|e| {
        e.metadata.namespace == svc.metadata.namespace
            && e.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("kubernetes.io/service-name"))
                == svc.metadata.name.as_ref()
            && e.endpoints.as_ref().is_some_and(|v| !v.is_empty())
    });
    if local && !has_endpoints {
        return false;
    }
    let selector = match ccm::service::pure::annotations::parse_service(svc) {
        Ok(Some(cfg)) => cfg.node_selector,
        // Not a load balancer the CCM handles, or a configuration it refuses: not ours to
        // judge here.
        _ => return true,
    };
    world
        .api
        .objects::<k8s_openapi::api::core::v1::Node>("nodes")
        .iter()
        .filter(|n| selector.matches(&n.metadata.labels.clone().unwrap_or_default()))
        .filter_map(|n| world.server_of(n.metadata.name.as_deref().unwrap_or_default()))
        .any(|u| {
            st.servers()
                .get(&u)
                .is_some_and(|s| s.status(now) == "running")
        })
}

/// Whether a `NodeDeletionHeld` Event says the Node `name` is kept because too many Nodes
/// looked gone at once.
fn held_by_threshold(events: &[k8s_openapi::api::core::v1::Event], name: &str) -> bool {
    events.iter().any(|e| {
        e.reason.as_deref() == Some("NodeDeletionHeld")
            && e.involved_object.name.as_deref() == Some(name)
            && e.message
                .as_deref()
                .is_some_and(|m| m.contains("--node-deletion-threshold"))
    })
}

/// Whether the CCM refused the Service `name` a load balancer another Service owns or
/// claims as well, with a Warning saying so.
fn refused_a_taken_load_balancer(events: &[k8s_openapi::api::core::v1::Event], name: &str) -> bool {
    events.iter().any(|e| {
        e.reason.as_deref() == Some("SyncLoadBalancerFailed")
            && e.involved_object.name.as_deref() == Some(name)
            && e.message.as_deref().is_some_and(|m| {
                m.contains("it is not adopted, changed or deleted")
                    || m.contains("it is not adopted until only one Service names it")
            })
    })
}

/// Every invariant, in a fixed order.
pub fn check(world: &World, cx: &Context) -> Vec<Violation> {
    let mut out = world.found.lock().clone();
    let events: Vec<k8s_openapi::api::core::v1::Event> = world.api.objects("events");
    let services: Vec<Service> = world.api.objects("services");
    let lb_uids: BTreeMap<String, &Service> = services
        .iter()
        .filter(|s| is_lb(s))
        .map(|s| (uid_of(s), s))
        .collect();
    let cluster_tag = ccm::service::reconcile::controller::TAG_CLUSTER;
    let uid_tag = ccm::service::reconcile::controller::TAG_SERVICE_UID;
    let mut held_writes = 0;
    world.cloud.read("", |ctx| {
        let st = ctx.st;
        // One load balancer per Service; none for a Service that is gone or no longer one.
        let mut per_service: BTreeMap<String, Vec<Uuid>> = BTreeMap::new();
        for lb in st.load_balancers().values() {
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
        // No duplicate pool, listener, member or monitor (a held change keeps its
        // replacement pool next to the serving one: only where the Service can converge).
        let held: BTreeSet<String> = lb_uids
            .iter()
            .filter(|(_, s)| !can_converge(world, s, st, ctx.now))
            .map(|(u, _)| u.clone())
            .collect();
        // Writes in the quiet window are allowed for a Service that cannot converge: its
        // change is held, and may go ahead whenever its old members stop serving. They are
        // told apart by the operations its load balancer was asked for in the window (one
        // per write); any other write is one too many.
        held_writes = cx.quiet.map_or(0, |(from, to)| {
            st.load_balancers()
                .values()
                .filter(|lb| lb.tags.get(uid_tag).is_some_and(|u| held.contains(u)))
                .filter_map(|lb| st.dataplane().lbs.get(&lb.uuid))
                .flat_map(|h| h.ops.iter())
                .filter(|op| op.requested_at >= from && op.requested_at <= to)
                .count()
        });
        for lb in st.load_balancers().values() {
            if lb.tags.get(uid_tag).is_some_and(|u| held.contains(u)) {
                continue;
            }
            let pools: Vec<_> = st
                .pools()
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
                for m in st.members().of_pool(p.uuid) {
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
                    .health_monitors()
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
            for l in st
                .listeners()
                .values()
                .filter(|l| l.load_balancer == lb.uuid)
            {
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
        // and its ingress; unless none of the nodes it selects runs (its change is held,
        // with a Warning, until one does: nothing could serve it).
        for (uid, svc) in &lb_uids {
            let name = svc.metadata.name.clone().unwrap_or_default();
            if !can_converge(world, svc, st, ctx.now) {
                continue;
            }
            let Some(lb) = per_service.get(uid).and_then(|l| l.first()) else {
                // The documented refusal: the name it asks for is another Service's load
                // balancer's (ccm/src/service/ownership.rs).
                if !refused_a_taken_load_balancer(&events, &name) {
                    out.push(violation(
                        "not-converged",
                        format!("Service {name} has no load balancer"),
                    ));
                }
                continue;
            };
            let want = wanted_ports(svc);
            let have: BTreeSet<(String, u16)> = st
                .listeners()
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
            let ingress = crate::ccm_bed::has_ingress(svc);
            if !ingress {
                out.push(violation(
                    "not-converged",
                    format!("Service {name} has no ingress"),
                ));
            }
        }
        // Converged means serving: every port of a Cluster-policy Service answers new
        // connections throughout the quiet window while one of its nodes runs. (Local
        // Services have no endpoints here: the simulation runs no pods.)
        if let Some((from, to)) = cx.quiet {
            let running: BTreeSet<std::net::IpAddr> = st
                .servers()
                .values()
                .filter(|sv| sv.status(ctx.now) == "running")
                .flat_map(|sv| sv.interfaces.iter().filter(|i| !i.public))
                .flat_map(|i| i.addresses.iter().map(|a| a.address))
                .collect();
            for (uid, svc) in &lb_uids {
                let local = svc
                    .spec
                    .as_ref()
                    .and_then(|s| s.external_traffic_policy.as_deref())
                    == Some("Local");
                let Some(lb) = per_service.get(uid).and_then(|l| l.first()) else {
                    continue;
                };
                let pools: BTreeSet<Uuid> = st
                    .pools()
                    .values()
                    .filter(|p| p.load_balancer == *lb)
                    .map(|p| p.uuid)
                    .collect();
                let any_member_runs = st
                    .members()
                    .values()
                    .any(|m| pools.contains(&m.pool) && running.contains(&m.address));
                // None of its selected nodes runs: the documented outage, and a change held
                // until then may go ahead at any moment (nothing it could keep serving).
                if local || !any_member_runs || !can_converge(world, svc, st, ctx.now) {
                    continue;
                }
                let propagation = world.cloud.config().timing.floating_ip_propagation_s;
                let entries = fakecloud::dataplane::availability(
                    st.dataplane(),
                    *lb,
                    from,
                    to,
                    std::net::IpAddr::from(CLIENT),
                    propagation,
                )
                .unwrap_or_default();
                let name = svc.metadata.name.clone().unwrap_or_default();
                // The oracle reports every port the load balancer ever listened on, and every
                // floating IP it ever held: only the Service's ports count, and the floating
                // IPs it claims (one it let go may go to another Service that claims it).
                let ports = wanted_ports(svc);
                let claimed = ccm::service::reconcile::claims::annotated_addresses(svc);
                for e in entries.iter().filter(|e| {
                    e.downtime_s > 0.0
                        && ports.contains(&(e.protocol.clone(), e.port))
                        && (e.kind != fakecloud::dataplane::EntryKind::FloatingIp
                            || claimed.contains(&e.address))
                }) {
                    out.push(violation(
                        "converged-downtime",
                        format!(
                            "{name} {}:{}/{} down {:.1} s after convergence: {:?}",
                            e.address, e.port, e.protocol, e.downtime_s, e.down
                        ),
                    ));
                }
            }
        }
        // A Node carries the shutdown taint exactly while its server is stopped.
        for node in world
            .api
            .objects::<k8s_openapi::api::core::v1::Node>("nodes")
        {
            let name = node.metadata.name.clone().unwrap_or_default();
            let Some(uuid) = world.server_of(&name) else {
                continue;
            };
            let Some(server) = st.servers().get(&uuid) else {
                // Kept on purpose when too many Nodes looked gone at once: the documented
                // guard (deploy/README.md, "Guards before a Node is deleted").
                if !held_by_threshold(&events, &name) {
                    out.push(violation(
                        "node-not-deleted",
                        format!("Node {name} is still there; its server {uuid} was deleted"),
                    ));
                }
                continue;
            };
            let tainted = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| {
                    t.iter()
                        .any(|t| t.key == ccm::node::metadata::SHUTDOWN_TAINT)
                });
            let stopped = server.status(ctx.now) == "stopped";
            // Every Node (one deleted by hand and registered again too) is initialized.
            let spec = node.spec.as_ref();
            let uninitialized = spec.and_then(|s| s.taints.as_ref()).is_some_and(|t| {
                t.iter()
                    .any(|t| t.key == crate::kubelet::UNINITIALIZED_TAINT)
            });
            if uninitialized || spec.and_then(|s| s.provider_id.as_ref()).is_none() {
                out.push(violation(
                    "node-not-initialized",
                    format!("Node {name} (server {uuid}) is not initialized"),
                ));
            }
            if tainted != stopped {
                out.push(violation(
                    "taint-mismatch",
                    format!(
                        "Node {name}: shutdown taint {tainted}, server {}",
                        server.status(ctx.now)
                    ),
                ));
            }
        }
        // Nothing of another cluster touched.
        let foreign_now = st
            .load_balancers()
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
                    st.dataplane(),
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
        let Some(r) = super::trace::Request::parse(&line) else {
            continue;
        };
        if r.api == "kube"
            && r.by_ccm()
            && r.method == "DELETE"
            && r.status.starts_with('2')
            && let Some(node) = r.path.strip_prefix("/api/v1/nodes/")
        {
            let node = node.split('?').next().unwrap_or(node);
            if let Some(server) = world.server_of(node)
                && world
                    .cloud
                    .read("", |ctx| ctx.st.servers().contains_key(&server))
            {
                out.push(violation(
                    "node-deleted-with-server",
                    format!("Node {node} was deleted while its server {server} exists"),
                ));
            }
        }
    }
    if cx.quiet_writes.len() > held_writes {
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
    let leaked_event = events.iter().any(|e| {
        e.message
            .as_deref()
            .is_some_and(|m| m.contains(&world.token))
    });
    let leaked_trace = world
        .trace
        .scan(|mut lines| lines.any(|l| l.contains(&world.token)));
    if leaked_event || leaked_trace {
        out.push(violation(
            "token-leaked",
            "the API token appears in an Event or the trace".into(),
        ));
    }
    // People read Events: no Rust `Debug` renderings in them.
    if let Some(shown) = events
        .iter()
        .filter_map(|e| e.message.as_deref())
        .find_map(debug_text)
    {
        out.push(violation(
            "debug-text",
            format!("an Event shows Rust Debug text: {shown}"),
        ));
    }
    // `kubectl describe` shows an Event as one row of a table: one line each.
    if let Some(shown) = events
        .iter()
        .filter_map(|e| e.message.as_deref())
        .find(|m| m.contains('\n'))
    {
        out.push(violation(
            "event-multiline",
            format!("an Event's message runs over several lines: {shown:?}"),
        ));
    }
    // The CCMs run as the ServiceAccount of deploy/config.yml: a refusal is a missing rule.
    let refused: Vec<String> = world
        .api
        .requests()
        .iter()
        .filter(|r| r.code == 401 || r.code == 403)
        .map(|r| {
            format!(
                "{} {} {} {:?} ({})",
                r.user, r.verb, r.resource, r.subresource, r.code
            )
        })
        .collect();
    if !refused.is_empty() {
        out.push(violation(
            "rbac-refused",
            format!("requests refused by RBAC: {refused:?}"),
        ));
    }
    out
}

/// Rust `Debug` renderings that reach text people read (an `Option` or a kube `Status`
/// printed as such): the line that shows one, if any.
pub(crate) fn debug_text(text: &str) -> Option<&str> {
    const SHAPES: [&str; 5] = [
        "Some(",
        "None,",
        "Status {",
        "ListMeta {",
        "StatusDetails {",
    ];
    text.lines()
        .find(|line| SHAPES.iter().any(|shape| line.contains(shape)))
}

#[cfg(test)]
mod tests {
    /// What kube's own rendering of an API error looks like in a log line is caught; plain
    /// words, quoted names and parentheses are not.
    #[test]
    fn debug_renderings_are_found_and_plain_text_is_not() {
        let logs = "INFO ccm::app: starting health=off\n WARN ccm::service::reconcile::controller: service reconcile failed error=Kubernetes API: ApiError: the object has been modified: Conflict (Status { status: Some(Failure), code: 409 })\n";
        assert!(
            super::debug_text(logs).is_some_and(|l| l.contains("Conflict")),
            "{logs}"
        );
        let plain = "WARN ccm: service reconcile failed service=default/web error=Kubernetes API: the object has been modified (Conflict, HTTP 409)\nINFO ccm: listener \"tcp/80\" (port 80) created";
        assert_eq!(super::debug_text(plain), None);
    }
}
