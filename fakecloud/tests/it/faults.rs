//! Fault injection (fakecloud/MODEL.md section 7, the `/_fake/faults` endpoints of section 6),
//! exercised in-process over real HTTP. Every test starts its own fake with
//! `Config::for_tests()` (manual clock, token `test-token`).

use fakecloud::{Config, FakeCloud, FaultEffect, FaultRule};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const TOKEN: &str = "test-token";

/// One fake and a plain HTTP client for it: `/v1` calls carry the token, `/_fake` calls none.
struct Fake {
    fc: FakeCloud,
    http: reqwest::Client,
    base: String,
}

/// An answered request: status, `Retry-After` header (if any) and body as JSON (`Null` when
/// empty, a JSON string when it is not JSON).
struct Answer {
    status: StatusCode,
    retry_after: Option<String>,
    body: Value,
}

impl Fake {
    async fn start() -> Fake {
        let fc = FakeCloud::start(Config::for_tests())
            .await
            .expect("start fakecloud");
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("build reqwest client");
        let base = fc.base_url();
        Fake { fc, http, base }
    }

    /// Sends a request to `base + path` and returns the transport result as is.
    async fn try_send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Answer, reqwest::Error> {
        let url = format!("{}{}", self.base, path);
        let mut rb = self.http.request(method, &url);
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        if let Some(b) = body {
            rb = rb
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = rb.send().await?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().expect("Retry-After is ASCII").to_string());
        let text = resp.text().await?;
        let body = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok(Answer {
            status,
            retry_after,
            body,
        })
    }

    /// A `/v1` request that must get an answer.
    async fn api(&self, method: Method, path: &str, body: Option<Value>) -> Answer {
        let full = format!("/v1{path}");
        self.try_send(method.clone(), &full, Some(TOKEN), body.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{method} {full}: no answer: {e}"))
    }

    /// A `/v1` request whose connection must be dropped without any answer.
    async fn api_dropped(&self, method: Method, path: &str, body: Option<Value>) {
        let full = format!("/v1{path}");
        let result = self
            .try_send(method.clone(), &full, Some(TOKEN), body.as_ref())
            .await;
        assert_dropped(result, &format!("{method} {full}"));
    }

    /// The status of a `/v1` request, `0` when its connection was dropped.
    async fn outcome(&self, method: Method, path: &str, body: Option<Value>) -> u16 {
        let full = format!("/v1{path}");
        match self
            .try_send(method, &full, Some(TOKEN), body.as_ref())
            .await
        {
            Ok(a) => a.status.as_u16(),
            Err(e) => {
                assert!(e.status().is_none(), "{full}: error with a status: {e}");
                0
            }
        }
    }

    async fn get(&self, path: &str) -> Value {
        let a = self.api(Method::GET, path, None).await;
        assert_eq!(a.status, StatusCode::OK, "GET /v1{path}: {}", a.body);
        a.body
    }

    async fn create(&self, path: &str, body: Value) -> Value {
        let a = self.api(Method::POST, path, Some(body)).await;
        assert_eq!(a.status, StatusCode::CREATED, "POST /v1{path}: {}", a.body);
        a.body
    }

    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let full = format!("/_fake{path}");
        let a = self
            .try_send(method.clone(), &full, None, body.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{method} {full}: no answer: {e}"));
        (a.status, a.body)
    }

    /// Adds a rule over HTTP; returns the rule as answered (with its id).
    async fn add_rule(&self, rule: Value) -> Value {
        let (st, v) = self
            .admin(Method::POST, "/faults", Some(rule.clone()))
            .await;
        assert_eq!(st, StatusCode::CREATED, "POST /_fake/faults {rule}: {v}");
        assert!(v["id"].as_u64().is_some(), "added rule has no id: {v}");
        v
    }

    async fn rules(&self) -> Vec<Value> {
        let (st, v) = self.admin(Method::GET, "/faults", None).await;
        assert_eq!(st, StatusCode::OK, "GET /_fake/faults: {v}");
        v.as_array()
            .unwrap_or_else(|| panic!("GET /_fake/faults is not an array: {v}"))
            .clone()
    }

    /// `hits` of the rule with this id, as GET /_fake/faults reports it.
    async fn hits(&self, id: u64) -> u64 {
        let rules = self.rules().await;
        let rule = rules
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("rule {id} not listed: {rules:?}"));
        rule["hits"]
            .as_u64()
            .unwrap_or_else(|| panic!("rule {id} has no numeric hits: {rule}"))
    }

    async fn state(&self) -> Value {
        let (st, v) = self.admin(Method::GET, "/state", None).await;
        assert_eq!(st, StatusCode::OK, "GET /_fake/state: {v}");
        v
    }

