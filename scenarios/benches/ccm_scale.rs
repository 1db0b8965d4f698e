//! The CCM at scale, on the deterministic simulation (fakecloud's default delays, the CCM's
//! production flags, realistic kubelets), in virtual time:
//!
//! ```sh
//! cargo bench -p scenarios --bench ccm_scale -- [--services 1000] [--nodes 100] [--idle-minutes 30] [--storm-only | --burst-only]
//! ```
//!
//! prints, for S Services of one port on N nodes:
//! - **burst**: all S created at once: virtual time until every ingress is set, requests
//!   made, and the time a Node registering meanwhile waits to be initialized; first, median,
//!   p90 and last of the times each Service's ingress was set and each load balancer first
//!   served (fakecloud's data-plane oracle); `--burst-only` stops after it;
//! - **idle**: requests per minute by kind once everything converged;
//! - **node join / leave**: time until every Service has (has lost) the node's member, and
//!   reads and writes per Service;
//! - **429 storm**: S more Services created while fakecloud answers 429 with
//!   `Retry-After: 30` for two minutes: requests per endpoint class during the storm, and
//!   the time until everything converged;
//! - the process's peak resident memory (CCM, fakecloud, API server and kubelets together).
//!
//! Only the simulation's own API is used, so the same file measures an older commit.

use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, PostParams};
use scenarios::sim::Shape;
use scenarios::sim::{self, Burst};
use scenarios::sim::{World, runtime};
use std::collections::BTreeMap;
use std::time::Duration;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Requests of the trace lines `from..` by kind: (kind, count).
fn requests(world: &World, from: usize) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in world.trace.lines().iter().skip(from) {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 6 || !f[2].starts_with("ccm-") {
            continue;
        }
        let path = f[4].split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let kind = match (f[1], f[3], segments.as_slice()) {
            ("kube", m, _) => format!("kube {m}"),
            ("cloud", "GET", ["v1", "servers", _]) => {
                "cloud GET server (lifecycle, addresses)".into()
            }
            ("cloud", "GET", ["v1", "load-balancers", "pools", _, "members"]) => {
                "cloud GET pool members".into()
            }
            (
                "cloud",
                "GET",
                [
                    "v1",
                    "load-balancers",
                    "pools" | "listeners" | "health-monitors",
                ],
            )
            | (
                "cloud",
                "GET",
                [
                    "v1",
                    "load-balancers" | "floating-ips" | "servers" | "subnets",
                ],
            ) => "cloud GET account-wide list".into(),
            ("cloud", "GET", ["v1", "load-balancers", _]) => "cloud GET one load balancer".into(),
            ("cloud", "GET", _) => "cloud GET other".into(),
            ("cloud", m, _) => format!("cloud {m}"),
            _ => continue,
        };
        *out.entry(kind).or_insert(0) += 1;
    }
    out
}

/// Cloud requests of the trace lines `from..` by endpoint class (`servers`,
/// `load-balancers`, ...).
fn by_class(world: &World, from: usize) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in world.trace.lines().iter().skip(from) {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 6 || f[1] != "cloud" || !f[2].starts_with("ccm-") {
            continue;
        }
        let class = f[4]
            .trim_start_matches("/v1/")
            .split(['/', '?'])
            .next()
            .unwrap_or_default();
        *out.entry(class.to_string()).or_insert(0) += 1;
    }
    out
}

fn total(r: &BTreeMap<String, u64>, prefix: &str) -> u64 {
    r.iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, n)| n)
        .sum()
}

fn print_requests(r: &BTreeMap<String, u64>, per: f64, unit: &str) {
    for (k, n) in r {
        println!("    {k}: {:.1}{unit}", *n as f64 / per);
    }
}

