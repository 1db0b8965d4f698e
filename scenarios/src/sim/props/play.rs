//! Plays one [`Case`] in a fresh simulated world (one CCM, no faults) and checks the
//! properties after every change; see the module documentation of `props` for the list.

use super::backend::{self, Backend, Sim, load_balancer_of};
use super::measure::{self, Events, Mark, Window};
use super::model::{self, Kind};
use super::neighbours::{self, Neighbours};
use super::state::State;
use super::verdict::Violation;
use super::{A, Case, Change, End, Place, scratch};
use crate::sim::world::{World, WorldConfig, node_subnet, runtime};
use ccm::service::pure::plan::Impact;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;
use uuid::Uuid;

/// One change as it was played and judged.
#[derive(Debug, Clone)]
pub struct StepReport {
    pub change: Change,
    pub kind: Kind,
    /// The documented class (the worst of the change's aspects).
    pub documented: Impact,
    /// The class the CCM announced (`PlannedChange` Events; `none` without one).
    pub predicted: Impact,
    /// The class the `plan` preview gave before the change (Service edits only).
    pub preview: Option<Impact>,
    /// The worst downtime over the entry addresses, ports and clients judged (`None`:
    /// nothing could be judged).
    pub observed: Option<f64>,
    /// Whether the change applied (see [`State::apply`]).
    pub played: bool,
    /// The `PlannedChange` lines the CCM published for it.
    pub announced: Vec<String>,
}

/// The verdict of one case.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub case: Case,
    pub steps: Vec<StepReport>,
    pub violations: Vec<Violation>,
    /// How many property checks were made.
    pub checks: usize,
    pub trace: Option<Vec<String>>,
}

/// The Service every case plays with.
const NAME: &str = "web";

impl Outcome {
    /// Nothing played yet.
    pub fn new(case: &Case) -> Outcome {
        Outcome {
            case: case.clone(),
            steps: Vec::new(),
            violations: Vec::new(),
            checks: 0,
            trace: None,
        }
    }
}

/// Plays `case` in a simulated world on its own paused runtime.
pub fn run(case: &Case, keep_trace: bool) -> Outcome {
    let mut outcome = Outcome::new(case);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            outcome.violations.push(Violation {
                property: "harness",
                detail: e.to_string(),
            });
            return outcome;
        }
    };
    let (token, logs) = crate::sim::run::with_logs(|converged| {
        rt.block_on(async {
            let config = WorldConfig {
                nodes: case.nodes.len(),
                ..WorldConfig::new(case.seed)
            };
            let mut world = match World::start(config).await {
                Ok(w) => w,
                Err(e) => {
                    outcome.violations.push(Violation {
                        property: "harness",
                        detail: format!("cannot build the world: {e}"),
                    });
                    return None;
                }
            };
            converged.to(&world.trace);
            world.revive();
            let second = if case
                .neighbours
                .iter()
                .any(|n| n.place == Place::OtherCluster)
            {
                let config = WorldConfig {
                    nodes: 2,
                    ..WorldConfig::second_cluster(case.seed)
                };
                match World::start_beside(config, &world).await {
                    Ok(mut w) => {
                        w.revive();
                        Some(w)
                    }
                    Err(e) => {
                        outcome.violations.push(Violation {
                            property: "harness",
                            detail: format!("cannot build the second cluster: {e}"),
                        });
                        return None;
                    }
                }
            } else {
                None
            };
            let token = world.token.clone();
            play_with(
                &mut Sim(&mut world),
                case,
                keep_trace,
                &mut outcome,
                second.as_ref(),
            )
            .await;
            Some(token)
        })
    });
    outcome.checks += 1;
    if let Some(line) = crate::sim::check::debug_text(&logs.text()) {
        outcome.violations.push(Violation {
            property: "debug-text",
            detail: format!("a log line shows Rust Debug text: {line}"),
        });
    }
    if let Some(token) = token
        && logs.contains(&token)
    {
        outcome.violations.push(Violation {
            property: "token-leaked",
            detail: "the API token appears in the logs".into(),
        });
    }
    outcome
}

/// Plays `case` on backend `b` (already started, its CCM running) into `outcome`; its
/// neighbours of another cluster are left out.
pub async fn play_on(b: &mut impl Backend, case: &Case, keep_trace: bool, outcome: &mut Outcome) {
    play_with(b, case, keep_trace, outcome, None).await;
}

