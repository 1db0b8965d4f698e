//! `/v1/objects-users` handlers. Users are addressed by their hex `id`, not a UUID: any
//! path segment that names no user is a 404.

use super::common::{created, list_answer, no_content, parse_body, show_answer};
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::objects_users::{
    ObjectsUserPatch, create_objects_user, delete_objects_user, update_objects_user,
};
use crate::request::NOT_BLANK;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::get;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/objects-users", get(list).post(create))
        .route(
            "/objects-users/{id}",
            get(show).patch(update).delete(delete),
        )
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.objects_users().values(), q.as_deref(), |r| {
            r.view(ctx)
        })
    })
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    app.read(&base, |ctx| {
        show_answer(ctx.st.objects_users().get(&id).map(|r| r.view(ctx)))
    })
}

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let display_name = body.string("display_name", true);
    let tags = body.tags().unwrap_or_default();
    let Some(display_name) = display_name else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    body.finish()?;
    let id = app.write(|st, now| Ok(create_objects_user(st, now, display_name, tags)))?;
    app.read(&base, |ctx| {
        ctx.st
            .objects_users()
            .get(&id)
            .map(|u| created(u.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    app.write(|st, _| {
        if !st.objects_users().contains_key(&id) {
            return Err(ApiError::NotFound);
        }
        let display_name = body.string("display_name", false);
        if display_name.as_deref() == Some("") {
            body.error("display_name", NOT_BLANK);
        }
        let tags = body.tags();
        body.finish()?;
        update_objects_user(st, &id, ObjectsUserPatch { display_name, tags })?;
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    app.write(|st, _| delete_objects_user(st, &id))?;
    Ok(no_content())
}
