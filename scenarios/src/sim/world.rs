//! One simulated world: fakecloud, the embedded API server, simulated kubelets, the
//! kube-proxy view and CCM instances, in one process on one virtual clock. Build it inside
//! a current-thread tokio runtime whose clock is paused ([`super::runtime`]); then nothing
//! sleeps in real time and time moves only when every task waits.

use super::trace::Trace;
use super::transport::{AccountSwitch, CloudLink, CrashSwitch, KubeFaults, KubeLink, Misconfig};
use crate::apiserver::{self, ApiServerConfig};
use crate::testbed::kubelet::{Kubelet, KubeletConfig};
use crate::testbed::proxy;
use crate::testbed::{self, TestbedError};
use ccm::ambient::Ambient;
use ccm::app::{self, AppError, Environment, Wiring};
use ccm::options::Options;
use clap::Parser;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// Where every clock of the simulation starts.
/// What outside hands' request answers when fakecloud dropped it or lost its answer (it
/// may have been carried out).
pub const LOST: &str = "connection lost";

pub const EPOCH: &str = "2026-01-01T00:00:00Z";
/// fakecloud's address as the CCM sees it (nothing listens there: requests are calls).
pub const CLOUD_URL: &str = "http://fakecloud.sim";

/// How to build a [`World`].
#[derive(Debug, Clone)]
pub struct WorldConfig {
    pub seed: u64,
    pub nodes: usize,
    /// Flags every CCM gets (the simulation adds none of its own).
    pub ccm_flags: Vec<String>,
    /// The kubelets' settings (their clock is the world's).
    pub kubelet: KubeletConfig,
    pub cloud: fakecloud::Config,
    /// CCMs kept running ([`World::revive`]); more than one needs leader election.
    pub replicas: usize,
    /// The prefix of the nodes' names (`node-` makes `node-1`...).
    pub node_prefix: String,
    /// The last octet of the first node's address in `10.0.0.0/24`, less one.
    pub host_base: u8,
    /// Changes the API server keeps for watches to resume from
    /// (`ApiServerConfig::history_limit`).
    pub api_history: usize,
}

impl WorldConfig {
    /// Three nodes, production defaults where they do not make a run needlessly long
    /// (resync 60 s), no leader election.
    pub fn new(seed: u64) -> WorldConfig {
        WorldConfig {
            seed,
            nodes: 3,
            ccm_flags: [
                "--leader-elect=false",
                "--cluster-name",
                "sim",
                "--service-resync-period",
                "60s",
            ]
            .map(String::from)
            .to_vec(),
            // A real kubelet's timings: the server looked at every 10 s, status every 5
            // minutes; the Lease written once (see `KubeletConfig::renew_lease`).
            kubelet: KubeletConfig {
                heartbeat: Duration::from_secs(10),
                renew_lease: false,
                ..KubeletConfig::default()
            },
            cloud: fakecloud::Config::default(),
            replicas: 1,
            node_prefix: "node-".into(),
            host_base: 10,
            api_history: ApiServerConfig::default().history_limit,
        }
    }

    /// A second cluster on the same cloud account as a world of `seed`: its own API
    /// server, nodes `b-node-N` (addresses from 10.0.0.101) and CCM with
    /// `--cluster-name sim-b` (see [`World::start_beside`]).
    pub fn second_cluster(seed: u64) -> WorldConfig {
        let mut c = WorldConfig::new(seed ^ 0x0b0b_0b0b);
        for f in &mut c.ccm_flags {
            if f == "sim" {
                *f = "sim-b".into();
            }
        }
        c.node_prefix = "b-node-".into();
        c.host_base = 100;
        c
    }

    /// `replicas` CCMs under leader election (with the default lease timings).
    pub fn with_replicas(mut self, replicas: usize) -> WorldConfig {
        self.replicas = replicas.max(1);
        if self.replicas > 1 {
            for f in &mut self.ccm_flags {
                if f == "--leader-elect=false" {
                    *f = "--leader-elect=true".into();
                }
            }
        }
        self
    }
}

