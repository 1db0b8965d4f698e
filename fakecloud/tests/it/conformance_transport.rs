//! The rest of the public API v1 surface (fakecloud/MODEL.md, "Project log" and "CORS"):
//! the CORS headers on every answer and the project log. `check_28_…` is check 28 of the
//! API reference's list of conformance checks; `extra_*` tests cover the modelled rules.

use crate::support;

use fakecloud::{FaultEffect, FaultRule};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::*;

const CORS: [(&str, &str); 3] = [
    ("access-control-allow-origin", "*"),
    (
        "access-control-allow-headers",
        "Content-Type, Authorization",
    ),
    (
        "access-control-allow-methods",
        "GET, POST, OPTIONS, PUT, PATCH, DELETE",
    ),
];

fn assert_cors(r: &Resp, what: &str) {
    for (name, value) in CORS {
        let all: Vec<_> = r.headers.get_all(name).iter().collect();
        assert_eq!(all.len(), 1, "{what}: {name} exactly once, got {all:?}");
        assert_eq!(all[0], value, "{what}: {name}");
    }
}

#[tokio::test]
async fn check_28_every_answer_carries_the_cors_headers_once() {
    let (fc, api) = start().await;
    let token = api.token.clone();
    let json_ct = [("content-type", "application/json")];
    type Case<'a> = (
        &'a str,
        Method,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        StatusCode,
    );
    let cases: Vec<Case> = vec![
        (
            "list",
            Method::GET,
            "/servers",
            Some(&token),
            None,
            StatusCode::OK,
        ),
        (
            "unknown path",
            Method::GET,
            "/no-such-thing",
            Some(&token),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            "unknown server",
            Method::GET,
            "/servers/00000000-0000-4000-8000-000000000000",
            Some(&token),
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            "no token",
            Method::GET,
            "/servers",
            None,
            None,
            StatusCode::UNAUTHORIZED,
        ),
        (
            "bad request",
            Method::POST,
            "/networks",
            Some(&token),
            Some("{\"mtu\": \"x\"}"),
            StatusCode::BAD_REQUEST,
        ),
        (
            "created",
            Method::POST,
            "/networks",
            Some(&token),
            Some("{\"name\": \"n\"}"),
            StatusCode::CREATED,
        ),
    ];
    for (what, method, path, tok, body, want) in cases {
        let r = api.raw(method, path, tok, &json_ct, body).await;
        assert_eq!(r.status, want, "{what}: {}", r.text);
        assert_cors(&r, what);
    }
    // The admin API and answers made by a fault rule carry them too.
    let r = api
        .raw(
            Method::GET,
            &format!("{}/_fake/clock", fc.base_url()),
            None,
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_cors(&r, "admin");
    fc.faults()
        .add(
            FaultRule::new(
                Some("GET"),
                "/v1/volumes",
                FaultEffect::Status {
                    status: 429,
                    retry_after: None,
                    body: None,
                },
            )
            .times(1),
        )
        .expect("a valid fault rule");
    let r = api
        .raw(Method::GET, "/volumes", Some(&token), &[], None)
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_cors(&r, "fault");
}

