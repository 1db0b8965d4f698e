//! Errors of the cloudscale.ch API client. None of them ever carries the token: the
//! `Authorization` header is never formatted, and error bodies from the API are scrubbed of
//! the token before they are kept (the API's error bodies are flat maps of strings).

use crate::secret::TokenError;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The result of every client call.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// What can go wrong talking to the API.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// 404 (and only 404): the resource does not exist. The `Option` getters turn this into
    /// `Ok(None)`; deletes turn it into success.
    #[error("cloudscale API {method} {endpoint}: not found (404)")]
    NotFound { method: String, endpoint: String },

    /// An answer that is not the API's: a 404 on a collection (the API never lacks one),
    /// a 404 without the API's error body, or a 2xx body that is not JSON. The API root
    /// (`CLOUDSCALE_API_URL`) is wrong, or something else answers in its place; never
    /// taken for "absent". `url` is the full URL requested (it holds no secret).
    #[error(
        "cloudscale API {method} {url}: answered {status} {why}: this is not the cloudscale.ch API; check CLOUDSCALE_API_URL (the API root, https://api.cloudscale.ch by default)"
    )]
    NotTheApi {
        method: String,
        url: String,
        status: u16,
        why: String,
    },

    /// Any other non-2xx answer (after retries, for retryable statuses). `body` is the flat
    /// error object (`{"detail": ...}` or field name → message).
    #[error("cloudscale API {method} {endpoint}: {status}{}", format_body(.body))]
    Api {
        status: u16,
        body: BTreeMap<String, String>,
        endpoint: String,
        method: String,
    },

    /// No answer: connection refused, reset or dropped, TLS failure.
    #[error("cloudscale API {method} {endpoint}: transport error: {message}")]
    Transport {
        method: String,
        endpoint: String,
        message: String,
    },

    /// No complete answer within the client timeout.
    #[error("cloudscale API {method} {endpoint}: timed out after {after:?}")]
    Timeout {
        method: String,
        endpoint: String,
        after: Duration,
    },

    /// A 2xx answer whose body is not what the API reference describes.
    #[error("cloudscale API {method} {endpoint}: cannot decode the response: {message}")]
    Decode {
        method: String,
        endpoint: String,
        message: String,
    },

    /// The token could not be read (missing or empty file). Never contains the token.
    #[error("cloudscale API token: {0}")]
    Token(#[from] TokenError),

    /// A lookup by tag or name matched more than one resource.
    #[error("cloudscale API {endpoint}: {count} resources match {key}, expected at most one")]
    Ambiguous {
        endpoint: String,
        key: String,
        count: usize,
    },

    /// Invalid client configuration or argument (base URL, user agent, an href from another
    /// API).
    #[error("cloudscale API client: {0}")]
    Config(String),
}

fn format_body(body: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (i, (k, v)) in body.iter().enumerate() {
        let _ = write!(out, "{}{k}: {v}", if i == 0 { ": " } else { "; " });
    }
    out
}

impl ClientError {
    /// The HTTP status, when the API answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::NotFound { .. } => Some(404),
            ClientError::Api { status, .. } | ClientError::NotTheApi { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ClientError::NotFound { .. })
    }

    /// The answer came from something that is not the API (a wrong API root).
    pub fn is_not_the_api(&self) -> bool {
        matches!(self, ClientError::NotTheApi { .. })
    }

    /// The API refused the token (401) or its rights (403).
    pub fn is_unauthorized(&self) -> bool {
        matches!(
            self,
            ClientError::Api {
                status: 401 | 403,
                ..
            }
        )
    }

    /// Worth retrying later: no answer, 5xx or 429.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport { .. } | ClientError::Timeout { .. } => true,
            ClientError::Api { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }

    /// The message the API gave for `field` (or `detail`), if any.
    pub fn field(&self, field: &str) -> Option<&str> {
        match self {
            ClientError::Api { body, .. } => body.get(field).map(String::as_str),
            _ => None,
        }
    }
}