/// A CCM of the world.
pub struct SimCcm {
    pub name: String,
    pub task: JoinHandle<Result<(), AppError>>,
    stop: Option<oneshot::Sender<()>>,
    pub crash: Arc<CrashSwitch>,
    pub kube_faults: Arc<KubeFaults>,
    /// Its metrics, once it has started.
    pub metrics: Arc<parking_lot::Mutex<Option<Arc<ccm::metrics::Metrics>>>>,
    /// The sizes of its caches and bookkeeping, once it has started.
    pub sizes: Arc<parking_lot::Mutex<Option<Arc<ccm::sizes::Probe>>>>,
}

impl SimCcm {
    /// Reconciles of `controller` (`service`, `node`, `node-lifecycle`) counted so far.
    pub fn reconciles(&self, controller: &str) -> u64 {
        self.metrics
            .lock()
            .as_ref()
            .map_or(0, |m| m.reconciles(controller))
    }

    /// Whether it still runs (not crashed, not stopped).
    pub fn is_running(&self) -> bool {
        !self.task.is_finished()
    }

    /// Stops it as SIGTERM would.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Kills it at once: no clean shutdown, the lease is not released.
    pub fn kill(&self) {
        self.task.abort();
    }
}

/// Everything of one simulated run.
pub struct World {
    pub seed: u64,
    pub trace: Trace,
    pub cloud: fakecloud::App,
    pub api: apiserver::Shared,
    /// The client of the workload and the checks (no faults).
    pub kube: kube::Client,
    /// The cloudscale.ch API token.
    pub token: String,
    /// The CCMs' bearer token: the ServiceAccount of `deploy/config.yml`.
    ccm_token: String,
    /// fakecloud's time when the trace began (trace millisecond 0).
    pub cloud_zero: fakecloud::clock::Time,
    pub ccms: Vec<SimCcm>,
    /// Violations the checks found while the run went on (see [`super::invariants::after_create`]).
    pub found: Arc<parking_lot::Mutex<Vec<super::invariants::Violation>>>,
    /// Which account the CCMs' cloud requests reach (see [`World::misconfigure`]).
    pub switch: Arc<AccountSwitch>,
    /// Another project's account, with servers of its own and none of the cluster's.
    pub other_account: fakecloud::App,
    kubelets: Vec<Kubelet>,
    proxy: JoinHandle<()>,
    router: axum::Router,
    /// fakecloud served in process, its router built once for every client of the world.
    served: fakecloud::InProcess,
    config: WorldConfig,
    epoch: Timestamp,
    /// When the world started: [`World::ambient`] gives components started later the
    /// world's wall clock, not one that starts again at `epoch`.
    started: tokio::time::Instant,
    next_host: u8,
    next_ccm: u32,
}

impl Drop for World {
    fn drop(&mut self) {
        self.proxy.abort();
        for c in &self.ccms {
            c.task.abort();
        }
    }
}

