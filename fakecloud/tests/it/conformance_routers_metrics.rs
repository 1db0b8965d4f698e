//! Conformance checks for routers (`/v1/routers`, their interfaces) and bucket metrics
//! (`/v1/metrics/buckets`, buckets registered through `/_fake/buckets` and seeds): the two
//! checks of the metrics reference (`check_26_…`, `check_27_…`) plus `extra_*` tests for
//! every rule of fakecloud/MODEL.md, "Routers" and "Bucket metrics".
//!
//! Harness: `tests/it/support` (an in-process fake with a manual clock per test, real HTTP).
//! The manual clock starts at 2026-01-01T00:00:00Z, which is 2026-01-01 in Zurich.

use std::time::Duration;

use fakecloud::{Config, FakeCloud};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support;
use support::*;

const GATEWAY_RANGE: &str = "185.98.124.0/22";

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn rpath(r: &Value) -> String {
    format!("/routers/{}", id(r))
}

fn ipath(r: &Value) -> String {
    format!("/routers/{}/interfaces", id(r))
}

async fn make_router(api: &Api, name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "zone": "rma1", "internet_gateway": false});
    merge(&mut body, extra);
    api.create("/routers", body).await
}

async fn make_iface(api: &Api, router: &Value, body: Value) -> Value {
    api.create(&ipath(router), body).await
}

/// The addresses (as text) of an address list.
fn addrs(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("address list")
        .iter()
        .map(|a| s(a, "address").to_string())
        .collect()
}

fn in_gateway_range(a: &str) -> bool {
    let ip: std::net::Ipv4Addr = a.parse().expect("IPv4 gateway address");
    let o = ip.octets();
    o[0] == 185 && o[1] == 98 && (124..=127).contains(&o[2])
}

/// A request to the admin API with its status (`fc.admin` hides refusals' status).
async fn admin(
    fc: &FakeCloud,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut rb = reqwest::Client::new().request(method, format!("{}/_fake{path}", fc.base_url()));
    if let Some(b) = body {
        rb = rb.json(&b);
    }
    let resp = rb.send().await.expect("admin request");
    let status = resp.status();
    let text = resp.text().await.expect("admin body");
    let v = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("admin {path}: {e}: {text}"))
    };
    (status, v)
}

async fn make_user(api: &Api, name: &str) -> String {
    let u = api
        .create("/objects-users", json!({"display_name": name}))
        .await;
    s(&u, "id").to_string()
}

async fn make_bucket(fc: &FakeCloud, name: &str, user: &str, created_at: Option<&str>) -> Value {
    let mut body = json!({"name": name, "objects_user_id": user});
    if let Some(t) = created_at {
        body["created_at"] = json!(t);
    }
    let (st, v) = admin(fc, Method::POST, "/buckets", Some(body)).await;
    assert_eq!(st, StatusCode::CREATED, "POST /_fake/buckets {name}: {v}");
    v
}

async fn metrics(api: &Api, query: &str) -> Value {
    api.fetch(&format!("/metrics/buckets?{query}")).await
}

fn bucket_names(m: &Value) -> Vec<String> {
    m["data"]
        .as_array()
        .expect("data list")
        .iter()
        .map(|d| s(&d["subject"], "name").to_string())
        .collect()
}

// ---------------------------------------------------------------------------
// Bucket metrics: the reference checks
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_26_metrics_of_a_user_without_buckets_is_empty() {
    let (_fc, api) = start().await;
    let user = make_user(&api, "metrics").await;
    let (st, v) = api
        .get(&format!(
            "/metrics/buckets?start=2020-01-01&end=2020-01-01&objects_user_id={user}"
        ))
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"start": "2019-12-31T23:00:00Z", "end": "2020-01-01T23:00:00Z", "data": []})
    );
}

#[tokio::test]
async fn check_27_one_bucket_one_day_one_point() {
    let (fc, api) = start().await;
    let user = make_user(&api, "owner").await;
    make_bucket(&fc, "photos", &user, None).await;
    let m = metrics(&api, "start=2026-01-01&end=2026-01-01").await;
    let data = m["data"].as_array().expect("data");
    assert_eq!(data.len(), 1, "{m}");
    assert_eq!(
        data[0]["subject"],
        json!({"name": "photos", "objects_user_id": user})
    );
    let points = data[0]["time_series"].as_array().expect("time_series");
    assert_eq!(points.len(), 1, "{m}");
    assert_eq!(points[0]["start"], "2025-12-31T23:00:00Z");
    assert_eq!(points[0]["end"], "2026-01-01T23:00:00Z");
    let usage = points[0]["usage"].as_object().expect("usage");
    let mut keys: Vec<&str> = usage.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "object_count",
            "received_bytes",
            "requests",
            "sent_bytes",
            "storage_bytes"
        ]
    );
    for (k, v) in usage {
        assert!(
            v.is_u64() && v.as_u64() > Some(0),
            "{k} is a positive integer: {v}"
        );
    }
}

