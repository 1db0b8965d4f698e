//! DaemonSets, Jobs, CronJobs and ReplicationControllers run by the testbed's controllers
//! (`src/workloads/`), and cascading deletion through its garbage collector: what kubectl
//! and a client see on the embedded cluster. Waits are on conditions (`eventually`), never
//! on time.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node, Pod, ReplicationController};
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use kube::core::Resource;
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed, LIMIT};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;

/// kubectl against the bed, in namespace `default`: (success, stdout, stderr).
fn kubectl(bed: &CcmBed, args: &[&str]) -> (bool, String, String) {
    let dir = std::env::temp_dir().join(format!("workloads-kinds-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let kubeconfig: PathBuf = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, bed.tb.cluster.kubeconfig_yaml()).expect("kubeconfig");
    let out = tokio::task::block_in_place(|| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--request-timeout=60s")
            .args(["-n", "default"])
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .expect("kubectl runs")
    });
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kubectl_ok(bed: &CcmBed, args: &[&str]) -> String {
    let (ok, out, err) = kubectl(bed, args);
    assert!(ok, "kubectl {}: {out}\n{err}", args.join(" "));
    out
}

async fn create<K>(bed: &CcmBed, object: Value) -> K
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let object: K = serde_json::from_value(object).expect("a valid object");
    Api::<K>::namespaced(bed.tb.cluster.client(), "default")
        .create(&PostParams::default(), &object)
        .await
        .expect("created")
}

fn pods(bed: &CcmBed) -> Api<Pod> {
    Api::namespaced(bed.tb.cluster.client(), "default")
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn node_of(p: &Pod) -> String {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn owner_kinds(meta: &kube::api::ObjectMeta) -> Vec<String> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|r| r.kind.clone())
        .collect()
}

async fn node_names(bed: &CcmBed) -> Vec<String> {
    let mut names: Vec<String> = Api::<Node>::all(bed.tb.cluster.client())
        .list(&Default::default())
        .await
        .expect("nodes")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    names
}

/// The Ready Pods whose names start with `prefix`, by node.
async fn ready_pods_on(bed: &CcmBed, prefix: &str) -> Option<Vec<String>> {
    let items = pods(bed).list(&Default::default()).await.ok()?.items;
    let mine: Vec<&Pod> = items
        .iter()
        .filter(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    if !mine.iter().all(|p| ready(p)) {
        return None;
    }
    let mut nodes: Vec<String> = mine.iter().map(|p| node_of(p)).collect();
    nodes.sort();
    Some(nodes)
}

/// Waits for one Ready Pod of DaemonSet `agent` on each of `want` (sorted) and its status
/// saying so.
async fn daemon_pods_on(bed: &CcmBed, want: Vec<String>) {
    let api: Api<DaemonSet> = Api::namespaced(bed.tb.cluster.client(), "default");
    eventually(
        &format!("one Ready Pod on each of {want:?}"),
        LIMIT,
        || async {
            let placed = ready_pods_on(bed, "agent-").await?;
            let status = api.get("agent").await.ok()?.status?;
            let n = want.len() as i32;
            (placed == want
                && status.desired_number_scheduled == n
                && status.number_ready == n
                && status.number_available == Some(n)
                && status.updated_number_scheduled == Some(n))
            .then_some(())
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemonset_runs_one_ready_pod_per_node_and_follows_nodes_that_come_and_go() {
    let mut bed = CcmBed::start_default().await;
    let ds: DaemonSet = create(
        &bed,
        json!({"metadata": {"name": "agent"},
               "spec": {"selector": {"matchLabels": {"app": "agent"}},
                        "template": {"metadata": {"labels": {"app": "agent"}},
                                     "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}}),
    )
    .await;
    let nodes = node_names(&bed).await;
    daemon_pods_on(&bed, nodes.clone()).await;
    let pod = pods(&bed)
        .list(&Default::default())
        .await
        .expect("pods")
        .items[0]
        .clone();
    assert_eq!(owner_kinds(&pod.metadata), ["DaemonSet"]);
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("pod-template-generation").map(String::as_str),
        Some("1")
    );
    assert!(labels.contains_key("controller-revision-hash"));
    assert_eq!(ds.metadata.name.as_deref(), Some("agent"));

    bed.tb.add_node("node-9").await.expect("a node joins");
    let mut more = nodes.clone();
    more.push("node-9".into());
    more.sort();
    daemon_pods_on(&bed, more.clone()).await;

    let gone = nodes[0].clone();
    bed.delete_server_of(&gone).await;
    let left: Vec<String> = more.into_iter().filter(|n| *n != gone).collect();
    daemon_pods_on(&bed, left).await;
}

fn job_condition(job: &Job, ty: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == ty && c.status == "True")
        .map(|c| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

fn job_object(name: &str, spec: Value, annotations: Value) -> Value {
    let mut spec = spec;
    spec["template"] = json!({"metadata": {"annotations": annotations},
                              "spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "busybox"}]}});
    json!({"metadata": {"name": name}, "spec": spec})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_completes_and_a_failing_one_stops_at_its_backoff_limit() {
    let bed = CcmBed::start_default().await;
    let jobs: Api<Job> = Api::namespaced(bed.tb.cluster.client(), "default");
    let _: Job = create(
        &bed,
        job_object("ok", json!({"completions": 2, "parallelism": 1}), json!({})),
    )
    .await;
    let _: Job = create(
        &bed,
        job_object(
            "bad",
            json!({"backoffLimit": 1}),
            json!({scenarios::workloads::EXIT_CODE: "1"}),
        ),
    )
    .await;
    let ok = eventually("Job ok completes", LIMIT, || async {
        let j = jobs.get("ok").await.ok()?;
        job_condition(&j, "Complete").map(|_| j)
    })
    .await;
    let status = ok.status.clone().expect("a status");
    assert_eq!(status.succeeded, Some(2));
    assert!(status.completion_time.is_some() && status.start_time.is_some());
    assert!(job_condition(&ok, "SuccessCriteriaMet").is_some());
    let kubectl_says = kubectl_ok(
        &bed,
        &[
            "wait",
            "--for=condition=complete",
            "job/ok",
            "--timeout=30s",
        ],
    );
    assert!(
        kubectl_says.contains("job.batch/ok condition met"),
        "{kubectl_says}"
    );

    let bad = eventually("Job bad fails", LIMIT, || async {
        let j = jobs.get("bad").await.ok()?;
        job_condition(&j, "Failed").map(|c| (j, c))
    })
    .await;
    assert_eq!(
        bad.1,
        (
            "BackoffLimitExceeded".into(),
            "Job has reached the specified backoff limit".into()
        )
    );
    assert_eq!(bad.0.status.as_ref().and_then(|s| s.failed), Some(2));
    // The finished Pods stay, not Running: two succeeded, two failed.
    let items = pods(&bed)
        .list(&Default::default())
        .await
        .expect("pods")
        .items;
    let mut phases: Vec<&str> = items.iter().map(phase).collect();
    phases.sort();
    assert_eq!(phases, ["Failed", "Failed", "Succeeded", "Succeeded"]);
    let labels = items[0].metadata.labels.clone().unwrap_or_default();
    assert!(
        labels.contains_key("batch.kubernetes.io/controller-uid")
            && labels.contains_key("job-name")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_created_from_a_cronjob_runs_and_the_cronjob_reports_it() {
    let bed = CcmBed::start_default().await;
    let _: CronJob = create(
        &bed,
        json!({"metadata": {"name": "report"},
               "spec": {"schedule": "0 0 1 1 *",
                        "jobTemplate": {"spec": {"template": {"spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
    )
    .await;
    // kubectl 1.32 sends this Job as a protobuf body (`apiserver/protobuf/batch.rs`).
    let out = kubectl_ok(&bed, &["create", "job", "manual", "--from=cronjob/report"]);
    assert_eq!(out.trim(), "job.batch/manual created");
    let cronjobs: Api<CronJob> = Api::namespaced(bed.tb.cluster.client(), "default");
    let status = eventually("the CronJob's last success", LIMIT, || async {
        let s = cronjobs.get("report").await.ok()?.status?;
        s.last_successful_time.is_some().then_some(s)
    })
    .await;
    assert!(status.active.unwrap_or_default().is_empty());
    assert!(status.last_schedule_time.is_none(), "no scheduled run yet");
    let job = Api::<Job>::namespaced(bed.tb.cluster.client(), "default")
        .get("manual")
        .await
        .expect("the Job");
    assert_eq!(owner_kinds(&job.metadata), ["CronJob"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replication_controller_runs_and_scales_its_pods() {
    let bed = CcmBed::start_default().await;
    let _: ReplicationController = create(
        &bed,
        json!({"metadata": {"name": "web"},
               "spec": {"replicas": 2, "selector": {"app": "web"},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await;
    let rcs: Api<ReplicationController> = Api::namespaced(bed.tb.cluster.client(), "default");
    let ready_replicas = |n: i32| {
        let rcs = &rcs;
        let bed = &bed;
        async move {
            eventually(&format!("{n} ready replicas"), LIMIT, || async {
                let s = rcs.get("web").await.ok()?.status?;
                let placed = ready_pods_on(bed, "web-").await?;
                (s.replicas == n
                    && s.ready_replicas == Some(n)
                    && s.available_replicas == Some(n)
                    && placed.len() == n as usize)
                    .then_some(())
            })
            .await
        }
    };
    ready_replicas(2).await;
    // Through the `scale` subresource, as kubectl scales.
    let out = kubectl_ok(&bed, &["scale", "rc", "web", "--replicas=3"]);
    assert_eq!(out.trim(), "replicationcontroller/web scaled");
    ready_replicas(3).await;
    let out = kubectl_ok(&bed, &["get", "pods", "-o", "name"]);
    assert_eq!(out.lines().count(), 3, "{out}");
}

fn deployment(name: &str) -> Value {
    json!({"metadata": {"name": name},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

async fn two_ready_pods(bed: &CcmBed, name: &str) {
    eventually(&format!("two Ready Pods of {name}"), LIMIT, || async {
        let placed = ready_pods_on(bed, &format!("{name}-")).await?;
        (placed.len() == 2).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_cascades_orphan_and_foreground() {
    let bed = CcmBed::start_default().await;
    let client = bed.tb.cluster.client();
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");

    // Orphan: the ReplicaSet stays, without its owner, and keeps its Pods.
    let _: Deployment = create(&bed, deployment("kept")).await;
    two_ready_pods(&bed, "kept").await;
    kubectl_ok(&bed, &["delete", "deployment", "kept", "--cascade=orphan"]);
    let rs = eventually("the ReplicaSet loses its owner", LIMIT, || async {
        let rs = sets
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .next()?;
        rs.metadata
            .owner_references
            .as_ref()
            .is_none_or(Vec::is_empty)
            .then_some(rs)
    })
    .await;
    assert!(deployments.get_opt("kept").await.expect("read").is_none());
    let rs_name = rs.metadata.name.clone().expect("named");
    let kept = pods(&bed)
        .list(&Default::default())
        .await
        .expect("pods")
        .items;
    assert_eq!(kept.len(), 2);
    assert!(
        kept.iter()
            .all(|p| owner_kinds(&p.metadata) == ["ReplicaSet"])
    );

    // Foreground: every Pod and the ReplicaSet are deleted before the Deployment.
    let _: Deployment = create(&bed, deployment("gone")).await;
    two_ready_pods(&bed, "gone").await;
    let rv = pods(&bed)
        .list(&Default::default())
        .await
        .expect("pods")
        .metadata
        .resource_version
        .expect("a resourceVersion");
    let mut events = Api::<Deployment>::namespaced(client.clone(), "default")
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch deployments")
        .boxed();
    kubectl_ok(
        &bed,
        &["delete", "deployment", "gone", "--cascade=foreground"],
    );
    let mut deployment_rv = 0u64;
    while let Some(Ok(e)) = events.next().await {
        match e {
            WatchEvent::Modified(d) if d.metadata.name.as_deref() == Some("gone") => {
                let finalizers = d.metadata.finalizers.clone().unwrap_or_default();
                assert!(
                    d.metadata.deletion_timestamp.is_none()
                        || finalizers.contains(&"foregroundDeletion".to_string()),
                    "{finalizers:?}"
                );
            }
            WatchEvent::Deleted(d) if d.metadata.name.as_deref() == Some("gone") => {
                deployment_rv = d
                    .metadata
                    .resource_version
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                break;
            }
            _ => {}
        }
    }
    assert!(deployment_rv > 0, "the Deployment went");
    // Its dependents were gone by then: kubectl waited for the Deployment only.
    let left_sets: Vec<String> = sets
        .list(&Default::default())
        .await
        .expect("replicasets")
        .items
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect();
    assert_eq!(left_sets, [rs_name]);
    let left = pods(&bed)
        .list(&Default::default())
        .await
        .expect("pods")
        .items;
    assert!(
        left.iter().all(|p| p
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("kept-"))),
        "{left:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deleted_without_a_policy_orphans_its_pods_with_a_warning() {
    let bed = CcmBed::start_default().await;
    let jobs: Api<Job> = Api::namespaced(bed.tb.cluster.client(), "default");
    let _: Job = create(&bed, job_object("once", json!({}), json!({}))).await;
    eventually("the Job completes", LIMIT, || async {
        job_condition(&jobs.get("once").await.ok()?, "Complete")
    })
    .await;
    // A DELETE without a body, as `kubectl delete --raw` sends it: kubectl prints the
    // server's warning.
    let (ok, _, err) = kubectl(
        &bed,
        &[
            "delete",
            "--raw",
            "/apis/batch/v1/namespaces/default/jobs/once",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        err.contains("Warning: child pods are preserved by default when jobs are deleted"),
        "{err}"
    );
    let pod = eventually("the Job's Pod freed", LIMIT, || async {
        let gone = jobs.get_opt("once").await.ok()?.is_none();
        let p = pods(&bed)
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .next()?;
        (gone
            && p.metadata
                .owner_references
                .as_ref()
                .is_none_or(Vec::is_empty))
        .then_some(p)
    })
    .await;
    assert_eq!(phase(&pod), "Succeeded");
    // With a policy, no warning; Background takes the Pods along.
    let _: Job = create(&bed, job_object("twice", json!({}), json!({}))).await;
    eventually("the second Job completes", LIMIT, || async {
        job_condition(&jobs.get("twice").await.ok()?, "Complete")
    })
    .await;
    jobs.delete("twice", &DeleteParams::background())
        .await
        .expect("deleted");
    eventually("its Pod goes with it", LIMIT, || async {
        let items = pods(&bed).list(&Default::default()).await.ok()?.items;
        (items.len() == 1).then_some(())
    })
    .await;
}
