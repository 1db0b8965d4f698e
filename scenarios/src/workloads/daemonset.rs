//! The DaemonSet controller (Kubernetes' `pkg/controller/daemon`,
//! https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/): one Pod of the
//! template on every Node that should run it: the Node passes the template's
//! `nodeSelector` and required node affinity, and the Pod tolerates the Node's
//! `NoSchedule`/`NoExecute` taints, counting the tolerations the controller adds to every
//! daemon Pod (`not-ready`/`unreachable` `NoExecute`, `disk-pressure`, `memory-pressure`,
//! `pid-pressure`, `unschedulable` `NoSchedule`, and `network-unavailable` for
//! `hostNetwork` Pods). Each Pod is pinned to its Node with the required node affinity
//! term `matchFields metadata.name In [node]` (which the scheduler of `pods.rs` honours),
//! as the real controller does instead of setting `spec.nodeName`. Pods of a Node that
//! went or no longer qualifies are deleted, as are failed ones (replaced on the next pass).
//!
//! Pods carry `controller-revision-hash` (a hash of the template, where Kubernetes hashes
//! its ControllerRevision) and `pod-template-generation`. A template change rolls the Pods
//! with `RollingUpdate` (an old Pod deleted while fewer than `maxUnavailable`, default 1,
//! are unavailable; its replacement made on the next pass); `OnDelete` leaves them until
//! they are deleted. Left out: `maxSurge`, ControllerRevision objects, adoption of orphans.

