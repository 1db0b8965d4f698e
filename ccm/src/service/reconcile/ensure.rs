//! One Service's reconcile and its preview, on one pipeline: parse (done by the caller) →
//! check against the account → map → find the load balancer (ownership) → plan → apply,
//! then annotations, status and Events. The preview runs the same steps up to the plan.

use super::context::{ServiceContext, service_key};
use super::error::ServiceError;
use super::prepare::{
    Prepared, Reads, account_servers, claimants, foreign_account, lookup, plan_for, prepare,
};
use super::progress::{FINALIZER, Progress};
use super::wait::{continues, note_waiting, recheck_waiting};
use crate::cloudscale::Client as Cloud;
use crate::runner::Key;
use crate::service::cloud::apply::{self, Pending, Recheck};
use crate::service::cloud::fetch::{self, Doomed, Edit, Snapshot};
use crate::service::pure::annotations::{self, IpMode, ServiceConfig};
use crate::service::pure::map::{self, Mapped};
use crate::service::pure::model::{ActualLb, DesiredLb};
use crate::service::pure::ownership::{self, Candidate, Resolution, Seeker};
use crate::service::pure::plan::{Action, Impact, Ownership, Plan, RefusalKind};
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Passes of plan-and-apply per reconcile before giving up for now (a plan normally
/// converges in one; a second covers races with concurrent writers).
const MAX_PASSES: usize = 3;

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

/// Removes the Service's load balancers (and everything under them), then the finalizer;
/// a Service that stopped being a LoadBalancer (`clear_status`) also loses its ingress. A
/// load balancer that is another Service's is left alone. A lookup error keeps the
/// finalizer: never leak a load balancer on a failed GET.
pub async fn cleanup(
    svc: &Service,
    ctx: &ServiceContext,
    clear_status: bool,
) -> Result<(), ServiceError> {
    let api: Api<Service> = Api::namespaced(ctx.kube.clone(), &svc.namespace().unwrap_or_default());
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    let services = ctx.services();
    // Finding no load balancer in another project's account proves nothing: the finalizer
    // stays until the account is the cluster's again.
    let reads = Reads::Cached(ctx);
    let nodes = reads.nodes().await?;
    account_servers(&reads, &nodes).await?;
    let snapshot = Snapshot::fetch(&ctx.cloud).await?;
    let candidates = fetch::candidates(&snapshot.load_balancers);
    let resolution = own_load_balancer(svc, &services, &candidates, &ctx.cluster_name);
    let reference = svc.object_ref(&());
    let doomed = match ownership::doomed(&resolution, &uid) {
        Ok(doomed) => doomed,
        Err(why) => {
            ctx.events
                .publish(
                    &reference,
                    false,
                    "LoadBalancerKept",
                    "DeleteLoadBalancer",
                    format!("Not deleting a load balancer that is not this Service's: {why}"),
                )
                .await;
            Vec::new()
        }
    };
    let deleting = !doomed.is_empty();
    for lb in doomed {
        let deleted = ctx.cloud.delete_load_balancer(lb.uuid).await;
        ctx.shared.invalidate();
        deleted?;
        ctx.events
            .publish(
                &reference,
                false,
                "DeletedLoadBalancer",
                "DeleteLoadBalancer",
                format!("Deleted load balancer {} ({})", lb.name, lb.uuid),
            )
            .await;
    }
    if deleting || matches!(resolution, Resolution::None) {
        // "Gone" (nothing found, or a DELETE answering 404) holds only in the cluster's own
        // account, and the token may have switched since the server list above (a shared
        // read) or the snapshot: the finalizer goes only once a list read after the
        // deletions shows the account is the cluster's.
        if let Some(why) = foreign_account(&nodes, &reads.servers(true).await?) {
            return Err(ServiceError::ForeignAccount(why));
        }
    }
    if clear_status && !ingress_of(svc).is_empty() {
        // As the upstream service controller does once the load balancer is gone.
        let status = json!({"status": {"loadBalancer": {"ingress": null}}});
        api.patch_status(
            &svc.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    }
    ctx.states.lock().cleaned_up(&Key::of(svc));
    set_finalizer(&api, svc, false).await?;
    Ok(())
}

/// The Service's status ingress entries as JSON (empty when it has none).
pub fn ingress_of(svc: &Service) -> Vec<serde_json::Value> {
    svc.status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref())
        .map(|i| {
            i.iter()
                .filter_map(|e| serde_json::to_value(e).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Says that a change of the Service's load balancer starts, and what it is.
async fn announce_ensuring(svc: &Service, ctx: &ServiceContext, p: &Plan) {
    ctx.states.lock().begin_ensuring(&Key::of(svc));
    let steps = p.steps.len();
    // A new Service's first Event says that its load balancer is being created.
    let what = match p.steps.first().map(|s| &s.action) {
        Some(Action::CreateLb { name, flavor, zone }) => format!(
            "Creating load balancer {name} ({flavor}{})",
            zone.as_deref()
                .map(|z| format!(", zone {z}"))
                .unwrap_or_default()
        ),
        _ => "Ensuring load balancer".to_string(),
    };
    ctx.events
        .publish(
            &svc.object_ref(&()),
            false,
            "EnsuringLoadBalancer",
            "EnsureLoadBalancer",
            format!(
                "{what}: {steps} change{} (impact {})",
                if steps == 1 { "" } else { "s" },
                p.steps_impact()
            ),
        )
        .await;
}

/// The addresses clients reach the load balancer at, for Events: its VIPs, or the hostname
/// the Service's status reports instead.
fn addresses(cfg: &ServiceConfig, lb: &ActualLb) -> String {
    let vips: Vec<String> = lb.vips.iter().map(|(_, a)| a.to_string()).collect();
    match &cfg.force_hostname {
        Some(h) => format!("{} (status: hostname {h})", vips.join(", ")),
        None => vips.join(", "),
    }
}

/// The status ingress: one entry per VIP (with ipMode), or one hostname. An IPv6-only
/// Service lists the IPv6 VIPs alone, as clouds that honour `spec.ipFamilies` do (the IPv4 VIP
/// still exists: cloudscale.ch gives a public load balancer both). When the load balancer has
/// no IPv6 VIP (private VIPs in an IPv4 subnet) every VIP is listed, and the note says why.
fn ingress(cfg: &ServiceConfig, lb: &ActualLb) -> (serde_json::Value, Option<String>) {
    if let Some(h) = &cfg.force_hostname {
        return (json!([{"hostname": h}]), None);
    }
    let mode = match cfg.ip_mode {
        IpMode::Proxy => "Proxy",
        IpMode::Vip => "VIP",
    };
    let all: Vec<IpAddr> = lb.vips.iter().map(|(_, a)| *a).collect();
    let v6: Vec<IpAddr> = all.iter().copied().filter(IpAddr::is_ipv6).collect();
    let (listed, note) = if !cfg.ipv6_only {
        (all, None)
    } else if v6.is_empty() {
        let note = format!(
            "spec.ipFamilies is [IPv6] but load balancer {} has no IPv6 address (its VIPs: {}): the status lists its IPv4 addresses",
            lb.name,
            addresses(cfg, lb)
        );
        (all, Some(note))
    } else {
        (v6, None)
    };
    let entries: Vec<_> = listed
        .iter()
        .map(|a| json!({"ip": a.to_string(), "ipMode": mode}))
        .collect();
    (json!(entries), note)
}

/// Reports what the mapping found: nodes that cannot serve and settings not applied as
/// written.
async fn report_mapping(svc: &Service, ctx: &ServiceContext, mapped: &Mapped) {
    let reference = svc.object_ref(&());
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
    for n in &mapped.notes {
        ctx.events
            .publish(
                &reference,
                true,
                "SettingIgnored",
                "MapService",
                format!("{} ({})", n.message, n.field),
            )
            .await;
    }
}

/// Publishes what the plan says beyond its steps (refusals and notes), and a load balancer
/// the Service names that is gone.
async fn report_plan(
    svc: &Service,
    cfg: &ServiceConfig,
    ctx: &ServiceContext,
    prepared: &Prepared,
) {
    let p = &prepared.plan;
    let reference = svc.object_ref(&());
    if prepared.actual.is_none()
        && let Some(uuid) = cfg.lb_uuid
    {
        ctx.events
            .publish(
                &reference,
                true,
                "LoadBalancerMissing",
                "EnsureLoadBalancer",
                format!(
                    "The load balancer {uuid} named in {} no longer exists: creating a new one (its addresses will differ)",
                    annotations::LOADBALANCER_UUID
                ),
            )
            .await;
    }
    for r in &p.refusals {
        let (reason, action) = match r.kind {
            RefusalKind::Conflict => ("FloatingIPConflict", "PlanLoadBalancer"),
            RefusalKind::Change | RefusalKind::Missing => ("ChangeRefused", "PlanLoadBalancer"),
        };
        ctx.events
            .publish(
                &reference,
                true,
                reason,
                action,
                format!("{} ({})", r.message, r.annotation),
            )
            .await;
    }
    for n in &p.notes {
        ctx.events
            .publish(
                &reference,
                true,
                "SettingIgnored",
                "PlanLoadBalancer",
                format!("{} ({})", n.message, n.field),
            )
            .await;
    }
}

/// Makes the Service's load balancer what it should be, as far as it can go now: the
/// pipeline of [`prepare`] (shared with the preview), then apply, passes of fetch, plan and
/// apply again until nothing is left or something waits, then status.
pub async fn ensure(
    svc: &Service,
    cfg: &ServiceConfig,
    ctx: &ServiceContext,
) -> Result<Progress, ServiceError> {
    let ns = svc.namespace().unwrap_or_default();
    let api: Api<Service> = Api::namespaced(ctx.kube.clone(), &ns);
    set_finalizer(&api, svc, true).await?;
    if let Some(w) = ctx.states.lock().waiting_mut(&Key::of(svc)) {
        w.resume(tokio::time::Instant::now());
    }
    if let Some(progress) = recheck_waiting(svc, ctx).await {
        return Ok(progress);
    }
    let reads = Reads::Cached(ctx);
    let mut prepared = prepare(cfg, &ctx.cluster_name, &reads).await?;
    // The account-wide lists may be shared from a read made up to
    // `--api-read-sharing-window` ago, before a floating IP the Service now names was
    // created (a user creates it, then annotates the Service): read afresh before refusing
    // it, rather than leave it unassigned until the next resync.
    if prepared
        .plan
        .refusals
        .iter()
        .any(|r| r.kind == crate::service::pure::plan::RefusalKind::Missing)
    {
        ctx.shared.invalidate();
        prepared = prepare(cfg, &ctx.cluster_name, &reads).await?;
    }
    report_mapping(svc, ctx, &prepared.mapped).await;
    report_plan(svc, cfg, ctx, &prepared).await;
    let Prepared {
        mapped,
        owner,
        others,
        fips,
        actual,
        plan,
        kept_until,
    } = prepared;
    let desired = mapped.desired;
    let lookup = lookup(cfg, &ctx.cluster_name, &others);
    let mut current = (actual, plan);
    for pass in 0..MAX_PASSES {
        if pass > 0 {
            let (snapshot, found) = Reads::Cached(ctx).fetch(&lookup).await?;
            current = plan_for(&found, &snapshot, &desired, &owner, &fips)?;
        }
        current = match one_pass((svc, cfg), ctx, &desired, &owner, current, pass).await? {
            Pass::Done(lb) => {
                finish(svc, cfg, ctx, &api, &lb).await?;
                return Ok(Progress::Done(kept_until));
            }
            Pass::Pending => return Ok(Progress::Pending),
            Pass::Superseded => return Ok(Progress::Superseded),
            Pass::Yielded => return Ok(Progress::Yielded),
            Pass::Applied(p) => (None, p),
        };
    }
    Err(ServiceError::NotConverged {
        passes: MAX_PASSES,
        remaining: current.1.describe_inline(),
    })
}

/// Whether the cached Service asks for something else than `svc`, parsed as `cfg`, did
/// (its parsed configuration differs; the CCM's own writes, finalizer and status, change
/// nothing).
fn changed_since(svc: &Service, cfg: &ServiceConfig, ctx: &ServiceContext) -> bool {
    let services = ctx.services.read();
    let Some(now) = services
        .as_ref()
        .and_then(|s| s.get(&kube::runtime::reflector::ObjectRef::from_obj(svc)))
    else {
        return false;
    };
    now.metadata.resource_version != svc.metadata.resource_version
        && crate::service::pure::annotations::parse_service(&now)
            .ok()
            .flatten()
            .as_ref()
            != Some(cfg)
}

/// How one pass of plan and apply ended.
enum Pass {
    /// Nothing left to do, and the load balancer has applied it all.
    Done(Box<ActualLb>),
    /// Waiting: for the load balancer, or for new members.
    Pending,
    /// This plan was carried out: plan again.
    Applied(Plan),
    /// The Service changed while the plan ran: stopped, to be planned again.
    Superseded,
    /// What makes a new load balancer serve is done: the rest after the Services queued.
    Yielded,
}

/// One pass: announce a disruptive plan, apply it.
async fn one_pass(
    (svc, cfg): (&Service, &ServiceConfig),
    ctx: &ServiceContext,
    desired: &DesiredLb,
    owner: &Ownership,
    (actual, p): (Option<ActualLb>, Plan),
    pass: usize,
) -> Result<Pass, ServiceError> {
    // At debug level: the simulation reads it to tell the writes of a pass planned before
    // something happened from those planned after (scenarios' `downtime.rs`).
    tracing::debug!(service = %service_key(svc), pass, "service planned");
    if p.is_converged() {
        return settled_pass((svc, cfg), ctx, desired, actual, pass).await;
    }
    let members_only = p.steps.iter().all(|s| s.action.writes_members_only());
    let serving = !ingress_of(svc).is_empty() || published(ctx, svc);
    // A new load balancer that serves every port already (its listeners and first members
    // up) is published before it takes its other members, and those come after the
    // Services queued meanwhile (the controller no longer prefers it).
    if !serving
        && let Some(a) = &actual
        && serves_every_port(desired, a)
    {
        publish((svc, cfg), ctx, desired, a).await?;
        if let Some(w) = ctx.states.lock().waiting_mut(&Key::of(svc)) {
            w.yielded = Some(tokio::time::Instant::now());
        }
        return Ok(Pass::Yielded);
    }
    if pass == 0 {
        announce_change(svc, ctx, desired, &p, members_only && serving).await;
    }
    // A new load balancer not yet published does what makes it serve, then lets the
    // Services queued behind it do the same before it takes its other members: in a burst,
    // each Service serves after its own few writes instead of after everyone's members.
    let head = p.serves_after.filter(|_| !serving).map(|n| Plan {
        steps: p.steps[..n].to_vec(),
        serves_after: None,
        ..Plan::default()
    });
    let executed = apply::execute(
        &ctx.cloud,
        desired,
        actual.as_ref().map(|a| a.uuid),
        head.as_ref().unwrap_or(&p),
        &ctx.apply,
        &owner.created_tags(),
        &|| changed_since(svc, cfg, ctx),
    )
    .await;
    follow_writes(ctx, &executed, actual.as_ref(), members_only);
    let outcome = executed?;
    if outcome.superseded {
        return Ok(Pass::Superseded);
    }
    if !outcome.pending.is_empty() {
        note_waiting(svc, ctx, desired, &outcome.pending, true).await;
        return Ok(Pass::Pending);
    }
    if head.is_some() {
        let first = first_members(actual.as_ref(), &outcome);
        note_waiting(svc, ctx, desired, &[first], true).await;
        return Ok(Pass::Pending);
    }
    // Members added or removed on a load balancer that serves (a node joined or left): every
    // write succeeded, so nothing else can differ; the load balancer applies them while
    // the old members serve, and the next resync looks again. Planning once more would
    // cost every Service another read for what a node change does to a thousand of them.
    if members_only
        && let Some(a) = actual
        && serving
    {
        return Ok(Pass::Done(Box::new(a)));
    }
    Ok(Pass::Applied(p))
}

/// A pass whose plan has nothing left to do: done once the load balancer has applied it
/// all, else waiting for it (and published first if it serves every port already).
async fn settled_pass(
    (svc, cfg): (&Service, &ServiceConfig),
    ctx: &ServiceContext,
    desired: &DesiredLb,
    actual: Option<ActualLb>,
    pass: usize,
) -> Result<Pass, ServiceError> {
    let Some(a) = actual else {
        return Err(ServiceError::NotConverged {
            passes: pass + 1,
            remaining: "no load balancer".into(),
        });
    };
    if a.changing() {
        // A load balancer that serves every port before it settled (a new one takes
        // its other members after its first) is published at once: the users of a
        // Service need not wait for members that only add capacity.
        let unpublished = ingress_of(svc).is_empty() && !published(ctx, svc);
        let first_serving = unpublished && serves_every_port(desired, &a);
        if first_serving {
            publish((svc, cfg), ctx, desired, &a).await?;
        }
        let recheck = if unpublished && !first_serving {
            Recheck::Serves {
                lb: a.uuid,
                pools: a.pools.iter().map(|p| p.uuid).collect(),
            }
        } else {
            Recheck::Settled(a.uuid)
        };
        let applying =
            Pending::new("the load balancer to apply its configuration", "").rechecked_by(recheck);
        note_waiting(svc, ctx, desired, &[applying], true).await;
        return Ok(Pass::Pending);
    }
    Ok(Pass::Done(Box::new(a)))
}

/// Announces a change at its first pass: `EnsuringLoadBalancer`, and `PlannedChange` when
/// it disrupts. `members_following`: the plan only makes the members follow the Nodes on
/// a load balancer that serves.
async fn announce_change(
    svc: &Service,
    ctx: &ServiceContext,
    desired: &DesiredLb,
    p: &Plan,
    members_following: bool,
) {
    // A new change (not the continuation of one that waits) is announced, as Kubernetes'
    // service controller does, except members following Nodes on a load balancer that
    // serves: Node churn would otherwise cost every Service two Events per Node change.
    if !continues(ctx, svc, desired) && !members_following {
        announce_ensuring(svc, ctx, p).await;
    }
    if p.steps_impact() > Impact::None && !continues(ctx, svc, desired) {
        ctx.events
            .publish(
                &svc.object_ref(&()),
                false,
                "PlannedChange",
                "PlanLoadBalancer",
                p.summary(&service_key(svc)),
            )
            .await;
    }
}

/// Keeps the shared reads in step with what a plan's run wrote.
fn follow_writes(
    ctx: &ServiceContext,
    executed: &Result<apply::Outcome, crate::service::cloud::cloud_error::ApplyError>,
    actual: Option<&ActualLb>,
    members_only: bool,
) {
    // The shared reads follow what was written: by its edits when every write was one an
    // edit describes; else (a failure included: its effect is unknown) they are read again,
    // unless the plan writes nothing but members, which only show the load balancer busy.
    match (executed, actual) {
        (
            Ok(apply::Outcome {
                edits: Some(edits), ..
            }),
            _,
        ) => ctx.shared.record(edits),
        (_, Some(a)) if members_only => ctx.shared.record(&[Edit::Changing(a.uuid)]),
        _ => ctx.shared.invalidate(),
    }
}

/// The wait of a new load balancer whose serving steps ran: for each port's first member
/// to be up, checked cheaply when the run's writes are all known.
fn first_members(actual: Option<&ActualLb>, outcome: &apply::Outcome) -> Pending {
    // What makes it serve is queued on the load balancer: wait (cheaply, and before the
    // Services that serve) for each port's first member to be up, then publish.
    let mut pools: Vec<uuid::Uuid> = actual
        .into_iter()
        .flat_map(|a| &a.pools)
        .map(|p| p.uuid)
        .collect();
    let created = outcome.edits.iter().flatten().filter_map(|e| match e {
        Edit::Pool(p) => Some(p.uuid),
        _ => None,
    });
    pools.extend(created);
    let first = Pending::new("the load balancer to serve its first members", "");
    match (outcome.lb_uuid, &outcome.edits) {
        (Some(lb), Some(_)) => first.rechecked_by(Recheck::Serves { lb, pools }),
        _ => first,
    }
}

/// Publishes a load balancer that serves before it settled (see [`finish`]), and records
/// it in the Service's wait (the cache may not show the status yet).
async fn publish(
    (svc, cfg): (&Service, &ServiceConfig),
    ctx: &ServiceContext,
    desired: &DesiredLb,
    lb: &ActualLb,
) -> Result<(), ServiceError> {
    let api: Api<Service> = Api::namespaced(ctx.kube.clone(), &svc.namespace().unwrap_or_default());
    finish(svc, cfg, ctx, &api, lb).await?;
    ctx.states.lock().wait_for(&Key::of(svc), desired).published = true;
    Ok(())
}

/// Whether this CCM published the Service's ingress while its change still waits.
fn published(ctx: &ServiceContext, svc: &Service) -> bool {
    ctx.states
        .lock()
        .waiting(&Key::of(svc))
        .is_some_and(|w| w.published)
}

/// Whether every desired port has its listener and a member up on `actual` (pure).
fn serves_every_port(desired: &DesiredLb, actual: &ActualLb) -> bool {
    desired.pools.iter().all(|d| {
        actual.pools.iter().any(|a| {
            a.listeners
                .iter()
                .any(|l| l.listener.key() == d.listener.key())
                && a.members
                    .iter()
                    .any(|m| m.serving() && m.member.protocol_port == d.node_port)
        })
    })
}

/// The annotations the CCM writes and the status, once the load balancer is in place and
/// has applied its configuration (an ingress means the Service is served).
async fn finish(
    svc: &Service,
    cfg: &ServiceConfig,
    ctx: &ServiceContext,
    api: &Api<Service>,
    lb: &ActualLb,
) -> Result<(), ServiceError> {
    let mut wanted: BTreeMap<&str, String> = [
        (annotations::LOADBALANCER_UUID, lb.uuid.to_string()),
        (
            annotations::LOADBALANCER_CONFIG_VERSION,
            annotations::CONFIG_VERSION.to_string(),
        ),
    ]
    .into();
    // The zone is recorded when the user left it open; a zone the user set stays as
    // written, even when it was refused (a GitOps tool would fight a rewrite).
    if cfg.zone.is_none() {
        wanted.insert(annotations::LOADBALANCER_ZONE, lb.zone.clone());
    }
    let differs = wanted
        .iter()
        .any(|(k, v)| svc.annotations().get(*k) != Some(v));
    if differs {
        ctx.states.lock().wrote(
            &Key::of(svc),
            wanted
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect(),
        );
        let patch = json!({"metadata": {"annotations": wanted}});
        api.patch(
            &svc.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    }
    // Status last, as the reference does: an ingress means everything else is written.
    let (entries, note) = ingress(cfg, lb);
    let status = json!({"status": {"loadBalancer": {"ingress": entries}}});
    let current = json!({"status": {"loadBalancer": {"ingress": ingress_of(svc)}}});
    if status != current {
        api.patch_status(
            &svc.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
        if let Some(note) = note {
            ctx.events
                .publish(
                    &svc.object_ref(&()),
                    true,
                    "SettingIgnored",
                    "EnsureLoadBalancer",
                    note,
                )
                .await;
        }
    }
    // `EnsuredLoadBalancer` once the status is written, so that a user who reads it finds
    // the ingress; a status write that fails leaves it for the next pass.
    let announced = ctx.states.lock().end_ensuring(&Key::of(svc));
    if differs || announced {
        ctx.events
            .publish(
                &svc.object_ref(&()),
                false,
                "EnsuredLoadBalancer",
                "EnsureLoadBalancer",
                format!(
                    "Load balancer {} ({}) is in place at {}",
                    lb.name,
                    lb.uuid,
                    addresses(cfg, lb)
                ),
            )
            .await;
    }
    Ok(())
}

/// Which of `lbs` is the Service's, for its deletion (pure): by its uuid annotation, name
/// and tags, among the other Services' claims. An unreadable uuid annotation must not block
/// deletion: the name and tag still find it.
fn own_load_balancer<'a>(
    svc: &Service,
    services: &[std::sync::Arc<Service>],
    lbs: &'a [Candidate<'a>],
    cluster_name: &str,
) -> Resolution<'a> {
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    let name = annotations::lb_name(svc);
    let seeker = Seeker {
        uid: &uid,
        name: &name,
        uuid: annotations::lb_uuid(svc).ok().flatten(),
    };
    ownership::resolve(&seeker, lbs, cluster_name, &claimants(services, &uid))
}

/// What deleting the Service's load balancer would remove, as [`cleanup`] finds it (for a
/// preview of a Service that stops being a LoadBalancer): each load balancer that would be
/// deleted, with the floating IPs that point at it (they stay in the account, unassigned).
pub async fn preview_deletion(
    kube: &kube::Client,
    cloud: &Cloud,
    cluster_name: &str,
    live: &Service,
) -> Result<Vec<Doomed>, ServiceError> {
    let uid = live.metadata.uid.clone().unwrap_or_default();
    let services = Reads::Direct { kube, cloud }.services().await?;
    let snapshot = Snapshot::fetch(cloud).await?;
    let candidates = fetch::candidates(&snapshot.load_balancers);
    let resolution = own_load_balancer(live, &services, &candidates, cluster_name);
    let doomed = ownership::doomed(&resolution, &uid).unwrap_or_default();
    Ok(doomed
        .into_iter()
        .filter_map(|c| snapshot.doomed(c.uuid))
        .collect())
}

/// What the controller would do for `svc` (live or proposed), without writing anything:
/// the same pipeline as a reconcile ([`prepare`]), with every list read directly.
pub async fn preview(
    kube: &kube::Client,
    cloud: &Cloud,
    cluster_name: &str,
    svc: &Service,
) -> Result<Option<Plan>, ServiceError> {
    let cfg = match annotations::parse_service(svc) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => return Ok(None),
        Err(errors) => return Err(ServiceError::Config(errors)),
    };
    let prepared = prepare(&cfg, cluster_name, &Reads::Direct { kube, cloud }).await?;
    let mut p = prepared.plan;
    p.notes.extend(prepared.mapped.notes);
    Ok(Some(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::pure::annotations::parse_service;

    fn config(spec: serde_json::Value) -> ServiceConfig {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u-1"},
            "spec": spec,
        }))
        .expect("a Service");
        parse_service(&svc)
            .ok()
            .flatten()
            .expect("a LoadBalancer Service")
    }

    /// A running load balancer with VIPs at `addresses` (in a nil subnet: public).
    fn lb(addresses: &[&str]) -> ActualLb {
        ActualLb {
            uuid: uuid::Uuid::from_u128(1),
            name: "lb".into(),
            flavor: "lb-standard".into(),
            zone: "rma1".into(),
            status: crate::service::pure::model::LoadBalancerStatus::Running,
            vips: addresses
                .iter()
                .map(|a| (uuid::Uuid::nil(), a.parse().expect("an address")))
                .collect(),
            pools: Vec::new(),
            orphan_listeners: Vec::new(),
            floating_ips: Vec::new(),
            tags: Default::default(),
        }
    }

    fn ips(v: &serde_json::Value) -> Vec<&str> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["ip"].as_str())
            .collect()
    }

    const PORTS: &str = r#"[{"port": 80, "nodePort": 30080, "protocol": "TCP"}]"#;

    fn spec(families: &[&str]) -> serde_json::Value {
        json!({"type": "LoadBalancer", "ports": serde_json::from_str::<serde_json::Value>(PORTS).ok(),
            "ipFamilies": families, "ipFamilyPolicy": "SingleStack"})
    }

    #[test]
    fn an_ipv6_only_service_lists_the_ipv6_vips_alone() {
        let public = lb(&["5.102.148.14", "2a06:c01:1:2::e"]);
        let (v6, note) = ingress(&config(spec(&["IPv6"])), &public);
        assert_eq!(ips(&v6), ["2a06:c01:1:2::e"]);
        assert!(note.is_none());
        // IPv4 single-stack is every IPv4 cluster's default: both VIPs stay listed.
        let (both, _) = ingress(&config(spec(&["IPv4"])), &public);
        assert_eq!(ips(&both), ["5.102.148.14", "2a06:c01:1:2::e"]);
        let mut dual = spec(&["IPv6", "IPv4"]);
        dual["ipFamilyPolicy"] = json!("PreferDualStack");
        assert_eq!(ips(&ingress(&config(dual), &public).0).len(), 2);
    }

    #[test]
    fn an_ipv6_only_service_without_an_ipv6_vip_is_told_why() {
        let private = lb(&["10.0.0.5"]);
        let (entries, note) = ingress(&config(spec(&["IPv6"])), &private);
        assert_eq!(ips(&entries), ["10.0.0.5"]);
        let note = note.expect("a note");
        assert!(
            note.contains("spec.ipFamilies") && note.contains("10.0.0.5"),
            "{note}"
        );
    }
}
