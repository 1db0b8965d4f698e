//! Every metric family the CCM exports: name, type, labels and help, in the order
//! `/metrics` shows them. The exposition writes its `# HELP` and `# TYPE` lines from here, and
//! deploy/README.md's metrics table is generated from here ([`markdown`]; a test compares).
//!
//! Names follow the families operators know from kube-controller-manager and the upstream
//! cloud-controller-manager where one exists (`process_*`, `workqueue_*`, `rest_client_*`,
//! `leader_election_master_status`); the CCM's own carry the `cloudscale_` prefix so that they
//! never collide with another cloud's CCM scraped by the same Prometheus.

/// A family's type, as `# TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One metric family.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub labels: &'static [&'static str],
    pub help: &'static str,
    /// Upper bounds of a histogram's buckets (empty for the other kinds).
    pub buckets: &'static [f64],
}

/// Request latencies: the cloudscale.ch API's and the Kubernetes API's (client-go's
/// `rest_client_request_duration_seconds` buckets).
const LATENCY: &[f64] = &[
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];
/// Reconcile durations: a Service reconcile that creates a load balancer takes seconds.
const RECONCILE: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// Work queue latencies (component-base's workqueue buckets: 10 ns to 1,000 s by tens).
const QUEUE: &[f64] = &[
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
];

const fn family(
    name: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    help: &'static str,
) -> Family {
    Family {
        name,
        kind,
        labels,
        help,
        buckets: &[],
    }
}

const fn histogram(
    name: &'static str,
    labels: &'static [&'static str],
    buckets: &'static [f64],
    help: &'static str,
) -> Family {
    Family {
        name,
        kind: Kind::Histogram,
        labels,
        help,
        buckets,
    }
}

pub const API_REQUESTS: Family = family(
    "cloudscale_api_requests_total",
    Kind::Counter,
    &["endpoint", "method", "code"],
    "Requests to the cloudscale.ch API, each retry counted; endpoint is a route template such as /v1/load-balancers/{uuid}, code the HTTP status or <error> when no answer came.",
);
pub const API_DURATION: Family = histogram(
    "cloudscale_api_request_duration_seconds",
    &["endpoint", "method"],
    LATENCY,
    "Latency of cloudscale.ch API requests.",
);
pub const API_ROOT_WRONG: Family = family(
    "cloudscale_api_root_wrong",
    Kind::Gauge,
    &["url"],
    "1 while the API root (CLOUDSCALE_API_URL) does not answer as the cloudscale.ch API, labelled with the full URL that did not; no series while it does.",
);
pub const RECONCILES: Family = family(
    "cloudscale_ccm_reconcile_total",
    Kind::Counter,
    &["controller", "result"],
    "Reconciles by controller (node, node-lifecycle, service) and result (ok, error).",
);
pub const RECONCILE_DURATION: Family = histogram(
    "cloudscale_ccm_reconcile_duration_seconds",
    &["controller"],
    RECONCILE,
    "Duration of reconciles (a Service waiting for its load balancer holds no worker: long ones mean a slow or rate-limited API).",
);
pub const CONTROLLER_API_CALLS: Family = family(
    "cloudscale_ccm_api_calls_total",
    Kind::Counter,
    &["controller", "kind"],
    "cloudscale.ch API requests by the controller that made them and kind (read, write), shared reads and polls included; they add up to cloudscale_api_requests_total but for the start-up check.",
);
pub const EVENTS: Family = family(
    "cloudscale_ccm_events_total",
    Kind::Counter,
    &["type", "reason"],
    "Events recorded by type (Normal, Warning) and reason (ChangeHeld, FloatingIPConflict, NodeDeletionHeld, SyncLoadBalancerFailed, ...).",
);
pub const NODE_DELETIONS: Family = family(
    "cloudscale_ccm_node_deletions_total",
    Kind::Counter,
    &[],
    "Nodes deleted because their server no longer exists.",
);
pub const NODE_DELETIONS_HELD: Family = family(
    "cloudscale_ccm_node_deletions_held",
    Kind::Gauge,
    &["reason"],
    "Nodes whose server looks gone that a deletion guard kept in the last look, by reason (no-server-list, foreign-account, threshold, disabled).",
);
pub const WORKQUEUE_DEPTH: Family = family(
    "workqueue_depth",
    Kind::Gauge,
    &["name"],
    "Keys due and waiting for a worker (keys scheduled for a later resync do not count).",
);
pub const WORKQUEUE_ADDS: Family = family(
    "workqueue_adds_total",
    Kind::Counter,
    &["name"],
    "Keys put on the work queue (a key already waiting is not added again).",
);
pub const WORKQUEUE_QUEUE_DURATION: Family = histogram(
    "workqueue_queue_duration_seconds",
    &["name"],
    QUEUE,
    "How long a key waited, from the time it was due until a worker took it.",
);
pub const WORKQUEUE_WORK_DURATION: Family = histogram(
    "workqueue_work_duration_seconds",
    &["name"],
    QUEUE,
    "How long a worker took over a key.",
);
pub const WORKQUEUE_RETRIES: Family = family(
    "workqueue_retries_total",
    Kind::Counter,
    &["name"],
    "Keys scheduled again after a failed reconcile (with backoff).",
);
pub const WORKQUEUE_UNFINISHED: Family = family(
    "workqueue_unfinished_work_seconds",
    Kind::Gauge,
    &["name"],
    "Seconds of work in progress: the sum of how long each running reconcile has run.",
);
pub const WORKQUEUE_LONGEST: Family = family(
    "workqueue_longest_running_processor_seconds",
    Kind::Gauge,
    &["name"],
    "How long the longest running reconcile has run.",
);
pub const REST_REQUESTS: Family = family(
    "rest_client_requests_total",
    Kind::Counter,
    &["code", "method", "host"],
    "Requests to the Kubernetes API by status code (<error> when no answer came), method and host.",
);
pub const REST_DURATION: Family = histogram(
    "rest_client_request_duration_seconds",
    &["verb", "host"],
    LATENCY,
    "Latency of Kubernetes API requests until the response headers (a watch: until it opened).",
);
pub const LEADER: Family = family(
    "leader_election_master_status",
    Kind::Gauge,
    &["name"],
    "1 while this instance holds the leader Lease (named by name) and runs the controllers; 1 also without leader election.",
);
pub const BUILD_INFO: Family = family(
    "cloudscale_ccm_build_info",
    Kind::Gauge,
    &["version", "platform"],
    "Always 1; the CCM's version and the platform it was built for (os/arch).",
);
pub const PROCESS_CPU: Family = family(
    "process_cpu_seconds_total",
    Kind::Counter,
    &[],
    "User and system CPU time spent, in seconds.",
);
pub const PROCESS_RESIDENT: Family = family(
    "process_resident_memory_bytes",
    Kind::Gauge,
    &[],
    "Resident memory size in bytes.",
);
pub const PROCESS_VIRTUAL: Family = family(
    "process_virtual_memory_bytes",
    Kind::Gauge,
    &[],
    "Virtual memory size in bytes.",
);
pub const PROCESS_OPEN_FDS: Family = family(
    "process_open_fds",
    Kind::Gauge,
    &[],
    "Open file descriptors.",
);
pub const PROCESS_MAX_FDS: Family = family(
    "process_max_fds",
    Kind::Gauge,
    &[],
    "The limit on open file descriptors.",
);
pub const PROCESS_START: Family = family(
    "process_start_time_seconds",
    Kind::Gauge,
    &[],
    "Start time of the process since the Unix epoch, in seconds.",
);

