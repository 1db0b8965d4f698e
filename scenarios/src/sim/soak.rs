//! `sim soak`: days of churn in one simulated world, sampled every few virtual hours, to tell
//! a CCM (or a harness) whose memory follows the cluster from one whose memory follows time.
//!
//! The churn keeps a steady population (about K Services, M nodes): Services created, edited
//! (annotations, ports, traffic policy), deleted or turned into ClusterIP; nodes stopped and
//! started, their servers deleted and new nodes added, Nodes registered again; now and then a
//! fault (a cloud outage or flaky cloud for a few minutes, then cleared; watch cuts, 410 on
//! re-watch, failed writes; a CCM crash and restart; outside hands on a load balancer). Every
//! step is a [`schedule::Action`] played by [`schedule::execute`], drawn from the seed: same
//! seed, same run (same trace digest).
//!
//! A sample records the process's memory, the CCM's cache sizes (`ccm::sizes`), the metric
//! series it exports, the live objects, and what the harness keeps. [`verdict`] judges them
//! (the rule is in `scenarios/README.md`, "Soak"). Pure parts (sampling arithmetic, the
//! verdict, the table) are unit-tested; the driver is async on the world's paused clock.

use super::schedule::{self, Action, Rng, Step};
use super::world::{EPOCH, World, WorldConfig};
use ccm::sizes::CacheSizes;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Service};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);
/// How many of its last lines the trace keeps in a soak (enough for `World::leader`, which
/// looks for the last CCM request).
const TRACE_KEPT: usize = 10_000;
/// Changes the API server keeps for watches in a soak. Its default (100,000, for tests that
/// must never see a 410) fills only after about two days of this churn, at some 5 KiB a
/// change: the soak would measure the history filling up. etcd keeps about 5 minutes
/// (kube-apiserver compacts every 5 minutes); 5,000 changes are an hour or two here, far
/// longer than any watch of the CCM stays away.
const API_HISTORY: usize = 5_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    pub seed: u64,
    /// Virtual time to run.
    pub duration: Duration,
    /// The steady population: about this many Services and nodes.
    pub services: usize,
    pub nodes: usize,
    /// Virtual time between samples.
    pub sample_every: Duration,
    /// Live heap bytes, where the binary counts them (a counting global allocator).
    pub heap: Option<fn() -> u64>,
    /// Keep the whole trace (it grows all along: for short soaks, to see where two runs
    /// part) instead of its last lines.
    pub whole_trace: bool,
}

impl SoakConfig {
    pub fn new(seed: u64, duration: Duration) -> SoakConfig {
        SoakConfig {
            seed,
            duration,
            services: 20,
            nodes: 5,
            sample_every: 6 * HOUR,
            heap: None,
            whole_trace: false,
        }
    }
}

/// The objects alive at a sample: the population the caches are judged against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Live {
    /// Services of any type, and those of type LoadBalancer.
    pub services: usize,
    pub lb_services: usize,
    pub nodes: usize,
    /// Nodes whose server no longer exists (the CCM deletes them within minutes).
    pub nodes_without_server: usize,
    /// Load balancers in the cluster's cloud account.
    pub load_balancers: usize,
}

/// What the simulation itself holds, which must not grow with time either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Harness {
    /// Trace lines kept (the trace keeps only its last [`TRACE_KEPT`] in a soak).
    pub trace_kept: usize,
    /// fakecloud's request log (capped by `fakecloud::Config::request_log_capacity`).
    pub cloud_log: usize,
    /// Requests the API server recorded since the last housekeeping (cleared hourly).
    pub api_requests: usize,
    /// Events and Leases stored in the API server (Events expire after an hour, as with
    /// kube-apiserver's `--event-ttl`).
    pub events: usize,
    pub leases: usize,
    /// Changes in the API server's watch history.
    pub watch_history: usize,
    /// fakecloud's data-plane history: operations applied by load balancers (deleted ones
    /// included), backend declarations, server power records.
    pub lb_ops: usize,
    pub backends: usize,
    pub host_records: usize,
}

/// One sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Virtual time since the start.
    pub at: Duration,
    /// Resident set size of the whole process (the simulation: fakecloud, API server,
    /// kubelets and the CCM), bytes.
    pub rss: u64,
    /// Live heap bytes, if counted.
    pub heap: Option<u64>,
    pub caches: CacheSizes,
    /// Sample lines of the CCM's `/metrics` text.
    pub series: usize,
    pub live: Live,
    pub harness: Harness,
}

/// The metric series in a Prometheus exposition text: its sample lines.
pub fn count_series(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count()
}

/// How one quantity is judged.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    pub name: &'static str,
    pub value: fn(&Sample) -> Option<f64>,
    /// What of a window is compared: its maximum, or for a count that follows bursts, its
    /// median.
    pub level: Level,
    /// The last window's level may be at most `factor` × the first window's + `slack`.
    pub factor: f64,
    pub slack: f64,
    /// A bound from the population at the same sample (caches of Services or Nodes hold
    /// no more entries than there are objects, plus changes in flight).
    pub bound: Option<fn(&Sample) -> f64>,
}

/// The level of a window a quantity is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Max,
    /// A count of what happened in the last minutes rises with each burst of churn and a
    /// sample catches a burst or not: the maximum of a window says which bursts it caught,
    /// the median how high the count sits, which a leak raises and a burst does not.
    Median,
}

