//! The CronJob controller (Kubernetes' `pkg/controller/cronjob`,
//! https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/): at each time of
//! `schedule` (`cron.rs`) a Job of `jobTemplate`, named `<cronjob>-<minutes since the
//! epoch of the scheduled time>` and annotated `batch.kubernetes.io/cronjob-scheduled-timestamp`
//! as the real controller names and annotates it, owned by the CronJob. When times were
//! missed (the controller was not running) only the last one runs, and only if it is within
//! `startingDeadlineSeconds`. `concurrencyPolicy`: `Allow` runs Jobs side by side, `Forbid`
//! skips a time while one is active (it runs later if still within the deadline), `Replace`
//! deletes the active ones first. `suspend` holds new Jobs back. Finished Jobs beyond
//! `successfulJobsHistoryLimit` (default 3) and `failedJobsHistoryLimit` (default 1) are
//! deleted, the oldest first. Status: `active` (references to its unfinished Jobs, those made
//! by `kubectl create job --from=cronjob/…` included), `lastScheduleTime`,
//! `lastSuccessfulTime`.
//!
//! The time is `WorkloadsConfig::ambient`'s; [`sync`] says when the next run is due, so no
//! pass polls. `timeZone` is honoured only as `UTC`/`Etc/UTC` or unset (the testbed's Nodes
//! and clock are UTC); a CronJob naming another zone is left alone, with a log line.

use super::cron::Schedule;
use super::job::finished;
use super::{
    Action, Kind, Snapshot, deleting, name, namespace, owner_reference, parse_time, rfc3339,
    status_patch, sync_owned, text, uid,
};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::time::Duration;

pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// Every write the CronJobs of `snap` need at `now`, and in how long the next run is due.
pub fn sync(snap: &Snapshot, now: DateTime<Utc>) -> (Vec<Action>, Option<Duration>) {
    sync_owned(&snap.cronjobs, &snap.jobs, "CronJob", |o, d| {
        sync_one(o, d, now)
    })
}

fn delete_job(job: &Value) -> Action {
    Action::Delete {
        kind: Kind::Job,
        namespace: namespace(job).into(),
        name: name(job).into(),
        uid: uid(job).into(),
        foreground: false,
    }
}

fn sync_one(cj: &Value, jobs: &[&Value], now: DateTime<Utc>) -> (Vec<Action>, Option<Duration>) {
    let object = format!("{}/{}", namespace(cj), name(cj));
    let mut out = history(cj, jobs);
    let active: Vec<&Value> = jobs
        .iter()
        .copied()
        .filter(|j| finished(j).is_none() && !deleting(j))
        .collect();
    let mut last_schedule = parse_time(text(cj, "/status/lastScheduleTime"));
    let zone = text(cj, "/spec/timeZone");
    let schedule = match text(cj, "/spec/schedule").parse::<Schedule>() {
        Ok(s) if matches!(zone, "" | "UTC" | "Etc/UTC") => Some(s),
        Ok(_) => {
            tracing::warn!(cronjob = %object, zone, "CronJob: only UTC is supported as its time zone; not scheduling it");
            None
        }
        Err(e) => {
            tracing::warn!(cronjob = %object, error = %e, "CronJob: unparseable schedule");
            None
        }
    };
    let mut due = None;
    let suspended = cj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    if let Some(schedule) = schedule.filter(|_| !suspended) {
        let (run, next) = due_run(cj, &schedule, now);
        due = next.and_then(|n| (n - now).to_std().ok());
        if let Some(at) = run {
            let (actions, ran) = start(cj, jobs, &active, at);
            out.extend(actions);
            if ran {
                last_schedule = Some(at);
            }
        }
    }
    out.extend(status(cj, jobs, &active, last_schedule));
    (out, due)
}

/// The scheduled time to run now (the last one since the last run or the creation, within
/// `startingDeadlineSeconds`), and the next one after now.
fn due_run(
    cj: &Value,
    schedule: &Schedule,
    now: DateTime<Utc>,
) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
    let mut earliest = parse_time(text(cj, "/status/lastScheduleTime"))
        .or_else(|| parse_time(text(cj, "/metadata/creationTimestamp")))
        .unwrap_or(now);
    if let Some(s) = cj
        .pointer("/spec/startingDeadlineSeconds")
        .and_then(Value::as_i64)
    {
        earliest = earliest.max(now - chrono::Duration::seconds(s));
    }
    let run = schedule.last_at_or_before(now).filter(|t| *t > earliest);
    (run, schedule.next_after(now))
}