/// [`play_on`] with `second` the other cluster on the same account, if one runs.
pub async fn play_with(
    b: &mut impl Backend,
    case: &Case,
    keep_trace: bool,
    outcome: &mut Outcome,
    second: Option<&World>,
) {
    if let Err(e) = play(b, case, outcome, second).await {
        outcome.violations.push(Violation {
            property: "harness",
            detail: e,
        });
    }
    outcome.trace = keep_trace.then(|| b.trace().lines());
}

fn services(b: &impl Backend) -> Api<Service> {
    Api::namespaced(b.kube(), "default")
}

fn uid_of(svc: &Service) -> String {
    svc.metadata.uid.clone().unwrap_or_default()
}

/// The live Service's node ports, by port index.
fn live_node_ports(svc: &Service) -> Vec<Option<i32>> {
    svc.spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .map(|ports| ports.iter().map(|p| p.node_port).collect())
        .unwrap_or_default()
}

/// Writes the state's Service: created when `live` is `None`, else replaced (its
/// CCM-written annotations kept).
async fn write(
    b: &impl Backend,
    state: &State,
    live: Option<&Service>,
    with_refused: bool,
) -> Result<Service, String> {
    let manifest = proposed(state, live, with_refused)?;
    let api = services(b);
    match live {
        None => api.create(&PostParams::default(), &manifest).await,
        Some(_) => api.replace(NAME, &PostParams::default(), &manifest).await,
    }
    .map_err(|e| format!("writing the Service: {e}"))
}

/// The Service the state describes, on top of `live`.
fn proposed(state: &State, live: Option<&Service>, with_refused: bool) -> Result<Service, String> {
    let mut annotations = state.annotation_map(with_refused);
    let mut v = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": NAME, "namespace": "default"},
        "spec": {"type": "LoadBalancer", "selector": {"app": NAME},
                 "externalTrafficPolicy": if state.local { "Local" } else { "Cluster" },
                 "ports": state.ports_json()},
    });
    if let Some(live) = live {
        // What the CCM wrote (its uuid, config version and zone) stays, as it would for a
        // user's `kubectl edit`.
        for (k, val) in live.metadata.annotations.iter().flatten() {
            if ccm::service::pure::annotations::CCM_WRITTEN_ANNOTATIONS.contains(&k.as_str())
                || (k == &format!("{A}zone") && !state.refused.contains_key("zone"))
            {
                annotations.entry(k.clone()).or_insert(json!(val));
            }
        }
        v["metadata"]["resourceVersion"] = json!(live.metadata.resource_version);
        v["metadata"]["uid"] = json!(live.metadata.uid);
        if state.local
            && let Some(hc) = live.spec.as_ref().and_then(|s| s.health_check_node_port)
        {
            v["spec"]["healthCheckNodePort"] = json!(hc);
        }
    }
    v["metadata"]["annotations"] = Value::Object(annotations);
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// Labels node `name` with `tier`.
async fn label(b: &impl Backend, name: &str, edge: bool) -> Result<(), String> {
    let nodes: Api<Node> = Api::all(b.kube());
    let tier = if edge { "edge" } else { "core" };
    nodes
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": tier}}})),
        )
        .await
        .map(|_| ())
        .map_err(|e| format!("labelling {name}: {e}"))
}

/// Writes the Service's EndpointSlice as the state has it.
async fn endpoints(b: &impl Backend, state: &State) -> Result<(), String> {
    neighbours::upsert_slice(&b.kube(), "default", "web-props", state.endpoint_slice()).await
}

/// Creates a floating IP (assigned to `server` if given); its network.
async fn floating_ip(
    b: &impl Backend,
    d: super::FipDraw,
    server: Option<Uuid>,
) -> Result<String, String> {
    let mut body = if d.v6 {
        json!({"ip_version": 6, "prefix_length": 56})
    } else {
        json!({"ip_version": 4})
    };
    if d.global {
        body["type"] = json!("global");
    } else {
        body["region"] = json!("rma");
    }
    if let Some(s) = server {
        body["server"] = json!(s.to_string());
    }
    let fip = b.outside("POST", "/v1/floating-ips", Some(body)).await?;
    fip["network"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "a floating IP without network".into())
}

