//! The node lifecycle controller: a NotReady Node whose server is stopped gets the shutdown
//! taint (removed once it is Ready again); a Node whose server definitely no longer exists
//! (404, confirmed by a second look) is deleted. An API error never leads to a deletion.

use super::metadata::SHUTDOWN_TAINT;
use super::provider_id;
use super::{Events, ServerDirectory};
use crate::metrics::Metrics;
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
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

fn ready(node: &Node) -> bool {
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

async fn check_node<D: ServerDirectory>(
    node: &Node,
    ctx: &LifecycleContext<D>,
) -> Result<(), String> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let name = node.name_any();
    let uuid = super::provider_id_of(node).map(provider_id::parse);
    // A Ready Node costs no request: only a NotReady one can be shut down or gone (as in
    // Kubernetes' own node lifecycle controller).
    let lookup = match &uuid {
        _ if ready(node) => None,
        None | Some(Err(_)) => None,
        Some(Ok(u)) => Some(ctx.directory.get(*u).await),
    };
    let server_view = lookup.as_ref().map(|r| match r {
        Ok(s) => Ok(s.as_ref().map(|s| s.status.as_str())),
        Err(_) => Err(()),
    });
    if let Some(Err(e)) = &lookup {
        return Err(format!("server lookup for node {name} failed: {e}"));
    }
    match decide(node, server_view) {
        Decision::Nothing => Ok(()),
        decision @ (Decision::AddShutdownTaint | Decision::RemoveShutdownTaint) => {
            let add = decision == Decision::AddShutdownTaint;
            set_taint(&nodes, node, add)
                .await
                .map_err(|e| e.to_string())?;
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
            Ok(())
        }
        Decision::ConfirmGone => {
            let Some(Ok(server)) = uuid else {
                return Ok(());
            };
            tokio::time::sleep(ctx.recheck).await;
            // A second, definite 404 is needed; anything else keeps the Node.
            match ctx.directory.get(server).await {
                Ok(None) => {}
                Ok(Some(_)) => return Ok(()),
                Err(e) => return Err(format!("re-check of server {server} failed: {e}")),
            }
            ctx.events
                .publish(
                    &node.object_ref(&()),
                    false,
                    "DeletingNode",
                    "DeleteNode",
                    format!("Deleting node {name}: its server {server} no longer exists"),
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
                    tracing::info!(node = %name, server = %server, "deleted node of a deleted server");
                    Ok(())
                }
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(e.to_string()),
            }
        }
    }
}

/// Looks at every Node once.
pub async fn sweep<D: ServerDirectory>(ctx: &LifecycleContext<D>) -> Result<(), kube::Error> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    for node in nodes.list(&ListParams::default()).await?.items {
        let started = Instant::now();
        let result = check_node(&node, ctx).await;
        ctx.metrics.reconcile(
            CONTROLLER,
            if result.is_ok() { "ok" } else { "error" },
            started.elapsed(),
        );
        if let Err(e) = result {
            tracing::warn!(node = %node.name_any(), error = %e, "node lifecycle check failed");
        }
    }
    Ok(())
}

/// Runs sweeps every `period` until `shutdown` completes.
pub async fn run<D: ServerDirectory>(
    ctx: Arc<LifecycleContext<D>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let work = async {
        loop {
            if let Err(e) = sweep(&ctx).await {
                tracing::warn!(error = %e, "cannot list nodes");
            }
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
