//! The browser console (fakecloud/README.md, "Console"): its files are served with the right
//! content types, everything the index loads exists, and the data endpoints answer with the
//! fields the JavaScript reads. The browser itself is driven by `ci/console_browser.py`.
//!
//! What one refresh of each view costs the server is measured by the bench binary
//! `fakecloud-console-bench` (fakecloud/README.md, "Console").

use crate::support;

use fakecloud::console::ASSETS;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use support::{Api, id, running_lb, start};

/// `GET` of an admin path without a token: status, content type, body.
async fn get_raw(api: &Api, path: &str) -> (StatusCode, String, String) {
    let url = format!("{}{path}", api.base);
    let resp = api.http.get(&url).send().await.expect("GET");
    let status = resp.status();
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, ctype, resp.text().await.expect("body"))
}

async fn get_json(api: &Api, path: &str) -> Value {
    let (status, ctype, text) = get_raw(api, path).await;
    assert_eq!(status, StatusCode::OK, "GET {path}: {text}");
    assert!(ctype.starts_with("application/json"), "GET {path}: {ctype}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: {e}: {text}"))
}

/// The value at a `/`-separated path (`members/0/pool/uuid`), which must exist.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let found = v.pointer(&format!("/{path}"));
    found.unwrap_or_else(|| panic!("no {path} in {v}"))
}

/// Asserts that every path exists (the fields a view's JavaScript reads).
fn has(v: &Value, paths: &[&str]) {
    for p in paths {
        at(v, p);
    }
}

