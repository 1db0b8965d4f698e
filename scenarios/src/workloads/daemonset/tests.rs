use super::*;
use crate::workloads::testkit::{created, deleted, status_of};

const NOW: &str = "2026-01-01T00:10:00Z";

fn node(name: &str, labels: Value, taints: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints},
           "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
}

fn ds(image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
           "metadata": {"name": "agent", "namespace": "kube-system", "uid": "ds1", "generation": 1},
           "spec": {"selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent"}},
                                 "spec": {"containers": [{"name": "c", "image": image}]}}}})
}

/// A Running, Ready Pod of `ds` on `node`.
fn pod(ds: &Value, name: &str, node: &str) -> Value {
    let mut p = pod_of(ds, Some(node));
    p["metadata"]["name"] = json!(name);
    p["metadata"]["uid"] = json!(format!("uid-{name}"));
    p["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    p["spec"]["nodeName"] = json!(node);
    p["status"] = json!({"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    p
}

fn run(ds: Value, nodes: Vec<Value>, pods: Vec<Value>) -> Vec<Action> {
    let snap = Snapshot {
        daemonsets: vec![ds],
        nodes,
        pods,
        ..Snapshot::default()
    };
    sync(&snap, NOW)
}

fn created_on(actions: &[Action]) -> Vec<String> {
    created(actions)
        .into_iter()
        .map(|o| node_of(o).to_string())
        .collect()
}

fn status(actions: &[Action]) -> Value {
    status_of(actions, Kind::DaemonSet)
}

#[test]
fn every_eligible_node_gets_one_pinned_pod_with_the_daemon_tolerations() {
    let nodes = vec![
        node("n1", json!({}), json!([])),
        // Cordoned: daemon Pods tolerate that.
        node(
            "n2",
            json!({}),
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
        ),
        // A taint the template does not tolerate.
        node(
            "n3",
            json!({}),
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
        ),
    ];
    let actions = run(ds("agent:1"), nodes, vec![]);
    assert_eq!(created_on(&actions), ["n1", "n2"]);
    let pod = actions
        .iter()
        .find_map(|a| match a {
            Action::Create { object, .. } => Some(object.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let term = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0];
    assert_eq!(
        term,
        &json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    );
    let keys: Vec<(&str, &str)> = pod["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| (text(t, "/key"), text(t, "/effect")))
        .collect();
    assert!(keys.contains(&("node.kubernetes.io/not-ready", "NoExecute")));
    assert!(keys.contains(&("node.kubernetes.io/unschedulable", "NoSchedule")));
    assert!(
        !keys
            .iter()
            .any(|(k, _)| *k == "node.kubernetes.io/network-unavailable")
    );
    let labels = &pod["metadata"]["labels"];
    assert_eq!(labels[GENERATION_LABEL], "1");
    assert!(labels[HASH_LABEL].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
    let s = status(&actions);
    assert_eq!(
        (
            s["desiredNumberScheduled"].clone(),
            s["currentNumberScheduled"].clone()
        ),
        (json!(2), json!(0))
    );
}

#[test]
fn pods_follow_node_selector_and_nodes_that_go() {
    let mut d = ds("agent:1");
    d["spec"]["template"]["spec"]["nodeSelector"] = json!({"role": "edge"});
    let nodes = vec![
        node("n1", json!({"role": "edge"}), json!([])),
        node("n2", json!({"role": "core"}), json!([])),
    ];
    let pods = vec![
        pod(&d, "on-n1", "n1"),
        pod(&d, "on-n2", "n2"),
        pod(&d, "on-gone", "gone"),
    ];
    let actions = run(d, nodes, pods);
    let mut gone = deleted(&actions);
    gone.sort();
    assert_eq!(gone, ["on-gone", "on-n2"]);
    assert!(created_on(&actions).is_empty());
    let s = status(&actions);
    assert_eq!(
        s,
        json!({"desiredNumberScheduled": 1, "currentNumberScheduled": 1, "numberMisscheduled": 2,
               "numberReady": 1, "updatedNumberScheduled": 1, "numberAvailable": 1,
               "observedGeneration": 1})
    );
}

#[test]
fn a_template_change_rolls_one_pod_at_a_time_and_on_delete_waits() {
    let old = ds("agent:1");
    let nodes: Vec<Value> = ["n1", "n2", "n3"]
        .iter()
        .map(|n| node(n, json!({}), json!([])))
        .collect();
    let pods: Vec<Value> = ["n1", "n2", "n3"]
        .iter()
        .map(|n| pod(&old, &format!("p-{n}"), n))
        .collect();
    let mut new = ds("agent:2");
    new["metadata"]["generation"] = json!(2);
    let actions = run(new.clone(), nodes.clone(), pods.clone());
    assert_eq!(deleted(&actions), ["p-n1"], "maxUnavailable 1");
    assert_eq!(
        status(&actions)["updatedNumberScheduled"],
        Value::Null,
        "0 is left out"
    );
    // One already unavailable (its replacement starting): none more goes.
    let mut rolling = pods.clone();
    rolling[0] = pod(&new, "p-n1-new", "n1");
    rolling[0]["status"]["conditions"][0]["status"] = json!("False");
    let actions = run(new.clone(), nodes.clone(), rolling);
    assert!(deleted(&actions).is_empty(), "{actions:?}");
    let mut on_delete = new;
    on_delete["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
    assert!(deleted(&run(on_delete, nodes, pods)).is_empty());
}

#[test]
fn host_network_pods_tolerate_an_unavailable_network_and_keep_their_own_tolerations() {
    let mut d = ds("agent:1");
    d["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
    d["spec"]["template"]["spec"]["tolerations"] =
        json!([{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]);
    let nodes = vec![
        node(
            "n1",
            json!({}),
            json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
        ),
        node(
            "n2",
            json!({}),
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
        ),
    ];
    assert_eq!(created_on(&run(d, nodes, vec![])), ["n1", "n2"]);
}
