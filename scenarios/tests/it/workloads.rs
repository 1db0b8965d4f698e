//! Workloads on the testbed (`src/workloads/`): every installed kubectl (`kubectl.1.27` …
//! `kubectl.1.33`, next to `kubectl`) creates a Deployment, waits for its rollout, lists its
//! Pods with `-o wide`, scales it, exposes it as a LoadBalancer Service, lists its
//! EndpointSlices and rolls out a new image, each in its own namespace of one testbed (with
//! the CCM), the output and the stored objects checked after each command. Then the data plane: a Deployment behind a
//! `Local` LoadBalancer Service, scaled to 0 and back, is downtime on fakecloud's
//! availability timeline exactly while no Pod runs.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams, PostParams};
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed, LIMIT, down_intervals};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Upper bound for one kubectl command (`rollout status` waits for Pods to start).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// One client version in its own namespace.
struct Kubectl<'a> {
    minor: u32,
    bin: PathBuf,
    dir: &'a Path,
    ns: String,
}

impl Kubectl<'_> {
    /// Runs a command that must succeed (bounded by [`COMMAND_TIMEOUT`]); its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let tag = format!(
            "1{}-{}",
            self.minor,
            args.join("_").replace(['/', ' ', '='], "_")
        );
        let (out, err) = (
            self.dir.join(format!("{tag}.out")),
            self.dir.join(format!("{tag}.err")),
        );
        let mut child = Command::new(&self.bin)
            .arg("--kubeconfig")
            .arg(self.dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.join(format!("cache-1{}", self.minor)))
            .arg("-n")
            .arg(&self.ns)
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("kubectl starts");
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let stdout = std::fs::read_to_string(&out).unwrap_or_default();
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        assert!(
            status.is_some_and(|s| s.success()),
            "`kubectl.1.{} {}` failed ({status:?})\nstdout:\n{stdout}\nstderr:\n{stderr}",
            self.minor,
            args.join(" "),
        );
        stdout
    }
}

/// The rows of a printed table, split on whitespace, without the header (checked first).
fn rows(out: &str, header: &[&str]) -> Vec<Vec<String>> {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let head: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // `NOMINATED NODE` and `READINESS GATES` are two words each.
    assert!(
        head.join(" ").starts_with(&header.join(" ")),
        "header {head:?}, want {header:?}\n{out}"
    );
    lines
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The testbed's stored objects, read as the controllers left them.
struct Store<'a>(&'a scenarios::apiserver::Shared);

impl Store<'_> {
    fn deployment(&self, ns: &str) -> Deployment {
        self.0
            .object("deployments", ns, "web")
            .expect("the Deployment is stored")
    }

    fn pods(&self, ns: &str) -> Vec<Pod> {
        self.0
            .objects::<Pod>("pods")
            .into_iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
            .collect()
    }
}

/// `kubectl create deployment`, `rollout status` and `get pods -o wide` in namespace `k.ns`.
fn create_and_roll_out(k: &Kubectl, store: &Store) {
    let ns = k.ns.as_str();
    assert_eq!(
        k.ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2"
        ])
        .trim(),
        "deployment.apps/web created"
    );
    let d = store.deployment(ns);
    let spec = &d.spec;
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(
        spec.selector
            .match_labels
            .as_ref()
            .and_then(|m| m.get("app"))
            .map(String::as_str),
        Some("web")
    );
    let out = k.ok(&["rollout", "status", "deployment/web", "--timeout=50s"]);
    assert!(
        out.contains("deployment \"web\" successfully rolled out"),
        "{out}"
    );
    let status = store.deployment(ns).status.expect("status");
    assert_eq!(
        (status.updated_replicas, status.available_replicas),
        (Some(2), Some(2))
    );

    let pods = rows(
        &k.ok(&["get", "pods", "-o", "wide"]),
        &["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"],
    );
    assert_eq!(pods.len(), 2, "{pods:?}");
    for p in &pods {
        assert!(p[0].starts_with("web-"), "{p:?}");
        assert_eq!((p[1].as_str(), p[2].as_str()), ("1/1", "Running"), "{p:?}");
        assert!(p[5].starts_with("10.244."), "a pod IP: {p:?}");
        assert!(p[6].starts_with("node-"), "a node: {p:?}");
    }
    let nodes: std::collections::BTreeSet<&str> = pods.iter().map(|p| p[6].as_str()).collect();
    assert_eq!(nodes.len(), 2, "spread over two nodes: {pods:?}");
}

