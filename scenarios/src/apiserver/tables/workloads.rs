//! The DaemonSet, Job, CronJob and ReplicationController printers of
//! `pkg/printers/internalversion` and kube-aggregator's APIService table: the columns
//! `kubectl get` shows from a real server, with the template's containers, images and the
//! selector in `-o wide`.

use super::{Col, format_labels, human_duration, s, since};
use crate::apiserver::apps::selector_string;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

pub(super) const CONTAINERS: Col = (
    "Containers",
    "string",
    1,
    "Names of each container in the template.",
);
pub(super) const IMAGES: Col = (
    "Images",
    "string",
    1,
    "Images referenced by each container in the template.",
);
const JOB_SELECTOR: Col = (
    "Selector",
    "string",
    1,
    "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
);

/// The columns of `kind` (`name` and `age` go where the printers put them).
pub(super) fn columns(kind: &str, name: Col, age: Col) -> Vec<Col> {
    match kind {
        "DaemonSet" => daemon_set_columns(name, age),
        "Job" => job_columns(name, age),
        "CronJob" => cron_job_columns(name, age),
        "ReplicationController" => replication_controller_columns(name, age),
        _ => api_service_columns(name, age),
    }
}

fn daemon_set_columns(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Desired",
            "integer",
            0,
            "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        ),
        (
            "Current",
            "integer",
            0,
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        ),
        (
            "Ready",
            "integer",
            0,
            "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
        ),
        (
            "Up-to-date",
            "integer",
            0,
            "The total number of nodes that are running updated daemon pod",
        ),
        (
            "Available",
            "integer",
            0,
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
        ),
        (
            "Node Selector",
            "string",
            0,
            "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
        ),
        age,
        CONTAINERS,
        IMAGES,
        (
            "Selector",
            "string",
            1,
            "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ]
}

fn job_columns(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        ("Status", "string", 0, "Status of the job."),
        (
            "Completions",
            "string",
            0,
            "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
        ),
        (
            "Duration",
            "string",
            0,
            "Time required to complete the job.",
        ),
        age,
        CONTAINERS,
        IMAGES,
        JOB_SELECTOR,
    ]
}

fn cron_job_columns(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Schedule",
            "string",
            0,
            "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
        ),
        (
            "Timezone",
            "string",
            0,
            "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
        ),
        (
            "Suspend",
            "boolean",
            0,
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
        ),
        (
            "Active",
            "integer",
            0,
            "A list of pointers to currently running jobs.",
        ),
        (
            "Last Schedule",
            "string",
            0,
            "Information when was the last time the job was successfully scheduled.",
        ),
        age,
        CONTAINERS,
        IMAGES,
        JOB_SELECTOR,
    ]
}

