//! `/healthz`, `/readyz` and `/metrics` on the `--bind-address`/`--secure-port` address.
//!
//! Ready means: the controllers' caches are synced, and with leader election this instance
//! is either the leader or standing by (a standby is ready: it can take over at once).

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

    pub fn ready(&self) -> bool {
        self.synced.load(Ordering::SeqCst) || self.standing_by.load(Ordering::SeqCst)
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
    if s.readiness.ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
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
}
