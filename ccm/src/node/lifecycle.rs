//! The node lifecycle controller: a NotReady Node whose server is stopped gets the shutdown
//! taint (removed once it is Ready again); a Node whose server definitely no longer exists
//! (the API's own 404, confirmed by a second look; for a Node without provider ID, no server
//! of its name in a complete list) is deleted, once the guards of [`super::guard`] let it:
//! the account is the cluster's, not too many Nodes look gone at once, and the pace allows.
//! An API error never leads to a deletion or a taint.

use super::guard::{self, Hold, Pace};
use super::metadata::{SHUTDOWN_TAINT, ServerFacts, ServerMatch, match_by_name};
use super::provider_id;
use super::{DirectoryError, ServerDirectory};
use crate::events::Events;
use crate::metrics::Metrics;
use crate::runner::{self, Informer};
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub const CONTROLLER: &str = "node-lifecycle";

pub struct LifecycleContext<D> {
    pub client: kube::Client,
    pub directory: Arc<D>,
    pub events: Events,
    pub metrics: Arc<Metrics>,
    /// How often every Node is looked at.
    pub period: Duration,
    /// Pause before the second look that confirms a server is gone.
    pub recheck: Duration,
    /// `--node-deletion-threshold`: the largest share of Nodes that may look gone at once
    /// for any to be deleted.
    pub deletion_threshold: f64,
    /// `--node-deletion-rate`: the pace of deletions.
    pub pace: parking_lot::Mutex<Pace>,
}

impl<D> LifecycleContext<D> {
    /// A context with the upstream-like defaults of the deletion guards (0.1 deletions per
    /// second, none above 55 % of the Nodes gone).
    pub fn new(
        client: kube::Client,
        directory: Arc<D>,
        events: Events,
        metrics: Arc<Metrics>,
        period: Duration,
    ) -> LifecycleContext<D> {
        LifecycleContext {
            client,
            directory,
            events,
            metrics,
            period,
            recheck: Duration::from_secs(2),
            deletion_threshold: 0.55,
            pace: parking_lot::Mutex::new(Pace::new(0.1)),
        }
    }
}

/// What to do with one Node (pure decision, see [`decide`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Nothing,
    AddShutdownTaint,
    RemoveShutdownTaint,
    /// The server is gone (first 404): look again before deleting.
    ConfirmGone,
}

/// Whether the Node's Ready condition is `True`.
pub fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

fn tainted(node: &Node) -> bool {
    super::metadata::has_taint(node, SHUTDOWN_TAINT)
}

/// The decision for a Node given what the cloud said about its server:
/// `Ok(Some(status))`, `Ok(None)` (404) or `Err` (lookup failed).
pub fn decide(node: &Node, server: Option<Result<Option<&str>, ()>>) -> Decision {
    if ready(node) {
        return if tainted(node) {
            Decision::RemoveShutdownTaint
        } else {
            Decision::Nothing
        };
    }
    match server {
        // No provider ID, or an error: never act on a guess.
        None | Some(Err(())) => Decision::Nothing,
        Some(Ok(None)) => Decision::ConfirmGone,
        Some(Ok(Some("stopped"))) if !tainted(node) => Decision::AddShutdownTaint,
        Some(Ok(Some("stopped"))) => Decision::Nothing,
        Some(Ok(Some(_))) if tainted(node) => Decision::RemoveShutdownTaint,
        Some(Ok(Some(_))) => Decision::Nothing,
    }
}

async fn set_taint(nodes: &Api<Node>, node: &Node, add: bool) -> Result<(), kube::Error> {
    let mut taints: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != SHUTDOWN_TAINT)
        .collect();
    if add {
        taints.push(Taint {
            key: SHUTDOWN_TAINT.to_string(),
            effect: "NoSchedule".to_string(),
            ..Taint::default()
        });
    }
    // The resourceVersion makes this a compare-and-swap on the taint list.
    let patch = json!({"metadata": {"resourceVersion": node.resource_version()}, "spec": {"taints": taints}});
    nodes
        .patch(
            &node.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map(|_| ())
}

