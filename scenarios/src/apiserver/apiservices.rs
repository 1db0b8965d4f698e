//! `apiregistration.k8s.io/v1` APIServices as kube-aggregator treats them: defaulting (the
//! service port 443), validation (`ValidateAPIService`: the name is `<version>.<group>`, the
//! priorities are in range, a local APIService has no CA bundle) and the `Available`
//! condition its `AvailableConditionController` reports. A local APIService (`service:
//! null`, served by kube-apiserver itself) is always available; one backed by a Service is
//! not, since this server proxies to no aggregated API server: `ServiceNotFound` when the
//! Service does not exist, `FailedDiscoveryCheck` when it does. See
//! https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/api-service-v1/.

use super::apps::cause;
use super::server::meta_str;
use super::status::{ApiError, ApiResult, Cause};
use serde_json::{Value, json};

/// Defaults and validates an APIService (`new`) and sets its `Available` condition.
/// `service_exists` tells whether the Service it names (if any) exists; `now` is the time a
/// changed condition gets as its `lastTransitionTime`.
pub fn prepare(new: &mut Value, service_exists: bool, now: &str) -> ApiResult<()> {
    if !new.get("spec").is_some_and(Value::is_object) {
        new["spec"] = json!({});
    }
    if let Some(service) = new.pointer_mut("/spec/service").filter(|s| s.is_object())
        && service.get("port").is_none_or(Value::is_null)
    {
        service["port"] = json!(443);
    }
    let causes = validate(new);
    if !causes.is_empty() {
        return Err(ApiError::Invalid {
            kind: "APIService.apiregistration.k8s.io".into(),
            name: meta_str(new, "name").unwrap_or_default().to_string(),
            causes,
        });
    }
    set_available(new, service_exists, now);
    Ok(())
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn validate(api: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let group = str_at(api, "/spec/group");
    let version = str_at(api, "/spec/version");
    let name = meta_str(api, "name").unwrap_or_default();
    let required = format!("{version}.{group}");
    if name != required {
        out.push(cause(
            "FieldValueInvalid",
            "metadata.name",
            format!(
                "Invalid value: \"{name}\": must be `spec.version+\".\"+spec.group`: \"{required}\""
            ),
        ));
    }
    // Only the legacy core group (`v1.`) may have no group.
    if group.is_empty() && version != "v1" {
        out.push(cause(
            "FieldValueRequired",
            "spec.group",
            "Required value: only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if version.is_empty() {
        out.push(cause(
            "FieldValueInvalid",
            "spec.version",
            "Invalid value: \"\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ));
    }
    for (field, max) in [("groupPriorityMinimum", 20000), ("versionPriority", 1000)] {
        let n = api
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if n <= 0 || n > max {
            out.push(cause(
                "FieldValueInvalid",
                format!("spec.{field}"),
                format!("Invalid value: {n}: must be positive and less than {max}"),
            ));
        }
    }
    let service = api.pointer("/spec/service").filter(|s| s.is_object());
    match service {
        None => {
            let ca = str_at(api, "/spec/caBundle");
            if !ca.is_empty() {
                out.push(cause(
                    "FieldValueInvalid",
                    "spec.caBundle",
                    format!(
                        "Invalid value: \"{} bytes\": local APIServices may not have a caBundle",
                        decoded_len(ca)
                    ),
                ));
            }
        }
        Some(s) => {
            for field in ["namespace", "name"] {
                if s.get(field)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    out.push(cause(
                        "FieldValueRequired",
                        format!("spec.service.{field}"),
                        "Required value",
                    ));
                }
            }
        }
    }
    out
}

/// The length of base64 text once decoded (`caBundle` is `[]byte` in Go).
fn decoded_len(b64: &str) -> usize {
    let padding = b64.bytes().rev().take_while(|b| *b == b'=').count();
    (b64.len() / 4 * 3).saturating_sub(padding)
}

/// The `Available` condition the aggregator's availability controller writes.
fn set_available(api: &mut Value, service_exists: bool, now: &str) {
    let (status, reason, message) = match api.pointer("/spec/service").filter(|s| s.is_object()) {
        None => (
            "True",
            "Local",
            "Local APIServices are always available".to_string(),
        ),
        Some(s) => {
            let ns = str_at(s, "/namespace");
            let name = str_at(s, "/name");
            if service_exists {
                let port = s.get("port").and_then(Value::as_i64).unwrap_or(443);
                let path = match str_at(api, "/spec/group") {
                    "" => "/api/v1".to_string(),
                    g => format!("/apis/{g}/{}", str_at(api, "/spec/version")),
                };
                (
                    "False",
                    "FailedDiscoveryCheck",
                    format!(
                        "failing or missing response from https://{name}.{ns}.svc:{port}{path}: this API server does not proxy to aggregated API servers"
                    ),
                )
            } else {
                (
                    "False",
                    "ServiceNotFound",
                    format!("service/{name} in \"{ns}\" is not present"),
                )
            }
        }
    };
    let previous = api
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
        .cloned();
    // The transition time moves only when the status does.
    let since = match &previous {
        Some(p) if p["status"] == status => p["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    let condition = json!({
        "type": "Available",
        "status": status,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    });
    if !api.get("status").is_some_and(Value::is_object) {
        api["status"] = json!({});
    }
    let mut others: Vec<Value> = api
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["type"] != "Available")
        .cloned()
        .collect();
    others.insert(0, condition);
    api["status"]["conditions"] = json!(others);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(name: &str, service: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": "metrics.k8s.io",
            "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
            "service": service}})
    }

    const NOW: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn a_local_apiservice_is_available() {
        let mut a = api("v1beta1.metrics.k8s.io", Value::Null);
        prepare(&mut a, false, NOW).expect("valid");
        assert_eq!(
            a["status"]["conditions"],
            json!([{"type": "Available", "status": "True", "lastTransitionTime": NOW,
                "reason": "Local", "message": "Local APIServices are always available"}])
        );
        // An update keeps the transition time.
        prepare(&mut a, false, "2027-01-01T00:00:00Z").expect("valid");
        assert_eq!(a["status"]["conditions"][0]["lastTransitionTime"], NOW);
    }

    #[test]
    fn a_missing_service_is_reported() {
        let mut a = api(
            "v1beta1.metrics.k8s.io",
            json!({"namespace": "kube-system", "name": "metrics-server"}),
        );
        prepare(&mut a, false, NOW).expect("valid");
        assert_eq!(a["spec"]["service"]["port"], 443);
        let c = &a["status"]["conditions"][0];
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "ServiceNotFound");
        assert_eq!(
            c["message"],
            "service/metrics-server in \"kube-system\" is not present"
        );
    }

    #[test]
    fn name_and_priorities_are_validated() {
        let mut a = api("metrics", Value::Null);
        a["spec"]["versionPriority"] = json!(0);
        let err = prepare(&mut a, false, NOW).expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "APIService.apiregistration.k8s.io \"metrics\" is invalid: [metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\", spec.versionPriority: Invalid value: 0: must be positive and less than 1000]"
        );
    }
}
