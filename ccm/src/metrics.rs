//! Metrics in the Prometheus text format, kept in a small registry of our own (a handful of
//! families, no dependency needed): API requests by endpoint, method and status; request
//! latency histogram; reconciles, errors and durations per controller; queue depth; leader.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Latency buckets in seconds (API calls and reconciles).
const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, v: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS.len()];
        }
        for (i, b) in BUCKETS.iter().enumerate() {
            if v <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// (endpoint, method, status) → count
    api_requests: BTreeMap<(String, String, String), u64>,
    /// endpoint → latency
    api_latency: BTreeMap<String, Histogram>,
    /// (controller, result) → count
    reconciles: BTreeMap<(String, String), u64>,
    reconcile_duration: BTreeMap<String, Histogram>,
    queue_depth: BTreeMap<String, i64>,
    /// (controller, kind "read"/"write") → API calls made by reconciles
    reconcile_api_calls: BTreeMap<(String, String), u64>,
    leader: bool,
    /// Nodes whose deletion a guard held in the last sweep that had any, by reason.
    node_deletions_held: BTreeMap<String, i64>,
    /// Nodes deleted because their servers were gone.
    node_deletions: u64,
    /// The last URL that answered as something else than the API, while the root is wrong.
    api_root_wrong: Option<String>,
}

/// The process's metrics. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// Escapes a label value (backslash, quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// One cloudscale API request. `endpoint` is a route template such as
    /// `/v1/servers/{uuid}` (never a concrete ID: label values must stay few); `status` is the
    /// HTTP status, or `error` when no answer came.
    pub fn api_request(&self, endpoint: &str, method: &str, status: &str, took: Duration) {
        let mut m = self.inner.lock();
        *m.api_requests
            .entry((endpoint.to_string(), method.to_string(), status.to_string()))
            .or_insert(0) += 1;
        m.api_latency
            .entry(endpoint.to_string())
            .or_default()
            .observe(took.as_secs_f64());
    }

    /// One reconcile of `controller` with `result` (`ok` or `error`).
    pub fn reconcile(&self, controller: &str, result: &str, took: Duration) {
        let mut m = self.inner.lock();
        *m.reconciles
            .entry((controller.to_string(), result.to_string()))
            .or_insert(0) += 1;
        m.reconcile_duration
            .entry(controller.to_string())
            .or_default()
            .observe(took.as_secs_f64());
    }

    /// API calls one reconcile made.
    pub fn reconcile_api_calls(&self, controller: &str, reads: u64, writes: u64) {
        let mut m = self.inner.lock();
        *m.reconcile_api_calls
            .entry((controller.to_string(), "read".into()))
            .or_insert(0) += reads;
        *m.reconcile_api_calls
            .entry((controller.to_string(), "write".into()))
            .or_insert(0) += writes;
    }

    /// Keys of `controller` due and waiting, as a reconcile starts.
    pub fn queue_depth(&self, controller: &str, depth: i64) {
        self.inner
            .lock()
            .queue_depth
            .insert(controller.to_string(), depth);
    }

    /// How many Nodes a deletion guard held for `reason` in the last sweep.
    pub fn node_deletions_held(&self, reason: &str, nodes: i64) {
        self.inner
            .lock()
            .node_deletions_held
            .insert(reason.to_string(), nodes);
    }

    /// A Node was deleted (its server gone).
    pub fn node_deleted(&self) {
        self.inner.lock().node_deletions += 1;
    }

    /// The API root is wrong (`Some(url)`: the full URL that did not answer as the API) or
    /// right again (`None`).
    pub fn set_api_root_wrong(&self, url: Option<&str>) {
        self.inner.lock().api_root_wrong = url.map(str::to_string);
    }

    pub fn set_leader(&self, leader: bool) {
        self.inner.lock().leader = leader;
    }

    pub fn is_leader(&self) -> bool {
        self.inner.lock().leader
    }

    /// Total API requests so far (for tests and benchmarks).
    pub fn api_request_total(&self) -> u64 {
        self.inner.lock().api_requests.values().sum()
    }

    /// The mean duration of `controller`'s reconciles so far (`None` before the first).
    pub fn mean_reconcile_seconds(&self, controller: &str) -> Option<f64> {
        let m = self.inner.lock();
        let h = m.reconcile_duration.get(controller)?;
        (h.count > 0).then(|| h.sum / h.count as f64)
    }

    /// Reconciles of `controller` so far, whatever their result (for tests and benchmarks).
    pub fn reconciles(&self, controller: &str) -> u64 {
        self.inner
            .lock()
            .reconciles
            .iter()
            .filter(|((c, _), _)| c == controller)
            .map(|(_, n)| n)
            .sum()
    }

    /// Requests so far per `(endpoint, method)`, all statuses.
    pub fn api_requests_by_endpoint(&self) -> BTreeMap<(String, String), u64> {
        let mut out = BTreeMap::new();
        for ((e, m, _), n) in &self.inner.lock().api_requests {
            *out.entry((e.clone(), m.clone())).or_insert(0) += n;
        }
        out
    }

    /// The exposition text for `/metrics`.
    pub fn render(&self) -> String {
        let m = self.inner.lock();
        let mut out = String::new();
        out.push_str("# HELP cloudscale_api_requests_total Requests to the cloudscale.ch API.\n");
        out.push_str("# TYPE cloudscale_api_requests_total counter\n");
        for ((e, meth, st), n) in &m.api_requests {
            let _ = writeln!(
                out,
                "cloudscale_api_requests_total{{endpoint=\"{}\",method=\"{}\",status=\"{}\"}} {n}",
                label(e),
                label(meth),
                label(st)
            );
        }
        histogram(
            &mut out,
            "cloudscale_api_request_duration_seconds",
            "Latency of cloudscale.ch API requests.",
            "endpoint",
            &m.api_latency,
        );
        out.push_str("# HELP ccm_reconcile_total Reconciles by controller and result.\n");
        out.push_str("# TYPE ccm_reconcile_total counter\n");
        for ((c, r), n) in &m.reconciles {
            let _ = writeln!(
                out,
                "ccm_reconcile_total{{controller=\"{}\",result=\"{}\"}} {n}",
                label(c),
                label(r)
            );
        }
        histogram(
            &mut out,
            "ccm_reconcile_duration_seconds",
            "Duration of reconciles.",
            "controller",
            &m.reconcile_duration,
        );
        out.push_str(
            "# HELP ccm_reconcile_api_calls_total cloudscale.ch API calls made by reconciles.\n",
        );
        out.push_str("# TYPE ccm_reconcile_api_calls_total counter\n");
        for ((c, k), n) in &m.reconcile_api_calls {
            let _ = writeln!(
                out,
                "ccm_reconcile_api_calls_total{{controller=\"{}\",kind=\"{}\"}} {n}",
                label(c),
                label(k)
            );
        }
        out.push_str("# HELP ccm_queue_depth Work items waiting per controller.\n");
        out.push_str("# TYPE ccm_queue_depth gauge\n");
        for (c, d) in &m.queue_depth {
            let _ = writeln!(out, "ccm_queue_depth{{controller=\"{}\"}} {d}", label(c));
        }
        out.push_str("# HELP ccm_node_deletions_total Nodes deleted because their server no longer exists.\n");
        out.push_str("# TYPE ccm_node_deletions_total counter\n");
        let _ = writeln!(out, "ccm_node_deletions_total {}", m.node_deletions);
        out.push_str("# HELP ccm_node_deletions_held Nodes whose server looks gone that a deletion guard kept in the last sweep, by reason.\n");
        out.push_str("# TYPE ccm_node_deletions_held gauge\n");
        for (r, n) in &m.node_deletions_held {
            let _ = writeln!(
                out,
                "ccm_node_deletions_held{{reason=\"{}\"}} {n}",
                label(r)
            );
        }
        out.push_str("# HELP cloudscale_api_root_wrong 1 while the API root (CLOUDSCALE_API_URL) does not answer as the cloudscale.ch API, labelled with the full URL that did not.\n");
        out.push_str("# TYPE cloudscale_api_root_wrong gauge\n");
        if let Some(url) = &m.api_root_wrong {
            let _ = writeln!(out, "cloudscale_api_root_wrong{{url=\"{}\"}} 1", label(url));
        }
        out.push_str("# HELP ccm_leader Whether this instance holds the leader lease.\n");
        out.push_str("# TYPE ccm_leader gauge\n");
        let _ = writeln!(out, "ccm_leader {}", u8::from(m.leader));
        out
    }
}

