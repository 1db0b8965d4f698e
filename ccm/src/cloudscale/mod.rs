//! Typed client of the cloudscale.ch API v1 (https://www.cloudscale.ch/en/api/v1).
//!
//! * [`Client::new`] takes a [`ClientConfig`]: the API root (`CLOUDSCALE_API_URL` semantics,
//!   without `/v1`; a trailing slash or `/v1` is accepted), a [`TokenSource`] read on every
//!   request (rotation without restart), a whole-request timeout, a [`RetryPolicy`], an
//!   optional [`RateLimit`] and optional [`Metrics`].
//! * Reads and PATCH/DELETE are retried on connection errors, timeouts, 5xx and 429 with
//!   exponential backoff and full jitter, honouring `Retry-After`. A POST is never blindly
//!   repeated: when its outcome is unknown the resource is looked up first (by a tag or its
//!   natural key, see [`Idempotency`]), so a retry cannot create a duplicate.
//! * 404 is [`ClientError::NotFound`]; `get_*` turn it into `Ok(None)` and deletes into
//!   success. Every other failure is an error, never "absent".
//! * Every request is counted (per client, see [`Client::counters`]) and recorded in the
//!   metrics under its endpoint template (`/v1/servers/{uuid}`); every write is logged once.
//!   The token never appears in errors, logs or `Debug` output.

mod error;
mod exchange;
mod resources;
mod retry;
mod root;
mod transport;
mod trouble;
mod types;

pub use error::{ClientError, Result};
pub use resources::{Idempotency, REQUEST_ID_TAG};
pub use retry::{RateLimit, RetryPolicy, doubling, throttled};
pub use root::{RootHealth, WrongRoot, is_collection};
pub use transport::{
    Request as TransportRequest, Reqwest, Response as TransportResponse, Transport, TransportError,
};
pub use trouble::Trouble;
pub use types::*;

use crate::ambient::Ambient;
use crate::metrics::Metrics;
use crate::secret::TokenSource;
use reqwest::Method;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, USER_AGENT};
use retry::Limiter;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The production API root.
pub const DEFAULT_BASE_URL: &str = "https://api.cloudscale.ch";
/// `CLOUDSCALE_API_TIMEOUT` default, as the reference CCM's.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// How to build a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// API root without `/v1` (`https://api.cloudscale.ch`); a trailing `/` or `/v1` is
    /// accepted and normalised away.
    pub base_url: String,
    pub token: Arc<TokenSource>,
    /// Whole-request timeout (connect, send, answer, body).
    pub timeout: Duration,
    pub user_agent: String,
    pub retry: RetryPolicy,
    /// `None`: no client-side limit.
    pub rate_limit: Option<RateLimit>,
    pub metrics: Option<Arc<Metrics>>,
    /// How requests travel; `None`: reqwest over HTTPS (or HTTP) to `base_url`.
    pub transport: Option<Arc<dyn Transport>>,
    /// Wall clock (`Retry-After` dates) and retry jitter.
    pub ambient: Ambient,
}

impl ClientConfig {
    /// Defaults: 20 s timeout, default retry policy and rate limit, no metrics.
    pub fn new(base_url: impl Into<String>, token: Arc<TokenSource>) -> ClientConfig {
        ClientConfig {
            base_url: base_url.into(),
            token,
            timeout: DEFAULT_TIMEOUT,
            user_agent: format!("cloudscale-ccm/{}", env!("CARGO_PKG_VERSION")),
            retry: RetryPolicy::default(),
            rate_limit: Some(RateLimit::default()),
            metrics: None,
            transport: None,
            ambient: Ambient::system(),
        }
    }
}

/// API requests made so far (attempts, retries included): GETs are reads, everything else
/// writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallCounts {
    pub reads: u64,
    pub writes: u64,
}

impl CallCounts {
    pub fn total(&self) -> u64 {
        self.reads + self.writes
    }
}

