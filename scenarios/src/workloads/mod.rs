//! The controllers that run workloads on the embedded API server, as kube-controller-manager,
//! kube-scheduler and the kubelets do on a real cluster (which has its own: these start only
//! for the embedded backend):
//!
//! - `deployment`: Deployment → ReplicaSets (rolling update or recreate), their status and
//!   conditions, the revision history;
//! - `replicaset`: ReplicaSet → Pods (created and deleted to match `replicas`), status;
//! - `daemonset`: DaemonSet → one Pod pinned to each eligible Node, rolling updates,
//!   status;
//! - `cronjob`: CronJob → a Job at each time of its schedule (`cron`),
//!   `concurrencyPolicy`, history limits, status;
//! - `replicationcontroller`: the same for core/v1 ReplicationControllers;
//! - `job`: Job → Pods run to completion (`parallelism`, `completions`, `backoffLimit`,
//!   `suspend`, `activeDeadlineSeconds`), status and conditions, `ttlSecondsAfterFinished`;
//! - `pods`: the scheduler (a Ready, schedulable Node whose taints the Pod tolerates, the
//!   one with the fewest Pods of the same owner), the kubelets' part (pod IP from the Node's
//!   pod CIDR, `Running` and Ready once `pod_start` has passed) and the node lifecycle's
//!   (Pods of a NotReady Node turn unready, and are deleted after `eviction_grace`; Pods of
//!   a deleted Node at once);
//! - `endpointslices`: `discovery.k8s.io/v1` EndpointSlices of every Service with a
//!   selector, following the ready Pods (what the kube-proxy view, `src/testbed/proxy.rs`, reads).
//!
//! One task runs them in turn over one read of the cluster, whenever a relevant object
//! changed in the embedded store (its change feed, the same seam the simulation's
//! kube-proxy view uses), when a Pod's start or eviction is due, and every `resync`. Every
//! read and write goes through the API server as the cluster administrator, as the
//! simulated kubelets do. Owner references are set as Kubernetes sets them, and `gc`, the
//! garbage collector, follows them: dependents of a deleted owner go (`Background`), or go
//! first (`Foreground`), or stay without it (`Orphan`), as the delete asked.
//! Timings come from tokio's clock and timestamps from `WorkloadsConfig::ambient`.
//!
//! What it offers, all from here: [`Workloads`], started with a [`WorkloadsConfig`], and
//! the annotation that gives a Pod run to completion its exit code ([`EXIT_CODE`]); the
//! controllers themselves are private.

mod cron;
mod cronjob;
mod daemonset;
mod deployment;
mod endpointslices;
mod gc;
mod job;
mod pods;
mod replicaset;
mod replicationcontroller;

pub use pods::EXIT_CODE;

use crate::apiserver::Shared;
use ccm::ambient::Ambient;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The field manager of every write.
const MANAGER: &str = "testbed-workloads";

#[derive(Debug, thiserror::Error)]
pub enum WorkloadsError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("cannot encode {what}: {error}")]
    Encode {
        what: String,
        error: serde_json::Error,
    },
}

#[derive(Debug, Clone)]
pub struct WorkloadsConfig {
    /// From a Pod's acceptance by its node's kubelet to `Running` and Ready (image pull and
    /// container start).
    pub pod_start: Duration,
    /// How long a Job's Pod (or one with the exit-code annotation, `pods::EXIT_CODE`) runs
    /// before its containers exit.
    pub pod_run: Duration,
    /// How long a Node may be NotReady before its Pods are deleted (Kubernetes: the
    /// `not-ready`/`unreachable` taints' 300 s toleration after a 40 s grace).
    pub eviction_grace: Duration,
    /// A full pass at least this often, changes or not.
    pub resync: Duration,
    /// Timestamps of statuses and conditions (the simulated clock in a simulation).
    pub ambient: Ambient,
}

impl Default for WorkloadsConfig {
    fn default() -> Self {
        WorkloadsConfig {
            pod_start: Duration::from_secs(2),
            pod_run: Duration::from_secs(2),
            eviction_grace: Duration::from_secs(10),
            resync: Duration::from_secs(30),
            ambient: Ambient::system(),
        }
    }
}

