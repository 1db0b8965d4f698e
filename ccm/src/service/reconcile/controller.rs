//! The service controller: for each `Service` of type `LoadBalancer` it parses, maps, plans
//! and applies (`ensure.rs`), then writes status, its annotations and Events; it owns the
//! finalizer `service.kubernetes.io/load-balancer-cleanup` and removes the load balancer
//! before it. Reconciles never wait: a change that waits for new members to come up asks to
//! be looked at again after `--load-balancer-poll-interval`.

use super::claims;
use super::context::{ServiceContext, service_key};
use super::ensure;
use super::error::ServiceError;
pub use super::progress::FINALIZER;
use super::progress::Progress;
use crate::cloudscale;
use crate::runner::{self, Change, Informer, Key, Queue};
use crate::service::cloud::fetch::node_view;
use crate::service::pure::annotations;
use crate::service::pure::map::{self, NodeView};
use k8s_openapi::api::core::v1::{Node, Service};
use kube::runtime::reflector::{self, Store};
use kube::{Resource, ResourceExt};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub use crate::service::pure::ownership::{TAG_CLUSTER, TAG_SERVICE_UID};

pub const CONTROLLER: &str = "service";

/// When to look again at a change that has waited `waited`: every `poll` at first, then
/// less often the longer it waits (a quarter of the time waited, at most four polls apart:
/// provisioning a load balancer takes a minute, members come up after their checks), and
/// a change held past the members timeout at the failure retry delay.
pub fn poll_after(
    waited: Duration,
    poll: Duration,
    held_after: Duration,
    held: Duration,
) -> Duration {
    if waited >= held_after {
        return held.max(poll);
    }
    (waited / 4).clamp(poll, poll * 4)
}

/// How long the keys due now take to be reconciled by `concurrency` workers, at the mean
/// duration of a reconcile so far (at most a minute): whatever holds them, the request
/// budget or the API's answers.
fn backlog(ctx: &ServiceContext, queue: &Queue, concurrency: u16) -> Duration {
    let mean = ctx
        .metrics
        .mean_reconcile_seconds(CONTROLLER)
        .unwrap_or(0.0);
    let secs = queue.due_now() as f64 * mean / f64::from(concurrency.max(1));
    Duration::from_secs_f64(secs.clamp(0.0, 60.0))
}

/// The requests a reconcile has cost so far (all controllers' requests over the Services'
/// reconciles); a new load balancer's first pass until there is a record.
fn requests_per_reconcile(ctx: &ServiceContext) -> f64 {
    let reconciles = ctx.metrics.reconciles(CONTROLLER);
    if reconciles < 10 {
        8.0
    } else {
        ctx.metrics.api_request_total() as f64 / reconciles as f64
    }
}

/// Tells a Service just queued how much of this CCM's request budget is spent before its
/// turn, when that is long (a burst): without it, its Events later blame the load balancer.
fn announce_queued(ctx: &Arc<ServiceContext>, queue: &Queue, key: &Key, svc: &Arc<Service>) {
    let (Some(ahead), Some(rate)) = (queue.ahead_of(key), ctx.cloud.requests_per_second()) else {
        return;
    };
    let per_reconcile = requests_per_reconcile(ctx);
    let Some(message) = super::wait::queued_message(ahead, per_reconcile, rate) else {
        return;
    };
    tracing::info!(service = %key, ahead, "{message}");
    let (ctx, reference) = (ctx.clone(), svc.object_ref(&()));
    tokio::spawn(async move {
        ctx.events
            .publish(&reference, false, "Queued", "EnsureLoadBalancer", message)
            .await;
    });
}

/// A Service of type `LoadBalancer`, not being deleted, without an ingress yet: its work
/// goes before the other Services' (see [`runner::Queue::prefer`]): in a burst, every new
/// load balancer is made to serve and published before any takes its remaining members.
fn unpublished(svc: &Service) -> bool {
    svc.metadata.deletion_timestamp.is_none()
        && svc.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer")
        && ensure::ingress_of(svc).is_empty()
}