impl std::ops::Sub for CallCounts {
    type Output = CallCounts;
    fn sub(self, rhs: CallCounts) -> CallCounts {
        CallCounts {
            reads: self.reads.saturating_sub(rhs.reads),
            writes: self.writes.saturating_sub(rhs.writes),
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    reads: AtomicU64,
    writes: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    transport: Arc<dyn Transport>,
    user_agent: HeaderValue,
    ambient: Ambient,
    /// Normalised root: scheme, host, optional prefix; no trailing slash, no `/v1`.
    base: String,
    token: Arc<TokenSource>,
    timeout: Duration,
    retry: RetryPolicy,
    limiter: Option<Limiter>,
    /// Endpoint classes the API asked to wait (429 with `Retry-After`).
    holds: retry::Holds,
    metrics: Option<Arc<Metrics>>,
    /// Whether the root answers as the API does (see `root.rs`).
    root: Arc<RootHealth>,
    /// Endpoint classes without answers, and recoveries (see `trouble.rs`).
    trouble: Trouble,
}

/// The cloudscale.ch API client. Cheap to clone; clones share the connection pool, the rate
/// limit and the call counters (see [`Client::with_own_counters`]).
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
    counters: Arc<Counters>,
    /// Requests go through the rate limit's priority lane (see [`Client::prioritized`]).
    priority: bool,
    /// The controller its requests are counted for (see [`Client::for_controller`]).
    controller: Option<&'static str>,
}

/// One failed attempt.
struct Failure {
    error: ClientError,
    retry_after: Option<Duration>,
    /// The request may have been executed (no or a 5xx answer after it was sent).
    unknown_outcome: bool,
}

/// Normalises `CLOUDSCALE_API_URL`: `http://h:1`, `http://h:1/`, `http://h:1/v1` and
/// `http://h:1/v1/` all give `http://h:1`.
fn normalise_base(url: &str) -> Result<String> {
    let mut base = url.trim().trim_end_matches('/').to_string();
    if let Some(stripped) = base.strip_suffix("/v1") {
        base = stripped.trim_end_matches('/').to_string();
    }
    let parsed = reqwest::Url::parse(&base)
        .map_err(|e| ClientError::Config(format!("invalid API URL {base:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(ClientError::Config(format!(
            "invalid API URL {base:?}: need http(s)://host"
        )));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() || parsed.query().is_some() {
        return Err(ClientError::Config(
            "invalid API URL: credentials or a query are not allowed".into(),
        ));
    }
    Ok(base)
}

/// The route template of a request path: UUIDs become `{uuid}`, IP addresses `{ip}`, other
/// unknown segments `{id}`, the query is dropped. Label values stay few.
pub fn endpoint_template(path: &str) -> String {
    const STATIC: &[&str] = &[
        "v1",
        "servers",
        "server-groups",
        "networks",
        "subnets",
        "floating-ips",
        "volumes",
        "load-balancers",
        "pools",
        "members",
        "listeners",
        "health-monitors",
        "flavors",
        "regions",
        "images",
        "start",
        "stop",
        "reboot",
    ];
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let mut out = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        if STATIC.contains(&seg) {
            out.push_str(seg);
        } else if uuid::Uuid::parse_str(seg).is_ok() {
            out.push_str("{uuid}");
        } else if seg.parse::<std::net::IpAddr>().is_ok() {
            out.push_str("{ip}");
        } else {
            out.push_str("{id}");
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// A path segment from a caller-supplied ID: percent-encoded, never `.`/`..`/empty.
fn segment(id: &str) -> Result<String> {
    if id.is_empty() || id == "." || id == ".." {
        return Err(ClientError::Config(format!("invalid resource ID {id:?}")));
    }
    Ok(types::encode_segment(id))
}

/// `Retry-After` in seconds (HTTP dates are accepted too).
fn parse_retry_after(v: &HeaderValue, ambient: &Ambient) -> Option<Duration> {
    let s = v.to_str().ok()?.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(s).ok()?;
    let now = ambient.now().as_millisecond();
    let millis = when.timestamp_millis() - now;
    Some(Duration::from_millis(u64::try_from(millis).unwrap_or(0)))
}

/// A non-2xx body as the flat map of strings the API sends, tolerating
/// anything else, with the token scrubbed out.
fn error_body(bytes: &[u8], token: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(serde_json::Value::Object(obj)) => {
            for (k, v) in obj {
                let v = match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                map.insert(k, v);
            }
        }
        Ok(serde_json::Value::Null) => {}
        Ok(other) => {
            map.insert("detail".to_string(), other.to_string());
        }
        Err(_) if bytes.iter().all(u8::is_ascii_whitespace) => {}
        Err(_) => {
            let text: String = String::from_utf8_lossy(bytes).chars().take(500).collect();
            map.insert("detail".to_string(), text);
        }
    }
    if token.len() >= 4 {
        map = map
            .into_iter()
            .map(|(k, v)| (k.replace(token, "***"), v.replace(token, "***")))
            .collect();
    }
    map
}

/// Installs rustls's aws-lc-rs crypto provider as the process default, once. The workspace
/// compiles in only that provider, so rustls would pick it anyway; installing it explicitly
/// keeps a process correct should another provider ever be linked in. Idempotent;
/// [`Client::new`] calls it.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Client> {
        install_crypto_provider();
        let base = normalise_base(&config.base_url)?;
        if config.timeout.is_zero() {
            return Err(ClientError::Config("the timeout must not be zero".into()));
        }
        let transport: Arc<dyn Transport> = match config.transport {
            Some(t) => t,
            None => Arc::new(
                Reqwest::new(config.timeout, &config.user_agent).map_err(ClientError::Config)?,
            ),
        };
        let user_agent = HeaderValue::try_from(config.user_agent.as_str())
            .map_err(|_| ClientError::Config("the user agent is not a valid header".into()))?;
        let retry = RetryPolicy {
            max_attempts: config.retry.max_attempts.max(1),
            ..config.retry
        };
        Ok(Client {
            inner: Arc::new(Inner {
                transport,
                user_agent,
                ambient: config.ambient,
                base,
                token: config.token,
                timeout: config.timeout,
                retry,
                limiter: config.rate_limit.map(Limiter::new),
                holds: retry::Holds::default(),
                root: Arc::new(RootHealth::new(config.metrics.clone())),
                trouble: Trouble::default(),
                metrics: config.metrics,
            }),
            counters: Arc::new(Counters::default()),
            priority: false,
            controller: None,
        })
    }

