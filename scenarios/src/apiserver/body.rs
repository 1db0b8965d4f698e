//! A request body as the REST verbs read it: JSON, YAML or protobuf by its content type.

use super::status::{ApiError, ApiResult};
use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

/// The body decoded by its `Content-Type` (JSON when none is given); an empty body is `{}`.
pub(super) fn decode_body(headers: &HeaderMap, body: &[u8]) -> ApiResult<Value> {
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
