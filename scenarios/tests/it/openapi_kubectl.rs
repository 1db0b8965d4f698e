//! The OpenAPI documents of `scenarios::apiserver` against the real kubectl clients
//! (1.27 … 1.33, installed next to `kubectl` as `kubectl.1.NN`): a small axum stub serves
//! `/version`, legacy discovery, `/openapi/v2` (protobuf or JSON) and `/openapi/v3`, answers
//! GET of an object with 404 and echoes POST bodies. Each kubectl run has a bounded timeout.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use scenarios::apiserver::{
    V2_PROTOBUF_CONTENT_TYPE, core_versions, encode_v2, group, group_list, resource_list, v2_json,
    v2_protobuf, v3_discovery, v3_document, version,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);

/// What the stub serves.
struct Docs {
    minor: String,
    v2_json: Value,
    v2_protobuf: Vec<u8>,
    v3_discovery: Value,
    v3: Vec<(String, Value)>,
    /// Every request: `METHOD path?query accept`.
    log: Mutex<Vec<String>>,
    /// Objects a GET finds, by path.
    objects: Mutex<Vec<(String, Value)>>,
    /// PATCH requests: `path?query content-type` and body.
    patches: Mutex<Vec<(String, Value)>>,
}

impl Docs {
    /// The documents as the embedded API server serves them.
    fn served(minor: &str) -> Docs {
        let v3 = v3_paths()
            .into_iter()
            .map(|p| {
                let doc = v3_document(&p).expect("v3 document").clone();
                (p, doc)
            })
            .collect();
        Docs {
            minor: minor.to_string(),
            v2_json: v2_json().clone(),
            v2_protobuf: v2_protobuf().to_vec(),
            v3_discovery: v3_discovery(),
            v3,
            log: Mutex::new(Vec::new()),
            objects: Mutex::new(Vec::new()),
            patches: Mutex::new(Vec::new()),
        }
    }

    /// The same documents without the `fieldValidation` query parameter: what a server without
    /// server-side field validation publishes. kubectl then validates client-side against the
    /// schemas, which is how these tests check that the schemas accept valid manifests and
    /// reject unknown fields.
    fn without_field_validation(minor: &str) -> Docs {
        let mut docs = Docs::served(minor);
        strip_field_validation(&mut docs.v2_json);
        docs.v2_protobuf = encode_v2(&docs.v2_json);
        for (_, doc) in &mut docs.v3 {
            strip_field_validation(doc);
        }
        docs
    }
}

fn v3_paths() -> Vec<String> {
    v3_discovery()["paths"]
        .as_object()
        .expect("v3 discovery paths")
        .keys()
        .cloned()
        .collect()
}

fn strip_field_validation(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(params)) = map.get_mut("parameters") {
                params.retain(|p| p["name"] != "fieldValidation");
            }
            map.values_mut().for_each(strip_field_validation);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_field_validation),
        _ => {}
    }
}

fn json_response(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn not_found(path: &str) -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": format!("{path} not found"),
            "reason": "NotFound",
            "details": {},
            "code": 404,
        }),
    )
}