#[tokio::test]
async fn extra_a_cors_preflight_needs_no_token_and_changes_nothing() {
    let (fc, api) = start().await;
    let r = api
        .raw(
            Method::OPTIONS,
            "/servers",
            None,
            &[
                ("origin", "https://console.example"),
                ("access-control-request-method", "POST"),
                (
                    "access-control-request-headers",
                    "authorization, content-type",
                ),
            ],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_cors(&r, "preflight");
    assert!(api.list("/servers").await.is_empty());
    // Without the preflight header OPTIONS is an ordinary request: it needs a token.
    let r = api.raw(Method::OPTIONS, "/servers", None, &[], None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    fc.shutdown().await;
}

fn actions(page: &Value) -> Vec<(String, String)> {
    page["results"]
        .as_array()
        .unwrap_or_else(|| panic!("results is a list: {page}"))
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or_default().to_string(),
                e["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn extra_project_log_has_one_entry_per_server_action_in_order() {
    let (fc, api) = start().await;
    let start_at = "2025-01-01T00:00:00Z";
    let first = api.fetch(&format!("/project-logs?start={start_at}")).await;
    assert_eq!(first["results"], json!([]), "{first}");
    let s = running_server(&fc, &api, "web-1", json!({})).await;
    let path = format!("/servers/{}", s["uuid"].as_str().unwrap_or_default());
    for action in ["stop", "start", "reboot"] {
        let (st, v) = api.post(&format!("{path}/{action}"), json!({})).await;
        assert_eq!(st, StatusCode::NO_CONTENT, "{action}: {v}");
        fc.advance(std::time::Duration::from_secs(30));
    }
    api.remove(&path).await;
    let page = api.fetch(&format!("/project-logs?start={start_at}")).await;
    let want: Vec<(String, String)> = [
        ("server_create", "has been created"),
        ("server_stop", "has been shut down"),
        ("server_start", "has been started"),
        ("server_reboot", "has been rebooted"),
        ("server_delete", "has been deleted"),
    ]
    .iter()
    .map(|(a, m)| (a.to_string(), format!("Server 'web-1' {m}")))
    .collect();
    assert_eq!(actions(&page), want, "{page}");
    for e in page["results"].as_array().into_iter().flatten() {
        assert!(
            e["created_at"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{e}"
        );
    }
    fc.shutdown().await;
}

#[tokio::test]
async fn extra_poll_more_returns_only_what_happened_since() {
    let (fc, api) = start().await;
    let s = make_server(&api, "a", json!({})).await;
    let page = api.fetch("/project-logs?start=2025-01-01T00:00:00Z").await;
    assert_eq!(actions(&page).len(), 1, "{page}");
    let more = page["poll_more"].as_str().expect("poll_more").to_string();
    assert!(more.starts_with("http://"), "absolute URL: {more}");
    let again = api.fetch(&more).await;
    assert_eq!(again["results"], json!([]), "nothing new: {again}");
    // Same virtual instant (manual clock): the cursor still tells old from new.
    api.remove(&format!(
        "/servers/{}",
        s["uuid"].as_str().unwrap_or_default()
    ))
    .await;
    let next = api.fetch(&more).await;
    assert_eq!(
        actions(&next),
        vec![(
            "server_delete".to_string(),
            "Server 'a' has been deleted".to_string()
        )],
        "{next}"
    );
    let after_next = api
        .fetch(next["poll_more"].as_str().expect("poll_more"))
        .await;
    assert_eq!(after_next["results"], json!([]));
    fc.shutdown().await;
}

#[tokio::test]
async fn extra_project_log_start_filters_and_is_validated() {
    let (fc, api) = start().await;
    make_server(&api, "early", json!({})).await;
    fc.advance(std::time::Duration::from_secs(3600));
    let now = api.fetch(&format!("{}/_fake/clock", fc.base_url())).await["now"]
        .as_str()
        .expect("now")
        .to_string();
    make_server(&api, "late", json!({})).await;
    let page = api.fetch(&format!("/project-logs?start={now}")).await;
    assert_eq!(
        actions(&page),
        vec![(
            "server_create".to_string(),
            "Server 'late' has been created".to_string()
        )]
    );
    let bad = api.get("/project-logs?start=yesterday").await;
    assert_bad_request(&bad, "start", "malformed start");
    let bad = api.get("/project-logs?after=x").await;
    assert_bad_request(&bad, "after", "malformed cursor");
    fc.shutdown().await;
}

#[tokio::test]
async fn extra_project_log_is_dumped_restored_and_reset() {
    let (fc, api) = start().await;
    make_server(&api, "kept", json!({})).await;
    let dump = dump_state(&fc).await;
    assert_eq!(
        dump["project_log"].as_array().map(Vec::len),
        Some(1),
        "{dump}"
    );
    reset_state(&fc).await;
    assert_eq!(api.fetch("/project-logs").await["results"], json!([]));
    restore_state(&fc, &dump).await;
    assert_eq!(actions(&api.fetch("/project-logs").await).len(), 1);
    fc.shutdown().await;
}

/// Every collection of the public API v1 answers a GET with 200 (the API documentation's
/// resources, the load-balancer sub-resources and the newer routers), so no client that
/// lists what it manages meets a 404.
#[tokio::test]
async fn extra_no_collection_of_api_v1_answers_404() {
    let (fc, api) = start().await;
    let arrays = [
        "/servers",
        "/server-groups",
        "/networks",
        "/subnets",
        "/floating-ips",
        "/volumes",
        "/volume-snapshots",
        "/custom-images",
        "/custom-images/import",
        "/objects-users",
        "/routers",
        "/load-balancers",
        "/load-balancers/pools",
        "/load-balancers/listeners",
        "/load-balancers/health-monitors",
        "/load-balancers/flavors",
        "/flavors",
        "/images",
        "/regions",
    ];
    for path in arrays {
        let (st, v) = api.get(path).await;
        assert_eq!(st, StatusCode::OK, "GET /v1{path}: {v}");
        assert!(v.is_array(), "GET /v1{path} is a bare array: {v}");
    }
    for path in [
        "/metrics/buckets?start=2026-01-01&end=2026-01-01",
        "/project-logs?start=2026-01-01T00:00:00Z",
    ] {
        let (st, v) = api.get(path).await;
        assert_eq!(st, StatusCode::OK, "GET /v1{path}: {v}");
        assert!(v.is_object(), "GET /v1{path}: {v}");
    }
    fc.shutdown().await;
}