/// Which server a NotReady Node is: by provider ID, or (not initialized yet) by exact
/// name, as Kubernetes' lifecycle controller asks the cloud whether a Node's instance
/// exists either way. `None`: nothing to ask (Ready, an unreadable provider ID, or several
/// servers with the Node's name: never act on a guess).
async fn look_up<D: ServerDirectory>(
    node: &Node,
    dir: &D,
) -> Option<Result<Option<ServerFacts>, DirectoryError>> {
    if ready(node) {
        return None;
    }
    match super::provider_id_of(node).map(provider_id::parse) {
        Some(Ok(uuid)) => Some(dir.get(uuid).await),
        Some(Err(_)) => None,
        None => match dir.list().await {
            Ok(servers) => match match_by_name(&servers, &node.name_any()) {
                ServerMatch::One(s) => Some(Ok(Some(s))),
                ServerMatch::None => Some(Ok(None)),
                ServerMatch::Ambiguous(_) => None,
            },
            Err(e) => Some(Err(e)),
        },
    }
}

/// The server a Node is, in words (for the deletion Event).
fn server_words(node: &Node) -> String {
    match super::provider_id_of(node) {
        Some(pid) => format!("its server {}", pid.trim_start_matches("cloudscale://")),
        None => format!("no server is named {}", node.name_any()),
    }
}

/// Looks at one Node: taints and untaints at once; a Node whose server looks gone is
/// returned, for [`delete_gone`] to judge with the others.
async fn check_node<D: ServerDirectory>(
    node: &Node,
    ctx: &LifecycleContext<D>,
) -> Result<Option<Node>, String> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let name = node.name_any();
    // A Ready Node costs no request: only a NotReady one can be shut down or gone (as in
    // Kubernetes' own node lifecycle controller).
    let lookup = look_up(node, ctx.directory.as_ref()).await;
    let server_view = lookup.as_ref().map(|r| match r {
        Ok(s) => Ok(s.as_ref().map(|s| s.status.as_str())),
        Err(_) => Err(()),
    });
    if let Some(Err(e)) = &lookup {
        return Err(format!("server lookup for node {name} failed: {e}"));
    }
    match decide(node, server_view) {
        Decision::Nothing => Ok(None),
        decision @ (Decision::AddShutdownTaint | Decision::RemoveShutdownTaint) => {
            let add = decision == Decision::AddShutdownTaint;
            set_taint(&nodes, node, add)
                .await
                .map_err(|e| crate::kube_text::KubeText(&e).to_string())?;
            let (reason, note) = if add {
                (
                    "NodeShutdown",
                    "The node's server is stopped: tainted as shut down",
                )
            } else {
                (
                    "NodeRunning",
                    "The node's server runs again: shutdown taint removed",
                )
            };
            ctx.events
                .publish(
                    &node.object_ref(&()),
                    false,
                    reason,
                    "CheckNode",
                    note.into(),
                )
                .await;
            Ok(None)
        }
        Decision::ConfirmGone => Ok(Some(node.clone())),
    }
}

