//! The `rest_client_*` families: a tower layer on the CCM's Kubernetes client that counts
//! every request by method, status code and host, and times it until the response headers.

use super::Metrics;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::time::Instant;

/// Wraps a Kubernetes client's service (see `kube::client::ClientBuilder::with_layer`).
#[derive(Clone)]
pub struct KubeRequestsLayer {
    metrics: Arc<Metrics>,
}

impl KubeRequestsLayer {
    pub fn new(metrics: Arc<Metrics>) -> KubeRequestsLayer {
        KubeRequestsLayer { metrics }
    }
}

impl<S> tower::Layer<S> for KubeRequestsLayer {
    type Service = KubeRequests<S>;
    fn layer(&self, inner: S) -> KubeRequests<S> {
        KubeRequests {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service [`KubeRequestsLayer`] makes.
#[derive(Clone)]
pub struct KubeRequests<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B, R> tower::Service<http::Request<B>> for KubeRequests<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = req.method().as_str().to_string();
        let host = req
            .uri()
            .authority()
            .map_or_else(String::new, |a| a.to_string());
        let metrics = self.metrics.clone();
        let started = Instant::now();
        let answer = self.inner.call(req);
        Box::pin(async move {
            let result = answer.await;
            let code = match &result {
                Ok(r) => r.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            metrics.kube_request(&method, &code, &host, started.elapsed());
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer as _, Service as _, ServiceExt as _};

    #[tokio::test]
    async fn every_request_is_counted_by_code_method_and_host() {
        let metrics = Arc::new(Metrics::new());
        let inner = tower::service_fn(|req: http::Request<()>| async move {
            let status = if req.uri().path() == "/missing" {
                404
            } else {
                200
            };
            http::Response::builder()
                .status(status)
                .body(())
                .map_err(|e| e.to_string())
        });
        let mut svc = KubeRequestsLayer::new(metrics.clone()).layer(inner);
        for path in ["/api/v1/nodes", "/api/v1/nodes", "/missing"] {
            let req = http::Request::get(format!("https://10.0.0.1:6443{path}"))
                .body(())
                .expect("request");
            let _ = svc.ready().await.expect("ready").call(req).await;
        }
        let text = metrics.render();
        assert!(
            text.contains(
                "rest_client_requests_total{code=\"200\",method=\"GET\",host=\"10.0.0.1:6443\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains(
            "rest_client_requests_total{code=\"404\",method=\"GET\",host=\"10.0.0.1:6443\"} 1"
        ));
        assert!(text.contains(
            "rest_client_request_duration_seconds_count{verb=\"GET\",host=\"10.0.0.1:6443\"} 3"
        ));
    }
}