/// The sequence numbers of a request-log page's entries, in order.
fn seqs(page: &Value) -> Vec<&Value> {
    page["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| &e["seq"])
        .collect()
}

/// What a file refers to: `src="…"`/`href="…"` under `/_fake/ui/`, and ES module imports
/// (`from './x.js'`).
fn references(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for marker in ["src=\"/_fake/ui/", "href=\"/_fake/ui/", "from './"] {
        for (i, _) in text.match_indices(marker) {
            let rest = &text[i + marker.len()..];
            let end = rest.find(['"', '\'']).unwrap_or(rest.len());
            out.insert(rest[..end].to_string());
        }
    }
    out
}

#[tokio::test]
async fn the_index_is_served_at_ui_with_and_without_slash() {
    let (_fc, api) = start().await;
    for path in ["/_fake/ui", "/_fake/ui/", "/_fake/ui/index.html"] {
        let (status, ctype, text) = get_raw(&api, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(ctype, "text/html; charset=utf-8", "{path}");
        assert!(text.contains("<main id=\"main\""), "{path}: {text}");
    }
    let (status, _, _) = get_raw(&api, "/_fake/ui/nothing.js").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn every_asset_has_its_content_type_and_every_reference_exists() {
    let (_fc, api) = start().await;
    let names: BTreeSet<&str> = ASSETS.iter().map(|a| a.name).collect();
    let mut referenced = BTreeSet::new();
    for a in ASSETS {
        let (status, ctype, text) = get_raw(&api, &format!("/_fake/ui/{}", a.name)).await;
        assert_eq!(status, StatusCode::OK, "{}", a.name);
        let want = match a.name.rsplit('.').next() {
            Some("html") => "text/html; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("js") => "text/javascript; charset=utf-8",
            Some("svg") => "image/svg+xml",
            other => panic!("{}: unexpected extension {other:?}", a.name),
        };
        assert_eq!(ctype, want, "{}", a.name);
        for r in references(&text) {
            assert!(
                names.contains(r.as_str()),
                "{} refers to {r}, not served",
                a.name
            );
            referenced.insert(r);
        }
    }
    // Nothing embedded that nothing loads.
    let unused: Vec<&&str> = names
        .iter()
        .filter(|n| **n != "index.html" && !referenced.contains(**n))
        .collect();
    assert!(unused.is_empty(), "embedded but never loaded: {unused:?}");
    // No third-party origin: the console works offline.
    for a in ASSETS {
        let text = String::from_utf8_lossy(a.body);
        assert!(
            !text.contains("https://"),
            "{} loads from elsewhere",
            a.name
        );
    }
}

/// A load balancer with a pool, two members, a listener and a monitor, all applied.
async fn lb_with_members(fc: &fakecloud::FakeCloud, api: &Api) -> (String, String) {
    let seed = json!({"networks": [{"name": "private", "subnets": [{"cidr": "10.0.0.0/24"}]}],
        "servers": [{"name": "node-1", "private": [{"network": "private", "address": "10.0.0.11"}]},
                    {"name": "node-2", "private": [{"network": "private", "address": "10.0.0.12"}]}]});
    fc.admin(reqwest::Method::POST, "/seed", Some(seed))
        .await
        .expect("seed");
    let subnet = id(&api.list("/subnets").await[0]);
    let lb = running_lb(fc, api, "web").await;
    let pool = api
        .create(
            "/load-balancers/pools",
            json!({"name": "web-pool", "load_balancer": id(&lb), "algorithm": "round_robin", "protocol": "tcp"}),
        )
        .await;
    for a in ["10.0.0.11", "10.0.0.12"] {
        api.create(
            &format!("/load-balancers/pools/{}/members", id(&pool)),
            json!({"name": a, "protocol_port": 30080, "address": a, "subnet": subnet}),
        )
        .await;
    }
    let listener = api
        .create(
            "/load-balancers/listeners",
            json!({"name": "web-80", "pool": id(&pool), "protocol": "tcp", "protocol_port": 80}),
        )
        .await;
    api.create(
        "/load-balancers/health-monitors",
        json!({"pool": id(&pool), "type": "tcp"}),
    )
    .await;
    fc.advance(Duration::from_secs(120));
    (id(&lb), id(&listener))
}

#[tokio::test]
async fn the_account_endpoint_answers_what_the_account_view_reads() {
    let (fc, api) = start().await;
    let (lb, _) = lb_with_members(&fc, &api).await;
    let fip = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "load_balancer": lb}),
        )
        .await;
    let d = get_json(&api, "/_fake/console/account").await;
    has(
        &d,
        &[
            "clock/now",
            "clock/mode/manual",
            "servers/0/uuid",
            "servers/0/name",
            "servers/0/status",
            "servers/0/flavor/slug",
            "servers/0/zone/slug",
            "servers/0/created_at",
            "servers/0/interfaces/0/type",
            "servers/0/interfaces/0/addresses/0/address",
            "servers/0/interfaces/1/network/name",
            "networks/0/uuid",
            "networks/0/name",
            "networks/0/zone/slug",
            "networks/0/mtu",
            "subnets/0/cidr",
            "subnets/0/network/uuid",
            "subnets/0/gateway_address",
            "floating_ips/0/network",
            "floating_ips/0/type",
            "floating_ips/0/region",
            "floating_ips/0/next_hop",
            "floating_ips/0/load_balancer/uuid",
            "floating_ips/0/load_balancer/name",
            "floating_ips/0/created_at",
            "load_balancers/0/uuid",
            "load_balancers/0/name",
            "load_balancers/0/status",
            "load_balancers/0/zone/slug",
            "load_balancers/0/vip_addresses/0/address",
            "load_balancers/0/created_at",
            "deleted_load_balancers",
        ],
    );
    assert_eq!(at(&d, "servers").as_array().map(Vec::len), Some(2));
    assert_eq!(at(&d, "load_balancers/0/status"), "running");
    let summary = &d["summaries"][&lb];
    assert_eq!(
        summary,
        &json!({"listeners": 1, "pools": 1, "members": 2, "monitor_status": {"up": 2},
                "floating_ips": 1}),
        "{d}"
    );
    // Times are virtual (the manual clock starts in 2026-01-01).
    assert!(
        at(&d, "clock/now")
            .as_str()
            .is_some_and(|t| t.starts_with("2026-01-01T00:"))
    );
    // A deleted load balancer stays listed with its dates, for its timeline.
    api.remove(&format!("/load-balancers/{lb}")).await;
    let d = get_json(&api, "/_fake/console/account").await;
    has(
        &d,
        &[
            "deleted_load_balancers/0/uuid",
            "deleted_load_balancers/0/name",
            "deleted_load_balancers/0/created_at",
            "deleted_load_balancers/0/deleted_at",
        ],
    );
    assert_eq!(at(&d, "load_balancers"), &json!([]));
    assert_eq!(at(&d, "floating_ips/0/network"), &fip["network"]);
}

