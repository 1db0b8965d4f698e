//! Conformance suite for fakecloud, one test per numbered check (`check_NN_*`) of the API
//! behaviour the official clients rely on (fakecloud/README.md, "Behaviour"), plus `extra_*`
//! tests for documented behaviour the numbered checks do not cover.
//!
//! Every test starts its own in-process fake with a manual clock and talks to it
//! over real HTTP. Time only moves through `FakeCloud::advance`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use fakecloud::{Config, FakeCloud};
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, USER_AGENT};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support;
use support::*;

// ---------------------------------------------------------------------------
// 16. Transport and errors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_01_missing_authorization_is_401_with_detail() {
    let (_fc, api) = start().await;
    for (method, path, body) in [
        (Method::GET, "/servers", None),
        (Method::GET, "/regions", None),
        (Method::POST, "/networks", Some(r#"{"name":"n"}"#)),
        (
            Method::DELETE,
            "/servers/00000000-0000-4000-8000-000000000000",
            None,
        ),
    ] {
        let r = api
            .raw(
                method.clone(),
                path,
                None,
                &[("content-type", "application/json")],
                body,
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNAUTHORIZED,
            "{method} {path}: {}",
            r.text
        );
        let v = r.json();
        assert_flat_error(&v);
        let detail = v["detail"]
            .as_str()
            .unwrap_or_else(|| panic!("401 body must contain a string detail, got {v}"));
        assert!(!detail.is_empty(), "detail must not be empty");
    }
}

#[tokio::test]
async fn check_02_get_with_json_content_type_and_empty_body_lists() {
    let (_fc, api) = start().await;
    let token = api.token.clone();
    // No body at all, and an explicit zero-length body.
    for body in [None, Some("")] {
        let r = api
            .raw(
                Method::GET,
                "/servers",
                Some(&token),
                &[("content-type", "application/json")],
                body,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.json(), json!([]), "empty server list must be []");
    }
    make_server(&api, "one", json!({})).await;
    let r = api
        .raw(
            Method::GET,
            "/servers",
            Some(&token),
            &[("content-type", "application/json")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let list = r.json();
    assert_eq!(
        list.as_array().expect("bare array").len(),
        1,
        "list: {list}"
    );
}

#[tokio::test]
async fn check_03_unknown_uuid_is_404_not_found() {
    let (_fc, api) = start().await;
    let unknown = uuid::Uuid::new_v4();
    api.assert_not_found(&format!("/servers/{unknown}")).await;
    for collection in [
        "/server-groups",
        "/networks",
        "/subnets",
        "/load-balancers",
        "/load-balancers/pools",
        "/load-balancers/listeners",
        "/load-balancers/health-monitors",
    ] {
        api.assert_not_found(&format!("{collection}/{unknown}"))
            .await;
    }
    api.assert_not_found(&format!("/load-balancers/pools/{unknown}/members"))
        .await;
    api.assert_not_found("/floating-ips/192.0.2.254").await;
    // Every value of every error body is a string: also for writes on unknown IDs.
    let (st, v) = api
        .patch(&format!("/servers/{unknown}"), json!({"name": "x"}))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_flat_error(&v);
    let (st, v) = api.delete(&format!("/networks/{unknown}")).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_flat_error(&v);
}

#[tokio::test]
async fn check_04_get_by_name_instead_of_uuid_is_404() {
    let (_fc, api) = start().await;
    api.create("/networks", json!({"name": "my-network"})).await;
    let (st, v) = api.get("/networks/my-network").await;
    assert!(!st.is_success(), "GET by name must not succeed: {st} {v}");
    assert_eq!(st, StatusCode::NOT_FOUND, "{v}");
    assert_flat_error(&v);
}

#[tokio::test]
async fn check_05_validation_error_body_is_flat() {
    let (_fc, api) = start().await;
    let (st, v) = api.post("/subnets", json!({})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    assert_flat_error(&v);
    assert_eq!(
        v,
        json!({"cidr": "This field is required.", "network": "This field is required."})
    );
}

#[tokio::test]
async fn check_06_create_returns_201_equal_to_following_get() {
    let (fc, api) = start().await;
    // Each resource is compared with an immediate GET of its href, before
    // anything else is created that could legitimately change it.
    async fn created_equals_get(api: &Api, path: &str, body: Value) -> Value {
        let created = api.create(path, body).await;
        let href = s(&created, "href");
        let got = api.fetch(href).await;
        assert_eq!(
            got, created,
            "GET {href} must equal the POST {path} response"
        );
        created
    }
    let net = created_equals_get(
        &api,
        "/networks",
        json!({"name": "n", "auto_create_ipv4_subnet": false}),
    )
    .await;
    created_equals_get(&api, "/networks", json!({"name": "auto"})).await;
    let subnet = created_equals_get(
        &api,
        "/subnets",
        json!({"cidr": "192.168.42.0/24", "network": id(&net)}),
    )
    .await;
    created_equals_get(
        &api,
        "/servers",
        json!({"name": "srv", "flavor": FLAVOR, "image": IMAGE}),
    )
    .await;
    created_equals_get(
        &api,
        "/server-groups",
        json!({"name": "grp", "type": "anti-affinity"}),
    )
    .await;
    created_equals_get(&api, "/floating-ips", json!({"ip_version": 4})).await;
    created_equals_get(&api, "/floating-ips", json!({"ip_version": 6})).await;
    let lb = created_equals_get(
        &api,
        "/load-balancers",
        json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1"}),
    )
    .await;
    wait_for(
        &fc,
        &api,
        &format!("/load-balancers/{}", id(&lb)),
        300,
        "lb",
        |v| v["status"] == "running",
    )
    .await;
    let pool = created_equals_get(
        &api,
        "/load-balancers/pools",
        json!({"name": "p", "algorithm": "round_robin", "protocol": "tcp",
               "load_balancer": id(&lb)}),
    )
    .await;
    created_equals_get(
        &api,
        &members_path(&pool),
        json!({"name": "m", "address": "192.168.42.11", "protocol_port": 80,
               "subnet": id(&subnet)}),
    )
    .await;
    created_equals_get(
        &api,
        "/load-balancers/listeners",
        json!({"name": "tcp/80", "pool": id(&pool), "protocol": "tcp", "protocol_port": 80}),
    )
    .await;
    created_equals_get(
        &api,
        "/load-balancers/health-monitors",
        json!({"pool": id(&pool), "type": "tcp"}),
    )
    .await;
}

#[tokio::test]
async fn check_07_patch_is_204_or_200_and_delete_is_204_empty() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    let server = running_server(&fc, &api, "srv", json!({})).await;
    let group = api
        .create(
            "/server-groups",
            json!({"name": "grp", "type": "anti-affinity"}),
        )
        .await;
    let net = api.create("/networks", json!({"name": "n"})).await;
    let subnet = api
        .create(
            "/subnets",
            json!({"cidr": "10.11.12.0/24", "network": id(&net)}),
        )
        .await;
    let fip = api.create("/floating-ips", json!({"ip_version": 4})).await;
    let fip_path = format!("/floating-ips/{}", fip_ip(&fip));

    let patches = [
        (format!("/servers/{}", id(&server)), json!({"name": "srv2"})),
        (
            format!("/server-groups/{}", id(&group)),
            json!({"name": "g2"}),
        ),
        (format!("/networks/{}", id(&net)), json!({"name": "n2"})),
        (
            format!("/subnets/{}", id(&subnet)),
            json!({"tags": {"a": "b"}}),
        ),
        (fip_path.clone(), json!({"reverse_ptr": "ptr.example.com"})),
        (
            format!("/load-balancers/{}", id(&stack.lb)),
            json!({"name": "lb2"}),
        ),
        (
            format!("/load-balancers/pools/{}", id(&stack.pool)),
            json!({"name": "p2"}),
        ),
        (
            format!("{}/{}", members_path(&stack.pool), id(&stack.member)),
            json!({"name": "m2"}),
        ),
        (
            format!("/load-balancers/listeners/{}", id(&stack.listener)),
            json!({"name": "l2"}),
        ),
        (
            format!("/load-balancers/health-monitors/{}", id(&stack.monitor)),
            json!({"delay_s": 3}),
        ),
    ];
    for (path, body) in &patches {
        api.update(path, body.clone()).await;
    }
    // Delete child-first; each DELETE is exactly 204 with an empty body.
    for (path, _) in patches.iter().rev() {
        if path.starts_with("/networks/") {
            continue; // network deleted after its subnet
        }
        api.remove(path).await;
    }
    api.remove(&format!("/networks/{}", id(&net))).await;
}

#[tokio::test]
async fn check_08_href_is_absolute_own_host_ends_with_id_and_delete_href_works() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    let server = make_server(&api, "srv", json!({})).await;
    let group = api
        .create(
            "/server-groups",
            json!({"name": "grp", "type": "anti-affinity"}),
        )
        .await;
    let net = api
        .create(
            "/networks",
            json!({"name": "n", "auto_create_ipv4_subnet": false}),
        )
        .await;
    let subnet = api
        .create(
            "/subnets",
            json!({"cidr": "10.11.12.0/24", "network": id(&net)}),
        )
        .await;
    let fip4 = api.create("/floating-ips", json!({"ip_version": 4})).await;
    let fip6 = api.create("/floating-ips", json!({"ip_version": 6})).await;

    let prefix = format!("{}/v1/", api.base);
    let mut order: Vec<(Value, String)> = vec![
        (stack.monitor.clone(), id(&stack.monitor)),
        (stack.listener.clone(), id(&stack.listener)),
        (stack.member.clone(), id(&stack.member)),
        (stack.pool.clone(), id(&stack.pool)),
        (stack.lb.clone(), id(&stack.lb)),
        (fip4.clone(), fip_ip(&fip4)),
        (fip6.clone(), fip_ip(&fip6)),
        (server.clone(), id(&server)),
        (group.clone(), id(&group)),
        (subnet.clone(), id(&subnet)),
        (net.clone(), id(&net)),
    ];
    // Also the stack's own private network/subnet.
    order.push((stack.subnet.clone(), id(&stack.subnet)));
    for (res, ident) in &order {
        let href = s(res, "href");
        assert!(
            href.starts_with(&prefix),
            "href {href} must be absolute and start with {prefix}"
        );
        assert!(
            href.ends_with(&format!("/{ident}")),
            "href {href} must end with the identifier {ident}"
        );
        assert!(
            !href.ends_with('/'),
            "href {href} must not end with a slash"
        );
    }
    for (res, _) in &order {
        let href = s(res, "href");
        api.remove(href).await;
        wait_gone(&fc, &api, href, 120).await;
    }
}

#[tokio::test]
async fn check_09_created_at_has_microseconds_and_z() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    let server = make_server(&api, "srv", json!({})).await;
    let group = api
        .create(
            "/server-groups",
            json!({"name": "grp", "type": "anti-affinity"}),
        )
        .await;
    let fip = api.create("/floating-ips", json!({"ip_version": 4})).await;
    let net = api.create("/networks", json!({"name": "n"})).await;
    for res in [
        &stack.lb,
        &stack.pool,
        &stack.member,
        &stack.listener,
        &stack.monitor,
        &stack.subnet,
        &server,
        &group,
        &fip,
        &net,
    ] {
        let ts = s(res, "created_at");
        assert!(
            is_timestamp(ts),
            "created_at {ts:?} must match YYYY-MM-DDTHH:MM:SS.ffffffZ in {res}"
        );
    }
    for coll in ["/servers", "/networks", "/subnets", "/load-balancers"] {
        for res in api.list(coll).await {
            let ts = s(&res, "created_at");
            assert!(is_timestamp(ts), "{coll}: created_at {ts:?}");
        }
    }
}

#[tokio::test]
async fn check_10_no_endpoint_redirects() {
    let (_fc, api) = start().await;
    let server = make_server(&api, "srv", json!({})).await;
    let sid = id(&server);
    let token = api.token.clone();
    let ct = [("content-type", "application/json")];
    let mut requests: Vec<(Method, String, Option<String>)> = vec![
        (Method::GET, String::new(), None),
        (Method::GET, "/".into(), None),
        (Method::GET, format!("/servers/{sid}/"), None),
        (
            Method::PATCH,
            format!("/servers/{sid}/"),
            Some(r#"{"name":"x"}"#.into()),
        ),
        (Method::DELETE, format!("/servers/{sid}/"), None),
        (Method::POST, format!("/servers/{sid}/stop/"), None),
        (Method::GET, "/no-such-resource".into(), None),
    ];
    for coll in [
        "/regions",
        "/flavors",
        "/images",
        "/servers",
        "/server-groups",
        "/networks",
        "/subnets",
        "/floating-ips",
        "/load-balancers",
        "/load-balancers/pools",
        "/load-balancers/listeners",
        "/load-balancers/health-monitors",
    ] {
        requests.push((Method::GET, coll.to_string(), None));
        requests.push((Method::GET, format!("{coll}/"), None));
        requests.push((Method::POST, format!("{coll}/"), Some("{}".into())));
    }
    // Also the site root, outside /v1.
    let root = format!("{}/", api.base);
    requests.push((Method::GET, root, None));
    for (method, path, body) in requests {
        // `raw` itself asserts "not a redirect" and "not 5xx".
        let r = api
            .raw(method.clone(), &path, Some(&token), &ct, body.as_deref())
            .await;
        assert!(
            r.headers.get(LOCATION).is_none(),
            "{method} {path} must not send Location: {:?}",
            r.headers.get(LOCATION)
        );
    }
}

// ---------------------------------------------------------------------------
// Tags and filters
// ---------------------------------------------------------------------------

const TAGGED_KINDS: [&str; 5] = [
    "/networks",
    "/servers",
    "/load-balancers",
    "/floating-ips",
    "/server-groups",
];

/// Creates prod / dev / untagged / other-key resources of `kind`; returns their hrefs.
async fn tagged_set(api: &Api, kind: &str) -> (String, String, String, String) {
    let prod = make_tagged(api, kind, "prod", json!({"env": "prod"})).await;
    let dev = make_tagged(api, kind, "dev", json!({"env": "dev", "x": "y"})).await;
    let none = make_tagged(api, kind, "none", json!({})).await;
    let other = make_tagged(api, kind, "other", json!({"team": "prod"})).await;
    (
        s(&prod, "href").to_string(),
        s(&dev, "href").to_string(),
        s(&none, "href").to_string(),
        s(&other, "href").to_string(),
    )
}

#[tokio::test]
async fn check_11_tag_filter_key_value() {
    let (_fc, api) = start().await;
    for kind in TAGGED_KINDS {
        let (prod, _dev, _none, _other) = tagged_set(&api, kind).await;
        let got = api.list(&format!("{kind}?tag%3Aenv=prod")).await;
        assert_eq!(hrefs(&got), vec![prod], "{kind}?tag%3Aenv=prod");
        for r in &got {
            assert_eq!(r["tags"]["env"], "prod");
        }
        let got = api.list(&format!("{kind}?tag%3Aenv=nope")).await;
        assert!(got.is_empty(), "{kind}?tag%3Aenv=nope must be []");
    }
}

#[tokio::test]
async fn check_12_tag_filter_empty_value_means_has_key() {
    let (_fc, api) = start().await;
    for kind in TAGGED_KINDS {
        let (prod, dev, _none, _other) = tagged_set(&api, kind).await;
        let mut got = hrefs(&api.list(&format!("{kind}?tag%3Aenv=")).await);
        got.sort();
        let mut want = vec![prod, dev];
        want.sort();
        assert_eq!(got, want, "{kind}?tag%3Aenv=");
    }
}

#[tokio::test]
async fn check_13_raw_colon_tag_without_value_means_has_key() {
    let (_fc, api) = start().await;
    for kind in TAGGED_KINDS {
        let (prod, dev, _none, _other) = tagged_set(&api, kind).await;
        let mut got = hrefs(&api.list(&format!("{kind}?tag:env")).await);
        got.sort();
        let mut want = vec![prod, dev];
        want.sort();
        assert_eq!(got, want, "{kind}?tag:env");
    }
}

#[tokio::test]
async fn check_14_patch_tags_replaces_whole_map() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    let net = make_tagged(&api, "/networks", "n", json!({"a": "1"})).await;
    let srv = make_tagged(&api, "/servers", "s", json!({"a": "1"})).await;
    let fip = make_tagged(&api, "/floating-ips", "f", json!({"a": "1"})).await;
    let mut paths = vec![
        s(&net, "href").to_string(),
        s(&srv, "href").to_string(),
        s(&fip, "href").to_string(),
    ];
    for res in [
        &stack.lb,
        &stack.pool,
        &stack.member,
        &stack.listener,
        &stack.monitor,
        &stack.subnet,
    ] {
        let href = s(res, "href").to_string();
        api.update(&href, json!({"tags": {"a": "1"}})).await;
        paths.push(href);
    }
    for path in &paths {
        assert_eq!(api.fetch(path).await["tags"], json!({"a": "1"}), "{path}");
        api.update(path, json!({"tags": {"b": "2"}})).await;
        assert_eq!(
            api.fetch(path).await["tags"],
            json!({"b": "2"}),
            "{path}: PATCH tags must replace the map"
        );
        api.update(path, json!({"tags": {}})).await;
        assert_eq!(
            api.fetch(path).await["tags"],
            json!({}),
            "{path}: PATCH {{}} must clear the tags"
        );
    }
}

#[tokio::test]
async fn check_15_untagged_resources_serialise_empty_tags_object() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    let srv = make_server(&api, "s", json!({})).await;
    let grp = api
        .create(
            "/server-groups",
            json!({"name": "g", "type": "anti-affinity"}),
        )
        .await;
    let net = api.create("/networks", json!({"name": "n"})).await;
    let fip = api.create("/floating-ips", json!({"ip_version": 4})).await;
    for res in [
        &stack.lb,
        &stack.pool,
        &stack.member,
        &stack.listener,
        &stack.monitor,
        &stack.subnet,
        &srv,
        &grp,
        &net,
        &fip,
    ] {
        assert_eq!(res["tags"], json!({}), "POST response: {res}");
        let got = api.fetch(s(res, "href")).await;
        assert_eq!(got["tags"], json!({}), "GET: {got}");
    }
    for coll in [
        "/servers",
        "/server-groups",
        "/networks",
        "/subnets",
        "/floating-ips",
        "/load-balancers",
        "/load-balancers/pools",
        "/load-balancers/listeners",
        "/load-balancers/health-monitors",
    ] {
        for res in api.list(coll).await {
            assert_eq!(res["tags"], json!({}), "{coll}: {res}");
        }
    }
    for res in api.list(&members_path(&stack.pool)).await {
        assert_eq!(res["tags"], json!({}), "members: {res}");
    }
}

