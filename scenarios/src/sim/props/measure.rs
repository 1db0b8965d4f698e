//! What a change cost and what the CCM said it would: convergence waits, the CCM's Events
//! and preview, and the judgement of fakecloud's data-plane oracle over every entry address
//! × port × client of a change's window.

use super::backend::{Backend, converged_since, last_ccm_write};
use super::model;
use super::state::{State, allowed};
use super::verdict::Violation;
use super::{A, Change, End, PortDraw};
use crate::sim::world::load_balancers_of;
use ccm::service::pure::plan::Impact;
use fakecloud::clock::Time;
use fakecloud::dataplane::{DownInterval, EntryAvailability, EntryKind};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use uuid::Uuid;

/// The clients new connections come from: inside `10.0.0.0/8`, inside `203.0.113.0/24`,
/// and inside neither (the generator's allowed CIDRs are made of these two networks).
pub const CLIENTS: [Ipv4Addr; 3] = [
    Ipv4Addr::new(10, 1, 2, 3),
    Ipv4Addr::new(203, 0, 113, 9),
    Ipv4Addr::new(198, 51, 100, 7),
];
/// The longest a change may take to converge.
const CONVERGE_S: f64 = 900.0;
/// How often convergence is looked for.
const PROBE: Duration = Duration::from_secs(5);
/// A convergence counts once the CCM has written nothing for this long (s).
const QUIET_S: f64 = 20.0;

/// A moment of a run: the trace's length (for the CCM's convergence lines) and
/// fakecloud's time (for its request log and oracle).
pub struct Mark {
    pub line: usize,
    pub at: Time,
}

impl Mark {
    pub fn now(b: &impl Backend) -> Mark {
        Mark {
            line: b.trace().len(),
            at: b.cloud().now(),
        }
    }
}

fn secs_between(a: Time, b: Time) -> f64 {
    (b - a).num_milliseconds() as f64 / 1000.0
}

fn applying(cloud: &fakecloud::App) -> bool {
    cloud.read("", |ctx| {
        ctx.st
            .load_balancers()
            .values()
            .any(|lb| lb.status(ctx.now) == "changing")
    })
}

/// Whether the CCM has written nothing for [`QUIET_S`].
pub fn quiet(cloud: &fakecloud::App) -> bool {
    last_ccm_write(cloud).is_none_or(|t| secs_between(t, cloud.now()) >= QUIET_S)
}

/// Waits until the CCM logged the Service `web` converged at resourceVersion `rv` or later
/// (any, for `None`) since `from`, wrote nothing for a while, and no load balancer is
/// applying changes; at least `min` after `from`.
pub async fn settle(
    b: &impl Backend,
    from: &Mark,
    rv: Option<u64>,
    min: Duration,
) -> Result<(), String> {
    loop {
        b.pass(PROBE).await;
        let converged = converged_since(b.trace(), from.line)
            .into_iter()
            .any(|v| v >= rv);
        let elapsed = secs_between(from.at, b.cloud().now());
        if elapsed >= min.as_secs_f64() && converged && quiet(b.cloud()) && !applying(b.cloud()) {
            return Ok(());
        }
        if elapsed >= CONVERGE_S {
            return Err(format!(
                "not-converged: the Service did not converge within {CONVERGE_S} s"
            ));
        }
    }
}

/// Whether some member of a load balancer is in its checks now (neither up nor down yet).
fn checking(cloud: &fakecloud::App) -> bool {
    use fakecloud::dataplane::{Health, health_at, member_health};
    cloud.read("", |ctx| {
        let dp = ctx.st.dataplane();
        dp.lbs.values().any(|lb| {
            lb.ops.last().is_some_and(|op| {
                op.config.members.iter().any(|m| {
                    health_at(&member_health(dp, lb, m.uuid, ctx.now), ctx.now) == Health::Changing
                })
            })
        })
    })
}

