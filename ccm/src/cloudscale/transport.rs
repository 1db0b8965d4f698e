//! How a request reaches the API: [`Transport`]. Production sends it with reqwest (TLS,
//! connection pool); a simulation hands it to an in-process fake without a socket. The
//! [`super::Client`] above it (retries, rate limit, idempotency, timeouts, metrics) is the
//! same either way.

use futures::future::BoxFuture;
use std::time::Duration;

/// A request as the client builds it: method, absolute URL, headers, body.
pub type Request = http::Request<Vec<u8>>;
/// A whole answer: status, headers, body.
pub type Response = http::Response<Vec<u8>>;

/// A request that got no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportError {
    /// No connection could be made: the request was certainly not executed.
    #[error("{0}")]
    Connect(String),
    /// The connection failed after the request may have been sent: its outcome is unknown.
    #[error("{0}")]
    Lost(String),
    /// The timeout passed first.
    #[error("timed out")]
    Timeout,
}

/// Sends one request and reads the whole answer.
pub trait Transport: Send + Sync + std::fmt::Debug {
    fn send(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>>;
}

/// The production transport: reqwest, no redirects, no retries of its own.
#[derive(Debug, Clone)]
pub struct Reqwest {
    http: reqwest::Client,
}

impl Reqwest {
    pub fn new(timeout: Duration, user_agent: &str) -> Result<Reqwest, String> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .user_agent(user_agent)
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Reqwest { http })
    }
}

/// An error message from a reqwest error and its sources (without the URL).
fn message(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        src = s.source();
    }
    msg
}

fn no_answer(e: reqwest::Error) -> TransportError {
    if e.is_timeout() {
        TransportError::Timeout
    } else if e.is_connect() {
        TransportError::Connect(message(e))
    } else {
        TransportError::Lost(message(e))
    }
}

impl Transport for Reqwest {
    fn send(&self, request: Request) -> BoxFuture<'static, Result<Response, TransportError>> {
        let http = self.http.clone();
        Box::pin(async move {
            let request = reqwest::Request::try_from(request)
                .map_err(|e| TransportError::Connect(message(e)))?;
            let resp = http.execute(request).await.map_err(no_answer)?;
            let mut answer = http::Response::builder().status(resp.status());
            if let Some(h) = answer.headers_mut() {
                *h = resp.headers().clone();
            }
            let body = resp.bytes().await.map_err(no_answer)?;
            answer
                .body(body.to_vec())
                .map_err(|e| TransportError::Lost(e.to_string()))
        })
    }
}
