//! The testbed: fakecloud, a cluster (any backend) and what connects them: servers in
//! fakecloud for the cluster's Nodes (simulated kubelets on the embedded server, mirrors of
//! the real Nodes elsewhere) and the kube-proxy health-check view.

use crate::cluster::{Cluster, ClusterError};
use crate::kubelet::{Kubelet, KubeletConfig, KubeletError};
use crate::proxy::KubeProxy;
use fakecloud::FakeCloud;
use fakecloud::seed::{
    Seed, SeedNetwork, SeedPrivate, SeedServer, SeedSubnet, add_server, apply_seed,
};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use std::net::Ipv4Addr;
use std::time::Duration;
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
        }
    }
}

pub struct Testbed {
    pub cloud: FakeCloud,
    pub cluster: Cluster,
    pub kubelets: Vec<Kubelet>,
    _proxy: KubeProxy,
    config: TestbedConfig,
    next_host: u32,
}

impl Testbed {
    /// Starts fakecloud and connects it to `cluster`.
    pub async fn start(cluster: Cluster, config: TestbedConfig) -> Result<Testbed, TestbedError> {
        let cloud = FakeCloud::start(config.cloud.clone())
            .await
            .map_err(TestbedError::Cloud)?;
        let seed = Seed {
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
        };
        cloud
            .app()
            .write(|st, now| apply_seed(st, now, &config.cloud.default_zone, &seed))
            .map_err(|e| TestbedError::Seed(e.to_string()))?;
        let proxy = KubeProxy::start(cluster.client(), cloud.app().clone(), config.proxy_interval);
        let mut tb = Testbed {
            cloud,
            cluster,
            kubelets: Vec::new(),
            _proxy: proxy,
            config,
            next_host: 10,
        };
        if tb.cluster.simulated_nodes() {
            for i in 1..=tb.config.nodes {
                tb.add_node(&format!("node-{i}")).await?;
            }
        } else {
            tb.mirror_nodes().await?;
        }
        Ok(tb)
    }

    /// Creates a server named `name` in fakecloud and a simulated kubelet registering it.
    pub async fn add_node(&mut self, name: &str) -> Result<Uuid, TestbedError> {
        self.next_host += 1;
        let address = Ipv4Addr::new(10, 0, 0, self.next_host.min(254) as u8);
        let uuid = self.add_server(name, Some(address))?;
        let kubelet = Kubelet::start(
            self.cluster.client(),
            self.cloud.app().clone(),
            uuid,
            self.config.kubelet.clone(),
        )
        .await?;
        self.kubelets.push(kubelet);
        Ok(uuid)
    }

    fn add_server(&self, name: &str, private: Option<Ipv4Addr>) -> Result<Uuid, TestbedError> {
        let spec = SeedServer {
            uuid: None,
            name: name.to_string(),
            flavor: Some(self.config.flavor.clone()),
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
        };
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
            self.add_server(&name, inside)?;
        }
        Ok(())
    }

    /// The fakecloud server UUID behind a node, if the testbed created that node.
    pub fn server_of(&self, node: &str) -> Option<Uuid> {
        self.kubelets
            .iter()
            .find(|k| k.node == node)
            .map(|k| k.server)
    }
}
