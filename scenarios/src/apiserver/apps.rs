//! `apps/v1` Deployments and ReplicaSets as the real API server treats them: defaulting
//! (`SetDefaults_Deployment`, `SetDefaults_ReplicaSet`, the pod template's
//! `SetDefaults_PodSpec`), validation (a selector that matches the template's labels and
//! does not change, replicas not negative, containers with names and images, the strategy)
//! and the `scale` subresource (`autoscaling/v1` `Scale`, what `kubectl scale` reads and
//! writes: https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1/).

use super::patch;
use super::server::{Params, Shared, Target, meta_str};
use super::status::{ApiError, ApiResult, Cause};
use axum::http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};

/// `labels.SelectorFromSet(m).String()`: `k=v` pairs sorted by key, comma-separated.
pub fn selector_set_string(map: Option<&Value>) -> String {
    // serde_json's map iterates in key order, as the selector sorts its requirements.
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",")
}

/// `metav1.LabelSelectorAsSelector(s).String()`: `k=v` for `matchLabels`, `k in (a,b)`,
/// `k notin (a,b)`, `k`, `!k` for `matchExpressions`, sorted by key as apimachinery sorts
/// requirements. `None` for a selector that selects nothing (absent).
pub fn selector_string(selector: &Value) -> Option<String> {
    if !selector.is_object() {
        return None;
    }
    let mut parts: Vec<(String, String)> = Vec::new();
    for (k, v) in selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        parts.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
    }
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let mut values = requirement_values(e);
        values.sort_unstable();
        let text = match e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        parts.push((key.to_string(), text));
    }
    parts.sort();
    Some(
        parts
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// Whether `labels` (a JSON object) satisfy a `metav1.LabelSelector`. An empty selector
/// matches everything, as in apimachinery.
pub fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let labels_ok = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| get(k) == v.as_str());
    let expressions_ok = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            // `Gt` and `Lt` belong to node selectors; a label selector with them selects
            // nothing.
            let numeric = matches!(e.get("operator").and_then(Value::as_str), Some("Gt" | "Lt"));
            !numeric && requirement_matches(e, get(key))
        });
    labels_ok && expressions_ok
}

/// One selector requirement (`key`, `operator`, `values`) against the value it selects on
/// (`None`: absent): the label selector operators, and the node selector's `Gt` and `Lt`,
/// which compare integers.
pub fn requirement_matches(e: &Value, value: Option<&str>) -> bool {
    let values = requirement_values(e);
    let number = |v: Option<&str>| v.and_then(|v| v.parse::<i64>().ok());
    let bound = number(values.first().copied());
    match e
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => !value.is_some_and(|v| values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => number(value).zip(bound).is_some_and(|(v, b)| v > b),
        "Lt" => number(value).zip(bound).is_some_and(|(v, b)| v < b),
        _ => false,
    }
}

/// The `values` of a selector requirement (none when absent).
fn requirement_values(e: &Value) -> Vec<&str> {
    e.get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// `SetDefaults_PodSpec` and the container defaults a real server writes into a template.
pub(super) fn default_pod_spec(spec: &mut Value) {
    for (k, v) in [
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("dnsPolicy", json!("ClusterFirst")),
        ("securityContext", json!({})),
        ("schedulerName", json!("default-scheduler")),
    ] {
        if spec.get(k).is_none() {
            spec[k] = v;
        }
    }
    let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) else {
        return;
    };
    for c in containers.iter_mut().filter(|c| c.is_object()) {
        let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
        // An image without a tag, or tagged `latest`, is pulled every time.
        let last = image.rsplit('/').next().unwrap_or_default();
        let untagged = !last.contains(':') && !last.contains('@');
        let pull = if untagged || last.ends_with(":latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        for (k, v) in [
            ("imagePullPolicy", json!(pull)),
            ("terminationMessagePath", json!("/dev/termination-log")),
            ("terminationMessagePolicy", json!("File")),
            ("resources", json!({})),
        ] {
            if c.get(k).is_none() {
                c[k] = v;
            }
        }
        for p in c
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if p.is_object() && p.get("protocol").is_none() {
                p["protocol"] = json!("TCP");
            }
        }
    }
}