#[tokio::test]
async fn check_16_member_list_honours_tag_filters() {
    let (fc, api) = start().await;
    let (_net, subnet) = private_subnet(&api, "192.168.42.0/24").await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let path = members_path(&pool);
    let mk = |name: &str, addr: &str, tags: Value| {
        json!({"name": name, "address": addr, "protocol_port": 80,
               "subnet": id(&subnet), "tags": tags})
    };
    let prod = api
        .create(&path, mk("prod", "192.168.42.11", json!({"env": "prod"})))
        .await;
    let dev = api
        .create(&path, mk("dev", "192.168.42.12", json!({"env": "dev"})))
        .await;
    let _none = api
        .create(&path, mk("none", "192.168.42.13", json!({})))
        .await;
    assert_eq!(api.list(&path).await.len(), 3);
    assert_eq!(
        uuids(&api.list(&format!("{path}?tag%3Aenv=prod")).await),
        vec![id(&prod)]
    );
    let mut want = vec![id(&prod), id(&dev)];
    want.sort();
    for q in ["tag%3Aenv=", "tag:env"] {
        let mut got = uuids(&api.list(&format!("{path}?{q}")).await);
        got.sort();
        assert_eq!(got, want, "{path}?{q}");
    }
}

// ---------------------------------------------------------------------------
// Catalogue
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_17_regions_have_zones() {
    let (_fc, api) = start().await;
    let regions = api.list("/regions").await;
    assert!(!regions.is_empty());
    for r in &regions {
        let zones = r["zones"]
            .as_array()
            .unwrap_or_else(|| panic!("zones must be an array: {r}"));
        assert!(!zones.is_empty(), "region without zones: {r}");
    }
    for (region, zone) in [("lpg", "lpg1"), ("rma", "rma1")] {
        let r = regions
            .iter()
            .find(|r| r["slug"] == region)
            .unwrap_or_else(|| panic!("region {region} missing: {regions:?}"));
        assert!(
            r["zones"]
                .as_array()
                .expect("zones")
                .iter()
                .any(|z| z["slug"] == zone),
            "region {region} must contain zone {zone}: {r}"
        );
    }
}