    async fn requests(&self) -> Vec<Value> {
        let (st, v) = self.admin(Method::GET, "/requests", None).await;
        assert_eq!(st, StatusCode::OK, "GET /_fake/requests: {v}");
        v.as_array()
            .unwrap_or_else(|| panic!("request log is not an array: {v}"))
            .clone()
    }
}

/// The request must have failed at the transport level: no HTTP answer at all.
fn assert_dropped(result: Result<Answer, reqwest::Error>, what: &str) {
    match result {
        Ok(a) => panic!(
            "{what}: expected a dropped connection, got {} {}",
            a.status, a.body
        ),
        Err(e) => {
            assert!(e.status().is_none(), "{what}: error carries a status: {e}");
            assert!(
                e.is_request() || e.is_connect() || e.is_body(),
                "{what}: not a connection error: {e:?}"
            );
        }
    }
}

/// The body must be a flat, non-empty object of strings.
fn assert_flat(v: &Value) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("body is not an object: {v}"));
    assert!(!obj.is_empty(), "body is empty");
    for (k, val) in obj {
        assert!(val.is_string(), "field {k} is not a string: {v}");
    }
}

fn uuid(v: &Value) -> String {
    v["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("no uuid: {v}"))
        .to_string()
}

fn server_body(name: &str) -> Value {
    json!({"name": name, "flavor": "flex-4-2", "image": "debian-12"})
}

fn lb_body(name: &str) -> Value {
    json!({"name": name, "flavor": "lb-standard", "zone": "rma1"})
}

/// The bare address of a floating IP (`network` without the prefix length).
fn fip_address(fip: &Value) -> String {
    let network = fip["network"]
        .as_str()
        .unwrap_or_else(|| panic!("floating IP without network: {fip}"));
    network.split('/').next().expect("address").to_string()
}

// ---------------------------------------------------------------------------
// Effects
// ---------------------------------------------------------------------------

#[tokio::test]
async fn status_500_answers_default_flat_body_without_running_the_request() {
    let f = Fake::start().await;
    f.add_rule(json!({"method": "GET", "path": "/v1/servers",
                      "effect": {"type": "status", "status": 500}}))
        .await;
    let a = f.api(Method::GET, "/servers", None).await;
    assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", a.body);
    assert_eq!(a.body, json!({"detail": "Injected fault."}));
    assert_flat(&a.body);
    assert_eq!(a.retry_after, None, "no Retry-After unless asked for");
}

#[tokio::test]
async fn status_503_sends_retry_after_header() {
    let f = Fake::start().await;
    f.add_rule(json!({"method": "GET", "path": "/v1/servers",
                      "effect": {"type": "status", "status": 503, "retry_after": 5}}))
        .await;
    let a = f.api(Method::GET, "/servers", None).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.body);
    assert_eq!(a.retry_after.as_deref(), Some("5"));
    assert_eq!(a.body, json!({"detail": "Injected fault."}));
    assert_flat(&a.body);
}

#[tokio::test]
async fn status_429_with_retry_after_and_custom_flat_body() {
    let f = Fake::start().await;
    let body = json!({"detail": "Request was throttled.", "code": "throttled"});
    f.add_rule(json!({"path": "/v1/**",
                      "effect": {"type": "status", "status": 429, "retry_after": 30,
                                 "body": body}}))
        .await;
    let a = f.api(Method::GET, "/floating-ips", None).await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{}", a.body);
    assert_eq!(a.retry_after.as_deref(), Some("30"));
    assert_eq!(a.body, body);
    assert_flat(&a.body);
}

#[tokio::test]
async fn latency_delays_then_request_succeeds_and_takes_effect() {
    let f = Fake::start().await;
    f.add_rule(json!({"method": "POST", "path": "/v1/servers",
                      "effect": {"type": "latency", "ms": 150}}))
        .await;
    let started = Instant::now();
    let a = f
        .api(Method::POST, "/servers", Some(server_body("slow")))
        .await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(150),
        "answered after {took:?}"
    );
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let fetched = f.get(&format!("/servers/{}", uuid(&a.body))).await;
    assert_eq!(fetched["name"], "slow");
    assert_eq!(f.get("/servers").await.as_array().map(Vec::len), Some(1));
    // Only the POST was held: the GETs are not matched by the rule.
    assert_eq!(f.rules().await[0]["hits"], 1);
}

#[tokio::test]
async fn latency_rules_add_up() {
    let f = Fake::start().await;
    f.add_rule(json!({"path": "/v1/**", "effect": {"type": "latency", "ms": 100}}))
        .await;
    f.fc.faults()
        .add(FaultRule::new(
            Some("GET"),
            "/v1/servers",
            FaultEffect::Latency { ms: 80 },
        ))
        .expect("valid rule");
    let started = Instant::now();
    let list = f.get("/servers").await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(180),
        "two latency rules (100 + 80 ms), answered after {took:?}"
    );
    assert_eq!(list, json!([]));
}

