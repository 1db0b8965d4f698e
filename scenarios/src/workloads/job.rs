//! The Job controller (Kubernetes' `pkg/controller/job`,
//! https://kubernetes.io/docs/concepts/workloads/controllers/job/) and the TTL-after-finished
//! controller's part for Jobs: up to `parallelism` Pods at a time (generateName `<job>-`,
//! the Job's labels `batch.kubernetes.io/job-name`, `job-name`,
//! `batch.kubernetes.io/controller-uid`, `controller-uid`, a controller owner reference that
//! blocks its deletion) until `completions` of them succeeded (without `completions`: until
//! one did and none runs, the work-queue form); more than `backoffLimit` failed Pods, or
//! `activeDeadlineSeconds` since `startTime`, fail the Job (`FailureTarget` then `Failed`,
//! written together here). `suspend` deletes the running Pods (`Suspended` condition). A
//! finished Job keeps its Pods; with `ttlSecondsAfterFinished` it is deleted that long after
//! it finished. The simulated kubelet (`pods.rs`) runs the Pods to completion.
//!
//! Absent fields count as the API server's defaults (`parallelism` 1, `completions` 1 when
//! `parallelism` is absent too, `backoffLimit` 6). Left out: the exponential back-off
//! before a failed Pod's replacement, indexed completion, `podFailurePolicy`,
//! `successPolicy`, pod tracking finalizers (counts only grow, so a deleted finished Pod is
//! not forgotten), adoption of orphans.

use super::{
    Action, Kind, Snapshot, condition, int, name, namespace, next_condition, owner_reference,
    parse_time, pod_active, pod_ready, rfc3339, status_patch, sync_owned, text, uid,
};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::time::Duration;

/// The labels the Job's Pods carry (and its generated selector selects, `job-name` and
/// `controller-uid` being the legacy ones).
pub const JOB_NAME: &str = "batch.kubernetes.io/job-name";
pub const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";

/// The counts and times one pass decides.
struct Counts<'a> {
    active: Vec<&'a Value>,
    succeeded: i64,
    failed: i64,
}

/// Every write the Jobs of `snap` need at `now`, and in how long one is next due (a
/// deadline or a TTL).
pub fn sync(snap: &Snapshot, now: DateTime<Utc>) -> (Vec<Action>, Option<Duration>) {
    sync_owned(&snap.jobs, &snap.pods, "Job", |o, d| sync_one(o, d, now))
}

fn optional(job: &Value, pointer: &str) -> Option<i64> {
    job.pointer(pointer).and_then(Value::as_i64)
}

/// Whether the Job finished: its `Complete` or `Failed` condition is `True`.
pub fn finished(job: &Value) -> Option<&'static str> {
    ["Complete", "Failed"].into_iter().find(|ty| {
        condition(job, "/status/conditions", ty).is_some_and(|c| text(c, "/status") == "True")
    })
}

fn counts<'a>(job: &Value, pods: &[&'a Value]) -> Counts<'a> {
    let phase = |p: &str| {
        pods.iter()
            .filter(|x| text(x, "/status/phase") == p)
            .count() as i64
    };
    Counts {
        active: pods.iter().copied().filter(|p| pod_active(p)).collect(),
        succeeded: phase("Succeeded").max(int(job, "/status/succeeded")),
        failed: phase("Failed").max(int(job, "/status/failed")),
    }
}

fn sync_one(job: &Value, pods: &[&Value], now: DateTime<Utc>) -> (Vec<Action>, Option<Duration>) {
    let c = counts(job, pods);
    if finished(job).is_some() {
        let mut out: Vec<Action> = c
            .active
            .iter()
            .map(|p| super::replicaset::delete(p))
            .collect();
        out.extend(status(job, &c, None, None));
        let (ttl, due) = expiry(job, now);
        out.extend(ttl);
        return (out, due);
    }
    let start = parse_time(text(job, "/status/startTime"));
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let start = if suspended {
        start
    } else {
        start.or(Some(now))
    };
    let mut conds = conditions_of(job);
    let mut out = Vec::new();
    let mut due = None;
    let mut completion = None;
    let deadline = optional(job, "/spec/activeDeadlineSeconds")
        .zip(start)
        .map(|(s, t)| t + chrono::Duration::seconds(s));
    let failure = if c.failed > optional(job, "/spec/backoffLimit").unwrap_or(6) {
        Some((
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ))
    } else if deadline.is_some_and(|d| d <= now) {
        Some((
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        ))
    } else {
        None
    };
    let t = rfc3339(now);
    if let Some((reason, message)) = failure {
        out.extend(c.active.iter().map(|p| super::replicaset::delete(p)));
        for ty in ["FailureTarget", "Failed"] {
            set(&mut conds, ty, "True", reason, message, &t);
        }
    } else if complete(job, &c) {
        out.extend(c.active.iter().map(|p| super::replicaset::delete(p)));
        let message = "Reached expected number of succeeded pods";
        for ty in ["SuccessCriteriaMet", "Complete"] {
            set(&mut conds, ty, "True", "CompletionsReached", message, &t);
        }
        completion = Some(t.clone());
    } else if suspended {
        out.extend(c.active.iter().map(|p| super::replicaset::delete(p)));
        set(
            &mut conds,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            &t,
        );
    } else {
        if condition(job, "/status/conditions", "Suspended").is_some() {
            set(
                &mut conds,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                &t,
            );
        }
        out.extend(run(job, &c));
        due = deadline.and_then(|d| (d - now).to_std().ok());
    }
    out.extend(status(
        job,
        &c,
        Some((start.map(rfc3339), completion)),
        Some(conds),
    ));
    (out, due)
}

