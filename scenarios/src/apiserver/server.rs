//! The embedded API server's shared state and its configuration. The running server is in
//! `serve.rs`, the REST semantics in `objects.rs`, the HTTP front in `http.rs`, watches in
//! `watch.rs`.

use super::events;
use super::registry::ResourceType;
use super::store::Store;
use ccm::ambient::Ambient;
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// `includeObject` of a Table request: what each row's `object` carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    None,
    /// The default: the object's metadata as `PartialObjectMetadata`.
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(s: &str) -> IncludeObject {
        match s {
            "None" => IncludeObject::None,
            "Object" => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// Namespaces every cluster starts with.
pub const INITIAL_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

#[derive(Debug, Clone)]
pub struct ApiServerConfig {
    pub listen: SocketAddr,
    /// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Changes kept for watches to resume from (older ones answer 410 Gone).
    pub history_limit: usize,
    /// Timestamps and UIDs: the machine's clock and random UIDs, or (in a simulation) the
    /// simulated clock and UIDs drawn from a seed.
    pub ambient: Ambient,
    /// Authenticate bearer tokens and authorize every request with the stored RBAC objects
    /// (`rbac.rs`); off, every request is allowed (its user is still recorded).
    pub rbac: bool,
    /// Serve HTTPS with a self-signed certificate (`tls.rs` says why); plain HTTP without.
    pub tls: bool,
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        ApiServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            bookmark_interval: Duration::from_secs(1),
            history_limit: 100_000,
            ambient: Ambient::system(),
            rbac: true,
            tls: true,
        }
    }
}

/// One request as recorded for tests (e.g. which verbs a client used on which resources).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub user_agent: String,
    /// The authenticated user (`system:serviceaccount:<ns>:<name>`, `kubernetes-admin`,
    /// `system:anonymous`).
    pub user: String,
    pub code: u16,
}

pub struct Inner {
    pub store: RwLock<Store>,
    pub(super) changed: watch::Sender<u64>,
    pub(super) requests: Mutex<Vec<RequestRecord>>,
    pub(super) config: ApiServerConfig,
    pub(super) address: Mutex<String>,
}

/// Handle on the server's state, shared by the HTTP layer and in-process callers.
#[derive(Clone)]
pub struct Shared(pub Arc<Inner>);

/// A changed object: its storage (`services`, ...), namespace and name.
pub type ChangedObject = (&'static str, String, String);

/// What a path names.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub(super) rt: &'static ResourceType,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct Params {
    pub(super) watch: bool,
    pub(super) resource_version: Option<String>,
    pub(super) label_selector: Option<String>,
    pub(super) field_selector: Option<String>,
    pub(super) bookmarks: bool,
    pub(super) timeout: Option<u64>,
    pub(super) limit: Option<usize>,
    pub(super) continue_token: Option<String>,
    pub(super) dry_run: bool,
    pub(super) send_initial_events: bool,
    pub(super) include_object: IncludeObject,
    /// `fieldValidation=Strict`: unknown fields are an error (what kubectl sends).
    pub(super) strict: bool,
    /// A delete's `propagationPolicy` and `orphanDependents` given as query parameters
    /// (kube-apiserver reads DeleteOptions from the query as from the body).
    pub(super) propagation_policy: Option<String>,
    pub(super) orphan_dependents: Option<bool>,
}

impl Params {
    pub(super) fn parse(query: Option<&str>) -> Params {
        let mut p = Params::default();
        for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "watch" => p.watch = v == "true" || v == "1",
                "resourceVersion" => p.resource_version = Some(v),
                "labelSelector" => p.label_selector = Some(v),
                "fieldSelector" => p.field_selector = Some(v),
                "allowWatchBookmarks" => p.bookmarks = v == "true",
                "timeoutSeconds" => p.timeout = v.parse().ok(),
                "limit" => p.limit = v.parse().ok().filter(|l| *l > 0),
                "continue" => p.continue_token = Some(v).filter(|c| !c.is_empty()),
                "dryRun" => p.dry_run = !v.is_empty(),
                "sendInitialEvents" => p.send_initial_events = v == "true",
                "includeObject" => p.include_object = IncludeObject::parse(&v),
                "fieldValidation" => p.strict = v == "Strict",
                "propagationPolicy" => p.propagation_policy = Some(v),
                "orphanDependents" => p.orphan_dependents = v.parse().ok(),
                _ => {}
            }
        }
        p
    }
}