async fn play(
    b: &mut impl Backend,
    case: &Case,
    out: &mut Outcome,
    second: Option<&World>,
) -> Result<(), String> {
    let subnet = node_subnet(b.cloud())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let mut state = State::new(&case.service, &case.nodes, &subnet);
    for n in &state.nodes {
        label(b, &n.name, n.edge).await?;
    }
    for d in &case.service.floating_ips {
        state.fips.push(floating_ip(b, *d, None).await?);
    }
    let mut nbs = Neighbours::start(b, &case.neighbours, second, &state).await?;
    endpoints(b, &state).await?;
    let from = Mark::now(b);
    let created = write(b, &state, None, true).await?;
    let uid = uid_of(&created);
    measure::settle(b, &from, version(&created), Duration::ZERO).await?;
    for (i, change) in case.changes.iter().enumerate() {
        let report = step(b, &mut state, &mut nbs, change, i, &subnet, out).await?;
        out.steps.push(report);
    }
    // The rivals go before the end, so that the floating IPs are free when the Service is.
    let api: Api<Service> = Api::namespaced(b.kube(), RIVAL);
    for name in &state.rivals {
        let uid = api
            .get_opt(name)
            .await
            .map_err(|e| format!("reading {name}: {e}"))?
            .and_then(|s| s.metadata.uid);
        api.delete(name, &DeleteParams::default())
            .await
            .map_err(|e| format!("deleting {name}: {e}"))?;
        if let Some(uid) = uid {
            measure::settle_gone(b, &Mark::now(b), &uid).await;
        }
    }
    // The neighbours go before the end too, after the rivals (a rival may claim what a
    // neighbour holds, and would take it): the Service created from scratch must meet
    // neither their names nor their floating IPs; the Service takes what it claimed of theirs.
    if !nbs.list.is_empty() {
        out.checks += 1;
        let deletions = nbs.remove_all(b, &state.fips).await?;
        out.violations.extend(deletions);
        measure::settle(b, &Mark::now(b), None, Duration::from_secs(20)).await?;
    }
    finish(b, &state, case.end, &uid, out).await
}

fn version(s: &Service) -> Option<u64> {
    s.metadata.resource_version.as_deref()?.parse().ok()
}

/// The namespace of the other Services of [`Change::RivalClaim`].
const RIVAL: &str = "rival";

/// How long [`Change::Misconfigured`] lasts.
const MISCONFIGURED: Duration = Duration::from_secs(60);

/// Another Service `name`, in namespace [`RIVAL`], names the Service's floating IPs: one
/// that can be served (`valid`), or one with an SCTP port, which the CCM refuses.
async fn rival(b: &impl Backend, name: &str, state: &State, valid: bool) -> Result<(), String> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(b.kube());
    if namespaces
        .get_opt(RIVAL)
        .await
        .map_err(|e| e.to_string())?
        .is_none()
    {
        let ns = serde_json::from_value(json!({"metadata": {"name": RIVAL}}))
            .map_err(|e| e.to_string())?;
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .map_err(|e| format!("creating namespace {RIVAL}: {e}"))?;
    }
    let api: Api<Service> = Api::namespaced(b.kube(), RIVAL);
    let claim = serde_json::to_string(&state.fips).map_err(|e| e.to_string())?;
    let manifest: Service = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": RIVAL,
                     "annotations": {format!("{A}floating-ips"): claim}},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"name": "x", "port": 7000,
                            "protocol": if valid { "TCP" } else { "SCTP" }}]},
    }))
    .map_err(|e| e.to_string())?;
    api.create(&PostParams::default(), &manifest)
        .await
        .map(|_| ())
        .map_err(|e| format!("creating the rival: {e}"))
}

