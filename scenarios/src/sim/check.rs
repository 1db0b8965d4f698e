//! The invariants every schedule is checked against once its faults have stopped and the
//! CCM had `CONVERGE` (`run.rs`) of virtual time to converge.

use super::invariants::violation;
pub use super::invariants::{Violation, after_create};
use super::world::World;
use fakecloud::model::store::Ctx;
use k8s_openapi::api::core::v1::{Event, Node, Service};
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// The tag naming the Service a load balancer serves.
const UID_TAG: &str = ccm::service::reconcile::controller::TAG_SERVICE_UID;

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

/// What the checks made inside one read of the cloud share: the run, the cloud as it is,
/// and the LoadBalancer Services with their load balancers.
struct Seen<'a> {
    world: &'a World,
    cx: &'a Context,
    ctx: &'a Ctx<'a>,
    events: &'a [Event],
    /// The LoadBalancer Services, by uid.
    lb_uids: &'a BTreeMap<String, &'a Service>,
    /// Each Service uid's load balancers (the foreign one left out).
    per_service: BTreeMap<String, Vec<Uuid>>,
}

impl Seen<'_> {
    fn st(&self) -> &fakecloud::state::State {
        self.ctx.st
    }

    /// The first load balancer of the Service with this uid.
    fn load_balancer_of(&self, uid: &str) -> Option<Uuid> {
        self.per_service.get(uid).and_then(|l| l.first()).copied()
    }
}

/// Every invariant, in a fixed order.
pub fn check(world: &World, cx: &Context) -> Vec<Violation> {
    let mut out = world.found.lock().clone();
    let events: Vec<Event> = world.api.objects("events");
    let services: Vec<Service> = world.api.objects("services");
    let lb_uids: BTreeMap<String, &Service> = services
        .iter()
        .filter(|s| is_lb(s))
        .map(|s| (uid_of(s), s))
        .collect();
    let held_writes = world.cloud.read("", |ctx| {
        let per_service = load_balancers_per_service(ctx.st, cx, &lb_uids, &mut out);
        let seen = Seen {
            world,
            cx,
            ctx,
            events: &events,
            lb_uids: &lb_uids,
            per_service,
        };
        check_cloud(&seen, &services, &mut out)
    });
    check_deleted_nodes(world, &mut out);
    check_quiet_writes(cx, held_writes, &mut out);
    check_token(world, &events, &mut out);
    check_event_text(&events, &mut out);
    check_rbac(world, &mut out);
    out
}

/// The invariants on the cloud's state, in a fixed order; returns how many writes in the
/// quiet window belong to Services whose change is held.
fn check_cloud(seen: &Seen, services: &[Service], out: &mut Vec<Violation>) -> usize {
    check_one_load_balancer_each(&seen.per_service, out);
    // No duplicate pool, listener, member or monitor (a held change keeps its replacement
    // pool next to the serving one: only where the Service can converge).
    let held = held_services(seen);
    let held_writes = held_write_count(seen, &held);
    check_duplicates(seen.st(), &held, out);
    check_converged(seen, out);
    check_converged_serving(seen, out);
    check_nodes(seen, out);
    check_foreign(seen, out);
    check_steady(seen, services, out);
    held_writes
}