/// Part of a seed that is a component's own (so two components never draw alike).
fn sub_seed(seed: u64, part: u64) -> u64 {
    seed ^ part.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl World {
    /// Builds the world with `config.nodes` nodes and no CCM.
    pub async fn start(config: WorldConfig) -> Result<World, TestbedError> {
        let token = format!("sim-secret-{:016x}", config.seed);
        let cloud = fakecloud::App::new(fakecloud::Config {
            clock: fakecloud::ClockMode::Simulated,
            id_seed: Some(sub_seed(config.seed, 1)),
            tokens: vec![token.clone()],
            public_url: Some(CLOUD_URL.to_string()),
            ..config.cloud.clone()
        });
        let network = testbed::network_seed()?;
        let zone = cloud.config().default_zone.clone();
        cloud
            .write(|st, now| fakecloud::apply_seed(st, now, &zone, &network))
            .map_err(|e| TestbedError::Seed(e.to_string()))?;
        World::start_on(config, cloud, token).await
    }

    /// Another cluster (its own API server, kubelets and CCMs; `config` names its nodes
    /// and cluster apart, see [`WorldConfig::second_cluster`]) on `first`'s cloud account
    /// and network, on the same runtime and virtual clock.
    pub async fn start_beside(config: WorldConfig, first: &World) -> Result<World, TestbedError> {
        World::start_on(config, first.cloud.clone(), first.token.clone()).await
    }

    async fn start_on(
        config: WorldConfig,
        cloud: fakecloud::App,
        token: String,
    ) -> Result<World, TestbedError> {
        let epoch: Timestamp = EPOCH
            .parse()
            .map_err(|_| TestbedError::Seed("bad epoch".into()))?;
        let started = tokio::time::Instant::now();
        let seed = config.seed;
        let trace = Trace::new();
        let api = apiserver::Shared::new(ApiServerConfig {
            bookmark_interval: Duration::from_secs(60),
            history_limit: config.api_history,
            ambient: Ambient::simulated(epoch, sub_seed(seed, 2)),
            ..ApiServerConfig::default()
        });
        let ccm_token = crate::testbed::ccm_identity::install(&api)
            .map_err(|e| TestbedError::Seed(e.to_string()))?;
        let router = apiserver::serve::router(api.clone());
        let kube = KubeLink {
            router: router.clone(),
            actor: "workload".into(),
            token: apiserver::rbac::ADMIN_TOKEN.into(),
            trace: trace.clone(),
            faults: None,
            taints: None,
        }
        .client();
        let proxy = tokio::spawn(proxy_view(api.clone(), cloud.clone()));
        let other_account = other_account(seed, &token)?;
        let switch = Arc::new(AccountSwitch::default());
        switch.set_other(other_account.clone());
        let cloud_zero = cloud.now() - chrono::Duration::milliseconds(trace.millis() as i64);
        let cloud_for_served = cloud.clone();
        let mut world = World {
            seed,
            trace,
            cloud,
            api,
            kube,
            token,
            ccm_token,
            cloud_zero,
            ccms: Vec::new(),
            found: Arc::default(),
            switch,
            other_account,
            kubelets: Vec::new(),
            proxy,
            router,
            served: fakecloud::InProcess::new(cloud_for_served),
            next_host: config.host_base,
            config,
            epoch,
            started,
            next_ccm: 0,
        };
        for i in 1..=world.config.nodes {
            let name = format!("{}{i}", world.config.node_prefix);
            world.add_node(&name).await?;
        }
        Ok(world)
    }

    /// A client of the API server for `actor`, traced, without faults.
    pub fn kube_client(&self, actor: &str) -> kube::Client {
        KubeLink {
            router: self.router.clone(),
            actor: actor.into(),
            token: apiserver::rbac::ADMIN_TOKEN.into(),
            trace: self.trace.clone(),
            faults: None,
            taints: None,
        }
        .client()
    }

    /// A new server with a kubelet that registers its Node.
    pub async fn add_node(&mut self, name: &str) -> Result<Uuid, TestbedError> {
        self.next_host = self.next_host.saturating_add(1);
        let address = Ipv4Addr::new(10, 0, 0, self.next_host);
        let spec = testbed::server_spec(name, "flex-8-4", Some(address), None);
        let zone = self.cloud.config().default_zone.clone();
        let uuid = self
            .cloud
            .write(|st, now| fakecloud::seed::add_server(st, now, &zone, &spec))
            .map_err(|e| TestbedError::Seed(e.to_string()))?;
        let cfg = self.kubelet_config();
        let client = self.kube_client(&format!("kubelet/{name}"));
        let kubelet = Kubelet::start(client, self.cloud.clone(), uuid, cfg).await?;
        self.kubelets.push(kubelet);
        Ok(uuid)
    }

    /// The world's wall clock (the epoch at its start, then tokio's time) and randomness
    /// from `seed`, for a component starting now: a CCM started again after a crash
    /// reads the time the others read, as a restarted process does.
    fn ambient(&self, seed: u64) -> Ambient {
        let since = k8s_openapi::jiff::SignedDuration::try_from(self.started.elapsed())
            .unwrap_or(k8s_openapi::jiff::SignedDuration::ZERO);
        Ambient::simulated(self.epoch.saturating_add(since).unwrap_or(self.epoch), seed)
    }

    fn kubelet_config(&self) -> KubeletConfig {
        KubeletConfig {
            ambient: self.ambient(sub_seed(self.seed, 3)),
            ..self.config.kubelet.clone()
        }
    }

    /// Outside hands delete the Node `name`; its kubelet restarts and registers it again,
    /// uninitialized, as a restarted kubelet does.
    pub async fn reregister_node(&mut self, name: &str) -> Result<(), String> {
        let i = self
            .kubelets
            .iter()
            .position(|k| k.node == name)
            .ok_or_else(|| format!("no kubelet for {name}"))?;
        let server = self.kubelets[i].server;
        let nodes: kube::Api<Node> = kube::Api::all(self.kube.clone());
        nodes
            .delete(name, &kube::api::DeleteParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let cfg = self.kubelet_config();
        let client = self.kube_client(&format!("kubelet/{name}"));
        let kubelet = Kubelet::start(client, self.cloud.clone(), server, cfg)
            .await
            .map_err(|e| e.to_string())?;
        // The old kubelet's heartbeat stops with it.
        self.kubelets[i] = kubelet;
        Ok(())
    }

    /// Starts a CCM with the world's flags and `extra` ones; returns its index.
    pub fn start_ccm(&mut self, extra: &[&str]) -> usize {
        self.next_ccm += 1;
        let name = format!("ccm-{}", self.next_ccm);
        let mut argv = vec!["cloudscale-cloud-controller-manager".to_string()];
        argv.extend(self.config.ccm_flags.iter().cloned());
        argv.extend(extra.iter().map(|s| s.to_string()));
        let opts = Options::parse_from(argv);
        let crash = Arc::new(CrashSwitch::default());
        let kube_faults = Arc::new(KubeFaults::default());
        let transport = CloudLink {
            cloud: self.served.clone(),
            actor: name.clone(),
            trace: self.trace.clone(),
            crash: crash.clone(),
            switch: self.switch.clone(),
            found: self.found.clone(),
        };
        let registry = Arc::new(ccm::metrics::Metrics::new());
        let kube = KubeLink {
            router: self.router.clone(),
            actor: name.clone(),
            token: self.ccm_token.clone(),
            trace: self.trace.clone(),
            faults: Some(kube_faults.clone()),
            taints: Some(super::transport::TaintAudit {
                api: self.api.clone(),
                cloud: self.cloud.clone(),
                found: self.found.clone(),
            }),
        }
        .counted_client(&registry);
        let wiring = Wiring {
            kube,
            metrics: registry,
            cloud_transport: Some(Arc::new(transport)),
            ambient: self.ambient(sub_seed(self.seed, 100 + u64::from(self.next_ccm))),
            serve_health: false,
        };
        let env = Environment {
            access_token: Some(self.token.clone()),
            api_url: Some(CLOUD_URL.to_string()),
            api_timeout: Some("20".into()),
        };
        let (tx, rx) = oneshot::channel::<()>();
        let metrics = Arc::new(parking_lot::Mutex::new(None));
        let sizes = Arc::new(parking_lot::Mutex::new(None));
        let task = tokio::spawn(app::run_wired(
            opts,
            env,
            wiring,
            async move {
                let _ = rx.await;
            },
            {
                let (metrics, sizes) = (metrics.clone(), sizes.clone());
                move |r| {
                    *metrics.lock() = Some(r.metrics.clone());
                    *sizes.lock() = Some(r.sizes.clone());
                }
            },
        ));
        crash.attach(task.abort_handle());
        self.ccms.push(SimCcm {
            name,
            task,
            stop: Some(tx),
            crash,
            kube_faults,
            metrics,
            sizes,
        });
        self.ccms.len() - 1
    }

    /// A CCM API client for `actor` over the in-process transport (traced, faults apply),
    /// as a CCM's own: for running the CCM's read-only tools (the `plan` preview) in the
    /// world.
    pub fn cloud_client(&self, actor: &str) -> Result<ccm::cloudscale::Client, String> {
        let token = ccm::secret::Token::new(&self.token).ok_or("an empty token")?;
        let transport = CloudLink {
            cloud: self.served.clone(),
            actor: actor.to_string(),
            trace: self.trace.clone(),
            crash: Arc::new(CrashSwitch::default()),
            switch: Arc::new(AccountSwitch::default()),
            found: self.found.clone(),
        };
        ccm::cloudscale::Client::new(ccm::cloudscale::ClientConfig {
            transport: Some(Arc::new(transport)),
            ambient: self.ambient(sub_seed(self.seed, 4)),
            ..ccm::cloudscale::ClientConfig::new(
                CLOUD_URL,
                Arc::new(ccm::secret::TokenSource::Static(token)),
            )
        })
        .map_err(|e| e.to_string())
    }

    /// The server of the node `name`.
    pub fn server_of(&self, name: &str) -> Option<Uuid> {
        self.kubelets
            .iter()
            .find(|k| k.node == name)
            .map(|k| k.server)
    }

    /// The UUID of the nodes' subnet ([`testbed::SUBNET_CIDR`]).
    pub fn node_subnet(&self) -> Option<Uuid> {
        node_subnet(&self.cloud)
    }

    /// How many nodes the world started with (`node-1`...).
    pub fn first_nodes(&self) -> usize {
        self.config.nodes
    }

    /// Every node name a kubelet registered, in order.
    pub fn node_names(&self) -> Vec<String> {
        self.kubelets.iter().map(|k| k.node.clone()).collect()
    }

    /// From now on the CCMs' cloud requests go where `misconfig` sends them (`None`: their
    /// own account again), as after an operator's mistake with the token or the API URL.
    pub fn misconfigure(&self, misconfig: Option<Misconfig>) {
        if self.switch.get() != misconfig {
            self.trace.note(format!("misconfig {misconfig:?}"));
            self.switch.set(misconfig);
        }
    }

    /// Lets virtual time pass.
    pub async fn run_for(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }

    /// A request to fakecloud's API by outside hands (an operator, another tool), traced as
    /// `outside`; the JSON answer, or the status and body of a refusal.
    pub async fn outside(&self, method: &str, path: &str) -> Result<serde_json::Value, String> {
        self.outside_with(method, path, None).await
    }

    /// [`World::outside`] with a JSON body.
    pub async fn outside_with(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value, String> {
        let body = body.map_or_else(axum::body::Body::empty, |b| {
            axum::body::Body::from(b.to_string())
        });
        let request = http::Request::builder()
            .method(method)
            .uri(format!("{CLOUD_URL}{path}"))
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", self.token),
            )
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|e| e.to_string())?;
        let answer = self.served.serve(request).await;
        let Ok(response) = answer else {
            self.trace.cloud("outside", method, path, None);
            return Err(LOST.into());
        };
        let status = response.status();
        self.trace
            .cloud("outside", method, path, Some(status.as_u16()));
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .map_err(|e| e.to_string())?;
        let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!("{status}: {body}"))
        }
    }

    /// The load balancer fakecloud holds for the Service `name` (by its ownership tag).
    pub fn load_balancer_of(&self, name: &str) -> Option<Uuid> {
        let uid = self
            .api
            .objects::<Service>("services")
            .into_iter()
            .find(|s| s.metadata.name.as_deref() == Some(name))?
            .metadata
            .uid?;
        load_balancers_of(&self.cloud, &uid).into_iter().next()
    }

    /// Outside hands delete part of the Service `name`'s load balancer: its first `pool`,
    /// `listener`, `member` or `monitor`, or the `load balancer`.
    pub async fn outside_delete(&self, name: &str, what: &str) -> Result<(), String> {
        let lb = self
            .load_balancer_of(name)
            .ok_or_else(|| format!("{name} has no load balancer"))?;
        let path = self.cloud.read("", |ctx| {
            let st = ctx.st;
            let pool = st.pools().values().find(|p| p.load_balancer == lb);
            match what {
                "pool" => pool.map(|p| format!("/v1/load-balancers/pools/{}", p.uuid)),
                "listener" => st
                    .listeners()
                    .values()
                    .find(|l| l.load_balancer == lb)
                    .map(|l| format!("/v1/load-balancers/listeners/{}", l.uuid)),
                "member" => pool.and_then(|p| {
                    st.members()
                        .of_pool(p.uuid)
                        .next()
                        .map(|m| format!("/v1/load-balancers/pools/{}/members/{}", p.uuid, m.uuid))
                }),
                "monitor" => st
                    .health_monitors()
                    .values()
                    .find(|m| m.load_balancer == lb)
                    .map(|m| format!("/v1/load-balancers/health-monitors/{}", m.uuid)),
                _ => Some(format!("/v1/load-balancers/{lb}")),
            }
        });
        let path = path.ok_or_else(|| format!("{name}'s load balancer has no {what}"))?;
        self.outside("DELETE", &path).await.map(|_| ())
    }

    /// Outside hands change part of the Service `name`'s load balancer: the first
    /// `listener port`, the first `monitor delay` or the `load balancer name`.
    pub async fn outside_change(&self, name: &str, what: &str) -> Result<(), String> {
        let lb = self
            .load_balancer_of(name)
            .ok_or_else(|| format!("{name} has no load balancer"))?;
        let change = self.cloud.read("", |ctx| {
            let st = ctx.st;
            match what {
                "listener port" => {
                    st.listeners()
                        .values()
                        .find(|l| l.load_balancer == lb)
                        .map(|l| {
                            (
                                format!("/v1/load-balancers/listeners/{}", l.uuid),
                                serde_json::json!({"protocol_port": 9999}),
                            )
                        })
                }
                "monitor delay" => st
                    .health_monitors()
                    .values()
                    .find(|m| m.load_balancer == lb)
                    .map(|m| {
                        (
                            format!("/v1/load-balancers/health-monitors/{}", m.uuid),
                            serde_json::json!({"delay_s": 17}),
                        )
                    }),
                _ => Some((
                    format!("/v1/load-balancers/{lb}"),
                    serde_json::json!({"name": "renamed-by-hand"}),
                )),
            }
        });
        let (path, body) = change.ok_or_else(|| format!("{name}'s load balancer has no {what}"))?;
        self.outside_with("PATCH", &path, Some(body))
            .await
            .map(|_| ())
    }

    /// Arms the running CCM to crash right before its `n`-th next cloud request (a new one
    /// takes over once [`World::revive`] sees it gone).
    pub async fn crash_and_restart(&mut self, n: u64) {
        // Only the leader talks to the cloud, so only the leader crashes.
        for c in self.ccms.iter().filter(|c| c.is_running()) {
            c.crash.arm(n);
        }
    }

    /// Starts new CCMs until [`WorldConfig::replicas`] run (a crashed or stopped one is
    /// replaced, as its pod would be).
    pub fn revive(&mut self) {
        let running = self.ccms.iter().filter(|c| c.is_running()).count();
        for _ in running..self.config.replicas {
            self.trace.note("start ccm");
            self.start_ccm(&[]);
        }
    }

    /// The running CCM that made the last cloud request (the leader, under leader
    /// election).
    pub fn leader(&mut self) -> Option<&mut SimCcm> {
        let lines = self.trace.lines();
        let last = lines.iter().rev().find_map(|l| {
            super::trace::Request::parse(l)
                .filter(|r| r.api == "cloud" && r.by_ccm())
                .map(|r| r.actor.to_string())
        })?;
        self.ccms
            .iter_mut()
            .find(|c| c.name == last && c.is_running())
    }
}

