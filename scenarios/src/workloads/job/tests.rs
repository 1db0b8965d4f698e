use super::*;
use crate::workloads::testkit::{created, deleted, status_of};

fn status(actions: &[Action]) -> Value {
    status_of(actions, Kind::Job)
}

const NOW: &str = "2026-01-01T00:10:00Z";

fn now() -> DateTime<Utc> {
    parse_time(NOW).expect("time")
}

fn job(spec: Value) -> Value {
    let mut spec = spec;
    spec["template"] = json!({"metadata": {"labels": {"app": "batch"}},
                              "spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "busybox"}]}});
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "pi", "namespace": "default", "uid": "j1", "generation": 1},
           "spec": spec})
}

fn pod(name: &str, phase: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                        "creationTimestamp": "2026-01-01T00:00:00Z",
                        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi",
                                             "uid": "j1", "controller": true}]},
           "spec": {"nodeName": "n1", "restartPolicy": "Never"},
           "status": {"phase": phase}})
}

fn run(job: Value, pods: Vec<Value>) -> (Vec<Action>, Option<Duration>) {
    let snap = Snapshot {
        jobs: vec![job],
        pods,
        ..Snapshot::default()
    };
    sync(&snap, now())
}

fn condition_types(status: &Value) -> Vec<(String, String, String)> {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                text(c, "/type").to_string(),
                text(c, "/status").to_string(),
                text(c, "/reason").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_new_job_starts_parallelism_pods_labelled_and_owned() {
    let (actions, _) = run(job(json!({"parallelism": 2, "completions": 5})), vec![]);
    let pods = created(&actions);
    assert_eq!(pods.len(), 2);
    let labels = &pods[0]["metadata"]["labels"];
    assert_eq!(labels["app"], "batch");
    assert_eq!(labels[JOB_NAME], "pi");
    assert_eq!(labels["job-name"], "pi");
    assert_eq!(labels[CONTROLLER_UID], "j1");
    assert_eq!(labels["controller-uid"], "j1");
    let owner = &pods[0]["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            &owner["kind"],
            &owner["controller"],
            &owner["blockOwnerDeletion"]
        ),
        (&json!("Job"), &json!(true), &json!(true))
    );
    assert_eq!(status(&actions)["startTime"], NOW);
}

#[test]
fn only_the_remaining_completions_run() {
    let pods = vec![
        pod("a", "Succeeded"),
        pod("b", "Succeeded"),
        pod("c", "Running"),
    ];
    let (actions, _) = run(job(json!({"parallelism": 3, "completions": 4})), pods);
    // Two remain, one runs: one more.
    assert_eq!(created(&actions).len(), 1);
    let s = status(&actions);
    assert_eq!(
        (s["active"].clone(), s["succeeded"].clone()),
        (json!(1), json!(2))
    );
}

#[test]
fn a_job_completes_when_its_completions_succeeded() {
    let (actions, _) = run(job(json!({})), vec![pod("a", "Succeeded")]);
    assert!(created(&actions).is_empty());
    let s = status(&actions);
    assert_eq!(s["succeeded"], 1);
    assert_eq!(s["completionTime"], NOW);
    assert_eq!(
        condition_types(&s),
        [
            (
                "SuccessCriteriaMet".into(),
                "True".into(),
                "CompletionsReached".into()
            ),
            (
                "Complete".into(),
                "True".into(),
                "CompletionsReached".into()
            )
        ]
    );
}

#[test]
fn failures_beyond_the_backoff_limit_fail_the_job() {
    let pods = vec![pod("a", "Failed"), pod("b", "Failed"), pod("c", "Running")];
    // backoffLimit 2: a third failure may still be retried.
    let (actions, _) = run(job(json!({"backoffLimit": 2})), pods.clone());
    assert!(status(&actions).get("conditions").is_none());
    let (actions, _) = run(job(json!({"backoffLimit": 1})), pods);
    assert_eq!(deleted(&actions), ["c"], "the running Pod is stopped");
    let s = status(&actions);
    assert_eq!(s["failed"], 2);
    assert_eq!(
        condition_types(&s),
        [
            (
                "FailureTarget".into(),
                "True".into(),
                "BackoffLimitExceeded".into()
            ),
            (
                "Failed".into(),
                "True".into(),
                "BackoffLimitExceeded".into()
            )
        ]
    );
    // Without backoffLimit, the default of 6 retries.
    let six: Vec<Value> = (0..6).map(|i| pod(&format!("f{i}"), "Failed")).collect();
    let (actions, _) = run(job(json!({})), six);
    assert_eq!(created(&actions).len(), 1);
}

#[test]
fn a_suspended_job_stops_its_pods_and_the_deadline_fails_it() {
    let (actions, _) = run(job(json!({"suspend": true})), vec![pod("a", "Running")]);
    assert_eq!(deleted(&actions), ["a"]);
    assert_eq!(
        condition_types(&status(&actions)),
        [("Suspended".into(), "True".into(), "JobSuspended".into())]
    );
    let mut j = job(json!({"activeDeadlineSeconds": 60}));
    j["status"] = json!({"startTime": "2026-01-01T00:09:30Z"});
    let (_, due) = run(j.clone(), vec![pod("a", "Running")]);
    assert_eq!(due, Some(Duration::from_secs(30)));
    j["status"]["startTime"] = json!("2026-01-01T00:09:00Z");
    let (actions, _) = run(j, vec![pod("a", "Running")]);
    assert_eq!(deleted(&actions), ["a"]);
    assert_eq!(condition_types(&status(&actions))[1].2, "DeadlineExceeded");
}

#[test]
fn a_finished_job_goes_after_its_ttl() {
    let mut j = job(json!({"ttlSecondsAfterFinished": 100}));
    j["status"] = json!({"succeeded": 1, "completionTime": "2026-01-01T00:09:00Z",
                         "conditions": [{"type": "Complete", "status": "True"}]});
    let (actions, due) = run(j.clone(), vec![pod("a", "Succeeded")]);
    assert!(deleted(&actions).is_empty(), "its Pods stay: {actions:?}");
    assert_eq!(due, Some(Duration::from_secs(40)));
    j["spec"]["ttlSecondsAfterFinished"] = json!(60);
    let (actions, _) = run(j, vec![pod("a", "Succeeded")]);
    assert_eq!(deleted(&actions), ["pi"]);
}