const MIB: f64 = 1024.0 * 1024.0;
/// Changes in flight a per-object cache may hold beyond the live objects (a deleted
/// object whose last reconcile has not run yet).
const IN_FLIGHT: f64 = 2.0;

fn services_bound(s: &Sample) -> f64 {
    s.live.services as f64 + IN_FLIGHT
}

fn nodes_bound(s: &Sample) -> f64 {
    s.live.nodes as f64 + IN_FLIGHT
}

macro_rules! count {
    ($name:literal, $($field:ident).+, $bound:expr) => {
        Quantity {
            name: $name,
            value: |s| Some(s.$($field).+ as f64),
            level: Level::Max,
            factor: 1.1,
            slack: 2.0,
            bound: $bound,
        }
    };
}

/// A count of what happened in the last minutes (edits are kept 5 minutes, Event series 6;
/// Services failing now): it follows the churn's bursts, so its median is judged (see
/// [`Level::Median`]); growth with time still doubles it within days. A population bound,
/// if any, holds at every sample.
macro_rules! burst {
    ($name:literal, $($field:ident).+, $bound:expr) => {
        Quantity {
            name: $name,
            value: |s| Some(s.$($field).+ as f64),
            level: Level::Median,
            factor: 2.0,
            slack: 5.0,
            bound: $bound,
        }
    };
}

/// Everything judged, with its rule.
pub const QUANTITIES: &[Quantity] = &[
    Quantity {
        name: "rss",
        value: |s| Some(s.rss as f64),
        level: Level::Max,
        factor: 1.25,
        slack: 32.0 * MIB,
        bound: None,
    },
    Quantity {
        name: "heap",
        value: |s| s.heap.map(|h| h as f64),
        level: Level::Max,
        factor: 1.25,
        slack: 16.0 * MIB,
        bound: None,
    },
    Quantity {
        name: "metric_series",
        value: |s| Some(s.series as f64),
        level: Level::Max,
        // A label value seen for the first time late (a status of an endpoint the faults
        // rarely hit) is one series more, and the set of them is finite.
        factor: 1.1,
        slack: 10.0,
        bound: None,
    },
    count!(
        "services_cached",
        caches.services_cached,
        Some(services_bound)
    ),
    count!("nodes_cached", caches.nodes_cached, Some(nodes_bound)),
    burst!("failures", caches.failures, Some(services_bound)),
    count!("waiting", caches.waiting, Some(services_bound)),
    count!("touched", caches.touched, Some(services_bound)),
    count!("ensuring", caches.ensuring, Some(services_bound)),
    count!("written", caches.written, Some(services_bound)),
    burst!("shared_edits", caches.shared_edits, None),
    count!("node_last_sync", caches.node_last_sync, Some(nodes_bound)),
    count!(
        "node_initialized",
        caches.node_initialized,
        Some(nodes_bound)
    ),
    burst!("event_series", caches.event_series, None),
    // No load balancer outlives its Service for long (the CCM leaks none in the cloud).
    count!(
        "load_balancers",
        live.load_balancers,
        Some(|s| s.live.lb_services as f64 + IN_FLIGHT)
    ),
    // A Node outlives its server only while the CCM confirms it gone (one at a time).
    Quantity {
        name: "nodes_without_server",
        value: |s| Some(s.live.nodes_without_server as f64),
        level: Level::Max,
        factor: 1.0,
        slack: 1.0,
        bound: Some(|_| 1.0),
    },
    Quantity {
        name: "harness",
        value: |s| Some(harness_total(&s.harness) as f64),
        level: Level::Max,
        factor: 1.25,
        slack: 1000.0,
        bound: None,
    },
];

/// Everything the harness holds, as one count (each part is in the table).
pub fn harness_total(h: &Harness) -> usize {
    h.trace_kept
        + h.cloud_log
        + h.api_requests
        + h.events
        + h.leases
        + h.watch_history
        + h.lb_ops
        + h.backends
        + h.host_records
}

/// One quantity's judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: &'static str,
    /// Its level (maximum or median) over the first window after the warm-up, and over the
    /// last window.
    pub level: Level,
    pub first: f64,
    pub last: f64,
    pub limit: f64,
    /// The largest excess over the population bound after the warm-up (≤ 0: within).
    pub excess: Option<f64>,
    pub ok: bool,
}

/// The verdict over a soak's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The warm-up, and the length of the first and last windows compared.
    pub window: Duration,
    pub checks: Vec<Check>,
    /// Why no verdict could be given (too few samples), if so.
    pub missing: Option<String>,
}

impl Verdict {
    pub fn flat(&self) -> bool {
        self.missing.is_none() && self.checks.iter().all(|c| c.ok)
    }
}

/// The window a run of `total` is judged with: a day, or a third of a shorter run.
pub fn window_for(total: Duration) -> Duration {
    DAY.min(total / 3)
}

fn level_of(samples: &[&Sample], q: &Quantity) -> Option<f64> {
    let mut values: Vec<f64> = samples.iter().filter_map(|s| (q.value)(s)).collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(match q.level {
        Level::Max => values[values.len() - 1],
        Level::Median => values[values.len() / 2],
    })
}

