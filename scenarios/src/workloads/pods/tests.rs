use super::*;
use std::time::Duration;

fn node(name: &str, ip: &str, ready: bool) -> Value {
    json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
           "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "Unknown" }}],
                      "addresses": [{"type": "InternalIP", "address": ip}]}})
}

fn pod(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                        "creationTimestamp": "2026-01-01T00:00:00Z",
                        "ownerReferences": [{"kind": "ReplicaSet", "uid": "rs1", "controller": true}]},
           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
           "status": {"phase": "Pending"}})
}

fn cfg() -> WorkloadsConfig {
    WorkloadsConfig {
        pod_start: Duration::from_secs(2),
        eviction_grace: Duration::from_secs(10),
        ..WorkloadsConfig::default()
    }
}

fn patches(actions: &[Action]) -> Vec<(String, Value)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Patch { name, patch, .. } => Some((name.clone(), patch.clone())),
            _ => None,
        })
        .collect()
}

fn three_nodes() -> Vec<Value> {
    vec![
        node("n1", "10.0.0.11", true),
        node("n2", "10.0.0.12", true),
        node("n3", "10.0.0.13", false),
    ]
}

#[test]
fn pods_spread_over_ready_nodes_that_they_tolerate() {
    let mut nodes = three_nodes();
    nodes.push(node("n4", "10.0.0.14", true));
    nodes[3]["spec"] = json!({"taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                                          "value": "true", "effect": "NoSchedule"}]});
    let pods: Vec<Value> = (0..4).map(|i| pod(&format!("p{i}"), "")).collect();
    let snap = Snapshot {
        nodes,
        pods,
        ..Snapshot::default()
    };
    let (actions, _) = sync(&snap, &mut Memory::default(), &cfg(), "t", Instant::now());
    let bound: Vec<String> = patches(&actions)
        .iter()
        .map(|(_, p)| text(p, "/spec/nodeName").to_string())
        .collect();
    // n3 is not Ready, n4 tainted: n1 and n2 take two each.
    assert_eq!(bound, ["n1", "n2", "n1", "n2"]);
}

#[test]
fn a_pod_no_node_takes_stays_pending_unschedulable() {
    let snap = Snapshot {
        nodes: vec![node("n3", "10.0.0.13", false)],
        pods: vec![pod("p", "")],
        ..Snapshot::default()
    };
    let (actions, _) = sync(&snap, &mut Memory::default(), &cfg(), "t", Instant::now());
    let (_, patch) = &patches(&actions)[0];
    assert_eq!(patch["status"]["conditions"][0]["reason"], "Unschedulable");
}

/// kube-scheduler's answer: each Node's first failing reason, counted, in the condition and
/// in one `FailedScheduling` Event, which is not written again while the reasons stay.
#[test]
fn an_unschedulable_pod_says_why_each_node_refused_it_once() {
    let mut nodes = three_nodes();
    nodes[0]["spec"] = json!({"unschedulable": true});
    nodes[1]["spec"] = json!({"taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                                          "value": "true", "effect": "NoSchedule"}]});
    nodes.push(node("n4", "10.0.0.14", true));
    nodes.push(node("n5", "10.0.0.15", true));
    let mut p = pod("p", "");
    p["spec"]["nodeSelector"] = json!({"node-role.kubernetes.io/control-plane": ""});
    let snap = Snapshot {
        nodes,
        pods: vec![p.clone()],
        ..Snapshot::default()
    };
    let (actions, _) = sync(&snap, &mut Memory::default(), &cfg(), "t", Instant::now());
    let expected = "0/5 nodes are available: \
        1 node(s) had untolerated taint {node.cloudprovider.kubernetes.io/uninitialized: true}, \
        1 node(s) were not ready, 1 node(s) were unschedulable, \
        2 node(s) didn't match Pod's node affinity/selector.";
    let (_, patch) = &patches(&actions)[0];
    assert_eq!(patch["status"]["conditions"][0]["message"], expected);
    let events: Vec<&Value> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Create {
                kind: Kind::Event,
                object,
                ..
            } => Some(object),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), 1, "{actions:?}");
    assert_eq!(events[0]["reason"], "FailedScheduling");
    assert_eq!(events[0]["type"], "Warning");
    assert_eq!(events[0]["message"], expected);
    assert_eq!(events[0]["involvedObject"]["name"], "p");
    assert_eq!(events[0]["involvedObject"]["uid"], "uid-p");
    assert_eq!(events[0]["source"]["component"], "default-scheduler");
    // Once the Pod carries the condition, the next pass writes nothing.
    p["status"]["conditions"] = patch["status"]["conditions"].clone();
    let snap = Snapshot {
        pods: vec![p],
        ..snap
    };
    let (again, _) = sync(&snap, &mut Memory::default(), &cfg(), "t2", Instant::now());
    assert!(again.is_empty(), "{again:?}");
}

#[tokio::test(start_paused = true)]
async fn a_bound_pod_gets_an_address_and_runs_after_its_start() {
    let mut memory = Memory::default();
    let snap = Snapshot {
        nodes: three_nodes(),
        pods: vec![pod("p", "n2")],
        ..Snapshot::default()
    };
    let t0 = Instant::now();
    let (actions, due) = sync(&snap, &mut memory, &cfg(), "t0", t0);
    let (_, accepted) = &patches(&actions)[0];
    let status = &accepted["status"];
    assert_eq!(status["hostIP"], "10.0.0.12");
    // n1 was seen first: 10.244.0.0/24; n2 has the next /24.
    assert_eq!(status["podIP"], "10.244.1.2");
    assert_eq!(
        status["containerStatuses"][0]["state"]["waiting"]["reason"],
        "ContainerCreating"
    );
    assert_eq!(due, Some(t0 + Duration::from_secs(2)));

    let mut p = pod("p", "n2");
    p["status"] = status.clone();
    let snap = Snapshot {
        nodes: three_nodes(),
        pods: vec![p.clone()],
        ..Snapshot::default()
    };
    let (actions, due) = sync(
        &snap,
        &mut memory,
        &cfg(),
        "t1",
        t0 + Duration::from_secs(1),
    );
    assert!(actions.is_empty(), "not yet: {actions:?}");
    assert_eq!(due, Some(t0 + Duration::from_secs(2)));
    let (actions, _) = sync(
        &snap,
        &mut memory,
        &cfg(),
        "t2",
        t0 + Duration::from_secs(2),
    );
    let (_, running) = &patches(&actions)[0];
    assert_eq!(running["status"]["phase"], "Running");
    let ready = running["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .cloned();
    assert_eq!(ready.map(|c| c["status"].clone()), Some(json!("True")));
}

#[tokio::test(start_paused = true)]
async fn pods_of_a_node_that_goes_are_unready_then_evicted() {
    let mut memory = Memory::default();
    let mut running = pod("p", "n3");
    running["status"] = json!({"phase": "Running", "hostIP": "10.0.0.13", "podIP": "10.244.2.2",
                               "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t"}]});
    let snap = Snapshot {
        nodes: three_nodes(),
        pods: vec![running],
        ..Snapshot::default()
    };
    let t0 = Instant::now();
    let (actions, due) = sync(&snap, &mut memory, &cfg(), "t0", t0);
    let (_, unready) = &patches(&actions)[0];
    assert_eq!(unready["status"]["conditions"][1]["status"], "False");
    assert_eq!(due, Some(t0 + Duration::from_secs(10)));
    let (actions, _) = sync(
        &snap,
        &mut memory,
        &cfg(),
        "t1",
        t0 + Duration::from_secs(10),
    );
    assert!(matches!(actions.as_slice(), [Action::Delete { name, .. }] if name == "p"));

    // A Pod whose Node is gone is deleted at once.
    let snap = Snapshot {
        nodes: Vec::new(),
        pods: vec![pod("q", "gone")],
        ..Snapshot::default()
    };
    let (actions, _) = sync(&snap, &mut Memory::default(), &cfg(), "t", Instant::now());
    assert!(matches!(actions.as_slice(), [Action::Delete { name, .. }] if name == "q"));
}

#[test]
fn addresses_skip_those_in_use_and_follow_a_set_pod_cidr() {
    let mut nodes = vec![node("n1", "10.0.0.11", true)];
    nodes[0]["spec"] = json!({"podCIDR": "10.50.7.0/24"});
    let mut busy = pod("busy", "n1");
    busy["status"] = json!({"phase": "Running", "hostIP": "10.0.0.11", "podIP": "10.50.7.2",
                            "conditions": [{"type": "Ready", "status": "True"}]});
    let snap = Snapshot {
        nodes,
        pods: vec![busy, pod("new", "n1")],
        ..Snapshot::default()
    };
    let (actions, _) = sync(&snap, &mut Memory::default(), &cfg(), "t", Instant::now());
    let (_, accepted) = &patches(&actions)[0];
    assert_eq!(accepted["status"]["podIP"], "10.50.7.3");
}

/// A Pod with the Job's owner (or the exit-code annotation) and `restartPolicy: Never`.
fn job_pod(name: &str, exit_code: Option<&str>) -> Value {
    let mut p = pod(name, "n1");
    p["metadata"]["ownerReferences"] = json!([{"kind": "Job", "uid": "j1", "controller": true}]);
    p["spec"]["restartPolicy"] = json!("Never");
    if let Some(code) = exit_code {
        p["metadata"]["annotations"] = json!({EXIT_CODE: code});
    }
    p["status"] = json!({"phase": "Running", "hostIP": "10.0.0.11", "startTime": "t0",
                         "conditions": [{"type": "Ready", "status": "True"}]});
    p
}

fn finish(p: Value) -> (Vec<Action>, Option<Instant>, Option<Value>) {
    let mut memory = Memory::default();
    let snap = Snapshot {
        nodes: three_nodes(),
        pods: vec![p],
        ..Snapshot::default()
    };
    let t0 = Instant::now();
    let (actions, due) = sync(&snap, &mut memory, &cfg(), "t1", t0);
    assert!(actions.is_empty(), "{actions:?}");
    let later = t0 + cfg().pod_run;
    assert_eq!(due, Some(later), "the containers' exit is due");
    let (actions, next) = sync(&snap, &mut memory, &cfg(), "t2", later);
    let status = patches(&actions).first().map(|(_, p)| p["status"].clone());
    (actions, next, status)
}

#[test]
fn a_jobs_pod_runs_for_pod_run_then_succeeds_or_fails_with_its_exit_code() {
    let (_, next, status) = finish(job_pod("ok", None));
    assert_eq!(next, None);
    let status = status.expect("a status patch");
    assert_eq!(status["phase"], "Succeeded");
    let state = &status["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(
        (state["exitCode"].clone(), state["reason"].clone()),
        (json!(0), json!("Completed"))
    );
    let ready = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (ready["status"].clone(), ready["reason"].clone()),
        (json!("False"), json!("PodCompleted"))
    );

    let (_, _, status) = finish(job_pod("bad", Some("3")));
    let status = status.expect("a status patch");
    assert_eq!(status["phase"], "Failed");
    assert_eq!(
        status["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        3
    );
}

#[test]
fn a_pod_that_restarts_always_keeps_running() {
    let mut p = job_pod("web", Some("1"));
    p["spec"]["restartPolicy"] = json!("Always");
    let snap = Snapshot {
        nodes: three_nodes(),
        pods: vec![p],
        ..Snapshot::default()
    };
    let (actions, due) = sync(&snap, &mut Memory::default(), &cfg(), "t", Instant::now());
    assert!(actions.is_empty() && due.is_none(), "{actions:?} {due:?}");
}

#[test]
fn the_scheduler_honours_required_node_affinity_and_cordons_tolerated() {
    let mut nodes = three_nodes();
    nodes[2] = node("n3", "10.0.0.13", true);
    nodes[2]["spec"] = json!({"unschedulable": true});
    let pinned = |name: &str, node: &str| {
        let mut p = pod(name, "");
        p["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
        p
    };
    let mut daemon = pinned("daemon", "n3");
    daemon["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/unschedulable",
                                            "operator": "Exists", "effect": "NoSchedule"}]);
    let mut by_label = pod("by-label", "");
    by_label["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn",
                                                     "values": ["n1"]}]}]}}});
    let snap = Snapshot {
        nodes,
        pods: vec![
            pinned("on-n2", "n2"),
            daemon,
            pinned("cordoned", "n3"),
            by_label,
        ],
        ..Snapshot::default()
    };
    let (actions, _) = sync(&snap, &mut Memory::default(), &cfg(), "t", Instant::now());
    let bound: Vec<(String, String)> = patches(&actions)
        .into_iter()
        .filter(|(_, p)| p.pointer("/spec/nodeName").is_some())
        .map(|(n, p)| (n, text(&p, "/spec/nodeName").to_string()))
        .collect();
    assert_eq!(
        bound,
        [
            ("by-label".to_string(), "n2".to_string()),
            ("daemon".into(), "n3".into()),
            ("on-n2".into(), "n2".into())
        ]
    );
}
