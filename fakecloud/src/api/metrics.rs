//! `GET /v1/metrics/buckets` handler: parses the query, the model computes the answer.

use super::common::json_response;
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::model::bucket_metrics::{MetricsRequest, bucket_metrics, parse_day};
use crate::request::REQUIRED;
use axum::Router;
use axum::extract::{RawQuery, State as AxState};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use std::collections::BTreeMap;

pub fn routes() -> Router<App> {
    Router::new().route("/metrics/buckets", get(buckets))
}

/// The Django REST framework's text for a malformed date.
const BAD_DATE: &str = "Date has wrong format. Use one of these formats instead: YYYY-MM-DD.";

/// Reads `start`, `end` and the repeatable filters; every problem is reported under the
/// parameter's name.
fn metrics_request(raw: Option<&str>) -> ApiResult<MetricsRequest> {
    let mut start = None;
    let mut end = None;
    let mut bucket_names = Vec::new();
    let mut objects_user_ids = Vec::new();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "start" => start = Some(v.into_owned()),
            "end" => end = Some(v.into_owned()),
            "bucket_name" => bucket_names.push(v.into_owned()),
            "objects_user_id" => objects_user_ids.push(v.into_owned()),
            _ => {}
        }
    }
    let mut errors = BTreeMap::new();
    let mut day = |key: &str, value: Option<String>| match value.as_deref().map(parse_day) {
        Some(Some(d)) => Some(d),
        Some(None) => {
            errors.insert(key.to_string(), BAD_DATE.to_string());
            None
        }
        None => {
            errors.insert(key.to_string(), REQUIRED.to_string());
            None
        }
    };
    let start = day("start", start);
    let end = day("end", end);
    match (start, end) {
        (Some(start), Some(end)) => Ok(MetricsRequest {
            start,
            end,
            bucket_names,
            objects_user_ids,
        }),
        _ => Err(ApiError::BadRequest(errors)),
    }
}

async fn buckets(AxState(app): AxState<App>, RawQuery(q): RawQuery) -> ApiResult<Response> {
    let req = metrics_request(q.as_deref())?;
    app.read("", |ctx| {
        bucket_metrics(ctx.st, ctx.now, &req).map(|m| json_response(StatusCode::OK, &m))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_repeat_and_dates_are_required() {
        let r = metrics_request(Some(
            "start=2020-01-01&end=2020-01-02&bucket_name=a&bucket_name=b&objects_user_id=u",
        ))
        .expect("valid");
        assert_eq!(r.bucket_names, ["a", "b"]);
        assert_eq!(r.objects_user_ids, ["u"]);
        let Err(ApiError::BadRequest(map)) = metrics_request(Some("end=2020-1-1")) else {
            panic!("not a 400")
        };
        assert_eq!(map["start"], REQUIRED);
        assert_eq!(map["end"], BAD_DATE);
    }
}
