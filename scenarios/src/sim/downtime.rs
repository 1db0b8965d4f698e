//! Downtime of the ports of Services the workload created, changed or broke, judged against
//! the documented class of each change, from fakecloud's data-plane oracle (new connections
//! to each VIP address × port, from a client inside the allowed CIDRs).
//!
//! **The rule.** Every down interval `[a, b)` of a port is judged by what is pending for its
//! Service at `a`:
//! - nothing (it was created, switched to `externalTrafficPolicy: Cluster`, or a CCM
//!   reported it converged since its last change): once the port served, it must not go
//!   down again, whatever the faults: 0 s;
//! - changes (annotations, ports, traffic policy, floating IPs, and those made before `b`):
//!   at most the sum of the bounds of their documented classes (`ccm/README.md`, "Impact of
//!   Service changes", proven by `tests/it/props.rs`; [`bound_of`]), plus the
//!   time faults took from the CCM within `[a, b)` (a retry cannot happen sooner): from a
//!   failed request of a CCM (cloud: no answer, 429, 5xx; Kubernetes: 409, 410, 5xx) to its
//!   retry that succeeded (other Services' requests succeed meanwhile while a failed one
//!   waits out its backoff), from a CCM crash, stop or cut watch to the next load-balancer
//!   write that succeeded, while the CCMs' cloud settings are wrong (another account, a
//!   wrong API root, a revoked token) and a backoff after, and the time a delayed request
//!   was in flight; plus the time
//!   writes waited in the load balancer's queue (fakecloud's load balancers apply one write
//!   after another, 10 s each, and the class bounds are measured on an idle one): behind
//!   operations requested before the last change made before the break, or planned before
//!   it (requested before a CCM began a pass of the Service from a plan made after it:
//!   [`planned_until`]) ([`backlog`]), or, for the write
//!   that brought the port back, behind writes of other passes (requested after a workload
//!   or fault step or a CCM restart that came after the break; [`queued`]), whichever is
//!   longer: writes of the pass that broke the port earn nothing, however far apart they
//!   were sent (make-before-break puts nothing between a break and its restore);
//! - a Node deleted by outside hands and registered again by its kubelet counts as a change
//!   of the member-recreate class for every Service that selects it (its members leave with
//!   the Node and come back checked anew);
//! - outside hands deleting or changing a part of its load balancer count as a change
//!   bounded by [`REPAIR`] (the data plane may apply the breakage minutes after the
//!   request, behind earlier operations: the bound runs from when the port went down).
//!
//! A change is pending until a CCM logs the Service converged (`service converged`, a
//! debug line the simulation writes to the trace), the load balancer applied what was
//! requested by then, and [`RECHECK_MS`] more have passed.
//!
//! Not judged: a port the change removed or added, floating-IP addresses (propagation is
//! the cloud's), a Service under `externalTrafficPolicy: Local` until a CCM applied its
//! last change (the simulation runs no pods, so it has no endpoints), a change that leaves no running node selected (the
//! documented `outage` class), intervals that begin within [`NODE_SETTLE`] of a node
//! stopping, starting, joining or going (its members stop answering before any monitor
//! notices), and a Service whose whole load balancer outside hands deleted (it is
//! re-created with other addresses; `not-converged` judges that).

mod holds;

use super::invariants::Violation;
use super::schedule::{Action, Effects, Played, Port, Shape};
use super::trace::Request;
use super::world::World;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::Duration;

#[cfg(test)]
use holds::{FAILURE_HOLD_MS, HALT_HOLD_MS};
use holds::{blocked, carried_over};

/// `listener-recreate`: a port without listener for one reconfiguration (about 10 s).
const LISTENER_RECREATE: f64 = 15.0;
/// `member-recreate`: a node port change; down until the port's first new member is up.
/// The least bound; [`member_recreate`] gives a Service's own.
const MEMBER_RECREATE: f64 = 30.0;
/// One write on a load balancer (fakecloud's default `lb_reconfigure_s`).
const ONE_WRITE: f64 = 10.0;
/// After outside hands broke a part: one resync period (60 s in the simulation) to notice,
/// and 90 s to rebuild a deleted pool (pool, monitor, up to 6 members and the listener, one
/// write of 10 s after another, members checked anew).
pub const REPAIR: Duration = Duration::from_secs(150);
/// How long after a node event its members may fail new connections before the monitors
/// (delay ≤ 5 s × down threshold 3) take them out and the CCM has reacted.
pub const NODE_SETTLE: Duration = Duration::from_secs(60);
/// How long after outside hands changed a load balancer a CCM's convergence may still
/// have been planned on reads from before the change.
const OUTSIDE_SEEN_MS: u128 = 5_000;
/// The oracle's intervals are exact; the bounds are whole seconds measured on one run.
const SLACK: f64 = 0.5;

/// A client inside every allowed CIDR the workload sets (`10.0.0.0/8`).
const CLIENT: [u8; 4] = [10, 1, 2, 3];

