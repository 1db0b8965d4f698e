//! The load-balancer data-plane model (fakecloud/MODEL.md), driven in-process over real HTTP
//! like a client would, with a manual clock that only `FakeCloud::advance` moves.
//!
//! - one test per rule of MODEL.md §3 (lifecycle, member health, backends, the availability
//!   oracle, floating IPs, servers);
//! - the Go reference CCM's call sequences for each kind of Service change, replayed
//!   with its pauses (0.5 s after each DELETE, 5 s between DELETE and POST of one kind in one
//!   pool, 5-7.5 s between passes and waiting while the load balancer is `changing`), against
//!   the documented downtime bounds with the default calibration (MODEL.md §4);
//! - determinism: one scenario on two fresh fakes gives identical timelines and availability.
//!
//! Times in the comments are virtual seconds since the manual clock's epoch
//! (2026-01-01T00:00:00Z).

use fakecloud::{Config, FakeCloud, Timing};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

const TOKEN: &str = "test-token";
const EPOCH: &str = "2026-01-01T00:00:00Z";
/// The oracle's default client (MODEL.md §6).
const DEFAULT_CLIENT: &str = "203.0.113.10";
/// Private addresses of the seeded servers worker-1 .. worker-4.
const W1: &str = "10.100.0.11";
const W2: &str = "10.100.0.12";
const W3: &str = "10.100.0.13";
const W4: &str = "10.100.0.14";
const WORKERS: [&str; 4] = [W1, W2, W3, W4];

const NOT_PROVISIONED: &str = "load balancer not provisioned";
const DELETED: &str = "load balancer deleted";
const FIP_NOT_PROPAGATED: &str = "floating IP not assigned or not propagated";
const NO_LISTENER: &str = "no listener";
const NOT_ALLOWED: &str = "client not in allowed_cidrs";
const NO_POOL: &str = "listener has no pool";
const NO_MEMBER_UP: &str = "no member up";
const NO_MEMBER_ANSWERS: &str = "no member answers";

/// The reference CCM's sleep between passes is uniform in 5.0-7.5 s: replay both ends.
const PASS_SLEEPS: [f64; 2] = [7.5, 5.0];

// ---- time -------------------------------------------------------------------------------

fn epoch() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(EPOCH)
        .expect("epoch literal")
        .with_timezone(&chrono::Utc)
}

/// RFC 3339 timestamp of `secs` after the epoch.
fn ts(secs: f64) -> String {
    let t = epoch() + chrono::TimeDelta::microseconds((secs * 1e6).round() as i64);
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Seconds after the epoch of an RFC 3339 timestamp.
fn secs(s: &str) -> f64 {
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s:?} is not RFC 3339: {e}"))
        .with_timezone(&chrono::Utc);
    (t - epoch()).num_microseconds().expect("small delta") as f64 / 1e6
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() < 1e-6,
        "{what}: expected {expected}, got {actual}"
    );
}

// ---- the client -------------------------------------------------------------------------

/// A load balancer as created: its UUID and its two VIPs.
#[derive(Debug, Clone)]
struct Lb {
    uuid: String,
    vip4: String,
    vip6: String,
}

/// One fakecloud with a manual clock, seeded with the private network `k8s-private`
/// (10.100.0.0/24) and four running servers worker-1 .. worker-4 at 10.100.0.11 .. .14.
struct Fake {
    fc: FakeCloud,
    http: reqwest::Client,
    base: String,
    network: String,
    subnet: String,
    /// `(name, uuid)` of the seeded servers.
    servers: Vec<(String, String)>,
}

impl Fake {
    /// With the default calibration (MODEL.md §4).
    async fn start() -> Fake {
        Fake::with_timing(Timing::default()).await
    }

    async fn with_timing(timing: Timing) -> Fake {
        let fc = FakeCloud::start(Config {
            timing,
            ..Config::for_tests()
        })
        .await
        .expect("start fakecloud");
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("build reqwest client");
        let mut f = Fake {
            base: fc.base_url(),
            fc,
            http,
            network: String::new(),
            subnet: String::new(),
            servers: Vec::new(),
        };
        let servers: Vec<Value> = WORKERS
            .iter()
            .enumerate()
            .map(|(i, a)| {
                json!({"name": format!("worker-{}", i + 1), "zone": "rma1",
                       "private": [{"network": "k8s-private", "address": a}]})
            })
            .collect();
        let (st, v) = f
            .admin(
                Method::POST,
                "/seed",
                Some(json!({
                    "networks": [{"name": "k8s-private", "zone": "rma1",
                                  "subnets": [{"cidr": "10.100.0.0/24",
                                               "gateway_address": "10.100.0.1"}]}],
                    "servers": servers,
                })),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED, "POST /_fake/seed: {v}");
        let subnets = f.get("/subnets").await;
        let subnet = subnets
            .as_array()
            .and_then(|l| l.iter().find(|s| s["cidr"] == "10.100.0.0/24"))
            .unwrap_or_else(|| panic!("no seeded subnet in {subnets}"));
        f.subnet = subnet["uuid"].as_str().expect("subnet uuid").to_string();
        f.network = subnet["network"]["uuid"]
            .as_str()
            .expect("subnet's network uuid")
            .to_string();
        let list = f.get("/servers").await;
        f.servers = list
            .as_array()
            .expect("server list")
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().expect("name").to_string(),
                    s["uuid"].as_str().expect("uuid").to_string(),
                )
            })
            .collect();
        f
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        token: bool,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let url = format!("{}{}", self.base, path);
        let mut rb = self.http.request(method.clone(), &url);
        if token {
            rb = rb.bearer_auth(TOKEN);
        }
        if let Some(b) = body {
            rb = rb
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = rb
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status();
        let text = resp.text().await.expect("read body");
        let value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    /// `/v1` + `path` with the token.
    async fn api(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.send(method, &format!("/v1{path}"), true, body.as_ref())
            .await
    }

    /// `/_fake` + `path`, without a token.
    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.send(method, &format!("/_fake{path}"), false, body.as_ref())
            .await
    }

    async fn get(&self, path: &str) -> Value {
        let (st, v) = self.api(Method::GET, path, None).await;
        assert_eq!(st, StatusCode::OK, "GET /v1{path}: {v}");
        v
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let (st, v) = self.api(Method::POST, path, Some(body.clone())).await;
        assert_eq!(st, StatusCode::CREATED, "POST /v1{path} {body}: {v}");
        v
    }

    async fn patch(&self, path: &str, body: Value) {
        let (st, v) = self.api(Method::PATCH, path, Some(body.clone())).await;
        assert_eq!(st, StatusCode::NO_CONTENT, "PATCH /v1{path} {body}: {v}");
    }

    async fn delete(&self, path: &str) {
        let (st, v) = self.api(Method::DELETE, path, None).await;
        assert_eq!(st, StatusCode::NO_CONTENT, "DELETE /v1{path}: {v}");
    }

    /// Moves the virtual clock (never sleeps).
    fn advance(&self, secs: f64) {
        self.fc.advance(Duration::from_secs_f64(secs));
    }

    /// Virtual now, in seconds after the epoch.
    async fn now(&self) -> f64 {
        let (st, v) = self.admin(Method::GET, "/clock", None).await;
        assert_eq!(st, StatusCode::OK, "GET /_fake/clock: {v}");
        secs(v["now"].as_str().expect("clock `now`"))
    }

    /// Advances the clock to `t` seconds after the epoch.
    async fn advance_to(&self, t: f64) {
        let now = self.now().await;
        assert!(t >= now - 1e-9, "cannot go back from {now} to {t}");
        if t > now {
            self.advance(t - now);
        }
        assert_close(self.now().await, t, "clock after advance");
    }

    fn server(&self, name: &str) -> String {
        self.servers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, u)| u.clone())
            .unwrap_or_else(|| panic!("no seeded server {name}"))
    }

    /// `POST /v1/servers/{uuid}/{action}` (start, stop, reboot): 204.
    async fn server_action(&self, uuid: &str, action: &str) {
        let path = format!("/servers/{uuid}/{action}");
        let (st, v) = self.api(Method::POST, &path, None).await;
        assert_eq!(st, StatusCode::NO_CONTENT, "POST /v1{path}: {v}");
    }

    async fn server_status(&self, uuid: &str) -> String {
        let s = self.get(&format!("/servers/{uuid}")).await;
        s["status"].as_str().expect("server status").to_string()
    }

    /// `POST /_fake/backends` with one declaration or a list.
    async fn declare(&self, decl: Value) {
        let (st, v) = self
            .admin(Method::POST, "/backends", Some(decl.clone()))
            .await;
        assert_eq!(st, StatusCode::OK, "POST /_fake/backends {decl}: {v}");
    }

    async fn availability(
        &self,
        lb: &Lb,
        from: Option<f64>,
        to: Option<f64>,
        client: Option<&str>,
    ) -> Value {
        let mut q: Vec<String> = Vec::new();
        if let Some(t) = from {
            q.push(format!("from={}", ts(t)));
        }
        if let Some(t) = to {
            q.push(format!("to={}", ts(t)));
        }
        if let Some(c) = client {
            q.push(format!("client={c}"));
        }
        let path = format!("/load-balancers/{}/availability?{}", lb.uuid, q.join("&"));
        let (st, v) = self.admin(Method::GET, &path, None).await;
        assert_eq!(st, StatusCode::OK, "GET /_fake{path}: {v}");
        v
    }

    async fn timeline(&self, lb: &Lb) -> Value {
        let path = format!("/load-balancers/{}/timeline", lb.uuid);
        let (st, v) = self.admin(Method::GET, &path, None).await;
        assert_eq!(st, StatusCode::OK, "GET /_fake{path}: {v}");
        v
    }

    // ---- load balancers ---------------------------------------------------------------------

    async fn create_lb(&self, name: &str) -> Lb {
        let v = self
            .post(
                "/load-balancers",
                json!({"name": name, "flavor": "lb-standard", "zone": "rma1"}),
            )
            .await;
        let vip = |version: u64| {
            v["vip_addresses"]
                .as_array()
                .and_then(|l| l.iter().find(|a| a["version"] == version))
                .and_then(|a| a["address"].as_str())
                .unwrap_or_else(|| panic!("no IPv{version} VIP in {v}"))
                .to_string()
        };
        Lb {
            uuid: v["uuid"].as_str().expect("lb uuid").to_string(),
            vip4: vip(4),
            vip6: vip(6),
        }
    }

    async fn lb_status(&self, lb: &Lb) -> String {
        let v = self.get(&format!("/load-balancers/{}", lb.uuid)).await;
        v["status"].as_str().expect("lb status").to_string()
    }

    async fn create_pool(&self, lb: &Lb, name: &str, protocol: &str, algorithm: &str) -> String {
        let v = self
            .post(
                "/load-balancers/pools",
                json!({"name": name, "load_balancer": lb.uuid, "algorithm": algorithm,
                       "protocol": protocol}),
            )
            .await;
        v["uuid"].as_str().expect("pool uuid").to_string()
    }

    /// A member on the seeded subnet; `extra` adds fields (`monitor_port`, `enabled`).
    async fn create_member(
        &self,
        pool: &str,
        name: &str,
        address: &str,
        port: u16,
        extra: Value,
    ) -> String {
        let body = merge(
            json!({"name": name, "protocol_port": port, "address": address,
                   "subnet": self.subnet}),
            extra,
        );
        let v = self
            .post(&format!("/load-balancers/pools/{pool}/members"), body)
            .await;
        v["uuid"].as_str().expect("member uuid").to_string()
    }

    async fn member_status(&self, pool: &str, member: &str) -> String {
        let v = self
            .get(&format!("/load-balancers/pools/{pool}/members/{member}"))
            .await;
        v["monitor_status"]
            .as_str()
            .unwrap_or_else(|| panic!("no monitor_status in {v}"))
            .to_string()
    }

    /// Advances to `t` and asserts the member's API `monitor_status`. Transitions made by a
    /// check are asserted 0.1 s after the check (see
    /// `member_monitor_status_agrees_with_the_oracle_at_the_check_instant`).
    async fn expect_member(&self, t: f64, pool: &str, member: &str, expected: &str) {
        self.advance_to(t).await;
        assert_eq!(
            self.member_status(pool, member).await,
            expected,
            "monitor_status at t={t}"
        );
    }

    async fn create_listener(
        &self,
        pool: &str,
        name: &str,
        protocol: &str,
        port: u16,
        extra: Value,
    ) -> String {
        let body = merge(
            json!({"pool": pool, "name": name, "protocol": protocol, "protocol_port": port}),
            extra,
        );
        let v = self.post("/load-balancers/listeners", body).await;
        v["uuid"].as_str().expect("listener uuid").to_string()
    }

    async fn create_monitor(&self, pool: &str, kind: &str, extra: Value) -> String {
        let body = merge(json!({"pool": pool, "type": kind}), extra);
        let v = self.post("/load-balancers/health-monitors", body).await;
        v["uuid"].as_str().expect("monitor uuid").to_string()
    }

    // ---- the reference CCM's pacing (pauses and passes, as listed at the top) ----------------

    /// A DELETE followed by the CCM's 0.5 s pause.
    async fn ccm_delete(&self, path: &str) {
        self.delete(path).await;
        self.advance(0.5);
    }

    /// The 5 s pause between deletions and creations of one kind in one pool.
    fn ccm_pause(&self) {
        self.advance(5.0);
    }

    /// End of a pass with a refetch: sleep, fetch; while the LB is `changing` the pass stops
    /// at "await" and the next one starts after another sleep.
    async fn ccm_next_pass(&self, lb: &Lb, sleep: f64) {
        loop {
            self.advance(sleep);
            if self.lb_status(lb).await != "changing" {
                return;
            }
        }
    }
}