/// Another project's account: the same token works there (a token is only ever valid for
/// its own project; this stands for "another project's token"), with two servers and a
/// network of its own.
fn other_account(seed: u64, token: &str) -> Result<fakecloud::App, TestbedError> {
    let other = fakecloud::App::new(fakecloud::Config {
        clock: fakecloud::ClockMode::Simulated,
        // Not a sub-seed: those differ from the world's by multiples of the generator's
        // step, and the two accounts would hand out the same UUIDs a few draws apart.
        id_seed: Some(super::rng::Rng::new(seed ^ 0x6f74_6865_725f_6163).draw()),
        tokens: vec![token.to_string()],
        public_url: Some(CLOUD_URL.to_string()),
        ..fakecloud::Config::default()
    });
    let network = testbed::network_seed()?;
    let zone = other.config().default_zone.clone();
    other
        .write(|st, now| fakecloud::apply_seed(st, now, &zone, &network))
        .map_err(|e| TestbedError::Seed(e.to_string()))?;
    for (i, name) in ["their-1", "their-2"].iter().enumerate() {
        let spec = testbed::server_spec(
            name,
            "flex-4-2",
            Some(Ipv4Addr::new(10, 0, 0, 200 + i as u8)),
            None,
        );
        other
            .write(|st, now| fakecloud::seed::add_server(st, now, &zone, &spec))
            .map_err(|e| TestbedError::Seed(e.to_string()))?;
    }
    Ok(other)
}

