//! Where Pods run and how they get there: the parts of kube-scheduler, the kubelets and the
//! node lifecycle and pod GC controllers that a load balancer's traffic depends on.
//!
//! - **Scheduling**: a Pod without `spec.nodeName` goes to a Node that is Ready, not
//!   cordoned, whose `NoSchedule`/`NoExecute` taints it tolerates and whose labels its
//!   `nodeSelector` matches; among those the one with the fewest Pods of the same owner,
//!   then the fewest Pods, then by name (the default spreading, deterministically). The
//!   binding is a patch of `spec.nodeName` (no `Binding` subresource). A Pod no Node can
//!   take stays Pending with `PodScheduled=False` (`Unschedulable`) and a `FailedScheduling`
//!   Event counting the Nodes that failed for each reason. The required node affinity is
//!   honoured (`matchExpressions` on labels, `matchFields` on `metadata.name`, which pins a
//!   DaemonSet's Pods), and a cordoned Node takes Pods that tolerate its `unschedulable`
//!   taint. Not modelled: preferred affinity, pod (anti-)affinity, topology spread
//!   constraints, resources, priorities.
//! - **Kubelet**: the Node's kubelet accepts a bound Pod (host IP, a pod IP from the Node's
//!   pod CIDR, containers `ContainerCreating`) and reports it `Running` and Ready once
//!   `pod_start` has passed. Each Node's CIDR is its `spec.podCIDR`, else `10.244.N.0/24`
//!   given in the order Nodes are seen (the node IPAM controller's part, kept in memory);
//!   `hostNetwork` Pods get the Node's address. Probes are not run. Containers run forever,
//!   except in a Pod that runs to completion (`restartPolicy` `Never` or `OnFailure`, and
//!   owned by a Job or annotated with [`EXIT_CODE`]): its containers exit `pod_run` after
//!   they started, with the annotation's exit code (0 when absent), and the Pod is
//!   `Succeeded` (0) or `Failed` (any other). `OnFailure` is run as `Never`: a failed
//!   container is not restarted in place.
//! - **Node lifecycle**: the Pods of a Node that is not Ready are marked unready at once
//!   (`MarkPodsNotReady`) and deleted once it has been so for `eviction_grace` (taint-based
//!   eviction; a Pod that tolerates the `not-ready`/`unreachable` taint without
//!   `tolerationSeconds` stays); Pods of a Node that no longer exists are deleted at once
//!   (pod GC). Deletion is immediate: the embedded server has no graceful termination.

use super::{
    Action, Kind, Snapshot, WorkloadsConfig, condition, controller_of, deleting, name, namespace,
    pod_active, pod_ready, text, uid,
};
use crate::apiserver::apps::requirement_matches;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;
use tokio::time::Instant;

/// The testbed's annotation of a Pod (or a Pod template) that runs to completion: the exit
/// code its containers end with (`"1"`: the Pod fails, as a failing Job's would).
pub const EXIT_CODE: &str = "testbed.cloudscale.ch/exit-code";

/// What the scheduler, kubelets and node lifecycle remember between passes.
#[derive(Debug, Default)]
pub struct Memory {
    /// When each accepted Pod (by UID) is Running.
    starts: HashMap<String, Instant>,
    /// When the containers of each Running Pod that runs to completion exit.
    finishes: HashMap<String, Instant>,
    /// Since when each Node has not been Ready.
    not_ready: HashMap<String, Instant>,
    /// Each Node's /24 of the pod network, in the order Nodes were seen.
    cidrs: BTreeMap<String, u32>,
}

const POD_NETWORK: Ipv4Addr = Ipv4Addr::new(10, 244, 0, 0);

/// A Node as the scheduler and kubelets see it.
struct NodeView<'a> {
    node: &'a Value,
    ready: bool,
    address: Option<String>,
    /// The first address of its pod CIDR (a /24).
    cidr: Option<Ipv4Addr>,
}