/// Waits (at most [`CONVERGE_S`]) until no member is in its checks. A node that stops or
/// goes while the other nodes' members are still in their first checks (the CCM logs a new
/// load balancer converged once it is built) takes its ports down until those pass: no
/// CCM can avoid that, so a node leaves from a steady load balancer.
pub async fn settle_checks(b: &impl Backend) {
    let from = b.cloud().now();
    while checking(b.cloud()) && secs_between(from, b.cloud().now()) < CONVERGE_S {
        b.pass(PROBE).await;
    }
}

/// Members a replaced monitor checks anew come up within delay × up threshold.
pub async fn settle_monitors(b: &impl Backend, state: &State) {
    b.pass(Duration::from_secs_f64(state.recheck_s() + 10.0))
        .await;
}

/// Waits until no load balancer of the Service with `uid` is left and the CCM is quiet.
pub async fn settle_gone(b: &impl Backend, from: &Mark, uid: &str) {
    while secs_between(from.at, b.cloud().now()) < CONVERGE_S {
        b.pass(PROBE).await;
        if quiet(b.cloud()) && load_balancers_of(b.cloud(), uid).is_empty() {
            return;
        }
    }
}

/// Property 5: nothing of the Service is left in the cloud, its floating IPs are still in
/// the account and assigned to nothing, and a Service turned into ClusterIP lost its
/// ingress.
pub async fn gone_checks(b: &impl Backend, uid: &str, fips: &[String], end: End) -> Vec<Violation> {
    let mut out = Vec::new();
    let left = load_balancers_of(b.cloud(), uid);
    if !left.is_empty() {
        out.push(Violation {
            property: "deletion",
            detail: format!("load balancers left after {end:?}: {left:?}"),
        });
    }
    let account = b
        .outside("GET", "/v1/floating-ips", None)
        .await
        .unwrap_or_default();
    for network in fips {
        let found = account
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["network"].as_str() == Some(network));
        match found {
            None => out.push(Violation {
                property: "deletion",
                detail: format!("floating IP {network} is gone from the account"),
            }),
            Some(f) if !f["load_balancer"].is_null() => out.push(Violation {
                property: "deletion",
                detail: format!("floating IP {network} is still assigned: {f}"),
            }),
            Some(_) => {}
        }
    }
    if end == End::ToClusterIp {
        let api: kube::Api<k8s_openapi::api::core::v1::Service> =
            kube::Api::namespaced(b.kube(), "default");
        let svc = api.get_opt("web").await.ok().flatten();
        if svc.as_ref().is_some_and(crate::testbed::has_ingress) {
            out.push(Violation {
                property: "deletion",
                detail: "a Service turned into ClusterIP keeps its ingress".into(),
            });
        }
    }
    out
}

/// The class the `plan` preview gives `proposed`.
pub async fn preview(
    b: &impl Backend,
    proposed: &k8s_openapi::api::core::v1::Service,
) -> Result<Impact, String> {
    let cloud = b.preview_client()?;
    match ccm::service::reconcile::controller::preview(
        &b.kube(),
        &cloud,
        b.cluster_name(),
        proposed,
    )
    .await
    {
        Ok(Some(p)) => Ok(p.steps_impact()),
        Ok(None) => Ok(Impact::None),
        Err(e) => Err(format!("the plan preview failed: {e}")),
    }
}

/// The Service's Events as they stood (name → resourceVersion), to tell new ones from old:
/// a repeated Event is recorded on its first occurrence (client-go's series), so a new
/// PlannedChange of the same plan shows only as a write of the old object.
pub struct Events(BTreeMap<String, String>);

/// What the CCM announced for one change.
#[derive(Debug, Default)]
pub struct Announced {
    /// `PlannedChange` lines: class, the pool concerned (if any), what.
    pub lines: Vec<(Impact, Option<String>, String)>,
    /// `ChangeRefused` messages.
    pub refusals: Vec<String>,
}