// ---------------------------------------------------------------------------
// Bucket metrics: time zone, errors, filters, usage
// ---------------------------------------------------------------------------

#[tokio::test]
async fn extra_metrics_offsets_in_winter_summer_and_on_switch_days() {
    let (fc, api) = start().await;
    let user = make_user(&api, "u").await;
    make_bucket(&fc, "old-bucket", &user, Some("2019-01-01")).await;
    let bounds = |m: &Value| (m["start"].clone(), m["end"].clone());
    let m = metrics(&api, "start=2020-07-01&end=2020-07-01").await;
    assert_eq!(
        bounds(&m),
        (json!("2020-06-30T22:00:00Z"), json!("2020-07-01T22:00:00Z"))
    );
    let m = metrics(&api, "start=2020-01-01&end=2020-01-31").await;
    assert_eq!(
        bounds(&m),
        (json!("2019-12-31T23:00:00Z"), json!("2020-01-31T23:00:00Z"))
    );
    // 2025-03-30 lasts 23 hours, 2025-10-26 lasts 25.
    let m = metrics(&api, "start=2025-03-29&end=2025-03-31").await;
    let pts = m["data"][0]["time_series"]
        .as_array()
        .expect("points")
        .clone();
    let spans: Vec<(String, String)> = pts
        .iter()
        .map(|p| (s(p, "start").to_string(), s(p, "end").to_string()))
        .collect();
    assert_eq!(
        spans,
        [
            ("2025-03-28T23:00:00Z".into(), "2025-03-29T23:00:00Z".into()),
            ("2025-03-29T23:00:00Z".into(), "2025-03-30T22:00:00Z".into()),
            ("2025-03-30T22:00:00Z".into(), "2025-03-31T22:00:00Z".into()),
        ]
    );
    let m = metrics(&api, "start=2025-10-26&end=2025-10-26").await;
    assert_eq!(
        bounds(&m),
        (json!("2025-10-25T22:00:00Z"), json!("2025-10-26T23:00:00Z"))
    );
    let p = &m["data"][0]["time_series"][0];
    assert_eq!((&p["start"], &p["end"]), (&m["start"], &m["end"]));
}

#[tokio::test]
async fn extra_metrics_date_errors_name_the_parameter() {
    let (_fc, api) = start().await;
    for (query, key) in [
        ("end=2020-01-01", "start"),
        ("start=2020-01-01", "end"),
        ("start=2020-1-1&end=2020-01-01", "start"),
        ("start=2020-01-01&end=tomorrow", "end"),
        ("start=2020-02-30&end=2020-03-01", "start"),
        ("start=2020-01-02&end=2020-01-01", "end"),
        ("start=2000-01-01&end=2020-01-01", "end"),
    ] {
        let (st, v) = api.get(&format!("/metrics/buckets?{query}")).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{query}: {v}");
        assert_flat_error(&v);
        assert!(v.get(key).is_some(), "{query}: error under {key}: {v}");
    }
    let (st, v) = api.get("/metrics/buckets").await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        json!({"start": "This field is required.", "end": "This field is required."})
    );
}

#[tokio::test]
async fn extra_metrics_filters_repeat_and_combine() {
    let (fc, api) = start().await;
    let alice = make_user(&api, "alice").await;
    let bob = make_user(&api, "bob").await;
    make_bucket(&fc, "a-one", &alice, None).await;
    make_bucket(&fc, "a-two", &alice, None).await;
    make_bucket(&fc, "b-one", &bob, None).await;
    let day = "start=2026-01-01&end=2026-01-01";
    assert_eq!(
        bucket_names(&metrics(&api, day).await),
        ["a-one", "a-two", "b-one"]
    );
    let q = format!("{day}&objects_user_id={alice}");
    assert_eq!(bucket_names(&metrics(&api, &q).await), ["a-one", "a-two"]);
    let q = format!("{day}&objects_user_id={alice}&objects_user_id={bob}");
    assert_eq!(
        bucket_names(&metrics(&api, &q).await),
        ["a-one", "a-two", "b-one"]
    );
    let q = format!("{day}&bucket_name=b-one&bucket_name=a-two");
    assert_eq!(bucket_names(&metrics(&api, &q).await), ["a-two", "b-one"]);
    let q = format!("{day}&bucket_name=b-one&objects_user_id={alice}");
    assert!(bucket_names(&metrics(&api, &q).await).is_empty());
    let q = format!("{day}&bucket_name=nope");
    assert!(bucket_names(&metrics(&api, &q).await).is_empty());
    let q = format!("{day}&objects_user_id={}", "0".repeat(64));
    assert!(bucket_names(&metrics(&api, &q).await).is_empty());
}