#[tokio::test]
async fn check_18_flavors_catalogue() {
    let (_fc, api) = start().await;
    let flavors = api.list("/flavors").await;
    let find = |slug: &str| {
        flavors
            .iter()
            .find(|f| f["slug"] == slug)
            .unwrap_or_else(|| panic!("flavor {slug} missing"))
            .clone()
    };
    for (slug, vcpu, mem) in [
        ("flex-4-1", 1, 4),
        ("flex-4-2", 2, 4),
        ("flex-4-4", 4, 4),
        ("plus-192-96", 96, 192),
    ] {
        let f = find(slug);
        assert_eq!(f["vcpu_count"], json!(vcpu), "{slug}: {f}");
        assert_eq!(f["memory_gb"], json!(mem), "{slug}: {f}");
        assert!(f["gpu"].is_null(), "{slug} must have gpu: null: {f}");
    }
    let gpu = flavors
        .iter()
        .find(|f| s(f, "slug").starts_with("gpu"))
        .expect("a gpu* flavor");
    assert!(
        gpu["gpu"].is_object(),
        "gpu flavor needs a gpu object: {gpu}"
    );
    for f in &flavors {
        assert!(!s(f, "name").is_empty(), "flavor name empty: {f}");
        let zones = f["zones"]
            .as_array()
            .unwrap_or_else(|| panic!("zones must be an array: {f}"));
        assert!(!zones.is_empty(), "flavor without zones: {f}");
    }
}

#[tokio::test]
async fn check_19_images_contain_debian_11() {
    let (_fc, api) = start().await;
    let images = api.list("/images").await;
    let img = images
        .iter()
        .find(|i| i["slug"] == "debian-11")
        .expect("image debian-11");
    for key in ["name", "operating_system", "default_username"] {
        assert!(
            s(img, key).to_lowercase().contains("debian"),
            "debian-11 {key} must contain debian: {img}"
        );
    }
}

// ---------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_20_server_create_accepts_null_ssh_keys() {
    let (_fc, api) = start().await;
    let srv = api
        .create(
            "/servers",
            json!({"name": "s", "flavor": FLAVOR, "image": IMAGE, "ssh_keys": null}),
        )
        .await;
    assert_eq!(srv["name"], "s");
}

#[tokio::test]
async fn check_21_default_server_public_ipv4_first_then_ipv6() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let iface = &srv["interfaces"][0];
    assert_eq!(iface["type"], "public", "{srv}");
    let addrs = iface["addresses"].as_array().expect("addresses array");
    assert!(!addrs.is_empty(), "public interface needs addresses: {srv}");
    assert_eq!(addrs[0]["version"], json!(4), "{srv}");
    s(&addrs[0], "address")
        .parse::<Ipv4Addr>()
        .expect("first address is IPv4");
    let v6 = addrs[1..]
        .iter()
        .find(|a| a["version"] == json!(6))
        .unwrap_or_else(|| panic!("an IPv6 address must follow the IPv4 one: {srv}"));
    s(v6, "address").parse::<Ipv6Addr>().expect("IPv6 address");
}

#[tokio::test]
async fn check_22_server_without_flavor_is_400_on_flavor_key() {
    let (_fc, api) = start().await;
    let r = api
        .post("/servers", json!({"name": "s", "image": IMAGE}))
        .await;
    let v = assert_bad_request(&r, "This field is required.", "server without flavor");
    let msg = v["flavor"]
        .as_str()
        .unwrap_or_else(|| panic!("error must be under key flavor: {v}"));
    assert!(msg.contains("This field is required."), "{v}");
}

#[tokio::test]
async fn check_23_new_server_changing_then_running() {
    let (fc, api) = start().await;
    let srv = make_server(&api, "s", json!({})).await;
    assert_eq!(srv["status"], "changing", "create response: {srv}");
    let path = format!("/servers/{}", id(&srv));
    assert_eq!(api.fetch(&path).await["status"], "changing");
    // Within the CLI's ~2 minutes (and a fortiori the Go SDK's 5 minutes).
    wait_for(&fc, &api, &path, 120, "server running", |v| {
        v["status"] == "running"
    })
    .await;
}

#[tokio::test]
async fn check_24_stop_start_reboot_actions() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let path = format!("/servers/{}", id(&srv));
    let token = api.token.clone();
    let ct = [("content-type", "application/json")];
    let r = api
        .raw(
            Method::POST,
            &format!("{path}/stop"),
            Some(&token),
            &ct,
            None,
        )
        .await;
    assert!(
        r.status.is_success(),
        "stop with empty body: {} {}",
        r.status,
        r.text
    );
    wait_for(&fc, &api, &path, 120, "stopped", |v| {
        v["status"] == "stopped"
    })
    .await;
    for action in ["start", "reboot"] {
        let r = api
            .raw(
                Method::POST,
                &format!("{path}/{action}"),
                Some(&token),
                &ct,
                Some("{}"),
            )
            .await;
        assert!(r.status.is_success(), "{action}: {} {}", r.status, r.text);
        fc.advance(Duration::from_secs(1));
        wait_for(&fc, &api, &path, 120, action, |v| v["status"] == "running").await;
    }
}

#[tokio::test]
async fn check_25_patch_flavor_and_name_together_is_400() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let path = format!("/servers/{}", id(&srv));
    let r = api
        .patch(&path, json!({"flavor": "flex-4-4", "name": "bar"}))
        .await;
    assert_bad_request(&r, "Only one attribute", "PATCH flavor+name");
    let got = api.fetch(&path).await;
    assert_eq!(got["name"], "s");
    assert_eq!(got["flavor"]["slug"], FLAVOR);
}

#[tokio::test]
async fn check_26_scale_stopped_server() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let path = format!("/servers/{}", id(&srv));
    let (st, v) = api.post(&format!("{path}/stop"), json!({})).await;
    assert!(st.is_success(), "stop: {st} {v}");
    wait_for(&fc, &api, &path, 120, "stopped", |v| {
        v["status"] == "stopped"
    })
    .await;
    let (st, v) = api.patch(&path, json!({"flavor": "flex-4-4"})).await;
    assert_eq!(st, StatusCode::NO_CONTENT, "PATCH flavor: {v}");
    let got = wait_for(&fc, &api, &path, 300, "scaled and stopped", |v| {
        v["status"] == "stopped" && v["flavor"]["slug"] == "flex-4-4"
    })
    .await;
    assert_eq!(got["flavor"]["slug"], "flex-4-4");
    fc.advance(Duration::from_secs(300));
    let got = api.fetch(&path).await;
    assert_eq!(got["status"], "stopped", "must stay stopped: {got}");
    assert_eq!(got["flavor"]["slug"], "flex-4-4");
}

#[tokio::test]
async fn check_27_interfaces_with_fixed_address_and_layer2_only() {
    let (fc, api) = start().await;
    let (net, sub) = private_subnet(&api, "192.168.42.0/24").await;
    let srv = running_server(
        &fc,
        &api,
        "fixed",
        json!({"interfaces": [{"addresses": [{"subnet": id(&sub), "address": "192.168.42.242"}]}]}),
    )
    .await;
    let ifaces = srv["interfaces"].as_array().expect("interfaces");
    assert_eq!(ifaces.len(), 1, "{srv}");
    assert_eq!(ifaces[0]["type"], "private");
    let addrs = ifaces[0]["addresses"].as_array().expect("addresses");
    assert_eq!(addrs.len(), 1, "{srv}");
    assert_eq!(addrs[0]["address"], "192.168.42.242");
    assert_eq!(addrs[0]["subnet"]["uuid"], json!(id(&sub)));

    let srv = running_server(
        &fc,
        &api,
        "l2",
        json!({"interfaces": [{"network": "public"}, {"network": id(&net), "addresses": []}]}),
    )
    .await;
    let ifaces = srv["interfaces"].as_array().expect("interfaces");
    assert_eq!(ifaces.len(), 2, "{srv}");
    assert_eq!(ifaces[0]["type"], "public");
    assert_eq!(ifaces[1]["type"], "private");
    assert_eq!(ifaces[1]["network"]["uuid"], json!(id(&net)));
    assert_eq!(ifaces[1]["addresses"], json!([]), "{srv}");
}

#[tokio::test]
async fn check_28_patch_interfaces_reorders() {
    let (fc, api) = start().await;
    let (net, _sub) = private_subnet(&api, "192.168.42.0/24").await;
    let srv = running_server(
        &fc,
        &api,
        "s",
        json!({"interfaces": [{"network": "public"}, {"network": id(&net)}]}),
    )
    .await;
    let path = format!("/servers/{}", id(&srv));
    let types: Vec<Value> = srv["interfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .map(|i| i["type"].clone())
        .collect();
    assert_eq!(types, vec![json!("public"), json!("private")]);
    api.update(
        &path,
        json!({"interfaces": [{"network": id(&net)}, {"network": "public"}]}),
    )
    .await;
    let got = wait_for(&fc, &api, &path, 120, "reordered", |v| {
        v["status"] != "changing"
    })
    .await;
    let ifaces = got["interfaces"].as_array().expect("interfaces");
    assert_eq!(ifaces.len(), 2, "{got}");
    assert_eq!(ifaces[0]["type"], "private", "{got}");
    assert_eq!(ifaces[0]["network"]["uuid"], json!(id(&net)));
    assert_eq!(ifaces[1]["type"], "public", "{got}");
}

#[tokio::test]
async fn check_29_delete_server_then_404() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let path = format!("/servers/{}", id(&srv));
    api.remove(&path).await;
    wait_gone(&fc, &api, &path, 120).await;
    api.assert_not_found(&path).await;
    assert!(!uuids(&api.list("/servers").await).contains(&id(&srv)));
}

