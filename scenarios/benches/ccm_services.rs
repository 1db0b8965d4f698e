//! Service controller benchmark on the testbed (fakecloud with zero delays, CCM in-process).
//!
//! `cargo bench -p scenarios --bench ccm_services [-- --services 200 --nodes 50]` prints:
//! - API reads and writes per reconcile for one Service with 1 port on 3 nodes (create and
//!   steady state);
//! - time from Service creation to status ingress;
//! - for N Services created at once on M nodes, first, median, p90 and last ingress;
//! - for N Services on M nodes, the API requests a node join costs.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use scenarios::testbed::KubeletConfig;
use scenarios::testbed::TestbedConfig;
use scenarios::testbed::{CcmBed as Bed, CcmBedConfig};
use serde_json::json;
use std::time::{Duration, Instant};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn bed(nodes: usize) -> Bed {
    Bed::start(CcmBedConfig {
        testbed: TestbedConfig {
            nodes,
            cloud: fakecloud::Config {
                clock: fakecloud::ClockMode::Scaled { scale: 1.0 },
                timing: fakecloud::Timing {
                    server_create_s: 0.0,
                    server_action_s: 0.0,
                    lb_provision_s: 0.0,
                    lb_reconfigure_s: 0.0,
                    floating_ip_propagation_s: 0.0,
                },
                ..fakecloud::Config::for_tests()
            },
            kubelet: KubeletConfig {
                heartbeat: Duration::from_secs(10),
                ..KubeletConfig::default()
            },
            proxy_interval: Duration::from_secs(5),
            ..TestbedConfig::default()
        },
        ccm_flags: Some(
            [
                "--leader-elect=false",
                "--api-rate-limit",
                "100000",
                "--load-balancer-poll-interval",
                "20ms",
                "--service-resync-period",
                "1h",
                "--concurrent-service-syncs",
                "4",
            ]
            .map(String::from)
            .to_vec(),
        ),
        api_timeout_s: 30,
    })
    .await
}

fn service_reconciles(bed: &Bed) -> u64 {
    bed.ccm.as_ref().map_or(0, |c| c.service_reconciles())
}

fn service(name: &str, port: u16) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": port}]},
    }))
    .expect("service")
}

/// Waits until every Service of `names` has an ingress; how long that took, and the
/// seconds (from `since`) at which each was first seen with one (polled every 10 ms).
async fn wait_ingress_each(
    api: &Api<Service>,
    names: &[String],
    limit: Duration,
    since: Instant,
) -> (Duration, Vec<f64>) {
    let started = Instant::now();
    let mut seen: std::collections::BTreeMap<String, f64> = Default::default();
    loop {
        let list = api.list(&Default::default()).await.expect("list");
        for s in &list.items {
            let name = s.metadata.name.clone().unwrap_or_default();
            if names.contains(&name) && scenarios::testbed::has_ingress(s) {
                seen.entry(name)
                    .or_insert_with(|| since.elapsed().as_secs_f64());
            }
        }
        let ready = seen.len();
        if ready == names.len() {
            return (started.elapsed(), seen.into_values().collect());
        }
        assert!(
            started.elapsed() < limit,
            "only {ready} of {} Services got an ingress",
            names.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_ingress(api: &Api<Service>, names: &[String], limit: Duration) -> Duration {
    wait_ingress_each(api, names, limit, Instant::now()).await.0
}

async fn settle(bed: &Bed) {
    // Quiet: no request for a while means the controller is idle.
    let mut last = bed.reads_and_writes().await;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = bed.reads_and_writes().await;
        if now == last {
            return;
        }
        last = now;
    }
}

#[tokio::main]
async fn main() {
    let services = arg("--services", 200);
    let nodes = arg("--nodes", 50);

    // 1 port, 3 nodes.
    {
        let bed = bed(3).await;
        let api: Api<Service> = Api::namespaced(bed.tb.cluster.client(), "default");
        tokio::time::sleep(Duration::from_secs(1)).await;
        settle(&bed).await;
        bed.clear_request_log().await;
        let before = service_reconciles(&bed);
        api.create(&PostParams::default(), &service("one", 80))
            .await
            .expect("create");
        let took = wait_ingress(&api, &["one".to_string()], Duration::from_secs(60)).await;
        settle(&bed).await;
        let (reads, writes) = bed.reads_and_writes().await;
        let reconciles = service_reconciles(&bed) - before;
        println!("1 Service, 1 port, 3 nodes, zero provisioning delay:");
        println!(
            "  creation -> ingress: {:.0} ms",
            took.as_secs_f64() * 1000.0
        );
        println!(
            "  creation: {reads} reads, {writes} writes over {reconciles} reconciles (first creates, the rest confirm)"
        );
        // Steady state: one more reconcile of the unchanged Service.
        bed.clear_request_log().await;
        let before = service_reconciles(&bed);
        let patch = json!({"metadata": {"labels": {"touch": "1"}}});
        api.patch(
            "one",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("touch");
        while service_reconciles(&bed) == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        settle(&bed).await;
        let (reads, writes) = bed.reads_and_writes().await;
        let n = (service_reconciles(&bed) - before).max(1);
        println!(
            "  converged reconcile: {:.1} reads, {:.1} writes per reconcile (reference: N + 2P + 12 = 17 reads)",
            reads as f64 / n as f64,
            writes as f64 / n as f64
        );
    }

    // N Services on M nodes, then one node joins.
    {
        let mut bed = bed(nodes).await;
        let api: Api<Service> = Api::namespaced(bed.tb.cluster.client(), "default");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let names: Vec<String> = (0..services).map(|i| format!("svc-{i}")).collect();
        let started = Instant::now();
        for (i, n) in names.iter().enumerate() {
            api.create(&PostParams::default(), &service(n, 80 + (i % 100) as u16))
                .await
                .expect("create");
        }
        let (took, each) =
            wait_ingress_each(&api, &names, Duration::from_secs(1800), started).await;
        println!(
            "{services} Services x {nodes} nodes: all ingresses after {:.1} s ({:.1} s since the first create)",
            took.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        let [first, median, p90, last] = scenarios::sim::quantiles(&each).unwrap_or_default();
        println!(
            "  ingress since the first create: first {first:.1} s, median {median:.1} s, p90 {p90:.1} s, last {last:.1} s"
        );
        settle(&bed).await;
        bed.clear_request_log().await;
        let before = service_reconciles(&bed);
        let joined = Instant::now();
        bed.tb
            .add_node(&format!("node-{}", nodes + 1))
            .await
            .expect("join");
        // Every Service gets one more member per pool.
        let want = nodes + 1;
        loop {
            let log = bed.request_log().await;
            let member_posts = log
                .iter()
                .filter(|r| {
                    r["method"] == "POST"
                        && r["path"].as_str().unwrap_or_default().ends_with("/members")
                })
                .count();
            if member_posts >= services {
                break;
            }
            assert!(
                joined.elapsed() < Duration::from_secs(1800),
                "only {member_posts} members added"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        settle(&bed).await;
        let (reads, writes) = bed.reads_and_writes().await;
        let reconciles = service_reconciles(&bed) - before;
        println!(
            "node join ({want} nodes): {:.1} s until every Service has its new member; {reads} reads and {writes} writes in {reconciles} reconciles = {:.1} reads and {:.2} writes per Service (reference: N + 2P + 12 = {} reads per Service)",
            joined.elapsed().as_secs_f64(),
            reads as f64 / services as f64,
            writes as f64 / services as f64,
            want + 2 + 12
        );
    }
}
