//! The testbed: fakecloud, a cluster (any backend) and what connects them: servers in
//! fakecloud for the cluster's Nodes (simulated kubelets on the embedded server, mirrors of
//! the real Nodes elsewhere), optionally a kubelet for every server created later through
//! fakecloud, the workload controllers on the embedded server (`src/workloads/`), and the
//! kube-proxy view.
//!
//! What it offers, all from here: [`Testbed`] and its [`TestbedConfig`]; the [`Cluster`]
//! backends; the simulated kubelets' settings and machines ([`KubeletConfig`],
//! [`machine`]); [`CcmBed`], a testbed running the CCM in-process ([`InProcessCcm`]), with
//! the helpers the CCM's end-to-end tests share (Services, ingress, downtime); the
//! reference load balancer model ([`Reference`]); [`eventually`]; and the CCM's RBAC
//! identity ([`service_account`]).

mod ccm_bed;
// The simulation (`src/sim/`) installs the CCM's identity, runs kubelets and the
// kube-proxy view itself.
pub(crate) mod ccm_identity;
mod cluster;
mod kubectl;
pub(crate) mod kubelet;
pub(crate) mod proxy;
mod reference_lbs;
mod wait;

pub use ccm_bed::{
    CcmBed, CcmBedConfig, FAST_FLAGS, InProcessCcm, LIMIT, Route, Snap, down_intervals, downtime,
    downtime_at, has_ingress, ingress, lb_service, unreachable_on_both, web_service,
};
pub use ccm_identity::{IdentityError, manifest_documents, service_account, user_name};
pub use cluster::{Backend, Cluster, ClusterError, client_for};
pub use kubectl::installed_clients;
pub use kubelet::{
    Flaps, Kubelet, KubeletConfig, KubeletError, Machine, UNINITIALIZED_TAINT, machine,
};
pub use reference_lbs::{Call, Reference, UUID_ANNOTATION};
pub use wait::eventually;

use crate::testbed::proxy::KubeProxy;
use crate::workloads::{Workloads, WorkloadsConfig};
use fakecloud::FakeCloud;
use fakecloud::seed::{
    Seed, SeedNetwork, SeedPrivate, SeedServer, SeedSubnet, add_server, apply_seed,
};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// The private network servers (and so Nodes) are attached to.
pub const NETWORK_NAME: &str = "k8s-private";
pub const SUBNET_CIDR: &str = "10.0.0.0/24";

#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Kubelet(#[from] KubeletError),
    #[error("cannot start fakecloud: {0}")]
    Cloud(std::io::Error),
    #[error("fakecloud refused a server: {0}")]
    Seed(String),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

#[derive(Debug, Clone)]
pub struct TestbedConfig {
    /// Servers and Nodes to start with (embedded backend).
    pub nodes: usize,
    pub cloud: fakecloud::Config,
    pub kubelet: KubeletConfig,
    pub proxy_interval: Duration,
    pub flavor: String,
    /// Embedded backend: start a simulated kubelet for every server created in fakecloud
    /// after start (`POST /_fake/servers`, the API, the CLI) once it runs, so adding a
    /// machine adds a Node. Looked for every `proxy_interval`.
    pub kubelets_for_new_servers: bool,
    /// Embedded backend: run Deployments, ReplicaSets, Pods and EndpointSlices
    /// (`src/workloads/`); `None` runs none (a real cluster has its own controllers).
    pub workloads: Option<WorkloadsConfig>,
}

impl Default for TestbedConfig {
    fn default() -> Self {
        TestbedConfig {
            nodes: 3,
            cloud: fakecloud::Config {
                listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                ..fakecloud::Config::default()
            },
            kubelet: KubeletConfig::default(),
            proxy_interval: Duration::from_secs(1),
            flavor: "flex-8-4".to_string(),
            kubelets_for_new_servers: false,
            workloads: Some(WorkloadsConfig::default()),
        }
    }
}

/// The seed of the testbed's private network ([`NETWORK_NAME`], [`SUBNET_CIDR`]).
pub fn network_seed() -> Result<Seed, TestbedError> {
    Ok(Seed {
        networks: vec![SeedNetwork {
            uuid: None,
            name: NETWORK_NAME.into(),
            zone: None,
            mtu: None,
            tags: Default::default(),
            subnets: Some(vec![SeedSubnet {
                uuid: None,
                cidr: SUBNET_CIDR
                    .parse()
                    .map_err(|_| TestbedError::Seed("bad subnet".into()))?,
                gateway_address: None,
                dns_servers: None,
                tags: Default::default(),
            }]),
        }],
        ..Seed::default()
    })
}