/// What happened to a Service, as far as its ports' downtime is concerned.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Created, or switched to `externalTrafficPolicy: Cluster`: serving from here on,
    /// nothing pending.
    Serving,
    /// Changed: `bound` seconds for the ports in `kept` (served before and after). Outside
    /// hands breaking a part count as a change bounded by [`REPAIR`]. `resumes`: judged
    /// again from here (a switch back to `externalTrafficPolicy: Cluster`).
    Changed {
        bound: f64,
        kept: BTreeSet<(String, u16)>,
        resumes: bool,
    },
    /// A CCM reported the Service converged: the changes it saw are applied.
    Converged,
    /// Not judged from here on (see the module comment).
    Unjudged,
}

#[derive(Debug, Clone)]
struct Event {
    at: u128,
    /// For outside hands, when the cloud answered their request (a slow API answers
    /// seconds after the step); for a convergence, when the CCM sent the last cloud read
    /// before it (what it planned from). Otherwise `at`.
    seen: u128,
    /// The Service's resourceVersion after a step of the workload, or the one a CCM
    /// converged on (`None`: outside hands, which leave the Service as it is).
    rv: Option<u64>,
    kind: Kind,
    /// The Service's ports after it.
    ports: BTreeSet<(String, u16)>,
    what: String,
}

/// The workload's view of one Service.
#[derive(Debug, Default)]
struct Model {
    ports: BTreeSet<(String, u16)>,
    local: bool,
    /// The node its selector excludes (the workload's only selector).
    excluded: Option<String>,
    delay_s: i64,
    up_threshold: i64,
    /// Its load balancer was deleted by outside hands: nothing more is judged.
    replaced: bool,
    /// A running node is selected (else the documented `outage`: nothing can serve).
    served: bool,
    events: Vec<Event>,
}

fn port_set(ports: &[Port]) -> BTreeSet<(String, u16)> {
    ports
        .iter()
        .map(|p| (if p.udp { "udp" } else { "tcp" }.to_string(), p.port))
        .collect()
}

const A: &str = "k8s.cloudscale.ch/loadbalancer-";

/// The documented bound of one annotation change (seconds), given the monitor settings in
/// force when it applies.
fn annotation_bound(key: &str, m: &Model) -> f64 {
    match key.strip_prefix(A).unwrap_or(key) {
        // A new pool made next to the old one, then its listener re-created.
        "pool-algorithm" | "pool-protocol" => LISTENER_RECREATE,
        // The replaced monitor checks the members anew: delay × up threshold (a new HTTP
        // version replaces an HTTP check too).
        "health-monitor-type" | "health-monitor-http" => (m.delay_s * m.up_threshold) as f64,
        // In place, unless a monitor replacement is still pending: the new monitor is then
        // made with these settings and checks its members at them (found by the sweep:
        // a type change held by an outage, applied with the up threshold of a later edit).
        "health-monitor-delay-s" | "health-monitor-up-threshold"
            if pending_change(m, MONITOR_REPLACED) =>
        {
            (m.delay_s * m.up_threshold) as f64
        }
        // In place (monitor, listener and load balancer settings), members added before
        // others are removed (node selector), refused (zone), or status only: none or
        // minimal, 0 s measured.
        _ => 0.0,
    }
}

/// Whether a change of one of these annotations is not settled yet: no convergence after
/// it saw it (one that replaces the monitor: its type, its HTTP options; or the pools:
/// their algorithm, their protocol). A convergence from a Service read before the change
/// (a reconcile under way when it was made) settles nothing of it.
fn pending_change(m: &Model, annotations: [&str; 2]) -> bool {
    m.events.iter().enumerate().any(|(i, e)| {
        annotations.iter().any(|a| e.what.contains(a))
            && !m.events[i + 1..].iter().any(|c| {
                matches!(c.kind, Kind::Converged)
                    && match (e.rv, c.rv) {
                        (Some(change), Some(seen)) => seen >= change,
                        _ => true,
                    }
            })
    })
}

const MONITOR_REPLACED: [&str; 2] = ["health-monitor-type", "health-monitor-http"];
const POOLS_REPLACED: [&str; 2] = ["pool-algorithm", "pool-protocol"];

/// The bound of a step's change of one Service (seconds; `None`: not a change of its ports).
fn bound_of(action: &Action, model: &Model) -> Option<f64> {
    Some(match action {
        // A kept port given another node port while its pool is being replaced: the first
        // new member goes into the new pool, and the listener, already without a backend
        // Kubernetes serves, is deleted and made again on it: its deletion is part of the
        // outage too (found by the sweep: pool, monitor, member, delete, create, 50 s).
        Action::SetPorts(..) if pending_change(model, POOLS_REPLACED) => {
            member_recreate(model) + LISTENER_RECREATE
        }
        Action::Annotate(_, changes) => changes
            .iter()
            .map(|(k, _)| annotation_bound(k, model))
            .fold(0.0, f64::max),
        // Kept ports may get new node ports: member-recreate.
        Action::SetPorts(..) => member_recreate(model),
        // Leaving Local: Kubernetes closes the health-check node port at once, the CCM
        // announces member-recreate (entering it: listener-recreate).
        Action::SetPolicy(..) => member_recreate(model),
        // On the VIPs: none.
        Action::ClaimFloatingIp { .. }
        | Action::ClaimFloatingIpsOf { .. }
        | Action::DropFloatingIps(_) => 0.0,
        _ => return None,
    })
}

