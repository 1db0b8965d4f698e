//! HTTP front of the embedded API server: path parsing, the REST verbs with a real API
//! server's semantics, and watches.

use super::discovery;
use super::events;
use super::patch;
use super::rbac;
use super::registry::{self, RESOURCES, ResourceType};
use super::selectors::{FieldSelector, LabelSelector};
use super::services;
use super::status::{ApiError, ApiResult};
use super::store::{ChangeKind, Key, Store};
use super::tables::{self, Format, IncludeObject};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use ccm::ambient::Ambient;
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

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
    changed: watch::Sender<u64>,
    requests: Mutex<Vec<RequestRecord>>,
    config: ApiServerConfig,
    address: Mutex<String>,
}

/// Handle on the server's state, shared by the HTTP layer and in-process callers.
#[derive(Clone)]
pub struct Shared(pub Arc<Inner>);

/// A changed object: its storage (`services`, ...), namespace and name.
pub type ChangedObject = (&'static str, String, String);

/// What a path names.
#[derive(Debug, Clone)]
struct Target {
    rt: &'static ResourceType,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

#[derive(Debug, Default)]
struct Params {
    watch: bool,
    resource_version: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    bookmarks: bool,
    timeout: Option<u64>,
    limit: Option<usize>,
    continue_token: Option<String>,
    dry_run: bool,
    send_initial_events: bool,
    include_object: IncludeObject,
    /// `fieldValidation=Strict`: unknown fields are an error (what kubectl sends).
    strict: bool,
}

impl Params {
    fn parse(query: Option<&str>) -> Params {
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
                _ => {}
            }
        }
        p
    }
}

fn now_rfc3339(ambient: &Ambient) -> String {
    ambient.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
}

/// The object as clients of `rt` see it (Events convert between versions).
fn external(rt: &ResourceType, obj: &Value) -> Value {
    if rt.group == "events.k8s.io" {
        return events::to_events_v1(obj);
    }
    let mut o = obj.clone();
    o["apiVersion"] = json!(rt.api_version());
    o["kind"] = json!(rt.kind);
    o
}

fn internal(rt: &ResourceType, obj: &Value) -> Value {
    if rt.group == "events.k8s.io" {
        return events::to_core(obj);
    }
    obj.clone()
}

fn random_suffix(ambient: &Ambient) -> String {
    const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let id = ambient.uuid();
    id.as_bytes()[..5]
        .iter()
        .map(|b| CHARS[*b as usize % CHARS.len()] as char)
        .collect()
}

/// Objects whose spec changes bump `metadata.generation`.
fn has_generation(rt: &ResourceType) -> bool {
    matches!(rt.kind, "Service" | "Pod") && rt.group.is_empty()
}

impl Shared {
    pub fn new(config: ApiServerConfig) -> Shared {
        let (changed, _) = watch::channel(0);
        let ambient = config.ambient.clone();
        let shared = Shared(Arc::new(Inner {
            store: RwLock::new(Store::new(config.history_limit)),
            changed,
            requests: Mutex::new(Vec::new()),
            config,
            address: Mutex::new(String::new()),
        }));
        let ns = registry::find("", "v1", "namespaces").map(|r| r.storage_key());
        if let Some(storage) = ns {
            let mut store = shared.0.store.write();
            for name in INITIAL_NAMESPACES {
                let obj = json!({
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "uid": ambient.uuid().to_string(),
                                 "creationTimestamp": now_rfc3339(&ambient),
                                 "labels": {"kubernetes.io/metadata.name": name}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                });
                store.put(
                    storage,
                    (String::new(), name.to_string()),
                    obj,
                    ChangeKind::Added,
                );
            }
        }
        if shared.0.config.rbac {
            let mut store = shared.0.store.write();
            for (storage, mut obj) in rbac::bootstrap_objects() {
                let name = meta_str(&obj, "name").unwrap_or_default().to_string();
                obj["metadata"]["uid"] = json!(ambient.uuid().to_string());
                obj["metadata"]["creationTimestamp"] = json!(now_rfc3339(&ambient));
                store.put(storage, (String::new(), name), obj, ChangeKind::Added);
            }
        }
        shared
    }

    fn notify(&self) {
        let rv = self.0.store.read().rv;
        self.0.changed.send_replace(rv);
    }

