//! `/v1/load-balancers/pools/{pool}/members`.

use super::port_field;
use crate::api::common::{
    created, existing_ref, list_answer, no_content, parse_body, path_uuid, show_answer,
};
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::load_balancers as lbm;
use crate::model::load_balancers::members::{
    MemberPatch, NewMember, member_address_error, member_of,
};
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use serde_json::json;
use std::net::IpAddr;

pub(super) async fn list_members(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(pool): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let pool = path_uuid(&pool)?;
    app.read(&base, |ctx| {
        if !ctx.st.pools().contains_key(&pool) {
            return Err(ApiError::NotFound);
        }
        let members = ctx.st.members().of_pool(pool);
        Ok(list_answer(members, q.as_deref(), |r| r.view(ctx)))
    })
}

pub(super) async fn show_member(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path((pool, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (pool, id) = (path_uuid(&pool)?, path_uuid(&id)?);
    app.read(&base, |ctx| {
        let member = ctx.st.members().get(&id).filter(|m| m.pool == pool);
        show_answer(member.map(|r| r.view(ctx)))
    })
}

pub(super) async fn create_member(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(pool): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let pool = path_uuid(&pool)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let refuse_duplicates = !app.rules().duplicate_members.is_lenient();
    let id = app.write(|st, now| {
        if !st.pools().contains_key(&pool) {
            return Err(ApiError::NotFound);
        }
        let name = body.string("name", true);
        let enabled = body.boolean("enabled").unwrap_or(true);
        let protocol_port = port_field(&mut body, "protocol_port", true);
        let monitor_port = match body.nullable_int("monitor_port") {
            Some(Some(_)) => port_field(&mut body, "monitor_port", false),
            _ => None,
        };
        let address = body.string("address", true);
        let subnet = existing_ref(&mut body, "subnet", true, |s| st.subnets.contains_key(&s));
        let tags = body.tags().unwrap_or_default();
        let address = address.and_then(|a| match a.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                body.error("address", "Enter a valid IPv4 or IPv6 address.");
                None
            }
        });
        if let Some(ip) = address
            && let Some(msg) =
                member_address_error(st, pool, ip, subnet, protocol_port, !refuse_duplicates)
        {
            body.error("address", msg);
        }
        let (Some(name), Some(protocol_port), Some(address), Some(subnet)) =
            (name, protocol_port, address, subnet)
        else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        lbm::members::create_member(
            st,
            now,
            &timing,
            NewMember {
                pool,
                name,
                enabled,
                protocol_port,
                monitor_port,
                address,
                subnet,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.members().get(&id).map(|m| created(m.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

pub(super) async fn update_member(
    AxState(app): AxState<App>,
    Path((pool, id)): Path<(String, String)>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let (pool, id) = (path_uuid(&pool)?, path_uuid(&id)?);
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let member = member_of(st, pool, id).ok_or(ApiError::NotFound)?;
        body.immutable("protocol_port", &json!(member.protocol_port));
        body.immutable("monitor_port", &json!(member.monitor_port));
        body.immutable("address", &json!(member.address.to_string()));
        body.immutable("subnet", &json!({"uuid": member.subnet.to_string()}));
        let name = body.string("name", false);
        let enabled = body.boolean("enabled");
        let tags = body.tags();
        body.finish()?;
        lbm::members::update_member(
            st,
            pool,
            id,
            now,
            &timing,
            MemberPatch {
                name,
                enabled,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

pub(super) async fn delete_member(
    AxState(app): AxState<App>,
    Path((pool, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (pool, id) = (path_uuid(&pool)?, path_uuid(&id)?);
    let timing = app.config().timing.clone();
    app.write(|st, now| lbm::members::delete_member(st, pool, id, now, &timing))?;
    Ok(no_content())
}
