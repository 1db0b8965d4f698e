//! Seeded schedules: from one seed, a workload (Services created, changed, deleted, turned
//! into ClusterIP; nodes stopped, started, added, deleted) interleaved with faults (cloud API
//! errors, dropped connections, lost answers, latency; Kubernetes watch cuts, 410 Gone on
//! re-watch, 409 and 500 on writes; the cloud slow (answers taking seconds) or unreachable
//! while Kubernetes answers, and Kubernetes unreachable while the cloud answers; CCM
//! crashes between API calls and restarts; outside
//! hands deleting load-balancer parts; an operator's mistakes with the cloud settings: a wrong
//! API root, another project's token, a revoked token; one Service claiming another's
//! floating IPs). [`Schedule::generate`] is pure; [`execute`] plays a schedule on a [`World`].

pub use super::transport::Misconfig;
use super::world::World;
use fakecloud::{FaultEffect, FaultRule};
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;

pub use super::rng::Rng;

/// One port of a generated Service.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    pub name: String,
    pub port: u16,
    pub udp: bool,
}

/// A generated LoadBalancer Service.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub ports: Vec<Port>,
    pub local: bool,
    pub annotations: Vec<(String, String)>,
}

impl Shape {
    /// One TCP port `http` 80, Cluster policy, no annotations.
    pub fn http() -> Shape {
        Shape {
            ports: vec![Port {
                name: "http".into(),
                port: 80,
                udp: false,
            }],
            local: false,
            annotations: Vec::new(),
        }
    }
}

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Create(String, Shape),
    /// A merge patch of a Service's annotations (a `null` value removes one).
    Annotate(String, Vec<(String, Option<String>)>),
    /// Replaces a Service's ports.
    SetPorts(String, Vec<Port>),
    SetPolicy(String, bool),
    Delete(String),
    ToClusterIp(String),
    StopServer(String),
    StartServer(String),
    DeleteServer(String),
    AddNode(String),
    CloudFault {
        method: Option<&'static str>,
        path: &'static str,
        effect: FaultEffect,
        percent: u64,
    },
    ClearCloudFaults,
    CutWatches,
    /// The CCMs cannot reach the Kubernetes API server (their watches end, every request
    /// fails to connect) while the cloud answers, until the next
    /// [`Action::ClearCloudFaults`] (or the end of the faults).
    CutKube,
    GoneOnRewatch(u64),
    FailKubeWrites(u16, u64),
    /// The CCM crashes right before its n-th next cloud request, and a new one starts.
    CrashCcm(u64),
    /// The leader is stopped as by SIGTERM (it releases its lease: under leader election
    /// another instance takes over in the middle of whatever it was doing).
    StopLeader,
    /// A floating IP is created (IPv6 `/56` or IPv4; global or regional) and the Service
    /// claims it (replacing any it claimed).
    ClaimFloatingIp {
        service: String,
        v6: bool,
        global: bool,
    },
    /// The Service claims no floating IP any more.
    DropFloatingIps(String),
    /// `service` claims the floating IPs `of` claims (the same annotation value).
    ClaimFloatingIpsOf {
        service: String,
        of: String,
    },
    /// The CCMs' cloud settings go wrong until the next [`Action::ClearCloudFaults`] (or the
    /// end of the faults).
    Misconfigure(Misconfig),
    /// Outside hands delete the first pool, listener, member or monitor of a Service's
    /// load balancer, or the load balancer itself.
    OutsideDelete(String, &'static str),
    /// Outside hands change the first listener's port, the first monitor's delay or the
    /// load balancer's name.
    OutsideChange(String, &'static str),
    /// Outside hands delete a Node; its kubelet registers it again (uninitialized).
    ReregisterNode(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub at: Duration,
    pub action: Action,
}

/// A workload with faults, drawn from a seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub seed: u64,
    /// CCM instances (2: under leader election).
    pub replicas: usize,
    pub steps: Vec<Step>,
}

const ALGORITHMS: &[&str] = &["round_robin", "least_connections", "source_ip"];
const MONITOR_TYPES: &[&str] = &["tcp", "ping", "tls-hello", "http", "https"];
const POOL_PROTOCOLS: &[&str] = &["tcp", "proxy", "proxyv2"];
/// HTTP check options (only `http` and `https` checks use them; others ignore them with a
/// Warning). Every path answers 200 on a node port the kube-proxy view serves.
const MONITOR_HTTP: &[&str] = &[
    r#"{"url_path": "/healthz"}"#,
    r#"{"method": "HEAD", "expected_codes": ["200-204"]}"#,
    r#"{"version": "1.1", "host": "health.example.com"}"#,
    r#"{}"#,
];
const A: &str = "k8s.cloudscale.ch/loadbalancer-";
/// Stands for the UUID of the nodes' subnet in an annotation value (the generator is pure:
/// [`execute`] fills it in from the world).
pub const SUBNET: &str = "{subnet}";
/// What outside hands delete.
pub const PARTS: [&str; 5] = ["pool", "listener", "member", "monitor", "load balancer"];
/// What outside hands change.
pub const CHANGES: [&str; 3] = ["listener port", "monitor delay", "load balancer name"];
const PORTS: &[u16] = &[80, 443, 53, 8080, 8443, 5000, 9000];

/// 1 to 4 distinct ports.
pub fn ports(rng: &mut Rng) -> Vec<Port> {
    let n = 1 + rng.below(4) as usize;
    let mut out: Vec<Port> = Vec::new();
    while out.len() < n {
        let port = *rng.pick(PORTS);
        let udp = port == 53 && rng.chance(50);
        if out.iter().any(|p| p.port == port && p.udp == udp) {
            continue;
        }
        out.push(Port {
            name: format!("p{}", out.len() + rng.below(2) as usize),
            port,
            udp,
        });
    }
    // Names must be unique.
    for (i, p) in out.iter_mut().enumerate() {
        p.name = format!("{}{i}", p.name);
    }
    out
}

/// A port edit of `current` as users make them: a port renamed, renumbered (its name kept,
/// so Kubernetes keeps its node port), added or removed, or the whole list replaced.
pub fn port_edit(rng: &mut Rng, current: &[Port]) -> Vec<Port> {
    let mut out = current.to_vec();
    let i = rng.below(out.len().max(1) as u64) as usize;
    match rng.below(5) {
        0 if !out.is_empty() => out[i].name = format!("r{}-{}", rng.below(100), out[i].name),
        1 if !out.is_empty() => {
            let free: Vec<u16> = PORTS
                .iter()
                .copied()
                .filter(|p| !out.iter().any(|o| o.port == *p))
                .collect();
            if !free.is_empty() {
                out[i].port = *rng.pick(&free);
                out[i].udp = out[i].udp && out[i].port == 53;
            }
        }
        2 if out.len() < 4 => {
            if let Some(port) = PORTS
                .iter()
                .copied()
                .find(|p| !out.iter().any(|o| o.port == *p))
            {
                out.push(Port {
                    name: format!("a{}", rng.below(100)),
                    port,
                    udp: false,
                });
            }
        }
        3 if out.len() > 1 => {
            out.remove(i);
        }
        _ => out = ports(rng),
    }
    out
}

/// One annotation set to a valid value, or (a few of them) removed.
fn annotation(rng: &mut Rng) -> (String, Option<String>) {
    let (key, value): (&str, Option<String>) = match rng.below(22) {
        0 => ("pool-algorithm", Some(rng.pick(ALGORITHMS).to_string())),
        1 => (
            "health-monitor-type",
            Some(rng.pick(MONITOR_TYPES).to_string()),
        ),
        2 => (
            "health-monitor-delay-s",
            Some((1 + rng.below(5)).to_string()),
        ),
        3 => (
            "timeout-member-connect-ms",
            Some((1000 * (1 + rng.below(9))).to_string()),
        ),
        4 => (
            "listener-allowed-cidrs",
            Some(r#"["10.0.0.0/8"]"#.to_string()),
        ),
        5 => ("name", Some(format!("renamed-{}", rng.below(9)))),
        // A refused change: the zone cannot change in place (and a load balancer
        // re-created there after outside hands deleted it is valid).
        6 => ("zone", Some("lpg1".to_string())),
        7 => (
            "node-selector",
            Some(format!("kubernetes.io/hostname!=node-{}", 1 + rng.below(4))),
        ),
        8 => ("node-selector", None),
        9 => (
            "health-monitor-up-threshold",
            Some((2 + rng.below(9)).to_string()),
        ),
        10 => (
            "health-monitor-down-threshold",
            Some((1 + rng.below(5)).to_string()),
        ),
        11 => (
            "health-monitor-timeout-s",
            Some((1 + rng.below(3)).to_string()),
        ),
        12 => (
            "health-monitor-http",
            Some(rng.pick(MONITOR_HTTP).to_string()),
        ),
        13 => (
            "timeout-client-data-ms",
            Some((1000 * (1 + rng.below(60))).to_string()),
        ),
        14 => (
            "timeout-member-data-ms",
            Some((1000 * (1 + rng.below(60))).to_string()),
        ),
        15 => ("pool-protocol", Some(rng.pick(POOL_PROTOCOLS).to_string())),
        16 => ("ip-mode", Some(rng.pick(&["Proxy", "VIP"]).to_string())),
        17 => (
            "force-hostname",
            Some(format!("lb{}.example.com", rng.below(9))),
        ),
        18 => ("listener-allowed-subnets", Some(format!(r#"["{SUBNET}"]"#))),
        19 => ("listener-allowed-subnets", None),
        20 => ("health-monitor-type", None),
        _ => ("name", None),
    };
    (format!("{A}{key}"), value)
}

/// A LoadBalancer Service of any shape the generator draws.
pub fn shape(rng: &mut Rng) -> Shape {
    let mut annotations = Vec::new();
    if rng.chance(40) {
        annotations.push((
            format!("{A}pool-algorithm"),
            rng.pick(ALGORITHMS).to_string(),
        ));
    }
    if rng.chance(30) {
        annotations.push((
            format!("{A}health-monitor-delay-s"),
            (1 + rng.below(5)).to_string(),
        ));
    }
    // Slow checks (up to 5 s × 10) make members take longer to come up than the load
    // balancer takes to apply the writes queued behind them: only then does a switch made
    // before its new members are up show as downtime.
    if rng.chance(20) {
        annotations.push((
            format!("{A}health-monitor-up-threshold"),
            (2 + rng.below(9)).to_string(),
        ));
    }
    // Any other annotation, with any valid value (a zone only as a change: created there,
    // the Service would simply live in that zone).
    for _ in 0..rng.below(3) {
        if let (key, Some(value)) = annotation(rng)
            && !key.ends_with("-zone")
            && !annotations.iter().any(|(k, _)| *k == key)
        {
            annotations.push((key, value));
        }
    }
    Shape {
        ports: ports(rng),
        local: rng.chance(25),
        annotations,
    }
}

/// One or two annotations set or removed.
pub fn annotation_change(rng: &mut Rng) -> Vec<(String, Option<String>)> {
    let n = 1 + rng.below(2);
    (0..n).map(|_| annotation(rng)).collect()
}

/// Services with a zone change asked for, and Services holding a regional floating IP: a
/// load balancer re-created in another region could not take that IP, a configuration
/// nothing can satisfy, so the generator never combines the two.
#[derive(Debug, Default)]
struct Regions {
    zoned: std::collections::BTreeSet<String>,
    regional: std::collections::BTreeSet<String>,
}

/// An annotation change of `svc` (no zone change for a Service holding a regional IP).
fn annotate(rng: &mut Rng, svc: String, regions: &mut Regions) -> Action {
    let mut change = annotation_change(rng);
    if regions.regional.contains(&svc) {
        change.retain(|(k, _)| !k.ends_with("-zone"));
    }
    if change.iter().any(|(k, _)| k.ends_with("-zone")) {
        regions.zoned.insert(svc.clone());
    }
    if change.is_empty() {
        change.push((format!("{A}name"), None));
    }
    Action::Annotate(svc, change)
}

/// A whole API in trouble for a while: the cloud slow (every answer takes 2-15 s, within
/// the CCM's 20 s timeout) or unreachable while Kubernetes answers, or the reverse.
fn api_trouble(rng: &mut Rng) -> Action {
    match rng.below(3) {
        0 => Action::CloudFault {
            method: None,
            path: "/v1/**",
            effect: FaultEffect::Latency {
                ms: 2000 + rng.below(13_000),
            },
            percent: 100,
        },
        1 => Action::CloudFault {
            method: None,
            path: "/v1/**",
            effect: FaultEffect::Drop,
            percent: 100,
        },
        _ => Action::CutKube,
    }
}

/// A cloud fault on all requests or a class of them, with a probability or as an outage.
pub fn cloud_fault(rng: &mut Rng) -> Action {
    // `**` also matches nothing: `/v1/load-balancers**` covers the load balancers' own
    // collection and everything under it.
    let (method, path) = *rng.pick(&[
        (None, "/v1/**"),
        (Some("POST"), "/v1/load-balancers**"),
        (Some("POST"), "/v1/load-balancers**"),
        (Some("GET"), "/v1/load-balancers**"),
        (Some("DELETE"), "/v1/**"),
        (Some("PATCH"), "/v1/**"),
        (Some("GET"), "/v1/servers/**"),
        (Some("GET"), "/v1/servers/**"),
    ]);
    // Lost answers twice as often: they are what makes a retried create dangerous.
    let effect = match rng.below(7) {
        0 => FaultEffect::status(500),
        1 => FaultEffect::status(*rng.pick(&[502, 503])),
        2 => FaultEffect::Status {
            status: 429,
            body: None,
            retry_after: Some(1 + rng.below(10)),
        },
        3 => FaultEffect::Drop,
        4 | 5 => FaultEffect::LoseAnswer,
        _ => FaultEffect::Latency {
            ms: 100 + rng.below(3000),
        },
    };
    Action::CloudFault {
        method,
        path,
        effect,
        // Three in ten are outages: every matching request fails until the fault is cleared.
        percent: if rng.chance(30) {
            100
        } else {
            10 + rng.below(60)
        },
    }
}

/// What drawing a schedule's steps keeps track of: the Services and nodes there are, and
/// what later steps must know of them.
struct Drawing {
    services: Vec<String>,
    next_service: usize,
    next_node: usize,
    nodes: Vec<String>,
    regions: Regions,
    /// Each Service's ports as the schedule left them (port edits start from them).
    port_lists: std::collections::BTreeMap<String, Vec<Port>>,
}

impl Drawing {
    /// Three nodes and the first Service, `svc-0`, of shape `first`.
    fn new(first: &Shape) -> Drawing {
        let mut port_lists = std::collections::BTreeMap::new();
        port_lists.insert("svc-0".to_string(), first.ports.clone());
        Drawing {
            services: vec!["svc-0".to_string()],
            next_service: 1,
            next_node: 4,
            nodes: (1..=3).map(|i| format!("node-{i}")).collect(),
            regions: Regions::default(),
            port_lists,
        }
    }

    /// The next step's action, concerning `svc` where it concerns a Service.
    fn action(&mut self, rng: &mut Rng, svc: String) -> Action {
        match rng.below(33) {
            0..=1 => self.create(rng),
            2..=4 => annotate(rng, svc, &mut self.regions),
            5 => self.set_ports(rng, svc),
            6 => Action::SetPolicy(svc, rng.chance(50)),
            7 if self.services.len() > 1 => self.remove(rng, svc),
            8 => Action::StopServer(rng.pick(&self.nodes).clone()),
            9 => Action::StartServer(rng.pick(&self.nodes).clone()),
            10 if self.nodes.len() > 2 => {
                let node = rng.pick(&self.nodes).clone();
                self.nodes.retain(|n| *n != node);
                Action::DeleteServer(node)
            }
            11 => {
                let name = format!("node-{}", self.next_node);
                self.next_node += 1;
                self.nodes.push(name.clone());
                Action::AddNode(name)
            }
            12..=14 => cloud_fault(rng),
            15 => kube_trouble(rng),
            16..=17 => Action::CrashCcm(1 + rng.below(30)),
            18 => Action::OutsideDelete(svc, PARTS[rng.below(PARTS.len() as u64) as usize]),
            19 => Action::ClearCloudFaults,
            20 => Action::StopLeader,
            21 if self.services.len() > 1 && rng.chance(30) => self.claim_of(rng, svc),
            21 => self.claim(rng, svc),
            22 => Action::DropFloatingIps(svc),
            23 => Action::OutsideChange(svc, CHANGES[rng.below(CHANGES.len() as u64) as usize]),
            24..=26 => cloud_fault(rng),
            27 => Action::StopServer(rng.pick(&self.nodes).clone()),
            28 => Action::ReregisterNode(rng.pick(&self.nodes).clone()),
            31 => api_trouble(rng),
            _ => annotate(rng, svc, &mut self.regions),
        }
    }

    /// A new Service of a drawn shape.
    fn create(&mut self, rng: &mut Rng) -> Action {
        let name = format!("svc-{}", self.next_service);
        self.next_service += 1;
        self.services.push(name.clone());
        let shape = shape(rng);
        self.port_lists.insert(name.clone(), shape.ports.clone());
        Action::Create(name, shape)
    }

    /// `svc`'s ports edited from the ports the schedule left it.
    fn set_ports(&mut self, rng: &mut Rng, svc: String) -> Action {
        let current = self.port_lists.get(&svc).cloned().unwrap_or_default();
        let edited = port_edit(rng, &current);
        self.port_lists.insert(svc.clone(), edited.clone());
        Action::SetPorts(svc, edited)
    }

    /// `svc` deleted or turned into a ClusterIP Service: no later step concerns it.
    fn remove(&mut self, rng: &mut Rng, svc: String) -> Action {
        self.services.retain(|s| *s != svc);
        if rng.chance(50) {
            Action::Delete(svc)
        } else {
            Action::ToClusterIp(svc)
        }
    }

    /// `svc` claims the floating IPs another Service claims.
    fn claim_of(&mut self, rng: &mut Rng, svc: String) -> Action {
        let of = rng.pick(&self.services).clone();
        if self.regions.regional.contains(&of) {
            self.regions.regional.insert(svc.clone());
        }
        Action::ClaimFloatingIpsOf { service: svc, of }
    }

    /// `svc` claims a new floating IP.
    fn claim(&mut self, rng: &mut Rng, svc: String) -> Action {
        // A regional IP cannot follow a load balancer into another region: once a zone
        // change was asked for (the load balancer may be re-created there), only a global
        // one can be satisfied.
        let global = self.regions.zoned.contains(&svc) || rng.chance(30);
        if !global {
            self.regions.regional.insert(svc.clone());
        }
        Action::ClaimFloatingIp {
            v6: rng.chance(30),
            global,
            service: svc,
        }
    }
}

/// Trouble with the Kubernetes API: watches cut, 410 Gone on re-watch, failing writes, or
/// the CCMs' cloud settings gone wrong.
fn kube_trouble(rng: &mut Rng) -> Action {
    match rng.below(6) {
        0 => Action::CutWatches,
        1 => Action::GoneOnRewatch(1 + rng.below(2)),
        2 => Action::FailKubeWrites(*rng.pick(&[409, 500]), 1 + rng.below(3)),
        _ => Action::Misconfigure(*rng.pick(&Misconfig::ALL)),
    }
}

impl Schedule {
    /// The schedule of `seed`: 3 to 12 steps, 5 to 60 virtual seconds apart, after a first
    /// Service (a second one, never touched, is there from the start). About a third of
    /// the steps are faults; a cloud fault lasts until a later step clears it or the
    /// schedule ends.
    pub fn generate(seed: u64) -> Schedule {
        let mut rng = Rng::new(seed);
        let replicas = if rng.chance(25) { 2 } else { 1 };
        let mut steps = Vec::new();
        let mut at = Duration::from_secs(5);
        let first = shape(&mut rng);
        let mut drawing = Drawing::new(&first);
        steps.push(Step {
            at,
            action: Action::Create("svc-0".into(), first),
        });
        let n = 3 + rng.below(10);
        for _ in 0..n {
            at += Duration::from_secs(5 + rng.below(56));
            let svc = rng.pick(&drawing.services).clone();
            let action = drawing.action(&mut rng, svc);
            steps.push(Step { at, action });
        }
        Schedule {
            seed,
            replicas,
            steps,
        }
    }

    /// The first `n` steps (for shrinking a failure to its shortest failing prefix).
    pub fn prefix(&self, n: usize) -> Schedule {
        Schedule {
            seed: self.seed,
            replicas: self.replicas,
            steps: self.steps[..n.min(self.steps.len())].to_vec(),
        }
    }

    /// When the last step happens.
    pub fn end(&self) -> Duration {
        self.steps.last().map_or(Duration::ZERO, |s| s.at)
    }
}

/// The manifest of a generated Service.
pub fn service(name: &str, shape: &Shape) -> Value {
    let ports: Vec<Value> = shape.ports.iter().map(port_json).collect();
    let annotations: serde_json::Map<String, Value> = shape
        .annotations
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    json!({
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {
            "type": "LoadBalancer",
            "selector": {"app": name},
            "externalTrafficPolicy": if shape.local { "Local" } else { "Cluster" },
            "ports": ports,
        },
    })
}

fn port_json(p: &Port) -> Value {
    json!({"name": p.name, "port": p.port, "targetPort": p.port,
           "protocol": if p.udp { "UDP" } else { "TCP" }})
}

/// `value` with [`SUBNET`] replaced by the world's node subnet.
fn fill(world: &World, value: &str) -> String {
    match world.node_subnet() {
        Some(subnet) if value.contains(SUBNET) => value.replace(SUBNET, &subnet.to_string()),
        _ => value.to_string(),
    }
}

/// Merge-patches the Service `name`; its new resourceVersion goes to `rv`.
async fn merge(
    services: &Api<Service>,
    rv: &std::cell::Cell<Option<u64>>,
    name: &str,
    body: Value,
) -> Result<(), String> {
    services
        .patch(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map(|s| rv.set(version(&s)))
        .map_err(|e| e.to_string())
}

fn version(s: &Service) -> Option<u64> {
    s.metadata.resource_version.as_deref()?.parse().ok()
}

/// What executing a step did to the world, for the checks.
#[derive(Debug, Default, Clone)]
pub struct Effects {
    /// Services whose own spec a step changed (with the virtual time of the last change).
    pub touched: Vec<(String, Duration)>,
    /// Whether nodes changed (their members may change, and stopped ones serve nothing).
    pub node_events: Vec<Duration>,
    /// Virtual times of outside deletions.
    pub outside: Vec<(String, Duration)>,
    /// Every step played, with its trace time and whether the workload's request was
    /// refused (then it changed nothing).
    pub played: Vec<Played>,
    /// Every load balancer seen serving a Service before a step touched it (a deleted
    /// Service's is gone from the cloud by the time the checks run).
    pub load_balancers: std::collections::BTreeMap<String, std::collections::BTreeSet<uuid::Uuid>>,
}

/// A step as it was played.
#[derive(Debug, Clone)]
pub struct Played {
    /// Trace milliseconds.
    pub at: u128,
    /// The index of its line in the trace.
    pub line: usize,
    pub action: Action,
    pub refused: bool,
    /// The Service's resourceVersion after the step wrote it.
    pub resource_version: Option<u64>,
}

impl Action {
    /// The Service the step concerns, if any.
    pub fn service(&self) -> Option<&str> {
        match self {
            Action::Create(s, _)
            | Action::Annotate(s, _)
            | Action::SetPorts(s, _)
            | Action::SetPolicy(s, _)
            | Action::Delete(s)
            | Action::ToClusterIp(s)
            | Action::ClaimFloatingIp { service: s, .. }
            | Action::DropFloatingIps(s)
            | Action::ClaimFloatingIpsOf { service: s, .. }
            | Action::OutsideDelete(s, _)
            | Action::OutsideChange(s, _) => Some(s),
            _ => None,
        }
    }
}

/// Plays `step` on `world`; failures of the workload itself (a refused request) are noted in
/// the trace and are not errors: the schedule goes on.
pub async fn execute(world: &mut World, step: &Step, effects: &mut Effects) {
    let now = Duration::from_millis(world.trace.millis() as u64);
    let line = world.trace.len();
    world.trace.note(format!("step {:?}", step.action));
    if let Some(name) = step.action.service()
        && let Some(lb) = world.load_balancer_of(name)
    {
        effects
            .load_balancers
            .entry(name.to_string())
            .or_default()
            .insert(lb);
    }
    record(effects, &step.action, now);
    let services: Api<Service> = Api::namespaced(world.kube.clone(), "default");
    let rv = std::cell::Cell::new(None);
    let result = perform(world, &services, &rv, &step.action, now).await;
    effects.played.push(Played {
        at: now.as_millis(),
        line,
        action: step.action.clone(),
        resource_version: rv.get(),
        // A lost answer may hide a request carried out: counted as done.
        refused: result.as_ref().is_err_and(|e| e != super::world::LOST),
    });
    if let Err(e) = result {
        world.trace.note(format!("step refused: {e}"));
    }
}

/// Notes what the action is about to change, at `now`, for the checks.
fn record(effects: &mut Effects, action: &Action, now: Duration) {
    match action {
        Action::Create(name, _)
        | Action::Annotate(name, _)
        | Action::SetPorts(name, _)
        | Action::SetPolicy(name, _)
        | Action::Delete(name)
        | Action::ToClusterIp(name)
        | Action::ClaimFloatingIp { service: name, .. }
        | Action::ClaimFloatingIpsOf { service: name, .. }
        | Action::DropFloatingIps(name) => effects.touched.push((name.clone(), now)),
        Action::StopServer(_)
        | Action::StartServer(_)
        | Action::DeleteServer(_)
        | Action::ReregisterNode(_)
        | Action::AddNode(_) => effects.node_events.push(now),
        Action::OutsideDelete(name, _) | Action::OutsideChange(name, _) => {
            effects.outside.push((name.clone(), now));
        }
        _ => {}
    }
}

/// Carries out the action: the workload's request, or the fault, on `world`.
async fn perform(
    world: &mut World,
    services: &Api<Service>,
    rv: &std::cell::Cell<Option<u64>>,
    action: &Action,
    now: Duration,
) -> Result<(), String> {
    match action {
        Action::Create(name, shape) => create(world, services, rv, name, shape).await,
        Action::Annotate(name, changes) => {
            merge(services, rv, name, annotations_patch(world, changes)).await
        }
        Action::SetPorts(name, ports) => merge(services, rv, name, ports_patch(ports)).await,
        Action::SetPolicy(name, local) => merge(services, rv, name, policy_patch(*local)).await,
        Action::ToClusterIp(name) => {
            let body = json!({"spec": {"type": "ClusterIP", "externalTrafficPolicy": null}});
            merge(services, rv, name, body).await
        }
        Action::DropFloatingIps(name) => {
            let body = json!({"metadata": {"annotations": {format!("{A}floating-ips"): null}}});
            merge(services, rv, name, body).await
        }
        Action::Delete(name) => services
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Action::StopServer(node) | Action::StartServer(node) | Action::DeleteServer(node) => {
            server_action(world, action, node).await
        }
        Action::ReregisterNode(name) => world.reregister_node(name).await,
        Action::AddNode(name) => world
            .add_node(name)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Action::CloudFault {
            method,
            path,
            effect,
            percent,
        } => add_cloud_fault(world, *method, path, effect, *percent, now),
        Action::CrashCcm(n) => {
            world.crash_and_restart(*n).await;
            Ok(())
        }
        Action::OutsideDelete(name, what) => world.outside_delete(name, what).await,
        Action::OutsideChange(name, what) => world.outside_change(name, what).await,
        Action::ClaimFloatingIp {
            service: name,
            v6,
            global,
        } => claim_floating_ip(world, services, rv, name, *v6, *global).await,
        Action::ClaimFloatingIpsOf { service: name, of } => {
            claim_floating_ips_of(services, rv, name, of).await
        }
        Action::ClearCloudFaults
        | Action::CutKube
        | Action::Misconfigure(_)
        | Action::CutWatches
        | Action::GoneOnRewatch(_)
        | Action::FailKubeWrites(..)
        | Action::StopLeader => {
            set_trouble(world, action);
            Ok(())
        }
    }
}

/// Creates the Service `name` of `shape` (the node subnet filled into its annotations).
async fn create(
    world: &World,
    services: &Api<Service>,
    rv: &std::cell::Cell<Option<u64>>,
    name: &str,
    shape: &Shape,
) -> Result<(), String> {
    let mut shape = shape.clone();
    for (_, v) in &mut shape.annotations {
        *v = fill(world, v);
    }
    match serde_json::from_value::<Service>(service(name, &shape)) {
        Ok(svc) => services
            .create(&PostParams::default(), &svc)
            .await
            .map(|s| rv.set(version(&s)))
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The merge patch of a Service's annotations (the node subnet filled into the values).
fn annotations_patch(world: &World, changes: &[(String, Option<String>)]) -> Value {
    let map: serde_json::Map<String, Value> = changes
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_ref().map_or(Value::Null, |v| json!(fill(world, v))),
            )
        })
        .collect();
    json!({"metadata": {"annotations": map}})
}

fn ports_patch(ports: &[Port]) -> Value {
    let ports: Vec<Value> = ports.iter().map(port_json).collect();
    json!({"spec": {"ports": ports}})
}

fn policy_patch(local: bool) -> Value {
    let policy = if local { "Local" } else { "Cluster" };
    json!({"spec": {"externalTrafficPolicy": policy}})
}

/// Adds a cloud fault that hits `percent` of the matching requests, drawn from the
/// world's seed and the time it starts.
fn add_cloud_fault(
    world: &World,
    method: Option<&'static str>,
    path: &'static str,
    effect: &FaultEffect,
    percent: u64,
    now: Duration,
) -> Result<(), String> {
    let rule = FaultRule::new(method, path, effect.clone())
        .probability(percent as f64 / 100.0, world.seed ^ now.as_millis() as u64);
    world
        .cloud
        .faults()
        .add(rule)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Stops, starts or deletes the server of `node`, as outside hands do.
async fn server_action(world: &mut World, action: &Action, node: &str) -> Result<(), String> {
    let Some(uuid) = world.server_of(node) else {
        return Err(format!("no server for {node}"));
    };
    let (method, path) = match action {
        Action::StopServer(_) => ("POST", format!("/v1/servers/{uuid}/stop")),
        Action::StartServer(_) => ("POST", format!("/v1/servers/{uuid}/start")),
        _ => ("DELETE", format!("/v1/servers/{uuid}")),
    };
    world.outside(method, &path).await.map(|_| ())
}

/// Turns a fault on or off that takes no request of the workload: Kubernetes trouble, the
/// cloud settings, the leader stopped, or every fault cleared.
fn set_trouble(world: &mut World, action: &Action) {
    match action {
        Action::ClearCloudFaults => {
            world.cloud.faults().clear();
            world.misconfigure(None);
            for c in &world.ccms {
                c.kube_faults.set_down(false);
            }
        }
        Action::CutKube => {
            for c in &world.ccms {
                c.kube_faults.set_down(true);
            }
        }
        Action::Misconfigure(m) => world.misconfigure(Some(*m)),
        Action::CutWatches => {
            for c in &world.ccms {
                c.kube_faults.cut_watches();
            }
        }
        Action::GoneOnRewatch(n) => {
            for c in &world.ccms {
                c.kube_faults.gone_on_rewatch(*n);
            }
        }
        Action::FailKubeWrites(status, n) => {
            for c in &world.ccms {
                c.kube_faults.fail_writes(*status, *n);
            }
        }
        Action::StopLeader => {
            if let Some(leader) = world.leader() {
                leader.stop();
            }
        }
        _ => {}
    }
}

/// Creates a floating IP (IPv6 `/56` or IPv4, global or regional) and has the Service
/// `name` claim it.
async fn claim_floating_ip(
    world: &mut World,
    services: &Api<Service>,
    rv: &std::cell::Cell<Option<u64>>,
    name: &str,
    v6: bool,
    global: bool,
) -> Result<(), String> {
    let mut body = if v6 {
        json!({"ip_version": 6, "prefix_length": 56})
    } else {
        json!({"ip_version": 4})
    };
    if global {
        body["type"] = json!("global");
    } else {
        body["region"] = json!("rma");
    }
    let fip = world
        .outside_with("POST", "/v1/floating-ips", Some(body))
        .await?;
    let network = fip["network"].as_str().unwrap_or_default().to_string();
    let claim = json!([network]).to_string();
    merge(
        services,
        rv,
        name,
        json!({"metadata": {"annotations": {format!("{A}floating-ips"): claim}}}),
    )
    .await
}

/// Has the Service `name` claim what the Service `of` claims (the same annotation value).
async fn claim_floating_ips_of(
    services: &Api<Service>,
    rv: &std::cell::Cell<Option<u64>>,
    name: &str,
    of: &str,
) -> Result<(), String> {
    let key = format!("{A}floating-ips");
    let claim = services
        .get_opt(of)
        .await
        .ok()
        .flatten()
        .and_then(|s| s.metadata.annotations?.get(&key).cloned());
    merge(
        services,
        rv,
        name,
        json!({"metadata": {"annotations": {key: claim}}}),
    )
    .await
}
