//! The admin API under `/_fake/`: never used by real clients, open without a token.

use crate::app::{App, Base};
use crate::clock::format_time;
use crate::error::{ApiError, ApiResult};
use crate::resources::{created, no_content, ok};
use crate::seed::{Seed, SeedServer, add_server, apply_seed};
use crate::state::State;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
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
        ctx.st.servers.get(&id).map(|s| created(s.render(ctx)))
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
    };
    ok(json!({"now": format_time(app.now()), "mode": mode}))
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
    ok(json!(*st))
}

async fn restore(AxState(app): AxState<App>, bytes: Bytes) -> ApiResult<Response> {
    let st: State = decode(&bytes)?;
    *app.0.state.write() = st;
    Ok(no_content())
}