/// Every family, in the order of the exposition.
pub const FAMILIES: &[Family] = &[
    API_REQUESTS,
    API_DURATION,
    API_ROOT_WRONG,
    RECONCILES,
    RECONCILE_DURATION,
    CONTROLLER_API_CALLS,
    EVENTS,
    NODE_DELETIONS,
    NODE_DELETIONS_HELD,
    WORKQUEUE_DEPTH,
    WORKQUEUE_ADDS,
    WORKQUEUE_QUEUE_DURATION,
    WORKQUEUE_WORK_DURATION,
    WORKQUEUE_RETRIES,
    WORKQUEUE_UNFINISHED,
    WORKQUEUE_LONGEST,
    REST_REQUESTS,
    REST_DURATION,
    LEADER,
    BUILD_INFO,
    PROCESS_CPU,
    PROCESS_RESIDENT,
    PROCESS_VIRTUAL,
    PROCESS_OPEN_FDS,
    PROCESS_MAX_FDS,
    PROCESS_START,
];

/// The metrics table of deploy/README.md.
pub fn markdown() -> String {
    let mut out = String::from("| metric | type | labels | what it shows |\n|---|---|---|---|\n");
    for f in FAMILIES {
        let labels = if f.labels.is_empty() {
            "-".to_string()
        } else {
            f.labels
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {} | {labels} | {} |\n",
            f.name,
            f.kind.as_str(),
            f.help
                .replace('|', "\\|")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_follow_the_conventions() {
        let mut names: Vec<_> = FAMILIES.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FAMILIES.len(), "a family listed twice");
        for f in FAMILIES {
            assert!(
                f.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                f.name
            );
            // Prometheus naming: counters end in _total, histograms of time in _seconds.
            assert_eq!(
                f.kind == Kind::Counter,
                f.name.ends_with("_total"),
                "{}",
                f.name
            );
            if f.kind == Kind::Histogram {
                assert!(f.name.ends_with("_seconds"), "{}", f.name);
                assert!(f.buckets.windows(2).all(|w| w[0] < w[1]), "{}", f.name);
            }
            assert!(!f.help.contains('\n'), "{}", f.name);
        }
    }

    #[test]
    fn the_table_has_a_row_per_family() {
        let table = markdown();
        assert_eq!(table.lines().count(), FAMILIES.len() + 2);
        assert!(table.contains("| `workqueue_depth` | gauge | `name` |"));
    }
}
