//! `cloudscale-cloud-controller-manager plan --service NAMESPACE/NAME [-f proposed.yaml]`:
//! prints the actions and impact class the CCM would apply, writing nothing anywhere.

use crate::app::Environment;
use crate::cloudscale::{self, Client, ClientConfig};
use crate::options;
use crate::secret::TokenSource;
use crate::service::controller;
use clap::Parser;
use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "cloudscale-cloud-controller-manager plan",
    about = "Preview the load balancer changes for a Service (writes nothing)"
)]
pub struct PlanArgs {
    /// The Service, as NAMESPACE/NAME.
    #[arg(long)]
    pub service: String,
    /// A proposed version of the Service (YAML or JSON) instead of the live one.
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// kubeconfig file (default: in-cluster configuration, else KUBECONFIG).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// File holding the API token (default: CLOUDSCALE_ACCESS_TOKEN). A read-only token is
    /// enough.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error("--service must be NAMESPACE/NAME, got \"{0}\"")]
    ServiceName(String),
    #[error("cannot read {path}: {reason}")]
    File { path: String, reason: String },
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Plan(#[from] controller::ServiceError),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// Runs the preview and returns the text to print.
pub async fn run(args: PlanArgs, env: Environment) -> Result<String, PreviewError> {
    let (ns, name) = args
        .service
        .split_once('/')
        .filter(|(n, s)| !n.is_empty() && !s.is_empty())
        .ok_or_else(|| PreviewError::ServiceName(args.service.clone()))?;
    let token = TokenSource::from_env_or_file(args.token_file.as_deref(), env.access_token)
        .map_err(|e| PreviewError::Setup(e.to_string()))?;
    cloudscale::install_crypto_provider();
    let (timeout, _) = options::api_timeout(env.api_timeout);
    let cloud = Client::new(ClientConfig {
        timeout,
        ..ClientConfig::new(options::api_url(env.api_url), Arc::new(token))
    })
    .map_err(|e| PreviewError::Setup(e.to_string()))?;
    let config = match &args.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| PreviewError::File {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .map_err(|e| PreviewError::Setup(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| PreviewError::Setup(e.to_string()))?,
    };
    let kube = kube::Client::try_from(config).map_err(|e| PreviewError::Setup(e.to_string()))?;
    let live: Option<Service> = Api::<Service>::namespaced(kube.clone(), ns)
        .get_opt(name)
        .await?;
    let svc: Service = match &args.file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| PreviewError::File {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            let mut proposed: Service =
                serde_yaml_ng::from_str(&text).map_err(|e| PreviewError::File {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
            // The proposal keeps the live object's identity (UID: the default LB name).
            if let Some(live) = &live {
                proposed.metadata.uid = live.metadata.uid.clone();
                let ann = proposed
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default);
                for (k, v) in live.metadata.annotations.iter().flatten() {
                    if k == "k8s.cloudscale.ch/loadbalancer-uuid" {
                        ann.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
            proposed.metadata.namespace = Some(ns.to_string());
            proposed
        }
        None => {
            live.ok_or_else(|| PreviewError::Setup(format!("Service {ns}/{name} does not exist")))?
        }
    };
    let plan = controller::preview(&kube, &cloud, &svc).await?;
    Ok(match plan {
        None => format!(
            "Service {ns}/{name} is not handled by this CCM (not type LoadBalancer, or a loadBalancerClass)."
        ),
        Some(p) if p.is_converged() && p.refusals.is_empty() => {
            format!("Service {ns}/{name}: no changes.")
        }
        Some(p) => format!(
            "Service {ns}/{name}: impact {}\n{}",
            p.impact(),
            p.describe()
        ),
    })
}
