//! An embedded Kubernetes API server: real HTTP, real wire formats, for the resources the CCM
//! and its testbed use. kube-rs controllers and kubectl talk to it as to a real cluster.

pub mod apiservices;
pub mod apps;
pub mod batch;
mod body;
mod cluster_ips;
pub mod cron;
pub mod discovery;
pub mod events;
mod http;
mod objects;
pub mod openapi;
pub mod patch;
pub mod propagation;
pub mod protobuf;
pub mod rbac;
pub mod registry;
pub mod replication;
pub mod selectors;
pub mod serve;
pub mod server;
pub mod services;
pub mod status;
pub mod store;
pub mod tables;
pub mod tls;
mod tokens;
mod watch;

pub use serve::ApiServer;
pub use server::{ApiServerConfig, RequestRecord, Shared, verb_counts};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// `/openapi/v2` (protobuf when asked for, else JSON), `/openapi/v3` and its documents.
pub(crate) fn openapi_response(
    segments: &[&str],
    headers: &HeaderMap,
    _query: Option<&str>,
) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    match segments {
        ["openapi", "v2"] if accept.contains("protobuf") => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, openapi::V2_PROTOBUF_CONTENT_TYPE)],
            openapi::v2_protobuf(),
        )
            .into_response(),
        ["openapi", "v2"] => axum::Json(openapi::v2_json()).into_response(),
        ["openapi", "v3"] => axum::Json(openapi::v3_discovery()).into_response(),
        ["openapi", "v3", rest @ ..] => match openapi::v3_document(&rest.join("/")) {
            Some(doc) => axum::Json(doc).into_response(),
            None => status::ApiError::UnknownResource.into_response(),
        },
        _ => status::ApiError::UnknownResource.into_response(),
    }
}