/// The member-recreate bound of a Service's ports: the CCM makes each port's first new
/// member one port after another (`ccm/README.md`, "Ports"), so the last port's comes after
/// one write per port, and is up once the monitor saw it up (delay × up threshold). Found
/// by the sweep: two ports given new node ports under a monitor of 4 s × 3, the second
/// port's first member written second, 32 s.
fn member_recreate(m: &Model) -> f64 {
    let writes = ONE_WRITE * m.ports.len() as f64;
    MEMBER_RECREATE.max(writes + (m.delay_s * m.up_threshold) as f64)
}

/// Applies a step to the Service's model; its kind for the rule (`None`: nothing that
/// concerns the ports).
fn step_kind(action: &Action, m: &mut Model, running: &BTreeSet<String>) -> Option<Kind> {
    let before = m.ports.clone();
    let was_local = m.local;
    take_in(action, m);
    // After the model took the change in: a replaced monitor checks at the new delay.
    let bound = bound_of(action, m);
    let serves = running.iter().any(|n| Some(n) != m.excluded.as_ref());
    // The ports served before and after.
    let kept = || before.intersection(&m.ports).cloned().collect();
    Some(match action {
        Action::Delete(_) | Action::ToClusterIp(_) => Kind::Unjudged,
        // Made while no selected node runs (`m.served` is the state before this step):
        // nothing is judged until one runs again ([`nodes_changed`]), but the change is
        // still pending then: its plan waited for members up and applies after, with this
        // change's downtime (found by the sweep: an algorithm change made during an
        // outage re-created the listeners once a node ran again).
        Action::Annotate(..) | Action::SetPorts(..)
            if !serves && !m.served && !m.replaced && !m.local =>
        {
            match bound {
                Some(bound) => Kind::Changed {
                    bound,
                    kept: kept(),
                    resumes: false,
                },
                None => Kind::Unjudged,
            }
        }
        // Outside hands breaking a part while no selected node runs: the load balancer
        // may apply it after one runs again (behind its queue), and the repair is bounded
        // as any (found by the sweep: a listener moved by hand in an outage, applied
        // minutes later and repaired in 10 s, judged against nothing pending).
        Action::OutsideDelete(..) | Action::OutsideChange(..)
            if !serves && !m.served && !m.replaced && !m.local =>
        {
            repair(m)
        }
        _ if m.replaced || !serves => Kind::Unjudged,
        // A Local Service serves nothing here (no pods run): whatever it does to the ports
        // is not judged until a CCM has applied it, even after a switch back to Cluster
        // (a load balancer busy with earlier writes may apply the Local switch late).
        _ if m.local => Kind::Changed {
            bound: f64::INFINITY,
            kept: m.ports.clone(),
            resumes: false,
        },
        Action::Create(..) => Kind::Serving,
        // The data plane applies a breakage when the load balancer's earlier operations
        // are done, possibly minutes after the request: the repair is bounded from the
        // moment the port went down, like a change.
        Action::OutsideDelete(..) | Action::OutsideChange(..) => repair(m),
        _ => Kind::Changed {
            bound: bound?,
            kept: kept(),
            resumes: was_local,
        },
    })
}

/// Outside hands breaking a part: a change bounded by [`REPAIR`] for every port.
fn repair(m: &Model) -> Kind {
    Kind::Changed {
        bound: REPAIR.as_secs_f64(),
        kept: m.ports.clone(),
        resumes: false,
    }
}

/// The model takes in what the step changes of the Service.
fn take_in(action: &Action, m: &mut Model) {
    match action {
        Action::Create(_, shape) => take_in_shape(shape, m),
        Action::Annotate(_, changes) => {
            for (k, v) in changes {
                take_in_annotation(k, v.as_deref(), m);
            }
        }
        Action::SetPorts(_, ports) => m.ports = port_set(ports),
        Action::SetPolicy(_, local) => m.local = *local,
        Action::OutsideDelete(_, "load balancer") => m.replaced = true,
        _ => {}
    }
}

/// A new Service: its ports, policy and monitor timing.
fn take_in_shape(shape: &Shape, m: &mut Model) {
    m.ports = port_set(&shape.ports);
    m.local = shape.local;
    let number = |suffix: &str, default: i64| {
        shape
            .annotations
            .iter()
            .find(|(k, _)| k.ends_with(suffix))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(default)
    };
    m.delay_s = number(
        "health-monitor-delay-s",
        ccm::service::pure::annotations::DEFAULT_HEALTH_MONITOR_DELAY_S,
    );
    m.up_threshold = number(
        "health-monitor-up-threshold",
        ccm::service::pure::annotations::DEFAULT_HEALTH_MONITOR_UP_THRESHOLD,
    );
}

