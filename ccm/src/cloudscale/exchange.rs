//! One HTTP exchange with the API: the rate limit and the endpoint class's hold, a fresh
//! token, the request, the metrics, and what the answer tells of the endpoint class and the
//! API root. Retries are the caller's.

use super::*;
use crate::secret::Token;

impl Failure {
    /// A failure without `Retry-After` whose request is known to have changed nothing.
    fn certain(error: ClientError) -> Failure {
        Failure {
            error,
            retry_after: None,
            unknown_outcome: false,
        }
    }
}

/// The `Authorization` header for `token`, marked sensitive.
fn authorization(token: &Token) -> Result<HeaderValue> {
    let mut auth = HeaderValue::try_from(format!("Bearer {}", token.expose())).map_err(|_| {
        ClientError::Config(
            "the API token contains characters not allowed in an HTTP header".into(),
        )
    })?;
    auth.set_sensitive(true);
    Ok(auth)
}

/// The failure of an answer other than 2xx (the root judged it the API's). A 5xx may come
/// after the request was executed.
fn status_failure(
    method: &Method,
    endpoint: String,
    status: u16,
    bytes: &[u8],
    retry_after: Option<Duration>,
    token: &Token,
) -> Failure {
    let error = if status == 404 {
        ClientError::NotFound {
            method: method.to_string(),
            endpoint,
        }
    } else {
        ClientError::Api {
            status,
            body: error_body(bytes, token.expose()),
            endpoint,
            method: method.to_string(),
        }
    };
    Failure {
        error,
        retry_after,
        unknown_outcome: status >= 500,
    }
}

impl Client {
    /// One HTTP exchange: rate limit, fresh token, send, metrics. 2xx gives the body.
    pub(super) async fn attempt(
        &self,
        method: &Method,
        path: &str,
        body: Option<&[u8]>,
    ) -> std::result::Result<Vec<u8>, Failure> {
        let endpoint = path.split_once('?').map_or(path, |(p, _)| p).to_string();
        // While the API asks an endpoint class to wait, one request at a time tries again
        // when the wait is over; the others queue behind it.
        let class = retry::endpoint_class(path);
        let probe = self.inner.holds.pass(class).await;
        if let Some(limiter) = &self.inner.limiter {
            limiter.acquire(self.priority).await;
        }
        let token = self
            .inner
            .token
            .current()
            .map_err(|e| Failure::certain(e.into()))?;
        let auth = authorization(&token).map_err(Failure::certain)?;
        self.count(method);
        let request = self
            .request(method, path, body, auth)
            .map_err(Failure::certain)?;
        let started = Instant::now();
        // The whole exchange is bounded here, whatever the transport does.
        let sent = tokio::time::timeout(self.inner.timeout, self.inner.transport.send(request));
        let resp = match sent.await.unwrap_or(Err(TransportError::Timeout)) {
            Ok(r) => r,
            Err(e) => {
                self.record(method, path, "<error>", started);
                self.inner.trouble.failed(class, Instant::now());
                return Err(self.transport_failure(method, endpoint, e));
            }
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| parse_retry_after(v, &self.inner.ambient));
        let bytes = resp.into_body();
        self.record(method, path, &status.to_string(), started);
        let answer = root::judge(method.as_str(), path, status, &bytes);
        self.note_answer(class, probe, status, retry_after, &answer);
        self.learn_root(answer, method, &endpoint, status)?;
        if (200..300).contains(&status) {
            return Ok(bytes);
        }
        Err(status_failure(
            method,
            endpoint,
            status,
            &bytes,
            retry_after,
            &token,
        ))
    }

    /// Counts a request for [`Client::counters`].
    fn count(&self, method: &Method) {
        if *method == Method::GET {
            self.counters.reads.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counters.writes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The request as it goes out, with the API's headers.
    fn request(
        &self,
        method: &Method,
        path: &str,
        body: Option<&[u8]>,
        auth: HeaderValue,
    ) -> Result<TransportRequest> {
        let mut request = http::Request::builder()
            .method(method.clone())
            .uri(format!("{}{path}", self.inner.base))
            .header(AUTHORIZATION, auth)
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, self.inner.user_agent.clone())
            .body(body.map(<[u8]>::to_vec).unwrap_or_default())
            .map_err(|e| ClientError::Config(format!("invalid request: {e}")))?;
        // Never let a header of ours reach a log in clear.
        if let Some(v) = request.headers_mut().get_mut(AUTHORIZATION) {
            v.set_sensitive(true);
        }
        Ok(request)
    }

    /// Records one exchange (`status`: the code, or `<error>` without an answer) in the
    /// metrics, and for the controller this client counts for.
    fn record(&self, method: &Method, path: &str, status: &str, started: Instant) {
        if let Some(m) = &self.inner.metrics {
            m.api_request(
                &endpoint_template(path),
                method.as_str(),
                status,
                started.elapsed(),
            );
            if let Some(c) = self.controller {
                m.controller_call(c, *method != Method::GET);
            }
        }
    }

    /// The failure of an exchange that got no answer. Only a failed connection proves the
    /// request was not executed.
    fn transport_failure(&self, method: &Method, endpoint: String, e: TransportError) -> Failure {
        let unknown_outcome = !matches!(e, TransportError::Connect(_));
        let error = match e {
            TransportError::Timeout => ClientError::Timeout {
                method: method.to_string(),
                endpoint,
                after: self.inner.timeout,
            },
            TransportError::Connect(message) | TransportError::Lost(message) => {
                ClientError::Transport {
                    method: method.to_string(),
                    endpoint,
                    message,
                }
            }
        };
        Failure {
            error,
            retry_after: None,
            unknown_outcome,
        }
    }

    /// What an answer tells of its endpoint class: whether it is in trouble (or answers
    /// again after one), and whether the API asks it to wait.
    fn note_answer(
        &self,
        class: &str,
        probe: retry::Probe,
        status: u16,
        retry_after: Option<Duration>,
        answer: &root::Answer,
    ) {
        let troubled = status >= 500
            || matches!(status, 401 | 403 | 429)
            || matches!(answer, root::Answer::NotTheApi(_));
        if troubled {
            self.inner.trouble.failed(class, Instant::now());
        } else if self.inner.trouble.answered(class, Instant::now()) {
            tracing::info!(
                endpoint_class = class,
                "the cloudscale API answers again after a long trouble"
            );
        }
        match (status, retry_after) {
            (429, Some(wait)) => {
                self.inner
                    .holds
                    .hold(class, probe, wait.min(self.inner.retry.max_retry_after))
            }
            _ => self.inner.holds.release(probe),
        }
    }

    /// What an answer tells of the API root; an answer that is not the API's fails.
    fn learn_root(
        &self,
        answer: root::Answer,
        method: &Method,
        endpoint: &str,
        status: u16,
    ) -> std::result::Result<(), Failure> {
        match answer {
            root::Answer::Ordinary => Ok(()),
            root::Answer::ConfirmsRoot => {
                self.inner.root.mark_right();
                Ok(())
            }
            root::Answer::NotTheApi(why) => {
                let url = format!("{}{endpoint}", self.inner.base);
                let error = ClientError::NotTheApi {
                    method: method.to_string(),
                    url: url.clone(),
                    status,
                    why,
                };
                self.inner.root.mark_wrong(&url, &error.to_string());
                Err(Failure::certain(error))
            }
        }
    }
}
