//! Conformance checks for volumes, servers' volumes and volume snapshots: one test per check
//! of `cloudscale-api-more.md` §12 (checks 1-17), named `check_NN_…` with the reference's own
//! numbers (not continuing `tests/conformance.rs`), plus `extra_*` tests for the inferred
//! rules fakecloud/MODEL.md lists.
//!
//! Same harness as `tests/conformance.rs`: an in-process fake with a manual clock per test,
//! real HTTP, time moves only through `FakeCloud::advance`.
#![allow(dead_code)]

use std::time::Duration;

use fakecloud::{Config, FakeCloud};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const FLAVOR: &str = "flex-4-2";
const IMAGE: &str = "debian-12";

// ---------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------

struct Resp {
    status: StatusCode,
    headers: HeaderMap,
    text: String,
}

impl Resp {
    /// The body as JSON, `Null` for an empty body; panics on a non-JSON body.
    fn json(&self) -> Value {
        if self.text.trim().is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.text).unwrap_or_else(|e| {
            panic!(
                "response ({}) is not JSON ({e}): {:?}",
                self.status, self.text
            )
        })
    }
}

/// A client that talks to the fake like an API client: bearer token, JSON
/// content type, no redirect following (so a 3xx would be visible).
struct Api {
    http: reqwest::Client,
    base: String,
    api: String,
    token: String,
}

impl Api {
    fn new(fc: &FakeCloud) -> Self {
        Self::with_token(fc, fc.token())
    }

    fn with_token(fc: &FakeCloud, token: &str) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("build reqwest client");
        Api {
            http,
            base: fc.base_url(),
            api: fc.api_url(),
            token: token.to_string(),
        }
    }

    /// `path` is relative to `/v1` (e.g. `/servers`) unless it is an absolute URL.
    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{}", self.api, path)
        }
    }

    /// Fully controlled request. `token: None` sends no Authorization header.
    async fn raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Resp {
        let url = self.url(path);
        let mut rb = self.http.request(method.clone(), &url);
        if let Some(t) = token {
            rb = rb.header(AUTHORIZATION, format!("Bearer {t}"));
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = body {
            rb = rb.body(b.to_string());
        }
        let resp = rb
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: request failed: {e}"));
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp
            .text()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: reading body failed: {e}"));
        assert!(
            !status.is_redirection(),
            "{method} {url} answered with a redirect {status} (reference 1.1: never redirect)"
        );
        assert!(
            !status.is_server_error(),
            "{method} {url} answered {status}: {text}"
        );
        Resp {
            status,
            headers,
            text,
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let body = body.map(|b| serde_json::to_string(b).expect("serialize body"));
        let r = self
            .raw(
                method,
                path,
                Some(&self.token),
                &[("content-type", "application/json")],
                body.as_deref(),
            )
            .await;
        let v = r.json();
        (r.status, v)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(&body)).await
    }

    async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PATCH, path, Some(&body)).await
    }

    async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None).await
    }

    /// POST that must answer 201 with a JSON object.
    async fn create(&self, path: &str, body: Value) -> Value {
        let (st, v) = self.post(path, body.clone()).await;
        assert_eq!(st, StatusCode::CREATED, "POST {path} {body} -> {st}: {v}");
        assert!(v.is_object(), "POST {path} must return an object, got {v}");
        v
    }

    /// GET that must answer 200.
    async fn fetch(&self, path: &str) -> Value {
        let (st, v) = self.get(path).await;
        assert_eq!(st, StatusCode::OK, "GET {path} -> {st}: {v}");
        v
    }

    /// GET of a list that must answer 200 with a bare array.
    async fn list(&self, path: &str) -> Vec<Value> {
        let v = self.fetch(path).await;
        v.as_array()
            .unwrap_or_else(|| panic!("GET {path} must return a bare JSON array, got {v}"))
            .clone()
    }

    /// PATCH that must answer 204 (or 200), never 202.
    async fn update(&self, path: &str, body: Value) {
        let (st, v) = self.patch(path, body.clone()).await;
        assert!(
            st == StatusCode::NO_CONTENT || st == StatusCode::OK,
            "PATCH {path} {body} -> {st} (want 204 or 200): {v}"
        );
    }

    /// DELETE that must answer exactly 204 with an empty body.
    async fn remove(&self, path: &str) {
        let r = self
            .raw(
                Method::DELETE,
                path,
                Some(&self.token),
                &[("content-type", "application/json")],
                None,
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::NO_CONTENT,
            "DELETE {path} -> {}: {}",
            r.status,
            r.text
        );
        assert!(
            r.text.is_empty(),
            "DELETE {path} must have an empty body, got {:?}",
            r.text
        );
    }

    /// GET that must answer 404 `{"detail": "Not found."}`.
    async fn assert_not_found(&self, path: &str) {
        let (st, v) = self.get(path).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "GET {path} -> {st}: {v}");
        assert_flat_error(&v);
        assert_eq!(v, json!({"detail": "Not found."}), "404 body of GET {path}");
    }
}