/// Judges `samples` (in time order): after a warm-up of `window`, each quantity's maximum
/// over the last `window` must be at most `factor` × its maximum over the first `window`
/// after the warm-up + `slack`; and a per-object cache must never, after the warm-up, hold
/// more entries than its population bound.
pub fn verdict(samples: &[Sample], window: Duration) -> Verdict {
    let end = samples.last().map_or(Duration::ZERO, |s| s.at);
    let after: Vec<&Sample> = samples.iter().filter(|s| s.at >= window).collect();
    let first: Vec<&Sample> = after
        .iter()
        .copied()
        .filter(|s| s.at <= window * 2)
        .collect();
    let last: Vec<&Sample> = after
        .iter()
        .copied()
        .filter(|s| s.at + window >= end)
        .collect();
    let mut verdict = Verdict {
        window,
        checks: Vec::new(),
        missing: None,
    };
    if window.is_zero() || first.is_empty() || last.is_empty() || end < window * 2 {
        verdict.missing = Some(format!(
            "too few samples: a verdict needs samples over at least three windows of {} h",
            window.as_secs() / 3600
        ));
        return verdict;
    }
    for q in QUANTITIES {
        let (Some(f), Some(l)) = (level_of(&first, q), level_of(&last, q)) else {
            continue;
        };
        let limit = f * q.factor + q.slack;
        let excess = q.bound.map(|bound| {
            after
                .iter()
                .filter_map(|s| (q.value)(s).map(|v| v - bound(s)))
                .fold(f64::MIN, f64::max)
        });
        verdict.checks.push(Check {
            name: q.name,
            level: q.level,
            first: f,
            last: l,
            limit,
            excess,
            ok: l <= limit && excess.is_none_or(|e| e <= 0.0),
        });
    }
    verdict
}

/// The samples as a table (one row per sample).
pub fn table(samples: &[Sample]) -> String {
    let mut out = String::from(
        "  hours  rss MiB  heap MiB  series | svc-cache node-cache failures waiting touched \
         ensuring edits node-maps ev-series | Services (LB)  Nodes gone  LBs | trace cloud-log \
         api-reqs events leases history lb-ops backends hosts\n",
    );
    for s in samples {
        let c = &s.caches;
        let h = &s.harness;
        let heap = s
            .heap
            .map_or_else(|| "-".to_string(), |h| format!("{:.1}", h as f64 / MIB));
        let _ = writeln!(
            out,
            "{:>7.1} {:>8.1} {:>9} {:>7} | {:>9} {:>10} {:>8} {:>7} {:>7} {:>8} {:>5} {:>9} \
             {:>9} | {:>8} ({:>2}) {:>6} {:>4} {:>4} | {:>5} {:>9} {:>8} {:>6} {:>6} {:>7} {:>6} {:>8} {:>5}",
            s.at.as_secs_f64() / 3600.0,
            s.rss as f64 / MIB,
            heap,
            s.series,
            c.services_cached,
            c.nodes_cached,
            c.failures,
            c.waiting,
            c.touched,
            c.ensuring,
            c.shared_edits,
            format!("{}/{}", c.node_last_sync, c.node_initialized),
            c.event_series,
            s.live.services,
            s.live.lb_services,
            s.live.nodes,
            s.live.nodes_without_server,
            s.live.load_balancers,
            h.trace_kept,
            h.cloud_log,
            h.api_requests,
            h.events,
            h.leases,
            h.watch_history,
            h.lb_ops,
            h.backends,
            h.host_records,
        );
    }
    out
}

/// A figure of a quantity as a person reads it (bytes in MiB).
fn figure(name: &str, v: f64) -> String {
    if name == "rss" || name == "heap" {
        format!("{:.1} MiB", v / MIB)
    } else {
        format!("{v:.0}")
    }
}

/// The verdict as text: one line per quantity, then `flat` or `NOT flat`.
pub fn verdict_text(v: &Verdict) -> String {
    let hours = v.window.as_secs_f64() / 3600.0;
    let mut out = format!(
        "verdict (warm-up {hours:.0} h; the maximum (median: counts that follow bursts) over \
         the last {hours:.0} h against the same over the first {hours:.0} h after the \
         warm-up):\n"
    );
    if let Some(why) = &v.missing {
        let _ = writeln!(out, "  no verdict: {why}");
    }
    for c in &v.checks {
        let bound = match c.excess {
            Some(e) if e > 0.0 => format!("; {e:.0} over its population bound"),
            Some(_) => "; within its population bound".to_string(),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<20} {} first {:>10}  last {:>10}  limit {:>10}  {}{bound}",
            c.name,
            if c.level == Level::Median {
                "median"
            } else {
                "max   "
            },
            figure(c.name, c.first),
            figure(c.name, c.last),
            figure(c.name, c.limit),
            if c.ok { "ok" } else { "GROWS" },
        );
    }
    out.push_str(if v.flat() { "flat\n" } else { "NOT flat\n" });
    out
}

/// The samples as CSV (every column, for plotting).
pub fn csv(samples: &[Sample]) -> String {
    let mut out = String::from("hours,rss_bytes,heap_bytes,metric_series");
    for (name, _) in CacheSizes::default().named() {
        let _ = write!(out, ",{name}");
    }
    out.push_str(
        ",services,lb_services,nodes,nodes_without_server,load_balancers,trace_kept,cloud_log,api_requests,\
         events,leases,watch_history,lb_ops,backends,host_records\n",
    );
    for s in samples {
        let heap = s.heap.map_or_else(String::new, |h| h.to_string());
        let _ = write!(
            out,
            "{:.2},{},{heap},{}",
            s.at.as_secs_f64() / 3600.0,
            s.rss,
            s.series
        );
        for (_, v) in s.caches.named() {
            let _ = write!(out, ",{v}");
        }
        let (l, h) = (&s.live, &s.harness);
        let _ = writeln!(
            out,
            ",{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            l.services,
            l.lb_services,
            l.nodes,
            l.nodes_without_server,
            l.load_balancers,
            h.trace_kept,
            h.cloud_log,
            h.api_requests,
            h.events,
            h.leases,
            h.watch_history,
            h.lb_ops,
            h.backends,
            h.host_records
        );
    }
    out
}

