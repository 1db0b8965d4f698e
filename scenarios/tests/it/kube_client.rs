//! The embedded API server against the kube-rs client and runtime: typed `Api<T>` round trips,
//! error statuses, the status subresource, the four patch types, finalizers, Service
//! allocation and defaulting, selectors, namespace deletion, the two Event versions, watches
//! (resumption, bookmarks, timeouts, 410 Gone), a `Controller` with a finalizer, and request
//! recording. Every await that could hang is bounded by `within`.

use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event as CoreEvent, Namespace, Node, Pod, Secret, Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::events::v1::Event as NewEvent;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as RecorderEvent, EventType, Recorder, Reporter};
use kube::runtime::wait::await_condition;
use kube::runtime::{Controller, finalizer, watcher};
use kube::{Client, Resource, ResourceExt};
use scenarios::apiserver::{ApiServer, ApiServerConfig, verb_counts};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;
use std::future::Future;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Upper bound for one step of a test.
const STEP: Duration = Duration::from_secs(10);

async fn within<F: Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(STEP, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {STEP:?}: {what}"),
    }
}

/// `w!(future)`: awaits with the `STEP` bound, naming the expression when it times out.
macro_rules! w {
    ($e:expr) => {
        within(stringify!($e), $e).await
    };
}

struct Env {
    server: ApiServer,
    client: Client,
}

async fn env() -> Env {
    env_with(ApiServerConfig::default()).await
}

async fn env_with(config: ApiServerConfig) -> Env {
    let server = w!(ApiServer::start(config)).expect("start the API server");
    let client = client_for(&server, None).await;
    Env { server, client }
}

/// A kube client built from the server's kubeconfig (optionally with a User-Agent header).
async fn client_for(server: &ApiServer, user_agent: Option<&str>) -> Client {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).expect("kubeconfig");
    let mut config = w!(kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default()
    ))
    .expect("config from kubeconfig");
    if let Some(ua) = user_agent {
        config.headers.push((
            axum::http::header::USER_AGENT,
            axum::http::HeaderValue::from_str(ua).expect("user agent"),
        ));
    }
    Client::try_from(config).expect("client")
}

impl Env {
    fn default_ns<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.client.clone(), "default")
    }

    fn in_ns<K>(&self, ns: &str) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        Api::namespaced(self.client.clone(), ns)
    }

    fn cluster<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>,
    {
        Api::all(self.client.clone())
    }
}

fn obj<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).expect("object from JSON")
}

fn rv<K: Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .expect("resourceVersion")
        .parse()
        .expect("numeric resourceVersion")
}

fn rv_str<K: Resource>(o: &K) -> String {
    o.meta().resource_version.clone().expect("resourceVersion")
}

/// The `Status` of a failed call.
fn api_err<T: Debug>(r: Result<T, kube::Error>) -> Box<kube::core::Status> {
    match r {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn service(name: &str, spec: Value) -> Service {
    obj(json!({"metadata": {"name": name}, "spec": spec}))
}

fn lb_service(name: &str) -> Service {
    service(
        name,
        json!({"type": "LoadBalancer", "selector": {"app": name},
               "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}),
    )
}

fn configmap(name: &str, labels: Value, data: Value) -> ConfigMap {
    obj(json!({"metadata": {"name": name, "labels": labels}, "data": data}))
}

fn node_ports(svc: &Service) -> Vec<i32> {
    svc.spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|p| p.node_port)
        .collect()
}

fn ingress_ips(svc: &Service) -> Vec<String> {
    svc.status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|i| i.ip.clone())
        .collect()
}

async fn next_event<K, S>(stream: &mut S) -> WatchEvent<K>
where
    S: Stream<Item = Result<WatchEvent<K>, kube::Error>> + Unpin,
{
    w!(stream.next())
        .expect("the watch ended early")
        .expect("watch event")
}

/// Events until the stream ends (it must end within `STEP`).
async fn drain<K, S>(stream: &mut S) -> Vec<WatchEvent<K>>
where
    S: Stream<Item = Result<WatchEvent<K>, kube::Error>> + Unpin,
{
    let mut out = Vec::new();
    within("the watch to end", async {
        while let Some(ev) = stream.next().await {
            out.push(ev.expect("watch event"));
        }
    })
    .await;
    out
}

fn event_summary<K: Resource>(ev: &WatchEvent<K>) -> String {
    match ev {
        WatchEvent::Added(o) => format!("ADDED {}", o.meta().name.as_deref().unwrap_or("")),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.meta().name.as_deref().unwrap_or("")),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.meta().name.as_deref().unwrap_or("")),
        WatchEvent::Bookmark(_) => "BOOKMARK".to_string(),
        WatchEvent::Error(e) => format!("ERROR {} {}", e.code, e.reason),
    }
}

/// Waits (by watching) until `cond` holds for the object `name`.
async fn wait_for<K>(api: &Api<K>, name: &str, what: &str, cond: impl Fn(Option<&K>) -> bool)
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
{
    within(what, await_condition(api.clone(), name, cond))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

// ---- round trips ---------------------------------------------------------------------------

/// create, get, list, replace (after `mutate`), merge patch, delete, and the metadata the
/// server owns. `check` sees the replaced object as read back.
async fn round_trip<K>(api: Api<K>, object: K, mutate: impl Fn(&mut K), check: impl Fn(&K))
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned + Send + 'static,
{
    let pp = PostParams::default();
    let created = w!(api.create(&pp, &object)).expect("create");
    let name = created.name_any();
    let uid = created.meta().uid.clone().expect("uid");
    assert!(!uid.is_empty());
    let created_at = created
        .meta()
        .creation_timestamp
        .clone()
        .expect("creationTimestamp");
    let rv1 = rv(&created);

    let got = w!(api.get(&name)).expect("get");
    assert_eq!(got.meta().uid.as_deref(), Some(uid.as_str()));
    assert_eq!(rv(&got), rv1);

    let list = w!(api.list(&ListParams::default())).expect("list");
    let list_rv: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .expect("list resourceVersion")
        .parse()
        .expect("numeric");
    assert!(list_rv >= rv1, "list rv {list_rv} < object rv {rv1}");
    assert!(list.items.iter().any(|i| i.name_any() == name));

    let mut changed = got.clone();
    changed
        .annotations_mut()
        .insert("round-trip".into(), "replaced".into());
    mutate(&mut changed);
    let replaced = w!(api.replace(&name, &pp, &changed)).expect("replace");
    assert!(rv(&replaced) > rv1);
    assert_eq!(replaced.meta().uid.as_deref(), Some(uid.as_str()));
    assert_eq!(
        replaced.meta().creation_timestamp.as_ref(),
        Some(&created_at)
    );
    let reread = w!(api.get(&name)).expect("get after replace");
    assert_eq!(
        reread.annotations().get("round-trip").map(String::as_str),
        Some("replaced")
    );
    check(&reread);

    let patch = json!({"metadata": {"labels": {"patched": "yes"}}});
    let patched =
        w!(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))).expect("patch");
    assert_eq!(
        patched.labels().get("patched").map(String::as_str),
        Some("yes")
    );
    assert!(rv(&patched) > rv(&replaced));
    assert_eq!(
        patched.annotations().get("round-trip").map(String::as_str),
        Some("replaced")
    );

    w!(api.delete(&name, &DeleteParams::default())).expect("delete");
    wait_for(&api, &name, "the object to be deleted", |o: Option<&K>| {
        o.is_none()
    })
    .await;
    let gone = api_err(w!(api.get(&name)));
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
}

#[tokio::test]
async fn namespace_round_trip() {
    let e = env().await;
    let ns: Namespace = obj(json!({"metadata": {"name": "round-trip"}}));
    round_trip(
        e.cluster::<Namespace>(),
        ns,
        |n| {
            n.labels_mut().insert("team".into(), "a".into());
        },
        |n| {
            assert_eq!(n.labels().get("team").map(String::as_str), Some("a"));
            let phase = n.status.as_ref().and_then(|s| s.phase.as_deref());
            assert_eq!(phase, Some("Active"));
        },
    )
    .await;
}

