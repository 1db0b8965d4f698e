//! What an open fakecloud console costs the server: one refresh of each view (the data
//! endpoints its JavaScript polls, once a second while the tab is visible) on an account of
//! 50 load balancers with 10 members each, 10 servers and a full request log, in-process
//! (no socket), averaged over 100 rounds. fakecloud/README.md, "Console", reports the
//! figures.
//!
//! `cargo run --release -p fakecloud --bin fakecloud-console-bench`

use anyhow::bail;
use fakecloud::{App, Config, InProcess};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// One in-process GET (no socket): the server's own time for it, and the answer's size.
async fn timed_get(fc: &InProcess, path: &str) -> anyhow::Result<(Duration, usize)> {
    let req = axum::http::Request::builder()
        .uri(path)
        .header("host", "console.test")
        .body(axum::body::Body::empty())?;
    let started = Instant::now();
    let resp = fc
        .serve(req)
        .await
        .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    if resp.status() != axum::http::StatusCode::OK {
        bail!("{path}: {}", resp.status());
    }
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await?;
    Ok((started.elapsed(), body.len()))
}

/// One in-process request with the token; its JSON answer (`Null` for none).
async fn v1(fc: &InProcess, method: &str, path: &str, body: Value) -> anyhow::Result<Value> {
    let req = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "console.test")
        .header("authorization", "Bearer test-token")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))?;
    let resp = fc
        .serve(req)
        .await
        .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await?;
    Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// 50 load balancers on 10 servers, each with a pool of 10 members, a listener and a
/// monitor, its listener recreated twice (history), and 10,000 logged requests.
async fn fifty_load_balancers() -> anyhow::Result<InProcess> {
    let fc = InProcess::new(App::new(Config::for_tests()));
    let servers: Vec<Value> = (1..=10)
        .map(|i| json!({"name": format!("node-{i}"), "private": [{"network": "private", "address": format!("10.0.0.{}", 10 + i)}]}))
        .collect();
    let seed = json!({"networks": [{"name": "private", "subnets": [{"cidr": "10.0.0.0/24"}]}], "servers": servers});
    v1(&fc, "POST", "/_fake/seed", seed).await?;
    let subnet = v1(&fc, "GET", "/v1/subnets", Value::Null).await?[0]["uuid"].clone();
    for n in 0..50 {
        let lb = v1(
            &fc,
            "POST",
            "/v1/load-balancers",
            json!({"name": format!("lb-{n}"), "flavor": "lb-standard", "zone": "rma1"}),
        )
        .await?;
        let pool = v1(&fc, "POST", "/v1/load-balancers/pools", json!({"name": "pool", "load_balancer": lb["uuid"], "algorithm": "round_robin", "protocol": "tcp"})).await?;
        let members = format!(
            "/v1/load-balancers/pools/{}/members",
            pool["uuid"].as_str().unwrap_or_default()
        );
        for i in 1..=10 {
            v1(&fc, "POST", &members, json!({"name": format!("m{i}"), "protocol_port": 30080, "address": format!("10.0.0.{}", 10 + i), "subnet": subnet})).await?;
        }
        v1(
            &fc,
            "POST",
            "/v1/load-balancers/health-monitors",
            json!({"pool": pool["uuid"], "type": "tcp"}),
        )
        .await?;
        let listener =
            json!({"name": "l", "pool": pool["uuid"], "protocol": "tcp", "protocol_port": 80});
        let mut l = v1(
            &fc,
            "POST",
            "/v1/load-balancers/listeners",
            listener.clone(),
        )
        .await?;
        for _ in 0..2 {
            fc.app().0.clock.advance(Duration::from_secs(60));
            let path = format!(
                "/v1/load-balancers/listeners/{}",
                l["uuid"].as_str().unwrap_or_default()
            );
            v1(&fc, "DELETE", &path, Value::Null).await?;
            l = v1(
                &fc,
                "POST",
                "/v1/load-balancers/listeners",
                listener.clone(),
            )
            .await?;
        }
    }
    while fc.app().0.log.lock().recorded < 10_000 {
        v1(&fc, "GET", "/v1/servers", Value::Null).await?;
    }
    fc.app().0.clock.advance(Duration::from_secs(600));
    Ok(fc)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let fc = fifty_load_balancers().await?;
    let account = v1(&fc, "GET", "/_fake/console/account", Value::Null).await?;
    let lb = account["load_balancers"][25]["uuid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let views: [(&str, Vec<String>); 4] = [
        ("account", vec!["/_fake/console/account".to_string()]),
        (
            "load balancer",
            vec![
                format!("/_fake/console/load-balancers/{lb}"),
                format!("/_fake/load-balancers/{lb}/availability"),
                format!("/_fake/load-balancers/{lb}/timeline"),
            ],
        ),
        (
            "requests (following)",
            vec!["/_fake/console/requests?after=10000".to_string()],
        ),
        // A filter searches the whole kept log on every refresh.
        (
            "requests (filtered)",
            vec![
                "/_fake/console/requests?method=POST&status=2xx&path=members&limit=300".to_string(),
            ],
        ),
    ];
    let rounds = 100;
    for (view, paths) in views {
        for path in &paths {
            let mut total = Duration::ZERO;
            let mut bytes = 0;
            for _ in 0..rounds {
                let (t, b) = timed_get(&fc, path).await?;
                total += t;
                bytes = b;
            }
            println!(
                "{view:22} {path:70} {:8.3} ms {bytes:8} bytes",
                total.as_secs_f64() * 1000.0 / f64::from(rounds)
            );
        }
    }
    // The first page of a console opened on a full log (1,000 entries).
    let (t, b) = timed_get(&fc, "/_fake/console/requests").await?;
    println!(
        "{:22} {:70} {:8.3} ms {b:8} bytes",
        "requests (first page)",
        "/_fake/console/requests",
        t.as_secs_f64() * 1000.0
    );
    let (t, b) = timed_get(&fc, "/_fake/state").await?;
    println!(
        "{:22} {:70} {:8.3} ms {b:8} bytes",
        "(full dump, for scale)",
        "/_fake/state",
        t.as_secs_f64() * 1000.0
    );
    Ok(())
}
