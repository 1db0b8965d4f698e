//! The `serviceaccounts/token` subresource: a `TokenRequest` (`authentication.k8s.io/v1`)
//! answered with the ServiceAccount's bearer token, as `kubectl create token` asks for it.
//! The embedded server's tokens do not expire (`rbac::service_account_token`); the answer
//! states the expiry that was asked for (kube-apiserver's default: one hour), and audiences
//! and bound objects are echoed, not enforced.

use super::rbac;
use super::server::{Shared, Target, rfc3339};
use super::status::{ApiError, ApiResult, Cause};
use axum::http::{HeaderMap, StatusCode};
use k8s_openapi::jiff::SignedDuration;
use serde_json::{Value, json};

/// kube-apiserver's `--service-account-max-token-expiration` aside, what it gives a request
/// that names no expiry.
const DEFAULT_EXPIRATION_S: i64 = 3600;
/// The shortest expiry kube-apiserver accepts (`spec.expirationSeconds`).
const MIN_EXPIRATION_S: i64 = 600;
/// The audience kube-apiserver gives a request that names none (its `--api-audiences`).
const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

pub(super) fn token_request(
    srv: &Shared,
    verb: &str,
    target: &Target,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<(StatusCode, Value)> {
    if verb != "create" {
        return Err(ApiError::MethodNotAllowed);
    }
    let account = srv.get(&Target {
        sub: None,
        ..target.clone()
    })?;
    let request = super::body::decode_body(headers, body)?;
    let spec = &request["spec"];
    let expiration = match spec.get("expirationSeconds").filter(|v| !v.is_null()) {
        None => DEFAULT_EXPIRATION_S,
        Some(v) => match v.as_i64() {
            Some(s) if s >= MIN_EXPIRATION_S => s,
            _ => {
                return Err(ApiError::Invalid {
                    kind: "TokenRequest.authentication.k8s.io".into(),
                    name: target.name.clone().unwrap_or_default(),
                    causes: vec![Cause {
                        reason: "FieldValueInvalid",
                        field: "spec.expirationSeconds".into(),
                        message: format!(
                            "Invalid value: {v}: may not specify a duration less than 10 minutes"
                        ),
                    }],
                });
            }
        },
    };
    let audiences = match spec["audiences"].as_array() {
        Some(a) if !a.is_empty() => Value::Array(a.clone()),
        _ => json!([DEFAULT_AUDIENCE]),
    };
    let namespace = target.namespace.clone().unwrap_or_default();
    let name = target.name.clone().unwrap_or_default();
    let expires = srv
        .0
        .config
        .ambient
        .now()
        .saturating_add(SignedDuration::from_secs(expiration))
        .map_err(|e| ApiError::BadRequest(format!("spec.expirationSeconds: {e}")))?;
    Ok((
        StatusCode::CREATED,
        json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null,
                         "uid": account["metadata"]["uid"]},
            "spec": {"audiences": audiences, "expirationSeconds": expiration,
                     "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null)},
            "status": {"token": rbac::service_account_token(&namespace, &name),
                       "expirationTimestamp": rfc3339(expires)},
        }),
    ))
}
