//! API errors as `metav1.Status` objects with the reason and code a real API server uses.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

/// The causes as Go's `field.ErrorList.ToAggregate()` prints them: one alone, several in
/// brackets.
fn aggregate(causes: &[Cause]) -> String {
    let all: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    match all.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", all.join(", ")),
    }
}

/// One field problem of an `Invalid` (422) error.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// e.g. `FieldValueInvalid`, `FieldValueRequired`, `FieldValueDuplicate`.
    pub reason: &'static str,
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// `kind` here and in `AlreadyExists` and `Conflict` is the qualified resource, as
    /// kube-apiserver names it in messages: `services`, `deployments.apps`
    /// ([`ResourceType::qualified_resource`](super::registry::ResourceType::qualified_resource)).
    #[error("{kind} \"{name}\" not found")]
    NotFound { kind: String, name: String },
    #[error("{kind} \"{name}\" already exists")]
    AlreadyExists { kind: String, name: String },
    #[error("Operation cannot be fulfilled on {kind} \"{name}\": {message}")]
    Conflict {
        kind: String,
        name: String,
        message: String,
    },
    #[error("{kind} \"{name}\" is invalid: {}", aggregate(causes))]
    Invalid {
        /// The qualified kind: `Service`, `Deployment.apps`, ...
        kind: String,
        name: String,
        causes: Vec<Cause>,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    /// A 403 whose `details` name the object, its group and resource: refused by the
    /// authorizer, or by namespace lifecycle (a namespace being deleted).
    #[error("{message}")]
    Denied {
        message: String,
        name: Option<String>,
        group: String,
        resource: String,
    },
    /// No valid credentials.
    #[error("Unauthorized")]
    Unauthorized,
    #[error("the server could not find the requested resource")]
    UnknownResource,
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("too old resource version: {requested} ({oldest})")]
    Gone { requested: u64, oldest: u64 },
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn not_found(kind: &str, name: &str) -> Self {
        ApiError::NotFound {
            kind: kind.to_string(),
            name: name.to_string(),
        }
    }

    pub fn invalid(
        kind: &str,
        name: &str,
        field: &str,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ApiError::Invalid {
            kind: kind.to_string(),
            name: name.to_string(),
            causes: vec![Cause {
                reason,
                field: field.to_string(),
                message: message.into(),
            }],
        }
    }

    pub fn code(&self) -> StatusCode {
        match self {
            ApiError::NotFound { .. } | ApiError::UnknownResource => StatusCode::NOT_FOUND,
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Forbidden(_) | ApiError::Denied { .. } => StatusCode::FORBIDDEN,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Gone { .. } => StatusCode::GONE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::NotFound { .. } | ApiError::UnknownResource => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } => "Conflict",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Forbidden(_) | ApiError::Denied { .. } => "Forbidden",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            ApiError::Gone { .. } => "Expired",
            ApiError::Internal(_) => "InternalError",
        }
    }

    /// What `details` name: the object, its group and its resource (or kind, for `Invalid`).
    /// The variants carry the qualified name (`deployments.apps`, `Deployment.apps`, or just
    /// `services` in the core group) and resource and kind names hold no dot, so the first
    /// dot splits it, as `schema.GroupResource.String()` joins it.
    fn details(&self) -> Option<Details<'_>> {
        match self {
            ApiError::NotFound { kind, name }
            | ApiError::AlreadyExists { kind, name }
            | ApiError::Conflict { kind, name, .. } => {
                let (kind, group) = split(kind);
                Some(Details {
                    name,
                    group,
                    kind,
                    causes: Vec::new(),
                })
            }
            ApiError::Invalid { kind, name, causes } => {
                let (kind, group) = split(kind);
                Some(Details {
                    name,
                    group,
                    kind,
                    causes: causes
                        .iter()
                        .map(|c| CauseBody {
                            reason: c.reason,
                            message: &c.message,
                            field: &c.field,
                        })
                        .collect(),
                })
            }
            ApiError::Denied {
                name,
                group,
                resource,
                ..
            } => Some(Details {
                name: name.as_deref().unwrap_or_default(),
                group,
                kind: resource,
                causes: Vec::new(),
            }),
            // A path that names nothing served: kube-apiserver's NotFound handler answers
            // with empty details.
            ApiError::UnknownResource => Some(Details::default()),
            _ => None,
        }
    }

    /// The `metav1.Status` body as kube-apiserver writes it: its fields in the order of the
    /// Go struct and a trailing newline (Go's `json.Encoder` ends every value with one).
    pub fn body(&self) -> String {
        let message = self.to_string();
        status_text(&StatusBody {
            kind: "Status",
            api_version: "v1",
            metadata: Empty {},
            status: "Failure",
            message: Some(&message),
            reason: Some(self.reason()),
            details: self.details(),
            code: Some(self.code().as_u16()),
        })
    }

    /// The `metav1.Status` body as a JSON value (a watch's `ERROR` event carries it).
    pub fn status(&self) -> Value {
        serde_json::from_str(&self.body()).unwrap_or_default()
    }
}