use super::deployment::template_hash;
use super::pods::{node_selected, untolerated_taint};
use super::replicaset::available;
use super::{
    Action, Kind, Snapshot, controller_of, deleting, int, name, namespace, owner_reference,
    pod_active, pod_ready, status_patch, text, uid,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub const HASH_LABEL: &str = "controller-revision-hash";
pub const GENERATION_LABEL: &str = "pod-template-generation";

/// Every write the DaemonSets of `snap` need.
pub fn sync(snap: &Snapshot, now: &str) -> Vec<Action> {
    let mut out = Vec::new();
    for ds in snap.daemonsets.iter().filter(|d| !deleting(d)) {
        let pods: Vec<&Value> = snap
            .pods
            .iter()
            .filter(|p| {
                namespace(p) == namespace(ds)
                    && controller_of(p, "DaemonSet") == Some(uid(ds))
                    && !deleting(p)
            })
            .collect();
        out.extend(sync_one(ds, &snap.nodes, &pods, now));
    }
    out
}

/// The tolerations every daemon Pod gets (`AddOrUpdateDaemonPodTolerations`).
fn daemon_tolerations(host_network: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for key in ["not-ready", "unreachable"] {
        out.push(
            json!({"key": format!("node.kubernetes.io/{key}"), "operator": "Exists",
                        "effect": "NoExecute"}),
        );
    }
    let mut no_schedule = vec![
        "disk-pressure",
        "memory-pressure",
        "pid-pressure",
        "unschedulable",
    ];
    if host_network {
        no_schedule.push("network-unavailable");
    }
    for key in no_schedule {
        out.push(
            json!({"key": format!("node.kubernetes.io/{key}"), "operator": "Exists",
                        "effect": "NoSchedule"}),
        );
    }
    out
}

/// The Pod of the DaemonSet for `node` (`None`: a Pod that is not yet pinned, the form
/// the eligibility check uses).
pub fn pod_of(ds: &Value, node: Option<&str>) -> Value {
    let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    if !spec.is_object() {
        spec = json!({});
    }
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    let mut tolerations = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in daemon_tolerations(host_network) {
        let present = tolerations.iter().any(|o| {
            text(o, "/key") == text(&t, "/key") && text(o, "/effect") == text(&t, "/effect")
        });
        if !present {
            tolerations.push(t);
        }
    }
    spec["tolerations"] = json!(tolerations);
    if let Some(node) = node {
        // `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required terms become this one.
        let term = json!({"matchFields": [{"key": "metadata.name", "operator": "In",
                                           "values": [node]}]});
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
            json!({"nodeSelectorTerms": [term]});
    }
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or(json!({}));
    labels[HASH_LABEL] = json!(template_hash(&template));
    // The API server sets `generation` from 1; read without it, it is the first.
    labels[GENERATION_LABEL] = json!(int(ds, "/metadata/generation").max(1).to_string());
    let mut metadata = json!({
        "generateName": format!("{}-", name(ds)),
        "namespace": namespace(ds),
        "labels": labels,
        "ownerReferences": [owner_reference("apps/v1", "DaemonSet", ds)],
    });
    if let Some(a) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = a.clone();
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// Whether the Node should run the DaemonSet's Pod (`NodeShouldRunDaemonPod`).
fn should_run(unpinned: &Value, node: &Value) -> bool {
    let spec = unpinned.get("spec").unwrap_or(&Value::Null);
    node_selected(spec, node) && untolerated_taint(unpinned, node).is_none()
}

/// The Node a daemon Pod is for: its `spec.nodeName`, else the pinning term's name.
pub fn node_of(pod: &Value) -> &str {
    let bound = text(pod, "/spec/nodeName");
    if !bound.is_empty() {
        return bound;
    }
    pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|t| t.get("matchFields").and_then(Value::as_array).into_iter().flatten())
        .find(|f| text(f, "/key") == "metadata.name" && text(f, "/operator") == "In")
        .map(|f| text(f, "/values/0"))
        .unwrap_or_default()
}

/// What one pass found on the Nodes that should run the DaemonSet.
#[derive(Default)]
struct Tally {
    desired: usize,
    current: usize,
    misscheduled: usize,
    ready: usize,
    updated: usize,
    available: usize,
}

fn sync_one(ds: &Value, nodes: &[Value], pods: &[&Value], now: &str) -> Vec<Action> {
    let unpinned = pod_of(ds, None);
    let hash = text(&unpinned, &format!("/metadata/labels/{HASH_LABEL}")).to_string();
    let min_ready = int(ds, "/spec/minReadySeconds");
    let mut by_node: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for p in pods {
        by_node.entry(node_of(p)).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut tally = Tally::default();
    // Old Pods that may be rolled: (available, Pod).
    let mut old: Vec<(bool, &Value)> = Vec::new();
    for node in nodes {
        let here = by_node.remove(name(node)).unwrap_or_default();
        if !should_run(&unpinned, node) {
            tally.misscheduled += usize::from(!here.is_empty());
            out.extend(here.iter().map(|p| super::replicaset::delete(p)));
            continue;
        }
        tally.desired += 1;
        let (mut live, failed): (Vec<&Value>, Vec<&Value>) =
            here.iter().copied().partition(|p| pod_active(p));
        out.extend(failed.iter().map(|p| super::replicaset::delete(p)));
        live.sort_by_key(|p| (text(p, "/metadata/creationTimestamp"), name(p)));
        let Some(keep) = live.first() else {
            out.push(Action::Create {
                kind: Kind::Pod,
                namespace: namespace(ds).into(),
                object: pod_of(ds, Some(name(node))),
            });
            continue;
        };
        // More than one: the oldest stays.
        out.extend(live[1..].iter().map(|p| super::replicaset::delete(p)));
        let is_available = available(keep, min_ready, now);
        tally.current += 1;
        tally.ready += usize::from(pod_ready(keep));
        tally.available += usize::from(is_available);
        if text(keep, &format!("/metadata/labels/{HASH_LABEL}")) == hash {
            tally.updated += 1;
        } else {
            old.push((is_available, keep));
        }
    }
    // Pods of Nodes that are gone.
    for here in by_node.values() {
        tally.misscheduled += 1;
        out.extend(here.iter().map(|p| super::replicaset::delete(p)));
    }
    out.extend(roll(ds, &tally, old));
    out.extend(status(ds, &tally));
    out
}

/// `RollingUpdate`: old Pods deleted while the unavailable stay within `maxUnavailable`
/// (unavailable old ones go at once, as they cost nothing).
fn roll(ds: &Value, tally: &Tally, mut old: Vec<(bool, &Value)>) -> Vec<Action> {
    if text(ds, "/spec/updateStrategy/type") == "OnDelete" {
        return Vec::new();
    }
    let max = match ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable") {
        Some(Value::String(p)) => {
            let percent: i64 = p.trim_end_matches('%').parse().unwrap_or(0);
            // Rounded up, as `GetScaledValueFromIntOrPercent(.., true)`.
            (percent * tally.desired as i64 + 99) / 100
        }
        Some(v) => v.as_i64().unwrap_or(1),
        None => 1,
    }
    .max(1) as usize;
    let unavailable = tally.desired - tally.available;
    let mut budget = max.saturating_sub(unavailable);
    old.sort_by_key(|(available, p)| (*available, name(p)));
    let mut out = Vec::new();
    for (is_available, pod) in old {
        if is_available {
            if budget == 0 {
                break;
            }
            budget -= 1;
        }
        out.push(super::replicaset::delete(pod));
    }
    out
}

fn status(ds: &Value, t: &Tally) -> Option<Action> {
    let desired = json!({
        "desiredNumberScheduled": t.desired,
        "currentNumberScheduled": t.current,
        "numberMisscheduled": t.misscheduled,
        "numberReady": t.ready,
        "updatedNumberScheduled": t.updated,
        "numberAvailable": t.available,
        "numberUnavailable": t.desired - t.available,
        "observedGeneration": int(ds, "/metadata/generation"),
    });
    let keys = [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberMisscheduled",
        "numberReady",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "observedGeneration",
    ];
    // The first four are not `omitempty` in `DaemonSetStatus`.
    let patch = status_patch(ds.get("status"), &desired, &keys, &keys[..4])?;
    Some(Action::Patch {
        kind: Kind::DaemonSet,
        namespace: namespace(ds).into(),
        name: name(ds).into(),
        status: true,
        patch,
    })
}

#[cfg(test)]
mod tests;
