//! One pipeline from a parsed Service to its plan, for the reconcile and for the `plan`
//! preview alike: read (the other Services, the Nodes, the servers, the account's load
//! balancers: [`Reads`]) → check (floating IP claims, allowed subnets) → map → find the
//! load balancer (ownership) → plan. Nothing here writes; the reconcile applies what it
//! returns, the preview prints it, so the preview shows exactly what a reconcile of the
//! same cluster and cloud state would do.

use super::annotations;
use super::annotations::ServiceConfig;
use super::context::{ServiceContext, service_key};
use super::error::ServiceError;
use super::fetch::{self, Found, Lookup, Snapshot, node_view, server_view};
use super::map::{self, Mapped, NodeView, ServerView};
use super::model::{ActualLb, DesiredLb};
use super::ownership::{self, Claimant, Seeker};
use super::plan::{self, Ownership, Plan};
use crate::cloudscale::{Client as Cloud, Filter, LoadBalancer};
use k8s_openapi::api::core::v1::{Node, Service};
use kube::ResourceExt;
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

/// The floating IPs a Service claims (unparseable entries of other Services are ignored:
/// they are that Service's error to report).
fn claimed_floating_ips(svc: &Service) -> Vec<std::net::IpAddr> {
    let Some(raw) = svc
        .annotations()
        .get(annotations::LOADBALANCER_FLOATING_IPS)
    else {
        return Vec::new();
    };
    serde_json::from_str::<Vec<String>>(raw)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| annotations::parse_network(e).ok())
        .map(|n| n.addr())
        .collect()
}

fn is_other_lb_service(other: &Service, uid: &str) -> bool {
    annotations::is_handled(other) && other.metadata.uid.as_deref() != Some(uid)
}

/// Pure: the first of `mine` that another LoadBalancer Service (not `uid`, no load balancer
/// class, not being deleted) also claims, with that Service's `namespace/name`. Floating
/// IPs are compared by address, whatever prefix length each Service wrote.
pub fn floating_ip_conflict(
    mine: &[ipnet::IpNet],
    uid: &str,
    others: &[Arc<Service>],
) -> Option<(String, String)> {
    for other in others {
        if !is_other_lb_service(other, uid) || other.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let theirs = claimed_floating_ips(other);
        if let Some(ip) = mine.iter().find(|ip| theirs.contains(&ip.addr())) {
            return Some((ip.to_string(), service_key(other)));
        }
    }
    None
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
    let unknown: Vec<String> = cfg
        .allowed_subnets
        .iter()
        .filter(|s| !known.contains(s))
        .map(ToString::to_string)
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let e = annotations::ConfigError {
        field: annotations::LOADBALANCER_LISTENER_ALLOWED_SUBNETS.to_string(),
        value: Some(format!("{:?}", unknown.join(", "))),
        problem: format!("no such subnet in this account: {}", unknown.join(", ")),
        hint: "name the UUIDs of subnets the nodes are attached to".to_string(),
    };
    Err(ServiceError::Config(format!(
        "Service {}/{} has 1 invalid setting: {e}",
        cfg.namespace, cfg.name
    )))
}

/// The plan for `desired` against what `found` says exists.
pub fn plan_for(
    found: &Found,
    snapshot: &Snapshot,
    desired: &DesiredLb,
    owner: &Ownership,
) -> Result<(Option<LoadBalancer>, Option<ActualLb>, Plan), ServiceError> {
    let (lb, actual) = match found {
        Found::Absent => (None, None),
        Found::Mine { lb, actual } => (Some((**lb).clone()), Some((**actual).clone())),
        Found::Refused(why) => return Err(ServiceError::NotOwned(why.clone())),
    };
    let p = plan::plan(desired, actual.as_ref(), &snapshot.account(), owner);
    Ok((lb, actual, p))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::annotations;
    use serde_json::json;

    fn svc(ns: &str, name: &str, uid: &str, fips: &str, ty: &str) -> Arc<Service> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": ns, "uid": uid,
                             "annotations": {annotations::LOADBALANCER_FLOATING_IPS: fips}},
                "spec": {"type": ty},
            }))
            .expect("service"),
        )
    }

    #[test]
    fn a_floating_ip_claimed_twice_is_a_conflict_naming_the_other_service() {
        let mine = vec!["45.132.236.10/32".parse().expect("net")];
        let others = vec![
            svc(
                "default",
                "me",
                "u1",
                r#"["45.132.236.10/32"]"#,
                "LoadBalancer",
            ),
            svc(
                "other",
                "nodeport",
                "u2",
                r#"["45.132.236.10/32"]"#,
                "NodePort",
            ),
            svc("other", "web", "u3", r#"["45.132.236.10"]"#, "LoadBalancer"),
        ];
        // Itself and non-LoadBalancer Services do not count; bare IPs are normalised.
        assert_eq!(
            floating_ip_conflict(&mine, "u1", &others),
            Some(("45.132.236.10/32".to_string(), "other/web".to_string()))
        );
        assert_eq!(floating_ip_conflict(&mine, "u1", &others[..2]), None);
        let garbage = vec![svc("x", "y", "u4", "not json", "LoadBalancer")];
        assert_eq!(floating_ip_conflict(&mine, "u1", &garbage), None);
    }

    #[test]
    fn floating_ips_conflict_by_address_whatever_the_prefix_length() {
        let mine = vec!["2a06:c02:0:100::/64".parse().expect("net")];
        let others = vec![svc(
            "other",
            "v6",
            "u9",
            r#"["2a06:c02:0:100::/56"]"#,
            "LoadBalancer",
        )];
        assert_eq!(
            floating_ip_conflict(&mine, "u1", &others).map(|c| c.1),
            Some("other/v6".to_string())
        );
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