#[tokio::test]
async fn latency_then_status_fails_after_the_delay() {
    let f = Fake::start().await;
    f.add_rule(json!({"path": "/v1/**", "effect": {"type": "latency", "ms": 150}}))
        .await;
    f.add_rule(json!({"path": "/v1/**", "effect": {"type": "status", "status": 502}}))
        .await;
    let started = Instant::now();
    let a = f.api(Method::GET, "/servers", None).await;
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(a.status, StatusCode::BAD_GATEWAY, "{}", a.body);
}

#[tokio::test]
async fn drop_closes_connection_without_answer_and_server_keeps_serving() {
    let f = Fake::start().await;
    f.add_rule(json!({"method": "GET", "path": "/v1/servers",
                      "effect": {"type": "drop"}, "times": 1}))
        .await;
    f.api_dropped(Method::GET, "/servers", None).await;
    // The next request (a new connection) is served normally.
    assert_eq!(f.get("/servers").await, json!([]));
    let created = f.create("/servers", server_body("after-drop")).await;
    assert_eq!(f.get("/servers").await, json!([created]));
    // A permanent drop rule: every matching request loses its connection, others pass.
    f.add_rule(json!({"method": "POST", "path": "/v1/servers", "effect": {"type": "drop"}}))
        .await;
    for _ in 0..3 {
        f.api_dropped(Method::POST, "/servers", Some(server_body("x")))
            .await;
        assert_eq!(f.get("/servers").await, json!([created]));
    }
}

#[tokio::test]
async fn lose_answer_runs_the_request_then_drops_the_connection() {
    let f = Fake::start().await;
    let rule = f
        .add_rule(json!({"method": "POST", "path": "/v1/servers",
                          "effect": {"type": "lose_answer"}, "times": 1}))
        .await;
    f.api_dropped(Method::POST, "/servers", Some(server_body("ghost")))
        .await;
    // The create happened although no answer came back.
    let servers = f.get("/servers").await;
    let names: Vec<&str> = servers
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["ghost"]);
    assert_eq!(f.hits(rule["id"].as_u64().expect("id")).await, 1);
    // Logged with the status it really had, not as a fault.
    let log = f.requests().await;
    let post = log
        .iter()
        .find(|e| e["method"] == "POST" && e["path"] == "/v1/servers")
        .expect("logged");
    assert_eq!(post["status"], 201);
    // Spent after one hit: the next create is answered.
    f.create("/servers", server_body("second")).await;
}

// ---------------------------------------------------------------------------
// A failed request changes nothing
// ---------------------------------------------------------------------------

/// Runs `method path body` once with a 503 rule and once with a drop rule matching it; after
/// each, GET `check` and the state dump must be unchanged. Then, without rules, the same
/// request must succeed with `expect` (it was a valid request).
async fn failed_request_changes_nothing(
    f: &Fake,
    method: Method,
    path: &str,
    body: Option<Value>,
    check: &str,
    expect: StatusCode,
) {
    let before = f.get(check).await;
    let state_before = f.state().await;
    let full = format!("/v1{path}");

    let rule = f
        .add_rule(json!({"method": method.as_str(), "path": full,
                          "effect": {"type": "status", "status": 503}}))
        .await;
    let a = f.api(method.clone(), path, body.clone()).await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.body);
    assert_eq!(
        f.get(check).await,
        before,
        "{method} {full} (503) changed {check}"
    );
    assert_eq!(
        f.state().await,
        state_before,
        "{method} {full} (503) changed the state"
    );
    f.fc.faults().remove(rule["id"].as_u64().expect("id"));

    f.fc.faults()
        .add(FaultRule::new(
            Some(method.as_str()),
            &full,
            FaultEffect::Drop,
        ))
        .expect("valid rule");
    f.api_dropped(method.clone(), path, body.clone()).await;
    assert_eq!(
        f.get(check).await,
        before,
        "{method} {full} (drop) changed {check}"
    );
    assert_eq!(
        f.state().await,
        state_before,
        "{method} {full} (drop) changed the state"
    );

    f.fc.faults().clear();
    let a = f.api(method.clone(), path, body).await;
    assert_eq!(
        a.status, expect,
        "{method} {full} without faults: {}",
        a.body
    );
}

#[tokio::test]
async fn failed_server_create_changes_nothing() {
    let f = Fake::start().await;
    f.create("/servers", server_body("existing")).await;
    failed_request_changes_nothing(
        &f,
        Method::POST,
        "/servers",
        Some(server_body("new")),
        "/servers",
        StatusCode::CREATED,
    )
    .await;
}

