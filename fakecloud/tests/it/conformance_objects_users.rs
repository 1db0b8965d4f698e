//! Conformance checks for objects users (`/v1/objects-users`): one test per rule of
//! fakecloud/MODEL.md, "Objects users" (`check_NN_…`, numbered apart from the other
//! conformance files), plus `extra_*` tests (dump/restore/reset).
//!
//! Harness: `tests/it/support` (an in-process fake with a manual clock per test, real HTTP).

use fakecloud::{Config, FakeCloud};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support;
use support::*;

async fn make_user(api: &Api, name: &str, extra: Value) -> Value {
    let mut body = json!({"display_name": name});
    merge(&mut body, extra);
    api.create("/objects-users", body).await
}

fn uid(u: &Value) -> String {
    s(u, "id").to_string()
}

fn upath(u: &Value) -> String {
    format!("/objects-users/{}", uid(u))
}

fn ids(list: &[Value]) -> Vec<String> {
    list.iter().map(uid).collect()
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The one key pair of a user: (access key, secret key), shapes checked.
fn key_pair(u: &Value) -> (String, String) {
    let keys = u["keys"].as_array().expect("keys is a list");
    assert_eq!(keys.len(), 1, "exactly one key pair: {u}");
    let access = s(&keys[0], "access_key").to_string();
    let secret = s(&keys[0], "secret_key").to_string();
    assert_eq!(access.len(), 20, "{access}");
    assert!(
        access
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()),
        "access key upper-case letters and digits: {access}"
    );
    assert_eq!(secret.len(), 40, "{secret}");
    assert!(
        secret
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/'),
        "secret key of the base64 alphabet: {secret}"
    );
    (access, secret)
}