    /// The normalised API root (without `/v1`).
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// What the answers so far say of the API root (shared by every clone).
    pub fn root_health(&self) -> Arc<RootHealth> {
        self.inner.root.clone()
    }

    /// Checks that the API root answers as the cloudscale.ch API does: the server list is
    /// a JSON list. Errors as any request does; [`ClientError::NotTheApi`] for a wrong root.
    pub async fn check_root(&self) -> Result<()> {
        self.get_json::<Vec<serde_json::Value>>("/v1/servers")
            .await
            .map(|_| ())
    }

    /// The client-side rate limit in requests per second (`None`: unlimited).
    pub fn requests_per_second(&self) -> Option<f64> {
        self.inner.limiter.as_ref().map(Limiter::rate)
    }

    /// Changes each time an endpoint class answers again after a long trouble (see
    /// `trouble.rs`): what backed off meanwhile may be tried at once.
    pub fn recoveries(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.trouble.recoveries()
    }

    /// Requests this client (and the clones sharing its counters) made so far.
    pub fn counters(&self) -> CallCounts {
        CallCounts {
            reads: self.counters.reads.load(Ordering::Relaxed),
            writes: self.counters.writes.load(Ordering::Relaxed),
        }
    }

    /// A clone with fresh counters (same connections, rate limit and metrics): give one to a
    /// reconcile and read [`Client::counters`] at its end.
    pub fn with_own_counters(&self) -> Client {
        Client {
            inner: self.inner.clone(),
            counters: Arc::new(Counters::default()),
            priority: self.priority,
            controller: self.controller,
        }
    }

    /// A clone whose requests `cloudscale_ccm_api_calls_total` counts for `controller`
    /// (every request: shared reads, polls and retries included).
    pub fn for_controller(&self, controller: &'static str) -> Client {
        Client {
            controller: Some(controller),
            ..self.clone()
        }
    }

    /// A clone whose requests do not queue behind the others' under the rate limit (the
    /// node controllers': a Node waiting for initialization must not wait for a burst of
    /// load-balancer work). They draw on an allowance of a quarter of the rate.
    pub fn prioritized(&self) -> Client {
        Client {
            priority: true,
            ..self.clone()
        }
    }

