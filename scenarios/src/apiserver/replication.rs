//! Core `v1` ReplicationControllers as the real API server treats them: defaulting
//! (`SetDefaults_ReplicationController`: the selector and the object's labels from the
//! template's labels, one replica) and validation (`ValidateReplicationControllerSpec`: a
//! non-empty selector, a template whose labels it matches, replicas not negative). The
//! selector is a plain label map, not a `LabelSelector`; see
//! https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/replication-controller-v1/.

use super::apps::{cause, default_pod_spec, go_string_map, set_default, validate_pod_template};
use super::server::meta_str;
use super::status::{ApiError, ApiResult, Cause};
use serde_json::{Value, json};

fn non_empty_map(v: Option<&Value>) -> Option<&Value> {
    v.filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))
}

/// Defaults and validates a ReplicationController (`new`).
pub fn prepare(new: &mut Value) -> ApiResult<()> {
    if !new.get("spec").is_some_and(Value::is_object) {
        new["spec"] = json!({});
    }
    if let Some(labels) = non_empty_map(new.pointer("/spec/template/metadata/labels")).cloned() {
        if non_empty_map(new.pointer("/spec/selector")).is_none() {
            new["spec"]["selector"] = labels.clone();
        }
        if non_empty_map(new.pointer("/metadata/labels")).is_none() {
            new["metadata"]["labels"] = labels;
        }
    }
    set_default(&mut new["spec"], "replicas", json!(1));
    if let Some(pod_spec) = new
        .pointer_mut("/spec/template/spec")
        .filter(|s| s.is_object())
    {
        default_pod_spec(pod_spec);
    }
    let causes = validate(&new["spec"]);
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        kind: "ReplicationController".into(),
        name: meta_str(new, "name").unwrap_or_default().to_string(),
        causes,
    })
}

fn validate(spec: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(n) = spec.get("replicas").and_then(Value::as_i64)
        && n < 0
    {
        out.push(cause(
            "FieldValueInvalid",
            "spec.replicas",
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        ));
    }
    let selector = non_empty_map(spec.get("selector"));
    if selector.is_none() {
        out.push(cause(
            "FieldValueRequired",
            "spec.selector",
            "Required value",
        ));
    }
    let Some(template) = spec.get("template").filter(|t| t.is_object()) else {
        out.push(cause(
            "FieldValueRequired",
            "spec.template",
            "Required value",
        ));
        return out;
    };
    let labels = template.pointer("/metadata/labels");
    let matches = selector
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
    if selector.is_some() && !matches {
        out.push(cause(
            "FieldValueInvalid",
            "spec.template.metadata.labels",
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_string_map(labels)
            ),
        ));
    }
    out.extend(validate_pod_template(
        template,
        "spec.template",
        &["Always"],
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(labels: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": {"template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}})
    }

    #[test]
    fn selector_labels_and_replicas_default_from_the_template() {
        let mut r = rc(json!({"app": "web", "tier": "front"}));
        prepare(&mut r).expect("valid");
        assert_eq!(
            r["spec"]["selector"],
            json!({"app": "web", "tier": "front"})
        );
        assert_eq!(
            r["metadata"]["labels"],
            json!({"app": "web", "tier": "front"})
        );
        assert_eq!(r["spec"]["replicas"], 1);
        assert_eq!(
            super::super::apps::selector_set_string(r.pointer("/spec/selector")),
            "app=web,tier=front"
        );
        assert_eq!(r["spec"]["template"]["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn a_selector_must_exist_and_match() {
        let mut r = rc(json!(null));
        let err = prepare(&mut r).expect_err("no selector");
        assert_eq!(
            err.to_string(),
            "ReplicationController \"web\" is invalid: spec.selector: Required value"
        );
        let mut r = rc(json!({"app": "web"}));
        r["spec"]["selector"] = json!({"app": "db"});
        let err = prepare(&mut r).expect_err("mismatch");
        assert!(err.to_string().contains(
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`"
        ));
    }
}