fn merge(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        for (k, v) in e {
            b.insert(k, v);
        }
    }
    base
}

fn member_path(pool: &str, member: &str) -> String {
    format!("/load-balancers/pools/{pool}/members/{member}")
}

// ---- reading the oracle -----------------------------------------------------------------

/// The availability entry for one address and listener.
fn entry<'a>(av: &'a Value, address: &str, protocol: &str, port: u16) -> &'a Value {
    av["entries"]
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|e| e["address"] == address && e["protocol"] == protocol && e["port"] == port)
        })
        .unwrap_or_else(|| panic!("no entry {address} {protocol}/{port} in {av}"))
}

/// `(from, to, reason)` of an entry's down intervals, in seconds after the epoch.
fn downs(e: &Value) -> Vec<(f64, f64, String)> {
    e["down"]
        .as_array()
        .unwrap_or_else(|| panic!("no `down` list in {e}"))
        .iter()
        .map(|d| {
            (
                secs(d["from"].as_str().expect("from")),
                secs(d["to"].as_str().expect("to")),
                d["reason"].as_str().expect("reason").to_string(),
            )
        })
        .collect()
}

fn downtime(e: &Value) -> f64 {
    e["downtime_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("no downtime_s in {e}"))
}

/// Asserts an entry's down intervals exactly, and that `downtime_s` is their sum.
fn assert_downs(e: &Value, expected: &[(f64, f64, &str)]) {
    let got = downs(e);
    let ok = got.len() == expected.len()
        && got
            .iter()
            .zip(expected)
            .all(|(g, x)| (g.0 - x.0).abs() < 1e-6 && (g.1 - x.1).abs() < 1e-6 && g.2 == x.2);
    assert!(ok, "down intervals: expected {expected:?}, got {got:?}");
    let sum: f64 = expected.iter().map(|(a, b, _)| b - a).sum();
    assert_close(downtime(e), sum, "downtime_s");
}

/// Seconds within which both entries are down at once (a service moving from one listener
/// port to another is out only while neither port serves).
fn overlap(a: &Value, b: &Value) -> f64 {
    let mut total = 0.0;
    for (af, at, _) in downs(a) {
        for (bf, bt, _) in downs(b) {
            let (from, to) = (af.max(bf), at.min(bt));
            if to > from {
                total += to - from;
            }
        }
    }
    total
}

/// From the first down moment to the end of the last down interval (an outage with a
/// blip of service inside still spans this long).
fn outage_span(e: &Value) -> f64 {
    let d = downs(e);
    match (d.first(), d.last()) {
        (Some(first), Some(last)) => last.1 - first.0,
        _ => 0.0,
    }
}

fn operations(tl: &Value) -> Vec<(f64, f64, String)> {
    tl["operations"]
        .as_array()
        .unwrap_or_else(|| panic!("no operations in {tl}"))
        .iter()
        .map(|o| {
            (
                secs(o["requested_at"].as_str().expect("requested_at")),
                secs(o["effective_at"].as_str().expect("effective_at")),
                o["operation"].as_str().expect("operation").to_string(),
            )
        })
        .collect()
}

// ---- a small setup shared by the rule tests ---------------------------------------------

/// LB "lb" (ready at 60); at 60: pool "pool" (applied 70), member "m1" at W1:8080 (80),
/// listener "listener" on `protocol`/80 (90) and, if given, a health monitor (100; with the
/// defaults delay 2 × up 2 the member is `up` at 104). The clock is left at 60.
struct Basic {
    lb: Lb,
    pool: String,
    member: String,
    listener: String,
}

async fn basic(f: &Fake, protocol: &str, monitor: Option<(&str, Value)>) -> Basic {
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", protocol, "round_robin").await;
    let member = f.create_member(&pool, "m1", W1, 8080, json!({})).await;
    let listener = f
        .create_listener(&pool, "listener", protocol, 80, json!({}))
        .await;
    if let Some((kind, extra)) = monitor {
        f.create_monitor(&pool, kind, extra).await;
    }
    Basic {
        lb,
        pool,
        member,
        listener,
    }
}

// =========================================================================================
// Calibration
// =========================================================================================

#[tokio::test]
async fn calibration_defaults_are_the_model_table() {
    // MODEL.md §4: provision 60, reconfigure 10, propagation 10, server create 30, action 10.
    assert_eq!(
        Timing::default(),
        Timing {
            server_create_s: 30.0,
            server_action_s: 10.0,
            lb_provision_s: 60.0,
            lb_reconfigure_s: 10.0,
            floating_ip_propagation_s: 10.0,
        }
    );
}

// =========================================================================================
// Rules 1-4: lifecycle
// =========================================================================================

#[tokio::test]
async fn rule01_new_lb_is_changing_while_provisioning_then_answers_with_empty_config() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    assert_eq!(f.lb_status(&lb).await, "changing");
    f.advance_to(59.5).await;
    assert_eq!(f.lb_status(&lb).await, "changing");
    f.advance_to(60.0).await;
    assert_eq!(f.lb_status(&lb).await, "running");
    // No listener was ever configured: nothing to report per port.
    let av = f.availability(&lb, None, None, None).await;
    assert_eq!(av["entries"], json!([]), "{av}");

    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // applied 70
    f.create_member(&pool, "m1", W1, 8080, json!({})).await; // 80
    f.create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 90
    f.advance_to(100.0).await;
    let av = f.availability(&lb, None, None, None).await;
    for vip in [&lb.vip4, &lb.vip6] {
        assert_downs(
            entry(&av, vip, "tcp", 80),
            &[(0.0, 60.0, NOT_PROVISIONED), (60.0, 90.0, NO_LISTENER)],
        );
    }
    let ops = operations(&f.timeline(&lb).await);
    assert_eq!(ops[0], (0.0, 60.0, "provision load balancer \"lb\"".into()));
}

