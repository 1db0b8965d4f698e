//! Whether the configured API root answers as the cloudscale.ch API does.
//!
//! A mistyped `CLOUDSCALE_API_URL` path (`https://api.cloudscale.ch/foo`) or a proxy in its
//! place answers every request with 404, and a 404 of the API itself means "this resource
//! does not exist": taken at its word, a wrong root would make every server look deleted.
//! So a 404 counts as "absent" only when it has the API's own error body
//! (`{"detail": "Not found."}`) and does not concern a collection (the API always has its
//! collections, `/v1/servers` among them). Anything else is [`super::ClientError::NotTheApi`],
//! remembered here until a read is answered with JSON again (a list for a collection).

use crate::metrics::Metrics;
use parking_lot::Mutex;
use std::sync::Arc;

/// How one answer bears on the API root (pure, see [`judge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// An ordinary answer: nothing to learn about the root.
    Ordinary,
    /// A read answered with JSON (a list, for a collection): the root is the API's.
    ConfirmsRoot,
    /// Not the API's answer, and why, in words.
    NotTheApi(String),
}

/// Whether `path` names a collection (`/v1/servers`, `/v1/load-balancers/pools`): every
/// segment is one of the API's own words, none an identifier.
pub fn is_collection(path: &str) -> bool {
    let template = super::endpoint_template(path);
    template.starts_with("/v1/") && !template.contains('{') && !is_action(&template)
}

fn is_action(template: &str) -> bool {
    ["/start", "/stop", "/reboot"]
        .iter()
        .any(|a| template.ends_with(a))
}

/// Whether `body` is the API's error body: a JSON object with a `detail`.
fn api_error_body(body: &[u8]) -> bool {
    matches!(
        serde_json::from_slice::<serde_json::Value>(body),
        Ok(serde_json::Value::Object(o)) if o.get("detail").is_some_and(serde_json::Value::is_string)
    )
}

/// What an answer of `status` with `body` to `method path` says about the root.
pub fn judge(method: &str, path: &str, status: u16, body: &[u8]) -> Answer {
    if status == 404 {
        if is_collection(path) {
            return Answer::NotTheApi(
                "on a collection, which the cloudscale.ch API always has".into(),
            );
        }
        if !api_error_body(body) {
            return Answer::NotTheApi("without the API's error body ({\"detail\": ...})".into());
        }
        return Answer::Ordinary;
    }
    if !(200..300).contains(&status) {
        return Answer::Ordinary;
    }
    // The first character tells a JSON list or object from anything else (HTML, text)
    // without parsing the body twice: the caller decodes it anyway.
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        None => Answer::Ordinary,
        Some(b'[') if method == "GET" => Answer::ConfirmsRoot,
        Some(b'{') if method == "GET" && is_collection(path) => {
            Answer::NotTheApi("to a list request with something else than a JSON list".into())
        }
        Some(b'{') if method == "GET" => Answer::ConfirmsRoot,
        Some(b'[' | b'{') => Answer::Ordinary,
        Some(_) => Answer::NotTheApi("with a body that is not JSON".into()),
    }
}

/// A root found wrong: the full URL requested and the client's message about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongRoot {
    pub url: String,
    pub message: String,
}

/// The client's view of its API root, shared by its clones (readiness reads it).
#[derive(Debug, Default)]
pub struct RootHealth {
    wrong: Mutex<Option<WrongRoot>>,
    metrics: Option<Arc<Metrics>>,
}

impl RootHealth {
    pub fn new(metrics: Option<Arc<Metrics>>) -> RootHealth {
        RootHealth {
            wrong: Mutex::new(None),
            metrics,
        }
    }

    /// The last answer that was not the API's, while no read has been answered since.
    pub fn wrong(&self) -> Option<WrongRoot> {
        self.wrong.lock().clone()
    }

    pub(crate) fn mark_wrong(&self, url: &str, message: &str) {
        let was = self.wrong.lock().replace(WrongRoot {
            url: url.to_string(),
            message: message.to_string(),
        });
        if was.as_ref().is_none_or(|w| w.url != url) {
            tracing::error!(url, error = message, "the cloudscale API root is wrong");
        }
        if let Some(m) = &self.metrics {
            m.set_api_root_wrong(Some(url));
        }
    }

