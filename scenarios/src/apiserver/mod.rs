//! An embedded Kubernetes API server: real HTTP, real wire formats, for the resources the CCM
//! and its testbed use. kube-rs controllers and kubectl talk to it as to a real cluster.
//!
//! What it offers, all from here: the [`ApiServer`] with its [`ApiServerConfig`], its state
//! ([`Shared`]) and request log ([`RequestRecord`], [`verb_counts`]); the discovery and
//! OpenAPI documents it serves ([`group_list`], [`v2_json`], [`v3_document`], …), for the
//! tests that serve them elsewhere; and its protobuf body decoder ([`decode_body`]).

mod apiservices;
// The workload controllers (`src/workloads/`) share the label selectors of `apps` and the
// cron schedules of `cron`.
pub(crate) mod apps;
mod batch;
mod body;
mod cluster_ips;
pub(crate) mod cron;
mod discovery;
mod events;
mod http;
mod objects;
mod openapi;
mod patch;
mod propagation;
mod protobuf;
// The testbed installs the CCM's identity (`src/testbed/ccm_identity.rs`) and the
// simulation serves the router on its own transport, as the administrator.
pub(crate) mod rbac;
pub(crate) mod registry;
mod replication;
mod selectors;
pub(crate) mod serve;
mod server;
mod services;
mod status;
mod store;
mod tables;
mod tls;
mod tokens;
mod watch;

pub use discovery::{core_versions, group, group_list, resource_list, version};
pub use openapi::{
    V2_PROTOBUF_CONTENT_TYPE, encode_v2, v2_json, v2_protobuf, v3_discovery, v3_document,
};
pub use protobuf::{ProtobufError, decode_body};
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
