//! The Event recorder every controller uses: events.k8s.io/v1 Events about Nodes and
//! Services, a repeated one counted on its first occurrence (an Event series, as client-go
//! and kube's Recorder do) instead of recorded anew.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};

/// How long a repeated Event is counted on its first occurrence instead of recorded anew
/// (the 6 minutes of client-go and kube's Recorder).
const SERIES_TTL: std::time::Duration = std::time::Duration::from_secs(6 * 60);

/// The API server refuses an events.k8s.io note longer than this (bytes).
const NOTE_MAX: usize = 1024;

/// What makes two Events the same: the object, type, reason, action and message. kube's
/// Recorder leaves the message out, so a second, different error or refusal on the same
/// object would only bump the count of the first and never be shown; here it is its own
/// Event (client-go keys on the message too, merging only floods of similar messages).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    regarding: (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
    warning: bool,
    reason: String,
    action: String,
    note: String,
}

#[derive(Debug, Clone)]
struct Recorded {
    name: String,
    count: i32,
    last: tokio::time::Instant,
}

/// Publishes Events (events.k8s.io/v1) without letting a failure to publish stop the
/// controller.
#[derive(Clone)]
pub struct Events {
    client: kube::Client,
    instance: String,
    ambient: crate::ambient::Ambient,
    recorded: std::sync::Arc<parking_lot::Mutex<std::collections::HashMap<EventKey, Recorded>>>,
    /// The time stamp (Unix nanoseconds) of the last Event name handed out.
    last_name: std::sync::Arc<parking_lot::Mutex<i128>>,
    /// Where each Event is counted (`cloudscale_ccm_events_total`).
    metrics: Option<std::sync::Arc<crate::metrics::Metrics>>,
}

impl Events {
    pub fn new(
        client: kube::Client,
        instance: Option<String>,
        ambient: crate::ambient::Ambient,
    ) -> Events {
        Events {
            client,
            ambient,
            instance: instance.unwrap_or_else(|| crate::COMPONENT.to_string()),
            recorded: Default::default(),
            last_name: Default::default(),
            metrics: None,
        }
    }

    /// Counts every Event it records in `metrics`, by type and reason.
    pub fn counted_in(self, metrics: std::sync::Arc<crate::metrics::Metrics>) -> Events {
        Events {
            metrics: Some(metrics),
            ..self
        }
    }

    /// A new Event's name: the object's name and the time in hex Unix nanoseconds, as
    /// client-go's recorders name them. `kubectl describe` lists Events in the order the API
    /// server lists them, which is name order (it sorts on `lastTimestamp`, which
    /// events.k8s.io/v1 Events must leave unset), so names must grow with time. Two Events
    /// in the same nanosecond (a paused clock) get the next free one.
    fn event_name(&self, object: &str, now: k8s_openapi::jiff::Timestamp) -> String {
        let nanos = {
            let mut last = self.last_name.lock();
            *last = (*last + 1).max(now.as_nanosecond());
            *last
        };
        let suffix = format!("{nanos:x}");
        // Names are at most 253 characters (a DNS subdomain): keep room for the suffix.
        let cut: String = object.chars().take(252 - suffix.len()).collect();
        format!("{}.{suffix}", cut.trim_end_matches(['.', '-']))
    }

    /// How many Event series it remembers (those recorded in the last [`SERIES_TTL`],
    /// at most, since the last publish).
    pub fn series(&self) -> usize {
        self.recorded.lock().len()
    }

    pub async fn publish(
        &self,
        object: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        if let Some(m) = &self.metrics {
            m.event(warning, reason);
        }
        if let Err(e) = self
            .try_publish(object, warning, reason, action, note)
            .await
        {
            tracing::warn!(reason, error = %crate::kube_text::KubeText(&e), "cannot publish event");
        }
    }

    async fn try_publish(
        &self,
        object: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) -> Result<(), kube::Error> {
        let note = truncate(note, NOTE_MAX);
        let now = tokio::time::Instant::now();
        let wall = self.ambient.now();
        let stamp = MicroTime(wall);
        let key = EventKey::new(object, warning, reason, action, &note);
        let repeat = self.repeat_of(&key, now);
        let namespace = object
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        if let Some(r) = repeat
            && self.count_repeat(&events, &key, r, &stamp, now).await?
        {
            return Ok(());
        }
        let object_name = object.name.as_deref().unwrap_or(crate::COMPONENT);
        let name = self.event_name(object_name, wall);
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(stamp),
            action: Some(action.to_string()),
            reason: Some(reason.to_string()),
            note: Some(note),
            type_: Some(if warning { "Warning" } else { "Normal" }.to_string()),
            regarding: Some(object.clone()),
            reporting_controller: Some(crate::COMPONENT.to_string()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        let name = self
            .create_under_free_name(&events, event, name, object_name, wall)
            .await?;
        let recorded = Recorded {
            name,
            count: 1,
            last: now,
        };
        self.recorded.lock().insert(key, recorded);
        Ok(())
    }

