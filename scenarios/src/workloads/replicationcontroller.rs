//! The ReplicationController controller (Kubernetes' `pkg/controller/replication`,
//! https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/): the
//! ReplicaSet controller of `replicaset.rs` run over core/v1 ReplicationControllers, as
//! Kubernetes runs its ReplicaSet manager with an adapter. An RC's selector is a plain map
//! (no `matchExpressions`); Pods are found by their controller owner reference, so only the
//! owner's kind differs. Status: `replicas`, `fullyLabeledReplicas`, `readyReplicas`,
//! `availableReplicas`, `observedGeneration`.

use super::replicaset::{Replicated, sync_of};
use super::{Action, Kind, Snapshot};

const REPLICATION_CONTROLLER: Replicated = Replicated {
    kind: Kind::ReplicationController,
    kind_name: "ReplicationController",
    api_version: "v1",
};

/// Every write the ReplicationControllers of `snap` need.
pub fn sync(snap: &Snapshot, now: &str) -> Vec<Action> {
    sync_of(
        &REPLICATION_CONTROLLER,
        &snap.replicationcontrollers,
        snap,
        now,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rc(replicas: Option<i64>) -> Value {
        let mut rc = json!({"apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "web", "namespace": "default", "uid": "rc1", "generation": 3},
            "spec": {"selector": {"app": "web"},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        if let Some(r) = replicas {
            rc["spec"]["replicas"] = json!(r);
        }
        rc
    }

    fn pod(name: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                            "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "web"},
                            "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController",
                                                 "name": "web", "uid": "rc1", "controller": true}]},
               "spec": {"nodeName": "n1"},
               "status": {"phase": "Running",
                          "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    }

    #[test]
    fn an_rc_without_replicas_runs_one_pod_owned_by_it() {
        let snap = Snapshot {
            replicationcontrollers: vec![rc(None)],
            ..Snapshot::default()
        };
        let created: Vec<Value> = sync(&snap, "2026-01-01T00:00:00Z")
            .into_iter()
            .filter_map(|a| match a {
                Action::Create { object, .. } => Some(object),
                _ => None,
            })
            .collect();
        assert_eq!(created.len(), 1);
        let owner = &created[0]["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ReplicationController");
        assert_eq!(owner["apiVersion"], "v1");
        assert_eq!(owner["controller"], true);
        assert_eq!(created[0]["metadata"]["generateName"], "web-");
    }

    #[test]
    fn an_rc_scales_down_and_reports_its_status() {
        let snap = Snapshot {
            replicationcontrollers: vec![rc(Some(1))],
            pods: vec![pod("a", true), pod("b", false)],
            ..Snapshot::default()
        };
        let actions = sync(&snap, "2026-01-01T00:10:00Z");
        assert!(
            actions
                .iter()
                .any(|a| matches!(a, Action::Delete { kind: Kind::Pod, name, .. } if name == "b")),
            "{actions:?}"
        );
        let status = actions.iter().find_map(|a| match a {
            Action::Patch {
                kind: Kind::ReplicationController,
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
                        "availableReplicas": 1, "observedGeneration": 3})
            )
        );
    }
}