/// A node's server: public IPv4 and IPv6, and `private` (or the next free address) on the
/// testbed's private network.
pub fn server_spec(
    name: &str,
    flavor: &str,
    private: Option<Ipv4Addr>,
    uuid: Option<Uuid>,
) -> SeedServer {
    SeedServer {
        uuid,
        name: name.to_string(),
        flavor: Some(flavor.to_string()),
        image: None,
        zone: None,
        status: None,
        tags: Default::default(),
        public: true,
        ipv6: true,
        public_ipv4: None,
        public_ipv6: None,
        private: vec![SeedPrivate {
            network: NETWORK_NAME.to_string(),
            address: private.map(std::net::IpAddr::V4),
        }],
    }
}

/// Which servers have a simulated kubelet, keyed by server UUID: the one place that decides,
/// so `Testbed::add_node` and the watcher of new servers never start two for one server.
#[derive(Default)]
struct Registry(Mutex<HashMap<Uuid, Registration>>);

enum Registration {
    /// Started by `Testbed::add_node`; its handle is in `Testbed::kubelets`.
    AddNode,
    /// Being started by the watcher of new servers.
    Starting,
    /// Started by the watcher of new servers, which owns it here.
    Watcher(Kubelet),
}

impl Registry {
    /// Claims `server` for a kubelet; false when it has one (or one is being started).
    fn claim(&self, server: Uuid, how: Registration) -> bool {
        let mut map = self.0.lock();
        if map.contains_key(&server) {
            return false;
        }
        map.insert(server, how);
        true
    }

    fn release(&self, server: Uuid) {
        self.0.lock().remove(&server);
    }
}

/// Starts a kubelet for every running server that has none, every `interval`, until
/// dropped (the kubelets it started stop with the registry).
struct NewServerKubelets {
    task: JoinHandle<()>,
}

impl Drop for NewServerKubelets {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl NewServerKubelets {
    fn start(
        client: kube::Client,
        cloud: fakecloud::App,
        registry: Arc<Registry>,
        cfg: KubeletConfig,
        interval: Duration,
    ) -> NewServerKubelets {
        let task = tokio::spawn(async move {
            loop {
                // Only booted machines: a kubelet registers its Node once the VM runs.
                let running: Vec<Uuid> = cloud.read("", |ctx| {
                    ctx.st
                        .servers()
                        .values()
                        .filter(|s| s.status(ctx.now) == "running")
                        .map(|s| s.uuid)
                        .collect()
                });
                for server in running {
                    if !registry.claim(server, Registration::Starting) {
                        continue;
                    }
                    match Kubelet::start(client.clone(), cloud.clone(), server, cfg.clone()).await {
                        Ok(kubelet) => {
                            tracing::info!(node = %kubelet.node, %server, "kubelet started for a new server");
                            registry
                                .0
                                .lock()
                                .insert(server, Registration::Watcher(kubelet));
                        }
                        Err(e) => {
                            // Deleted meanwhile, or the API server refused: try again next
                            // round if the server is still there.
                            tracing::debug!(%server, error = %e, "kubelet for a new server did not start");
                            registry.release(server);
                        }
                    }
                }
                tokio::time::sleep(interval).await;
            }
        });
        NewServerKubelets { task }
    }
}

pub struct Testbed {
    pub cloud: FakeCloud,
    pub cluster: Cluster,
    /// The kubelets `add_node` started (the initial nodes and later ones), in order. Those
    /// started for servers created through fakecloud (`kubelets_for_new_servers`) are not
    /// here; `server_of` finds both.
    pub kubelets: Vec<Kubelet>,
    registry: Arc<Registry>,
    _new_servers: Option<NewServerKubelets>,
    _proxy: KubeProxy,
    _workloads: Option<Workloads>,
    config: TestbedConfig,
    next_host: u32,
}

impl Testbed {
    /// Starts fakecloud and connects it to `cluster`.
    pub async fn start(cluster: Cluster, config: TestbedConfig) -> Result<Testbed, TestbedError> {
        let cloud = FakeCloud::start(config.cloud.clone())
            .await
            .map_err(TestbedError::Cloud)?;
        let seed = network_seed()?;
        cloud
            .app()
            .write(|st, now| apply_seed(st, now, &config.cloud.default_zone, &seed))
            .map_err(|e| TestbedError::Seed(e.to_string()))?;
        let proxy = KubeProxy::start(cluster.client(), cloud.app().clone(), config.proxy_interval);
        let mut tb = Testbed {
            cloud,
            cluster,
            kubelets: Vec::new(),
            registry: Arc::default(),
            _new_servers: None,
            _proxy: proxy,
            _workloads: None,
            config,
            next_host: 10,
        };
        if tb.cluster.simulated_nodes() {
            for i in 1..=tb.config.nodes {
                tb.add_node(&format!("node-{i}")).await?;
            }
            if let (Some(cfg), Some(api)) = (&tb.config.workloads, tb.cluster.api_server()) {
                tb._workloads = Some(Workloads::start(
                    tb.cluster.client(),
                    api.shared().clone(),
                    cfg.clone(),
                ));
            }
            if tb.config.kubelets_for_new_servers {
                tb._new_servers = Some(NewServerKubelets::start(
                    tb.cluster.client(),
                    tb.cloud.app().clone(),
                    tb.registry.clone(),
                    tb.config.kubelet.clone(),
                    tb.config.proxy_interval,
                ));
            }
        } else {
            tb.mirror_nodes().await?;
        }
        Ok(tb)
    }

