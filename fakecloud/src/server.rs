//! The HTTP router and its middleware, and the running-server handle used both by the
//! binary and by in-process tests.

use crate::app::{App, LogEntry};
use crate::clock::format_time;
use crate::config::Config;
use crate::error::ApiError;
use crate::faults::{Decision, Faults};
use crate::rules::ApiRules;
use axum::Extension;
use axum::Router;
use axum::extract::{MatchedPath, OriginalUri, Request};
use axum::http::{Method, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tower::ServiceExt as _;

/// Bearer-token check for `/v1`: 401 without or with an unknown token, 403 for writes with a
/// read-only token.
async fn require_token(Extension(app): Extension<App>, req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .map(str::trim);
    let Some(token) = token else {
        return ApiError::Unauthorized("Authentication credentials were not provided.")
            .into_response();
    };
    let Some(token) = token
        .strip_prefix("Bearer ")
        .or_else(|| token.strip_prefix("bearer "))
        .map(str::trim)
    else {
        return ApiError::Unauthorized("Invalid token header. No credentials provided.")
            .into_response();
    };
    let cfg = app.config();
    if cfg.tokens.iter().any(|t| t == token) {
        return next.run(req).await;
    }
    if cfg.read_only_tokens.iter().any(|t| t == token) {
        let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        if !safe {
            return ApiError::Forbidden.into_response();
        }
        return next.run(req).await;
    }
    ApiError::Unauthorized("Invalid token.").into_response()
}

/// Records method, path, status and duration of every API request.
async fn log_request(Extension(app): Extension<App>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    // The full path as sent (the nested `/v1` router sees it without the prefix).
    let uri = req
        .extensions()
        .get::<OriginalUri>()
        .map(|o| o.0.clone())
        .unwrap_or_else(|| req.uri().clone());
    let path = uri.path().to_string();
    let query = uri.query().map(str::to_string);
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let user_agent = user_agent(req.headers());
    let time = format_time(app.now());
    let response = next.run(req).await;
    let status = response.status().as_u16();
    tracing::debug!(%method, %path, status, "request");
    app.record(LogEntry {
        time,
        method,
        path,
        query,
        route,
        status,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        user_agent,
    });
    response
}

/// The `User-Agent` header, when it is text.
fn user_agent(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::MethodNotAllowed(method.to_string())
}

/// The routes of the whole HTTP surface, built once per process: a simulation starts a
/// fakecloud per schedule, and building the path tree each time was 2 % of its run time.
/// The middleware finds the `App` as a request extension, so the routes need no state to
/// be built.
static ROUTES: std::sync::LazyLock<Router<App>> = std::sync::LazyLock::new(|| {
    let api = crate::api::routes()
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(require_token))
        .layer(middleware::from_fn(log_request));
    Router::new()
        .nest("/v1", api)
        .nest("/_fake", crate::admin::routes())
        .fallback(not_found)
});

/// The whole HTTP surface: `/v1` (authenticated) and `/_fake` (admin, open).
pub fn router(app: App) -> Router {
    let routes = ROUTES.clone().with_state(app.clone());
    Router::new().fallback_service(routes).layer(Extension(app))
}

/// Answers `/v1/servers/` like `/v1/servers`: clients never send a trailing slash, but a
/// fake must never redirect (clients do not follow redirects on writes), so it serves the path
/// as sent.
fn strip_trailing_slash(mut req: Request) -> Request {
    let path = req.uri().path();
    if path.len() > 1 && path.ends_with('/') {
        let trimmed = path.trim_end_matches('/');
        let new = match req.uri().query() {
            Some(q) => format!("{trimmed}?{q}"),
            None => trimmed.to_string(),
        };
        if let Ok(uri) = new.parse::<Uri>() {
            *req.uri_mut() = uri;
        }
    }
    req
}

