//! `/v1/load-balancers` and `/v1/load-balancers/{uuid}`.

use crate::api::common::{created, list_answer, no_content, parse_body, path_uuid, show_answer};
use crate::app::{App, Base};
use crate::catalogue::{LB_FLAVOR_SLUG, zone_choices, zone_exists};
use crate::error::{ApiError, ApiResult};
use crate::model::load_balancers::Vip;
use crate::model::load_balancers::load_balancer::{
    LoadBalancerPatch, NewLoadBalancer, create_load_balancer, delete_load_balancer,
    update_load_balancer,
};
use crate::request::{Body, REQUIRED};
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use serde_json::Value;
use std::net::IpAddr;
use uuid::Uuid;

pub(super) async fn list_lbs(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.load_balancers().values(), q.as_deref(), |r| {
            r.view(ctx)
        })
    })
}

pub(super) async fn show_lb(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.load_balancers().get(&id).map(|r| r.view(ctx)))
    })
}

/// Reads `vip_addresses` entries: `(subnet, optional address)`; errors go under
/// `vip_addresses`, flat.
fn vip_requests(body: &mut Body) -> Option<Vec<(Uuid, Option<IpAddr>)>> {
    let items = body.object_list("vip_addresses")?;
    let mut out = Vec::new();
    for item in items {
        let subnet = match item.get("subnet") {
            Some(Value::String(s)) => match crate::request::parse_uuid(s) {
                Some(u) => u,
                None => {
                    body.error("vip_addresses", crate::request::NOT_UUID);
                    return None;
                }
            },
            None | Some(Value::Null) => {
                body.error("vip_addresses", format!("subnet: {REQUIRED}"));
                return None;
            }
            Some(_) => {
                body.error("vip_addresses", crate::request::NOT_UUID);
                return None;
            }
        };
        let address = match item.get("address") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => match s.parse::<IpAddr>() {
                Ok(a) => Some(a),
                Err(_) => {
                    body.error(
                        "vip_addresses",
                        format!("\"{s}\" is not a valid IP for the specified subnet."),
                    );
                    return None;
                }
            },
            Some(_) => {
                body.error("vip_addresses", crate::request::NOT_STRING);
                return None;
            }
        };
        out.push((subnet, address));
    }
    Some(out)
}

pub(super) async fn create_lb(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let id = app.write(|st, now| {
        let name = body.string("name", true);
        let flavor = body.string("flavor", true);
        if let Some(f) = &flavor
            && f != LB_FLAVOR_SLUG
        {
            body.error("flavor", format!("\"{f}\" is not a valid choice."));
        }
        let zone = body.string("zone", true);
        if let Some(z) = &zone
            && !zone_exists(z)
        {
            body.error(
                "zone",
                format!(
                    "\"{z}\" is not a valid choice. Choose one of {}.",
                    zone_choices()
                ),
            );
        }
        let vips = vip_requests(&mut body).unwrap_or_default();
        let tags = body.tags().unwrap_or_default();
        let (Some(name), Some(zone)) = (name, zone) else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        create_load_balancer(
            st,
            now,
            &timing,
            NewLoadBalancer {
                name,
                zone,
                vips,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .load_balancers()
            .get(&id)
            .map(|l| created(l.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

pub(super) async fn update_lb(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let current = app.read(&base, |ctx| {
        ctx.st.load_balancers().get(&id).map(|l| l.render(ctx))
    });
    let current = current.ok_or(ApiError::NotFound)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let lb = st.load_balancers().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("zone", &current["zone"]);
        body.immutable("flavor", &current["flavor"]);
        if body.has("vip_addresses") && !same_vips(body.raw("vip_addresses"), &lb.vip_addresses) {
            body.error("vip_addresses", crate::request::IMMUTABLE);
        }
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        update_load_balancer(st, id, now, &timing, LoadBalancerPatch { name, tags })?;
        Ok(no_content())
    })
}

/// Whether a PATCH's `vip_addresses` repeats the current VIPs (subnet and address).
fn same_vips(sent: Option<&Value>, current: &[Vip]) -> bool {
    let Some(Value::Array(items)) = sent else {
        return false;
    };
    items.len() == current.len()
        && items.iter().zip(current).all(|(item, vip)| {
            let subnet_ok = match item.get("subnet") {
                Some(Value::String(s)) => *s == vip.subnet.to_string(),
                Some(Value::Object(o)) => {
                    o.get("uuid").and_then(Value::as_str) == Some(&vip.subnet.to_string())
                }
                _ => false,
            };
            let address_ok = match item.get("address") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.parse::<IpAddr>().ok() == Some(vip.address),
                _ => false,
            };
            subnet_ok && address_ok
        })
}

pub(super) async fn delete_lb(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, now| delete_load_balancer(st, id, now))?;
    Ok(no_content())
}
