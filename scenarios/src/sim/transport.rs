//! The simulation's transports: clients reach fakecloud and the embedded API server by a
//! function call instead of a socket, every request is written to the trace with its
//! virtual time, and faults are injected where a network or a server would fail.
//!
//! - Cloud: [`CloudLink`] is a `ccm::cloudscale::Transport` over `fakecloud::InProcess`;
//!   fakecloud's own fault rules apply as over HTTP (`drop` and `lose_answer` reach the
//!   client as a lost connection). A CCM can be set to crash at its n-th next cloud request.
//! - Kubernetes: [`KubeLink`] is the tower service of a `kube::Client` over the API server's
//!   router, with [`KubeFaults`]: watch streams cut, 410 Gone on re-watch, 409 and 500 on
//!   writes.

use super::trace::Trace;
use axum::body::Body;
use ccm::cloudscale::{Transport, TransportError};
use futures::future::BoxFuture;
use http::{Request, Response};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::task::AbortHandle;
use tower::ServiceExt as _;

/// Kills a CCM at its n-th next cloud request, as a crash between two API calls would.
#[derive(Debug, Default)]
pub struct CrashSwitch {
    /// Requests still allowed; 0: disarmed.
    left: AtomicU64,
    task: Mutex<Option<AbortHandle>>,
}

impl CrashSwitch {
    /// The CCM task the switch kills.
    pub fn attach(&self, task: AbortHandle) {
        *self.task.lock() = Some(task);
    }

    /// Crash right before the `n`-th next request (n ≥ 1) is sent.
    pub fn arm(&self, n: u64) {
        self.left.store(n.max(1), Ordering::SeqCst);
    }

    /// Calls off an armed crash.
    pub fn disarm(&self) {
        self.left.store(0, Ordering::SeqCst);
    }

    /// Whether this request is the fatal one (then the CCM has been aborted).
    fn fire(&self) -> bool {
        let left = self.left.load(Ordering::SeqCst);
        if left == 0 {
            return false;
        }
        self.left.store(left - 1, Ordering::SeqCst);
        if left > 1 {
            return false;
        }
        if let Some(t) = self.task.lock().take() {
            t.abort();
        }
        true
    }
}

/// An operator's mistake in the CCMs' cloud settings, as the simulation plays it without
/// restarting them (the token is re-read on every request, and a proxy in front of the API
/// can change under a running CCM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Misconfig {
    /// `CLOUDSCALE_API_URL` with a mistyped path: every request goes to `/typo/v1/...`, which
    /// fakecloud answers, as the real API answers any unknown path, with a 404 in its own
    /// words.
    WrongRoot,
    /// A token of another project: the requests reach another account, with servers of
    /// its own and none of the cluster's.
    OtherAccount,
    /// A revoked token: every request answers 401.
    RevokedToken,
}

impl Misconfig {
    pub const ALL: [Misconfig; 3] = [
        Misconfig::WrongRoot,
        Misconfig::OtherAccount,
        Misconfig::RevokedToken,
    ];
}

/// Where the CCMs' cloud requests go: their own account, or what a [`Misconfig`] makes of
/// it. One switch serves every CCM of a world, restarted ones included.
#[derive(Default)]
pub struct AccountSwitch {
    now: Mutex<Option<Misconfig>>,
    /// The other project's account.
    other: Mutex<Option<fakecloud::InProcess>>,
}

impl AccountSwitch {
    pub fn set(&self, misconfig: Option<Misconfig>) {
        *self.now.lock() = misconfig;
    }

    pub fn get(&self) -> Option<Misconfig> {
        *self.now.lock()
    }

    /// The account [`Misconfig::OtherAccount`] reaches.
    pub fn set_other(&self, other: fakecloud::App) {
        *self.other.lock() = Some(fakecloud::InProcess::new(other));
    }

    fn other(&self) -> Option<fakecloud::InProcess> {
        self.other.lock().clone()
    }
}