/// Starts the Job of `at` as `concurrencyPolicy` allows; whether it started (or already had).
fn start(cj: &Value, jobs: &[&Value], active: &[&Value], at: DateTime<Utc>) -> (Vec<Action>, bool) {
    let job_name = format!("{}-{}", name(cj), at.timestamp() / 60);
    if jobs.iter().any(|j| name(j) == job_name) {
        return (Vec::new(), true);
    }
    let mut out = Vec::new();
    match text(cj, "/spec/concurrencyPolicy") {
        "Forbid" if !active.is_empty() => return (out, false),
        "Replace" => out.extend(active.iter().map(|j| delete_job(j))),
        _ => {}
    }
    tracing::info!(cronjob = %format!("{}/{}", namespace(cj), name(cj)), job = %job_name, "CronJob: starting its scheduled Job");
    out.push(Action::Create {
        kind: Kind::Job,
        namespace: namespace(cj).into(),
        object: job_of(cj, &job_name, at),
    });
    (out, true)
}

/// The Job of the CronJob's template for the scheduled time `at`.
pub fn job_of(cj: &Value, job_name: &str, at: DateTime<Utc>) -> Value {
    let template = cj
        .pointer("/spec/jobTemplate")
        .cloned()
        .unwrap_or(json!({}));
    let mut annotations = template
        .pointer("/metadata/annotations")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or(json!({}));
    annotations[SCHEDULED_TIMESTAMP] = json!(rfc3339(at));
    let mut metadata = json!({
        "name": job_name,
        "namespace": namespace(cj),
        "annotations": annotations,
        "ownerReferences": [owner_reference("batch/v1", "CronJob", cj)],
    });
    if let Some(l) = template.pointer("/metadata/labels") {
        metadata["labels"] = l.clone();
    }
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
           "spec": template.get("spec").cloned().unwrap_or(json!({}))})
}

/// When a Job started, for ordering: its scheduled time, else its creation.
fn started(job: &Value) -> String {
    let scheduled = job
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(SCHEDULED_TIMESTAMP))
        .and_then(Value::as_str);
    scheduled
        .unwrap_or_else(|| text(job, "/metadata/creationTimestamp"))
        .to_string()
}

/// The finished Jobs beyond the history limits, oldest first.
fn history(cj: &Value, jobs: &[&Value]) -> Vec<Action> {
    let mut out = Vec::new();
    for (ty, pointer, default) in [
        ("Complete", "/spec/successfulJobsHistoryLimit", 3),
        ("Failed", "/spec/failedJobsHistoryLimit", 1),
    ] {
        let limit = cj
            .pointer(pointer)
            .and_then(Value::as_i64)
            .unwrap_or(default)
            .max(0) as usize;
        let mut done: Vec<&&Value> = jobs
            .iter()
            .filter(|j| finished(j) == Some(ty) && !deleting(j))
            .collect();
        done.sort_by_key(|j| (started(j), name(j).to_string()));
        let surplus = done.len().saturating_sub(limit);
        out.extend(done.into_iter().take(surplus).map(|j| delete_job(j)));
    }
    out
}

fn status(
    cj: &Value,
    jobs: &[&Value],
    active: &[&Value],
    last_schedule: Option<DateTime<Utc>>,
) -> Option<Action> {
    let refs: Vec<Value> = active
        .iter()
        .map(|j| {
            json!({"apiVersion": "batch/v1", "kind": "Job", "name": name(j),
                        "namespace": namespace(j), "uid": uid(j),
                        "resourceVersion": text(j, "/metadata/resourceVersion")})
        })
        .collect();
    let last_success = jobs
        .iter()
        .filter(|j| finished(j) == Some("Complete"))
        .map(|j| text(j, "/status/completionTime").to_string())
        .chain(std::iter::once(
            text(cj, "/status/lastSuccessfulTime").to_string(),
        ))
        .filter(|t| !t.is_empty())
        .max();
    // Absent keys, not nulls: the patch compares what is there.
    let mut desired = json!({});
    if !refs.is_empty() {
        desired["active"] = json!(refs);
    }
    if let Some(t) = last_schedule {
        desired["lastScheduleTime"] = json!(rfc3339(t));
    }
    if let Some(t) = last_success {
        desired["lastSuccessfulTime"] = json!(t);
    }
    let patch = status_patch(
        cj.get("status"),
        &desired,
        &["active", "lastScheduleTime", "lastSuccessfulTime"],
        &[],
    )?;
    Some(Action::Patch {
        kind: Kind::CronJob,
        namespace: namespace(cj).into(),
        name: name(cj).into(),
        status: true,
        patch,
    })
}

#[cfg(test)]
mod tests;