async fn events(b: &impl Backend, name: &str) -> Vec<k8s_openapi::api::core::v1::Event> {
    let api: kube::Api<k8s_openapi::api::core::v1::Event> =
        kube::Api::namespaced(b.kube(), "default");
    api.list(&kube::api::ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

const CLASSES: [Impact; 7] = [
    Impact::None,
    Impact::Minimal,
    Impact::ListenerRecreate,
    Impact::MemberRecreate,
    Impact::PoolRecreate,
    Impact::Outage,
    Impact::Refused,
];

/// What a `PlannedChange` message announces (`impact W: POOL CLASS[ (health monitor
/// replaced)], ..., all ports CLASS; N steps (...)`, `Plan::summary`): per pool its class,
/// with `health monitor replaced` as its what when it is; `all ports` has no pool.
fn planned_parts(message: &str) -> Vec<(Impact, Option<String>, String)> {
    const REPLACED: &str = "health monitor replaced";
    let class = |c: &str| CLASSES.into_iter().find(|k| k.as_str() == c);
    let Some((_, rest)) = message
        .strip_prefix("impact ")
        .and_then(|r| r.split_once(": "))
    else {
        return Vec::new();
    };
    let parts = rest.split_once("; ").map_or(rest, |(p, _)| p);
    parts
        .split(", ")
        .filter_map(|part| {
            let (part, what) = match part.strip_suffix(&format!(" ({REPLACED})")) {
                Some(p) => (p, REPLACED),
                None => (part, ""),
            };
            if let Some(c) = part.strip_prefix("all ports ") {
                return Some((class(c)?, None, what.to_string()));
            }
            let (pool, c) = part.rsplit_once(' ')?;
            Some((class(c)?, Some(pool.to_string()), what.to_string()))
        })
        .collect()
}

impl Events {
    pub async fn of(b: &impl Backend, name: &str) -> Events {
        Events(
            events(b, name)
                .await
                .into_iter()
                .map(|e| {
                    (
                        e.metadata.name.unwrap_or_default(),
                        e.metadata.resource_version.unwrap_or_default(),
                    )
                })
                .collect(),
        )
    }

    /// What was announced since [`Events::of`].
    pub async fn since(&self, b: &impl Backend, name: &str) -> Announced {
        let mut out = Announced::default();
        for e in events(b, name).await {
            let key = e.metadata.name.clone().unwrap_or_default();
            if self.0.get(&key) == e.metadata.resource_version.as_ref() {
                continue;
            }
            let message = e.message.unwrap_or_default();
            match e.reason.as_deref() {
                // Refusals have Events of their own (ChangeRefused).
                Some("PlannedChange") => out.lines.extend(planned_parts(&message)),
                Some("ChangeRefused") => out.refusals.push(message),
                _ => {}
            }
        }
        out
    }
}

/// The messages of every `ChangeRefused` Event of the Service so far (a refusal that
/// stands is not announced again on every pass: client-go counts a repeated Event on its
/// first occurrence).
pub async fn standing_refusals(b: &impl Backend, name: &str) -> Vec<String> {
    events(b, name)
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("ChangeRefused"))
        .filter_map(|e| e.message)
        .collect()
}

/// A port's pool name (`tcp/<name>`, or the protocol alone for an unnamed port).
fn pool_name(p: &PortDraw) -> String {
    let proto = if p.udp { "udp" } else { "tcp" };
    match &p.name {
        Some(n) => format!("{proto}/{n}"),
        None => proto.to_string(),
    }
}

impl Announced {
    /// The worst class announced (refusals aside).
    pub fn class(&self) -> Impact {
        self.lines
            .iter()
            .map(|(c, _, _)| *c)
            .filter(|c| *c != Impact::Refused)
            .max()
            .unwrap_or(Impact::None)
    }

    fn concerning<'a>(
        &'a self,
        pools: &'a [String],
    ) -> impl Iterator<Item = &'a (Impact, Option<String>, String)> {
        self.lines
            .iter()
            .filter(move |(_, p, _)| p.as_ref().is_none_or(|p| pools.contains(p)))
    }

    /// The worst class announced for a port with these pool names.
    fn port_class(&self, pools: &[String]) -> Impact {
        self.concerning(pools)
            .map(|(c, _, _)| *c)
            .filter(|c| *c != Impact::Refused)
            .max()
            .unwrap_or(Impact::None)
    }

    /// Whether the port's monitor is replaced (its members are checked anew).
    fn replaces_monitor(&self, pools: &[String]) -> bool {
        self.concerning(pools)
            .any(|(_, _, what)| what == "health monitor replaced")
    }
}

