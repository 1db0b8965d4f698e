//! Node initialization benchmark: the CCM binary against the testbed.
//!
//! `cargo bench -p scenarios --bench ccm_nodes [-- --nodes 100] [--services 1000]` prints the
//! time from Node registration to taint removal (median, p90, worst), cloudscale API calls
//! per Node initialized, and the CCM's resident memory at idle; with `--services N`, then N
//! Services of one port created at once (fakecloud's clock at 100×), the time until every
//! ingress and the CCM process's peak resident memory.

use ccm::node::metadata::is_initialized;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use scenarios::testbed::Cluster;
use scenarios::testbed::KubeletConfig;
use scenarios::testbed::{Testbed, TestbedConfig};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `/proc/PID/status` figure in KiB (`VmRSS`: now, `VmHWM`: the peak).
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
}

fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// N Services created at once: the time until every one has its ingress.
async fn burst(tb: &Testbed, n: usize) -> Duration {
    use k8s_openapi::api::core::v1::Service;
    let api: Api<Service> = Api::namespaced(tb.cluster.client(), "default");
    let started = Instant::now();
    for i in 0..n {
        let svc: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("svc-{i}")},
            "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80}]},
        }))
        .expect("service");
        api.create(&Default::default(), &svc).await.expect("create");
    }
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = api.list(&Default::default()).await.expect("list");
        let ready = list
            .items
            .iter()
            .filter(|s| scenarios::testbed::has_ingress(s))
            .count();
        if ready == n {
            return started.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "only {ready} of {n} Services got an ingress"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn api_requests(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("cloudscale_api_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn metrics_text(port: u16) -> String {
    match reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(18258)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = arg(&args, "--nodes", 100);
    let services = arg(&args, "--services", 0);
    let cluster = Cluster::embedded().await.expect("embedded cluster");
    let mut tb = Testbed::start(
        cluster,
        TestbedConfig {
            nodes: 0,
            // Load balancers provisioned in 0.6 s instead of a minute for the burst.
            cloud: fakecloud::Config {
                clock: fakecloud::ClockMode::Scaled { scale: 100.0 },
                ..fakecloud::Config::default()
            },
            kubelet: KubeletConfig {
                heartbeat: Duration::from_secs(5),
                ..KubeletConfig::default()
            },
            ..TestbedConfig::default()
        },
    )
    .await
    .expect("testbed");
    let kubeconfig = std::env::temp_dir().join(format!("ccm-bench-{}.yaml", std::process::id()));
    std::fs::write(&kubeconfig, tb.cluster.ccm_kubeconfig_yaml()).expect("kubeconfig");
    let port = free_port();
    let ccm = Kill(
        Command::new(env!("CARGO_BIN_EXE_ccm-under-test"))
            .args([
                "--kubeconfig",
                &kubeconfig.display().to_string(),
                "--leader-elect=false",
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                &port.to_string(),
                "--api-rate-limit",
                "1000",
                // The burst in minutes, not hours, of wall time (fakecloud runs at 100×, the
                // CCM's own polls in real time): more Services at once, polled faster.
                "--concurrent-service-syncs",
                "10",
                "--load-balancer-poll-interval",
                "500ms",
            ])
            .env("CLOUDSCALE_ACCESS_TOKEN", tb.cloud.token())
            .env("CLOUDSCALE_API_URL", tb.cloud.base_url())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the CCM binary"),
    );
    let pid = ccm.0.id();
    // Wait for the CCM to serve metrics before registering nodes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while metrics_text(port).await.is_empty() {
        assert!(Instant::now() < deadline, "the CCM did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let idle_before = rss_kib(pid);
    let calls_before = api_requests(&metrics_text(port).await);

    let nodes: Api<Node> = Api::all(tb.cluster.client());
    let mut registered: HashMap<String, Instant> = HashMap::new();
    let started = Instant::now();
    for i in 1..=n {
        let name = format!("node-{i}");
        registered.insert(name.clone(), Instant::now());
        tb.add_node(&name).await.expect("register node");
    }
    let mut done: HashMap<String, Duration> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    while done.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} nodes initialized",
            done.len()
        );
        if let Ok(list) = nodes.list(&Default::default()).await {
            for node in list.items.iter().filter(|n| is_initialized(n)) {
                let name = node.metadata.name.clone().unwrap_or_default();
                if let Some(at) = registered.get(&name) {
                    done.entry(name).or_insert_with(|| at.elapsed());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let total = started.elapsed();
    let calls = api_requests(&metrics_text(port).await) - calls_before;
    // Idle: initialization over, nothing to do until the next address refresh.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_after = rss_kib(pid);

    let mut times: Vec<Duration> = done.values().copied().collect();
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "CCM node initialization, {n} nodes (simulated kubelets, embedded API server, fakecloud)"
    );
    println!(
        "registration -> taint removed: median {:.0} ms, p90 {:.0} ms, worst {:.0} ms (all {n} in {:.2} s)",
        pct(0.5).as_secs_f64() * 1000.0,
        pct(0.9).as_secs_f64() * 1000.0,
        pct(1.0).as_secs_f64() * 1000.0,
        total.as_secs_f64()
    );
    println!(
        "cloudscale API calls: {calls} for {n} nodes = {:.2} per node",
        calls as f64 / n as f64
    );
    println!(
        "CCM resident memory: {} KiB idle before, {} KiB idle after {n} nodes",
        idle_before.map_or("?".into(), |k| k.to_string()),
        idle_after.map_or("?".into(), |k| k.to_string())
    );
    if services > 0 {
        let took = burst(&tb, services).await;
        println!(
            "{services} Services created at once on {n} nodes: every ingress after {:.1} s; CCM peak resident memory {} KiB",
            took.as_secs_f64(),
            status_kib(pid, "VmHWM:").map_or("?".into(), |k| k.to_string())
        );
        // The API server, fakecloud and the kubelets run in this process.
        println!(
            "testbed peak resident memory (API server, fakecloud at 100x, kubelets): {} KiB",
            status_kib(std::process::id(), "VmHWM:").map_or("?".into(), |k| k.to_string())
        );
    }
    let _ = std::fs::remove_file(&kubeconfig);
}
