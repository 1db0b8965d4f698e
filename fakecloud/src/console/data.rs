//! Read-only data endpoints of the console (`/_fake/console/…`): exactly what one view
//! shows, rendered like the API, so a refresh costs one read lock and the objects on screen
//! rather than a full `/_fake/state` dump. Times are virtual, as on every `/_fake` endpoint
//! (fakecloud/MODEL.md §1).

use crate::api::{json_response, path_uuid};
use crate::app::{App, Base};
use crate::clock::{ClockMode, Stamp, Time, format_time};
use crate::dataplane::{Health, health_at, member_health};
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, State};
use axum::Router;
use axum::extract::{Path, Query, State as AxState};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Deleted load balancers listed in the account view (their timelines stay readable); the
/// most recent ones, so that a long simulation does not make every refresh grow.
const DELETED_SHOWN: usize = 50;
/// Request log entries one refresh returns at most (the newest ones).
const REQUESTS_MAX: usize = 1000;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/console/account", get(account))
        .route("/console/load-balancers/{uuid}", get(load_balancer))
        .route("/console/requests", get(requests))
}

/// A rendering context showing virtual time, whatever `--timestamps` says for `/v1`.
fn ctx<'a>(app: &'a App, base: &'a str, now: Time, st: &'a State) -> Ctx<'a> {
    Ctx {
        base,
        now,
        st,
        timing: &app.config().timing,
        stamp: Stamp::IDENTITY,
    }
}

/// The clock as `GET /_fake/clock` shows it, so a view needs no second request for it.
fn clock(app: &App, now: Time) -> Value {
    let mode = match app.0.clock.mode() {
        ClockMode::Manual => json!({"manual": true}),
        ClockMode::Scaled { scale } => json!({"manual": false, "scale": scale}),
        ClockMode::Simulated => json!({"manual": false, "simulated": true}),
    };
    json!({"now": format_time(now), "mode": mode})
}

/// Counts under one load balancer for the account table.
#[derive(Default, Serialize)]
struct Summary {
    listeners: usize,
    pools: usize,
    members: usize,
    /// `monitor_status` → members with it.
    monitor_status: HashMap<&'static str, usize>,
    floating_ips: usize,
}

/// One pass over each collection: a refresh stays linear in the account's size.
fn summaries(st: &State, now: Time) -> HashMap<Uuid, Summary> {
    let mut out: HashMap<Uuid, Summary> = HashMap::new();
    for l in st.listeners().values() {
        out.entry(l.load_balancer).or_default().listeners += 1;
    }
    for p in st.pools().values() {
        out.entry(p.load_balancer).or_default().pools += 1;
    }
    for lb in st.floating_ips().values().filter_map(|f| f.load_balancer) {
        out.entry(lb).or_default().floating_ips += 1;
    }
    let monitored: HashSet<Uuid> = st.health_monitors().values().map(|m| m.pool).collect();
    for m in st.members().values() {
        let Some(lb) = st.pools().get(&m.pool).map(|p| p.load_balancer) else {
            continue;
        };
        // As `Member::monitor_status`, with the monitored pools looked up once.
        let health = st
            .dataplane()
            .lbs
            .get(&lb)
            .map(|h| health_at(&member_health(st.dataplane(), h, m.uuid, now), now))
            .unwrap_or(Health::Absent);
        let s = out.entry(lb).or_default();
        s.members += 1;
        *s.monitor_status
            .entry(health.api_status(monitored.contains(&m.pool)))
            .or_default() += 1;
    }
    // Floating IPs may still name a deleted load balancer.
    out.retain(|id, _| st.load_balancers().contains_key(id));
    out
}