/// Reconciles one Service; answers when to look at it again, and whether it goes before
/// the Services that serve (it is not yet published, and did not just yield).
async fn reconcile(
    svc: Arc<Service>,
    ctx: &ServiceContext,
) -> Result<(Duration, bool), ServiceError> {
    // Boxed: a reconcile's state is kilobytes, copied on every move (into the task-local
    // scope, and the whole of it into the runner's box).
    // Every line logged meanwhile (plan steps, cloud API writes) names the Service.
    let span = tracing::info_span!("reconcile", service = %service_key(&svc));
    let (result, throttled) = cloudscale::throttled(Box::pin(tracing::Instrument::instrument(
        reconcile_timed(&svc, ctx),
        span,
    )))
    .await;
    // Time its requests waited for this CCM's rate limit: its budget, not the load
    // balancer (a held change says so, `wait.rs`).
    if let Some(w) = ctx.states.lock().waiting_mut(&Key::of(svc.as_ref())) {
        w.queued += throttled;
    }
    let result = result?;
    let after = next_look(&svc, ctx, result);
    let current = ctx
        .services
        .read()
        .as_ref()
        .and_then(|s| s.get(&reflector::ObjectRef::from_obj(svc.as_ref())));
    let prefer = result != Progress::Yielded && current.as_deref().is_some_and(unpublished);
    Ok((after, prefer))
}

/// Reconciles one Service, counted in the metrics, its failure published as an Event.
async fn reconcile_timed(svc: &Service, ctx: &ServiceContext) -> Result<Progress, ServiceError> {
    let started = Instant::now();
    let result = reconcile_inner(svc, ctx).await;
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
    result
}

/// When to look at a Service again after a reconcile that left it at `progress`.
fn next_look(svc: &Service, ctx: &ServiceContext, progress: Progress) -> Duration {
    let key = Key::of(svc);
    match progress {
        Progress::Done(kept_until) => {
            // At debug level: one line per Service per resync. The simulation reads it to
            // know when the changes made before it are applied (scenarios' `downtime.rs`).
            tracing::debug!(
                service = %key,
                resource_version = svc.metadata.resource_version.as_deref().unwrap_or_default(),
                "service converged"
            );
            ctx.states.lock().converged(&key);
            let now = Instant::now();
            let resync = ctx.resync.after(now);
            kept_until.map_or(resync, |u| resync.min(u.saturating_duration_since(now)))
        }
        // Asked again at once: behind the keys already due (the queue serves them in the
        // order they came due), so a burst's new load balancers all get what makes them
        // serve before any takes its other members.
        Progress::Superseded | Progress::Yielded => {
            ctx.states.lock().progressed(&key);
            Duration::ZERO
        }
        Progress::Pending => {
            let waited = {
                let mut states = ctx.states.lock();
                states.progressed(&key);
                states
                    .waiting(&key)
                    .map_or(Duration::ZERO, |w| w.since.elapsed())
            };
            poll_after(
                waited,
                ctx.apply.poll,
                ctx.apply.members_timeout,
                ctx.retry.min,
            )
        }
    }
}

async fn reconcile_inner(svc: &Service, ctx: &ServiceContext) -> Result<Progress, ServiceError> {
    let ours = svc.finalizers().iter().any(|f| f == FINALIZER);
    if svc.metadata.deletion_timestamp.is_some() {
        if ours {
            ensure::cleanup(svc, ctx, false).await?;
        }
        return Ok(Progress::Done(None));
    }
    match annotations::parse_service(svc) {
        // No longer a load balancer (or another class): clean up what we made.
        Ok(None) => {
            if ours {
                ensure::cleanup(svc, ctx, true).await?;
            }
            Ok(Progress::Done(None))
        }
        Ok(Some(cfg)) => ensure::ensure(svc, &cfg, ctx).await,
        Err(errors) => Err(ServiceError::Config(errors)),
    }
}

/// When to try a failed Service again: exponential backoff per Service.
fn error_policy(svc: &Service, error: &ServiceError, ctx: &ServiceContext) -> Duration {
    let failures = ctx.states.lock().failed(&Key::of(svc));
    let delay = ctx.retry.delay(failures);
    tracing::warn!(
        service = %service_key(svc),
        error = %error,
        failures,
        retry_in_ms = delay.as_millis() as u64,
        "service reconcile failed"
    );
    delay
}

