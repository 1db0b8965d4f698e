//! The node side: initialization of new Nodes (provider ID, labels, addresses, taint
//! removal), address refresh, and the node lifecycle (shutdown taint, deletion of Nodes
//! whose server is gone).

pub mod controller;
pub mod lifecycle;
pub mod metadata;
pub mod provider_id;

use metadata::ServerFacts;
use std::future::Future;
use uuid::Uuid;

/// Why the server directory could not answer. Never "absent": that is `Ok(None)`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct DirectoryError(pub String);

/// Where the node side looks servers up (the cloudscale API in production).
pub trait ServerDirectory: Send + Sync + 'static {
    /// One server by UUID; `Ok(None)` only for a definite "not found".
    fn get(
        &self,
        uuid: Uuid,
    ) -> impl Future<Output = Result<Option<ServerFacts>, DirectoryError>> + Send;
    /// Every server of the account.
    fn list(&self) -> impl Future<Output = Result<Vec<ServerFacts>, DirectoryError>> + Send;
}

/// Publishes Events without letting a failure to publish stop the controller.
#[derive(Clone)]
pub struct Events {
    recorder: kube::runtime::events::Recorder,
}

impl Events {
    pub fn new(client: kube::Client, instance: Option<String>) -> Events {
        let reporter = kube::runtime::events::Reporter {
            controller: crate::COMPONENT.to_string(),
            instance,
        };
        Events {
            recorder: kube::runtime::events::Recorder::new(client, reporter),
        }
    }

    pub async fn publish(
        &self,
        object: &k8s_openapi::api::core::v1::ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let ev = kube::runtime::events::Event {
            type_: if warning {
                kube::runtime::events::EventType::Warning
            } else {
                kube::runtime::events::EventType::Normal
            },
            reason: reason.to_string(),
            note: Some(note),
            action: action.to_string(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, object).await {
            tracing::warn!(reason, error = %e, "cannot publish event");
        }
    }
}