/// `kubectl scale`, `get deployments`/`replicasets`, `expose` and `get endpointslices` of
/// the Deployment [`create_and_roll_out`] made.
fn scale_expose_and_list(k: &Kubectl, store: &Store) {
    let ns = k.ns.as_str();

    assert_eq!(
        k.ok(&["scale", "deployment", "web", "--replicas=3"]).trim(),
        "deployment.apps/web scaled"
    );
    assert_eq!(store.deployment(ns).spec.replicas, Some(3));
    let out = k.ok(&["rollout", "status", "deployment/web", "--timeout=50s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let deployments = rows(
        &k.ok(&["get", "deployments"]),
        &["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
    );
    assert_eq!(&deployments[0][..4], ["web", "3/3", "3", "3"]);
    let sets = rows(
        &k.ok(&["get", "replicasets"]),
        &["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
    );
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(&sets[0][1..4], ["3", "3", "3"]);
    let running = store
        .pods(ns)
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count();
    assert_eq!(running, 3);

    assert_eq!(
        k.ok(&[
            "expose",
            "deployment",
            "web",
            "--type",
            "LoadBalancer",
            "--port",
            "80",
            "--target-port",
            "8080"
        ])
        .trim(),
        "service/web exposed"
    );
    let svc: Service = store
        .0
        .object("services", ns, "web")
        .expect("the Service is stored");
    let spec = svc.spec.expect("spec");
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(
        spec.selector
            .as_ref()
            .and_then(|s| s.get("app"))
            .map(String::as_str),
        Some("web")
    );

    // Until the slice exists kubectl prints no table at all ("No resources found").
    let wanted = |out: &str| {
        !out.trim().is_empty()
            && rows(out, &["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"])
                .first()
                .is_some_and(|r| r[2] == "8080" && r[3].split(',').count() == 3)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let out = loop {
        let out = k.ok(&["get", "endpointslices"]);
        if wanted(&out) || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        wanted(&out),
        "one slice, port 8080, three addresses:\n{out}"
    );
    let slices: Vec<EndpointSlice> = store
        .0
        .objects::<EndpointSlice>("endpointslices")
        .into_iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(ns))
        .collect();
    assert_eq!(slices.len(), 1);
    let labels = slices[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("kubernetes.io/service-name").map(String::as_str),
        Some("web")
    );
    for e in slices[0].endpoints.iter().flatten() {
        assert!(
            e.node_name
                .as_deref()
                .is_some_and(|n| n.starts_with("node-")),
            "{e:?}"
        );
        assert_eq!(
            e.conditions.as_ref().and_then(|c| c.ready),
            Some(true),
            "{e:?}"
        );
    }
}

/// `kubectl set image` and `rollout status`: a second ReplicaSet takes over, the first one
/// is kept with no replicas (the revision history).
fn roll_out_a_new_image(k: &Kubectl, store: &Store) {
    let ns = k.ns.as_str();
    let out = k.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    assert!(out.contains("deployment.apps/web image updated"), "{out}");
    let out = k.ok(&["rollout", "status", "deployment/web", "--timeout=50s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let mut sets: Vec<(String, i32, String)> = store
        .0
        .objects::<ReplicaSet>("replicasets")
        .into_iter()
        .filter(|rs| rs.metadata.namespace.as_deref() == Some(ns))
        .map(|rs| {
            let revision = rs
                .metadata
                .annotations
                .and_then(|a| a.get("deployment.kubernetes.io/revision").cloned())
                .unwrap_or_default();
            let image = rs
                .spec
                .template
                .and_then(|t| t.spec)
                .and_then(|s| s.containers.first().and_then(|c| c.image.clone()))
                .unwrap_or_default();
            (revision, rs.status.map_or(0, |s| s.replicas), image)
        })
        .collect();
    sets.sort();
    assert_eq!(
        sets,
        [
            ("1".to_string(), 0, "nginx".to_string()),
            ("2".to_string(), 3, "nginx:1.27".to_string())
        ]
    );
    let images = store
        .pods(ns)
        .iter()
        .filter_map(|p| p.spec.as_ref()?.containers.first()?.image.clone())
        .collect::<Vec<_>>();
    assert_eq!(images, ["nginx:1.27"; 3], "only new Pods are left");
}

#[test]
fn every_kubectl_creates_scales_exposes_and_lists_a_deployment() {
    let clients = scenarios::testbed::installed_clients();
    if clients.is_empty() {
        eprintln!("skipping: no kubectl.1.NN client found next to `kubectl` on PATH");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let bed = rt.block_on(CcmBed::start_default());
    let dir = std::env::temp_dir().join(format!("workloads-kubectl-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    std::fs::write(dir.join("kubeconfig"), bed.tb.cluster.kubeconfig_yaml()).expect("kubeconfig");
    let api = bed
        .tb
        .cluster
        .api_server()
        .expect("embedded")
        .shared()
        .clone();
    let store = Store(&api);
    let started = Instant::now();
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .map(|(minor, bin)| {
                let (dir, store) = (&dir, &store);
                let handle = s.spawn(move || {
                    let k = Kubectl {
                        minor: *minor,
                        bin: bin.clone(),
                        dir,
                        ns: format!("workloads-1{minor}"),
                    };
                    k.ok(&["create", "namespace", &k.ns]);
                    create_and_roll_out(&k, store);
                    scale_expose_and_list(&k, store);
                    roll_out_a_new_image(&k, store);
                });
                (*minor, handle)
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|(minor, h)| {
                h.join().err().map(|e| {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("kubectl.1.{minor}: {msg}")
                })
            })
            .collect()
    });
    eprintln!("{} clients in {:.1?}", clients.len(), started.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
    drop(bed);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---- the data plane -------------------------------------------------------------------------

/// Down intervals (virtual s since the epoch) on port 80 since `from` of the VIP that was
/// down longest (the IPv4 and IPv6 VIPs go down and up together).
async fn down_since(bed: &CcmBed, lb: &str, from: &str) -> Vec<(f64, f64)> {
    let av = bed.availability(lb, from).await;
    let length = |d: &Vec<(f64, f64)>| d.iter().map(|(a, b)| b - a).sum::<f64>();
    let mut worst = down_intervals(&av, 80)
        .into_values()
        .max_by(|a, b| length(a).total_cmp(&length(b)))
        .unwrap_or_default();
    worst.sort_by(|a, b| a.0.total_cmp(&b.0));
    worst
}

fn virtual_now(bed: &CcmBed) -> f64 {
    bed.tb.cloud.app().now().timestamp_micros() as f64 / 1e6
}

async fn scale(bed: &CcmBed, replicas: i32) {
    let deployments: Api<Deployment> = Api::namespaced(bed.tb.cluster.client(), "default");
    deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .expect("scale the Deployment");
}

/// A Deployment `web` of two Pods behind a `Local` LoadBalancer Service, traffic flowing
/// (two members up, 5 virtual s without downtime); the load balancer's UUID.
async fn serve_a_deployment(bed: &CcmBed) -> String {
    let client = bed.tb.cluster.client();
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx",
                                                       "ports": [{"name": "http", "containerPort": 8080}]}]}}},
    }))
    .expect("deployment");
    Api::<Deployment>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create the Deployment");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }))
    .expect("service");
    bed.create(&svc).await;
    bed.wait_ingress("web").await;

    // Traffic flows: two members up (the nodes with a Pod), then 5 virtual s without downtime.
    // (The third node runs no Pod: its member stays down, as `Local` wants.)
    let s = eventually("two members up", LIMIT, || async {
        let s = bed.snap().await;
        let up = s
            .members
            .values()
            .flatten()
            .filter(|m| m["monitor_status"] == "up")
            .count();
        (s.lbs.len() == 1 && s.lbs[0]["status"] == "running" && up == 2).then_some(s)
    })
    .await;
    let lb = s.lb_uuid();
    let flowing = bed.now();
    let t_end = virtual_now(bed) + 5.0;
    eventually("5 virtual s of traffic", LIMIT, || async {
        (virtual_now(bed) >= t_end).then_some(())
    })
    .await;
    assert!(
        down_since(bed, &lb, &flowing).await.is_empty(),
        "traffic flows"
    );
    let sets: Vec<ReplicaSet> = Api::<ReplicaSet>::namespaced(client.clone(), "default")
        .list(&Default::default())
        .await
        .expect("replicasets")
        .items;
    assert_eq!(sets.len(), 1);
    lb
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_a_deployment_to_zero_is_downtime_until_it_scales_back() {
    let bed = CcmBed::start_default().await;
    let lb = serve_a_deployment(&bed).await;

    // Scaled to 0: the last Pods go, so do the endpoints, and the VIP stops answering.
    let from = bed.now();
    let scaled_at = virtual_now(&bed);
    scale(&bed, 0).await;
    let started = eventually("downtime starts", LIMIT, || async {
        down_since(&bed, &lb, &from).await.first().map(|d| d.0)
    })
    .await;
    eprintln!(
        "downtime started {:.1} virtual s after the scale to 0",
        started - scaled_at
    );
    // Down it stays while nothing runs (10 virtual s).
    let t_end = virtual_now(&bed) + 10.0;
    eventually("10 virtual s", LIMIT, || async {
        (virtual_now(&bed) >= t_end).then_some(())
    })
    .await;
    let down = down_since(&bed, &lb, &from).await;
    let last = down.last().copied().expect("down");
    assert!(
        last.1 >= virtual_now(&bed) - 1.0,
        "still down while no Pod runs: {down:?}"
    );

    // Scaled back: Pods start, their nodes' health checks pass, the VIP answers again.
    let back_at = virtual_now(&bed);
    scale(&bed, 2).await;
    let ended = eventually("downtime ends", LIMIT, || async {
        let down = down_since(&bed, &lb, &from).await;
        let last = down.last().copied()?;
        // Ended, and answering for 2 virtual s since.
        (last.1 + 2.0 <= virtual_now(&bed)).then_some(last.1)
    })
    .await;
    let total: f64 = down_since(&bed, &lb, &from)
        .await
        .iter()
        .map(|d| d.1 - d.0)
        .sum();
    eprintln!(
        "downtime ended {:.1} virtual s after the scale back to 2; {total:.1} virtual s down in all ({:.1} virtual s between the two scales)",
        ended - back_at,
        back_at - scaled_at
    );
    assert!(
        total >= back_at - started - 1.0,
        "down from the scale to 0 until the scale back"
    );
}

/// A node that goes takes its Pods with it; the ReplicaSet places new ones on the nodes
/// left, the EndpointSlice follows, and the load balancer keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_of_a_node_that_goes_are_rescheduled_on_the_others() {
    let bed = CcmBed::start_default().await;
    let lb = serve_a_deployment(&bed).await;
    let client = bed.tb.cluster.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let node_of = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone());
    let before = pods.list(&Default::default()).await.expect("pods").items;
    let gone = before.iter().find_map(node_of).expect("a Pod on a node");
    let from = bed.now();
    bed.delete_server_of(&gone).await;
    let after = eventually(
        "two ready Pods, none on the node that went",
        LIMIT,
        || async {
            let items = pods.list(&Default::default()).await.ok()?.items;
            let ready = |p: &Pod| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            };
            let placed: Vec<String> = items
                .iter()
                .filter(|p| ready(p))
                .filter_map(node_of)
                .collect();
            (items.len() == 2 && placed.len() == 2 && !placed.contains(&gone)).then_some(placed)
        },
    )
    .await;
    let slices: Api<EndpointSlice> = Api::namespaced(client, "default");
    eventually("the EndpointSlice follows", LIMIT, || async {
        let nodes: Vec<String> = slices
            .list(&Default::default())
            .await
            .ok()?
            .items
            .iter()
            .flat_map(|s| s.endpoints.clone().unwrap_or_default())
            .filter_map(|e| e.node_name)
            .collect();
        let mut want = after.clone();
        want.sort();
        let mut have = nodes.clone();
        have.sort();
        (have == want).then_some(())
    })
    .await;
    // The load balancer serves from the Pods that are left while the new one starts: the
    // node that went had one of two, so the VIP never stops answering.
    let down = down_since(&bed, &lb, &from).await;
    assert!(
        down.is_empty(),
        "no downtime while one Pod serves: {down:?}"
    );
}