/// What of a Service its reconcile acts on (pure): its spec, labels, annotations, deletion
/// and finalizers, leaving out its status, this CCM's finalizer and the annotations this
/// CCM wrote itself (`written`) while they keep the value written. A watch event that
/// changes nothing of it needs no reconcile: the CCM's own writes would otherwise run a
/// failing Service again at once, doubling its backoff per failure (the upstream service
/// controller likewise ignores status and finalizer updates).
pub fn reconcile_input(svc: &Service, written: Option<&BTreeMap<String, String>>) -> u64 {
    use std::hash::{Hash, Hasher};
    let annotations: BTreeMap<&String, &String> = svc
        .annotations()
        .iter()
        .filter(|(k, v)| written.and_then(|w| w.get(*k)) != Some(*v))
        .collect();
    let finalizers: Vec<&String> = svc
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .collect();
    let input = serde_json::json!({
        "uid": svc.metadata.uid,
        "spec": svc.spec,
        "labels": svc.labels(),
        "annotations": annotations,
        "deleting": svc.metadata.deletion_timestamp.is_some(),
        "finalizers": finalizers,
    });
    // `DefaultHasher::new` has fixed keys: the same input hashes the same in every run.
    let mut h = std::hash::DefaultHasher::new();
    input.to_string().hash(&mut h);
    h.finish()
}