#[tokio::test]
async fn extra_metrics_usage_is_consistent_and_starts_on_the_creation_day() {
    let (fc, api) = start().await;
    let user = make_user(&api, "u").await;
    make_bucket(&fc, "growing", &user, Some("2025-12-20T10:00:00Z")).await;
    let q = "start=2025-12-18&end=2026-01-03";
    let m = metrics(&api, q).await;
    assert_eq!(m, metrics(&api, q).await, "the same query answers the same");
    let pts = m["data"][0]["time_series"]
        .as_array()
        .expect("points")
        .clone();
    assert_eq!(pts.len(), 17, "one point per day");
    let u = |i: usize, k: &str| pts[i]["usage"][k].as_u64().expect("integer");
    let keys = [
        "requests",
        "object_count",
        "storage_bytes",
        "received_bytes",
        "sent_bytes",
    ];
    for k in keys {
        // 12-18 and 12-19 precede the creation day; 01-02 and 01-03 have not begun.
        for i in [0, 1, 15, 16] {
            assert_eq!(u(i, k), 0, "{k} on day {i}");
        }
        for i in 2..=14 {
            assert!(u(i, k) > 0, "{k} on day {i}");
        }
    }
    for i in 3..=14 {
        assert!(
            u(i, "object_count") > u(i - 1, "object_count"),
            "objects grow"
        );
        let grown = u(i, "storage_bytes") - u(i - 1, "storage_bytes");
        assert!(grown <= u(i, "received_bytes"), "growth is uploaded");
    }
    // A bucket created after the interval is not listed.
    make_bucket(&fc, "later", &user, Some("2026-01-01")).await;
    assert_eq!(
        bucket_names(&metrics(&api, "start=2025-12-01&end=2025-12-31").await),
        ["growing"]
    );
    // The day comes when the clock gets there.
    let q = "start=2026-01-02&end=2026-01-02&bucket_name=growing";
    assert_eq!(
        metrics(&api, q).await["data"][0]["time_series"][0]["usage"]["requests"],
        0
    );
    fc.advance(Duration::from_secs(86_400));
    let r = &metrics(&api, q).await["data"][0]["time_series"][0]["usage"]["requests"];
    assert!(r.as_u64() > Some(0), "{r}");
}

// ---------------------------------------------------------------------------
// Buckets: admin API, seeds, objects users
// ---------------------------------------------------------------------------

