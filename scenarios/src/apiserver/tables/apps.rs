//! The Deployment and ReplicaSet printers of `pkg/printers/internalversion`: `READY`,
//! `UP-TO-DATE`, `AVAILABLE` (Deployments), `DESIRED`, `CURRENT`, `READY` (ReplicaSets), and
//! with `-o wide` the template's containers, images and the selector.

use super::Col;
use super::workloads::{CONTAINERS, IMAGES, containers, int, label_selector};
use serde_json::{Value, json};

const SELECTOR: Col = (
    "Selector",
    "string",
    1,
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
);

/// The columns after `Name` and before and after `Age` (`age` goes where it is).
pub(super) fn columns(kind: &str, name: Col, age: Col) -> Vec<Col> {
    match kind {
        "Deployment" => vec![
            name,
            ("Ready", "string", 0, "Number of the pod with ready state"),
            (
                "Up-to-date",
                "string",
                0,
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            (
                "Available",
                "string",
                0,
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            age,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        _ => vec![
            name,
            (
                "Desired",
                "integer",
                0,
                "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1.",
            ),
            (
                "Current",
                "integer",
                0,
                "Replicas is the most recently observed number of replicas.",
            ),
            (
                "Ready",
                "integer",
                0,
                "readyReplicas is the number of pods targeted by this ReplicaSet with a Ready Condition.",
            ),
            age,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
    }
}

/// The cells after `Name`; `Value::Null` where the age goes.
pub(super) fn cells(kind: &str, o: &Value) -> Vec<Value> {
    let desired = int(o, "/spec/replicas");
    let mut out = match kind {
        "Deployment" => vec![
            json!(format!("{}/{desired}", int(o, "/status/readyReplicas"))),
            json!(int(o, "/status/updatedReplicas")),
            json!(int(o, "/status/availableReplicas")),
        ],
        _ => vec![
            json!(desired),
            json!(int(o, "/status/replicas")),
            json!(int(o, "/status/readyReplicas")),
        ],
    };
    let [names, images] = containers(o.pointer("/spec/template"));
    out.extend([
        Value::Null,
        names,
        images,
        label_selector(o.pointer("/spec/selector")),
    ]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_and_replicaset_rows() {
        let d = json!({"spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                                  {"name": "side", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        assert_eq!(
            cells("Deployment", &d),
            vec![
                json!("2/3"),
                json!(3),
                json!(2),
                Value::Null,
                json!("nginx,side"),
                json!("nginx:1.27,busybox"),
                json!("app=web")
            ]
        );
        let rs = json!({"spec": {"replicas": 2}, "status": {"replicas": 1}});
        assert_eq!(
            cells("ReplicaSet", &rs),
            vec![
                json!(2),
                json!(1),
                json!(0),
                Value::Null,
                json!(""),
                json!(""),
                json!("<none>")
            ]
        );
    }
}
