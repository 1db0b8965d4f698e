//! `/v1/server-groups` handlers.

use super::common::{choice, created, list_answer, no_content, parse_body, path_uuid, show_answer};
use super::servers::zone_field;
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::server_groups::{
    GroupPatch, NewServerGroup, delete_server_group, insert_server_group, update_server_group,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/server-groups", get(list).post(create))
        .route(
            "/server-groups/{uuid}",
            get(show).patch(update).delete(delete),
        )
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.server_groups.values(), q.as_deref(), |r| {
            r.render(ctx)
        })
    })
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.server_groups.get(&id).map(|r| r.render(ctx)))
    })
}

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let name = body.string("name", true);
    let kind = choice(&mut body, "type", true, &["anti-affinity"]);
    let zone = zone_field(&mut body).unwrap_or_else(|| app.config().default_zone.clone());
    let tags = body.tags().unwrap_or_default();
    let (Some(name), Some(kind)) = (name, kind) else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    body.finish()?;
    let id = app.write(|st, now| {
        Ok(insert_server_group(
            st,
            now,
            NewServerGroup {
                name,
                kind,
                zone,
                tags,
            },
        ))
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .server_groups
            .get(&id)
            .map(|g| created(g.render(ctx)))
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
        let group = st.server_groups.get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("type", &json!(group.kind));
        body.immutable("zone", &json!({"slug": group.zone}));
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        update_server_group(st, id, GroupPatch { name, tags })?;
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, _| {
        delete_server_group(st, id)?;
        Ok(no_content())
    })
}