fn node_ready(node: &Value) -> bool {
    condition(node, "/status/conditions", "Ready").is_some_and(|c| text(c, "/status") == "True")
}

/// The Node's own `spec.podCIDR` (IPv4), if set.
fn own_cidr(node: &Value) -> Option<Ipv4Addr> {
    let (ip, _) = text(node, "/spec/podCIDR").split_once('/')?;
    ip.parse().ok()
}

fn views<'a>(
    snap: &'a Snapshot,
    memory: &mut Memory,
    now: Instant,
) -> BTreeMap<&'a str, NodeView<'a>> {
    let mut out = BTreeMap::new();
    for node in &snap.nodes {
        let n = name(node);
        if !memory.cidrs.contains_key(n) {
            let used: BTreeSet<u32> = memory.cidrs.values().copied().collect();
            let free = (0..).find(|i| !used.contains(i)).unwrap_or(0);
            memory.cidrs.insert(n.to_string(), free);
        }
        let ready = node_ready(node);
        if ready {
            memory.not_ready.remove(n);
        } else {
            memory.not_ready.entry(n.to_string()).or_insert(now);
        }
        let cidr = own_cidr(node).or_else(|| {
            let i = *memory.cidrs.get(n)?;
            Some(Ipv4Addr::from(u32::from(POD_NETWORK).wrapping_add(i << 8)))
        });
        let address = node
            .pointer("/status/addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|a| text(a, "/type") == "InternalIP")
            .map(|a| text(a, "/address").to_string());
        out.insert(
            n,
            NodeView {
                node,
                ready,
                address,
                cidr,
            },
        );
    }
    memory.not_ready.retain(|n, _| out.contains_key(n.as_str()));
    out
}

/// Every write the Pods of `snap` need, and when the next timer (a start or an eviction) is
/// due.
pub fn sync(
    snap: &Snapshot,
    memory: &mut Memory,
    cfg: &WorkloadsConfig,
    now_text: &str,
    now: Instant,
) -> (Vec<Action>, Option<Instant>) {
    let nodes = views(snap, memory, now);
    let live: BTreeSet<&str> = snap.pods.iter().map(uid).collect();
    memory.starts.retain(|u, _| live.contains(u.as_str()));
    memory.finishes.retain(|u, _| live.contains(u.as_str()));
    let mut out = Vec::new();
    let mut due: Option<Instant> = None;
    let mut soonest = |t: Instant| due = Some(due.map_or(t, |d: Instant| d.min(t)));
    let mut ips: HashMap<&str, BTreeSet<Ipv4Addr>> = HashMap::new();
    for pod in snap.pods.iter().filter(|p| pod_active(p)) {
        if let Ok(ip) = text(pod, "/status/podIP").parse::<Ipv4Addr>() {
            ips.entry(text(pod, "/spec/nodeName"))
                .or_default()
                .insert(ip);
        }
    }
    let mut unscheduled = Vec::new();
    for pod in snap.pods.iter().filter(|p| !deleting(p)) {
        let bound = text(pod, "/spec/nodeName");
        if bound.is_empty() {
            if pod_active(pod) {
                unscheduled.push(pod);
            }
            continue;
        }
        let Some(view) = nodes.get(bound) else {
            // Pod GC: its Node is gone.
            out.push(super::replicaset::delete(pod));
            continue;
        };
        if !view.ready {
            let since = memory.not_ready.get(bound).copied().unwrap_or(now);
            if tolerates_forever(pod) {
                out.extend(mark_unready(pod, now_text));
            } else if now.duration_since(since) >= cfg.eviction_grace {
                out.push(super::replicaset::delete(pod));
            } else {
                out.extend(mark_unready(pod, now_text));
                soonest(since + cfg.eviction_grace);
            }
            continue;
        }
        let taken = ips.entry(bound).or_default();
        match kubelet(pod, view, taken, memory, cfg, now_text, now) {
            (Some(action), next) => {
                out.push(action);
                next.into_iter().for_each(&mut soonest);
            }
            (None, next) => next.into_iter().for_each(&mut soonest),
        }
    }
    out.extend(schedule(snap, &nodes, &unscheduled, now_text));
    (out, due)
}

/// Tolerates the taint a NotReady Node gets for good (no `tolerationSeconds`).
fn tolerates_forever(pod: &Value) -> bool {
    tolerations(pod).iter().any(|t| {
        let key = text(t, "/key");
        let effect = text(t, "/effect");
        let key_ok = matches!(
            key,
            "node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable"
        ) || (key.is_empty() && text(t, "/operator") == "Exists");
        key_ok
            && (effect.is_empty() || effect == "NoExecute")
            && t.get("tolerationSeconds").is_none()
    })
}

fn tolerations(pod: &Value) -> &[Value] {
    pod.pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn pod_status_patch(pod: &Value, status: Value) -> Action {
    Action::Patch {
        kind: Kind::Pod,
        namespace: namespace(pod).into(),
        name: name(pod).into(),
        status: true,
        patch: json!({"status": status}),
    }
}

/// The conditions of a Pod: every one `True` but `Ready` and `ContainersReady`, which are
/// `ready`; transition times kept where the status did not change.
fn conditions(pod: &Value, ready: bool, now: &str) -> Value {
    let one = |ty: &str, status: bool, reason: Option<&str>| {
        let status = if status { "True" } else { "False" };
        let old = condition(pod, "/status/conditions", ty);
        let since = old
            .filter(|o| text(o, "/status") == status)
            .map_or(now, |o| text(o, "/lastTransitionTime"));
        let mut c = json!({"type": ty, "status": status, "lastProbeTime": null,
                           "lastTransitionTime": since});
        if let Some(r) = reason.filter(|_| status == "False") {
            c["reason"] = json!(r);
        }
        c
    };
    json!([
        one("Initialized", true, None),
        one("Ready", ready, Some("ContainersNotReady")),
        one("ContainersReady", ready, Some("ContainersNotReady")),
        one("PodScheduled", true, None),
    ])
}

fn mark_unready(pod: &Value, now: &str) -> Option<Action> {
    if !pod_ready(pod) {
        return None;
    }
    Some(pod_status_patch(
        pod,
        json!({"conditions": conditions(pod, false, now)}),
    ))
}

fn containers(pod: &Value) -> &[Value] {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The statuses of the Pod's containers: creating, or running since `since`.
fn container_statuses(pod: &Value, running_since: Option<&str>) -> Vec<Value> {
    containers(pod)
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut s = json!({"name": text(c, "/name"), "image": text(c, "/image"), "imageID": "",
                               "restartCount": 0, "lastState": {}});
            match running_since {
                Some(t) => {
                    s["ready"] = json!(true);
                    s["started"] = json!(true);
                    s["state"] = json!({"running": {"startedAt": t}});
                    s["containerID"] =
                        json!(format!("containerd://{}{i:02}", uid(pod).replace('-', "")));
                }
                None => {
                    s["ready"] = json!(false);
                    s["started"] = json!(false);
                    s["state"] = json!({"waiting": {"reason": "ContainerCreating"}});
                }
            }
            s
        })
        .collect()
}

/// The lowest free address of a /24 (`.1` is the node's bridge).
fn next_ip(cidr: Ipv4Addr, taken: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    (2..255)
        .map(|host| Ipv4Addr::from(u32::from(cidr) | host))
        .find(|ip| !taken.contains(ip))
}

/// The kubelet's part for one Pod on a Ready Node: accept it, start it when due, report it
/// Ready again after its Node came back. The write, and when it is next due.
fn kubelet(
    pod: &Value,
    view: &NodeView,
    taken: &mut BTreeSet<Ipv4Addr>,
    memory: &mut Memory,
    cfg: &WorkloadsConfig,
    now_text: &str,
    now: Instant,
) -> (Option<Action>, Option<Instant>) {
    let host_ip = view.address.clone().unwrap_or_default();
    if text(pod, "/status/hostIP").is_empty() {
        let host_network = pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true);
        let ip = if host_network {
            Some(host_ip.clone())
        } else {
            view.cidr.and_then(|c| next_ip(c, taken)).map(|ip| {
                taken.insert(ip);
                ip.to_string()
            })
        };
        let Some(ip) = ip.filter(|ip| !ip.is_empty()) else {
            tracing::debug!(
                pod = name(pod),
                node = name(view.node),
                "no pod address left"
            );
            return (None, None);
        };
        let start = now + cfg.pod_start;
        memory.starts.insert(uid(pod).to_string(), start);
        let status = json!({
            "phase": "Pending",
            "conditions": conditions(pod, false, now_text),
            "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
            "podIP": ip, "podIPs": [{"ip": ip}],
            "startTime": now_text,
            "qosClass": "BestEffort",
            "containerStatuses": container_statuses(pod, None),
        });
        return (Some(pod_status_patch(pod, status)), Some(start));
    }
    match text(pod, "/status/phase") {
        "Pending" => {
            let start = *memory
                .starts
                .entry(uid(pod).to_string())
                .or_insert(now + cfg.pod_start);
            if start > now {
                return (None, Some(start));
            }
            let status = json!({
                "phase": "Running",
                "conditions": conditions(pod, true, now_text),
                "containerStatuses": container_statuses(pod, Some(now_text)),
            });
            let finish = runs_to_completion(pod).then(|| {
                let at = now + cfg.pod_run;
                memory.finishes.insert(uid(pod).to_string(), at);
                at
            });
            (Some(pod_status_patch(pod, status)), finish)
        }
        "Running" if runs_to_completion(pod) => {
            let at = *memory
                .finishes
                .entry(uid(pod).to_string())
                .or_insert(now + cfg.pod_run);
            if at > now {
                return (None, Some(at));
            }
            (Some(pod_status_patch(pod, finished(pod, now_text))), None)
        }
        "Running" if !pod_ready(pod) => {
            let status = json!({"conditions": conditions(pod, true, now_text)});
            (Some(pod_status_patch(pod, status)), None)
        }
        _ => (None, None),
    }
}

