//! API errors, rendered the way cloudscale.ch renders them: a flat JSON object whose values
//! are all strings (the Go SDK cannot decode anything else).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;

/// An error answered to an API client.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    #[error("not found")]
    NotFound,
    /// Field errors (key = request field name) or a `detail` message.
    #[error("{}", join_fields(.0))]
    BadRequest(BTreeMap<String, String>),
    #[error("unauthorized: {0}")]
    Unauthorized(&'static str),
    #[error("forbidden")]
    Forbidden,
    #[error("method {0} not allowed")]
    MethodNotAllowed(String),
    /// An error injected on purpose or a status a fault rule asks for.
    #[error("status {status}")]
    Status {
        status: StatusCode,
        body: BTreeMap<String, String>,
        retry_after: Option<u64>,
    },
}

pub type ApiResult<T> = Result<T, ApiError>;

/// `key: message; key: message`, with a bare message for `detail`.
fn join_fields(map: &BTreeMap<String, String>) -> String {
    map.iter()
        .map(|(k, v)| {
            if k == "detail" {
                v.clone()
            } else {
                format!("{k}: {v}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl ApiError {
    /// A 400 with one field error.
    pub fn field(key: &str, message: impl Into<String>) -> Self {
        let mut map = BTreeMap::new();
        map.insert(key.to_string(), message.into());
        ApiError::BadRequest(map)
    }

    /// A 400 with a non-field message.
    pub fn detail(message: impl Into<String>) -> Self {
        Self::field("detail", message)
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Status { status, .. } => *status,
        }
    }

    fn body(&self) -> BTreeMap<String, String> {
        let detail = |s: &str| BTreeMap::from([("detail".to_string(), s.to_string())]);
        match self {
            ApiError::NotFound => detail("Not found."),
            ApiError::BadRequest(map) => map.clone(),
            ApiError::Unauthorized(msg) => detail(msg),
            ApiError::Forbidden => detail("You do not have permission to perform this action."),
            ApiError::MethodNotAllowed(m) => detail(&format!("Method \"{m}\" not allowed.")),
            ApiError::Status { body, .. } => body.clone(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, axum::Json(self.body())).into_response();
        if let ApiError::Unauthorized(_) = self {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"api\""),
            );
        }
        if let ApiError::Status {
            retry_after: Some(secs),
            ..
        } = self
            && let Ok(value) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}