async fn handle(
    docs: Arc<Docs>,
    address: String,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .unwrap_or_default()
        .to_string();
    docs.log
        .lock()
        .expect("log")
        .push(format!("{method} {uri} {accept}"));
    let path = uri.path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if method == Method::POST {
        let echoed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        return json_response(StatusCode::CREATED, &echoed);
    }
    let existing = docs
        .objects
        .lock()
        .expect("objects")
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, o)| o.clone());
    if method == Method::PATCH {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|a| a.to_str().ok())
            .unwrap_or_default();
        let patch: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        docs.patches
            .lock()
            .expect("patches")
            .push((format!("{uri} {content_type}"), patch));
        return existing.map_or_else(|| not_found(&path), |o| json_response(StatusCode::OK, &o));
    }
    if method != Method::GET {
        return not_found(&path);
    }
    if let Some(object) = existing {
        return json_response(StatusCode::OK, &object);
    }
    let ok = |v: Value| json_response(StatusCode::OK, &v);
    match segments.as_slice() {
        ["version"] => {
            let mut v = version();
            v["minor"] = json!(docs.minor);
            v["gitVersion"] = json!(format!("v1.{}.0", docs.minor));
            ok(v)
        }
        ["api"] => ok(core_versions(&address)),
        ["apis"] => ok(group_list()),
        ["api", v] => resource_list("", v).map_or_else(|| not_found(&path), ok),
        ["apis", g] => group(g).map_or_else(|| not_found(&path), ok),
        ["apis", g, v] => resource_list(g, v).map_or_else(|| not_found(&path), ok),
        ["openapi", "v2"] => {
            if accept.contains("protobuf") {
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, V2_PROTOBUF_CONTENT_TYPE)],
                    docs.v2_protobuf.clone(),
                )
                    .into_response()
            } else {
                ok(docs.v2_json.clone())
            }
        }
        ["openapi", "v3"] => ok(docs.v3_discovery.clone()),
        ["openapi", "v3", rest @ ..] => {
            let wanted = rest.join("/");
            docs.v3
                .iter()
                .find(|(p, _)| *p == wanted)
                .map_or_else(|| not_found(&path), |(_, d)| ok(d.clone()))
        }
        _ => not_found(&path),
    }
}

/// Starts the stub on 127.0.0.1:0; returns its base URL and its documents and request log.
async fn start_stub(docs: Docs) -> (String, Arc<Docs>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let docs = Arc::new(docs);
    let shared = docs.clone();
    let served_address = address.clone();
    let app = Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            handle(
                docs.clone(),
                served_address.clone(),
                method,
                uri,
                headers,
                body,
            )
        },
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}"), shared)
}

impl Docs {
    /// The requests so far, and the log emptied.
    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().expect("log"))
    }
}

static DIR_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A scratch directory, removed when dropped.
struct WorkDir(PathBuf);