/// The running controllers; dropping the handle stops them.
pub struct Workloads {
    task: JoinHandle<()>,
}

impl Drop for Workloads {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The storages whose changes start a pass.
const WATCHED: &[&str] = &[
    "deployments",
    "replicasets",
    "replicationcontrollers",
    "daemonsets",
    "jobs",
    "cronjobs",
    "pods",
    "nodes",
    "services",
    "endpointslices",
];

impl Workloads {
    /// Starts the controllers against `client` (the administrator's), woken by `store`'s
    /// changes.
    pub fn start(client: kube::Client, store: Shared, cfg: WorkloadsConfig) -> Workloads {
        let task = tokio::spawn(run(client, store, cfg));
        Workloads { task }
    }
}

/// What the controllers keep between passes (all of it can be rebuilt: a restart only
/// restarts the countdowns).
#[derive(Debug, Default)]
pub struct Memory {
    pub pods: pods::Memory,
}

async fn run(client: kube::Client, store: Shared, cfg: WorkloadsConfig) {
    let mut changes = store.changes();
    let mut seen = 0;
    let mut memory = Memory::default();
    loop {
        let (_, rv) = store.changed_since(seen, &[]);
        seen = rv;
        let due = match pass(&client, &cfg, &mut memory).await {
            Ok(due) => due,
            Err(e) => {
                tracing::debug!(error = %e, "workload controllers: pass failed");
                Some(Instant::now() + Duration::from_millis(500))
            }
        };
        let deadline = due
            .unwrap_or_else(|| Instant::now() + cfg.resync)
            .min(Instant::now() + cfg.resync);
        // Wait for a relevant change (Lease renewals and Events, most changes, are not), or
        // for the next due start or eviction.
        loop {
            tokio::select! {
                biased;
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let (keys, rv) = store.changed_since(seen, WATCHED);
                    seen = rv;
                    // `None`: the history no longer reaches back; look anyway.
                    if keys.is_none_or(|k| !k.is_empty()) {
                        break;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        // Writes come in bursts (a controller's, a client's apply): read once they landed.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One read of everything the controllers look at.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub deployments: Vec<Value>,
    pub replicasets: Vec<Value>,
    pub replicationcontrollers: Vec<Value>,
    pub daemonsets: Vec<Value>,
    pub jobs: Vec<Value>,
    pub cronjobs: Vec<Value>,
    pub pods: Vec<Value>,
    pub nodes: Vec<Value>,
    pub services: Vec<Value>,
    pub slices: Vec<Value>,
}

/// The kinds the controllers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Deployment,
    ReplicaSet,
    ReplicationController,
    DaemonSet,
    Job,
    CronJob,
    Pod,
    Service,
    EndpointSlice,
    /// core/v1, as kube-scheduler's `FailedScheduling`.
    Event,
}

impl Kind {
    /// The kind's name, for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Deployment => "Deployment",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::ReplicationController => "ReplicationController",
            Kind::DaemonSet => "DaemonSet",
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
            Kind::Pod => "Pod",
            Kind::Service => "Service",
            Kind::EndpointSlice => "EndpointSlice",
            Kind::Event => "Event",
        }
    }

    fn resource(self) -> ApiResource {
        use k8s_openapi::api::{
            apps::v1 as apps, batch::v1 as batch, core::v1 as core, discovery::v1 as discovery,
        };
        match self {
            Kind::Deployment => ApiResource::erase::<apps::Deployment>(&()),
            Kind::ReplicaSet => ApiResource::erase::<apps::ReplicaSet>(&()),
            Kind::ReplicationController => ApiResource::erase::<core::ReplicationController>(&()),
            Kind::DaemonSet => ApiResource::erase::<apps::DaemonSet>(&()),
            Kind::Job => ApiResource::erase::<batch::Job>(&()),
            Kind::CronJob => ApiResource::erase::<batch::CronJob>(&()),
            Kind::Pod => ApiResource::erase::<core::Pod>(&()),
            Kind::Service => ApiResource::erase::<core::Service>(&()),
            Kind::EndpointSlice => ApiResource::erase::<discovery::EndpointSlice>(&()),
            Kind::Event => ApiResource::erase::<core::Event>(&()),
        }
    }
}

/// One write a controller wants.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Create {
        kind: Kind,
        namespace: String,
        object: Value,
    },
    /// A JSON merge patch, of the object or (`status`) of its status subresource.
    Patch {
        kind: Kind,
        namespace: String,
        name: String,
        status: bool,
        patch: Value,
    },
    /// Deleted with the UID as precondition: never a namesake created meanwhile. In the
    /// background (dependents collected after), or (`foreground`) after its dependents.
    Delete {
        kind: Kind,
        namespace: String,
        name: String,
        uid: String,
        foreground: bool,
    },
}

