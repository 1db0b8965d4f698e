//! The token never appears in the API client's errors, `Debug` output or logs (at trace
//! level, every dependency included), and every write is logged once with its outcome.
//!
//! A test binary of its own: `tracing` caches whether each log statement is enabled
//! process-wide the first time it runs, and a test in a shared binary running the client
//! while this one installs its subscriber can leave statements cached as disabled, so the
//! captured log misses lines.

#[allow(dead_code)]
#[path = "it/support/mod.rs"]
mod support;

use ccm::cloudscale::*;
use fakecloud::{Config, FaultEffect, FaultRule};
use std::sync::Arc;
use support::client::*;
use tracing::instrument::WithSubscriber as _;

#[derive(Clone, Default)]
struct Captured(Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

#[tokio::test]
async fn the_token_never_appears_in_errors_debug_or_logs() {
    const SECRET: &str = "tok-SECRET-5b7a9c1e";
    let mut fcfg = Config::for_tests();
    fcfg.tokens = vec![SECRET.to_string()];
    let fc = start(fcfg).await;
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .finish();
    let cfg = config(&fc, SECRET);
    let cfg_debug = format!("{cfg:?}");
    let c = Client::new(cfg).expect("client");
    let mut errors: Vec<ClientError> = Vec::new();
    async {
        // Writes succeed and are logged.
        let lb = c
            .create_load_balancer(&new_lb("secret-lb"), Idempotency::RequestId)
            .await
            .expect("create");
        c.update_load_balancer(
            lb.uuid,
            &UpdateLoadBalancer {
                name: Some("x".into()),
                tags: None,
            },
        )
        .await
        .expect("patch");
        // Failures of every kind.
        let mut bad = new_lb("bad");
        bad.zone = Some("nowhere1".into());
        errors.push(
            c.create_load_balancer(&bad, Idempotency::RequestId)
                .await
                .expect_err("400"),
        );
        fault(
            &fc,
            FaultRule::new(
                Some("GET"),
                "/v1/servers",
                FaultEffect::Status {
                    status: 500,
                    body: Some(
                        [(
                            "detail".to_string(),
                            format!("upstream said Bearer {SECRET}"),
                        )]
                        .into(),
                    ),
                    retry_after: None,
                },
            ),
        );
        errors.push(c.list_servers(&Filter::all()).await.expect_err("500"));
        fault(
            &fc,
            FaultRule::new(Some("POST"), "/v1/load-balancers/pools", FaultEffect::Drop),
        );
        errors.push(
            c.create_pool(&new_pool(lb.uuid, "p"), Idempotency::Never, &[])
                .await
                .expect_err("drop"),
        );
        errors.push(
            c.update_pool(
                random_uuid(),
                &UpdatePool {
                    name: Some("x".into()),
                    tags: None,
                },
            )
            .await
            .expect_err("404"),
        );
        c.delete_load_balancer(lb.uuid).await.expect("delete");
        c.delete_load_balancer(lb.uuid).await.expect("delete again");
        // An unusable base URL.
        let mut cfg = config(&fc, SECRET);
        cfg.base_url = "http://127.0.0.1:1".into();
        let dead = Client::new(cfg).expect("client");
        errors.push(
            dead.list_servers(&Filter::all())
                .await
                .expect_err("connection refused"),
        );
    }
    .with_subscriber(subscriber)
    .await;

    assert_eq!(errors.len(), 5);
    assert!(matches!(errors[1], ClientError::Api { status: 500, .. }));
    assert!(
        errors[1].to_string().contains("upstream said Bearer ***"),
        "{}",
        errors[1]
    );
    for e in &errors {
        for text in [e.to_string(), format!("{e:?}"), format!("{e:#?}")] {
            assert!(!text.contains(SECRET), "token in error: {text}");
        }
    }
    for text in [cfg_debug, format!("{c:?}")] {
        assert!(!text.contains(SECRET), "token in Debug: {text}");
    }
    let logs = captured.text();
    assert!(!logs.contains(SECRET), "token in logs:\n{logs}");
    assert!(
        !logs.to_ascii_lowercase().contains("bearer tok"),
        "authorization in logs"
    );
    // One line per write, with resource and outcome.
    let writes: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("cloudscale API write"))
        .collect();
    assert!(
        writes
            .iter()
            .any(|l| l.contains("POST") && l.contains("load-balancer") && l.contains("created")),
        "{logs}"
    );
    assert!(
        writes
            .iter()
            .any(|l| l.contains("PATCH") && l.contains("updated")),
        "{logs}"
    );
    assert!(
        writes
            .iter()
            .any(|l| l.contains("DELETE") && l.contains("deleted")),
        "{logs}"
    );
    assert!(
        writes
            .iter()
            .any(|l| l.contains("DELETE") && l.contains("already absent")),
        "{logs}"
    );
    assert!(
        writes
            .iter()
            .any(|l| l.contains("POST") && l.contains("failed")),
        "{logs}"
    );
    assert_eq!(writes.len(), 7, "{logs}");
}
