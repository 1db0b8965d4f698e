//! The service controller: for each `Service` of type `LoadBalancer` it parses, maps, plans
//! and applies, then writes status, its annotations and Events; it owns the finalizer
//! `service.kubernetes.io/load-balancer-cleanup` and removes the load balancer before it.

use super::annotations::{self, IpMode, ServiceConfig};
use super::apply::{self, ApplyOptions};
use super::map::{self, NodeView, ServerView};
use super::plan::{self, Impact};
use crate::cloudscale::{self, Client as Cloud, Filter, InterfaceType};
use crate::metrics::Metrics;
use crate::node::Events;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

pub const CONTROLLER: &str = "service";
pub const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";
/// Tags on every cloud resource the CCM creates: ownership is auditable, orphans findable.
pub const TAG_CLUSTER: &str = "k8s.cloudscale.ch/cluster";
pub const TAG_SERVICE_UID: &str = "k8s.cloudscale.ch/service-uid";
/// Passes of plan-and-apply per reconcile before giving up for now (a plan normally
/// converges in one; a second covers races with concurrent writers).
const MAX_PASSES: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Map(#[from] map::MapError),
    #[error("cloudscale API: {0}")]
    Cloud(#[from] cloudscale::ClientError),
    #[error(transparent)]
    Apply(#[from] apply::ApplyError),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("the load balancer did not converge after {0} passes")]
    NotConverged(usize),
    #[error(
        "floating IP {ip} is also claimed by Service {other} (k8s.cloudscale.ch/loadbalancer-floating-ips): refusing to go on so it does not flap between load balancers; remove it from one of them"
    )]
    FloatingIpConflict { ip: String, other: String },
}

/// The floating IPs a Service claims (unparseable entries of other Services are ignored:
/// they are that Service's error to report).
fn claimed_floating_ips(svc: &Service) -> Vec<String> {
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
        .map(|n| n.to_string())
        .collect()
}

/// Pure: the first of `mine` that another LoadBalancer Service (not `uid`, no load balancer
/// class) also claims, with that Service's `namespace/name`.
pub fn floating_ip_conflict(
    mine: &[String],
    uid: &str,
    others: &[Service],
) -> Option<(String, String)> {
    for other in others {
        let is_lb = other.spec.as_ref().is_some_and(|s| {
            s.type_.as_deref() == Some("LoadBalancer") && s.load_balancer_class.is_none()
        });
        if !is_lb
            || other.metadata.uid.as_deref() == Some(uid)
            || other.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let theirs = claimed_floating_ips(other);
        if let Some(ip) = mine.iter().find(|ip| theirs.contains(ip)) {
            let name = format!(
                "{}/{}",
                other.namespace().unwrap_or_default(),
                other.name_any()
            );
            return Some((ip.clone(), name));
        }
    }
    None
}

pub struct ServiceContext {
    pub kube: kube::Client,
    pub cloud: Cloud,
    pub events: Events,
    pub metrics: Arc<Metrics>,
    pub cluster_name: String,
    pub apply: ApplyOptions,
    /// Converged Services are looked at again this often (drift repair).
    pub resync: Duration,
    /// A failed Service is retried after `retry.0`, doubling per further failure up to
    /// `retry.1` (the upstream service controller's 5 s and 5 min by default).
    pub retry: (Duration, Duration),
    /// Consecutive failures per Service (namespace/name), for the backoff.
    pub failures: parking_lot::Mutex<std::collections::HashMap<String, u32>>,
    /// Account-wide reads shared by the Services reconciled within a short window.
    pub shared: super::shared::SharedReads,
}

fn node_view(n: &Node) -> NodeView {
    NodeView {
        name: n.name_any(),
        labels: n.labels().clone(),
        provider_id: crate::node::provider_id_of(n)
            .and_then(|p| crate::node::provider_id::parse(p).ok()),
        deleting: n.metadata.deletion_timestamp.is_some(),
    }
}

/// Every Node of the cluster, as the mapping sees them.
async fn node_views(kube: &kube::Client) -> Result<Vec<NodeView>, kube::Error> {
    let nodes: Api<Node> = Api::all(kube.clone());
    Ok(nodes
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(node_view)
        .collect())
}

