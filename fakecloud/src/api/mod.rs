//! HTTP handlers, one module per API resource: they parse requests (through `request.rs`),
//! call the model (`crate::model`) and turn its results into responses. No resource rules
//! live here.

pub mod catalogue;
pub mod common;
pub mod custom_images;
pub mod floating_ips;
pub mod load_balancers;
pub mod metrics;
pub mod networks;
pub mod objects_users;
pub mod project_logs;
pub mod routers;
pub mod server_groups;
pub mod servers;
pub mod volume_snapshots;
pub mod volumes;

use crate::app::App;
use axum::Router;

pub use common::{
    ListQuery, choice, created, existing_ref, json_response, no_content, ok, parse_body, path_uuid,
};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(catalogue::routes())
        .merge(servers::routes())
        .merge(server_groups::routes())
        .merge(networks::routes())
        .merge(floating_ips::routes())
        .merge(load_balancers::routes())
        .merge(volumes::routes())
        .merge(volume_snapshots::routes())
        .merge(objects_users::routes())
        .merge(routers::routes())
        .merge(metrics::routes())
        .merge(project_logs::routes())
        .merge(custom_images::routes())
}