/// `request` with its path under `/typo`.
fn under_typo(mut request: ccm::cloudscale::TransportRequest) -> ccm::cloudscale::TransportRequest {
    let pq = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let mut parts = request.uri().clone().into_parts();
    if let Ok(v) = format!("/typo{pq}").parse() {
        parts.path_and_query = Some(v);
    }
    if let Ok(uri) = http::Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
    request
}

/// A CCM's way to fakecloud.
pub struct CloudLink {
    pub cloud: fakecloud::InProcess,
    pub actor: String,
    pub trace: Trace,
    pub crash: Arc<CrashSwitch>,
    /// Which account its requests reach.
    pub switch: Arc<AccountSwitch>,
    /// What the checks made after each of its creates found ("never", not only "at the
    /// end": a duplicate the CCM cleans up later still broke the invariant).
    pub found: Arc<Mutex<Vec<super::invariants::Violation>>>,
}

impl std::fmt::Debug for CloudLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudLink")
            .field("actor", &self.actor)
            .finish()
    }
}

impl Transport for CloudLink {
    fn send(
        &self,
        request: ccm::cloudscale::TransportRequest,
    ) -> BoxFuture<'static, Result<ccm::cloudscale::TransportResponse, TransportError>> {
        let (cloud, trace, actor) = (self.cloud.clone(), self.trace.clone(), self.actor.clone());
        let found = self.found.clone();
        let crashed = self.crash.fire();
        if crashed {
            // The checks count the time from a crash to the next answered request as time
            // the faults took from the CCM (see `downtime.rs`).
            self.trace.note(format!("crash {}", self.actor));
        }
        let misconfig = self.switch.get();
        let (cloud, request, own) = match misconfig {
            None => (cloud, request, true),
            Some(Misconfig::WrongRoot) => (cloud, under_typo(request), true),
            Some(Misconfig::OtherAccount) => match self.switch.other() {
                Some(other) => (other, request, false),
                None => (cloud, request, true),
            },
            Some(Misconfig::RevokedToken) => (cloud, request, false),
        };
        Box::pin(async move {
            if crashed {
                // The process is gone: nothing is sent, nothing answers.
                return std::future::pending().await;
            }
            if misconfig == Some(Misconfig::RevokedToken) {
                let path = request
                    .uri()
                    .path_and_query()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_default();
                trace.cloud(&actor, request.method().as_str(), &path, Some(401));
                return Response::builder()
                    .status(401)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(br#"{"detail": "Invalid token."}"#.to_vec())
                    .map_err(|e| TransportError::Lost(e.to_string()));
            }
            let method = request.method().to_string();
            let path = request
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let request = request.map(Body::from);
            let sent = trace.millis();
            match cloud.serve(request).await {
                Ok(response) => {
                    let status = response.status();
                    trace.cloud(&actor, &method, &path, Some(status.as_u16()));
                    trace.slow(&actor, sent);
                    if own && method == "POST" && status.is_success() {
                        let mut new = super::invariants::after_create(cloud.app(), &path);
                        if !new.is_empty() {
                            let mut found = found.lock();
                            new.retain(|v| !found.contains(v));
                            found.extend(new);
                        }
                    }
                    let (parts, body) = response.into_parts();
                    let bytes = axum::body::to_bytes(body, usize::MAX)
                        .await
                        .map_err(|e| TransportError::Lost(e.to_string()))?;
                    Ok(Response::from_parts(parts, bytes.to_vec()))
                }
                Err(dropped) => {
                    trace.cloud(&actor, &method, &path, None);
                    trace.slow(&actor, sent);
                    if own && method == "POST" {
                        // A lost answer may hide an executed create.
                        let mut new = super::invariants::after_create(cloud.app(), &path);
                        let mut found = found.lock();
                        new.retain(|v| !found.contains(v));
                        found.extend(new);
                    }
                    Err(TransportError::Lost(dropped.to_string()))
                }
            }
        })
    }
}

/// Kubernetes API faults of one client (a CCM's).
#[derive(Debug, Default)]
pub struct KubeFaults {
    /// Bumped to end every watch stream open now.
    cut: Mutex<Option<tokio::sync::watch::Sender<u64>>>,
    /// The next n watch requests that resume from a resourceVersion answer 410 Gone.
    gone: AtomicU64,
    /// The next n writes answer this status (409 or 500).
    writes: Mutex<Option<(u16, u64)>>,
    /// The API server cannot be reached: every request fails to connect.
    down: std::sync::atomic::AtomicBool,
}