#[tokio::test]
async fn node_round_trip() {
    let e = env().await;
    let node: Node = obj(
        json!({"metadata": {"name": "node-1"}, "spec": {"podCIDR": "10.42.0.0/24"},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
    );
    round_trip(
        e.cluster::<Node>(),
        node,
        |n| n.spec.get_or_insert_default().unschedulable = Some(true),
        |n| {
            assert_eq!(n.spec.as_ref().and_then(|s| s.unschedulable), Some(true));
            let addresses = n.status.as_ref().and_then(|s| s.addresses.as_ref());
            assert_eq!(addresses.map(Vec::len), Some(1), "status kept: {n:?}");
        },
    )
    .await;
}

#[tokio::test]
async fn service_round_trip() {
    let e = env().await;
    round_trip(
        e.default_ns::<Service>(),
        lb_service("web"),
        |s| {
            let spec = s.spec.get_or_insert_default();
            spec.selector = Some(BTreeMap::from([("app".into(), "web-2".into())]));
        },
        |s| {
            let sel = s.spec.as_ref().and_then(|s| s.selector.clone());
            assert_eq!(
                sel.and_then(|m| m.get("app").cloned()).as_deref(),
                Some("web-2")
            );
            assert_eq!(s.meta().generation, Some(2));
        },
    )
    .await;
}

#[tokio::test]
async fn endpoints_round_trip() {
    let e = env().await;
    let ep: Endpoints = obj(json!({"metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "10.42.0.5"}], "ports": [{"port": 8080}]}]}));
    round_trip(
        e.default_ns::<Endpoints>(),
        ep,
        |ep| {
            ep.subsets = Some(obj(
                json!([{"addresses": [{"ip": "10.42.0.6"}, {"ip": "10.42.0.7"}],
                                          "ports": [{"port": 8080}]}]),
            ));
        },
        |ep| {
            let subsets = ep.subsets.as_ref().expect("subsets");
            assert_eq!(subsets[0].addresses.as_ref().map(Vec::len), Some(2));
        },
    )
    .await;
}

#[tokio::test]
async fn endpointslice_round_trip() {
    let e = env().await;
    let slice: EndpointSlice = obj(json!({"metadata": {"name": "web-abc",
            "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.42.0.5"], "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}));
    round_trip(
        e.default_ns::<EndpointSlice>(),
        slice,
        |s| {
            s.endpoints.get_or_insert_default().push(obj(
                json!({"addresses": ["10.42.0.6"], "conditions": {"ready": false}}),
            ));
        },
        |s| {
            assert_eq!(s.endpoints.as_ref().map(Vec::len), Some(2));
            assert_eq!(s.address_type, "IPv4");
        },
    )
    .await;
}

#[tokio::test]
async fn core_event_round_trip() {
    let e = env().await;
    let ev: CoreEvent = obj(json!({"metadata": {"name": "web.1"},
        "involvedObject": {"kind": "Service", "namespace": "default", "name": "web"},
        "reason": "Created", "message": "first", "type": "Normal", "count": 1,
        "source": {"component": "tests"}}));
    round_trip(
        e.default_ns::<CoreEvent>(),
        ev,
        |ev| {
            ev.count = Some(2);
            ev.message = Some("second".into());
        },
        |ev| {
            assert_eq!(ev.count, Some(2));
            assert_eq!(ev.message.as_deref(), Some("second"));
        },
    )
    .await;
}

fn new_event(name: &str, regarding: &str, note: &str) -> NewEvent {
    obj(json!({"metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Service", "namespace": "default", "name": regarding},
        "note": note, "reason": "Ensured", "type": "Normal", "action": "Ensure",
        "reportingController": "tests.example/ctl", "reportingInstance": "tests-1"}))
}

#[tokio::test]
async fn events_v1_event_round_trip() {
    let e = env().await;
    round_trip(
        e.default_ns::<NewEvent>(),
        new_event("web.2", "web", "first"),
        |ev| ev.note = Some("second".into()),
        |ev| {
            assert_eq!(ev.note.as_deref(), Some("second"));
            let regarding = ev.regarding.as_ref().and_then(|r| r.name.as_deref());
            assert_eq!(regarding, Some("web"));
            assert_eq!(
                ev.reporting_controller.as_deref(),
                Some("tests.example/ctl")
            );
        },
    )
    .await;
}

#[tokio::test]
async fn secret_round_trip() {
    let e = env().await;
    let secret: Secret = obj(json!({"metadata": {"name": "creds"}, "type": "Opaque",
        "data": {"user": "YWRtaW4="}}));
    round_trip(
        e.default_ns::<Secret>(),
        secret,
        |s| {
            s.data.get_or_insert_default().insert(
                "password".into(),
                k8s_openapi::ByteString(b"hunter2".to_vec()),
            );
        },
        |s| {
            let data = s.data.as_ref().expect("data");
            assert_eq!(
                data.get("user").map(|b| b.0.as_slice()),
                Some(&b"admin"[..])
            );
            assert_eq!(
                data.get("password").map(|b| b.0.as_slice()),
                Some(&b"hunter2"[..])
            );
        },
    )
    .await;
}

#[tokio::test]
async fn secret_string_data_is_merged_into_data() {
    let e = env().await;
    let api = e.default_ns::<Secret>();
    let secret: Secret = obj(json!({"metadata": {"name": "sd"}, "data": {"a": "MQ=="},
        "stringData": {"b": "two", "a": "one"}}));
    let created = w!(api.create(&PostParams::default(), &secret)).expect("create");
    assert!(created.string_data.is_none(), "{created:?}");
    let data = created.data.expect("data");
    assert_eq!(data.get("a").map(|b| b.0.as_slice()), Some(&b"one"[..]));
    assert_eq!(data.get("b").map(|b| b.0.as_slice()), Some(&b"two"[..]));
}

#[tokio::test]
async fn configmap_round_trip() {
    let e = env().await;
    round_trip(
        e.default_ns::<ConfigMap>(),
        configmap("settings", json!({}), json!({"a": "1"})),
        |c| {
            c.data
                .get_or_insert_default()
                .insert("b".into(), "2".into());
        },
        |c| {
            let data = c.data.as_ref().expect("data");
            assert_eq!(data.get("a").map(String::as_str), Some("1"));
            assert_eq!(data.get("b").map(String::as_str), Some("2"));
        },
    )
    .await;
}

#[tokio::test]
async fn lease_round_trip() {
    let e = env().await;
    let lease: Lease = obj(json!({"metadata": {"name": "ccm"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                 "renewTime": "2026-01-01T00:00:00.000000Z"}}));
    round_trip(
        e.default_ns::<Lease>(),
        lease,
        |l| {
            let spec = l.spec.get_or_insert_default();
            spec.holder_identity = Some("b".into());
            spec.lease_transitions = Some(1);
        },
        |l| {
            let spec = l.spec.as_ref().expect("spec");
            assert_eq!(spec.holder_identity.as_deref(), Some("b"));
            assert_eq!(spec.lease_transitions, Some(1));
            assert!(spec.renew_time.is_some());
        },
    )
    .await;
}

#[tokio::test]
async fn pod_round_trip() {
    let e = env().await;
    let pod: Pod = obj(
        json!({"metadata": {"name": "web-0", "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx:1"}]}}),
    );
    round_trip(
        e.default_ns::<Pod>(),
        pod,
        |p| {
            if let Some(spec) = p.spec.as_mut() {
                spec.containers[0].image = Some("nginx:2".into());
            }
        },
        |p| {
            let spec = p.spec.as_ref().expect("spec");
            assert_eq!(spec.containers[0].image.as_deref(), Some("nginx:2"));
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            assert_eq!(phase, Some("Pending"));
        },
    )
    .await;
}

#[tokio::test]
async fn resource_versions_increase_across_objects_and_lists() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PostParams::default();
    let a = w!(api.create(&pp, &configmap("a", json!({}), json!({})))).expect("a");
    let b = w!(api.create(&pp, &configmap("b", json!({}), json!({})))).expect("b");
    assert!(rv(&b) > rv(&a));
    let list = w!(api.list(&ListParams::default())).expect("list");
    let list_rv: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("list rv");
    assert!(list_rv >= rv(&b));
    for item in &list.items {
        assert!(item.meta().uid.is_some() && item.meta().creation_timestamp.is_some());
        assert!(rv(item) <= list_rv);
    }
    // uids are unique, even for a re-created name.
    w!(api.delete("a", &DeleteParams::default())).expect("delete");
    let again = w!(api.create(&pp, &configmap("a", json!({}), json!({})))).expect("again");
    assert_ne!(again.meta().uid, a.meta().uid);
    assert!(rv(&again) > list_rv);
}

#[tokio::test]
async fn service_generation_bumps_on_spec_change_only() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let created = w!(api.create(&PostParams::default(), &lb_service("gen"))).expect("create");
    assert_eq!(created.meta().generation, Some(1));
    let pp = PatchParams::default();
    let labels = json!({"metadata": {"labels": {"x": "1"}}});
    let s = w!(api.patch("gen", &pp, &Patch::Merge(&labels))).expect("labels");
    assert_eq!(s.meta().generation, Some(1), "a label change");
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}});
    let s = w!(api.patch_status("gen", &pp, &Patch::Merge(&status))).expect("status");
    assert_eq!(s.meta().generation, Some(1), "a status change");
    let spec = json!({"spec": {"selector": {"app": "other"}}});
    let s = w!(api.patch("gen", &pp, &Patch::Merge(&spec))).expect("spec");
    assert_eq!(s.meta().generation, Some(2), "a spec change");
    let same = w!(api.patch("gen", &pp, &Patch::Merge(&spec))).expect("same spec");
    assert_eq!(same.meta().generation, Some(2), "a no-op");
    assert_eq!(rv(&same), rv(&s), "a no-op does not write");
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    for i in 0..5 {
        let cm = configmap(&format!("page-{i}"), json!({"paged": "yes"}), json!({}));
        w!(api.create(&PostParams::default(), &cm)).expect("create");
    }
    let mut lp = ListParams::default().labels("paged=yes").limit(2);
    let mut pages = Vec::new();
    loop {
        let page = w!(api.list(&lp)).expect("page");
        assert!(page.items.len() <= 2);
        pages.push(names(&page.items));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(
        pages.concat(),
        (0..5).map(|i| format!("page-{i}")).collect::<Vec<_>>()
    );
    assert_eq!(pages.len(), 3, "{pages:?}");
}

#[tokio::test]
async fn generate_name_dry_run_and_delete_preconditions() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let generated: ConfigMap = obj(json!({"metadata": {"generateName": "gen-"}}));
    let a = w!(api.create(&PostParams::default(), &generated)).expect("generateName");
    let b = w!(api.create(&PostParams::default(), &generated)).expect("generateName again");
    assert!(a.name_any().starts_with("gen-") && a.name_any().len() > 4);
    assert_ne!(a.name_any(), b.name_any());

    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let d = w!(api.create(&dry, &configmap("dry", json!({}), json!({})))).expect("dry run");
    assert_eq!(d.name_any(), "dry");
    assert!(w!(api.get_opt("dry")).expect("get_opt").is_none());

    let wrong = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("00000000-0000-0000-0000-000000000000".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let s = api_err(w!(api.delete(&a.name_any(), &wrong)));
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{s:?}");
    let right = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: a.meta().uid.clone(),
            resource_version: a.meta().resource_version.clone(),
        }),
        ..Default::default()
    };
    w!(api.delete(&a.name_any(), &right)).expect("delete with preconditions");
    assert!(w!(api.get_opt(&a.name_any())).expect("get_opt").is_none());
}

#[tokio::test]
async fn delete_collection_deletes_only_selected_objects() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    for (name, labels) in [
        ("dc-1", json!({"sweep": "yes"})),
        ("dc-2", json!({"sweep": "yes"})),
        ("dc-3", json!({})),
    ] {
        w!(api.create(&PostParams::default(), &configmap(name, labels, json!({}))))
            .expect("create");
    }
    w!(api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("sweep=yes")
    ))
    .expect("delete collection");
    let left = w!(api.list(&ListParams::default())).expect("list");
    assert_eq!(names(&left.items), vec!["dc-3"]);
}

// ---- errors --------------------------------------------------------------------------------

#[tokio::test]
async fn replace_with_stale_resource_version_is_conflict() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PostParams::default();
    let v1 = w!(api.create(&pp, &configmap("cas", json!({}), json!({"n": "1"})))).expect("create");
    let mut v2 = v1.clone();
    v2.data = Some(BTreeMap::from([("n".into(), "2".into())]));
    w!(api.replace("cas", &pp, &v2)).expect("first replace");
    let mut stale = v1.clone();
    stale.data = Some(BTreeMap::from([("n".into(), "3".into())]));
    let s = api_err(w!(api.replace("cas", &pp, &stale)));
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{s:?}");
    assert!(s.message.contains("the object has been modified"), "{s:?}");
    let now = w!(api.get("cas")).expect("get");
    assert_eq!(
        now.data.and_then(|d| d.get("n").cloned()).as_deref(),
        Some("2")
    );
    // A merge patch that names the stale version is a precondition too.
    let patch = json!({"metadata": {"resourceVersion": rv_str(&v1)}, "data": {"n": "4"}});
    let s = api_err(w!(api.patch(
        "cas",
        &PatchParams::default(),
        &Patch::Merge(&patch)
    )));
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_without_a_resource_version_all_apply() {
    // Like the real API server's guaranteed update: a patch that names no resourceVersion
    // is re-applied when another write lands first, never answered with a conflict.
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    w!(api.create(
        &PostParams::default(),
        &configmap("race", json!({}), json!({}))
    ))
    .expect("create");
    let writers = (0..200).map(|i| {
        let api = api.clone();
        tokio::spawn(async move {
            let patch = json!({"data": {format!("k{i}"): "v"}});
            api.patch("race", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
        })
    });
    for r in futures::future::join_all(writers).await {
        r.expect("task").expect("every patch applies");
    }
    let now = w!(api.get("race")).expect("get");
    assert_eq!(now.data.map(|d| d.len()), Some(200), "no patch lost");
}

#[tokio::test]
async fn create_existing_is_already_exists() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let pp = PostParams::default();
    w!(api.create(&pp, &lb_service("dup"))).expect("create");
    let s = api_err(w!(api.create(&pp, &lb_service("dup"))));
    assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"), "{s:?}");
    assert_eq!(s.details.as_ref().map(|d| d.name.as_str()), Some("dup"));
    assert!(s.message.contains("already exists"));
}