async fn start() -> (FakeCloud, Api) {
    let fc = FakeCloud::start(Config::for_tests())
        .await
        .expect("start fakecloud");
    let api = Api::new(&fc);
    (fc, api)
}

// ---------------------------------------------------------------------------
// Assertion helpers
// ---------------------------------------------------------------------------

/// Reference 1.6: an error body is a flat JSON object whose values are strings.
fn assert_flat_error(body: &Value) {
    let obj = body
        .as_object()
        .unwrap_or_else(|| panic!("error body must be a JSON object, got {body}"));
    for (k, v) in obj {
        assert!(
            v.is_string(),
            "error body value for {k:?} must be a string, got {v} in {body}"
        );
    }
}

/// All keys and messages of a flat error body, for `contains` checks.
fn error_text(body: &Value) -> String {
    body.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}: {}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .unwrap_or_default()
}

/// Asserts a 400 with a flat body whose messages contain `needle`; returns the body.
fn assert_bad_request(resp: &(StatusCode, Value), needle: &str, ctx: &str) -> Value {
    let (st, v) = resp;
    assert_eq!(
        *st,
        StatusCode::BAD_REQUEST,
        "{ctx}: want 400, got {st}: {v}"
    );
    assert_flat_error(v);
    assert!(
        error_text(v).contains(needle),
        "{ctx}: error body should contain {needle:?}, got {v}"
    );
    v.clone()
}

/// Reference 1.4: `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 27
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            26 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("field {key:?} must be a string in {v}"))
}

fn id(v: &Value) -> String {
    s(v, "uuid").to_string()
}

fn hrefs(list: &[Value]) -> Vec<String> {
    list.iter().map(|v| s(v, "href").to_string()).collect()
}

fn uuids(list: &[Value]) -> Vec<String> {
    list.iter().map(id).collect()
}

/// The bare IP of a floating IP (its `network` without prefix length).
fn fip_ip(f: &Value) -> String {
    s(f, "network")
        .split('/')
        .next()
        .expect("network has an address part")
        .to_string()
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), extra) {
        for (k, v) in b {
            a.insert(k, v);
        }
    }
}

/// Polls GET `path` every 2 virtual seconds (like the Go SDK's WaitFor) until
/// `pred` holds, for at most `max_secs` virtual seconds.
async fn wait_for(
    fc: &FakeCloud,
    api: &Api,
    path: &str,
    max_secs: u64,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let mut waited = 0;
    loop {
        let (st, v) = api.get(path).await;
        if st == StatusCode::OK && pred(&v) {
            return v;
        }
        assert!(
            waited < max_secs,
            "{what}: not reached after {waited} virtual seconds; last GET {path}: {st} {v}"
        );
        fc.advance(Duration::from_secs(2));
        waited += 2;
    }
}

/// Polls until GET `path` answers 404, for at most `max_secs` virtual seconds.
async fn wait_gone(fc: &FakeCloud, api: &Api, path: &str, max_secs: u64) {
    let mut waited = 0;
    loop {
        let (st, v) = api.get(path).await;
        if st == StatusCode::NOT_FOUND {
            assert_flat_error(&v);
            return;
        }
        assert!(
            waited < max_secs,
            "GET {path} still {st} after {waited} virtual seconds: {v}"
        );
        fc.advance(Duration::from_secs(2));
        waited += 2;
    }
}

// ---------------------------------------------------------------------------
// Resource builders
// ---------------------------------------------------------------------------

async fn make_server(api: &Api, name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "flavor": FLAVOR, "image": IMAGE});
    merge(&mut body, extra);
    api.create("/servers", body).await
}

async fn running_server(fc: &FakeCloud, api: &Api, name: &str, extra: Value) -> Value {
    let srv = make_server(api, name, extra).await;
    let path = format!("/servers/{}", id(&srv));
    wait_for(fc, api, &path, 300, "server running", |v| {
        v["status"] == "running"
    })
    .await
}

