//! `/v1/volume-snapshots` handlers.

use super::common::{created, list_answer, no_content, parse_body, path_uuid, show_answer};
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::volume_snapshots::{
    NewSnapshot, SnapshotPatch, create_snapshot, delete_snapshot, update_snapshot,
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
        .route("/volume-snapshots", get(list).post(create))
        .route(
            "/volume-snapshots/{uuid}",
            get(show).patch(update).delete(delete),
        )
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(
            ctx.st
                .volume_snapshots()
                .values()
                .filter(|s| !s.gone(ctx.now)),
            q.as_deref(),
            |r| r.view(ctx),
        )
    })
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(
            ctx.st
                .volume_snapshots()
                .get(&id)
                .filter(|s| !s.gone(ctx.now))
                .map(|r| r.view(ctx)),
        )
    })
}

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let name = body.string("name", true);
    let source = body.uuid("source_volume", true);
    let tags = body.tags().unwrap_or_default();
    let (Some(name), Some(source)) = (name, source) else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    body.finish()?;
    let new = NewSnapshot {
        name,
        source_volume: source,
        tags,
        settled: false,
    };
    let id = app.write(|st, now| create_snapshot(st, now, new))?;
    app.read(&base, |ctx| {
        ctx.st
            .volume_snapshots()
            .get(&id)
            .map(|s| created(s.render(ctx)))
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
    app.write(|st, now| {
        let s = st
            .volume_snapshots()
            .get(&id)
            .filter(|s| !s.gone(now))
            .ok_or(ApiError::NotFound)?;
        body.immutable("source_volume", &json!({"uuid": s.source_volume}));
        body.immutable("zone", &json!({"slug": s.zone}));
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        update_snapshot(st, id, now, SnapshotPatch { name, tags })?;
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, now| delete_snapshot(st, id, now))?;
    Ok(no_content())
}