#[tokio::test]
async fn failed_load_balancer_create_changes_nothing() {
    let f = Fake::start().await;
    f.create("/load-balancers", lb_body("existing")).await;
    failed_request_changes_nothing(
        &f,
        Method::POST,
        "/load-balancers",
        Some(lb_body("new")),
        "/load-balancers",
        StatusCode::CREATED,
    )
    .await;
}

#[tokio::test]
async fn failed_patch_changes_nothing() {
    let f = Fake::start().await;
    let srv = f.create("/servers", server_body("before")).await;
    let path = format!("/servers/{}", uuid(&srv));
    failed_request_changes_nothing(
        &f,
        Method::PATCH,
        &path,
        Some(json!({"name": "after", "tags": {"k": "v"}})),
        &path,
        StatusCode::NO_CONTENT,
    )
    .await;
    assert_eq!(f.get(&path).await["name"], "after");
}

#[tokio::test]
async fn failed_delete_changes_nothing() {
    let f = Fake::start().await;
    let srv = f.create("/servers", server_body("doomed")).await;
    let lb = f.create("/load-balancers", lb_body("doomed-lb")).await;
    let path = format!("/servers/{}", uuid(&srv));
    failed_request_changes_nothing(
        &f,
        Method::DELETE,
        &path,
        None,
        "/servers",
        StatusCode::NO_CONTENT,
    )
    .await;
    let lb_path = format!("/load-balancers/{}", uuid(&lb));
    failed_request_changes_nothing(
        &f,
        Method::DELETE,
        &lb_path,
        None,
        "/load-balancers",
        StatusCode::NO_CONTENT,
    )
    .await;
    assert_eq!(f.get("/servers").await, json!([]));
    assert_eq!(f.get("/load-balancers").await, json!([]));
}

// ---------------------------------------------------------------------------
// times, probability
// ---------------------------------------------------------------------------

#[tokio::test]
async fn times_hits_exactly_the_next_n_matching_requests() {
    let f = Fake::start().await;
    let rule = f
        .add_rule(json!({"method": "GET", "path": "/v1/servers",
                          "effect": {"type": "status", "status": 503}, "times": 2}))
        .await;
    let id = rule["id"].as_u64().expect("id");
    assert_eq!(rule["hits"], 0);
    // A request the rule does not match does not use up a hit.
    assert_eq!(f.get("/networks").await, json!([]));
    assert_eq!(f.hits(id).await, 0);
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(f.api(Method::GET, "/servers", None).await.status.as_u16());
    }
    assert_eq!(statuses, [503, 503, 200, 200, 200]);
    assert_eq!(f.hits(id).await, 2);
    // The exhausted rule stays listed, inert.
    assert_eq!(f.rules().await.len(), 1);

    // The same with a drop and the in-process API.
    f.fc.faults()
        .add(FaultRule::new(Some("POST"), "/v1/servers", FaultEffect::Drop).times(1))
        .expect("valid rule");
    f.api_dropped(Method::POST, "/servers", Some(server_body("a")))
        .await;
    f.create("/servers", server_body("b")).await;
    let listed = f.fc.faults().list();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].hits, 1);
}

/// 50 GET /v1/servers against a fresh fake with one seeded probabilistic 503 rule; `true`
/// where the request was hit. Checks that `hits` counts them and misses are answered 200.
async fn hit_sequence(p: f64, seed: u64) -> Vec<bool> {
    let f = Fake::start().await;
    let rule = f
        .add_rule(json!({"method": "GET", "path": "/v1/servers",
                          "effect": {"type": "status", "status": 503},
                          "probability": p, "seed": seed}))
        .await;
    let mut seq = Vec::new();
    for _ in 0..50 {
        let status = f.api(Method::GET, "/servers", None).await.status;
        assert!(
            status == StatusCode::OK || status == StatusCode::SERVICE_UNAVAILABLE,
            "{status}"
        );
        seq.push(status == StatusCode::SERVICE_UNAVAILABLE);
    }
    let hit = seq.iter().filter(|h| **h).count() as u64;
    assert_eq!(f.hits(rule["id"].as_u64().expect("id")).await, hit);
    seq
}

#[tokio::test]
async fn probability_with_seed_is_reproducible_and_roughly_proportional() {
    let a = hit_sequence(0.5, 42).await;
    let b = hit_sequence(0.5, 42).await;
    let c = hit_sequence(0.5, 43).await;
    assert_eq!(a, b, "same seed, same hits");
    assert_ne!(a, c, "another seed, other hits");
    for seq in [&a, &c] {
        let n = seq.iter().filter(|h| **h).count();
        assert!((12..=38).contains(&n), "p = 0.5: {n} of 50 hit");
    }
    let low = hit_sequence(0.2, 7).await;
    let n = low.iter().filter(|h| **h).count();
    assert!((2..=20).contains(&n), "p = 0.2: {n} of 50 hit");
    assert!(hit_sequence(0.0, 7).await.iter().all(|h| !h), "p = 0");
    assert!(hit_sequence(1.0, 7).await.iter().all(|h| *h), "p = 1");
}

