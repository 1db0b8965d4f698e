//! Conformance checks for custom images and their imports (`/v1/custom-images`,
//! `/v1/custom-images/import`): `check_18`-`check_23` follow the custom image checks of
//! fakecloud/MODEL.md, "Custom images"; `extra_*` tests cover every other rule it lists
//! (validation, immutable fields, the simulated downloads, dump/restore/reset, fault rules,
//! seeded ids).
//!
//! Harness: `tests/it/support` (an in-process fake with a manual clock per test, real HTTP).

use std::time::Duration;

use fakecloud::{Config, FakeCloud, FaultEffect, FaultRule};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support;
use support::*;

const URL: &str = "https://example.com/foo.raw";
const MISSING: &str = "https://example.com/missing.raw";

fn import_body(url: &str, name: &str, extra: Value) -> Value {
    let mut body = json!({
        "url": url,
        "name": name,
        "slug": "my-foo",
        "user_data_handling": "pass-through",
        "zones": ["lpg1", "rma1"],
    });
    merge(&mut body, extra);
    body
}

async fn start_import(api: &Api, url: &str, name: &str, extra: Value) -> Value {
    api.create("/custom-images/import", import_body(url, name, extra))
        .await
}

fn ipath(v: &Value) -> String {
    format!("/custom-images/import/{}", id(v))
}

fn cpath(v: &Value) -> String {
    format!("/custom-images/{}", id(v))
}

/// Polls the import until it leaves `in_progress` (like the Go SDK's WaitFor).
async fn settled(fc: &FakeCloud, api: &Api, imp: &Value) -> Value {
    wait_for(fc, api, &ipath(imp), 60, "import settled", |v| {
        v["status"] != "in_progress"
    })
    .await
}

/// Imports `url` and waits for success; returns the custom image.
async fn image(fc: &FakeCloud, api: &Api, url: &str, name: &str, extra: Value) -> Value {
    let imp = start_import(api, url, name, extra).await;
    let done = settled(fc, api, &imp).await;
    assert_eq!(done["status"], "success", "{done}");
    api.fetch(&cpath(&imp)).await
}

async fn admin(fc: &FakeCloud, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let http = reqwest::Client::new();
    let mut rb = http.request(method, format!("{}/_fake{path}", fc.base_url()));
    if let Some(b) = body {
        rb = rb.json(&b);
    }
    let resp = rb.send().await.expect("admin request");
    let status = resp.status();
    let text = resp.text().await.expect("admin body");
    assert!(status.is_success(), "admin {path}: {status} {text}");
    if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("admin JSON")
    }
}

async fn declare(fc: &FakeCloud, decl: Value) {
    admin(fc, reqwest::Method::POST, "/downloads", Some(decl)).await;
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

#[tokio::test]
async fn check_18_import_answers_201_in_progress_with_the_image_stub() {
    let (_fc, api) = start().await;
    let body = import_body(
        URL,
        "my-foo",
        json!({"source_format": "qcow2", "firmware_type": "uefi", "tags": {"a": "1"}}),
    );
    let (st, imp) = api.post("/custom-images/import", body).await;
    assert_eq!(st, StatusCode::CREATED, "{imp}");
    let uuid = id(&imp);
    assert_eq!(imp["status"], "in_progress");
    assert_eq!(
        imp["custom_image"]["uuid"],
        json!(uuid),
        "uuid == custom_image.uuid"
    );
    assert_eq!(imp["custom_image"]["name"], "my-foo");
    assert_eq!(
        s(&imp["custom_image"], "href"),
        format!("{}/custom-images/{uuid}", api.api)
    );
    assert_eq!(
        s(&imp, "href"),
        format!("{}/custom-images/import/{uuid}", api.api)
    );
    assert_eq!(imp["url"], URL);
    assert_eq!(imp["error_message"], "");
    assert_eq!(imp["tags"], json!({"a": "1"}));
    let mut keys: Vec<&str> = imp
        .as_object()
        .expect("object")
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "custom_image",
            "error_message",
            "href",
            "status",
            "tags",
            "url",
            "uuid"
        ],
        "exactly the import fields"
    );
    assert_eq!(
        api.fetch(&ipath(&imp)).await,
        imp,
        "GET equals the 201 body"
    );
    assert_eq!(api.list("/custom-images/import").await, vec![imp.clone()]);
}