/// The status code and body text of one request, sent as it is.
async fn raw(client: &Client, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    let body = body.map_or_else(kube::client::Body::empty, |b| {
        kube::client::Body::from(b.to_string().into_bytes())
    });
    let response = w!(client.send(request.body(body).expect("request"))).expect("send");
    let code = response.status().as_u16();
    let bytes = w!(response.into_body().collect_bytes()).expect("body");
    (code, String::from_utf8(bytes.to_vec()).expect("UTF-8 body"))
}

/// Error bodies byte for byte as kube-apiserver writes them (clients compare bodies): the
/// `metav1.Status` field order, a grouped resource named with its group in the message and
/// `details.group`, a core one without, and a trailing newline.
#[tokio::test]
async fn error_bodies_are_kube_apiservers_bytes() {
    let e = env().await;
    let status = |message: &str, reason: &str, details: &str, code: u16| {
        format!(
            "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":{},\"reason\":\"{reason}\",\"details\":{details},\"code\":{code}}}\n",
            json!(message)
        )
    };
    let cases = [
        (
            "/api/v1/namespaces/default/services/web",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                   "spec": {"ports": [{"port": 80}]}}),
            "services",
            r#"{"name":"web","kind":"services"}"#,
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/web",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "web"}, "rules": []}),
            "roles.rbac.authorization.k8s.io",
            r#"{"name":"web","group":"rbac.authorization.k8s.io","kind":"roles"}"#,
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments/web",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            "deployments.apps",
            r#"{"name":"web","group":"apps","kind":"deployments"}"#,
        ),
    ];
    for (path, object, resource, details) in cases {
        let (code, body) = raw(&e.client, "GET", path, None).await;
        assert_eq!(code, 404, "{body}");
        assert_eq!(
            body,
            status(
                &format!("{resource} \"web\" not found"),
                "NotFound",
                details,
                404
            )
        );
        let collection = path.trim_end_matches("/web");
        let (code, body) = raw(&e.client, "POST", collection, Some(&object)).await;
        assert_eq!(code, 201, "{body}");
        let (code, body) = raw(&e.client, "POST", collection, Some(&object)).await;
        assert_eq!(code, 409, "{body}");
        assert_eq!(
            body,
            status(
                &format!("{resource} \"web\" already exists"),
                "AlreadyExists",
                details,
                409
            )
        );
    }
}

#[tokio::test]
async fn missing_object_is_not_found() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let s = api_err(w!(api.get("nope")));
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"), "{s:?}");
    assert_eq!(s.message, "services \"nope\" not found");
    assert_eq!(
        s.details.as_ref().map(|d| d.kind.as_str()),
        Some("services")
    );
    assert!(w!(api.get_opt("nope")).expect("get_opt").is_none());
    let s = api_err(w!(api.delete("nope", &DeleteParams::default())));
    assert_eq!(s.code, 404);
    let patch = json!({"metadata": {"labels": {"a": "b"}}});
    let s = api_err(w!(api.patch(
        "nope",
        &PatchParams::default(),
        &Patch::Merge(&patch)
    )));
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
}

#[tokio::test]
async fn service_with_invalid_port_is_invalid() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let bad = service("bad", json!({"ports": [{"port": 70000}]}));
    let s = api_err(w!(api.create(&PostParams::default(), &bad)));
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
    let details = s.details.as_ref().expect("details");
    assert_eq!(details.name, "bad");
    assert_eq!(details.kind, "Service");
    assert!(
        details
            .causes
            .iter()
            .any(|c| c.field == "spec.ports[0].port" && c.reason == "FieldValueInvalid"),
        "{details:?}"
    );
    assert!(w!(api.get_opt("bad")).expect("get_opt").is_none());
}

// ---- status subresource ----------------------------------------------------------------------

#[tokio::test]
async fn service_status_subresource_changes_only_status() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let created = w!(api.create(&PostParams::default(), &lb_service("st"))).expect("create");
    assert!(ingress_ips(&created).is_empty());

    let mut update = created.clone();
    update.spec.get_or_insert_default().selector =
        Some(BTreeMap::from([("app".into(), "changed".into())]));
    update.status = Some(obj(
        json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}),
    ));
    let s = w!(api.replace_status("st", &PostParams::default(), &update)).expect("replace_status");
    assert_eq!(ingress_ips(&s), vec!["192.0.2.10"]);
    assert_eq!(s.spec, created.spec, "spec untouched by /status");
    assert_eq!(s.meta().generation, Some(1));

    let patch = json!({"spec": {"selector": {"app": "changed-again"}},
                       "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.11"}]}}});
    let s = w!(api.patch_status("st", &PatchParams::default(), &Patch::Merge(&patch)))
        .expect("patch_status");
    assert_eq!(ingress_ips(&s), vec!["192.0.2.11"]);
    assert_eq!(s.spec, created.spec);
    let got = w!(api.get_status("st")).expect("get_status");
    assert_eq!(ingress_ips(&got), vec!["192.0.2.11"]);
}

#[tokio::test]
async fn service_create_drops_status() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let mut svc = lb_service("fresh");
    svc.status = Some(obj(
        json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}),
    ));
    let created = w!(api.create(&PostParams::default(), &svc)).expect("create");
    assert!(ingress_ips(&created).is_empty(), "{:?}", created.status);
}

#[tokio::test]
async fn main_resource_update_never_changes_status() {
    let e = env().await;
    // Service.
    let api = e.default_ns::<Service>();
    w!(api.create(&PostParams::default(), &lb_service("keep"))).expect("create");
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.20"}]}}});
    w!(api.patch_status("keep", &PatchParams::default(), &Patch::Merge(&status))).expect("status");
    let mut s = w!(api.get("keep")).expect("get");
    s.status = Some(obj(
        json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]}}),
    ));
    s.labels_mut().insert("touched".into(), "yes".into());
    let s = w!(api.replace("keep", &PostParams::default(), &s)).expect("replace");
    assert_eq!(ingress_ips(&s), vec!["192.0.2.20"]);
    assert_eq!(s.labels().get("touched").map(String::as_str), Some("yes"));
    let patch = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.2"}]}}});
    let s = w!(api.patch("keep", &PatchParams::default(), &Patch::Merge(&patch))).expect("patch");
    assert_eq!(ingress_ips(&s), vec!["192.0.2.20"]);

    // Node.
    let nodes = e.cluster::<Node>();
    let node: Node = obj(json!({"metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}));
    let created = w!(nodes.create(&PostParams::default(), &node)).expect("node");
    let mut n = created.clone();
    n.status = Some(obj(
        json!({"conditions": [{"type": "Ready", "status": "False"}]}),
    ));
    n.spec.get_or_insert_default().unschedulable = Some(true);
    let n = w!(nodes.replace("n1", &PostParams::default(), &n)).expect("replace node");
    assert_eq!(n.status, created.status);
    assert_eq!(n.spec.as_ref().and_then(|s| s.unschedulable), Some(true));
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
    let n = w!(nodes.patch("n1", &PatchParams::default(), &Patch::Strategic(&patch)))
        .expect("patch node");
    assert_eq!(n.status, created.status);
    let n = w!(nodes.patch_status("n1", &PatchParams::default(), &Patch::Strategic(&patch)))
        .expect("patch node status");
    let cond = n.status.and_then(|s| s.conditions).expect("conditions");
    assert_eq!(cond[0].status, "Unknown");
}

// ---- patches -------------------------------------------------------------------------------

#[tokio::test]
async fn merge_patch_sets_and_removes_fields() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let cm = configmap("m", json!({"a": "1"}), json!({"x": "1", "y": "2"}));
    w!(api.create(&PostParams::default(), &cm)).expect("create");
    let patch =
        json!({"metadata": {"labels": {"a": null, "b": "2"}}, "data": {"x": null, "z": "3"}});
    let c = w!(api.patch("m", &PatchParams::default(), &Patch::Merge(&patch))).expect("patch");
    assert_eq!(
        c.labels().clone(),
        BTreeMap::from([("b".to_string(), "2".to_string())])
    );
    assert_eq!(
        c.data,
        Some(BTreeMap::from([
            ("y".to_string(), "2".to_string()),
            ("z".to_string(), "3".to_string())
        ]))
    );
}

#[tokio::test]
async fn json_patch_applies_operations_and_fails_a_test() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let cm = configmap("j", json!({}), json!({"x": "1", "y": "2"}));
    w!(api.create(&PostParams::default(), &cm)).expect("create");
    let ops = json!([
        {"op": "test", "path": "/data/x", "value": "1"},
        {"op": "replace", "path": "/data/x", "value": "10"},
        {"op": "remove", "path": "/data/y"},
        {"op": "add", "path": "/data/z", "value": "3"},
    ]);
    let c = w!(api.patch(
        "j",
        &PatchParams::default(),
        &Patch::<()>::Json(serde_json::from_value(ops).expect("ops"))
    ))
    .expect("json patch");
    assert_eq!(
        c.data,
        Some(BTreeMap::from([
            ("x".to_string(), "10".to_string()),
            ("z".to_string(), "3".to_string())
        ]))
    );
    let failing = json!([{"op": "test", "path": "/data/x", "value": "1"},
                         {"op": "add", "path": "/data/w", "value": "4"}]);
    let s = api_err(w!(api.patch(
        "j",
        &PatchParams::default(),
        &Patch::<()>::Json(serde_json::from_value(failing).expect("ops"))
    )));
    assert_eq!(s.code, 422, "{s:?}");
    let c = w!(api.get("j")).expect("get");
    assert!(!c.data.unwrap_or_default().contains_key("w"));
}

#[tokio::test]
async fn json_patch_test_of_absent_field_against_null_passes() {
    // kube-runtime's `finalizer` adds the first finalizer with
    // `test /metadata/finalizers == null` + `add`; Kubernetes treats an absent field as null.
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    w!(api.create(
        &PostParams::default(),
        &configmap("n", json!({}), json!({}))
    ))
    .expect("create");
    let ops = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/f"]},
    ]);
    let c = w!(api.patch(
        "n",
        &PatchParams::default(),
        &Patch::<()>::Json(serde_json::from_value(ops).expect("ops"))
    ))
    .expect("test against null");
    assert_eq!(c.finalizers(), ["example.com/f"]);
}