/// Whether the Pod's containers exit by themselves (see the module's documentation).
pub fn runs_to_completion(pod: &Value) -> bool {
    matches!(text(pod, "/spec/restartPolicy"), "Never" | "OnFailure")
        && (controller_of(pod, "Job").is_some()
            || pod
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(EXIT_CODE))
                .is_some())
}

/// The exit code of the Pod's containers: the annotation's, 0 without (or unreadable: a
/// test that gets it wrong sees its Pod succeed).
fn exit_code(pod: &Value) -> i64 {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(EXIT_CODE))
        .and_then(Value::as_str)
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0)
}

/// The status of a Pod whose containers exited: `Succeeded` or `Failed`, not Ready
/// (`PodCompleted`, as the kubelet says), containers `terminated`.
fn finished(pod: &Value, now: &str) -> Value {
    let code = exit_code(pod);
    let mut conds = conditions(pod, false, now);
    for c in conds.as_array_mut().into_iter().flatten() {
        if c.get("reason").is_some() {
            c["reason"] = json!("PodCompleted");
        }
    }
    let started = text(pod, "/status/startTime").to_string();
    let statuses: Vec<Value> = container_statuses(pod, Some(started.as_str()))
        .into_iter()
        .map(|mut s| {
            s["ready"] = json!(false);
            s["started"] = json!(false);
            s["state"] = json!({"terminated": {
                "exitCode": code,
                "reason": if code == 0 { "Completed" } else { "Error" },
                "startedAt": started, "finishedAt": now,
                "containerID": s["containerID"].clone()}});
            s
        })
        .collect();
    json!({
        "phase": if code == 0 { "Succeeded" } else { "Failed" },
        "conditions": conds,
        "containerStatuses": statuses,
    })
}