/// The fields `lb.js` reads for the diagram.
const DIAGRAM_FIELDS: &[&str] = &[
    "clock/now",
    "load_balancer/name",
    "load_balancer/status",
    "load_balancer/zone/slug",
    "load_balancer/created_at",
    "load_balancer/vip_addresses/0/address",
    "load_balancer/vip_addresses/0/version",
    "history/name",
    "history/created_at",
    "history/ready_at",
    "history/deleted_at",
    "floating_ips",
    "listeners/0/uuid",
    "listeners/0/name",
    "listeners/0/protocol",
    "listeners/0/protocol_port",
    "listeners/0/allowed_cidrs",
    "listeners/0/pool/uuid",
    "listeners/0/pool/name",
    "pools/0/uuid",
    "pools/0/name",
    "pools/0/algorithm",
    "pools/0/protocol",
    "members/0/uuid",
    "members/0/name",
    "members/0/address",
    "members/0/protocol_port",
    "members/0/monitor_port",
    "members/0/enabled",
    "members/0/pool/uuid",
    "health_monitors/0/pool/uuid",
    "health_monitors/0/type",
    "health_monitors/0/delay_s",
    "health_monitors/0/timeout_s",
    "health_monitors/0/up_threshold",
    "health_monitors/0/down_threshold",
    "health_monitors/0/http",
];

#[tokio::test]
async fn the_load_balancer_endpoint_answers_what_the_diagram_reads() {
    let (fc, api) = start().await;
    let (lb, _) = lb_with_members(&fc, &api).await;
    let d = get_json(&api, &format!("/_fake/console/load-balancers/{lb}")).await;
    has(&d, DIAGRAM_FIELDS);
    let statuses: Vec<&Value> = d["members"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| &m["monitor_status"])
        .collect();
    assert_eq!(statuses, [&json!("up"), &json!("up")], "{d}");

    // Deleted: the history stays, the load balancer is null; unknown: 404.
    api.remove(&format!("/load-balancers/{lb}")).await;
    let d = get_json(&api, &format!("/_fake/console/load-balancers/{lb}")).await;
    assert_eq!(d["load_balancer"], Value::Null);
    assert!(d["history"]["deleted_at"].is_string(), "{d}");
    let unknown = "/_fake/console/load-balancers/00000000-0000-4000-8000-000000000000";
    assert_eq!(get_raw(&api, unknown).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        get_raw(&api, "/_fake/console/load-balancers/web").await.0,
        StatusCode::NOT_FOUND
    );
}

/// Deletes the listener of [`lb_with_members`] and creates it again: its port has no
/// listener for one reconfiguration (fakecloud/MODEL.md §4).
async fn recreate_listener(api: &Api, listener: &str) {
    let (_, l) = api
        .get(&format!("/load-balancers/listeners/{listener}"))
        .await;
    api.remove(&format!("/load-balancers/listeners/{listener}"))
        .await;
    api.create(
        "/load-balancers/listeners",
        json!({"name": "web-80", "pool": l["pool"]["uuid"], "protocol": "tcp", "protocol_port": 80}),
    )
    .await;
}

#[tokio::test]
async fn availability_and_timeline_answer_what_the_timeline_reads() {
    let (fc, api) = start().await;
    let (lb, listener) = lb_with_members(&fc, &api).await;
    recreate_listener(&api, &listener).await;
    fc.advance(Duration::from_secs(60));
    let av = get_json(
        &api,
        &format!("/_fake/load-balancers/{lb}/availability?client=203.0.113.10"),
    )
    .await;
    has(
        &av,
        &[
            "to",
            "entries/0/address",
            "entries/0/kind",
            "entries/0/protocol",
            "entries/0/port",
            "entries/0/downtime_s",
            "entries/0/down/0/from",
            "entries/0/down/0/to",
            "entries/0/down/0/reason",
        ],
    );
    let last = av["entries"][0]["down"]
        .as_array()
        .and_then(|d| d.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["reason"], "no listener", "{av}");
    let tl = get_json(&api, &format!("/_fake/load-balancers/{lb}/timeline")).await;
    has(
        &tl,
        &[
            "created_at",
            "deleted_at",
            "operations/0/effective_at",
            "operations/0/requested_at",
            "operations/0/operation",
        ],
    );
    // The interval starts where the deletion was applied: the timeline marks it there.
    let ops = tl["operations"].as_array().cloned().unwrap_or_default();
    let deletion = ops.iter().find(|o| {
        o["operation"]
            .as_str()
            .is_some_and(|s| s.starts_with("delete listener"))
    });
    assert_eq!(
        deletion.map(|o| &o["effective_at"]),
        Some(&last["from"]),
        "{tl}"
    );
}

