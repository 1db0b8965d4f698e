//! The node side: initialization of new Nodes (provider ID, labels, addresses, taint
//! removal), address refresh, and the node lifecycle (shutdown taint, deletion of Nodes
//! whose server is gone).

pub mod controller;
pub mod guard;
pub mod lifecycle;
pub mod metadata;
pub mod provider_id;

use metadata::ServerFacts;
use std::future::Future;
use uuid::Uuid;

/// A Node's provider ID, if it has a non-empty one.
pub fn provider_id_of(node: &k8s_openapi::api::core::v1::Node) -> Option<&str> {
    node.spec
        .as_ref()
        .and_then(|s| s.provider_id.as_deref())
        .filter(|p| !p.is_empty())
}

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

/// The server facts the node side needs, from an API server record.
pub fn server_facts(s: &crate::cloudscale::Server) -> ServerFacts {
    ServerFacts {
        uuid: s.uuid,
        name: s.name.clone(),
        status: s.status.as_str().to_string(),
        flavor: s.flavor.slug.clone(),
        zone: s.zone.slug.clone(),
        interfaces: s
            .interfaces
            .iter()
            .map(|i| {
                (
                    i.kind == crate::cloudscale::InterfaceType::Public,
                    i.addresses.iter().map(|a| a.address.to_string()).collect(),
                )
            })
            .collect(),
    }
}

/// The cloudscale API as the node side's server directory.
impl ServerDirectory for crate::cloudscale::Client {
    async fn get(&self, uuid: Uuid) -> Result<Option<ServerFacts>, DirectoryError> {
        match self.get_server(uuid).await {
            Ok(Some(s)) => Ok(Some(server_facts(&s))),
            Ok(None) => Ok(None),
            Err(e) => Err(DirectoryError(e.to_string())),
        }
    }

    async fn list(&self) -> Result<Vec<ServerFacts>, DirectoryError> {
        let servers = self
            .list_servers(&crate::cloudscale::Filter::all())
            .await
            .map_err(|e| DirectoryError(e.to_string()))?;
        Ok(servers.iter().map(server_facts).collect())
    }
}