#[tokio::test]
async fn strategic_patch_merges_service_ports_by_port() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let created = w!(api.create(&PostParams::default(), &lb_service("sp"))).expect("create");
    let before = node_ports(&created);
    let patch = json!({"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443},
                                          {"name": "metrics", "port": 9100}]}});
    let s =
        w!(api.patch("sp", &PatchParams::default(), &Patch::Strategic(&patch))).expect("strategic");
    let ports = s
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .expect("ports");
    let by_port: BTreeMap<i32, _> = ports.iter().map(|p| (p.port, p)).collect();
    assert_eq!(
        by_port.keys().copied().collect::<Vec<_>>(),
        vec![80, 443, 9100]
    );
    assert_eq!(by_port[&443].target_port, Some(IntOrString::Int(8443)));
    assert_eq!(by_port[&80].name.as_deref(), Some("http"));
    assert_eq!(by_port[&80].node_port, Some(before[0]), "node port kept");
    assert_eq!(by_port[&443].node_port, Some(before[1]), "node port kept");
    assert!(by_port[&9100].node_port.is_some(), "new port allocated");
    // `$patch: delete` removes one port.
    let del = json!({"spec": {"ports": [{"port": 9100, "$patch": "delete"}]}});
    let s = w!(api.patch("sp", &PatchParams::default(), &Patch::Strategic(&del))).expect("delete");
    assert_eq!(node_ports(&s), before);
}

#[tokio::test]
async fn strategic_patch_merges_node_conditions_by_type() {
    let e = env().await;
    let nodes = e.cluster::<Node>();
    let node: Node = obj(json!({"metadata": {"name": "cond"},
        "status": {"conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "MemoryPressure", "status": "False"}]}}));
    w!(nodes.create(&PostParams::default(), &node)).expect("create");
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"},
                                                 {"type": "DiskPressure", "status": "False"}]}});
    let n = w!(nodes.patch_status("cond", &PatchParams::default(), &Patch::Strategic(&patch)))
        .expect("patch");
    let conds = n.status.and_then(|s| s.conditions).expect("conditions");
    let by_type: BTreeMap<&str, _> = conds.iter().map(|c| (c.type_.as_str(), c)).collect();
    assert_eq!(by_type.len(), 3, "{conds:?}");
    assert_eq!(by_type["Ready"].status, "False");
    assert_eq!(by_type["Ready"].reason.as_deref(), Some("KubeletDown"));
    assert_eq!(by_type["MemoryPressure"].status, "False");
}

#[tokio::test]
async fn strategic_patch_merges_finalizers_as_a_set() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let mut cm = configmap("fin", json!({}), json!({}));
    cm.metadata.finalizers = Some(vec!["a.example/x".into()]);
    w!(api.create(&PostParams::default(), &cm)).expect("create");
    let patch = json!({"metadata": {"finalizers": ["a.example/x", "b.example/y"]}});
    let c = w!(api.patch("fin", &PatchParams::default(), &Patch::Strategic(&patch))).expect("add");
    assert_eq!(c.finalizers(), ["a.example/x", "b.example/y"]);
    let remove = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example/x"]}});
    let c =
        w!(api.patch("fin", &PatchParams::default(), &Patch::Strategic(&remove))).expect("remove");
    assert_eq!(c.finalizers(), ["b.example/y"]);
    // A merge patch replaces the list whole.
    let merge = json!({"metadata": {"finalizers": null}});
    let c = w!(api.patch("fin", &PatchParams::default(), &Patch::Merge(&merge))).expect("clear");
    assert!(c.finalizers().is_empty());
}

#[tokio::test]
async fn server_side_apply_creates_and_updates() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PatchParams::apply("tests.example/applier");
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ssa", "labels": {"app": "x"}}, "data": {"a": "1"}});
    let c = w!(api.patch("ssa", &pp, &Patch::Apply(&desired))).expect("apply create");
    assert!(c.meta().uid.is_some());
    assert_eq!(
        c.data.as_ref().and_then(|d| d.get("a")).map(String::as_str),
        Some("1")
    );
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ssa", "labels": {"app": "x"}}, "data": {"a": "2", "b": "3"}});
    let c2 = w!(api.patch("ssa", &pp, &Patch::Apply(&desired))).expect("apply update");
    assert_eq!(c2.meta().uid, c.meta().uid);
    assert!(rv(&c2) > rv(&c));
    let data = c2.data.expect("data");
    assert_eq!(data.get("a").map(String::as_str), Some("2"));
    assert_eq!(data.get("b").map(String::as_str), Some("3"));

    // Apply to a Service keeps what the server allocated.
    let svcs = e.default_ns::<Service>();
    let desired = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ssa-svc"},
        "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}});
    let s = w!(svcs.patch("ssa-svc", &pp, &Patch::Apply(&desired))).expect("apply svc");
    let ip = s.spec.as_ref().and_then(|s| s.cluster_ip.clone());
    let np = node_ports(&s);
    assert_eq!(np.len(), 1);
    let desired = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ssa-svc"},
        "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}});
    let s = w!(svcs.patch("ssa-svc", &pp.clone().force(), &Patch::Apply(&desired)))
        .expect("apply svc again");
    assert_eq!(s.spec.as_ref().and_then(|s| s.cluster_ip.clone()), ip);
    assert_eq!(node_ports(&s), np);
}

#[tokio::test]
#[ignore = "not modelled: server-side apply does not track field ownership (no managedFields; fields a manager stops applying are kept)"]
async fn server_side_apply_removes_fields_its_manager_dropped() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PatchParams::apply("tests.example/owner");
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "own"}, "data": {"a": "1", "b": "2"}});
    let c = w!(api.patch("own", &pp, &Patch::Apply(&desired))).expect("apply");
    let managers: Vec<String> = c
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        managers.contains(&"tests.example/owner".to_string()),
        "{managers:?}"
    );
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "own"}, "data": {"a": "1"}});
    let c = w!(api.patch("own", &pp, &Patch::Apply(&desired))).expect("apply again");
    let data = c.data.expect("data");
    assert!(!data.contains_key("b"), "{data:?}");
}

// ---- finalizers ----------------------------------------------------------------------------

#[tokio::test]
async fn finalizer_keeps_deleted_object_until_removed() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let mut cm = configmap("held", json!({}), json!({}));
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let created = w!(api.create(&PostParams::default(), &cm)).expect("create");
    let wp = WatchParams::default()
        .fields("metadata.name=held")
        .disable_bookmarks();
    let mut stream = w!(api.watch(&wp, &rv_str(&created)))
        .expect("watch")
        .boxed();

    let deleted = w!(api.delete("held", &DeleteParams::default())).expect("delete");
    let held = deleted
        .left()
        .expect("the object is returned while finalizers remain");
    assert!(held.meta().deletion_timestamp.is_some());
    let still = w!(api.get("held")).expect("still there");
    assert!(still.meta().deletion_timestamp.is_some());
    assert_eq!(still.finalizers(), ["example.com/hold"]);
    match next_event(&mut stream).await {
        WatchEvent::Modified(o) => assert!(o.meta().deletion_timestamp.is_some()),
        other => panic!("expected MODIFIED, got {}", event_summary(&other)),
    }
    // A second delete changes nothing.
    w!(api.delete("held", &DeleteParams::default())).expect("delete again");

    let release = json!({"metadata": {"finalizers": null}});
    w!(api.patch("held", &PatchParams::default(), &Patch::Merge(&release))).expect("release");
    assert!(w!(api.get_opt("held")).expect("get_opt").is_none());
    // The watch ends the object's life with DELETED (see the next test for what comes before).
    loop {
        match next_event(&mut stream).await {
            WatchEvent::Deleted(o) => {
                assert_eq!(o.name_any(), "held");
                break;
            }
            WatchEvent::Modified(o) => assert!(o.meta().deletion_timestamp.is_some()),
            other => panic!("expected DELETED, got {}", event_summary(&other)),
        }
    }
}

/// Removing the last finalizer of an object being deleted deletes it in the same write: a
/// watch sees DELETED right after the MODIFIED of the deletion, with no MODIFIED in between.
#[tokio::test]
async fn removing_last_finalizer_emits_only_deleted() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let mut cm = configmap("held", json!({}), json!({}));
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let created = w!(api.create(&PostParams::default(), &cm)).expect("create");
    let wp = WatchParams::default()
        .fields("metadata.name=held")
        .disable_bookmarks();
    let mut stream = w!(api.watch(&wp, &rv_str(&created)))
        .expect("watch")
        .boxed();
    w!(api.delete("held", &DeleteParams::default())).expect("delete");
    let release = json!({"metadata": {"finalizers": null}});
    w!(api.patch("held", &PatchParams::default(), &Patch::Merge(&release))).expect("release");
    let first = event_summary(&next_event(&mut stream).await);
    let second = event_summary(&next_event(&mut stream).await);
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("MODIFIED held", "DELETED held")
    );
}

// ---- Services ------------------------------------------------------------------------------

fn in_service_cidr(ip: &str) -> bool {
    let ip: Ipv4Addr = ip.parse().expect("IPv4");
    ip.octets()[..2] == [10, 43]
}

#[tokio::test]
async fn service_cluster_ips_are_allocated_from_the_service_cidr() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let mut ips = HashSet::new();
    for i in 0..5 {
        let name = format!("ip-{i}");
        let s = w!(api.create(
            &PostParams::default(),
            &service(&name, json!({"ports": [{"port": 80}]}))
        ))
        .expect("create");
        let spec = s.spec.expect("spec");
        let ip = spec.cluster_ip.clone().expect("clusterIP");
        assert!(in_service_cidr(&ip), "{ip}");
        assert_eq!(spec.cluster_ips, Some(vec![ip.clone()]));
        assert!(ips.insert(ip), "cluster IPs are unique");
    }
    // Headless stays headless; an explicit free IP is honoured, a taken one refused.
    let headless = w!(api.create(
        &PostParams::default(),
        &service(
            "headless",
            json!({"clusterIP": "None", "ports": [{"port": 80}]})
        )
    ))
    .expect("headless");
    assert_eq!(
        headless.spec.and_then(|s| s.cluster_ip).as_deref(),
        Some("None")
    );
    let fixed = w!(api.create(
        &PostParams::default(),
        &service(
            "fixed",
            json!({"clusterIP": "10.43.200.200", "ports": [{"port": 80}]})
        )
    ))
    .expect("fixed");
    assert_eq!(
        fixed.spec.and_then(|s| s.cluster_ip).as_deref(),
        Some("10.43.200.200")
    );
    let s = api_err(w!(api.create(
        &PostParams::default(),
        &service(
            "clash",
            json!({"clusterIP": "10.43.200.200", "ports": [{"port": 80}]})
        )
    )));
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    let s = api_err(w!(api.create(
        &PostParams::default(),
        &service(
            "outside",
            json!({"clusterIP": "192.168.1.1", "ports": [{"port": 80}]})
        )
    )));
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
}

