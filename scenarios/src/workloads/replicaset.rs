//! The ReplicaSet controller (Kubernetes' `pkg/controller/replicaset`,
//! https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/): Pods made from the
//! template (`generateName` `<replicaset>-`, a controller owner reference) until `replicas`
//! of them are active, surplus ones deleted in the order Kubernetes ranks them (unscheduled,
//! then pending, then unready, then the youngest first), and the status (`replicas`,
//! `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas` after `minReadySeconds`,
//! `observedGeneration`).
//!
//! Left out: adoption of orphaned Pods that match the selector, slow-start batches (every
//! missing Pod is created at once), the `ReplicaFailure` condition.

use super::{
    Action, Kind, Snapshot, condition, controller_of, deleting, int, name, namespace,
    owner_reference, pod_active, pod_ready, status_patch, text, uid,
};
use serde_json::{Value, json};

/// What tells the owners of replicated Pods apart: ReplicaSets and ReplicationControllers
/// (`replicationcontroller.rs`) share this controller, as Kubernetes' RC manager wraps the
/// ReplicaSet one (`pkg/controller/replication`); their Pods are found by owner reference,
/// so the two selector forms never matter here.
#[derive(Debug, Clone, Copy)]
pub struct Replicated {
    pub kind: Kind,
    pub kind_name: &'static str,
    pub api_version: &'static str,
}

pub const REPLICASET: Replicated = Replicated {
    kind: Kind::ReplicaSet,
    kind_name: "ReplicaSet",
    api_version: "apps/v1",
};

/// Every write the ReplicaSets of `snap` need.
pub fn sync(snap: &Snapshot, now: &str) -> Vec<Action> {
    sync_of(&REPLICASET, &snap.replicasets, snap, now)
}

/// Every write the `owners` (all of kind `of`) need.
pub fn sync_of(of: &Replicated, owners: &[Value], snap: &Snapshot, now: &str) -> Vec<Action> {
    let mut out = Vec::new();
    for rs in owners.iter().filter(|rs| !deleting(rs)) {
        let pods: Vec<&Value> = snap
            .pods
            .iter()
            .filter(|p| {
                namespace(p) == namespace(rs) && controller_of(p, of.kind_name) == Some(uid(rs))
            })
            .filter(|p| pod_active(p))
            .collect();
        out.extend(scale(of, rs, &pods));
        out.extend(status(of, rs, &pods, now));
    }
    out
}

/// `spec.replicas`, 1 when absent (the API's default).
pub fn replicas(owner: &Value) -> i64 {
    owner
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

pub fn delete(pod: &Value) -> Action {
    Action::Delete {
        kind: Kind::Pod,
        namespace: namespace(pod).into(),
        name: name(pod).into(),
        uid: uid(pod).into(),
        foreground: false,
    }
}

/// A Pod of the owner's template.
fn pod_of(of: &Replicated, rs: &Value) -> Value {
    let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut metadata = json!({
        "generateName": format!("{}-", name(rs)),
        "namespace": namespace(rs),
        "ownerReferences": [owner_reference(of.api_version, of.kind_name, rs)],
    });
    for key in ["labels", "annotations"] {
        if let Some(v) = template.pointer(&format!("/metadata/{key}")) {
            metadata[key] = v.clone();
        }
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    })
}

