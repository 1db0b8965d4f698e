//! The admin API under `/_fake/` (fakecloud/README.md, "Admin API"), exercised in-process
//! over real HTTP. Every test starts its own fake with `Config::for_tests()` (manual clock).

use fakecloud::{Config, FakeCloud};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const TOKEN: &str = "test-token";

/// A thin HTTP client for one fake: `/v1` calls carry the token, `/_fake` calls none.
struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn start() -> (FakeCloud, Client) {
        Self::start_with(Config::for_tests()).await
    }

    async fn start_with(config: Config) -> (FakeCloud, Client) {
        let fc = FakeCloud::start(config).await.expect("start fakecloud");
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("build reqwest client");
        let client = Client {
            http,
            base: fc.base_url(),
        };
        (fc, client)
    }

    /// Sends a request to `base + path`; the body is parsed as JSON (`Null` when empty,
    /// a JSON string holding the text when it is not JSON).
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<String>,
    ) -> (StatusCode, Value) {
        let url = format!("{}{}", self.base, path);
        let mut rb = self.http.request(method.clone(), &url);
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        if let Some(b) = body {
            rb = rb.header("content-type", "application/json").body(b);
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

    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let body = body.map(|b| b.to_string());
        self.send(method, &format!("/_fake{path}"), None, body)
            .await
    }

    async fn admin_raw(&self, method: Method, path: &str, body: &str) -> (StatusCode, Value) {
        self.send(
            method,
            &format!("/_fake{path}"),
            None,
            Some(body.to_string()),
        )
        .await
    }

    async fn api(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let body = body.map(|b| b.to_string());
        self.send(method, &format!("/v1{path}"), Some(TOKEN), body)
            .await
    }

    async fn get(&self, path: &str) -> Value {
        let (st, v) = self.api(Method::GET, path, None).await;
        assert_eq!(st, StatusCode::OK, "GET /v1{path}: {v}");
        v
    }

    async fn list(&self, path: &str) -> Vec<Value> {
        let v = self.get(path).await;
        v.as_array()
            .unwrap_or_else(|| panic!("GET /v1{path} is not an array: {v}"))
            .clone()
    }

    async fn seed(&self, doc: Value) -> Value {
        let (st, v) = self.admin(Method::POST, "/seed", Some(doc)).await;
        assert_eq!(st, StatusCode::CREATED, "POST /_fake/seed: {v}");
        v
    }

    async fn clock_now(&self) -> chrono::DateTime<chrono::FixedOffset> {
        let (st, v) = self.admin(Method::GET, "/clock", None).await;
        assert_eq!(st, StatusCode::OK, "GET /_fake/clock: {v}");
        let now = v["now"]
            .as_str()
            .unwrap_or_else(|| panic!("clock has no `now` string: {v}"));
        chrono::DateTime::parse_from_rfc3339(now).expect("`now` is RFC 3339")
    }
}

