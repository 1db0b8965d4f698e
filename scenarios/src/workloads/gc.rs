//! The garbage collector (kube-controller-manager's `garbagecollector`,
//! https://kubernetes.io/docs/concepts/architecture/garbage-collection/), over the owner
//! references of every object the controllers read, whatever its kind, owners found by UID:
//!
//! - a dependent none of whose owners exists any more is deleted (`Background`); one that
//!   keeps some owner loses its references to those that went;
//! - an owner deleted with `Foreground` waits under the `foregroundDeletion` finalizer: its
//!   dependents are deleted (in the foreground too, so the cascade goes down), and once none
//!   that has `blockOwnerDeletion` is left the finalizer goes, and with it the owner;
//! - an owner deleted with `Orphan` waits under the `orphan` finalizer while its dependents
//!   lose their reference to it, then the finalizer goes.
//!
//! The API server (`apiserver/propagation.rs`) puts those finalizers on. An owner
//! reference to a kind the controllers do not read (a StatefulSet, a ConfigMap) is left
//! alone: its owner's absence from the read proves nothing. Dependents are read before their
//! owners (`Snapshot::read`), so an owner missing from a read is gone, not yet to come.

use super::{Action, Kind, Snapshot, deleting, name, namespace, text, uid};
use serde_json::{Value, json};
use std::collections::HashMap;

pub const ORPHAN: &str = "orphan";
pub const FOREGROUND: &str = "foregroundDeletion";

/// The kinds whose every object the snapshot holds (so a missing UID is a gone owner).
const READ: &[&str] = &[
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "DaemonSet",
    "Job",
    "CronJob",
    "Pod",
    "Service",
    "EndpointSlice",
    "Node",
];

/// Every object of the snapshot the controllers can write, with its kind.
fn objects(snap: &Snapshot) -> Vec<(Kind, &Value)> {
    [
        (Kind::Deployment, &snap.deployments),
        (Kind::ReplicaSet, &snap.replicasets),
        (Kind::ReplicationController, &snap.replicationcontrollers),
        (Kind::DaemonSet, &snap.daemonsets),
        (Kind::Job, &snap.jobs),
        (Kind::CronJob, &snap.cronjobs),
        (Kind::Pod, &snap.pods),
        (Kind::Service, &snap.services),
        (Kind::EndpointSlice, &snap.slices),
    ]
    .into_iter()
    .flat_map(|(kind, list)| list.iter().map(move |o| (kind, o)))
    .collect()
}

fn refs(v: &Value) -> &[Value] {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn has_finalizer(v: &Value, finalizer: &str) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x.as_str() == Some(finalizer)))
}

/// Every write the collector wants for `snap`.
pub fn sync(snap: &Snapshot) -> Vec<Action> {
    let objects = objects(snap);
    let by_uid: HashMap<&str, &Value> = objects
        .iter()
        .map(|(_, o)| *o)
        .chain(&snap.nodes)
        .map(|o| (uid(o), o))
        .collect();
    let mut out: Vec<Action> = objects
        .iter()
        .filter_map(|(kind, o)| dependent(*kind, o, &by_uid))
        .collect();
    out.extend(
        objects
            .iter()
            .filter_map(|(kind, o)| owner(*kind, o, &objects)),
    );
    out
}

/// How a dependent's owners stand.
#[derive(Default)]
struct Owners {
    /// References to owners that exist and are not waiting for the collector (or whose
    /// kind is not read): they stay.
    solid: Vec<Value>,
    dangling: usize,
    /// Owners deleted in the foreground.
    waiting: usize,
    orphaning: usize,
}

fn owners(v: &Value, by_uid: &HashMap<&str, &Value>) -> Owners {
    let mut o = Owners::default();
    for r in refs(v) {
        match by_uid.get(text(r, "/uid")) {
            None if READ.contains(&text(r, "/kind")) => o.dangling += 1,
            Some(owner) if deleting(owner) && has_finalizer(owner, FOREGROUND) => o.waiting += 1,
            Some(owner) if deleting(owner) && has_finalizer(owner, ORPHAN) => o.orphaning += 1,
            _ => o.solid.push(r.clone()),
        }
    }
    o
}

/// What becomes of one dependent (`attemptToDeleteItem`).
fn dependent(kind: Kind, v: &Value, by_uid: &HashMap<&str, &Value>) -> Option<Action> {
    if refs(v).is_empty() {
        return None;
    }
    let o = owners(v, by_uid);
    let gone = o.dangling + o.waiting + o.orphaning;
    if gone == 0 {
        return None;
    }
    let object = format!("{}/{}", namespace(v), name(v));
    if o.solid.is_empty() && o.waiting + o.dangling > 0 {
        if deleting(v) {
            return None;
        }
        let foreground = o.waiting > 0;
        tracing::info!(%object, kind = kind.as_str(), foreground, "garbage collector: deleting a dependent");
        return Some(Action::Delete {
            kind,
            namespace: namespace(v).into(),
            name: name(v).into(),
            uid: uid(v).into(),
            foreground,
        });
    }
    tracing::info!(%object, kind = kind.as_str(), "garbage collector: removing owner references");
    let kept = if o.solid.is_empty() {
        Value::Null
    } else {
        json!(o.solid)
    };
    Some(Action::Patch {
        kind,
        namespace: namespace(v).into(),
        name: name(v).into(),
        status: false,
        // The resourceVersion makes the patch conditional: never over a newer list.
        patch: json!({"metadata": {"ownerReferences": kept,
                                   "resourceVersion": text(v, "/metadata/resourceVersion")}}),
    })
}

/// An owner waiting for the collector: its finalizer goes once its dependents are done
/// (`Foreground`: none with `blockOwnerDeletion` left; `Orphan`: none left).
fn owner(kind: Kind, v: &Value, objects: &[(Kind, &Value)]) -> Option<Action> {
    let (fg, orphan) = (has_finalizer(v, FOREGROUND), has_finalizer(v, ORPHAN));
    if !deleting(v) || !(fg || orphan) {
        return None;
    }
    let mine = |r: &Value| text(r, "/uid") == uid(v);
    let mut deps = objects
        .iter()
        .flat_map(|(_, d)| refs(d))
        .filter(|r| mine(r));
    let blocking = || {
        objects
            .iter()
            .flat_map(|(_, d)| refs(d))
            .any(|r| mine(r) && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true))
    };
    let drop_fg = fg && !blocking();
    let drop_orphan = orphan && deps.next().is_none();
    if !(drop_fg || drop_orphan) {
        return None;
    }
    let left: Vec<&Value> = v
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| {
            let dropped = (drop_fg && f.as_str() == Some(FOREGROUND))
                || (drop_orphan && f.as_str() == Some(ORPHAN));
            !dropped
        })
        .collect();
    tracing::info!(object = %format!("{}/{}", namespace(v), name(v)), kind = kind.as_str(),
                   "garbage collector: dependents done, removing the owner's finalizer");
    Some(Action::Patch {
        kind,
        namespace: namespace(v).into(),
        name: name(v).into(),
        status: false,
        patch: json!({"metadata": {"finalizers": if left.is_empty() { Value::Null } else { json!(left) },
                                   "resourceVersion": text(v, "/metadata/resourceVersion")}}),
    })
}

#[cfg(test)]
mod tests;
