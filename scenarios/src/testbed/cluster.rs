//! One harness, three cluster backends. Scenario code is written against [`Cluster`]:
//!
//! - `Embedded` (default): the in-process API server of this crate;
//! - `K3s`: a k3s container through testcontainers (cargo feature `k3s`, and only when a
//!   Docker engine answers), started without its cloud controller and service load balancer;
//! - `Existing`: any cluster named by `KUBECONFIG`, opt-in with
//!   `SCENARIOS_CLUSTER=existing`.
//!
//! `SCENARIOS_CLUSTER=embedded|k3s|existing` picks the backend for [`Cluster::from_env`]; an
//! unavailable backend is an [`ClusterError::Unavailable`] with the reason, which tests print
//! before skipping.

use crate::apiserver::{ApiServer, ApiServerConfig};
use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    K3s,
    Existing,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The backend cannot run here (no Docker engine, not opted in, ...).
    #[error("cluster backend unavailable: {0}")]
    Unavailable(String),
    #[error("cannot start the embedded API server: {0}")]
    Io(#[from] std::io::Error),
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
}

pub struct Cluster {
    pub backend: Backend,
    client: kube::Client,
    kubeconfig: String,
    /// What the CCM runs with: on the embedded server, its ServiceAccount of
    /// `deploy/config.yml` (RBAC enforced); elsewhere the cluster's own kubeconfig.
    ccm_kubeconfig: String,
    ccm_client: kube::Client,
    embedded: Option<ApiServer>,
    _k3s: Option<scenarios_k3s::Running>,
}

/// A kube client for a kubeconfig given as YAML.
pub async fn client_for(kubeconfig_yaml: &str) -> Result<kube::Client, ClusterError> {
    let kc = Kubeconfig::from_yaml(kubeconfig_yaml)
        .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| ClusterError::Kubeconfig(e.to_string()))
}

impl Cluster {
    /// The embedded API server, on an ephemeral loopback port.
    pub async fn embedded() -> Result<Cluster, ClusterError> {
        Self::embedded_with(ApiServerConfig::default()).await
    }

    pub async fn embedded_with(config: ApiServerConfig) -> Result<Cluster, ClusterError> {
        let rbac = config.rbac;
        let api = ApiServer::start(config).await?;
        let kubeconfig = api.kubeconfig_yaml();
        let client = client_for(&kubeconfig).await?;
        let ccm_kubeconfig = if rbac {
            let token = crate::testbed::ccm_identity::install(api.shared())
                .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
            let (ns, _) = crate::testbed::ccm_identity::service_account()
                .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
            api.kubeconfig_with_token(&token, &ns)
        } else {
            kubeconfig.clone()
        };
        let ccm_client = client_for(&ccm_kubeconfig).await?;
        Ok(Cluster {
            backend: Backend::Embedded,
            client,
            ccm_client,
            ccm_kubeconfig,
            kubeconfig,
            embedded: Some(api),
            _k3s: None,
        })
    }

    /// The cluster `KUBECONFIG` names; only with `SCENARIOS_CLUSTER=existing`, since scenarios
    /// create and delete objects in it.
    pub async fn existing() -> Result<Cluster, ClusterError> {
        if std::env::var("SCENARIOS_CLUSTER").as_deref() != Ok("existing") {
            return Err(ClusterError::Unavailable(
                "set SCENARIOS_CLUSTER=existing (and KUBECONFIG) to run against an existing cluster".into(),
            ));
        }
        let path = std::env::var("KUBECONFIG")
            .map_err(|_| ClusterError::Unavailable("KUBECONFIG is not set".into()))?;
        let yaml = std::fs::read_to_string(&path).map_err(|e| {
            ClusterError::Unavailable(format!("cannot read KUBECONFIG {path}: {e}"))
        })?;
        let client = client_for(&yaml).await?;
        Ok(Cluster {
            backend: Backend::Existing,
            ccm_client: client.clone(),
            client,
            ccm_kubeconfig: yaml.clone(),
            kubeconfig: yaml,
            embedded: None,
            _k3s: None,
        })
    }

    /// A k3s container (needs the `k3s` feature and a reachable Docker engine).
    pub async fn k3s() -> Result<Cluster, ClusterError> {
        let running = scenarios_k3s::start()
            .await
            .map_err(|e| ClusterError::Unavailable(e.to_string()))?;
        let client = client_for(&running.kubeconfig).await?;
        Ok(Cluster {
            backend: Backend::K3s,
            ccm_client: client.clone(),
            client,
            kubeconfig: running.kubeconfig.clone(),
            ccm_kubeconfig: running.kubeconfig.clone(),
            embedded: None,
            _k3s: Some(running),
        })
    }

    /// The backend `SCENARIOS_CLUSTER` names (default `embedded`).
    pub async fn from_env() -> Result<Cluster, ClusterError> {
        match std::env::var("SCENARIOS_CLUSTER").as_deref() {
            Err(_) | Ok("") | Ok("embedded") => Self::embedded().await,
            Ok("k3s") => Self::k3s().await,
            Ok("existing") => Self::existing().await,
            Ok(other) => Err(ClusterError::Unavailable(format!(
                "SCENARIOS_CLUSTER={other}: use embedded, k3s or existing"
            ))),
        }
    }

    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    pub fn kubeconfig_yaml(&self) -> &str {
        &self.kubeconfig
    }

    /// A client as the CCM (see `ccm_kubeconfig`), for suites that run its controllers
    /// in-process.
    pub fn ccm_client(&self) -> kube::Client {
        self.ccm_client.clone()
    }

    /// The kubeconfig a CCM runs with (see the field).
    pub fn ccm_kubeconfig_yaml(&self) -> &str {
        &self.ccm_kubeconfig
    }

    /// The embedded API server, when that is the backend.
    pub fn api_server(&self) -> Option<&ApiServer> {
        self.embedded.as_ref()
    }

    /// Whether simulated kubelets provide the Nodes (only the embedded server has no real
    /// kubelets of its own).
    pub fn simulated_nodes(&self) -> bool {
        self.backend == Backend::Embedded
    }
}
