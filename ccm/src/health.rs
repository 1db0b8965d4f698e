//! `/healthz`, `/readyz` and `/metrics` on the `--bind-address`/`--secure-port` address.
//!
//! Ready means: the controllers' caches are synced, and with leader election this instance
//! is either the leader or standing by (a standby is ready: it can take over at once); and
//! the cloudscale API root answers as the API does (a wrong `CLOUDSCALE_API_URL` is not
//! ready, whatever else holds).

use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What `/readyz` reports.
#[derive(Debug, Default)]
pub struct Readiness {
    synced: AtomicBool,
    standing_by: AtomicBool,
    api_root: parking_lot::Mutex<Option<Arc<crate::cloudscale::RootHealth>>>,
}

impl Readiness {
    /// The controllers' informers have listed everything once.
    pub fn set_synced(&self, v: bool) {
        self.synced.store(v, Ordering::SeqCst);
    }

    /// Waiting for the lease (leader election on, another instance leads).
    pub fn set_standing_by(&self, v: bool) {
        self.standing_by.store(v, Ordering::SeqCst);
    }

    /// Readiness follows what the cloud client learns of its API root.
    pub fn watch_api_root(&self, root: Arc<crate::cloudscale::RootHealth>) {
        *self.api_root.lock() = Some(root);
    }

    pub fn ready(&self) -> bool {
        self.problem().is_none()
    }

    /// Why it is not ready, in words; `None` when ready.
    pub fn problem(&self) -> Option<String> {
        if let Some(wrong) = self.api_root.lock().as_ref().and_then(|r| r.wrong()) {
            return Some(wrong.message);
        }
        if self.synced.load(Ordering::SeqCst) || self.standing_by.load(Ordering::SeqCst) {
            None
        } else {
            Some("caches not synced".into())
        }
    }
}

#[derive(Clone)]
struct HealthState {
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
}

async fn healthz() -> impl IntoResponse {
    "ok"
}

async fn readyz(State(s): State<HealthState>) -> impl IntoResponse {
    match s.readiness.problem() {
        None => (StatusCode::OK, "ok".to_string()),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

async fn metrics_text(State(s): State<HealthState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.render(),
    )
}

pub fn router(metrics: Arc<Metrics>, readiness: Arc<Readiness>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(HealthState { metrics, readiness })
}

/// Binds and serves until `shutdown` completes; returns the bound address at once.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = router(metrics, readiness);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(error = %e, "health server stopped");
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_when_synced_or_standing_by() {
        let r = Readiness::default();
        assert!(!r.ready());
        r.set_standing_by(true);
        assert!(r.ready());
        r.set_standing_by(false);
        r.set_synced(true);
        assert!(r.ready());
    }

    #[test]
    fn a_wrong_api_root_is_not_ready_whatever_else_holds() {
        let r = Readiness::default();
        r.set_synced(true);
        let root = Arc::new(crate::cloudscale::RootHealth::new(None));
        r.watch_api_root(root.clone());
        assert!(r.ready());
        let err = crate::cloudscale::ClientError::NotTheApi {
            method: "GET".into(),
            url: "http://h/foo/v1/servers".into(),
            status: 404,
            why: "on a collection".into(),
        };
        root.mark_wrong("http://h/foo/v1/servers", &err.to_string());
        let why = r.problem().expect("not ready");
        assert!(why.contains("http://h/foo/v1/servers"), "{why}");
        assert!(why.contains("CLOUDSCALE_API_URL"), "{why}");
        root.mark_right();
        assert!(r.ready());
    }
}
