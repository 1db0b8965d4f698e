//! HTTPS for the embedded API server. kubectl (client-go) sends no bearer token over plain
//! HTTP, so without TLS every kubectl request would be anonymous and RBAC could not tell its
//! users apart. Each server makes its own self-signed certificate for `127.0.0.1` and
//! `localhost`; its kubeconfig carries it as the certificate authority.

use axum::body::Body;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot make the certificate: {0}")]
    Certificate(String),
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// A server certificate and the acceptor that presents it.
#[derive(Clone)]
pub struct Identity {
    /// The certificate in PEM: the CA clients trust.
    pub cert_pem: String,
    acceptor: TlsAcceptor,
}

impl Identity {
    pub fn self_signed() -> Result<Identity, TlsError> {
        let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        let certified = rcgen::generate_simple_self_signed(names)
            .map_err(|e| TlsError::Certificate(e.to_string()))?;
        let cert_der = certified.cert.der().clone();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(
            rustls::pki_types::PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()),
        );
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert_der], key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        // HTTP/1.1 only: what the server loop speaks (clients fall back from h2).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Identity {
            cert_pem: certified.cert.pem(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}

/// Serves `router` over TLS until `stop` fires; in-flight requests (watches end with the
/// server) get a few seconds.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    identity: Identity,
    mut stop: oneshot::Receiver<()>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let (stop_conns, _) = tokio::sync::watch::channel(());
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = identity.acceptor.clone();
        let router = router.clone();
        let watcher = graceful.watcher();
        let mut closed = stop_conns.subscribe();
        tokio::spawn(async move {
            // A client that fails the handshake (e.g. plain HTTP) just goes away.
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let router = router.clone();
                    async move {
                        use tower::ServiceExt;
                        router.oneshot(req.map(Body::new)).await
                    }
                });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service);
            let conn = watcher.watch(conn);
            tokio::select! {
                _ = conn => {}
                _ = closed.changed() => {}
            }
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(2), graceful.shutdown()).await;
    drop(stop_conns);
}