/// Plays and judges one change.
#[allow(clippy::too_many_arguments)]
async fn step(
    b: &mut impl Backend,
    state: &mut State,
    nbs: &mut Neighbours<'_>,
    change: &Change,
    i: usize,
    subnet: &str,
    out: &mut Outcome,
) -> Result<StepReport, String> {
    let (kind, documented) = model::classify(change);
    let mut report = StepReport {
        change: change.clone(),
        kind,
        documented,
        predicted: Impact::None,
        preview: None,
        observed: None,
        played: false,
        announced: Vec::new(),
    };
    let live = services(b)
        .get(NAME)
        .await
        .map_err(|e| format!("reading the Service: {e}"))?;
    state.pin_node_ports(&live_node_ports(&live));
    let before = state.clone();
    let backend_can = !matches!(change, Change::Misconfigured(_)) || b.misconfigure(None);
    if !backend_can || !nbs.applies(change, state) || !state.apply(change, subnet, i) {
        b.trace().note(format!("change {i} skipped: {change:?}"));
        return Ok(report);
    }
    report.played = true;
    b.trace().note(format!("change {i}: {change:?}"));
    if matches!(change, Change::NodeStop(_) | Change::NodeDelete(_)) {
        measure::settle_checks(b).await;
    }
    let lb_before = load_balancer_of(b, NAME).await;
    let window = Window::open(b, lb_before).await?;
    let nb_before = nbs.open(b).await?;
    let events = Events::of(b, NAME).await;
    let from = Mark::now(b);
    let done = play_change(b, state, nbs, change, i, &before, &live).await?;
    report.preview = done.preview;
    // Node changes reach the CCM through kubelets and the Node lifecycle, a deleted
    // server's only on a resync (its kubelet falls silent): a whole resync period and
    // some before a convergence line says anything about them.
    let min = if done.node_event {
        b.resync() + Duration::from_secs(30)
    } else {
        Duration::from_secs(20)
    };
    measure::settle(b, &from, done.rv, min).await?;
    measure::settle_monitors(b, state).await;
    let lb_after = load_balancer_of(b, NAME).await;
    let announced = events.since(b, NAME).await;
    report.predicted = announced.class();
    report.announced = announced
        .lines
        .iter()
        .map(|(c, p, what)| format!("{c} [{}]: {what}", p.as_deref().unwrap_or("-")))
        .collect();
    let judged = window.judge(b, lb_after, &before, state, change, &announced);
    report.observed = judged.worst;
    out.checks += judged.checks;
    out.violations.extend(judged.violations);
    let (checks, violations) = nbs
        .judge(b, &nb_before, change, done.after.concerned)
        .await?;
    out.checks += checks;
    out.violations.extend(violations);
    out.violations.extend(done.after.judge(b, nbs, &live).await);
    out.checks += 2;
    check_announced(&report, i, out);
    if let Change::Refused { key, .. } = change {
        out.checks += 1;
        let mut refusals = announced.refusals.clone();
        if before.refused.contains_key(key) {
            refusals.extend(measure::standing_refusals(b, NAME).await);
        }
        out.violations.extend(refused_checks(
            b, key, lb_before, lb_after, &from, &refusals,
        ));
    }
    Ok(report)
}

/// The class the CCM announced is no worse than the documented one (but for an outage), and
/// is the one the plan preview gave.
fn check_announced(report: &StepReport, i: usize, out: &mut Outcome) {
    let change = &report.change;
    if report.predicted > report.documented && report.predicted != Impact::Outage {
        out.violations.push(Violation {
            property: "class-documented",
            detail: format!(
                "change {i} {change:?}: the CCM announced {} where the documented class is {}",
                report.predicted, report.documented
            ),
        });
    }
    if let Some(p) = report.preview
        && p != report.predicted
    {
        out.violations.push(Violation {
            property: "prediction",
            detail: format!(
                "change {i} {change:?}: the plan preview said {p}, the PlannedChange Events {}",
                report.predicted
            ),
        });
    }
}

/// What playing a change did, for settling and judging it.
#[derive(Default)]
struct Done {
    /// The Service's new resourceVersion, if the change wrote it.
    rv: Option<u64>,
    /// Whether the change reaches the CCM through nodes (or needs as long to).
    node_event: bool,
    /// The class the `plan` preview gave (Service edits only).
    preview: Option<Impact>,
    after: After,
}