    /// Creates a server named `name` in fakecloud and a simulated kubelet registering it.
    pub async fn add_node(&mut self, name: &str) -> Result<Uuid, TestbedError> {
        // Servers created through fakecloud may have taken the next address already.
        let used: HashSet<std::net::IpAddr> = self.cloud.app().read("", |ctx| {
            ctx.st
                .servers()
                .values()
                .flat_map(|s| s.interfaces.iter().flat_map(|i| &i.addresses))
                .map(|a| a.address)
                .collect()
        });
        let address = loop {
            self.next_host += 1;
            let address = Ipv4Addr::new(10, 0, 0, self.next_host.min(254) as u8);
            if self.next_host >= 254 || !used.contains(&std::net::IpAddr::V4(address)) {
                break address;
            }
        };
        // Claimed before the server exists, so the watcher of new servers never sees it
        // unclaimed.
        let uuid = Uuid::new_v4();
        self.registry.claim(uuid, Registration::AddNode);
        let started = async {
            self.add_server(name, Some(address), Some(uuid))?;
            Ok::<_, TestbedError>(
                Kubelet::start(
                    self.cluster.client(),
                    self.cloud.app().clone(),
                    uuid,
                    self.config.kubelet.clone(),
                )
                .await?,
            )
        }
        .await;
        match started {
            Ok(kubelet) => {
                self.kubelets.push(kubelet);
                Ok(uuid)
            }
            Err(e) => {
                self.registry.release(uuid);
                Err(e)
            }
        }
    }

    fn add_server(
        &self,
        name: &str,
        private: Option<Ipv4Addr>,
        uuid: Option<Uuid>,
    ) -> Result<Uuid, TestbedError> {
        let spec = server_spec(name, &self.config.flavor, private, uuid);
        let zone = self.config.cloud.default_zone.clone();
        self.cloud
            .app()
            .write(|st, now| add_server(st, now, &zone, &spec))
            .map_err(|e| TestbedError::Seed(e.to_string()))
    }

    /// For real clusters: one fakecloud server per Node, with the Node's name and internal
    /// address, so the CCM finds them (as the CloudStack simulator setup does).
    async fn mirror_nodes(&mut self) -> Result<(), TestbedError> {
        let nodes: Api<Node> = Api::all(self.cluster.client());
        for node in nodes.list(&ListParams::default()).await?.items {
            let name = node.metadata.name.clone().unwrap_or_default();
            let internal = node
                .status
                .as_ref()
                .and_then(|s| s.addresses.as_ref())
                .into_iter()
                .flatten()
                .find(|a| a.type_ == "InternalIP")
                .and_then(|a| a.address.parse::<Ipv4Addr>().ok());
            // Addresses outside the testbed subnet cannot be attached; the server then gets
            // one from the subnet (the CCM's address check will say so).
            let inside = internal.filter(|a| a.octets()[..3] == [10, 0, 0]);
            self.add_server(&name, inside, None)?;
        }
        Ok(())
    }

    /// The fakecloud server UUID behind a node, if the testbed runs its kubelet (started by
    /// `add_node` or for a server created through fakecloud).
    pub fn server_of(&self, node: &str) -> Option<Uuid> {
        self.kubelets
            .iter()
            .find(|k| k.node == node)
            .map(|k| k.server)
            .or_else(|| {
                self.registry.0.lock().values().find_map(|r| match r {
                    Registration::Watcher(k) if k.node == node => Some(k.server),
                    _ => None,
                })
            })
    }

    /// How many simulated kubelets run or ran: those of `add_node` and those started for
    /// servers created through fakecloud.
    pub fn kubelet_count(&self) -> usize {
        self.registry
            .0
            .lock()
            .values()
            .filter(|r| !matches!(r, Registration::Starting))
            .count()
    }
}
