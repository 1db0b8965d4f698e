//! Conformance checks for volumes, servers' volumes and volume snapshots: one test per
//! rule of fakecloud/MODEL.md, "Volumes and volume snapshots" (`check_NN_…`, numbered
//! apart from `tests/it/conformance.rs`), plus `extra_*` tests for the rules MODEL.md marks
//! as inferred.
//!
//! The harness of `tests/it/conformance.rs` (`tests/it/support`): an in-process fake with a manual clock per test,
//! real HTTP, time moves only through `FakeCloud::advance`.

use std::time::Duration;

use fakecloud::FakeCloud;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support;
use support::*;

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
    let dump = dump_state(&fc).await;
    assert_eq!(
        dump["volumes"].as_array().map(Vec::len),
        Some(2),
        "root + v"
    );
    assert_eq!(dump["volume_snapshots"].as_array().map(Vec::len), Some(1));
    reset_state(&fc).await;
    assert!(api.list("/volumes").await.is_empty());
    assert!(api.list("/volume-snapshots").await.is_empty());
    restore_state(&fc, &dump).await;
    assert_eq!(
        api.fetch(&vpath(&v)).await["server_uuids"],
        json!([id(&srv)])
    );
    assert_eq!(api.fetch(&spath(&sn)).await["name"], "sn");
    let srv = api.fetch(&format!("/servers/{}", id(&srv))).await;
    assert_eq!(server_volume_ids(&srv).len(), 2);
}
