use super::*;

fn obj(kind: &str, name: &str, owners: Value) -> Value {
    json!({"kind": kind, "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                                      "resourceVersion": "7", "ownerReferences": owners}})
}

fn owned_by(kind: &str, name: &str, block: bool) -> Value {
    json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": format!("uid-{name}"),
           "controller": true, "blockOwnerDeletion": block})
}

fn deleting_with(mut v: Value, finalizer: &str) -> Value {
    v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    v["metadata"]["finalizers"] = json!([finalizer]);
    v
}

fn summary(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .map(|a| match a {
            Action::Delete {
                name, foreground, ..
            } => format!(
                "delete {name}{}",
                if *foreground { " (foreground)" } else { "" }
            ),
            Action::Patch { name, patch, .. } => format!("patch {name} {}", patch["metadata"]),
            Action::Create { .. } => "create".into(),
        })
        .collect()
}

#[test]
fn dependents_of_a_gone_owner_are_deleted_and_others_lose_the_reference() {
    let rs = obj(
        "ReplicaSet",
        "web-a",
        json!([owned_by("Deployment", "web", true)]),
    );
    // Owned by a gone ReplicaSet and by a ConfigMap, a kind not read: the reference to the
    // ConfigMap may not be judged, so the Pod stays, without the gone owner.
    let shared = obj(
        "Pod",
        "shared",
        json!([owned_by("ReplicaSet", "gone", true),
               {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "uid-cm"}]),
    );
    let lone = obj("Pod", "lone", json!([owned_by("ReplicaSet", "gone", true)]));
    let snap = Snapshot {
        replicasets: vec![rs],
        pods: vec![shared, lone],
        ..Snapshot::default()
    };
    assert_eq!(
        summary(&sync(&snap)),
        [
            "delete web-a",
            r#"patch shared {"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"cm","uid":"uid-cm"}],"resourceVersion":"7"}"#,
            "delete lone",
        ]
    );
}

#[test]
fn a_foreground_owner_waits_for_its_blocking_dependents() {
    let d = deleting_with(obj("Deployment", "web", json!([])), FOREGROUND);
    let rs = obj(
        "ReplicaSet",
        "web-a",
        json!([owned_by("Deployment", "web", true)]),
    );
    let snap = Snapshot {
        deployments: vec![d.clone()],
        replicasets: vec![rs.clone()],
        ..Snapshot::default()
    };
    assert_eq!(summary(&sync(&snap)), ["delete web-a (foreground)"]);
    // The ReplicaSet waits for its own Pods in turn: nothing new for it.
    let waiting = deleting_with(rs, FOREGROUND);
    let pod = obj("Pod", "p", json!([owned_by("ReplicaSet", "web-a", true)]));
    let snap = Snapshot {
        deployments: vec![d.clone()],
        replicasets: vec![waiting.clone()],
        pods: vec![pod],
        ..Snapshot::default()
    };
    assert_eq!(summary(&sync(&snap)), ["delete p (foreground)"]);
    // The Pods gone, the ReplicaSet's finalizer goes; then the Deployment's.
    let snap = Snapshot {
        deployments: vec![d.clone()],
        replicasets: vec![waiting],
        ..Snapshot::default()
    };
    assert_eq!(
        summary(&sync(&snap)),
        [r#"patch web-a {"finalizers":null,"resourceVersion":"7"}"#]
    );
    // A dependent that does not block its owner is deleted but not waited for.
    let loose = obj(
        "ReplicaSet",
        "loose",
        json!([owned_by("Deployment", "web", false)]),
    );
    let snap = Snapshot {
        deployments: vec![d],
        replicasets: vec![loose],
        ..Snapshot::default()
    };
    assert_eq!(
        summary(&sync(&snap)),
        [
            "delete loose (foreground)",
            r#"patch web {"finalizers":null,"resourceVersion":"7"}"#
        ]
    );
}

#[test]
fn an_orphaning_owner_lets_its_dependents_go_free_then_goes() {
    let mut d = deleting_with(obj("Deployment", "web", json!([])), ORPHAN);
    d["metadata"]["finalizers"] = json!(["example.com/keep", ORPHAN]);
    let rs = obj(
        "ReplicaSet",
        "web-a",
        json!([owned_by("Deployment", "web", true)]),
    );
    let snap = Snapshot {
        deployments: vec![d.clone()],
        replicasets: vec![rs],
        ..Snapshot::default()
    };
    assert_eq!(
        summary(&sync(&snap)),
        [r#"patch web-a {"ownerReferences":null,"resourceVersion":"7"}"#]
    );
    let snap = Snapshot {
        deployments: vec![d],
        replicasets: vec![obj("ReplicaSet", "web-a", json!([]))],
        ..Snapshot::default()
    };
    // Other finalizers stay.
    assert_eq!(
        summary(&sync(&snap)),
        [r#"patch web {"finalizers":["example.com/keep"],"resourceVersion":"7"}"#]
    );
}