pub(super) fn now_rfc3339(ambient: &Ambient) -> String {
    rfc3339(ambient.now())
}

/// A timestamp as the API server writes one (`2026-01-01T00:00:00Z`, whole seconds).
pub(super) fn rfc3339(t: k8s_openapi::jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub(super) fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
}

/// The object as clients of `rt` see it (Events convert between versions).
pub(super) fn external(rt: &ResourceType, obj: &Value) -> Value {
    if rt.group == "events.k8s.io" {
        return events::to_events_v1(obj);
    }
    let mut o = obj.clone();
    o["apiVersion"] = json!(rt.api_version());
    o["kind"] = json!(rt.kind);
    o
}

/// [`external`] serialized straight from the stored object, without copying it: the JSON
/// is the same (keys in order, `apiVersion` and `kind` those of `rt`). Not for Events of
/// `events.k8s.io`, which are converted.
pub(super) struct External<'a> {
    pub rt: &'a ResourceType,
    pub obj: &'a Value,
}

impl serde::Serialize for External<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let Value::Object(map) = self.obj else {
            return self.obj.serialize(s);
        };
        let api_version = self.rt.api_version();
        let mut fixed = [("apiVersion", api_version.as_str()), ("kind", self.rt.kind)]
            .into_iter()
            .peekable();
        let mut m = s.serialize_map(None)?;
        for (k, v) in map {
            while let Some((f, value)) = fixed.next_if(|(f, _)| *f <= k.as_str()) {
                m.serialize_entry(f, value)?;
            }
            if k != "apiVersion" && k != "kind" {
                m.serialize_entry(k, v)?;
            }
        }
        for (f, value) in fixed {
            m.serialize_entry(f, value)?;
        }
        m.end()
    }
}

/// The stored form of a body a client sent (taken, not copied: most kinds are stored as
/// sent).
pub(super) fn internal(rt: &ResourceType, obj: Value) -> Value {
    if rt.group == "events.k8s.io" {
        return events::to_core(&obj);
    }
    obj
}

pub(super) fn random_suffix(ambient: &Ambient) -> String {
    const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let id = ambient.uuid();
    id.as_bytes()[..5]
        .iter()
        .map(|b| CHARS[*b as usize % CHARS.len()] as char)
        .collect()
}

/// Objects whose spec changes bump `metadata.generation`.
pub(super) fn has_generation(rt: &ResourceType) -> bool {
    matches!(
        (rt.group, rt.kind),
        ("", "Service" | "Pod" | "ReplicationController")
            | ("apps", "Deployment" | "ReplicaSet" | "DaemonSet")
            | ("batch", "Job" | "CronJob")
    )
}

/// Counts requests by `verb resource`, e.g. `"patch nodes"`.
pub fn verb_counts(records: &[RequestRecord]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for r in records {
        let res = match &r.subresource {
            Some(s) => format!("{}/{s}", r.resource),
            None => r.resource.clone(),
        };
        *m.entry(format!("{} {res}", r.verb)).or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_serialized_in_place_is_the_external_copy() {
        let lease =
            super::super::registry::find("coordination.k8s.io", "v1", "leases").expect("leases");
        let pod = super::super::registry::find("", "v1", "pods").expect("pods");
        for (rt, obj) in [
            (
                lease,
                json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}),
            ),
            (
                lease,
                json!({"apiVersion": "old/v0", "kind": "Other", "metadata": {}, "zz": 1}),
            ),
            (
                pod,
                json!({"a": 1, "kind": "Pod", "metadata": {"name": "p"}, "status": {}}),
            ),
            (pod, json!({})),
        ] {
            let fast = serde_json::to_string(&External { rt, obj: &obj }).expect("json");
            assert_eq!(fast, external(rt, &obj).to_string());
        }
    }
}