async fn make_volume(api: &Api, name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "size_gb": 50});
    merge(&mut body, extra);
    api.create("/volumes", body).await
}

fn vpath(v: &Value) -> String {
    format!("/volumes/{}", id(v))
}

fn spath(v: &Value) -> String {
    format!("/volume-snapshots/{}", id(v))
}

async fn stopped_server(fc: &FakeCloud, api: &Api, name: &str) -> Value {
    let srv = running_server(fc, api, name, json!({})).await;
    let path = format!("/servers/{}", id(&srv));
    let (st, v) = api.post(&format!("{path}/stop"), json!({})).await;
    assert_eq!(st, StatusCode::NO_CONTENT, "stop: {v}");
    wait_for(fc, api, &path, 60, "server stopped", |v| {
        v["status"] == "stopped"
    })
    .await
}

async fn snapshot(api: &Api, name: &str, volume: &Value) -> Value {
    api.create(
        "/volume-snapshots",
        json!({"name": name, "source_volume": id(volume)}),
    )
    .await
}

async fn available(fc: &FakeCloud, api: &Api, snap: &Value) -> Value {
    wait_for(fc, api, &spath(snap), 30, "snapshot available", |v| {
        v["status"] == "available"
    })
    .await
}

fn server_volume_ids(srv: &Value) -> Vec<String> {
    srv["volumes"]
        .as_array()
        .expect("volumes array")
        .iter()
        .map(id)
        .collect()
}

// ---------------------------------------------------------------------------
// Volumes (checks 1-11)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_01_create_volume_defaults() {
    let (_fc, api) = start().await;
    let v = make_volume(&api, "v", json!({})).await;
    assert_eq!(v["type"], "ssd", "{v}");
    assert_eq!(v["size_gb"], 50);
    assert_eq!(v["zone"], json!({"slug": "rma1"}));
    assert_eq!(v["server_uuids"], json!([]));
    assert_eq!(v["servers"], json!([]));
    assert!(
        v.get("current_operation").is_some_and(Value::is_null),
        "{v}"
    );
    assert_eq!(v["tags"], json!({}));
    assert!(is_timestamp(s(&v, "created_at")), "{v}");
    assert!(s(&v, "href").ends_with(&format!("/v1/volumes/{}", id(&v))));
    assert!(v.get("volume_snapshot_uuid").is_none(), "write-only: {v}");
    assert_eq!(
        api.fetch(&vpath(&v)).await,
        v,
        "201 body equals the next GET"
    );
}

#[tokio::test]
async fn check_02_duplicate_names_and_name_filter() {
    let (_fc, api) = start().await;
    let a = make_volume(&api, "v", json!({})).await;
    let b = make_volume(&api, "v", json!({})).await;
    make_volume(&api, "other", json!({"tags": {"env": "prod"}})).await;
    let found = api.list("/volumes?name=v").await;
    assert_eq!(uuids(&found), vec![id(&a), id(&b)]);
    assert!(api.list("/volumes?name=unknown").await.is_empty());
    assert_eq!(api.list("/volumes?tag:env=prod").await.len(), 1);
    assert_eq!(api.list("/volumes?tag%3Aenv").await.len(), 1);
    assert_eq!(api.list("/volumes?tag:env=dev").await.len(), 0);
}

#[tokio::test]
async fn check_03_patch_two_attributes_is_400() {
    let (_fc, api) = start().await;
    let v = make_volume(&api, "v", json!({})).await;
    let r = api
        .patch(&vpath(&v), json!({"size_gb": 60, "name": "w"}))
        .await;
    assert_bad_request(&r, "Only one attribute", "size and name together");
    assert_eq!(api.fetch(&vpath(&v)).await, v, "unchanged");
    // tags may come along with one attribute [INF]
    api.update(&vpath(&v), json!({"name": "w", "tags": {"a": "b"}}))
        .await;
    let got = api.fetch(&vpath(&v)).await;
    assert_eq!(
        (got["name"].clone(), got["tags"].clone()),
        (json!("w"), json!({"a": "b"}))
    );
}