#[tokio::test]
async fn check_01_create_shape_201() {
    let (_fc, api) = start().await;
    let (st, u) = api
        .post(
            "/objects-users",
            json!({"display_name": "alice", "tags": {"team": "a"}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{u}");
    assert!(is_hex64(s(&u, "id")), "id is 64 lower-case hex: {u}");
    assert!(u.get("uuid").is_none(), "identified by id, not uuid: {u}");
    assert_eq!(u["display_name"], "alice");
    assert_eq!(u["tags"], json!({"team": "a"}));
    assert!(is_timestamp(s(&u, "created_at")), "{u}");
    key_pair(&u);
    let href = s(&u, "href");
    assert!(href.starts_with("http"), "absolute href: {href}");
    assert!(
        href.ends_with(&format!("/v1/objects-users/{}", uid(&u))),
        "{href}"
    );
    // tags are optional
    let plain = make_user(&api, "bob", json!({})).await;
    assert_eq!(plain["tags"], json!({}));
}

#[tokio::test]
async fn check_02_get_equals_create_and_keys_are_stable() {
    let (_fc, api) = start().await;
    let u = make_user(&api, "alice", json!({})).await;
    let keys = key_pair(&u);
    for _ in 0..3 {
        let got = api.fetch(&upath(&u)).await;
        assert_eq!(got, u, "201 body equals every GET");
        assert_eq!(key_pair(&got), keys);
    }
    let listed = api.list("/objects-users").await;
    assert_eq!(listed, vec![u.clone()], "the list shows the same object");
}

#[tokio::test]
async fn check_03_list_bare_array_and_tag_filters() {
    let (_fc, api) = start().await;
    assert!(api.list("/objects-users").await.is_empty());
    let a = make_user(&api, "a", json!({"tags": {"env": "prod"}})).await;
    let b = make_user(&api, "b", json!({"tags": {"env": "dev"}})).await;
    let c = make_user(&api, "c", json!({})).await;
    assert_eq!(
        ids(&api.list("/objects-users").await),
        vec![uid(&a), uid(&b), uid(&c)],
        "creation order"
    );
    assert_eq!(
        ids(&api.list("/objects-users?tag:env=prod").await),
        vec![uid(&a)]
    );
    assert_eq!(
        ids(&api.list("/objects-users?tag%3Aenv=dev").await),
        vec![uid(&b)]
    );
    assert_eq!(
        ids(&api.list("/objects-users?tag:env").await),
        vec![uid(&a), uid(&b)]
    );
    assert_eq!(
        ids(&api.list("/objects-users?tag%3Aenv=").await),
        vec![uid(&a), uid(&b)]
    );
    assert!(api.list("/objects-users?tag:env=qa").await.is_empty());
    assert!(api.list("/objects-users?tag:other").await.is_empty());
}

#[tokio::test]
async fn check_04_unknown_id_is_404() {
    let (_fc, api) = start().await;
    let unknown = "0".repeat(64);
    api.assert_not_found(&format!("/objects-users/{unknown}"))
        .await;
    // a UUID or a name is no id either
    api.assert_not_found("/objects-users/00000000-0000-4000-8000-000000000000")
        .await;
    api.assert_not_found("/objects-users/alice").await;
    let (st, v) = api
        .patch(
            &format!("/objects-users/{unknown}"),
            json!({"display_name": "x"}),
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{v}");
    assert_eq!(v, json!({"detail": "Not found."}));
    let (st, v) = api.delete(&format!("/objects-users/{unknown}")).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{v}");
    assert_eq!(v, json!({"detail": "Not found."}));
}

#[tokio::test]
async fn check_05_duplicate_display_names_make_two_users() {
    let (_fc, api) = start().await;
    let a = make_user(&api, "same", json!({})).await;
    let b = make_user(&api, "same", json!({})).await;
    assert_ne!(uid(&a), uid(&b));
    assert_ne!(key_pair(&a), key_pair(&b), "each user has its own keys");
    assert_eq!(api.list("/objects-users").await.len(), 2);
}

#[tokio::test]
async fn check_06_patch_display_name_and_tags_204() {
    let (_fc, api) = start().await;
    let u = make_user(&api, "alice", json!({"tags": {"a": "1"}})).await;
    let (st, v) = api
        .patch(
            &upath(&u),
            json!({"display_name": "alice2", "tags": {"b": "2"}}),
        )
        .await;
    assert_eq!(st, StatusCode::NO_CONTENT, "{v}");
    let got = api.fetch(&upath(&u)).await;
    assert_eq!(got["display_name"], "alice2");
    assert_eq!(got["tags"], json!({"b": "2"}));
    assert_eq!(key_pair(&got), key_pair(&u), "keys unchanged by a PATCH");
    assert_eq!((&got["id"], &got["href"]), (&u["id"], &u["href"]));
    // one field at a time, the other stays
    api.update(&upath(&u), json!({"tags": {}})).await;
    let got = api.fetch(&upath(&u)).await;
    assert_eq!(
        (got["display_name"].clone(), got["tags"].clone()),
        (json!("alice2"), json!({}))
    );
    api.update(&upath(&u), json!({"display_name": "alice3"}))
        .await;
    assert_eq!(api.fetch(&upath(&u)).await["tags"], json!({}));
    // read-only fields sent along are ignored
    api.update(
        &upath(&u),
        json!({"id": "x", "keys": [], "href": "x", "display_name": "alice4"}),
    )
    .await;
    let got = api.fetch(&upath(&u)).await;
    assert_eq!(got["display_name"], "alice4");
    assert_eq!(key_pair(&got), key_pair(&u));
    assert_eq!(got["id"], u["id"]);
}

#[tokio::test]
async fn check_07_delete_204_then_404() {
    let (_fc, api) = start().await;
    let a = make_user(&api, "a", json!({})).await;
    let b = make_user(&api, "b", json!({})).await;
    api.remove(&upath(&a)).await;
    api.assert_not_found(&upath(&a)).await;
    assert_eq!(ids(&api.list("/objects-users").await), vec![uid(&b)]);
    let (st, _) = api.delete(&upath(&a)).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn check_08_validation_errors_are_flat_field_maps() {
    let (_fc, api) = start().await;
    let r = api.post("/objects-users", json!({})).await;
    let v = assert_bad_request(&r, "This field is required.", "missing display_name");
    assert_eq!(v, json!({"display_name": "This field is required."}));
    let r = api
        .post("/objects-users", json!({"display_name": ""}))
        .await;
    assert_bad_request(&r, "display_name", "blank display_name");
    let r = api
        .post("/objects-users", json!({"display_name": null}))
        .await;
    assert_bad_request(&r, "display_name", "null display_name");
    let r = api.post("/objects-users", json!({"display_name": 5})).await;
    assert_bad_request(&r, "display_name", "number display_name");
    let r = api
        .post("/objects-users", json!({"display_name": "a", "tags": "x"}))
        .await;
    assert_bad_request(&r, "tags", "tags not an object");
    let r = api.post("/objects-users", json!({"tags": 1})).await;
    let v = assert_bad_request(&r, "display_name", "all errors at once");
    assert!(v.get("tags").is_some(), "{v}");
    assert!(
        api.list("/objects-users").await.is_empty(),
        "nothing created"
    );
    // PATCH errors leave the user as it was
    let u = make_user(&api, "a", json!({})).await;
    let r = api.patch(&upath(&u), json!({"display_name": ""})).await;
    assert_bad_request(&r, "display_name", "blank on PATCH");
    let r = api.patch(&upath(&u), json!({"tags": ["x"]})).await;
    assert_bad_request(&r, "tags", "tags list on PATCH");
    assert_eq!(api.fetch(&upath(&u)).await, u, "unchanged");
}

#[tokio::test]
async fn check_09_unknown_fields_are_ignored() {
    let (_fc, api) = start().await;
    let u = make_user(
        &api,
        "a",
        json!({"colour": "blue", "id": "f".repeat(64), "keys": [{"access_key": "X", "secret_key": "Y"}]}),
    )
    .await;
    assert!(u.get("colour").is_none(), "{u}");
    assert_ne!(uid(&u), "f".repeat(64), "id is not client-chosen");
    key_pair(&u);
    api.update(&upath(&u), json!({"colour": "red"})).await;
    assert_eq!(api.fetch(&upath(&u)).await, u);
}

#[tokio::test]
async fn check_10_seeded_runs_repeat_ids_and_keys() {
    async fn run() -> Vec<Value> {
        let config = Config {
            id_seed: Some(42),
            ..Config::for_tests()
        };
        let fc = FakeCloud::start(config).await.expect("start fakecloud");
        let api = Api::new(&fc);
        let mut out = Vec::new();
        for name in ["a", "b"] {
            let u = make_user(&api, name, json!({})).await;
            out.push(json!({"id": u["id"], "keys": u["keys"]}));
        }
        fc.shutdown().await;
        out
    }
    let first = run().await;
    let second = run().await;
    assert_eq!(first, second, "same seed, same ids and keys");
    assert_ne!(first[0], first[1]);
}

#[tokio::test]
async fn extra_state_dump_reset_restore_include_objects_users() {
    let (fc, api) = start().await;
    let u = make_user(&api, "alice", json!({"tags": {"k": "v"}})).await;
    let dump = dump_state(&fc).await;
    let listed = dump["objects_users"]
        .as_array()
        .expect("a list in the dump");
    assert_eq!(listed.len(), 1, "{dump}");
    reset_state(&fc).await;
    assert!(api.list("/objects-users").await.is_empty());
    api.assert_not_found(&upath(&u)).await;
    restore_state(&fc, &dump).await;
    assert_eq!(api.fetch(&upath(&u)).await, u, "same id, keys and tags");
    // a dump made before objects users existed restores with none
    let mut old = dump.clone();
    old.as_object_mut()
        .expect("dump object")
        .remove("objects_users");
    restore_state(&fc, &old).await;
    assert!(api.list("/objects-users").await.is_empty());
}