/// One annotation set (`Some`) or removed: the monitor timing and the excluded node.
fn take_in_annotation(key: &str, value: Option<&str>, m: &mut Model) {
    if key.ends_with("health-monitor-up-threshold") {
        m.up_threshold = value
            .and_then(|v| v.parse().ok())
            .unwrap_or(ccm::service::pure::annotations::DEFAULT_HEALTH_MONITOR_UP_THRESHOLD);
    } else if key.ends_with("health-monitor-delay-s") {
        m.delay_s = value
            .and_then(|v| v.parse().ok())
            .unwrap_or(ccm::service::pure::annotations::DEFAULT_HEALTH_MONITOR_DELAY_S);
    } else if key.ends_with("node-selector") {
        m.excluded =
            value.and_then(|v| v.strip_prefix("kubernetes.io/hostname!=").map(String::from));
    }
}

/// The Services' histories, from the steps as played and the CCMs' `converged` lines of
/// the trace, in trace order.
fn models(played: &[Played], lines: &[String], first_nodes: &[String]) -> BTreeMap<String, Model> {
    let mut running: BTreeSet<String> = first_nodes.iter().cloned().collect();
    let mut models: BTreeMap<String, Model> = BTreeMap::new();
    let mut steps = played.iter().filter(|p| !p.refused).peekable();
    for (i, line) in lines.iter().enumerate() {
        if let Some(p) = steps.next_if(|p| p.line == i) {
            match &p.action {
                Action::StopServer(n) | Action::DeleteServer(n) => {
                    running.remove(n);
                    nodes_changed(&mut models, &running, p.at);
                }
                Action::StartServer(n) | Action::AddNode(n) => {
                    running.insert(n.clone());
                    nodes_changed(&mut models, &running, p.at);
                }
                Action::ReregisterNode(n) => reregistered(&mut models, &running, n, p.at),
                _ => {}
            }
            let Some(name) = p.action.service() else {
                continue;
            };
            let m = models.entry(name.to_string()).or_default();
            if m.replaced {
                continue;
            }
            if let Some(kind) = step_kind(&p.action, m, &running) {
                m.served = running.iter().any(|n| Some(n) != m.excluded.as_ref());
                let ports = m.ports.clone();
                let seen = match &p.action {
                    Action::OutsideDelete(..) | Action::OutsideChange(..) => {
                        answered(lines, i).unwrap_or(p.at)
                    }
                    _ => p.at,
                };
                m.events.push(Event {
                    at: p.at,
                    seen,
                    rv: p.resource_version,
                    kind,
                    ports,
                    what: format!("{:?}", p.action),
                });
            }
            continue;
        }
        let mut f = line.split(' ');
        if let (Some(at), Some("converged"), Some(key)) = (f.next(), f.next(), f.next())
            && let (Ok(at), Some(name)) = (at.parse::<u128>(), key.strip_prefix("default/"))
            && let Some(m) = models.get_mut(name)
        {
            let ports = m.ports.clone();
            m.events.push(Event {
                at,
                seen: snapshot_sent(lines, i).unwrap_or(at),
                rv: f.next().and_then(|v| v.parse().ok()),
                kind: Kind::Converged,
                ports,
                what: "converged".into(),
            });
        }
    }
    models
}

/// When the cloud answered the outside requests of the step on trace line `step` (the
/// last `cloud outside` line before the next step).
fn answered(lines: &[String], step: usize) -> Option<u128> {
    lines[step + 1..]
        .iter()
        .take_while(|l| l.split(' ').nth(1) != Some("step"))
        .filter_map(|l| Request::parse(l))
        .filter(|r| r.api == "cloud" && r.actor == "outside")
        .map(|r| r.millis)
        .last()
}

/// The account-wide lists a CCM plans a load balancer from.
const SNAPSHOT: [&str; 4] = [
    "/v1/load-balancers",
    "/v1/load-balancers/pools",
    "/v1/load-balancers/listeners",
    "/v1/load-balancers/health-monitors",
];

/// When a CCM sent the reads a convergence logged on trace line `at` was planned from: the
/// last cloud request answered before it, or, if earlier, the oldest of the last successful
/// reads of the lists in [`SNAPSHOT`] (a read retried after a 429 stretches a snapshot over
/// seconds; found by the sweep, seed 71001278: the monitors were read 8 s before the last
/// request, before outside hands deleted one). A slow answer is followed by
/// `<ms> slow <who> <sent ms>`.
fn snapshot_sent(lines: &[String], at: usize) -> Option<u128> {
    let sent_of = |j: usize, r: &Request| {
        let slow = lines.get(j + 1).and_then(|l| {
            let mut f = l.split(' ').skip(1);
            (f.next() == Some("slow")).then(|| f.nth(1)?.parse().ok())?
        });
        slow.unwrap_or(r.millis)
    };
    let mut last = None;
    let mut lists: [Option<u128>; SNAPSHOT.len()] = [None; SNAPSHOT.len()];
    for (j, l) in lines[..at].iter().enumerate().rev() {
        let Some(r) = Request::parse(l).filter(|r| r.api == "cloud" && r.by_ccm()) else {
            continue;
        };
        last.get_or_insert_with(|| sent_of(j, &r));
        if let Some(k) = SNAPSHOT.iter().position(|p| *p == r.path)
            && r.method == "GET"
            && r.status == "200"
            && lists[k].is_none()
        {
            lists[k] = Some(sent_of(j, &r));
        }
        if lists.iter().all(Option::is_some) {
            break;
        }
    }
    lists.into_iter().flatten().chain(last).min()
}

