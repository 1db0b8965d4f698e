//! Seeds of custom images, volumes, volume snapshots and routers (fakecloud/README.md,
//! "Seed files"): each section loads settled and shows through `/v1`, references work by
//! name and by UUID, and a bad entry fails naming it and loads nothing.
//!
//! The harness of the conformance suites (`tests/it/support`): an in-process fake with a
//! manual clock, so "settled" means visible without the clock moving.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support;
use support::*;

const SERVER_UUID: &str = "8f6d1f8c-5a5e-4d7a-9a43-2b7f3f3c0a01";
const NETWORK_UUID: &str = "2c1b7a55-0d4e-4f6a-8c1e-5b0e9d8f7a02";

/// `POST /_fake/seed` (no token): status and body.
async fn post_seed(api: &Api, doc: &Value) -> (StatusCode, Value) {
    let url = format!("{}/_fake/seed", api.base);
    let body = doc.to_string();
    let r = api
        .raw(
            Method::POST,
            &url,
            None,
            &[("content-type", "application/json")],
            Some(&body),
        )
        .await;
    let v = r.json();
    (r.status, v)
}

/// Applies a seed that must load; returns its counts.
async fn seed(api: &Api, doc: Value) -> Value {
    let (st, v) = post_seed(api, &doc).await;
    assert_eq!(st, StatusCode::CREATED, "POST /_fake/seed {doc}: {v}");
    v
}

/// A network `priv` (rma1, 10.30.0.0/24, gateway .1) and a server `app` on it, both with
/// fixed UUIDs.
fn base() -> Value {
    json!({
        "networks": [{"name": "priv", "uuid": NETWORK_UUID, "zone": "rma1",
                      "subnets": [{"cidr": "10.30.0.0/24", "gateway_address": "10.30.0.1"}]}],
        "servers": [{"name": "app", "uuid": SERVER_UUID, "zone": "rma1",
                     "private": [{"network": "priv", "address": "10.30.0.10"}]}]
    })
}

fn with(extra: Value) -> Value {
    let mut doc = base();
    merge(&mut doc, extra);
    doc
}

fn find<'a>(list: &'a [Value], name: &str) -> &'a Value {
    list.iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("{name} is listed: {list:?}"))
}

#[tokio::test]
async fn volumes_load_attached_by_name_or_uuid_and_detached() {
    let (_fc, api) = start().await;
    let counts = seed(
        &api,
        with(json!({"volumes": [
            {"name": "data", "size_gb": 100, "server": "app", "tags": {"k": "v"}},
            {"name": "logs", "size_gb": 20, "server": SERVER_UUID},
            {"name": "archive", "size_gb": 200, "type": "bulk", "zone": "lpg1"},
            {"name": "scratch", "size_gb": 5}
        ]})),
    )
    .await;
    assert_eq!(counts["volumes"], 4, "{counts}");
    assert!(
        counts.get("routers").is_none(),
        "zero counts left out: {counts}"
    );

    let volumes = api.list("/volumes").await;
    assert_eq!(volumes.len(), 5, "four and app's root volume: {volumes:?}");
    let data = find(&volumes, "data");
    assert_eq!(data["server_uuids"], json!([SERVER_UUID]));
    assert_eq!(data["zone"]["slug"], "rma1", "the server's zone");
    assert_eq!(data["type"], "ssd");
    assert_eq!(data["size_gb"], 100);
    assert_eq!(data["tags"], json!({"k": "v"}));
    assert_eq!(find(&volumes, "logs")["server_uuids"], json!([SERVER_UUID]));
    let archive = find(&volumes, "archive");
    assert_eq!(archive["server_uuids"], json!([]));
    assert_eq!(archive["type"], "bulk");
    assert_eq!(archive["zone"]["slug"], "lpg1");
    assert_eq!(
        find(&volumes, "scratch")["zone"]["slug"],
        "rma1",
        "--default-zone"
    );

    let server = api.fetch(&format!("/servers/{SERVER_UUID}")).await;
    let names: Vec<&str> = server["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["app-root", "data", "logs"],
        "root first, then in order"
    );
}