/// The order in which surplus Pods go (`ActivePods` ranking): the least useful first.
fn rank(pod: &Value) -> (bool, u8, bool, std::cmp::Reverse<String>, String) {
    let phase = match text(pod, "/status/phase") {
        "Pending" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    (
        !text(pod, "/spec/nodeName").is_empty(),
        phase,
        pod_ready(pod),
        std::cmp::Reverse(text(pod, "/metadata/creationTimestamp").to_string()),
        name(pod).to_string(),
    )
}

fn scale(of: &Replicated, rs: &Value, pods: &[&Value]) -> Vec<Action> {
    let wanted = replicas(rs).max(0) as usize;
    if pods.len() < wanted {
        let pod = pod_of(of, rs);
        return (pods.len()..wanted)
            .map(|_| Action::Create {
                kind: Kind::Pod,
                namespace: namespace(rs).into(),
                object: pod.clone(),
            })
            .collect();
    }
    let mut surplus: Vec<&&Value> = pods.iter().collect();
    surplus.sort_by_key(|p| rank(p));
    surplus
        .into_iter()
        .take(pods.len() - wanted)
        .map(|p| delete(p))
        .collect()
}

/// Ready for `minReadySeconds` (`IsPodAvailable`); `now` is RFC 3339.
pub fn available(pod: &Value, min_ready_s: i64, now: &str) -> bool {
    if !pod_ready(pod) {
        return false;
    }
    if min_ready_s <= 0 {
        return true;
    }
    let since = condition(pod, "/status/conditions", "Ready")
        .map(|c| text(c, "/lastTransitionTime"))
        .unwrap_or_default();
    match (
        chrono::DateTime::parse_from_rfc3339(since),
        chrono::DateTime::parse_from_rfc3339(now),
    ) {
        (Ok(since), Ok(now)) => (now - since).num_seconds() >= min_ready_s,
        _ => false,
    }
}

fn status(of: &Replicated, rs: &Value, pods: &[&Value], now: &str) -> Option<Action> {
    let labels = rs
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object);
    let fully_labeled = pods
        .iter()
        .filter(|p| {
            labels.into_iter().flatten().all(|(k, v)| {
                p.pointer("/metadata/labels")
                    .and_then(|l| l.get(k))
                    .is_some_and(|pv| pv == v)
            })
        })
        .count();
    let min_ready = int(rs, "/spec/minReadySeconds");
    let status = json!({
        "replicas": pods.len(),
        "fullyLabeledReplicas": fully_labeled,
        "readyReplicas": pods.iter().filter(|p| pod_ready(p)).count(),
        "availableReplicas": pods.iter().filter(|p| available(p, min_ready, now)).count(),
        "observedGeneration": int(rs, "/metadata/generation"),
    });
    let patch = status_patch(
        rs.get("status"),
        &status,
        &[
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
            "observedGeneration",
        ],
        &["replicas"],
    )?;
    Some(Action::Patch {
        kind: of.kind,
        namespace: namespace(rs).into(),
        name: name(rs).into(),
        status: true,
        patch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(replicas: i64) -> Value {
        json!({"metadata": {"name": "web-abc", "namespace": "default", "uid": "rs1", "generation": 2},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    }

    fn pod(name: &str, node: &str, ready: bool, created: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                            "creationTimestamp": created, "labels": {"app": "web"},
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                 "name": "web-abc", "uid": "rs1", "controller": true}]},
               "spec": {"nodeName": node},
               "status": {"phase": if ready { "Running" } else { "Pending" },
                          "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    }

    #[test]
    fn missing_pods_are_made_from_the_template() {
        let snap = Snapshot {
            replicasets: vec![rs(2)],
            ..Snapshot::default()
        };
        let actions = sync(&snap, "2026-01-01T00:00:00Z");
        let created: Vec<&Value> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Create { object, .. } => Some(object),
                _ => None,
            })
            .collect();
        assert_eq!(created.len(), 2);
        assert_eq!(created[0]["metadata"]["generateName"], "web-abc-");
        assert_eq!(created[0]["metadata"]["labels"]["app"], "web");
        assert_eq!(
            created[0]["metadata"]["ownerReferences"][0]["kind"],
            "ReplicaSet"
        );
        assert_eq!(created[0]["spec"]["containers"][0]["image"], "nginx");
    }

    #[test]
    fn surplus_pods_go_least_useful_first() {
        let pods = vec![
            pod("old-ready", "n1", true, "2026-01-01T00:00:00Z"),
            pod("young-ready", "n2", true, "2026-01-01T00:05:00Z"),
            pod("unready", "n3", false, "2026-01-01T00:00:00Z"),
            pod("unscheduled", "", false, "2026-01-01T00:00:00Z"),
        ];
        let snap = Snapshot {
            replicasets: vec![rs(1)],
            pods,
            ..Snapshot::default()
        };
        let deleted: Vec<String> = sync(&snap, "2026-01-01T00:10:00Z")
            .into_iter()
            .filter_map(|a| match a {
                Action::Delete { name, .. } => Some(name),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, ["unscheduled", "unready", "young-ready"]);
    }

    #[test]
    fn status_counts_ready_and_available_pods() {
        let pods = vec![
            pod("a", "n1", true, "2026-01-01T00:00:00Z"),
            pod("b", "n2", false, "2026-01-01T00:00:00Z"),
        ];
        let snap = Snapshot {
            replicasets: vec![rs(2)],
            pods,
            ..Snapshot::default()
        };
        let status = sync(&snap, "2026-01-01T00:10:00Z")
            .into_iter()
            .find_map(|a| match a {
                Action::Patch {
                    status: true,
                    patch,
                    ..
                } => Some(patch["status"].clone()),
                _ => None,
            });
        assert_eq!(
            status,
            Some(
                json!({"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1,
                        "availableReplicas": 1, "observedGeneration": 2})
            )
        );
    }
}