#[tokio::test]
async fn rule02_writes_queue_one_at_a_time_and_lb_is_changing_until_the_last() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    // Accepted while provisioning, queued behind it: effective = max(now, busy_until) + 10.
    f.advance_to(10.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // max(10, 60) + 10 = 70
    f.advance_to(63.0).await;
    f.create_member(&pool, "m1", W1, 8080, json!({})).await; // max(63, 70) + 10 = 80
    f.advance_to(65.0).await;
    let listener = f
        .create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 90
    assert_eq!(f.lb_status(&lb).await, "changing");

    // API view: the listener is listed at once; data plane: not before 90.
    f.advance_to(85.0).await;
    let listed = f
        .get(&format!("/load-balancers/listeners/{listener}"))
        .await;
    assert_eq!(listed["protocol_port"], 80);
    assert_eq!(f.lb_status(&lb).await, "changing");
    f.advance_to(89.5).await;
    assert_eq!(f.lb_status(&lb).await, "changing");
    f.advance_to(90.0).await;
    assert_eq!(f.lb_status(&lb).await, "running");

    // Idle: the next write takes 10 s from its own request time.
    f.advance_to(100.0).await;
    f.patch(
        &format!("/load-balancers/listeners/{listener}"),
        json!({"timeout_client_data_ms": 60000}),
    )
    .await;
    assert_eq!(f.lb_status(&lb).await, "changing");
    f.advance_to(109.5).await;
    assert_eq!(f.lb_status(&lb).await, "changing");
    f.advance_to(110.0).await;
    assert_eq!(f.lb_status(&lb).await, "running");

    let ops = operations(&f.timeline(&lb).await);
    let times: Vec<(f64, f64)> = ops.iter().map(|o| (o.0, o.1)).collect();
    assert_eq!(
        times,
        vec![
            (0.0, 60.0),
            (10.0, 70.0),
            (63.0, 80.0),
            (65.0, 90.0),
            (100.0, 110.0)
        ],
        "{ops:?}"
    );
    let av = f.availability(&lb, None, None, None).await;
    assert_downs(
        entry(&av, &lb.vip4, "tcp", 80),
        &[(0.0, 60.0, NOT_PROVISIONED), (60.0, 90.0, NO_LISTENER)],
    );
}

#[tokio::test]
async fn rule03_deleting_a_pool_cascades_in_one_applied_operation() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await;
    f.advance_to(110.0).await;
    let before = operations(&f.timeline(&b.lb).await).len();
    f.delete(&format!("/load-balancers/pools/{}", b.pool)).await;
    // API view: everything under the pool is gone at once.
    let (st, _) = f
        .api(
            Method::GET,
            &format!("/load-balancers/pools/{}/members", b.pool),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(f.get("/load-balancers/listeners").await, json!([]));
    assert_eq!(f.get("/load-balancers/health-monitors").await, json!([]));

    let ops = operations(&f.timeline(&b.lb).await);
    assert_eq!(ops.len(), before + 1, "{ops:?}");
    assert_eq!(
        ops.last().cloned(),
        Some((
            110.0,
            120.0,
            "delete pool \"pool\" (tcp round_robin)".to_string()
        ))
    );
    // Data plane: served until the cascade is applied, then no listener at once.
    f.advance_to(130.0).await;
    let av = f.availability(&b.lb, Some(110.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[(120.0, 130.0, NO_LISTENER)],
    );
}

#[tokio::test]
async fn rule04_deleting_the_lb_stops_it_at_once_and_unassigns_its_floating_ips() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", None).await;
    f.advance_to(100.0).await;
    let fip = f
        .post(
            "/floating-ips",
            json!({"ip_version": 4, "load_balancer": b.lb.uuid}),
        )
        .await;
    let fip_addr = fip["network"]
        .as_str()
        .expect("network")
        .split('/')
        .next()
        .expect("address")
        .to_string();
    f.advance_to(120.0).await;
    f.delete(&format!("/load-balancers/{}", b.lb.uuid)).await;
    let (st, _) = f
        .api(Method::GET, &format!("/load-balancers/{}", b.lb.uuid), None)
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let fip = f.get(&format!("/floating-ips/{fip_addr}")).await;
    assert_eq!(fip["load_balancer"], Value::Null, "{fip}");

    f.advance_to(130.0).await;
    let tl = f.timeline(&b.lb).await;
    assert_close(
        secs(tl["deleted_at"].as_str().expect("deleted_at")),
        120.0,
        "deleted_at",
    );
    let av = f.availability(&b.lb, Some(100.0), None, None).await;
    for vip in [&b.lb.vip4, &b.lb.vip6] {
        assert_downs(entry(&av, vip, "tcp", 80), &[(120.0, 130.0, DELETED)]);
    }
    let e = entry(&av, &fip_addr, "tcp", 80);
    assert_eq!(e["kind"], "floating_ip");
    assert_downs(
        e,
        &[(100.0, 110.0, FIP_NOT_PROPAGATED), (120.0, 130.0, DELETED)],
    );
}

// =========================================================================================
// Rules 5-9: member health
// =========================================================================================

#[tokio::test]
async fn rule05_member_without_monitor_is_no_monitor_and_carries_traffic_once_applied() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    f.create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 80
    let m = f.create_member(&pool, "m1", W1, 8080, json!({})).await; // 90
    f.expect_member(85.0, &pool, &m, "no_monitor").await;
    f.expect_member(90.0, &pool, &m, "no_monitor").await;
    f.advance_to(100.0).await;
    let av = f.availability(&lb, Some(60.0), None, None).await;
    assert_downs(
        entry(&av, &lb.vip4, "tcp", 80),
        &[(60.0, 80.0, NO_LISTENER), (80.0, 90.0, NO_MEMBER_UP)],
    );
}

#[tokio::test]
async fn rule06_new_member_is_changing_until_up_threshold_checks_passed() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    f.create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 80
    f.create_monitor(&pool, "tcp", json!({"delay_s": 3, "up_threshold": 3}))
        .await; // 90
    let m = f.create_member(&pool, "m1", W1, 8080, json!({})).await; // 100
    // Listed with a monitor but not applied yet: changing.
    f.expect_member(95.0, &pool, &m, "changing").await;
    // Checks at 103, 106, 109: up at the third.
    f.expect_member(100.0, &pool, &m, "changing").await;
    f.expect_member(108.9, &pool, &m, "changing").await;
    f.expect_member(109.1, &pool, &m, "up").await;
    f.advance_to(120.0).await;
    let av = f.availability(&lb, Some(60.0), None, None).await;
    assert_downs(
        entry(&av, &lb.vip4, "tcp", 80),
        &[(60.0, 80.0, NO_LISTENER), (80.0, 109.0, NO_MEMBER_UP)],
    );
}

#[tokio::test]
async fn rule06_monitor_added_to_unmonitored_pool_takes_members_out_until_they_pass() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", None).await; // traffic from 90, no_monitor
    f.advance_to(100.0).await;
    f.create_monitor(&b.pool, "tcp", json!({})).await; // applied 110, up at 114
    f.expect_member(109.0, &b.pool, &b.member, "no_monitor")
        .await;
    f.expect_member(110.0, &b.pool, &b.member, "changing").await;
    f.expect_member(113.9, &b.pool, &b.member, "changing").await;
    f.expect_member(114.1, &b.pool, &b.member, "up").await;
    f.advance_to(120.0).await;
    let av = f.availability(&b.lb, Some(90.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[(110.0, 114.0, NO_MEMBER_UP)],
    );
}

#[tokio::test]
async fn rule07_failing_backend_goes_down_after_down_threshold_and_back_up() {
    let f = Fake::start().await;
    // Monitor applied at 100: checks every 2 s at 102, 104, ...; up at 104.
    let b = basic(&f, "tcp", Some(("tcp", json!({"down_threshold": 3})))).await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    f.advance_to(121.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await;
    // Failing checks at 122, 124, 126: down at the third.
    f.expect_member(125.9, &b.pool, &b.member, "up").await;
    f.expect_member(126.1, &b.pool, &b.member, "down").await;
    f.advance_to(141.0).await;
    f.declare(json!({"address": W1, "default": true})).await;
    // Passing checks at 142, 144: up at the second.
    f.expect_member(143.9, &b.pool, &b.member, "down").await;
    f.expect_member(144.1, &b.pool, &b.member, "up").await;
    f.advance_to(150.0).await;
    let av = f.availability(&b.lb, Some(110.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[
            (121.0, 126.0, NO_MEMBER_ANSWERS),
            (126.0, 144.0, NO_MEMBER_UP),
        ],
    );
}

#[tokio::test]
async fn rule08_replaced_monitor_restarts_every_member_from_changing() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await;
    let m2 = f.create_member(&b.pool, "m2", W2, 8080, json!({})).await; // 110, up at 114
    f.advance_to(120.0).await;
    let monitor = f.get("/load-balancers/health-monitors").await[0]["uuid"]
        .as_str()
        .expect("monitor uuid")
        .to_string();
    // Replace it the CCM's way: DELETE (applied 130), 0.5 + 5 s, POST (applied 140).
    f.ccm_delete(&format!("/load-balancers/health-monitors/{monitor}"))
        .await;
    f.ccm_pause();
    f.create_monitor(&b.pool, "tcp", json!({})).await;
    // 130-140: no monitor applied: both carry traffic as no_monitor.
    f.expect_member(135.0, &b.pool, &b.member, "no_monitor")
        .await;
    for m in [&b.member, &m2] {
        f.expect_member(140.0, &b.pool, m, "changing").await;
    }
    for m in [&b.member, &m2] {
        f.expect_member(144.1, &b.pool, m, "up").await;
    }
    f.advance_to(150.0).await;
    let av = f.availability(&b.lb, Some(120.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[(140.0, 144.0, NO_MEMBER_UP)],
    );
}

#[tokio::test]
async fn rule08_patched_monitor_keeps_member_state_and_new_delay_applies_from_the_change() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({"down_threshold": 3})))).await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    let monitor = f.get("/load-balancers/health-monitors").await[0]["uuid"]
        .as_str()
        .expect("monitor uuid")
        .to_string();
    let path = format!("/load-balancers/health-monitors/{monitor}");
    f.advance_to(110.0).await;
    f.patch(&path, json!({"up_threshold": 5})).await; // applied 120: state kept
    f.expect_member(120.0, &b.pool, &b.member, "up").await;
    f.expect_member(121.0, &b.pool, &b.member, "up").await;
    f.patch(&path, json!({"delay_s": 10})).await; // applied 131
    f.advance_to(135.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await;
    // With the old 2 s interval the member would be down at 140; with 10 s from 131 on the
    // three failures need at least 20 s after the first failing check (>= 135), and they are
    // all done by 135 + 3 × 10.
    f.expect_member(144.9, &b.pool, &b.member, "up").await;
    f.expect_member(165.0, &b.pool, &b.member, "down").await;
    let av = f.availability(&b.lb, Some(104.0), None, None).await;
    let d = downs(entry(&av, &b.lb.vip4, "tcp", 80));
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!((d[0].0, d[0].2.as_str()), (135.0, NO_MEMBER_ANSWERS));
    assert!(d[0].1 >= 155.0 && d[0].1 <= 165.0, "{d:?}");
    assert_eq!((d[1].1, d[1].2.as_str()), (165.0, NO_MEMBER_UP));
}