    pub(crate) fn mark_right(&self) {
        if self.wrong.lock().take().is_some() {
            tracing::info!("the cloudscale API root answers as the API again");
            if let Some(m) = &self.metrics {
                m.set_api_root_wrong(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOT_FOUND: &[u8] = br#"{"detail": "Not found."}"#;

    #[test]
    fn collections_are_paths_of_the_apis_own_words() {
        for c in [
            "/v1/servers",
            "/v1/servers?tag:a=b",
            "/v1/load-balancers/pools",
            "/v1/floating-ips",
        ] {
            assert!(is_collection(c), "{c}");
        }
        for c in [
            "/v1/servers/5f6b1a2e-2c2b-4c6e-9f5e-0a7f4e3b2c1d",
            "/v1/floating-ips/192.0.2.1",
            "/v1/servers/5f6b1a2e-2c2b-4c6e-9f5e-0a7f4e3b2c1d/stop",
            "/servers",
        ] {
            assert!(!is_collection(c), "{c}");
        }
    }

    #[test]
    fn a_404_is_absence_only_with_the_apis_body_and_never_on_a_collection() {
        let one = "/v1/servers/5f6b1a2e-2c2b-4c6e-9f5e-0a7f4e3b2c1d";
        assert_eq!(judge("GET", one, 404, NOT_FOUND), Answer::Ordinary);
        assert!(matches!(
            judge("GET", one, 404, b"<html>Not Found</html>"),
            Answer::NotTheApi(_)
        ));
        assert!(matches!(judge("GET", one, 404, b""), Answer::NotTheApi(_)));
        assert!(matches!(
            judge("GET", "/v1/servers", 404, NOT_FOUND),
            Answer::NotTheApi(_)
        ));
        assert!(matches!(
            judge("POST", "/v1/load-balancers", 404, NOT_FOUND),
            Answer::NotTheApi(_)
        ));
    }

    #[test]
    fn lists_confirm_the_root_and_non_json_answers_deny_it() {
        assert_eq!(
            judge("GET", "/v1/servers", 200, b"[]"),
            Answer::ConfirmsRoot
        );
        assert!(matches!(
            judge("GET", "/v1/servers", 200, br#"{"servers": []}"#),
            Answer::NotTheApi(_)
        ));
        assert!(matches!(
            judge("GET", "/v1/servers", 200, b"<html>welcome</html>"),
            Answer::NotTheApi(_)
        ));
        assert_eq!(judge("DELETE", "/v1/servers/x", 204, b""), Answer::Ordinary);
        assert_eq!(
            judge("GET", "/v1/servers/x", 200, br#"{"uuid": "x"}"#),
            Answer::ConfirmsRoot
        );
        assert_eq!(
            judge("PATCH", "/v1/servers/x", 200, b"{}"),
            Answer::Ordinary
        );
        assert_eq!(
            judge("GET", "/v1/servers", 500, b"<html>"),
            Answer::Ordinary
        );
        assert_eq!(
            judge(
                "GET",
                "/v1/servers",
                401,
                br#"{"detail": "Invalid token."}"#
            ),
            Answer::Ordinary
        );
    }

    #[test]
    fn the_verdict_lasts_until_a_read_answers() {
        let metrics = Arc::new(Metrics::new());
        let r = RootHealth::new(Some(metrics.clone()));
        assert_eq!(r.wrong(), None);
        r.mark_wrong("http://h/foo/v1/servers", "not the API");
        assert_eq!(
            r.wrong().map(|w| w.url).as_deref(),
            Some("http://h/foo/v1/servers")
        );
        assert!(
            metrics
                .render()
                .contains("cloudscale_api_root_wrong{url=\"http://h/foo/v1/servers\"} 1")
        );
        r.mark_right();
        assert_eq!(r.wrong(), None);
        assert!(!metrics.render().contains("cloudscale_api_root_wrong{"));
    }
}