    /// Tells of every change to the store (the new resourceVersion).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.0.changed.subscribe()
    }

    /// The objects of `storages` changed after resourceVersion `rv`, as (storage, namespace,
    /// name) in the order of their changes (`None` when the history no longer reaches back
    /// that far), and the current resourceVersion.
    pub fn changed_since(&self, rv: u64, storages: &[&str]) -> (Option<Vec<ChangedObject>>, u64) {
        let store = self.0.store.read();
        let changed = store.changes_after(rv).map(|changes| {
            changes
                .filter(|c| storages.contains(&c.storage))
                .map(|c| {
                    let name = c.object["metadata"]["name"].as_str().unwrap_or_default();
                    (c.storage, c.namespace.clone(), name.to_string())
                })
                .collect()
        });
        (changed, store.rv)
    }

    /// One stored object, if it parses as `T`.
    pub fn object<T: serde::de::DeserializeOwned>(
        &self,
        storage: &str,
        namespace: &str,
        name: &str,
    ) -> Option<T> {
        let store = self.0.store.read();
        let value = store.get(storage, &(namespace.to_string(), name.to_string()))?;
        serde_json::from_value(value.clone()).ok()
    }

    /// Every stored object of one type (`services`, `nodes`, `endpointslices`, `events`, ...)
    /// that parses as `T`, in namespace and name order.
    pub fn objects<T: serde::de::DeserializeOwned>(&self, storage: &str) -> Vec<T> {
        let store = self.0.store.read();
        store
            .list(storage, None)
            .filter_map(|(_, v)| serde_json::from_value(v.clone()).ok())
            .collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.0.requests.lock().clone()
    }

    pub fn clear_requests(&self) {
        self.0.requests.lock().clear();
    }

    /// Drops the watch history (watches from older versions get 410 Gone).
    pub fn compact(&self) {
        self.0.store.write().compact();
    }

    // ---- verbs, callable in-process too -------------------------------------------------

    fn get(&self, t: &Target) -> ApiResult<Value> {
        let name = t.name.clone().unwrap_or_default();
        let key = (t.namespace.clone().unwrap_or_default(), name.clone());
        let store = self.0.store.read();
        store
            .get(t.rt.storage_key(), &key)
            .map(|o| external(t.rt, o))
            .ok_or_else(|| ApiError::not_found(t.rt.plural, &name))
    }

    fn list(&self, t: &Target, p: &Params) -> ApiResult<Value> {
        let labels = LabelSelector::parse(p.label_selector.as_deref().unwrap_or_default())?;
        let fields = FieldSelector::parse(p.field_selector.as_deref().unwrap_or_default())?;
        let store = self.0.store.read();
        let start_after: Option<Key> = p.continue_token.as_deref().and_then(|c| {
            let (ns, name) = c.split_once('/')?;
            Some((ns.to_string(), name.to_string()))
        });
        let mut items = Vec::new();
        let mut next = None;
        for (key, obj) in store.list(t.rt.storage_key(), t.namespace.as_deref()) {
            if start_after.as_ref().is_some_and(|s| key <= s) {
                continue;
            }
            let ext = external(t.rt, obj);
            if !labels.matches(&ext) || !fields.matches(&ext) {
                continue;
            }
            if p.limit.is_some_and(|l| items.len() >= l) {
                next = Some(format!(
                    "{}/{}",
                    items_last_key(&items).0,
                    items_last_key(&items).1
                ));
                break;
            }
            items.push((key.clone(), ext));
        }
        let mut metadata = json!({"resourceVersion": store.rv.to_string()});
        if let Some(c) = next {
            metadata["continue"] = json!(c);
        }
        Ok(json!({
            "kind": t.rt.list_kind(),
            "apiVersion": t.rt.api_version(),
            "metadata": metadata,
            "items": items.into_iter().map(|(_, o)| o).collect::<Vec<_>>(),
        }))
    }

    fn namespace_exists(store: &Store, ns: &str) -> bool {
        store
            .get("namespaces", &(String::new(), ns.to_string()))
            .is_some()
    }

    /// Kind-specific defaulting, validation and allocation.
    fn prepare(
        store: &Store,
        rt: &ResourceType,
        new: &mut Value,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        match (rt.group, rt.kind) {
            ("", "Service") => {
                let uid = meta_str(new, "uid").map(str::to_string);
                let mut taken = services::Taken::from_services(
                    store.list("services", None).map(|(_, v)| v),
                    uid.as_deref(),
                );
                services::prepare(new, old, &mut taken)
            }
            ("", "Secret") => {
                merge_string_data(new);
                Ok(())
            }
            ("", "Namespace") => {
                if new.pointer("/status/phase").is_none() {
                    new["status"] = json!({"phase": "Active"});
                }
                Ok(())
            }
            ("", "Pod") => {
                if new.pointer("/status/phase").is_none() {
                    new["status"] = json!({"phase": "Pending"});
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub fn create_object(
        &self,
        rt: &'static ResourceType,
        namespace: Option<&str>,
        body: Value,
        dry_run: bool,
    ) -> ApiResult<Value> {
        let Value::Object(_) = body else {
            return Err(ApiError::BadRequest(
                "the body must be a JSON object".into(),
            ));
        };
        if let Some(kind) = body.get("kind").and_then(Value::as_str)
            && kind != rt.kind
        {
            return Err(ApiError::BadRequest(format!(
                "the kind \"{kind}\" does not match the resource {}",
                rt.plural
            )));
        }
        let mut obj = internal(rt, &body);
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = json!({});
        }
        let ns = if rt.namespaced {
            let ns = namespace.ok_or(ApiError::MethodNotAllowed)?;
            if let Some(body_ns) = meta_str(&obj, "namespace")
                && !body_ns.is_empty()
                && body_ns != ns
            {
                return Err(ApiError::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request".into(),
                ));
            }
            obj["metadata"]["namespace"] = json!(ns);
            ns.to_string()
        } else {
            if let Some(m) = obj["metadata"].as_object_mut() {
                m.remove("namespace");
            }
            String::new()
        };
        let name = match (meta_str(&obj, "name"), meta_str(&obj, "generateName")) {
            (Some(n), _) if !n.is_empty() => n.to_string(),
            (_, Some(g)) if !g.is_empty() => {
                format!("{g}{}", random_suffix(&self.0.config.ambient))
            }
            _ => {
                return Err(ApiError::invalid(
                    rt.kind,
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
        };
        obj["metadata"]["name"] = json!(name);
        let mut store = self.0.store.write();
        if rt.namespaced && !Self::namespace_exists(&store, &ns) {
            return Err(ApiError::not_found("namespaces", &ns));
        }
        if rt.namespaced
            && store
                .get("namespaces", &(String::new(), ns.clone()))
                .is_some_and(|n| n.pointer("/metadata/deletionTimestamp").is_some())
        {
            return Err(ApiError::Forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                rt.plural
            )));
        }

        let key = (ns.clone(), name.clone());
        if store.get(rt.storage_key(), &key).is_some() {
            return Err(ApiError::AlreadyExists {
                kind: rt.plural.to_string(),
                name,
            });
        }
        let meta = &mut obj["metadata"];
        meta["uid"] = json!(self.0.config.ambient.uuid().to_string());
        meta["creationTimestamp"] = json!(now_rfc3339(&self.0.config.ambient));
        if let Some(m) = meta.as_object_mut() {
            m.remove("deletionTimestamp");
            m.remove("resourceVersion");
        }
        if has_generation(rt) {
            obj["metadata"]["generation"] = json!(1);
        }
        Self::prepare(&store, rt, &mut obj, None)?;
        if dry_run {
            return Ok(external(rt, &obj));
        }
        let stored = store.put(rt.storage_key(), key, obj, ChangeKind::Added);
        drop(store);
        self.notify();
        Ok(external(rt, &stored))
    }

    /// Update (PUT) or the second half of a PATCH: `new` replaces the object (or, for the
    /// status subresource, its status only).
    fn update_object(
        &self,
        t: &Target,
        body: Value,
        dry_run: bool,
        create_if_missing: bool,
    ) -> ApiResult<(StatusCode, Value)> {
        let name = t.name.clone().unwrap_or_default();
        let ns = t.namespace.clone().unwrap_or_default();
        let key = (ns.clone(), name.clone());
        let status_only = t.sub.as_deref() == Some("status");
        if !body.is_object() {
            return Err(ApiError::BadRequest(
                "the body must be a JSON object".into(),
            ));
        }
        let mut store = self.0.store.write();
        let Some(old) = store.get(t.rt.storage_key(), &key).cloned() else {
            drop(store);
            if create_if_missing && !status_only {
                let obj = self.create_object(t.rt, t.namespace.as_deref(), body, dry_run)?;
                return Ok((StatusCode::CREATED, obj));
            }
            return Err(ApiError::not_found(t.rt.plural, &name));
        };
        let incoming = internal(t.rt, &body);
        if let Some(n) = meta_str(&incoming, "name")
            && n != name
        {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        if let Some(rv) = meta_str(&incoming, "resourceVersion")
            && !rv.is_empty()
            && rv != meta_str(&old, "resourceVersion").unwrap_or_default()
        {
            return Err(ApiError::Conflict {
                kind: t.rt.plural.to_string(),
                name,
                message: "the object has been modified; please apply your changes to the latest version and try again".into(),
            });
        }
        if let Some(uid) = meta_str(&incoming, "uid")
            && !uid.is_empty()
            && Some(uid) != meta_str(&old, "uid")
        {
            return Err(ApiError::Conflict {
                kind: t.rt.plural.to_string(),
                name,
                message: "Precondition failed: UID in precondition does not match the object"
                    .into(),
            });
        }
        let mut new = if status_only {
            let mut o = old.clone();
            o["status"] = incoming.get("status").cloned().unwrap_or(json!({}));
            o
        } else {
            let mut o = incoming;
            if t.rt.status {
                match old.get("status") {
                    Some(s) => o["status"] = s.clone(),
                    None => {
                        if let Some(m) = o.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            if !o.get("metadata").is_some_and(Value::is_object) {
                o["metadata"] = json!({});
            }
            // Fields the server owns.
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
                "name",
            ] {
                match old["metadata"].get(k) {
                    Some(v) => o["metadata"][k] = v.clone(),
                    None => {
                        if let Some(m) = o["metadata"].as_object_mut() {
                            m.remove(k);
                        }
                    }
                }
            }
            Self::prepare(&store, t.rt, &mut o, Some(&old))?;
            if has_generation(t.rt) && o.get("spec") != old.get("spec") {
                let g = old["metadata"]["generation"].as_i64().unwrap_or(1);
                o["metadata"]["generation"] = json!(g + 1);
            }
            o
        };
        if let Some(m) = new.as_object_mut() {
            m.insert(
                "apiVersion".into(),
                old.get("apiVersion")
                    .cloned()
                    .unwrap_or(json!(t.rt.api_version())),
            );
            m.insert(
                "kind".into(),
                old.get("kind").cloned().unwrap_or(json!(t.rt.kind)),
            );
        }
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        if new == old || dry_run {
            return Ok((StatusCode::OK, external(t.rt, &new)));
        }
        let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
        let no_finalizers = new
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        let result = if deleting && no_finalizers {
            // The last finalizer is gone: the deletion completes, with one DELETED event
            // carrying the final state.
            store
                .remove_final(t.rt.storage_key(), &key, new)
                .unwrap_or(Value::Null)
        } else {
            store.put(t.rt.storage_key(), key, new, ChangeKind::Modified)
        };
        Self::finish_namespace_deletion(&mut store, &ns);
        drop(store);
        self.notify();
        Ok((StatusCode::OK, external(t.rt, &result)))
    }

    fn patch_object(
        &self,
        t: &Target,
        content_type: &str,
        body: &[u8],
        dry_run: bool,
    ) -> ApiResult<Value> {
        let ct = content_type.split(';').next().unwrap_or_default().trim();
        let apply = ct == "application/apply-patch+yaml";
        let patch: Value = if apply {
            serde_yaml_ng::from_slice(body)
                .map_err(|e| ApiError::BadRequest(format!("invalid YAML: {e}")))?
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::BadRequest(format!("invalid JSON: {e}")))?
        };
        // A patch that names a resourceVersion is a precondition. One that does not applies
        // to whatever is current: like the real API server's guaranteed update, it is
        // re-applied when another write lands between the read and the write, never
        // answered with a conflict.
        let precondition = patch.pointer("/metadata/resourceVersion").is_some();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let current = match self.get(&Target {
                sub: None,
                ..t.clone()
            }) {
                Ok(o) => o,
                Err(ApiError::NotFound { .. }) if apply => {
                    // Server-side apply creates what does not exist yet (field ownership is
                    // not tracked: the applied object wins wholesale).
                    return self.update_object(t, patch, dry_run, true).map(|(_, o)| o);
                }
                Err(e) => return Err(e),
            };
            let mut patched = current.clone();
            match ct {
                "application/merge-patch+json" => patch::merge_patch(&mut patched, &patch),
                "application/json-patch+json" => patch::json_patch(&mut patched, &patch)?,
                "application/strategic-merge-patch+json" | "application/apply-patch+yaml" => {
                    patch::strategic_merge(&mut patched, &patch, t.rt.kind)?
                }
                other => {
                    return Err(ApiError::UnsupportedMediaType(format!(
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other})"
                    )));
                }
            }
            if !precondition {
                patched["metadata"]["resourceVersion"] =
                    current["metadata"]["resourceVersion"].clone();
            }
            match self.update_object(t, patched, dry_run, false) {
                Err(ApiError::Conflict { .. }) if !precondition && attempts < 16 => continue,
                result => return result.map(|(_, o)| o),
            }
        }
    }

    fn delete_object(&self, t: &Target, options: &Value, dry_run: bool) -> ApiResult<Value> {
        let name = t.name.clone().unwrap_or_default();
        let ns = t.namespace.clone().unwrap_or_default();
        let key = (ns.clone(), name.clone());
        let mut store = self.0.store.write();
        let old = store
            .get(t.rt.storage_key(), &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(t.rt.plural, &name))?;
        for (pre, field) in [("uid", "uid"), ("resourceVersion", "resourceVersion")] {
            if let Some(want) = options
                .pointer(&format!("/preconditions/{pre}"))
                .and_then(Value::as_str)
                && Some(want) != meta_str(&old, field)
            {
                return Err(ApiError::Conflict {
                    kind: t.rt.plural.to_string(),
                    name,
                    message: format!(
                        "Precondition failed: {pre} in precondition does not match the object"
                    ),
                });
            }
        }
        if dry_run {
            return Ok(external(t.rt, &old));
        }
        let has_finalizers = old
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let result = if t.rt.kind == "Namespace" && t.rt.group.is_empty() {
            let now = now_rfc3339(&self.0.config.ambient);
            let marked = Self::delete_namespace(&mut store, &name, old, &now);
            Self::finish_namespace_deletion(&mut store, &name);
            marked
        } else if has_finalizers {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                old
            } else {
                let mut marked = old;
                marked["metadata"]["deletionTimestamp"] =
                    json!(now_rfc3339(&self.0.config.ambient));
                marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
                store.put(t.rt.storage_key(), key, marked, ChangeKind::Modified)
            }
        } else {
            store.remove(t.rt.storage_key(), &key).unwrap_or(old)
        };
        Self::finish_namespace_deletion(&mut store, &ns);
        drop(store);
        self.notify();
        Ok(external(t.rt, &result))
    }

    /// Marks the namespace terminating and deletes what is in it; objects with finalizers
    /// keep it alive until they are gone.
    fn delete_namespace(store: &mut Store, name: &str, old: Value, now: &str) -> Value {
        let mut marked = old;
        if marked.pointer("/metadata/deletionTimestamp").is_none() {
            marked["metadata"]["deletionTimestamp"] = json!(now);
        }
        marked["status"]["phase"] = json!("Terminating");
        let marked = store.put(
            "namespaces",
            (String::new(), name.to_string()),
            marked,
            ChangeKind::Modified,
        );
        for rt in RESOURCES.iter().filter(|r| r.namespaced) {
            let keys: Vec<(Key, bool, bool)> = store
                .list(rt.storage_key(), Some(name))
                .map(|(k, v)| {
                    let fin = v
                        .pointer("/metadata/finalizers")
                        .and_then(Value::as_array)
                        .is_some_and(|f| !f.is_empty());
                    let marked = v.pointer("/metadata/deletionTimestamp").is_some();
                    (k.clone(), fin, marked)
                })
                .collect();
            for (key, finalizers, already) in keys {
                if !finalizers {
                    store.remove(rt.storage_key(), &key);
                } else if !already && let Some(mut obj) = store.get(rt.storage_key(), &key).cloned()
                {
                    obj["metadata"]["deletionTimestamp"] = json!(now);
                    store.put(rt.storage_key(), key, obj, ChangeKind::Modified);
                }
            }
        }
        marked
    }

    /// Removes a terminating namespace once nothing is left in it.
    fn finish_namespace_deletion(store: &mut Store, ns: &str) {
        if ns.is_empty() {
            return;
        }
        let key = (String::new(), ns.to_string());
        let terminating = store
            .get("namespaces", &key)
            .is_some_and(|n| n.pointer("/metadata/deletionTimestamp").is_some());
        if !terminating {
            return;
        }
        let empty = RESOURCES
            .iter()
            .filter(|r| r.namespaced)
            .all(|r| store.list(r.storage_key(), Some(ns)).next().is_none());
        if empty {
            store.remove("namespaces", &key);
        }
    }
}