#[tokio::test]
async fn the_requests_endpoint_returns_only_what_is_new() {
    let (fc, api) = start().await;
    for _ in 0..3 {
        api.fetch("/servers").await;
    }
    let page = get_json(&api, "/_fake/console/requests").await;
    has(
        &page,
        &[
            "clock/now",
            "next",
            "first",
            "entries/0/seq",
            "entries/0/time",
            "entries/0/method",
            "entries/0/path",
            "entries/0/query",
            "entries/0/route",
            "entries/0/status",
            "entries/0/duration_ms",
        ],
    );
    assert_eq!(page["next"], 3);
    assert_eq!(seqs(&page), [&json!(0), &json!(1), &json!(2)]);
    api.fetch("/networks").await;
    let page = get_json(&api, "/_fake/console/requests?after=3").await;
    assert_eq!(page["entries"].as_array().map(Vec::len), Some(1), "{page}");
    assert_eq!(page["entries"][0]["path"], "/v1/networks");
    assert_eq!(page["entries"][0]["seq"], 3);
    // `limit` keeps the newest.
    let page = get_json(&api, "/_fake/console/requests?after=0&limit=2").await;
    assert_eq!(page["entries"][0]["seq"], 2, "{page}");
    // Console and admin requests are not logged; after a reset `next` starts over.
    assert_eq!(get_json(&api, "/_fake/console/requests").await["next"], 4);
    fc.admin(reqwest::Method::POST, "/reset", None)
        .await
        .expect("reset");
    let page = get_json(&api, "/_fake/console/requests?after=4").await;
    assert_eq!(page["next"], 0, "{page}");
    assert_eq!(page["entries"], json!([]));
}

#[tokio::test]
async fn the_faults_and_clock_endpoints_answer_what_their_views_read() {
    let (fc, api) = start().await;
    let rule = json!({"method": "GET", "path": "/v1/servers", "effect": {"type": "status", "status": 429, "retry_after": 5}, "times": 1});
    fc.admin(reqwest::Method::POST, "/faults", Some(rule))
        .await
        .expect("add rule");
    let (status, _) = api.get("/servers").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let rules = get_json(&api, "/_fake/faults").await;
    has(
        &rules,
        &[
            "0/id",
            "0/method",
            "0/path",
            "0/resource",
            "0/effect/type",
            "0/effect/status",
            "0/effect/retry_after",
            "0/probability",
            "0/times",
            "0/hits",
        ],
    );
    assert_eq!(rules[0]["hits"], 1);
    let clock = get_json(&api, "/_fake/clock").await;
    has(&clock, &["now", "api_now", "timestamps", "mode/manual"]);
}

// ---- cost of a refresh ------------------------------------------------------------------

/// Each load balancer shows the Service it serves: the console reads the tags a CCM sets
/// (`k8s.cloudscale.ch/service`, `…/service-uid`, `…/cluster`), and a deleted one keeps
/// the tags it had for its history.
#[tokio::test]
async fn load_balancers_carry_their_tags_into_the_views_after_deletion_too() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "k8s-service-1234").await;
    let uuid = id(&lb);
    let tags = json!({"k8s.cloudscale.ch/cluster": "prod", "k8s.cloudscale.ch/service": "shop/web",
                      "k8s.cloudscale.ch/service-uid": "0f0f0f0f-0000-4000-8000-000000000000"});
    api.update(&format!("/load-balancers/{uuid}"), json!({"tags": tags}))
        .await;
    let d = get_json(&api, "/_fake/console/account").await;
    assert_eq!(at(&d, "load_balancers/0/tags"), &tags, "{d}");
    let view = get_json(&api, &format!("/_fake/console/load-balancers/{uuid}")).await;
    assert_eq!(at(&view, "load_balancer/tags"), &tags);
    api.remove(&format!("/load-balancers/{uuid}")).await;
    let d = get_json(&api, "/_fake/console/account").await;
    assert_eq!(at(&d, "deleted_load_balancers/0/tags"), &tags, "{d}");
    let view = get_json(&api, &format!("/_fake/console/load-balancers/{uuid}")).await;
    assert_eq!(at(&view, "history/tags"), &tags, "{view}");
    // The account view's script names the Service from exactly these tags.
    let account = ASSETS
        .iter()
        .find(|a| a.name == "account.js")
        .map(|a| String::from_utf8_lossy(a.body).into_owned())
        .unwrap_or_default();
    for key in tags.as_object().into_iter().flat_map(|o| o.keys()) {
        assert!(
            account.contains(&format!("'{key}'")),
            "account.js reads {key}"
        );
    }
}