#[tokio::test]
async fn extra_buckets_admin_api_rules() {
    let (fc, api) = start().await;
    let user = make_user(&api, "u").await;
    let b = make_bucket(&fc, "logs", &user, Some("2025-06-01")).await;
    assert_eq!(
        b,
        json!({"name": "logs", "objects_user_id": user, "created_at": "2025-05-31T22:00:00.000000Z"})
    );
    let (st, list) = admin(&fc, Method::GET, "/buckets", None).await;
    assert_eq!((st, list), (StatusCode::OK, json!([b.clone()])));
    let (st, one) = admin(&fc, Method::GET, "/buckets/logs", None).await;
    assert_eq!((st, one), (StatusCode::OK, b));
    for (body, key) in [
        (
            json!({"name": "x-1", "objects_user_id": "f".repeat(64)}),
            "objects_user_id",
        ),
        (json!({"name": "logs", "objects_user_id": user}), "name"),
        (json!({"name": "Bad_Name", "objects_user_id": user}), "name"),
        (
            json!({"name": "ok-name", "objects_user_id": user, "created_at": "soon"}),
            "created_at",
        ),
    ] {
        let (st, v) = admin(&fc, Method::POST, "/buckets", Some(body.clone())).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert!(v.get(key).is_some(), "{body}: error under {key}: {v}");
    }
    let (st, _) = admin(
        &fc,
        Method::POST,
        "/buckets",
        Some(json!({"name": "a-b", "objects_user_id": user, "colour": 1})),
    )
    .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "unknown fields are refused");
    let (st, _) = admin(&fc, Method::DELETE, "/buckets/logs", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (st, _) = admin(&fc, Method::GET, "/buckets/logs", None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = admin(&fc, Method::DELETE, "/buckets/logs", None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn extra_deleting_an_objects_user_drops_its_buckets() {
    let (fc, api) = start().await;
    let gone = make_user(&api, "gone").await;
    let kept = make_user(&api, "kept").await;
    make_bucket(&fc, "gone-1", &gone, None).await;
    make_bucket(&fc, "kept-1", &kept, None).await;
    api.remove(&format!("/objects-users/{gone}")).await;
    let (_, list) = admin(&fc, Method::GET, "/buckets", None).await;
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    let m = metrics(&api, "start=2026-01-01&end=2026-01-01").await;
    assert_eq!(bucket_names(&m), ["kept-1"]);
    // the name is free again
    make_bucket(&fc, "gone-1", &kept, None).await;
}

#[tokio::test]
async fn extra_seed_declares_objects_users_and_buckets() {
    let (fc, api) = start().await;
    let seed = json!({"objects_users": [
        {"display_name": "backup", "tags": {"team": "ops"},
         "buckets": [{"name": "nightly", "created_at": "2025-12-01"}, {"name": "weekly"}]}
    ]});
    let (st, summary) = admin(&fc, Method::POST, "/seed", Some(seed)).await;
    assert_eq!(st, StatusCode::CREATED, "{summary}");
    assert_eq!(summary["objects_users"], 1);
    assert_eq!(summary["buckets"], 2);
    let users = api.list("/objects-users").await;
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["tags"], json!({"team": "ops"}));
    let m = metrics(&api, "start=2025-12-01&end=2025-12-01").await;
    assert_eq!(
        bucket_names(&m),
        ["nightly"],
        "weekly is created now, after the day"
    );
    assert_eq!(m["data"][0]["subject"]["objects_user_id"], users[0]["id"]);
    // all or nothing
    let bad = json!({"objects_users": [{"display_name": "x", "buckets": [{"name": "nightly"}]}]});
    let (st, v) = admin(&fc, Method::POST, "/seed", Some(bad)).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    assert!(error_text(&v).contains("nightly"), "{v}");
    assert_eq!(api.list("/objects-users").await.len(), 1, "nothing added");
}

// ---------------------------------------------------------------------------
// Routers
// ---------------------------------------------------------------------------

#[tokio::test]
async fn extra_router_create_shape_and_status() {
    let (fc, api) = start().await;
    let (st, r) = api
        .post(
            "/routers",
            json!({"name": "edge", "zone": "lpg1", "internet_gateway": false, "tags": {"a": "b"}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{r}");
    assert!(
        s(&r, "href").ends_with(&format!("/v1/routers/{}", id(&r))),
        "{r}"
    );
    assert_eq!(r["name"], "edge");
    assert_eq!(r["zone"], json!({"slug": "lpg1"}));
    assert_eq!(r["status"], "creating");
    assert_eq!(r["internet_gateway"], false);
    assert_eq!(r["internet_gateway_addresses"], json!([]));
    assert_eq!(r["interfaces"], json!([]));
    assert_eq!(r["tags"], json!({"a": "b"}));
    assert!(is_timestamp(s(&r, "created_at")), "{r}");
    assert_eq!(api.fetch(&rpath(&r)).await, r, "GET equals the 201 body");
    fc.advance(Duration::from_secs(2));
    assert_eq!(api.fetch(&rpath(&r)).await["status"], "creating");
    fc.advance(Duration::from_secs(1));
    assert_eq!(api.fetch(&rpath(&r)).await["status"], "active");
    // zone and internet_gateway may be left out
    let plain = api.create("/routers", json!({"name": "plain"})).await;
    assert_eq!(plain["zone"], json!({"slug": "rma1"}));
    assert_eq!(plain["internet_gateway"], false);
    assert_eq!(plain["tags"], json!({}));
    let listed = api.list("/routers").await;
    assert_eq!(uuids(&listed), [id(&r), id(&plain)], "creation order");
}

#[tokio::test]
async fn extra_router_validation_errors_name_the_field() {
    let (_fc, api) = start().await;
    for (body, key) in [
        (json!({}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": 3}), "name"),
        (json!({"name": "r", "zone": "xyz1"}), "zone"),
        (
            json!({"name": "r", "internet_gateway": "yes"}),
            "internet_gateway",
        ),
        (json!({"name": "r", "tags": ["a"]}), "tags"),
    ] {
        let r = api.post("/routers", body.clone()).await;
        let v = assert_bad_request(&r, key, &body.to_string());
        assert!(v.get(key).is_some(), "{body}: {v}");
    }
    let r = api.post("/routers", json!({"zone": "nope"})).await;
    let v = assert_bad_request(&r, "name", "all errors at once");
    assert!(v.get("zone").is_some(), "{v}");
    assert!(api.list("/routers").await.is_empty(), "nothing created");
    let router = make_router(&api, "r", json!({})).await;
    for (body, key) in [
        (json!({"name": ""}), "name"),
        (json!({"zone": "lpg1"}), "zone"),
        (json!({"internet_gateway": 1}), "internet_gateway"),
        (json!({"tags": "x"}), "tags"),
    ] {
        let r = api.patch(&rpath(&router), body.clone()).await;
        assert_bad_request(&r, key, &body.to_string());
    }
    assert_eq!(api.fetch(&rpath(&router)).await, router, "unchanged");
}

#[tokio::test]
async fn extra_router_gateway_address_and_reverse_ptr() {
    let (_fc, api) = start().await;
    let fqdn = make_router(
        &api,
        "router.example.com",
        json!({"internet_gateway": true}),
    )
    .await;
    assert_eq!(fqdn["internet_gateway"], true);
    let gw = fqdn["internet_gateway_addresses"].as_array().expect("list");
    assert_eq!(gw.len(), 1, "exactly one IPv4 address: {fqdn}");
    assert_eq!(gw[0]["version"], 4);
    assert_eq!(gw[0]["reverse_ptr"], "router.example.com");
    assert!(in_gateway_range(s(&gw[0], "address")), "{fqdn}");
    let subnet = &gw[0]["subnet"];
    assert_eq!(subnet["cidr"], GATEWAY_RANGE);
    assert!(s(subnet, "href").ends_with(&format!("/v1/subnets/{}", s(subnet, "uuid"))));
    let plain = make_router(&api, "edge", json!({"internet_gateway": true})).await;
    let gw2 = &plain["internet_gateway_addresses"][0];
    assert_eq!(gw2["reverse_ptr"], Value::Null, "not an FQDN");
    assert_ne!(
        gw2["address"], gw[0]["address"],
        "each router its own address"
    );
    assert_eq!(gw2["subnet"], *subnet, "same zone, same gateway subnet");
}

#[tokio::test]
async fn extra_router_patch_name_gateway_and_tags_separately() {
    let (_fc, api) = start().await;
    let r = make_router(
        &api,
        "r.example.com",
        json!({"internet_gateway": true, "tags": {"x": "1"}}),
    )
    .await;
    let first = r["internet_gateway_addresses"][0]["address"].clone();
    api.update(&rpath(&r), json!({"name": "offline.example.com"}))
        .await;
    let got = api.fetch(&rpath(&r)).await;
    assert_eq!(got["name"], "offline.example.com");
    assert_eq!(
        got["internet_gateway_addresses"][0]["address"], first,
        "a rename keeps the address"
    );
    api.update(&rpath(&r), json!({"internet_gateway": false}))
        .await;
    let got = api.fetch(&rpath(&r)).await;
    assert_eq!(got["internet_gateway"], false);
    assert_eq!(got["internet_gateway_addresses"], json!([]));
    assert_eq!(
        (got["uuid"].clone(), got["tags"].clone()),
        (r["uuid"].clone(), json!({"x": "1"}))
    );
    api.update(
        &rpath(&r),
        json!({"internet_gateway": true, "name": "back.example.com"}),
    )
    .await;
    let got = api.fetch(&rpath(&r)).await;
    let gw = &got["internet_gateway_addresses"];
    assert_eq!(gw.as_array().map(Vec::len), Some(1));
    assert_eq!(gw[0]["reverse_ptr"], "back.example.com");
    api.update(
        &rpath(&r),
        json!({"internet_gateway": true, "zone": "rma1", "tags": {}}),
    )
    .await;
    let again = api.fetch(&rpath(&r)).await;
    assert_eq!(
        again["internet_gateway_addresses"], *gw,
        "true again keeps the address"
    );
    assert_eq!(again["tags"], json!({}));
}

#[tokio::test]
async fn extra_router_list_filters_and_404s() {
    let (_fc, api) = start().await;
    let a = make_router(&api, "a", json!({"tags": {"env": "prod"}})).await;
    let b = make_router(&api, "b", json!({"tags": {"env": "dev"}})).await;
    assert_eq!(uuids(&api.list("/routers?name=b").await), [id(&b)]);
    assert_eq!(uuids(&api.list("/routers?tag:env=prod").await), [id(&a)]);
    assert_eq!(
        uuids(&api.list("/routers?tag%3Aenv").await),
        [id(&a), id(&b)]
    );
    assert!(api.list("/routers?tag:team").await.is_empty());
    let unknown = "/routers/00000000-0000-4000-8000-000000000000";
    api.assert_not_found(unknown).await;
    api.assert_not_found("/routers/a").await;
    let (st, _) = api.patch(unknown, json!({"name": "x"})).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = api.delete(unknown).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = api
        .post(&format!("{unknown}/interfaces"), json!({"network": id(&a)}))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = api
        .delete(&format!("{}/interfaces/{}", rpath(&a), id(&b)))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND, "no such interface");
}

// ---------------------------------------------------------------------------
// Router interfaces
// ---------------------------------------------------------------------------

#[tokio::test]
async fn extra_interface_with_given_address() {
    let (_fc, api) = start().await;
    let r = make_router(&api, "r", json!({})).await;
    let (net, sub) = private_subnet(&api, "192.168.99.0/24").await;
    let (st, i) = api
        .post(
            &ipath(&r),
            json!({"network": id(&net), "addresses": [{"subnet": id(&sub), "address": "192.168.99.10"}]}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{i}");
    assert!(!s(&i, "uuid").is_empty());
    assert_eq!(
        i["network"],
        json!({"href": net["href"], "uuid": net["uuid"], "name": "private"})
    );
    assert_eq!(
        i["addresses"],
        json!([{"address": "192.168.99.10", "version": 4, "reverse_ptr": null,
                "subnet": {"href": sub["href"], "uuid": sub["uuid"], "cidr": "192.168.99.0/24"}}])
    );
    assert_eq!(i["type"], "private");
    let mac = s(&i, "mac_address");
    assert!(
        mac.len() == 17 && mac.starts_with("02:") && mac.split(':').all(|p| p.len() == 2),
        "{mac}"
    );
    assert_eq!(api.fetch(&rpath(&r)).await["interfaces"], json!([i]));
}

#[tokio::test]
async fn extra_interface_with_assigned_address() {
    let (_fc, api) = start().await;
    let r = make_router(&api, "r", json!({})).await;
    // Without an address: the subnet's gateway address when it has one.
    let net = api
        .create(
            "/networks",
            json!({"name": "gw", "auto_create_ipv4_subnet": false}),
        )
        .await;
    let sub = api
        .create(
            "/subnets",
            json!({"cidr": "10.7.0.0/24", "network": id(&net), "gateway_address": "10.7.0.1"}),
        )
        .await;
    let i = make_iface(&api, &r, json!({"network": id(&net)})).await;
    assert_eq!(addrs(&i["addresses"]), ["10.7.0.1"]);
    assert_eq!(i["addresses"][0]["subnet"]["uuid"], sub["uuid"]);
    // Else the first free address; `null` and empty strings (Go SDK) mean "assign".
    let (net2, sub2) = private_subnet(&api, "192.168.5.0/24").await;
    let r2 = make_router(&api, "r2", json!({})).await;
    let i2 = make_iface(&api, &r2, json!({"network": id(&net2), "addresses": null})).await;
    assert_eq!(addrs(&i2["addresses"]), ["192.168.5.1"]);
    let r3 = make_router(&api, "r3", json!({})).await;
    let body = json!({"network": id(&net2), "addresses": [{"subnet": id(&sub2), "address": ""}]});
    let i3 = make_iface(&api, &r3, body).await;
    assert_eq!(
        addrs(&i3["addresses"]),
        ["192.168.5.2"],
        "skips the taken .1"
    );
    // Servers get addresses the routers do not hold.
    let srv = make_server(&api, "s", json!({"interfaces": [{"network": id(&net2)}]})).await;
    assert_eq!(addrs(&srv["interfaces"][0]["addresses"]), ["192.168.5.3"]);
}

#[tokio::test]
async fn extra_interface_address_rules() {
    let (_fc, api) = start().await;
    let r = make_router(&api, "r", json!({})).await;
    let (net, sub) = private_subnet(&api, "192.168.99.0/24").await;
    let (other_net, other_sub) = private_subnet(&api, "10.9.0.0/24").await;
    let lpg = api
        .create("/networks", json!({"name": "far", "zone": "lpg1"}))
        .await;
    let empty = api
        .create(
            "/networks",
            json!({"name": "bare", "auto_create_ipv4_subnet": false}),
        )
        .await;
    make_server(
        &api,
        "s",
        json!({"interfaces": [{"network": id(&net),
        "addresses": [{"subnet": id(&sub), "address": "192.168.99.20"}]}]}),
    )
    .await;
    let with = |address: &str| json!({"network": id(&net), "addresses": [{"subnet": id(&sub), "address": address}]});
    for (body, key, needle) in [
        (
            with("192.168.100.5"),
            "addresses",
            "is not a valid IP for the specified subnet",
        ),
        (
            with("192.168.99.0"),
            "addresses",
            "is not a valid IP for the specified subnet",
        ),
        (
            with("192.168.99.255"),
            "addresses",
            "is not a valid IP for the specified subnet",
        ),
        (with("192.168.99.20"), "addresses", "already in use"),
        (with("not-an-ip"), "addresses", "not-an-ip"),
        (
            json!({"network": id(&net), "addresses": [{"subnet": id(&other_sub)}]}),
            "addresses",
            "is not part of network",
        ),
        (
            json!({"network": id(&net), "addresses": [{"subnet": "nope"}]}),
            "addresses",
            "subnet",
        ),
        (
            json!({"network": id(&net), "addresses": "x"}),
            "addresses",
            "list",
        ),
        (
            json!({"network": id(&empty)}),
            "addresses",
            "no IPv4 subnet",
        ),
        (json!({"network": id(&lpg)}), "network", "zone"),
        (
            json!({"network": "00000000-0000-4000-8000-000000000000"}),
            "network",
            "does not exist",
        ),
        (json!({"network": "x"}), "network", "valid UUID"),
        (json!({}), "network", "This field is required."),
    ] {
        let resp = api.post(&ipath(&r), body.clone()).await;
        let v = assert_bad_request(&resp, needle, &body.to_string());
        assert!(v.get(key).is_some(), "{body}: error under {key}: {v}");
    }
    assert_eq!(
        api.fetch(&rpath(&r)).await["interfaces"],
        json!([]),
        "nothing added"
    );
    // One interface per network; another network is fine.
    make_iface(&api, &r, with("192.168.99.10")).await;
    let resp = api.post(&ipath(&r), with("192.168.99.11")).await;
    assert_bad_request(
        &resp,
        "already has an interface",
        "second interface on the network",
    );
    make_iface(&api, &r, json!({"network": id(&other_net)})).await;
    // Another router cannot take the address either.
    let r2 = make_router(&api, "r2", json!({})).await;
    let resp = api.post(&ipath(&r2), with("192.168.99.10")).await;
    assert_bad_request(&resp, "already in use", "address of another router");
}

#[tokio::test]
async fn extra_servers_cannot_take_router_addresses() {
    let (_fc, api) = start().await;
    let r = make_router(&api, "r", json!({"internet_gateway": true})).await;
    let (net, sub) = private_subnet(&api, "192.168.99.0/24").await;
    make_iface(
        &api,
        &r,
        json!({"network": id(&net),
        "addresses": [{"subnet": id(&sub), "address": "192.168.99.10"}]}),
    )
    .await;
    let body = json!({"name": "s", "flavor": FLAVOR, "image": IMAGE, "interfaces": [{"network": id(&net),
        "addresses": [{"subnet": id(&sub), "address": "192.168.99.10"}]}]});
    let resp = api.post("/servers", body).await;
    assert_bad_request(&resp, "already in use", "server on the router's address");
    assert!(api.list("/servers").await.is_empty());
}

#[tokio::test]
async fn extra_interfaces_cannot_change_and_delete_frees_the_address() {
    let (_fc, api) = start().await;
    let r = make_router(&api, "r", json!({})).await;
    let (net, sub) = private_subnet(&api, "192.168.99.0/24").await;
    let body = json!({"network": id(&net), "addresses": [{"subnet": id(&sub), "address": "192.168.99.10"}]});
    let i = make_iface(&api, &r, body.clone()).await;
    let ipath_one = format!("{}/{}", ipath(&r), id(&i));
    let (st, _) = api.patch(&ipath_one, json!({"addresses": []})).await;
    assert_eq!(
        st,
        StatusCode::METHOD_NOT_ALLOWED,
        "interfaces cannot be changed"
    );
    let (st, _) = api.get(&ipath_one).await;
    assert_eq!(
        st,
        StatusCode::METHOD_NOT_ALLOWED,
        "no GET of one interface"
    );
    api.remove(&ipath_one).await;
    assert_eq!(api.fetch(&rpath(&r)).await["interfaces"], json!([]));
    let (st, _) = api.delete(&ipath_one).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let r2 = make_router(&api, "r2", json!({})).await;
    let again = make_iface(&api, &r2, body).await;
    assert_eq!(addrs(&again["addresses"]), ["192.168.99.10"], "free again");
}

#[tokio::test]
async fn extra_network_and_subnet_deletes_are_refused_while_a_router_uses_them() {
    let (_fc, api) = start().await;
    let r = make_router(&api, "edge-router", json!({})).await;
    let (net, sub) = private_subnet(&api, "192.168.99.0/24").await;
    let i = make_iface(&api, &r, json!({"network": id(&net)})).await;
    let resp = api.delete(&format!("/subnets/{}", id(&sub))).await;
    assert_bad_request(&resp, "edge-router", "subnet delete");
    let resp = api.delete(&format!("/networks/{}", id(&net))).await;
    assert_bad_request(&resp, "edge-router", "network delete");
    api.fetch(&format!("/subnets/{}", id(&sub))).await;
    api.remove(&format!("{}/{}", ipath(&r), id(&i))).await;
    api.remove(&format!("/networks/{}", id(&net))).await;
}

#[tokio::test]
async fn extra_router_delete_frees_its_addresses() {
    let (fc, api) = start().await;
    let r = make_router(&api, "r", json!({"internet_gateway": true})).await;
    let gw = r["internet_gateway_addresses"][0]["address"].clone();
    let (net, sub) = private_subnet(&api, "192.168.99.0/24").await;
    make_iface(&api, &r, json!({"network": id(&net)})).await;
    api.remove(&rpath(&r)).await;
    wait_gone(&fc, &api, &rpath(&r), 10).await;
    api.remove(&format!("/subnets/{}", id(&sub))).await;
    let r2 = make_router(&api, "r2", json!({"internet_gateway": true})).await;
    assert_eq!(
        r2["internet_gateway_addresses"][0]["address"], gw,
        "the address is free again"
    );
    let (st, _) = api.delete(&rpath(&r)).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

// ---------------------------------------------------------------------------
// Admin: seeded ids, dump/restore, reset, faults, request log
// ---------------------------------------------------------------------------

#[tokio::test]
async fn extra_seeded_runs_repeat_router_ids_and_macs() {
    async fn run() -> Value {
        let config = Config {
            id_seed: Some(7),
            ..Config::for_tests()
        };
        let fc = FakeCloud::start(config).await.expect("start fakecloud");
        let api = Api::new(&fc);
        let r = make_router(&api, "r", json!({"internet_gateway": true})).await;
        let (net, _) = private_subnet(&api, "192.168.99.0/24").await;
        let i = make_iface(&api, &r, json!({"network": id(&net)})).await;
        fc.shutdown().await;
        json!([
            r["uuid"],
            r["internet_gateway_addresses"][0]["address"],
            i["uuid"],
            i["mac_address"]
        ])
    }
    assert_eq!(run().await, run().await);
}

#[tokio::test]
async fn extra_state_dump_restore_and_reset_include_routers_and_buckets() {
    let (fc, api) = start().await;
    let r = make_router(&api, "r", json!({"internet_gateway": true})).await;
    let (net, _) = private_subnet(&api, "192.168.99.0/24").await;
    make_iface(&api, &r, json!({"network": id(&net)})).await;
    let user = make_user(&api, "u").await;
    make_bucket(&fc, "kept", &user, Some("2025-11-01")).await;
    let router = api.fetch(&rpath(&r)).await;
    let day = "start=2025-11-01&end=2025-11-03";
    let before = metrics(&api, day).await;
    let (_, dump) = admin(&fc, Method::GET, "/state", None).await;
    assert_eq!(dump["routers"].as_array().map(Vec::len), Some(1), "{dump}");
    assert_eq!(dump["buckets"].as_array().map(Vec::len), Some(1), "{dump}");
    let (st, _) = admin(&fc, Method::POST, "/reset", None).await;
    assert!(st.is_success());
    assert!(api.list("/routers").await.is_empty());
    assert_eq!(metrics(&api, day).await["data"], json!([]));
    let (st, _) = admin(&fc, Method::PUT, "/state", Some(dump.clone())).await;
    assert!(st.is_success(), "restore: {st}");
    assert_eq!(api.fetch(&rpath(&r)).await, router);
    assert_eq!(metrics(&api, day).await, before);
    // a dump made before routers and buckets existed restores with none
    let mut old = dump.clone();
    let obj = old.as_object_mut().expect("dump object");
    obj.remove("routers");
    obj.remove("buckets");
    let (st, _) = admin(&fc, Method::PUT, "/state", Some(old)).await;
    assert!(st.is_success(), "restore old: {st}");
    assert!(api.list("/routers").await.is_empty());
    assert_eq!(metrics(&api, day).await["data"], json!([]));
}

#[tokio::test]
async fn extra_fault_rules_and_request_log_reach_routers_and_metrics() {
    let (fc, api) = start().await;
    let r = make_router(&api, "r", json!({})).await;
    let rule = json!({"path": "/v1/routers/**", "effect": {"type": "status", "status": 429}});
    let (st, _) = admin(&fc, Method::POST, "/faults", Some(rule)).await;
    assert_eq!(st, StatusCode::CREATED);
    let (st, v) = api.get(&rpath(&r)).await;
    assert_eq!(
        (st, v),
        (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"detail": "Injected fault."})
        )
    );
    let (st, _) = api.post(&ipath(&r), json!({"network": id(&r)})).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS);
    let (st, _) = admin(&fc, Method::DELETE, "/faults", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    api.fetch(&rpath(&r)).await;
    api.get("/metrics/buckets?start=2026-01-01&end=2026-01-01")
        .await;
    let (_, counters) = admin(&fc, Method::GET, "/counters", None).await;
    for key in [
        "POST /v1/routers",
        "GET /v1/routers/{uuid}",
        "GET /v1/metrics/buckets",
    ] {
        assert_eq!(counters[key], 1, "{key} in {counters}");
    }
}