/// The start of a change's window: when, on which load balancer, with which floating IPs
/// delivering to it.
pub struct Window {
    t0: Time,
    lb: Option<Uuid>,
    fips: BTreeSet<IpAddr>,
}

/// A window's verdict.
pub struct Judged {
    pub worst: Option<f64>,
    pub checks: usize,
    pub violations: Vec<Violation>,
}

/// Down intervals that touch merged into one.
pub fn merged(down: &[DownInterval]) -> Vec<(Time, Time)> {
    let mut out: Vec<(Time, Time)> = Vec::new();
    for d in down {
        match out.last_mut() {
            Some(last) if last.1 >= d.from => last.1 = last.1.max(d.to),
            _ => out.push((d.from, d.to)),
        }
    }
    out
}

/// The parts of `a` that are also in `b` (both sorted, disjoint).
fn intersection(a: &[(Time, Time)], b: &[(Time, Time)]) -> Vec<(Time, Time)> {
    let mut out = Vec::new();
    for (x0, x1) in a {
        for (y0, y1) in b {
            let (s, e) = ((*x0).max(*y0), (*x1).min(*y1));
            if s < e {
                out.push((s, e));
            }
        }
    }
    out
}

pub fn seconds(spans: &[(Time, Time)]) -> f64 {
    spans
        .iter()
        .map(|(a, b)| (*b - *a).num_milliseconds() as f64 / 1000.0)
        .sum()
}

/// Whether a floating IP the Service no longer claims may go to another Service that
/// claims it (a rival of `RivalClaim`): the documented hand-over, not downtime of this
/// Service.
fn handed_over(after: &State, change: &Change, address: IpAddr) -> bool {
    (!after.rivals.is_empty() || matches!(change, Change::Hand { to_web: false, .. }))
        && !after
            .fips
            .iter()
            .any(|f| f.split('/').next().and_then(|a| a.parse::<IpAddr>().ok()) == Some(address))
}

/// The state's port for a listener (protocol, number).
fn port_index(state: &State, protocol: &str, port: u16) -> Option<usize> {
    state
        .ports
        .iter()
        .position(|p| p.port == port && p.udp == (protocol == "udp"))
}

/// Whether `change` concerns the port at index `i` (of the state before it).
fn concerns(change: &Change, before: &State, i: usize) -> bool {
    let n = before.ports.len().max(1);
    match change {
        Change::RenamePort(j) | Change::RenumberPort(j, _) | Change::NodePort(j) => j % n == i,
        Change::AddPort(_)
        | Change::RemovePort(_)
        | Change::RivalClaim(_)
        | Change::Misconfigured(_)
        | Change::ClaimOf(_)
        | Change::Hand { .. }
        | Change::NameOf(_)
        | Change::CopyOf(_)
        | Change::DeleteNeighbour(_) => false,
        _ => true,
    }
}

impl Window {
    pub async fn open(b: &impl Backend, lb: Option<Uuid>) -> Result<Window, String> {
        let t0 = b.cloud().now();
        let fips = b.cloud().read("", |ctx| {
            let mut latest: BTreeMap<IpAddr, Option<Uuid>> = BTreeMap::new();
            for e in ctx.st.dataplane().floating.iter().filter(|e| e.at <= t0) {
                latest.insert(e.address, e.load_balancer);
            }
            latest
                .into_iter()
                .filter(|(_, to)| to.is_some() && *to == lb)
                .map(|(a, _)| a)
                .collect()
        });
        Ok(Window { t0, lb, fips })
    }