pub(super) fn set_default(obj: &mut Value, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj[key] = value;
    }
}

/// Defaults a Deployment, ReplicaSet or DaemonSet (`new`) and validates it against `old`
/// (on updates).
pub fn prepare(kind: &str, new: &mut Value, old: Option<&Value>) -> ApiResult<()> {
    if !new.get("spec").is_some_and(Value::is_object) {
        new["spec"] = json!({});
    }
    let spec = &mut new["spec"];
    if kind == "DaemonSet" {
        default_daemon_set(spec);
    } else {
        set_default(spec, "replicas", json!(1));
    }
    if kind == "Deployment" {
        if !spec.get("strategy").is_some_and(Value::is_object) {
            spec["strategy"] = json!({});
        }
        let strategy = &mut spec["strategy"];
        set_default(strategy, "type", json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate" {
            if !strategy.get("rollingUpdate").is_some_and(Value::is_object) {
                strategy["rollingUpdate"] = json!({});
            }
            set_default(
                &mut strategy["rollingUpdate"],
                "maxUnavailable",
                json!("25%"),
            );
            set_default(&mut strategy["rollingUpdate"], "maxSurge", json!("25%"));
        }
        set_default(spec, "revisionHistoryLimit", json!(10));
        set_default(spec, "progressDeadlineSeconds", json!(600));
    }
    if let Some(pod_spec) = spec.pointer_mut("/template/spec").filter(|s| s.is_object()) {
        default_pod_spec(pod_spec);
    }
    let causes = validate(kind, new, old);
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        kind: super::registry::qualify(kind, "apps"),
        name: meta_str(new, "name").unwrap_or_default().to_string(),
        causes,
    })
}

/// `SetDefaults_DaemonSet`: a rolling update of one pod at a time, ten old revisions kept.
fn default_daemon_set(spec: &mut Value) {
    if !spec.get("updateStrategy").is_some_and(Value::is_object) {
        spec["updateStrategy"] = json!({});
    }
    let strategy = &mut spec["updateStrategy"];
    set_default(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        if !strategy.get("rollingUpdate").is_some_and(Value::is_object) {
            strategy["rollingUpdate"] = json!({});
        }
        set_default(&mut strategy["rollingUpdate"], "maxUnavailable", json!(1));
        set_default(&mut strategy["rollingUpdate"], "maxSurge", json!(0));
    }
    set_default(spec, "revisionHistoryLimit", json!(10));
}

/// Labels as Go's `%#v` prints a `map[string]string` (which `field.Invalid` uses for the
/// value of a map): keys sorted, `map[string]string(nil)` when there are none.
pub(super) fn go_string_map(labels: Option<&Value>) -> String {
    match labels.and_then(Value::as_object) {
        None => "map[string]string(nil)".to_string(),
        Some(map) => {
            // serde_json's map iterates in key order (no `preserve_order`), as Go's sort.
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", json!(k), json!(v.as_str().unwrap_or_default())))
                .collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
    }
}

pub(super) fn cause(
    reason: &'static str,
    field: impl Into<String>,
    message: impl Into<String>,
) -> Cause {
    Cause {
        reason,
        field: field.into(),
        message: message.into(),
    }
}

/// The checks of `ValidateDeployment` / `ValidateReplicaSet` that clients meet in practice.
fn validate(kind: &str, new: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &new["spec"];
    match spec.get("replicas").and_then(Value::as_i64) {
        // DaemonSets have no replicas: one pod per eligible node.
        _ if kind == "DaemonSet" => {}
        Some(n) if n < 0 => out.push(cause(
            "FieldValueInvalid",
            "spec.replicas",
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        )),
        Some(_) => {}
        None => out.push(cause(
            "FieldValueInvalid",
            "spec.replicas",
            "Invalid value: must be an integer",
        )),
    }
    let selector = spec.get("selector").filter(|s| s.is_object());
    let empty = selector.is_none_or(|s| selector_string(s).is_none_or(|t| t.is_empty()));
    if selector.is_none() {
        out.push(cause(
            "FieldValueRequired",
            "spec.selector",
            "Required value",
        ));
    } else if empty {
        out.push(cause(
            "FieldValueInvalid",
            "spec.selector",
            format!(
                "Invalid value: \"{{}}\": empty selector is invalid for {}",
                kind.to_lowercase()
            ),
        ));
    } else if let Some(s) = selector
        && !selector_matches(s, spec.pointer("/template/metadata/labels"))
    {
        out.push(cause(
            "FieldValueInvalid",
            "spec.template.metadata.labels",
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_string_map(spec.pointer("/template/metadata/labels"))
            ),
        ));
    }
    if let (Some(old_sel), Some(new_sel)) =
        (old.and_then(|o| o.pointer("/spec/selector")), selector)
        && old_sel != new_sel
    {
        out.push(cause(
            "FieldValueInvalid",
            "spec.selector",
            format!("Invalid value: {new_sel}: field is immutable"),
        ));
    }
    out.extend(validate_template(spec));
    match kind {
        "Deployment" => out.extend(validate_strategy(&spec["strategy"])),
        "DaemonSet" => out.extend(validate_update_strategy(&spec["updateStrategy"])),
        _ => {}
    }
    out
}

