//! The Deployment controller (Kubernetes' `pkg/controller/deployment`, as
//! https://kubernetes.io/docs/concepts/workloads/controllers/deployment/ describes it): each
//! template gets a ReplicaSet named `<deployment>-<pod-template-hash>` (the hash also a label
//! of its selector and Pods), rolled out by the `RollingUpdate` strategy within `maxSurge`
//! and `maxUnavailable` or by `Recreate`; old ReplicaSets beyond `revisionHistoryLimit` are
//! deleted; the status (`observedGeneration`, replica counts, the `Available` and
//! `Progressing` conditions) is what `kubectl rollout status` reads.
//!
//! Left out: `paused` (a paused Deployment only gets its status), `progressDeadlineSeconds`
//! (`Progressing` never times out), proportional scaling of a rollout in progress (a scale
//! event mid-rollout goes through the rolling update instead), adoption of orphaned
//! ReplicaSets, and hash collisions (`collisionCount`).

use super::{
    Action, Kind, Snapshot, canonical, condition, controller_of, deleting, int, name, namespace,
    next_condition, owner_reference, status_patch, text, uid,
};
use serde_json::{Value, json};

pub const HASH_LABEL: &str = "pod-template-hash";
pub const REVISION: &str = "deployment.kubernetes.io/revision";

/// Every write the Deployments of `snap` need.
pub fn sync(snap: &Snapshot, now: &str) -> Vec<Action> {
    let mut out = Vec::new();
    for d in snap.deployments.iter().filter(|d| !deleting(d)) {
        out.extend(sync_one(snap, d, now));
    }
    out
}

fn delete(rs: &Value) -> Action {
    Action::Delete {
        kind: Kind::ReplicaSet,
        namespace: namespace(rs).into(),
        name: name(rs).into(),
        uid: uid(rs).into(),
        foreground: false,
    }
}

/// `rand.SafeEncodeString(fmt.Sprint(fnv32a(template)))`: the hash's decimal digits mapped
/// to the alphabet Kubernetes uses for names, so it reads like a real one.
pub fn template_hash(template: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut t = template.clone();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(HASH_LABEL);
    }
    let bytes = canonical(&t).to_string();
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()]))
        .collect()
}

/// Whether two pod templates are equal but for the hash label (`EqualIgnoreHash`).
fn same_template(a: &Value, b: &Value) -> bool {
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(labels) = t
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.remove(HASH_LABEL);
            if labels.is_empty()
                && let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut)
            {
                m.remove("labels");
            }
        }
        canonical(&t)
    };
    strip(a) == strip(b)
}

/// `intstr.GetScaledValueFromIntOrPercent`: a count, or a percentage of `total` rounded up
/// (surge) or down (unavailable).
fn scaled(v: Option<&Value>, total: i64, round_up: bool, default: i64) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(default),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) if round_up => (p * total + 99) / 100,
            Some(p) => p * total / 100,
            None => default,
        },
        _ => default,
    }
}

/// (maxSurge, maxUnavailable) of a rolling update; both zero is read as one unavailable.
fn bounds(d: &Value) -> (i64, i64) {
    let desired = int(d, "/spec/replicas");
    if recreating(d) {
        return (0, desired);
    }
    let ru = d.pointer("/spec/strategy/rollingUpdate");
    let surge = scaled(ru.and_then(|r| r.get("maxSurge")), desired, true, 1).max(0);
    let unavailable = scaled(ru.and_then(|r| r.get("maxUnavailable")), desired, false, 0).max(0);
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable.min(desired))
}

/// The Deployment's ReplicaSets, oldest first.
fn owned<'a>(snap: &'a Snapshot, d: &Value) -> Vec<&'a Value> {
    let mut out: Vec<&Value> = snap
        .replicasets
        .iter()
        .filter(|rs| {
            namespace(rs) == namespace(d) && controller_of(rs, "Deployment") == Some(uid(d))
        })
        .collect();
    out.sort_by(|a, b| {
        (text(a, "/metadata/creationTimestamp"), name(a))
            .cmp(&(text(b, "/metadata/creationTimestamp"), name(b)))
    });
    out
}