#[tokio::test]
async fn rule09_disabled_member_gets_no_traffic_whatever_its_health() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await;
    f.advance_to(110.0).await;
    let path = member_path(&b.pool, &b.member);
    f.patch(&path, json!({"enabled": false})).await; // applied 120
    f.expect_member(125.0, &b.pool, &b.member, "up").await;
    f.advance_to(130.0).await;
    f.patch(&path, json!({"enabled": true})).await; // applied 140
    f.advance_to(150.0).await;
    let av = f.availability(&b.lb, Some(104.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[(120.0, 140.0, NO_MEMBER_UP)],
    );
    // A member created disabled never carries traffic either.
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    f.create_member(&pool, "m1", W1, 8080, json!({"enabled": false}))
        .await; // 80
    f.create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 90
    f.advance_to(120.0).await;
    let av = f.availability(&lb, Some(60.0), None, None).await;
    assert_downs(
        entry(&av, &lb.vip4, "tcp", 80),
        &[(60.0, 90.0, NO_LISTENER), (90.0, 120.0, NO_MEMBER_UP)],
    );
}

// =========================================================================================
// Rules 10-12: backends
// =========================================================================================

#[tokio::test]
async fn rule10_default_backend_follows_server_power() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", None).await; // traffic from 90
    let w1 = f.server("worker-1");
    f.advance_to(95.0).await;
    // Declared answering, but a server that is not running never answers (rule 11).
    f.declare(json!({"address": W1, "tcp": true, "udp": true, "http_status": 200}))
        .await;
    f.advance_to(100.0).await;
    f.server_action(&w1, "stop").await;
    assert_eq!(f.server_status(&w1).await, "changing");
    f.advance_to(110.0).await;
    assert_eq!(f.server_status(&w1).await, "stopped");
    f.advance_to(120.0).await;
    f.server_action(&w1, "start").await;
    assert_eq!(f.server_status(&w1).await, "changing");
    f.advance_to(130.0).await;
    assert_eq!(f.server_status(&w1).await, "running");
    f.advance_to(140.0).await;
    let av = f.availability(&b.lb, Some(90.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[(100.0, 130.0, NO_MEMBER_ANSWERS)],
    );
}

#[tokio::test]
async fn rule10_stopped_server_member_goes_down_and_comes_back_up() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await; // up at 104, checks at even s
    let w1 = f.server("worker-1");
    f.advance_to(111.0).await;
    f.server_action(&w1, "stop").await;
    // Failing checks at 112, 114, 116.
    f.expect_member(115.9, &b.pool, &b.member, "up").await;
    f.expect_member(116.1, &b.pool, &b.member, "down").await;
    f.advance_to(131.0).await;
    f.server_action(&w1, "start").await;
    // Booting until 141; passing checks at 142, 144.
    f.expect_member(143.9, &b.pool, &b.member, "down").await;
    f.expect_member(144.1, &b.pool, &b.member, "up").await;
    f.advance_to(150.0).await;
    let av = f.availability(&b.lb, Some(104.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[
            (111.0, 116.0, NO_MEMBER_ANSWERS),
            (116.0, 144.0, NO_MEMBER_UP),
        ],
    );
}

#[tokio::test]
async fn rule11_declared_backend_per_address_and_port_with_port_winning_and_default_reverting() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", None).await; // member W1:8080, traffic from 90
    f.advance_to(100.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await;
    f.advance_to(110.0).await;
    f.declare(json!({"address": W1, "port": 8080, "tcp": true}))
        .await; // the port wins
    f.advance_to(120.0).await;
    f.declare(json!({"address": W1, "port": 8080, "default": true}))
        .await; // back to the address-wide declaration
    f.advance_to(130.0).await;
    f.declare(json!({"address": W1, "default": true})).await;
    f.advance_to(140.0).await;
    f.declare(json!([{"address": W1, "port": 9999, "tcp": false}]))
        .await; // another port: no effect
    f.advance_to(150.0).await;
    let av = f.availability(&b.lb, Some(90.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[
            (100.0, 110.0, NO_MEMBER_ANSWERS),
            (120.0, 130.0, NO_MEMBER_ANSWERS),
        ],
    );
    // The declarations in force, then forgotten.
    let (st, list) = f.admin(Method::GET, "/backends", None).await;
    assert_eq!(st, StatusCode::OK);
    let list = list.as_array().expect("declarations").clone();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["address"], W1);
    assert_eq!(list[0]["port"], 9999);
    assert_eq!(list[0]["tcp"], false);
    let (st, _) = f.admin(Method::DELETE, "/backends", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (_, list) = f.admin(Method::GET, "/backends", None).await;
    assert_eq!(list, json!([]));
    // `default` cannot be combined with a behaviour.
    let (st, v) = f
        .admin(
            Method::POST,
            "/backends",
            Some(json!({"address": W1, "default": true, "tcp": false})),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
}

#[tokio::test]
async fn rule11_udp_declaration_affects_udp_listeners_only() {
    let f = Fake::start().await;
    let b = basic(&f, "udp", None).await; // udp pool, udp/80 listener, traffic from 90
    f.advance_to(100.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await; // irrelevant to UDP
    f.advance_to(110.0).await;
    f.declare(json!({"address": W1, "udp": false})).await; // tcp back to true, udp off
    f.advance_to(120.0).await;
    let av = f.availability(&b.lb, Some(90.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "udp", 80),
        &[(110.0, 120.0, NO_MEMBER_ANSWERS)],
    );
}

#[tokio::test]
async fn rule12_tcp_monitor_needs_a_tcp_connect() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    f.advance_to(111.0).await;
    f.declare(json!({"address": W1, "udp": false, "http_status": 500}))
        .await;
    f.expect_member(130.0, &b.pool, &b.member, "up").await;
    f.advance_to(131.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await;
    f.expect_member(136.1, &b.pool, &b.member, "down").await; // 132, 134, 136
}

#[tokio::test]
async fn rule12_tls_hello_monitor_needs_a_tcp_connect() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tls-hello", json!({})))).await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    f.advance_to(111.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await;
    f.expect_member(116.1, &b.pool, &b.member, "down").await;
}

#[tokio::test]
async fn rule12_udp_connect_monitor_needs_a_udp_answer() {
    let f = Fake::start().await;
    let b = basic(&f, "udp", Some(("udp-connect", json!({})))).await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    f.advance_to(111.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await;
    f.expect_member(130.0, &b.pool, &b.member, "up").await;
    f.advance_to(131.0).await;
    f.declare(json!({"address": W1, "udp": false})).await;
    f.expect_member(135.9, &b.pool, &b.member, "up").await;
    f.expect_member(136.1, &b.pool, &b.member, "down").await;
    f.advance_to(140.0).await;
    let av = f.availability(&b.lb, Some(104.0), None, None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "udp", 80),
        &[
            (131.0, 136.0, NO_MEMBER_ANSWERS),
            (136.0, 140.0, NO_MEMBER_UP),
        ],
    );
}

#[tokio::test]
async fn rule12_ping_monitor_accepts_tcp_or_udp() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("ping", json!({})))).await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    f.advance_to(111.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await;
    f.expect_member(120.0, &b.pool, &b.member, "up").await;
    f.advance_to(121.0).await;
    f.declare(json!({"address": W1, "tcp": true, "udp": false}))
        .await;
    f.expect_member(130.0, &b.pool, &b.member, "up").await;
    f.advance_to(131.0).await;
    f.declare(json!({"address": W1, "tcp": false, "udp": false}))
        .await;
    f.expect_member(136.1, &b.pool, &b.member, "down").await;
}

#[tokio::test]
async fn rule12_http_monitor_needs_tcp_and_a_status_within_expected_codes() {
    let f = Fake::start().await;
    let b = basic(
        &f,
        "tcp",
        Some((
            "http",
            json!({"http": {"expected_codes": ["200-204", "301"]}}),
        )),
    )
    .await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    // Inside the range and the single code: stays up.
    f.advance_to(111.0).await;
    f.declare(json!({"address": W1, "http_status": 204})).await;
    f.expect_member(120.0, &b.pool, &b.member, "up").await;
    f.declare(json!({"address": W1, "http_status": 301})).await;
    f.expect_member(130.0, &b.pool, &b.member, "up").await;
    // Outside: down after three checks (132, 134, 136).
    f.advance_to(131.0).await;
    f.declare(json!({"address": W1, "http_status": 205})).await;
    f.expect_member(135.9, &b.pool, &b.member, "up").await;
    f.expect_member(136.1, &b.pool, &b.member, "down").await;
    // Back inside: up after two checks (142, 144).
    f.advance_to(141.0).await;
    f.declare(json!({"address": W1, "http_status": 200})).await;
    f.expect_member(144.1, &b.pool, &b.member, "up").await;
    // The right status without a TCP connect fails too.
    f.advance_to(151.0).await;
    f.declare(json!({"address": W1, "tcp": false, "http_status": 200}))
        .await;
    f.expect_member(156.1, &b.pool, &b.member, "down").await;
}