#[tokio::test]
async fn service_node_ports_are_unique_and_kept_on_update() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let pp = PostParams::default();
    let a = w!(api.create(&pp, &lb_service("np-a"))).expect("a");
    let b = w!(api.create(&pp, &lb_service("np-b"))).expect("b");
    let c = w!(api.create(
        &pp,
        &service(
            "np-c",
            json!({"type": "NodePort", "ports": [{"port": 8080}]})
        )
    ))
    .expect("c");
    let all: Vec<i32> = [&a, &b, &c].into_iter().flat_map(node_ports).collect();
    assert_eq!(all.len(), 5);
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 5, "{all:?}");
    assert!(all.iter().all(|p| (30000..=32767).contains(p)), "{all:?}");

    // A replace that leaves the node ports out keeps them.
    let mut update = a.clone();
    for p in update
        .spec
        .as_mut()
        .and_then(|s| s.ports.as_mut())
        .into_iter()
        .flatten()
    {
        p.node_port = None;
    }
    update.labels_mut().insert("v".into(), "2".into());
    let a2 = w!(api.replace("np-a", &pp, &update)).expect("replace");
    assert_eq!(node_ports(&a2), node_ports(&a));

    // Another Service cannot take a node port in use.
    let taken = node_ports(&a)[0];
    let clash = service(
        "np-d",
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": taken}]}),
    );
    let s = api_err(w!(api.create(&pp, &clash)));
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    let fields: Vec<&str> = s
        .details
        .iter()
        .flat_map(|d| d.causes.iter())
        .map(|c| c.field.as_str())
        .collect();
    assert!(fields.contains(&"spec.ports[0].nodePort"), "{fields:?}");
    // Once freed, it can be requested.
    w!(api.delete("np-a", &DeleteParams::default())).expect("delete a");
    let d = w!(api.create(&pp, &clash)).expect("free again");
    assert_eq!(node_ports(&d), vec![taken]);
}

#[tokio::test]
async fn service_health_check_node_port_follows_external_traffic_policy() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let pp = PostParams::default();
    let mut svc = lb_service("hc");
    svc.spec.get_or_insert_default().external_traffic_policy = Some("Local".into());
    let s = w!(api.create(&pp, &svc)).expect("create");
    let hc = s
        .spec
        .as_ref()
        .and_then(|s| s.health_check_node_port)
        .expect("healthCheckNodePort");
    assert!((30000..=32767).contains(&hc));
    assert!(!node_ports(&s).contains(&hc));

    // Kept across updates, also when the update leaves it out.
    let mut update = s.clone();
    update.spec.get_or_insert_default().health_check_node_port = None;
    update.labels_mut().insert("v".into(), "2".into());
    let s2 = w!(api.replace("hc", &pp, &update)).expect("replace");
    assert_eq!(
        s2.spec.as_ref().and_then(|s| s.health_check_node_port),
        Some(hc)
    );

    // Back to Cluster drops it.
    let patch = json!({"spec": {"externalTrafficPolicy": "Cluster"}});
    let s3 = w!(api.patch("hc", &PatchParams::default(), &Patch::Merge(&patch))).expect("Cluster");
    assert_eq!(
        s3.spec.as_ref().and_then(|s| s.health_check_node_port),
        None
    );
    assert_eq!(node_ports(&s3), node_ports(&s));
}

#[tokio::test]
async fn service_defaults_are_filled_in() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let s = w!(api.create(
        &PostParams::default(),
        &service(
            "defaults",
            json!({"type": "LoadBalancer", "ports": [{"port": 80}]})
        )
    ))
    .expect("create");
    let spec = s.spec.expect("spec");
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    assert_eq!(spec.ip_families, Some(vec!["IPv4".to_string()]));
    assert_eq!(spec.ip_family_policy.as_deref(), Some("SingleStack"));
    assert_eq!(spec.internal_traffic_policy.as_deref(), Some("Cluster"));
    assert_eq!(spec.external_traffic_policy.as_deref(), Some("Cluster"));
    assert_eq!(spec.allocate_load_balancer_node_ports, Some(true));
    let port = &spec.ports.expect("ports")[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(port.target_port, Some(IntOrString::Int(80)));
    let cip = w!(api.create(
        &PostParams::default(),
        &service(
            "defaults-cip",
            json!({"ports": [{"port": 53, "protocol": "UDP", "targetPort": "dns"}]})
        )
    ))
    .expect("ClusterIP");
    let spec = cip.spec.expect("spec");
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.external_traffic_policy, None);
    let port = &spec.ports.expect("ports")[0];
    assert_eq!(port.protocol.as_deref(), Some("UDP"));
    assert_eq!(port.target_port, Some(IntOrString::String("dns".into())));
    assert_eq!(port.node_port, None);
}

#[tokio::test]
async fn service_type_change_to_cluster_ip_drops_node_ports() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let mut svc = lb_service("shrink");
    svc.spec.get_or_insert_default().external_traffic_policy = Some("Local".into());
    let s = w!(api.create(&PostParams::default(), &svc)).expect("create");
    assert_eq!(node_ports(&s).len(), 2);
    let patch = json!({"spec": {"type": "ClusterIP"}});
    let s2 = w!(api.patch("shrink", &PatchParams::default(), &Patch::Merge(&patch)))
        .expect("to ClusterIP");
    let spec = s2.spec.clone().expect("spec");
    assert!(node_ports(&s2).is_empty(), "{spec:?}");
    assert_eq!(spec.health_check_node_port, None);
    assert_eq!(spec.external_traffic_policy, None);
    assert_eq!(spec.allocate_load_balancer_node_ports, None);
    assert_eq!(
        spec.cluster_ip,
        s.spec.as_ref().and_then(|s| s.cluster_ip.clone())
    );
    // The freed node ports can be used by another Service.
    let again = w!(api.create(
        &PostParams::default(),
        &service(
            "reuse",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": node_ports(&s)[0]}]})
        )
    ))
    .expect("reuse");
    assert_eq!(node_ports(&again).len(), 1);
}

/// The one cause of a 422 about `spec.loadBalancerClass`: its reason and message.
fn class_cause(s: &kube::core::Status) -> (String, String) {
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
    let details = s.details.as_ref().expect("details");
    assert_eq!(details.kind, "Service", "{s:?}");
    match details.causes.as_slice() {
        [c] if c.field == "spec.loadBalancerClass" => (c.reason.clone(), c.message.clone()),
        other => panic!("one spec.loadBalancerClass cause expected: {other:?}"),
    }
}

#[tokio::test]
async fn service_load_balancer_class_may_not_change_between_load_balancers() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let (pp, patch) = (PostParams::default(), PatchParams::default());
    let invalid = |value: &str| {
        (
            "FieldValueInvalid".to_string(),
            format!("Invalid value: {value}: may not change once set"),
        )
    };

    // Added to a LoadBalancer that had none.
    let plain = w!(api.create(&pp, &lb_service("plain"))).expect("create");
    let add = json!({"spec": {"loadBalancerClass": "example.com/lb"}});
    let s = api_err(w!(api.patch("plain", &patch, &Patch::Merge(&add))));
    assert_eq!(class_cause(&s), invalid("\"example.com/lb\""));
    assert!(
        s.message.contains(
            "spec.loadBalancerClass: Invalid value: \"example.com/lb\": may not change once set"
        ),
        "{s:?}"
    );
    let still = w!(api.get("plain")).expect("get");
    assert_eq!(rv(&still), rv(&plain), "nothing was written");
    assert_eq!(still.spec.and_then(|s| s.load_balancer_class), None);

    // Removed, by a merge patch and by a replace that leaves it out.
    let mut classy = lb_service("classy");
    classy.spec.get_or_insert_default().load_balancer_class = Some("example.com/lb".into());
    let classy = w!(api.create(&pp, &classy)).expect("create with a class");
    let remove = json!({"spec": {"loadBalancerClass": null}});
    let s = api_err(w!(api.patch("classy", &patch, &Patch::Merge(&remove))));
    assert_eq!(class_cause(&s), invalid("\"null\""));
    let mut without = classy.clone();
    without.spec.get_or_insert_default().load_balancer_class = None;
    let s = api_err(w!(api.replace("classy", &pp, &without)));
    assert_eq!(class_cause(&s), invalid("\"null\""));

    // Changed.
    let change = json!({"spec": {"loadBalancerClass": "other.example/lb"}});
    let s = api_err(w!(api.patch("classy", &patch, &Patch::Merge(&change))));
    assert_eq!(class_cause(&s), invalid("\"other.example/lb\""));
    assert_eq!(
        w!(api.get("classy"))
            .expect("get")
            .spec
            .and_then(|s| s.load_balancer_class)
            .as_deref(),
        Some("example.com/lb")
    );

    // Other changes of a LoadBalancer with a class go through.
    let relabel = json!({"metadata": {"labels": {"v": "2"}}});
    w!(api.patch("classy", &patch, &Patch::Merge(&relabel))).expect("unrelated change");
}

#[tokio::test]
async fn service_load_balancer_class_is_set_only_with_type_load_balancer() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let (pp, patch) = (PostParams::default(), PatchParams::default());
    let forbidden = (
        "FieldValueForbidden".to_string(),
        "Forbidden: may only be used when `type` is 'LoadBalancer'".to_string(),
    );

    // On a ClusterIP Service: refused at create and at update.
    let with_class = service(
        "cip",
        json!({"loadBalancerClass": "example.com/lb", "ports": [{"port": 80}]}),
    );
    let s = api_err(w!(api.create(&pp, &with_class)));
    assert_eq!(class_cause(&s), forbidden);
    w!(api.create(&pp, &service("cip", json!({"ports": [{"port": 80}]})))).expect("create");
    let set = json!({"spec": {"loadBalancerClass": "example.com/lb"}});
    let s = api_err(w!(api.patch("cip", &patch, &Patch::Merge(&set))));
    assert_eq!(class_cause(&s), forbidden);

    // Together with the change to LoadBalancer: accepted and kept.
    let to_lb = json!({"spec": {"type": "LoadBalancer", "loadBalancerClass": "example.com/lb"}});
    let s = w!(api.patch("cip", &patch, &Patch::Merge(&to_lb))).expect("to LoadBalancer");
    let spec = s.spec.expect("spec");
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.load_balancer_class.as_deref(), Some("example.com/lb"));
}

// ---- selectors -----------------------------------------------------------------------------

fn names<K: Resource>(items: &[K]) -> Vec<String> {
    let mut v: Vec<String> = items
        .iter()
        .map(|i| i.meta().name.clone().unwrap_or_default())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn list_with_label_selectors() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PostParams::default();
    for (name, labels) in [
        ("l1", json!({"app": "a", "tier": "front"})),
        ("l2", json!({"app": "b"})),
        ("l3", json!({"app": "c", "tier": "back"})),
        ("l4", json!({})),
    ] {
        w!(api.create(&pp, &configmap(name, labels, json!({})))).expect("create");
    }
    for (selector, want) in [
        ("app=a", vec!["l1"]),
        ("app in (a,b)", vec!["l1", "l2"]),
        ("app notin (a,b)", vec!["l3", "l4"]),
        ("app!=a", vec!["l2", "l3", "l4"]),
        ("tier", vec!["l1", "l3"]),
        ("!tier", vec!["l2", "l4"]),
        ("app,tier=back", vec!["l3"]),
    ] {
        let list = w!(api.list(&ListParams::default().labels(selector))).expect("list");
        assert_eq!(names(&list.items), want, "{selector}");
    }
    let s = api_err(w!(api.list(&ListParams::default().labels("app in a"))));
    assert_eq!(s.code, 400);
}

