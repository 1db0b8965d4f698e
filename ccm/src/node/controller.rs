//! The node controller: initializes Nodes carrying the uninitialized taint and keeps the
//! addresses of initialized Nodes in step with their servers.

use super::metadata::{
    self, PROVIDED_NODE_IP, ServerFacts, ServerMatch, UNINITIALIZED_TAINT, addresses_json,
    has_taint, labels, node_metadata, prefer_node_ip,
};
use super::provider_id::{self, ProviderIdError};
use super::{DirectoryError, ServerDirectory};
use crate::events::Events;
use crate::metrics::Metrics;
use crate::runner::{self, Change, Informer, Key, Queue};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub const CONTROLLER: &str = "node";
/// Nodes initialized or refreshed at once (each costs one or two cloud reads).
const NODE_WORKERS: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("server lookup failed: {0}")]
    Directory(#[from] DirectoryError),
    #[error("Kubernetes API: {}", crate::kube_text::KubeText(.0))]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    ProviderId(#[from] ProviderIdError),
    #[error("no server named \"{0}\"")]
    NoServer(String),
    #[error("server {0} of this node does not exist")]
    ServerGone(uuid::Uuid),
    #[error(
        "{count} servers are named \"{name}\" ({uuids}); set the node's provider ID or rename the servers"
    )]
    Ambiguous {
        name: String,
        count: usize,
        uuids: String,
    },
    #[error(transparent)]
    Address(#[from] metadata::AddressError),
}

pub struct NodeContext<D> {
    pub client: kube::Client,
    pub directory: Arc<D>,
    pub events: Events,
    pub metrics: Arc<Metrics>,
    /// How often initialized Nodes get their addresses refreshed.
    pub refresh: Duration,
    /// Delay before retrying a Node whose initialization failed.
    pub retry: Duration,
    /// When each Node was last synced: our own patches trigger another reconcile at once,
    /// which must not cost another lookup.
    pub last_sync: parking_lot::Mutex<std::collections::BTreeMap<String, Instant>>,
    /// When each Node (by UID) was last initialized: a reconcile that starts before the
    /// cache has all of our own updates sees the Node half-initialized and must not
    /// initialize it twice; a taint still there after `retry` is initialized again.
    pub initialized_from: parking_lot::Mutex<std::collections::BTreeMap<String, (String, Instant)>>,
}

impl<D> NodeContext<D> {
    /// How many entries its per-Node maps hold (for a long run to judge growth;
    /// `crate::sizes`).
    pub fn sizes(&self, out: &mut crate::sizes::CacheSizes) {
        out.node_last_sync += self.last_sync.lock().len();
        out.node_initialized += self.initialized_from.lock().len();
        out.event_series += self.events.series();
    }

    /// Forgets what it noted of the Nodes `exists` says are gone. Node names come and go
    /// (autoscaling names each new node anew): kept for good, these maps would grow by
    /// one entry per node that ever was.
    pub fn forget_gone(&self, exists: impl Fn(&str) -> bool) {
        self.last_sync.lock().retain(|name, _| exists(name));
        self.initialized_from.lock().retain(|name, _| exists(name));
    }
}