// ---------------------------------------------------------------------------
// Networks and subnets
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_30_network_defaults_mtu_and_one_subnet() {
    let (_fc, api) = start().await;
    let net = api.create("/networks", json!({"name": "n"})).await;
    assert_eq!(net["mtu"], json!(9000), "{net}");
    let subnets = net["subnets"].as_array().expect("subnets array");
    assert_eq!(subnets.len(), 1, "{net}");
    let sub_id = id(&subnets[0]);
    let sub = api.fetch(&format!("/subnets/{sub_id}")).await;
    assert_eq!(sub["network"]["uuid"], json!(id(&net)));
}

#[tokio::test]
async fn check_31_network_without_auto_subnet() {
    let (_fc, api) = start().await;
    let net = api
        .create(
            "/networks",
            json!({"name": "n", "auto_create_ipv4_subnet": false}),
        )
        .await;
    assert_eq!(net["subnets"], json!([]), "{net}");
    assert!(api.list("/subnets").await.is_empty());
}

#[tokio::test]
async fn check_32_duplicate_network_names_allowed() {
    let (_fc, api) = start().await;
    let a = api.create("/networks", json!({"name": "same"})).await;
    let b = api.create("/networks", json!({"name": "same"})).await;
    assert_ne!(id(&a), id(&b));
    let list = api.list("/networks").await;
    assert_eq!(list.iter().filter(|n| n["name"] == "same").count(), 2);
}

#[tokio::test]
async fn check_33_subnet_dns_servers_defaults_and_empty() {
    let (_fc, api) = start().await;
    let net = api
        .create(
            "/networks",
            json!({"name": "n", "auto_create_ipv4_subnet": false}),
        )
        .await;
    let a = api
        .create(
            "/subnets",
            json!({"cidr": "10.1.0.0/24", "network": id(&net)}),
        )
        .await;
    let dns = a["dns_servers"].as_array().expect("dns_servers array");
    assert_eq!(dns.len(), 2, "{a}");
    let b = api
        .create(
            "/subnets",
            json!({"cidr": "10.2.0.0/24", "network": id(&net), "dns_servers": []}),
        )
        .await;
    assert_eq!(b["dns_servers"], json!([]), "{b}");
    assert_eq!(
        api.fetch(&format!("/subnets/{}", id(&b))).await["dns_servers"],
        json!([])
    );
}

#[tokio::test]
async fn check_34_subnet_dns_servers_patch_null_and_invalid() {
    let (_fc, api) = start().await;
    let net = api
        .create(
            "/networks",
            json!({"name": "n", "auto_create_ipv4_subnet": false}),
        )
        .await;
    let defaults = api
        .create(
            "/subnets",
            json!({"cidr": "10.1.0.0/24", "network": id(&net)}),
        )
        .await["dns_servers"]
        .clone();
    let sub = api
        .create(
            "/subnets",
            json!({"cidr": "10.2.0.0/24", "network": id(&net), "dns_servers": ["1.1.1.1"]}),
        )
        .await;
    let path = format!("/subnets/{}", id(&sub));
    api.update(&path, json!({"dns_servers": null})).await;
    let got = api.fetch(&path).await;
    assert_eq!(got["dns_servers"].as_array().expect("array").len(), 2);
    assert_eq!(got["dns_servers"], defaults, "null resets to the defaults");

    api.update(&path, json!({"dns_servers": ["8.8.8.8", "9.9.9.9"]}))
        .await;
    let r = api.patch(&path, json!({"dns_servers": ["0.0.0.0"]})).await;
    assert_eq!(r.0, StatusCode::BAD_REQUEST, "{}", r.1);
    assert_flat_error(&r.1);
    assert_eq!(
        api.fetch(&path).await["dns_servers"],
        json!(["8.8.8.8", "9.9.9.9"]),
        "a rejected PATCH must not change the list"
    );
}

#[tokio::test]
async fn check_35_delete_network_removes_its_subnets() {
    let (_fc, api) = start().await;
    let net = api.create("/networks", json!({"name": "n"})).await;
    let sub_id = id(&net["subnets"][0]);
    assert!(uuids(&api.list("/subnets").await).contains(&sub_id));
    api.remove(&format!("/networks/{}", id(&net))).await;
    assert!(
        !uuids(&api.list("/subnets").await).contains(&sub_id),
        "subnet must disappear with its network"
    );
    api.assert_not_found(&format!("/subnets/{sub_id}")).await;
    api.assert_not_found(&format!("/networks/{}", id(&net)))
        .await;
}

// ---------------------------------------------------------------------------
// Floating IPs
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_36_floating_ipv4_defaults() {
    let (_fc, api) = start().await;
    let f = api.create("/floating-ips", json!({"ip_version": 4})).await;
    let network = s(&f, "network");
    assert!(network.ends_with("/32"), "{f}");
    let ip = fip_ip(&f);
    ip.parse::<Ipv4Addr>().expect("IPv4 floating IP");
    assert!(f["server"].is_null(), "{f}");
    assert_eq!(f["type"], "regional", "{f}");
    assert_eq!(
        f["region"]["slug"], "rma",
        "region of default zone rma1: {f}"
    );
    assert!(
        s(&f, "href").ends_with(&format!("/floating-ips/{ip}")),
        "href must end with the bare IP: {f}"
    );
    assert_eq!(f["ip_version"], json!(4));
}

#[tokio::test]
async fn check_37_ipv6_floating_ip_paths_with_colons() {
    let (_fc, api) = start().await;
    let f = api.create("/floating-ips", json!({"ip_version": 6})).await;
    let ip = fip_ip(&f);
    assert!(ip.contains(':'), "{f}");
    ip.parse::<Ipv6Addr>().expect("IPv6 floating IP");
    let path = format!("/floating-ips/{ip}");
    assert_eq!(api.fetch(&path).await, f);
    api.update(&path, json!({"tags": {"k": "v"}})).await;
    assert_eq!(api.fetch(&path).await["tags"], json!({"k": "v"}));
    let other: IpAddr = "2001:db8::1".parse().expect("ip");
    if other.to_string() != ip {
        api.assert_not_found("/floating-ips/2001:db8::1").await;
    }
    api.remove(&path).await;
    api.assert_not_found(&path).await;
}

#[tokio::test]
async fn check_38_floating_ip_next_hop_is_server_public_ipv4() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let f = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "server": id(&srv)}),
        )
        .await;
    assert_eq!(f["server"]["uuid"], json!(id(&srv)), "{f}");
    assert_eq!(
        f["next_hop"], srv["interfaces"][0]["addresses"][0]["address"],
        "next_hop vs server {srv}"
    );
}

#[tokio::test]
async fn check_39_floating_ip_next_hop_is_lb_vip() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let f = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "load_balancer": id(&lb), "region": "rma"}),
        )
        .await;
    assert_eq!(f["load_balancer"]["uuid"], json!(id(&lb)), "{f}");
    assert_eq!(
        f["next_hop"], lb["vip_addresses"][0]["address"],
        "next_hop vs lb {lb}"
    );
}

#[tokio::test]
async fn check_40_global_ipv6_network_floating_ip_moves_across_regions() {
    let (fc, api) = start().await;
    let s1 = running_server(&fc, &api, "rma", json!({"zone": "rma1"})).await;
    let s2 = running_server(&fc, &api, "lpg", json!({"zone": "lpg1"})).await;
    let f = api
        .create(
            "/floating-ips",
            json!({"ip_version": 6, "prefix_length": 56, "type": "global",
                   "server": id(&s1)}),
        )
        .await;
    assert!(
        f["region"].is_null(),
        "global IP must have region null: {f}"
    );
    assert_eq!(f["type"], "global");
    assert!(s(&f, "network").ends_with("/56"), "{f}");
    let path = format!("/floating-ips/{}", fip_ip(&f));
    assert!(s(&f, "href").ends_with(&path), "{f}");
    api.update(&path, json!({"server": id(&s2)})).await;
    let got = api.fetch(&path).await;
    assert_eq!(got["server"]["uuid"], json!(id(&s2)), "{got}");
    assert!(got["region"].is_null());
    api.update(&path, json!({"server": id(&s1)})).await;
    assert_eq!(api.fetch(&path).await["server"]["uuid"], json!(id(&s1)));
}

#[tokio::test]
async fn check_41_cli_floating_ip_defaults_accepted() {
    let (_fc, api) = start().await;
    let f4 = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "prefix_length": 32, "type": "regional"}),
        )
        .await;
    assert!(s(&f4, "network").ends_with("/32"), "{f4}");
    let f6 = api
        .create(
            "/floating-ips",
            json!({"ip_version": 6, "prefix_length": 128, "type": "regional"}),
        )
        .await;
    assert!(s(&f6, "network").ends_with("/128"), "{f6}");
    assert_eq!(f6["type"], "regional");
}

#[tokio::test]
async fn check_42_floating_ip_moves_from_server_to_lb() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let lb = running_lb(&fc, &api, "lb").await;
    let f = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "server": id(&srv)}),
        )
        .await;
    let path = format!("/floating-ips/{}", fip_ip(&f));
    api.update(&path, json!({"load_balancer": id(&lb)})).await;
    let got = api.fetch(&path).await;
    assert_eq!(got["load_balancer"]["uuid"], json!(id(&lb)), "{got}");
    assert!(got["server"].is_null(), "server must be cleared: {got}");
}

#[tokio::test]
async fn check_43_floating_ip_survives_server_deletion() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let f = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "server": id(&srv)}),
        )
        .await;
    let path = format!("/floating-ips/{}", fip_ip(&f));
    let spath = format!("/servers/{}", id(&srv));
    api.remove(&spath).await;
    wait_gone(&fc, &api, &spath, 120).await;
    let got = api.fetch(&path).await;
    assert_eq!(s(&got, "network"), s(&f, "network"));
    api.remove(&path).await;
    api.assert_not_found(&path).await;
}