#[tokio::test]
async fn list_with_field_selectors() {
    let e = env().await;
    let svcs = e.default_ns::<Service>();
    let pp = PostParams::default();
    w!(svcs.create(&pp, &lb_service("f-lb"))).expect("lb");
    w!(svcs.create(&pp, &service("f-cip", json!({"ports": [{"port": 80}]})))).expect("cip");
    let lp = |f: &str| ListParams::default().fields(f);
    let list = w!(svcs.list(&lp("metadata.name=f-cip"))).expect("name");
    assert_eq!(names(&list.items), vec!["f-cip"]);
    let list = w!(svcs.list(&lp("spec.type=LoadBalancer"))).expect("type");
    assert_eq!(names(&list.items), vec!["f-lb"]);
    let list =
        w!(svcs.list(&lp("spec.type!=LoadBalancer,metadata.namespace=default"))).expect("!=");
    assert_eq!(names(&list.items), vec!["f-cip"]);

    let events = e.default_ns::<CoreEvent>();
    for (name, target) in [("e1", "f-lb"), ("e2", "f-cip"), ("e3", "f-lb")] {
        let ev: CoreEvent = obj(json!({"metadata": {"name": name},
            "involvedObject": {"kind": "Service", "namespace": "default", "name": target},
            "reason": "Test", "message": name, "type": "Normal"}));
        w!(events.create(&pp, &ev)).expect("event");
    }
    let list = w!(events.list(&lp("involvedObject.name=f-lb"))).expect("events");
    assert_eq!(names(&list.items), vec!["e1", "e3"]);
    let list = w!(events.list(&lp("involvedObject.kind=Service,reason=Test"))).expect("events");
    assert_eq!(list.items.len(), 3);
}

#[tokio::test]
async fn watch_with_label_selector_sees_objects_enter_and_leave() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PostParams::default();
    let start = w!(api.create(&pp, &configmap("other", json!({}), json!({})))).expect("start");
    let wp = WatchParams::default().labels("app=web").disable_bookmarks();
    let mut stream = w!(api.watch(&wp, &rv_str(&start))).expect("watch").boxed();

    w!(api.create(&pp, &configmap("w1", json!({"app": "web"}), json!({})))).expect("w1");
    w!(api.create(&pp, &configmap("w2", json!({"app": "db"}), json!({})))).expect("w2");
    let away = json!({"metadata": {"labels": {"app": "db"}}});
    let back = json!({"metadata": {"labels": {"app": "web"}}});
    let mp = PatchParams::default();
    w!(api.patch("w1", &mp, &Patch::Merge(&away))).expect("leave");
    w!(api.patch("w2", &mp, &Patch::Merge(&back))).expect("enter");
    let data = json!({"data": {"k": "v"}});
    w!(api.patch("w2", &mp, &Patch::Merge(&data))).expect("modify");
    w!(api.delete("w1", &DeleteParams::default())).expect("delete w1 (outside)");
    w!(api.delete("w2", &DeleteParams::default())).expect("delete w2 (inside)");

    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(event_summary(&next_event(&mut stream).await));
    }
    assert_eq!(
        seen,
        vec![
            "ADDED w1",
            "DELETED w1",
            "ADDED w2",
            "MODIFIED w2",
            "DELETED w2"
        ]
    );
}

#[tokio::test]
async fn watch_with_field_selector_on_service_type() {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let pp = PostParams::default();
    let cip = w!(api.create(&pp, &service("ft", json!({"ports": [{"port": 80}]})))).expect("cip");
    let wp = WatchParams::default()
        .fields("spec.type=LoadBalancer")
        .disable_bookmarks();
    let mut stream = w!(api.watch(&wp, &rv_str(&cip))).expect("watch").boxed();
    let to_lb = json!({"spec": {"type": "LoadBalancer"}});
    let to_cip = json!({"spec": {"type": "ClusterIP"}});
    let mp = PatchParams::default();
    w!(api.patch("ft", &mp, &Patch::Merge(&to_lb))).expect("to LB");
    w!(api.patch("ft", &mp, &Patch::Merge(&to_cip))).expect("to ClusterIP");
    match next_event(&mut stream).await {
        WatchEvent::Added(s) => assert_eq!(node_ports(&s).len(), 1),
        other => panic!("expected ADDED, got {}", event_summary(&other)),
    }
    match next_event(&mut stream).await {
        WatchEvent::Deleted(s) => assert_eq!(s.name_any(), "ft"),
        other => panic!("expected DELETED, got {}", event_summary(&other)),
    }
}

// ---- namespaces ----------------------------------------------------------------------------

#[tokio::test]
async fn object_in_missing_namespace_is_not_found() {
    let e = env().await;
    let api = e.in_ns::<ConfigMap>("missing");
    let s = api_err(w!(api.create(
        &PostParams::default(),
        &configmap("x", json!({}), json!({}))
    )));
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"), "{s:?}");
    assert_eq!(s.message, "namespaces \"missing\" not found");
}

async fn make_namespace(e: &Env, name: &str) {
    let ns: Namespace = obj(json!({"metadata": {"name": name}}));
    w!(e.cluster::<Namespace>().create(&PostParams::default(), &ns)).expect("namespace");
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_objects() {
    let e = env().await;
    make_namespace(&e, "doomed").await;
    let cms = e.in_ns::<ConfigMap>("doomed");
    let svcs = e.in_ns::<Service>("doomed");
    let pp = PostParams::default();
    w!(cms.create(&pp, &configmap("c", json!({}), json!({})))).expect("cm");
    w!(svcs.create(&pp, &lb_service("s"))).expect("svc");
    let kept = w!(e
        .default_ns::<ConfigMap>()
        .create(&pp, &configmap("c", json!({}), json!({}))))
    .expect("same name elsewhere");

    w!(e.cluster::<Namespace>()
        .delete("doomed", &DeleteParams::default()))
    .expect("delete ns");
    wait_for(
        &e.cluster::<Namespace>(),
        "doomed",
        "the namespace to go",
        |n: Option<&Namespace>| n.is_none(),
    )
    .await;
    assert!(
        w!(cms.list(&ListParams::default()))
            .expect("list")
            .items
            .is_empty()
    );
    assert!(
        w!(svcs.list(&ListParams::default()))
            .expect("list")
            .items
            .is_empty()
    );
    let still = w!(e.default_ns::<ConfigMap>().get("c")).expect("other namespace untouched");
    assert_eq!(still.meta().uid, kept.meta().uid);
}

#[tokio::test]
async fn namespace_stays_terminating_until_finalized_objects_are_released() {
    let e = env().await;
    make_namespace(&e, "slow").await;
    let cms = e.in_ns::<ConfigMap>("slow");
    let pp = PostParams::default();
    let mut held = configmap("held", json!({}), json!({}));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    w!(cms.create(&pp, &held)).expect("held");
    w!(cms.create(&pp, &configmap("free", json!({}), json!({})))).expect("free");

    let namespaces = e.cluster::<Namespace>();
    w!(namespaces.delete("slow", &DeleteParams::default())).expect("delete ns");
    wait_for(
        &cms,
        "free",
        "the unfinalized object to go",
        |c: Option<&ConfigMap>| c.is_none(),
    )
    .await;
    let ns = w!(namespaces.get("slow")).expect("still there");
    assert!(ns.meta().deletion_timestamp.is_some());
    assert_eq!(
        ns.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    let h = w!(cms.get("held")).expect("held object stays");
    assert!(h.meta().deletion_timestamp.is_some());

    let release = json!({"metadata": {"finalizers": null}});
    w!(cms.patch("held", &PatchParams::default(), &Patch::Merge(&release))).expect("release");
    wait_for(
        &namespaces,
        "slow",
        "the namespace to go",
        |n: Option<&Namespace>| n.is_none(),
    )
    .await;
}

#[tokio::test]
async fn create_in_terminating_namespace_is_forbidden() {
    let e = env().await;
    make_namespace(&e, "ending").await;
    let cms = e.in_ns::<ConfigMap>("ending");
    let mut held = configmap("held", json!({}), json!({}));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    w!(cms.create(&PostParams::default(), &held)).expect("held");
    w!(e.cluster::<Namespace>()
        .delete("ending", &DeleteParams::default()))
    .expect("delete ns");
    let s = api_err(w!(cms.create(
        &PostParams::default(),
        &configmap("late", json!({}), json!({}))
    )));
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"), "{s:?}");
    assert!(s.message.contains("is being terminated"), "{s:?}");
}

// ---- Events --------------------------------------------------------------------------------

#[tokio::test]
async fn recorder_event_is_listed_through_core_v1() {
    let e = env().await;
    let svcs = e.default_ns::<Service>();
    let svc = w!(svcs.create(&PostParams::default(), &lb_service("evt"))).expect("svc");
    let recorder = Recorder::new(
        e.client.clone(),
        Reporter {
            controller: "tests.example/recorder".into(),
            instance: Some("recorder-1".into()),
        },
    );
    let reference = svc.object_ref(&());
    w!(recorder.publish(
        &RecorderEvent {
            type_: EventType::Normal,
            reason: "EnsuredLoadBalancer".into(),
            note: Some("Ensured load balancer".into()),
            action: "Ensure".into(),
            secondary: None,
        },
        &reference
    ))
    .expect("publish");

    let core = e.default_ns::<CoreEvent>();
    let list =
        w!(core.list(&ListParams::default().fields("involvedObject.name=evt"))).expect("list");
    assert_eq!(list.items.len(), 1, "{:?}", list.items);
    let ev = &list.items[0];
    assert_eq!(ev.message.as_deref(), Some("Ensured load balancer"));
    assert_eq!(ev.reason.as_deref(), Some("EnsuredLoadBalancer"));
    assert_eq!(ev.type_.as_deref(), Some("Normal"));
    assert_eq!(ev.involved_object.kind.as_deref(), Some("Service"));
    assert_eq!(ev.involved_object.name.as_deref(), Some("evt"));
    assert_eq!(ev.involved_object.uid, svc.meta().uid);
    assert_eq!(
        ev.reporting_component.as_deref(),
        Some("tests.example/recorder")
    );

    // A second publish of the same event becomes a series (a PATCH through events.k8s.io).
    w!(recorder.publish(
        &RecorderEvent {
            type_: EventType::Normal,
            reason: "EnsuredLoadBalancer".into(),
            note: Some("Ensured load balancer".into()),
            action: "Ensure".into(),
            secondary: None,
        },
        &reference
    ))
    .expect("publish again");
    let new = e.default_ns::<NewEvent>();
    let list = w!(new.list(&ListParams::default())).expect("list new");
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0].series.as_ref().map(|s| s.count),
        Some(2),
        "{:?}",
        list.items[0]
    );
}