/// `stringData` is write-only: its entries go base64-encoded into `data`, as on a real
/// server.
fn merge_string_data(obj: &mut Value) {
    let Some(Value::Object(string_data)) = obj.as_object_mut().and_then(|m| m.remove("stringData"))
    else {
        return;
    };
    if !obj.get("data").is_some_and(Value::is_object) {
        obj["data"] = json!({});
    }
    for (k, v) in string_data {
        let text = v.as_str().unwrap_or_default();
        obj["data"][k] = json!(super::protobuf::base64(text.as_bytes()));
    }
}

fn items_last_key(items: &[(Key, Value)]) -> Key {
    items.last().map(|(k, _)| k.clone()).unwrap_or_default()
}

// ---- HTTP ------------------------------------------------------------------------------

fn json_response(code: StatusCode, v: &Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// Parses `/api/v1/...` and `/apis/{group}/{version}/...` resource paths.
fn parse_target(segments: &[&str]) -> Option<Target> {
    let (group, version, rest) = match segments {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let find = |plural: &str| registry::find(group, version, plural);
    let t = |rt, ns: Option<&str>, name: Option<&str>, sub: Option<&str>| Target {
        rt,
        namespace: ns.map(str::to_string),
        name: name.map(str::to_string),
        sub: sub.map(str::to_string),
    };
    match rest {
        [plural] => Some(t(find(plural)?, None, None, None)),
        ["namespaces", ns, plural] if *plural != "status" && *plural != "finalize" => {
            let rt = find(plural)?;
            rt.namespaced.then(|| t(rt, Some(ns), None, None))
        }
        ["namespaces", ns, plural, name] => {
            let rt = find(plural)?;
            rt.namespaced.then(|| t(rt, Some(ns), Some(name), None))
        }
        ["namespaces", ns, plural, name, sub] => {
            let rt = find(plural)?;
            rt.namespaced
                .then(|| t(rt, Some(ns), Some(name), Some(sub)))
        }
        [plural, name] => {
            let rt = find(plural)?;
            (!rt.namespaced).then(|| t(rt, None, Some(name), None))
        }
        [plural, name, sub] => {
            let rt = find(plural)?;
            (!rt.namespaced).then(|| t(rt, None, Some(name), Some(sub)))
        }
        _ => None,
    }
}

fn decode_body(headers: &HeaderMap, body: &[u8]) -> ApiResult<Value> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("application/json");
    if ct.starts_with("application/vnd.kubernetes.protobuf") {
        return super::protobuf::decode_body(body).map_err(|e| ApiError::BadRequest(e.to_string()));
    }
    if ct.starts_with("application/yaml") {
        return serde_yaml_ng::from_slice(body)
            .map_err(|e| ApiError::BadRequest(format!("invalid YAML: {e}")));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(format!("invalid JSON: {e}")))
}

/// The single entry point: everything under `/` is routed here.
pub async fn handle(
    State(srv): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let user = match rbac::authenticate(
        &srv.0.store.read(),
        headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok()),
    ) {
        Some(user) => user,
        None if srv.0.config.rbac => return ApiError::Unauthorized.into_response(),
        None => rbac::User::anonymous(),
    };
    // Non-resource paths.
    if srv.0.config.rbac && parse_target(&segments).is_none() {
        let verb = method.as_str().to_ascii_lowercase();
        let request = rbac::Request::NonResource {
            verb: &verb,
            path: &path,
        };
        if !rbac::allows(&srv.0.store.read(), &user, &request) {
            return ApiError::Forbidden(rbac::denied_message(&user, &request)).into_response();
        }
    }
    let fixed = match (method.as_str(), segments.as_slice()) {
        ("GET", ["version"]) => Some(Ok(discovery::version())),
        ("GET", ["healthz"] | ["readyz"] | ["livez"]) => {
            return (StatusCode::OK, "ok").into_response();
        }
        ("GET", ["api"]) => Some(Ok(discovery::core_versions(&srv.0.address.lock()))),
        ("GET", ["apis"]) => Some(Ok(discovery::group_list())),
        ("GET", ["api", v]) => {
            Some(discovery::resource_list("", v).ok_or(ApiError::UnknownResource))
        }
        ("GET", ["apis", g]) => Some(discovery::group(g).ok_or(ApiError::UnknownResource)),
        ("GET", ["apis", g, v]) => {
            Some(discovery::resource_list(g, v).ok_or(ApiError::UnknownResource))
        }
        ("GET", ["openapi", ..]) => {
            return super::openapi_response(&segments, &headers, uri.query());
        }
        _ => None,
    };
    if let Some(result) = fixed {
        return match result {
            Ok(v) => json_response(StatusCode::OK, &v),
            Err(e) => e.into_response(),
        };
    }
    let Some(target) = parse_target(&segments) else {
        return ApiError::UnknownResource.into_response();
    };
    let params = Params::parse(uri.query());
    let format = tables::negotiate(
        headers
            .get(header::ACCEPT)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default(),
    );
    let verb = match (&method, target.name.is_some()) {
        (&Method::GET, false) if params.watch => "watch",
        (&Method::GET, false) => "list",
        (&Method::GET, true) => "get",
        (&Method::POST, false) => "create",
        (&Method::PUT, true) => "update",
        (&Method::PATCH, true) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "unsupported",
    };
    let record = |code: StatusCode| RequestRecord {
        verb: verb.to_string(),
        group: target.rt.group.to_string(),
        resource: target.rt.plural.to_string(),
        subresource: target.sub.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone(),
        user_agent: user_agent.clone(),
        user: user.name.clone(),
        code: code.as_u16(),
    };
    if srv.0.config.rbac {
        let request = rbac::Request::Resource {
            verb,
            group: target.rt.group,
            resource: target.rt.plural,
            subresource: target.sub.as_deref(),
            namespace: target.namespace.as_deref(),
            name: target.name.as_deref(),
        };
        if !rbac::allows(&srv.0.store.read(), &user, &request) {
            let e = ApiError::Denied {
                message: rbac::denied_message(&user, &request),
                name: target.name.clone(),
                group: target.rt.group.to_string(),
                resource: target.rt.plural.to_string(),
            };
            srv.0.requests.lock().push(record(e.code()));
            return e.into_response();
        }
    }
    if let Some(sub) = &target.sub
        && !(sub == "status" && target.rt.status)
    {
        let e = ApiError::UnknownResource;
        srv.0.requests.lock().push(record(e.code()));
        return e.into_response();
    }
    if verb == "watch" {
        srv.0.requests.lock().push(record(StatusCode::OK));
        return watch_response(srv.clone(), target, params, format);
    }
    let result: ApiResult<(StatusCode, Value)> = match verb {
        "list" => srv.list(&target, &params).map(|v| (StatusCode::OK, v)),
        "get" => srv.get(&target).map(|v| (StatusCode::OK, v)),
        "create" => decode_body(&headers, &body).and_then(|b| {
            strict_check(target.rt, &b, &params)?;
            srv.create_object(target.rt, target.namespace.as_deref(), b, params.dry_run)
                .map(|v| (StatusCode::CREATED, v))
        }),
        "update" => decode_body(&headers, &body).and_then(|b| {
            strict_check(target.rt, &b, &params)?;
            srv.update_object(&target, b, params.dry_run, false)
        }),
        "patch" => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default()
                .to_string();
            if params.strict && !ct.starts_with("application/json-patch+json") {
                // Merge and strategic patches have the object's shape.
                let patch = if ct.starts_with("application/apply-patch+yaml") {
                    serde_yaml_ng::from_slice(&body).ok()
                } else {
                    serde_json::from_slice(&body).ok()
                };
                if let Some(patch) = patch
                    && let Err(e) = strict_check(target.rt, &patch, &params)
                {
                    srv.0.requests.lock().push(record(e.code()));
                    return e.into_response();
                }
            }
            srv.patch_object(&target, &ct, &body, params.dry_run)
                .map(|v| (StatusCode::OK, v))
        }
        "delete" => decode_body(&headers, &body).and_then(|opts| {
            srv.delete_object(&target, &opts, params.dry_run)
                .map(|v| (StatusCode::OK, v))
        }),
        "deletecollection" => srv.list(&target, &params).and_then(|list| {
            for item in list["items"].as_array().into_iter().flatten() {
                let one = Target {
                    name: meta_str(item, "name").map(str::to_string),
                    namespace: meta_str(item, "namespace").map(str::to_string),
                    ..target.clone()
                };
                srv.delete_object(&one, &json!({}), params.dry_run)?;
            }
            Ok((
                StatusCode::OK,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
            ))
        }),
        _ => Err(ApiError::MethodNotAllowed),
    };
    match result {
        Ok((code, v)) => {
            srv.0.requests.lock().push(record(code));
            let v = match verb {
                "list" | "get" => render(target.rt, verb == "list", v, format, &params),
                _ => v,
            };
            json_response(code, &v)
        }
        Err(e) => {
            srv.0.requests.lock().push(record(e.code()));
            e.into_response()
        }
    }
}

