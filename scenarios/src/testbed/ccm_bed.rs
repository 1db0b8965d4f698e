//! The CCM running in-process on a testbed: what the CCM's end-to-end tests and benchmarks
//! share. [`InProcessCcm`] starts one CCM (several may share a testbed, as under leader
//! election); [`CcmBed`] is a testbed with its kubeconfig file, one CCM and helpers to read
//! fakecloud (its API, admin API and data-plane oracle) and the cluster.
//!
//! Test support: the helpers panic with a message naming what failed, as a test wants.

use crate::testbed::cluster::Cluster;
use crate::testbed::kubelet::KubeletConfig;
use crate::testbed::wait::eventually;
use crate::testbed::{SUBNET_CIDR, Testbed, TestbedConfig};
use ccm::app::{self, AppError, Environment, Running};
use ccm::metrics::Metrics;
use ccm::options::Options;
use clap::Parser;
use fakecloud::FakeCloud;
use k8s_openapi::api::core::v1::{Event, Service};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A route of a load balancer: (listener protocol, listener port, member node port).
pub type Route = (String, u16, u16);

/// What a started CCM reports: its health address and metrics.
type Started = Option<(Option<SocketAddr>, Arc<Metrics>)>;

/// A CCM in-process. Dropping it asks it to stop.
pub struct InProcessCcm {
    running: Arc<Mutex<Started>>,
    /// The CCM's task: await it after [`InProcessCcm::stop`], abort it to kill the CCM
    /// without a clean shutdown (its lease is not released).
    pub task: JoinHandle<Result<(), AppError>>,
    stop: Option<oneshot::Sender<()>>,
}