/// The Services other than `key` that claim any address of `before` or `now` (pure): when
/// `key`'s claim changes, a conflict over those addresses may be resolved.
pub fn sharing(
    claims: &BTreeMap<Key, Vec<std::net::IpAddr>>,
    key: &Key,
    before: &[std::net::IpAddr],
    now: &[std::net::IpAddr],
) -> Vec<Key> {
    claims
        .iter()
        .filter(|(k, ips)| {
            *k != key && ips.iter().any(|ip| before.contains(ip) || now.contains(ip))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// The Services whose members a Node change can alter (pure): those for which the Node's
/// [`map::membership`] differs before (`old`, `None`: it did not exist) and after (`new`,
/// `None`: deleted). A heartbeat, a condition or an address change alters none.
pub fn affected_by(
    services: &[Arc<Service>],
    old: Option<&NodeView>,
    new: Option<&NodeView>,
) -> Vec<Key> {
    if old == new {
        return Vec::new();
    }
    services
        .iter()
        .filter(|svc| match annotations::parse_service(svc) {
            Ok(Some(cfg)) => {
                old.and_then(|n| map::membership(&cfg, n))
                    != new.and_then(|n| map::membership(&cfg, n))
            }
            // Not a load balancer, or a configuration its own reconcile refuses: a Node
            // changes nothing of it.
            _ => false,
        })
        .map(|svc| Key::of(svc.as_ref()))
        .collect()
}

/// Runs the service controller on the shared Service and Node caches until `shutdown`
/// completes. Services are reconciled once both caches hold the whole list (ownership and
/// floating IP checks read the other Services from one, the mapping the Nodes from the
/// other); a Node change reconciles only the Services whose members it can alter.
pub async fn run(
    ctx: Arc<ServiceContext>,
    services: Arc<Informer<Service>>,
    nodes: Arc<Informer<Node>>,
    concurrency: u16,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let store = services.store();
    *ctx.services.write() = Some(store.clone());
    *ctx.nodes.write() = Some(nodes.store());
    let queue = Arc::new(Queue::default());
    queue.count_in(CONTROLLER, &ctx.metrics);
    services.subscribe(on_service(ctx.clone(), queue.clone(), store.clone()));
    nodes.subscribe(on_node(
        ctx.clone(),
        queue.clone(),
        nodes.store(),
        store.clone(),
    ));
    let mut shutdown = std::pin::pin!(shutdown);
    tokio::select! {
        biased;
        () = &mut shutdown => return,
        () = async { tokio::join!(services.synced(), nodes.synced()); } => {}
    }
    let retry_failed = retry_on_recovery(ctx.cloud.recoveries(), ctx.clone(), queue.clone());
    let work = runner::run(
        queue.clone(),
        usize::from(concurrency),
        shutdown,
        |key: Key| {
            work_on(
                key,
                ctx.clone(),
                services.store(),
                queue.clone(),
                concurrency,
            )
        },
    );
    // The runner ends on shutdown; the recovery watch never does. Biased, as every select
    // on the CCM's paths: tokio's random branch order would make a simulated run differ
    // from its replay (`scenarios/README.md`, "Seams").
    tokio::select! {
        biased;
        () = work => {}
        () = retry_failed => {}
    }
}

/// What a Service's watch event sets going: its reconcile when what it acts on changed,
/// and the reconcile of the Services whose floating IP claims it shares.
fn on_service(
    ctx: Arc<ServiceContext>,
    queue: Arc<Queue>,
    store: Store<Service>,
) -> impl FnMut(&Change<Service>) + Send + 'static {
    // Each Service's floating IP claim as last seen, to tell the Services that share an
    // address when a claim comes or goes.
    let mut claims: BTreeMap<Key, Vec<std::net::IpAddr>> = BTreeMap::new();
    // What each Service's reconcile acts on, as last seen (see `reconcile_input`).
    let mut inputs: BTreeMap<Key, u64> = BTreeMap::new();
    move |change| {
        if let Change::Touched(svc) = change {
            let key = Key::of(svc.as_ref());
            let live = store.get(&key.object_ref());
            let unchanged = if live.is_some() {
                let input = reconcile_input(svc, ctx.states.lock().written(&key));
                inputs.insert(key.clone(), input) == Some(input)
            } else {
                inputs.remove(&key);
                ctx.states.lock().gone(&key);
                false
            };
            if !unchanged {
                ctx.states.lock().touch(&key);
                queue.prefer(&key, live.as_deref().is_some_and(unpublished));
                queue.schedule(key.clone(), Duration::ZERO);
                if live.is_some() {
                    announce_queued(&ctx, &queue, &key, svc);
                }
            }
            let now = live
                .as_deref()
                .and_then(claims::claim_of)
                .map(|c| c.addresses)
                .unwrap_or_default();
            let before = if now.is_empty() {
                claims.remove(&key)
            } else {
                claims.insert(key.clone(), now.clone())
            }
            .unwrap_or_default();
            if before != now {
                let rivals = sharing(&claims, &key, &before, &now);
                if !rivals.is_empty() {
                    tracing::info!(
                        service = %key,
                        requeued = rivals.len(),
                        "a floating IP claim changed: its other claimants are looked at again"
                    );
                }
                queue.schedule_all(rivals);
            }
        }
    }
}

/// What a Node's watch event sets going: the reconcile of the Services whose members it
/// can alter.
fn on_node(
    ctx: Arc<ServiceContext>,
    queue: Arc<Queue>,
    node_store: Store<Node>,
    store: Store<Service>,
) -> impl FnMut(&Change<Node>) + Send + 'static {
    // What the mapping last saw of each Node, to tell a change that matters from one
    // that does not.
    let mut seen: BTreeMap<String, NodeView> = BTreeMap::new();
    move |change| {
        let names: Vec<String> = match change {
            Change::Touched(node) => vec![node.name_any()],
            // After a re-list: Nodes deleted while the watch was down sent no event.
            Change::Synced => seen
                .keys()
                .filter(|n| node_store.get(&reflector::ObjectRef::new(n)).is_none())
                .cloned()
                .collect(),
        };
        for name in names {
            let now = node_store
                .get(&reflector::ObjectRef::new(&name))
                .map(|n| node_view(&n));
            let before = match &now {
                Some(v) => {
                    ctx.node_present(&name);
                    seen.insert(name, v.clone())
                }
                None => seen.remove(&name),
            };
            if let (None, Some(gone)) = (&now, &before) {
                ctx.node_gone(gone.clone());
            }
            let all = runner::sorted(&store);
            let affected = affected_by(&all, before.as_ref(), now.as_ref());
            {
                let mut states = ctx.states.lock();
                for key in &affected {
                    states.touch(key);
                }
            }
            queue.schedule_all(affected);
        }
    }
}

/// After a long API trouble, the Services that failed meanwhile are tried at once rather
/// than when their grown backoff says (see `cloudscale/trouble.rs`).
async fn retry_on_recovery(
    mut recoveries: tokio::sync::watch::Receiver<u64>,
    ctx: Arc<ServiceContext>,
    queue: Arc<Queue>,
) {
    while recoveries.changed().await.is_ok() {
        let keys = ctx.states.lock().failed_keys();
        if !keys.is_empty() {
            tracing::info!(
                services = keys.len(),
                "the cloudscale API answers again: the Services that failed are tried now"
            );
        }
        queue.schedule_all(keys);
    }
    std::future::pending::<()>().await;
}

/// One turn of the Service `key`: its reconcile, and when to look at it again (`None`:
/// it is gone).
async fn work_on(
    key: Key,
    ctx: Arc<ServiceContext>,
    store: Store<Service>,
    queue: Arc<Queue>,
    concurrency: u16,
) -> Option<Duration> {
    // Gone from the cache: deleted (its finalizer is ours, so the cleanup
    // already ran).
    let Some(svc) = store.get(&key.object_ref()) else {
        ctx.states.lock().gone(&key);
        queue.prefer(&key, false);
        return None;
    };
    let again = match reconcile(svc.clone(), &ctx).await {
        Ok((again, prefer)) => {
            queue.prefer(&key, prefer);
            // A wait of a Service not yet published is looked at again no
            // sooner than the work queued meanwhile takes to be sent: in a
            // burst, the first Services' polls would otherwise take the budget
            // the next Services need to be created.
            if prefer && again < ctx.resync.period {
                again.max(backlog(&ctx, &queue, concurrency))
            } else {
                again
            }
        }
        Err(e) => {
            queue.prefer(&key, false);
            queue.note_retry();
            error_policy(&svc, &e, &ctx)
        }
    };
    Some(again)
}

/// What the controller would do for `cfg`'s Service, as a preview: see [`ensure::preview`].
pub use ensure::{preview, preview_deletion};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lb(name: &str, selector: Option<&str>) -> Arc<Service> {
        let annotations = match selector {
            Some(s) => json!({annotations::LOADBALANCER_NODE_SELECTOR: s}),
            None => json!({}),
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "uid": name,
                             "annotations": annotations},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}]},
            }))
            .expect("service"),
        )
    }

    #[test]
    fn only_changes_a_reconcile_acts_on_count_as_changes() {
        let base = lb("web", None);
        let input = |svc: &Service, written: Option<&BTreeMap<String, String>>| {
            reconcile_input(svc, written)
        };
        let edit = |f: &dyn Fn(&mut Service)| {
            let mut s = (*base).clone();
            f(&mut s);
            s
        };
        let before = input(&base, None);
        // The CCM's own writes: status, its finalizer, the annotations it wrote.
        let status = edit(&|s| {
            s.status =
                serde_json::from_value(json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}))
                    .expect("status");
            s.metadata.resource_version = Some("99".into());
        });
        assert_eq!(input(&status, None), before);
        let finalized = edit(&|s| s.metadata.finalizers = Some(vec![FINALIZER.into()]));
        assert_eq!(input(&finalized, None), before);
        let uuid_key = annotations::LOADBALANCER_UUID.to_string();
        let written: BTreeMap<String, String> = [(uuid_key.clone(), "lb-1".to_string())].into();
        let annotated = edit(&|s| {
            s.annotations_mut().insert(uuid_key.clone(), "lb-1".into());
        });
        assert_eq!(input(&annotated, Some(&written)), before);
        // Anyone else's: the same annotation with another value, another annotation, the
        // spec, another finalizer, a deletion.
        let copied = edit(&|s| {
            s.annotations_mut().insert(uuid_key.clone(), "lb-2".into());
        });
        assert_ne!(input(&copied, Some(&written)), before);
        assert_ne!(input(&annotated, None), before, "not written by the CCM");
        let other = edit(&|s| {
            s.annotations_mut()
                .insert(annotations::LOADBALANCER_NODE_SELECTOR.into(), "a=b".into());
        });
        assert_ne!(input(&other, None), before);
        let spec = edit(&|s| {
            if let Some(spec) = s.spec.as_mut() {
                spec.external_traffic_policy = Some("Local".into());
            }
        });
        assert_ne!(input(&spec, None), before);
        let held = edit(&|s| s.metadata.finalizers = Some(vec!["example.com/hold".into()]));
        assert_ne!(input(&held, None), before);
        let deleting = edit(&|s| {
            s.metadata.deletion_timestamp =
                serde_json::from_value(json!("2026-11-27T00:00:00Z")).expect("time");
        });
        assert_ne!(input(&deleting, None), before);
    }

    fn node(labels: &[(&str, &str)], provider: Option<u128>) -> NodeView {
        NodeView {
            name: "node-1".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            provider_id: provider.map(uuid::Uuid::from_u128),
            deleting: false,
            ready: true,
        }
    }

    fn names(keys: Vec<Key>) -> Vec<String> {
        keys.into_iter().map(|k| k.name).collect()
    }

    #[test]
    fn a_node_change_reconciles_only_the_services_whose_members_it_can_alter() {
        let services = vec![
            lb("all", None),
            lb("gpu", Some("pool=gpu")),
            lb("not-gpu", Some("pool!=gpu")),
            lb("web", Some("role=web")),
        ];
        let plain = node(&[("role", "web")], Some(1));
        // A heartbeat (or any status change) leaves the view as it was: nothing.
        assert!(affected_by(&services, Some(&plain), Some(&plain.clone())).is_empty());
        // A label only the gpu selectors read: exactly those two.
        let gpu = node(&[("role", "web"), ("pool", "gpu")], Some(1));
        assert_eq!(
            names(affected_by(&services, Some(&plain), Some(&gpu))),
            ["gpu", "not-gpu"]
        );
        // A label no selector reads: nothing.
        let other = node(&[("role", "web"), ("zone", "a")], Some(1));
        assert!(affected_by(&services, Some(&plain), Some(&other)).is_empty());
        // Initialized (provider ID set), joined, left, excluded: every Service selecting it.
        let uninitialized = node(&[("role", "web")], None);
        let selecting = ["all", "not-gpu", "web"];
        assert_eq!(
            names(affected_by(&services, Some(&uninitialized), Some(&plain))),
            selecting
        );
        assert_eq!(names(affected_by(&services, None, Some(&plain))), selecting);
        assert_eq!(names(affected_by(&services, Some(&plain), None)), selecting);
        let excluded = node(&[("role", "web"), (map::EXCLUDE_LABEL, "")], Some(1));
        assert_eq!(
            names(affected_by(&services, Some(&plain), Some(&excluded))),
            selecting
        );
    }

    #[test]
    fn a_changed_claim_names_the_other_claimants_of_its_addresses() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().expect("ip");
        let key = |n: &str| Key {
            namespace: "default".into(),
            name: n.into(),
        };
        let claims: BTreeMap<Key, Vec<std::net::IpAddr>> = [
            (key("a"), vec![ip("45.132.236.10")]),
            (key("b"), vec![ip("45.132.236.10"), ip("45.132.236.11")]),
            (key("c"), vec![ip("45.132.236.12")]),
        ]
        .into();
        // a drops .10 (or is deleted): b, which wanted it too, is looked at again.
        assert_eq!(
            names(sharing(&claims, &key("a"), &[ip("45.132.236.10")], &[])),
            ["b"]
        );
        // c takes .11 as well: b.
        assert_eq!(
            names(sharing(
                &claims,
                &key("c"),
                &[ip("45.132.236.12")],
                &[ip("45.132.236.12"), ip("45.132.236.11")]
            )),
            ["b"]
        );
        assert!(sharing(&claims, &key("c"), &[], &[ip("45.132.236.99")]).is_empty());
    }

    #[test]
    fn waits_are_polled_less_often_the_longer_they_last() {
        let (poll, held_after, held) = (
            Duration::from_secs(2),
            Duration::from_secs(300),
            Duration::from_secs(5),
        );
        let after = |s| poll_after(Duration::from_secs(s), poll, held_after, held).as_secs_f64();
        assert_eq!(after(0), 2.0);
        assert_eq!(after(12), 3.0);
        assert_eq!(after(60), 8.0, "at most four polls apart");
        assert_eq!(after(400), 5.0, "held");
    }

    #[test]
    fn not_converging_names_what_keeps_differing() {
        let e = ServiceError::NotConverged {
            passes: 3,
            remaining: "minimal [tcp/http]: update tcp health monitor: delay 2 → 3 s".into(),
        };
        let text = e.to_string();
        assert!(text.contains("after 3 passes"), "{text}");
        assert!(text.contains("update tcp health monitor"), "{text}");
    }

    #[test]
    fn an_api_error_is_named_once() {
        let e = ServiceError::from(cloudscale::ClientError::Api {
            status: 500,
            body: Default::default(),
            endpoint: "/v1/servers".into(),
            method: "GET".into(),
        });
        assert_eq!(e.to_string().matches("cloudscale API").count(), 1, "{e}");
    }
}