/// Whether a toleration of the Pod matches `taint`.
pub fn tolerated(pod: &Value, taint: &Value) -> bool {
    tolerations(pod).iter().any(|t| {
        let key_ok = match text(t, "/key") {
            "" => text(t, "/operator") == "Exists",
            k => k == text(taint, "/key"),
        };
        let value_ok =
            text(t, "/operator") == "Exists" || text(t, "/value") == text(taint, "/value");
        let effect_ok =
            text(t, "/effect").is_empty() || text(t, "/effect") == text(taint, "/effect");
        key_ok && value_ok && effect_ok
    })
}

/// Why the scheduler may not put `pod` on the Node (kube-scheduler's wording, first failing
/// filter in its order), or `None` when it may.
fn misfit(pod: &Value, view: &NodeView) -> Option<String> {
    let node = view.node;
    if !view.ready {
        return Some("node(s) were not ready".into());
    }
    let cordoned = node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    // A cordoned Node is `node.kubernetes.io/unschedulable:NoSchedule` to the scheduler's
    // NodeUnschedulable filter: a Pod tolerating that (a DaemonSet's) may still go there.
    if cordoned && !tolerated(pod, &json!({"key": UNSCHEDULABLE, "effect": "NoSchedule"})) {
        return Some("node(s) were unschedulable".into());
    }
    if let Some(t) = untolerated_taint(pod, node) {
        return Some(format!(
            "node(s) had untolerated taint {{{}: {}}}",
            text(t, "/key"),
            text(t, "/value")
        ));
    }
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    (!node_selected(spec, node)).then(|| "node(s) didn't match Pod's node affinity/selector".into())
}