// ---------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------

#[tokio::test]
async fn method_matching_get_not_hit_by_post_rule() {
    let f = Fake::start().await;
    let rule = f
        .add_rule(json!({"method": "POST", "path": "/v1/servers",
                          "effect": {"type": "status", "status": 503}}))
        .await;
    assert_eq!(f.get("/servers").await, json!([]));
    assert_eq!(f.hits(rule["id"].as_u64().expect("id")).await, 0);
    let a = f
        .api(Method::POST, "/servers", Some(server_body("x")))
        .await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.body);
    // Without a method, every method matches.
    f.fc.faults().clear();
    f.add_rule(json!({"path": "/v1/servers", "effect": {"type": "status", "status": 500}}))
        .await;
    for m in [Method::GET, Method::POST] {
        let a = f.api(m.clone(), "/servers", Some(server_body("x"))).await;
        assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR, "{m}");
    }
}

#[tokio::test]
async fn path_glob_star_is_one_segment_double_star_any_depth() {
    let f = Fake::start().await;
    let srv = f.create("/servers", server_body("s")).await;
    let one = format!("/servers/{}", uuid(&srv));
    let action = format!("/servers/{}/reboot", uuid(&srv));

    f.add_rule(json!({"path": "/v1/servers/*", "effect": {"type": "status", "status": 503}}))
        .await;
    assert_eq!(f.outcome(Method::GET, &one, None).await, 503);
    assert_eq!(f.outcome(Method::POST, &action, None).await, 204);
    assert_eq!(f.outcome(Method::GET, "/servers", None).await, 200);

    f.fc.faults().clear();
    f.add_rule(json!({"path": "/v1/servers/**", "effect": {"type": "status", "status": 503}}))
        .await;
    assert_eq!(f.outcome(Method::GET, &one, None).await, 503);
    assert_eq!(f.outcome(Method::POST, &action, None).await, 503);
    assert_eq!(f.outcome(Method::GET, "/networks", None).await, 200);

    // `*` within a segment: a prefix.
    f.fc.faults().clear();
    f.add_rule(json!({"path": "/v1/load-*", "effect": {"type": "status", "status": 503}}))
        .await;
    assert_eq!(f.outcome(Method::GET, "/load-balancers", None).await, 503);
    assert_eq!(
        f.outcome(Method::GET, "/load-balancers/pools", None).await,
        200
    );
    assert_eq!(f.outcome(Method::GET, "/servers", None).await, 200);

    // `**` across segments in the middle of the pattern.
    f.fc.faults().clear();
    f.add_rule(json!({"path": "/v1/**/members", "effect": {"type": "status", "status": 503}}))
        .await;
    let pool = "/load-balancers/pools/00000000-0000-0000-0000-000000000000/members";
    assert_eq!(f.outcome(Method::GET, pool, None).await, 503);
    assert_eq!(f.outcome(Method::GET, "/load-balancers", None).await, 200);
}

#[tokio::test]
async fn resource_matches_only_requests_naming_that_uuid() {
    let f = Fake::start().await;
    let a = f.create("/servers", server_body("a")).await;
    let b = f.create("/servers", server_body("b")).await;
    f.fc.faults()
        .add(FaultRule::new(None, "/v1/**", FaultEffect::status(503)).resource(&uuid(&a)))
        .expect("valid rule");
    let a_path = format!("/servers/{}", uuid(&a));
    let b_path = format!("/servers/{}", uuid(&b));
    assert_eq!(f.outcome(Method::GET, &a_path, None).await, 503);
    assert_eq!(
        f.outcome(Method::POST, &format!("{a_path}/stop"), None)
            .await,
        503
    );
    assert_eq!(
        f.outcome(Method::PATCH, &a_path, Some(json!({"name": "a2"})))
            .await,
        503
    );
    assert_eq!(f.outcome(Method::GET, &b_path, None).await, 200);
    assert_eq!(
        f.outcome(Method::PATCH, &b_path, Some(json!({"name": "b2"})))
            .await,
        204
    );
    // The list contains the UUID in its body, not in its path: not hit.
    assert_eq!(f.outcome(Method::GET, "/servers", None).await, 200);
    assert_eq!(f.fc.faults().list()[0].hits, 3);
}