/// A Node deleted and registered again by its kubelet: its members leave the pools with
/// the Node and come back, checked anew, once it is initialized again: for each Service
/// that selects it, a change of the member-recreate class (down until the new members are
/// up, should it be the only node serving the Service at that moment).
fn reregistered(
    models: &mut BTreeMap<String, Model>,
    running: &BTreeSet<String>,
    node: &str,
    at: u128,
) {
    if !running.contains(node) {
        return;
    }
    for m in models.values_mut().filter(|m| !m.replaced && !m.local) {
        if m.excluded.as_deref() == Some(node) {
            continue;
        }
        m.events.push(Event {
            at,
            seen: at,
            rv: None,
            kind: Kind::Changed {
                bound: member_recreate(m),
                kept: m.ports.clone(),
                resumes: false,
            },
            ports: m.ports.clone(),
            what: format!("ReregisterNode({node:?})"),
        });
    }
}

/// What [`nodes_changed`] calls the start and the end of a Service's node outage.
const NO_NODE_RUNS: &str = "no selected node runs";
const NODE_RUNS_AGAIN: &str = "a selected node runs again";

/// A node stopped, started, joined or went: a Service left without a running selected
/// node is not judged until one runs again (then it is judged as changed, bound 0: members
/// are added before others go).
fn nodes_changed(models: &mut BTreeMap<String, Model>, running: &BTreeSet<String>, at: u128) {
    for m in models.values_mut().filter(|m| !m.replaced && !m.local) {
        let served = running.iter().any(|n| Some(n) != m.excluded.as_ref());
        if served == m.served {
            continue;
        }
        m.served = served;
        let kind = if served {
            Kind::Changed {
                bound: 0.0,
                kept: m.ports.clone(),
                resumes: true,
            }
        } else {
            Kind::Unjudged
        };
        let what = if served {
            NODE_RUNS_AGAIN
        } else {
            NO_NODE_RUNS
        };
        m.events.push(Event {
            at,
            seen: at,
            rv: None,
            kind,
            ports: m.ports.clone(),
            what: what.into(),
        });
    }
}

/// Milliseconds of `periods` within `[a, b)`, in seconds (periods may overlap: counted
/// once).
fn overlap(periods: &[(u128, u128)], a: u128, b: u128) -> f64 {
    let mut cut: Vec<(u128, u128)> = periods
        .iter()
        .map(|(s, e)| ((*s).max(a), (*e).min(b)))
        .filter(|(s, e)| s < e)
        .collect();
    cut.sort_unstable();
    let (mut total, mut reach) = (0u128, 0u128);
    for (s, e) in cut {
        let s = s.max(reach);
        if e > s {
            total += e - s;
        }
        reach = reach.max(e);
    }
    total as f64 / 1000.0
}

/// A replaced monitor checks its members anew after the CCM saw its change applied
/// (delay ≤ 5 s × up threshold ≤ 10): a `converged` line settles the changes before it for
/// intervals that begin this long after it.
const RECHECK_MS: u128 = 50_000;

/// The verdict on one down interval `[a, b)` of `port` ([`Allowed`]); `None` when it is not
/// judged.
fn allowed(
    events: &[Event],
    port: &(String, u16),
    (a, b): (u128, u128),
    blocked: &[(u128, u128)],
    ops: &[(u128, u128)],
) -> Option<Allowed> {
    let last = events.iter().rposition(|e| e.at <= a)?;
    if !events[last].ports.contains(port) {
        return None;
    }
    let mut pending: Vec<usize> = Vec::new();
    let mut judged = true;
    for (i, e) in events.iter().enumerate() {
        if e.at > a {
            // Something else happening to the Service before the port is back.
            match e.kind {
                _ if e.at >= b => break,
                Kind::Changed { .. } => pending.push(i),
                Kind::Converged => {}
                _ => return None,
            }
            continue;
        }
        match e.kind {
            Kind::Serving => {
                pending.clear();
                judged = true;
            }
            Kind::Changed { resumes, .. } => {
                pending.push(i);
                judged |= resumes;
            }
            // Settles the changes the CCM saw (a reconcile that read the Service before a
            // change can finish after it), and outside breakage before it.
            Kind::Converged if applied_by(ops, e.at) + RECHECK_MS <= a => pending.retain(|p| {
                let c = &events[*p];
                match (c.rv, e.rv) {
                    (Some(change), Some(seen)) => change > seen,
                    // Outside hands change no resourceVersion: a convergence settles them
                    // only if its reads came after them (the CCM shares the account-wide
                    // lists for up to 2 s, and a reconcile takes a few seconds). Both times
                    // are the cloud's: a slow API answers the outside request late, and
                    // the CCM's reads were sent long before it logs convergence.
                    _ => c.seen + OUTSIDE_SEEN_MS >= e.seen,
                }
            }),
            Kind::Converged => {}
            Kind::Unjudged => judged = false,
        }
    }
    if !judged || outage_tail(events, ops, a) {
        return None;
    }
    if pending.is_empty() {
        // Nothing pending: the port serves through any fault.
        return Some(Allowed {
            seconds: 0.0,
            last,
            since: None,
            during: Vec::new(),
        });
    }
    let mut bound = 0.0;
    for i in &pending {
        match &events[*i].kind {
            Kind::Changed {
                bound: more, kept, ..
            } if kept.contains(port) => bound += more,
            _ => return None,
        }
    }
    // The queue counts from the last change made before the port went down: writes other
    // changes queued before it (another pending change's included: a monitor replaced
    // keeps a load balancer busy far longer than its own bound) are work the port's
    // restore had to wait behind.
    let since = pending
        .iter()
        .rev()
        .map(|i| events[*i].at)
        .find(|at| *at <= a)
        .or_else(|| pending.first().map(|i| events[*i].at));
    // Changes made while the port was down that break it by themselves: see [`later_queue`].
    let during = pending
        .iter()
        .filter(|i| events[**i].at > a)
        .filter(|i| matches!(events[**i].kind, Kind::Changed { bound, .. } if bound > 0.0))
        .map(|i| events[*i].at)
        .collect();
    Some(Allowed {
        seconds: bound + overlap(blocked, a, b),
        last,
        since,
        during,
    })
}

