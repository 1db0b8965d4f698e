//! Metrics in the Prometheus text format, kept in a small registry of our own (no
//! dependency needed). The families, their labels and help are listed once, in
//! [`families`]; this module keeps their values and writes the exposition.

mod families;
mod kube_client;
mod process;
mod workqueue;

pub use families::{FAMILIES, Family, Kind, markdown};
pub use kube_client::{KubeRequests, KubeRequestsLayer};
pub use process::Process;
pub use workqueue::{QueueGauges, Workqueue};

use families as f;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The Lease name `leader_election_master_status` carries until [`Metrics::set_lease`]
/// names another (the default of `--leader-elect-resource-name`).
const DEFAULT_LEASE: &str = "cloud-controller-manager";

/// Observations of one histogram series.
#[derive(Debug, Default, Clone)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, buckets: &[f64], took: Duration) {
        let v = took.as_secs_f64();
        if self.counts.len() != buckets.len() {
            self.counts = vec![0; buckets.len()];
        }
        for (i, b) in buckets.iter().enumerate() {
            if v <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

type Series<T> = BTreeMap<Vec<String>, T>;

#[derive(Debug, Default)]
struct Inner {
    counters: BTreeMap<&'static str, Series<u64>>,
    gauges: BTreeMap<&'static str, Series<i64>>,
    histograms: BTreeMap<&'static str, Series<Histogram>>,
    /// Whether this instance leads, and the Lease's name.
    leader: bool,
    lease: Option<String>,
    /// The last URL that answered as something else than the API, while the root is wrong.
    api_root_wrong: Option<String>,
}

impl Inner {
    fn count(&mut self, family: &Family, labels: &[&str], n: u64) {
        *self
            .counters
            .entry(family.name)
            .or_default()
            .entry(labels.iter().map(|l| l.to_string()).collect())
            .or_insert(0) += n;
    }

    fn observe(&mut self, family: &Family, labels: &[&str], took: Duration) {
        self.histograms
            .entry(family.name)
            .or_default()
            .entry(labels.iter().map(|l| l.to_string()).collect())
            .or_default()
            .observe(family.buckets, took);
    }
}

/// A controller's queue as the registry knows it.
struct Queue {
    name: String,
    counts: Arc<Workqueue>,
    gauges: Weak<dyn QueueGauges>,
}

/// The process's metrics. Cheap to share behind an `Arc`.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
    queues: Mutex<Vec<Queue>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Escapes a label value (backslash, quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `{a="x",b="y"}` (empty for no labels); `extra` is appended (a bucket's `le`).
fn labels(names: &[&str], values: &[String], extra: Option<(&str, &str)>) -> String {
    let mut pairs: Vec<String> = names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}=\"{}\"", label(v)))
        .collect();
    if let Some((n, v)) = extra {
        pairs.push(format!("{n}=\"{v}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

/// The platform as Kubernetes names it (`linux/amd64`).
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{}/{arch}", std::env::consts::OS)
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// One cloudscale API request. `endpoint` is a route template such as
    /// `/v1/servers/{uuid}` (never a concrete ID: label values must stay few); `code` is the
    /// HTTP status, or `<error>` when no answer came.
    pub fn api_request(&self, endpoint: &str, method: &str, code: &str, took: Duration) {
        let mut m = self.inner.lock();
        m.count(&f::API_REQUESTS, &[endpoint, method, code], 1);
        m.observe(&f::API_DURATION, &[endpoint, method], took);
    }

    /// One cloudscale API request made for `controller` (`write`: not a GET).
    pub fn controller_call(&self, controller: &str, write: bool) {
        let kind = if write { "write" } else { "read" };
        self.inner
            .lock()
            .count(&f::CONTROLLER_API_CALLS, &[controller, kind], 1);
    }

    /// One Event published (or folded into a series) for an object.
    pub fn event(&self, warning: bool, reason: &str) {
        let kind = if warning { "Warning" } else { "Normal" };
        self.inner.lock().count(&f::EVENTS, &[kind, reason], 1);
    }

    /// One Kubernetes API request (see [`KubeRequestsLayer`]).
    pub fn kube_request(&self, method: &str, code: &str, host: &str, took: Duration) {
        let mut m = self.inner.lock();
        m.count(&f::REST_REQUESTS, &[code, method, host], 1);
        m.observe(&f::REST_DURATION, &[method, host], took);
    }

    /// One reconcile of `controller` with `result` (`ok` or `error`).
    pub fn reconcile(&self, controller: &str, result: &str, took: Duration) {
        let mut m = self.inner.lock();
        m.count(&f::RECONCILES, &[controller, result], 1);
        m.observe(&f::RECONCILE_DURATION, &[controller], took);
    }

    /// The counters of the work queue `name`, whose gauges `gauges` answers (registered
    /// once per queue; the series go when the queue is dropped).
    pub fn workqueue(&self, name: &str, gauges: Weak<dyn QueueGauges>) -> Arc<Workqueue> {
        let counts = Arc::new(Workqueue::default());
        let mut queues = self.queues.lock();
        queues.retain(|q| q.name != name && q.gauges.strong_count() > 0);
        queues.push(Queue {
            name: name.to_string(),
            counts: counts.clone(),
            gauges,
        });
        counts
    }

    /// How many Nodes a deletion guard held for `reason` in the last sweep.
    pub fn node_deletions_held(&self, reason: &str, nodes: i64) {
        self.inner
            .lock()
            .gauges
            .entry(f::NODE_DELETIONS_HELD.name)
            .or_default()
            .insert(vec![reason.to_string()], nodes);
    }

    /// A Node was deleted (its server gone).
    pub fn node_deleted(&self) {
        self.inner.lock().count(&f::NODE_DELETIONS, &[], 1);
    }

    /// The API root is wrong (`Some(url)`: the full URL that did not answer as the API) or
    /// right again (`None`).
    pub fn set_api_root_wrong(&self, url: Option<&str>) {
        self.inner.lock().api_root_wrong = url.map(str::to_string);
    }

    pub fn set_leader(&self, leader: bool) {
        self.inner.lock().leader = leader;
    }

    /// The name of the Lease leader election holds (`--leader-elect-resource-name`).
    pub fn set_lease(&self, name: &str) {
        self.inner.lock().lease = Some(name.to_string());
    }

    pub fn is_leader(&self) -> bool {
        self.inner.lock().leader
    }

    /// Total API requests so far (for tests and benchmarks).
    pub fn api_request_total(&self) -> u64 {
        self.api_requests_by_endpoint().values().sum()
    }

    /// The mean duration of `controller`'s reconciles so far (`None` before the first).
    pub fn mean_reconcile_seconds(&self, controller: &str) -> Option<f64> {
        let m = self.inner.lock();
        let h = m
            .histograms
            .get(f::RECONCILE_DURATION.name)?
            .get(&vec![controller.to_string()])?;
        (h.count > 0).then(|| h.sum / h.count as f64)
    }

    /// Reconciles of `controller` so far, whatever their result (for tests and benchmarks).
    pub fn reconciles(&self, controller: &str) -> u64 {
        self.counted(&f::RECONCILES, |l| {
            l.first().filter(|c| *c == controller).cloned()
        })
        .values()
        .sum()
    }

    /// Requests so far per `(endpoint, method)`, all statuses.
    pub fn api_requests_by_endpoint(&self) -> BTreeMap<(String, String), u64> {
        let mut out = BTreeMap::new();
        for ((e, m, _), n) in self.api_requests() {
            *out.entry((e, m)).or_insert(0) += n;
        }
        out
    }

    /// Requests so far per `(endpoint, method, code)` (`cloudscale_api_requests_total`).
    pub fn api_requests(&self) -> BTreeMap<(String, String, String), u64> {
        self.counted(&f::API_REQUESTS, |l| match l {
            [e, m, c] => Some((e.clone(), m.clone(), c.clone())),
            _ => None,
        })
    }

    /// Requests so far per `(controller, kind)` (`cloudscale_ccm_api_calls_total`).
    pub fn api_calls_by_controller(&self) -> BTreeMap<(String, String), u64> {
        self.counted(&f::CONTROLLER_API_CALLS, |l| match l {
            [c, k] => Some((c.clone(), k.clone())),
            _ => None,
        })
    }

    /// The series of the counter `family`, each keyed by what `key` makes of its labels.
    fn counted<K: Ord>(
        &self,
        family: &Family,
        key: impl Fn(&[String]) -> Option<K>,
    ) -> BTreeMap<K, u64> {
        let m = self.inner.lock();
        let series = m.counters.get(family.name).into_iter().flatten();
        series.filter_map(|(l, n)| Some((key(l)?, *n))).collect()
    }

    /// The exposition text for `/metrics`.
    pub fn render(&self) -> String {
        // Read before the registry is locked: every request the CCM makes records into it.
        let process = Process::now();
        let queues = self.queue_series();
        let m = self.inner.lock();
        let now = read_now(&m, &process);
        let mut out = String::new();
        for family in FAMILIES {
            let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
            let _ = writeln!(out, "# TYPE {} {}", family.name, family.kind.as_str());
            if READ_NOW.contains(&family.name) {
                for (_, values, v) in now.iter().filter(|(n, _, _)| *n == family.name) {
                    write_sample(&mut out, family, values, v);
                }
            } else {
                kept_series(&m, &queues, family, &mut out);
            }
        }
        out
    }

    /// The work queues' series, read now.
    fn queue_series(&self) -> QueueSeries {
        let mut s = QueueSeries::default();
        for q in self.queues.lock().iter() {
            let Some(gauges) = q.gauges.upgrade() else {
                continue;
            };
            let name = vec![q.name.clone()];
            let running = gauges.running_for();
            let gauge = |s: &mut QueueSeries, fam: &Family, v: f64| {
                s.gauges
                    .entry(fam.name)
                    .or_default()
                    .insert(name.clone(), v);
            };
            gauge(&mut s, &f::WORKQUEUE_DEPTH, gauges.depth() as f64);
            let unfinished = running.iter().fold(0.0, |s, d| s + d.as_secs_f64());
            gauge(&mut s, &f::WORKQUEUE_UNFINISHED, unfinished);
            let longest = running.iter().max().map_or(0.0, Duration::as_secs_f64);
            gauge(&mut s, &f::WORKQUEUE_LONGEST, longest);
            let c = q.counts.inner.lock();
            let mut counter = |fam: &Family, n: u64| {
                s.counters
                    .entry(fam.name)
                    .or_default()
                    .insert(name.clone(), n);
            };
            counter(&f::WORKQUEUE_ADDS, c.adds);
            counter(&f::WORKQUEUE_RETRIES, c.retries);
            for (fam, h) in [
                (&f::WORKQUEUE_QUEUE_DURATION, &c.queued),
                (&f::WORKQUEUE_WORK_DURATION, &c.work),
            ] {
                s.histograms
                    .entry(fam.name)
                    .or_default()
                    .insert(name.clone(), h.clone());
            }
        }
        s
    }
}

/// The families whose values are read as `/metrics` is (see [`read_now`]).
const READ_NOW: &[&str] = &[
    f::API_ROOT_WRONG.name,
    f::LEADER.name,
    f::BUILD_INFO.name,
    f::PROCESS_CPU.name,
    f::PROCESS_RESIDENT.name,
    f::PROCESS_VIRTUAL.name,
    f::PROCESS_OPEN_FDS.name,
    f::PROCESS_MAX_FDS.name,
    f::PROCESS_START.name,
];

/// The series of [`READ_NOW`]'s families: (family, label values, value).
fn read_now(m: &Inner, p: &Process) -> Vec<(&'static str, Vec<String>, String)> {
    let lease = m.lease.clone().unwrap_or_else(|| DEFAULT_LEASE.to_string());
    let version = env!("CARGO_PKG_VERSION").to_string();
    let mut out = vec![
        (f::LEADER.name, vec![lease], u8::from(m.leader).to_string()),
        (
            f::BUILD_INFO.name,
            vec![version, platform()],
            "1".to_string(),
        ),
    ];
    if let Some(url) = &m.api_root_wrong {
        out.push((f::API_ROOT_WRONG.name, vec![url.clone()], "1".to_string()));
    }
    let text = |v: Option<u64>| v.map(|v| v.to_string());
    for (family, value) in [
        (&f::PROCESS_CPU, p.cpu_seconds.map(|v| v.to_string())),
        (&f::PROCESS_RESIDENT, text(p.resident_bytes)),
        (&f::PROCESS_VIRTUAL, text(p.virtual_bytes)),
        (&f::PROCESS_OPEN_FDS, text(p.open_fds)),
        (&f::PROCESS_MAX_FDS, text(p.max_fds)),
        (
            &f::PROCESS_START,
            p.start_time_seconds.map(|v| v.to_string()),
        ),
    ] {
        if let Some(v) = value {
            out.push((family.name, Vec::new(), v));
        }
    }
    out
}

#[derive(Default)]
struct QueueSeries {
    counters: BTreeMap<&'static str, Series<u64>>,
    gauges: BTreeMap<&'static str, Series<f64>>,
    histograms: BTreeMap<&'static str, Series<Histogram>>,
}

/// One sample line of `family`.
fn write_sample(out: &mut String, family: &Family, values: &[String], v: &dyn std::fmt::Display) {
    let l = labels(family.labels, values, None);
    let _ = writeln!(out, "{}{l} {v}", family.name);
}

/// The series of `family` kept in the registry and the queues'.
fn kept_series(m: &Inner, queues: &QueueSeries, family: &Family, out: &mut String) {
    match family.kind {
        Kind::Counter => {
            let series = m.counters.get(family.name);
            if family.labels.is_empty() && series.is_none_or(|s| s.is_empty()) {
                write_sample(out, family, &[], &0);
            }
            let of_queues = queues.counters.get(family.name).into_iter().flatten();
            for (values, n) in series.into_iter().flatten().chain(of_queues) {
                write_sample(out, family, values, n);
            }
        }
        Kind::Gauge => {
            for (values, n) in m.gauges.get(family.name).into_iter().flatten() {
                write_sample(out, family, values, n);
            }
            for (values, v) in queues.gauges.get(family.name).into_iter().flatten() {
                write_sample(out, family, values, v);
            }
        }
        Kind::Histogram => {
            let own = m.histograms.get(family.name).into_iter().flatten();
            let of_queues = queues.histograms.get(family.name).into_iter().flatten();
            for (values, h) in own.chain(of_queues) {
                write_histogram(out, family, values, h);
            }
        }
    }
}

fn write_histogram(out: &mut String, family: &Family, values: &[String], h: &Histogram) {
    let name = family.name;
    for (i, b) in family.buckets.iter().enumerate() {
        let n = h.counts.get(i).copied().unwrap_or(0);
        let le = b.to_string();
        let l = labels(family.labels, values, Some(("le", &le)));
        let _ = writeln!(out, "{name}_bucket{l} {n}");
    }
    let l = labels(family.labels, values, Some(("le", "+Inf")));
    let _ = writeln!(out, "{name}_bucket{l} {}", h.count);
    let l = labels(family.labels, values, None);
    let _ = writeln!(out, "{name}_sum{l} {}", h.sum);
    let _ = writeln!(out, "{name}_count{l} {}", h.count);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue whose gauges a test sets.
    struct Fixed(usize, Vec<Duration>);
    impl QueueGauges for Fixed {
        fn depth(&self) -> usize {
            self.0
        }
        fn running_for(&self) -> Vec<Duration> {
            self.1.clone()
        }
    }

    #[test]
    fn exposition_has_counters_histograms_and_gauges() {
        let m = Metrics::new();
        m.api_request(
            "/v1/servers/{uuid}",
            "GET",
            "200",
            Duration::from_millis(20),
        );
        m.api_request("/v1/servers/{uuid}", "GET", "404", Duration::from_millis(7));
        m.reconcile("node", "ok", Duration::from_millis(3));
        m.set_leader(true);
        let text = m.render();
        assert!(text.contains("cloudscale_api_requests_total{endpoint=\"/v1/servers/{uuid}\",method=\"GET\",code=\"404\"} 1"));
        assert!(text.contains("cloudscale_api_request_duration_seconds_bucket{endpoint=\"/v1/servers/{uuid}\",method=\"GET\",le=\"0.025\"} 2"));
        assert!(text.contains(
            "cloudscale_api_request_duration_seconds_count{endpoint=\"/v1/servers/{uuid}\",method=\"GET\"} 2"
        ));
        assert!(
            text.contains("cloudscale_ccm_reconcile_total{controller=\"node\",result=\"ok\"} 1")
        );
        assert!(
            text.contains("leader_election_master_status{name=\"cloud-controller-manager\"} 1")
        );
        assert!(text.contains("cloudscale_ccm_node_deletions_total 0"));
        assert!(text.contains(&format!(
            "cloudscale_ccm_build_info{{version=\"{}\",platform=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            platform()
        )));
        assert_eq!(m.api_request_total(), 2);
    }

    #[test]
    fn every_family_has_help_and_type_once_and_only_its_own_series() {
        let m = Metrics::new();
        m.api_request("/v1/servers", "GET", "<error>", Duration::from_millis(1));
        m.node_deleted();
        let text = m.render();
        for family in FAMILIES {
            let help = format!("# HELP {} ", family.name);
            let kind = format!("# TYPE {} {}\n", family.name, family.kind.as_str());
            assert_eq!(text.matches(&help).count(), 1, "{}", family.name);
            assert_eq!(text.matches(&kind).count(), 1, "{}", family.name);
        }
        // Each sample line belongs to a listed family (histograms by their suffixes).
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|b| {
                    FAMILIES
                        .iter()
                        .any(|f| f.name == *b && f.kind == Kind::Histogram)
                })
                .unwrap_or(name);
            assert!(FAMILIES.iter().any(|f| f.name == base), "{line}");
        }
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("cloudscale_ccm_node_deletions_total"))
                .collect::<Vec<_>>(),
            ["cloudscale_ccm_node_deletions_total 1"]
        );
    }

    #[test]
    fn a_work_queue_reports_its_counts_and_gauges_while_it_lives() {
        let m = Metrics::new();
        let gauges: Arc<dyn QueueGauges> = Arc::new(Fixed(
            3,
            vec![Duration::from_secs(2), Duration::from_secs(5)],
        ));
        let q = m.workqueue("service", Arc::downgrade(&gauges));
        q.added();
        q.added();
        q.retried();
        q.taken(Duration::from_millis(2));
        q.done(Duration::from_secs(4));
        let text = m.render();
        for line in [
            "workqueue_depth{name=\"service\"} 3",
            "workqueue_adds_total{name=\"service\"} 2",
            "workqueue_retries_total{name=\"service\"} 1",
            "workqueue_unfinished_work_seconds{name=\"service\"} 7",
            "workqueue_longest_running_processor_seconds{name=\"service\"} 5",
            "workqueue_queue_duration_seconds_bucket{name=\"service\",le=\"0.01\"} 1",
            "workqueue_queue_duration_seconds_bucket{name=\"service\",le=\"0.001\"} 0",
            "workqueue_work_duration_seconds_bucket{name=\"service\",le=\"10\"} 1",
            "workqueue_work_duration_seconds_count{name=\"service\"} 1",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        drop(gauges);
        assert!(!m.render().contains("workqueue_depth{"));
    }

    #[test]
    fn controller_calls_are_kept_apart_by_kind() {
        let m = Metrics::new();
        m.controller_call("service", false);
        m.controller_call("service", false);
        m.controller_call("service", true);
        m.controller_call("node", false);
        let calls = m.api_calls_by_controller();
        assert_eq!(calls.get(&("service".into(), "read".into())), Some(&2));
        assert_eq!(calls.get(&("service".into(), "write".into())), Some(&1));
        assert_eq!(calls.get(&("node".into(), "read".into())), Some(&1));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let m = Metrics::new();
        m.set_lease("x\"y");
        assert!(
            m.render()
                .contains("leader_election_master_status{name=\"x\\\"y\"} 0")
        );
    }
}
