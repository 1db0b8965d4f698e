//! Server groups (`/v1/server-groups`): anti-affinity groups; members are the servers that
//! name the group.

use super::{ListQuery, choice, created, no_content, ok, parse_body, path_uuid};
use crate::app::{App, Base};
use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::resources::servers::zone_field;
use crate::state::{Ctx, Tags};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as AxState};
use axum::response::Response;
use axum::routing::get;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerGroup {
    pub uuid: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub zone: String,
    pub tags: Tags,
    pub created_at: Time,
}

impl ServerGroup {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("server-groups", self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "type": self.kind,
            "zone": Ctx::zone_stub(&self.zone),
            "servers": ctx.st.servers.values()
                .filter(|s| s.server_groups.contains(&self.uuid))
                .map(|s| ctx.server_stub(s.uuid))
                .collect::<Vec<_>>(),
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/server-groups", get(list).post(create))
        .route(
            "/server-groups/{uuid}",
            get(show).patch(update).delete(delete),
        )
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    let q = ListQuery::parse(q.as_deref());
    ok(app.read(&base, |ctx| {
        Value::Array(
            ctx.st
                .server_groups
                .values()
                .filter(|g| q.matches(Some(&g.name), &g.tags))
                .map(|g| g.render(ctx))
                .collect(),
        )
    }))
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        ctx.st.server_groups.get(&id).map(|g| ok(g.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
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
        let uuid = st.ids.new_uuid();
        st.server_groups.insert(
            uuid,
            ServerGroup {
                uuid,
                name,
                kind,
                zone,
                tags,
                created_at: now,
            },
        );
        Ok(uuid)
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
        let group = st.server_groups.get_mut(&id).ok_or(ApiError::NotFound)?;
        body.immutable("type", &json!(group.kind));
        body.immutable("zone", &json!({"slug": group.zone}));
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        if let Some(n) = name {
            group.name = n;
        }
        if let Some(t) = tags {
            group.tags = t;
        }
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, _| {
        st.server_groups
            .shift_remove(&id)
            .ok_or(ApiError::NotFound)?;
        for s in st.servers.values_mut() {
            s.server_groups.retain(|g| *g != id);
        }
        Ok(no_content())
    })
}
