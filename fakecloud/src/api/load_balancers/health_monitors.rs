//! `/v1/load-balancers/health-monitors`.

use crate::api::common::{
    choice, created, existing_ref, list_answer, no_content, parse_body, path_uuid, show_answer,
};
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::load_balancers::health_monitors::{
    HealthMonitorPatch, NewHealthMonitor, create_health_monitor, delete_health_monitor, is_http,
    pool_has_monitor, update_health_monitor,
};
use crate::model::load_balancers::{HTTP_METHODS, HTTP_VERSIONS, HttpCheck, MONITOR_TYPES};
use crate::request::Body;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use serde_json::{Map, Value, json};

fn positive(body: &mut Body, key: &str) -> Option<i64> {
    let v = body.int(key, false)?;
    if v >= 1 {
        Some(v)
    } else {
        body.error(key, "Ensure this value is greater than or equal to 1.");
        None
    }
}

/// Merges an `http` request object over `base` key by key (PATCH keeps what is not sent).
/// `version_fixed` refuses a version change (it is immutable after create).
fn merge_http(
    body: &mut Body,
    obj: &Map<String, Value>,
    mut base: HttpCheck,
    version_fixed: bool,
) -> Option<HttpCheck> {
    let mut sub = Body::from_map(obj.clone());
    if let Some(codes) = sub.string_list("expected_codes") {
        let valid = !codes.is_empty()
            && codes.iter().all(|c| {
                let mut parts = c.splitn(2, '-');
                let ok = |p: Option<&str>| {
                    p.is_some_and(|p| p.len() == 3 && p.bytes().all(|b| b.is_ascii_digit()))
                };
                let first = parts.next();
                match parts.next() {
                    None => ok(first),
                    Some(second) => ok(first) && ok(Some(second)),
                }
            });
        if valid {
            base.expected_codes = codes;
        } else {
            sub.error(
                "expected_codes",
                "Enter status codes like \"200\" or a range like \"200-204\".",
            );
        }
    }
    if let Some(m) = choice(&mut sub, "method", false, HTTP_METHODS) {
        base.method = m;
    }
    if let Some(p) = sub.string("url_path", false) {
        if p.starts_with('/') {
            base.url_path = p;
        } else {
            sub.error("url_path", "The url_path must start with \"/\".");
        }
    }
    if let Some(v) = choice(&mut sub, "version", false, HTTP_VERSIONS) {
        if version_fixed && v != base.version {
            sub.error("version", crate::request::IMMUTABLE);
        } else {
            base.version = v;
        }
    }
    if let Some(h) = sub.nullable_string("host") {
        base.host = h;
    }
    if base.host.is_some() && base.version == "1.0" {
        sub.error(
            "host",
            "The host argument can not be used with HTTP version 1.0.",
        );
    }
    match sub.finish() {
        Ok(()) => Some(base),
        Err(ApiError::BadRequest(errors)) => {
            // Flattened under `http`, since error values must stay strings.
            let msg = errors
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(" ");
            body.error("http", msg);
            None
        }
        Err(_) => None,
    }
}

pub(super) async fn list_monitors(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.health_monitors().values(), q.as_deref(), |r| {
            r.view(ctx)
        })
    })
}

pub(super) async fn show_monitor(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.health_monitors().get(&id).map(|r| r.view(ctx)))
    })
}

pub(super) async fn create_monitor(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let keep_any_http = app.rules().non_http_monitor_http.is_lenient();
    let id = app.write(|st, now| {
        let pool = existing_ref(&mut body, "pool", true, |p| st.pools().contains_key(&p));
        let kind = choice(&mut body, "type", true, MONITOR_TYPES);
        let delay = positive(&mut body, "delay_s").unwrap_or(2);
        let timeout = positive(&mut body, "timeout_s").unwrap_or(1);
        let up = positive(&mut body, "up_threshold").unwrap_or(2);
        let down = positive(&mut body, "down_threshold").unwrap_or(3);
        let http_req = body.nullable_object("http").flatten();
        let tags = body.tags().unwrap_or_default();
        if let Some(p) = pool
            && pool_has_monitor(st, p)
        {
            body.error("pool", "The pool already has a health monitor.");
        }
        // The `http` object only means something for HTTP checks; other types report null
        // (the official CCM sends the object for every type), unless the lenient rule keeps
        // what was sent, validated and defaulted as for HTTP checks.
        let http = match (&kind, http_req) {
            (Some(k), req) if is_http(k) => merge_http(
                &mut body,
                &req.unwrap_or_default(),
                HttpCheck::default(),
                false,
            ),
            (Some(_), Some(req)) if keep_any_http => {
                merge_http(&mut body, &req, HttpCheck::default(), false)
            }
            _ => None,
        };
        let (Some(pool), Some(kind)) = (pool, kind) else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        create_health_monitor(
            st,
            now,
            &timing,
            NewHealthMonitor {
                pool,
                kind,
                delay_s: delay,
                timeout_s: timeout,
                up_threshold: up,
                down_threshold: down,
                http,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .health_monitors()
            .get(&id)
            .map(|m| created(m.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

pub(super) async fn update_monitor(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let keep_any_http = app.rules().non_http_monitor_http.is_lenient();
    app.write(|st, now| {
        let m = st.health_monitors().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("type", &json!(m.kind));
        body.immutable("pool", &json!({"uuid": m.pool.to_string()}));
        let delay = positive(&mut body, "delay_s");
        let timeout = positive(&mut body, "timeout_s");
        let up = positive(&mut body, "up_threshold");
        let down = positive(&mut body, "down_threshold");
        let http = match body.nullable_object("http").flatten() {
            Some(obj) if is_http(&m.kind) || keep_any_http => {
                // The version is fixed once an `http` object was stored; a non-HTTP monitor
                // created without one has no version yet.
                let fixed = m.http.is_some();
                merge_http(&mut body, &obj, m.http.clone().unwrap_or_default(), fixed)
            }
            _ => None,
        };
        let tags = body.tags();
        body.finish()?;
        update_health_monitor(
            st,
            id,
            now,
            &timing,
            HealthMonitorPatch {
                delay_s: delay,
                timeout_s: timeout,
                up_threshold: up,
                down_threshold: down,
                http,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

pub(super) async fn delete_monitor(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| delete_health_monitor(st, id, now, &timing))?;
    Ok(no_content())
}
