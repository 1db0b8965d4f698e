//! `/v1/routers` and `/v1/routers/{uuid}/interfaces` handlers.

use super::common::{created, list_answer, no_content, parse_body, path_uuid, show_answer};
use super::servers::zone_field;
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::routers::{
    AddressRequest, NewInterface, NewRouter, RouterPatch, create_interface, create_router,
    delete_interface, delete_router, update_router,
};
use crate::request::{Body, NOT_BLANK, parse_uuid};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::{delete, get, post};
use serde_json::{Map, Value, json};
use std::net::IpAddr;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/routers", get(list).post(create))
        .route("/routers/{uuid}", get(show).patch(update).delete(remove))
        .route("/routers/{uuid}/interfaces", post(create_iface))
        .route(
            "/routers/{uuid}/interfaces/{interface}",
            delete(remove_iface),
        )
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.routers().values(), q.as_deref(), |r| r.view(ctx))
    })
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.routers().get(&id).map(|r| r.view(ctx)))
    })
}

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let name = body.string("name", true);
    let zone = zone_field(&mut body).unwrap_or_else(|| app.config().default_zone.clone());
    let internet_gateway = body.boolean("internet_gateway").unwrap_or(false);
    let tags = body.tags().unwrap_or_default();
    let Some(name) = name.filter(|_| body.ok_so_far()) else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    let new = NewRouter {
        name,
        zone,
        internet_gateway,
        tags,
        settled: false,
    };
    let id = app.write(|st, now| create_router(st, now, new))?;
    app.read(&base, |ctx| {
        ctx.st.routers().get(&id).map(|r| created(r.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    app.write(|st, _| {
        let r = st.routers().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("zone", &json!({"slug": r.zone}));
        let name = body.string("name", false);
        if name.as_deref() == Some("") {
            body.error("name", NOT_BLANK);
        }
        let internet_gateway = body.boolean("internet_gateway");
        let tags = body.tags();
        body.finish()?;
        let patch = RouterPatch {
            name,
            internet_gateway,
            tags,
        };
        update_router(st, id, patch)?;
        Ok(no_content())
    })
}

async fn remove(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, _| delete_router(st, id))?;
    Ok(no_content())
}

/// One entry of `addresses`: `subnet` and `address` may each be absent, `null` or `""`
/// (the Go SDK sends empty strings for what it leaves out).
fn address_request(item: &Map<String, Value>) -> Result<AddressRequest, String> {
    let text = |key: &str| -> Result<Option<&str>, String> {
        match item.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(format!("{key}: Not a valid string.")),
        }
    };
    let subnet = match text("subnet")? {
        None => None,
        Some(s) => {
            Some(parse_uuid(s).ok_or_else(|| format!("subnet: \"{s}\" is not a valid UUID."))?)
        }
    };
    let address = match text("address")? {
        None => None,
        Some(a) => Some(
            a.parse::<IpAddr>()
                .map_err(|_| format!("address: \"{a}\" is not a valid IP address."))?,
        ),
    };
    Ok(AddressRequest { subnet, address })
}

/// `addresses`: absent, `null` or `[]` leave the choice to fakecloud.
fn addresses_field(body: &mut Body) -> Vec<AddressRequest> {
    if matches!(body.raw("addresses"), None | Some(Value::Null)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for item in body.object_list("addresses").unwrap_or_default() {
        match address_request(&item) {
            Ok(a) => out.push(a),
            Err(msg) => {
                body.error("addresses", msg);
                break;
            }
        }
    }
    out
}

async fn create_iface(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let router = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let network = body.uuid("network", true);
    let addresses = addresses_field(&mut body);
    let Some(network) = network.filter(|_| body.ok_so_far()) else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    let new = NewInterface { network, addresses };
    let iface = app.write(|st, _| create_interface(st, router, new))?;
    app.read(&base, |ctx| {
        ctx.st
            .routers()
            .get(&router)
            .and_then(|r| r.interfaces.iter().find(|i| i.uuid == iface))
            .map(|i| created(i.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn remove_iface(
    AxState(app): AxState<App>,
    Path((id, iface)): Path<(String, String)>,
) -> ApiResult<Response> {
    let router = path_uuid(&id)?;
    let iface = path_uuid(&iface)?;
    app.write(|st, _| delete_interface(st, router, iface))?;
    Ok(no_content())
}