async fn list(client: &kube::Client, ar: &ApiResource) -> Result<Vec<Value>, WorkloadsError> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
    let items = api.list(&ListParams::default()).await?.items;
    items
        .into_iter()
        .map(|o| {
            serde_json::to_value(o).map_err(|error| WorkloadsError::Encode {
                what: ar.plural.clone(),
                error,
            })
        })
        .collect()
}

impl Snapshot {
    /// Reads the cluster. Dependents are read before their owners, so a dependent whose
    /// owner is missing here was orphaned (its owner cannot be newer than the read).
    pub async fn read(client: &kube::Client) -> Result<Snapshot, WorkloadsError> {
        use k8s_openapi::api::core::v1 as core;
        let slices = list(client, &Kind::EndpointSlice.resource()).await?;
        let pods = list(client, &Kind::Pod.resource()).await?;
        let replicasets = list(client, &Kind::ReplicaSet.resource()).await?;
        let replicationcontrollers = list(client, &Kind::ReplicationController.resource()).await?;
        let daemonsets = list(client, &Kind::DaemonSet.resource()).await?;
        let jobs = list(client, &Kind::Job.resource()).await?;
        let deployments = list(client, &Kind::Deployment.resource()).await?;
        let cronjobs = list(client, &Kind::CronJob.resource()).await?;
        let services = list(client, &ApiResource::erase::<core::Service>(&())).await?;
        let nodes = list(client, &ApiResource::erase::<core::Node>(&())).await?;
        Ok(Snapshot {
            deployments,
            replicasets,
            replicationcontrollers,
            daemonsets,
            jobs,
            cronjobs,
            pods,
            nodes,
            services,
            slices,
        })
    }
}

/// One pass of every controller; when the next one is due for a timer (a Pod's start or a
/// Node's eviction), if any.
async fn pass(
    client: &kube::Client,
    cfg: &WorkloadsConfig,
    memory: &mut Memory,
) -> Result<Option<Instant>, WorkloadsError> {
    let snap = Snapshot::read(client).await?;
    let now = cfg.ambient.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut actions = deployment::sync(&snap, &now);
    actions.extend(replicaset::sync(&snap, &now));
    actions.extend(replicationcontroller::sync(&snap, &now));
    actions.extend(daemonset::sync(&snap, &now));
    let (job_actions, job_due) = job::sync(&snap, utc_now(&cfg.ambient));
    actions.extend(job_actions);
    let (cron_actions, cron_due) = cronjob::sync(&snap, utc_now(&cfg.ambient));
    actions.extend(cron_actions);
    let (pod_actions, due) = pods::sync(&snap, &mut memory.pods, cfg, &now, Instant::now());
    actions.extend(pod_actions);
    let timer = |d: Option<Duration>| d.map(|d| Instant::now() + d);
    let due = [due, timer(job_due), timer(cron_due)]
        .into_iter()
        .flatten()
        .min();
    actions.extend(endpointslices::sync(&snap));
    actions.extend(gc::sync(&snap));
    for action in actions {
        if let Err(e) = apply(client, &action).await {
            // A conflict or a vanished object: the next pass reads again.
            tracing::debug!(error = %e, ?action, "workload controllers: write failed");
        }
    }
    Ok(due)
}

/// The ambient clock's time, as chrono's (the controllers compute with chrono).
fn utc_now(ambient: &Ambient) -> chrono::DateTime<chrono::Utc> {
    let t = ambient.now();
    chrono::DateTime::from_timestamp(t.as_second(), t.subsec_nanosecond().max(0) as u32)
        .unwrap_or_default()
}

