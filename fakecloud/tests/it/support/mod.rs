//! The harness of the conformance suites (`conformance.rs`, `conformance_volumes.rs`): an
//! in-process fake with a manual clock per test, real HTTP, and helpers that create and
//! wait for resources. Each suite uses a part of it.
#![allow(dead_code)]

use std::time::Duration;

use fakecloud::{Config, FakeCloud};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

pub const FLAVOR: &str = "flex-4-2";
pub const IMAGE: &str = "debian-12";
pub const READ_ONLY_TOKEN: &str = "read-only-token";

// ---------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Resp {
    /// The body as JSON, `Null` for an empty body; panics on a non-JSON body.
    pub fn json(&self) -> Value {
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
pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
    pub api: String,
    pub token: String,
}

impl Api {
    pub fn new(fc: &FakeCloud) -> Self {
        Self::with_token(fc, fc.token())
    }

    pub fn with_token(fc: &FakeCloud, token: &str) -> Self {
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
    pub fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{}", self.api, path)
        }
    }

    /// Fully controlled request. `token: None` sends no Authorization header.
    pub async fn raw(
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

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
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

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(&body)).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PATCH, path, Some(&body)).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None).await
    }

    /// POST that must answer 201 with a JSON object.
    pub async fn create(&self, path: &str, body: Value) -> Value {
        let (st, v) = self.post(path, body.clone()).await;
        assert_eq!(st, StatusCode::CREATED, "POST {path} {body} -> {st}: {v}");
        assert!(v.is_object(), "POST {path} must return an object, got {v}");
        v
    }

    /// GET that must answer 200.
    pub async fn fetch(&self, path: &str) -> Value {
        let (st, v) = self.get(path).await;
        assert_eq!(st, StatusCode::OK, "GET {path} -> {st}: {v}");
        v
    }

    /// GET of a list that must answer 200 with a bare array.
    pub async fn list(&self, path: &str) -> Vec<Value> {
        let v = self.fetch(path).await;
        v.as_array()
            .unwrap_or_else(|| panic!("GET {path} must return a bare JSON array, got {v}"))
            .clone()
    }

    /// PATCH that must answer 204 (or 200), never 202.
    pub async fn update(&self, path: &str, body: Value) {
        let (st, v) = self.patch(path, body.clone()).await;
        assert!(
            st == StatusCode::NO_CONTENT || st == StatusCode::OK,
            "PATCH {path} {body} -> {st} (want 204 or 200): {v}"
        );
    }

    /// DELETE that must answer exactly 204 with an empty body.
    pub async fn remove(&self, path: &str) {
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
    pub async fn assert_not_found(&self, path: &str) {
        let (st, v) = self.get(path).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "GET {path} -> {st}: {v}");
        assert_flat_error(&v);
        assert_eq!(v, json!({"detail": "Not found."}), "404 body of GET {path}");
    }
}

/// `GET /_fake/state`: the whole state as a dump.
pub async fn dump_state(fc: &FakeCloud) -> Value {
    fc.admin(Method::GET, "/state", None)
        .await
        .unwrap_or_else(|e| panic!("dump: {e}"))
}

/// `POST /_fake/reset`.
pub async fn reset_state(fc: &FakeCloud) {
    fc.admin(Method::POST, "/reset", None)
        .await
        .unwrap_or_else(|e| panic!("reset: {e}"));
}

/// `PUT /_fake/state`: restores a dump.
pub async fn restore_state(fc: &FakeCloud, dump: &Value) {
    fc.admin(Method::PUT, "/state", Some(dump.clone()))
        .await
        .unwrap_or_else(|e| panic!("restore: {e}"));
}

