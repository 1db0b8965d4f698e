//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
//! patch with the merge keys of the served types.
//!
//! Strategic merge follows Kubernetes' struct tags: lists with a merge key are merged element
//! by element (`spec.ports` by `port`, `status.conditions` and `status.addresses` by `type`,
//! `metadata.ownerReferences` by `uid`), `metadata.finalizers` is merged as a set, and every
//! other list is replaced whole. Node `spec.taints` has no patch strategy in Kubernetes, so it
//! is replaced whole, which is what `kubectl taint` relies on to remove a taint. Directives:
//! `$patch: replace|delete`, `$deleteFromPrimitiveList/<field>`, `$retainKeys`;
//! `$setElementOrder/<field>` orders the merged list.

use super::status::ApiError;
use serde_json::{Map, Value};

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    Replace,
    MergeByKey(&'static str),
    MergeSet,
}

/// The strategy of the list at `path` (field names from the object root) in an object of
/// `kind`.
pub fn list_strategy(kind: &str, path: &[String]) -> ListStrategy {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match (kind, p.as_slice()) {
        (_, ["metadata", "finalizers"]) => ListStrategy::MergeSet,
        (_, ["metadata", "ownerReferences"]) => ListStrategy::MergeByKey("uid"),
        ("Service", ["spec", "ports"]) => ListStrategy::MergeByKey("port"),
        ("Node" | "Pod" | "Namespace", ["status", "conditions"]) => {
            ListStrategy::MergeByKey("type")
        }
        ("Node", ["status", "addresses"]) => ListStrategy::MergeByKey("type"),
        ("Pod", ["spec", "containers"]) => ListStrategy::MergeByKey("name"),
        // What `kubectl set image`, `rollout restart` and `apply` of a workload rely on.
        ("Deployment" | "ReplicaSet", ["spec", "template", "spec", "containers"]) => {
            ListStrategy::MergeByKey("name")
        }
        ("Deployment" | "ReplicaSet", ["status", "conditions"]) => ListStrategy::MergeByKey("type"),
        _ => ListStrategy::Replace,
    }
}

/// Removes `$`-directives from a value that is inserted as is.
fn clean(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), clean(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(clean).collect()),
        other => other.clone(),
    }
}

/// Applies a strategic merge patch to `target` (an object of `kind`).
pub fn strategic_merge(target: &mut Value, patch: &Value, kind: &str) -> Result<(), ApiError> {
    if !patch.is_object() {
        return Err(ApiError::BadRequest(
            "a strategic merge patch must be a JSON object".into(),
        ));
    }
    merge_object(target, patch, kind, &mut Vec::new())
}

