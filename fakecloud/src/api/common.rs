//! What every handler shares: list filters, responses, path and body helpers.

use crate::error::{ApiError, ApiResult};
use crate::model;
use crate::model::store::{Tags, tags_match};
use crate::request::{Body, parse_uuid};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use uuid::Uuid;

/// List filters every collection understands: `tag:KEY=VALUE`, `tag:KEY=` and `tag:KEY`
/// (all three spellings, colon encoded or not; several are ANDed) and `name=`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ListQuery {
    pub tags: Vec<(String, String)>,
    pub name: Option<String>,
}

impl ListQuery {
    pub fn parse(raw: Option<&str>) -> ListQuery {
        let mut q = ListQuery::default();
        let Some(raw) = raw else { return q };
        // form_urlencoded decodes `tag%3Ak` and yields "" for a key without `=`, which is
        // exactly the "has key" meaning both spellings have.
        for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
            if let Some(tag) = k.strip_prefix("tag:") {
                q.tags.push((tag.to_string(), v.into_owned()));
            } else if k == "name" {
                q.name = Some(v.into_owned());
            }
        }
        q
    }

    pub fn matches(&self, name: Option<&str>, tags: &Tags) -> bool {
        if let Some(want) = &self.name
            && name != Some(want.as_str())
        {
            return false;
        }
        tags_match(tags, &self.tags)
    }
}

/// What the list filters look at in a record: `name=` matches [`Listed::list_name`]
/// (records without a name never match it), `tag:` filters match [`Listed::list_tags`].
pub trait Listed {
    fn list_name(&self) -> Option<&str>;
    fn list_tags(&self) -> &Tags;
}

macro_rules! listed {
    ($($t:ty => |$r:ident| $name:expr),* $(,)?) => {$(
        impl Listed for $t {
            fn list_name(&self) -> Option<&str> {
                let $r = self;
                $name
            }
            fn list_tags(&self) -> &Tags {
                &self.tags
            }
        }
    )*};
}

listed!(
    model::servers::Server => |r| Some(&r.name),
    model::server_groups::ServerGroup => |r| Some(&r.name),
    model::networks::Network => |r| Some(&r.name),
    model::networks::Subnet => |_r| None,
    model::floating_ips::FloatingIp => |_r| None,
    model::volumes::Volume => |r| Some(&r.name),
    model::volume_snapshots::VolumeSnapshot => |r| Some(&r.name),
    model::objects_users::ObjectsUser => |r| Some(&r.display_name),
    model::custom_images::CustomImage => |r| Some(&r.name),
    model::custom_images::CustomImageImport => |r| Some(&r.name),
    model::routers::Router => |r| Some(&r.name),
    model::load_balancers::LoadBalancer => |r| Some(&r.name),
    model::load_balancers::Pool => |r| Some(&r.name),
    model::load_balancers::Member => |r| Some(&r.name),
    model::load_balancers::Listener => |r| Some(&r.name),
    model::load_balancers::HealthMonitor => |_r| None,
);

/// `GET` of a collection: the records the list filters of `query` select, in store order,
/// each rendered by `view`, as a bare array.
pub fn list_answer<'a, T: Listed + 'a, V: serde::Serialize>(
    items: impl Iterator<Item = &'a T>,
    query: Option<&str>,
    view: impl FnMut(&'a T) -> V,
) -> Response {
    let q = ListQuery::parse(query);
    let views: Vec<V> = items
        .filter(|r| q.matches(r.list_name(), r.list_tags()))
        .map(view)
        .collect();
    json_response(StatusCode::OK, &views)
}

/// `GET` of one record: its rendering, or 404.
pub fn show_answer<V: serde::Serialize>(view: Option<V>) -> ApiResult<Response> {
    view.map(|v| json_response(StatusCode::OK, &v))
        .ok_or(ApiError::NotFound)
}

/// 200 with a JSON body.
pub fn ok(v: Value) -> Response {
    (StatusCode::OK, Json(v)).into_response()
}

/// A JSON response serialized straight from a borrowed view (no intermediate `Value`).
pub fn json_response<T: serde::Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            bytes,
        )
            .into_response(),
        Err(e) => ApiError::detail(format!("cannot serialize response: {e}")).into_response(),
    }
}

/// 201 with the created resource.
pub fn created(v: Value) -> Response {
    (StatusCode::CREATED, Json(v)).into_response()
}

/// 204 with no body (PATCH, DELETE, actions).
pub fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// A path UUID; anything else (a name, say) is a 404, so the CLI falls back to its name
/// lookup (reference check 4).
pub fn path_uuid(s: &str) -> ApiResult<Uuid> {
    parse_uuid(s).ok_or(ApiError::NotFound)
}

pub fn parse_body(bytes: &[u8]) -> ApiResult<Body> {
    Body::parse(bytes)
}

/// Reads a reference to an existing resource: a UUID that must name something `exists`
/// accepts, else "does not exist" under `key`.
pub fn existing_ref(
    body: &mut Body,
    key: &str,
    required: bool,
    exists: impl Fn(Uuid) -> bool,
) -> Option<Uuid> {
    let id = body.uuid(key, required)?;
    if exists(id) {
        Some(id)
    } else {
        body.error(key, format!("Invalid pk \"{id}\" - object does not exist."));
        None
    }
}

/// Validates a choice field against its allowed values ("Expect one of ...").
pub fn choice(body: &mut Body, key: &str, required: bool, allowed: &[&str]) -> Option<String> {
    let value = body.string(key, required)?;
    if allowed.contains(&value.as_str()) {
        Some(value)
    } else {
        body.error(
            key,
            format!(
                "\"{value}\" is not a valid choice. Expect one of: {}.",
                allowed.join(", ")
            ),
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_tag_spellings_parse_alike() {
        let encoded = ListQuery::parse(Some("tag%3Aenv=prod"));
        assert_eq!(encoded.tags, vec![("env".to_string(), "prod".to_string())]);
        let empty = ListQuery::parse(Some("tag%3Aenv="));
        let bare = ListQuery::parse(Some("tag:env"));
        assert_eq!(empty.tags, vec![("env".to_string(), String::new())]);
        assert_eq!(bare, empty);
    }

    #[test]
    fn several_filters_and_name() {
        let q = ListQuery::parse(Some("tag:a=1&tag%3Ab=&name=web&other=x"));
        assert_eq!(q.tags.len(), 2);
        assert_eq!(q.name.as_deref(), Some("web"));
        let tags: Tags = [("a".into(), "1".into()), ("b".into(), "z".into())].into();
        assert!(q.matches(Some("web"), &tags));
        assert!(!q.matches(Some("db"), &tags));
    }
}