#[tokio::test]
async fn check_04_resize_grows_also_attached() {
    let (fc, api) = start().await;
    let v = make_volume(&api, "v", json!({})).await;
    api.update(&vpath(&v), json!({"size_gb": 200})).await;
    assert_eq!(api.fetch(&vpath(&v)).await["size_gb"], 200);
    let srv = running_server(&fc, &api, "s", json!({})).await;
    api.update(&vpath(&v), json!({"server_uuids": [id(&srv)]}))
        .await;
    api.update(&vpath(&v), json!({"size_gb": 300})).await;
    assert_eq!(api.fetch(&vpath(&v)).await["size_gb"], 300);
    let srv = api.fetch(&format!("/servers/{}", id(&srv))).await;
    assert_eq!(srv["volumes"][1]["size_gb"], 300, "{srv}");
}

#[tokio::test]
async fn check_05_attach_detach_and_servers_alias() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let sid = id(&srv);
    let spath = format!("/servers/{sid}");
    let v = make_volume(&api, "v", json!({})).await;
    api.update(&vpath(&v), json!({"server_uuids": [sid]})).await;
    let got = api.fetch(&vpath(&v)).await;
    assert_eq!(got["server_uuids"], json!([sid]));
    assert_eq!(got["servers"][0]["uuid"], json!(sid));
    assert_eq!(got["servers"][0]["name"], "s");
    assert!(s(&got["servers"][0], "href").ends_with(&spath));
    assert!(server_volume_ids(&api.fetch(&spath).await).contains(&id(&v)));
    api.update(&vpath(&v), json!({"server_uuids": []})).await;
    let got = api.fetch(&vpath(&v)).await;
    assert_eq!(
        (got["server_uuids"].clone(), got["servers"].clone()),
        (json!([]), json!([]))
    );
    assert!(!server_volume_ids(&api.fetch(&spath).await).contains(&id(&v)));
    api.update(&vpath(&v), json!({"servers": [sid]})).await;
    assert_eq!(api.fetch(&vpath(&v)).await["server_uuids"], json!([sid]));
}

#[tokio::test]
async fn check_06_attach_elsewhere_moves_silently() {
    let (fc, api) = start().await;
    let a = running_server(&fc, &api, "a", json!({})).await;
    let b = running_server(&fc, &api, "b", json!({})).await;
    let v = make_volume(&api, "v", json!({"server_uuids": [id(&a)]})).await;
    api.update(&vpath(&v), json!({"server_uuids": [id(&b)]}))
        .await;
    assert_eq!(api.fetch(&vpath(&v)).await["server_uuids"], json!([id(&b)]));
    let a = api.fetch(&format!("/servers/{}", id(&a))).await;
    let b = api.fetch(&format!("/servers/{}", id(&b))).await;
    assert!(!server_volume_ids(&a).contains(&id(&v)), "{a}");
    assert!(server_volume_ids(&b).contains(&id(&v)), "{b}");
}

#[tokio::test]
async fn check_07_attach_limit_128() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    // the root volume is the first of 128
    for i in 0..127 {
        make_volume(
            &api,
            &format!("v{i}"),
            json!({"size_gb": 1, "server_uuids": [id(&srv)]}),
        )
        .await;
    }
    let extra = make_volume(&api, "extra", json!({"size_gb": 1})).await;
    let r = api
        .patch(&vpath(&extra), json!({"server_uuids": [id(&srv)]}))
        .await;
    let body = assert_bad_request(&r, "not possible to attach more than 128", "129th attach");
    assert_eq!(
        body,
        json!({"detail": "Due to internal limitations, it is currently not possible to attach more than 128 volumes."})
    );
    let r = api
        .post(
            "/volumes",
            json!({"name": "x", "size_gb": 1, "server_uuids": [id(&srv)]}),
        )
        .await;
    assert_bad_request(&r, "more than 128", "129th on create");
    let srv = api.fetch(&format!("/servers/{}", id(&srv))).await;
    assert_eq!(srv["volumes"].as_array().map(Vec::len), Some(128));
}

#[tokio::test]
async fn check_08_create_bulk_attached_with_servers_alias() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let v = make_volume(
        &api,
        "b",
        json!({"size_gb": 100, "type": "bulk", "servers": [id(&srv)]}),
    )
    .await;
    assert_eq!(v["type"], "bulk");
    assert_eq!(v["server_uuids"], json!([id(&srv)]));
}

#[tokio::test]
async fn check_09_delete_attached_then_404() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let v = make_volume(&api, "v", json!({"server_uuids": [id(&srv)]})).await;
    api.remove(&vpath(&v)).await;
    let (st, body) = api.delete(&vpath(&v)).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    api.assert_not_found(&vpath(&v)).await;
    let srv = api.fetch(&format!("/servers/{}", id(&srv))).await;
    assert!(!server_volume_ids(&srv).contains(&id(&v)), "{srv}");
}