impl InProcessCcm {
    /// Starts a CCM with `args` (flags, without the program name) against `kubeconfig` and
    /// `cloud`, with an API timeout of `api_timeout_s` seconds.
    pub fn start(kubeconfig: &Path, cloud: &FakeCloud, api_timeout_s: u32, args: &[&str]) -> Self {
        let mut argv = vec![
            "cloudscale-cloud-controller-manager".to_string(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--bind-address".into(),
            "127.0.0.1".into(),
            "--secure-port".into(),
            "0".into(),
        ];
        argv.extend(args.iter().map(|s| s.to_string()));
        let opts = Options::parse_from(argv);
        let env = Environment {
            access_token: Some(cloud.token().to_string()),
            api_url: Some(cloud.base_url()),
            api_timeout: Some(api_timeout_s.to_string()),
        };
        let running = Arc::new(Mutex::new(None));
        let slot = running.clone();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(app::run(
            opts,
            env,
            async move {
                let _ = rx.await;
            },
            move |r: &Running| {
                if let Ok(mut s) = slot.lock() {
                    *s = Some((r.health_addr, r.metrics.clone()));
                }
            },
        ));
        InProcessCcm {
            running,
            task,
            stop: Some(tx),
        }
    }

    /// Its health address and metrics, once it has started.
    pub fn started(&self) -> Started {
        self.running.lock().ok().and_then(|s| s.clone())
    }

    /// Its metrics, once it has started.
    pub fn metrics(&self) -> Option<Arc<Metrics>> {
        self.started().map(|s| s.1)
    }

    /// Asks it to shut down cleanly (as on SIGTERM); await [`InProcessCcm::task`] to see
    /// it finish.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Service reconciles counted by its metrics so far.
    pub fn service_reconciles(&self) -> u64 {
        self.reconciles("service")
    }

    /// Reconciles of `controller` (`service`, `node-lifecycle`, …) counted so far.
    pub fn reconciles(&self, controller: &str) -> u64 {
        self.metrics().map_or(0, |m| m.reconciles(controller))
    }
}

impl Drop for InProcessCcm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The flags every CCM on a [`CcmBed`] gets: no leader election, a fast load-balancer
/// poll and resync, so scenarios run in seconds.
pub const FAST_FLAGS: &[&str] = &[
    "--leader-elect=false",
    "--cluster-name",
    "test-cluster",
    "--load-balancer-poll-interval",
    "50ms",
    "--service-resync-period",
    "1s",
    "--node-monitor-period",
    "200ms",
];

/// How to build a [`CcmBed`].
#[derive(Debug, Clone)]
pub struct CcmBedConfig {
    pub testbed: TestbedConfig,
    /// Flags for the CCM; `None` starts none (start your own with [`InProcessCcm::start`]).
    pub ccm_flags: Option<Vec<String>>,
    pub api_timeout_s: u32,
}

impl Default for CcmBedConfig {
    /// Three nodes, fakecloud's clock at 100× (a 10 s reconfiguration takes 100 ms), fast
    /// kubelet heartbeats, kube-proxy and Pod starts, a CCM with [`FAST_FLAGS`].
    fn default() -> Self {
        CcmBedConfig {
            testbed: TestbedConfig {
                nodes: 3,
                cloud: fakecloud::Config {
                    clock: fakecloud::ClockMode::Scaled { scale: 100.0 },
                    ..fakecloud::Config::for_tests()
                },
                kubelet: KubeletConfig {
                    heartbeat: Duration::from_millis(200),
                    ..KubeletConfig::default()
                },
                proxy_interval: Duration::from_millis(200),
                // Pods start in half a second (a Job's run as long) and leave a NotReady node after two.
                workloads: Some(crate::workloads::WorkloadsConfig {
                    pod_start: Duration::from_millis(500),
                    pod_run: Duration::from_millis(500),
                    eviction_grace: Duration::from_secs(2),
                    resync: Duration::from_secs(5),
                    ..crate::workloads::WorkloadsConfig::default()
                }),
                ..TestbedConfig::default()
            },
            ccm_flags: Some(FAST_FLAGS.iter().map(|s| s.to_string()).collect()),
            api_timeout_s: 5,
        }
    }
}

/// A testbed on the embedded cluster, its kubeconfig written to a file, and a CCM.
pub struct CcmBed {
    pub tb: Testbed,
    /// The CCM's kubeconfig: its ServiceAccount, whose RBAC the API server enforces.
    pub kubeconfig: PathBuf,
    pub ccm: Option<InProcessCcm>,
    pub http: reqwest::Client,
}

impl Drop for CcmBed {
    fn drop(&mut self) {
        // The CCM first, so it does not log errors about a vanished cluster.
        self.ccm.take();
        let _ = std::fs::remove_file(&self.kubeconfig);
        // Every scenario doubles as an RBAC check: the CCM runs as the ServiceAccount of
        // deploy/config.yml, and a request the API server refused it is a missing rule.
        if !std::thread::panicking()
            && let Some(api) = self.tb.cluster.api_server()
            && let Ok(user) = crate::testbed::ccm_identity::user_name()
        {
            let refused: Vec<String> = api
                .shared()
                .requests()
                .iter()
                .filter(|r| r.user == user && (r.code == 401 || r.code == 403))
                .map(|r| format!("{} {} {:?} {:?}", r.verb, r.resource, r.subresource, r.name))
                .collect();
            assert!(
                refused.is_empty(),
                "the API server refused the CCM (deploy/kustomize/rbac.yaml lacks a rule): {refused:?}"
            );
        }
    }
}

/// The longest a scenario waits for the CCM to converge.
pub const LIMIT: Duration = Duration::from_secs(30);

impl CcmBed {
    /// [`CcmBedConfig::default`].
    pub async fn start_default() -> CcmBed {
        CcmBed::start(CcmBedConfig::default()).await
    }

    pub async fn start(config: CcmBedConfig) -> CcmBed {
        let cluster = Cluster::embedded().await.expect("embedded cluster");
        let tb = Testbed::start(cluster, config.testbed)
            .await
            .expect("testbed");
        let kubeconfig =
            std::env::temp_dir().join(format!("ccm-bed-{}.yaml", uuid::Uuid::new_v4()));
        std::fs::write(&kubeconfig, tb.cluster.ccm_kubeconfig_yaml()).expect("write kubeconfig");
        let ccm = config.ccm_flags.map(|flags| {
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            InProcessCcm::start(&kubeconfig, &tb.cloud, config.api_timeout_s, &flags)
        });
        CcmBed {
            tb,
            kubeconfig,
            ccm,
            http: reqwest::Client::new(),
        }
    }