/// Whether enough Pods succeeded.
fn complete(job: &Value, c: &Counts) -> bool {
    match completions(job) {
        Some(n) => c.succeeded >= n,
        None => c.succeeded > 0 && c.active.is_empty(),
    }
}

fn completions(job: &Value) -> Option<i64> {
    optional(job, "/spec/completions").or_else(|| {
        // Both absent: the API server defaults both to 1.
        optional(job, "/spec/parallelism").is_none().then_some(1)
    })
}

/// Pods created or deleted so that `min(parallelism, remaining)` run.
fn run(job: &Value, c: &Counts) -> Vec<Action> {
    let parallelism = optional(job, "/spec/parallelism").unwrap_or(1).max(0);
    let wanted = match completions(job) {
        Some(n) => parallelism.min(n - c.succeeded),
        // Work queue: once one succeeded, no new Pod starts.
        None if c.succeeded > 0 => 0,
        None => parallelism,
    }
    .max(0) as usize;
    if c.active.len() > wanted {
        let mut surplus = c.active.clone();
        // The youngest first.
        surplus.sort_by_key(|p| std::cmp::Reverse(text(p, "/metadata/creationTimestamp")));
        return surplus
            .into_iter()
            .take(c.active.len() - wanted)
            .map(super::replicaset::delete)
            .collect();
    }
    let pod = pod_of(job);
    (c.active.len()..wanted)
        .map(|_| Action::Create {
            kind: Kind::Pod,
            namespace: namespace(job).into(),
            object: pod.clone(),
        })
        .collect()
}

/// A Pod of the Job's template, with the Job's labels whether or not the API server added
/// them to the template.
pub fn pod_of(job: &Value) -> Value {
    let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or(json!({}));
    for (key, value) in [
        (CONTROLLER_UID, uid(job)),
        ("controller-uid", uid(job)),
        (JOB_NAME, name(job)),
        ("job-name", name(job)),
    ] {
        labels[key] = json!(value);
    }
    let mut metadata = json!({
        "generateName": format!("{}-", name(job)),
        "namespace": namespace(job),
        "labels": labels,
        "ownerReferences": [owner_reference("batch/v1", "Job", job)],
    });
    if let Some(a) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = a.clone();
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    })
}

fn conditions_of(job: &Value) -> Vec<Value> {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Sets the condition `ty` in `conds` (left as it is when it says the same).
fn set(conds: &mut Vec<Value>, ty: &str, status: &str, reason: &str, message: &str, now: &str) {
    let old = conds.iter().position(|c| text(c, "/type") == ty);
    let same = |c: &Value| {
        text(c, "/status") == status
            && text(c, "/reason") == reason
            && text(c, "/message") == message
    };
    if old.is_some_and(|i| same(&conds[i])) {
        return;
    }
    let mut c = next_condition(
        old.map(|i| &conds[i]),
        ty,
        status,
        reason,
        message,
        now,
        false,
    );
    c["lastProbeTime"] = json!(now);
    match old {
        Some(i) => conds[i] = c,
        None => conds.push(c),
    }
}

/// The status patch: the counts, and (when given) the times and conditions.
fn status(
    job: &Value,
    c: &Counts,
    times: Option<(Option<String>, Option<String>)>,
    conds: Option<Vec<Value>>,
) -> Option<Action> {
    let mut desired = json!({
        "active": c.active.len(),
        "succeeded": c.succeeded,
        "failed": c.failed,
        "ready": c.active.iter().filter(|p| pod_ready(p)).count(),
    });
    let mut managed = vec!["active", "succeeded", "failed", "ready"];
    if let Some((start, completion)) = times {
        desired["startTime"] = json!(start);
        managed.push("startTime");
        if completion.is_some() {
            desired["completionTime"] = json!(completion);
            managed.push("completionTime");
        }
    }
    if let Some(conds) = conds.filter(|c| !c.is_empty()) {
        desired["conditions"] = json!(conds);
        managed.push("conditions");
    }
    let patch = status_patch(job.get("status"), &desired, &managed, &["ready"])?;
    Some(Action::Patch {
        kind: Kind::Job,
        namespace: namespace(job).into(),
        name: name(job).into(),
        status: true,
        patch,
    })
}

/// The TTL-after-finished controller: the Job's deletion once `ttlSecondsAfterFinished`
/// passed since it finished, or in how long that is.
fn expiry(job: &Value, now: DateTime<Utc>) -> (Option<Action>, Option<Duration>) {
    let Some(ttl) = optional(job, "/spec/ttlSecondsAfterFinished") else {
        return (None, None);
    };
    let done = parse_time(text(job, "/status/completionTime")).or_else(|| {
        condition(job, "/status/conditions", "Failed")
            .and_then(|c| parse_time(text(c, "/lastTransitionTime")))
    });
    let Some(done) = done else {
        return (None, None);
    };
    let at = done + chrono::Duration::seconds(ttl);
    if at > now {
        return (None, (at - now).to_std().ok());
    }
    tracing::info!(job = %format!("{}/{}", namespace(job), name(job)), "Job's TTL after finishing expired: deleting it");
    let delete = Action::Delete {
        kind: Kind::Job,
        namespace: namespace(job).into(),
        name: name(job).into(),
        uid: uid(job).into(),
        foreground: false,
    };
    (Some(delete), None)
}

#[cfg(test)]
mod tests;
