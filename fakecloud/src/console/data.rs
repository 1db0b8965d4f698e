//! Read-only data endpoints of the console (`/_fake/console/…`): exactly what one view
//! shows, rendered like the API, so a refresh costs one read lock and the objects on screen
//! rather than a full `/_fake/state` dump. Times are virtual, as on every `/_fake` endpoint
//! (fakecloud/MODEL.md §1).

use crate::api::{json_response, path_uuid};
use crate::app::{App, Base, LogEntry};
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
            json!({"uuid": id, "name": h.name, "tags": h.tags,
                   "created_at": format_time(h.created_at), "deleted_at": format_time(d)})
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
            "tags": h.tags,
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
    /// Only requests of this method (any case).
    method: Option<String>,
    /// Only answers of this class: `1xx` … `5xx`, or `dropped` (a fault dropped the
    /// connection: status 0).
    status: Option<String>,
    /// Only requests whose path and query contain this text (any case).
    path: Option<String>,
}

/// What a filtered read of the request log keeps; empty parameters filter nothing.
struct Filter {
    method: Option<String>,
    /// The status class's hundreds digit; 0 for dropped requests.
    status: Option<u16>,
    path: Option<String>,
}

impl Filter {
    fn parse(q: &RequestsQuery) -> ApiResult<Filter> {
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|v| !v.is_empty())
        }
        let status = match given(&q.status) {
            None => None,
            Some("dropped") => Some(0),
            Some(class) => Some(
                class
                    .strip_suffix("xx")
                    .and_then(|d| d.parse::<u16>().ok())
                    .filter(|d| (1..=5).contains(d))
                    .ok_or_else(|| {
                        ApiError::field(
                            "status",
                            format!("\"{class}\" is not a status class: 1xx to 5xx, or dropped"),
                        )
                    })?,
            ),
        };
        Ok(Filter {
            method: given(&q.method).map(str::to_ascii_uppercase),
            status,
            path: given(&q.path).map(str::to_lowercase),
        })
    }

    fn active(&self) -> bool {
        self.method.is_some() || self.status.is_some() || self.path.is_some()
    }

    fn matches(&self, e: &LogEntry) -> bool {
        self.method.as_ref().is_none_or(|m| e.method == *m)
            && self.status.is_none_or(|s| e.status / 100 == s)
            && self.path.as_ref().is_none_or(|p| {
                let query = e.query.as_deref().unwrap_or("");
                format!("{}?{query}", e.path)
                    .to_lowercase()
                    .contains(p.as_str())
            })
    }
}

/// `GET /_fake/console/requests?after=SEQ&limit=N[&method=M&status=4xx&path=TEXT]`: the
/// request log from sequence number `after` on, newest `limit` at most, so a console that
/// follows the log while a benchmark runs fetches only what is new. `next` is the sequence
/// number of the next entry: a value below the `after` sent means the log was reset. With
/// a filter, the newest `limit` matching entries of everything the log keeps, and how many
/// match in all (`matched`): the search covers the whole log, not what a page holds.
async fn requests(
    AxState(app): AxState<App>,
    Query(q): Query<RequestsQuery>,
) -> ApiResult<Response> {
    let filter = Filter::parse(&q)?;
    let limit = q.limit.unwrap_or(REQUESTS_MAX).clamp(1, REQUESTS_MAX);
    let clock = clock(&app, app.now());
    let log = app.0.log.lock();
    let next = log.recorded;
    let first = next - log.entries.len() as u64;
    let from = q.after.unwrap_or(0).clamp(first, next);
    let wanted = (next - from) as usize;
    let matching: Vec<(usize, &LogEntry)> = log
        .entries
        .iter()
        .enumerate()
        .skip(log.entries.len() - wanted)
        .filter(|(_, e)| filter.matches(e))
        .collect();
    let matched = matching.len();
    let entries: Vec<Value> = matching[matched.saturating_sub(limit)..]
        .iter()
        .map(|(i, e)| {
            let mut v = json!(e);
            v["seq"] = json!(first + *i as u64);
            v
        })
        .collect();
    let kept = log.entries.len();
    // The lock is released before serializing.
    drop(log);
    let mut body =
        json!({"clock": clock, "next": next, "first": first, "kept": kept, "entries": entries});
    if filter.active() {
        body["matched"] = json!(matched);
    }
    Ok(json_response(StatusCode::OK, &body))
}