/// One load balancer per Service; none for a Service that is gone or no longer one. Returns
/// each Service uid's load balancers.
fn load_balancers_per_service(
    st: &fakecloud::state::State,
    cx: &Context,
    lb_uids: &BTreeMap<String, &Service>,
    out: &mut Vec<Violation>,
) -> BTreeMap<String, Vec<Uuid>> {
    let cluster_tag = ccm::service::reconcile::controller::TAG_CLUSTER;
    let mut per_service: BTreeMap<String, Vec<Uuid>> = BTreeMap::new();
    for lb in st.load_balancers().values() {
        if lb.uuid == cx.foreign.0 {
            continue;
        }
        let uid = lb.tags.get(UID_TAG).cloned().unwrap_or_default();
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
    per_service
}

fn check_one_load_balancer_each(
    per_service: &BTreeMap<String, Vec<Uuid>>,
    out: &mut Vec<Violation>,
) {
    for (uid, lbs) in per_service {
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
}

/// The uids of the Services that cannot converge: their change is held.
fn held_services(seen: &Seen) -> BTreeSet<String> {
    seen.lb_uids
        .iter()
        .filter(|(_, s)| !can_converge(seen.world, s, seen.st(), seen.ctx.now))
        .map(|(u, _)| u.clone())
        .collect()
}

/// Writes in the quiet window are allowed for a Service that cannot converge: its change is
/// held, and may go ahead whenever its old members stop serving. They are told apart by the
/// operations its load balancer was asked for in the window (one per write); any other write
/// is one too many.
fn held_write_count(seen: &Seen, held: &BTreeSet<String>) -> usize {
    let st = seen.st();
    seen.cx.quiet.map_or(0, |(from, to)| {
        st.load_balancers()
            .values()
            .filter(|lb| lb.tags.get(UID_TAG).is_some_and(|u| held.contains(u)))
            .filter_map(|lb| st.dataplane().lbs.get(&lb.uuid))
            .flat_map(|h| h.ops.iter())
            .filter(|op| op.requested_at >= from && op.requested_at <= to)
            .count()
    })
}

/// No duplicate pool, listener, member or monitor on a load balancer whose Service is not
/// held.
fn check_duplicates(
    st: &fakecloud::state::State,
    held: &BTreeSet<String>,
    out: &mut Vec<Violation>,
) {
    for lb in st.load_balancers().values() {
        if lb.tags.get(UID_TAG).is_some_and(|u| held.contains(u)) {
            continue;
        }
        check_duplicate_pools(st, lb.uuid, out);
        check_duplicate_listeners(st, lb.uuid, out);
    }
}

/// No two pools of one name on the load balancer, and in each pool no two members of one
/// address and port, and at most one monitor.
fn check_duplicate_pools(st: &fakecloud::state::State, lb: Uuid, out: &mut Vec<Violation>) {
    let pools: Vec<_> = st
        .pools()
        .values()
        .filter(|p| p.load_balancer == lb)
        .collect();
    let mut names = BTreeSet::new();
    for p in &pools {
        if !names.insert(&p.name) {
            out.push(violation(
                "duplicate",
                format!("two pools named {} on {}", p.name, lb),
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
}

fn check_duplicate_listeners(st: &fakecloud::state::State, lb: Uuid, out: &mut Vec<Violation>) {
    let mut listeners = BTreeSet::new();
    for l in st.listeners().values().filter(|l| l.load_balancer == lb) {
        if !listeners.insert((l.protocol.clone(), l.protocol_port)) {
            out.push(violation(
                "duplicate",
                format!(
                    "two {} listeners on port {} of {}",
                    l.protocol, l.protocol_port, lb
                ),
            ));
        }
    }
}

/// Converged: each LoadBalancer Service has its load balancer, listening on its ports, and
/// its ingress; unless none of the nodes it selects runs (its change is held, with a
/// Warning, until one does: nothing could serve it).
fn check_converged(seen: &Seen, out: &mut Vec<Violation>) {
    let st = seen.st();
    for (uid, svc) in seen.lb_uids {
        let name = svc.metadata.name.clone().unwrap_or_default();
        if !can_converge(seen.world, svc, st, seen.ctx.now) {
            continue;
        }
        let Some(lb) = seen.load_balancer_of(uid) else {
            // The documented refusal: the name it asks for is another Service's load
            // balancer's (ccm/src/service/pure/ownership.rs).
            if !refused_a_taken_load_balancer(seen.events, &name) {
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
            .filter(|l| l.load_balancer == lb)
            .map(|l| (l.protocol.clone(), l.protocol_port))
            .collect();
        if want != have {
            out.push(violation(
                "not-converged",
                format!("Service {name} wants listeners {want:?}, its load balancer has {have:?}"),
            ));
        }
        let ingress = crate::testbed::has_ingress(svc);
        if !ingress {
            out.push(violation(
                "not-converged",
                format!("Service {name} has no ingress"),
            ));
        }
    }
}

/// Converged means serving: every port of a Cluster-policy Service answers new connections
/// throughout the quiet window while one of its nodes runs. (Local Services have no
/// endpoints here: the simulation runs no pods.)
fn check_converged_serving(seen: &Seen, out: &mut Vec<Violation>) {
    let Some((from, to)) = seen.cx.quiet else {
        return;
    };
    let st = seen.st();
    let now = seen.ctx.now;
    let running: BTreeSet<std::net::IpAddr> = st
        .servers()
        .values()
        .filter(|sv| sv.status(now) == "running")
        .flat_map(|sv| sv.interfaces.iter().filter(|i| !i.public))
        .flat_map(|i| i.addresses.iter().map(|a| a.address))
        .collect();
    for (uid, svc) in seen.lb_uids {
        let local = svc
            .spec
            .as_ref()
            .and_then(|s| s.external_traffic_policy.as_deref())
            == Some("Local");
        let Some(lb) = seen.load_balancer_of(uid) else {
            continue;
        };
        let pools: BTreeSet<Uuid> = st
            .pools()
            .values()
            .filter(|p| p.load_balancer == lb)
            .map(|p| p.uuid)
            .collect();
        let any_member_runs = st
            .members()
            .values()
            .any(|m| pools.contains(&m.pool) && running.contains(&m.address));
        // None of its selected nodes runs: the documented outage, and a change held
        // until then may go ahead at any moment (nothing it could keep serving).
        if local || !any_member_runs || !can_converge(seen.world, svc, st, now) {
            continue;
        }
        check_serving_in_window(seen, svc, lb, (from, to), out);
    }
}

/// No downtime on the Service's ports and claimed floating IPs in the window.
fn check_serving_in_window(
    seen: &Seen,
    svc: &Service,
    lb: Uuid,
    (from, to): (fakecloud::clock::Time, fakecloud::clock::Time),
    out: &mut Vec<Violation>,
) {
    let propagation = seen.world.cloud.config().timing.floating_ip_propagation_s;
    let entries = fakecloud::dataplane::availability(
        seen.st().dataplane(),
        lb,
        from,
        to,
        std::net::IpAddr::from(CLIENT),
        propagation,
    )
    .unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    // The oracle reports every port the load balancer ever listened on, and every floating
    // IP it ever held: only the Service's ports count, and the floating IPs it claims (one
    // it let go may go to another Service that claims it).
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

/// A Node carries the shutdown taint exactly while its server is stopped, is initialized,
/// and is gone once its server is (unless the deletion guard holds it).
fn check_nodes(seen: &Seen, out: &mut Vec<Violation>) {
    for node in seen.world.api.objects::<Node>("nodes") {
        let name = node.metadata.name.clone().unwrap_or_default();
        let Some(uuid) = seen.world.server_of(&name) else {
            continue;
        };
        let Some(server) = seen.st().servers().get(&uuid) else {
            // Kept on purpose when too many Nodes looked gone at once: the documented
            // guard (deploy/README.md, "Guards before a Node is deleted").
            if !held_by_threshold(seen.events, &name) {
                out.push(violation(
                    "node-not-deleted",
                    format!("Node {name} is still there; its server {uuid} was deleted"),
                ));
            }
            continue;
        };
        let status = server.status(seen.ctx.now);
        check_node_initialized(&node, &name, uuid, out);
        check_node_taint(&node, &name, status, out);
    }
}

fn has_taint(node: &Node, key: &str) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == key))
}

/// Every Node (one deleted by hand and registered again too) is initialized.
fn check_node_initialized(node: &Node, name: &str, uuid: Uuid, out: &mut Vec<Violation>) {
    let uninitialized = has_taint(node, crate::testbed::UNINITIALIZED_TAINT);
    let provider_id = node.spec.as_ref().and_then(|s| s.provider_id.as_ref());
    if uninitialized || provider_id.is_none() {
        out.push(violation(
            "node-not-initialized",
            format!("Node {name} (server {uuid}) is not initialized"),
        ));
    }
}

fn check_node_taint(node: &Node, name: &str, status: &str, out: &mut Vec<Violation>) {
    let tainted = has_taint(node, ccm::node::metadata::SHUTDOWN_TAINT);
    let stopped = status == "stopped";
    if tainted != stopped {
        out.push(violation(
            "taint-mismatch",
            format!("Node {name}: shutdown taint {tainted}, server {status}"),
        ));
    }
}

/// Nothing of another cluster touched.
fn check_foreign(seen: &Seen, out: &mut Vec<Violation>) {
    let foreign_now = seen
        .st()
        .load_balancers()
        .get(&seen.cx.foreign.0)
        .map(|lb| lb.render(seen.ctx));
    if foreign_now.as_ref() != Some(&seen.cx.foreign.1) {
        out.push(violation(
            "foreign-touched",
            format!("the other cluster's load balancer is now {foreign_now:?}"),
        ));
    }
}

/// The Service no step touches serves without a break in its window.
fn check_steady(seen: &Seen, services: &[Service], out: &mut Vec<Violation>) {
    let Some((svc, from, to)) = &seen.cx.steady else {
        return;
    };
    let uid = services
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some(svc.as_str()))
        .map(uid_of)
        .unwrap_or_default();
    let Some(lb) = seen.load_balancer_of(&uid) else {
        out.push(violation(
            "steady-downtime",
            format!("{svc} lost its load balancer"),
        ));
        return;
    };
    let client = std::net::IpAddr::from([198, 51, 100, 7]);
    let propagation = seen.world.cloud.config().timing.floating_ip_propagation_s;
    let entries = fakecloud::dataplane::availability(
        seen.st().dataplane(),
        lb,
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
}

/// Nodes deleted by a CCM: their servers must be gone.
fn check_deleted_nodes(world: &World, out: &mut Vec<Violation>) {
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
}

/// No cloud writes after convergence, but those of a held change.
fn check_quiet_writes(cx: &Context, held_writes: usize, out: &mut Vec<Violation>) {
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
}

/// The token never leaves the client.
fn check_token(world: &World, events: &[Event], out: &mut Vec<Violation>) {
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
}

/// People read Events: no Rust `Debug` renderings in them, and, as `kubectl describe` shows
/// an Event as one row of a table, one line each.
fn check_event_text(events: &[Event], out: &mut Vec<Violation>) {
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
}

/// The CCMs run as the ServiceAccount of deploy/config.yml: a refusal is a missing rule.
fn check_rbac(world: &World, out: &mut Vec<Violation>) {
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