#[tokio::test]
async fn resource_matches_floating_ip_addresses_including_ipv6() {
    let f = Fake::start().await;
    let v4 = fip_address(&f.create("/floating-ips", json!({"ip_version": 4})).await);
    let v6 = fip_address(&f.create("/floating-ips", json!({"ip_version": 6})).await);
    assert!(v6.contains(':'), "IPv6 address: {v6}");
    let v4b = fip_address(&f.create("/floating-ips", json!({"ip_version": 4})).await);

    f.add_rule(json!({"path": "/v1/floating-ips/*", "resource": v6,
                      "effect": {"type": "status", "status": 503}}))
        .await;
    f.add_rule(json!({"method": "PATCH", "path": "/v1/**", "resource": v4,
                      "effect": {"type": "drop"}}))
        .await;
    assert_eq!(
        f.outcome(Method::GET, &format!("/floating-ips/{v6}"), None)
            .await,
        503
    );
    assert_eq!(
        f.outcome(Method::GET, &format!("/floating-ips/{v4}"), None)
            .await,
        200
    );
    assert_eq!(
        f.outcome(Method::GET, &format!("/floating-ips/{v4b}"), None)
            .await,
        200
    );
    f.api_dropped(
        Method::PATCH,
        &format!("/floating-ips/{v4}"),
        Some(json!({"reverse_ptr": "x.example.com"})),
    )
    .await;
    assert_eq!(
        f.outcome(
            Method::PATCH,
            &format!("/floating-ips/{v4b}"),
            Some(json!({"reverse_ptr": "y.example.com"}))
        )
        .await,
        204
    );
    assert_eq!(f.outcome(Method::GET, "/floating-ips", None).await, 200);
    let hits: Vec<u64> = f
        .rules()
        .await
        .iter()
        .map(|r| r["hits"].as_u64().unwrap_or(99))
        .collect();
    assert_eq!(hits, [1, 1]);
}