fn histogram(
    out: &mut String,
    name: &str,
    help: &str,
    label_name: &str,
    series: &BTreeMap<String, Histogram>,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} histogram");
    for (key, h) in series {
        let k = label(key);
        for (i, b) in BUCKETS.iter().enumerate() {
            let n = h.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{{label_name}=\"{k}\",le=\"{b}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{label_name}=\"{k}\",le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(out, "{name}_sum{{{label_name}=\"{k}\"}} {}", h.sum);
        let _ = writeln!(out, "{name}_count{{{label_name}=\"{k}\"}} {}", h.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        m.queue_depth("service", 4);
        m.set_leader(true);
        let text = m.render();
        assert!(text.contains("cloudscale_api_requests_total{endpoint=\"/v1/servers/{uuid}\",method=\"GET\",status=\"404\"} 1"));
        assert!(text.contains("cloudscale_api_request_duration_seconds_bucket{endpoint=\"/v1/servers/{uuid}\",le=\"0.01\"} 1"));
        assert!(text.contains(
            "cloudscale_api_request_duration_seconds_count{endpoint=\"/v1/servers/{uuid}\"} 2"
        ));
        assert!(text.contains("ccm_reconcile_total{controller=\"node\",result=\"ok\"} 1"));
        assert!(text.contains("ccm_queue_depth{controller=\"service\"} 4"));
        assert!(text.contains("ccm_leader 1"));
        assert_eq!(m.api_request_total(), 2);
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