impl KubeFaults {
    /// Ends every watch stream open now (as a load balancer or API server restart does).
    pub fn cut_watches(&self) {
        let mut cut = self.cut.lock();
        let tx = cut.get_or_insert_with(|| tokio::sync::watch::channel(0).0);
        tx.send_modify(|n| *n += 1);
    }

    pub fn gone_on_rewatch(&self, n: u64) {
        self.gone.store(n, Ordering::SeqCst);
    }

    pub fn fail_writes(&self, status: u16, n: u64) {
        *self.writes.lock() = Some((status, n));
    }

    /// Cuts the CCM off the API server (`true`: its open watches end and every request
    /// fails to connect, as behind a broken network path) or lets it through again.
    pub fn set_down(&self, down: bool) {
        if self.down.swap(down, Ordering::SeqCst) != down && down {
            self.cut_watches();
        }
    }

    fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    fn cut_signal(&self) -> tokio::sync::watch::Receiver<u64> {
        let mut cut = self.cut.lock();
        cut.get_or_insert_with(|| tokio::sync::watch::channel(0).0)
            .subscribe()
    }

    fn take_gone(&self) -> bool {
        self.gone
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    fn take_write_fault(&self) -> Option<u16> {
        let mut w = self.writes.lock();
        let (status, n) = (*w)?;
        *w = (n > 1).then_some((status, n - 1));
        Some(status)
    }
}

/// A `kube::Client`'s way to the embedded API server.
#[derive(Clone)]
pub struct KubeLink {
    pub router: axum::Router,
    pub actor: String,
    /// The bearer token the requests carry (the API server enforces RBAC).
    pub token: String,
    pub trace: Trace,
    pub faults: Option<Arc<KubeFaults>>,
    /// For a CCM's link: every write that adds or removes a Node's shutdown taint is
    /// checked against the server's status at that moment.
    pub taints: Option<TaintAudit>,
}

/// "An API error never changes a taint", checked at every write rather than at the end (a
/// taint flipped by a failed lookup and flipped back later leaves no trace in the end
/// state): a write that adds the shutdown taint must find the Node's server stopped, one
/// that removes it must find the server not stopped.
#[derive(Clone)]
pub struct TaintAudit {
    pub api: crate::apiserver::Shared,
    pub cloud: fakecloud::App,
    pub found: Arc<Mutex<Vec<super::invariants::Violation>>>,
}

impl TaintAudit {
    /// Read in place: every Node write is audited, and parsing every Node for each one
    /// took a twentieth of a simulation run.
    fn tainted(&self, node: &str) -> Option<bool> {
        self.api.read_object("nodes", "", node, |n| {
            n.pointer("/spec/taints")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|t| {
                    t.iter().any(|t| {
                        t.get("key").and_then(serde_json::Value::as_str)
                            == Some(ccm::node::metadata::SHUTDOWN_TAINT)
                    })
                })
        })
    }

    /// The status of the Node's server: by provider ID, or (not initialized yet) the one
    /// server of its name, as the CCM finds it.
    fn server_status(&self, node: &str) -> Option<String> {
        let provider_id = self.api.read_object("nodes", "", node, |n| {
            n.pointer("/spec/providerID")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        })?;
        let uuid: Option<uuid::Uuid> = match &provider_id {
            Some(p) => Some(p.strip_prefix("cloudscale://")?.parse().ok()?),
            None => None,
        };
        self.cloud.read("", |ctx| {
            let server = match uuid {
                Some(u) => ctx.st.servers().get(&u),
                None => {
                    let mut named = ctx.st.servers().values().filter(|s| s.name == node);
                    match (named.next(), named.next()) {
                        (Some(one), None) => Some(one),
                        _ => None,
                    }
                }
            };
            Some(server.map_or("deleted".to_string(), |s| s.status(ctx.now).to_string()))
        })
    }