    pub fn services(&self) -> Api<Service> {
        Api::namespaced(self.tb.cluster.client(), "default")
    }

    pub async fn create(&self, svc: &Service) {
        self.services()
            .create(&PostParams::default(), svc)
            .await
            .expect("create the Service");
    }

    /// Merge-patches the Service `name` in `default`.
    pub async fn patch(&self, name: &str, patch: &Value) {
        self.services()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|e| panic!("patch {name}: {e}"));
    }

    pub async fn annotate(&self, name: &str, key: &str, value: &str) {
        self.patch(name, &json!({"metadata": {"annotations": {key: value}}}))
            .await;
    }

    /// Events about the object `name` in `default`.
    pub async fn events(&self, name: &str) -> Vec<Event> {
        let events: Api<Event> = Api::namespaced(self.tb.cluster.client(), "default");
        events
            .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }

    /// Waits for an Event about `object` with `reason` whose message contains `text` (any
    /// message for ""); returns it.
    pub async fn wait_event(&self, object: &str, reason: &str, text: &str) -> Event {
        eventually(
            &format!("a {reason} Event about {object}"),
            LIMIT,
            || async {
                self.events(object).await.into_iter().find(|e| {
                    e.reason.as_deref() == Some(reason)
                        && e.message.as_deref().unwrap_or_default().contains(text)
                })
            },
        )
        .await
    }

    /// One request to fakecloud's API (`path` under `/v1`) with the token; the JSON answer
    /// (`Null` for none).
    pub async fn cloud(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut rb = self
            .http
            .request(method, format!("{}{path}", self.tb.cloud.api_url()))
            .bearer_auth(self.tb.cloud.token());
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let r = rb.send().await.expect("fakecloud");
        r.json::<Value>().await.unwrap_or(Value::Null)
    }

    /// A list from fakecloud's API; panics on an error answer (it must not read as empty).
    pub async fn cloud_list(&self, path: &str) -> Vec<Value> {
        match self.cloud(reqwest::Method::GET, path, None).await {
            Value::Array(v) => v,
            other => panic!("GET {path}: not a list: {other}"),
        }
    }

    /// A GET from fakecloud's admin API (`path` under `/_fake`).
    pub async fn fake(&self, path: &str) -> Value {
        fakecloud_admin(&self.tb.cloud, reqwest::Method::GET, path, None).await
    }

    /// Requests fakecloud has logged since the log was last cleared.
    pub async fn request_log(&self) -> Vec<Value> {
        match self.fake("/requests").await {
            Value::Array(v) => v,
            other => panic!("request log: not a list: {other}"),
        }
    }

    /// Clears fakecloud's request log.
    pub async fn clear_request_log(&self) {
        self.http
            .delete(format!("{}/_fake/requests", self.tb.cloud.base_url()))
            .send()
            .await
            .expect("clear the request log");
    }

    /// (reads, writes) fakecloud served since the log was last cleared.
    pub async fn reads_and_writes(&self) -> (usize, usize) {
        let log = self.request_log().await;
        let reads = log.iter().filter(|r| r["method"] == "GET").count();
        (reads, log.len() - reads)
    }