/// A Service as the churn left it.
#[derive(Debug, Clone)]
struct Svc {
    ports: Vec<schedule::Port>,
    local: bool,
    /// Turned into ClusterIP (then only deleted).
    cluster_ip: bool,
}

/// The churn's model of the world and its random draws: what exists, and the actions due
/// later (a stopped server started again, a fault cleared, a replacement node added).
struct Churn {
    rng: Rng,
    services: BTreeMap<String, Svc>,
    next_service: u64,
    /// Nodes by name, and whether their server is stopped.
    nodes: BTreeMap<String, bool>,
    next_node: u64,
    /// Actions due at a virtual time, in the order drawn.
    later: Vec<(Duration, Action)>,
    /// Until when a cloud fault (or a wrong setting) is in force.
    fault_until: Duration,
    target_services: usize,
    target_nodes: usize,
}

fn minutes(rng: &mut Rng, from: u64, to: u64) -> Duration {
    Duration::from_secs(60 * (from + rng.below(to - from + 1)))
}

impl Churn {
    fn new(seed: u64, services: usize, nodes: usize) -> Churn {
        Churn {
            rng: Rng::new(seed ^ 0x736f_616b),
            services: BTreeMap::new(),
            next_service: 0,
            nodes: (1..=nodes).map(|i| (format!("node-{i}"), false)).collect(),
            next_node: nodes as u64 + 1,
            later: Vec::new(),
            fault_until: Duration::ZERO,
            target_services: services,
            target_nodes: nodes,
        }
    }

    fn create(&mut self) -> Action {
        let name = format!("svc-{}", self.next_service);
        self.next_service += 1;
        let shape = schedule::shape(&mut self.rng);
        self.services.insert(
            name.clone(),
            Svc {
                ports: shape.ports.clone(),
                local: shape.local,
                cluster_ip: false,
            },
        );
        Action::Create(name, shape)
    }

    /// A Service to change: one of type LoadBalancer, if any.
    fn pick_lb(&mut self) -> Option<String> {
        let lbs: Vec<String> = self
            .services
            .iter()
            .filter(|(_, s)| !s.cluster_ip)
            .map(|(n, _)| n.clone())
            .collect();
        (!lbs.is_empty()).then(|| self.rng.pick(&lbs).clone())
    }

    fn pick_node(&mut self, stopped: bool) -> Option<String> {
        let names: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, s)| **s == stopped)
            .map(|(n, _)| n.clone())
            .collect();
        (!names.is_empty()).then(|| self.rng.pick(&names).clone())
    }

    /// The actions of the next step at `now` (none when the draw had nothing to act on).
    fn step(&mut self, now: Duration) -> Vec<Action> {
        let lb_count = self.services.values().filter(|s| !s.cluster_ip).count();
        let low = self.target_services.saturating_sub(3);
        // Keep the population near its target: below it, create; above, delete.
        if lb_count < low {
            return vec![self.create()];
        }
        if self.services.len() > self.target_services + 3 {
            return self.delete(true).into_iter().collect();
        }
        let draw = self.rng.below(100);
        match draw {
            0..=13 => vec![self.create()],
            14..=25 => self.delete(false).into_iter().collect(),
            26..=29 => self.turn_cluster_ip().into_iter().collect(),
            30..=73 => self.edit(draw).into_iter().collect(),
            74..=81 => self.node_step(now, draw),
            _ => self.fault(now, draw),
        }
    }

    /// Deletes a Service: a ClusterIP one (left from a turn) when `cluster_ip_first` or by
    /// a coin, so that they do not pile up; else any.
    fn delete(&mut self, cluster_ip_first: bool) -> Option<Action> {
        let turned: Vec<String> = self
            .services
            .iter()
            .filter(|(_, s)| s.cluster_ip)
            .map(|(n, _)| n.clone())
            .collect();
        let names: Vec<String> = if !turned.is_empty() && (cluster_ip_first || self.rng.chance(50))
        {
            turned
        } else {
            self.services.keys().cloned().collect()
        };
        if names.is_empty() {
            return None;
        }
        let name = self.rng.pick(&names).clone();
        self.services.remove(&name);
        Some(Action::Delete(name))
    }

    fn turn_cluster_ip(&mut self) -> Option<Action> {
        let name = self.pick_lb()?;
        if let Some(s) = self.services.get_mut(&name) {
            s.cluster_ip = true;
        }
        Some(Action::ToClusterIp(name))
    }

    /// An annotation, port or policy change (and now and then outside hands).
    fn edit(&mut self, draw: u64) -> Option<Action> {
        let name = self.pick_lb()?;
        let rng = &mut self.rng;
        let svc = self.services.get_mut(&name)?;
        Some(match draw {
            30..=54 => Action::Annotate(name, schedule::annotation_change(rng)),
            55..=66 => {
                svc.ports = schedule::port_edit(rng, &svc.ports);
                Action::SetPorts(name, svc.ports.clone())
            }
            67..=69 => {
                svc.local = !svc.local;
                Action::SetPolicy(name, svc.local)
            }
            70..=71 => {
                let part = rng.below(schedule::PARTS.len() as u64) as usize;
                Action::OutsideDelete(name, schedule::PARTS[part])
            }
            _ => {
                let change = rng.below(schedule::CHANGES.len() as u64) as usize;
                Action::OutsideChange(name, schedule::CHANGES[change])
            }
        })
    }
}