    fn judge(&self, actor: &str, node: &str, before: Option<bool>) {
        let after = self.tainted(node);
        let (Some(before), Some(after)) = (before, after) else {
            return;
        };
        if before == after {
            return;
        }
        let status = self.server_status(node).unwrap_or_default();
        if after != (status == "stopped") {
            let verb = if after { "added" } else { "removed" };
            self.found.lock().push(super::invariants::Violation {
                invariant: "taint-without-cause",
                detail: format!(
                    "{actor} {verb} the shutdown taint of Node {node} while its server was {status}"
                ),
            });
        }
    }
}

/// The Node a request writes (`/api/v1/nodes/NAME[/status][?...]`).
fn node_written(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/v1/nodes/")?;
    let name = rest.split(['/', '?']).next()?;
    (!name.is_empty()).then_some(name)
}

impl KubeLink {
    pub fn client(self) -> kube::Client {
        kube::Client::new(self, "default")
    }

    /// A client whose requests a CCM counts in `metrics` (as its own client does).
    pub fn counted_client(self, metrics: &Arc<ccm::metrics::Metrics>) -> kube::Client {
        kube::client::ClientBuilder::new(self, "default")
            .with_layer(&ccm::metrics::KubeRequestsLayer::new(metrics.clone()))
            .build()
    }
}

fn status_answer(code: u16, reason: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    });
    Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// What a client sees when the API server cannot be reached.
#[derive(Debug, thiserror::Error)]
#[error("connection refused: the API server cannot be reached (injected)")]
pub struct Unreachable;

impl tower::Service<Request<kube::client::Body>> for KubeLink {
    type Response = Response<Body>;
    type Error = Unreachable;
    type Future = BoxFuture<'static, Result<Response<Body>, Unreachable>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Unreachable>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<kube::client::Body>) -> Self::Future {
        let link = self.clone();
        if let Ok(value) = http::HeaderValue::from_str(&format!("Bearer {}", link.token)) {
            req.headers_mut().insert(http::header::AUTHORIZATION, value);
        }
        Box::pin(async move {
            let method = req.method().to_string();
            let path = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let watch = path.contains("watch=true") || path.contains("watch=1");
            let write = !matches!(method.as_str(), "GET" | "HEAD");
            if link.faults.as_ref().is_some_and(|f| f.is_down()) {
                link.trace.kube_refused(&link.actor, &method, &path);
                return Err(Unreachable);
            }
            if let Some(f) = &link.faults {
                let injected = if watch && path.contains("resourceVersion=") && f.take_gone() {
                    Some(status_answer(
                        410,
                        "Expired",
                        "too old resource version (injected)",
                    ))
                } else if write && let Some(code) = f.take_write_fault() {
                    let reason = if code == 409 {
                        "Conflict"
                    } else {
                        "InternalError"
                    };
                    Some(status_answer(code, reason, "injected fault"))
                } else {
                    None
                };
                if let Some(answer) = injected {
                    link.trace
                        .kube(&link.actor, &method, &path, answer.status().as_u16());
                    return Ok(answer);
                }
            }
            let cut = link.faults.as_ref().map(|f| f.cut_signal());
            let audited = link
                .taints
                .as_ref()
                .filter(|_| write)
                .and_then(|a| Some((a, node_written(&path)?.to_string())));
            let before = audited.as_ref().map(|(a, node)| a.tainted(node));
            let response = match link.router.oneshot(req.map(Body::new)).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            if let (Some((audit, node)), Some(before)) = (&audited, before)
                && response.status().is_success()
            {
                audit.judge(&link.actor, node, before);
            }
            link.trace
                .kube(&link.actor, &method, &path, response.status().as_u16());
            match cut {
                Some(mut cut) if watch && response.status().is_success() => {
                    let (parts, body) = response.into_parts();
                    let until_cut = async move {
                        let _ = cut.changed().await;
                    };
                    let stream = futures::StreamExt::take_until(body.into_data_stream(), until_cut);
                    Ok(Response::from_parts(parts, Body::from_stream(stream)))
                }
                _ => Ok(response),
            }
        })
    }
}