const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// The first `NoSchedule`/`NoExecute` taint of the Node that the Pod does not tolerate.
pub fn untolerated_taint<'a>(pod: &Value, node: &'a Value) -> Option<&'a Value> {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| matches!(text(t, "/effect"), "NoSchedule" | "NoExecute"))
        .find(|t| !tolerated(pod, t))
}

/// Whether the Node passes a pod spec's `nodeSelector` and its required node affinity
/// (any of its terms; in a term, every `matchExpressions` requirement on the Node's labels
/// and every `matchFields` one on `metadata.name`, the only field Kubernetes allows).
pub fn node_selected(spec: &Value, node: &Value) -> bool {
    let labels = node.pointer("/metadata/labels");
    let selector_ok = spec
        .get("nodeSelector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    let terms = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    selector_ok && terms.is_none_or(|terms| terms.iter().any(|t| term_matches(t, node)))
}

fn term_matches(term: &Value, node: &Value) -> bool {
    let list = |key: &str| {
        term.get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let (exprs, fields) = (list("matchExpressions"), list("matchFields"));
    // An empty term selects nothing (`nodeaffinity.NewNodeSelector`).
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let label = |k: &str| {
        node.pointer("/metadata/labels")
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
    };
    exprs
        .iter()
        .all(|e| requirement_matches(e, label(text(e, "/key"))))
        && fields
            .iter()
            .all(|e| text(e, "/key") == "metadata.name" && requirement_matches(e, Some(name(node))))
}

/// Binds the unscheduled Pods, oldest first, spreading each owner's Pods over the Nodes.
fn schedule(
    snap: &Snapshot,
    nodes: &BTreeMap<&str, NodeView>,
    pending: &[&Value],
    now: &str,
) -> Vec<Action> {
    // (owner UID, node) → Pods; node → Pods.
    let mut by_owner: HashMap<(String, String), usize> = HashMap::new();
    let mut by_node: HashMap<String, usize> = HashMap::new();
    let owner = |p: &Value| {
        ["ReplicaSet", "StatefulSet", "DaemonSet", "Job"]
            .iter()
            .find_map(|k| controller_of(p, k))
            .unwrap_or_default()
            .to_string()
    };
    for p in snap.pods.iter().filter(|p| pod_active(p)) {
        let node = text(p, "/spec/nodeName");
        if !node.is_empty() {
            *by_owner.entry((owner(p), node.to_string())).or_default() += 1;
            *by_node.entry(node.to_string()).or_default() += 1;
        }
    }
    let mut order: Vec<&&Value> = pending.iter().collect();
    order.sort_by_key(|p| (text(p, "/metadata/creationTimestamp"), name(p)));
    let mut out = Vec::new();
    for pod in order {
        let o = owner(pod);
        let choice = nodes
            .iter()
            .filter(|(_, v)| misfit(pod, v).is_none())
            .min_by_key(|(n, _)| {
                let key = (o.clone(), n.to_string());
                (
                    by_owner.get(&key).copied().unwrap_or(0),
                    by_node.get(**n).copied().unwrap_or(0),
                    **n,
                )
            })
            .map(|(n, _)| n.to_string());
        match choice {
            Some(node) => {
                *by_owner.entry((o, node.clone())).or_default() += 1;
                *by_node.entry(node.clone()).or_default() += 1;
                out.push(Action::Patch {
                    kind: Kind::Pod,
                    namespace: namespace(pod).into(),
                    name: name(pod).into(),
                    status: false,
                    patch: json!({"spec": {"nodeName": node}}),
                });
            }
            None => out.extend(unschedulable(pod, nodes, now)),
        }
    }
    out
}

/// kube-scheduler's answer for a Pod no Node takes: `PodScheduled=False` (`Unschedulable`)
/// and a `FailedScheduling` Event, both saying how many Nodes failed for which reason,
/// written when the reason changes (`kubectl describe pod` shows why it waits).
fn unschedulable(pod: &Value, nodes: &BTreeMap<&str, NodeView>, now: &str) -> Vec<Action> {
    let message = unschedulable_message(pod, nodes);
    let old = condition(pod, "/status/conditions", "PodScheduled");
    if old.is_some_and(|c| text(c, "/status") == "False" && text(c, "/message") == message) {
        return Vec::new();
    }
    let cond = json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                      "message": message, "lastProbeTime": null, "lastTransitionTime": now});
    vec![
        pod_status_patch(pod, json!({"phase": "Pending", "conditions": [cond]})),
        failed_scheduling(pod, &message, now),
    ]
}