/// Deletes the Nodes whose servers looked gone in this sweep, as far as the guards let it:
/// the complete server list answers as the API does and holds the cluster's servers, not
/// too many look gone, the pace allows; each still gone at a second look.
async fn delete_gone<D: ServerDirectory>(
    ctx: &LifecycleContext<D>,
    all: &[Arc<Node>],
    gone: Vec<Node>,
) {
    let mut held: std::collections::BTreeMap<&'static str, i64> =
        Hold::LABELS.iter().map(|l| (*l, 0)).collect();
    let hold = match ctx.directory.list().await {
        Err(e) => Some(Hold::NoServerList(e.to_string())),
        Ok(servers) => {
            let listed = guard::Servers {
                uuids: servers.iter().map(|s| s.uuid).collect(),
                names: servers.iter().map(|s| s.name.clone()).collect(),
            };
            let mut cluster = guard::Servers::default();
            for n in all {
                match super::provider_id_of(n) {
                    Some(p) => cluster.uuids.extend(provider_id::parse(p).ok()),
                    None => {
                        cluster.names.insert(n.name_any());
                    }
                }
            }
            guard::judge(
                &cluster,
                &listed,
                gone.len(),
                all.len(),
                ctx.deletion_threshold,
            )
        }
    };
    for node in gone {
        let name = node.name_any();
        let hold = match &hold {
            Some(h) => Some(h.clone()),
            None => match ctx.pace.lock().take(Instant::now()) {
                Ok(()) => None,
                Err(None) => Some(Hold::Disabled),
                // The next sweep looks again.
                Err(Some(_)) => continue,
            },
        };
        if let Some(h) = hold {
            *held.entry(h.label()).or_default() += 1;
            tracing::warn!(node = %name, reason = h.label(), "node deletion held");
            ctx.events
                .publish(
                    &node.object_ref(&()),
                    true,
                    "NodeDeletionHeld",
                    "DeleteNode",
                    h.message(&name),
                )
                .await;
            continue;
        }
        if let Err(e) = confirm_and_delete(ctx, &node).await {
            tracing::warn!(node = %name, error = %e, "node deletion failed");
        }
    }
    for (reason, n) in held {
        ctx.metrics.node_deletions_held(reason, n);
    }
}

