//! One pipeline from a parsed Service to its plan, for the reconcile and for the `plan`
//! preview alike: read (the other Services, the Nodes, the servers, the account's load
//! balancers: [`Reads`]) → check (floating IP claims, allowed subnets) → map → find the
//! load balancer (ownership) → plan. Nothing here writes; the reconcile applies what it
//! returns, the preview prints it, so the preview shows exactly what a reconcile of the
//! same cluster and cloud state would do.

use super::annotations::ServiceConfig;
use super::controller::{ServiceContext, ServiceError, claimants, floating_ip_conflict};
use super::ensure::{check_subnets, node_view, plan_for, server_view};
use super::fetch::{self, Found, Lookup, Snapshot};
use super::map::{self, Mapped, NodeView, ServerView};
use super::model::ActualLb;
use super::ownership::{self, Claimant, Seeker};
use super::plan::{Ownership, Plan};
use crate::cloudscale::{Client as Cloud, Filter, LoadBalancer};
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, ListParams};
use std::sync::Arc;
use uuid::Uuid;

/// Where the pipeline reads the cluster and the account.
pub enum Reads<'a> {
    /// The controller's: the shared caches of Services and Nodes, and the account-wide
    /// lists shared by the Services reconciled within a short window.
    Cached(&'a ServiceContext),
    /// The preview's: every list read directly, once.
    Direct {
        kube: &'a kube::Client,
        cloud: &'a Cloud,
    },
}

impl Reads<'_> {
    async fn services(&self) -> Result<Vec<Arc<Service>>, ServiceError> {
        match self {
            Reads::Cached(ctx) => Ok(ctx.services()),
            Reads::Direct { kube, .. } => Ok(Api::<Service>::all((*kube).clone())
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .map(Arc::new)
                .collect()),
        }
    }

    async fn nodes(&self) -> Result<Vec<NodeView>, ServiceError> {
        match self {
            Reads::Cached(ctx) => Ok(ctx.node_views()),
            Reads::Direct { kube, .. } => Ok(Api::<Node>::all((*kube).clone())
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .map(node_view)
                .collect()),
        }
    }

    /// The servers; `fresh`: not from a shared read (a Node newer than it).
    async fn servers(&self, fresh: bool) -> Result<Arc<Vec<ServerView>>, ServiceError> {
        match self {
            Reads::Cached(ctx) => {
                if fresh {
                    ctx.shared.invalidate();
                }
                Ok(ctx.shared.servers(&ctx.cloud, server_view).await?)
            }
            Reads::Direct { cloud, .. } => Ok(Arc::new(
                cloud
                    .list_servers(&Filter::all())
                    .await?
                    .iter()
                    .filter_map(server_view)
                    .collect(),
            )),
        }
    }

    async fn subnets(&self) -> Result<Arc<Vec<Uuid>>, ServiceError> {
        match self {
            Reads::Cached(ctx) => Ok(ctx.shared.subnets(&ctx.cloud).await?),
            Reads::Direct { cloud, .. } => Ok(Arc::new(
                cloud
                    .list_subnets(&Filter::all())
                    .await?
                    .iter()
                    .filter_map(|s| Uuid::parse_str(&s.uuid).ok())
                    .collect(),
            )),
        }
    }

    /// The Service's load balancer and the account-wide lists it was found in.
    pub async fn fetch(&self, lookup: &Lookup<'_>) -> Result<(Arc<Snapshot>, Found), ServiceError> {
        match self {
            Reads::Cached(ctx) => Ok(ctx.shared.fetch(&ctx.cloud, lookup).await?),
            Reads::Direct { cloud, .. } => {
                let snapshot = Snapshot::fetch(cloud).await?;
                let found = fetch::fetch_in(cloud, &snapshot, lookup).await?;
                Ok((Arc::new(snapshot), found))
            }
        }
    }
}

/// Everything the pipeline found out about one Service, up to its plan.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The desired load balancer, with what the mapping reports (nodes without a server,
    /// settings not applied as written).
    pub mapped: Mapped,
    /// The tags that make a load balancer the Service's.
    pub owner: Ownership,
    /// The cluster's other LoadBalancer Services (their load balancer claims).
    pub others: Vec<Claimant>,
    /// Its load balancer, if it has one, and the planner's view of it.
    pub lb: Option<LoadBalancer>,
    pub actual: Option<ActualLb>,
    pub plan: Plan,
}

/// Who looks for the Service's load balancer.
pub fn lookup<'a>(cfg: &'a ServiceConfig, cluster: &'a str, others: &'a [Claimant]) -> Lookup<'a> {
    Lookup {
        seeker: Seeker {
            uid: &cfg.uid,
            name: &cfg.lb_name,
            uuid: cfg.lb_uuid,
        },
        cluster,
        others,
    }
}

/// Reads, checks, maps, finds and plans the parsed Service `cfg`; writes nothing.
pub async fn prepare(
    cfg: &ServiceConfig,
    cluster: &str,
    reads: &Reads<'_>,
) -> Result<Prepared, ServiceError> {
    let services = reads.services().await?;
    // One floating IP, two Services: refuse both (each finds the other) before any write.
    if let Some((ip, other)) = floating_ip_conflict(&cfg.floating_ips, &cfg.uid, &services) {
        return Err(ServiceError::FloatingIpConflict { ip, other });
    }
    if !cfg.allowed_subnets.is_empty() {
        check_subnets(cfg, &reads.subnets().await?)?;
    }
    let nodes = reads.nodes().await?;
    let mut mapped = map::desired(cfg, &nodes, &reads.servers(false).await?)?;
    if !mapped.problems.is_empty() {
        // A Node newer than the shared server list: read it again before calling the Node
        // serverless.
        mapped = map::desired(cfg, &nodes, &reads.servers(true).await?)?;
    }
    let owner = Ownership {
        tags: ownership::tags(cluster, &cfg.uid),
    };
    let others = claimants(&services, &cfg.uid);
    let (snapshot, found) = reads.fetch(&lookup(cfg, cluster, &others)).await?;
    let (lb, actual, plan) = plan_for(&found, &snapshot, &mapped.desired, &owner)?;
    Ok(Prepared {
        mapped,
        owner,
        others,
        lb,
        actual,
        plan,
    })
}