fn merge_object(
    target: &mut Value,
    patch: &Value,
    kind: &str,
    path: &mut Vec<String>,
) -> Result<(), ApiError> {
    let Some(pmap) = patch.as_object() else {
        *target = clean(patch);
        return Ok(());
    };
    if pmap.get("$patch").and_then(Value::as_str) == Some("replace") {
        *target = clean(patch);
        return Ok(());
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    for (key, value) in pmap {
        if key == "$patch" || key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let remove: Vec<Value> = value.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(list)) = target.get_mut(field) {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        let Some(tmap) = target.as_object_mut() else {
            break;
        };
        match value {
            Value::Null => {
                tmap.remove(key);
            }
            Value::Object(_) => {
                path.push(key.clone());
                let slot = tmap
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                merge_object(slot, value, kind, path)?;
                path.pop();
            }
            Value::Array(items) => {
                path.push(key.clone());
                let strategy = list_strategy(kind, path);
                let slot = tmap
                    .entry(key.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                merge_list(slot, items, strategy, kind, path)?;
                if let Some(order) = pmap
                    .get(&format!("$setElementOrder/{key}"))
                    .and_then(Value::as_array)
                {
                    apply_order(slot, order, strategy);
                }
                path.pop();
            }
            other => {
                tmap.insert(key.clone(), other.clone());
            }
        }
    }
    if let Some(retain) = pmap.get("$retainKeys").and_then(Value::as_array)
        && let Some(tmap) = target.as_object_mut()
    {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        tmap.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(())
}

fn merge_list(
    target: &mut Value,
    items: &[Value],
    strategy: ListStrategy,
    kind: &str,
    path: &mut Vec<String>,
) -> Result<(), ApiError> {
    match strategy {
        ListStrategy::Replace => {
            *target = Value::Array(items.iter().map(clean).collect());
        }
        ListStrategy::MergeSet => {
            let list = ensure_array(target);
            for item in items {
                if !list.contains(item) {
                    list.push(item.clone());
                }
            }
        }
        ListStrategy::MergeByKey(merge_key) => {
            let list = ensure_array(target);
            for item in items {
                let key = item.get(merge_key).cloned();
                let Some(key) = key else {
                    return Err(ApiError::BadRequest(format!(
                        "map: {item} does not contain declared merge key: {merge_key}"
                    )));
                };
                let pos = list.iter().position(|e| e.get(merge_key) == Some(&key));
                let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                match (pos, delete) {
                    (Some(i), true) => {
                        list.remove(i);
                    }
                    (None, true) => {}
                    (Some(i), false) => merge_object(&mut list[i], item, kind, path)?,
                    (None, false) => list.push(clean(item)),
                }
            }
        }
    }
    Ok(())
}

fn ensure_array(v: &mut Value) -> &mut Vec<Value> {
    if !v.is_array() {
        *v = Value::Array(Vec::new());
    }
    match v {
        Value::Array(a) => a,
        _ => unreachable!("just made an array"),
    }
}

/// Orders a merged list as `$setElementOrder` asks; elements it does not name keep their
/// relative order at the end.
fn apply_order(list: &mut Value, order: &[Value], strategy: ListStrategy) {
    let Value::Array(items) = list else { return };
    let key_of = |v: &Value| -> Option<Value> {
        match strategy {
            ListStrategy::MergeByKey(k) => v.get(k).cloned(),
            ListStrategy::MergeSet => Some(v.clone()),
            ListStrategy::Replace => None,
        }
    };
    let wanted: Vec<Value> = order.iter().filter_map(key_of).collect();
    if wanted.is_empty() {
        return;
    }
    let mut ordered = Vec::with_capacity(items.len());
    for w in &wanted {
        if let Some(i) = items.iter().position(|e| key_of(e).as_ref() == Some(w)) {
            ordered.push(items.remove(i));
        }
    }
    ordered.append(items);
    *items = ordered;
}

/// Applies a JSON merge patch (RFC 7386).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Applies a JSON patch (RFC 6902).
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    // Kubernetes treats an absent path as null in `test` operations (kube-runtime's
    // finalizer helper relies on it); the json-patch crate calls it an invalid pointer.
    let mut patch = patch.clone();
    if let Value::Array(ops) = &mut patch {
        ops.retain(|op| {
            let is_null_test = op.get("op").and_then(Value::as_str) == Some("test")
                && op.get("value").is_some_and(Value::is_null);
            let absent = op
                .get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| target.pointer(p).is_none());
            !(is_null_test && absent)
        });
    }
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| ApiError::BadRequest(format!("invalid JSON patch: {e}")))?;
    let field = |k: &str| target.get(k).and_then(Value::as_str).unwrap_or_default();
    // `apps/v1` names group `apps`; `v1` the core group.
    let group = field("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
    let kind = super::registry::qualify(field("kind"), group);
    json_patch::patch(target, &ops).map_err(|e| ApiError::Invalid {
        kind,
        name: target
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        causes: vec![super::status::Cause {
            reason: "FieldValueInvalid",
            field: String::new(),
            message: format!("the JSON patch cannot be applied: {e}"),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_ports_merge_by_port() {
        let mut svc = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        strategic_merge(
            &mut svc,
            &json!({"spec": {"ports": [{"port": 80, "nodePort": 30080}]}}),
            "Service",
        )
        .expect("patch");
        assert_eq!(svc["spec"]["ports"].as_array().map(Vec::len), Some(2));
        assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30080);
        assert_eq!(svc["spec"]["ports"][0]["name"], "http");
        strategic_merge(
            &mut svc,
            &json!({"spec": {"ports": [{"port": 443, "$patch": "delete"}]}}),
            "Service",
        )
        .expect("delete");
        assert_eq!(svc["spec"]["ports"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn node_conditions_merge_by_type_and_taints_replace() {
        let mut node = json!({
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]},
        });
        let patch = json!({
            "spec": {"taints": [{"key": "b", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        });
        strategic_merge(&mut node, &patch, "Node").expect("patch");
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": "b", "effect": "NoSchedule"}])
        );
        assert_eq!(node["status"]["conditions"][0]["status"], "False");
        assert_eq!(
            node["status"]["conditions"].as_array().map(Vec::len),
            Some(2)
        );
    }

    #[test]
    fn finalizers_merge_as_a_set_and_delete_from_primitive_list() {
        let mut obj = json!({"metadata": {"finalizers": ["a"]}});
        strategic_merge(
            &mut obj,
            &json!({"metadata": {"finalizers": ["a", "b"]}}),
            "Service",
        )
        .expect("add");
        assert_eq!(obj["metadata"]["finalizers"], json!(["a", "b"]));
        strategic_merge(
            &mut obj,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            "Service",
        )
        .expect("remove");
        assert_eq!(obj["metadata"]["finalizers"], json!(["b"]));
    }

    #[test]
    fn null_deletes_and_patch_replace_replaces() {
        let mut obj = json!({"metadata": {"annotations": {"a": "1", "b": "2"}}, "data": {"x": "1", "y": "2"}});
        let patch = json!({"metadata": {"annotations": {"a": null}}, "data": {"$patch": "replace", "z": "3"}});
        strategic_merge(&mut obj, &patch, "ConfigMap").expect("patch");
        assert_eq!(obj["metadata"]["annotations"], json!({"b": "2"}));
        assert_eq!(obj["data"], json!({"z": "3"}));
    }

    #[test]
    fn set_element_order_orders_the_merged_list() {
        let mut svc = json!({"spec": {"ports": [{"port": 80}, {"port": 443}]}});
        let patch = json!({"spec": {"$setElementOrder/ports": [{"port": 443}, {"port": 80}], "ports": [{"port": 80, "name": "h"}]}});
        strategic_merge(&mut svc, &patch, "Service").expect("patch");
        assert_eq!(svc["spec"]["ports"][0]["port"], 443);
        assert_eq!(svc["spec"]["ports"][1]["name"], "h");
    }

    #[test]
    fn merge_key_missing_is_a_bad_request() {
        let mut svc = json!({"spec": {"ports": []}});
        assert!(
            strategic_merge(
                &mut svc,
                &json!({"spec": {"ports": [{"name": "x"}]}}),
                "Service"
            )
            .is_err()
        );
        assert!(strategic_merge(&mut svc, &json!([1]), "Service").is_err());
    }

    #[test]
    fn json_merge_and_json_patch() {
        let mut obj = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge_patch(&mut obj, &json!({"a": {"b": null}, "l": [3]}));
        assert_eq!(obj, json!({"a": {"c": 2}, "l": [3]}));
        json_patch(
            &mut obj,
            &json!([{"op": "add", "path": "/a/d", "value": 4}]),
        )
        .expect("json patch");
        assert_eq!(obj["a"]["d"], 4);
        assert!(json_patch(&mut obj, &json!([{"op": "remove", "path": "/nope"}])).is_err());
        assert!(json_patch(&mut obj, &json!({"op": "x"})).is_err());
    }
}
