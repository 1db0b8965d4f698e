//! The admin API under `/_fake/`: never used by real clients, open without a token.

use crate::api::{created, json_response, no_content, ok};
use crate::app::{App, Base};
use crate::clock::{format_time, parse_time};
use crate::dataplane::{BackendDecl, Behaviour, availability};
use crate::error::{ApiError, ApiResult};
use crate::faults::FaultRule;
use crate::model::custom_images::{Download, clear_downloads, declare_download};
use crate::rules::{ApiRules, RulesError};
use crate::seed::{Seed, SeedServer, add_server, apply_seed};
use crate::state::State;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State as AxState};
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/servers", post(create_server))
        .route("/seed", post(seed))
        .route("/reset", post(reset))
        .route("/requests", get(requests).delete(clear_requests))
        .route("/counters", get(counters))
        .route("/clock", get(clock))
        .route("/clock/advance", post(advance))
        .route("/state", get(dump).put(restore))
        .route("/buckets", get(list_buckets).post(create_bucket))
        .route("/buckets/{name}", get(show_bucket).delete(delete_bucket))
        .route(
            "/backends",
            get(list_backends)
                .post(declare_backends)
                .delete(clear_backends),
        )
        .route(
            "/downloads",
            get(list_downloads)
                .post(declare_downloads)
                .delete(forget_downloads),
        )
        .route(
            "/load-balancers/{uuid}/availability",
            get(availability_handler),
        )
        .route("/load-balancers/{uuid}/timeline", get(timeline))
        .route(
            "/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/faults/{id}", axum::routing::delete(remove_fault))
        .route(
            "/rules",
            get(show_rules).put(replace_rules).patch(change_rules),
        )
        // The browser console and its read-only data (`/_fake/ui/`, `/_fake/console/…`).
        .merge(crate::console::routes())
}

/// Decodes an admin body; serde's message names the offending field.
fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::detail(format!("invalid body: {e}")))
}