fn replication_controller_columns(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Desired",
            "integer",
            0,
            "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        ),
        (
            "Current",
            "integer",
            0,
            "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        ),
        (
            "Ready",
            "integer",
            0,
            "The number of ready replicas for this replication controller.",
        ),
        age,
        CONTAINERS,
        IMAGES,
        (
            "Selector",
            "string",
            1,
            "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ]
}

fn api_service_columns(name: Col, age: Col) -> Vec<Col> {
    vec![
        name,
        (
            "Service",
            "string",
            0,
            "The reference to the service that hosts this API endpoint.",
        ),
        (
            "Available",
            "string",
            0,
            "Whether this service is available.",
        ),
        age,
    ]
}

pub(super) fn int(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// `layoutContainerCells`: the names and images of a template's containers.
pub(super) fn containers(template: Option<&Value>) -> [Value; 2] {
    let containers = template
        .and_then(|t| t.pointer("/spec/containers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| s(c, field))
            .collect::<Vec<_>>()
            .join(",")
    };
    [json!(join("/name")), json!(join("/image"))]
}

/// `metav1.FormatLabelSelector`: `<none>` for an absent or empty selector.
pub(super) fn label_selector(selector: Option<&Value>) -> Value {
    json!(
        selector
            .and_then(selector_string)
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "<none>".into())
    )
}

/// The cells after `Name`; `Value::Null` where the age goes.
pub(super) fn cells(kind: &str, o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut out = match kind {
        "DaemonSet" => vec![
            json!(int(o, "/status/desiredNumberScheduled")),
            json!(int(o, "/status/currentNumberScheduled")),
            json!(int(o, "/status/numberReady")),
            json!(int(o, "/status/updatedNumberScheduled")),
            json!(int(o, "/status/numberAvailable")),
            json!(format_labels(o.pointer("/spec/template/spec/nodeSelector"))),
            Value::Null,
        ],
        "Job" => vec![
            json!(job_status(o)),
            json!(job_completions(o)),
            json!(job_duration(o, now)),
            Value::Null,
        ],
        "CronJob" => {
            let last = match s(o, "/status/lastScheduleTime") {
                "" => "<none>".to_string(),
                t => since(t, now),
            };
            let suspend = match o.pointer("/spec/suspend").and_then(Value::as_bool) {
                None => "<unset>",
                Some(true) => "True",
                Some(false) => "False",
            };
            vec![
                json!(s(o, "/spec/schedule")),
                json!(super::or_none(s(o, "/spec/timeZone"))),
                json!(suspend),
                json!(super::arr(o, "/status/active").len()),
                json!(last),
                Value::Null,
            ]
        }
        "ReplicationController" => vec![
            json!(int(o, "/spec/replicas")),
            json!(int(o, "/status/replicas")),
            json!(int(o, "/status/readyReplicas")),
            Value::Null,
        ],
        _ => return api_service_cells(o),
    };
    let (template, selector) = match kind {
        "CronJob" => (
            o.pointer("/spec/jobTemplate/spec/template"),
            label_selector(o.pointer("/spec/jobTemplate/spec/selector")),
        ),
        "ReplicationController" => (
            o.pointer("/spec/template"),
            json!(format_labels(o.pointer("/spec/selector"))),
        ),
        _ => (
            o.pointer("/spec/template"),
            label_selector(o.pointer("/spec/selector")),
        ),
    };
    out.extend(containers(template));
    out.push(selector);
    out
}

fn has_condition(o: &Value, kind: &str) -> bool {
    super::arr(o, "/status/conditions")
        .iter()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// `printJob`'s status: the first of these that holds.
fn job_status(o: &Value) -> &'static str {
    if has_condition(o, "Complete") {
        "Complete"
    } else if has_condition(o, "Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has_condition(o, "Suspended") {
        "Suspended"
    } else if has_condition(o, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(o, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

fn job_completions(o: &Value) -> String {
    let succeeded = int(o, "/status/succeeded");
    match (
        o.pointer("/spec/completions").and_then(Value::as_i64),
        o.pointer("/spec/parallelism").and_then(Value::as_i64),
    ) {
        (Some(c), _) => format!("{succeeded}/{c}"),
        (None, Some(p)) if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    }
}

fn job_duration(o: &Value, now: DateTime<Utc>) -> String {
    let parse = |p: &str| {
        DateTime::parse_from_rfc3339(s(o, p))
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    match (parse("/status/startTime"), parse("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.signed_duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.signed_duration_since(start)),
    }
}

fn api_service_cells(o: &Value) -> Vec<Value> {
    let service = match o.pointer("/spec/service").filter(|v| v.is_object()) {
        None => "Local".to_string(),
        Some(svc) => format!("{}/{}", s(svc, "/namespace"), s(svc, "/name")),
    };
    let available = super::arr(o, "/status/conditions")
        .iter()
        .find(|c| c["type"] == "Available")
        .map_or_else(
            || "Unknown".to_string(),
            |c| match s(c, "/status") {
                "True" => "True".to_string(),
                other => format!("{other} ({})", s(c, "/reason")),
            },
        );
    vec![json!(service), json!(available), Value::Null]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("a timestamp")
    }

    #[test]
    fn daemon_set_row() {
        let ds = json!({"spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                "containers": [{"name": "agent", "image": "agent:1"}]}}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}});
        assert_eq!(
            cells("DaemonSet", &ds, now()),
            vec![
                json!(3),
                json!(3),
                json!(2),
                json!(3),
                json!(2),
                json!("kubernetes.io/os=linux"),
                Value::Null,
                json!("agent"),
                json!("agent:1"),
                json!("app=agent")
            ]
        );
    }

    #[test]
    fn job_rows_follow_print_job() {
        let running = json!({"spec": {"completions": 3, "parallelism": 1,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
            "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}},
            "status": {"succeeded": 1, "startTime": "2026-01-01T00:58:00Z"}});
        assert_eq!(
            cells("Job", &running, now()),
            vec![
                json!("Running"),
                json!("1/3"),
                json!("2m"),
                Value::Null,
                json!("pi"),
                json!("perl"),
                json!("batch.kubernetes.io/controller-uid=u")
            ]
        );
        let done = json!({"spec": {"parallelism": 2},
            "status": {"succeeded": 2, "startTime": "2026-01-01T00:00:00Z",
                "completionTime": "2026-01-01T00:00:42Z",
                "conditions": [{"type": "Complete", "status": "True"}]}});
        let row = cells("Job", &done, now());
        assert_eq!(
            row[..3],
            [json!("Complete"), json!("2/1 of 2"), json!("42s")]
        );
        let suspended = json!({"spec": {"completions": 1},
            "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        let row = cells("Job", &suspended, now());
        assert_eq!(row[..3], [json!("Suspended"), json!("0/1"), json!("")]);
    }

    #[test]
    fn cron_job_rows() {
        let cj = json!({"spec": {"schedule": "*/5 * * * *", "suspend": false,
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [
                {"name": "tick", "image": "busybox"}]}}}}},
            "status": {"active": [{"name": "tick-1"}], "lastScheduleTime": "2026-01-01T00:55:00Z"}});
        assert_eq!(
            cells("CronJob", &cj, now()),
            vec![
                json!("*/5 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("5m"),
                Value::Null,
                json!("tick"),
                json!("busybox"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn replication_controller_and_api_service_rows() {
        let rc = json!({"spec": {"replicas": 2, "selector": {"app": "web"}},
            "status": {"replicas": 1, "readyReplicas": 1}});
        assert_eq!(
            cells("ReplicationController", &rc, now()),
            vec![
                json!(2),
                json!(1),
                json!(1),
                Value::Null,
                json!(""),
                json!(""),
                json!("app=web")
            ]
        );
        let local = json!({"spec": {"service": null},
            "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(
            cells("APIService", &local, now()),
            vec![json!("Local"), json!("True"), Value::Null]
        );
        let missing = json!({"spec": {"service": {"namespace": "kube-system", "name": "metrics"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound"}]}});
        assert_eq!(
            cells("APIService", &missing, now()),
            vec![
                json!("kube-system/metrics"),
                json!("False (ServiceNotFound)"),
                Value::Null
            ]
        );
    }
}