    /// fakecloud's view of every load-balancer resource now. A pool deleted between the
    /// list and the read of its members makes it look again.
    pub async fn snap(&self) -> Snap {
        'again: for _ in 0..20 {
            let pools = self.cloud_list("/load-balancers/pools").await;
            let mut members = BTreeMap::new();
            for p in &pools {
                let path = format!(
                    "/load-balancers/pools/{}/members",
                    p["uuid"].as_str().unwrap_or_default()
                );
                match self.cloud(reqwest::Method::GET, &path, None).await {
                    Value::Array(m) => {
                        members.insert(p["name"].as_str().unwrap_or_default().to_string(), m);
                    }
                    Value::Object(o) if o.get("detail").is_some_and(|d| d == "Not found.") => {
                        continue 'again;
                    }
                    other => panic!("GET {path}: not a list: {other}"),
                }
            }
            return Snap {
                lbs: self.cloud_list("/load-balancers").await,
                pools,
                listeners: self.cloud_list("/load-balancers/listeners").await,
                monitors: self.cloud_list("/load-balancers/health-monitors").await,
                members,
            };
        }
        panic!("the pools kept changing under the snapshot");
    }

    /// Waits until the snapshot satisfies `check` and is settled with `ports` ports.
    pub async fn converge(&self, what: &str, ports: usize, check: impl Fn(&Snap) -> bool) -> Snap {
        eventually(what, LIMIT, || async {
            let s = self.snap().await;
            (s.settled(ports) && check(&s)).then_some(s)
        })
        .await
    }

    /// Creates `svc` (with `ports` ports, serving every Node), waits for its ingress and
    /// until its load balancer is settled with a member per Node in each pool, every one
    /// up; returns fakecloud's view then. The ingress comes once each port has a member up;
    /// the others join in a later pass (ccm/README.md, "New load balancers and bursts").
    pub async fn create_converged(&self, svc: &Service, ports: usize) -> Snap {
        self.create(svc).await;
        let name = svc.metadata.name.clone().unwrap_or_default();
        self.wait_ingress(&name).await;
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(self.tb.cluster.client());
        let nodes = nodes
            .list(&Default::default())
            .await
            .unwrap_or_else(|e| panic!("list nodes: {e}"))
            .items
            .len();
        self.converge("a member per node, every one up", ports, |s| {
            s.member_counts().iter().all(|&n| n == nodes)
        })
        .await
    }

    /// Waits until a whole reconcile pass of the CCM (from one read of the floating IPs to
    /// the next) wrote nothing: a new load balancer serves and is published with one member
    /// per port, and a later pass adds the others (ccm/README.md, "New load balancers and
    /// bursts"), which a settled snapshot does not show.
    pub async fn quiet(&self) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let writes = self.writes_of_two_passes().await;
            if writes.is_empty() {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no reconcile pass without writes within {LIMIT:?}: {writes:#?}"
            );
        }
    }

    /// Waits until the Service `name` has an ingress in its status; returns the Service.
    pub async fn wait_ingress(&self, name: &str) -> Service {
        eventually(&format!("ingress of {name}"), LIMIT, || async {
            let s = self.services().get(name).await.ok()?;
            (!ingress(&s).is_empty()).then_some(s)
        })
        .await
    }

    /// A new, unassigned IPv4 floating IP: its `network` (with prefix) and bare address.
    pub async fn create_floating_ip(&self) -> (String, String) {
        let fip = self
            .cloud(
                reqwest::Method::POST,
                "/floating-ips",
                Some(json!({"ip_version": 4})),
            )
            .await;
        let network = fip["network"]
            .as_str()
            .unwrap_or_else(|| panic!("floating IP without network: {fip}"))
            .to_string();
        let address = network.split('/').next().unwrap_or_default().to_string();
        (network, address)
    }

    /// Waits until the floating IP `address` is assigned to the load balancer `lb`; returns
    /// the floating IP.
    pub async fn wait_floating_ip_on(&self, address: &str, lb: &str) -> Value {
        eventually(&format!("floating IP {address} on {lb}"), LIMIT, || async {
            let f = self
                .cloud(
                    reqwest::Method::GET,
                    &format!("/floating-ips/{address}"),
                    None,
                )
                .await;
            (f["load_balancer"]["uuid"] == lb).then_some(f)
        })
        .await
    }

    /// Deletes the server of Node `node` through the API (the VM is gone).
    pub async fn delete_server_of(&self, node: &str) {
        let server = self
            .tb
            .server_of(node)
            .unwrap_or_else(|| panic!("no server for {node}"));
        self.cloud(reqwest::Method::DELETE, &format!("/servers/{server}"), None)
            .await;
    }

    /// Waits until the Service `name` is gone from the cluster (its finalizer removed).
    pub async fn wait_service_gone(&self, name: &str) {
        eventually(&format!("Service {name} gone"), LIMIT, || async {
            self.services()
                .get_opt(name)
                .await
                .ok()?
                .is_none()
                .then_some(())
        })
        .await
    }

    /// The load balancer UUID the CCM recorded on Service `name` (waits for it).
    pub async fn lb_uuid_of(&self, name: &str) -> String {
        eventually(&format!("the load balancer of {name}"), LIMIT, || async {
            let s = self.services().get(name).await.ok()?;
            s.metadata
                .annotations
                .as_ref()?
                .get("k8s.cloudscale.ch/loadbalancer-uuid")
                .cloned()
        })
        .await
    }

    /// Every configuration the load balancer `lb` applied, in order: the operation and its
    /// routes, each (listener protocol, listener port, node port of an enabled member of
    /// the listener's pool). What the data plane really ran, not what the API showed.
    pub fn applied_routes(&self, lb: &str) -> Vec<(String, std::collections::BTreeSet<Route>)> {
        let Ok(id) = uuid::Uuid::parse_str(lb) else {
            panic!("not a load balancer UUID: {lb}");
        };
        self.tb.cloud.app().read("", |ctx| {
            let Some(h) = ctx.st.dataplane().lbs.get(&id) else {
                return Vec::new();
            };
            h.ops
                .iter()
                .map(|op| {
                    let routes = op
                        .config
                        .listeners
                        .iter()
                        .flat_map(|l| {
                            op.config
                                .members
                                .iter()
                                .filter(move |m| Some(m.pool) == l.pool && m.enabled)
                                .map(move |m| (l.protocol.clone(), l.port, m.protocol_port))
                        })
                        .collect();
                    (op.operation.clone(), routes)
                })
                .collect()
        })
    }

    /// The writes of the next two passes over the account's load balancers (each lists
    /// the floating IPs, which nothing else does), starting from a cleared request log: a
    /// converged Service makes none.
    pub async fn writes_of_two_passes(&self) -> Vec<Value> {
        self.clear_request_log().await;
        eventually("two reconciles", LIMIT, || async {
            let log = self.request_log().await;
            let passes = log
                .iter()
                .filter(|r| r["method"] == "GET" && r["path"] == "/v1/floating-ips")
                .count();
            (passes >= 2).then_some(())
        })
        .await;
        self.writes().await
    }

    /// Sets fakecloud's switches for undocumented API rules.
    pub fn set_rules(&self, rules: fakecloud::ApiRules) {
        self.tb.cloud.set_rules(rules);
    }

    /// The InternalIP of Node `node`.
    pub async fn node_ip(&self, node: &str) -> String {
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(self.tb.cluster.client());
        let n = nodes
            .get(node)
            .await
            .unwrap_or_else(|e| panic!("node {node}: {e}"));
        n.status
            .and_then(|s| s.addresses)
            .into_iter()
            .flatten()
            .find(|a| a.type_ == "InternalIP")
            .map(|a| a.address)
            .unwrap_or_else(|| panic!("node {node} has no InternalIP"))
    }

    /// A ready endpoint of Service `service` (in `default`) on Node `node`, as the
    /// EndpointSlice controller would publish it for a running pod there.
    pub async fn endpoint_on(&self, service: &str, node: &str) {
        let slice: k8s_openapi::api::discovery::v1::EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": format!("{service}-{node}"),
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.9.9"], "nodeName": node,
                           "conditions": {"ready": true}}],
        }))
        .unwrap_or_else(|e| panic!("endpoint slice: {e}"));
        let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
            Api::namespaced(self.tb.cluster.client(), "default");
        slices
            .create(&PostParams::default(), &slice)
            .await
            .unwrap_or_else(|e| panic!("endpoint slice of {service} on {node}: {e}"));
    }

    /// Events about `object` with `reason`, their messages.
    pub async fn event_messages(&self, object: &str, reason: &str) -> Vec<String> {
        self.events(object)
            .await
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.message)
            .collect()
    }

    /// Writes (POST, PATCH, DELETE) in fakecloud's request log since it was last cleared.
    pub async fn writes(&self) -> Vec<Value> {
        self.request_log()
            .await
            .into_iter()
            .filter(|r| r["method"] != "GET")
            .collect()
    }

    /// The UUID of the testbed's subnet.
    pub async fn subnet_uuid(&self) -> String {
        let subnets = self.cloud_list("/subnets").await;
        subnets
            .iter()
            .find(|s| s["cidr"] == SUBNET_CIDR)
            .and_then(|s| s["uuid"].as_str())
            .expect("testbed subnet")
            .to_string()
    }

    /// fakecloud's virtual time now, formatted as the API does.
    pub fn now(&self) -> String {
        fakecloud::clock::format_time(self.tb.cloud.app().now())
    }

    /// The virtual time `secs` seconds ago.
    pub fn now_minus(&self, secs: f64) -> String {
        fakecloud::clock::format_time(
            self.tb.cloud.app().now() - fakecloud::clock::delta_from_secs(secs),
        )
    }

    /// The oracle's entries for `lb` since `from` (new connections from a default client
    /// address, 203.0.113.10).
    pub async fn availability(&self, lb: &str, from: &str) -> Vec<Value> {
        self.availability_for(lb, from, "203.0.113.10").await
    }

    /// [`CcmBed::availability`] for new connections from `client`.
    pub async fn availability_for(&self, lb: &str, from: &str, client: &str) -> Vec<Value> {
        let av = self
            .fake(&format!(
                "/load-balancers/{lb}/availability?from={from}&client={client}"
            ))
            .await;
        // A missing answer must not read as "no downtime".
        av["entries"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("availability of {lb}: no entries in {av}"))
    }
}