#[tokio::test]
async fn rule12_checks_go_to_monitor_port_else_protocol_port() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    let m = f
        .create_member(&pool, "m1", W1, 8080, json!({"monitor_port": 9090}))
        .await; // 80
    f.create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 90
    f.create_monitor(&pool, "tcp", json!({})).await; // 100, up at 104
    f.expect_member(104.1, &pool, &m, "up").await;
    // Traffic port fails, monitor port fine: the member stays up, connections fail.
    f.advance_to(111.0).await;
    f.declare(json!({"address": W1, "port": 8080, "tcp": false}))
        .await;
    f.expect_member(120.0, &pool, &m, "up").await;
    f.declare(json!({"address": W1, "port": 8080, "default": true}))
        .await;
    // Monitor port fails, traffic port fine: down after three checks (122, 124, 126).
    f.advance_to(121.0).await;
    f.declare(json!({"address": W1, "port": 9090, "tcp": false}))
        .await;
    f.expect_member(126.1, &pool, &m, "down").await;
    f.advance_to(130.0).await;
    let av = f.availability(&lb, Some(104.0), None, None).await;
    assert_downs(
        entry(&av, &lb.vip4, "tcp", 80),
        &[
            (111.0, 120.0, NO_MEMBER_ANSWERS),
            (126.0, 130.0, NO_MEMBER_UP),
        ],
    );

    // Without monitor_port the checks use protocol_port.
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await;
    f.expect_member(104.1, &b.pool, &b.member, "up").await;
    f.advance_to(111.0).await;
    f.declare(json!({"address": W1, "port": 9090, "tcp": false}))
        .await;
    f.expect_member(120.0, &b.pool, &b.member, "up").await;
    f.advance_to(121.0).await;
    f.declare(json!({"address": W1, "port": 8080, "tcp": false}))
        .await;
    f.expect_member(125.9, &b.pool, &b.member, "up").await;
    f.expect_member(126.1, &b.pool, &b.member, "down").await; // 122, 124, 126
}

// =========================================================================================
// Rules 13-14: the oracle
// =========================================================================================

#[tokio::test]
async fn rule13_allowed_cidrs_refuse_other_clients_per_client_query() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    f.create_member(&pool, "m1", W1, 8080, json!({})).await; // 80
    f.create_listener(
        &pool,
        "listener",
        "tcp",
        80,
        json!({"allowed_cidrs": ["10.0.0.0/8", "2001:db8::/32"]}),
    )
    .await; // 90
    f.advance_to(100.0).await;
    for client in ["10.1.2.3", "2001:db8::7"] {
        let av = f.availability(&lb, Some(90.0), None, Some(client)).await;
        assert_eq!(av["client"], client, "{av}");
        assert_downs(entry(&av, &lb.vip4, "tcp", 80), &[]);
    }
    for client in [None, Some("192.0.2.1")] {
        let av = f.availability(&lb, Some(90.0), None, client).await;
        assert_eq!(av["client"], client.unwrap_or(DEFAULT_CLIENT), "{av}");
        assert_downs(
            entry(&av, &lb.vip4, "tcp", 80),
            &[(90.0, 100.0, NOT_ALLOWED)],
        );
    }
    let (st, v) = f
        .admin(
            Method::GET,
            &format!("/load-balancers/{}/availability?client=nope", lb.uuid),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
}

#[tokio::test]
async fn rule14_each_failing_moment_carries_the_first_unmet_condition() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    let mut seen: Vec<String> = Vec::new();
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    let listener = f
        .create_listener(
            &pool,
            "listener",
            "tcp",
            80,
            json!({"allowed_cidrs": ["10.0.0.0/8"]}),
        )
        .await; // 80
    f.create_member(&pool, "m1", W1, 8080, json!({})).await; // 90
    f.advance_to(100.0).await;
    f.declare(json!({"address": W1, "tcp": false})).await; // 100-110: no member answers
    f.advance_to(110.0).await;
    f.declare(json!({"address": W1, "default": true})).await;
    f.post(
        "/floating-ips",
        json!({"ip_version": 4, "load_balancer": lb.uuid}),
    )
    .await; // propagated at 120
    f.advance_to(130.0).await;
    // The only way to a listener without pool: detach it in-process (the API always
    // cascades the pool's deletion to its listeners). Applied at 140.
    let listener_id: uuid::Uuid = listener.parse().expect("uuid");
    let timing = f.fc.app().config().timing.clone();
    f.fc.app()
        .write(|st, now| {
            fakecloud::model::load_balancers::detach_listener_for_tests(
                st,
                listener_id,
                now,
                &timing,
                "detach listener (test)",
            )
        })
        .expect("detach listener");
    f.advance_to(150.0).await;
    f.delete(&format!("/load-balancers/{}", lb.uuid)).await;
    f.advance_to(160.0).await;

    let allowed = f.availability(&lb, None, None, Some("10.0.0.5")).await;
    assert_downs(
        entry(&allowed, &lb.vip4, "tcp", 80),
        &[
            (0.0, 60.0, NOT_PROVISIONED),
            (60.0, 80.0, NO_LISTENER),
            (80.0, 90.0, NO_MEMBER_UP),
            (100.0, 110.0, NO_MEMBER_ANSWERS),
            (140.0, 150.0, NO_POOL),
            (150.0, 160.0, DELETED),
        ],
    );
    let other = f.availability(&lb, None, None, None).await;
    assert_downs(
        entry(&other, &lb.vip4, "tcp", 80),
        &[
            (0.0, 60.0, NOT_PROVISIONED),
            (60.0, 80.0, NO_LISTENER),
            (80.0, 150.0, NOT_ALLOWED),
            (150.0, 160.0, DELETED),
        ],
    );
    let fip = allowed["entries"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["kind"] == "floating_ip"))
        .unwrap_or_else(|| panic!("no floating IP entry in {allowed}"));
    assert_downs(
        fip,
        &[
            (0.0, 60.0, NOT_PROVISIONED),
            (60.0, 120.0, FIP_NOT_PROPAGATED),
            (140.0, 150.0, NO_POOL),
            (150.0, 160.0, DELETED),
        ],
    );
    for av in [&allowed, &other] {
        for e in av["entries"].as_array().expect("entries") {
            for (_, _, r) in downs(e) {
                if !seen.contains(&r) {
                    seen.push(r);
                }
            }
        }
    }
    seen.sort();
    let mut all = vec![
        NOT_PROVISIONED,
        DELETED,
        FIP_NOT_PROPAGATED,
        NO_LISTENER,
        NOT_ALLOWED,
        NO_POOL,
        NO_MEMBER_UP,
        NO_MEMBER_ANSWERS,
    ];
    all.sort();
    assert_eq!(seen, all);
}

#[tokio::test]
async fn availability_and_timeline_have_the_documented_shapes() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await;
    f.advance_to(120.0).await;
    // `from` defaults to the LB's creation, `to` to now; a later `to` is clamped to now.
    let av = f.availability(&b.lb, None, Some(500.0), None).await;
    assert_eq!(av["load_balancer"], b.lb.uuid.as_str());
    assert_eq!(av["name"], "lb");
    assert_close(secs(av["from"].as_str().expect("from")), 0.0, "from");
    assert_close(secs(av["to"].as_str().expect("to")), 120.0, "to");
    assert_eq!(av["client"], DEFAULT_CLIENT);
    let entries = av["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{av}");
    for e in entries {
        let keys: Vec<&String> = e.as_object().expect("object").keys().collect();
        for k in ["address", "kind", "protocol", "port", "down", "downtime_s"] {
            assert!(keys.iter().any(|x| *x == k), "{k} missing in {e}");
        }
        assert_eq!(e["kind"], "vip");
        assert_eq!(e["protocol"], "tcp");
        assert_eq!(e["port"], 80);
        assert!(e["downtime_s"].is_f64() || e["downtime_s"].is_u64(), "{e}");
        for d in e["down"].as_array().expect("down") {
            assert!(d["from"].is_string() && d["to"].is_string(), "{d}");
            assert!(d["reason"].is_string(), "{d}");
        }
        // Not provisioned 0-60, no listener 60-90, served by the no_monitor member 90-100,
        // no member up while the monitor's first checks run 100-104.
        assert_downs(
            e,
            &[
                (0.0, 60.0, NOT_PROVISIONED),
                (60.0, 90.0, NO_LISTENER),
                (100.0, 104.0, NO_MEMBER_UP),
            ],
        );
    }
    let addresses: Vec<&Value> = entries.iter().map(|e| &e["address"]).collect();
    assert_eq!(addresses, vec![&json!(b.lb.vip4), &json!(b.lb.vip6)]);

    let tl = f.timeline(&b.lb).await;
    assert_eq!(tl["load_balancer"], b.lb.uuid.as_str());
    assert_close(
        secs(tl["created_at"].as_str().expect("created_at")),
        0.0,
        "",
    );
    assert_close(secs(tl["ready_at"].as_str().expect("ready_at")), 60.0, "");
    assert_eq!(tl["deleted_at"], Value::Null);
    for o in tl["operations"].as_array().expect("operations") {
        assert!(o["requested_at"].is_string(), "{o}");
        assert!(o["effective_at"].is_string(), "{o}");
        assert!(o["operation"].is_string(), "{o}");
    }
    let names: Vec<String> = operations(&tl).into_iter().map(|o| o.2).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names[1].contains("pool \"pool\""), "{names:?}");
    assert!(names[2].contains("member \"m1\""), "{names:?}");
    assert!(names[3].contains("listener \"listener\""), "{names:?}");
    assert!(names[4].contains("health monitor"), "{names:?}");
    for name in &names {
        assert!(
            !name.contains(&b.pool) && !name.contains(&b.member) && !name.contains(&b.listener),
            "operation names must not carry UUIDs: {name}"
        );
    }

    // A window inside the history, errors, unknown LB.
    let av = f.availability(&b.lb, Some(95.0), Some(102.0), None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[(100.0, 102.0, NO_MEMBER_UP)],
    );
    let (st, v) = f
        .admin(
            Method::GET,
            &format!("/load-balancers/{}/availability?from=yesterday", b.lb.uuid),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    let unknown = "00000000-0000-4000-8000-000000000000";
    for path in [
        format!("/load-balancers/{unknown}/availability"),
        format!("/load-balancers/{unknown}/timeline"),
    ] {
        let (st, v) = f.admin(Method::GET, &path, None).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {v}");
    }
}