// ---------------------------------------------------------------------------
// Load balancers
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_44_lb_create_shape() {
    let (_fc, api) = start().await;
    let (st, lb) = api
        .post(
            "/load-balancers",
            json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1"}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{lb}");
    assert_eq!(lb["status"], "changing", "{lb}");
    let vips = lb["vip_addresses"].as_array().expect("vip_addresses");
    assert_eq!(vips.len(), 2, "{lb}");
    assert_eq!(vips[0]["version"], json!(4), "IPv4 first: {lb}");
    assert_eq!(vips[1]["version"], json!(6), "IPv6 second: {lb}");
    assert!(vips[0]["version"].is_u64() && vips[1]["version"].is_u64());
    s(&vips[0], "address").parse::<Ipv4Addr>().expect("v4 VIP");
    s(&vips[1], "address").parse::<Ipv6Addr>().expect("v6 VIP");
    assert_eq!(
        lb["flavor"],
        json!({"slug": "lb-standard", "name": "LB-Standard"}),
        "{lb}"
    );
    assert_eq!(lb["zone"], json!({"slug": "rma1"}), "{lb}");
    assert_eq!(lb["name"], "lb");
}

#[tokio::test]
async fn check_45_lb_eventually_running() {
    let (fc, api) = start().await;
    let lb = make_lb(&api, "lb").await;
    let path = format!("/load-balancers/{}", id(&lb));
    wait_for(&fc, &api, &path, 300, "lb running", |v| {
        v["status"] == "running"
    })
    .await;
}

#[tokio::test]
async fn check_46_lb_without_zone_is_400() {
    let (_fc, api) = start().await;
    let (st, v) = api
        .post(
            "/load-balancers",
            json!({"name": "lb", "flavor": "lb-standard"}),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    assert_flat_error(&v);
    assert_eq!(v, json!({"zone": "This field is required."}));
    assert!(api.list("/load-balancers").await.is_empty());
}

#[tokio::test]
async fn check_47_lb_unknown_flavor_or_zone_is_400() {
    let (_fc, api) = start().await;
    let r = api
        .post(
            "/load-balancers",
            json!({"name": "lb", "flavor": "lb-standard-non-existent", "zone": "rma1"}),
        )
        .await;
    assert_bad_request(&r, "is not a valid choice", "unknown LB flavor");
    let r = api
        .post(
            "/load-balancers",
            json!({"name": "lb", "flavor": "lb-standard", "zone": "nowhere1"}),
        )
        .await;
    assert_bad_request(&r, "Choose one of", "unknown LB zone");
    assert!(api.list("/load-balancers").await.is_empty());
}

#[tokio::test]
async fn check_48_lb_private_vip_and_vip_errors() {
    let (_fc, api) = start().await;
    let (_net, sub) = private_subnet(&api, "192.168.7.0/24").await;
    let lb = api
        .create(
            "/load-balancers",
            json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1",
                   "vip_addresses": [{"subnet": id(&sub), "address": "192.168.7.7"}]}),
        )
        .await;
    let vips = lb["vip_addresses"].as_array().expect("vip_addresses");
    assert_eq!(vips.len(), 1, "{lb}");
    assert_eq!(vips[0]["address"], "192.168.7.7");
    assert_eq!(vips[0]["subnet"]["uuid"], json!(id(&sub)));
    assert_eq!(vips[0]["version"], json!(4));

    let r = api
        .post(
            "/load-balancers",
            json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1",
                   "vip_addresses": [{"subnet": id(&sub), "address": "10.9.9.9"}]}),
        )
        .await;
    assert_bad_request(
        &r,
        "is not a valid IP for the specified subnet",
        "VIP outside subnet",
    );
    let r = api
        .post(
            "/load-balancers",
            json!({"name": "lb", "flavor": "lb-standard", "zone": "rma1",
                   "vip_addresses": [{"subnet": "not-a-uuid"}]}),
        )
        .await;
    assert_bad_request(&r, "Must be a valid UUID.", "non-UUID VIP subnet");
    assert_eq!(api.list("/load-balancers").await.len(), 1);
}

#[tokio::test]
async fn check_49_lb_patch_name_and_tags() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let path = format!("/load-balancers/{}", id(&lb));
    let (st, v) = api.patch(&path, json!({"name": "x"})).await;
    assert_eq!(st, StatusCode::NO_CONTENT, "{v}");
    assert_eq!(api.fetch(&path).await["name"], "x");
    api.update(&path, json!({"tags": {"a": "1"}})).await;
    api.update(&path, json!({"tags": {"b": "2"}})).await;
    assert_eq!(api.fetch(&path).await["tags"], json!({"b": "2"}));
    api.update(&path, json!({"tags": {}})).await;
    assert_eq!(api.fetch(&path).await["tags"], json!({}));
}

#[tokio::test]
async fn check_50_delete_lb_cascades() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    // A second LB whose children must survive.
    let other = running_lb(&fc, &api, "other").await;
    let other_pool = make_pool(&api, &other).await;
    api.remove(&format!("/load-balancers/{}", id(&stack.lb)))
        .await;
    let pools = uuids(&api.list("/load-balancers/pools").await);
    assert!(!pools.contains(&id(&stack.pool)), "pool must be gone");
    assert!(
        pools.contains(&id(&other_pool)),
        "other LB's pool must stay"
    );
    assert!(
        !uuids(&api.list("/load-balancers/listeners").await).contains(&id(&stack.listener)),
        "listener must be gone"
    );
    assert!(
        !uuids(&api.list("/load-balancers/health-monitors").await).contains(&id(&stack.monitor)),
        "monitor must be gone"
    );
    let (st, v) = api.get(&members_path(&stack.pool)).await;
    match st {
        StatusCode::NOT_FOUND => assert_flat_error(&v),
        StatusCode::OK => assert!(
            !uuids(v.as_array().expect("array")).contains(&id(&stack.member)),
            "member must be gone: {v}"
        ),
        other => panic!("member list after LB delete: {other} {v}"),
    }
    api.assert_not_found(s(&stack.member, "href")).await;
    wait_gone(
        &fc,
        &api,
        &format!("/load-balancers/{}", id(&stack.lb)),
        300,
    )
    .await;
}

// ---------------------------------------------------------------------------
// Pools, members, listeners, monitors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn check_51_pool_create_and_errors() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    assert_eq!(pool["load_balancer"]["uuid"], json!(id(&lb)), "{pool}");
    assert_eq!(pool["algorithm"], "round_robin");
    assert_eq!(pool["protocol"], "tcp");
    let r = api
        .post(
            "/load-balancers/pools",
            json!({"name": "p", "algorithm": "round_robin", "protocol": "tcp",
                   "load_balancer": uuid::Uuid::new_v4().to_string()}),
        )
        .await;
    assert_bad_request(&r, "does not exist", "unknown load balancer");
    let r = api
        .post(
            "/load-balancers/pools",
            json!({"name": "p", "algorithm": "robin_round", "protocol": "tcp",
                   "load_balancer": id(&lb)}),
        )
        .await;
    assert_bad_request(&r, "Expect one of", "bad algorithm");
    assert_eq!(api.list("/load-balancers/pools").await.len(), 1);
}

#[tokio::test]
async fn check_52_member_create_shape() {
    let (fc, api) = start().await;
    let (_net, sub) = private_subnet(&api, "192.168.42.0/24").await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = make_member(&api, &pool, &sub, "m", "192.168.42.11").await;
    assert_eq!(m["pool"]["uuid"], json!(id(&pool)), "{m}");
    assert_eq!(m["load_balancer"]["uuid"], json!(id(&lb)), "{m}");
    assert_eq!(m["enabled"], json!(true), "{m}");
    assert_eq!(m["monitor_status"], "no_monitor", "{m}");
    assert_eq!(m["protocol_port"], json!(80));
    assert_eq!(m["address"], "192.168.42.11");
    assert_eq!(m["subnet"]["uuid"], json!(id(&sub)));
    fc.advance(Duration::from_secs(300));
    let got = api
        .fetch(&format!("{}/{}", members_path(&pool), id(&m)))
        .await;
    assert_eq!(
        got["monitor_status"], "no_monitor",
        "still no monitor: {got}"
    );
}

#[tokio::test]
async fn check_53_member_patch_enabled_false() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    let path = format!("{}/{}", members_path(&stack.pool), id(&stack.member));
    api.update(&path, json!({"enabled": false})).await;
    assert_eq!(api.fetch(&path).await["enabled"], json!(false));
}

#[tokio::test]
async fn check_54_member_becomes_up_after_monitor() {
    let (fc, api) = start().await;
    let (_net, sub) = private_subnet(&api, "192.168.42.0/24").await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = make_member(&api, &pool, &sub, "m", "192.168.42.11").await;
    let path = format!("{}/{}", members_path(&pool), id(&m));
    api.create(
        "/load-balancers/health-monitors",
        json!({"pool": id(&pool), "type": "tcp"}),
    )
    .await;
    // The Go SDK's LoadBalancerPoolMemberIsUp waits 5 minutes, polling every 2 s.
    wait_for(&fc, &api, &path, 300, "member up", |v| {
        v["monitor_status"] == "up"
    })
    .await;
}

#[tokio::test]
async fn check_55_listener_defaults() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let l = api
        .create(
            "/load-balancers/listeners",
            json!({"name": "tcp/80", "pool": id(&pool), "protocol": "tcp", "protocol_port": 80}),
        )
        .await;
    assert_eq!(l["allowed_cidrs"], json!([]), "{l}");
    assert_eq!(l["timeout_client_data_ms"], json!(50000), "{l}");
    assert_eq!(l["timeout_member_connect_ms"], json!(5000), "{l}");
    assert_eq!(l["timeout_member_data_ms"], json!(50000), "{l}");
    assert_eq!(l["pool"]["uuid"], json!(id(&pool)), "{l}");
    assert_eq!(l["load_balancer"]["uuid"], json!(id(&lb)), "{l}");
    assert_eq!(l["protocol_port"], json!(80));
    assert_eq!(l["protocol"], "tcp");
}

#[tokio::test]
async fn check_56_listener_allowed_cidrs_patch() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    let path = format!("/load-balancers/listeners/{}", id(&stack.listener));
    api.update(&path, json!({"allowed_cidrs": ["10.0.0.0/24"]}))
        .await;
    assert_eq!(
        api.fetch(&path).await["allowed_cidrs"],
        json!(["10.0.0.0/24"])
    );
    api.update(&path, json!({"allowed_cidrs": []})).await;
    let got = api.fetch(&path).await;
    assert_eq!(
        got["allowed_cidrs"],
        json!([]),
        "must be [], not null/omitted: {got}"
    );
}