/// The request filter searches everything the log keeps, server side: an old 404 behind
/// thousands of newer requests is found, with how many match in all.
#[tokio::test]
async fn the_request_filter_searches_the_whole_log_on_the_server() {
    let (_fc, api) = start().await;
    let missing = "/servers/00000000-0000-4000-8000-000000000000";
    assert_eq!(api.get(missing).await.0, StatusCode::NOT_FOUND);
    for _ in 0..2_500 {
        api.fetch("/networks").await;
    }
    let page = get_json(&api, "/_fake/console/requests?status=4xx&limit=300").await;
    assert_eq!(page["matched"], 1, "{page}");
    assert_eq!(page["kept"], 2_501);
    assert_eq!(at(&page, "entries/0/path"), &json!(format!("/v1{missing}")));
    assert_eq!(page["entries"][0]["seq"], 0);
    // Filters combine; the path matches any case; `limit` keeps the newest matches.
    let page = get_json(
        &api,
        "/_fake/console/requests?method=get&status=2xx&path=NETWORKS&limit=5",
    )
    .await;
    assert_eq!(page["matched"], 2_500);
    assert_eq!(
        seqs(&page),
        [
            &json!(2_496),
            &json!(2_497),
            &json!(2_498),
            &json!(2_499),
            &json!(2_500)
        ]
    );
    let none = get_json(&api, "/_fake/console/requests?method=DELETE").await;
    assert_eq!(
        (&none["matched"], &none["entries"]),
        (&json!(0), &json!([]))
    );
    // Unfiltered, `matched` is absent: the page is the log itself.
    assert!(
        get_json(&api, "/_fake/console/requests?limit=1")
            .await
            .get("matched")
            .is_none()
    );
    // A status class that is none is refused, naming the parameter.
    let (status, _, body) = get_raw(&api, "/_fake/console/requests?status=4x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.contains("status") && body.contains("1xx to 5xx"),
        "{body}"
    );
}

/// The timeline's totals count a load balancer's serving life: provisioning and its first
/// configuration come before it, the time after its deletion after it.
#[tokio::test]
async fn availability_splits_downtime_by_the_serving_life() {
    let (fc, api) = start().await;
    let (lb, listener) = lb_with_members(&fc, &api).await;
    recreate_listener(&api, &listener).await;
    fc.advance(Duration::from_secs(60));
    api.remove(&format!("/load-balancers/{lb}")).await;
    fc.advance(Duration::from_secs(300));
    let av = get_json(&api, &format!("/_fake/load-balancers/{lb}/availability")).await;
    let created = at(
        &get_json(&api, &format!("/_fake/load-balancers/{lb}/timeline")).await,
        "created_at",
    )
    .as_str()
    .map(str::to_string)
    .unwrap_or_default();
    let secs = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let entries = av["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(entries.len(), 2, "{av}");
    for e in &entries {
        let first = e["first_served_at"].as_str().unwrap_or_default();
        let to_first = (chrono::DateTime::parse_from_rfc3339(first).expect("first_served_at")
            - chrono::DateTime::parse_from_rfc3339(&created).expect("created_at"))
        .num_milliseconds() as f64
            / 1000.0;
        // Down from creation until it first served: all of it before serving.
        assert!(
            (secs(&e["downtime_before_serving_s"]) - to_first).abs() < 1e-6,
            "{e}"
        );
        assert!(to_first >= 30.0, "provisioning alone takes 30 s here: {e}");
        // While it served: the monitor, made after the listener, checking the members anew
        // (4 s), and one reconfiguration without a listener (10 s).
        assert!((secs(&e["downtime_serving_s"]) - 14.0).abs() < 1e-6, "{e}");
        assert!(
            (secs(&e["downtime_after_deletion_s"]) - 300.0).abs() < 1e-6,
            "{e}"
        );
        let parts = secs(&e["downtime_before_serving_s"])
            + secs(&e["downtime_serving_s"])
            + secs(&e["downtime_after_deletion_s"]);
        assert!((parts - secs(&e["downtime_s"])).abs() < 1e-6, "{e}");
    }
    // A window that starts after the first service still knows when that was.
    let later = get_json(
        &api,
        &format!(
            "/_fake/load-balancers/{lb}/availability?from={}",
            entries[0]["first_served_at"].as_str().unwrap_or_default()
        ),
    )
    .await;
    assert_eq!(
        later["entries"][0]["first_served_at"],
        entries[0]["first_served_at"]
    );
    assert_eq!(
        later["entries"][0]["downtime_before_serving_s"], 0.0,
        "{later}"
    );
}