/// How long a down port may stay down, from [`allowed`].
struct Allowed {
    /// The bounds of the pending changes and the time faults held the CCM up.
    seconds: f64,
    /// The Service's last event at or before the port went down.
    last: usize,
    /// Where its queue counts from (see [`backlog`]); `None`: nothing pending.
    since: Option<u128>,
    /// When changes were made after the port went down and before it came back, each
    /// bounded above zero (it breaks the port by itself: new node ports, a new monitor).
    during: Vec<u128>,
}

/// The write that brought a port back at `b`: the last the load balancer applied by then
/// (requested, effective).
fn restore_op(ops: &[(u128, u128)], b: u128) -> Option<(u128, u128)> {
    ops.iter()
        .filter(|(_, effective)| *effective <= b)
        .max_by_key(|(_, effective)| *effective)
        .copied()
}

/// Seconds the write that brought the port back waited behind the load balancer's queue as
/// it stood when a change made while the port was down (`during`) was planned: a port
/// broken by one change (a monitor replaced, its members checked anew) and broken again by
/// another before it served (new node ports: its members point at a closed port) comes
/// back with the second change's writes, which the load balancer applies after everything
/// requested before them, whichever pass requested it. Counted only when that write was
/// requested by a pass planned at or after the change: a restore sent before it owes
/// nothing to it (a plan that puts its own writes between a break and its restore earns
/// nothing by a change arriving meanwhile).
fn later_queue(
    lines: &[String],
    service: &str,
    ops: &[(u128, u128)],
    during: &[u128],
    b: u128,
) -> f64 {
    let Some((restore, _)) = restore_op(ops, b) else {
        return 0.0;
    };
    during
        .iter()
        .map(|at| (*at, planned_until(lines, service, *at, b)))
        .filter(|(_, planned)| restore >= *planned)
        .map(|(at, planned)| backlog(ops, planned, at, b))
        .fold(0.0, f64::max)
}

/// Whether a port went down at `a` as the load balancer applied a write requested before
/// the Service's last node outage began, after a selected node ran again: the write was
/// sound when made (a selected node served), no later pass could take it back, and what
/// kept the port up meanwhile was a node the Service no longer selects (a queued removal
/// of an excluded node's member). The downtime is the outage's, which is not judged
/// either: an interval that begins within an outage is not judged at all.
fn outage_tail(events: &[Event], ops: &[(u128, u128)], a: u128) -> bool {
    let before = |what: &str| events.iter().rposition(|e| e.at <= a && e.what == what);
    let (Some(began), Some(ended)) = (before(NO_NODE_RUNS), before(NODE_RUNS_AGAIN)) else {
        return false;
    };
    if ended < began {
        return false;
    }
    let (from, resumed) = (events[began].at, events[ended].at);
    ops.iter()
        .any(|&(requested, effective)| requested < from && effective == a && effective >= resumed)
}

/// When the load balancer had applied every operation requested by `at`: a CCM that says a
/// Service converged has written everything, but a load balancer busy with a queue applies
/// it later (a monitor replaced minutes after, members checked anew only then).
fn applied_by(ops: &[(u128, u128)], at: u128) -> u128 {
    ops.iter()
        .filter(|(requested, _)| *requested <= at)
        .map(|(_, effective)| *effective)
        .max()
        .unwrap_or(0)
        .max(at)
}

/// Seconds within `[a, b)` the load balancer spent applying operations requested before
/// the change that broke the port (`since`): it could not take effect before the work
/// queued ahead of it.
fn backlog(ops: &[(u128, u128)], since: u128, a: u128, b: u128) -> f64 {
    let busy_until = ops
        .iter()
        .filter(|(requested, _)| *requested < since)
        .map(|(_, effective)| *effective)
        .max()
        .unwrap_or(0);
    busy_until.clamp(a, b).saturating_sub(a) as f64 / 1000.0
}