#[tokio::test]
async fn downtime_of_an_entry_that_never_failed_is_plain_zero() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", None).await; // traffic from 90
    f.advance_to(100.0).await;
    let path = format!(
        "/load-balancers/{}/availability?from={}",
        b.lb.uuid,
        ts(90.0)
    );
    let (st, v) = f.admin(Method::GET, &path, None).await;
    assert_eq!(st, StatusCode::OK);
    let d = downtime(entry(&v, &b.lb.vip4, "tcp", 80));
    assert_eq!(d, 0.0);
    assert!(!d.is_sign_negative(), "downtime_s is -0.0: {v}");
}

// =========================================================================================
// Rules 15-16: floating IPs and servers
// =========================================================================================

#[tokio::test]
async fn rule15_floating_ip_carries_traffic_after_propagation_and_stops_when_moved_away() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", None).await; // traffic from 90
    f.advance_to(100.0).await;
    let fip = f
        .post(
            "/floating-ips",
            json!({"ip_version": 4, "load_balancer": b.lb.uuid}),
        )
        .await;
    let addr = fip["network"]
        .as_str()
        .expect("network")
        .split('/')
        .next()
        .expect("address")
        .to_string();
    let path = format!("/floating-ips/{addr}");
    f.advance_to(120.0).await;
    f.patch(&path, json!({"server": f.server("worker-1")}))
        .await; // away: at once
    f.advance_to(130.0).await;
    f.patch(&path, json!({"load_balancer": b.lb.uuid})).await; // back: propagated at 140
    f.advance_to(150.0).await;
    f.delete(&path).await; // deleted: at once
    f.advance_to(160.0).await;
    let av = f.availability(&b.lb, Some(100.0), None, None).await;
    let e = entry(&av, &addr, "tcp", 80);
    assert_eq!(e["kind"], "floating_ip");
    assert_downs(
        e,
        &[
            (100.0, 110.0, FIP_NOT_PROPAGATED),
            (120.0, 140.0, FIP_NOT_PROPAGATED),
            (150.0, 160.0, FIP_NOT_PROPAGATED),
        ],
    );
    for vip in [&b.lb.vip4, &b.lb.vip6] {
        assert_downs(entry(&av, vip, "tcp", 80), &[]);
    }
}

#[tokio::test]
async fn rule16_server_lifecycle_create_reboot_delete() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    f.advance_to(70.0).await;
    // Created at 70: changing (not answering) for 30 s.
    let server = f
        .post(
            "/servers",
            json!({"name": "worker-9", "flavor": "flex-4-2", "image": "debian-12",
                   "zone": "rma1",
                   "interfaces": [{"network": "public"},
                                  {"network": f.network,
                                   "addresses": [{"subnet": f.subnet,
                                                  "address": "10.100.0.21"}]}]}),
        )
        .await;
    let uuid = server["uuid"].as_str().expect("server uuid").to_string();
    assert_eq!(server["status"], "changing");
    f.create_member(&pool, "m1", "10.100.0.21", 8080, json!({}))
        .await; // 80
    f.create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 90
    f.advance_to(99.5).await;
    assert_eq!(f.server_status(&uuid).await, "changing");
    f.advance_to(100.0).await;
    assert_eq!(f.server_status(&uuid).await, "running");
    f.advance_to(110.0).await;
    f.server_action(&uuid, "reboot").await;
    assert_eq!(f.server_status(&uuid).await, "changing");
    f.advance_to(120.0).await;
    assert_eq!(f.server_status(&uuid).await, "running");
    f.advance_to(130.0).await;
    f.delete(&format!("/servers/{uuid}")).await;
    f.advance_to(150.0).await;
    let av = f.availability(&lb, Some(90.0), None, None).await;
    assert_downs(
        entry(&av, &lb.vip4, "tcp", 80),
        &[
            (90.0, 100.0, NO_MEMBER_ANSWERS),
            (110.0, 120.0, NO_MEMBER_ANSWERS),
            (130.0, 150.0, NO_MEMBER_ANSWERS),
        ],
    );
}

#[tokio::test]
async fn rule10_unowned_address_answers_until_a_server_takes_it() {
    let f = Fake::start().await;
    let lb = f.create_lb("lb").await;
    f.advance_to(60.0).await;
    let pool = f.create_pool(&lb, "pool", "tcp", "round_robin").await; // 70
    // No server owns 10.100.0.21: it answers.
    f.create_member(&pool, "m1", "10.100.0.21", 8080, json!({}))
        .await; // 80
    f.create_listener(&pool, "listener", "tcp", 80, json!({}))
        .await; // 90
    f.advance_to(100.0).await;
    let av = f.availability(&lb, Some(90.0), None, None).await;
    assert_downs(entry(&av, &lb.vip4, "tcp", 80), &[]);
    // A server takes the address at 100 and boots until 130. History before 100 must not
    // change (MODEL.md: "history at or before now never changes").
    f.post(
        "/servers",
        json!({"name": "worker-9", "flavor": "flex-4-2", "image": "debian-12",
               "zone": "rma1",
               "interfaces": [{"network": "public"},
                              {"network": f.network,
                               "addresses": [{"subnet": f.subnet,
                                              "address": "10.100.0.21"}]}]}),
    )
    .await;
    f.advance_to(140.0).await;
    let av = f.availability(&lb, Some(90.0), None, None).await;
    assert_downs(
        entry(&av, &lb.vip4, "tcp", 80),
        &[(100.0, 130.0, NO_MEMBER_ANSWERS)],
    );
}

#[tokio::test]
async fn member_monitor_status_agrees_with_the_oracle_at_the_check_instant() {
    let f = Fake::start().await;
    let b = basic(&f, "tcp", Some(("tcp", json!({})))).await; // checks at 102, 104
    f.advance_to(104.0).await;
    let api = f.member_status(&b.pool, &b.member).await;
    let av = f.availability(&b.lb, Some(100.0), Some(104.0), None).await;
    assert_downs(
        entry(&av, &b.lb.vip4, "tcp", 80),
        &[(100.0, 104.0, NO_MEMBER_UP)],
    );
    assert_eq!(api, "up", "the oracle carries traffic from 104 on");
}

// =========================================================================================
// The reference CCM's sequences, one per kind of change, with the default calibration
// =========================================================================================

/// One Service port as the CCM builds it: pool, one member per node on the node port,
/// listener and tcp monitor (API defaults: delay 2, up 2, down 3).
struct SvcPort {
    pool: String,
    listener: String,
    monitor: String,
    /// `(member uuid, address)`.
    members: Vec<(String, String)>,
}

/// A converged Service: LB "svc", ports `(name, listener port, node port)`, the first
/// `nodes` workers as members. Returns when everything is applied and every member is up,
/// with the clock at the returned time T (a multiple of 10 s, idle).
async fn converged_service(
    f: &Fake,
    ports: &[(&str, u16, u16)],
    nodes: usize,
) -> (Lb, Vec<SvcPort>, f64) {
    let lb = f.create_lb("svc").await;
    f.advance_to(60.0).await;
    let mut out = Vec::new();
    for (name, port, node_port) in ports {
        let pool = f.create_pool(&lb, name, "tcp", "round_robin").await;
        let mut members = Vec::new();
        for (i, address) in WORKERS.iter().take(nodes).enumerate() {
            let m = f
                .create_member(
                    &pool,
                    &format!("worker-{}:{node_port}", i + 1),
                    address,
                    *node_port,
                    json!({}),
                )
                .await;
            members.push((m, address.to_string()));
        }
        let listener = f
            .create_listener(&pool, name, "tcp", *port, ccm_listener_extra())
            .await;
        let monitor = f.create_monitor(&pool, "tcp", ccm_monitor_extra()).await;
        out.push(SvcPort {
            pool,
            listener,
            monitor,
            members,
        });
    }
    while f.lb_status(&lb).await == "changing" {
        f.advance(10.0);
    }
    f.advance(10.0);
    for p in &out {
        for (m, _) in &p.members {
            assert_eq!(f.member_status(&p.pool, m).await, "up");
        }
    }
    let t = f.now().await;
    (lb, out, t)
}

/// The fields the reference CCM always sends when creating a listener.
fn ccm_listener_extra() -> Value {
    json!({"allowed_cidrs": [], "timeout_client_data_ms": 50000,
           "timeout_member_connect_ms": 5000, "timeout_member_data_ms": 50000})
}

/// The fields the reference CCM always sends when creating a monitor.
fn ccm_monitor_extra() -> Value {
    json!({"delay_s": 2, "timeout_s": 1, "up_threshold": 2, "down_threshold": 3, "http": {}})
}