#[tokio::test]
async fn check_19_import_succeeds_then_the_image_has_the_import_fields() {
    let (fc, api) = start().await;
    let imp = start_import(
        &api,
        URL,
        "Your Distro",
        json!({"firmware_type": "uefi", "tags": {"team": "x"}}),
    )
    .await;
    api.assert_not_found(&cpath(&imp)).await;
    assert!(
        api.list("/custom-images").await.is_empty(),
        "invisible while in progress"
    );
    let done = wait_for(&fc, &api, &ipath(&imp), 60, "import success", |v| {
        v["status"] == "success"
    })
    .await;
    assert_eq!(done["error_message"], "");
    let img = api.fetch(&cpath(&imp)).await;
    assert_eq!(img["uuid"], imp["uuid"]);
    assert_eq!(
        s(&img, "href"),
        format!("{}/custom-images/{}", api.api, id(&imp))
    );
    assert_eq!(img["name"], "Your Distro");
    assert_eq!(img["slug"], "my-foo");
    assert!(img["size_gb"].as_i64().is_some_and(|n| n >= 1), "{img}");
    assert!(is_hex(s(&img["checksums"], "md5"), 32), "{img}");
    assert!(is_hex(s(&img["checksums"], "sha256"), 64), "{img}");
    assert_eq!(img["user_data_handling"], "pass-through");
    assert_eq!(img["firmware_type"], "uefi");
    assert_eq!(img["zones"], json!([{"slug": "lpg1"}, {"slug": "rma1"}]));
    assert_eq!(img["tags"], json!({"team": "x"}));
    assert!(is_timestamp(s(&img, "created_at")), "{img}");
    assert_eq!(api.list("/custom-images").await, vec![img]);
}

#[tokio::test]
async fn check_20_missing_url_fails_with_the_http_status_and_makes_no_image() {
    let (fc, api) = start().await;
    declare(&fc, json!({"url": MISSING, "status": 404})).await;
    let imp = start_import(&api, MISSING, "gone", json!({})).await;
    assert_eq!(imp["status"], "in_progress", "fails only at the end");
    assert_eq!(imp["error_message"], "");
    let done = settled(&fc, &api, &imp).await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error_message"], "Expected HTTP 200, got HTTP 404");
    fc.advance(Duration::from_secs(60));
    api.assert_not_found(&cpath(&imp)).await;
    assert!(api.list("/custom-images").await.is_empty());
    let listed = api.list("/custom-images/import").await;
    assert_eq!(uuids(&listed), vec![id(&imp)], "failed imports stay listed");
    // any other status is reported the same way
    declare(&fc, json!({"url": MISSING, "status": 403})).await;
    let again = start_import(&api, MISSING, "gone", json!({})).await;
    assert_ne!(id(&again), id(&imp), "a retry is a new import");
    let done = settled(&fc, &api, &again).await;
    assert_eq!(done["error_message"], "Expected HTTP 200, got HTTP 403");
}

#[tokio::test]
async fn check_21_patch_each_field_then_delete() {
    let (fc, api) = start().await;
    let img = image(&fc, &api, URL, "a", json!({"tags": {"k": "v"}})).await;
    let p = cpath(&img);
    api.update(&p, json!({"name": "b"})).await;
    assert_eq!(api.fetch(&p).await["name"], "b");
    api.update(&p, json!({"slug": "b-slug"})).await;
    assert_eq!(api.fetch(&p).await["slug"], "b-slug");
    api.update(&p, json!({"user_data_handling": "extend-cloud-config"}))
        .await;
    assert_eq!(
        api.fetch(&p).await["user_data_handling"],
        "extend-cloud-config"
    );
    api.update(&p, json!({"tags": {"new": "1"}})).await;
    let got = api.fetch(&p).await;
    assert_eq!(got["tags"], json!({"new": "1"}), "PATCH replaces tags");
    assert_eq!(
        (&got["checksums"], &got["size_gb"], &got["created_at"]),
        (&img["checksums"], &img["size_gb"], &img["created_at"]),
        "read-only fields unchanged"
    );
    // several at once (the CLI sends them together)
    api.update(
        &p,
        json!({"name": "c", "slug": "c", "user_data_handling": "pass-through", "tags": {}}),
    )
    .await;
    let got = api.fetch(&p).await;
    assert_eq!(
        (
            &got["name"],
            &got["slug"],
            &got["user_data_handling"],
            &got["tags"]
        ),
        (&json!("c"), &json!("c"), &json!("pass-through"), &json!({}))
    );
    api.remove(&p).await;
    api.assert_not_found(&p).await;
    assert!(api.list("/custom-images").await.is_empty());
    let (st, _) = api.delete(&p).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "second DELETE");
}