/// Plays the change (`state` already has it applied; `before` is the state before it).
async fn play_change(
    b: &mut impl Backend,
    state: &mut State,
    nbs: &mut Neighbours<'_>,
    change: &Change,
    i: usize,
    before: &State,
    live: &Service,
) -> Result<Done, String> {
    let mut done = Done::default();
    match change {
        Change::Hand {
            of,
            to_web,
            release_first,
        } => {
            let (v, hand) = hand(b, state, nbs, live, (*of, *to_web, *release_first)).await?;
            done.rv = v;
            done.after.concerned = Some(hand.neighbour);
            done.after.hand = Some(hand);
        }
        Change::CopyOf(n) => {
            nbs.copy(b, *n, i).await?;
            done.after.copied = true;
            done.node_event = true;
        }
        Change::DeleteNeighbour(n) => {
            done.after.concerned = Some(nbs.delete(b, *n).await?);
            done.node_event = true;
        }
        Change::RivalClaim(valid) => {
            let name = state.rivals.last().cloned().unwrap_or_default();
            rival(b, &name, state, *valid).await?;
            done.node_event = true;
        }
        Change::Misconfigured(m) => {
            b.misconfigure(Some(*m));
            b.pass(MISCONFIGURED).await;
            b.misconfigure(None);
            done.node_event = true;
        }
        Change::NodeJoin(d) => {
            join_node(b, state, nbs, d.edge).await?;
            done.node_event = true;
        }
        Change::NodeRelabel(n)
        | Change::NodeStop(n)
        | Change::NodeStart(n)
        | Change::NodeDelete(n) => {
            let idx = before.node(*n).unwrap_or(0);
            change_node(b, state, nbs, change, idx).await?;
            done.node_event = true;
        }
        _ => {
            edit_service(b, state, nbs, change, live, &mut done).await?;
        }
    }
    Ok(done)
}

/// The node the state added last joins, labelled as drawn (`edge`).
async fn join_node(
    b: &mut impl Backend,
    state: &State,
    nbs: &mut Neighbours<'_>,
    edge: bool,
) -> Result<(), String> {
    let name = state
        .nodes
        .last()
        .map(|n| n.name.clone())
        .unwrap_or_default();
    b.add_node(&name).await?;
    label(b, &name, edge).await?;
    endpoints(b, state).await?;
    nbs.refresh_endpoints(b, state).await
}

/// The node at `idx` is relabelled, or its server stopped, started or deleted.
async fn change_node(
    b: &mut impl Backend,
    state: &State,
    nbs: &mut Neighbours<'_>,
    change: &Change,
    idx: usize,
) -> Result<(), String> {
    let name = state.nodes[idx].name.clone();
    if let Change::NodeRelabel(_) = change {
        return label(b, &name, state.nodes[idx].edge).await;
    }
    let server = b.server_of(&name).ok_or(format!("no server of {name}"))?;
    let (method, path) = match change {
        Change::NodeStop(_) => ("POST", format!("/v1/servers/{server}/stop")),
        Change::NodeStart(_) => ("POST", format!("/v1/servers/{server}/start")),
        _ => ("DELETE", format!("/v1/servers/{server}")),
    };
    b.outside(method, &path, None).await?;
    if matches!(change, Change::NodeDelete(_)) {
        endpoints(b, state).await?;
        nbs.refresh_endpoints(b, state).await?;
    }
    Ok(())
}

/// A change to the Service itself: what it needs from the cloud or the neighbours first,
/// the plan preview of exactly what is about to be written, then the write.
async fn edit_service(
    b: &mut impl Backend,
    state: &mut State,
    nbs: &Neighbours<'_>,
    change: &Change,
    live: &Service,
    done: &mut Done,
) -> Result<(), String> {
    match change {
        Change::FipAdd(d) => state.fips.push(floating_ip(b, *d, None).await?),
        Change::FipMove(d) => {
            let server = state
                .nodes
                .iter()
                .find(|n| !n.gone)
                .and_then(|n| b.server_of(&n.name));
            state.fips = vec![floating_ip(b, *d, server).await?];
        }
        Change::ClaimOf(n) => {
            let fip = nbs
                .fip_to_claim(*n, state)
                .ok_or("no floating IP of a neighbour to claim")?;
            state.fips.push(fip.clone());
            done.after.claimed = Some(fip);
        }
        Change::NameOf(n) => {
            let name = nbs
                .lb_name(b, *n)
                .ok_or("no load balancer of a neighbour to take the name of")?;
            state.annotations.insert("name".into(), name);
        }
        _ => {}
    }
    let mut proposed = proposed(state, Some(live), true)?;
    ccm::preview::complete(&mut proposed, Some(live));
    done.preview = Some(measure::preview(b, &proposed).await?);
    if matches!(
        change,
        Change::Policy(_) | Change::AddPort(_) | Change::RemovePort(_)
    ) {
        endpoints(b, state).await?;
    }
    done.rv = version(&write(b, state, Some(live), true).await?);
    Ok(())
}