#[tokio::test]
async fn check_57_listener_validation_errors() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let r = api
        .post(
            "/load-balancers/listeners",
            json!({"name": "l", "pool": id(&pool), "protocol": "tcp", "protocol_port": 80,
                   "allowed_cidrs": ["1.1.1.1"]}),
        )
        .await;
    assert_bad_request(
        &r,
        "Enter a valid network address in CIDR notation",
        "bare IP in allowed_cidrs",
    );
    let r = api
        .post(
            "/load-balancers/listeners",
            json!({"name": "l", "pool": id(&pool), "protocol": "tcp",
                   "protocol_port": 11111111}),
        )
        .await;
    assert_bad_request(&r, "The protocol_port must be between", "port out of range");
    assert!(api.list("/load-balancers/listeners").await.is_empty());
}

#[tokio::test]
async fn check_58_tcp_monitor_defaults() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = api
        .create(
            "/load-balancers/health-monitors",
            json!({"pool": id(&pool), "type": "tcp", "delay_s": 20, "timeout_s": 15}),
        )
        .await;
    assert_eq!(m["up_threshold"], json!(2), "{m}");
    assert_eq!(m["down_threshold"], json!(3), "{m}");
    assert!(m["http"].is_null(), "http must be null for tcp: {m}");
    assert_eq!(m["delay_s"], json!(20));
    assert_eq!(m["timeout_s"], json!(15));
    assert_eq!(m["pool"]["uuid"], json!(id(&pool)));
    assert_eq!(m["load_balancer"]["uuid"], json!(id(&lb)));
}

#[tokio::test]
async fn check_59_http_monitor_defaults_and_partial_patch() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = api
        .create(
            "/load-balancers/health-monitors",
            json!({"pool": id(&pool), "type": "http", "http": {"host": "h"}}),
        )
        .await;
    assert_eq!(
        m["http"],
        json!({"expected_codes": ["200"], "method": "GET", "url_path": "/",
               "version": "1.1", "host": "h"}),
        "{m}"
    );
    let path = format!("/load-balancers/health-monitors/{}", id(&m));
    api.update(&path, json!({"http": {"expected_codes": ["201", "200"]}}))
        .await;
    assert_eq!(
        api.fetch(&path).await["http"],
        json!({"expected_codes": ["201", "200"], "method": "GET", "url_path": "/",
               "version": "1.1", "host": "h"})
    );
}

#[tokio::test]
async fn check_60_monitor_validation_errors() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let r = api
        .post(
            "/load-balancers/health-monitors",
            json!({"pool": id(&pool), "type": "http",
                   "http": {"version": "1.0", "host": "h"}}),
        )
        .await;
    assert_bad_request(
        &r,
        "The host argument can not be used with HTTP version 1.0",
        "host with HTTP/1.0",
    );
    let r = api.post("/load-balancers/health-monitors", json!({})).await;
    assert_bad_request(&r, "This field is required", "empty monitor create");
    assert!(api.list("/load-balancers/health-monitors").await.is_empty());
}

// ---------------------------------------------------------------------------
// 62. What the Go SDK sends (its integration suite cannot run here)
// ---------------------------------------------------------------------------

/// Replays requests exactly as the Go SDK builds them (reference 15.1): base URL
/// without `/v1`, relative `v1/...` paths, JSON content type and Accept on every
/// request, bodies from Go's JSON encoder (trailing newline), empty bodies on
/// GET/DELETE/actions.
struct GoSdk<'a> {
    api: &'a Api,
}

impl GoSdk<'_> {
    fn url(&self, path: &str) -> String {
        if path.starts_with("http") {
            path.to_string()
        } else {
            format!("{}/{}", self.api.base, path)
        }
    }

    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        let body = body.map(|b| format!("{}\n", serde_json::to_string(&b).expect("encode")));
        let token = self.api.token.clone();
        let headers = [
            (CONTENT_TYPE.as_str(), "application/json"),
            (ACCEPT.as_str(), "application/json"),
            (USER_AGENT.as_str(), "cloudscale/v9.1.0"),
        ];
        self.api
            .raw(
                method,
                &self.url(path),
                Some(&token),
                &headers,
                body.as_deref(),
            )
            .await
    }

    /// Create/Get/List: any 2xx, body must decode as JSON.
    async fn decode(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let r = self.send(method.clone(), path, body).await;
        assert!(
            r.status.is_success(),
            "{method} {path}: {} {}",
            r.status,
            r.text
        );
        let v = r.json();
        assert!(
            v.is_object() || v.is_array(),
            "{method} {path}: empty or non-JSON 2xx body: {:?}",
            r.text
        );
        v
    }

    /// Update/Delete/actions: any 2xx, body ignored.
    async fn ok(&self, method: Method, path: &str, body: Option<Value>) {
        let r = self.send(method.clone(), path, body).await;
        assert!(
            r.status.is_success(),
            "{method} {path}: {} {}",
            r.status,
            r.text
        );
    }

    async fn wait(&self, fc: &FakeCloud, path: &str, what: &str, pred: impl Fn(&Value) -> bool) {
        let mut waited = 0;
        loop {
            let r = self.send(Method::GET, path, None).await;
            if r.status.is_success() && pred(&r.json()) {
                return;
            }
            assert!(waited < 300, "{what}: not reached in 5 minutes: {}", r.text);
            fc.advance(Duration::from_secs(2));
            waited += 2;
        }
    }

    /// After a delete the resource must answer 404 with a body Go can decode
    /// into map[string]string.
    async fn gone(&self, fc: &FakeCloud, href: &str) {
        let mut waited = 0;
        loop {
            let r = self.send(Method::GET, href, None).await;
            if r.status == StatusCode::NOT_FOUND {
                if !r.text.is_empty() {
                    assert_flat_error(&r.json());
                }
                return;
            }
            assert!(waited < 300, "{href} still {} after delete", r.status);
            fc.advance(Duration::from_secs(2));
            waited += 2;
        }
    }
}

#[tokio::test]
async fn check_62_go_sdk_request_shapes() {
    let (fc, api) = start().await;
    let go = GoSdk { api: &api };

    // Catalogue and empty lists.
    assert!(go.decode(Method::GET, "v1/regions", None).await.is_array());
    assert!(go.decode(Method::GET, "v1/flavors", None).await.is_array());
    assert_eq!(go.decode(Method::GET, "v1/servers", None).await, json!([]));

    // Server create exactly as Go sends it: ssh_keys null, body ending in "\n".
    let srv = go
        .decode(
            Method::POST,
            "v1/servers",
            Some(json!({"name": "go-srv", "flavor": FLAVOR, "image": IMAGE,
                        "ssh_keys": null, "tags": {"key": "value"}})),
        )
        .await;
    let sid = id(&srv);
    assert!(is_timestamp(s(&srv, "created_at")));
    assert!(srv["flavor"]["vcpu_count"].is_u64(), "{srv}");
    go.wait(&fc, &format!("v1/servers/{sid}"), "server running", |v| {
        v["status"] == "running"
    })
    .await;
    let listed = go
        .decode(Method::GET, "v1/servers?tag%3Akey=value", None)
        .await;
    assert_eq!(uuids(listed.as_array().expect("array")), vec![sid.clone()]);
    let none = go
        .decode(Method::GET, "v1/servers?tag%3Akey=other", None)
        .await;
    assert_eq!(none, json!([]));

    // Actions with an empty body, update with only non-empty fields.
    go.ok(Method::POST, &format!("v1/servers/{sid}/stop"), None)
        .await;
    go.wait(&fc, &format!("v1/servers/{sid}"), "server stopped", |v| {
        v["status"] == "stopped"
    })
    .await;
    go.ok(Method::POST, &format!("v1/servers/{sid}/start"), None)
        .await;
    go.wait(&fc, &format!("v1/servers/{sid}"), "server running", |v| {
        v["status"] == "running"
    })
    .await;
    go.ok(
        Method::PATCH,
        &format!("v1/servers/{sid}"),
        Some(json!({"name": "go-srv-2"})),
    )
    .await;

    // Private network and subnet ("dns_servers": null = use defaults).
    let net = go
        .decode(
            Method::POST,
            "v1/networks",
            Some(json!({"name": "go-net", "mtu": 9000, "auto_create_ipv4_subnet": false})),
        )
        .await;
    let sub = go
        .decode(
            Method::POST,
            "v1/subnets",
            Some(json!({"cidr": "192.168.42.0/24", "network": id(&net), "dns_servers": null})),
        )
        .await;
    assert_eq!(sub["dns_servers"].as_array().expect("dns array").len(), 2);

    // LB, then pool, member, listener, monitor.
    let lb = go
        .decode(
            Method::POST,
            "v1/load-balancers",
            Some(json!({"name": "go-lb", "flavor": "lb-standard", "zone": "rma1"})),
        )
        .await;
    let lid = id(&lb);
    assert!(lb["vip_addresses"][0]["version"].is_u64(), "{lb}");
    go.wait(
        &fc,
        &format!("v1/load-balancers/{lid}"),
        "lb running",
        |v| v["status"] == "running",
    )
    .await;
    let pool = go
        .decode(
            Method::POST,
            "v1/load-balancers/pools",
            Some(
                json!({"name": "go-pool", "load_balancer": lid, "algorithm": "round_robin",
                        "protocol": "tcp"}),
            ),
        )
        .await;
    let pid = id(&pool);
    let member = go
        .decode(
            Method::POST,
            &format!("v1/load-balancers/pools/{pid}/members"),
            Some(
                json!({"name": "go-member", "enabled": true, "protocol_port": 80,
                        "address": "192.168.42.11", "subnet": id(&sub)}),
            ),
        )
        .await;
    assert!(member["protocol_port"].is_u64(), "{member}");
    let listener = go
        .decode(
            Method::POST,
            "v1/load-balancers/listeners",
            Some(json!({"name": "tcp/80", "pool": pid, "protocol": "tcp",
                        "protocol_port": 80, "allowed_cidrs": []})),
        )
        .await;
    assert!(listener["timeout_client_data_ms"].is_u64(), "{listener}");
    let monitor = go
        .decode(
            Method::POST,
            "v1/load-balancers/health-monitors",
            Some(json!({"pool": pid, "type": "tcp"})),
        )
        .await;
    assert!(monitor["delay_s"].is_u64(), "{monitor}");
    go.wait(
        &fc,
        &format!("v1/load-balancers/pools/{pid}/members/{}", id(&member)),
        "member up",
        |v| v["monitor_status"] == "up",
    )
    .await;
    for path in [
        "v1/load-balancers/pools",
        "v1/load-balancers/listeners",
        "v1/load-balancers/health-monitors",
        "v1/load-balancers",
    ] {
        assert_eq!(
            go.decode(Method::GET, path, None)
                .await
                .as_array()
                .expect("array")
                .len(),
            1,
            "{path}"
        );
    }

    // Floating IP on the server, addressed by IP.
    let fip = go
        .decode(
            Method::POST,
            "v1/floating-ips",
            Some(json!({"ip_version": 4, "server": sid})),
        )
        .await;
    assert!(fip["ip_version"].is_u64());
    go.decode(
        Method::GET,
        &format!("v1/floating-ips/{}", fip_ip(&fip)),
        None,
    )
    .await;

    // Delete everything through the absolute href (what the CCM does).
    for res in [
        &monitor, &listener, &member, &pool, &lb, &fip, &srv, &sub, &net,
    ] {
        let href = s(res, "href");
        go.ok(Method::DELETE, href, None).await;
        go.gone(&fc, href).await;
    }
}