#[tokio::test]
async fn volume_snapshots_are_available_at_once_by_name_or_uuid() {
    let (_fc, api) = start().await;
    seed(
        &api,
        with(json!({
            "volumes": [{"name": "data", "size_gb": 50, "server": "app"}],
            "volume_snapshots": [
                {"name": "nightly", "volume": "data", "tags": {"when": "night"}},
                {"name": "root-snap", "volume": "app-root"}
            ]
        })),
    )
    .await;
    let data = find(&api.list("/volumes").await, "data").clone();
    let counts = seed(
        &api,
        json!({"volume_snapshots": [{"name": "by-uuid", "volume": id(&data)}]}),
    )
    .await;
    assert_eq!(counts["volume_snapshots"], 1, "{counts}");

    let snaps = api.list("/volume-snapshots").await;
    assert_eq!(snaps.len(), 3, "{snaps:?}");
    for s in &snaps {
        assert_eq!(s["status"], "available", "settled: {s}");
    }
    let nightly = find(&snaps, "nightly");
    assert_eq!(nightly["source_volume"]["uuid"], data["uuid"]);
    assert_eq!(nightly["size_gb"], 50);
    assert_eq!(nightly["tags"], json!({"when": "night"}));
    assert_eq!(
        find(&snaps, "by-uuid")["source_volume"]["uuid"],
        data["uuid"]
    );
    assert_eq!(
        find(&snaps, "root-snap")["source_volume"]["name"],
        "app-root"
    );
}

#[tokio::test]
async fn custom_images_are_imported_and_servers_boot_from_them() {
    let (_fc, api) = start().await;
    let counts = seed(
        &api,
        json!({
            "custom_images": [
                {"name": "Alpine", "slug": "alpine", "url": "https://example.com/a.raw",
                 "zones": ["rma1", "lpg1", "rma1"], "user_data_handling": "pass-through",
                 "size_gb": 4, "tags": {"os": "alpine"}},
                {"name": "Plain", "url": "https://example.com/p.qcow2", "zones": ["rma1"],
                 "user_data_handling": "extend-cloud-config", "source_format": "qcow2",
                 "firmware_type": "uefi"}
            ],
            "servers": [{"name": "box", "image": "custom:alpine", "zone": "lpg1"}]
        }),
    )
    .await;
    assert_eq!(counts["custom_images"], 2, "{counts}");
    assert_eq!(counts["servers"], 1, "{counts}");

    let images = api.list("/custom-images").await;
    assert_eq!(images.len(), 2, "listed at once: {images:?}");
    let alpine = find(&images, "Alpine");
    assert_eq!(alpine["slug"], "alpine");
    assert_eq!(alpine["size_gb"], 4);
    assert_eq!(alpine["firmware_type"], "bios");
    assert_eq!(alpine["zones"], json!([{"slug": "rma1"}, {"slug": "lpg1"}]));
    assert_eq!(alpine["tags"], json!({"os": "alpine"}));
    let plain = find(&images, "Plain");
    assert_eq!(plain["slug"], Value::Null);
    assert_eq!(plain["firmware_type"], "uefi");
    assert_eq!(plain["user_data_handling"], "extend-cloud-config");
    let size = plain["size_gb"].as_i64().expect("size_gb");
    assert!((1..=10).contains(&size), "derived from the URL: {size}");
    let import = api
        .fetch(&format!("/custom-images/import/{}", id(alpine)))
        .await;
    assert_eq!(import["status"], "success", "{import}");

    let servers = api.list("/servers").await;
    let boxed = find(&servers, "box");
    assert_eq!(boxed["status"], "running");
    assert_eq!(boxed["image"]["slug"], "custom:alpine");
    assert_eq!(boxed["image"]["name"], "Alpine");

    // By UUID, from a later seed.
    seed(
        &api,
        json!({"servers": [{"name": "plain-box", "image": id(plain)}]}),
    )
    .await;
    let plain_box = find(&api.list("/servers").await, "plain-box").clone();
    assert_eq!(plain_box["image"]["name"], "Plain", "{plain_box}");
}

