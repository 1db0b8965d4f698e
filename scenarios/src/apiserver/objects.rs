//! What the REST verbs do to stored objects, with a real API server's semantics:
//! resource versions, generation, finalizers, dry runs, list paging and selectors.

use super::registry::{self, RESOURCES, ResourceType};
use super::selectors::{FieldSelector, LabelSelector};
use super::server::*;
use super::status::{ApiError, ApiResult};
use super::store::{ChangeKind, Key, Store};
use super::{patch, rbac, services};
use axum::http::StatusCode;
use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::watch;

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

    pub(super) fn notify(&self) {
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
        // From the borrowed value: no copy of the object first.
        self.read_object(storage, namespace, name, |v| {
            <T as serde::Deserialize>::deserialize(v).ok()
        })
        .flatten()
    }

    /// Reads one stored object in place (`None`: no such object), for callers that need a
    /// field or two and not the whole typed object.
    pub fn read_object<R>(
        &self,
        storage: &str,
        namespace: &str,
        name: &str,
        read: impl FnOnce(&Value) -> R,
    ) -> Option<R> {
        let store = self.0.store.read();
        store
            .get(storage, &(namespace.to_string(), name.to_string()))
            .map(read)
    }

    /// Every stored object of one type (`services`, `nodes`, `endpointslices`, `events`, ...)
    /// that parses as `T`, in namespace and name order.
    pub fn objects<T: serde::de::DeserializeOwned>(&self, storage: &str) -> Vec<T> {
        let store = self.0.store.read();
        store
            .list(storage, None)
            .filter_map(|(_, v)| <T as serde::Deserialize>::deserialize(v).ok())
            .collect()
    }

    /// How many objects of one type are stored.
    pub fn count(&self, storage: &str) -> usize {
        self.0.store.read().list(storage, None).count()
    }

    /// How many changes the watch history holds (at most `ApiServerConfig::history_limit`).
    pub fn history_len(&self) -> usize {
        self.0.store.read().history_len()
    }

    /// How many requests were recorded (since the start or the last clear).
    pub fn request_count(&self) -> usize {
        self.0.requests.lock().len()
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

    pub(super) fn get(&self, t: &Target) -> ApiResult<Value> {
        self.read_target(t, |o| external(t.rt, o))
    }

    /// [`Self::get`] as the JSON text of the answer, written from the stored object without
    /// copying it (Leases are read every 2 s per standby CCM); `None` for the kinds that are
    /// converted on the way out.
    pub(super) fn get_json(&self, t: &Target) -> Option<ApiResult<String>> {
        (t.rt.group != "events.k8s.io").then(|| {
            self.read_target(t, |obj| {
                serde_json::to_string(&External { rt: t.rt, obj })
                    .unwrap_or_else(|_| external(t.rt, obj).to_string())
            })
        })
    }

    /// Reads the object `t` names in place; 404 when there is none.
    fn read_target<R>(&self, t: &Target, read: impl FnOnce(&Value) -> R) -> ApiResult<R> {
        let name = t.name.as_deref().unwrap_or_default();
        let ns = t.namespace.as_deref().unwrap_or_default();
        self.read_object(t.rt.storage_key(), ns, name, read)
            .ok_or_else(|| ApiError::not_found(&t.rt.qualified_resource(), name))
    }

    pub(super) fn list(&self, t: &Target, p: &Params) -> ApiResult<Value> {
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

    pub(super) fn namespace_exists(store: &Store, ns: &str) -> bool {
        store
            .get("namespaces", &(String::new(), ns.to_string()))
            .is_some()
    }

    /// Kind-specific defaulting, validation and allocation (`now`: the request's time).
    pub(super) fn prepare(
        store: &Store,
        rt: &ResourceType,
        new: &mut Value,
        old: Option<&Value>,
        now: &str,
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
            ("apps", kind @ ("Deployment" | "ReplicaSet" | "DaemonSet")) => {
                super::apps::prepare(kind, new, old)
            }
            ("batch", "Job") => super::batch::prepare_job(new, old),
            ("batch", "CronJob") => super::batch::prepare_cron_job(new),
            ("", "ReplicationController") => super::replication::prepare(new),
            ("apiregistration.k8s.io", "APIService") => {
                let service = |k: &str| {
                    new.pointer(&format!("/spec/service/{k}"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                let key = (service("namespace"), service("name"));
                let exists = store.get("services", &key).is_some();
                super::apiservices::prepare(new, exists, now)
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
        check_create_body(rt, &body)?;
        let mut obj = internal(rt, body);
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = json!({});
        }
        let ns = place_in_namespace(rt, &mut obj, namespace)?;
        let name = self.creation_name(rt, &obj)?;
        obj["metadata"]["name"] = json!(name);
        let mut store = self.0.store.write();
        Self::check_namespace_open(&store, rt, &ns, &name)?;
        let key = (ns.clone(), name.clone());
        if store.get(rt.storage_key(), &key).is_some() {
            return Err(ApiError::AlreadyExists {
                kind: rt.qualified_resource(),
                name,
            });
        }
        self.stamp_creation(rt, &mut obj);
        Self::prepare(
            &store,
            rt,
            &mut obj,
            None,
            &now_rfc3339(&self.0.config.ambient),
        )?;
        if dry_run {
            return Ok(external(rt, &obj));
        }
        let stored = store.put(rt.storage_key(), key, obj, ChangeKind::Added);
        drop(store);
        self.notify();
        Ok(external(rt, &stored))
    }

    /// The name of an object to create: its own, or one generated from `generateName`.
    fn creation_name(&self, rt: &ResourceType, obj: &Value) -> ApiResult<String> {
        match (meta_str(obj, "name"), meta_str(obj, "generateName")) {
            (Some(n), _) if !n.is_empty() => Ok(n.to_string()),
            (_, Some(g)) if !g.is_empty() => {
                Ok(format!("{g}{}", random_suffix(&self.0.config.ambient)))
            }
            _ => Err(ApiError::invalid(
                &rt.qualified_kind(),
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )),
        }
    }

    /// A namespaced object is created only in a namespace that exists and is not being
    /// terminated.
    fn check_namespace_open(
        store: &Store,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> ApiResult<()> {
        if rt.namespaced && !Self::namespace_exists(store, ns) {
            return Err(ApiError::not_found("namespaces", ns));
        }
        if rt.namespaced
            && store
                .get("namespaces", &(String::new(), ns.to_string()))
                .is_some_and(|n| n.pointer("/metadata/deletionTimestamp").is_some())
        {
            return Err(ApiError::Denied {
                message: format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    rt.qualified_resource()
                ),
                name: Some(name.to_string()),
                group: rt.group.to_string(),
                resource: rt.plural.to_string(),
            });
        }
        Ok(())
    }

    /// The metadata the server sets on a new object.
    fn stamp_creation(&self, rt: &ResourceType, obj: &mut Value) {
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
    }

    /// Update (PUT) or the second half of a PATCH: `new` replaces the object (or, for the
    /// status subresource, its status only).
    pub(super) fn update_object(
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
        let Some(old) = store.get_shared(t.rt.storage_key(), &key) else {
            drop(store);
            if create_if_missing && !status_only {
                let obj = self.create_object(t.rt, t.namespace.as_deref(), body, dry_run)?;
                return Ok((StatusCode::CREATED, obj));
            }
            return Err(ApiError::not_found(&t.rt.qualified_resource(), &name));
        };
        let incoming = internal(t.rt, body);
        check_update_preconditions(t.rt, &incoming, &old, &name)?;
        let mut new = if status_only {
            let mut o = (*old).clone();
            o["status"] = incoming.get("status").cloned().unwrap_or(json!({}));
            o
        } else {
            self.replacement(&store, t.rt, incoming, &old)?
        };
        keep_type_and_version(t.rt, &mut new, &old);
        if new == *old || dry_run {
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
                .unwrap_or_else(|| Arc::new(Value::Null))
        } else {
            store.put(t.rt.storage_key(), key, new, ChangeKind::Modified)
        };
        Self::finish_namespace_deletion(&mut store, &ns);
        drop(store);
        self.notify();
        Ok((StatusCode::OK, external(t.rt, &result)))
    }

    /// The object a full update (not of the status only) stores: `incoming` with the
    /// server-owned fields of `old`, prepared, its generation bumped when the spec changed.
    fn replacement(
        &self,
        store: &Store,
        rt: &ResourceType,
        incoming: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        let mut o = incoming;
        if rt.status {
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
        Self::prepare(
            store,
            rt,
            &mut o,
            Some(old),
            &now_rfc3339(&self.0.config.ambient),
        )?;
        if has_generation(rt) && o.get("spec") != old.get("spec") {
            let g = old["metadata"]["generation"].as_i64().unwrap_or(1);
            o["metadata"]["generation"] = json!(g + 1);
        }
        Ok(o)
    }

    pub(super) fn patch_object(
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

    pub(super) fn delete_object(
        &self,
        t: &Target,
        options: &Value,
        dry_run: bool,
    ) -> ApiResult<Value> {
        let name = t.name.clone().unwrap_or_default();
        let ns = t.namespace.clone().unwrap_or_default();
        let key = (ns.clone(), name.clone());
        let mut store = self.0.store.write();
        let old = store
            .get(t.rt.storage_key(), &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&t.rt.qualified_resource(), &name))?;
        for (pre, field) in [("uid", "uid"), ("resourceVersion", "resourceVersion")] {
            if let Some(want) = options
                .pointer(&format!("/preconditions/{pre}"))
                .and_then(Value::as_str)
                && Some(want) != meta_str(&old, field)
            {
                return Err(ApiError::Conflict {
                    kind: t.rt.qualified_resource(),
                    name,
                    message: format!(
                        "Precondition failed: {pre} in precondition does not match the object"
                    ),
                });
            }
        }
        let policy = super::propagation::policy(t.rt, options)?;
        if dry_run {
            return Ok(external(t.rt, &old));
        }
        // Cascading deletion: the owner waits for the garbage collector under a finalizer
        // (`propagation.rs`); without dependents there is nothing to wait for.
        let gc_finalizer = policy.finalizer().filter(|_| {
            super::propagation::has_dependents(&store, meta_str(&old, "uid").unwrap_or(""))
        });
        let mut old = old;
        if let Some(f) = gc_finalizer {
            old["metadata"]["finalizers"] = super::propagation::with_finalizer(&old, f);
        }
        let has_finalizers = old
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let result = if t.rt.kind == "Namespace" && t.rt.group.is_empty() {
            let now = now_rfc3339(&self.0.config.ambient);
            let marked = Self::delete_namespace(&mut store, &name, old, &now);
            Self::finish_namespace_deletion(&mut store, &name);
            Arc::new(marked)
        } else if has_finalizers {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                if gc_finalizer.is_some() {
                    store.put(t.rt.storage_key(), key, old, ChangeKind::Modified)
                } else {
                    Arc::new(old)
                }
            } else {
                let mut marked = old;
                marked["metadata"]["deletionTimestamp"] =
                    json!(now_rfc3339(&self.0.config.ambient));
                marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
                store.put(t.rt.storage_key(), key, marked, ChangeKind::Modified)
            }
        } else {
            store
                .remove(t.rt.storage_key(), &key)
                .unwrap_or_else(|| Arc::new(old))
        };
        Self::finish_namespace_deletion(&mut store, &ns);
        drop(store);
        self.notify();
        Ok(external(t.rt, &result))
    }

    /// Marks the namespace terminating and deletes what is in it; objects with finalizers
    /// keep it alive until they are gone.
    pub(super) fn delete_namespace(store: &mut Store, name: &str, old: Value, now: &str) -> Value {
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
        Arc::unwrap_or_clone(marked)
    }

    /// Removes a terminating namespace once nothing is left in it.
    pub(super) fn finish_namespace_deletion(store: &mut Store, ns: &str) {
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
pub(super) fn merge_string_data(obj: &mut Value) {
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

pub(super) fn items_last_key(items: &[(Key, Value)]) -> Key {
    items.last().map(|(k, _)| k.clone()).unwrap_or_default()
}

/// A created object's body must be an object of the resource's kind (or of none).
fn check_create_body(rt: &ResourceType, body: &Value) -> ApiResult<()> {
    if !body.is_object() {
        return Err(ApiError::BadRequest(
            "the body must be a JSON object".into(),
        ));
    }
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && kind != rt.kind
    {
        return Err(ApiError::BadRequest(format!(
            "the kind \"{kind}\" does not match the resource {}",
            rt.plural
        )));
    }
    Ok(())
}

/// Sets a new object's namespace from the request's (refusing another one in the body), or
/// drops it for a cluster-scoped kind. Returns it (empty for cluster-scoped).
fn place_in_namespace(
    rt: &ResourceType,
    obj: &mut Value,
    namespace: Option<&str>,
) -> ApiResult<String> {
    if !rt.namespaced {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        return Ok(String::new());
    }
    let ns = namespace.ok_or(ApiError::MethodNotAllowed)?;
    if let Some(body_ns) = meta_str(obj, "namespace")
        && !body_ns.is_empty()
        && body_ns != ns
    {
        return Err(ApiError::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        ));
    }
    obj["metadata"]["namespace"] = json!(ns);
    Ok(ns.to_string())
}

/// An update must name the object of the URL, and any resource version or uid it carries
/// must be the stored object's.
fn check_update_preconditions(
    rt: &ResourceType,
    incoming: &Value,
    old: &Value,
    name: &str,
) -> ApiResult<()> {
    if let Some(n) = meta_str(incoming, "name")
        && n != name
    {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(rv) = meta_str(incoming, "resourceVersion")
        && !rv.is_empty()
        && rv != meta_str(old, "resourceVersion").unwrap_or_default()
    {
        return Err(ApiError::Conflict {
            kind: rt.qualified_resource(),
            name: name.to_string(),
            message: "the object has been modified; please apply your changes to the latest version and try again".into(),
        });
    }
    if let Some(uid) = meta_str(incoming, "uid")
        && !uid.is_empty()
        && Some(uid) != meta_str(old, "uid")
    {
        return Err(ApiError::Conflict {
            kind: rt.qualified_resource(),
            name: name.to_string(),
            message: "Precondition failed: UID in precondition does not match the object".into(),
        });
    }
    Ok(())
}

/// An update keeps the stored object's apiVersion, kind and resource version (the store
/// gives it the next one).
fn keep_type_and_version(rt: &ResourceType, new: &mut Value, old: &Value) {
    if let Some(m) = new.as_object_mut() {
        m.insert(
            "apiVersion".into(),
            old.get("apiVersion")
                .cloned()
                .unwrap_or(json!(rt.api_version())),
        );
        m.insert(
            "kind".into(),
            old.get("kind").cloned().unwrap_or(json!(rt.kind)),
        );
    }
    new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
}