/// The Status of a request that succeeded without an object to return (a delete of a
/// collection), in kube-apiserver's bytes.
pub fn success_body() -> String {
    status_text(&StatusBody {
        kind: "Status",
        api_version: "v1",
        metadata: Empty {},
        status: "Success",
        message: None,
        reason: None,
        details: None,
        code: None,
    })
}

fn status_text(body: &StatusBody<'_>) -> String {
    let mut text = serde_json::to_string(body).unwrap_or_default();
    text.push('\n');
    text
}

/// `deployments.apps` as (`deployments`, `apps`); `services` as (`services`, ``).
fn split(qualified: &str) -> (&str, &str) {
    qualified.split_once('.').unwrap_or((qualified, ""))
}

/// `metav1.Status`, its fields in the Go struct's order: serde_json's `Value` sorts keys (the
/// crate has no `preserve_order`), kube-apiserver writes them in declaration order.
#[derive(Serialize)]
struct StatusBody<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: Empty,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Details<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
}

#[derive(Serialize)]
struct Empty {}

/// `metav1.StatusDetails` (`name, group, kind, uid, causes`; empty ones omitted).
#[derive(Serialize, Default)]
struct Details<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    group: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    kind: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    causes: Vec<CauseBody<'a>>,
}

/// `metav1.StatusCause`.
#[derive(Serialize)]
struct CauseBody<'a> {
    reason: &'static str,
    message: &'a str,
    field: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.code(),
            [(header::CONTENT_TYPE, "application/json")],
            self.body(),
        )
            .into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_has_reason_code_and_details() {
        let s = ApiError::not_found("services", "web").status();
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["message"], "services \"web\" not found");
        assert_eq!(s["details"]["name"], "web");
    }

    #[test]
    fn invalid_lists_causes() {
        let e = ApiError::invalid(
            "Service",
            "web",
            "spec.ports[0].port",
            "FieldValueInvalid",
            "must be between 1 and 65535",
        );
        let s = e.status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["details"]["causes"][0]["field"], "spec.ports[0].port");
        assert!(
            s["message"]
                .as_str()
                .unwrap_or_default()
                .contains("Service \"web\" is invalid")
        );
    }

    /// The bytes kube-apiserver writes: fields in `metav1.Status` order, a group in the
    /// message and `details` of a grouped resource only, a trailing newline.
    #[test]
    fn bodies_are_kube_apiservers_bytes() {
        let cases = [
            (
                ApiError::not_found("services", "web"),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"services \"web\" not found","reason":"NotFound","details":{"name":"web","kind":"services"},"code":404}"#,
            ),
            (
                ApiError::not_found("deployments.apps", "web"),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"web\" not found","reason":"NotFound","details":{"name":"web","group":"apps","kind":"deployments"},"code":404}"#,
            ),
            (
                ApiError::AlreadyExists {
                    kind: "roles.rbac.authorization.k8s.io".into(),
                    name: "x".into(),
                },
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"roles.rbac.authorization.k8s.io \"x\" already exists","reason":"AlreadyExists","details":{"name":"x","group":"rbac.authorization.k8s.io","kind":"roles"},"code":409}"#,
            ),
            (
                ApiError::Invalid {
                    kind: "Deployment.apps".into(),
                    name: "web".into(),
                    causes: vec![
                        Cause {
                            reason: "FieldValueRequired",
                            field: "spec.selector".into(),
                            message: "Required value".into(),
                        },
                        Cause {
                            reason: "FieldValueInvalid",
                            field: "spec.replicas".into(),
                            message: "Invalid value: -1: must be greater than or equal to 0".into(),
                        },
                    ],
                },
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.replicas: Invalid value: -1: must be greater than or equal to 0]","reason":"Invalid","details":{"name":"web","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.selector"},{"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.replicas"}]},"code":422}"#,
            ),
            (
                ApiError::UnknownResource,
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}"#,
            ),
        ];
        for (error, want) in cases {
            assert_eq!(error.body(), format!("{want}\n"));
        }
        assert_eq!(
            success_body(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\"}\n"
        );
    }
}