    /// The series `key` continues, if one was recorded within [`SERIES_TTL`] (forgetting
    /// those that ended).
    fn repeat_of(&self, key: &EventKey, now: tokio::time::Instant) -> Option<Recorded> {
        let mut recorded = self.recorded.lock();
        recorded.retain(|_, r| now.duration_since(r.last) < SERIES_TTL);
        recorded.get(key).cloned()
    }

    /// Counts one more occurrence on the series' Event. `false` when its Event expired on
    /// the server (Events live an hour): it is to be recorded anew.
    async fn count_repeat(
        &self,
        events: &Api<Event>,
        key: &EventKey,
        r: Recorded,
        stamp: &MicroTime,
        now: tokio::time::Instant,
    ) -> Result<bool, kube::Error> {
        let count = r.count + 1;
        let patch = serde_json::json!({"series": EventSeries {
            count,
            last_observed_time: stamp.clone(),
        }});
        match events
            .patch(&r.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                let counted = Recorded {
                    count,
                    last: now,
                    ..r
                };
                self.recorded.lock().insert(key.clone(), counted);
                Ok(true)
            }
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates `event` (named `name`) and gives the name it got. The name is taken when
    /// another recorder (a replica, or this process before a restart under a clock that
    /// stepped back) wrote one in the same nanosecond: the next one is free.
    async fn create_under_free_name(
        &self,
        events: &Api<Event>,
        mut event: Event,
        mut name: String,
        object_name: &str,
        wall: k8s_openapi::jiff::Timestamp,
    ) -> Result<String, kube::Error> {
        let mut attempts = 0;
        loop {
            match events.create(&PostParams::default(), &event).await {
                Ok(_) => return Ok(name),
                Err(kube::Error::Api(e)) if e.code == 409 && attempts < 3 => {
                    attempts += 1;
                    name = self.event_name(object_name, wall);
                    event.metadata.name = Some(name.clone());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl EventKey {
    fn new(
        object: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: &str,
    ) -> EventKey {
        EventKey {
            regarding: (
                object.uid.clone(),
                object.namespace.clone(),
                object.name.clone(),
                object.kind.clone(),
            ),
            warning,
            reason: reason.to_string(),
            action: action.to_string(),
            note: note.to_string(),
        }
    }
}

/// `s` cut to at most `max` bytes on a character boundary, marked with "…" when cut.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ambient::Ambient;

    #[tokio::test]
    async fn event_names_grow_with_time_even_within_one_nanosecond() {
        let events = Events::new(
            kube::Client::try_from(kube::Config::new(
                "http://127.0.0.1:1".parse().expect("uri"),
            ))
            .expect("client"),
            None,
            Ambient::system(),
        );
        let t = |s: i64| k8s_openapi::jiff::Timestamp::from_second(s).expect("time");
        let names = [
            events.event_name("web", t(1_800_000_000)),
            events.event_name("web", t(1_800_000_000)),
            events.event_name("web", t(1_800_000_001)),
            // A clock that stepped back still gives a later name.
            events.event_name("web", t(1_799_999_999)),
        ];
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, names);
        assert_eq!(names[0], format!("web.{:x}", 1_800_000_000_000_000_000i128));
        let long = events.event_name(&"a".repeat(300), t(1_800_000_002));
        assert_eq!(long.len(), 253, "{long}");
    }

    /// Another recorder took the name (the API server answers 409): the Event is written
    /// under the next name, not lost.
    #[tokio::test]
    async fn a_taken_event_name_is_followed_by_the_next_free_one() {
        use std::sync::{Arc, Mutex};
        let posted: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = posted.clone();
        let api = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let seen = seen.clone();
            async move {
                let body = req.into_body().collect_bytes().await?;
                let event: serde_json::Value = serde_json::from_slice(&body)?;
                let name = event["metadata"]["name"].as_str().unwrap_or("").to_string();
                let first = {
                    let mut seen = seen.lock().map_err(|_| "poisoned")?;
                    seen.push(name);
                    seen.len() == 1
                };
                let (code, answer) = if first {
                    let taken = serde_json::json!({"kind": "Status", "apiVersion": "v1",
                        "status": "Failure", "reason": "AlreadyExists", "code": 409,
                        "message": "events \"web\" already exists"});
                    (409, taken)
                } else {
                    (201, event)
                };
                let response = http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(serde_json::to_vec(&answer)?))?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(response)
            }
        });
        let events = Events::new(kube::Client::new(api, "default"), None, Ambient::system());
        let web = k8s_openapi::api::core::v1::ObjectReference {
            namespace: Some("default".into()),
            name: Some("web".into()),
            ..Default::default()
        };
        let done = events
            .try_publish(&web, false, "EnsuringLoadBalancer", "Ensure", "x".into())
            .await;
        assert!(done.is_ok(), "{done:?}");
        let posted = posted.lock().expect("names").clone();
        assert_eq!(posted.len(), 2, "{posted:?}");
        assert!(posted[0] < posted[1], "{posted:?}");
    }

    #[test]
    fn long_notes_are_cut_on_a_character_boundary() {
        assert_eq!(truncate("short".into(), NOTE_MAX), "short");
        let long = "ä".repeat(NOTE_MAX);
        let cut = truncate(long, NOTE_MAX);
        assert!(cut.len() <= NOTE_MAX, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.starts_with("ää"));
    }
}