/// One request to `fc`'s admin API (`path` under `/_fake`); panics unless it succeeds.
/// Returns the JSON answer (`Null` for an empty one).
pub async fn fakecloud_admin(
    fc: &FakeCloud,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    fc.admin(method, path, body)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The Service `web` the scenarios use: type LoadBalancer, ports `http` 80 → 8080 and
/// `https` 443 → 8443, with `annotations`.
pub fn web_service(annotations: Value) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "annotations": annotations},
        "spec": {"type": "LoadBalancer", "ports": [
            {"name": "http", "port": 80, "targetPort": 8080},
            {"name": "https", "port": 443, "targetPort": 8443},
        ]},
    }))
    .unwrap_or_else(|e| panic!("the web Service: {e}"))
}

/// A `LoadBalancer` Service `name` in `default` with `ports` (a JSON list of
/// `spec.ports` entries) and `annotations`.
pub fn lb_service(name: &str, ports: Value, annotations: Value) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"type": "LoadBalancer", "ports": ports},
    }))
    .unwrap_or_else(|e| panic!("the Service {name}: {e}"))
}

/// fakecloud's view of every load-balancer resource at one moment.
#[derive(Debug, Clone)]
pub struct Snap {
    pub lbs: Vec<Value>,
    pub pools: Vec<Value>,
    pub listeners: Vec<Value>,
    pub monitors: Vec<Value>,
    /// Pool name → its members.
    pub members: BTreeMap<String, Vec<Value>>,
}