async fn apply(client: &kube::Client, action: &Action) -> Result<(), WorkloadsError> {
    match action {
        Action::Create {
            kind,
            namespace,
            object,
        } => {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &kind.resource());
            let obj: DynamicObject =
                serde_json::from_value(object.clone()).map_err(|error| WorkloadsError::Encode {
                    what: format!("{kind:?}"),
                    error,
                })?;
            let pp = kube::api::PostParams {
                field_manager: Some(MANAGER.into()),
                ..kube::api::PostParams::default()
            };
            api.create(&pp, &obj).await?;
        }
        Action::Patch {
            kind,
            namespace,
            name,
            status,
            patch,
        } => {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &kind.resource());
            let pp = PatchParams {
                field_manager: Some(MANAGER.into()),
                ..PatchParams::default()
            };
            if *status {
                api.patch_status(name, &pp, &Patch::Merge(patch)).await?;
            } else {
                api.patch(name, &pp, &Patch::Merge(patch)).await?;
            }
        }
        Action::Delete {
            kind,
            namespace,
            name,
            uid,
            foreground,
        } => {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &kind.resource());
            // A policy always: a Job's own default would orphan its Pods.
            let policy = if *foreground {
                kube::api::PropagationPolicy::Foreground
            } else {
                kube::api::PropagationPolicy::Background
            };
            let dp = DeleteParams {
                propagation_policy: Some(policy),
                preconditions: Some(kube::api::Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            api.delete(name, &dp).await?;
        }
    }
    Ok(())
}

// ---- reading objects ---------------------------------------------------------------------

/// A timestamp as statuses carry it (RFC 3339, whole seconds, UTC).
pub fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A status or metadata timestamp; `None` when absent or malformed.
pub fn parse_time(t: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// Runs `one` for every owner not being deleted, with the dependents in its namespace it
/// controls (`owner_kind` in their controller reference): all the writes, and the earliest
/// time one of them asked to be looked at again.
pub fn sync_owned(
    owners: &[Value],
    dependents: &[Value],
    owner_kind: &str,
    mut one: impl FnMut(&Value, &[&Value]) -> (Vec<Action>, Option<Duration>),
) -> (Vec<Action>, Option<Duration>) {
    let mut out = Vec::new();
    let mut due: Option<Duration> = None;
    for owner in owners.iter().filter(|o| !deleting(o)) {
        let mine: Vec<&Value> = dependents
            .iter()
            .filter(|d| {
                namespace(d) == namespace(owner) && controller_of(d, owner_kind) == Some(uid(owner))
            })
            .collect();
        let (actions, next) = one(owner, &mine);
        out.extend(actions);
        if let Some(n) = next {
            due = Some(due.map_or(n, |d| d.min(n)));
        }
    }
    (out, due)
}

/// The string at `pointer`, `""` when absent.
pub fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The integer at `pointer`, `0` when absent.
pub fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

pub fn name(v: &Value) -> &str {
    text(v, "/metadata/name")
}

pub fn namespace(v: &Value) -> &str {
    text(v, "/metadata/namespace")
}

pub fn uid(v: &Value) -> &str {
    text(v, "/metadata/uid")
}

pub fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

/// The UID of the controller owner of `v` of `kind`, if it has one.
pub fn controller_of<'a>(v: &'a Value, kind: &str) -> Option<&'a str> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .filter(|r| text(r, "/kind") == kind)
        .map(|r| text(r, "/uid"))
}

/// The owner reference a controller puts on what it makes.
pub fn owner_reference(api_version: &str, kind: &str, owner: &Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name(owner), "uid": uid(owner),
           "controller": true, "blockOwnerDeletion": true})
}

/// A condition of `conditions` (a status's list) by type.
pub fn condition<'a>(v: &'a Value, pointer: &str, ty: &str) -> Option<&'a Value> {
    v.pointer(pointer)
        .and_then(Value::as_array)?
        .iter()
        .find(|c| text(c, "/type") == ty)
}

/// Whether a Pod is Ready (its `Ready` condition is `True`).
pub fn pod_ready(pod: &Value) -> bool {
    condition(pod, "/status/conditions", "Ready").is_some_and(|c| text(c, "/status") == "True")
}