#[tokio::test]
async fn check_10_delete_volume_with_snapshot_is_400() {
    let (fc, api) = start().await;
    let v = make_volume(&api, "v", json!({})).await;
    let sn = snapshot(&api, "s", &v).await;
    let r = api.delete(&vpath(&v)).await;
    let body = assert_bad_request(
        &r,
        "Snapshots exist for this volume",
        "delete with snapshot",
    );
    assert!(s(&body, "detail").starts_with("Snapshots exist for this volume."));
    // still blocked while the snapshot is deleting, free once it is gone
    api.remove(&spath(&sn)).await;
    assert_bad_request(
        &api.delete(&vpath(&v)).await,
        "Snapshots exist",
        "deleting snapshot",
    );
    wait_gone(&fc, &api, &spath(&sn), 10).await;
    api.remove(&vpath(&v)).await;
}

#[tokio::test]
async fn check_11_revert_rules() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    // attached non-root volume
    let v = make_volume(&api, "v", json!({"server_uuids": [id(&srv)]})).await;
    let sn = snapshot(&api, "s1", &v).await;
    available(&fc, &api, &sn).await;
    let revert = format!("{}/revert", vpath(&v));
    let r = api.post(&revert, json!({"snapshot": id(&sn)})).await;
    let body = assert_bad_request(&r, "Cannot revert", "attached");
    assert_eq!(
        body,
        json!({"detail": "Cannot revert non-root volumes while they are attached to a server."})
    );
    // detached: accepted, current_operation until done
    api.update(&vpath(&v), json!({"server_uuids": []})).await;
    let (st, body) = api.post(&revert, json!({"snapshot": id(&sn)})).await;
    assert!(st.is_success(), "revert detached: {st} {body}");
    assert!(!api.fetch(&vpath(&v)).await["current_operation"].is_null());
    wait_for(&fc, &api, &vpath(&v), 90, "revert done", |v| {
        v["current_operation"].is_null()
    })
    .await;
    // root volume of a running server
    let root = srv["volumes"][0].clone();
    let rsn = snapshot(&api, "root", &root).await;
    let root_revert = format!("/volumes/{}/revert", id(&root));
    let r = api.post(&root_revert, json!({"snapshot": id(&rsn)})).await;
    let body = assert_bad_request(&r, "Root volumes", "running server");
    assert_eq!(
        body,
        json!({"detail": "Root volumes can only be reverted if server state is \"stopped\"."})
    );
    // ... of a stopped server
    let (st, _) = api
        .post(&format!("/servers/{}/stop", id(&srv)), json!({}))
        .await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    wait_for(
        &fc,
        &api,
        &format!("/servers/{}", id(&srv)),
        60,
        "stopped",
        |v| v["status"] == "stopped",
    )
    .await;
    let (st, body) = api.post(&root_revert, json!({"snapshot": id(&rsn)})).await;
    assert!(
        st.is_success(),
        "revert root of stopped server: {st} {body}"
    );
}

#[tokio::test]
async fn extra_revert_only_to_most_recent_snapshot_and_no_tags() {
    let (fc, api) = start().await;
    let v = make_volume(&api, "v", json!({})).await;
    let old = snapshot(&api, "old", &v).await;
    fc.advance(Duration::from_secs(1));
    let new = snapshot(&api, "new", &v).await;
    let revert = format!("{}/revert", vpath(&v));
    let r = api.post(&revert, json!({"snapshot": id(&old)})).await;
    assert_bad_request(&r, "most recent", "older snapshot");
    let r = api
        .post(&revert, json!({"snapshot": id(&new), "tags": {"a": "b"}}))
        .await;
    assert_bad_request(&r, "tags", "tags in a revert body");
    // delete the newest, then the older one is the most recent
    api.remove(&spath(&new)).await;
    let (st, body) = api.post(&revert, json!({"snapshot": id(&old)})).await;
    assert!(st.is_success(), "{st} {body}");
}