/// `GET /_fake/console/account`: servers, networks, subnets, floating IPs and load
/// balancers as `/v1` renders them, counts per load balancer, and deleted load balancers
/// whose history the data plane keeps.
async fn account(AxState(app): AxState<App>, Base(base): Base) -> Response {
    let now = app.now();
    let st = app.0.state.read();
    let ctx = ctx(&app, &base, now, &st);
    let deleted: Vec<Value> = st
        .dataplane()
        .lbs
        .iter()
        .filter_map(|(id, h)| h.deleted_at.map(|d| (id, h, d)))
        .rev()
        .take(DELETED_SHOWN)
        .map(|(id, h, d)| {
            json!({"uuid": id, "name": h.name, "created_at": format_time(h.created_at),
                   "deleted_at": format_time(d)})
        })
        .collect();
    let body = json!({
        "clock": clock(&app, now),
        "servers": st.servers().values().map(|s| s.view(&ctx)).collect::<Vec<_>>(),
        "networks": st.networks.values().map(|n| n.render(&ctx)).collect::<Vec<_>>(),
        "subnets": st.subnets.values().map(|s| s.render(&ctx)).collect::<Vec<_>>(),
        "floating_ips": st.floating_ips().values().map(|f| f.render(&ctx)).collect::<Vec<_>>(),
        "load_balancers": st.load_balancers().values().map(|l| l.render(&ctx)).collect::<Vec<_>>(),
        "summaries": summaries(&st, now),
        "deleted_load_balancers": deleted,
    });
    json_response(StatusCode::OK, &body)
}

/// `GET /_fake/console/load-balancers/{uuid}`: one load balancer and everything under it,
/// as `/v1` renders them (members with their live `monitor_status`), the floating IPs that
/// target it, and its data-plane dates. A deleted load balancer has `load_balancer: null`
/// and its history only; one never known is a 404.
async fn load_balancer(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let now = app.now();
    let st = app.0.state.read();
    let ctx = ctx(&app, &base, now, &st);
    let history = st.dataplane().lbs.get(&id);
    let lb = st.load_balancers().get(&id);
    if lb.is_none() && history.is_none() {
        return Err(ApiError::NotFound);
    }
    let pools: Vec<_> = st
        .pools()
        .values()
        .filter(|p| p.load_balancer == id)
        .collect();
    let floating: Vec<Value> = st
        .floating_ips()
        .values()
        .filter(|f| f.load_balancer == Some(id))
        .map(|f| f.render(&ctx))
        .collect();
    let body = json!({
        "clock": clock(&app, now),
        "load_balancer": lb.map(|l| l.render(&ctx)),
        "history": history.map(|h| json!({
            "name": h.name,
            "created_at": format_time(h.created_at),
            "ready_at": format_time(h.ready_at),
            "deleted_at": h.deleted_at.map(format_time),
        })),
        "floating_ips": floating,
        "listeners": st.listeners().values().filter(|l| l.load_balancer == id)
            .map(|l| l.render(&ctx)).collect::<Vec<_>>(),
        "pools": pools.iter().map(|p| p.render(&ctx)).collect::<Vec<_>>(),
        "members": pools.iter().flat_map(|p| st.members().of_pool(p.uuid))
            .map(|m| m.render(&ctx)).collect::<Vec<_>>(),
        "health_monitors": st.health_monitors().values().filter(|m| m.load_balancer == id)
            .map(|m| m.render(&ctx)).collect::<Vec<_>>(),
    });
    Ok(json_response(StatusCode::OK, &body))
}

#[derive(Deserialize)]
struct RequestsQuery {
    /// Entries with a sequence number at or above this (0: from the oldest kept).
    after: Option<u64>,
    limit: Option<usize>,
}

/// `GET /_fake/console/requests?after=SEQ&limit=N`: the request log from sequence number
/// `after` on, newest `limit` at most, so a console that follows the log while a benchmark
/// runs fetches only what is new. `next` is the sequence number of the next entry: a value
/// below the `after` sent means the log was reset.
async fn requests(AxState(app): AxState<App>, Query(q): Query<RequestsQuery>) -> Response {
    let limit = q.limit.unwrap_or(REQUESTS_MAX).clamp(1, REQUESTS_MAX);
    let clock = clock(&app, app.now());
    let log = app.0.log.lock();
    let next = log.recorded;
    let first = next - log.entries.len() as u64;
    let from = q.after.unwrap_or(0).clamp(first, next);
    let wanted = (next - from) as usize;
    let skip = log.entries.len() - wanted + wanted.saturating_sub(limit);
    let entries: Vec<Value> = log
        .entries
        .iter()
        .enumerate()
        .skip(skip)
        .map(|(i, e)| {
            let mut v = json!(e);
            v["seq"] = json!(first + i as u64);
            v
        })
        .collect();
    // The lock is released before serializing.
    drop(log);
    json_response(
        StatusCode::OK,
        &json!({"clock": clock, "next": next, "first": first, "entries": entries}),
    )
}