#[tokio::test]
async fn ccm_listener_recreation_port_change_is_down_10s_on_that_port_only() {
    for sleep in PASS_SLEEPS {
        let f = Fake::start().await;
        let (lb, ports, t) =
            converged_service(&f, &[("tcp/http", 80, 30080), ("tcp/https", 443, 30443)], 3).await;
        // Pass: listener DELETE (applied T+10), 0.5 s, 5 s, POST on 8080 (applied T+20).
        f.ccm_delete(&format!("/load-balancers/listeners/{}", ports[0].listener))
            .await;
        f.ccm_pause();
        f.create_listener(
            &ports[0].pool,
            "tcp/http",
            "tcp",
            8080,
            ccm_listener_extra(),
        )
        .await;
        f.ccm_next_pass(&lb, sleep).await; // nothing left to do
        f.advance_to(t + 60.0).await;
        let av = f.availability(&lb, Some(t), None, None).await;
        for vip in [&lb.vip4, &lb.vip6] {
            let old = entry(&av, vip, "tcp", 80);
            let new = entry(&av, vip, "tcp", 8080);
            assert_downs(old, &[(t + 10.0, t + 60.0, NO_LISTENER)]);
            assert_downs(new, &[(t, t + 20.0, NO_LISTENER)]);
            let down = overlap(old, new);
            println!("listener recreation (sleep {sleep}): {down} s without a listener");
            assert_close(down, 10.0, "listener recreation downtime");
            assert!(down > 0.0 && down <= 15.0, "README: at most 15 s");
            assert_downs(entry(&av, vip, "tcp", 443), &[]);
        }
    }
}

#[tokio::test]
async fn ccm_pool_recreation_algorithm_change_with_3_members_is_down_60_to_120s() {
    for sleep in PASS_SLEEPS {
        let f = Fake::start().await;
        let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
        let p = &ports[0];
        // Pass 1 (§5.6 step 7): members one by one, the pool, then POST the new pool.
        for (m, _) in &p.members {
            f.ccm_delete(&member_path(&p.pool, m)).await; // applied T+10, +20, +30
        }
        f.ccm_delete(&format!("/load-balancers/pools/{}", p.pool))
            .await; // T+40
        let pool = f
            .create_pool(&lb, "tcp/http", "tcp", "least_connections")
            .await; // T+50
        // Refetch; passes stop at "await" while the LB is changing.
        f.ccm_next_pass(&lb, sleep).await;
        let pass2 = f.now().await - t;
        // Pass 2 (step 8): members, listener, monitor.
        for (i, address) in WORKERS.iter().take(3).enumerate() {
            f.create_member(
                &pool,
                &format!("worker-{}:30080", i + 1),
                address,
                30080,
                json!({}),
            )
            .await;
        }
        f.create_listener(&pool, "tcp/http", "tcp", 80, ccm_listener_extra())
            .await;
        f.create_monitor(&pool, "tcp", ccm_monitor_extra()).await;
        f.ccm_next_pass(&lb, sleep).await;
        f.advance_to(t + 200.0).await;
        let av = f.availability(&lb, Some(t), None, None).await;
        // Members applied at pass2 + 10/20/30 (no_monitor: they would carry traffic), the
        // listener at pass2 + 40 (traffic again), the monitor at pass2 + 50 (all members
        // changing), up 4 s later.
        let expected_pass2 = if sleep == 7.5 { 54.5 } else { 52.0 };
        assert_close(pass2, expected_pass2, "second pass start");
        for vip in [&lb.vip4, &lb.vip6] {
            let e = entry(&av, vip, "tcp", 80);
            assert_downs(
                e,
                &[
                    (t + 30.0, t + 40.0, NO_MEMBER_UP),
                    (t + 40.0, t + pass2 + 40.0, NO_LISTENER),
                    (t + pass2 + 50.0, t + pass2 + 54.0, NO_MEMBER_UP),
                ],
            );
            let down = downtime(e);
            let span = outage_span(e);
            println!("pool recreation (sleep {sleep}): downtime {down} s, outage span {span} s");
            assert!((60.0..=120.0).contains(&down), "README 60-120 s: {down}");
            assert!((60.0..=120.0).contains(&span), "README 60-120 s: {span}");
        }
    }
}

/// The reference's member replacement (node port 30080 → 30081 on a converged 3-member
/// port): all members DELETEd (0.5 s each; applied T+10, +20, +30), 5 s, all POSTed at T+6.5
/// (applied T+40, +50, +60; the first is up at T+44). With `old_port_closed`, Kubernetes
/// has stopped serving the old node port at T, as kube-proxy does. Returns per pass sleep
/// the port's down intervals and downtime on each VIP.
async fn reference_member_replacement(old_port_closed: bool) -> Vec<(f64, Value)> {
    let mut out = Vec::new();
    for sleep in PASS_SLEEPS {
        let f = Fake::start().await;
        let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
        let p = &ports[0];
        if old_port_closed {
            for (_, address) in &p.members {
                f.declare(json!({"address": address, "port": 30080, "tcp": false, "udp": false}))
                    .await;
            }
        }
        for (m, _) in &p.members {
            f.ccm_delete(&member_path(&p.pool, m)).await;
        }
        f.ccm_pause();
        for (i, (_, address)) in p.members.iter().enumerate() {
            f.create_member(
                &p.pool,
                &format!("worker-{}:30081", i + 1),
                address,
                30081,
                json!({}),
            )
            .await;
        }
        f.ccm_next_pass(&lb, sleep).await;
        f.advance_to(t + 100.0).await;
        let av = f.availability(&lb, Some(t), None, None).await;
        for vip in [&lb.vip4, &lb.vip6] {
            out.push((t, entry(&av, vip, "tcp", 80).clone()));
        }
    }
    out
}

#[tokio::test]
async fn ccm_member_replacement_node_port_change_is_down_more_than_5s() {
    for (t, e) in reference_member_replacement(false).await {
        assert_downs(&e, &[(t + 30.0, t + 44.0, NO_MEMBER_UP)]);
        let down = downtime(&e);
        println!("member replacement: downtime {down} s");
        assert!(down > 5.0, "at least 5 s + creation + up threshold: {down}");
    }
}

#[tokio::test]
async fn ccm_member_replacement_after_kubernetes_closed_the_old_node_port_is_down_44s() {
    // What a node port change really costs: Kubernetes stops serving the old node port at
    // once (kube-proxy), so the port is down from the change until a new member is up.
    for (_, e) in reference_member_replacement(true).await {
        let down = downtime(&e);
        println!("member replacement, old node port closed: {down} s");
        assert_close(down, 44.0, "down until the first new member is up");
    }
}

#[tokio::test]
async fn make_before_break_member_switch_costs_nothing() {
    for sleep in PASS_SLEEPS {
        let f = Fake::start().await;
        let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
        let p = &ports[0];
        // New members first, wait until every one is up, only then delete the old ones.
        let mut new = Vec::new();
        for (i, (_, address)) in p.members.iter().enumerate() {
            new.push(
                f.create_member(
                    &p.pool,
                    &format!("worker-{}:30081", i + 1),
                    address,
                    30081,
                    json!({}),
                )
                .await,
            );
        }
        loop {
            f.advance(sleep);
            let mut all_up = true;
            for m in &new {
                all_up &= f.member_status(&p.pool, m).await == "up";
            }
            if all_up {
                break;
            }
        }
        for (m, _) in &p.members {
            f.ccm_delete(&member_path(&p.pool, m)).await;
        }
        f.ccm_next_pass(&lb, sleep).await;
        f.advance_to(t + 150.0).await;
        let av = f.availability(&lb, Some(t), None, None).await;
        for vip in [&lb.vip4, &lb.vip6] {
            let e = entry(&av, vip, "tcp", 80);
            println!(
                "make-before-break (sleep {sleep}): downtime {} s",
                downtime(e)
            );
            assert_downs(e, &[]);
        }
    }
}

#[tokio::test]
async fn ccm_node_added_and_removed_cost_remaining_members_nothing() {
    for sleep in PASS_SLEEPS {
        let f = Fake::start().await;
        let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
        let p = &ports[0];
        // Node added: one POST.
        let m4 = f
            .create_member(&p.pool, "worker-4:30080", W4, 30080, json!({}))
            .await;
        f.ccm_next_pass(&lb, sleep).await;
        f.advance_to(t + 30.0).await;
        assert_eq!(f.member_status(&p.pool, &m4).await, "up");
        // Node removed: one DELETE.
        f.ccm_delete(&member_path(&p.pool, &p.members[0].0)).await;
        f.ccm_next_pass(&lb, sleep).await;
        f.advance_to(t + 60.0).await;
        // Node replaced in one pass: DELETE, 5 s, POST.
        f.ccm_delete(&member_path(&p.pool, &p.members[1].0)).await;
        f.ccm_pause();
        f.create_member(&p.pool, "worker-1:30080", W1, 30080, json!({}))
            .await;
        f.ccm_next_pass(&lb, sleep).await;
        f.advance_to(t + 120.0).await;
        for (m, _) in &p.members[2..] {
            assert_eq!(f.member_status(&p.pool, m).await, "up");
        }
        let av = f.availability(&lb, Some(t), None, None).await;
        for vip in [&lb.vip4, &lb.vip6] {
            let e = entry(&av, vip, "tcp", 80);
            println!(
                "node added/removed (sleep {sleep}): downtime {} s",
                downtime(e)
            );
            assert_downs(e, &[]);
        }
    }
}

#[tokio::test]
async fn ccm_allowed_cidrs_change_refuses_only_other_clients() {
    let f = Fake::start().await;
    let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
    f.patch(
        &format!("/load-balancers/listeners/{}", ports[0].listener),
        json!({"allowed_cidrs": ["10.0.0.0/8"]}),
    )
    .await; // applied T+10
    f.advance_to(t + 60.0).await;
    let allowed = f
        .availability(&lb, Some(t), None, Some("10.20.30.40"))
        .await;
    let other = f.availability(&lb, Some(t), None, None).await;
    for vip in [&lb.vip4, &lb.vip6] {
        let e = entry(&allowed, vip, "tcp", 80);
        println!("allowed CIDRs, allowed client: downtime {} s", downtime(e));
        assert_downs(e, &[]);
        let e = entry(&other, vip, "tcp", 80);
        println!("allowed CIDRs, other client: downtime {} s", downtime(e));
        assert_downs(e, &[(t + 10.0, t + 60.0, NOT_ALLOWED)]);
    }
}