/// All address strings of the server's interfaces of the given type.
fn addresses(server: &Value, kind: &str) -> Vec<String> {
    server["interfaces"]
        .as_array()
        .unwrap_or_else(|| panic!("no interfaces: {server}"))
        .iter()
        .filter(|i| i["type"] == kind)
        .flat_map(|i| i["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["address"].as_str().map(str::to_string))
        .collect()
}

/// A 400 body must be a flat object of strings; returns its values joined.
fn flat_error_text(v: &Value) -> String {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("error body is not an object: {v}"));
    assert!(!obj.is_empty(), "error body is empty");
    for (k, val) in obj {
        assert!(val.is_string(), "error field {k} is not a string: {v}");
    }
    obj.iter()
        .map(|(k, val)| format!("{k}: {}", val.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("; ")
}

fn private_network_seed() -> Value {
    json!({"networks": [{
        "name": "priv",
        "zone": "rma1",
        "subnets": [{"cidr": "10.20.0.0/24", "gateway_address": "10.20.0.1"}]
    }]})
}

fn sample_seed() -> Value {
    json!({
        "networks": [
            {"name": "net-a", "zone": "rma1",
             "subnets": [{"cidr": "10.1.0.0/24"}, {"cidr": "10.2.0.0/24"}]},
            {"name": "net-b", "zone": "lpg1"}
        ],
        "servers": [
            {"name": "web-1", "zone": "rma1", "public_ipv4": "185.98.120.77",
             "private": [{"network": "net-a", "address": "10.1.0.5"}]},
            {"name": "web-2", "zone": "rma1", "status": "stopped",
             "private": [{"network": "net-a"}]}
        ],
        "floating_ips": [
            {"ip_version": 4, "server": "web-1"},
            {"ip_version": 6, "type": "global"}
        ]
    })
}

#[tokio::test]
async fn admin_create_server_returns_running_server_equal_to_get() {
    let (_fc, c) = Client::start().await;
    c.seed(private_network_seed()).await;
    let (st, created) = c
        .admin(
            Method::POST,
            "/servers",
            Some(json!({
                "name": "node-1",
                "flavor": "flex-8-4",
                "zone": "rma1",
                "public_ipv4": "185.98.120.42",
                "private": [{"network": "priv", "address": "10.20.0.42"}]
            })),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{created}");
    let uuid = created["uuid"].as_str().expect("uuid").to_string();
    let fetched = c.get(&format!("/servers/{uuid}")).await;
    assert_eq!(
        created, fetched,
        "admin create body equals GET /v1/servers/{{uuid}}"
    );
    assert_eq!(created["status"], "running");
    assert_eq!(created["name"], "node-1");
    assert_eq!(created["flavor"]["slug"], "flex-8-4");
    assert_eq!(created["zone"]["slug"], "rma1");
    assert!(
        addresses(&created, "public").contains(&"185.98.120.42".to_string()),
        "public addresses: {created}"
    );
    assert_eq!(
        addresses(&created, "private"),
        vec!["10.20.0.42".to_string()]
    );
}

#[tokio::test]
async fn admin_create_server_with_status_stopped() {
    let (_fc, c) = Client::start().await;
    let (st, created) = c
        .admin(
            Method::POST,
            "/servers",
            Some(json!({"name": "off", "status": "stopped"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{created}");
    assert_eq!(created["status"], "stopped");
    let uuid = created["uuid"].as_str().expect("uuid");
    assert_eq!(
        c.get(&format!("/servers/{uuid}")).await["status"],
        "stopped"
    );
}

#[tokio::test]
async fn admin_create_server_rejects_bad_input_and_creates_nothing() {
    let (_fc, c) = Client::start().await;
    c.seed(private_network_seed()).await;
    let cases = [
        (json!({"name": "x", "flavor": "flex-999-1"}), "flex-999-1"),
        (
            json!({"name": "x", "private": [{"network": "no-such-net"}]}),
            "no-such-net",
        ),
        (json!({"name": "x", "flavour": "flex-4-2"}), "flavour"),
    ];
    for (body, needle) in cases {
        let (st, v) = c.admin(Method::POST, "/servers", Some(body.clone())).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{body} -> {v}");
        let text = flat_error_text(&v);
        assert!(
            text.contains(needle),
            "error for {body} names {needle}: {text}"
        );
    }
    assert!(c.list("/servers").await.is_empty(), "nothing was created");
}

#[tokio::test]
async fn seed_loads_everything_and_reports_counts() {
    let (_fc, c) = Client::start().await;
    let counts = c.seed(sample_seed()).await;
    assert_eq!(
        counts,
        json!({"networks": 2, "subnets": 3, "servers": 2, "floating_ips": 2})
    );

    let networks = c.list("/networks").await;
    let mut names: Vec<&str> = networks.iter().filter_map(|n| n["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["net-a", "net-b"]);

    let subnets = c.list("/subnets").await;
    let mut cidrs: Vec<&str> = subnets.iter().filter_map(|s| s["cidr"].as_str()).collect();
    cidrs.sort_unstable();
    assert_eq!(cidrs, ["10.1.0.0/24", "10.2.0.0/24", "172.16.0.0/24"]);

    let servers = c.list("/servers").await;
    assert_eq!(servers.len(), 2);
    let web1 = servers
        .iter()
        .find(|s| s["name"] == "web-1")
        .expect("web-1 listed");
    let web2 = servers
        .iter()
        .find(|s| s["name"] == "web-2")
        .expect("web-2 listed");
    assert_eq!(web1["status"], "running");
    assert_eq!(web2["status"], "stopped");
    assert_eq!(addresses(web1, "private"), ["10.1.0.5"]);
    let web2_private = addresses(web2, "private");
    assert_eq!(web2_private.len(), 1, "{web2}");
    assert!(
        web2_private[0].starts_with("10.1.0."),
        "picked from net-a's first subnet: {web2_private:?}"
    );

    let fips = c.list("/floating-ips").await;
    assert_eq!(fips.len(), 2, "{fips:?}");
    let v4 = fips
        .iter()
        .find(|f| f["ip_version"] == 4)
        .expect("IPv4 floating IP");
    assert_eq!(v4["server"]["uuid"], web1["uuid"], "{v4}");
    assert_eq!(v4["next_hop"], "185.98.120.77", "next_hop is web-1's IPv4");
    let v6 = fips
        .iter()
        .find(|f| f["ip_version"] == 6)
        .expect("IPv6 floating IP");
    assert_eq!(v6["type"], "global", "{v6}");
}

#[tokio::test]
async fn seed_with_one_bad_entry_loads_nothing() {
    let (_fc, c) = Client::start().await;
    let mut doc = sample_seed();
    doc["floating_ips"]
        .as_array_mut()
        .expect("array")
        .push(json!({"server": "no-such-server"}));
    let (st, v) = c.admin(Method::POST, "/seed", Some(doc)).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    let text = flat_error_text(&v);
    assert!(text.contains("no-such-server"), "{text}");
    for coll in ["/networks", "/subnets", "/servers", "/floating-ips"] {
        assert!(c.list(coll).await.is_empty(), "{coll} stays empty");
    }
}

#[tokio::test]
async fn reset_drops_resources_log_and_counters() {
    let (_fc, c) = Client::start().await;
    c.seed(sample_seed()).await;
    let (st, lb) = c
        .api(
            Method::POST,
            "/load-balancers",
            Some(json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{lb}");
    c.list("/servers").await;

    let (st, body) = c.admin(Method::POST, "/reset", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(body, Value::Null, "204 has no body");

    let (_, log) = c.admin(Method::GET, "/requests", None).await;
    assert_eq!(log, json!([]), "request log empty after reset");
    let (_, counters) = c.admin(Method::GET, "/counters", None).await;
    assert_eq!(counters, json!({}), "counters empty after reset");

    for coll in [
        "/servers",
        "/networks",
        "/subnets",
        "/floating-ips",
        "/load-balancers",
        "/server-groups",
    ] {
        assert!(c.list(coll).await.is_empty(), "{coll} empty after reset");
    }
}

#[tokio::test]
async fn request_log_records_v1_calls_but_not_admin_calls() {
    let (_fc, c) = Client::start().await;
    c.list("/servers").await;
    let missing = "/v1/servers/00000000-0000-4000-8000-000000000000";
    let (st, _) = c.send(Method::GET, missing, Some(TOKEN), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = c.send(Method::GET, "/v1/networks", None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    c.admin(Method::GET, "/clock", None).await;
    c.admin(Method::GET, "/counters", None).await;

    let (st, log) = c.admin(Method::GET, "/requests", None).await;
    assert_eq!(st, StatusCode::OK);
    let entries = log
        .as_array()
        .unwrap_or_else(|| panic!("log is an array: {log}"));
    let summary: Vec<(String, String, u64)> = entries
        .iter()
        .map(|e| {
            assert!(
                e["duration_ms"].as_f64().is_some_and(|d| d >= 0.0),
                "duration_ms is a non-negative number: {e}"
            );
            (
                e["method"].as_str().expect("method").to_string(),
                e["path"].as_str().expect("path").to_string(),
                e["status"].as_u64().expect("status"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("GET".to_string(), "/v1/servers".to_string(), 200),
            ("GET".to_string(), missing.to_string(), 404),
            ("GET".to_string(), "/v1/networks".to_string(), 401),
        ],
        "only /v1 calls are logged, in order: {log}"
    );

    let (st, _) = c.admin(Method::DELETE, "/requests", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (_, log) = c.admin(Method::GET, "/requests", None).await;
    assert_eq!(log, json!([]), "log cleared");
}

#[tokio::test]
async fn counters_count_requests_per_route_template() {
    let (_fc, c) = Client::start().await;
    let (st, created) = c
        .admin(Method::POST, "/servers", Some(json!({"name": "s"})))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{created}");
    let uuid = created["uuid"].as_str().expect("uuid");
    for _ in 0..3 {
        c.list("/servers").await;
    }
    for _ in 0..2 {
        c.get(&format!("/servers/{uuid}")).await;
    }
    let (st, _) = c
        .api(
            Method::GET,
            "/servers/00000000-0000-4000-8000-000000000000",
            None,
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    c.list("/networks").await;

    let (st, counters) = c.admin(Method::GET, "/counters", None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        counters,
        json!({
            "GET /v1/servers": 3,
            "GET /v1/servers/{uuid}": 3,
            "GET /v1/networks": 1
        })
    );

    let (st, _) = c.admin(Method::DELETE, "/requests", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    let (_, counters) = c.admin(Method::GET, "/counters", None).await;
    assert_eq!(
        counters,
        json!({}),
        "DELETE /_fake/requests clears the counters"
    );
}

#[tokio::test]
async fn clock_advance_moves_now_by_exactly_the_given_seconds() {
    let (_fc, c) = Client::start().await;
    let (st, clock) = c.admin(Method::GET, "/clock", None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(clock["mode"]["manual"], true, "{clock}");
    let before = c.clock_now().await;
    assert_eq!(c.clock_now().await, before, "a manual clock stands still");

    let (st, v) = c
        .admin(Method::POST, "/clock/advance", Some(json!({"seconds": 30})))
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let after = c.clock_now().await;
    assert_eq!(after - before, chrono::TimeDelta::seconds(30));
    let reported =
        chrono::DateTime::parse_from_rfc3339(v["now"].as_str().expect("now")).expect("RFC 3339");
    assert_eq!(reported, after, "advance answers the new time");
}

#[tokio::test]
async fn clock_advance_rejects_negative_and_non_numbers() {
    let (_fc, c) = Client::start().await;
    let before = c.clock_now().await;
    for body in [
        r#"{"seconds": -5}"#,
        r#"{"seconds": "30"}"#,
        r#"{"seconds": null}"#,
        r#"{}"#,
        r#"not json"#,
    ] {
        let (st, v) = c.admin_raw(Method::POST, "/clock/advance", body).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{body} -> {v}");
        flat_error_text(&v);
    }
    assert_eq!(
        c.clock_now().await,
        before,
        "rejected advances change nothing"
    );
}

#[tokio::test]
async fn load_balancer_turns_running_only_after_its_provisioning_delay() {
    let (_fc, c) = Client::start().await;
    let (st, lb) = c
        .api(
            Method::POST,
            "/load-balancers",
            Some(json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{lb}");
    assert_eq!(lb["status"], "changing");
    let path = format!("/load-balancers/{}", lb["uuid"].as_str().expect("uuid"));

    let advance = |s: f64| {
        let c = &c;
        async move {
            let (st, v) = c
                .admin(Method::POST, "/clock/advance", Some(json!({"seconds": s})))
                .await;
            assert_eq!(st, StatusCode::OK, "{v}");
        }
    };
    advance(29.0).await;
    assert_eq!(
        c.get(&path).await["status"],
        "changing",
        "29 s < 30 s delay"
    );
    advance(2.0).await;
    assert_eq!(c.get(&path).await["status"], "running", "31 s > 30 s delay");
}

const STATE_COLLECTIONS: [&str; 5] = [
    "/servers",
    "/networks",
    "/subnets",
    "/floating-ips",
    "/load-balancers",
];

/// Seeds, creates a load balancer, then GET /_fake/state, POST /_fake/reset and
/// PUT /_fake/state; returns the lists of `STATE_COLLECTIONS` before and after.
async fn dump_reset_restore(c: &Client) -> (Vec<Value>, Vec<Value>) {
    c.seed(sample_seed()).await;
    for name in ["lb-1", "lb-2", "lb-3"] {
        let (st, lb) = c
            .api(
                Method::POST,
                "/load-balancers",
                Some(json!({"name": name, "flavor": "lb-standard", "zone": "rma1"})),
            )
            .await;
        assert_eq!(st, StatusCode::CREATED, "{lb}");
    }
    let mut before = Vec::new();
    for coll in STATE_COLLECTIONS {
        before.push(c.get(coll).await);
    }

    let (st, dump) = c.admin(Method::GET, "/state", None).await;
    assert_eq!(st, StatusCode::OK);
    assert!(dump.is_object(), "state dump is a JSON object: {dump}");
    let (st, _) = c.admin(Method::POST, "/reset", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    for coll in STATE_COLLECTIONS {
        assert!(c.list(coll).await.is_empty(), "{coll} empty after reset");
    }

    let (st, v) = c.admin(Method::PUT, "/state", Some(dump)).await;
    assert_eq!(st, StatusCode::NO_CONTENT, "{v}");
    let mut after = Vec::new();
    for coll in STATE_COLLECTIONS {
        after.push(c.get(coll).await);
    }
    (before, after)
}

#[tokio::test]
async fn state_dump_and_restore_round_trips_v1_resources() {
    let (_fc, c) = Client::start().await;
    let (before, after) = dump_reset_restore(&c).await;
    for ((coll, want), got) in STATE_COLLECTIONS.iter().zip(&before).zip(&after) {
        assert!(
            want.as_array().is_some_and(|l| !l.is_empty()),
            "{coll} has resources"
        );
        assert_eq!(got, want, "{coll} restored, in creation order");
    }
}

#[tokio::test]
async fn admin_endpoints_need_no_token_but_v1_does() {
    let (_fc, c) = Client::start().await;
    for path in [
        "/_fake/clock",
        "/_fake/requests",
        "/_fake/counters",
        "/_fake/state",
    ] {
        let (st, v) = c.send(Method::GET, path, None, None).await;
        assert_eq!(st, StatusCode::OK, "GET {path} without a token: {v}");
    }
    let (st, v) = c
        .send(
            Method::POST,
            "/_fake/servers",
            None,
            Some(json!({"name": "s"}).to_string()),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");

    let (st, v) = c.send(Method::GET, "/v1/servers", None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "{v}");
    let (st, v) = c
        .send(Method::GET, "/v1/servers", Some("wrong-token"), None)
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "{v}");
    let (st, v) = c.send(Method::GET, "/v1/servers", Some(TOKEN), None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v.as_array().map(Vec::len), Some(1));
}

// ---- API rules (`/_fake/rules`) -----------------------------------------------------------

/// A load balancer with one pool and one member 10.20.0.11 port 80; returns the members path
/// and the subnet UUID.
async fn pool_with_member(c: &Client) -> (String, String) {
    c.seed(private_network_seed()).await;
    let subnet = c.list("/subnets").await[0]["uuid"]
        .as_str()
        .expect("subnet uuid")
        .to_string();
    let (st, lb) = c
        .api(
            Method::POST,
            "/load-balancers",
            Some(json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1"})),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{lb}");
    let (st, pool) = c
        .api(
            Method::POST,
            "/load-balancers/pools",
            Some(
                json!({"name": "p", "algorithm": "round_robin", "protocol": "tcp",
                        "load_balancer": lb["uuid"]}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{pool}");
    let members = format!(
        "/load-balancers/pools/{}/members",
        pool["uuid"].as_str().expect("pool uuid")
    );
    assert_eq!(
        add_twin(c, &members, &subnet, 8000).await,
        StatusCode::CREATED
    );
    (members, subnet)
}

/// Posts a member 10.20.0.11 port 80 (the same as the pool's first) with `monitor_port`.
async fn add_twin(c: &Client, members: &str, subnet: &str, monitor_port: u16) -> StatusCode {
    let body = json!({"name": format!("m-{monitor_port}"), "address": "10.20.0.11",
                      "protocol_port": 80, "monitor_port": monitor_port, "subnet": subnet});
    let (st, v) = c.api(Method::POST, members, Some(body)).await;
    if st == StatusCode::BAD_REQUEST {
        assert!(v.get("address").is_some(), "refused under `address`: {v}");
    }
    st
}

async fn rules(c: &Client) -> Value {
    let (st, v) = c.admin(Method::GET, "/rules", None).await;
    assert_eq!(st, StatusCode::OK, "GET /_fake/rules: {v}");
    v
}

#[tokio::test]
async fn rules_default_to_strict() {
    let (fc, c) = Client::start().await;
    assert_eq!(
        rules(&c).await,
        json!({"duplicate_members": "strict", "non_http_monitor_http": "strict"})
    );
    assert_eq!(fc.rules(), fakecloud::ApiRules::default());
}

#[tokio::test]
async fn rules_patch_switches_duplicate_members_at_run_time() {
    let (fc, c) = Client::start().await;
    let (members, subnet) = pool_with_member(&c).await;
    assert_eq!(
        add_twin(&c, &members, &subnet, 8001).await,
        StatusCode::BAD_REQUEST,
        "strict by default"
    );

    let (st, v) = c
        .admin(
            Method::PATCH,
            "/rules",
            Some(json!({"duplicate_members": "lenient"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"duplicate_members": "lenient", "non_http_monitor_http": "strict"}),
        "the answer is the rules in force"
    );
    assert_eq!(
        fc.rules().duplicate_members,
        fakecloud::Strictness::Lenient,
        "in-process view agrees"
    );
    assert_eq!(
        add_twin(&c, &members, &subnet, 8002).await,
        StatusCode::CREATED
    );

    let (st, v) = c
        .admin(
            Method::PATCH,
            "/rules",
            Some(json!({"duplicate_members": "strict"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        add_twin(&c, &members, &subnet, 8003).await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        c.list(&members).await.len(),
        2,
        "the first and the lenient twin"
    );
}

#[tokio::test]
async fn rules_patch_keeps_unnamed_rules_and_put_resets_them() {
    let (_fc, c) = Client::start().await;
    let (st, _) = c
        .admin(
            Method::PATCH,
            "/rules",
            Some(json!({"duplicate_members": "lenient"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, v) = c
        .admin(
            Method::PATCH,
            "/rules",
            Some(json!({"non_http_monitor_http": "lenient"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        rules(&c).await,
        json!({"duplicate_members": "lenient", "non_http_monitor_http": "lenient"})
    );
    // PUT names the whole set: what it leaves out is strict.
    let (st, v) = c
        .admin(
            Method::PUT,
            "/rules",
            Some(json!({"non_http_monitor_http": "lenient"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        rules(&c).await,
        json!({"duplicate_members": "strict", "non_http_monitor_http": "lenient"})
    );
}

#[tokio::test]
async fn rules_refuse_unknown_names_and_values_naming_them() {
    let (_fc, c) = Client::start().await;
    for method in [Method::PATCH, Method::PUT] {
        let (st, v) = c
            .admin(
                method.clone(),
                "/rules",
                Some(json!({"duplicate_members": "lenient", "no_such_rule": "lenient"})),
            )
            .await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{method}: {v}");
        assert!(
            v.get("no_such_rule").is_some(),
            "{method} names the key: {v}"
        );
        let (st, v) = c
            .admin(
                method.clone(),
                "/rules",
                Some(json!({"non_http_monitor_http": "sloppy"})),
            )
            .await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{method}: {v}");
        let text = flat_error_text(&v);
        assert!(
            text.contains("non_http_monitor_http") && text.contains("sloppy"),
            "{method} names key and value: {text}"
        );
        let (st, v) = c.admin_raw(method.clone(), "/rules", "[]").await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{method} of a list: {v}");
    }
    assert_eq!(
        rules(&c).await,
        json!({"duplicate_members": "strict", "non_http_monitor_http": "strict"}),
        "a refused change changes nothing"
    );
}

#[tokio::test]
async fn rules_switch_non_http_monitor_http_and_set_rules_in_process() {
    let (fc, c) = Client::start().await;
    let (members, _subnet) = pool_with_member(&c).await;
    let pool = members
        .trim_start_matches("/load-balancers/pools/")
        .trim_end_matches("/members")
        .to_string();
    let monitor = json!({"pool": pool, "type": "ping", "http": {"url_path": "/ready"}});
    let (st, m) = c
        .api(
            Method::POST,
            "/load-balancers/health-monitors",
            Some(monitor.clone()),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{m}");
    assert!(m["http"].is_null(), "strict: ignored: {m}");
    let path = format!(
        "/load-balancers/health-monitors/{}",
        m["uuid"].as_str().expect("uuid")
    );
    let (st, _) = c.api(Method::DELETE, &path, None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);

    fc.set_rules(fakecloud::ApiRules {
        non_http_monitor_http: fakecloud::Strictness::Lenient,
        ..fc.rules()
    });
    assert_eq!(rules(&c).await["non_http_monitor_http"], "lenient");
    let (st, m) = c
        .api(
            Method::POST,
            "/load-balancers/health-monitors",
            Some(monitor),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{m}");
    assert_eq!(m["http"]["url_path"], "/ready", "lenient: kept: {m}");
    assert_eq!(m["http"]["method"], "GET", "over the defaults: {m}");
}

#[tokio::test]
async fn reset_puts_rules_back_to_the_configured_ones() {
    let configured = fakecloud::ApiRules {
        duplicate_members: fakecloud::Strictness::Lenient,
        ..Default::default()
    };
    let (_fc, c) = Client::start_with(Config {
        rules: configured,
        ..Config::for_tests()
    })
    .await;
    assert_eq!(rules(&c).await["duplicate_members"], "lenient");
    let (st, _) = c
        .admin(
            Method::PUT,
            "/rules",
            Some(json!({"non_http_monitor_http": "lenient"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, _) = c.admin(Method::POST, "/reset", None).await;
    assert_eq!(st, StatusCode::NO_CONTENT);
    assert_eq!(
        rules(&c).await,
        json!({"duplicate_members": "lenient", "non_http_monitor_http": "strict"})
    );
}