/// The second look, then the deletion.
async fn confirm_and_delete<D: ServerDirectory>(
    ctx: &LifecycleContext<D>,
    node: &Node,
) -> Result<(), String> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let name = node.name_any();
    tokio::time::sleep(ctx.recheck).await;
    // A second, definite "not found" is needed; anything else keeps the Node.
    match look_up(node, ctx.directory.as_ref()).await {
        Some(Ok(None)) => {}
        Some(Err(e)) => return Err(format!("re-check for node {name} failed: {e}")),
        Some(Ok(Some(_))) | None => return Ok(()),
    }
    let server = server_words(node);
    ctx.events
        .publish(
            &node.object_ref(&()),
            false,
            "DeletingNode",
            "DeleteNode",
            format!("Deleting node {name}: {server} no longer exists"),
        )
        .await;
    let params = DeleteParams {
        // Never delete a Node re-created under the same name meanwhile.
        preconditions: Some(Preconditions {
            uid: node.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match nodes.delete(&name, &params).await {
        Ok(_) => {
            ctx.metrics.node_deleted();
            tracing::info!(node = %name, server = %server, "deleted node of a deleted server");
            Ok(())
        }
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(crate::kube_text::KubeText(&e).to_string()),
    }
}

/// Looks at every Node of the cache once.
pub async fn sweep<D: ServerDirectory>(ctx: &LifecycleContext<D>, nodes: &Store<Node>) {
    let all = runner::sorted(nodes);
    let mut gone = Vec::new();
    for node in &all {
        let started = Instant::now();
        let result = check_node(node, ctx).await;
        ctx.metrics.reconcile(
            CONTROLLER,
            if result.is_ok() { "ok" } else { "error" },
            started.elapsed(),
        );
        match result {
            Ok(Some(n)) => gone.push(n),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(node = %node.name_any(), error = %e, "node lifecycle check failed")
            }
        }
    }
    if gone.is_empty() {
        for reason in Hold::LABELS {
            ctx.metrics.node_deletions_held(reason, 0);
        }
    } else {
        delete_gone(ctx, &all, gone).await;
    }
}

/// Sweeps the shared Node cache every `period` until `shutdown` completes (a Ready Node
/// costs neither a cloud nor a Kubernetes request).
pub async fn run<D: ServerDirectory>(
    ctx: Arc<LifecycleContext<D>>,
    nodes: Arc<Informer<Node>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let work = async {
        nodes.synced().await;
        let store = nodes.store();
        loop {
            sweep(&ctx, &store).await;
            tokio::time::sleep(ctx.period).await;
        }
    };
    tokio::select! {
        biased;
        _ = work => {}
        _ = shutdown => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of fixed servers, or one whose every request fails.
    struct Fixed(Option<Vec<ServerFacts>>);

    impl ServerDirectory for Fixed {
        async fn get(&self, uuid: uuid::Uuid) -> Result<Option<ServerFacts>, DirectoryError> {
            let all = self.list().await?;
            Ok(all.into_iter().find(|s| s.uuid == uuid))
        }
        async fn list(&self) -> Result<Vec<ServerFacts>, DirectoryError> {
            self.0
                .clone()
                .ok_or_else(|| DirectoryError("500 Internal Server Error".into()))
        }
    }

    fn server(name: &str, n: u128) -> ServerFacts {
        ServerFacts {
            uuid: uuid::Uuid::from_u128(n),
            name: name.into(),
            status: "stopped".into(),
            flavor: "flex-4-2".into(),
            zone: "rma1".into(),
            interfaces: Vec::new(),
        }
    }

    fn uninitialized(name: &str, ready: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }))
        .expect("node")
    }

    #[tokio::test]
    async fn a_node_without_provider_id_is_looked_up_by_name_and_gone_only_on_a_complete_list() {
        let dir = Fixed(Some(vec![server("a", 1), server("b", 2), server("b", 3)]));
        let found = |r: Option<Result<Option<ServerFacts>, DirectoryError>>| {
            r.map(|r| r.map(|s| s.map(|s| s.uuid)).map_err(|_| ()))
        };
        // Its server by name.
        assert_eq!(
            found(look_up(&uninitialized("a", "Unknown"), &dir).await),
            Some(Ok(Some(uuid::Uuid::from_u128(1))))
        );
        // No server of that name in the complete list: gone.
        assert_eq!(
            found(look_up(&uninitialized("c", "Unknown"), &dir).await),
            Some(Ok(None))
        );
        assert_eq!(
            decide(&uninitialized("c", "Unknown"), Some(Ok(None))),
            Decision::ConfirmGone
        );
        // Two servers of that name: no guess, no request answer to act on.
        assert_eq!(
            found(look_up(&uninitialized("b", "Unknown"), &dir).await),
            None
        );
        // A Ready Node costs nothing; a failed list is an error, never "gone".
        assert_eq!(
            found(look_up(&uninitialized("c", "True"), &dir).await),
            None
        );
        assert_eq!(
            found(look_up(&uninitialized("c", "Unknown"), &Fixed(None)).await),
            Some(Err(()))
        );
    }

    fn node(ready: &str, shutdown_taint: bool) -> Node {
        let taints = if shutdown_taint {
            json!([{"key": SHUTDOWN_TAINT, "effect": "NoSchedule"}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "spec": {"providerID": "cloudscale://08d56bfe-40d0-4c68-a915-54f846c28c9e", "taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }))
        .expect("node")
    }

    #[test]
    fn decisions() {
        use Decision::*;
        assert_eq!(
            decide(&node("True", false), Some(Ok(Some("running")))),
            Nothing
        );
        assert_eq!(
            decide(&node("True", true), Some(Ok(Some("running")))),
            RemoveShutdownTaint
        );
        assert_eq!(
            decide(&node("Unknown", false), Some(Ok(Some("stopped")))),
            AddShutdownTaint
        );
        assert_eq!(
            decide(&node("False", true), Some(Ok(Some("stopped")))),
            Nothing
        );
        assert_eq!(
            decide(&node("Unknown", true), Some(Ok(Some("running")))),
            RemoveShutdownTaint
        );
        assert_eq!(decide(&node("Unknown", false), Some(Ok(None))), ConfirmGone);
        // Errors and missing provider IDs never lead anywhere.
        assert_eq!(decide(&node("Unknown", false), Some(Err(()))), Nothing);
        assert_eq!(decide(&node("Unknown", false), None), Nothing);
    }
}
