//! `/v1/volumes` handlers and the revert action.

use super::common::{choice, created, list_answer, no_content, parse_body, path_uuid, show_answer};
use super::servers::zone_field;
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::volumes::{
    VOLUME_TYPES, VolumePatch, VolumeSource, create_volume, delete_volume, revert_volume,
    size_error, update_volume,
};
use crate::request::{Body, NOT_UUID, parse_uuid};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};
use uuid::Uuid;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/volumes", get(list).post(create))
        .route("/volumes/{uuid}", get(show).patch(update).delete(delete))
        .route("/volumes/{uuid}/revert", post(revert))
}

/// The attachment fields: `server_uuids`, or its alias `servers` (Ansible). `None`: not
/// sent; `Some(None)`: `[]` (detached); `Some(Some(s))`: attached to `s`.
fn attachment(body: &mut Body) -> Option<Option<Uuid>> {
    let key = if body.has("server_uuids") {
        "server_uuids"
    } else if body.has("servers") {
        "servers"
    } else {
        return None;
    };
    let list = body.string_list(key)?;
    match list.as_slice() {
        [] => Some(None),
        [one] => match parse_uuid(one) {
            Some(id) => Some(Some(id)),
            None => {
                body.error(key, NOT_UUID);
                None
            }
        },
        _ => {
            body.error(
                key,
                "Currently a volume can only be attached to one server.",
            );
            None
        }
    }
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.volumes().values(), q.as_deref(), |r| r.view(ctx))
    })
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.volumes().get(&id).map(|r| r.view(ctx)))
    })
}

/// Fields that cannot come with `volume_snapshot_uuid` (inherited from the snapshot, or set
/// by a later PATCH). An empty list or `null` is harmless [INF].
const NOT_WITH_SNAPSHOT: [&str; 5] = ["size_gb", "type", "zone", "server_uuids", "servers"];

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let name = body.string("name", true);
    let tags = body.tags().unwrap_or_default();
    let snapshot = body.uuid("volume_snapshot_uuid", false);
    let source = if let Some(sn) = snapshot {
        for key in NOT_WITH_SNAPSHOT {
            let harmless = match body.raw(key) {
                None | Some(Value::Null) => true,
                Some(Value::Array(a)) => a.is_empty(),
                Some(_) => false,
            };
            if !harmless {
                body.error(
                    key,
                    "This field cannot be used together with volume_snapshot_uuid.",
                );
            }
        }
        Some(VolumeSource::Snapshot(sn))
    } else if body.has_error("volume_snapshot_uuid") {
        None
    } else {
        let size = body.int("size_gb", true);
        let kind = if body.has("type") {
            choice(&mut body, "type", false, &VOLUME_TYPES)
        } else {
            Some("ssd".to_string())
        };
        let zone = zone_field(&mut body).unwrap_or_else(|| app.config().default_zone.clone());
        let server = attachment(&mut body).flatten();
        if let (Some(size), Some(kind)) = (size, &kind)
            && let Some(msg) = size_error(kind, size, false)
        {
            body.error("size_gb", msg);
        }
        match (size, kind) {
            (Some(size_gb), Some(kind)) => Some(VolumeSource::Empty {
                size_gb,
                kind,
                zone,
                server,
            }),
            _ => None,
        }
    };
    let (Some(name), Some(source)) = (name, source) else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    body.finish()?;
    let id = app.write(|st, now| create_volume(st, now, name, tags, source))?;
    app.read(&base, |ctx| {
        ctx.st.volumes().get(&id).map(|v| created(v.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

/// The attributes of which one PATCH may change only one (`tags` may come along [INF]).
fn attributes_sent(body: &Body) -> usize {
    let attach = body.has("server_uuids") || body.has("servers");
    ["name", "size_gb"].iter().filter(|k| body.has(k)).count() + usize::from(attach)
}

async fn update(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    app.write(|st, _| {
        let v = st.volumes().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("type", &json!(v.kind));
        body.immutable("zone", &json!({"slug": v.zone}));
        if attributes_sent(&body) > 1 {
            return Err(ApiError::detail(
                "Only one attribute can be changed at a time.",
            ));
        }
        let name = body.string("name", false);
        let size_gb = body.int("size_gb", false);
        let server = attachment(&mut body);
        let tags = body.tags();
        body.finish()?;
        update_volume(
            st,
            id,
            VolumePatch {
                name,
                size_gb,
                server,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, now| delete_volume(st, id, now))?;
    Ok(no_content())
}

async fn revert(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    if body.has("tags") {
        body.error("tags", "Tags cannot be set when reverting a volume.");
    }
    let snapshot = body.uuid("snapshot", true);
    body.finish()?;
    let Some(snapshot) = snapshot else {
        return Err(ApiError::field("snapshot", crate::request::REQUIRED));
    };
    app.write(|st, now| revert_volume(st, id, snapshot, now))?;
    Ok(no_content())
}