fn revision(rs: &Value) -> i64 {
    text(
        rs,
        &format!("/metadata/annotations/{}", REVISION.replace('/', "~1")),
    )
    .parse()
    .unwrap_or(0)
}

fn scale(rs: &Value, replicas: i64) -> Action {
    Action::Patch {
        kind: Kind::ReplicaSet,
        namespace: namespace(rs).into(),
        name: name(rs).into(),
        status: false,
        patch: json!({"spec": {"replicas": replicas}}),
    }
}

/// The ReplicaSet of the Deployment's current template.
fn new_replicaset(d: &Value, hash: &str, revision: i64, replicas: i64) -> Value {
    let mut template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    template["metadata"]["labels"][HASH_LABEL] = json!(hash);
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let mut labels = template["metadata"]["labels"].clone();
    labels[HASH_LABEL] = json!(hash);
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", name(d)),
            "namespace": namespace(d),
            "labels": labels,
            "annotations": {REVISION: revision.to_string()},
            "ownerReferences": [owner_reference("apps/v1", "Deployment", d)],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": int(d, "/spec/minReadySeconds"),
            "selector": selector,
            "template": template,
        },
    })
}

fn sync_one(snap: &Snapshot, d: &Value, now: &str) -> Vec<Action> {
    let all = owned(snap, d);
    let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let new = all.iter().copied().find(|rs| {
        rs.pointer("/spec/template")
            .is_some_and(|t| same_template(t, &template))
    });
    let olds: Vec<&Value> = all
        .iter()
        .copied()
        .filter(|rs| Some(uid(rs)) != new.map(uid))
        .collect();
    let paused = d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let mut out = Vec::new();
    if !paused {
        out = match new {
            None => first_pass(d, &template, &all, &olds),
            Some(new) => rollout(d, new, &all, &olds),
        };
    }
    out.extend(status(d, new, &all, now));
    out
}

fn recreating(d: &Value) -> bool {
    text(d, "/spec/strategy/type") == "Recreate"
}

/// The first pass of a template: its ReplicaSet, sized within the surge (or empty while a
/// `Recreate` still has old Pods), and the next revision.
fn first_pass(d: &Value, template: &Value, all: &[&Value], olds: &[&Value]) -> Vec<Action> {
    let desired = int(d, "/spec/replicas");
    let replicas = if recreating(d) {
        let old_pods = olds
            .iter()
            .any(|rs| int(rs, "/spec/replicas") > 0 || int(rs, "/status/replicas") > 0);
        if old_pods { 0 } else { desired }
    } else {
        let (surge, _) = bounds(d);
        let total: i64 = olds.iter().map(|rs| int(rs, "/spec/replicas")).sum();
        (desired + surge - total).clamp(0, desired)
    };
    let next = all.iter().map(|rs| revision(rs)).max().unwrap_or(0) + 1;
    let rs = new_replicaset(d, &template_hash(template), next, replicas);
    let mut out = vec![Action::Create {
        kind: Kind::ReplicaSet,
        namespace: namespace(d).into(),
        object: rs,
    }];
    out.extend(revision_of_deployment(d, next));
    if recreating(d) {
        out.extend(recreate_scale_down(olds));
    }
    out
}