#[tokio::test]
async fn admin_endpoints_are_never_faulted() {
    let f = Fake::start().await;
    f.add_rule(json!({"path": "/**", "effect": {"type": "drop"}}))
        .await;
    f.add_rule(json!({"path": "/_fake/**", "effect": {"type": "status", "status": 500}}))
        .await;
    f.add_rule(json!({"method": "PUT", "path": "/**",
                      "effect": {"type": "latency", "ms": 5000}}))
        .await;
    // /v1 is hit (the rule is live) ...
    f.api_dropped(Method::GET, "/servers", None).await;
    // ... /_fake is not.
    let started = Instant::now();
    for (method, path, body) in [
        (Method::GET, "/faults", None),
        (Method::GET, "/requests", None),
        (Method::GET, "/counters", None),
        (Method::GET, "/clock", None),
        (Method::POST, "/clock/advance", Some(json!({"seconds": 1}))),
        (
            Method::POST,
            "/seed",
            Some(json!({"servers": [{"name": "seeded"}]})),
        ),
        (Method::GET, "/backends", None),
    ] {
        let (st, v) = f.admin(method.clone(), path, body).await;
        assert!(st.is_success(), "{method} /_fake{path}: {st} {v}");
    }
    let dump = f.state().await;
    let (st, v) = f.admin(Method::PUT, "/state", Some(dump)).await;
    assert!(st.is_success(), "PUT /_fake/state: {st} {v}");
    assert!(
        started.elapsed() < Duration::from_millis(5000),
        "an admin request was delayed"
    );
    assert!(f.rules().await.iter().skip(1).all(|r| r["hits"] == 0));
    let (st, _) = f.admin(Method::DELETE, "/faults", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(f.get("/servers").await.as_array().map(Vec::len), Some(1));
}

// ---------------------------------------------------------------------------
// Rule management
// ---------------------------------------------------------------------------

#[tokio::test]
async fn invalid_rules_are_refused_with_flat_400_and_nothing_added() {
    let f = Fake::start().await;
    let cases = [
        (
            json!({"path": "v1/servers", "effect": {"type": "drop"}}),
            "path",
        ),
        (
            json!({"path": "/v1/**", "effect": {"type": "drop"}, "probability": 1.5, "seed": 1}),
            "probability",
        ),
        (
            json!({"path": "/v1/**", "effect": {"type": "status", "status": 1000}}),
            "1000",
        ),
        (
            json!({"path": "/v1/**", "effect": {"type": "explode"}}),
            "explode",
        ),
        (
            json!({"path": "/v1/**", "effect": {"type": "drop"}, "colour": "red"}),
            "colour",
        ),
    ];
    for (rule, named) in cases {
        let (st, v) = f.admin(Method::POST, "/faults", Some(rule.clone())).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{rule}: {v}");
        assert_flat(&v);
        let text = v.to_string();
        assert!(
            text.contains(named),
            "{rule}: error does not name {named}: {v}"
        );
        assert_eq!(f.rules().await, Vec::<Value>::new(), "{rule} was added");
    }
    // In-process: the same checks.
    assert!(
        f.fc.faults()
            .add(FaultRule::new(None, "v1", FaultEffect::Drop))
            .is_err()
    );
    assert!(
        f.fc.faults()
            .add(FaultRule::new(None, "/v1", FaultEffect::Drop).probability(1.5, 1))
            .is_err()
    );
    assert!(
        f.fc.faults()
            .add(FaultRule::new(None, "/v1", FaultEffect::status(1000)))
            .is_err()
    );
    assert!(f.fc.faults().list().is_empty());
    // Nothing faulted.
    assert_eq!(f.get("/servers").await, json!([]));
}

#[tokio::test]
async fn delete_clears_removes_one_and_reset_clears_faults() {
    let f = Fake::start().await;
    let r1 = f
        .add_rule(json!({"method": "GET", "path": "/v1/servers",
                          "effect": {"type": "status", "status": 503}}))
        .await;
    let r2 = f
        .add_rule(json!({"method": "GET", "path": "/v1/networks",
                          "effect": {"type": "status", "status": 503}}))
        .await;
    assert_ne!(r1["id"], r2["id"]);
    assert_eq!(f.rules().await.len(), 2);

    // Remove one by id.
    let (st, v) = f
        .admin(Method::DELETE, &format!("/faults/{}", r1["id"]), None)
        .await;
    assert_eq!(st, StatusCode::NO_CONTENT, "{v}");
    let left = f.rules().await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], r2["id"]);
    assert_eq!(f.outcome(Method::GET, "/servers", None).await, 200);
    assert_eq!(f.outcome(Method::GET, "/networks", None).await, 503);
    // Unknown id (and the one just removed): 404.
    for id in [r1["id"].as_u64().expect("id"), 9999] {
        let (st, v) = f
            .admin(Method::DELETE, &format!("/faults/{id}"), None)
            .await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{v}");
        assert_flat(&v);
    }
    assert_eq!(f.rules().await.len(), 1);

    // Clear all.
    f.add_rule(json!({"path": "/v1/**", "effect": {"type": "drop"}}))
        .await;
    let (st, v) = f.admin(Method::DELETE, "/faults", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT, "{v}");
    assert_eq!(f.rules().await, Vec::<Value>::new());
    assert_eq!(f.outcome(Method::GET, "/networks", None).await, 200);

    // Reset clears faults too.
    f.add_rule(json!({"path": "/v1/**", "effect": {"type": "drop"}}))
        .await;
    f.fc.faults()
        .add(FaultRule::new(None, "/v1/**", FaultEffect::status(500)))
        .expect("valid rule");
    let (st, v) = f.admin(Method::POST, "/reset", None).await;
    assert!(st.is_success(), "POST /_fake/reset: {st} {v}");
    assert_eq!(f.rules().await, Vec::<Value>::new());
    assert!(f.fc.faults().list().is_empty());
    assert_eq!(f.outcome(Method::GET, "/servers", None).await, 200);
}

#[tokio::test]
async fn request_log_records_faulted_requests_as_fault_route() {
    let f = Fake::start().await;
    f.add_rule(json!({"method": "GET", "path": "/v1/servers",
                      "effect": {"type": "status", "status": 503}, "times": 1}))
        .await;
    f.add_rule(json!({"method": "POST", "path": "/v1/servers",
                      "effect": {"type": "drop"}, "times": 1}))
        .await;
    assert_eq!(f.outcome(Method::GET, "/servers", None).await, 503);
    f.api_dropped(Method::POST, "/servers", Some(server_body("x")))
        .await;
    assert_eq!(f.outcome(Method::GET, "/servers", None).await, 200);

    let log = f.requests().await;
    let v1: Vec<&Value> = log
        .iter()
        .filter(|e| e["path"].as_str().is_some_and(|p| p.starts_with("/v1")))
        .collect();
    assert_eq!(v1.len(), 3, "{log:?}");
    assert_eq!(v1[0]["method"], "GET");
    assert_eq!(v1[0]["path"], "/v1/servers");
    assert_eq!(v1[0]["route"], "(fault)");
    assert_eq!(v1[0]["status"], 503);
    assert_eq!(v1[1]["method"], "POST");
    assert_eq!(v1[1]["path"], "/v1/servers");
    assert_eq!(v1[1]["route"], "(fault)");
    assert_eq!(v1[1]["status"], 0);
    assert_ne!(v1[2]["route"], "(fault)");
    assert_eq!(v1[2]["status"], 200);
}

// ---------------------------------------------------------------------------
// In-process and HTTP rules are the same thing
// ---------------------------------------------------------------------------