/// `ValidateDaemonSetUpdateStrategy`: the two strategy types.
fn validate_update_strategy(strategy: &Value) -> Option<Cause> {
    match strategy
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "RollingUpdate" | "OnDelete" => None,
        other => Some(cause(
            "FieldValueNotSupported",
            "spec.updateStrategy.type",
            format!(
                "Unsupported value: \"{other}\": supported values: \"OnDelete\", \"RollingUpdate\""
            ),
        )),
    }
}

fn validate_strategy(strategy: &Value) -> Option<Cause> {
    match strategy
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "RollingUpdate" => None,
        "Recreate" if strategy.get("rollingUpdate").is_some_and(|r| !r.is_null()) => Some(cause(
            "FieldValueForbidden",
            "spec.strategy.rollingUpdate",
            "Forbidden: may not be specified when strategy `type` is 'Recreate'",
        )),
        "Recreate" => None,
        other => Some(cause(
            "FieldValueNotSupported",
            "spec.strategy.type",
            format!(
                "Unsupported value: \"{other}\": supported values: \"Recreate\", \"RollingUpdate\""
            ),
        )),
    }
}

/// `ValidatePodTemplateSpec`'s checks that clients meet: containers with names and images,
/// and a restart policy the owning kind supports (`Always` for Deployments, ReplicaSets,
/// DaemonSets and ReplicationControllers; `OnFailure` or `Never` for Jobs). `path` is the
/// template's field path (`spec.template`, `spec.jobTemplate.spec.template`).
pub(super) fn validate_pod_template(template: &Value, path: &str, restart: &[&str]) -> Vec<Cause> {
    let mut out = Vec::new();
    let containers = template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if containers.is_empty() {
        out.push(cause(
            "FieldValueRequired",
            format!("{path}.spec.containers"),
            "Required value",
        ));
    }
    for (i, c) in containers.iter().enumerate() {
        for field in ["name", "image"] {
            if c.get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                out.push(cause(
                    "FieldValueRequired",
                    format!("{path}.spec.containers[{i}].{field}"),
                    "Required value",
                ));
            }
        }
    }
    let policy = template
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        // A template without a spec is defaulted like an empty one (`SetDefaults_PodSpec`).
        .unwrap_or("Always");
    if policy.is_empty() {
        out.push(cause(
            "FieldValueRequired",
            format!("{path}.spec.restartPolicy"),
            "Required value",
        ));
    } else if !restart.contains(&policy) {
        let supported: Vec<String> = restart.iter().map(|r| format!("\"{r}\"")).collect();
        out.push(cause(
            "FieldValueNotSupported",
            format!("{path}.spec.restartPolicy"),
            format!(
                "Unsupported value: \"{policy}\": supported values: {}",
                supported.join(", ")
            ),
        ));
    }
    out
}