/// The server a Node is: by provider ID if it has one, else by exact name.
async fn find_server<D: ServerDirectory>(node: &Node, dir: &D) -> Result<ServerFacts, NodeError> {
    if let Some(pid) = super::provider_id_of(node) {
        let uuid = provider_id::parse(pid)?;
        return dir.get(uuid).await?.ok_or(NodeError::ServerGone(uuid));
    }
    let name = node.name_any();
    match metadata::match_by_name(&dir.list().await?, &name) {
        ServerMatch::One(s) => Ok(s),
        ServerMatch::None => Err(NodeError::NoServer(name)),
        ServerMatch::Ambiguous(uuids) => Err(NodeError::Ambiguous {
            name,
            count: uuids.len(),
            uuids: uuids
                .iter()
                .map(|u| u.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn current_addresses(node: &Node) -> serde_json::Value {
    json!(node.status.as_ref().and_then(|s| s.addresses.as_ref()))
}

/// Sets provider ID, labels and addresses, then removes the uninitialized taint: in that
/// order, so nothing schedules onto a Node before it is complete.
async fn initialize<D: ServerDirectory>(
    node: &Node,
    ctx: &NodeContext<D>,
) -> Result<(), NodeError> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let name = node.name_any();
    let server = find_server(node, ctx.directory.as_ref()).await?;
    let md = node_metadata(&server);
    let node_ip = node.annotations().get(PROVIDED_NODE_IP).map(String::as_str);
    let addresses = prefer_node_ip(&md.addresses, node_ip)?;

    let mut patch = json!({"metadata": {"labels": labels(&md)}});
    let has_provider_id = super::provider_id_of(node).is_some();
    if !has_provider_id {
        patch["spec"] = json!({"providerID": md.provider_id});
    }
    nodes
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    // A merge patch replaces the whole list: addresses of one type must not be merged.
    let status = json!({"status": {"addresses": addresses_json(&addresses)}});
    nodes
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;

    // Remove the taint against the Node as it is now, with its resourceVersion as a
    // precondition, so a taint someone else added meanwhile is never lost.
    let fresh = nodes.get(&name).await?;
    let remaining: Vec<_> = fresh
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != UNINITIALIZED_TAINT)
        .collect();
    let untaint = json!({
        "metadata": {"resourceVersion": fresh.resource_version()},
        "spec": {"taints": remaining},
    });
    nodes
        .patch(&name, &PatchParams::default(), &Patch::Merge(&untaint))
        .await?;
    ctx.events
        .publish(
            &node.object_ref(&()),
            false,
            "Synced",
            "InitializeNode",
            format!(
                "Node initialized from server {} ({}, {}): provider ID {}",
                server.uuid, md.instance_type, md.zone, md.provider_id
            ),
        )
        .await;
    tracing::info!(node = %name, server = %server.uuid, "node initialized");
    Ok(())
}

/// Keeps the addresses of an initialized Node in step with its server.
async fn refresh<D: ServerDirectory>(node: &Node, ctx: &NodeContext<D>) -> Result<(), NodeError> {
    let recent = ctx
        .last_sync
        .lock()
        .get(&node.name_any())
        .is_some_and(|at| at.elapsed() < ctx.refresh);
    if recent {
        return Ok(());
    }
    let has_provider_id = super::provider_id_of(node).is_some();
    if !has_provider_id {
        // Not ours to manage (no provider ID and not tainted: initialized elsewhere).
        return Ok(());
    }
    let server = match find_server(node, ctx.directory.as_ref()).await {
        Ok(s) => s,
        // A vanished server is the lifecycle controller's business.
        Err(NodeError::ServerGone(_)) => return Ok(()),
        Err(e) => return Err(e),
    };
    let md = node_metadata(&server);
    let node_ip = node.annotations().get(PROVIDED_NODE_IP).map(String::as_str);
    let addresses = addresses_json(&prefer_node_ip(&md.addresses, node_ip)?);
    if current_addresses(node) != addresses {
        let nodes: Api<Node> = Api::all(ctx.client.clone());
        let status = json!({"status": {"addresses": addresses}});
        nodes
            .patch_status(
                &node.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await?;
        ctx.events
            .publish(
                &node.object_ref(&()),
                false,
                "AddressesUpdated",
                "RefreshNode",
                "Node addresses follow the server's".into(),
            )
            .await;
    }
    Ok(())
}

/// Initializes or refreshes one Node; answers when to look at it again.
/// Whether it failed (and is looked at again after the retry delay).
async fn reconcile<D: ServerDirectory>(node: &Node, ctx: &NodeContext<D>) -> (Duration, bool) {
    let started = Instant::now();
    let uid = node.uid().unwrap_or_default();
    let tainted = has_taint(node, UNINITIALIZED_TAINT);
    let just_done = ctx
        .initialized_from
        .lock()
        .get(&node.name_any())
        .is_some_and(|(u, at)| *u == uid && at.elapsed() < ctx.retry);
    if tainted && just_done {
        // Initialized a moment ago: our updates are on their way to the cache.
        return (ctx.retry, false);
    }
    let result = if tainted {
        initialize(node, ctx).await
    } else {
        refresh(node, ctx).await
    };
    if result.is_ok() {
        ctx.last_sync.lock().insert(node.name_any(), Instant::now());
        if tainted {
            ctx.initialized_from
                .lock()
                .insert(node.name_any(), (uid, Instant::now()));
        }
    }
    let outcome = if result.is_ok() { "ok" } else { "error" };
    ctx.metrics
        .reconcile(CONTROLLER, outcome, started.elapsed());
    if let Err(e) = &result {
        let (reason, action) = match e {
            NodeError::Ambiguous { .. } => ("AmbiguousServerName", "InitializeNode"),
            NodeError::NoServer(_) | NodeError::ServerGone(_) => {
                ("ServerNotFound", "InitializeNode")
            }
            NodeError::Address(_) => ("NodeIPNotFound", "InitializeNode"),
            _ => ("SyncFailed", "InitializeNode"),
        };
        ctx.events
            .publish(&node.object_ref(&()), true, reason, action, e.to_string())
            .await;
    }
    match result {
        Ok(()) => (ctx.refresh, false),
        Err(e) => {
            tracing::warn!(node = %node.name_any(), error = %e, "node reconcile failed");
            (ctx.retry, true)
        }
    }
}

/// Runs the node controller on the shared Node cache until `shutdown` completes.
pub async fn run<D: ServerDirectory>(
    ctx: Arc<NodeContext<D>>,
    nodes: Arc<Informer<Node>>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let store = nodes.store();
    let queue = Arc::new(Queue::default());
    queue.count_in(CONTROLLER, &ctx.metrics);
    nodes.subscribe({
        let (queue, ctx, store) = (queue.clone(), ctx.clone(), store.clone());
        move |change| match change {
            Change::Touched(node) => queue.schedule(Key::of(node.as_ref()), Duration::ZERO),
            // After a re-list: Nodes deleted while the watch was down sent no event.
            Change::Synced => ctx.forget_gone(|name| {
                store
                    .get(&kube::runtime::reflector::ObjectRef::new(name))
                    .is_some()
            }),
        }
    });
    let mut shutdown = std::pin::pin!(shutdown);
    tokio::select! {
        biased;
        () = &mut shutdown => return,
        () = nodes.synced() => {}
    }
    // The shared watch delivers what has arrived before a reconcile starts (it is polled
    // first), so a Node is never reconciled from a copy older than what has arrived (our
    // own patches would otherwise be seen half-applied and initialized twice).
    runner::run(queue.clone(), NODE_WORKERS, shutdown, |key: Key| {
        let (ctx, store, queue) = (ctx.clone(), store.clone(), queue.clone());
        async move {
            let Some(node) = store.get(&key.object_ref()) else {
                // Deleted: what was noted of it goes too.
                ctx.forget_gone(|name| name != key.name);
                return None;
            };
            let (again, failed) = reconcile(&node, &ctx).await;
            if failed {
                queue.note_retry();
            }
            Some(again)
        }
    })
    .await;
}