#[tokio::test]
async fn core_event_is_listed_through_events_v1() {
    let e = env().await;
    let core = e.default_ns::<CoreEvent>();
    let ev: CoreEvent = obj(json!({"metadata": {"name": "old-style"},
        "involvedObject": {"kind": "Node", "name": "node-1", "apiVersion": "v1"},
        "reason": "NodeReady", "message": "Node node-1 status is now: NodeReady",
        "type": "Normal", "count": 3, "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z"}));
    w!(core.create(&PostParams::default(), &ev)).expect("create");
    let new = e.default_ns::<NewEvent>();
    let got = w!(new.get("old-style")).expect("get through events.k8s.io");
    assert_eq!(
        got.note.as_deref(),
        Some("Node node-1 status is now: NodeReady")
    );
    assert_eq!(
        got.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("node-1")
    );
    assert_eq!(got.reason.as_deref(), Some("NodeReady"));
    assert_eq!(got.deprecated_count, Some(3));
    assert_eq!(
        got.deprecated_source
            .as_ref()
            .and_then(|s| s.component.as_deref()),
        Some("kubelet")
    );
    assert!(got.deprecated_last_timestamp.is_some());
    let list = w!(new.list(&ListParams::default())).expect("list");
    assert_eq!(names(&list.items), vec!["old-style"]);
}

// ---- watch ---------------------------------------------------------------------------------

async fn next_watcher_event<K, S>(stream: &mut S) -> watcher::Event<K>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    w!(stream.next())
        .expect("the watcher ended")
        .expect("watcher event")
}

fn watcher_summary<K: Resource>(ev: &watcher::Event<K>) -> String {
    let n = |o: &K| o.meta().name.clone().unwrap_or_default();
    match ev {
        watcher::Event::Init => "Init".into(),
        watcher::Event::InitApply(o) => format!("InitApply {}", n(o)),
        watcher::Event::InitDone => "InitDone".into(),
        watcher::Event::Apply(o) => format!("Apply {}", n(o)),
        watcher::Event::Delete(o) => format!("Delete {}", n(o)),
    }
}

#[tokio::test]
async fn watcher_sees_init_then_apply_and_delete() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PostParams::default();
    w!(api.create(&pp, &configmap("pre", json!({"suite": "w"}), json!({})))).expect("pre");
    w!(api.create(&pp, &configmap("ignored", json!({}), json!({})))).expect("ignored");
    let mut stream = watcher(api.clone(), watcher::Config::default().labels("suite=w")).boxed();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(watcher_summary(&next_watcher_event(&mut stream).await));
    }
    assert_eq!(seen, vec!["Init", "InitApply pre", "InitDone"]);

    w!(api.create(&pp, &configmap("new", json!({"suite": "w"}), json!({})))).expect("new");
    let data = json!({"data": {"k": "v"}});
    w!(api.patch("pre", &PatchParams::default(), &Patch::Merge(&data))).expect("update");
    w!(api.delete("new", &DeleteParams::default())).expect("delete");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let ev = next_watcher_event(&mut stream).await;
        if let watcher::Event::Apply(o) = &ev
            && o.name_any() == "pre"
        {
            assert_eq!(
                o.data.as_ref().and_then(|d| d.get("k")).map(String::as_str),
                Some("v")
            );
        }
        seen.push(watcher_summary(&ev));
    }
    assert_eq!(seen, vec!["Apply new", "Apply pre", "Delete new"]);
}

#[tokio::test]
async fn raw_watch_from_resource_version_gets_exactly_the_later_changes() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PostParams::default();
    w!(api.create(&pp, &configmap("a", json!({}), json!({})))).expect("a");
    let b = w!(api.create(&pp, &configmap("b", json!({}), json!({})))).expect("b");
    let data = json!({"data": {"n": "1"}});
    let a2 = w!(api.patch("a", &PatchParams::default(), &Patch::Merge(&data))).expect("a2");
    let c = w!(api.create(&pp, &configmap("c", json!({}), json!({})))).expect("c");
    w!(api.delete("b", &DeleteParams::default())).expect("delete b");

    let wp = WatchParams::default().timeout(1).disable_bookmarks();
    let mut stream = w!(api.watch(&wp, &rv_str(&b))).expect("watch").boxed();
    let events = drain(&mut stream).await;
    let seen: Vec<String> = events.iter().map(event_summary).collect();
    assert_eq!(seen, vec!["MODIFIED a", "ADDED c", "DELETED b"]);
    match &events[0] {
        WatchEvent::Modified(o) => assert_eq!(rv(o), rv(&a2)),
        _ => unreachable!(),
    }
    match &events[1] {
        WatchEvent::Added(o) => assert_eq!(rv(o), rv(&c)),
        _ => unreachable!(),
    }
    match &events[2] {
        WatchEvent::Deleted(o) => assert!(rv(o) > rv(&c), "a deletion has its own version"),
        _ => unreachable!(),
    }
    // From "0": the current state as ADDED, then nothing.
    let mut stream = w!(api.watch(&wp, "0")).expect("watch 0").boxed();
    let events = drain(&mut stream).await;
    let seen: Vec<String> = events.iter().map(event_summary).collect();
    assert_eq!(seen, vec!["ADDED a", "ADDED c"]);
}

#[tokio::test]
async fn watch_bookmarks_arrive_at_the_bookmark_interval() {
    let e = env_with(ApiServerConfig {
        bookmark_interval: Duration::from_millis(200),
        ..Default::default()
    })
    .await;
    let api = e.default_ns::<ConfigMap>();
    let cm = w!(api.create(
        &PostParams::default(),
        &configmap("bm", json!({}), json!({}))
    ))
    .expect("create");
    let wp = WatchParams::default().timeout(5);
    assert!(wp.bookmarks);
    let mut stream = w!(api.watch(&wp, &rv_str(&cm))).expect("watch").boxed();
    let started = Instant::now();
    let mut versions = Vec::new();
    while versions.len() < 4 {
        match next_event(&mut stream).await {
            WatchEvent::Bookmark(b) => versions.push(
                b.metadata
                    .resource_version
                    .parse::<u64>()
                    .expect("numeric rv"),
            ),
            other => panic!("expected only bookmarks, got {}", event_summary(&other)),
        }
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(600) && elapsed < Duration::from_secs(3),
        "4 bookmarks at 200 ms took {elapsed:?}"
    );
    assert!(versions.iter().all(|v| *v >= rv(&cm)), "{versions:?}");
    // A write elsewhere moves the bookmarks' version forward.
    let other = w!(e.default_ns::<Secret>().create(
        &PostParams::default(),
        &obj(json!({"metadata": {"name": "s"}}))
    ))
    .expect("secret");
    loop {
        match next_event(&mut stream).await {
            WatchEvent::Bookmark(b) => {
                let v: u64 = b.metadata.resource_version.parse().expect("rv");
                if v >= rv(&other) {
                    break;
                }
            }
            other => panic!("expected only bookmarks, got {}", event_summary(&other)),
        }
    }
    // Without bookmarks asked for, none come.
    let wp = WatchParams::default().timeout(1).disable_bookmarks();
    let mut stream = w!(api.watch(&wp, &rv_str(&cm))).expect("watch").boxed();
    assert!(drain(&mut stream).await.is_empty());
}

/// Bookmarks are time-based: writes to other objects (which the watch does not select) must
/// not postpone them.
#[tokio::test]
async fn watch_bookmarks_keep_coming_while_other_objects_change() {
    let e = env_with(ApiServerConfig {
        bookmark_interval: Duration::from_millis(200),
        ..Default::default()
    })
    .await;
    let api = e.default_ns::<ConfigMap>();
    let cm = w!(api.create(
        &PostParams::default(),
        &configmap("quiet", json!({}), json!({}))
    ))
    .expect("create");
    let secrets = e.default_ns::<Secret>();
    let busy = tokio::spawn(async move {
        for i in 0..60 {
            let s: Secret = obj(json!({"metadata": {"name": format!("busy-{i}")}}));
            secrets
                .create(&PostParams::default(), &s)
                .await
                .expect("busy write");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    });
    let wp = WatchParams::default().timeout(2);
    let mut stream = w!(api.watch(&wp, &rv_str(&cm))).expect("watch").boxed();
    let events = drain(&mut stream).await;
    w!(busy).expect("busy writer");
    let bookmarks = events
        .iter()
        .filter(|e| matches!(e, WatchEvent::Bookmark(_)))
        .count();
    assert!(
        bookmarks >= 3,
        "{bookmarks} bookmark(s) in 2 s at a 200 ms interval"
    );
}

#[tokio::test]
async fn watch_timeout_ends_the_stream() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let cm = w!(api.create(
        &PostParams::default(),
        &configmap("to", json!({}), json!({}))
    ))
    .expect("create");
    let started = Instant::now();
    let wp = WatchParams::default().timeout(1);
    let mut stream = w!(api.watch(&wp, &rv_str(&cm))).expect("watch").boxed();
    let events = drain(&mut stream).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    assert!(
        events.iter().all(|e| matches!(e, WatchEvent::Bookmark(_))),
        "{:?}",
        events.iter().map(event_summary).collect::<Vec<_>>()
    );
}