/// The kube-proxy view, kept in step with the API server's store on every change (the
/// socket testbed polls instead; here a poll would only cost requests).
///
/// Kept per Service: node ports (health-check ones included) are allocated cluster-wide, so
/// the parts of two Services never overlap and the view is their union. A change of one
/// Service recomputes its part alone; a change of EndpointSlices or Nodes recomputes every
/// part; Lease renewals and Events, most of the changes, recompute nothing (at 1,000
/// Services on 100 nodes the view has 100,000 entries).
async fn proxy_view(api: apiserver::Shared, cloud: fakecloud::App) {
    let mut changes = api.changes();
    let mut parts: BTreeMap<(String, String), proxy::ProxyView> = BTreeMap::new();
    let mut seen = 0;
    // The EndpointSlices and Nodes as of the last full recomputation: a change of Services
    // alone (status and finalizer writes, most of them) reads neither again.
    let mut cached: Option<(Vec<EndpointSlice>, Vec<Node>)> = None;
    loop {
        let (changed, rv) = api.changed_since(seen, &["services", "endpointslices", "nodes"]);
        match changed {
            Some(keys) if keys.iter().all(|(storage, ..)| *storage == "services") => {
                let keys: BTreeSet<(String, String)> =
                    keys.into_iter().map(|(_, ns, name)| (ns, name)).collect();
                if !keys.is_empty() {
                    let (slices, nodes) = cached.get_or_insert_with(|| {
                        (api.objects("endpointslices"), api.objects("nodes"))
                    });
                    for (ns, name) in keys {
                        let svc: Option<Service> = api.object("services", &ns, &name);
                        let new = svc
                            .map(|s| proxy::proxy_view(&[s], slices, nodes))
                            .unwrap_or_default();
                        let old = parts
                            .remove(&(ns.clone(), name.clone()))
                            .unwrap_or_default();
                        if new != old {
                            proxy::declare(&cloud, &old, &new);
                        }
                        if !new.is_empty() {
                            parts.insert((ns, name), new);
                        }
                    }
                }
            }
            _ => {
                let services: Vec<Service> = api.objects("services");
                let (slices, nodes) =
                    cached.insert((api.objects("endpointslices"), api.objects("nodes")));
                let old: proxy::ProxyView =
                    parts.values().flatten().map(|(k, v)| (*k, *v)).collect();
                parts = services
                    .into_iter()
                    .map(|s| {
                        let key = (
                            s.metadata.namespace.clone().unwrap_or_default(),
                            s.metadata.name.clone().unwrap_or_default(),
                        );
                        (key, proxy::proxy_view(&[s], slices, nodes))
                    })
                    .filter(|(_, part)| !part.is_empty())
                    .collect();
                let new: proxy::ProxyView =
                    parts.values().flatten().map(|(k, v)| (*k, *v)).collect();
                if new != old {
                    proxy::declare(&cloud, &old, &new);
                }
            }
        }
        seen = rv;
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// The UUID of the nodes' subnet ([`testbed::SUBNET_CIDR`]) in `cloud`.
pub fn node_subnet(cloud: &fakecloud::App) -> Option<Uuid> {
    cloud.read("", |ctx| {
        ctx.st
            .subnets
            .values()
            .find(|s| s.cidr.to_string() == testbed::SUBNET_CIDR)
            .map(|s| s.uuid)
    })
}

/// The load balancers `cloud` holds for the Service with UID `uid` (by its ownership tag).
pub fn load_balancers_of(cloud: &fakecloud::App, uid: &str) -> Vec<Uuid> {
    cloud.read("", |ctx| {
        ctx.st
            .load_balancers()
            .values()
            .filter(|lb| {
                lb.tags
                    .get(ccm::service::reconcile::controller::TAG_SERVICE_UID)
                    .is_some_and(|t| t == uid)
            })
            .map(|lb| lb.uuid)
            .collect()
    })
}

/// A current-thread runtime with tokio's clock paused: the simulation's one clock.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
}