async fn create_server(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let spec: SeedServer = decode(&bytes)?;
    let zone = app.config().default_zone.clone();
    let id = app.write(|st, now| add_server(st, now, &zone, &spec))?;
    app.read(&base, |ctx| {
        ctx.st.servers().get(&id).map(|s| created(s.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn seed(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let seed: Seed = decode(&bytes)?;
    let zone = app.config().default_zone.clone();
    let summary = app.write(|st, now| apply_seed(st, now, &zone, &seed))?;
    Ok(created(json!(summary)))
}

async fn reset(AxState(app): AxState<App>) -> Response {
    app.reset();
    no_content()
}

async fn requests(AxState(app): AxState<App>) -> Response {
    let log = app.0.log.lock();
    ok(json!(log.entries))
}

async fn clear_requests(AxState(app): AxState<App>) -> Response {
    let mut log = app.0.log.lock();
    log.entries.clear();
    log.counters.clear();
    no_content()
}

async fn counters(AxState(app): AxState<App>) -> Response {
    let log = app.0.log.lock();
    ok(json!(log.counters))
}

async fn clock(AxState(app): AxState<App>) -> Response {
    let mode = match app.0.clock.mode() {
        crate::clock::ClockMode::Manual => json!({"manual": true}),
        crate::clock::ClockMode::Scaled { scale } => json!({"manual": false, "scale": scale}),
        crate::clock::ClockMode::Simulated => json!({"manual": false, "simulated": true}),
    };
    let now = app.now();
    // `now` is virtual (what `/_fake` endpoints take and show); `api_now` is what a
    // `created_at` made at this moment shows in the API (see `crate::clock::Timestamps`).
    ok(json!({
        "now": format_time(now),
        "api_now": format_time(app.0.clock.stamp().apply(now)),
        "timestamps": app.config().timestamps.as_str(),
        "mode": mode,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    seconds: f64,
}

async fn advance(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let a: Advance = decode(&bytes)?;
    if !a.seconds.is_finite() || a.seconds < 0.0 {
        return Err(ApiError::field("seconds", "must be a non-negative number"));
    }
    app.0.clock.advance(Duration::from_secs_f64(a.seconds));
    Ok(ok(json!({"now": format_time(app.now())})))
}

async fn dump(AxState(app): AxState<App>) -> Response {
    let st = app.0.state.read();
    // Serialized directly: going through `Value` would sort the maps and lose creation order.
    json_response(axum::http::StatusCode::OK, &*st)
}

async fn restore(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let mut st: State = decode(&bytes)?;
    let mut current = app.0.state.write();
    st.ids = std::mem::take(&mut current.ids);
    *current = st;
    Ok(no_content())
}

// ---- data plane: backends, availability oracle, timeline --------------------------------

/// The client address availability is computed for when none is given (TEST-NET-3).
pub const DEFAULT_CLIENT: &str = "203.0.113.10";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackendRequest {
    address: std::net::IpAddr,
    /// Omitted: every port of the address.
    port: Option<u16>,
    #[serde(default)]
    tcp: Option<bool>,
    #[serde(default)]
    udp: Option<bool>,
    #[serde(default)]
    http_status: Option<u16>,
    /// `true`: forget earlier declarations for this address (and port): back to "answers
    /// while its server runs".
    #[serde(default)]
    default: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(BackendRequest),
    Many(Vec<BackendRequest>),
}

async fn declare_backends(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let list = match decode::<OneOrMany>(&bytes)? {
        OneOrMany::One(b) => vec![b],
        OneOrMany::Many(v) => v,
    };
    for b in &list {
        if b.default && (b.tcp.is_some() || b.udp.is_some() || b.http_status.is_some()) {
            return Err(ApiError::field(
                "default",
                format!(
                    "{}: \"default\" cannot be combined with tcp, udp or http_status",
                    b.address
                ),
            ));
        }
        if b.http_status.is_some_and(|s| !(100..=599).contains(&s)) {
            return Err(ApiError::field(
                "http_status",
                "must be between 100 and 599",
            ));
        }
    }
    let count = list.len();
    app.write(|st, now| {
        for b in list {
            let behaviour = (!b.default).then(|| Behaviour {
                tcp: b.tcp.unwrap_or(true),
                udp: b.udp.unwrap_or(true),
                http_status: b.http_status.unwrap_or(200),
            });
            st.backends_mut().push(BackendDecl {
                at: now,
                address: b.address,
                port: b.port,
                behaviour,
            });
        }
        Ok(())
    })?;
    Ok(ok(json!({"declared": count})))
}

/// The declarations in force now, one per address and port.
async fn list_backends(AxState(app): AxState<App>) -> Response {
    let now = app.now();
    let st = app.0.state.read();
    // In time order per address and port: the last one at or before now is in force.
    let mut last: std::collections::BTreeMap<_, BackendDecl> = Default::default();
    for d in st.dataplane().backends.iter().filter(|d| d.at <= now) {
        last.insert((d.address, d.port), d);
    }
    let current: Vec<BackendDecl> = last
        .into_values()
        .filter(|d| d.behaviour.is_some())
        .collect();
    ok(json!(
        current
            .iter()
            .map(|d| {
                let b = d.behaviour.unwrap_or_default();
                json!({"address": d.address, "port": d.port, "tcp": b.tcp, "udp": b.udp,
                       "http_status": b.http_status, "since": format_time(d.at)})
            })
            .collect::<Vec<_>>()
    ))
}

/// Forgets every declaration from now on (history before now is kept for the oracle).
async fn clear_backends(AxState(app): AxState<App>) -> ApiResult<Response> {
    app.write(|st, now| {
        let mut keys: Vec<(std::net::IpAddr, Option<u16>)> = Vec::new();
        for d in st.dataplane().backends.iter() {
            if !keys.contains(&(d.address, d.port)) {
                keys.push((d.address, d.port));
            }
        }
        for (address, port) in keys {
            st.backends_mut().push(BackendDecl {
                at: now,
                address,
                port,
                behaviour: None,
            });
        }
        Ok(())
    })?;
    Ok(no_content())
}

#[derive(Deserialize)]
struct AvailabilityQuery {
    from: Option<String>,
    to: Option<String>,
    client: Option<String>,
}

async fn availability_handler(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    Query(q): Query<AvailabilityQuery>,
) -> ApiResult<Response> {
    let id = crate::api::path_uuid(&id)?;
    let now = app.now();
    let time = |key: &str, v: &Option<String>| -> ApiResult<Option<crate::clock::Time>> {
        match v {
            None => Ok(None),
            Some(s) => parse_time(s).map(Some).ok_or_else(|| {
                ApiError::field(key, format!("\"{s}\" is not an RFC 3339 timestamp"))
            }),
        }
    };
    let from = time("from", &q.from)?;
    let to = time("to", &q.to)?;
    let client: std::net::IpAddr = q
        .client
        .as_deref()
        .unwrap_or(DEFAULT_CLIENT)
        .parse()
        .map_err(|_| ApiError::field("client", "not an IP address"))?;
    let propagation = app.config().timing.floating_ip_propagation_s;
    let st = app.0.state.read();
    let lb = st.dataplane().lbs.get(&id).ok_or(ApiError::NotFound)?;
    let from = from.unwrap_or(lb.created_at);
    // The future is not known yet: the window ends now at the latest.
    let to = to.unwrap_or(now).min(now);
    if to < from {
        return Err(ApiError::field(
            "to",
            "the window ends before it starts (or after now)",
        ));
    }
    let entries =
        availability(st.dataplane(), id, from, to, client, propagation).unwrap_or_default();
    Ok(ok(json!({
        "load_balancer": id,
        "name": lb.name,
        "from": format_time(from),
        "to": format_time(to),
        "client": client,
        "entries": entries,
    })))
}

async fn timeline(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = crate::api::path_uuid(&id)?;
    let st = app.0.state.read();
    let lb = st.dataplane().lbs.get(&id).ok_or(ApiError::NotFound)?;
    Ok(ok(json!({
        "load_balancer": id,
        "name": lb.name,
        "created_at": format_time(lb.created_at),
        "ready_at": format_time(lb.ready_at),
        "deleted_at": lb.deleted_at.map(format_time),
        "operations": lb.ops.iter().map(|o| json!({
            "requested_at": format_time(o.requested_at),
            "effective_at": format_time(o.effective_at),
            "operation": o.operation,
        })).collect::<Vec<_>>(),
    })))
}

// ---- simulated downloads of custom image imports ---------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DownloadRequest {
    url: String,
    /// The HTTP status the URL answers with (default 200).
    #[serde(default)]
    status: Option<u16>,
    /// The image size after conversion to raw (default: derived from the URL).
    #[serde(default)]
    size_gb: Option<i64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrManyDownloads {
    One(DownloadRequest),
    Many(Vec<DownloadRequest>),
}

/// Declares how URLs answer imports started from now on (fakecloud/MODEL.md, "Custom images").
async fn declare_downloads(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let list = match decode::<OneOrManyDownloads>(&bytes)? {
        OneOrManyDownloads::One(d) => vec![d],
        OneOrManyDownloads::Many(v) => v,
    };
    for d in &list {
        if d.url.is_empty() {
            return Err(ApiError::field("url", "may not be blank"));
        }
        if d.status.is_some_and(|s| !(100..=599).contains(&s)) {
            return Err(ApiError::field("status", "must be between 100 and 599"));
        }
        if d.size_gb.is_some_and(|s| s < 1) {
            return Err(ApiError::field("size_gb", "must be at least 1"));
        }
    }
    let count = list.len();
    app.write(|st, _| {
        for d in list {
            declare_download(
                st,
                Download {
                    url: d.url,
                    status: d.status.unwrap_or(200),
                    size_gb: d.size_gb,
                },
            );
        }
        Ok(())
    })?;
    Ok(ok(json!({"declared": count})))
}

async fn list_downloads(AxState(app): AxState<App>) -> Response {
    let st = app.0.state.read();
    ok(json!(st.downloads().values().collect::<Vec<_>>()))
}

/// Forgets every declaration: every URL answers 200 again.
async fn forget_downloads(AxState(app): AxState<App>) -> ApiResult<Response> {
    app.write(|st, _| {
        clear_downloads(st);
        Ok(())
    })?;
    Ok(no_content())
}

// ---- object storage buckets (for `/v1/metrics/buckets`) ---------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BucketRequest {
    name: String,
    objects_user_id: String,
    /// RFC 3339, or `YYYY-MM-DD` for midnight Europe/Zurich (default: now).
    #[serde(default)]
    created_at: Option<String>,
}

/// Registers a bucket of an existing objects user (fakecloud/MODEL.md, "Bucket metrics").
async fn create_bucket(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let req: BucketRequest = decode(&bytes)?;
    let created_at = match req.created_at.as_deref() {
        None => None,
        Some(s) => Some(crate::model::buckets::parse_created_at(s).ok_or_else(|| {
            ApiError::field(
                "created_at",
                format!("\"{s}\" is no RFC 3339 time or YYYY-MM-DD"),
            )
        })?),
    };
    let name = req.name.clone();
    let new = crate::model::buckets::NewBucket {
        name: req.name,
        objects_user_id: req.objects_user_id,
        created_at,
    };
    app.write(|st, now| crate::model::buckets::create_bucket(st, now, new))?;
    app.read(&base, |ctx| {
        ctx.st.buckets().get(&name).map(|b| created(b.render()))
    })
    .ok_or(ApiError::NotFound)
}

async fn list_buckets(AxState(app): AxState<App>, Base(base): Base) -> Response {
    app.read(&base, |ctx| {
        ok(json!(
            ctx.st
                .buckets()
                .values()
                .map(|b| b.render())
                .collect::<Vec<_>>()
        ))
    })
}

async fn show_bucket(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    app.read(&base, |ctx| {
        ctx.st.buckets().get(&name).map(|b| ok(b.render()))
    })
    .ok_or(ApiError::NotFound)
}

async fn delete_bucket(
    AxState(app): AxState<App>,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    app.write(|st, _| crate::model::buckets::delete_bucket(st, &name))?;
    Ok(no_content())
}

// ---- fault injection ---------------------------------------------------------------------

async fn add_fault(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let rule: FaultRule = decode(&bytes)?;
    let id = app.faults().add(rule)?;
    let rule = app.faults().list().into_iter().find(|r| r.id == id);
    Ok(created(json!(rule)))
}

async fn list_faults(AxState(app): AxState<App>) -> Response {
    ok(json!(app.faults().list()))
}

async fn clear_faults(AxState(app): AxState<App>) -> Response {
    app.faults().clear();
    no_content()
}

async fn remove_fault(AxState(app): AxState<App>, Path(id): Path<u64>) -> ApiResult<Response> {
    if app.faults().remove(id) {
        Ok(no_content())
    } else {
        Err(ApiError::NotFound)
    }
}

// ---- API rules ---------------------------------------------------------------------------

async fn show_rules(AxState(app): AxState<App>) -> Response {
    ok(json!(app.rules()))
}

/// Decodes a rules change: a JSON object of rule name to `strict` or `lenient`. Unknown names
/// and values are refused under their own key, so the answer names them.
fn rules_change(bytes: &[u8], from: ApiRules) -> ApiResult<ApiRules> {
    let change: serde_json::Map<String, serde_json::Value> = decode(bytes)?;
    from.with_changes(&change)
        .map_err(|RulesError(errors)| ApiError::BadRequest(errors))
}

/// PUT sets every rule: those not named go back to `strict`.
async fn replace_rules(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let rules = rules_change(&bytes, ApiRules::default())?;
    app.set_rules(rules);
    Ok(ok(json!(rules)))
}

/// PATCH changes the rules named and keeps the others.
async fn change_rules(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    // Under the lock, so two concurrent PATCHes of different rules both take effect.
    let mut current = app.0.rules.write();
    let rules = rules_change(&bytes, *current)?;
    *current = rules;
    Ok(ok(json!(rules)))
}