pub async fn start() -> (FakeCloud, Api) {
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
pub fn assert_flat_error(body: &Value) {
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
pub fn error_text(body: &Value) -> String {
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
pub fn assert_bad_request(resp: &(StatusCode, Value), needle: &str, ctx: &str) -> Value {
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
pub fn is_timestamp(s: &str) -> bool {
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

pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("field {key:?} must be a string in {v}"))
}

pub fn id(v: &Value) -> String {
    s(v, "uuid").to_string()
}

pub fn hrefs(list: &[Value]) -> Vec<String> {
    list.iter().map(|v| s(v, "href").to_string()).collect()
}

pub fn uuids(list: &[Value]) -> Vec<String> {
    list.iter().map(id).collect()
}

/// The bare IP of a floating IP (its `network` without prefix length).
pub fn fip_ip(f: &Value) -> String {
    s(f, "network")
        .split('/')
        .next()
        .expect("network has an address part")
        .to_string()
}

pub fn merge(into: &mut Value, extra: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), extra) {
        for (k, v) in b {
            a.insert(k, v);
        }
    }
}

/// Polls GET `path` every 2 virtual seconds (like the Go SDK's WaitFor) until
/// `pred` holds, for at most `max_secs` virtual seconds.
pub async fn wait_for(
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
pub async fn wait_gone(fc: &FakeCloud, api: &Api, path: &str, max_secs: u64) {
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

pub async fn make_server(api: &Api, name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "flavor": FLAVOR, "image": IMAGE});
    merge(&mut body, extra);
    api.create("/servers", body).await
}

pub async fn running_server(fc: &FakeCloud, api: &Api, name: &str, extra: Value) -> Value {
    let srv = make_server(api, name, extra).await;
    let path = format!("/servers/{}", id(&srv));
    wait_for(fc, api, &path, 300, "server running", |v| {
        v["status"] == "running"
    })
    .await
}

/// A network without auto subnet plus one subnet with `cidr`.
pub async fn private_subnet(api: &Api, cidr: &str) -> (Value, Value) {
    let net = api
        .create(
            "/networks",
            json!({"name": "private", "auto_create_ipv4_subnet": false}),
        )
        .await;
    let sub = api
        .create("/subnets", json!({"cidr": cidr, "network": id(&net)}))
        .await;
    (net, sub)
}

pub async fn make_lb(api: &Api, name: &str) -> Value {
    api.create(
        "/load-balancers",
        json!({"name": name, "flavor": "lb-standard", "zone": "rma1"}),
    )
    .await
}

pub async fn running_lb(fc: &FakeCloud, api: &Api, name: &str) -> Value {
    let lb = make_lb(api, name).await;
    let path = format!("/load-balancers/{}", id(&lb));
    wait_for(fc, api, &path, 300, "load balancer running", |v| {
        v["status"] == "running"
    })
    .await
}

pub async fn make_pool(api: &Api, lb: &Value) -> Value {
    api.create(
        "/load-balancers/pools",
        json!({"name": "pool-1", "algorithm": "round_robin", "protocol": "tcp",
               "load_balancer": id(lb)}),
    )
    .await
}

pub fn members_path(pool: &Value) -> String {
    format!("/load-balancers/pools/{}/members", id(pool))
}

pub async fn make_member(
    api: &Api,
    pool: &Value,
    subnet: &Value,
    name: &str,
    address: &str,
) -> Value {
    api.create(
        &members_path(pool),
        json!({"name": name, "address": address, "protocol_port": 80, "subnet": id(subnet)}),
    )
    .await
}

pub async fn make_listener(api: &Api, pool: &Value, port: u16) -> Value {
    api.create(
        "/load-balancers/listeners",
        json!({"name": format!("tcp/{port}"), "pool": id(pool), "protocol": "tcp",
               "protocol_port": port}),
    )
    .await
}

pub async fn make_monitor(api: &Api, pool: &Value) -> Value {
    api.create(
        "/load-balancers/health-monitors",
        json!({"pool": id(pool), "type": "tcp"}),
    )
    .await
}

/// A running LB with a pool, one member, one listener and one monitor.
pub struct LbStack {
    pub lb: Value,
    pub pool: Value,
    pub member: Value,
    pub listener: Value,
    pub monitor: Value,
    pub subnet: Value,
}

pub async fn lb_stack(fc: &FakeCloud, api: &Api) -> LbStack {
    let (_net, subnet) = private_subnet(api, "192.168.42.0/24").await;
    let lb = running_lb(fc, api, "lb-stack").await;
    let pool = make_pool(api, &lb).await;
    let member = make_member(api, &pool, &subnet, "member-1", "192.168.42.11").await;
    let listener = make_listener(api, &pool, 80).await;
    let monitor = make_monitor(api, &pool).await;
    LbStack {
        lb,
        pool,
        member,
        listener,
        monitor,
        subnet,
    }
}

/// Creates one resource of `kind` (a collection path) carrying `tags`.
pub async fn make_tagged(api: &Api, kind: &str, name: &str, tags: Value) -> Value {
    let body = match kind {
        "/servers" => json!({"name": name, "flavor": FLAVOR, "image": IMAGE, "tags": tags}),
        "/networks" => json!({"name": name, "auto_create_ipv4_subnet": false, "tags": tags}),
        "/load-balancers" => {
            json!({"name": name, "flavor": "lb-standard", "zone": "rma1", "tags": tags})
        }
        "/floating-ips" => json!({"ip_version": 4, "tags": tags}),
        "/server-groups" => json!({"name": name, "type": "anti-affinity", "tags": tags}),
        other => panic!("make_tagged: unsupported kind {other}"),
    };
    api.create(kind, body).await
}

// ---------------------------------------------------------------------------
// Acceptance scripts (ci/*_acceptance.py)
// ---------------------------------------------------------------------------

/// Runs an acceptance script that prints `ok - …` / `FAIL - …` lines and ends with
/// `N passed, M failed`; panics unless it succeeded with at least `min_checks` passed (a run
/// that checked nothing must not pass).
pub fn run_acceptance(what: &str, mut script: std::process::Command, min_checks: usize) {
    let output = script.output().expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && failures.is_empty(),
        "{what} failed ({summary}):\n{}\nstderr:\n{}",
        failures.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= min_checks,
        "{what}: too few checks ran: {summary}"
    );
}