#[tokio::test]
async fn routers_are_active_with_their_interfaces() {
    let (_fc, api) = start().await;
    let counts = seed(
        &api,
        with(json!({
            "networks": [
                {"name": "priv", "uuid": NETWORK_UUID, "zone": "rma1",
                 "subnets": [{"cidr": "10.30.0.0/24", "gateway_address": "10.30.0.1"}]},
                {"name": "far", "zone": "lpg1", "subnets": [{"cidr": "10.40.0.0/24"}]}
            ],
            "routers": [
                {"name": "gw.example.com", "internet_gateway": true, "tags": {"t": "1"},
                 "interfaces": [{"network": "priv"}]},
                {"name": "edge", "interfaces": [{"network": "far", "address": "10.40.0.7"}]},
                {"name": "second", "interfaces": [{"network": NETWORK_UUID, "address": "10.30.0.2"}]}
            ]
        })),
    )
    .await;
    assert_eq!(counts["routers"], 3, "{counts}");
    assert_eq!(counts["router_interfaces"], 3, "{counts}");

    let routers = api.list("/routers").await;
    for r in &routers {
        assert_eq!(r["status"], "active", "settled: {r}");
    }
    let gw = find(&routers, "gw.example.com");
    assert_eq!(gw["zone"]["slug"], "rma1");
    assert_eq!(gw["internet_gateway"], true);
    let gw_addresses = gw["internet_gateway_addresses"].as_array().expect("list");
    assert_eq!(gw_addresses.len(), 1, "{gw}");
    assert_eq!(gw_addresses[0]["reverse_ptr"], "gw.example.com");
    assert_eq!(gw["tags"], json!({"t": "1"}));
    let iface = &gw["interfaces"][0];
    assert_eq!(iface["network"]["uuid"], NETWORK_UUID);
    assert_eq!(
        iface["addresses"][0]["address"], "10.30.0.1",
        "the subnet's gateway address"
    );
    let edge = find(&routers, "edge");
    assert_eq!(edge["zone"]["slug"], "lpg1", "the network's zone");
    assert_eq!(edge["internet_gateway"], false);
    assert_eq!(
        edge["interfaces"][0]["addresses"][0]["address"],
        "10.40.0.7"
    );
    let second = find(&routers, "second");
    assert_eq!(second["interfaces"][0]["network"]["name"], "priv");
}

/// Every collection a seed fills, empty.
async fn assert_nothing_loaded(api: &Api, ctx: &str) {
    for coll in [
        "/networks",
        "/servers",
        "/volumes",
        "/volume-snapshots",
        "/custom-images",
        "/custom-images/import",
        "/routers",
    ] {
        assert!(api.list(coll).await.is_empty(), "{ctx}: {coll} stays empty");
    }
}

/// A bad entry, the label the error must name it by, and a part of the message.
type BadCase = (Value, &'static str, &'static str);

/// Bad volumes and snapshots (merged into `base()`).
fn bad_storage_entries() -> Vec<BadCase> {
    vec![
        (
            json!({"volumes": [{"name": "ok", "size_gb": 1}, {"name": "data", "size_gb": 10, "server": "app", "zone": "lpg1"}]}),
            "volumes[1] (name \"data\")",
            "server: The server is in zone rma1, the volume in zone lpg1.",
        ),
        (
            json!({"volumes": [{"name": "data", "size_gb": 10, "server": "nope"}]}),
            "volumes[0] (name \"data\")",
            "server: server \"nope\" does not exist",
        ),
        (
            json!({"volumes": [{"name": "big", "size_gb": 150, "type": "bulk"}]}),
            "volumes[0] (name \"big\")",
            "size_gb: The size of bulk volumes must be a multiple of 100.",
        ),
        (
            json!({"volumes": [{"name": "tiny", "size_gb": 0}]}),
            "volumes[0] (name \"tiny\")",
            "size_gb: Ensure this value is greater than or equal to 1.",
        ),
        (
            json!({"volumes": [{"name": "odd", "size_gb": 10, "type": "nvme"}]}),
            "volumes[0] (name \"odd\")",
            "type: \"nvme\" is not a valid choice",
        ),
        (
            json!({"volume_snapshots": [{"name": "snap", "volume": "nope"}]}),
            "volume_snapshots[0] (name \"snap\")",
            "volume: volume \"nope\" does not exist",
        ),
        (
            json!({"volumes": [{"name": "dup", "size_gb": 1}, {"name": "dup", "size_gb": 1}],
                   "volume_snapshots": [{"name": "snap", "volume": "dup"}]}),
            "volume_snapshots[0] (name \"snap\")",
            "volume name \"dup\" is ambiguous; use its UUID",
        ),
    ]
}