/// A pass with the template's ReplicaSet in place: its revision made the newest (a
/// rollback to an older template reuses that template's ReplicaSet), one rollout step, and
/// the history trimmed once the rollout is complete.
fn rollout(d: &Value, new: &Value, all: &[&Value], olds: &[&Value]) -> Vec<Action> {
    let newest = olds.iter().map(|rs| revision(rs)).max().unwrap_or(0);
    let mut out = Vec::new();
    let mut current = revision(new);
    if current <= newest {
        current = newest + 1;
        out.push(Action::Patch {
            kind: Kind::ReplicaSet,
            namespace: namespace(new).into(),
            name: name(new).into(),
            status: false,
            patch: json!({"metadata": {"annotations": {REVISION: current.to_string()}}}),
        });
    }
    out.extend(revision_of_deployment(d, current));
    let steps = if recreating(d) {
        recreate(d, new, olds)
    } else {
        rolling(d, new, olds)
    };
    if steps.is_empty() && complete(d, Some(new), all) {
        out.extend(cleanup(d, olds));
    }
    out.extend(steps);
    out
}

/// Keeps the Deployment's revision annotation on its newest ReplicaSet's.
fn revision_of_deployment(d: &Value, revision: i64) -> Option<Action> {
    let current = text(
        d,
        &format!("/metadata/annotations/{}", REVISION.replace('/', "~1")),
    );
    (current != revision.to_string()).then(|| Action::Patch {
        kind: Kind::Deployment,
        namespace: namespace(d).into(),
        name: name(d).into(),
        status: false,
        patch: json!({"metadata": {"annotations": {REVISION: revision.to_string()}}}),
    })
}

fn recreate_scale_down(olds: &[&Value]) -> Vec<Action> {
    olds.iter()
        .filter(|rs| int(rs, "/spec/replicas") > 0)
        .map(|rs| scale(rs, 0))
        .collect()
}

/// `rolloutRecreate`: every old Pod gone before the new ReplicaSet scales up.
fn recreate(d: &Value, new: &Value, olds: &[&Value]) -> Vec<Action> {
    let down = recreate_scale_down(olds);
    if !down.is_empty() {
        return down;
    }
    if olds.iter().any(|rs| int(rs, "/status/replicas") > 0) {
        return Vec::new();
    }
    let desired = int(d, "/spec/replicas");
    if int(new, "/spec/replicas") != desired {
        return vec![scale(new, desired)];
    }
    Vec::new()
}

/// `rolloutRolling`: the new ReplicaSet up within `maxSurge`, else the old ones down within
/// `maxUnavailable` (unhealthy replicas first), one step per pass.
fn rolling(d: &Value, new: &Value, olds: &[&Value]) -> Vec<Action> {
    let desired = int(d, "/spec/replicas");
    let (surge, unavailable) = bounds(d);
    let new_replicas = int(new, "/spec/replicas");
    let spec_sum =
        |sets: &[&Value]| -> i64 { sets.iter().map(|rs| int(rs, "/spec/replicas")).sum() };
    let old_total = spec_sum(olds);
    // reconcileNewReplicaSet
    if new_replicas > desired {
        return vec![scale(new, desired)];
    }
    if new_replicas < desired {
        let total = old_total + new_replicas;
        let up = (desired + surge - total).min(desired - new_replicas);
        if up > 0 {
            return vec![scale(new, new_replicas + up)];
        }
    }
    // reconcileOldReplicaSets
    if old_total == 0 {
        return Vec::new();
    }
    let min_available = desired - unavailable;
    let new_unavailable = new_replicas - int(new, "/status/availableReplicas");
    let max_scaled_down = old_total + new_replicas - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut replicas: Vec<i64> = olds.iter().map(|rs| int(rs, "/spec/replicas")).collect();
    // cleanupUnhealthyReplicas
    let mut cleaned = 0;
    for (i, rs) in olds.iter().enumerate() {
        let unhealthy = replicas[i] - int(rs, "/status/availableReplicas");
        if replicas[i] == 0 || unhealthy <= 0 || cleaned >= max_scaled_down {
            continue;
        }
        let down = unhealthy.min(max_scaled_down - cleaned);
        replicas[i] -= down;
        cleaned += down;
    }
    // scaleDownOldReplicaSetsForRollingUpdate
    let available: i64 = olds
        .iter()
        .map(|rs| int(rs, "/status/availableReplicas"))
        .sum::<i64>()
        + int(new, "/status/availableReplicas");
    let mut budget = (available - min_available).max(0);
    for r in &mut replicas {
        let down = (*r).min(budget);
        *r -= down;
        budget -= down;
    }
    for (i, rs) in olds.iter().enumerate() {
        if replicas[i] != int(rs, "/spec/replicas") {
            out.push(scale(rs, replicas[i]));
        }
    }
    out
}