/// What a neighbour change leaves to judge once it settled.
#[derive(Default)]
struct After {
    /// The neighbour the change edits or deletes (not judged as untouched).
    concerned: Option<usize>,
    /// A neighbour's floating IP the Service claimed too.
    claimed: Option<String>,
    hand: Option<Hand>,
    /// A copy of a neighbour was created.
    copied: bool,
}

/// A floating IP handed over: to whom, and when its holder let go.
struct Hand {
    fip: String,
    taker: String,
    released: fakecloud::clock::Time,
    neighbour: usize,
}

impl After {
    /// Property 7 of the change.
    async fn judge(
        &self,
        b: &impl Backend,
        nbs: &Neighbours<'_>,
        live: &Service,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        if let Some(fip) = &self.claimed {
            out.extend(neighbours::claim_refused(b, nbs, fip, &uid_of(live)).await);
        }
        if let Some(h) = &self.hand {
            out.extend(neighbours::handed(b, &h.fip, &h.taker, h.released));
        }
        if self.copied {
            out.extend(neighbours::copy_refused(b, nbs).await);
        }
        out
    }
}

/// Plays [`Change::Hand`] (`of`, `to_web`, `release_first`): the floating IP moves between
/// the Service and a neighbour in the order drawn. Returns the Service's new
/// resourceVersion (if written) and what to judge.
async fn hand(
    b: &impl Backend,
    state: &mut State,
    nbs: &mut Neighbours<'_>,
    live: &Service,
    (of, to_web, release_first): (usize, bool, bool),
) -> Result<(Option<u64>, Hand), String> {
    // The giver's claim and the taker's are two edits a little apart.
    const APART: Duration = Duration::from_secs(30);
    let fip = if to_web {
        nbs.fip_to_hand(of)
            .ok_or("no floating IP of a neighbour to hand over")?
    } else {
        nbs.held_by_web(state)
            .ok_or("no floating IP of the Service to hand over")?
    };
    let web_write = |state: &State| {
        let state = state.clone();
        async move {
            let fresh = services(b)
                .get(NAME)
                .await
                .map_err(|e| format!("reading the Service: {e}"))?;
            write(b, &state, Some(&fresh), true).await
        }
    };
    let mut rv = None;
    let released;
    let neighbour;
    if to_web {
        if release_first {
            released = b.cloud().now();
            neighbour = nbs.hand(b, of, true, &fip).await?;
            b.pass(APART).await;
            state.fips.push(fip.clone());
            rv = version(&write(b, state, Some(live), true).await?);
        } else {
            state.fips.push(fip.clone());
            rv = version(&write(b, state, Some(live), true).await?);
            b.pass(APART).await;
            released = b.cloud().now();
            neighbour = nbs.hand(b, of, true, &fip).await?;
        }
    } else if release_first {
        state.fips.retain(|f| *f != fip);
        released = b.cloud().now();
        rv = version(&write(b, state, Some(live), true).await?);
        b.pass(APART).await;
        neighbour = nbs.hand(b, of, false, &fip).await?;
    } else {
        neighbour = nbs.hand(b, of, false, &fip).await?;
        b.pass(APART).await;
        state.fips.retain(|f| *f != fip);
        released = b.cloud().now();
        rv = rv.or(version(&web_write(state).await?));
    }
    let taker = if to_web {
        uid_of(live)
    } else {
        nbs.list[neighbour].uid.clone()
    };
    Ok((
        rv,
        Hand {
            fip,
            taker,
            released,
            neighbour,
        },
    ))
}