/// Bad routers, custom images, servers and keys (merged into `base()`).
fn bad_other_entries() -> Vec<BadCase> {
    let image = |extra: Value| {
        let mut c = json!({"name": "img", "url": "https://example.com/i.raw",
                           "zones": ["rma1"], "user_data_handling": "pass-through"});
        merge(&mut c, extra);
        json!({"custom_images": [c]})
    };
    vec![
        (
            json!({"routers": [{"name": "gw", "interfaces": [{"network": "priv", "address": "10.99.0.1"}]}]}),
            "routers[0] (name \"gw\")",
            "interfaces[0].address: No subnet of the network contains 10.99.0.1.",
        ),
        (
            json!({"routers": [{"name": "gw", "interfaces": [{"network": "priv", "address": "10.30.0.10"}]}]}),
            "routers[0] (name \"gw\")",
            "interfaces[0].address: The address 10.30.0.10 is already in use.",
        ),
        (
            json!({"routers": [{"name": "gw", "zone": "lpg1", "interfaces": [{"network": "priv"}]}]}),
            "routers[0] (name \"gw\")",
            "interfaces[0].network: Network",
        ),
        (
            json!({"routers": [{"name": "gw", "interfaces": [{"network": "nope"}]}]}),
            "routers[0] (name \"gw\")",
            "interfaces[0].network: network \"nope\" does not exist",
        ),
        (
            image(json!({"size_gb": 0})),
            "custom_images[0] (name \"img\")",
            "size_gb: must be at least 1",
        ),
        (
            image(json!({"zones": ["xyz1"]})),
            "custom_images[0] (name \"img\")",
            "zones: \"xyz1\" is not a valid zone",
        ),
        (
            image(json!({"url": "ftp://example.com/i.raw"})),
            "custom_images[0] (name \"img\")",
            "url:",
        ),
        (
            image(json!({"user_data_handling": "merge"})),
            "custom_images[0] (name \"img\")",
            "user_data_handling: \"merge\" is not one of",
        ),
        (
            json!({"servers": [{"name": "app"}, {"name": "x", "image": "custom:nope"}]}),
            "server \"x\"",
            "custom:nope",
        ),
        (
            json!({"volumes": [{"name": "d", "size_gb": 1, "sise_gb": 2}]}),
            "invalid body",
            "unknown field `sise_gb`",
        ),
    ]
}

#[tokio::test]
async fn a_bad_entry_fails_naming_it_and_loads_nothing() {
    let (_fc, api) = start().await;
    let cases = bad_storage_entries().into_iter().chain(bad_other_entries());
    for (extra, entry, needle) in cases {
        let doc = with(extra);
        let resp = post_seed(&api, &doc).await;
        let v = assert_bad_request(&resp, needle, &doc.to_string());
        let text = error_text(&v);
        assert!(text.contains(entry), "{entry:?} named in {text}");
        assert_nothing_loaded(&api, &doc.to_string()).await;
    }
}

#[test]
fn unknown_keys_are_refused_naming_the_entry_and_the_key() {
    let cases = [
        (
            "volumes:\n  - name: a\n    size_gb: 1\n    sise: 2\n",
            "sise",
        ),
        (
            "volume_snapshots:\n  - name: a\n    volume: b\n    source_volume: c\n",
            "source_volume",
        ),
        (
            "custom_images:\n  - name: a\n    url: https://x/y\n    zones: [rma1]\n    user_data_handling: pass-through\n    zone: rma1\n",
            "zone",
        ),
        ("routers:\n  - name: a\n    gateway: true\n", "gateway"),
        (
            "routers:\n  - name: a\n    interfaces:\n      - network: n\n        addresses: []\n",
            "addresses",
        ),
    ];
    for (text, key) in cases {
        let err = fakecloud::parse_seed(text).expect_err(text);
        assert!(err.contains(&format!("unknown field `{key}`")), "{err}");
        let section = text.split(':').next().unwrap_or_default();
        assert!(
            err.contains(&format!("{section}[0]")),
            "names the entry: {err}"
        );
    }
}
