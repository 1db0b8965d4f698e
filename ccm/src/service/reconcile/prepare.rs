//! One pipeline from a parsed Service to its plan, for the reconcile and for the `plan`
//! preview alike: read (the other Services, the Nodes, the servers, the account's load
//! balancers: [`Reads`]) → check (floating IP claims, allowed subnets) → map → find the
//! load balancer (ownership) → plan. Nothing here writes; the reconcile applies what it
//! returns, the preview prints it, so the preview shows exactly what a reconcile of the
//! same cluster and cloud state would do.

use super::claims::{self, Claim};
use super::context::{ServiceContext, service_key};
use super::error::{ServiceError, UnknownSubnets};
use crate::cloudscale::{Client as Cloud, Filter};
use crate::service::cloud::fetch::{self, Found, Lookup, Snapshot, node_view, server_view};
use crate::service::pure::annotations;
use crate::service::pure::annotations::ServiceConfig;
use crate::service::pure::map::{self, Mapped, NodeView, ServerView};
use crate::service::pure::model::{ActualLb, DesiredLb};
use crate::service::pure::ownership::{self, Claimant, Seeker};
use crate::service::pure::plan::{self, Account, Ownership, Plan};
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, ListParams};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::time::Instant;
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
    pub(super) async fn services(&self) -> Result<Vec<Arc<Service>>, ServiceError> {
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

    pub async fn nodes(&self) -> Result<Vec<NodeView>, ServiceError> {
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

    /// Nodes deleted moments ago that may register again, each with the end of its grace
    /// (the controller's memory; a preview, which has none, sees them gone).
    fn returning(&self) -> Vec<(NodeView, Instant)> {
        match self {
            Reads::Cached(ctx) => ctx.returning_nodes(),
            Reads::Direct { .. } => Vec::new(),
        }
    }

    /// The servers; `fresh`: not from a shared read (a Node newer than it).
    pub(super) async fn servers(&self, fresh: bool) -> Result<Arc<Vec<ServerView>>, ServiceError> {
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
                    .map(|s| s.uuid)
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

fn is_other_lb_service(other: &Service, uid: &str) -> bool {
    annotations::is_handled(other) && other.metadata.uid.as_deref() != Some(uid)
}

/// What decides the fate of the Service's floating IPs, kept so that every pass of a
/// reconcile judges them on the snapshot it plans against (see `claims.rs`).
#[derive(Debug, Clone, Default)]
pub struct FipContext {
    pub cluster: String,
    /// The Service's own claim (`None`: it names no floating IP).
    pub me: Option<Claim>,
    /// The other Services that claim any of its addresses.
    pub rivals: Vec<Claim>,
    /// `namespace/name` by UID (only when it claims any: for naming previous holders).
    pub names: BTreeMap<String, String>,
}

impl FipContext {
    /// The claim of the parsed Service `cfg` among `services`.
    pub fn new(cfg: &ServiceConfig, cluster: &str, services: &[Arc<Service>]) -> FipContext {
        if cfg.floating_ips.is_empty() {
            return FipContext {
                cluster: cluster.to_string(),
                ..FipContext::default()
            };
        }
        // A Service not stored yet (a preview of a new one) is the newest of all.
        let created = services
            .iter()
            .find(|s| s.metadata.uid.as_deref() == Some(cfg.uid.as_str()))
            .and_then(|s| s.metadata.creation_timestamp.as_ref())
            .map_or_else(|| "9999-12-31T23:59:59Z".to_string(), |t| t.0.to_string());
        let me = Claim {
            service: format!("{}/{}", cfg.namespace, cfg.name),
            uid: cfg.uid.clone(),
            created,
            addresses: cfg.floating_ips.iter().map(|n| n.addr()).collect(),
        };
        FipContext {
            cluster: cluster.to_string(),
            rivals: claims::rivals(services, &cfg.uid, &me.addresses),
            names: claims::names_by_uid(services),
            me: Some(me),
        }
    }

    /// The account as the planner needs it, from `snapshot`.
    pub fn account(&self, snapshot: &Snapshot) -> Account {
        claims::account(
            &fetch::floating_ip_views(&snapshot.floating_ips, &snapshot.load_balancers),
            &self.cluster,
            self.me.as_ref(),
            &self.rivals,
            &self.names,
        )
    }
}

/// Pure: whether `servers` (the account's) holds none of the servers of the initialized
/// Nodes: then it is not this cluster's account (another project's token), and nothing may
/// be created, changed or deleted there in the cluster's name.
pub fn foreign_account(nodes: &[NodeView], servers: &[ServerView]) -> Option<String> {
    let cluster: Vec<Uuid> = nodes.iter().filter_map(|n| n.provider_id).collect();
    if cluster.is_empty() || cluster.iter().any(|u| servers.iter().any(|s| s.uuid == *u)) {
        return None;
    }
    Some(format!(
        "the account the API token reaches holds none of the {} servers of this cluster's Nodes: nothing is created, changed or deleted there; check that CLOUDSCALE_ACCESS_TOKEN (or --token-file) is a token of this cluster's project",
        cluster.len()
    ))
}

/// The other LoadBalancer Services of the cluster, as far as load balancer claims go.
pub fn claimants(others: &[Arc<Service>], uid: &str) -> Vec<Claimant> {
    others
        .iter()
        .filter(|o| is_other_lb_service(o, uid))
        .map(|o| Claimant {
            service: service_key(o),
            uid: o.metadata.uid.clone().unwrap_or_default(),
            lb_name: annotations::lb_name(o),
            lb_uuid: annotations::lb_uuid(o).ok().flatten(),
        })
        .collect()
}

/// Pure: the allowed-subnets annotation may only name subnets of the account: a subnet
/// that does not exist is refused like any invalid setting (it would leave the load
/// balancer without members).
pub fn check_subnets(cfg: &ServiceConfig, known: &[Uuid]) -> Result<(), ServiceError> {
    let unknown: Vec<Uuid> = cfg
        .allowed_subnets
        .iter()
        .filter(|s| !known.contains(s))
        .copied()
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ServiceError::UnknownSubnets(UnknownSubnets::allowed(
        format!("{}/{}", cfg.namespace, cfg.name),
        unknown,
    )))
}

/// The plan for `desired` against what `found` says exists.
pub fn plan_for(
    found: &Found,
    snapshot: &Snapshot,
    desired: &DesiredLb,
    owner: &Ownership,
    fips: &FipContext,
) -> Result<(Option<ActualLb>, Plan), ServiceError> {
    let actual = match found {
        Found::Absent => None,
        Found::Mine(actual) => Some((**actual).clone()),
        Found::Refused(why) => return Err(ServiceError::NotOwned(why.clone())),
    };
    let p = plan::plan(desired, actual.as_ref(), &fips.account(snapshot), owner);
    Ok((actual, p))
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
    /// Who else claims its floating IPs.
    pub fips: FipContext,
    /// The planner's view of its load balancer, if it has one.
    pub actual: Option<ActualLb>,
    pub plan: Plan,
    /// When the members of a deleted Node, kept because the Service selects no other, are
    /// to be looked at again (`map::with_returning`).
    pub kept_until: Option<Instant>,
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

/// The account's servers, once they show the account is the cluster's (see
/// [`foreign_account`]; a verdict of "foreign" is read afresh before it is given).
pub async fn account_servers(
    reads: &Reads<'_>,
    nodes: &[NodeView],
) -> Result<Arc<Vec<ServerView>>, ServiceError> {
    let servers = reads.servers(false).await?;
    if foreign_account(nodes, &servers).is_none() {
        return Ok(servers);
    }
    let servers = reads.servers(true).await?;
    match foreign_account(nodes, &servers) {
        None => Ok(servers),
        Some(why) => Err(ServiceError::ForeignAccount(why)),
    }
}

/// Reads, checks, maps, finds and plans the parsed Service `cfg`; writes nothing.
pub async fn prepare(
    cfg: &ServiceConfig,
    cluster: &str,
    reads: &Reads<'_>,
) -> Result<Prepared, ServiceError> {
    let services = reads.services().await?;
    if !cfg.allowed_subnets.is_empty() {
        check_subnets(cfg, &reads.subnets().await?)?;
    }
    let nodes = reads.nodes().await?;
    // Read with the Nodes, not after the server reads: a Node deleted and registered again
    // meanwhile would be in neither (absent from the Nodes read, its grace ended by its
    // return), and every member of a Service it alone served would be deleted.
    let returning = reads.returning();
    let servers = account_servers(reads, &nodes).await?;
    let mut servers = servers;
    let mut mapped = map::desired(cfg, &nodes, &servers)?;
    if !mapped.problems.is_empty() {
        // A Node newer than the shared server list: read it again before calling the Node
        // serverless.
        servers = reads.servers(true).await?;
        mapped = map::desired(cfg, &nodes, &servers)?;
    }
    let (mapped, kept_until) = map::with_returning(cfg, mapped, &nodes, &returning, &servers);
    if kept_until.is_some() {
        tracing::info!(
            service = %format!("{}/{}", cfg.namespace, cfg.name),
            "the members of a Node deleted moments ago stay while it may register again"
        );
    }
    let owner = Ownership {
        tags: ownership::tags(cluster, &cfg.uid),
        labels: ownership::labels(&cfg.namespace, &cfg.name),
    };
    let others = claimants(&services, &cfg.uid);
    let fips = FipContext::new(cfg, cluster, &services);
    let (snapshot, found) = reads.fetch(&lookup(cfg, cluster, &others)).await?;
    let (actual, plan) = plan_for(&found, &snapshot, &mapped.desired, &owner, &fips)?;
    Ok(Prepared {
        mapped,
        owner,
        others,
        fips,
        actual,
        plan,
        kept_until,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::pure::annotations;
    use serde_json::json;

    fn node(provider: Option<u128>) -> NodeView {
        NodeView {
            name: "n".into(),
            labels: Default::default(),
            provider_id: provider.map(Uuid::from_u128),
            deleting: false,
            ready: true,
        }
    }

    fn server(uuid: u128) -> ServerView {
        ServerView {
            uuid: Uuid::from_u128(uuid),
            name: "s".into(),
            zone: "rma1".into(),
            private: Vec::new(),
        }
    }

    #[test]
    fn an_account_without_the_clusters_servers_is_foreign() {
        let nodes = [node(Some(1)), node(Some(2)), node(None)];
        let why = foreign_account(&nodes, &[server(7)]).expect("foreign");
        assert!(why.contains("none of the 2 servers"), "{why}");
        assert!(foreign_account(&nodes, &[]).is_some());
        assert_eq!(foreign_account(&nodes, &[server(2), server(7)]), None);
        // No Node initialized yet: nothing to judge by.
        assert_eq!(foreign_account(&[node(None)], &[]), None);
    }

    #[test]
    fn an_allowed_subnet_the_account_lacks_is_refused_naming_the_annotation() {
        let known = Uuid::from_u128(7);
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "annotations": {
                annotations::LOADBALANCER_LISTENER_ALLOWED_SUBNETS:
                    format!("[\"{known}\", \"{}\"]", Uuid::from_u128(8)),
            }},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}]},
        }))
        .expect("service");
        let cfg = annotations::parse_service(&svc)
            .expect("valid")
            .expect("handled");
        let e = check_subnets(&cfg, &[known]).expect_err("refused");
        let text = e.to_string();
        assert!(
            text.contains(annotations::LOADBALANCER_LISTENER_ALLOWED_SUBNETS),
            "{text}"
        );
        assert!(text.contains(&Uuid::from_u128(8).to_string()), "{text}");
        assert!(!text.contains(&format!("{known},")), "{text}");
        assert!(check_subnets(&cfg, &[known, Uuid::from_u128(8)]).is_ok());
    }
}
