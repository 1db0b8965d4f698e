//! Watches: the event stream of a collection in the negotiated format, with bookmarks,
//! initial events and timeouts.

use super::registry::ResourceType;
use super::selectors::{FieldSelector, LabelSelector};
use super::server::IncludeObject;
use super::server::*;
use super::status::{ApiError, ApiResult};
use super::store::ChangeKind;
use super::tables::{self, Format};
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::mpsc;

pub(super) fn event_line(kind: &str, object: &Value) -> Bytes {
    // Serialized from borrows: every watcher encodes every change it passes on.
    #[derive(serde::Serialize)]
    struct Event<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        object: &'a Value,
    }
    let mut line = serde_json::to_vec(&Event { kind, object }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// Encodes watch events in the negotiated format. Table events carry one row each, and only
/// the first one carries the column definitions (as on a real server); BOOKMARKs become an
/// empty Table or `PartialObjectMetadata` with the resourceVersion.
pub(super) struct WatchEncoder {
    rt: &'static ResourceType,
    format: Format,
    include: IncludeObject,
    headers_sent: bool,
}

impl WatchEncoder {
    fn line(&mut self, kind: &str, object: &Value) -> Bytes {
        match self.format {
            Format::Json => event_line(kind, object),
            Format::Metadata(version) => {
                event_line(kind, &tables::partial_metadata(object, version))
            }
            Format::Table(version) => {
                let metadata = json!({"resourceVersion": object
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(json!(""))});
                let objects = if kind == "BOOKMARK" {
                    Vec::new()
                } else {
                    vec![object.clone()]
                };
                let headers = !self.headers_sent;
                self.headers_sent = true;
                let table =
                    tables::table(self.rt, &objects, metadata, self.include, version, headers);
                event_line(kind, &table)
            }
        }
    }
}

pub(super) fn watch_response(
    srv: Shared,
    target: Target,
    params: Params,
    format: Format,
) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(async move {
        let enc = WatchEncoder {
            rt: target.rt,
            format,
            include: params.include_object,
            headers_sent: false,
        };
        if let Err(e) = watch_loop(srv, target, params, enc, tx.clone()).await {
            let _ = tx.send(event_line("ERROR", &e.status())).await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

pub(super) async fn watch_loop(
    srv: Shared,
    target: Target,
    params: Params,
    mut enc: WatchEncoder,
    tx: mpsc::Sender<Bytes>,
) -> ApiResult<()> {
    let labels = LabelSelector::parse(params.label_selector.as_deref().unwrap_or_default())?;
    let fields = FieldSelector::parse(params.field_selector.as_deref().unwrap_or_default())?;
    let matches = |obj: &Value| {
        // Only the events.k8s.io view differs in what selectors read; the others' external
        // form adds apiVersion and kind alone, so they are matched without a copy.
        let converted;
        let ext = if target.rt.group == "events.k8s.io" {
            converted = external(target.rt, obj);
            &converted
        } else {
            obj
        };
        let in_ns = target
            .namespace
            .as_deref()
            .is_none_or(|ns| meta_str(ext, "namespace") == Some(ns));
        in_ns && labels.matches(ext) && fields.matches(ext)
    };
    let mut changed = srv.0.changed.subscribe();
    let requested = requested_rv(&params)?;
    let (initial, start_rv) = initial_lines(&srv, &target, &params, requested, &matches, &mut enc)?;
    if !send_all(&tx, initial).await {
        return Ok(());
    }
    let mut last = start_rv;
    let timeout = params
        .timeout
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let deadline = tokio::time::Instant::now() + timeout;
    // Bookmarks come on a fixed beat, whatever else happens on the server.
    let mut bookmark_beat = tokio::time::interval_at(
        tokio::time::Instant::now() + srv.0.config.bookmark_interval,
        srv.0.config.bookmark_interval,
    );
    bookmark_beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Drain what happened since `last`.
        let (lines, now_rv) = change_lines(&srv, target.rt, last, &matches, &mut enc)?;
        if !send_all(&tx, lines).await {
            return Ok(());
        }
        last = now_rv;
        tokio::select! {
            // One order of checks, so a simulated run is the same each time.
            biased;
            r = changed.changed() => {
                if r.is_err() {
                    return Ok(());
                }
            }
            _ = bookmark_beat.tick(), if params.bookmarks => {
                let bookmark = json!({"kind": target.rt.kind, "apiVersion": target.rt.api_version(),
                                      "metadata": {"resourceVersion": last.to_string()}});
                if tx.send(enc.line("BOOKMARK", &bookmark)).await.is_err() {
                    return Ok(());
                }
            }
            _ = tokio::time::sleep_until(deadline) => return Ok(()),
            _ = tx.closed() => return Ok(()),
        }
    }
}

/// The resource version the watch starts after; `None` for "0" or unset (start with the
/// current objects).
fn requested_rv(params: &Params) -> ApiResult<Option<u64>> {
    match params.resource_version.as_deref() {
        None | Some("") | Some("0") => Ok(None),
        Some(s) => s
            .parse()
            .map(Some)
            .map_err(|_| ApiError::BadRequest(format!("invalid resourceVersion \"{s}\""))),
    }
}

/// The events sent first (the current objects when no resource version was asked for) and
/// the resource version the watch goes on from. Computed without awaiting: the store's lock
/// guard must not live across an await.
fn initial_lines(
    srv: &Shared,
    target: &Target,
    params: &Params,
    requested: Option<u64>,
    matches: &dyn Fn(&Value) -> bool,
    enc: &mut WatchEncoder,
) -> ApiResult<(Vec<Bytes>, u64)> {
    let store = srv.0.store.read();
    let Some(rv) = requested else {
        // Start with the current objects, as a real server does for "0" / unset.
        let mut initial = Vec::new();
        for (_, obj) in store.list(target.rt.storage_key(), target.namespace.as_deref()) {
            if matches(obj) {
                initial.push(enc.line("ADDED", &external(target.rt, obj)));
            }
        }
        if params.send_initial_events {
            initial.push(enc.line(
                "BOOKMARK",
                &json!({"kind": target.rt.kind, "apiVersion": target.rt.api_version(),
                        "metadata": {"resourceVersion": store.rv.to_string(),
                                     "annotations": {"k8s.io/initial-events-end": "true"}}}),
            ));
        }
        return Ok((initial, store.rv));
    };
    if store.changes_after(rv).is_none() {
        return Err(ApiError::Gone {
            requested: rv,
            oldest: store.compacted_rv,
        });
    }
    Ok((Vec::new(), rv))
}

/// The events of the changes to `rt`'s objects after `last`, and the store's resource
/// version they reach. Without awaiting, as `initial_lines`.
fn change_lines(
    srv: &Shared,
    rt: &'static ResourceType,
    last: u64,
    matches: &dyn Fn(&Value) -> bool,
    enc: &mut WatchEncoder,
) -> ApiResult<(Vec<Bytes>, u64)> {
    let store = srv.0.store.read();
    let Some(changes) = store.changes_after(last) else {
        return Err(ApiError::Gone {
            requested: last,
            oldest: store.compacted_rv,
        });
    };
    let storage = rt.storage_key();
    let mut lines = Vec::new();
    for c in changes.filter(|c| c.storage == storage) {
        let now_in = matches(&c.object);
        let was_in = c.previous.as_deref().is_some_and(matches);
        if let Some(kind) = event_kind(c.kind, was_in, now_in) {
            lines.push(enc.line(kind, &external(rt, &c.object)));
        }
    }
    Ok((lines, store.rv))
}

/// What a change is to a watcher that sees only the matching objects: a deletion of one it
/// saw, an addition, or an object moving into or out of its view.
fn event_kind(change: ChangeKind, was_in: bool, now_in: bool) -> Option<&'static str> {
    match (change, was_in, now_in) {
        (ChangeKind::Deleted, true, _) => Some("DELETED"),
        (ChangeKind::Deleted, false, _) => None,
        (ChangeKind::Added, _, true) => Some("ADDED"),
        (ChangeKind::Modified, true, true) => Some("MODIFIED"),
        (ChangeKind::Modified, false, true) => Some("ADDED"),
        (ChangeKind::Modified, true, false) => Some("DELETED"),
        _ => None,
    }
}

/// Sends `lines` in order; false once the watcher is gone.
async fn send_all(tx: &mpsc::Sender<Bytes>, lines: Vec<Bytes>) -> bool {
    for line in lines {
        if tx.send(line).await.is_err() {
            return false;
        }
    }
    true
}