impl Snap {
    fn sorted(values: &[Value], key: &str) -> Vec<String> {
        let mut v: Vec<String> = values
            .iter()
            .filter_map(|x| x[key].as_str().map(str::to_string))
            .collect();
        v.sort();
        v
    }

    pub fn pool_names(&self) -> Vec<String> {
        Snap::sorted(&self.pools, "name")
    }

    pub fn listener_names(&self) -> Vec<String> {
        Snap::sorted(&self.listeners, "name")
    }

    /// One load balancer, running, one pool, listener and monitor per port, every member
    /// up: nothing left to apply or to wait for.
    pub fn settled(&self, ports: usize) -> bool {
        self.lbs.len() == 1
            && self.lbs[0]["status"] == "running"
            && self.pools.len() == ports
            && self.listeners.len() == ports
            && self.monitors.len() == ports
            && self
                .members
                .values()
                .flatten()
                .all(|m| m["monitor_status"] == "up")
    }

    /// Members per pool, in pool-name order.
    pub fn member_counts(&self) -> Vec<usize> {
        self.members.values().map(Vec::len).collect()
    }

    pub fn lb_uuid(&self) -> String {
        self.lbs
            .first()
            .and_then(|lb| lb["uuid"].as_str())
            .unwrap_or_default()
            .to_string()
    }
}

