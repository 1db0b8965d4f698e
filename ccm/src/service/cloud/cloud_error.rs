//! The error of the service controller's cloud edge: the reads of the account (`fetch.rs`,
//! `shared.rs`) and the writes of a plan (`apply/`) fail the same ways, so they share one
//! type, kept apart from both so that neither imports the other for it.

use crate::cloudscale::ClientError;
use std::time::Duration;
use uuid::Uuid;

/// What can go wrong fetching or applying. Never "absent" for an API failure.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// An API request failed; `action` says which step (or which read).
    #[error("{action}: {source}")]
    Api {
        action: String,
        #[source]
        source: ClientError,
    },
    /// A wait ran out of time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: String, after: Duration },
    /// The load balancer disappeared while it was being worked on.
    #[error("load balancer {uuid} disappeared")]
    Vanished { uuid: Uuid },
    /// An inconsistent input (plan, API data or value out of the API's range).
    #[error("{action}: {message}")]
    Invalid { action: String, message: String },
}

impl ApplyError {
    /// The API status of an [`ApplyError::Api`] failure.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApplyError::Api { source, .. } => source.status(),
            _ => None,
        }
    }
}

pub(super) fn api_err(action: impl Into<String>) -> impl FnOnce(ClientError) -> ApplyError {
    let action = action.into();
    move |source| ApplyError::Api { action, source }
}

pub(super) fn invalid(action: impl Into<String>, message: impl Into<String>) -> ApplyError {
    ApplyError::Invalid {
        action: action.into(),
        message: message.into(),
    }
}