#[tokio::test]
async fn extra_volume_size_type_zone_rules() {
    let (fc, api) = start().await;
    let r = api
        .post(
            "/volumes",
            json!({"name": "v", "size_gb": 150, "type": "bulk"}),
        )
        .await;
    assert_bad_request(&r, "size_gb", "bulk not a multiple of 100");
    let r = api
        .post("/volumes", json!({"name": "v", "size_gb": 0}))
        .await;
    assert_bad_request(&r, "size_gb", "ssd below 1");
    let r = api
        .post(
            "/volumes",
            json!({"name": "v", "size_gb": 1, "type": "nvme"}),
        )
        .await;
    assert_bad_request(&r, "type", "unknown type");
    let r = api.post("/volumes", json!({"name": "v"})).await;
    assert_bad_request(&r, "size_gb", "size required");
    let v = make_volume(&api, "v", json!({"size_gb": 100, "type": "bulk"})).await;
    assert_bad_request(
        &api.patch(&vpath(&v), json!({"size_gb": 50})).await,
        "size_gb",
        "shrink",
    );
    assert_bad_request(
        &api.patch(&vpath(&v), json!({"size_gb": 250})).await,
        "size_gb",
        "bulk step",
    );
    assert_bad_request(
        &api.patch(&vpath(&v), json!({"type": "ssd"})).await,
        "type",
        "type immutable",
    );
    assert_bad_request(
        &api.patch(&vpath(&v), json!({"zone": "lpg1"})).await,
        "zone",
        "zone immutable",
    );
    api.update(&vpath(&v), json!({"type": "bulk"})).await;
    // zone rule: a server of another zone
    let lpg = running_server(&fc, &api, "l", json!({"zone": "lpg1"})).await;
    let r = api
        .patch(&vpath(&v), json!({"server_uuids": [id(&lpg)]}))
        .await;
    assert_bad_request(&r, "zone", "attach across zones");
    let r = api
        .patch(&vpath(&v), json!({"server_uuids": [id(&lpg), id(&lpg)]}))
        .await;
    assert_bad_request(&r, "one server", "two servers");
    let r = api
        .patch(
            &vpath(&v),
            json!({"server_uuids": ["00000000-0000-4000-8000-000000000000"]}),
        )
        .await;
    assert_bad_request(&r, "does not exist", "unknown server");
    api.assert_not_found("/volumes/not-a-uuid").await;
    api.assert_not_found("/volumes/00000000-0000-4000-8000-000000000000")
        .await;
}

// ---------------------------------------------------------------------------
// Servers and their volumes (checks 12-13)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_12_server_with_extra_volumes() {
    let (fc, api) = start().await;
    let srv = running_server(
        &fc,
        &api,
        "web",
        json!({"volume_size_gb": 10, "volumes": [{"size_gb": 3, "type": "ssd"}, {"size_gb": 100, "type": "bulk"}]}),
    )
    .await;
    let vols = srv["volumes"].as_array().expect("volumes");
    let shape: Vec<(Value, Value)> = vols
        .iter()
        .map(|v| (v["type"].clone(), v["size_gb"].clone()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (json!("ssd"), json!(10)),
            (json!("ssd"), json!(3)),
            (json!("bulk"), json!(100))
        ]
    );
    for v in vols {
        assert!(!s(v, "uuid").is_empty() && !s(v, "name").is_empty(), "{v}");
        assert!(v["device_path"].is_null());
        let got = api.fetch(s(v, "href")).await;
        assert_eq!(got["uuid"], v["uuid"]);
        assert_eq!(got["server_uuids"], json!([id(&srv)]));
        assert_eq!(got["size_gb"], v["size_gb"]);
        assert_eq!(got["zone"], srv["zone"]);
    }
    assert_eq!(api.list("/volumes").await.len(), 3);
}

#[tokio::test]
async fn check_13_resize_root_volume_of_running_server() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let root = &srv["volumes"][0];
    api.update(&format!("/volumes/{}", id(root)), json!({"size_gb": 16}))
        .await;
    let srv = api.fetch(&format!("/servers/{}", id(&srv))).await;
    assert_eq!(srv["volumes"][0]["size_gb"], 16);
    assert_eq!(srv["status"], "running");
}

