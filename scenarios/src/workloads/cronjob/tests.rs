use super::*;

fn t(s: &str) -> DateTime<Utc> {
    parse_time(s).expect("time")
}

fn cronjob(spec: Value) -> Value {
    let mut spec = spec;
    spec["jobTemplate"] = json!({"metadata": {"labels": {"app": "report"}},
                                 "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "busybox"}]}}}});
    json!({"apiVersion": "batch/v1", "kind": "CronJob",
           "metadata": {"name": "report", "namespace": "default", "uid": "cj1",
                        "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": spec})
}

/// A Job of the CronJob, finished as `done` says (`None`: running).
fn job(name: &str, scheduled: &str, done: Option<&str>) -> Value {
    let mut j = json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                                    "resourceVersion": "5",
                                    "annotations": {SCHEDULED_TIMESTAMP: scheduled},
                                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                                                         "name": "report", "uid": "cj1", "controller": true}]},
                       "status": {}});
    if let Some(ty) = done {
        j["status"] = json!({"conditions": [{"type": ty, "status": "True"}],
                             "completionTime": scheduled});
    }
    j
}

fn run(cj: Value, jobs: Vec<Value>, now: &str) -> (Vec<Action>, Option<Duration>) {
    let snap = Snapshot {
        cronjobs: vec![cj],
        jobs,
        ..Snapshot::default()
    };
    sync(&snap, t(now))
}

fn summary(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .map(|a| match a {
            Action::Create { object, .. } => format!("create {}", name(object)),
            Action::Delete { name, .. } => format!("delete {name}"),
            Action::Patch { patch, .. } => format!("status {}", patch["status"]),
        })
        .collect()
}

#[test]
fn the_last_missed_time_runs_and_the_next_is_due() {
    // Every 10 minutes; at 00:35 the runs of 00:10 … 00:30 were missed: only 00:30 runs.
    let (actions, due) = run(
        cronjob(json!({"schedule": "*/10 * * * *"})),
        vec![],
        "2026-01-01T00:35:00Z",
    );
    let minutes = t("2026-01-01T00:30:00Z").timestamp() / 60;
    assert_eq!(
        summary(&actions),
        [
            format!("create report-{minutes}"),
            r#"status {"lastScheduleTime":"2026-01-01T00:30:00Z"}"#.to_string()
        ]
    );
    let Action::Create { object, .. } = &actions[0] else {
        panic!("a Job");
    };
    assert_eq!(
        object["metadata"]["annotations"][SCHEDULED_TIMESTAMP],
        "2026-01-01T00:30:00Z"
    );
    assert_eq!(object["metadata"]["labels"]["app"], "report");
    assert_eq!(object["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(object["spec"]["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(due, Some(Duration::from_secs(5 * 60)));
    // Too late for the starting deadline: nothing runs, the next time is still due.
    let (actions, due) = run(
        cronjob(json!({"schedule": "*/10 * * * *", "startingDeadlineSeconds": 60})),
        vec![],
        "2026-01-01T00:35:00Z",
    );
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(due, Some(Duration::from_secs(5 * 60)));
    // Suspended: nothing, and no timer.
    let (actions, due) = run(
        cronjob(json!({"schedule": "*/10 * * * *", "suspend": true})),
        vec![],
        "2026-01-01T00:35:00Z",
    );
    assert!(actions.is_empty() && due.is_none(), "{actions:?}");
}

#[test]
fn concurrency_policies_forbid_or_replace_an_active_job() {
    let mut cj = cronjob(json!({"schedule": "*/10 * * * *", "concurrencyPolicy": "Forbid"}));
    cj["status"] = json!({"lastScheduleTime": "2026-01-01T00:10:00Z"});
    let running = job("report-old", "2026-01-01T00:10:00Z", None);
    let (actions, _) = run(cj.clone(), vec![running.clone()], "2026-01-01T00:20:30Z");
    let s = summary(&actions);
    assert_eq!(s.len(), 1, "{s:?}");
    assert!(s[0].starts_with(r#"status {"active":[{"#), "{s:?}");
    cj["spec"]["concurrencyPolicy"] = json!("Replace");
    let (actions, _) = run(cj, vec![running], "2026-01-01T00:20:30Z");
    let s = summary(&actions);
    assert_eq!(s[0], "delete report-old");
    assert!(s[1].starts_with("create report-"), "{s:?}");
}

#[test]
fn finished_jobs_beyond_the_history_limits_go_oldest_first() {
    let mut cj = cronjob(json!({"schedule": "0 0 1 1 *", "successfulJobsHistoryLimit": 1}));
    cj["status"] = json!({"lastScheduleTime": "2026-01-01T00:00:00Z"});
    let jobs = vec![
        job("ok-2", "2026-01-01T00:02:00Z", Some("Complete")),
        job("ok-1", "2026-01-01T00:01:00Z", Some("Complete")),
        job("ok-3", "2026-01-01T00:03:00Z", Some("Complete")),
        job("bad-1", "2026-01-01T00:01:00Z", Some("Failed")),
        job("bad-2", "2026-01-01T00:02:00Z", Some("Failed")),
    ];
    let (actions, _) = run(cj, jobs, "2026-01-01T00:05:00Z");
    assert_eq!(
        summary(&actions),
        [
            "delete ok-1",
            "delete ok-2",
            "delete bad-1",
            r#"status {"lastSuccessfulTime":"2026-01-01T00:03:00Z"}"#
        ]
    );
}