/// Until when (trace ms) the writes of `service`'s load balancer were planned before
/// `since`: until a CCM began a pass of it from a new plan at or after `since` (its
/// `planned` line), or until `b`. A pass planned before and carried out after cannot be
/// taken back once begun: its writes are queue time like [`backlog`]. The writes of the
/// plan's own millisecond are the new plan's (a pass sends its first writes at the instant
/// it plans).
fn planned_until(lines: &[String], service: &str, since: u128, b: u128) -> u128 {
    lines
        .iter()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            let at = f.next()?.parse::<u128>().ok()?;
            (f.next()? == "planned" && f.next()? == service).then_some(at)
        })
        .find(|at| *at >= since)
        .map_or(b, |at| at.min(b))
}

/// When something new began that a CCM's writes may answer (a workload or fault step, a
/// CCM crashing or starting): trace milliseconds, in order. Writes requested after one of
/// these that came after a port broke belong to another pass than the break's.
fn pass_boundaries(lines: &[String]) -> Vec<u128> {
    lines
        .iter()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            let at = f.next()?.parse::<u128>().ok()?;
            matches!(f.next()?, "step" | "crash" | "start").then_some(at)
        })
        .collect()
}

/// Seconds within `[a, b)` that the write which brought the port back (the last one the
/// load balancer applied by `b`) waited behind writes of other passes: another change, a
/// fault or a CCM restart came between the break and their request, and the load balancer
/// applied them first. Writes of the pass that broke the port (the operation applied at
/// `a`) earn nothing, however far apart the CCM sent them: a plan that puts them between
/// the break and the restore (delete before create) is the CCM's own choice.
fn queued(ops: &[(u128, u128)], a: u128, b: u128, apply_ms: u128, boundaries: &[u128]) -> f64 {
    let Some((_, restored)) = restore_op(ops, b) else {
        return 0.0;
    };
    let broke = ops
        .iter()
        .filter(|(_, effective)| *effective <= a)
        .max_by_key(|(_, effective)| *effective)
        .map_or(0, |(requested, _)| *requested);
    let behind = ops
        .iter()
        .filter(|(requested, effective)| {
            *effective > a
                && *effective < restored
                && boundaries.iter().any(|t| broke < *t && *t <= *requested)
        })
        .count() as u128;
    (behind * apply_ms).min(b - a) as f64 / 1000.0
}

/// Down intervals that touch merged into one (the oracle splits them where the reason
/// changes: "load balancer not provisioned", then "no listener", then "no member up" is
/// one stretch without service); the reason kept is the last one.
fn merged(down: &[fakecloud::dataplane::DownInterval]) -> Vec<fakecloud::dataplane::DownInterval> {
    let mut out: Vec<fakecloud::dataplane::DownInterval> = Vec::new();
    for d in down {
        match out.last_mut() {
            Some(last) if last.to >= d.from => {
                last.to = last.to.max(d.to);
                last.reason = d.reason;
            }
            _ => out.push(d.clone()),
        }
    }
    out
}

/// What judging every down interval of a run shares: the trace and what is read from it
/// once.
struct Judge<'a> {
    world: &'a World,
    lines: &'a [String],
    blocked: Vec<(u128, u128)>,
    boundaries: Vec<u128>,
    node_events: Vec<u128>,
    apply_ms: u128,
}

impl Judge<'_> {
    /// Trace milliseconds of a cloud instant.
    fn millis(&self, t: fakecloud::clock::Time) -> u128 {
        (t - self.world.cloud_zero).num_milliseconds().max(0) as u128
    }
}

/// Every down interval of a judged port beyond what the rule allows.
pub fn check(world: &World, effects: &Effects, until: fakecloud::clock::Time) -> Vec<Violation> {
    let first_nodes: Vec<String> = (1..=world.first_nodes())
        .map(|i| format!("node-{i}"))
        .collect();
    let lines = world.trace.lines();
    let models = models(&effects.played, &lines, &first_nodes);
    let judge = Judge {
        world,
        lines: &lines,
        blocked: blocked(&lines),
        boundaries: pass_boundaries(&lines),
        node_events: effects.node_events.iter().map(|d| d.as_millis()).collect(),
        apply_ms: (world.cloud.config().timing.lb_reconfigure_s * 1000.0) as u128,
    };
    let mut out = Vec::new();
    out.extend(unplanned_writes(&lines));
    for (name, model) in &models {
        let Some(first) = model.events.first() else {
            continue;
        };
        let mut lbs = effects
            .load_balancers
            .get(name)
            .cloned()
            .unwrap_or_default();
        lbs.extend(world.load_balancer_of(name));
        let from = world.cloud_zero + chrono::Duration::milliseconds(first.at as i64);
        for lb in lbs {
            let (entries, ops) = availability(&judge, lb, from, until);
            for entry in entries
                .iter()
                .filter(|e| e.kind == fakecloud::dataplane::EntryKind::Vip)
            {
                for d in merged(&entry.down) {
                    // Down from the start: it never served, or not since before.
                    if d.from <= from {
                        continue;
                    }
                    let down = Down {
                        name,
                        model,
                        lb,
                        ops: &ops,
                        entry,
                        interval: &d,
                    };
                    out.extend(judge_down(&judge, &down));
                }
            }
        }
    }
    out
}