    /// Judges every entry address × port × client from the window's start to now.
    pub fn judge(
        &self,
        b: &impl Backend,
        lb_after: Option<Uuid>,
        before: &State,
        after: &State,
        change: &Change,
        announced: &Announced,
    ) -> Judged {
        let mut j = Judged {
            worst: None,
            checks: 0,
            violations: Vec::new(),
        };
        let Some(lb) = self.lb else {
            return j;
        };
        j.checks += 1;
        if lb_after != Some(lb) {
            j.violations.push(Violation {
                property: "class-bound",
                detail: format!("{change:?}: the load balancer was replaced ({lb} → {lb_after:?})"),
            });
            return j;
        }
        let t1 = b.cloud().now();
        let cx = Judging {
            before,
            after,
            change,
            announced,
            // From a moment before the change: a port that goes down at the very instant of
            // the change (Kubernetes closing a node port) must not look down from the start.
            start: self.t0 - fakecloud::clock::delta_from_secs(1.0),
            slack: b.slack(),
            recheck: before.recheck_s().max(after.recheck_s()),
        };
        for client in CLIENTS {
            if !allowed(client, &after.cidrs()) {
                j.checks += 1;
                j.violations
                    .extend(refused_at_end(b.cloud(), lb, t1, client, after, change));
                continue;
            }
            if !allowed(client, &before.cidrs()) {
                continue;
            }
            let entries = availability(b.cloud(), lb, (cx.start, t1), client);
            for e in &entries {
                if e.kind == EntryKind::FloatingIp
                    && (!self.fips.contains(&e.address) || handed_over(after, change, e.address))
                {
                    continue;
                }
                self.judge_entry(&cx, e, &entries, client, &mut j);
            }
        }
        j
    }

    /// Judges one entry address × port for `client` against the bound of the class the CCM
    /// announced (or none, for a port the change does not concern).
    fn judge_entry(
        &self,
        cx: &Judging,
        e: &EntryAvailability,
        entries: &[EntryAvailability],
        client: Ipv4Addr,
        j: &mut Judged,
    ) {
        let (before, after, change) = (cx.before, cx.after, cx.change);
        let Some(i) = port_index(before, &e.protocol, e.port) else {
            return;
        };
        let down = merged(&e.down);
        if down.iter().any(|(a, _)| *a <= cx.start) {
            return;
        }
        let old = &before.ports[i];
        let Some((spans, new)) = down_spans(cx, e, entries, old, down) else {
            return;
        };
        let took = seconds(&spans);
        let why = self.why(e);
        let pools = [pool_name(old), pool_name(&new)];
        let class = cx.announced.port_class(&pools);
        let bound = model::bound(
            class,
            cx.recheck,
            after.ports.len(),
            cx.announced.replaces_monitor(&pools),
        );
        j.checks += 1;
        j.worst = Some(j.worst.unwrap_or(0.0).max(took));
        let at = format!("{}:{}/{} from {client}", e.address, e.port, e.protocol);
        if !concerns(change, before, i) && took > cx.slack {
            j.violations.push(Violation {
                property: "unconcerned",
                detail: format!(
                    "{change:?}: {at} down {took:.1} s, a port the change does not concern ({})",
                    why.join(", ")
                ),
            });
        } else if took > bound + cx.slack {
            j.violations.push(Violation {
                property: "class-bound",
                detail: format!(
                    "{change:?}: {at} down {took:.1} s, more than the {bound:.1} s of the announced class {class} ({})",
                    why.join(", ")
                ),
            });
        }
    }

    /// Where and why an entry was down, for a message: seconds into the window and the
    /// oracle's reasons.
    fn why(&self, e: &EntryAvailability) -> Vec<String> {
        e.down
            .iter()
            .map(|d| {
                let off = |t: Time| (t - self.t0).num_milliseconds() as f64 / 1000.0;
                format!("{:.1}-{:.1} s {}", off(d.from), off(d.to), d.reason)
            })
            .collect()
    }
}

/// What judging a window's entries shares.
struct Judging<'a> {
    before: &'a State,
    after: &'a State,
    change: &'a Change,
    announced: &'a Announced,
    /// Where the window is judged from.
    start: Time,
    slack: f64,
    /// The longer monitor recheck of the states before and after.
    recheck: f64,
}