fn validate_template(spec: &Value) -> Vec<Cause> {
    validate_pod_template(&spec["template"], "spec.template", &["Always"])
}

/// The `autoscaling/v1` `Scale` of a Deployment, ReplicaSet or ReplicationController (as its
/// clients see it). A ReplicationController's selector is a plain map (`k=v,…`).
pub fn scale_of(kind: &str, parent: &Value) -> Value {
    let mut metadata = json!({});
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = parent["metadata"].get(k) {
            metadata[k] = v.clone();
        }
    }
    let selector = if kind == "ReplicationController" {
        selector_set_string(parent.pointer("/spec/selector"))
    } else {
        parent
            .pointer("/spec/selector")
            .and_then(selector_string)
            .unwrap_or_default()
    };
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": parent.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": {
            "replicas": parent.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        },
    })
}

/// A request on `…/{name}/scale`: `get`, `update` (PUT of a `Scale`) or `patch` (merge,
/// JSON or strategic patch of the `Scale`). Writes change the parent's `spec.replicas` and
/// nothing else; a `resourceVersion` in the `Scale` is a precondition on the parent.
pub(super) fn scale_request(
    srv: &Shared,
    verb: &str,
    target: &Target,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<(StatusCode, Value)> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let parent_target = Target {
        sub: None,
        ..target.clone()
    };
    let parent = srv.get(&parent_target)?;
    let current = scale_of(target.rt.kind, &parent);
    let wanted = match verb {
        "get" => return Ok((StatusCode::OK, current)),
        "update" => super::body::decode_body(headers, body)?,
        "patch" => {
            let ct = content_type.split(';').next().unwrap_or_default().trim();
            let patch_body: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::BadRequest(format!("invalid JSON: {e}")))?;
            let mut scale = current.clone();
            match ct {
                "application/json-patch+json" => patch::json_patch(&mut scale, &patch_body)?,
                "application/merge-patch+json" => patch::merge_patch(&mut scale, &patch_body),
                "application/strategic-merge-patch+json" => {
                    patch::strategic_merge(&mut scale, &patch_body, "Scale")?
                }
                other => {
                    return Err(ApiError::UnsupportedMediaType(format!(
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {other})"
                    )));
                }
            }
            scale
        }
        _ => return Err(ApiError::MethodNotAllowed),
    };
    let replicas = match wanted.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::BadRequest(format!("Scale.spec.replicas: not an integer: {v}"))
        })?,
    };
    if replicas < 0 {
        return Err(ApiError::Invalid {
            kind: "Scale.autoscaling".into(),
            name: target.name.clone().unwrap_or_default(),
            causes: vec![cause(
                "FieldValueInvalid",
                "spec.replicas",
                format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            )],
        });
    }
    let mut updated = parent;
    updated["spec"]["replicas"] = json!(replicas);
    // The Scale's resourceVersion (if the client kept it) guards the parent.
    match meta_str(&wanted, "resourceVersion").filter(|rv| !rv.is_empty()) {
        Some(rv) => updated["metadata"]["resourceVersion"] = json!(rv),
        None => {
            if let Some(m) = updated["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
        }
    }
    let (_, stored) = srv.update_object(&parent_target, updated, params.dry_run, false)?;
    Ok((StatusCode::OK, scale_of(target.rt.kind, &stored)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(labels: Value, selector: Value) -> Value {
        json!({
            "metadata": {"name": "web"},
            "spec": {"selector": selector, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}
        })
    }

    #[test]
    fn defaults_are_those_of_a_real_server() {
        let mut d = deployment(
            json!({"app": "web"}),
            json!({"matchLabels": {"app": "web"}}),
        );
        prepare("Deployment", &mut d, None).expect("valid");
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn a_selector_that_misses_the_template_labels_is_invalid() {
        let mut d = deployment(
            json!({"app": "other"}),
            json!({"matchLabels": {"app": "web"}}),
        );
        let err = prepare("Deployment", &mut d, None).expect_err("invalid");
        // kube-apiserver's words, the labels as Go prints a map.
        assert_eq!(
            err.to_string(),
            "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`"
        );
        let mut d = deployment(json!({"app": "web"}), json!({}));
        let err = prepare("ReplicaSet", &mut d, None).expect_err("invalid");
        assert!(
            err.to_string()
                .contains("empty selector is invalid for replicaset")
        );
    }

    #[test]
    fn the_selector_is_immutable() {
        let mut old = deployment(
            json!({"app": "web", "v": "1"}),
            json!({"matchLabels": {"app": "web"}}),
        );
        prepare("Deployment", &mut old, None).expect("valid");
        let mut new = deployment(
            json!({"app": "web", "v": "1"}),
            json!({"matchLabels": {"app": "web", "v": "1"}}),
        );
        let err = prepare("Deployment", &mut new, Some(&old)).expect_err("immutable");
        assert!(err.to_string().contains("field is immutable"));
    }

    #[test]
    fn selector_strings_and_matching_follow_apimachinery() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]},
                                 {"key": "d", "operator": "DoesNotExist"}]});
        assert_eq!(
            selector_string(&sel).as_deref(),
            Some("a=1,b=2,c in (x,y),!d")
        );
        assert!(selector_matches(
            &sel,
            Some(&json!({"a": "1", "b": "2", "c": "x"}))
        ));
        assert!(!selector_matches(
            &sel,
            Some(&json!({"a": "1", "b": "2", "c": "z"}))
        ));
        assert!(!selector_matches(
            &sel,
            Some(&json!({"a": "1", "b": "2", "c": "x", "d": ""}))
        ));
        assert!(selector_matches(&json!({}), None));
    }

    #[test]
    fn a_daemon_set_gets_the_real_defaults_and_checks() {
        let mut ds = deployment(
            json!({"app": "agent"}),
            json!({"matchLabels": {"app": "agent"}}),
        );
        prepare("DaemonSet", &mut ds, None).expect("valid");
        assert!(ds["spec"].get("replicas").is_none());
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(ds["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        let mut other = ds.clone();
        other["spec"]["selector"] = json!({"matchLabels": {"app": "agent", "v": "2"}});
        other["spec"]["template"]["metadata"]["labels"]["v"] = json!("2");
        let err = prepare("DaemonSet", &mut other, Some(&ds)).expect_err("immutable");
        assert!(
            err.to_string()
                .starts_with("DaemonSet.apps \"web\" is invalid: spec.selector")
        );
        let mut bad = deployment(json!({"app": "a"}), json!({"matchLabels": {"app": "a"}}));
        bad["spec"]["updateStrategy"] = json!({"type": "Sometimes"});
        let err = prepare("DaemonSet", &mut bad, None).expect_err("strategy");
        assert!(err.to_string().contains(
            "spec.updateStrategy.type: Unsupported value: \"Sometimes\": supported values: \"OnDelete\", \"RollingUpdate\""
        ));
    }

    #[test]
    fn a_replication_controller_has_a_scale_with_a_set_selector() {
        assert!(super::super::registry::has_scale(
            "",
            "ReplicationController"
        ));
        let rc = json!({"metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"tier": "front", "app": "web"}},
            "status": {"replicas": 1}});
        let s = scale_of("ReplicationController", &rc);
        assert_eq!(
            s["status"],
            json!({"replicas": 1, "selector": "app=web,tier=front"})
        );
        assert_eq!(s["spec"]["replicas"], 2);
    }

    #[test]
    fn the_scale_of_a_deployment() {
        let d = json!({"metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2}});
        let s = scale_of("Deployment", &d);
        assert_eq!(s["kind"], "Scale");
        assert_eq!(s["apiVersion"], "autoscaling/v1");
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({"replicas": 2, "selector": "app=web"}));
        assert_eq!(s["metadata"]["resourceVersion"], "7");
    }
}