/// The rule set of `same_rules_in_process_and_over_http_behave_the_same`, as JSON.
fn http_rules() -> Vec<Value> {
    vec![
        json!({"method": "GET", "path": "/v1/servers", "effect": {"type": "latency", "ms": 5}}),
        json!({"method": "POST", "path": "/v1/servers",
               "effect": {"type": "status", "status": 503, "retry_after": 5}, "times": 2}),
        json!({"method": "DELETE", "path": "/v1/servers/*", "effect": {"type": "drop"},
               "probability": 0.5, "seed": 7}),
        json!({"path": "/v1/servers/**",
               "effect": {"type": "status", "status": 429,
                          "body": {"detail": "Slow down."}},
               "probability": 0.3, "seed": 11}),
    ]
}

/// The same rule set, built with the Rust API.
fn rust_rules() -> Vec<FaultRule> {
    vec![
        FaultRule::new(Some("GET"), "/v1/servers", FaultEffect::Latency { ms: 5 }),
        FaultRule::new(
            Some("POST"),
            "/v1/servers",
            FaultEffect::Status {
                status: 503,
                body: None,
                retry_after: Some(5),
            },
        )
        .times(2),
        FaultRule::new(Some("DELETE"), "/v1/servers/*", FaultEffect::Drop).probability(0.5, 7),
        FaultRule::new(
            None,
            "/v1/servers/**",
            FaultEffect::Status {
                status: 429,
                body: Some([("detail".to_string(), "Slow down.".to_string())].into()),
                retry_after: None,
            },
        )
        .probability(0.3, 11),
    ]
}

/// A fixed request sequence; returns each request's status (0 for a drop).
async fn run_sequence(f: &Fake) -> Vec<u16> {
    let mut out = Vec::new();
    let mut uuids = Vec::new();
    for i in 0..8 {
        let name = format!("s{i}");
        let a = f
            .try_send(
                Method::POST,
                "/v1/servers",
                Some(TOKEN),
                Some(&server_body(&name)),
            )
            .await;
        match a {
            Ok(a) => {
                if a.status == StatusCode::CREATED {
                    uuids.push(uuid(&a.body));
                }
                out.push(a.status.as_u16());
            }
            Err(_) => out.push(0),
        }
        out.push(f.outcome(Method::GET, "/servers", None).await);
    }
    for u in &uuids {
        out.push(f.outcome(Method::GET, &format!("/servers/{u}"), None).await);
        out.push(
            f.outcome(Method::DELETE, &format!("/servers/{u}"), None)
                .await,
        );
    }
    out
}

#[tokio::test]
async fn same_rules_in_process_and_over_http_behave_the_same() {
    let over_http = Fake::start().await;
    for r in http_rules() {
        over_http.add_rule(r).await;
    }
    let in_process = Fake::start().await;
    for r in rust_rules() {
        in_process.fc.faults().add(r).expect("valid rule");
    }
    // Both views show the same rules, before and after the same traffic.
    assert_eq!(in_process.rules().await, over_http.rules().await);
    assert_eq!(in_process.fc.faults().list(), over_http.fc.faults().list());

    let a = run_sequence(&over_http).await;
    let b = run_sequence(&in_process).await;
    assert_eq!(a, b, "same rules, same outcomes");
    assert_eq!(&a[..4], [503, 200, 503, 200], "times: 2 on POST: {a:?}");
    assert!(
        a.contains(&0) || a.contains(&429),
        "probabilistic rules never fired: {a:?}"
    );

    assert_eq!(in_process.rules().await, over_http.rules().await);
    assert_eq!(in_process.fc.faults().list(), over_http.fc.faults().list());
    let hits: Vec<u64> = over_http
        .fc
        .faults()
        .list()
        .iter()
        .map(|r| r.hits)
        .collect();
    assert_eq!(hits[1], 2);
    assert!(hits[0] > 0);

    // A rule added in-process shows over HTTP, and the other way round.
    let id = in_process
        .fc
        .faults()
        .add(FaultRule::new(None, "/v1/networks", FaultEffect::Drop).times(1))
        .expect("valid rule");
    assert!(
        in_process
            .rules()
            .await
            .iter()
            .any(|r| r["id"] == id && r["effect"] == json!({"type": "drop"}) && r["times"] == 1)
    );
    let added = over_http
        .add_rule(json!({"path": "/v1/networks", "effect": {"type": "drop"}, "times": 1}))
        .await;
    let listed = over_http.fc.faults().list();
    let rule = listed
        .iter()
        .find(|r| Some(r.id) == added["id"].as_u64())
        .expect("HTTP rule listed in-process");
    assert_eq!(rule.effect, FaultEffect::Drop);
    assert_eq!(rule.times, Some(1));
    assert_eq!(in_process.rules().await, over_http.rules().await);
}
