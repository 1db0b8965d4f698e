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

/// How long a repeated Event is counted on its first occurrence instead of recorded anew
/// (the 6 minutes of client-go and kube's Recorder).
const SERIES_TTL: std::time::Duration = std::time::Duration::from_secs(6 * 60);

/// The API server refuses an events.k8s.io note longer than this (bytes).
const NOTE_MAX: usize = 1024;

/// What makes two Events the same: the object, type, reason, action and message. kube's
/// Recorder leaves the message out, so a second, different error or refusal on the same
/// object would only bump the count of the first and never be shown; here it is its own
/// Event (client-go keys on the message too, merging only floods of similar messages).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    regarding: (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
    warning: bool,
    reason: String,
    action: String,
    note: String,
}

#[derive(Debug, Clone)]
struct Recorded {
    name: String,
    count: i32,
    last: tokio::time::Instant,
}

/// Publishes Events (events.k8s.io/v1) without letting a failure to publish stop the
/// controller.
#[derive(Clone)]
pub struct Events {
    client: kube::Client,
    instance: String,
    ambient: crate::ambient::Ambient,
    recorded: std::sync::Arc<parking_lot::Mutex<std::collections::HashMap<EventKey, Recorded>>>,
}

impl Events {
    pub fn new(
        client: kube::Client,
        instance: Option<String>,
        ambient: crate::ambient::Ambient,
    ) -> Events {
        Events {
            client,
            ambient,
            instance: instance.unwrap_or_else(|| crate::COMPONENT.to_string()),
            recorded: Default::default(),
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
        if let Err(e) = self
            .try_publish(object, warning, reason, action, note)
            .await
        {
            tracing::warn!(reason, error = %e, "cannot publish event");
        }
    }

    async fn try_publish(
        &self,
        object: &k8s_openapi::api::core::v1::ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) -> Result<(), kube::Error> {
        use k8s_openapi::api::events::v1::{Event, EventSeries};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
        use kube::api::{Api, Patch, PatchParams, PostParams};

        let note = truncate(note, NOTE_MAX);
        let now = tokio::time::Instant::now();
        let stamp = MicroTime(self.ambient.now());
        let key = EventKey {
            regarding: (
                object.uid.clone(),
                object.namespace.clone(),
                object.name.clone(),
                object.kind.clone(),
            ),
            warning,
            reason: reason.to_string(),
            action: action.to_string(),
            note: note.clone(),
        };
        let repeat = {
            let mut recorded = self.recorded.lock();
            recorded.retain(|_, r| now.duration_since(r.last) < SERIES_TTL);
            recorded.get(&key).cloned()
        };
        let namespace = object
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        if let Some(r) = repeat {
            let count = r.count + 1;
            let patch = serde_json::json!({"series": EventSeries {
                count,
                last_observed_time: stamp.clone(),
            }});
            match events
                .patch(&r.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    let counted = Recorded {
                        count,
                        last: now,
                        ..r
                    };
                    self.recorded.lock().insert(key, counted);
                    return Ok(());
                }
                // Expired on the server (Events live an hour): record it anew.
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        // Names are at most 253 characters (a DNS subdomain): keep room for the suffix.
        let full = object.name.as_deref().unwrap_or(crate::COMPONENT);
        let cut: String = full.chars().take(253 - 17).collect();
        let base = cut.trim_end_matches(['.', '-']);
        let name = format!("{base}.{}", &self.ambient.uuid().simple().to_string()[..16]);
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(stamp),
            action: Some(action.to_string()),
            reason: Some(reason.to_string()),
            note: Some(note),
            type_: Some(if warning { "Warning" } else { "Normal" }.to_string()),
            regarding: Some(object.clone()),
            reporting_controller: Some(crate::COMPONENT.to_string()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        events.create(&PostParams::default(), &event).await?;
        let recorded = Recorded {
            name,
            count: 1,
            last: now,
        };
        self.recorded.lock().insert(key, recorded);
        Ok(())
    }
}

/// `s` cut to at most `max` bytes on a character boundary, marked with "…" when cut.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push('…');
    s
}

/// The server facts the node side needs, from an API server record.
pub fn server_facts(s: &crate::cloudscale::Server) -> Result<ServerFacts, DirectoryError> {
    let uuid = Uuid::parse_str(&s.uuid).map_err(|_| {
        DirectoryError(format!(
            "server \"{}\" has an invalid UUID \"{}\"",
            s.name, s.uuid
        ))
    })?;
    Ok(ServerFacts {
        uuid,
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
    })
}

/// The cloudscale API as the node side's server directory.
impl ServerDirectory for crate::cloudscale::Client {
    async fn get(&self, uuid: Uuid) -> Result<Option<ServerFacts>, DirectoryError> {
        match self.get_server(&uuid.to_string()).await {
            Ok(Some(s)) => server_facts(&s).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(DirectoryError(e.to_string())),
        }
    }

    async fn list(&self) -> Result<Vec<ServerFacts>, DirectoryError> {
        let servers = self
            .list_servers(&crate::cloudscale::Filter::all())
            .await
            .map_err(|e| DirectoryError(e.to_string()))?;
        servers.iter().map(server_facts).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_on_a_character_boundary() {
        assert_eq!(truncate("short".into(), NOTE_MAX), "short");
        let long = "ä".repeat(NOTE_MAX);
        let cut = truncate(long, NOTE_MAX);
        assert!(cut.len() <= NOTE_MAX, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.starts_with("ää"));
    }
}
