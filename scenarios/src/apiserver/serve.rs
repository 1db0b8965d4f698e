//! The embedded API server as clients reach it: its router over the shared state, for
//! in-process callers, and [`ApiServer`], the router served on a socket.

use super::server::{ApiServerConfig, Shared};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::oneshot;

/// The whole HTTP surface over `shared`, for a socket or for in-process callers.
pub fn router(shared: Shared) -> axum::Router {
    axum::Router::new()
        .fallback(super::http::handle)
        .with_state(shared)
}

/// An embedded API server listening on a socket.
pub struct ApiServer {
    shared: Shared,
    addr: SocketAddr,
    /// The certificate clients trust (PEM), when it serves HTTPS.
    ca_pem: Option<String>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ApiServer {
    pub async fn start(config: ApiServerConfig) -> std::io::Result<ApiServer> {
        let identity = if config.tls {
            Some(super::tls::Identity::self_signed().map_err(std::io::Error::other)?)
        } else {
            None
        };
        let listener = tokio::net::TcpListener::bind(config.listen).await?;
        let addr = listener.local_addr()?;
        let shared = Shared::new(config);
        *shared.0.address.lock() = addr.to_string();
        let app = router(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let ca_pem = identity.as_ref().map(|i| i.cert_pem.clone());
        let task = match identity {
            Some(identity) => tokio::spawn(super::tls::serve(listener, app, identity, rx)),
            None => tokio::spawn(async move {
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
                if let Err(e) = served {
                    tracing::error!(error = %e, "API server stopped");
                }
            }),
        };
        Ok(ApiServer {
            shared,
            addr,
            ca_pem,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// `https://127.0.0.1:PORT` (`http://` without TLS).
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The certificate to trust (PEM), when the server speaks HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// An HTTP client that trusts this server.
    pub fn http_client(&self) -> reqwest::Client {
        let mut builder = reqwest::Client::builder();
        if let Some(cert) = self
            .ca_pem
            .as_deref()
            .and_then(|pem| reqwest::Certificate::from_pem(pem.as_bytes()).ok())
        {
            builder = builder.add_root_certificate(cert);
        }
        builder.build().unwrap_or_default()
    }

    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// A kubeconfig for this server as the administrator (context `embedded`, namespace
    /// `default`).
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_with_token(super::rbac::ADMIN_TOKEN, "default")
    }

    /// A kubeconfig for this server with `token`, its context in `namespace`.
    pub fn kubeconfig_with_token(&self, token: &str, namespace: &str) -> String {
        use base64::Engine;
        let ca = match &self.ca_pem {
            Some(pem) => format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(pem)
            ),
            None => String::new(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: embedded\n  cluster:\n    server: {}\n{ca}contexts:\n- name: embedded\n  context:\n    cluster: embedded\n    user: embedded\n    namespace: {namespace}\ncurrent-context: embedded\nusers:\n- name: embedded\n  user:\n    token: {token}\n",
            self.url()
        )
    }

    /// Writes the kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Watches are long-lived: do not wait for them.
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}