/// `0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's
/// node affinity/selector.`: each reason with its count, sorted as kube-scheduler sorts them.
fn unschedulable_message(pod: &Value, nodes: &BTreeMap<&str, NodeView>) -> String {
    if nodes.is_empty() {
        return "no nodes available to schedule pods".into();
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for view in nodes.values() {
        if let Some(why) = misfit(pod, view) {
            *counts.entry(why).or_default() += 1;
        }
    }
    let mut reasons: Vec<String> = counts.iter().map(|(why, n)| format!("{n} {why}")).collect();
    reasons.sort();
    format!(
        "0/{} nodes are available: {}.",
        nodes.len(),
        reasons.join(", ")
    )
}

/// The `FailedScheduling` Event kube-scheduler records for the Pod (core/v1, as
/// `kubectl describe pod` lists it), named as client-go names Events: the object's name and
/// a unique suffix, here derived from the Pod, the time and the message.
fn failed_scheduling(pod: &Value, message: &str, now: &str) -> Action {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (uid(pod), now, message).hash(&mut h);
    Action::Create {
        kind: Kind::Event,
        namespace: namespace(pod).into(),
        object: json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("{}.{:016x}", name(pod), h.finish()),
                         "namespace": namespace(pod)},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace(pod),
                               "name": name(pod), "uid": uid(pod)},
            "reason": "FailedScheduling",
            "message": message,
            "type": "Warning",
            "source": {"component": "default-scheduler"},
            "reportingComponent": "default-scheduler",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }),
    }
}

#[cfg(test)]
mod tests;
