//! `/v1/custom-images` and `/v1/custom-images/import` handlers. The static `import` segment
//! is routed before the `{uuid}` one (axum prefers static segments), so an import is never
//! taken for an image.

use super::common::{choice, created, list_answer, no_content, parse_body, path_uuid, show_answer};
use crate::app::{App, Base};
use crate::catalogue::{zone_choices, zone_exists};
use crate::error::{ApiError, ApiResult};
use crate::model::custom_images::{
    CustomImagePatch, FIRMWARE_TYPES, NewImport, SOURCE_FORMATS, USER_DATA_HANDLINGS,
    delete_custom_image, import_custom_image, is_import_url, update_custom_image,
};
use crate::request::{Body, IMMUTABLE, NOT_BLANK};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/custom-images", get(list))
        .route("/custom-images/import", get(list_imports).post(import))
        .route("/custom-images/import/{uuid}", get(show_import))
        .route(
            "/custom-images/{uuid}",
            get(show).patch(update).delete(delete),
        )
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(
            ctx.st
                .custom_images()
                .values()
                .filter(|i| i.visible(ctx.now)),
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
                .custom_images()
                .get(&id)
                .filter(|i| i.visible(ctx.now))
                .map(|r| r.view(ctx)),
        )
    })
}

async fn list_imports(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.custom_image_imports().values(), q.as_deref(), |r| {
            r.view(ctx)
        })
    })
}

/// An unknown UUID is a 404 (the real API answers 500 here; every client accepts a 404).
async fn show_import(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.custom_image_imports().get(&id).map(|r| r.view(ctx)))
    })
}

/// `url`: an http(s) URL; nothing is fetched.
fn url_field(body: &mut Body) -> Option<String> {
    let url = body.string("url", true)?;
    if is_import_url(&url) {
        Some(url)
    } else {
        body.error("url", "Enter a valid URL.");
        None
    }
}

/// `slug`: absent or `null` is no slug; a blank one is refused.
fn slug_field(body: &mut Body) -> Option<Option<String>> {
    match body.nullable_string("slug")? {
        Some(s) if s.is_empty() => {
            body.error("slug", NOT_BLANK);
            None
        }
        other => Some(other),
    }
}

/// A choice with a default when absent or `null` (clients send their own defaults or null).
fn choice_or(body: &mut Body, key: &str, allowed: &[&str], default: &str) -> Option<String> {
    match body.raw(key) {
        None | Some(Value::Null) => Some(default.to_string()),
        Some(_) => choice(body, key, true, allowed),
    }
}

/// `zones`: a non-empty list of known zone slugs; repeats count once.
fn zones_field(body: &mut Body) -> Option<Vec<String>> {
    if !body.has("zones") {
        body.error("zones", crate::request::REQUIRED);
        return None;
    }
    let list = body.string_list("zones")?;
    if list.is_empty() {
        body.error("zones", "This list may not be empty.");
        return None;
    }
    let mut zones: Vec<String> = Vec::with_capacity(list.len());
    for z in list {
        if !zone_exists(&z) {
            body.error(
                "zones",
                format!(
                    "\"{z}\" is not a valid choice. Choose one of {}.",
                    zone_choices()
                ),
            );
            return None;
        }
        if !zones.contains(&z) {
            zones.push(z);
        }
    }
    Some(zones)
}

/// Reads an import request; every field error at once.
fn parse_import(body: &mut Body) -> Option<NewImport> {
    let url = url_field(body);
    let name = body.string("name", true);
    let slug = slug_field(body);
    let user_data_handling = choice(body, "user_data_handling", true, &USER_DATA_HANDLINGS);
    let zones = zones_field(body);
    let source_format = choice_or(body, "source_format", &SOURCE_FORMATS, "raw");
    let firmware_type = choice_or(body, "firmware_type", &FIRMWARE_TYPES, "bios");
    let tags = body.tags().unwrap_or_default();
    Some(NewImport {
        url: url?,
        name: name?,
        slug: slug.unwrap_or_default(),
        user_data_handling: user_data_handling?,
        zones: zones?,
        source_format: source_format?,
        firmware_type: firmware_type?,
        tags,
        size_gb: None,
        settled: false,
    })
}

async fn import(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let new = parse_import(&mut body);
    let Some(new) = new.filter(|_| body.ok_so_far()) else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    let id = app.write(|st, now| Ok(import_custom_image(st, now, new)))?;
    app.read(&base, |ctx| {
        ctx.st
            .custom_image_imports()
            .get(&id)
            .map(|i| created(i.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

/// `zones` cannot change: a list of the same slugs (or zone stubs), in any order, is fine.
fn zones_unchanged(body: &mut Body, current: &[String]) {
    let Some(sent) = body.raw("zones") else {
        return;
    };
    let slugs: Option<Vec<&str>> = sent.as_array().and_then(|items| {
        items
            .iter()
            .map(|v| v.as_str().or_else(|| v.get("slug").and_then(Value::as_str)))
            .collect()
    });
    let same = slugs.is_some_and(|s| {
        s.iter().all(|z| current.iter().any(|c| c == z))
            && current.iter().all(|c| s.contains(&c.as_str()))
    });
    if !same {
        body.error("zones", IMMUTABLE);
    }
}

async fn update(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    app.write(|st, now| {
        let img = st
            .custom_images()
            .get(&id)
            .filter(|i| i.visible(now))
            .ok_or(ApiError::NotFound)?;
        body.immutable("firmware_type", &json!(img.firmware_type));
        zones_unchanged(&mut body, &img.zones);
        let name = body.string("name", false);
        if name.as_deref() == Some("") {
            body.error("name", NOT_BLANK);
        }
        let slug = slug_field(&mut body);
        let user_data_handling =
            choice(&mut body, "user_data_handling", false, &USER_DATA_HANDLINGS);
        let tags = body.tags();
        body.finish()?;
        let patch = CustomImagePatch {
            name,
            slug,
            user_data_handling,
            tags,
        };
        update_custom_image(st, id, now, patch)?;
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, now| delete_custom_image(st, id, now))?;
    Ok(no_content())
}