    /// A request that may be repeated as it is (GET, PATCH, DELETE): retried while the
    /// failure is transient and attempts remain. Returns the body and the attempts made.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&[u8]>,
    ) -> std::result::Result<(Vec<u8>, u32), (ClientError, u32)> {
        let policy = &self.inner.retry;
        let mut n = 1;
        loop {
            match self.attempt(&method, path, body).await {
                Ok(b) => return Ok((b, n)),
                Err(f) if f.error.is_transient() && n < policy.max_attempts => {
                    // A 429 with Retry-After holds its endpoint class: the next attempt
                    // waits there (see `attempt`), not here as well.
                    let delay = if f.error.status() == Some(429) && f.retry_after.is_some() {
                        Duration::ZERO
                    } else {
                        policy.delay(n, f.retry_after, &self.inner.ambient)
                    };
                    tracing::debug!(
                        method = %method,
                        endpoint = %endpoint_template(path),
                        attempt = n,
                        delay_ms = delay.as_millis() as u64,
                        error = %f.error,
                        "cloudscale API request failed, retrying"
                    );
                    tokio::time::sleep(delay).await;
                    // A PATCH whose answer was lost may have been applied: read the resource
                    // before sending it again. Every write on a load balancer or anything
                    // under it queues one more reconfiguration (the load balancer reports
                    // `changing` until its queue is done), so a PATCH sent twice delays every
                    // write queued behind it, such as a listener waiting for its port.
                    if method == Method::PATCH
                        && f.unknown_outcome
                        && let Some(body) = body
                        && self.shows(path, body).await
                    {
                        return Ok((Vec::new(), n));
                    }
                    n += 1;
                }
                Err(f) => return Err((f.error, n)),
            }
        }
    }

    /// Whether the resource at `path` already shows every field a PATCH `body` sets (a read
    /// that fails says no: the PATCH is sent again).
    async fn shows(&self, path: &str, body: &[u8]) -> bool {
        match self.attempt(&Method::GET, path, None).await {
            Ok(now) => shows_patch(body, &now),
            Err(_) => false,
        }
    }

    fn decode<T: DeserializeOwned>(method: &Method, path: &str, bytes: &[u8]) -> Result<T> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        // The message names where decoding stopped (`[0].uuid: ...`): a value of the wrong
        // form (a UUID that is none) says only what it is, not whose it is.
        let decoded = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| e.to_string())
            .and_then(|v| de.end().map(|()| v).map_err(|e| e.to_string()));
        decoded.map_err(|message| ClientError::Decode {
            method: method.to_string(),
            endpoint: path.split_once('?').map_or(path, |(p, _)| p).to_string(),
            message,
        })
    }

    /// GET and decode.
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let (bytes, _) = self
            .call(Method::GET, path, None)
            .await
            .map_err(|(e, _)| e)?;
        Self::decode(&Method::GET, path, &bytes)
    }

    /// GET one resource; 404 is `None`, any other failure an error.
    pub(crate) async fn get_optional<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>> {
        match self.get_json(path).await {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// PATCH (retried like a read: the same PATCH twice has the same effect). Logged.
    pub(crate) async fn patch(
        &self,
        resource: &'static str,
        id: &str,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Result<()> {
        let body = serde_json::to_vec(body).map_err(|e| ClientError::Config(e.to_string()))?;
        match self.call(Method::PATCH, path, Some(&body)).await {
            Ok((_, attempts)) => {
                tracing::info!(
                    method = "PATCH",
                    resource,
                    id,
                    attempts,
                    outcome = "updated",
                    "cloudscale API write"
                );
                Ok(())
            }
            Err((e, attempts)) => {
                tracing::warn!(method = "PATCH", resource, id, attempts, outcome = "failed", error = %e, "cloudscale API write");
                Err(e)
            }
        }
    }

    /// DELETE; a 404 (also on a retry after a lost answer) means it is gone: success, once
    /// the root is confirmed. Logged.
    pub(crate) async fn delete_path(&self, resource: &'static str, path: &str) -> Result<()> {
        let id = path.rsplit('/').next().unwrap_or_default().to_string();
        match self.call(Method::DELETE, path, None).await {
            Err((ClientError::NotFound { .. }, attempts)) => {
                // A mistyped root answers every path with a 404 in the API's own words
                // (it is the API answering an unknown path), so the 404 of one object
                // proves nothing until the collection it belongs to lists as the API's
                // (see `root.rs`). Taken at its word, a Service's cleanup would drop its
                // finalizer and leave the load balancer behind. A 404 that answers a retry
                // after a lost answer is the answer to that earlier attempt: it is asked
                // about only when the root is known wrong, so that the confirming read does
                // not lengthen a make-before-break switch the lost answer already slowed.
                let explained = attempts > 1 && self.inner.root.wrong().is_none();
                if !explained && let Some((collection, _)) = path.rsplit_once('/') {
                    self.call(Method::GET, collection, None)
                        .await
                        .map_err(|(e, _)| e)?;
                }
                tracing::info!(
                    method = "DELETE",
                    resource,
                    id,
                    attempts,
                    outcome = "already absent",
                    "cloudscale API write"
                );
                Ok(())
            }
            Ok((_, attempts)) => {
                tracing::info!(
                    method = "DELETE",
                    resource,
                    id,
                    attempts,
                    outcome = "deleted",
                    "cloudscale API write"
                );
                Ok(())
            }
            Err((e, attempts)) => {
                tracing::warn!(method = "DELETE", resource, id, attempts, outcome = "failed", error = %e, "cloudscale API write");
                Err(e)
            }
        }
    }

    /// The path (`/v1/...`) of an `href` the API handed out. The request always goes to the
    /// configured base URL (the token is never sent to another host), so an href built from a
    /// different public URL still works.
    pub(crate) fn path_of_href(&self, href: &str) -> Result<String> {
        let url = reqwest::Url::parse(href)
            .map_err(|e| ClientError::Config(format!("invalid href {href:?}: {e}")))?;
        let full = url.path();
        // The base may carry a prefix (`https://proxy/cloudscale`): keep what follows `/v1/`.
        let idx = full
            .find("/v1/")
            .ok_or_else(|| ClientError::Config(format!("href {href:?} is not an API v1 URL")))?;
        let path = full[idx..].to_string();
        if path.split('/').any(|s| s == ".." || s == ".") {
            return Err(ClientError::Config(format!("invalid href {href:?}")));
        }
        Ok(path)
    }
}

/// Whether a resource as read (`now`, the API's JSON) shows every field a PATCH `body` sets,
/// with the value it sets. A field the API renders otherwise than it is written (a pool's
/// UUID read back as an object) does not match: the PATCH is then sent again, which is safe.
fn shows_patch(body: &[u8], now: &[u8]) -> bool {
    let (Ok(serde_json::Value::Object(fields)), Ok(now)) = (
        serde_json::from_slice::<serde_json::Value>(body),
        serde_json::from_slice::<serde_json::Value>(now),
    ) else {
        return false;
    };
    !fields.is_empty() && fields.iter().all(|(k, v)| now.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    /// Answers 429 with `Retry-After: 30` until `storm_until`, then an empty list; counts
    /// the requests it got during the storm.
    #[derive(Debug)]
    struct Storm {
        storm_until: Instant,
        during: std::sync::atomic::AtomicU32,
    }

    impl Transport for Storm {
        fn send(
            &self,
            _: transport::Request,
        ) -> futures::future::BoxFuture<
            'static,
            std::result::Result<transport::Response, TransportError>,
        > {
            let storm = Instant::now() < self.storm_until;
            if storm {
                self.during.fetch_add(1, Ordering::SeqCst);
            }
            Box::pin(async move {
                let answer = if storm {
                    http::Response::builder()
                        .status(429)
                        .header(RETRY_AFTER, "30")
                        .body(b"{\"detail\": \"slow down\"}".to_vec())
                } else {
                    http::Response::builder().status(200).body(b"[]".to_vec())
                };
                answer.map_err(|e| TransportError::Lost(e.to_string()))
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_storm_costs_one_request_per_retry_after_per_endpoint_class() {
        let storm = Arc::new(Storm {
            storm_until: Instant::now() + Duration::from_secs(120),
            during: Default::default(),
        });
        let token = Arc::new(crate::secret::TokenSource::Static(
            crate::secret::Token::new("t").expect("token"),
        ));
        let client = Client::new(ClientConfig {
            transport: Some(storm.clone()),
            retry: RetryPolicy {
                max_attempts: 10,
                ..RetryPolicy::default()
            },
            ..ClientConfig::new("http://api", token)
        })
        .expect("client");
        // Eight requests of one class waiting through a two-minute storm.
        let all = Filter::all();
        let calls = (0..8).map(|_| client.list_servers(&all));
        let results = futures::future::join_all(calls).await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        let during = storm.during.load(Ordering::SeqCst);
        // The first eight went out together before the API said to wait; after that one
        // request per 30 s (at 30, 60 and 90 s) tried again.
        assert!(during <= 8 + 3, "{during} requests during the storm");
    }

    #[test]
    fn a_malformed_uuid_fails_the_decode_naming_the_endpoint_and_the_field() {
        let lb = |uuid: &str, pool: &str| {
            serde_json::json!({
                "href": "x", "uuid": uuid, "name": "p", "algorithm": "round_robin",
                "protocol": "tcp", "load_balancer": {"uuid": pool},
            })
        };
        let good = Uuid::from_u128(1).to_string();
        let decode = |body: serde_json::Value| {
            let bytes = serde_json::to_vec(&body).expect("JSON");
            Client::decode::<Vec<Pool>>(&Method::GET, "/v1/load-balancers/pools?x=1", &bytes)
        };
        let pools = decode(serde_json::json!([lb(&good, &good)])).expect("decodes");
        assert_eq!(pools[0].uuid, Uuid::from_u128(1));
        assert_eq!(pools[0].load_balancer.uuid, Uuid::from_u128(1));

        let e = decode(serde_json::json!([lb(&good, &good), lb("pool-2", &good)]))
            .expect_err("not a UUID");
        let text = e.to_string();
        assert!(
            text.starts_with(
                "cloudscale API GET /v1/load-balancers/pools: cannot decode the response: [1].uuid: "
            ),
            "{text}"
        );
        let e = decode(serde_json::json!([lb(&good, "")])).expect_err("not a UUID");
        assert!(
            e.to_string()
                .contains("cannot decode the response: [0].load_balancer.uuid: "),
            "{e}"
        );
        // What decoding said before: a missing field, trailing garbage.
        let e = decode(serde_json::json!([{"href": "x"}])).expect_err("no uuid");
        assert!(e.to_string().contains("[0]: missing field `uuid`"), "{e}");
        let e = Client::decode::<Vec<Pool>>(&Method::GET, "/v1/x", b"[] x").expect_err("trailing");
        assert!(e.to_string().contains("trailing characters"), "{e}");
    }

    /// Applies every PATCH to one JSON resource, but loses the answer to the first
    /// `lose` of them; answers GETs with the resource. Counts the PATCHes.
    #[derive(Debug)]
    struct LosesAnswers {
        resource: parking_lot::Mutex<serde_json::Value>,
        lose: u32,
        patches: std::sync::atomic::AtomicU32,
    }

    impl Transport for LosesAnswers {
        fn send(
            &self,
            request: transport::Request,
        ) -> futures::future::BoxFuture<
            'static,
            std::result::Result<transport::Response, TransportError>,
        > {
            let answer = if request.method() == Method::PATCH {
                let n = self.patches.fetch_add(1, Ordering::SeqCst) + 1;
                let body: serde_json::Value =
                    serde_json::from_slice(request.body()).unwrap_or_default();
                let mut resource = self.resource.lock();
                if let (Some(r), Some(b)) = (resource.as_object_mut(), body.as_object()) {
                    r.extend(b.clone());
                }
                if n <= self.lose {
                    Err(TransportError::Lost("connection reset".into()))
                } else {
                    Ok(Vec::new())
                }
            } else {
                Ok(serde_json::to_vec(&*self.resource.lock()).unwrap_or_default())
            };
            Box::pin(async move {
                let body = answer?;
                http::Response::builder()
                    .status(if body.is_empty() { 204 } else { 200 })
                    .body(body)
                    .map_err(|e| TransportError::Lost(e.to_string()))
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_patch_whose_answer_was_lost_is_not_sent_again_once_the_resource_shows_it() {
        let cloud = Arc::new(LosesAnswers {
            resource: parking_lot::Mutex::new(
                serde_json::json!({"uuid": "l", "name": "tcp/8080", "protocol_port": 8080}),
            ),
            lose: 3,
            patches: Default::default(),
        });
        let token = Arc::new(crate::secret::TokenSource::Static(
            crate::secret::Token::new("t").expect("token"),
        ));
        let client = Client::new(ClientConfig {
            transport: Some(cloud.clone()),
            ..ClientConfig::new("http://api", token)
        })
        .expect("client");
        let body = serde_json::json!({"name": "tcp/53", "protocol_port": 53});
        client
            .patch("listener", "l", "/v1/load-balancers/listeners/l", &body)
            .await
            .expect("the PATCH was applied");
        // One PATCH: its answer was lost, and the read that followed showed it applied.
        assert_eq!(cloud.patches.load(Ordering::SeqCst), 1);
        assert_eq!(cloud.resource.lock()["protocol_port"], 53);
    }

    #[test]
    fn a_resource_shows_a_patch_when_every_field_it_sets_reads_back_the_same() {
        let now = br#"{"name": "tcp/53", "protocol_port": 53, "pool": {"uuid": "p"}}"#;
        assert!(shows_patch(
            br#"{"name": "tcp/53", "protocol_port": 53}"#,
            now
        ));
        assert!(!shows_patch(
            br#"{"name": "tcp/53", "protocol_port": 80}"#,
            now
        ));
        assert!(!shows_patch(br#"{"timeout_client_data_ms": 5000}"#, now));
        // Written as a UUID, read back as an object: sent again rather than guessed.
        assert!(!shows_patch(br#"{"pool": "p"}"#, now));
        assert!(!shows_patch(b"{}", now));
        assert!(!shows_patch(b"not json", now));
    }

    #[test]
    fn endpoint_classes_are_resource_families() {
        assert_eq!(
            retry::endpoint_class("/v1/load-balancers/pools/x/members"),
            "load-balancers"
        );
        assert_eq!(retry::endpoint_class("/v1/servers?tag:a=b"), "servers");
    }

    #[test]
    fn base_urls_are_normalised() {
        for u in [
            "http://h:8080",
            "http://h:8080/",
            "http://h:8080/v1",
            "http://h:8080/v1/",
        ] {
            assert_eq!(normalise_base(u).expect(u), "http://h:8080");
        }
        assert_eq!(
            normalise_base("https://p/prefix/").expect("prefix"),
            "https://p/prefix"
        );
        assert!(normalise_base("not a url").is_err());
        assert!(normalise_base("ftp://h").is_err());
    }

    #[test]
    fn templates_hide_ids() {
        assert_eq!(
            endpoint_template("/v1/servers/5f6b1a2e-2c2b-4c6e-9f5e-0a7f4e3b2c1d"),
            "/v1/servers/{uuid}"
        );
        assert_eq!(
            endpoint_template(
                "/v1/load-balancers/pools/5f6b1a2e-2c2b-4c6e-9f5e-0a7f4e3b2c1d/members?tag%3Aa=b"
            ),
            "/v1/load-balancers/pools/{uuid}/members"
        );
        assert_eq!(
            endpoint_template("/v1/floating-ips/2001:db8::1"),
            "/v1/floating-ips/{ip}"
        );
        assert_eq!(endpoint_template("/v1/servers/node-1"), "/v1/servers/{id}");
    }

    #[test]
    fn error_bodies_are_flat_and_scrubbed() {
        let b = error_body(
            br#"{"name": ["x"], "detail": "bad tok-123456"}"#,
            "tok-123456",
        );
        assert_eq!(b["name"], "[\"x\"]");
        assert_eq!(b["detail"], "bad ***");
        assert!(error_body(b"", "t").is_empty());
        assert_eq!(error_body(b"<html>", "t")["detail"], "<html>");
    }
}
