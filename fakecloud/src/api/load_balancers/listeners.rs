//! `/v1/load-balancers/listeners`.

use super::port_field;
use crate::api::common::{
    choice, created, existing_ref, list_answer, no_content, parse_body, path_uuid, show_answer,
};
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::load_balancers as lbm;
use crate::model::load_balancers::LISTENER_PROTOCOLS;
use crate::model::load_balancers::listeners::{ListenerPatch, NewListener, listener_errors};
use crate::model::store::State;
use crate::request::Body;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use ipnet::IpNet;
use serde_json::{Value, json};
use uuid::Uuid;

/// Validates `allowed_cidrs`: network addresses in CIDR notation (a bare IP is refused).
fn cidrs_field(body: &mut Body) -> Option<Vec<String>> {
    let list = body.string_list("allowed_cidrs")?;
    for entry in &list {
        let valid = entry.contains('/') && entry.parse::<IpNet>().is_ok_and(|n| n.trunc() == n);
        if !valid {
            body.error(
                "allowed_cidrs",
                format!("\"{entry}\": Enter a valid network address in CIDR notation."),
            );
            return None;
        }
    }
    Some(list)
}

fn timeout_field(body: &mut Body, key: &str) -> Option<i64> {
    let t = body.int(key, false)?;
    if t >= 1 {
        Some(t)
    } else {
        body.error(key, "Ensure this value is greater than or equal to 1.");
        None
    }
}

/// Records the model's objections to a listener's protocol and port.
fn check_listener(
    body: &mut Body,
    st: &State,
    lb: Uuid,
    pool: Option<Uuid>,
    protocol: &str,
    port: u16,
    except: Option<Uuid>,
) {
    for (key, msg) in listener_errors(st, lb, pool, protocol, port, except) {
        body.error(key, msg);
    }
}

pub(super) async fn list_listeners(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.listeners().values(), q.as_deref(), |r| r.view(ctx))
    })
}

pub(super) async fn show_listener(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.listeners().get(&id).map(|r| r.view(ctx)))
    })
}

pub(super) async fn create_listener(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let id = app.write(|st, now| {
        let name = body.string("name", true);
        let pool = existing_ref(&mut body, "pool", true, |p| st.pools().contains_key(&p));
        let protocol = choice(&mut body, "protocol", true, LISTENER_PROTOCOLS);
        let port = port_field(&mut body, "protocol_port", true);
        let cidrs = cidrs_field(&mut body).unwrap_or_default();
        let client = timeout_field(&mut body, "timeout_client_data_ms").unwrap_or(50_000);
        let connect = timeout_field(&mut body, "timeout_member_connect_ms").unwrap_or(5_000);
        let data = timeout_field(&mut body, "timeout_member_data_ms").unwrap_or(50_000);
        let tags = body.tags().unwrap_or_default();
        let (Some(name), Some(pool), Some(protocol), Some(port)) = (name, pool, protocol, port)
        else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        let lb = st
            .pools()
            .get(&pool)
            .map(|p| p.load_balancer)
            .ok_or(ApiError::NotFound)?;
        check_listener(&mut body, st, lb, Some(pool), &protocol, port, None);
        body.finish()?;
        lbm::listeners::create_listener(
            st,
            now,
            &timing,
            NewListener {
                name,
                pool,
                load_balancer: lb,
                protocol,
                protocol_port: port,
                allowed_cidrs: cidrs,
                timeout_client_data_ms: client,
                timeout_member_connect_ms: connect,
                timeout_member_data_ms: data,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.listeners().get(&id).map(|l| created(l.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

pub(super) async fn update_listener(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let current = st.listeners().get(&id).ok_or(ApiError::NotFound)?.clone();
        body.immutable(
            "pool",
            &current
                .pool
                .map(|p| json!({"uuid": p.to_string()}))
                .unwrap_or(Value::Null),
        );
        let name = body.string("name", false);
        let protocol = choice(&mut body, "protocol", false, LISTENER_PROTOCOLS);
        let port = port_field(&mut body, "protocol_port", false);
        let cidrs = cidrs_field(&mut body);
        let client = timeout_field(&mut body, "timeout_client_data_ms");
        let connect = timeout_field(&mut body, "timeout_member_connect_ms");
        let data = timeout_field(&mut body, "timeout_member_data_ms");
        let tags = body.tags();
        if body.ok_so_far() && (protocol.is_some() || port.is_some()) {
            let protocol = protocol.clone().unwrap_or_else(|| current.protocol.clone());
            let port = port.unwrap_or(current.protocol_port);
            check_listener(
                &mut body,
                st,
                current.load_balancer,
                current.pool,
                &protocol,
                port,
                Some(id),
            );
        }
        body.finish()?;
        lbm::listeners::update_listener(
            st,
            id,
            now,
            &timing,
            ListenerPatch {
                name,
                protocol,
                protocol_port: port,
                allowed_cidrs: cidrs,
                timeout_client_data_ms: client,
                timeout_member_connect_ms: connect,
                timeout_member_data_ms: data,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

pub(super) async fn delete_listener(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| lbm::listeners::delete_listener(st, id, now, &timing))?;
    Ok(no_content())
}