// ---------------------------------------------------------------------------
// Extras: explicit in the reference, silent in section 16
// ---------------------------------------------------------------------------

#[tokio::test]
async fn extra_read_only_token_can_read_but_not_write() {
    let (fc, api) = start().await;
    let net = api.create("/networks", json!({"name": "n"})).await;
    let ro = Api::with_token(&fc, READ_ONLY_TOKEN);
    assert_eq!(ro.get("/servers").await.0, StatusCode::OK);
    assert_eq!(ro.list("/networks").await.len(), 1);
    let npath = format!("/networks/{}", id(&net));
    for (st, v) in [
        ro.post("/networks", json!({"name": "x"})).await,
        ro.patch(&npath, json!({"name": "x"})).await,
        ro.delete(&npath).await,
    ] {
        assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
        assert_flat_error(&v);
        assert!(v["detail"].is_string(), "403 needs a detail: {v}");
    }
    assert_eq!(api.fetch(&npath).await["name"], "n", "nothing changed");
    assert_eq!(api.list("/networks").await.len(), 1);
}

#[tokio::test]
async fn extra_wrong_token_is_401() {
    let (fc, _api) = start().await;
    let bad = Api::with_token(&fc, "not-a-valid-token");
    for (st, v) in [
        bad.get("/servers").await,
        bad.post("/networks", json!({"name": "x"})).await,
    ] {
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{v}");
        assert_flat_error(&v);
        assert!(v["detail"].is_string(), "401 needs a detail: {v}");
    }
}

#[tokio::test]
async fn extra_malformed_json_is_400_with_flat_body() {
    let (_fc, api) = start().await;
    let net = api.create("/networks", json!({"name": "n"})).await;
    let token = api.token.clone();
    let ct = [("content-type", "application/json")];
    for (method, path) in [
        (Method::POST, "/networks".to_string()),
        (Method::PATCH, format!("/networks/{}", id(&net))),
        (Method::POST, "/load-balancers".to_string()),
    ] {
        for body in [r#"{"name": "#, "not json at all", "[1, 2"] {
            let r = api
                .raw(method.clone(), &path, Some(&token), &ct, Some(body))
                .await;
            assert_eq!(
                r.status,
                StatusCode::BAD_REQUEST,
                "{method} {path} with {body:?}: {}",
                r.text
            );
            assert_flat_error(&r.json());
        }
    }
    assert_eq!(api.list("/networks").await.len(), 1);
}

#[tokio::test]
async fn extra_wrong_field_type_is_400_naming_the_field() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let (st, v) = api
        .post(
            "/load-balancers/listeners",
            json!({"name": "l", "pool": id(&pool), "protocol": "tcp",
                   "protocol_port": "eighty"}),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    assert_flat_error(&v);
    assert!(
        v.get("protocol_port").is_some(),
        "error must be keyed protocol_port: {v}"
    );
    assert!(api.list("/load-balancers/listeners").await.is_empty());
}

/// 400 naming `field` (as key or in a message), and the resource is unchanged.
async fn assert_immutable(api: &Api, path: &str, field: &str, body: Value) {
    let before = api.fetch(path).await;
    let (st, v) = api.patch(path, body.clone()).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "PATCH {path} {body}: {v}");
    assert_flat_error(&v);
    assert!(
        v.get(field).is_some() || error_text(&v).contains(field),
        "error must name {field}: {v}"
    );
    assert_eq!(
        api.fetch(path).await,
        before,
        "rejected PATCH changed {path}"
    );
}

#[tokio::test]
async fn extra_patch_immutable_fields_rejected() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    assert_immutable(
        &api,
        &format!("/load-balancers/pools/{}", id(&stack.pool)),
        "algorithm",
        json!({"algorithm": "least_connections"}),
    )
    .await;
    assert_immutable(
        &api,
        &format!("/load-balancers/{}", id(&stack.lb)),
        "zone",
        json!({"zone": "lpg1"}),
    )
    .await;
    assert_immutable(
        &api,
        &format!("{}/{}", members_path(&stack.pool), id(&stack.member)),
        "address",
        json!({"address": "192.168.42.99"}),
    )
    .await;
}

#[tokio::test]
async fn extra_deleting_pool_removes_members_and_monitor() {
    let (fc, api) = start().await;
    let stack = lb_stack(&fc, &api).await;
    api.remove(&format!("/load-balancers/pools/{}", id(&stack.pool)))
        .await;
    api.assert_not_found(s(&stack.member, "href")).await;
    api.assert_not_found(s(&stack.monitor, "href")).await;
    assert!(
        !uuids(&api.list("/load-balancers/health-monitors").await).contains(&id(&stack.monitor))
    );
    let (st, v) = api.get(&members_path(&stack.pool)).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "members of a deleted pool: {v}");
    // The LB itself is untouched.
    api.fetch(&format!("/load-balancers/{}", id(&stack.lb)))
        .await;
}

#[tokio::test]
async fn extra_name_list_filter() {
    let (_fc, api) = start().await;
    let a = api.create("/networks", json!({"name": "alpha"})).await;
    let _b = api.create("/networks", json!({"name": "beta"})).await;
    assert_eq!(uuids(&api.list("/networks?name=alpha").await), vec![id(&a)]);
    assert!(api.list("/networks?name=gamma").await.is_empty());
}

#[tokio::test]
async fn extra_floating_ip_cannot_be_unassigned() {
    let (fc, api) = start().await;
    let srv = running_server(&fc, &api, "s", json!({})).await;
    let f = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "server": id(&srv)}),
        )
        .await;
    let path = format!("/floating-ips/{}", fip_ip(&f));
    let (st, v) = api.patch(&path, json!({"server": null})).await;
    if !st.is_success() {
        assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
        assert_flat_error(&v);
    }
    // Reference 8: "There is no way to unassign a floating IP".
    let got = api.fetch(&path).await;
    assert_eq!(
        got["server"]["uuid"],
        json!(id(&srv)),
        "must stay assigned: {got}"
    );
}

#[tokio::test]
async fn extra_unknown_path_is_404_not_found() {
    let (_fc, api) = start().await;
    api.assert_not_found("/no-such-resource").await;
    api.assert_not_found("/no-such-resource/00000000-0000-4000-8000-000000000000")
        .await;
}

#[tokio::test]
async fn extra_patch_without_tags_keeps_tags() {
    let (_fc, api) = start().await;
    let net = make_tagged(&api, "/networks", "n", json!({"a": "1"})).await;
    let path = format!("/networks/{}", id(&net));
    api.update(&path, json!({"name": "renamed"})).await;
    let got = api.fetch(&path).await;
    assert_eq!(got["name"], "renamed");
    assert_eq!(got["tags"], json!({"a": "1"}));
}

#[tokio::test]
async fn extra_deleting_lb_keeps_its_floating_ip() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let f = api
        .create(
            "/floating-ips",
            json!({"ip_version": 4, "load_balancer": id(&lb)}),
        )
        .await;
    let path = format!("/floating-ips/{}", fip_ip(&f));
    let lpath = format!("/load-balancers/{}", id(&lb));
    api.remove(&lpath).await;
    wait_gone(&fc, &api, &lpath, 300).await;
    assert_eq!(s(&api.fetch(&path).await, "network"), s(&f, "network"));
}

#[tokio::test]
async fn extra_subnet_explicit_dns_servers_keep_order() {
    let (_fc, api) = start().await;
    let net = api
        .create(
            "/networks",
            json!({"name": "n", "auto_create_ipv4_subnet": false}),
        )
        .await;
    let sub = api
        .create(
            "/subnets",
            json!({"cidr": "10.0.0.0/8", "network": id(&net),
                   "dns_servers": ["213.144.129.20", "77.109.128.2"]}),
        )
        .await;
    assert_eq!(
        sub["dns_servers"],
        json!(["213.144.129.20", "77.109.128.2"])
    );
    let path = format!("/subnets/{}", id(&sub));
    api.update(&path, json!({"dns_servers": []})).await;
    assert_eq!(api.fetch(&path).await["dns_servers"], json!([]));
}

#[tokio::test]
async fn extra_health_monitor_defaults() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = make_monitor(&api, &pool).await;
    assert_eq!(m["delay_s"], json!(2), "{m}");
    assert_eq!(m["timeout_s"], json!(1), "{m}");
    assert_eq!(m["up_threshold"], json!(2), "{m}");
    assert_eq!(m["down_threshold"], json!(3), "{m}");
    assert_eq!(m["type"], "tcp");
}