impl Churn {
    /// A node stopped (started again later), its server deleted (a new node added later),
    /// or its Node registered again.
    fn node_step(&mut self, now: Duration, draw: u64) -> Vec<Action> {
        let running = self.nodes.values().filter(|s| !**s).count();
        match draw {
            // At least two nodes keep running.
            74..=77 if running > 2 => {
                let Some(node) = self.pick_node(false) else {
                    return Vec::new();
                };
                self.nodes.insert(node.clone(), true);
                let back = now + minutes(&mut self.rng, 5, 60);
                self.later.push((back, Action::StartServer(node.clone())));
                vec![Action::StopServer(node)]
            }
            78..=79 if running > 2 && self.nodes.len() >= self.target_nodes => {
                let Some(node) = self.pick_node(false) else {
                    return Vec::new();
                };
                self.nodes.remove(&node);
                let name = format!("node-{}", self.next_node);
                self.next_node += 1;
                let added = now + minutes(&mut self.rng, 2, 15);
                self.later.push((added, Action::AddNode(name)));
                vec![Action::DeleteServer(node)]
            }
            _ => self
                .pick_node(false)
                .map(Action::ReregisterNode)
                .into_iter()
                .collect(),
        }
    }

    /// A fault: a cloud outage or flaky cloud or wrong setting for a few minutes (one at a
    /// time), Kubernetes faults, a CCM crash.
    fn fault(&mut self, now: Duration, draw: u64) -> Vec<Action> {
        let cloud = (82..=90).contains(&draw);
        if cloud && now < self.fault_until {
            return Vec::new();
        }
        let rng = &mut self.rng;
        let action = match draw {
            82..=86 => Action::CloudFault {
                method: None,
                path: "/v1/**",
                effect: fakecloud::FaultEffect::status(*rng.pick(&[500, 503])),
                percent: 100,
            },
            87..=89 => schedule::cloud_fault(rng),
            90 => Action::Misconfigure(*rng.pick(&schedule::Misconfig::ALL)),
            91..=94 => Action::CutWatches,
            95 => Action::GoneOnRewatch(1 + rng.below(2)),
            96..=97 => Action::FailKubeWrites(*rng.pick(&[409, 500]), 1 + rng.below(3)),
            _ => Action::CrashCcm(1 + rng.below(30)),
        };
        if cloud {
            self.fault_until = now + minutes(rng, 2, 10);
            self.later
                .push((self.fault_until, Action::ClearCloudFaults));
        }
        vec![action]
    }

    /// The actions due by `now`, in the order they were drawn (the nodes they start or add
    /// run from now on).
    fn due(&mut self, now: Duration) -> Vec<Action> {
        let (due, later): (Vec<_>, Vec<_>) = self.later.drain(..).partition(|(at, _)| *at <= now);
        self.later = later;
        for (_, action) in &due {
            if let Action::StartServer(node) | Action::AddNode(node) = action {
                self.nodes.insert(node.clone(), false);
            }
        }
        due.into_iter().map(|(_, a)| a).collect()
    }

    /// When the next action drawn for later is due.
    fn next_due(&self) -> Option<Duration> {
        self.later.iter().map(|(at, _)| *at).min()
    }
}

/// What a soak found.
#[derive(Debug, Clone)]
pub struct Report {
    pub config: SoakConfig,
    pub samples: Vec<Sample>,
    pub verdict: Verdict,
    /// Steps played.
    pub steps: u64,
    /// The trace's digest over the whole run (the same for the same seed).
    pub digest: u64,
    /// The whole trace, if [`SoakConfig::whole_trace`].
    pub trace: Option<Vec<String>>,
    /// The Nodes whose server was gone at the end, described.
    pub nodes_left: Vec<String>,
    pub wall: Duration,
}

impl Report {
    /// Simulated seconds per real second.
    pub fn speed(&self) -> f64 {
        self.config.duration.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
    }

    /// The whole report as a person reads it.
    pub fn text(&self) -> String {
        let c = &self.config;
        let mut out = format!(
            "soak: seed {}, {:.1} virtual days, about {} Services on {} nodes, a sample every \
             {:.1} h, {} steps; trace digest {:016x}\n\
             rss is the whole simulation process (fakecloud, API server, kubelets, CCM), \
             heap its live allocations\n\n",
            c.seed,
            c.duration.as_secs_f64() / DAY.as_secs_f64(),
            c.services,
            c.nodes,
            c.sample_every.as_secs_f64() / 3600.0,
            self.steps,
            self.digest,
        );
        out.push_str(&table(&self.samples));
        out.push('\n');
        out.push_str(&verdict_text(&self.verdict));
        for n in &self.nodes_left {
            let _ = writeln!(out, "Node without a server at the end: {n}");
        }
        let _ = writeln!(
            out,
            "wall time {:.1} s, {:.0} simulated s per real s",
            self.wall.as_secs_f64(),
            self.speed()
        );
        out
    }
}

