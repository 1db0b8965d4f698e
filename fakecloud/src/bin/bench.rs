//! Throughput benchmark of fakecloud on loopback: GET list, GET one and POST create.
//!
//! `cargo run --release -p fakecloud --bin fakecloud-bench -- [--seconds 5] [--concurrency 32]
//! [--servers 10]`. Server and load generator share this process (and the machine's cores),
//! so the figures are a lower bound for the server alone.

use anyhow::{Context, bail};
use clap::Parser;
use fakecloud::{Config, FakeCloud};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Parser)]
#[command(name = "fakecloud-bench")]
struct Args {
    /// Seconds per measured scenario.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Concurrent keep-alive connections.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Servers preloaded, so GET /v1/servers returns this many.
    #[arg(long, default_value_t = 10)]
    servers: usize,
}

#[derive(Clone, Copy)]
enum Op {
    ListServers,
    GetServer,
    CreateNetwork,
}

impl Op {
    fn label(self) -> &'static str {
        match self {
            Op::ListServers => "GET  /v1/servers (list)",
            Op::GetServer => "GET  /v1/servers/{uuid}",
            Op::CreateNetwork => "POST /v1/networks (create)",
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.seconds.is_nan() || args.seconds <= 0.0 || args.concurrency == 0 {
        bail!("--seconds and --concurrency must be positive");
    }
    let fc = FakeCloud::start(Config::for_tests())
        .await
        .context("start fakecloud")?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()
        .context("HTTP client")?;
    let token = fc.token().to_string();
    let mut server_uuid = String::new();
    for i in 0..args.servers {
        let resp = client
            .post(format!("{}/_fake/servers", fc.base_url()))
            .json(&serde_json::json!({"name": format!("bench-{i}")}))
            .send()
            .await?;
        let v: serde_json::Value = resp.json().await?;
        server_uuid = v["uuid"].as_str().unwrap_or_default().to_string();
    }
    println!(
        "fakecloud bench: {} s per scenario, {} connections, {} servers in the list, {} cores",
        args.seconds,
        args.concurrency,
        args.servers,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    for op in [Op::ListServers, Op::GetServer, Op::CreateNetwork] {
        let url = match op {
            Op::ListServers => format!("{}/servers", fc.api_url()),
            Op::GetServer => format!("{}/servers/{server_uuid}", fc.api_url()),
            Op::CreateNetwork => format!("{}/networks", fc.api_url()),
        };
        let (count, errors, elapsed) = run(&client, op, &url, &token, &args).await;
        println!(
            "{:<28} {:>9.0} req/s  ({count} requests, {errors} errors, {:.2} s)",
            op.label(),
            count as f64 / elapsed,
            elapsed
        );
        if errors > 0 {
            bail!("{} failed {errors} times", op.label());
        }
    }
    fc.shutdown().await;
    Ok(())
}

async fn run(
    _client: &reqwest::Client,
    op: Op,
    url: &str,
    token: &str,
    args: &Args,
) -> (u64, u64, f64) {
    let count = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..args.concurrency {
        let (url, token) = (url.to_string(), token.to_string());
        let (count, errors) = (count.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = match Conn::open(&url).await {
                Ok(c) => c,
                Err(_) => {
                    errors.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            let mut n = 0u64;
            while Instant::now() < deadline {
                let body = match op {
                    Op::ListServers | Op::GetServer => None,
                    Op::CreateNetwork => Some(format!(
                        "{{\"name\":\"bench-{worker}-{n}\",\"auto_create_ipv4_subnet\":false}}"
                    )),
                };
                n += 1;
                match conn.request(&token, body.as_deref()).await {
                    Ok(status) if (200..300).contains(&status) => {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    (
        count.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
        elapsed,
    )
}

/// A minimal HTTP/1.1 keep-alive client: the load generator shares the two cores with the
/// server, so it must cost as little as possible. It reads every response body completely.
struct Conn {
    stream: tokio::io::BufReader<tokio::net::TcpStream>,
    host: String,
    path: String,
}

impl Conn {
    async fn open(url: &str) -> anyhow::Result<Conn> {
        let rest = url.strip_prefix("http://").context("http URL")?;
        let (host, path) = rest.split_once('/').context("URL with path")?;
        let stream = tokio::net::TcpStream::connect(host).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream: tokio::io::BufReader::new(stream),
            host: host.to_string(),
            path: format!("/{path}"),
        })
    }

    async fn request(&mut self, token: &str, body: Option<&str>) -> anyhow::Result<u16> {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        let head = match body {
            None => format!(
                "GET {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
                self.path, self.host
            ),
            Some(b) => format!(
                "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                self.path,
                self.host,
                b.len()
            ),
        };
        self.stream.get_mut().write_all(head.as_bytes()).await?;
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        let status: u16 = line.split(' ').nth(1).context("status line")?.parse()?;
        let mut length = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse()?;
            }
        }
        let mut buf = vec![0u8; length];
        self.stream.read_exact(&mut buf).await?;
        Ok(status)
    }
}