/// The CORS headers the real API sends on every answer, 404s included (its acceptance tests
/// check all three, each once), so browser clients can call it from any origin.
const CORS: [(header::HeaderName, &str); 3] = [
    (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
    (
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        "Content-Type, Authorization",
    ),
    (
        header::ACCESS_CONTROL_ALLOW_METHODS,
        "GET, POST, OPTIONS, PUT, PATCH, DELETE",
    ),
];

fn with_cors(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in CORS {
        // `insert` replaces: a header never appears twice.
        headers.insert(name, header::HeaderValue::from_static(value));
    }
    response
}

/// A browser's CORS preflight: `OPTIONS` with `Access-Control-Request-Method`. Browsers send
/// it without credentials, so it is answered before the token check (200, empty body, the
/// CORS headers) [INF: the real API's answer to a preflight is not documented].
fn is_preflight(req: &Request) -> bool {
    req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// A request dropped on purpose by a fault rule: hyper closes the connection without an
/// answer when the service fails.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by fault injection")]
pub struct Dropped;

/// Applies fault rules to `/v1` requests, then hands them to the router. Faults are decided
/// before routing, so an injected failure never runs a handler and changes nothing.
async fn serve_one(app: App, router: Router, req: Request) -> Result<Response, Dropped> {
    let req = strip_trailing_slash(req);
    if is_preflight(&req) {
        return Ok(with_cors(axum::http::StatusCode::OK.into_response()));
    }
    let path = req.uri().path().to_string();
    if path == "/v1" || path.starts_with("/v1/") {
        let method = req.method().to_string();
        let decision = app.faults().decide(&method, &path);
        let (latency, outcome) = match decision {
            Decision::Pass(l) => (l, None),
            Decision::Fail(l, e) => (l, Some(Some(e))),
            Decision::Drop(l) => (l, Some(None)),
            Decision::LoseAnswer(l) => {
                if !l.is_zero() {
                    tokio::time::sleep(l).await;
                }
                // Executed and logged like any request; only the answer never leaves.
                return match router.oneshot(req).await {
                    Ok(_) => Err(Dropped),
                    Err(never) => match never {},
                };
            }
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if let Some(outcome) = outcome {
            let response = outcome.map(IntoResponse::into_response);
            app.record(LogEntry {
                time: format_time(app.now()),
                method,
                path,
                query: req.uri().query().map(str::to_string),
                route: Some("(fault)".to_string()),
                status: response.as_ref().map(|r| r.status().as_u16()).unwrap_or(0),
                duration_ms: latency.as_secs_f64() * 1000.0,
                user_agent: user_agent(req.headers()),
            });
            return response.map(with_cors).ok_or(Dropped);
        }
    }
    match router.oneshot(req).await {
        Ok(response) => Ok(with_cors(response)),
        Err(never) => match never {},
    }
}

/// fakecloud without a socket: requests go through the same fault rules, routing and request
/// log as over HTTP. An injected `drop` or `lose_answer` is an `Err(Dropped)`: the caller
/// sees what a client sees when the connection closes without an answer.
#[derive(Clone)]
pub struct InProcess {
    app: App,
    router: Router,
}

impl InProcess {
    pub fn new(app: App) -> InProcess {
        InProcess {
            router: router(app.clone()),
            app,
        }
    }

    pub fn app(&self) -> &App {
        &self.app
    }

    /// Serves one request.
    pub async fn serve(&self, req: Request) -> Result<Response, Dropped> {
        serve_one(self.app.clone(), self.router.clone(), req).await
    }
}

/// A fakecloud serving HTTP on a socket; dropped or shut down, it stops.
pub struct FakeCloud {
    app: App,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl FakeCloud {
    /// Binds `config.listen` (port 0 picks a free one) and serves until shut down.
    pub async fn start(config: Config) -> std::io::Result<FakeCloud> {
        let app = App::new(config);
        Self::start_app(app).await
    }

    /// Serves an existing [`App`] (e.g. one preloaded with a seed).
    pub async fn start_app(app: App) -> std::io::Result<FakeCloud> {
        let listener = tokio::net::TcpListener::bind(app.config().listen).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(accept_loop(app.clone(), listener, rx));
        Ok(FakeCloud {
            app,
            addr,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`: no `/v1`, no trailing slash (what the Go SDK wants).
    pub fn base_url(&self) -> String {
        match &self.app.config().public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{}", self.addr),
        }
    }

    /// `http://127.0.0.1:PORT/v1` (what the Python CLI wants).
    pub fn api_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The first read-write token.
    pub fn token(&self) -> &str {
        self.app
            .config()
            .tokens
            .first()
            .map(String::as_str)
            .unwrap_or(crate::config::DEFAULT_TOKEN)
    }

    /// The shared state, for tests that inspect or seed it directly.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// The fault rules (same as `/_fake/faults`).
    pub fn faults(&self) -> &Faults {
        self.app.faults()
    }

    /// The switches for undocumented API behaviour (same as `GET /_fake/rules`).
    pub fn rules(&self) -> ApiRules {
        self.app.rules()
    }

    /// Replaces the switches (same as `PUT /_fake/rules`).
    pub fn set_rules(&self, rules: ApiRules) {
        self.app.set_rules(rules);
    }

    /// One request to the admin API (`path` under `/_fake`, over HTTP like any client): the
    /// JSON answer (`Null` for none), or the status and body of a refusal.
    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value, String> {
        let mut rb = reqwest::Client::new()
            .request(method.clone(), format!("{}/_fake{path}", self.base_url()));
        if let Some(b) = body {
            rb = rb
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = rb.send().await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("{method} /_fake{path}: {status} {text}"));
        }
        if text.trim().is_empty() {
            return Ok(serde_json::Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| format!("{method} /_fake{path}: {e}"))
    }

    /// Moves the virtual clock forward.
    pub fn advance(&self, by: Duration) {
        self.app.0.clock.advance(by);
    }

    /// Stops serving and waits for in-flight requests to finish.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Serves HTTP/1.1 connections until `stop` fires, then lets in-flight requests finish
/// (for at most a few seconds).
async fn accept_loop(app: App, listener: tokio::net::TcpListener, mut stop: oneshot::Receiver<()>) {
    let router = router(app.clone());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let (app, router) = (app.clone(), router.clone());
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                serve_one(app.clone(), router.clone(), req.map(axum::body::Body::new))
            });
        let conn = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            // Errors here are clients going away or injected drops: nothing to report.
            let _ = conn.await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
}

impl Drop for FakeCloud {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}