/// Runs a soak on a runtime of its own.
pub fn soak(config: &SoakConfig) -> Result<Report, String> {
    let rt = super::runtime().map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let driven = rt.block_on(drive(config))?;
    let window = window_for(config.duration);
    Ok(Report {
        config: config.clone(),
        verdict: verdict(&driven.samples, window),
        samples: driven.samples,
        steps: driven.steps,
        digest: driven.digest,
        trace: driven.trace,
        nodes_left: driven.nodes_left,
        wall: started.elapsed(),
    })
}

async fn play(world: &mut World, now: Duration, action: Action) {
    let step = Step { at: now, action };
    // Effects serve the checks of a short schedule; a soak keeps none of them.
    schedule::execute(world, &step, &mut schedule::Effects::default()).await;
}

/// What the driver brings back.
struct Driven {
    samples: Vec<Sample>,
    steps: u64,
    digest: u64,
    trace: Option<Vec<String>>,
    nodes_left: Vec<String>,
}

/// The soak on the world's clock.
async fn drive(config: &SoakConfig) -> Result<Driven, String> {
    let mut world_config = WorldConfig {
        nodes: config.nodes,
        api_history: API_HISTORY,
        ..WorldConfig::new(config.seed)
    };
    // Days of Lease renewals are part of what the API server's memory must survive.
    world_config.kubelet.renew_lease = true;
    let mut world = World::start(world_config)
        .await
        .map_err(|e| e.to_string())?;
    if !config.whole_trace {
        world.trace.keep_last(TRACE_KEPT);
    }
    world.revive();
    let start = tokio::time::Instant::now();
    let mut churn = Churn::new(config.seed, config.services, config.nodes);
    let mut steps = 0;
    for _ in 0..config.services {
        let create = churn.create();
        play(&mut world, start.elapsed(), create).await;
        steps += 1;
    }
    let (mut samples, mut next_sample, mut next_chores) = (Vec::new(), config.sample_every, HOUR);
    let mut next_step = Duration::from_secs(60);
    loop {
        let now = start.elapsed();
        let mut actions = churn.due(now);
        if now >= next_step {
            // Outside hands' server requests fail under the cloud's faults too: the churn
            // draws from the nodes as they are, not as it asked them to be.
            churn.nodes = nodes_now(&world);
            actions.extend(churn.step(now));
            next_step = now + Duration::from_secs(60 + churn.rng.below(540));
        }
        for action in actions {
            play(&mut world, now, action).await;
            steps += 1;
        }
        // A crashed CCM's pod is restarted (within the 10 s tick below).
        world.revive();
        if now >= next_sample {
            samples.push(sample(&world, config, now));
            next_sample += config.sample_every.max(Duration::from_secs(60));
        }
        if now >= next_chores {
            chores(&mut world).await;
            next_chores += HOUR;
        }
        if now >= config.duration {
            break;
        }
        let next = [next_step, next_sample, next_chores, config.duration]
            .into_iter()
            .chain(churn.next_due())
            .min()
            .unwrap_or(config.duration)
            .min(now + Duration::from_secs(10));
        world.run_for(next.saturating_sub(now)).await;
    }
    let trace = config.whole_trace.then(|| world.trace.lines());
    Ok(Driven {
        samples,
        steps,
        digest: world.trace.digest(),
        trace,
        nodes_left: nodes_without_server(&world),
    })
}

/// The nodes whose server exists, and whether it is stopped (not running).
fn nodes_now(world: &World) -> BTreeMap<String, bool> {
    world
        .node_names()
        .into_iter()
        .filter_map(|name| {
            let machine = crate::testbed::machine(&world.cloud, world.server_of(&name)?)?;
            Some((name, machine.status != "running"))
        })
        .collect()
}