/// The spans in which the port `old` (merged `down`) counts as down, and the port it is
/// after the change; `None` when it is not judged (gone, not moved).
fn down_spans(
    cx: &Judging,
    e: &EntryAvailability,
    entries: &[EntryAvailability],
    old: &PortDraw,
    down: Vec<(Time, Time)>,
) -> Option<(Vec<(Time, Time)>, PortDraw)> {
    let after = cx.after;
    if let Some(k) = port_index(after, &e.protocol, e.port) {
        return Some((down, after.ports[k].clone()));
    }
    // Moved to another number: down while on neither.
    if !matches!(cx.change, Change::RenumberPort(..)) {
        return None;
    }
    let k = after.ports.iter().position(|p| p.name == old.name)?;
    let moved = &after.ports[k];
    let proto = if moved.udp { "udp" } else { "tcp" };
    let other = entries
        .iter()
        .find(|x| x.address == e.address && x.port == moved.port && x.protocol == proto);
    let other = other.map(|x| merged(&x.down)).unwrap_or_default();
    Some((intersection(&down, &other), moved.clone()))
}

/// The oracle's answer for new connections from `client` to `lb` within `[from, to)`.
pub fn availability(
    cloud: &fakecloud::App,
    lb: Uuid,
    (from, to): (Time, Time),
    client: Ipv4Addr,
) -> Vec<fakecloud::dataplane::EntryAvailability> {
    let propagation = cloud.config().timing.floating_ip_propagation_s;
    cloud.read("", |ctx| {
        fakecloud::dataplane::availability(
            ctx.st.dataplane(),
            lb,
            from,
            to,
            IpAddr::V4(client),
            propagation,
        )
        .unwrap_or_default()
    })
}

/// A client outside the allowed CIDRs is refused on every VIP and port once the change
/// converged (the documented effect of `listener-allowed-cidrs`).
fn refused_at_end(
    cloud: &fakecloud::App,
    lb: Uuid,
    t1: Time,
    client: Ipv4Addr,
    after: &State,
    change: &Change,
) -> Option<Violation> {
    let from = t1 - fakecloud::clock::delta_from_secs(1.0);
    let entries = availability(cloud, lb, (from, t1), client);
    let served: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Vip && port_index(after, &e.protocol, e.port).is_some())
        .filter(|e| e.down.is_empty())
        .map(|e| format!("{}:{}/{}", e.address, e.port, e.protocol))
        .collect();
    (!served.is_empty()).then(|| Violation {
        property: "cidrs-enforced",
        detail: format!(
            "{change:?}: {client} is outside {}{} {:?} yet served on {served:?}",
            A,
            "listener-allowed-cidrs",
            after.cidrs()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planned_change_summary_gives_each_pool_its_class() {
        let parts = planned_parts(
            "impact pool-recreate: tcp/http pool-recreate (health monitor replaced), tcp/dns listener-recreate, all ports minimal; 9 steps (`cloudscale-cloud-controller-manager plan --service default/web` lists them)",
        );
        assert_eq!(
            parts,
            [
                (
                    Impact::PoolRecreate,
                    Some("tcp/http".to_string()),
                    "health monitor replaced".to_string()
                ),
                (
                    Impact::ListenerRecreate,
                    Some("tcp/dns".to_string()),
                    String::new()
                ),
                (Impact::Minimal, None, String::new()),
            ]
        );
        let announced = Announced {
            lines: parts,
            refusals: Vec::new(),
        };
        assert_eq!(announced.class(), Impact::PoolRecreate);
        assert!(announced.replaces_monitor(&["tcp/http".to_string()]));
        assert!(!announced.replaces_monitor(&["tcp/dns".to_string()]));
        assert_eq!(
            announced.port_class(&["tcp/dns".to_string()]),
            Impact::ListenerRecreate
        );
        assert!(planned_parts("Ensuring load balancer: 3 changes").is_empty());
    }
}