/// `anti_affinity_with` lists the other servers of a server's anti-affinity groups as
/// `{href, uuid}` (the Go SDK types it as server stubs; the Terraform provider's and the
/// Ansible collection's tests read `anti_affinity_with[0].uuid`), in step as servers join
/// with their creation and leave with their deletion.
#[tokio::test]
async fn anti_affinity_with_lists_the_other_servers_of_the_group() {
    let (_fc, api) = start().await;
    let group = api
        .create(
            "/server-groups",
            json!({"name": "web", "type": "anti-affinity"}),
        )
        .await;
    let in_group = json!({"server_groups": [id(&group)]});
    let a = make_server(&api, "a", in_group.clone()).await;
    assert_eq!(
        a["anti_affinity_with"],
        json!([]),
        "alone in its group: {a}"
    );
    let b = make_server(&api, "b", in_group.clone()).await;
    let c = make_server(&api, "c", in_group).await;
    let loner = make_server(&api, "loner", json!({})).await;
    let stub = |s: &Value| json!({"href": s["href"], "uuid": s["uuid"]});
    let with = |v: &Value| v["anti_affinity_with"].clone();
    assert_eq!(
        with(&api.fetch(&format!("/servers/{}", id(&a))).await),
        json!([stub(&b), stub(&c)])
    );
    assert_eq!(
        with(&api.fetch(&format!("/servers/{}", id(&b))).await),
        json!([stub(&a), stub(&c)])
    );
    assert_eq!(
        with(&api.fetch(&format!("/servers/{}", id(&loner))).await),
        json!([])
    );
    // The list renders the same.
    let listed = api.list("/servers").await;
    let of = |name: &str| listed.iter().find(|s| s["name"] == name).map(with);
    assert_eq!(of("c"), Some(json!([stub(&a), stub(&b)])));
    // A deleted server leaves the others' lists.
    api.remove(&format!("/servers/{}", id(&b))).await;
    assert_eq!(
        with(&api.fetch(&format!("/servers/{}", id(&a))).await),
        json!([stub(&c)])
    );
}

#[tokio::test]
async fn extra_server_default_shape() {
    let (_fc, api) = start().await;
    let srv = make_server(&api, "s", json!({})).await;
    assert_eq!(srv["zone"], json!({"slug": "rma1"}), "default zone: {srv}");
    assert_eq!(srv["flavor"]["slug"], FLAVOR);
    for key in ["name", "vcpu_count", "memory_gb"] {
        assert!(srv["flavor"].get(key).is_some(), "flavor stub {key}: {srv}");
    }
    assert_eq!(srv["image"]["slug"], IMAGE);
    for key in ["name", "operating_system", "default_username"] {
        assert!(srv["image"][key].is_string(), "image stub {key}: {srv}");
    }
    assert_eq!(srv["tags"], json!({}));
    assert!(srv["server_groups"].is_array(), "{srv}");
    assert!(srv["anti_affinity_with"].is_array(), "{srv}");
    assert!(srv["interfaces"].is_array(), "{srv}");
    let root = &srv["volumes"][0];
    assert_eq!(root["type"], "ssd", "root volume first: {srv}");
    assert_eq!(
        root["size_gb"],
        json!(10),
        "default volume_size_gb 10: {srv}"
    );
}

// ---------------------------------------------------------------------------
// Undocumented choices and the switches that change them (fakecloud/README.md, "Choices
// where the real behaviour is not documented")
// ---------------------------------------------------------------------------

async fn start_with_rules(rules: fakecloud::ApiRules) -> (FakeCloud, Api) {
    let fc = FakeCloud::start(Config {
        rules,
        ..Config::for_tests()
    })
    .await
    .expect("start fakecloud");
    let api = Api::new(&fc);
    (fc, api)
}

fn lenient_duplicates() -> fakecloud::ApiRules {
    fakecloud::ApiRules {
        duplicate_members: fakecloud::Strictness::Lenient,
        ..Default::default()
    }
}

fn lenient_monitor_http() -> fakecloud::ApiRules {
    fakecloud::ApiRules {
        non_http_monitor_http: fakecloud::Strictness::Lenient,
        ..Default::default()
    }
}

/// A member like `make_member`'s first one (192.168.42.11 port 80), differing only in
/// `monitor_port`.
fn twin_member(subnet: &Value) -> Value {
    json!({"name": "twin", "address": "192.168.42.11", "protocol_port": 80,
           "monitor_port": 8080, "subnet": id(subnet)})
}

#[tokio::test]
async fn extra_duplicate_member_strict_is_400_under_address() {
    let (fc, api) = start().await;
    let (_net, sub) = private_subnet(&api, "192.168.42.0/24").await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    make_member(&api, &pool, &sub, "m", "192.168.42.11").await;
    let r = api.post(&members_path(&pool), twin_member(&sub)).await;
    let body = assert_bad_request(&r, "already has a member", "duplicate member");
    assert!(body.get("address").is_some(), "under `address`: {body}");
    assert_eq!(api.list(&members_path(&pool)).await.len(), 1);
    // Only the same address *and* port is refused.
    let mut other_port = twin_member(&sub);
    other_port["protocol_port"] = json!(81);
    api.create(&members_path(&pool), other_port).await;
}

#[tokio::test]
async fn extra_duplicate_member_lenient_creates_both() {
    let (fc, api) = start_with_rules(lenient_duplicates()).await;
    let (_net, sub) = private_subnet(&api, "192.168.42.0/24").await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let first = make_member(&api, &pool, &sub, "m", "192.168.42.11").await;
    let twin = api.create(&members_path(&pool), twin_member(&sub)).await;
    assert_ne!(id(&first), id(&twin));
    assert_eq!(twin["address"], "192.168.42.11", "{twin}");
    assert_eq!(twin["protocol_port"], json!(80), "{twin}");
    assert_eq!(twin["monitor_port"], json!(8080), "{twin}");
    let got = api
        .fetch(&format!("{}/{}", members_path(&pool), id(&twin)))
        .await;
    assert_eq!(got, twin, "the next GET equals the create answer");
    let listed = api.list(&members_path(&pool)).await;
    assert_eq!(uuids(&listed), [id(&first), id(&twin)]);
}

#[tokio::test]
async fn extra_non_http_monitor_http_strict_reports_null() {
    let (fc, api) = start().await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = api
        .create(
            "/load-balancers/health-monitors",
            json!({"pool": id(&pool), "type": "tcp",
                   "http": {"url_path": "/healthz", "host": "h"}}),
        )
        .await;
    assert!(m["http"].is_null(), "ignored for tcp: {m}");
    let path = format!("/load-balancers/health-monitors/{}", id(&m));
    api.update(&path, json!({"http": {"expected_codes": ["204"]}}))
        .await;
    assert!(api.fetch(&path).await["http"].is_null(), "still null");
}

#[tokio::test]
async fn extra_non_http_monitor_http_lenient_is_kept_defaulted_and_merged() {
    let (fc, api) = start_with_rules(lenient_monitor_http()).await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = api
        .create(
            "/load-balancers/health-monitors",
            json!({"pool": id(&pool), "type": "tcp",
                   "http": {"url_path": "/healthz", "host": "h"}}),
        )
        .await;
    assert_eq!(
        m["http"],
        json!({"expected_codes": ["200"], "method": "GET", "url_path": "/healthz",
               "version": "1.1", "host": "h"}),
        "sent keys over the HTTP defaults: {m}"
    );
    let path = format!("/load-balancers/health-monitors/{}", id(&m));
    assert_eq!(
        api.fetch(&path).await,
        m,
        "the next GET equals the create answer"
    );

    // PATCH merges key by key.
    api.update(&path, json!({"http": {"expected_codes": ["204"]}}))
        .await;
    assert_eq!(
        api.fetch(&path).await["http"],
        json!({"expected_codes": ["204"], "method": "GET", "url_path": "/healthz",
               "version": "1.1", "host": "h"})
    );
    // The version is immutable after create, as for HTTP monitors.
    let r = api
        .patch(&path, json!({"http": {"version": "1.0", "host": null}}))
        .await;
    assert_bad_request(&r, "version", "version change");
    assert_eq!(api.fetch(&path).await["http"]["version"], "1.1");
    // And it is validated as for HTTP monitors.
    let r = api
        .patch(&path, json!({"http": {"url_path": "healthz"}}))
        .await;
    let body = assert_bad_request(&r, "url_path", "url_path without /");
    assert!(body.get("http").is_some(), "under `http`: {body}");
}

#[tokio::test]
async fn extra_non_http_monitor_http_lenient_without_http_is_null() {
    let (fc, api) = start_with_rules(lenient_monitor_http()).await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let m = make_monitor(&api, &pool).await;
    assert!(m["http"].is_null(), "nothing sent, nothing stored: {m}");
    // A later PATCH stores what it sends over the defaults; no version was set yet.
    let path = format!("/load-balancers/health-monitors/{}", id(&m));
    api.update(&path, json!({"http": {"version": "1.0"}})).await;
    assert_eq!(
        api.fetch(&path).await["http"],
        json!({"expected_codes": ["200"], "method": "GET", "url_path": "/",
               "version": "1.0", "host": null})
    );
}

#[tokio::test]
async fn extra_non_http_monitor_http_lenient_does_not_change_the_check() {
    // A tcp check needs a TCP connect only: the stored `http` does not turn it into an HTTP
    // check, so a backend answering 503 stays up.
    let (fc, api) = start_with_rules(lenient_monitor_http()).await;
    let (_net, sub) = private_subnet(&api, "192.168.42.0/24").await;
    let lb = running_lb(&fc, &api, "lb").await;
    let pool = make_pool(&api, &lb).await;
    let member = make_member(&api, &pool, &sub, "m", "192.168.42.11").await;
    let r = api
        .raw(
            Method::POST,
            &format!("{}/_fake/backends", api.base),
            None,
            &[("content-type", "application/json")],
            Some(r#"{"address": "192.168.42.11", "http_status": 503}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let m = api
        .create(
            "/load-balancers/health-monitors",
            json!({"pool": id(&pool), "type": "tcp", "http": {"expected_codes": ["200"]}}),
        )
        .await;
    assert!(m["http"].is_object(), "{m}");
    let path = format!("{}/{}", members_path(&pool), id(&member));
    wait_for(&fc, &api, &path, 120, "member up", |v| {
        v["monitor_status"] == "up"
    })
    .await;
}