/// `fieldValidation=Strict`: fields the type's OpenAPI schema does not know are a 400, with
/// the real server's message. Keys starting with `$` (strategic-merge directives) are skipped.
fn strict_check(rt: &ResourceType, body: &Value, params: &Params) -> ApiResult<()> {
    if !params.strict {
        return Ok(());
    }
    let doc = super::openapi::v2_json();
    let Some(defs) = doc.get("definitions").and_then(Value::as_object) else {
        return Ok(());
    };
    let wanted = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let Some(schema) = defs.values().find(|d| {
        d.get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .is_some_and(|g| g.contains(&wanted))
    }) else {
        return Ok(());
    };
    let mut unknown = Vec::new();
    unknown_fields(defs, schema, body, "", &mut unknown, 0);
    if unknown.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    Err(ApiError::BadRequest(format!(
        "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
        list.join(", "),
        kind = rt.kind,
        v = rt.version,
    )))
}

fn unknown_fields(
    defs: &serde_json::Map<String, Value>,
    schema: &Value,
    v: &Value,
    path: &str,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    // Follow `$ref` (also when wrapped in `allOf`).
    let reference = schema.get("$ref").or_else(|| {
        schema
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|s| s.get("$ref"))
    });
    if let Some(name) = reference
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
    {
        if let Some(target) = defs.get(name) {
            unknown_fields(defs, target, v, path, out, depth + 1);
        }
        return;
    }
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true)) {
                return;
            }
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, child) in map.iter().filter(|(k, _)| !k.starts_with('$')) {
                    match props.get(k) {
                        Some(s) => unknown_fields(defs, s, child, &join(k), out, depth + 1),
                        None => out.push(join(k)),
                    }
                }
            } else if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for (k, child) in map.iter().filter(|(k, _)| !k.starts_with('$')) {
                    unknown_fields(defs, ap, child, &join(k), out, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, child) in items.iter().enumerate() {
                    unknown_fields(defs, item, child, &format!("{path}[{i}]"), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// A GET answer in the format `Accept` asked for: a Table (server-side printing, as
/// `kubectl get` asks for), `PartialObjectMetadata(List)`, or the object / list itself.
fn render(rt: &ResourceType, list: bool, v: Value, format: Format, params: &Params) -> Value {
    match (format, list) {
        (Format::Json, _) => v,
        (Format::Table(version), true) => {
            tables::list_table(rt, &v, params.include_object, version)
        }
        (Format::Table(version), false) => {
            tables::object_table(rt, &v, params.include_object, version)
        }
        (Format::Metadata(version), true) => tables::partial_metadata_list(&v, version),
        (Format::Metadata(version), false) => tables::partial_metadata(&v, version),
    }
}

// ---- watch -----------------------------------------------------------------------------

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

/// Encodes watch events in the negotiated format. Table events carry one row each, and only
/// the first one carries the column definitions (as on a real server); BOOKMARKs become an
/// empty Table or `PartialObjectMetadata` with the resourceVersion.
struct WatchEncoder {
    rt: &'static ResourceType,
    format: Format,
    include: IncludeObject,
    headers_sent: bool,
}

impl WatchEncoder {
    fn line(&mut self, kind: &str, object: &Value) -> Bytes {
        match self.format {
            Format::Json => event_line(kind, object),
            Format::Metadata(version) => {
                event_line(kind, &tables::partial_metadata(object, version))
            }
            Format::Table(version) => {
                let metadata = json!({"resourceVersion": object
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(json!(""))});
                let objects = if kind == "BOOKMARK" {
                    Vec::new()
                } else {
                    vec![object.clone()]
                };
                let headers = !self.headers_sent;
                self.headers_sent = true;
                let table =
                    tables::table(self.rt, &objects, metadata, self.include, version, headers);
                event_line(kind, &table)
            }
        }
    }
}

fn watch_response(srv: Shared, target: Target, params: Params, format: Format) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(async move {
        let enc = WatchEncoder {
            rt: target.rt,
            format,
            include: params.include_object,
            headers_sent: false,
        };
        if let Err(e) = watch_loop(srv, target, params, enc, tx.clone()).await {
            let _ = tx.send(event_line("ERROR", &e.status())).await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn watch_loop(
    srv: Shared,
    target: Target,
    params: Params,
    mut enc: WatchEncoder,
    tx: mpsc::Sender<Bytes>,
) -> ApiResult<()> {
    let labels = LabelSelector::parse(params.label_selector.as_deref().unwrap_or_default())?;
    let fields = FieldSelector::parse(params.field_selector.as_deref().unwrap_or_default())?;
    let matches = |obj: &Value| {
        let ext = external(target.rt, obj);
        let in_ns = target
            .namespace
            .as_deref()
            .is_none_or(|ns| meta_str(&ext, "namespace") == Some(ns));
        in_ns && labels.matches(&ext) && fields.matches(&ext)
    };
    let storage = target.rt.storage_key();
    let mut changed = srv.0.changed.subscribe();
    let requested: Option<u64> = match params.resource_version.as_deref() {
        None | Some("") | Some("0") => None,
        Some(s) => Some(
            s.parse()
                .map_err(|_| ApiError::BadRequest(format!("invalid resourceVersion \"{s}\"")))?,
        ),
    };
    // Computed without awaiting: the store's lock guard must not live across an await.
    let (initial, start_rv) = {
        let store = srv.0.store.read();
        match requested {
            None => {
                // Start with the current objects, as a real server does for "0" / unset.
                let mut initial = Vec::new();
                for (_, obj) in store.list(storage, target.namespace.as_deref()) {
                    if matches(obj) {
                        initial.push(enc.line("ADDED", &external(target.rt, obj)));
                    }
                }
                if params.send_initial_events {
                    initial.push(enc.line(
                        "BOOKMARK",
                        &json!({"kind": target.rt.kind, "apiVersion": target.rt.api_version(),
                                "metadata": {"resourceVersion": store.rv.to_string(),
                                             "annotations": {"k8s.io/initial-events-end": "true"}}}),
                    ));
                }
                (initial, store.rv)
            }
            Some(rv) => {
                if store.changes_after(rv).is_none() {
                    return Err(ApiError::Gone {
                        requested: rv,
                        oldest: store.compacted_rv,
                    });
                }
                (Vec::new(), rv)
            }
        }
    };
    for line in initial {
        if tx.send(line).await.is_err() {
            return Ok(());
        }
    }
    let mut last = start_rv;
    let timeout = params
        .timeout
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let deadline = tokio::time::Instant::now() + timeout;
    // Bookmarks come on a fixed beat, whatever else happens on the server.
    let mut bookmark_beat = tokio::time::interval_at(
        tokio::time::Instant::now() + srv.0.config.bookmark_interval,
        srv.0.config.bookmark_interval,
    );
    bookmark_beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Drain what happened since `last`.
        let (lines, now_rv) = {
            let store = srv.0.store.read();
            let Some(changes) = store.changes_after(last) else {
                return Err(ApiError::Gone {
                    requested: last,
                    oldest: store.compacted_rv,
                });
            };
            let mut lines = Vec::new();
            for c in changes.filter(|c| c.storage == storage) {
                let now_in = matches(&c.object);
                let was_in = c.previous.as_ref().is_some_and(&matches);
                let kind = match (c.kind, was_in, now_in) {
                    (ChangeKind::Deleted, true, _) => Some("DELETED"),
                    (ChangeKind::Deleted, false, _) => None,
                    (ChangeKind::Added, _, true) => Some("ADDED"),
                    (ChangeKind::Modified, true, true) => Some("MODIFIED"),
                    (ChangeKind::Modified, false, true) => Some("ADDED"),
                    (ChangeKind::Modified, true, false) => Some("DELETED"),
                    _ => None,
                };
                if let Some(kind) = kind {
                    lines.push(enc.line(kind, &external(target.rt, &c.object)));
                }
            }
            (lines, store.rv)
        };
        for line in lines {
            if tx.send(line).await.is_err() {
                return Ok(());
            }
        }
        last = now_rv;
        tokio::select! {
            // One order of checks, so a simulated run is the same each time.
            biased;
            r = changed.changed() => {
                if r.is_err() {
                    return Ok(());
                }
            }
            _ = bookmark_beat.tick(), if params.bookmarks => {
                let bookmark = json!({"kind": target.rt.kind, "apiVersion": target.rt.api_version(),
                                      "metadata": {"resourceVersion": last.to_string()}});
                if tx.send(enc.line("BOOKMARK", &bookmark)).await.is_err() {
                    return Ok(());
                }
            }
            _ = tokio::time::sleep_until(deadline) => return Ok(()),
            _ = tx.closed() => return Ok(()),
        }
    }
}

// ---- the running server -----------------------------------------------------------------

/// The whole HTTP surface over `shared`, for a socket or for in-process callers.
pub fn router(shared: Shared) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

/// An embedded API server listening on a socket.
pub struct ApiServer {
    shared: Shared,
    addr: SocketAddr,
    /// The certificate clients trust (PEM), when it serves HTTPS.
    ca_pem: Option<String>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ApiServer {
    pub async fn start(config: ApiServerConfig) -> std::io::Result<ApiServer> {
        let identity = if config.tls {
            Some(super::tls::Identity::self_signed().map_err(std::io::Error::other)?)
        } else {
            None
        };
        let listener = tokio::net::TcpListener::bind(config.listen).await?;
        let addr = listener.local_addr()?;
        let shared = Shared::new(config);
        *shared.0.address.lock() = addr.to_string();
        let app = router(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let ca_pem = identity.as_ref().map(|i| i.cert_pem.clone());
        let task = match identity {
            Some(identity) => tokio::spawn(super::tls::serve(listener, app, identity, rx)),
            None => tokio::spawn(async move {
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
                if let Err(e) = served {
                    tracing::error!(error = %e, "API server stopped");
                }
            }),
        };
        Ok(ApiServer {
            shared,
            addr,
            ca_pem,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// `https://127.0.0.1:PORT` (`http://` without TLS).
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The certificate to trust (PEM), when the server speaks HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// An HTTP client that trusts this server.
    pub fn http_client(&self) -> reqwest::Client {
        let mut builder = reqwest::Client::builder();
        if let Some(cert) = self
            .ca_pem
            .as_deref()
            .and_then(|pem| reqwest::Certificate::from_pem(pem.as_bytes()).ok())
        {
            builder = builder.add_root_certificate(cert);
        }
        builder.build().unwrap_or_default()
    }

    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// A kubeconfig for this server as the administrator (context `embedded`, namespace
    /// `default`).
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_with_token(super::rbac::ADMIN_TOKEN, "default")
    }

    /// A kubeconfig for this server with `token`, its context in `namespace`.
    pub fn kubeconfig_with_token(&self, token: &str, namespace: &str) -> String {
        use base64::Engine;
        let ca = match &self.ca_pem {
            Some(pem) => format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(pem)
            ),
            None => String::new(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: embedded\n  cluster:\n    server: {}\n{ca}contexts:\n- name: embedded\n  context:\n    cluster: embedded\n    user: embedded\n    namespace: {namespace}\ncurrent-context: embedded\nusers:\n- name: embedded\n  user:\n    token: {token}\n",
            self.url()
        )
    }

    /// Writes the kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Watches are long-lived: do not wait for them.
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
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