/// The must-have: a writer makes `N` numbered updates while a watcher with short timeouts
/// reconnects from the last version it saw (event or bookmark); every value arrives exactly
/// once, in order.
#[tokio::test]
async fn watch_reconnects_with_bookmarks_lose_and_duplicate_nothing() {
    const N: u32 = 300;
    let e = env_with(ApiServerConfig {
        bookmark_interval: Duration::from_millis(100),
        ..Default::default()
    })
    .await;
    let api = e.default_ns::<ConfigMap>();
    let counter = w!(api.create(
        &PostParams::default(),
        &configmap("counter", json!({}), json!({"n": "0"}))
    ))
    .expect("counter");

    let writer_api = api.clone();
    let writer = tokio::spawn(async move {
        let mp = PatchParams::default();
        for n in 1..=N {
            let patch = json!({"data": {"n": n.to_string()}});
            writer_api
                .patch("counter", &mp, &Patch::Merge(&patch))
                .await
                .expect("numbered update");
            // Writes the watch does not select, so bookmarks run ahead of the last event.
            if n % 7 == 0 {
                let noise = configmap(&format!("noise-{n}"), json!({}), json!({}));
                writer_api
                    .create(&PostParams::default(), &noise)
                    .await
                    .expect("noise");
            }
            if n % 25 == 0 {
                // Pace the writer so that the run spans several watch timeouts, with quiet
                // spells longer than the bookmark interval.
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        }
    });

    let mut last_rv = rv_str(&counter);
    let mut seen: Vec<u32> = Vec::new();
    let mut connections = 0;
    let mut bookmarks = 0;
    let wp = WatchParams::default()
        .fields("metadata.name=counter")
        .timeout(1);
    tokio::time::timeout(Duration::from_secs(60), async {
        while seen.last() != Some(&N) {
            connections += 1;
            let mut stream = api.watch(&wp, &last_rv).await.expect("watch").boxed();
            while let Some(ev) = stream.next().await {
                match ev.expect("watch event") {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        let n = o
                            .data
                            .as_ref()
                            .and_then(|d| d.get("n"))
                            .and_then(|v| v.parse().ok())
                            .expect("numbered");
                        seen.push(n);
                        last_rv = rv_str(&o);
                    }
                    WatchEvent::Bookmark(b) => {
                        bookmarks += 1;
                        last_rv = b.metadata.resource_version;
                    }
                    other => panic!("unexpected {}", event_summary(&other)),
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out after 60 s; saw {} of {N} updates", seen.len()));
    w!(writer).expect("writer");
    let want: Vec<u32> = (1..=N).collect();
    assert_eq!(seen, want, "lost, duplicated or reordered updates");
    assert!(connections >= 2, "only {connections} watch connection(s)");
    assert!(bookmarks >= 1, "no bookmark was used");
}

#[tokio::test]
async fn watch_from_compacted_resource_version_is_gone() {
    let e = env().await;
    let api = e.default_ns::<ConfigMap>();
    let old = w!(api.create(
        &PostParams::default(),
        &configmap("c", json!({}), json!({}))
    ))
    .expect("create");
    let data = json!({"data": {"n": "1"}});
    w!(api.patch("c", &PatchParams::default(), &Patch::Merge(&data))).expect("update");
    e.server.shared().compact();
    let wp = WatchParams::default().disable_bookmarks();
    let mut stream = w!(api.watch(&wp, &rv_str(&old)))
        .expect("the watch is accepted")
        .boxed();
    // As on a real API server: HTTP 200, then one ERROR event carrying a 410 Expired Status.
    match next_event(&mut stream).await {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"), "{s:?}");
            assert!(s.message.contains("too old resource version"), "{s:?}");
        }
        other => panic!("expected ERROR 410, got {}", event_summary(&other)),
    }
    assert!(
        w!(stream.next()).is_none(),
        "the watch ends after the error"
    );
}

#[tokio::test]
async fn watcher_relists_after_410_and_sees_later_changes() {
    // No bookmarks within the test: the watcher only knows its list's version.
    let e = env_with(ApiServerConfig {
        bookmark_interval: Duration::from_secs(600),
        ..Default::default()
    })
    .await;
    let api = e.default_ns::<ConfigMap>();
    let pp = PostParams::default();
    w!(api.create(
        &pp,
        &configmap("first", json!({"suite": "gone"}), json!({}))
    ))
    .expect("first");
    let mut stream = watcher(
        api.clone(),
        watcher::Config::default().labels("suite=gone").timeout(1),
    )
    .boxed();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(watcher_summary(&next_watcher_event(&mut stream).await));
    }
    assert_eq!(seen, vec!["Init", "InitApply first", "InitDone"]);

    // Move the global version past the list's, then forget the history.
    w!(e.default_ns::<Secret>()
        .create(&pp, &obj(json!({"metadata": {"name": "bump"}}))))
    .expect("bump");
    e.server.shared().compact();

    // On reconnect the watch from the list's version is gone: the watcher reports it and relists.
    let mut gone = 0;
    let mut relisted = Vec::new();
    within("the relist", async {
        loop {
            match stream.next().await.expect("watcher ended") {
                Err(watcher::Error::WatchError(s)) => {
                    assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
                    gone += 1;
                }
                Err(other) => panic!("unexpected watcher error {other:?}"),
                Ok(ev) => {
                    relisted.push(watcher_summary(&ev));
                    if matches!(ev, watcher::Event::InitDone) {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert_eq!(gone, 1);
    assert_eq!(relisted, vec!["Init", "InitApply first", "InitDone"]);
    w!(api.create(
        &pp,
        &configmap("second", json!({"suite": "gone"}), json!({}))
    ))
    .expect("second");
    let ev = next_watcher_event(&mut stream).await;
    assert_eq!(watcher_summary(&ev), "Apply second");
}

// ---- Controller ----------------------------------------------------------------------------

const LB_FINALIZER: &str = "tests.example/load-balancer";
const LB_IP: &str = "198.51.100.7";

struct Ctx {
    api: Api<Service>,
    /// Use kube-runtime's `finalizer` helper (else add and remove the finalizer by hand).
    with_helper: bool,
    cleaned: Mutex<Vec<String>>,
    errors: Mutex<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Finalizer(#[from] Box<finalizer::Error<kube::Error>>),
}

async fn reconcile(svc: Arc<Service>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let is_lb = svc.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer");
    if !is_lb {
        return Ok(Action::await_change());
    }
    if !ctx.with_helper {
        return reconcile_by_hand(svc, ctx).await;
    }
    let api = ctx.api.clone();
    finalizer::finalizer(&api, LB_FINALIZER, svc, |event| async {
        match event {
            finalizer::Event::Apply(svc) => {
                if ingress_ips(&svc).is_empty() {
                    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": LB_IP}]}}});
                    api.patch_status(
                        &svc.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&status),
                    )
                    .await?;
                }
                Ok::<Action, kube::Error>(Action::await_change())
            }
            finalizer::Event::Cleanup(svc) => {
                ctx.cleaned.lock().expect("lock").push(svc.name_any());
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| ReconcileError::Finalizer(Box::new(e)))
}

/// The same as `reconcile` with a strategic-merge-patched finalizer and a JSON-patch removal.
async fn reconcile_by_hand(svc: Arc<Service>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let api = &ctx.api;
    let name = svc.name_any();
    let pp = PatchParams::default();
    let position = svc.finalizers().iter().position(|f| f == LB_FINALIZER);
    if svc.meta().deletion_timestamp.is_some() {
        if let Some(i) = position {
            ctx.cleaned.lock().expect("lock").push(name.clone());
            let path = format!("/metadata/finalizers/{i}");
            let ops = json!([{"op": "test", "path": path, "value": LB_FINALIZER},
                             {"op": "remove", "path": path}]);
            let ops = serde_json::from_value(ops).expect("JSON patch");
            api.patch(&name, &pp, &Patch::<()>::Json(ops)).await?;
        }
        return Ok(Action::await_change());
    }
    if position.is_none() {
        let patch = json!({"metadata": {"finalizers": [LB_FINALIZER]}});
        api.patch(&name, &pp, &Patch::Strategic(&patch)).await?;
        return Ok(Action::await_change());
    }
    if ingress_ips(&svc).is_empty() {
        let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": LB_IP}]}}});
        api.patch_status(&name, &pp, &Patch::Merge(&status)).await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_svc: Arc<Service>, err: &ReconcileError, ctx: Arc<Ctx>) -> Action {
    ctx.errors.lock().expect("lock").push(err.to_string());
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn controller_reconciles_load_balancer_with_finalizer_and_status() {
    controller_run(false).await;
}

#[tokio::test]
async fn controller_with_kube_finalizer_helper_reconciles_load_balancer() {
    controller_run(true).await;
}

async fn controller_run(with_helper: bool) {
    let e = env().await;
    let api = e.default_ns::<Service>();
    let ctx = Arc::new(Ctx {
        with_helper,
        api: api.clone(),
        cleaned: Mutex::new(Vec::new()),
        errors: Mutex::new(Vec::new()),
    });
    let controller = Controller::new(api.clone(), watcher::Config::default().labels("ctl=yes"))
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    let task = tokio::spawn(controller);

    let mut svc = lb_service("ctl-lb");
    svc.labels_mut().insert("ctl".into(), "yes".into());
    w!(api.create(&PostParams::default(), &svc)).expect("create");
    let ready = |s: Option<&Service>| {
        s.is_some_and(|s| s.finalizers() == [LB_FINALIZER] && ingress_ips(s) == [LB_IP])
    };
    let reached = tokio::time::timeout(STEP, await_condition(api.clone(), "ctl-lb", ready)).await;
    assert!(
        matches!(reached, Ok(Ok(_))),
        "no finalizer and ingress IP: {reached:?}; reconcile errors: {:?}",
        ctx.errors.lock().expect("lock")
    );

    w!(api.delete("ctl-lb", &DeleteParams::default())).expect("delete");
    wait_for(
        &api,
        "ctl-lb",
        "cleanup and deletion",
        |s: Option<&Service>| s.is_none(),
    )
    .await;
    assert_eq!(
        *ctx.cleaned.lock().expect("lock"),
        vec!["ctl-lb".to_string()]
    );
    let errors = ctx.errors.lock().expect("lock").clone();
    assert!(errors.is_empty(), "reconcile errors: {errors:?}");
    task.abort();
}

// ---- request recording ---------------------------------------------------------------------

#[tokio::test]
async fn requests_are_recorded_with_verbs_and_user_agent() {
    let e = env().await;
    let client = client_for(&e.server, Some("scenarios-tests/1.0")).await;
    e.server.shared().clear_requests();
    let svcs: Api<Service> = Api::namespaced(client.clone(), "default");
    let nodes: Api<Node> = Api::all(client.clone());
    w!(svcs.create(&PostParams::default(), &lb_service("rec"))).expect("create");
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}});
    w!(svcs.patch_status("rec", &PatchParams::default(), &Patch::Merge(&status))).expect("status");
    w!(svcs.get("rec")).expect("get");
    w!(nodes.list(&ListParams::default())).expect("list nodes");
    w!(nodes.list(&ListParams::default())).expect("list nodes again");
    let _ = api_err(w!(svcs.get("missing")));
    let mut watch = w!(svcs.watch(&WatchParams::default().timeout(1), "0"))
        .expect("watch")
        .boxed();
    drain(&mut watch).await;
    w!(svcs.delete("rec", &DeleteParams::default())).expect("delete");

    let records = e.server.shared().requests();
    let counts = verb_counts(&records);
    for (key, n) in [
        ("create services", 1),
        ("patch services/status", 1),
        ("get services", 2),
        ("list nodes", 2),
        ("watch services", 1),
        ("delete services", 1),
    ] {
        assert_eq!(counts.get(key).copied(), Some(n), "{key} in {counts:?}");
    }
    assert_eq!(counts.values().sum::<usize>(), 8, "{counts:?}");
    assert!(
        records
            .iter()
            .all(|r| r.user_agent == "scenarios-tests/1.0"),
        "{records:?}"
    );
    let codes: Vec<(String, u16)> = records.iter().map(|r| (r.verb.clone(), r.code)).collect();
    assert!(codes.contains(&("create".into(), 201)), "{codes:?}");
    assert!(codes.contains(&("get".into(), 404)), "{codes:?}");
    let status_patch = records
        .iter()
        .find(|r| r.verb == "patch")
        .expect("the status patch");
    assert_eq!(status_patch.subresource.as_deref(), Some("status"));
    assert_eq!(status_patch.namespace.as_deref(), Some("default"));
    assert_eq!(status_patch.name.as_deref(), Some("rec"));
    assert_eq!(status_patch.group, "");

    // The default kube client's requests are recorded too (kube-rs sets no User-Agent of
    // its own unless configured).
    e.server.shared().clear_requests();
    w!(e.default_ns::<Lease>().list(&ListParams::default())).expect("leases");
    let records = e.server.shared().requests();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].user_agent, "", "{records:?}");
    assert_eq!(
        (records[0].group.as_str(), records[0].resource.as_str()),
        ("coordination.k8s.io", "leases")
    );
}