/// Names and tags are applied at once: a running load balancer renamed and retagged reads
/// `running` right after (cloudscale's own client tests assert this against the real API),
/// and so do its pool, listener, monitor and member relabelled; what changes the traffic
/// queues one reconfiguration (fakecloud/MODEL.md, "Which writes reconfigure").
#[tokio::test]
async fn renames_and_retags_apply_at_once_and_traffic_changes_queue() {
    let f = Fake::start().await;
    let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
    assert_eq!(f.lb_status(&lb).await, "running");
    let before = operations(&f.timeline(&lb).await).len();
    let relabels = [
        (
            format!("/load-balancers/{}", lb.uuid),
            json!({"name": "renamed"}),
        ),
        (
            format!("/load-balancers/{}", lb.uuid),
            json!({"tags": {"team": "web"}}),
        ),
        (
            format!("/load-balancers/pools/{}", ports[0].pool),
            json!({"name": "p", "tags": {"a": "b"}}),
        ),
        (
            format!("/load-balancers/listeners/{}", ports[0].listener),
            json!({"name": "l", "tags": {}}),
        ),
        (
            format!("/load-balancers/health-monitors/{}", ports[0].monitor),
            json!({"tags": {"x": "y"}}),
        ),
        (
            member_path(&ports[0].pool, &ports[0].members[0].0),
            json!({"name": "m", "tags": {}}),
        ),
    ];
    for (path, body) in &relabels {
        f.patch(path, body.clone()).await;
        assert_eq!(
            f.lb_status(&lb).await,
            "running",
            "after PATCH {path} {body}"
        );
    }
    assert_eq!(
        operations(&f.timeline(&lb).await).len(),
        before,
        "nothing queued"
    );
    assert_eq!(
        f.get(&format!("/load-balancers/{}", lb.uuid)).await["tags"],
        json!({"team": "web"})
    );
    // Each of these reconfigures: queued, `changing` until applied.
    let reconfigures = [
        (
            format!("/load-balancers/listeners/{}", ports[0].listener),
            json!({"allowed_cidrs": ["10.0.0.0/8"]}),
        ),
        (
            format!("/load-balancers/health-monitors/{}", ports[0].monitor),
            json!({"delay_s": 3}),
        ),
        (
            member_path(&ports[0].pool, &ports[0].members[0].0),
            json!({"enabled": true}),
        ),
        // Both kinds in one PATCH: it reconfigures.
        (
            format!("/load-balancers/listeners/{}", ports[0].listener),
            json!({"name": "l2", "timeout_client_data_ms": 40000}),
        ),
    ];
    for (i, (path, body)) in reconfigures.iter().enumerate() {
        f.patch(path, body.clone()).await;
        assert_eq!(
            f.lb_status(&lb).await,
            "changing",
            "after PATCH {path} {body}"
        );
        assert_eq!(operations(&f.timeline(&lb).await).len(), before + i + 1);
    }
    f.advance_to(t + 60.0).await;
    assert_eq!(f.lb_status(&lb).await, "running");
}

#[tokio::test]
async fn ccm_timeouts_and_lb_rename_cost_nothing() {
    let f = Fake::start().await;
    let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
    let path = format!("/load-balancers/listeners/{}", ports[0].listener);
    // One PATCH per changed key, no pauses (§5.6 step 9), then a rename.
    f.patch(&path, json!({"timeout_client_data_ms": 60000}))
        .await;
    f.patch(&path, json!({"timeout_member_connect_ms": 4000}))
        .await;
    f.patch(&path, json!({"timeout_member_data_ms": 60000}))
        .await;
    f.patch(
        &format!("/load-balancers/{}", lb.uuid),
        json!({"name": "svc-renamed"}),
    )
    .await;
    f.advance_to(t + 60.0).await;
    // Three reconfigurations; the rename is applied at once and queues nothing.
    let ops = operations(&f.timeline(&lb).await);
    let tail: Vec<(f64, f64)> = ops[ops.len() - 3..].iter().map(|o| (o.0, o.1)).collect();
    assert_eq!(tail, vec![(t, t + 10.0), (t, t + 20.0), (t, t + 30.0)]);
    assert!(
        ops.iter().all(|o| !o.2.starts_with("update load balancer")),
        "{ops:?}"
    );
    assert_eq!(f.timeline(&lb).await["name"], "svc-renamed");
    let av = f.availability(&lb, Some(t), None, None).await;
    for vip in [&lb.vip4, &lb.vip6] {
        let e = entry(&av, vip, "tcp", 80);
        println!("timeouts + rename: downtime {} s", downtime(e));
        assert_downs(e, &[]);
    }
}

#[tokio::test]
async fn ccm_floating_ip_added_is_down_on_that_address_only_until_propagated() {
    let f = Fake::start().await;
    let (lb, _ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
    // The user's floating IP, on a server until the Service claims it.
    let fip = f
        .post(
            "/floating-ips",
            json!({"ip_version": 4, "server": f.server("worker-1")}),
        )
        .await;
    let addr = fip["network"]
        .as_str()
        .expect("network")
        .split('/')
        .next()
        .expect("address")
        .to_string();
    f.patch(
        &format!("/floating-ips/{addr}"),
        json!({"load_balancer": lb.uuid}),
    )
    .await;
    f.advance_to(t + 60.0).await;
    let av = f.availability(&lb, Some(t), None, None).await;
    let e = entry(&av, &addr, "tcp", 80);
    assert_eq!(e["kind"], "floating_ip");
    println!(
        "floating IP added: downtime {} s on the floating IP",
        downtime(e)
    );
    assert_downs(e, &[(t, t + 10.0, FIP_NOT_PROPAGATED)]);
    for vip in [&lb.vip4, &lb.vip6] {
        assert_downs(entry(&av, vip, "tcp", 80), &[]);
    }
}

#[tokio::test]
async fn ccm_monitor_field_patches_cost_nothing() {
    let f = Fake::start().await;
    let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
    let path = format!("/load-balancers/health-monitors/{}", ports[0].monitor);
    for body in [
        json!({"delay_s": 3}),
        json!({"timeout_s": 2}),
        json!({"up_threshold": 3}),
        json!({"down_threshold": 4}),
    ] {
        f.patch(&path, body).await;
    }
    f.advance_to(t + 80.0).await;
    for (m, _) in &ports[0].members {
        assert_eq!(f.member_status(&ports[0].pool, m).await, "up");
    }
    let av = f.availability(&lb, Some(t), None, None).await;
    for vip in [&lb.vip4, &lb.vip6] {
        let e = entry(&av, vip, "tcp", 80);
        println!("monitor field PATCHes: downtime {} s", downtime(e));
        assert_downs(e, &[]);
    }
}

#[tokio::test]
async fn ccm_monitor_type_change_is_brief() {
    let f = Fake::start().await;
    let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 3).await;
    // Monitor DELETE (applied T+10: members no_monitor, still serving), 0.5 + 5 s, POST
    // (applied T+20: every member changing), up at T+24.
    f.ccm_delete(&format!(
        "/load-balancers/health-monitors/{}",
        ports[0].monitor
    ))
    .await;
    f.ccm_pause();
    f.create_monitor(
        &ports[0].pool,
        "http",
        json!({"delay_s": 2, "timeout_s": 1, "up_threshold": 2, "down_threshold": 3,
               "http": {"method": "GET", "url_path": "/healthz", "version": "1.1",
                        "expected_codes": ["200"]}}),
    )
    .await;
    f.advance_to(t + 60.0).await;
    let av = f.availability(&lb, Some(t), None, None).await;
    for vip in [&lb.vip4, &lb.vip6] {
        let e = entry(&av, vip, "tcp", 80);
        println!("monitor type change: downtime {} s", downtime(e));
        assert_downs(e, &[(t + 20.0, t + 24.0, NO_MEMBER_UP)]);
    }
}

// =========================================================================================
// Determinism
// =========================================================================================

/// LB + pool + members + listener + monitor, a listener recreation and a server stop; returns
/// the timeline's operations and the availability entries (neither carries a UUID).
async fn determinism_scenario() -> (Value, Value) {
    let f = Fake::start().await;
    let (lb, ports, t) = converged_service(&f, &[("tcp/http", 80, 30080)], 2).await;
    f.ccm_delete(&format!("/load-balancers/listeners/{}", ports[0].listener))
        .await;
    f.ccm_pause();
    f.create_listener(
        &ports[0].pool,
        "tcp/http",
        "tcp",
        8080,
        ccm_listener_extra(),
    )
    .await;
    f.ccm_next_pass(&lb, 7.5).await;
    f.advance_to(t + 41.0).await;
    f.server_action(&f.server("worker-1"), "stop").await;
    f.advance_to(t + 100.0).await;
    let tl = f.timeline(&lb).await;
    let av = f.availability(&lb, None, None, None).await;
    (tl["operations"].clone(), av["entries"].clone())
}

#[tokio::test]
async fn determinism_two_runs_give_identical_timelines_and_availability() {
    let (ops_a, entries_a) = determinism_scenario().await;
    let (ops_b, entries_b) = determinism_scenario().await;
    assert!(ops_a.as_array().is_some_and(|o| o.len() >= 8), "{ops_a}");
    assert!(
        entries_a
            .as_array()
            .is_some_and(|e| e.len() == 4 && e.iter().any(|x| downtime(x) > 0.0)),
        "{entries_a}"
    );
    assert_eq!(ops_a, ops_b);
    assert_eq!(entries_a, entries_b);
}
