//! `GET /v1/regions`, `/v1/flavors`, `/v1/images`, `/v1/load-balancers/flavors`.

use super::common::ok;
use crate::app::App;
use crate::catalogue::{FLAVORS, IMAGES, lb_flavors_json, regions_json};
use axum::Router;
use axum::response::Response;
use axum::routing::get;
use serde_json::Value;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/regions", get(regions))
        .route("/flavors", get(flavors))
        .route("/images", get(images))
        .route("/load-balancers/flavors", get(lb_flavors))
}

async fn regions() -> Response {
    ok(regions_json())
}

async fn flavors() -> Response {
    ok(Value::Array(FLAVORS.iter().map(|f| f.to_json()).collect()))
}

async fn images() -> Response {
    ok(Value::Array(IMAGES.iter().map(|i| i.to_json()).collect()))
}

async fn lb_flavors() -> Response {
    ok(lb_flavors_json())
}
