//! DaemonSets, Jobs, CronJobs, ReplicationControllers and APIServices through the real kubectl
//! clients (`kubectl.1.27` … `kubectl.1.33`), against the embedded API server alone (no
//! controllers run them here): discovery (`api-resources`, subresources), the typed `create
//! job` / `create cronjob` generators (protobuf bodies from 1.32 on, JSON before; the stored
//! objects must not differ), `apply -f` then `get` with the server-side columns, `scale rc`,
//! `explain`, and the 422 of a Job that would restart `Always`.

use crate::kubectl::{Kubectl, cell, for_each_client, is_age, parse_table};
use serde_json::Value;
use std::sync::Mutex;

#[test]
fn api_resources_list_the_workload_kinds_with_their_subresources() {
    for_each_client("wk_discovery", |k| {
        let out = k.ok(&["api-resources"]);
        let table = parse_table(
            &out,
            &["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
        );
        for (name, short, api_version, namespaced, kind) in [
            ("daemonsets", "ds", "apps/v1", "true", "DaemonSet"),
            ("jobs", "", "batch/v1", "true", "Job"),
            ("cronjobs", "cj", "batch/v1", "true", "CronJob"),
            (
                "replicationcontrollers",
                "rc",
                "v1",
                "true",
                "ReplicationController",
            ),
            (
                "apiservices",
                "",
                "apiregistration.k8s.io/v1",
                "false",
                "APIService",
            ),
        ] {
            assert_eq!(cell(&table, "KIND", kind, "NAME"), name, "{out}");
            assert_eq!(cell(&table, "KIND", kind, "SHORTNAMES"), short);
            assert_eq!(cell(&table, "KIND", kind, "APIVERSION"), api_version);
            assert_eq!(cell(&table, "KIND", kind, "NAMESPACED"), namespaced);
        }
        let all = k.ok(&["api-resources", "--categories=all", "-o", "name"]);
        for name in [
            "daemonsets.apps",
            "jobs.batch",
            "cronjobs.batch",
            "replicationcontrollers",
        ] {
            assert!(all.lines().any(|l| l == name), "{name} not in {all}");
        }
        for (path, subresources) in [
            ("/apis/apps/v1", &["daemonsets/status"][..]),
            ("/apis/batch/v1", &["jobs/status", "cronjobs/status"][..]),
            (
                "/api/v1",
                &[
                    "replicationcontrollers/status",
                    "replicationcontrollers/scale",
                ][..],
            ),
            (
                "/apis/apiregistration.k8s.io/v1",
                &["apiservices/status"][..],
            ),
        ] {
            let list: Value = serde_json::from_str(&k.ok(&["get", "--raw", path]))
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            let names: Vec<&str> = list["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["name"].as_str())
                .collect();
            for s in subresources {
                assert!(names.contains(s), "{s} not in {path}: {names:?}");
            }
        }
    });
}

fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// A stored object with what differs between two creations (uids, times, the namespace,
/// the fields' managers) replaced or left out.
fn comparable(obj: &Value, ns: &str, uids: &[&str]) -> Value {
    let mut text = obj.to_string().replace(ns, "NS");
    for (i, uid) in uids.iter().enumerate() {
        text = text.replace(uid, &format!("UID{i}"));
    }
    // Go's JSON writes `creationTimestamp: null` in nested ObjectMeta; protobuf has no null.
    let mut v = strip_nulls(serde_json::from_str(&text).expect("JSON"));
    if let Some(m) = v["metadata"].as_object_mut() {
        for k in ["resourceVersion", "creationTimestamp", "managedFields"] {
            m.remove(k);
        }
    }
    v
}

#[test]
fn create_job_and_cronjob_store_the_same_objects_from_every_client() {
    let stored: Mutex<Vec<(u32, Vec<Value>)>> = Mutex::new(Vec::new());
    for_each_client("wk_create", |k| {
        let out = k.ok(&[
            "create",
            "cronjob",
            "tick",
            "--image=busybox:1.36",
            "--schedule=*/5 * * * *",
            "--",
            "date",
        ]);
        assert_eq!(out.trim(), "cronjob.batch/tick created");
        let out = k.ok(&[
            "create",
            "job",
            "once",
            "--image=busybox:1.36",
            "--",
            "date",
        ]);
        assert_eq!(out.trim(), "job.batch/once created");
        let out = k.ok(&["create", "job", "manual", "--from=cronjob/tick"]);
        assert_eq!(out.trim(), "job.batch/manual created");

        let cj = k.json(&["get", "cronjob", "tick"]);
        let once = k.json(&["get", "job", "once"]);
        let manual = k.json(&["get", "job", "manual"]);
        let uid = |o: &Value| {
            o["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let (cj_uid, once_uid) = (uid(&cj), uid(&once));
        // The real defaults and the generated selector.
        assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
        assert_eq!(
            cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"],
            "OnFailure"
        );
        assert_eq!(once["spec"]["backoffLimit"], 6);
        assert_eq!(once["spec"]["completions"], 1);
        assert_eq!(
            once["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            once_uid.as_str()
        );
        assert_eq!(
            once["spec"]["template"]["metadata"]["labels"]["job-name"],
            "once"
        );
        assert_eq!(manual["metadata"]["ownerReferences"][0]["uid"], cj_uid);
        assert_eq!(
            manual["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"],
            "manual"
        );
        let objects = [&cj, &once, &manual]
            .iter()
            .map(|o| comparable(o, &k.ns, &[&cj_uid, &once_uid, &uid(&manual)]))
            .collect();
        stored
            .lock()
            .expect("not poisoned")
            .push((k.minor, objects));
    });
    let mut stored = stored.into_inner().expect("not poisoned");
    // 1.32 and 1.33 send protobuf, 1.31 JSON: the server must store the same. (Older
    // clients build a different `--from` Job: no `controller: true` owner reference.)
    stored.retain(|(minor, _)| *minor >= 31);
    stored.sort_by_key(|(minor, _)| *minor);
    if let Some((first_minor, first)) = stored.first() {
        for (minor, objects) in &stored[1..] {
            assert_eq!(
                objects, first,
                "kubectl 1.{minor} and 1.{first_minor} stored different objects"
            );
        }
    }
}

fn manifests(minor: u32) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {{app: agent}}
  template:
    metadata:
      labels: {{app: agent}}
    spec:
      nodeSelector: {{kubernetes.io/os: linux}}
      containers:
      - name: agent
        image: registry.k8s.io/pause:3.9
---
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 2
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
---
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl:5.34
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "@daily"
  timeZone: Europe/Zurich
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: backup
            image: busybox:1.36
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.local{minor}.example.com
spec:
  group: local{minor}.example.com
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.remote{minor}.example.com
spec:
  group: remote{minor}.example.com
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service:
    namespace: kube-system
    name: metrics-{minor}
"#
    )
}

fn get_table(
    k: &Kubectl,
    args: &[&str],
    headers: &[&str],
) -> Vec<std::collections::HashMap<String, String>> {
    parse_table(&k.ok(args), headers)
}

#[test]
fn apply_then_get_prints_the_real_columns() {
    for_each_client("wk_apply", |k| {
        let path = k.file("workloads.yaml", &manifests(k.minor));
        let out = k.ok(&["apply", "-f", &path]);
        assert!(out.contains("daemonset.apps/agent created"), "{out}");
        assert!(out.contains("replicationcontroller/web created"), "{out}");
        assert!(out.contains("job.batch/pi created"), "{out}");
        assert!(out.contains("cronjob.batch/nightly created"), "{out}");
        // A second apply patches (strategic merge) and leaves the generated selector alone.
        let out = k.ok(&["apply", "-f", &path]);
        assert!(out.contains("job.batch/pi unchanged"), "{out}");

        let ds = get_table(
            k,
            &["get", "ds", "-o", "wide"],
            &[
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "NODE SELECTOR",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
        );
        assert_eq!(cell(&ds, "NAME", "agent", "DESIRED"), "0");
        assert_eq!(
            cell(&ds, "NAME", "agent", "NODE SELECTOR"),
            "kubernetes.io/os=linux"
        );
        assert!(is_age(&cell(&ds, "NAME", "agent", "AGE")));
        assert_eq!(
            cell(&ds, "NAME", "agent", "IMAGES"),
            "registry.k8s.io/pause:3.9"
        );
        assert_eq!(cell(&ds, "NAME", "agent", "SELECTOR"), "app=agent");

        let rc = get_table(
            k,
            &["get", "rc", "-o", "wide"],
            &[
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
        );
        assert_eq!(cell(&rc, "NAME", "web", "DESIRED"), "2");
        assert_eq!(cell(&rc, "NAME", "web", "SELECTOR"), "app=web");

        let jobs = get_table(
            k,
            &["get", "jobs"],
            &["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        );
        assert_eq!(cell(&jobs, "NAME", "pi", "STATUS"), "Running");
        assert_eq!(cell(&jobs, "NAME", "pi", "COMPLETIONS"), "0/1");
        assert_eq!(cell(&jobs, "NAME", "pi", "DURATION"), "");

        let cj = get_table(
            k,
            &["get", "cj"],
            &[
                "NAME",
                "SCHEDULE",
                "TIMEZONE",
                "SUSPEND",
                "ACTIVE",
                "LAST SCHEDULE",
                "AGE",
            ],
        );
        assert_eq!(cell(&cj, "NAME", "nightly", "SCHEDULE"), "@daily");
        assert_eq!(cell(&cj, "NAME", "nightly", "TIMEZONE"), "Europe/Zurich");
        assert_eq!(cell(&cj, "NAME", "nightly", "SUSPEND"), "False");
        assert_eq!(cell(&cj, "NAME", "nightly", "ACTIVE"), "0");
        assert_eq!(cell(&cj, "NAME", "nightly", "LAST SCHEDULE"), "<none>");

        let api = get_table(
            k,
            &["get", "apiservices"],
            &["NAME", "SERVICE", "AVAILABLE", "AGE"],
        );
        let local = format!("v1.local{}.example.com", k.minor);
        let remote = format!("v1beta1.remote{}.example.com", k.minor);
        assert_eq!(cell(&api, "NAME", &local, "SERVICE"), "Local");
        assert_eq!(cell(&api, "NAME", &local, "AVAILABLE"), "True");
        assert_eq!(
            cell(&api, "NAME", &remote, "SERVICE"),
            format!("kube-system/metrics-{}", k.minor)
        );
        assert_eq!(
            cell(&api, "NAME", &remote, "AVAILABLE"),
            "False (ServiceNotFound)"
        );
    });
}

#[test]
fn scale_explain_and_an_invalid_job() {
    for_each_client("wk_scale", |k| {
        let path = k.file("workloads.yaml", &manifests(k.minor));
        k.ok(&["apply", "-f", &path]);
        let out = k.ok(&["scale", "rc", "web", "--replicas=3"]);
        assert_eq!(out.trim(), "replicationcontroller/web scaled");
        let replicas = k.ok(&["get", "rc", "web", "-o", "jsonpath={.spec.replicas}"]);
        assert_eq!(replicas, "3");
        let scale: Value = serde_json::from_str(&k.ok(&[
            "get",
            "--raw",
            &format!(
                "/api/v1/namespaces/{}/replicationcontrollers/web/scale",
                k.ns
            ),
        ]))
        .expect("a Scale");
        assert_eq!(scale["status"]["selector"], "app=web");

        let out = k.ok(&["explain", "daemonset.spec"]);
        assert!(out.contains("DaemonSet"), "{out}");
        assert!(out.contains("updateStrategy"), "{out}");
        assert!(out.contains("revisionHistoryLimit"), "{out}");

        let bad = k.file(
            "bad-job.yaml",
            r#"apiVersion: batch/v1
kind: Job
metadata:
  name: bad
spec:
  template:
    spec:
      restartPolicy: Always
      containers:
      - name: pi
        image: perl:5.34
"#,
        );
        let err = k.fails(&["apply", "-f", &bad]);
        assert!(
            err.contains(
                r#"The Job "bad" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never""#
            ),
            "{err}"
        );
    });
}