/// One sample of the world at `now`.
fn sample(world: &World, config: &SoakConfig, now: Duration) -> Sample {
    let ccm = world.ccms.iter().find(|c| c.is_running());
    let probe = ccm.and_then(|c| c.sizes.lock().clone());
    let metrics = ccm.and_then(|c| c.metrics.lock().clone());
    let services: Vec<Service> = world.api.objects("services");
    let lb_services = services
        .iter()
        .filter(|s| s.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer"))
        .count();
    let (load_balancers, lb_ops, backends, host_records) = world.cloud.read("", |ctx| {
        let dp = ctx.st.dataplane();
        (
            ctx.st.load_balancers().len(),
            dp.lbs.values().map(|l| l.ops.len()).sum(),
            dp.backends.iter().count(),
            dp.hosts.values().map(|h| h.log.len()).sum(),
        )
    });
    Sample {
        at: now,
        rss: ccm::metrics::Process::now().resident_bytes.unwrap_or(0),
        heap: config.heap.map(|heap| heap()),
        caches: probe.map(|p| p.sizes()).unwrap_or_default(),
        series: metrics.map_or(0, |m| count_series(&m.render())),
        live: Live {
            services: services.len(),
            lb_services,
            nodes: world.api.count("nodes"),
            nodes_without_server: nodes_without_server(world).len(),
            load_balancers,
        },
        harness: Harness {
            trace_kept: world.trace.kept(),
            cloud_log: world.cloud.0.log.lock().entries.len(),
            api_requests: world.api.request_count(),
            events: world.api.count("events"),
            leases: world.api.count("leases"),
            watch_history: world.api.history_len(),
            lb_ops,
            backends,
            host_records,
        },
    }
}

/// The Nodes whose server no longer exists, each with what it shows (Ready condition,
/// provider ID, taints), for a person to tell why the CCM kept it.
pub fn nodes_without_server(world: &World) -> Vec<String> {
    let nodes: Vec<Node> = world.api.objects("nodes");
    nodes
        .iter()
        .filter_map(|n| {
            let name = n.metadata.name.as_deref()?;
            let server = world.server_of(name);
            let exists = server.is_some_and(|uuid| {
                world
                    .cloud
                    .read("", |ctx| ctx.st.servers().contains_key(&uuid))
            });
            (!exists).then(|| describe_node(n, name))
        })
        .collect()
}

fn describe_node(n: &Node, name: &str) -> String {
    let ready = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .map_or("none", |c| c.status.as_str());
    let spec = n.spec.as_ref();
    let provider = spec
        .and_then(|s| s.provider_id.as_deref())
        .unwrap_or("none");
    let taints: Vec<&str> = spec
        .and_then(|s| s.taints.as_ref())
        .map(|t| t.iter().map(|t| t.key.as_str()).collect())
        .unwrap_or_default();
    format!(
        "{name}: Ready {ready}, provider ID {provider}, taints [{}]",
        taints.join(", ")
    )
}

/// Hourly housekeeping of what a real cluster would not keep either: Events older than an
/// hour (kube-apiserver's `--event-ttl` default), the Leases of deleted Nodes (the garbage
/// collector removes them with their Node); and of what only the harness keeps: the API
/// server's request records (for tests' assertions), fakecloud's data-plane history older
/// than an hour (the downtime checks of short schedules read it; a soak does not, and a
/// week of it grows by megabytes a day and slows every health answer), the handles of
/// crashed CCMs.
async fn chores(world: &mut World) {
    let _ = world.cloud.write(|st, now| {
        st.forget_history_before(now - chrono::Duration::hours(1));
        Ok(())
    });
    let client = world.kube_client("housekeeping");
    let cutoff = EPOCH
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .and_then(|epoch| {
            let millis = world.trace.millis().saturating_sub(HOUR.as_millis());
            let since = k8s_openapi::jiff::SignedDuration::from_millis(
                i64::try_from(millis).unwrap_or(i64::MAX),
            );
            epoch.checked_add(since).ok()
        });
    let events: Vec<Event> = world.api.objects("events");
    for e in events {
        let old = match (&e.metadata.creation_timestamp, cutoff) {
            (Some(t), Some(cutoff)) => t.0 < cutoff,
            _ => false,
        };
        if let (true, Some(ns), Some(name)) = (old, &e.metadata.namespace, &e.metadata.name) {
            let api: kube::Api<Event> = kube::Api::namespaced(client.clone(), ns);
            let _ = api.delete(name, &Default::default()).await;
        }
    }
    let nodes: Vec<Node> = world.api.objects("nodes");
    let leases: Vec<Lease> = world.api.objects("leases");
    for l in leases {
        let (Some(ns), Some(name)) = (&l.metadata.namespace, &l.metadata.name) else {
            continue;
        };
        let has_node = nodes.iter().any(|n| n.metadata.name.as_ref() == Some(name));
        if ns == crate::testbed::kubelet::NODE_LEASE_NAMESPACE && !has_node {
            let api: kube::Api<Lease> = kube::Api::namespaced(client.clone(), ns);
            let _ = api.delete(name, &Default::default()).await;
        }
    }
    world.api.clear_requests();
    world.ccms.retain(|c| c.is_running());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A steady run: 20 Services on 5 nodes, the caches following them, `hours` long with
    /// a sample every hour.
    fn steady(hours: u64) -> Vec<Sample> {
        (1..=hours)
            .map(|h| Sample {
                at: HOUR * h as u32,
                rss: 100 << 20,
                heap: Some(60 << 20),
                caches: CacheSizes {
                    services_cached: 20,
                    nodes_cached: 5,
                    touched: 3 + (h as usize % 2),
                    node_last_sync: 5,
                    event_series: 4,
                    ..CacheSizes::default()
                },
                series: 150,
                live: Live {
                    services: 20,
                    lb_services: 18,
                    nodes: 5,
                    nodes_without_server: 0,
                    load_balancers: 18,
                },
                harness: Harness {
                    trace_kept: TRACE_KEPT,
                    ..Harness::default()
                },
            })
            .collect()
    }

    fn failing(v: &Verdict) -> Vec<&'static str> {
        v.checks.iter().filter(|c| !c.ok).map(|c| c.name).collect()
    }

    #[test]
    fn a_steady_run_is_flat() {
        let v = verdict(&steady(72), DAY);
        assert!(v.flat(), "{}", verdict_text(&v));
        assert_eq!(v.checks.len(), QUANTITIES.len());
        assert!(verdict_text(&v).ends_with("flat\n"));
    }

    #[test]
    fn a_late_burst_of_a_bursty_count_is_flat_but_a_raised_level_is_not() {
        // A burst in the last day, three times the first day's largest: the median of the
        // day does not move.
        let mut samples = steady(72);
        for s in &mut samples {
            s.caches.shared_edits = 6 + (s.at.as_secs() / 3600 % 3) as usize;
            s.caches.failures = (s.at.as_secs() / 3600 % 5 == 0) as usize;
        }
        for s in samples.iter_mut().filter(|s| s.at >= 70 * HOUR) {
            s.caches.shared_edits = 58;
            s.caches.failures = 19;
        }
        let v = verdict(&samples, DAY);
        assert!(v.flat(), "{}", verdict_text(&v));
        assert!(verdict_text(&v).contains("shared_edits         median"));
        // The same count sitting twice as high all through the last day: it grows.
        for s in samples.iter_mut().filter(|s| s.at > 2 * DAY) {
            s.caches.shared_edits = 30;
        }
        assert_eq!(failing(&verdict(&samples, DAY)), ["shared_edits"]);
    }

    #[test]
    fn a_bursty_cache_above_its_population_once_is_not_flat() {
        let mut samples = steady(72);
        samples[40].caches.failures = 23;
        let v = verdict(&samples, DAY);
        assert_eq!(failing(&v), ["failures"]);
        assert!(verdict_text(&v).contains("1 over its population bound"));
    }

    #[test]
    fn a_series_growing_with_time_is_not_flat() {
        let mut samples = steady(72);
        for (i, s) in samples.iter_mut().enumerate() {
            s.series += 3 * i;
        }
        assert_eq!(failing(&verdict(&samples, DAY)), ["metric_series"]);
    }

    #[test]
    fn a_cache_above_its_population_is_not_flat_even_when_it_stopped_growing() {
        let mut samples = steady(72);
        for s in &mut samples {
            s.caches.node_last_sync = 9;
        }
        let v = verdict(&samples, DAY);
        assert_eq!(failing(&v), ["node_last_sync"]);
        assert!(verdict_text(&v).contains("2 over its population bound"));
    }

    #[test]
    fn memory_growing_a_quarter_and_more_is_not_flat() {
        let mut samples = steady(72);
        for s in samples.iter_mut().filter(|s| s.at > 2 * DAY) {
            s.rss = 200 << 20;
        }
        assert_eq!(failing(&verdict(&samples, DAY)), ["rss"]);
        // Within a quarter and the slack: flat.
        for s in samples.iter_mut().filter(|s| s.at > 2 * DAY) {
            s.rss = 150 << 20;
        }
        assert!(verdict(&samples, DAY).flat());
    }

    #[test]
    fn orphan_load_balancers_are_not_flat() {
        let mut samples = steady(72);
        samples[60].live.load_balancers = 25;
        assert_eq!(failing(&verdict(&samples, DAY)), ["load_balancers"]);
    }

    #[test]
    fn nodes_kept_without_their_servers_are_not_flat() {
        let mut samples = steady(72);
        for s in samples.iter_mut().skip(50) {
            s.live.nodes_without_server = 2;
        }
        assert_eq!(failing(&verdict(&samples, DAY)), ["nodes_without_server"]);
    }

    #[test]
    fn too_short_a_run_has_no_verdict() {
        let v = verdict(&steady(30), DAY);
        assert!(!v.flat());
        assert!(v.missing.is_some());
        assert!(verdict(&steady(3), window_for(3 * HOUR)).flat());
    }

    #[test]
    fn the_series_of_an_exposition_text_are_counted() {
        let m = ccm::metrics::Metrics::new();
        m.set_leader(true);
        m.reconcile("service", "ok", Duration::from_millis(3));
        // One counter, a histogram of 12 buckets + Inf + sum + count, one deletion counter,
        // the leader gauge, the build info and the process's gauges (where /proc is).
        let p = ccm::metrics::Process::now();
        let process = [
            p.cpu_seconds.is_some(),
            p.resident_bytes.is_some(),
            p.virtual_bytes.is_some(),
            p.open_fds.is_some(),
            p.max_fds.is_some(),
            p.start_time_seconds.is_some(),
        ]
        .into_iter()
        .filter(|x| *x)
        .count();
        assert_eq!(count_series(&m.render()), 1 + 15 + 1 + 1 + 1 + process);
    }

    #[test]
    fn the_table_and_csv_have_a_row_per_sample() {
        let samples = steady(3);
        assert_eq!(table(&samples).lines().count(), 4);
        let csv = csv(&samples);
        assert_eq!(csv.lines().count(), 4);
        let columns = csv.lines().next().map_or(0, |l| l.split(',').count());
        assert!(csv.lines().all(|l| l.split(',').count() == columns));
    }

    #[test]
    fn the_churn_keeps_its_population_and_repeats_for_a_seed() {
        let run = |seed| {
            let mut churn = Churn::new(seed, 20, 5);
            for _ in 0..20 {
                churn.create();
            }
            let mut drawn = Vec::new();
            let mut now = Duration::ZERO;
            for _ in 0..3000 {
                now += Duration::from_secs(300);
                drawn.extend(churn.due(now));
                drawn.extend(churn.step(now));
                let lbs = churn.services.values().filter(|s| !s.cluster_ip).count();
                assert!((16..=24).contains(&lbs), "{lbs} LoadBalancer Services");
                assert!(churn.services.len() <= 24);
                assert!((4..=5).contains(&churn.nodes.len()));
                assert!(churn.nodes.values().filter(|stopped| !**stopped).count() >= 2);
            }
            drawn
        };
        let a = run(1);
        assert_eq!(a, run(1));
        assert_ne!(a, run(2));
        let kinds = |f: fn(&Action) -> bool| a.iter().filter(|x| f(x)).count();
        assert!(kinds(|x| matches!(x, Action::DeleteServer(_))) > 10);
        assert!(kinds(|x| matches!(x, Action::CrashCcm(_))) > 10);
        assert!(kinds(|x| matches!(x, Action::ClearCloudFaults)) > 10);
    }
}