/// `DeploymentComplete`: every replica updated and available, none old.
fn complete(d: &Value, new: Option<&Value>, all: &[&Value]) -> bool {
    let desired = int(d, "/spec/replicas");
    let status_sum = |p: &str| -> i64 { all.iter().map(|rs| int(rs, p)).sum() };
    new.is_some_and(|n| int(n, "/status/replicas") == desired)
        && status_sum("/status/replicas") == desired
        && status_sum("/status/availableReplicas") == desired
}

/// Old ReplicaSets without replicas beyond `revisionHistoryLimit`, oldest first.
fn cleanup(d: &Value, olds: &[&Value]) -> Vec<Action> {
    let limit = d
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(10)
        .max(0);
    let idle: Vec<&&Value> = olds
        .iter()
        .filter(|rs| int(rs, "/spec/replicas") == 0 && int(rs, "/status/replicas") == 0)
        .collect();
    let extra = (idle.len() as i64 - limit).max(0) as usize;
    idle.into_iter().take(extra).map(|rs| delete(rs)).collect()
}

/// The `Available` and `Progressing` conditions.
fn conditions(d: &Value, new: Option<&Value>, all: &[&Value], available: i64, now: &str) -> Value {
    let (_, unavailable) = bounds(d);
    let old = |ty: &str| condition(d, "/status/conditions", ty);
    let (status, reason, message) = if available >= int(d, "/spec/replicas") - unavailable {
        (
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    let available = next_condition(
        old("Available"),
        "Available",
        status,
        reason,
        message,
        now,
        true,
    );
    let rs_name = new.map(name).unwrap_or_default();
    let (reason, message) = if complete(d, new, all) {
        (
            "NewReplicaSetAvailable",
            format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
        )
    } else {
        (
            "ReplicaSetUpdated",
            format!("ReplicaSet \"{rs_name}\" is progressing."),
        )
    };
    let progressing = next_condition(
        old("Progressing"),
        "Progressing",
        "True",
        reason,
        &message,
        now,
        true,
    );
    json!([available, progressing])
}

/// `calculateStatus` and `syncRolloutStatus`: the status patch, if anything changed.
fn status(d: &Value, new: Option<&Value>, all: &[&Value], now: &str) -> Option<Action> {
    let sum = |p: &str| -> i64 { all.iter().map(|rs| int(rs, p)).sum() };
    let available = sum("/status/availableReplicas");
    let updated = new.map_or(0, |n| int(n, "/status/replicas"));
    let status = json!({
        "observedGeneration": int(d, "/metadata/generation"),
        "replicas": sum("/status/replicas"),
        "updatedReplicas": updated,
        "readyReplicas": sum("/status/readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": (sum("/spec/replicas") - available).max(0),
        "conditions": conditions(d, new, all, available, now),
    });
    let patch = status_patch(
        d.get("status"),
        &status,
        &[
            "observedGeneration",
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "conditions",
        ],
        &[],
    )?;
    Some(Action::Patch {
        kind: Kind::Deployment,
        namespace: namespace(d).into(),
        name: name(d).into(),
        status: true,
        patch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "uid": "d1", "generation": 1},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "strategy": {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    fn replicaset(d: &Value, name: &str, spec: i64, available: i64, created: &str) -> Value {
        let hash = template_hash(&d["spec"]["template"]);
        let mut rs = new_replicaset(d, &hash, 1, spec);
        rs["metadata"]["name"] = json!(name);
        rs["metadata"]["uid"] = json!(format!("uid-{name}"));
        rs["metadata"]["creationTimestamp"] = json!(created);
        rs["status"] =
            json!({"replicas": spec, "readyReplicas": available, "availableReplicas": available});
        rs
    }

    fn scales(actions: &[Action]) -> Vec<(String, i64)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Patch {
                    kind: Kind::ReplicaSet,
                    name,
                    patch,
                    ..
                } => patch
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .map(|r| (name.clone(), r)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_new_deployment_gets_a_replicaset_with_the_hash_label() {
        let d = deployment(3, "nginx");
        let snap = Snapshot {
            deployments: vec![d.clone()],
            ..Snapshot::default()
        };
        let actions = sync(&snap, "t");
        let Some(Action::Create { object, .. }) = actions.first() else {
            panic!("no ReplicaSet created: {actions:?}");
        };
        let hash = template_hash(&d["spec"]["template"]);
        assert_eq!(object["metadata"]["name"], format!("web-{hash}"));
        assert_eq!(object["spec"]["replicas"], 3);
        assert_eq!(
            object["spec"]["selector"]["matchLabels"][HASH_LABEL],
            hash.as_str()
        );
        assert_eq!(
            object["spec"]["template"]["metadata"]["labels"][HASH_LABEL],
            hash.as_str()
        );
        assert_eq!(object["metadata"]["ownerReferences"][0]["uid"], "d1");
        assert_eq!(object["metadata"]["annotations"][REVISION], "1");
        assert!(
            hash.len() >= 8
                && hash
                    .bytes()
                    .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }

    #[test]
    fn a_template_change_rolls_within_surge_and_unavailability() {
        let old_d = deployment(4, "nginx:1");
        let d = deployment(4, "nginx:2");
        let old = replicaset(&old_d, "web-old", 4, 4, "2026-01-01T00:00:00Z");
        let new = replicaset(&d, "web-new", 0, 0, "2026-01-01T00:01:00Z");
        let snap = Snapshot {
            deployments: vec![d.clone()],
            replicasets: vec![old.clone(), new.clone()],
            ..Snapshot::default()
        };
        // 25% of 4: one more Pod than desired, one fewer available.
        assert_eq!(scales(&sync(&snap, "t")), vec![("web-new".to_string(), 1)]);
        let new = replicaset(&d, "web-new", 1, 0, "2026-01-01T00:01:00Z");
        let snap = Snapshot {
            deployments: vec![d.clone()],
            replicasets: vec![old, new],
            ..Snapshot::default()
        };
        assert_eq!(scales(&sync(&snap, "t")), vec![("web-old".to_string(), 3)]);
    }

    #[test]
    fn status_says_what_rollout_status_waits_for() {
        let d = deployment(2, "nginx");
        let rs = replicaset(&d, "web-a", 2, 2, "2026-01-01T00:00:00Z");
        let snap = Snapshot {
            deployments: vec![d],
            replicasets: vec![rs],
            ..Snapshot::default()
        };
        let actions = sync(&snap, "t");
        let status = actions.iter().find_map(|a| match a {
            Action::Patch {
                kind: Kind::Deployment,
                status: true,
                patch,
                ..
            } => Some(patch["status"].clone()),
            _ => None,
        });
        let status = status.expect("a status patch");
        assert_eq!(status["observedGeneration"], 1);
        assert_eq!(status["updatedReplicas"], 2);
        assert_eq!(status["availableReplicas"], 2);
        assert_eq!(status["conditions"][1]["reason"], "NewReplicaSetAvailable");
    }

    #[test]
    fn percentages_round_as_kubernetes_does() {
        assert_eq!(scaled(Some(&json!("25%")), 1, true, 0), 1);
        assert_eq!(scaled(Some(&json!("25%")), 1, false, 0), 0);
        assert_eq!(scaled(Some(&json!(2)), 10, false, 0), 2);
        assert_eq!(bounds(&deployment(1, "x")), (1, 0));
    }
}
