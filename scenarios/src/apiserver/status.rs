//! API errors as `metav1.Status` objects with the reason and code a real API server uses.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

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
    #[error("{kind} \"{name}\" is invalid: {}", causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>().join(", "))]
    Invalid {
        /// `Service`, `Node`, ...
        kind: String,
        name: String,
        causes: Vec<Cause>,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    /// Refused by the authorizer: `details` name the object, its group and resource.
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

    /// The `metav1.Status` body.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code().as_u16(),
        });
        match self {
            ApiError::NotFound { kind, name }
            | ApiError::AlreadyExists { kind, name }
            | ApiError::Conflict { kind, name, .. } => {
                status["details"] = json!({"name": name, "kind": kind});
            }
            ApiError::Invalid { kind, name, causes } => {
                status["details"] = json!({
                    "name": name,
                    "kind": kind,
                    "causes": causes.iter().map(|c| json!({
                        "reason": c.reason, "message": c.message, "field": c.field,
                    })).collect::<Vec<_>>(),
                });
            }
            ApiError::Denied {
                name,
                group,
                resource,
                ..
            } => {
                let mut details = json!({"kind": resource});
                if let Some(name) = name {
                    details["name"] = json!(name);
                }
                if !group.is_empty() {
                    details["group"] = json!(group);
                }
                status["details"] = details;
            }
            _ => {}
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.code(), axum::Json(self.status())).into_response()
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
}