fn with_ingress(world: &World, prefix: &str) -> usize {
    world
        .api
        .objects::<Service>("services")
        .iter()
        .filter(|s| {
            s.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .filter(|s| scenarios::testbed::has_ingress(s))
        .count()
}

/// Runs the world in steps of 5 virtual seconds until `done` holds (at most `limit`); the
/// virtual time it took.
async fn until(world: &World, limit: Duration, done: impl Fn(&World) -> bool) -> Option<Duration> {
    let start = tokio::time::Instant::now();
    while start.elapsed() < limit {
        if done(world) {
            return Some(start.elapsed());
        }
        world.run_for(Duration::from_secs(5)).await;
    }
    None
}

async fn create(world: &World, prefix: &str, count: u64) {
    let api: Api<Service> = Api::namespaced(world.kube.clone(), "default");
    for i in 0..count {
        let svc: Service =
            serde_json::from_value(sim::service(&format!("{prefix}{i}"), &Shape::http()))
                .expect("service");
        api.create(&PostParams::default(), &svc)
            .await
            .expect("create");
    }
}

fn initialized(world: &World, node: &str) -> bool {
    world.api.objects::<Node>("nodes").iter().any(|n| {
        n.metadata.name.as_deref() == Some(node)
            && n.spec.as_ref().is_some_and(|s| {
                s.provider_id.is_some()
                    && !s
                        .taints
                        .iter()
                        .flatten()
                        .any(|t| t.key == "node.cloudprovider.kubernetes.io/uninitialized")
            })
    })
}

/// Pools that have (`true`) a member at `address`, and all pools.
fn pools_with(world: &World, address: std::net::IpAddr) -> (usize, usize) {
    world.cloud.read("", |ctx| {
        let with = ctx
            .st
            .pools()
            .keys()
            .filter(|p| {
                ctx.st
                    .members()
                    .values()
                    .any(|m| m.pool == **p && m.address == address)
            })
            .count();
        (with, ctx.st.pools().len())
    })
}

fn node_address(world: &World, node: &str) -> Option<std::net::IpAddr> {
    let server = world.server_of(node)?;
    world.cloud.read("", |ctx| {
        ctx.st
            .servers()
            .get(&server)?
            .interfaces
            .iter()
            .filter(|i| !i.public)
            .flat_map(|i| i.addresses.iter())
            .find(|a| a.version == 4)
            .map(|a| a.address)
    })
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// All Services created at once, a Node registering 5 s in.
async fn burst(world: &mut World, services: u64, nodes: usize) {
    let from = world.trace.len();
    let mut b = Burst::create(world, "svc-", services as usize).await;
    for _ in 0..5 {
        world.run_for(Duration::from_secs(1)).await;
        b.watch(world);
    }
    let joiner = format!("node-{}", nodes + 1);
    world.add_node(&joiner).await.expect("node");
    let init = until(world, Duration::from_secs(600), |w| initialized(w, &joiner)).await;
    let published = b
        .run_until_published(world, Duration::from_secs(6 * 3600))
        .await;
    let r = requests(world, from);
    println!(
        "burst: every ingress after {} virtual s; {} cloud reads, {} cloud writes, {} Kubernetes requests until then; a Node registering 5 s in initialized after {} s",
        if published {
            b.started.elapsed().as_secs().to_string()
        } else {
            "(not within 6 h)".into()
        },
        total(&r, "cloud GET"),
        total(&r, "cloud") - total(&r, "cloud GET"),
        total(&r, "kube"),
        init.map_or("(not within 600 s)".into(), |d| d.as_secs().to_string()),
    );
    print_requests(&r, services as f64, " per Service");
    let members = services as usize * (nodes + 1);
    let complete = until(world, Duration::from_secs(6 * 3600), |w| {
        sim::complete(w, members)
    })
    .await
    .map(|_| b.started.elapsed());
    println!(
        "burst: every member in place and applied after {} virtual s",
        complete.map_or("(not within 6 h more)".into(), |d| d.as_secs().to_string())
    );
    println!(
        "burst: ingress set after {}",
        sim::spread(&b.ingress_times())
    );
    let served: Vec<f64> = b.first_served(world).into_values().collect();
    println!(
        "burst: first serving after {} ({} of {} Services served)",
        sim::spread(&served),
        served.len(),
        services
    );
    if let Ok(path) = std::env::var("TRACE_OUT") {
        let _ = std::fs::write(path, world.trace.lines().join("\n"));
    }
}

async fn idle(world: &World, minutes: u64) {
    let from = world.trace.len();
    world.run_for(Duration::from_secs(minutes * 60)).await;
    let r = requests(world, from);
    println!("idle, {minutes} virtual minutes, per minute:");
    print_requests(&r, minutes as f64, "/min");
}

/// Reads and writes per Service since trace line `from`, as a line.
fn per_service(world: &World, from: usize, services: u64) -> String {
    let r = requests(world, from);
    format!(
        "per Service {:.2} reads, {:.2} writes",
        total(&r, "cloud GET") as f64 / services as f64,
        (total(&r, "cloud") - total(&r, "cloud GET")) as f64 / services as f64,
    )
}

/// A node joins, then its server is deleted.
async fn node_join_and_leave(world: &mut World, services: u64, nodes: usize) {
    let extra = format!("node-{}", nodes + 2);
    let from = world.trace.len();
    world.add_node(&extra).await.expect("node");
    let address = node_address(world, &extra).expect("address");
    let join = until(world, Duration::from_secs(3 * 3600), |w| {
        let (with, all) = pools_with(w, address);
        with == all
    })
    .await;
    println!(
        "node join: every Service has its member after {} virtual s; {}",
        join.map_or("(not within 3 h)".into(), |d| d.as_secs().to_string()),
        per_service(world, from, services),
    );
    print_requests(&requests(world, from), services as f64, " per Service");
    world.run_for(Duration::from_secs(120)).await;

    let from = world.trace.len();
    let server = world.server_of(&extra).expect("server");
    world
        .outside("DELETE", &format!("/v1/servers/{server}"))
        .await
        .expect("delete server");
    let leave = until(world, Duration::from_secs(3 * 3600), |w| {
        pools_with(w, address).0 == 0
    })
    .await;
    println!(
        "node leave: every member gone after {} virtual s; {}",
        leave.map_or("(not within 3 h)".into(), |d| d.as_secs().to_string()),
        per_service(world, from, services),
    );
    world.run_for(Duration::from_secs(120)).await;
}

/// A 429 storm (`Retry-After: 30` for two minutes) 30 s into a second burst.
async fn storm(world: &World, services: u64) {
    let storm_from = world.trace.len();
    create(world, "more-", services).await;
    world.run_for(Duration::from_secs(30)).await;
    let rule = fakecloud::FaultRule::new(
        None,
        "/v1/**",
        fakecloud::FaultEffect::Status {
            status: 429,
            body: None,
            retry_after: Some(30),
        },
    );
    let storm_start = world.trace.len();
    world.cloud.faults().add(rule).expect("fault");
    world.run_for(Duration::from_secs(120)).await;
    world.cloud.faults().clear();
    let during = by_class(world, storm_start);
    let took = until(world, Duration::from_secs(6 * 3600), |w| {
        with_ingress(w, "more-") == services as usize
    })
    .await;
    println!(
        "429 storm (Retry-After 30, 2 minutes, 30 s into a burst): every ingress {} virtual s after the storm began; {} cloud requests in that burst; during the storm, by endpoint class:",
        took.map_or("(not within 6 h)".into(), |d| (d.as_secs() + 120)
            .to_string()),
        total(&requests(world, storm_from), "cloud"),
    );
    print_requests(&during, 1.0, "");
}

fn main() {
    let services = arg("--services", 1000);
    let nodes = arg("--nodes", 100) as usize;
    let idle_minutes = arg("--idle-minutes", 30);
    let storm_only = std::env::args().any(|a| a == "--storm-only");
    let burst_only = std::env::args().any(|a| a == "--burst-only");
    let rt = runtime().expect("runtime");
    let wall = std::time::Instant::now();
    rt.block_on(async {
        let mut world = sim::production_world(1, nodes, &[]).await.expect("world");
        println!("{services} Services (1 port) on {nodes} nodes");

        // `--storm-only`: the 429 storm in a first burst, without the phases before it (at
        // 1,000 Services the second burst on top of the first takes long in wall time).
        if !storm_only {
            burst(&mut world, services, nodes).await;
            if burst_only {
                return;
            }
            // Quiet down: members of the joined node and the last writes applied.
            world.run_for(Duration::from_secs(600)).await;
            idle(&world, idle_minutes).await;
            node_join_and_leave(&mut world, services, nodes).await;
        }
        storm(&world, services).await;
    });
    println!(
        "peak resident memory of the whole simulation: {} MiB; wall time {:.0} s",
        peak_rss_kib() / 1024,
        wall.elapsed().as_secs_f64()
    );
}