impl std::ops::Deref for WorkDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh directory with a kubeconfig for `server` and the manifests the tests apply.
fn workdir(server: &str) -> WorkDir {
    let dir = std::env::temp_dir().join(format!(
        "openapi-kubectl-{}-{}",
        std::process::id(),
        DIR_COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: stub
  cluster:
    server: {server}
users:
- name: stub
  user:
    token: test-token
contexts:
- name: stub
  context:
    cluster: stub
    user: stub
    namespace: default
current-context: stub
"
    );
    std::fs::write(dir.join("kubeconfig"), kubeconfig).expect("kubeconfig");
    std::fs::write(dir.join("svc.yaml"), VALID_SERVICE).expect("svc.yaml");
    std::fs::write(dir.join("portz.yaml"), PORTZ_SERVICE).expect("portz.yaml");
    std::fs::write(dir.join("kinds.yaml"), VALID_KINDS).expect("kinds.yaml");
    std::fs::write(dir.join("svc-one-port.yaml"), ONE_PORT_SERVICE).expect("svc-one-port.yaml");
    WorkDir(dir)
}

const VALID_SERVICE: &str = "apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
  labels:
    app: web
  annotations:
    k8s.cloudscale.ch/loadbalancer-flavor: lb-standard
spec:
  type: LoadBalancer
  selector:
    app: web
  externalTrafficPolicy: Local
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
  - name: https
    port: 443
    targetPort: https
";

/// `VALID_SERVICE` after an edit: the https port is gone, http has a new target port.
const ONE_PORT_SERVICE: &str = "apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
  labels:
    app: web
  annotations:
    k8s.cloudscale.ch/loadbalancer-flavor: lb-standard
spec:
  type: LoadBalancer
  selector:
    app: web
  externalTrafficPolicy: Local
  ports:
  - name: http
    port: 80
    targetPort: 9090
    protocol: TCP
";

const PORTZ_SERVICE: &str = "apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  type: LoadBalancer
  selector:
    app: web
  portz:
  - port: 80
";

/// One valid manifest of each kind the CCM scenarios use.
const VALID_KINDS: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: scenario
  labels:
    team: ccm
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
  key: value
---
apiVersion: v1
kind: Secret
metadata:
  name: cloudscale
  namespace: default
type: Opaque
data:
  access-token: c2VjcmV0
stringData:
  region: lpg
---
apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels:
    kubernetes.io/hostname: worker-1
spec:
  providerID: cloudscale://8a3f3f44-54b5-4b0d-8a2b-7c8e7a0cf1a4
  taints:
  - key: node.cloudprovider.kubernetes.io/uninitialized
    value: 'true'
    effect: NoSchedule
status:
  capacity:
    cpu: '2'
    memory: 4Gi
  addresses:
  - type: InternalIP
    address: 10.0.0.5
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: cloud-controller-manager
  namespace: kube-system
spec:
  holderIdentity: ccm-0
  leaseDurationSeconds: 15
  acquireTime: '2026-01-01T00:00:00.000000Z'
  renewTime: '2026-01-01T00:00:10.000000Z'
  leaseTransitions: 1
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc
  namespace: default
  labels:
    kubernetes.io/service-name: web
addressType: IPv4
ports:
- name: http
  port: 8080
  protocol: TCP
endpoints:
- addresses:
  - 10.0.0.7
  conditions:
    ready: true
  nodeName: worker-1
---
apiVersion: v1
kind: Event
metadata:
  name: web.17a
  namespace: default
involvedObject:
  apiVersion: v1
  kind: Service
  name: web
  namespace: default
reason: EnsuringLoadBalancer
message: Ensuring load balancer
type: Normal
count: 1
source:
  component: service-controller
firstTimestamp: '2026-01-01T00:00:00Z'
lastTimestamp: '2026-01-01T00:00:00Z'
---
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: web.17b
  namespace: default
eventTime: '2026-01-01T00:00:00.000000Z'
reportingController: cloudscale.ch/ccm
reportingInstance: ccm-0
action: EnsureLoadBalancer
reason: EnsuredLoadBalancer
regarding:
  apiVersion: v1
  kind: Service
  name: web
  namespace: default
note: Ensured load balancer
type: Normal
";

struct Output {
    success: bool,
    text: String,
}

/// Runs a kubectl client with the work dir's kubeconfig and cache dir, bounded by a timeout.
async fn kubectl(client: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(client);
    command
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(KUBECTL_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("{} {args:?} timed out", client.display()))
        .unwrap_or_else(|e| panic!("{} {args:?}: {e}", client.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Output {
        success: output.status.success(),
        text,
    }
}

/// The installed clients, or `None` (with the reason printed) when there are none.
fn clients_or_skip() -> Option<Vec<(u32, PathBuf)>> {
    let clients = scenarios::testbed::installed_clients();
    if clients.is_empty() {
        println!("skipped: no kubectl.1.27 … kubectl.1.33 found next to kubectl on PATH");
        return None;
    }
    Some(clients)
}

/// Whether the log has a GET of `path` (without query) whose `Accept` contains `accept`.
fn fetched(log: &[String], path: &str, accept: &str) -> bool {
    log.iter().any(|l| {
        let mut parts = l.splitn(3, ' ');
        let (method, uri, acc) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        method == "GET" && uri.split('?').next() == Some(path) && acc.contains(accept)
    })
}

const PROTOBUF_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

#[tokio::test(flavor = "multi_thread")]
async fn explain_service_ports() {
    let Some(clients) = clients_or_skip() else {
        return;
    };
    for (minor, client) in clients {
        let (server, stub) = start_stub(Docs::served(&minor.to_string())).await;
        let dir = workdir(&server);
        // 1.27 explains from the v2 document (protobuf), 1.28 and later from the v3 documents;
        // 1.28 and later still explain from v2 with `--output=plaintext-openapiv2`.
        let mut runs: Vec<Vec<&str>> = vec![vec!["explain", "services.spec.ports"]];
        if minor >= 28 {
            runs.push(vec![
                "explain",
                "services.spec.ports",
                "--output=plaintext-openapiv2",
            ]);
        }
        for args in runs {
            let out = kubectl(&client, &dir, &args).await;
            assert!(out.success, "1.{minor} {args:?} failed:\n{}", out.text);
            assert!(
                out.text.contains("port") && out.text.contains("targetPort"),
                "1.{minor} {args:?}:\n{}",
                out.text
            );
            // The field descriptions come through.
            assert!(
                out.text
                    .contains("The port that will be exposed by this service"),
                "1.{minor} {args:?}:\n{}",
                out.text
            );
        }
        let log = stub.take_log();
        assert!(
            fetched(&log, "/openapi/v2", PROTOBUF_ACCEPT),
            "1.{minor}: {log:#?}"
        );
        assert!(
            fetched(&log, "/openapi/v3/api/v1", "application/json"),
            "1.{minor}: {log:#?}"
        );
        // A kind of another group, through its own v3 document.
        let out = kubectl(&client, &dir, &["explain", "leases.spec"]).await;
        assert!(
            out.success && out.text.contains("holderIdentity"),
            "1.{minor} explain leases.spec:\n{}",
            out.text
        );
        println!("kubectl 1.{minor}: explain ok");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_dry_run_accepts_valid_manifests() {
    let Some(clients) = clients_or_skip() else {
        return;
    };
    for (minor, client) in clients {
        for (mode, docs) in [
            ("served", Docs::served(&minor.to_string())),
            (
                "client-side validation",
                Docs::without_field_validation(&minor.to_string()),
            ),
        ] {
            let (server, stub) = start_stub(docs).await;
            let dir = workdir(&server);
            for file in ["svc.yaml", "kinds.yaml"] {
                let out = kubectl(&client, &dir, &["apply", "-f", file, "--dry-run=client"]).await;
                assert!(
                    out.success,
                    "1.{minor} ({mode}) apply {file} failed:\n{}",
                    out.text
                );
                assert!(
                    out.text.contains("created (dry run)"),
                    "1.{minor} ({mode}) apply {file}:\n{}",
                    out.text
                );
            }
            let log = stub.take_log();
            // Every client looks for `fieldValidation` in the v3 documents first.
            assert!(
                fetched(&log, "/openapi/v3/api/v1", "application/json"),
                "1.{minor} ({mode}): {log:#?}"
            );
            // 1.27 and 1.28 always load the v2 document (protobuf); later clients only when
            // they validate client-side.
            if minor <= 28 || mode != "served" {
                assert!(
                    fetched(&log, "/openapi/v2", PROTOBUF_ACCEPT),
                    "1.{minor} ({mode}): {log:#?}"
                );
            }
            println!("kubectl 1.{minor} ({mode}): apply --dry-run=client of valid manifests ok");
        }
    }
}

/// Against documents without `fieldValidation`, every client validates client-side against
/// the v2 schemas (protobuf) and rejects an unknown field with its usual message.
#[tokio::test(flavor = "multi_thread")]
async fn client_side_validation_rejects_unknown_field() {
    let Some(clients) = clients_or_skip() else {
        return;
    };
    for (minor, client) in clients {
        let (server, stub) = start_stub(Docs::without_field_validation(&minor.to_string())).await;
        let dir = workdir(&server);
        for args in [
            vec!["apply", "-f", "portz.yaml", "--dry-run=client"],
            vec!["replace", "-f", "portz.yaml", "--dry-run=client"],
        ] {
            let out = kubectl(&client, &dir, &args).await;
            assert!(
                !out.success,
                "1.{minor} {args:?} accepted spec.portz:\n{}",
                out.text
            );
            assert!(
                out.text
                    .contains("unknown field \"portz\" in io.k8s.api.core.v1.ServiceSpec"),
                "1.{minor} {args:?}:\n{}",
                out.text
            );
        }
        let log = stub.take_log();
        assert!(
            fetched(&log, "/openapi/v2", PROTOBUF_ACCEPT),
            "1.{minor}: {log:#?}"
        );
        // Nothing was written.
        assert!(
            !log.iter().any(|l| !l.starts_with("GET ")),
            "1.{minor}: {log:#?}"
        );
        println!("kubectl 1.{minor}: spec.portz rejected client-side");
    }
}

/// With the documents as served (the write operations take `fieldValidation`), every client
/// (1.27 … 1.33) leaves the unknown-field check to the server: it skips its client-side schema
/// validation, so a client-side dry run accepts `spec.portz` ("created (dry run)"), and a real
/// apply sends the object with `fieldValidation=Strict`, which the API server must reject.
#[tokio::test(flavor = "multi_thread")]
async fn served_documents_defer_field_validation_to_the_server() {
    let Some(clients) = clients_or_skip() else {
        return;
    };
    for (minor, client) in clients {
        let (server, stub) = start_stub(Docs::served(&minor.to_string())).await;
        let dir = workdir(&server);
        let out = kubectl(
            &client,
            &dir,
            &["apply", "-f", "portz.yaml", "--dry-run=client"],
        )
        .await;
        assert!(
            out.success && out.text.contains("service/web created (dry run)"),
            "1.{minor}:\n{}",
            out.text
        );
        stub.take_log();
        let out = kubectl(&client, &dir, &["apply", "-f", "portz.yaml"]).await;
        assert!(out.success, "1.{minor}:\n{}", out.text);
        let log = stub.take_log();
        let post = log
            .iter()
            .find(|l| l.starts_with("POST /api/v1/namespaces/default/services?"))
            .unwrap_or_else(|| panic!("1.{minor}: no POST: {log:#?}"));
        assert!(post.contains("fieldValidation=Strict"), "1.{minor}: {post}");
        println!("kubectl 1.{minor}: spec.portz left to the server: {post}");
    }
}

/// Client-side apply of a changed Service computes a strategic merge patch from the patch
/// metadata (`x-kubernetes-patch-merge-key: port` on `spec.ports`): the removed port is
/// deleted by key and the order of the remaining ports is set, instead of the whole list being
/// replaced.
#[tokio::test(flavor = "multi_thread")]
async fn client_side_apply_patches_ports_by_merge_key() {
    let Some(clients) = clients_or_skip() else {
        return;
    };
    for (minor, client) in clients {
        let (server, stub) = start_stub(Docs::served(&minor.to_string())).await;
        let dir = workdir(&server);
        // The object as the first `apply -f svc.yaml` left it.
        let last_applied: Value = serde_yaml_ng::from_str(VALID_SERVICE).expect("manifest");
        let mut existing = last_applied.clone();
        existing["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
            json!(format!("{last_applied}\n"));
        existing["metadata"]["uid"] = json!("6b1d5e4c-1111-4a5b-9c2d-000000000001");
        existing["metadata"]["resourceVersion"] = json!("7");
        existing["spec"]["clusterIP"] = json!("10.96.0.10");
        existing["spec"]["ports"][0]["nodePort"] = json!(30080);
        existing["spec"]["ports"][1]["nodePort"] = json!(30443);
        existing["spec"]["ports"][1]["protocol"] = json!("TCP");
        stub.objects
            .lock()
            .expect("objects")
            .push(("/api/v1/namespaces/default/services/web".into(), existing));
        let out = kubectl(&client, &dir, &["apply", "-f", "svc-one-port.yaml"]).await;
        assert!(out.success, "1.{minor}:\n{}", out.text);
        let patches = std::mem::take(&mut *stub.patches.lock().expect("patches"));
        let [(request, patch)] = patches.as_slice() else {
            panic!("1.{minor}: expected one PATCH: {patches:#?}\n{}", out.text);
        };
        assert!(
            request.contains("application/strategic-merge-patch+json"),
            "1.{minor}: {request}"
        );
        let spec = &patch["spec"];
        assert_eq!(
            spec["$setElementOrder/ports"],
            json!([{"port": 80}]),
            "1.{minor}: {patch}"
        );
        let ports = spec["ports"].as_array().expect("ports");
        assert!(
            ports.contains(&json!({"$patch": "delete", "port": 443})),
            "1.{minor}: {patch}"
        );
        assert!(
            ports.contains(&json!({"port": 80, "targetPort": 9090})),
            "1.{minor}: {patch}"
        );
        println!("kubectl 1.{minor}: client-side apply patch of spec {spec}");
    }
}