/// Property 3: the refused aspect wrote nothing and was announced.
fn refused_checks(
    b: &impl Backend,
    key: &str,
    lb_before: Option<Uuid>,
    lb_after: Option<Uuid>,
    from: &Mark,
    refusals: &[String],
) -> Vec<Violation> {
    let mut v = Vec::new();
    let full = format!("{A}{key}");
    if !refusals.iter().any(|m| m.contains(&full)) {
        v.push(Violation {
            property: "refused",
            detail: format!("no ChangeRefused Warning naming {full}"),
        });
    }
    if lb_before != lb_after {
        v.push(Violation {
            property: "refused",
            detail: format!("{full}: the load balancer changed ({lb_before:?} → {lb_after:?})"),
        });
    }
    // `TIME METHOD PATH STATUS`: a load balancer created or deleted.
    let lb_writes: Vec<String> = backend::ccm_writes(b.cloud(), from.at)
        .into_iter()
        .filter(|w| {
            let mut f = w.split(' ').skip(1);
            let (method, path) = (f.next().unwrap_or_default(), f.next().unwrap_or_default());
            (method == "POST" && path == "/v1/load-balancers")
                || (method == "DELETE"
                    && path.starts_with("/v1/load-balancers/")
                    && path.len() == "/v1/load-balancers/".len() + 36)
        })
        .collect();
    if !lb_writes.is_empty() {
        v.push(Violation {
            property: "refused",
            detail: format!("{full}: the CCM re-created the load balancer: {lb_writes:?}"),
        });
    }
    if let Some(lb) = lb_after {
        let (flavor, zone) = b.cloud().read("", |ctx| {
            ctx.st
                .load_balancers()
                .get(&lb)
                .map(|l| (l.flavor.clone(), l.zone.clone()))
                .unwrap_or_default()
        });
        if (key == "flavor" && flavor != "lb-standard") || (key == "zone" && zone != "rma1") {
            v.push(Violation {
                property: "refused",
                detail: format!("{full}: the load balancer is now {flavor} in {zone}"),
            });
        }
    }
    v
}

/// Properties 4 and 5 at the end of the sequence.
async fn finish(
    b: &mut impl Backend,
    state: &State,
    end: End,
    uid: &str,
    out: &mut Outcome,
) -> Result<(), String> {
    let api = services(b);
    let live = api.get(NAME).await.map_err(|e| e.to_string())?;
    let Some(lb) = load_balancer_of(b, NAME).await else {
        out.violations.push(Violation {
            property: "from-scratch",
            detail: "no load balancer after the changes".into(),
        });
        return Ok(());
    };
    let after_changes = scratch::snapshot(b, lb, uid, &state.fips).await?;
    // A further reconcile (two resync periods) writes nothing.
    let quiet_from = Mark::now(b);
    b.pass(Duration::from_secs(125)).await;
    let writes = backend::ccm_writes(b.cloud(), quiet_from.at);
    out.checks += 1;
    if !writes.is_empty() {
        out.violations.push(Violation {
            property: "quiet",
            detail: format!("the converged CCM wrote again: {writes:?}"),
        });
    }
    // Property 5: the Service goes (deleted, or turned into ClusterIP).
    let from = Mark::now(b);
    match end {
        End::ToClusterIp => {
            api.patch(
                NAME,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"spec": {"type": "ClusterIP", "externalTrafficPolicy": null,
                                     "healthCheckNodePort": null}}),
                ),
            )
            .await
            .map_err(|e| format!("turning the Service into ClusterIP: {e}"))?;
        }
        End::Keep | End::Delete => {
            api.delete(NAME, &DeleteParams::default())
                .await
                .map_err(|e| format!("deleting the Service: {e}"))?;
        }
    }
    measure::settle_gone(b, &from, uid).await;
    out.checks += 1;
    out.violations
        .extend(measure::gone_checks(b, uid, &state.fips, end).await);
    if end != End::Keep {
        return Ok(());
    }
    // Property 4: the same Service created from scratch (refused annotations as they were
    // applied, the same node ports and floating IPs) gets the same configuration.
    let from = Mark::now(b);
    let fresh = {
        let mut s = state.clone();
        s.node_ports.clear();
        s.pin_node_ports(&live_node_ports(&live));
        s
    };
    let mut manifest = proposed(&fresh, None, false)?;
    if fresh.local
        && let (Some(spec), Some(hc)) = (
            manifest.spec.as_mut(),
            live.spec.as_ref().and_then(|s| s.health_check_node_port),
        )
    {
        spec.health_check_node_port = Some(hc);
    }
    let created = api
        .create(&PostParams::default(), &manifest)
        .await
        .map_err(|e| format!("creating the Service again: {e}"))?;
    measure::settle(b, &from, version(&created), Duration::ZERO).await?;
    let Some(lb2) = load_balancer_of(b, NAME).await else {
        out.violations.push(Violation {
            property: "from-scratch",
            detail: "no load balancer for the Service created from scratch".into(),
        });
        return Ok(());
    };
    let from_scratch = scratch::snapshot(b, lb2, &uid_of(&created), &state.fips).await?;
    out.checks += 1;
    if let Some(diff) = scratch::first_difference(&after_changes, &from_scratch) {
        out.violations.push(Violation {
            property: "from-scratch",
            detail: diff,
        });
    }
    Ok(())
}