#[tokio::test]
async fn extra_server_delete_takes_root_and_detaches_others() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({"volumes": [{"size_gb": 5}]})).await;
    let root = srv["volumes"][0].clone();
    let extra = srv["volumes"][1].clone();
    assert_eq!(extra["type"], "ssd", "default type of an extra volume");
    let attached = make_volume(&api, "v", json!({"server_uuids": [id(&srv)]})).await;
    // root volumes stay with their server
    let root_path = format!("/volumes/{}", id(&root));
    assert_bad_request(&api.delete(&root_path).await, "root volume", "delete root");
    assert_bad_request(
        &api.patch(&root_path, json!({"server_uuids": []})).await,
        "root volume",
        "detach root",
    );
    // a root volume with snapshots keeps its server [INF]
    let sn = snapshot(&api, "r", &root).await;
    let spath_srv = format!("/servers/{}", id(&srv));
    assert_bad_request(
        &api.delete(&spath_srv).await,
        "Snapshots exist",
        "server delete",
    );
    api.remove(&spath(&sn)).await;
    wait_gone(&fc, &api, &spath(&sn), 10).await;
    api.remove(&spath_srv).await;
    api.assert_not_found(&root_path).await;
    for v in [&extra, &attached] {
        let got = api.fetch(&format!("/volumes/{}", id(v))).await;
        assert_eq!(got["server_uuids"], json!([]), "{got}");
        assert_eq!(got["servers"], json!([]), "{got}");
    }
    let r = api
        .post("/servers", json!({"name": "x", "flavor": FLAVOR, "image": IMAGE, "volumes": [{"size_gb": 150, "type": "bulk"}]}))
        .await;
    assert_bad_request(&r, "volumes", "bulk extra volume of 150");
}

// ---------------------------------------------------------------------------
// Snapshots (checks 14-17)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_14_snapshot_create_shape_and_available() {
    let (fc, api) = start().await;
    let v = make_volume(&api, "data", json!({"zone": "lpg1", "size_gb": 50})).await;
    let sn = snapshot(&api, "snap", &v).await;
    assert_eq!(
        sn["source_volume"],
        json!({"href": v["href"], "uuid": v["uuid"], "name": "data"})
    );
    assert_eq!(sn["size_gb"], 50);
    assert_eq!(sn["zone"], json!({"slug": "lpg1"}));
    assert_eq!(sn["tags"], json!({}));
    assert_eq!(sn["status"], "creating", "initial status [INF]");
    assert!(is_timestamp(s(&sn, "created_at")));
    assert!(s(&sn, "href").ends_with(&format!("/v1/volume-snapshots/{}", id(&sn))));
    assert_eq!(api.fetch(&spath(&sn)).await, sn);
    available(&fc, &api, &sn).await;
    let r = api
        .post(
            "/volume-snapshots",
            json!({"name": "x", "source_volume": "00000000-0000-4000-8000-000000000000"}),
        )
        .await;
    assert_bad_request(&r, "source_volume", "unknown source");
    assert_bad_request(
        &api.post("/volume-snapshots", json!({"name": "x"})).await,
        "source_volume",
        "missing source",
    );
    api.assert_not_found("/volume-snapshots/not-a-uuid").await;
}

#[tokio::test]
async fn check_15_snapshot_patch_name_and_tags_right_after_create() {
    let (_fc, api) = start().await;
    let v = make_volume(&api, "v", json!({})).await;
    let sn = api
        .create(
            "/volume-snapshots",
            json!({"name": "n1", "source_volume": id(&v), "tags": {"project": "luna"}}),
        )
        .await;
    api.update(&spath(&sn), json!({"name": "n2"})).await;
    assert_eq!(api.fetch(&spath(&sn)).await["name"], "n2");
    assert_eq!(
        api.list("/volume-snapshots?tag:project=luna").await.len(),
        1
    );
    api.update(&spath(&sn), json!({"tags": {"stage": "x"}}))
        .await;
    assert_eq!(api.fetch(&spath(&sn)).await["tags"], json!({"stage": "x"}));
    assert!(api.list("/volume-snapshots?tag:project").await.is_empty());
    let other = make_volume(&api, "o", json!({})).await;
    let r = api
        .patch(&spath(&sn), json!({"source_volume": id(&other)}))
        .await;
    assert_bad_request(&r, "source_volume", "source immutable");
}