/// The backlog reads the CCM's `service planned` lines (`planned_until`): a run in which a
/// CCM wrote to a load balancer without one means that line is gone, and every write would
/// count as planned before whatever broke a port.
fn unplanned_writes(lines: &[String]) -> Option<Violation> {
    let planned = lines.iter().any(|l| l.split(' ').nth(1) == Some("planned"));
    let written = || {
        lines.iter().any(|l| {
            Request::parse(l).is_some_and(|r| {
                r.by_ccm()
                    && r.api == "cloud"
                    && r.method != "GET"
                    && r.path.starts_with("/v1/load-balancers")
            })
        })
    };
    (!planned && written()).then(|| Violation {
        invariant: "harness",
        detail: "a CCM wrote to a load balancer but logged no `service planned` line: \
                 the downtime judgement cannot tell planned writes apart"
            .into(),
    })
}

/// The oracle's availability of load balancer `lb` from `from` to `until`, and the
/// operations it was asked for (requested, effective, in trace milliseconds).
fn availability(
    judge: &Judge,
    lb: uuid::Uuid,
    from: fakecloud::clock::Time,
    until: fakecloud::clock::Time,
) -> (
    Vec<fakecloud::dataplane::EntryAvailability>,
    Vec<(u128, u128)>,
) {
    let propagation = judge.world.cloud.config().timing.floating_ip_propagation_s;
    judge.world.cloud.read("", |ctx| {
        let entries = fakecloud::dataplane::availability(
            ctx.st.dataplane(),
            lb,
            from,
            until,
            IpAddr::from(CLIENT),
            propagation,
        )
        .unwrap_or_default();
        let ops: Vec<(u128, u128)> = ctx
            .st
            .dataplane()
            .lbs
            .get(&lb)
            .map(|l| {
                l.ops
                    .iter()
                    .map(|o| (judge.millis(o.requested_at), judge.millis(o.effective_at)))
                    .collect()
            })
            .unwrap_or_default();
        (entries, ops)
    })
}

/// One down interval of a Service's port on one of its load balancers.
struct Down<'a> {
    name: &'a str,
    model: &'a Model,
    lb: uuid::Uuid,
    ops: &'a [(u128, u128)],
    entry: &'a fakecloud::dataplane::EntryAvailability,
    interval: &'a fakecloud::dataplane::DownInterval,
}

/// The violation if the port stayed down longer than the rule allows.
fn judge_down(judge: &Judge, down: &Down) -> Option<Violation> {
    let Down {
        name,
        model,
        lb,
        ops,
        entry,
        interval: d,
    } = down;
    let port = (entry.protocol.clone(), entry.port);
    let (a, b) = (judge.millis(d.from), judge.millis(d.to));
    let settle = NODE_SETTLE.as_millis();
    let near_node = judge
        .node_events
        .iter()
        .any(|n| *n <= b && a <= n.saturating_add(settle));
    if near_node {
        return None;
    }
    let Allowed {
        seconds: allowed,
        last: i,
        since,
        during,
    } = allowed(&model.events, &port, (a, b), &judge.blocked, ops)?;
    let lines = judge.lines;
    let service = format!("default/{name}");
    let waited = since.map_or(0.0, |since| {
        let planned = planned_until(lines, &service, since, b);
        backlog(ops, planned, a, b)
            .max(queued(ops, a, b, judge.apply_ms, &judge.boundaries))
            .max(later_queue(lines, &service, ops, &during, b))
    });
    let mut allowed = allowed + waited;
    let took = (b - a) as f64 / 1000.0;
    if took > allowed + SLACK && since.is_some() {
        allowed += (carried_over(lines, a, b) * judge.apply_ms) as f64 / 1000.0;
    }
    if took <= allowed + SLACK {
        return None;
    }
    let cause = applied_at(judge.world, *lb, a, |t| judge.millis(t))
        .map(|(op, requested)| {
            format!(
                "; it went down as the load balancer applied {op} (requested at {requested} ms)"
            )
        })
        .unwrap_or_default();
    let event = &model.events[i];
    let invariant = if event.what.starts_with("Outside") {
        "repair-too-slow"
    } else {
        "change-downtime"
    };
    Some(Violation {
        invariant,
        detail: format!(
            "{name} {}:{}/{} down {took:.1} s from {a} to {b} ms ({}, \
             {:.1} s allowed) after {} at {} ms{cause}",
            entry.address, entry.port, entry.protocol, d.reason, allowed, event.what, event.at
        ),
    })
}

/// The operation load balancer `lb` applied at trace millisecond `at`, and when it was
/// requested: what a failure names as having taken a port down (read only for a failure,
/// so that judging a passing run copies no operation text).
fn applied_at(
    world: &World,
    lb: uuid::Uuid,
    at: u128,
    millis: impl Fn(fakecloud::clock::Time) -> u128,
) -> Option<(String, u128)> {
    world.cloud.read("", |ctx| {
        let l = ctx.st.dataplane().lbs.get(&lb)?;
        l.ops
            .iter()
            .find(|o| millis(o.effective_at) == at)
            .map(|o| (o.operation.clone(), millis(o.requested_at)))
    })
}

#[cfg(test)]
mod tests;
