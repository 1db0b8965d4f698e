//! Kubernetes client errors in words for people. kube renders an API error as its message
//! followed by the whole `Status` in Rust `Debug` form; Events and logs show the message,
//! the reason and the HTTP code instead.

use kube::core::Status;
use std::fmt;

/// A kube client error for Events and logs.
pub struct KubeText<'a>(pub &'a kube::Error);

impl fmt::Display for KubeText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            kube::Error::Api(status) => write!(f, "{}", StatusText(status)),
            other => write!(f, "{other}"),
        }
    }
}

/// A watcher's error for logs.
pub struct WatchText<'a>(pub &'a kube::runtime::watcher::Error);

impl fmt::Display for WatchText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use kube::runtime::watcher::Error;
        match self.0 {
            Error::InitialListFailed(e) => write!(f, "cannot list: {}", KubeText(e)),
            Error::WatchStartFailed(e) => write!(f, "cannot start watching: {}", KubeText(e)),
            Error::WatchError(status) => write!(f, "the watch ended: {}", StatusText(status)),
            Error::WatchFailed(e) => write!(f, "the watch failed: {}", KubeText(e)),
            other => write!(f, "{other}"),
        }
    }
}

/// `message (Reason, HTTP code)`.
struct StatusText<'a>(&'a Status);

impl fmt::Display for StatusText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        match (s.message.is_empty(), s.reason.is_empty()) {
            (false, false) => write!(f, "{} ({}, HTTP {})", s.message, s.reason, s.code),
            (false, true) => write!(f, "{} (HTTP {})", s.message, s.code),
            (true, false) => write!(f, "{} (HTTP {})", s.reason, s.code),
            (true, true) => write!(f, "HTTP {}", s.code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_error_reads_as_its_message_reason_and_code_only() {
        let status: Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 409, "reason": "Conflict",
            "message": "Operation cannot be fulfilled on services \"web\": the object has been modified",
            "metadata": {}, "details": {"name": "web", "kind": "services"}
        }))
        .expect("status");
        let e = kube::Error::Api(Box::new(status.clone()));
        let text = KubeText(&e).to_string();
        assert_eq!(
            text,
            "Operation cannot be fulfilled on services \"web\": the object has been modified (Conflict, HTTP 409)"
        );
        let watch = kube::runtime::watcher::Error::WatchStartFailed(e);
        let text = WatchText(&watch).to_string();
        assert!(
            text.starts_with("cannot start watching: Operation"),
            "{text}"
        );
        for debug in ["Some(", "Status {", "ListMeta"] {
            assert!(!text.contains(debug), "{text}");
        }
    }
}