/// A Pod no Node takes says why, as kube-scheduler does: the Deployment of
/// `deploy/config.yml` selects control-plane Nodes, which the testbed has none of, and
/// `kubectl describe pod` shows a `FailedScheduling` Event counting the Nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_no_node_takes_gets_a_failed_scheduling_event() {
    let bed = CcmBed::start_default().await;
    let client = bed.tb.cluster.client();
    // Every Node initialized by the CCM first: until then the scheduler also counts the
    // uninitialized taint, and this test is about the selector alone.
    let node_api = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone());
    let nodes = eventually("every Node initialized", LIMIT, || async {
        let items = node_api.list(&Default::default()).await.ok()?.items;
        (!items.is_empty() && items.iter().all(ccm::node::metadata::is_initialized))
            .then_some(items.len())
    })
    .await;
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "cp", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "cp"}},
                 "template": {"metadata": {"labels": {"app": "cp"}},
                              "spec": {"nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                                       "containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .expect("deployment");
    Api::<Deployment>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create");
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    let event = eventually("a FailedScheduling Event", LIMIT, || async {
        events
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("FailedScheduling"))
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.kind.as_deref(), Some("Pod"));
    assert_eq!(
        event.message.as_deref(),
        Some(
            format!(
                "0/{nodes} nodes are available: {nodes} node(s) didn't match Pod's node affinity/selector."
            )
            .as_str()
        )
    );
    let pod = event.involved_object.name.clone().expect("the Pod's name");
    // What an operator reads.
    let dir = std::env::temp_dir().join(format!("failed-scheduling-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, bed.tb.cluster.kubeconfig_yaml()).expect("kubeconfig");
    let out = tokio::task::block_in_place(|| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["describe", "pod", &pod])
            .env_remove("KUBECONFIG")
            .output()
            .expect("kubectl runs")
    });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("FailedScheduling")
            && text.contains("didn't match Pod's node affinity/selector"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    // Said once: the passes since (the Deployment's status, kubectl's reads) repeat nothing.
    let count = events
        .list(&Default::default())
        .await
        .expect("events")
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .count();
    assert_eq!(count, 1);
}