/// The Service's status ingress entries as JSON.
pub fn ingress(svc: &Service) -> Vec<Value> {
    ccm::service::reconcile::ensure::ingress_of(svc)
}

/// Whether the Service's status has an ingress entry (its load balancer is in place).
pub fn has_ingress(svc: &Service) -> bool {
    svc.status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .is_some_and(|i| !i.is_empty())
}

/// The longest downtime (virtual s) of any VIP on `port` in oracle `entries`; panics when
/// there is no such entry (nothing measured is not "no downtime").
pub fn downtime(entries: &[Value], port: u16) -> f64 {
    worst(entries, &format!("VIP port {port}"), |e| {
        e["kind"] == "vip" && e["port"] == port
    })
}

/// The longest downtime (virtual s) on the entry address `address` (a floating IP) on
/// `port`; panics when there is no such entry.
pub fn downtime_at(entries: &[Value], address: &str, port: u16) -> f64 {
    worst(entries, &format!("{address} port {port}"), |e| {
        e["address"] == address && e["port"] == port
    })
}

fn worst(entries: &[Value], what: &str, select: impl Fn(&Value) -> bool) -> f64 {
    let selected: Vec<f64> = entries
        .iter()
        .filter(|e| select(e))
        .map(|e| e["downtime_s"].as_f64().unwrap_or(f64::INFINITY))
        .collect();
    assert!(!selected.is_empty(), "the oracle has no entry for {what}");
    selected.into_iter().fold(0.0, f64::max)
}

/// Down intervals (virtual seconds since the epoch) per VIP address on `port`.
pub fn down_intervals(entries: &[Value], port: u16) -> BTreeMap<String, Vec<(f64, f64)>> {
    let secs = |v: &Value| {
        fakecloud::clock::parse_time(v.as_str().unwrap_or_default())
            .map(|t| t.timestamp_micros() as f64 / 1e6)
            .unwrap_or_else(|| panic!("the oracle gave a bad time: {v}"))
    };
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for e in entries
        .iter()
        .filter(|e| e["kind"] == "vip" && e["port"] == port)
    {
        let list = out
            .entry(e["address"].as_str().unwrap_or_default().to_string())
            .or_default();
        for d in e["down"].as_array().into_iter().flatten() {
            list.push((secs(&d["from"]), secs(&d["to"])));
        }
    }
    out
}

/// Seconds during which a VIP answered on neither port (a port renumbering).
pub fn unreachable_on_both(entries: &[Value], old: u16, new: u16) -> f64 {
    let a = down_intervals(entries, old);
    let b = down_intervals(entries, new);
    assert!(
        !a.is_empty() && !b.is_empty(),
        "the oracle has no VIP entries for port {old} or {new}"
    );
    let mut worst: f64 = 0.0;
    for (address, olds) in &a {
        let news = b.get(address).cloned().unwrap_or_default();
        let overlap: f64 = olds
            .iter()
            .flat_map(|x| {
                news.iter()
                    .map(move |y| (x.1.min(y.1) - x.0.max(y.0)).max(0.0))
            })
            .sum();
        worst = worst.max(overlap);
    }
    worst
}
