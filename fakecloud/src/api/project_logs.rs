//! `GET /v1/project-logs?start=<ISO 8601>`: the project log, paged through `poll_more`.

use super::common::json_response;
use crate::app::{App, Base};
use crate::clock::{Time, format_time, parse_time};
use crate::error::{ApiError, ApiResult};
use crate::model::project_logs::{EntryView, page};
use axum::Router;
use axum::extract::{RawQuery, State as AxState};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde::Serialize;

pub fn routes() -> Router<App> {
    Router::new().route("/project-logs", get(list))
}

#[derive(Serialize)]
struct PageView<'a> {
    /// Where to ask for what happens next: the same `start` and a cursor after the last
    /// entry returned, so polling it never repeats nor skips an entry.
    poll_more: String,
    results: Vec<EntryView<'a>>,
}

/// An ISO 8601 instant: RFC 3339, or without an offset (then UTC) [INF].
fn parse_start(s: &str) -> Option<Time> {
    parse_time(s).or_else(|| {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
            .ok()
            .map(|t| t.and_utc())
    })
}

struct Query {
    start: Option<Time>,
    after: Option<u64>,
}

fn parse_query(raw: Option<&str>) -> ApiResult<Query> {
    let mut q = Query {
        start: None,
        after: None,
    };
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "start" => {
                q.start = Some(parse_start(&v).ok_or_else(|| {
                    ApiError::field("start", "Enter a valid date/time (ISO 8601).")
                })?);
            }
            "after" => {
                q.after = Some(
                    v.parse()
                        .map_err(|_| ApiError::field("after", "A valid integer is required."))?,
                );
            }
            _ => {}
        }
    }
    Ok(q)
}

async fn list(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let q = parse_query(raw.as_deref())?;
    // Without `start` the log is read from its beginning [INF].
    let start = q.start.unwrap_or(Time::MIN_UTC);
    Ok(app.read(&base, |ctx| {
        let (entries, cursor) = page(ctx, start, q.after);
        let mut params = Vec::new();
        if let Some(s) = q.start {
            params.push(format!("start={}", format_time(s)));
        }
        if let Some(c) = cursor {
            params.push(format!("after={c}"));
        }
        let mut poll_more = format!("{base}/v1/project-logs");
        if !params.is_empty() {
            poll_more.push('?');
            poll_more.push_str(&params.join("&"));
        }
        let view = PageView {
            poll_more,
            results: entries.into_iter().map(|e| e.view(ctx)).collect(),
        };
        json_response(StatusCode::OK, &view)
    }))
}
