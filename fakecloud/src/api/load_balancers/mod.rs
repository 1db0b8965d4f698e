//! `/v1/load-balancers/…` handlers: load balancers, pools, members, listeners, health
//! monitors, one module each. They parse and check request fields, then call
//! `model::load_balancers`, which alone changes the records and keeps the data plane in step.

mod health_monitors;
mod listeners;
mod load_balancer;
mod members;
mod pools;

use crate::app::App;
use crate::request::Body;
use axum::Router;
use axum::routing::get;
use health_monitors::*;
use listeners::*;
use load_balancer::*;
use members::*;
use pools::*;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/load-balancers", get(list_lbs).post(create_lb))
        .route(
            "/load-balancers/{uuid}",
            get(show_lb).patch(update_lb).delete(delete_lb),
        )
        .route("/load-balancers/pools", get(list_pools).post(create_pool))
        .route(
            "/load-balancers/pools/{uuid}",
            get(show_pool)
                .patch(update_pool)
                .delete(delete_pool_handler),
        )
        .route(
            "/load-balancers/pools/{pool}/members",
            get(list_members).post(create_member),
        )
        .route(
            "/load-balancers/pools/{pool}/members/{uuid}",
            get(show_member).patch(update_member).delete(delete_member),
        )
        .route(
            "/load-balancers/listeners",
            get(list_listeners).post(create_listener),
        )
        .route(
            "/load-balancers/listeners/{uuid}",
            get(show_listener)
                .patch(update_listener)
                .delete(delete_listener),
        )
        .route(
            "/load-balancers/health-monitors",
            get(list_monitors).post(create_monitor),
        )
        .route(
            "/load-balancers/health-monitors/{uuid}",
            get(show_monitor)
                .patch(update_monitor)
                .delete(delete_monitor),
        )
}

/// Validates a port number field (1-65535).
fn port_field(body: &mut Body, key: &str, required: bool) -> Option<u16> {
    let p = body.int(key, required)?;
    if (1..=65535).contains(&p) {
        Some(p as u16)
    } else {
        body.error(key, format!("The {key} must be between 1 and 65535."));
        None
    }
}