/// Whether a Pod counts for its ReplicaSet (`FilterActivePods`): not being deleted, not
/// finished.
pub fn pod_active(pod: &Value) -> bool {
    !deleting(pod) && !matches!(text(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// `a` with the same key order everywhere, so that equal objects print alike.
pub fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The merge patch that takes `current` (a status) to `desired` on the `managed` keys
/// (others are left as they are), `None` when they agree. Zero counts are left out, as Go's
/// `omitempty` writes them, except the keys in `always`.
pub fn status_patch(
    current: Option<&Value>,
    desired: &Value,
    managed: &[&str],
    always: &[&str],
) -> Option<Value> {
    let mut patch = serde_json::Map::new();
    for key in managed {
        let want = desired
            .get(*key)
            .filter(|v| always.contains(key) || v.as_i64() != Some(0));
        let have = current.and_then(|c| c.get(*key));
        if want.map(canonical) != have.map(canonical) {
            patch.insert((*key).to_string(), want.cloned().unwrap_or(Value::Null));
        }
    }
    (!patch.is_empty()).then(|| json!({"status": patch}))
}

/// A condition with the given fields, keeping `old`'s transition time when its status did
/// not change (and its update time when nothing did), as Kubernetes' condition helpers do.
pub fn next_condition(
    old: Option<&Value>,
    ty: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
    with_update_time: bool,
) -> Value {
    let same_status = old.is_some_and(|o| text(o, "/status") == status);
    let unchanged = same_status
        && old.is_some_and(|o| text(o, "/reason") == reason && text(o, "/message") == message);
    let keep = |key: &str, keep: bool| {
        old.filter(|_| keep)
            .and_then(|o| o.get(key))
            .cloned()
            .unwrap_or_else(|| json!(now))
    };
    let mut c = json!({"type": ty, "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": keep("lastTransitionTime", same_status)});
    if with_update_time {
        c["lastUpdateTime"] = keep("lastUpdateTime", unchanged);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_times_while_they_hold() {
        let old = json!({"type": "Available", "status": "True", "reason": "R", "message": "m",
                         "lastTransitionTime": "t0", "lastUpdateTime": "t0"});
        let same = next_condition(Some(&old), "Available", "True", "R", "m", "t1", true);
        assert_eq!(same, old);
        let reworded = next_condition(Some(&old), "Available", "True", "R2", "m", "t1", true);
        assert_eq!(reworded["lastTransitionTime"], "t0");
        assert_eq!(reworded["lastUpdateTime"], "t1");
        let flipped = next_condition(Some(&old), "Available", "False", "R", "m", "t1", false);
        assert_eq!(flipped["lastTransitionTime"], "t1");
        assert!(flipped.get("lastUpdateTime").is_none());
    }

    #[test]
    fn controller_owners_are_found_by_kind() {
        let pod = json!({"metadata": {"ownerReferences": [
            {"kind": "ReplicaSet", "uid": "u1", "controller": true}]}});
        assert_eq!(controller_of(&pod, "ReplicaSet"), Some("u1"));
        assert_eq!(controller_of(&pod, "Deployment"), None);
        assert_eq!(controller_of(&json!({}), "ReplicaSet"), None);
    }
}

/// What the controllers' unit tests read out of a pass's writes.
#[cfg(test)]
pub(crate) mod testkit {
    use super::{Action, Kind};
    use serde_json::Value;

    /// The objects the writes create.
    pub fn created(actions: &[Action]) -> Vec<&Value> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Create { object, .. } => Some(object),
                _ => None,
            })
            .collect()
    }

    /// The names the writes delete.
    pub fn deleted(actions: &[Action]) -> Vec<&str> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Delete { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The status the writes give an object of `kind` (`Null`: none).
    pub fn status_of(actions: &[Action], kind: Kind) -> Value {
        actions
            .iter()
            .find_map(|a| match a {
                Action::Patch {
                    kind: k,
                    status: true,
                    patch,
                    ..
                } if *k == kind => Some(patch["status"].clone()),
                _ => None,
            })
            .unwrap_or(Value::Null)
    }
}