#[tokio::test]
async fn check_22_server_from_a_custom_image_by_uuid_or_slug() {
    let (fc, api) = start().await;
    let img = image(&fc, &api, URL, "My Distro", json!({})).await;
    let want = json!({"slug": "custom:my-foo", "name": "My Distro",
                      "operating_system": "", "default_username": ""});
    for image in [id(&img), "custom:my-foo".to_string()] {
        let srv = make_server(&api, "s", json!({"image": image, "zone": "lpg1"})).await;
        assert_eq!(srv["image"], want, "POST answer, image {image}");
        assert_eq!(
            api.fetch(&format!("/servers/{}", id(&srv))).await["image"],
            want
        );
    }
    let catalogue = api.list("/images").await;
    assert!(
        catalogue
            .iter()
            .all(|i| s(i, "slug") != "custom:my-foo" && i["name"] != "My Distro"),
        "GET /v1/images lists no custom image"
    );
    // deleting an image in use is allowed; its servers keep their stub
    api.remove(&cpath(&img)).await;
    let servers = api.list("/servers").await;
    assert_eq!(servers.len(), 2);
    assert!(servers.iter().all(|s| s["image"] == want), "{servers:?}");
}

#[tokio::test]
async fn check_23_unknown_import_is_404() {
    let (_fc, api) = start().await;
    api.assert_not_found("/custom-images/import/00000000-0000-4000-8000-000000000000")
        .await;
    api.assert_not_found("/custom-images/import/not-a-uuid")
        .await;
    api.assert_not_found("/custom-images/00000000-0000-4000-8000-000000000000")
        .await;
}

#[tokio::test]
async fn extra_import_validation_names_the_fields() {
    let (_fc, api) = start().await;
    let r = api.post("/custom-images/import", json!({})).await;
    let v = assert_bad_request(&r, "This field is required.", "empty import");
    for key in ["url", "name", "user_data_handling", "zones"] {
        assert_eq!(v[key], "This field is required.", "{key}: {v}");
    }
    assert!(v.get("slug").is_none(), "slug is optional: {v}");
    let cases = [
        (json!({"url": "ftp://x/y"}), "url"),
        (json!({"url": "nonsense"}), "url"),
        (json!({"name": ""}), "name"),
        (json!({"slug": ""}), "slug"),
        (json!({"user_data_handling": "merge"}), "user_data_handling"),
        (json!({"zones": []}), "zones"),
        (json!({"zones": ["xyz1"]}), "zones"),
        (json!({"zones": "rma1"}), "zones"),
        (json!({"source_format": "vmdk"}), "source_format"),
        (json!({"firmware_type": "efi"}), "firmware_type"),
        (json!({"tags": ["x"]}), "tags"),
    ];
    for (extra, field) in cases {
        let r = api
            .post(
                "/custom-images/import",
                import_body(URL, "n", extra.clone()),
            )
            .await;
        let v = assert_bad_request(&r, "", &format!("{extra}"));
        assert!(v.get(field).is_some(), "{extra}: error under {field}: {v}");
    }
    assert!(
        api.list("/custom-images/import").await.is_empty(),
        "nothing imported"
    );
}