#[tokio::test]
async fn check_16_snapshot_delete_shows_deleting_then_404() {
    let (fc, api) = start().await;
    let v = make_volume(&api, "v", json!({})).await;
    let sn = snapshot(&api, "s", &v).await;
    available(&fc, &api, &sn).await;
    api.remove(&spath(&sn)).await;
    let mut waited = 0;
    loop {
        let (st, body) = api.get(&spath(&sn)).await;
        if st == StatusCode::NOT_FOUND {
            break;
        }
        assert_eq!(body["status"], "deleting", "every GET until 404: {body}");
        let listed = api.list("/volume-snapshots").await;
        assert_eq!(listed[0]["status"], "deleting");
        assert!(waited < 10, "not gone within 10 s");
        fc.advance(Duration::from_secs(1));
        waited += 1;
    }
    assert!(api.list("/volume-snapshots").await.is_empty());
    let (st, _) = api.delete(&spath(&sn)).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn check_17_volume_from_snapshot() {
    let (fc, api) = start().await;
    let src = make_volume(
        &api,
        "src",
        json!({"size_gb": 200, "type": "bulk", "zone": "lpg1"}),
    )
    .await;
    let sn = snapshot(&api, "s", &src).await;
    // right after the snapshot POST, without waiting for `available`
    let copy = api
        .create(
            "/volumes",
            json!({"name": "copy", "volume_snapshot_uuid": id(&sn), "tags": {"k": "v"}}),
        )
        .await;
    assert_eq!(copy["size_gb"], 200);
    assert_eq!(copy["type"], "bulk");
    assert_eq!(copy["zone"], json!({"slug": "lpg1"}));
    assert_eq!(copy["tags"], json!({"k": "v"}));
    assert_eq!(copy["server_uuids"], json!([]));
    assert_eq!(api.list("/volumes?tag:k=v").await.len(), 1);
    // the snapshot and its source can go; the copy stays
    api.remove(&spath(&sn)).await;
    wait_gone(&fc, &api, &spath(&sn), 10).await;
    api.remove(&vpath(&src)).await;
    let got = api.fetch(&vpath(&copy)).await;
    assert_eq!(got["size_gb"], 200);
    api.update(&vpath(&copy), json!({"size_gb": 300})).await;
    let srv = running_server(&fc, &api, "s", json!({"zone": "lpg1"})).await;
    api.update(&vpath(&copy), json!({"server_uuids": [id(&srv)]}))
        .await;
    let got = api.fetch(&vpath(&copy)).await;
    assert_eq!(
        (got["size_gb"].clone(), got["server_uuids"].clone()),
        (json!(300), json!([id(&srv)]))
    );
    // fields the snapshot decides cannot come along [INF]
    let sn2 = snapshot(&api, "s2", &copy).await;
    let r = api
        .post(
            "/volumes",
            json!({"name": "x", "volume_snapshot_uuid": id(&sn2), "size_gb": 400}),
        )
        .await;
    assert_bad_request(&r, "size_gb", "size with snapshot");
    let r = api
        .post(
            "/volumes",
            json!({"name": "x", "volume_snapshot_uuid": "00000000-0000-4000-8000-000000000000"}),
        )
        .await;
    assert_bad_request(&r, "volume_snapshot_uuid", "unknown snapshot");
}

// ---------------------------------------------------------------------------
// Admin API: dump/restore and reset include volumes and snapshots
// ---------------------------------------------------------------------------

#[tokio::test]
async fn extra_state_dump_restore_and_reset_include_volumes() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let v = make_volume(&api, "v", json!({"server_uuids": [id(&srv)]})).await;
    let sn = snapshot(&api, "sn", &v).await;
    let http = reqwest::Client::new();
    let admin = format!("{}/_fake", fc.base_url());
    let dump: Value = http
        .get(format!("{admin}/state"))
        .send()
        .await
        .expect("dump")
        .json()
        .await
        .expect("json");
    assert_eq!(
        dump["volumes"].as_array().map(Vec::len),
        Some(2),
        "root + v"
    );
    assert_eq!(dump["volume_snapshots"].as_array().map(Vec::len), Some(1));
    let st = http
        .post(format!("{admin}/reset"))
        .send()
        .await
        .expect("reset")
        .status();
    assert!(st.is_success());
    assert!(api.list("/volumes").await.is_empty());
    assert!(api.list("/volume-snapshots").await.is_empty());
    let st = http
        .put(format!("{admin}/state"))
        .json(&dump)
        .send()
        .await
        .expect("restore")
        .status();
    assert!(st.is_success(), "restore: {st}");
    assert_eq!(
        api.fetch(&vpath(&v)).await["server_uuids"],
        json!([id(&srv)])
    );
    assert_eq!(api.fetch(&spath(&sn)).await["name"], "sn");
    let srv = api.fetch(&format!("/servers/{}", id(&srv))).await;
    assert_eq!(server_volume_ids(&srv).len(), 2);
}