fn server_view(s: &cloudscale::Server) -> Option<ServerView> {
    let uuid = Uuid::parse_str(&s.uuid).ok()?;
    let private = s
        .interfaces
        .iter()
        .filter(|i| i.kind != InterfaceType::Public)
        .flat_map(|i| i.addresses.iter())
        .filter_map(|a| {
            let subnet = Uuid::parse_str(&a.subnet.as_ref()?.uuid).ok()?;
            Some((a.address, subnet))
        })
        .collect();
    Some(ServerView {
        uuid,
        name: s.name.clone(),
        zone: s.zone.slug.clone(),
        private,
    })
}

fn tags(ctx: &ServiceContext, cfg: &ServiceConfig) -> BTreeMap<String, String> {
    [
        (TAG_CLUSTER.to_string(), ctx.cluster_name.clone()),
        (TAG_SERVICE_UID.to_string(), cfg.uid.clone()),
    ]
    .into()
}

async fn set_finalizer(
    api: &Api<Service>,
    svc: &Service,
    present: bool,
) -> Result<(), kube::Error> {
    let mut finalizers: Vec<String> = svc.finalizers().to_vec();
    let has = finalizers.iter().any(|f| f == FINALIZER);
    if has == present {
        return Ok(());
    }
    if present {
        finalizers.push(FINALIZER.to_string());
    } else {
        finalizers.retain(|f| f != FINALIZER);
    }
    let patch =
        json!({"metadata": {"resourceVersion": svc.resource_version(), "finalizers": finalizers}});
    api.patch(
        &svc.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
}

/// Removes the load balancer of a Service (and everything under it), then the finalizer.
/// A lookup error keeps the finalizer: never leak a load balancer on a failed GET.
async fn cleanup(svc: &Service, ctx: &ServiceContext) -> Result<(), ServiceError> {
    let api: Api<Service> = Api::namespaced(ctx.kube.clone(), &svc.namespace().unwrap_or_default());
    let name = annotations::lb_name(svc);
    // An unreadable uuid annotation must not block deletion: the name still finds the LB.
    let uuid = annotations::lb_uuid(svc).ok().flatten();
    if let Some((lb, _)) = apply::fetch(&ctx.cloud, &name, uuid).await? {
        let deleted = ctx.cloud.delete_load_balancer(&lb.uuid).await;
        ctx.shared.invalidate();
        deleted?;
        ctx.events
            .publish(
                &svc.object_ref(&()),
                false,
                "DeletedLoadBalancer",
                "DeleteLoadBalancer",
                format!("Deleted load balancer {} ({})", lb.name, lb.uuid),
            )
            .await;
    }
    set_finalizer(&api, svc, false).await?;
    Ok(())
}

/// The status ingress: one entry per VIP (with ipMode), or one hostname.
fn ingress(cfg: &ServiceConfig, lb: &cloudscale::LoadBalancer) -> serde_json::Value {
    if let Some(h) = &cfg.force_hostname {
        return json!([{"hostname": h}]);
    }
    let mode = match cfg.ip_mode {
        IpMode::Proxy => "Proxy",
        IpMode::Vip => "VIP",
    };
    json!(
        lb.vip_addresses
            .iter()
            .map(|v| json!({"ip": v.address.to_string(), "ipMode": mode}))
            .collect::<Vec<_>>()
    )
}

async fn ensure(
    svc: &Service,
    cfg: &ServiceConfig,
    ctx: &ServiceContext,
) -> Result<(), ServiceError> {
    let ns = svc.namespace().unwrap_or_default();
    let api: Api<Service> = Api::namespaced(ctx.kube.clone(), &ns);
    set_finalizer(&api, svc, true).await?;
    let reference = svc.object_ref(&());

    // One floating IP, two Services: refuse both (each finds the other) before any write.
    if !cfg.floating_ips.is_empty() {
        let mine: Vec<String> = cfg.floating_ips.iter().map(|n| n.to_string()).collect();
        let all: Api<Service> = Api::all(ctx.kube.clone());
        let others = all.list(&ListParams::default()).await?.items;
        if let Some((ip, other)) = floating_ip_conflict(&mine, &cfg.uid, &others) {
            let e = ServiceError::FloatingIpConflict { ip, other };
            ctx.events
                .publish(
                    &reference,
                    true,
                    "FloatingIPConflict",
                    "EnsureLoadBalancer",
                    e.to_string(),
                )
                .await;
            return Err(e);
        }
    }

    let nodes = node_views(&ctx.kube).await?;
    let servers = ctx.shared.servers(&ctx.cloud, server_view).await?;
    let mut mapped = map::desired(cfg, &nodes, &servers)?;
    if !mapped.problems.is_empty() {
        // A Node newer than the shared server list: read it again before calling the Node
        // serverless.
        ctx.shared.invalidate();
        let servers = ctx.shared.servers(&ctx.cloud, server_view).await?;
        mapped = map::desired(cfg, &nodes, &servers)?;
    }
    for p in &mapped.problems {
        let note = match p {
            map::NodeProblem::NoServer { node } => {
                format!("Node {node} maps to no server: it gets no traffic")
            }
            map::NodeProblem::AmbiguousName { node, count } => {
                format!(
                    "{count} servers are named like node {node}: it gets no traffic until its provider ID is set"
                )
            }
        };
        ctx.events
            .publish(&reference, true, "NodeWithoutServer", "MapNodes", note)
            .await;
    }
    if mapped.no_nodes {
        ctx.events
            .publish(
                &reference,
                true,
                "NoValidNodes",
                "MapNodes",
                "No node matches this Service: the load balancer has no members".into(),
            )
            .await;
    }
    let desired = mapped.desired;
    let tags = tags(ctx, cfg);

    let mut lb = None;
    for pass in 0..MAX_PASSES {
        let fetched = ctx
            .shared
            .fetch(
                &ctx.cloud,
                &desired.name,
                lb.as_ref()
                    .and_then(|l: &cloudscale::LoadBalancer| Uuid::parse_str(&l.uuid).ok())
                    .or(cfg.lb_uuid),
            )
            .await?;
        let (current, actual) = match fetched {
            Some((l, a)) => (Some(l), Some(a)),
            None => (None, None),
        };
        let p = plan::plan(&desired, actual.as_ref());
        if pass == 0 {
            for r in &p.refusals {
                ctx.events
                    .publish(
                        &reference,
                        true,
                        "ChangeRefused",
                        "PlanLoadBalancer",
                        format!("{} ({})", r.message, r.annotation),
                    )
                    .await;
            }
        }
        if p.is_converged() {
            lb = current;
            break;
        }
        if p.impact() > Impact::None && p.impact() != Impact::Refused {
            ctx.events
                .publish(
                    &reference,
                    false,
                    "PlannedChange",
                    "PlanLoadBalancer",
                    format!("impact {}:\n{}", p.impact(), p.describe()),
                )
                .await;
        }
        let executed = apply::execute(
            &ctx.cloud,
            &desired,
            current.as_ref(),
            &p,
            &ctx.apply,
            &tags,
        )
        .await;
        // Whatever was written (even before a failure) makes shared reads stale.
        ctx.shared.invalidate();
        let outcome = executed?;
        ctx.metrics
            .reconcile_api_calls(CONTROLLER, outcome.reads, outcome.writes);
        if pass + 1 == MAX_PASSES {
            return Err(ServiceError::NotConverged(MAX_PASSES));
        }
        lb = ctx
            .cloud
            .get_load_balancer(&outcome.lb_uuid.to_string())
            .await?;
    }
    let Some(lb) = lb else {
        return Err(ServiceError::NotConverged(MAX_PASSES));
    };

    let wanted: BTreeMap<&str, String> = [
        (annotations::LOADBALANCER_UUID, lb.uuid.clone()),
        (
            annotations::LOADBALANCER_CONFIG_VERSION,
            annotations::CONFIG_VERSION.to_string(),
        ),
        (annotations::LOADBALANCER_ZONE, lb.zone.slug.clone()),
    ]
    .into();
    let differs = wanted
        .iter()
        .any(|(k, v)| svc.annotations().get(*k) != Some(v));
    if differs {
        let patch = json!({"metadata": {"annotations": wanted}});
        api.patch(
            &svc.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
        ctx.events
            .publish(
                &reference,
                false,
                "EnsuredLoadBalancer",
                "EnsureLoadBalancer",
                format!("Load balancer {} ({}) is in place", lb.name, lb.uuid),
            )
            .await;
    }
    // Status last, as the reference does: an ingress means everything else is written.
    let status = json!({"status": {"loadBalancer": {"ingress": ingress(cfg, &lb)}}});
    let current_status = json!({"status": {"loadBalancer": {"ingress": svc.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|l| l.ingress.clone())}}});
    if status != current_status {
        api.patch_status(
            &svc.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    }
    Ok(())
}

/// What the controller would do for `svc` (live or proposed), without writing anything:
/// the same parse, map, fetch and plan as a reconcile.
pub async fn preview(
    kube: &kube::Client,
    cloud: &Cloud,
    svc: &Service,
) -> Result<Option<plan::Plan>, ServiceError> {
    let cfg = match annotations::parse_service(svc) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => return Ok(None),
        Err(errors) => return Err(ServiceError::Config(errors.to_string())),
    };
    let nodes = node_views(kube).await?;
    let servers: Vec<ServerView> = cloud
        .list_servers(&Filter::all())
        .await?
        .iter()
        .filter_map(server_view)
        .collect();
    let desired = map::desired(&cfg, &nodes, &servers)?.desired;
    let actual = apply::fetch(cloud, &desired.name, cfg.lb_uuid)
        .await?
        .map(|(_, a)| a);
    Ok(Some(plan::plan(&desired, actual.as_ref())))
}

async fn reconcile(svc: Arc<Service>, ctx: Arc<ServiceContext>) -> Result<Action, ServiceError> {
    let started = Instant::now();
    let result = reconcile_inner(&svc, &ctx).await;
    ctx.metrics.reconcile(
        CONTROLLER,
        if result.is_ok() { "ok" } else { "error" },
        started.elapsed(),
    );
    if let Err(e) = &result {
        ctx.events
            .publish(
                &svc.object_ref(&()),
                true,
                "SyncLoadBalancerFailed",
                "EnsureLoadBalancer",
                e.to_string(),
            )
            .await;
    }
    if result.is_ok() {
        ctx.failures.lock().remove(&service_key(&svc));
    }
    result.map(|()| Action::requeue(ctx.resync))
}

fn service_key(svc: &Service) -> String {
    format!("{}/{}", svc.namespace().unwrap_or_default(), svc.name_any())
}

/// The pause before retrying after the `failures`-th consecutive failure (1-based):
/// `min`, doubling each time, at most `max`.
pub fn retry_delay(failures: u32, min: Duration, max: Duration) -> Duration {
    cloudscale::doubling(failures, min, max)
}

async fn reconcile_inner(svc: &Service, ctx: &ServiceContext) -> Result<(), ServiceError> {
    let ours = svc.finalizers().iter().any(|f| f == FINALIZER);
    if svc.metadata.deletion_timestamp.is_some() {
        return if ours {
            cleanup(svc, ctx).await
        } else {
            Ok(())
        };
    }
    match annotations::parse_service(svc) {
        // No longer a load balancer (or another class): clean up what we made.
        Ok(None) => {
            if ours {
                cleanup(svc, ctx).await?;
            }
            Ok(())
        }
        Ok(Some(cfg)) => ensure(svc, &cfg, ctx).await,
        Err(errors) => Err(ServiceError::Config(errors.to_string())),
    }
}

fn error_policy(svc: Arc<Service>, error: &ServiceError, ctx: Arc<ServiceContext>) -> Action {
    let failures = {
        let mut f = ctx.failures.lock();
        let n = f.entry(service_key(&svc)).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let delay = retry_delay(failures, ctx.retry.0, ctx.retry.1);
    tracing::warn!(
        service = %svc.name_any(),
        error = %error,
        failures,
        retry_in_ms = delay.as_millis() as u64,
        "service reconcile failed"
    );
    Action::requeue(delay)
}

/// Runs the service controller until `shutdown` completes; Node changes re-reconcile every
/// Service.
pub async fn run(
    ctx: Arc<ServiceContext>,
    concurrency: u16,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let services: Api<Service> = Api::all(ctx.kube.clone());
    let nodes: Api<Node> = Api::all(ctx.kube.clone());
    let controller = Controller::new(services, watcher::Config::default());
    let store = controller.store();
    controller
        .watches(nodes, watcher::Config::default(), move |_node: Node| {
            store
                .state()
                .iter()
                .map(|s| ObjectRef::from_obj(s.as_ref()))
                .collect::<Vec<_>>()
        })
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_services_back_off_exponentially_up_to_the_maximum() {
        let (min, max) = (Duration::from_secs(5), Duration::from_secs(300));
        let delays: Vec<u64> = (1..=9)
            .map(|n| retry_delay(n, min, max).as_secs())
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(retry_delay(u32::MAX, min, max), max, "no overflow");
    }

    fn svc(ns: &str, name: &str, uid: &str, fips: &str, ty: &str) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "uid": uid,
                         "annotations": {annotations::LOADBALANCER_FLOATING_IPS: fips}},
            "spec": {"type": ty},
        }))
        .expect("service")
    }

    #[test]
    fn a_floating_ip_claimed_twice_is_a_conflict_naming_the_other_service() {
        let mine = vec!["45.132.236.10/32".to_string()];
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
}