#[tokio::test]
async fn extra_import_defaults_and_optional_slug() {
    let (fc, api) = start().await;
    let body = json!({"url": URL, "name": "n", "user_data_handling": "extend-cloud-config",
                      "zones": ["rma1", "rma1"], "source_format": null, "slug": null});
    let imp = api.create("/custom-images/import", body).await;
    settled(&fc, &api, &imp).await;
    let img = api.fetch(&cpath(&imp)).await;
    assert_eq!(img["firmware_type"], "bios", "default firmware");
    assert_eq!(img["slug"], Value::Null, "no slug");
    assert_eq!(img["tags"], json!({}));
    assert_eq!(
        img["zones"],
        json!([{"slug": "rma1"}]),
        "a repeated zone counts once"
    );
    // a server from a slug-less image shows no slug
    let srv = make_server(&api, "s", json!({"image": id(&img)})).await;
    assert_eq!(srv["image"]["slug"], Value::Null);
    assert_eq!(srv["image"]["name"], "n");
}

#[tokio::test]
async fn extra_status_is_in_progress_then_settles_never_started() {
    let (fc, api) = start().await;
    let imp = start_import(&api, URL, "n", json!({})).await;
    let mut statuses = Vec::new();
    for _ in 0..10 {
        statuses.push(api.fetch(&ipath(&imp)).await["status"].clone());
        fc.advance(Duration::from_millis(500));
    }
    assert_eq!(statuses.first(), Some(&json!("in_progress")));
    assert_eq!(statuses.last(), Some(&json!("success")));
    assert!(
        statuses
            .iter()
            .all(|s| *s == "in_progress" || *s == "success"),
        "{statuses:?}"
    );
    // before success the image answers 404 on every method
    let other = start_import(&api, URL, "m", json!({})).await;
    let (st, _) = api.patch(&cpath(&other), json!({"name": "x"})).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = api.delete(&cpath(&other)).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn extra_checksums_and_size_follow_the_url_not_the_format() {
    let (fc, api) = start().await;
    let raw = image(&fc, &api, URL, "raw", json!({})).await;
    let qcow = image(&fc, &api, URL, "q", json!({"source_format": "qcow2"})).await;
    let iso = image(&fc, &api, URL, "i", json!({"source_format": "iso"})).await;
    for other in [&qcow, &iso] {
        assert_eq!(
            other["checksums"], raw["checksums"],
            "same image after conversion"
        );
        assert_eq!(other["size_gb"], raw["size_gb"]);
    }
    let different = image(&fc, &api, "https://example.com/bar.raw", "b", json!({})).await;
    assert_ne!(different["checksums"], raw["checksums"]);
    // a declared size is taken, and changes the synthetic content
    let big = "https://example.com/big.raw";
    declare(&fc, json!({"url": big, "size_gb": 42})).await;
    let img = image(&fc, &api, big, "big", json!({})).await;
    assert_eq!(img["size_gb"], 42);
}

#[tokio::test]
async fn extra_immutable_fields_and_patch_validation() {
    let (fc, api) = start().await;
    let img = image(&fc, &api, URL, "a", json!({"firmware_type": "uefi"})).await;
    let p = cpath(&img);
    let r = api.patch(&p, json!({"firmware_type": "bios"})).await;
    assert_bad_request(&r, "cannot be changed", "firmware_type");
    assert!(r.1.get("firmware_type").is_some(), "{}", r.1);
    let r = api.patch(&p, json!({"zones": ["lpg1"]})).await;
    assert_bad_request(&r, "cannot be changed", "zones");
    assert!(r.1.get("zones").is_some(), "{}", r.1);
    // the unchanged values are accepted, as slugs or stubs, in any order
    api.update(
        &p,
        json!({"firmware_type": "uefi", "zones": ["rma1", "lpg1"], "name": "b"}),
    )
    .await;
    api.update(&p, json!({"zones": [{"slug": "lpg1"}, {"slug": "rma1"}]}))
        .await;
    for (body, field) in [
        (json!({"name": ""}), "name"),
        (json!({"slug": ""}), "slug"),
        (json!({"user_data_handling": "x"}), "user_data_handling"),
        (json!({"tags": "x"}), "tags"),
        (json!({"name": 5}), "name"),
    ] {
        let r = api.patch(&p, body.clone()).await;
        let v = assert_bad_request(&r, "", &format!("{body}"));
        assert!(v.get(field).is_some(), "{body}: {v}");
    }
    let got = api.fetch(&p).await;
    assert_eq!(got["name"], "b", "only the valid PATCH changed it");
    assert_eq!(
        (&got["firmware_type"], &got["zones"]),
        (&img["firmware_type"], &img["zones"])
    );
    let r = api
        .patch(
            "/custom-images/00000000-0000-4000-8000-000000000000",
            json!({}),
        )
        .await;
    assert_eq!(r.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn extra_list_filters_by_tag_and_name() {
    let (fc, api) = start().await;
    let a = image(&fc, &api, URL, "a", json!({"tags": {"env": "prod"}})).await;
    let b = image(&fc, &api, URL, "b", json!({"tags": {"env": "dev"}})).await;
    assert_eq!(
        uuids(&api.list("/custom-images").await),
        vec![id(&a), id(&b)]
    );
    assert_eq!(
        uuids(&api.list("/custom-images?tag:env=prod").await),
        vec![id(&a)]
    );
    assert_eq!(
        uuids(&api.list("/custom-images?tag%3Aenv").await),
        vec![id(&a), id(&b)]
    );
    assert_eq!(
        uuids(&api.list("/custom-images?name=b").await),
        vec![id(&b)]
    );
    assert!(api.list("/custom-images?tag:env=qa").await.is_empty());
    assert_eq!(
        uuids(&api.list("/custom-images/import?tag:env=dev").await),
        vec![id(&b)]
    );
}

#[tokio::test]
async fn extra_server_image_errors_name_the_field() {
    let (fc, api) = start().await;
    let img = image(&fc, &api, URL, "n", json!({"zones": ["lpg1"]})).await;
    let body = |image: &str, zone: &str| json!({"name": "s", "flavor": FLAVOR, "image": image, "zone": zone});
    let r = api.post("/servers", body(&id(&img), "rma1")).await;
    assert_bad_request(&r, "not available in zone rma1", "other zone");
    assert!(r.1.get("image").is_some(), "{}", r.1);
    let r = api.post("/servers", body("custom:my-foo", "rma1")).await;
    assert_bad_request(&r, "not available in zone rma1", "other zone by slug");
    for unknown in [
        "custom:nope",
        "00000000-0000-4000-8000-000000000000",
        "nope",
    ] {
        let r = api.post("/servers", body(unknown, "lpg1")).await;
        let v = assert_bad_request(&r, "is not a valid choice", unknown);
        assert!(v.get("image").is_some(), "{v}");
    }
    // an image whose import has not succeeded is unknown
    let pending = start_import(&api, URL, "p", json!({"slug": "pending"})).await;
    let r = api.post("/servers", body(&id(&pending), "lpg1")).await;
    assert_bad_request(&r, "is not a valid choice", "pending image");
    assert!(api.list("/servers").await.is_empty(), "no server made");
}

#[tokio::test]
async fn extra_downloads_are_listed_replaced_and_cleared() {
    let (fc, api) = start().await;
    declare(
        &fc,
        json!([{"url": MISSING, "status": 404}, {"url": URL, "size_gb": 3}]),
    )
    .await;
    let listed = admin(&fc, reqwest::Method::GET, "/downloads", None).await;
    assert_eq!(
        listed,
        json!([{"url": MISSING, "status": 404, "size_gb": null},
               {"url": URL, "status": 200, "size_gb": 3}])
    );
    declare(&fc, json!({"url": MISSING, "status": 500})).await;
    let listed = admin(&fc, reqwest::Method::GET, "/downloads", None).await;
    assert_eq!(
        listed[0]["status"], 500,
        "a declaration replaces the earlier one"
    );
    admin(&fc, reqwest::Method::DELETE, "/downloads", None).await;
    assert_eq!(
        admin(&fc, reqwest::Method::GET, "/downloads", None).await,
        json!([])
    );
    let img = image(&fc, &api, MISSING, "back", json!({})).await;
    assert_eq!(img["name"], "back", "undeclared URLs answer 200");
    // bad declarations are refused
    let http = reqwest::Client::new();
    for bad in [
        json!({"url": "x", "status": 42}),
        json!({"url": "x", "size_gb": 0}),
        json!({"status": 404}),
        json!({"url": ""}),
    ] {
        let st = http
            .post(format!("{}/_fake/downloads", fc.base_url()))
            .json(&bad)
            .send()
            .await
            .expect("post")
            .status();
        assert_eq!(st, StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[tokio::test]
async fn extra_state_dump_reset_restore_include_custom_images() {
    let (fc, api) = start().await;
    declare(&fc, json!({"url": MISSING, "status": 404})).await;
    let img = image(&fc, &api, URL, "a", json!({"tags": {"k": "v"}})).await;
    let failed = start_import(&api, MISSING, "f", json!({})).await;
    let pending = start_import(&api, URL, "p", json!({})).await;
    let imports = api.list("/custom-images/import").await;
    let dump = admin(&fc, reqwest::Method::GET, "/state", None).await;
    for key in ["custom_images", "custom_image_imports", "downloads"] {
        assert!(dump[key].is_array(), "{key} is a list in the dump: {dump}");
    }
    admin(&fc, reqwest::Method::POST, "/reset", None).await;
    assert!(api.list("/custom-images").await.is_empty());
    assert!(api.list("/custom-images/import").await.is_empty());
    assert_eq!(
        admin(&fc, reqwest::Method::GET, "/downloads", None).await,
        json!([])
    );
    admin(&fc, reqwest::Method::PUT, "/state", Some(dump.clone())).await;
    assert_eq!(
        api.fetch(&cpath(&img)).await,
        img,
        "same image after restore"
    );
    assert_eq!(api.list("/custom-images/import").await, imports);
    assert_eq!(
        admin(&fc, reqwest::Method::GET, "/downloads", None)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    // the pending import still completes after the restore, the failed one stays failed
    let done = settled(&fc, &api, &pending).await;
    assert_eq!(done["status"], "success");
    assert_eq!(api.fetch(&ipath(&failed)).await["status"], "failed");
    // a dump made before custom images existed restores with none
    let mut old = dump.clone();
    let map = old.as_object_mut().expect("dump object");
    for key in ["custom_images", "custom_image_imports", "downloads"] {
        map.remove(key);
    }
    admin(&fc, reqwest::Method::PUT, "/state", Some(old)).await;
    assert!(api.list("/custom-images").await.is_empty());
    assert!(api.list("/custom-images/import").await.is_empty());
}

#[tokio::test]
async fn extra_fault_rules_reach_custom_images() {
    let (fc, api) = start().await;
    let rule = FaultRule::new(
        Some("POST"),
        "/v1/custom-images/**",
        FaultEffect::status(503),
    );
    fc.faults().add(rule.times(1)).expect("add rule");
    // the harness refuses 5xx answers: a plain client sees the injected one
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{}/custom-images/import", api.api))
        .bearer_auth(&api.token)
        .json(&import_body(URL, "n", json!({})))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        api.list("/custom-images/import").await.is_empty(),
        "a faulted import never ran"
    );
    let imp = start_import(&api, URL, "n", json!({})).await;
    settled(&fc, &api, &imp).await;
    fc.faults()
        .add(FaultRule::new(
            Some("GET"),
            "/v1/custom-images/*",
            FaultEffect::status(404),
        ))
        .expect("add rule");
    let (st, _) = api.get(&cpath(&imp)).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "GET of the image is faulted");
}

#[tokio::test]
async fn extra_seeded_runs_repeat_ids_and_checksums() {
    async fn run() -> Vec<Value> {
        let config = Config {
            id_seed: Some(7),
            ..Config::for_tests()
        };
        let fc = FakeCloud::start(config).await.expect("start fakecloud");
        let api = Api::new(&fc);
        let mut out = Vec::new();
        for name in ["a", "b"] {
            let img = image(&fc, &api, URL, name, json!({})).await;
            out.push(json!({"uuid": img["uuid"], "checksums": img["checksums"],
                            "size_gb": img["size_gb"]}));
        }
        fc.shutdown().await;
        out
    }
    let first = run().await;
    assert_eq!(first, run().await, "same seed, same ids and checksums");
    assert_ne!(first[0]["uuid"], first[1]["uuid"]);
}
