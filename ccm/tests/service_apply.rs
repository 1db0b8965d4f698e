//! The apply step (fetch + execute) against an in-process fakecloud with a scaled clock
//! (100 virtual seconds per real second), and the downtime each change costs as fakecloud's
//! availability oracle measures it.

use ccm::cloudscale::*;
use ccm::secret::{Token, TokenSource};
use ccm::service::apply::{self, ApplyError, ApplyOptions, Snapshot};
use ccm::service::fixtures::Sample;
use ccm::service::model::{self, ActualLb, DesiredLb, DesiredPool, Monitor};
use ccm::service::plan::{Action, Impact, plan};
use fakecloud::{ClockMode, Config, FakeCloud, FaultEffect, FaultRule};
use scenarios::ccm_bed::fakecloud_admin as admin;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

const TOKEN: &str = "test-token";

async fn start() -> FakeCloud {
    let fc = FakeCloud::start(Config {
        clock: ClockMode::Scaled { scale: 100.0 },
        ..Config::for_tests()
    })
    .await
    .expect("start fakecloud");
    admin(
        &fc,
        reqwest::Method::POST,
        "/seed",
        Some(json!({
            "networks": [{"name": "k8s-private", "zone": "rma1",
                          "subnets": [{"cidr": "10.100.0.0/24"}]}],
            "servers": [
                {"name": "worker-1", "zone": "rma1",
                 "private": [{"network": "k8s-private", "address": "10.100.0.11"}]},
                {"name": "worker-2", "zone": "rma1",
                 "private": [{"network": "k8s-private", "address": "10.100.0.12"}]},
            ],
        })),
    )
    .await;
    fc
}

fn client(fc: &FakeCloud) -> Client {
    let mut c = ClientConfig::new(
        fc.base_url(),
        Arc::new(TokenSource::Static(Token::new(TOKEN).expect("token"))),
    );
    c.timeout = Duration::from_secs(5);
    c.retry = RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(1),
        settle_before_lookup: Duration::from_millis(10),
    };
    c.rate_limit = None;
    Client::new(c).expect("client")
}

fn opts() -> ApplyOptions {
    ApplyOptions {
        poll: Duration::from_millis(20),
        lb_timeout: Duration::from_secs(10),
        members_timeout: Duration::from_secs(10),
        wait_between_writes: false,
    }
}

fn tags() -> Tags {
    BTreeMap::from([
        ("ccm/cluster".to_string(), "test-cluster".to_string()),
        ("ccm/service-uid".to_string(), "uid-1234".to_string()),
    ])
}

async fn subnet(c: &Client) -> Uuid {
    let subnets = c.list_subnets(&Filter::all()).await.expect("subnets");
    let s = subnets
        .iter()
        .find(|s| s.cidr == "10.100.0.0/24")
        .expect("seeded subnet");
    Uuid::parse_str(&s.uuid).expect("uuid")
}

fn sample(subnet: Uuid) -> Sample {
    Sample {
        subnet,
        nodes: ["10.100.0.11", "10.100.0.12"]
            .iter()
            .map(|a| a.parse().expect("ip"))
            .collect(),
    }
}

fn pool(subnet: Uuid, name: &str, port: u16, node_port: u16) -> DesiredPool {
    sample(subnet).pool(name, port, node_port)
}

fn desired(subnet: Uuid) -> DesiredLb {
    sample(subnet).desired()
}

/// Fetches, plans, executes; returns the plan that ran and the load balancer.
async fn apply_once(c: &Client, d: &DesiredLb, uuid: Option<Uuid>) -> (Vec<Action>, Uuid) {
    apply_with(c, d, uuid, &opts()).await
}

async fn apply_with(
    c: &Client,
    d: &DesiredLb,
    uuid: Option<Uuid>,
    opts: &ApplyOptions,
) -> (Vec<Action>, Uuid) {
    let found = apply::fetch(c, &d.name, uuid).await.expect("fetch");
    let p = plan(d, found.as_ref().map(|(_, a)| a));
    let out = apply::execute(c, d, found.as_ref().map(|(lb, _)| lb), &p, opts, &tags())
        .await
        .unwrap_or_else(|e| panic!("execute failed: {e}\nplan:\n{}", p.describe()));
    (p.steps.into_iter().map(|s| s.action).collect(), out.lb_uuid)
}

/// Asserts that fetching and planning again finds nothing to do; returns the actual state.
async fn assert_converged(c: &Client, d: &DesiredLb, uuid: Uuid) -> ActualLb {
    let (lb, actual) = apply::fetch(c, &d.name, Some(uuid))
        .await
        .expect("fetch")
        .expect("the load balancer exists");
    assert_eq!(lb.uuid, uuid.to_string());
    let p = plan(d, Some(&actual));
    assert!(p.is_converged(), "not converged:\n{}", p.describe());
    actual
}

/// Waits (bounded) until the load balancer has applied everything queued.
async fn settle(c: &Client, uuid: Uuid) {
    apply::wait_not_changing(c, uuid, Duration::from_millis(20), Duration::from_secs(10))
        .await
        .expect("load balancer settles");
}

fn virtual_now(fc: &FakeCloud) -> String {
    fakecloud::clock::format_time(fc.app().now())
}

/// Down intervals `(from, to)` in virtual seconds since `from`, per (entry kind, port), from
/// the oracle.
async fn down_intervals(fc: &FakeCloud, lb: Uuid, from: &str, port: u16) -> Vec<(f64, f64)> {
    let av = admin(
        fc,
        reqwest::Method::GET,
        &format!("/load-balancers/{lb}/availability?from={from}"),
        None,
    )
    .await;
    let t0 = fakecloud::clock::parse_time(from).expect("time");
    let secs = |s: &Value| {
        let t = fakecloud::clock::parse_time(s.as_str().expect("time")).expect("time");
        (t - t0).num_microseconds().expect("micros") as f64 / 1e6
    };
    let mut out = Vec::new();
    for e in av["entries"].as_array().expect("entries") {
        if e["kind"] == "vip" && e["port"] == port {
            for d in e["down"].as_array().expect("down") {
                out.push((secs(&d["from"]), secs(&d["to"])));
            }
        }
    }
    out
}

/// The longest downtime of any VIP on `port` since `from` (virtual seconds).
async fn downtime(fc: &FakeCloud, lb: Uuid, from: &str, port: u16) -> f64 {
    downtime_for(fc, lb, from, port, "203.0.113.10").await
}

/// [`downtime`] for new connections from `client`.
async fn downtime_for(fc: &FakeCloud, lb: Uuid, from: &str, port: u16, client: &str) -> f64 {
    let av = admin(
        fc,
        reqwest::Method::GET,
        &format!("/load-balancers/{lb}/availability?from={from}&client={client}"),
        None,
    )
    .await;
    av["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["kind"] == "vip" && e["port"] == port)
        .map(|e| e["downtime_s"].as_f64().expect("downtime"))
        .fold(0.0, f64::max)
}

/// A converged load balancer, settled with every member up.
async fn converged_lb(c: &Client, d: &DesiredLb) -> Uuid {
    let (_, uuid) = apply_once(c, d, None).await;
    settle(c, uuid).await;
    wait_all_members_up(c, uuid).await;
    uuid
}

/// Polls (bounded) until every member of the load balancer is up: the oracle's baseline is
/// then "every port serves".
async fn wait_all_members_up(c: &Client, lb: Uuid) {
    for _ in 0..500 {
        let members = all_members(c, lb).await;
        if members
            .iter()
            .all(|m| m.monitor_status == Some(MonitorStatus::Up))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("members of {lb} not up in time");
}

async fn all_members(c: &Client, lb: Uuid) -> Vec<PoolMember> {
    let mut out = Vec::new();
    for p in c.list_pools(&Filter::all()).await.expect("pools") {
        if p.load_balancer.uuid == lb.to_string() {
            out.extend(
                c.list_pool_members(&p.uuid, &Filter::all())
                    .await
                    .expect("members"),
            );
        }
    }
    out
}

fn kinds(actions: &[Action]) -> Vec<&'static str> {
    actions.iter().map(Action::kind).collect()
}

#[tokio::test]
async fn creates_everything_from_nothing_tagged_with_a_floating_ip() {
    let fc = start().await;
    let c = client(&fc);
    let sub = subnet(&c).await;
    let fip = c
        .create_floating_ip(
            &CreateFloatingIp {
                ip_version: 4,
                region: Some("rma".into()),
                ..CreateFloatingIp::default()
            },
            Idempotency::RequestId,
        )
        .await
        .expect("floating IP");
    let mut d = desired(sub);
    d.floating_ips = vec![fip.network.clone()];

    let p = plan(&d, None);
    let counted = c.with_own_counters();
    let out = apply::execute(&counted, &d, None, &p, &opts(), &tags())
        .await
        .expect("execute");
    // 1 LB + 2 × (pool + 2 members + monitor + listener) + 1 floating IP PATCH.
    assert_eq!(out.writes, 12, "{out:?}");
    assert!(out.reads >= 1, "status polls are counted: {out:?}");

    // fetch by uuid: 1 GET + 1 name list + 4 lists + 1 member list per pool (P + 5 + U).
    let before = counted.counters();
    let actual = assert_converged(&counted, &d, out.lb_uuid).await;
    assert_eq!(counted.counters().reads - before.reads, 1 + 1 + 4 + 2);
    assert_eq!(actual.floating_ips, vec![fip.network.clone()]);
    assert_eq!(actual.pools.len(), 2);
    assert!(!actual.vips.is_empty(), "public VIPs: {:?}", actual.vips);

    // The fake's state, read back as lists.
    let lb = out.lb_uuid.to_string();
    let lbs = c.list_load_balancers(&Filter::all()).await.expect("lbs");
    assert_eq!(lbs.len(), 1);
    assert_eq!(lbs[0].tags, tags());
    let pools = c.list_pools(&Filter::all()).await.expect("pools");
    assert_eq!(pools.len(), 2);
    let listeners = c.list_listeners(&Filter::all()).await.expect("listeners");
    assert_eq!(listeners.len(), 2);
    let monitors = c.list_health_monitors(&Filter::all()).await.expect("hm");
    assert_eq!(monitors.len(), 2);
    let mut member_count = 0;
    for p in &pools {
        assert_eq!(p.load_balancer.uuid, lb);
        assert_eq!(p.tags, tags(), "pool {}", p.name);
        for m in c
            .list_pool_members(&p.uuid, &Filter::all())
            .await
            .expect("members")
        {
            assert_eq!(m.tags, tags(), "member {}", m.name);
            assert_eq!(m.subnet.uuid, sub.to_string());
            member_count += 1;
        }
    }
    assert_eq!(member_count, 4);
    for l in &listeners {
        assert_eq!(l.tags, tags(), "listener {}", l.name);
    }
    for m in &monitors {
        assert_eq!(m.tags, tags(), "monitor {}", m.uuid);
    }
    let fip_now = c
        .get_floating_ip(&fip.network)
        .await
        .expect("get fip")
        .expect("fip exists");
    assert_eq!(fip_now.load_balancer.map(|l| l.uuid), Some(lb.clone()));

    // Once applied and healthy, both ports serve on the VIPs and on the floating IP.
    settle(&c, out.lb_uuid).await;
    wait_all_members_up(&c, out.lb_uuid).await;
    let av = admin(
        &fc,
        reqwest::Method::GET,
        &format!("/load-balancers/{}/availability", out.lb_uuid),
        None,
    )
    .await;
    let to = av["to"].as_str().expect("to").to_string();
    let entries = av["entries"].as_array().expect("entries");
    assert!(entries.iter().any(|e| e["kind"] == "floating_ip"), "{av:#}");
    for port in [80, 443] {
        for kind in ["vip", "floating_ip"] {
            let e = entries
                .iter()
                .find(|e| e["kind"] == kind && e["port"] == port)
                .unwrap_or_else(|| panic!("no {kind} entry on port {port}: {av:#}"));
            let serving = e["down"]
                .as_array()
                .expect("down")
                .last()
                .is_none_or(|d| d["to"].as_str() != Some(to.as_str()));
            assert!(serving, "{kind} port {port} does not serve now: {e:#}");
        }
    }
    fc.shutdown().await;
}

#[tokio::test]
async fn a_renumbered_port_patches_the_listener_in_place() {
    let fc = start().await;
    let c = client(&fc);
    let d = desired(subnet(&c).await);
    let lb = converged_lb(&c, &d).await;
    let before = assert_converged(&c, &d, lb).await;
    let t0 = virtual_now(&fc);

    let mut after = d.clone();
    after.pools[0].listener.port = 8080;
    after.pools[0].listener.name = "tcp/8080".into();
    let (ran, _) = apply_once(&c, &after, Some(lb)).await;
    assert_eq!(kinds(&ran), ["update-listener"]);
    let actual = assert_converged(&c, &after, lb).await;
    assert_eq!(
        actual.pools[0].listeners[0].uuid, before.pools[0].listeners[0].uuid,
        "same listener, PATCHed"
    );
    assert_eq!(actual.pools[0].listeners[0].listener.port, 8080);

    settle(&c, lb).await;
    // The switch is atomic: at no moment is the service reachable on neither port.
    let old = down_intervals(&fc, lb, &t0, 80).await;
    let new = down_intervals(&fc, lb, &t0, 8080).await;
    let overlap: f64 = old
        .iter()
        .flat_map(|a| {
            new.iter()
                .map(move |b| (a.1.min(b.1) - a.0.max(b.0)).max(0.0))
        })
        .sum();
    eprintln!("renumber: port 80 down {old:?}, port 8080 down {new:?}, neither: {overlap} s");
    assert_eq!(overlap, 0.0);
    assert_eq!(downtime(&fc, lb, &t0, 443).await, 0.0);
    fc.shutdown().await;
}

#[tokio::test]
async fn an_algorithm_change_costs_at_most_one_listener_recreation() {
    let down = algorithm_change(&opts()).await;
    // Exactly one queued reconfiguration (10 virtual s) without a listener when the two
    // requests follow each other within 0.1 real s; ≤ 15 s is the promise.
    assert!((10.0..=15.0).contains(&down), "{down}");
}

#[tokio::test]
async fn an_algorithm_change_waiting_between_writes_still_costs_one_listener_recreation() {
    let waiting = ApplyOptions {
        wait_between_writes: true,
        ..opts()
    };
    let down = algorithm_change(&waiting).await;
    assert!((10.0..=15.0).contains(&down), "{down}");
}

/// Changes the first port's algorithm and returns the downtime on that port.
async fn algorithm_change(opts: &ApplyOptions) -> f64 {
    let fc = start().await;
    let c = client(&fc);
    let d = desired(subnet(&c).await);
    let lb = converged_lb(&c, &d).await;
    let before = assert_converged(&c, &d, lb).await;
    let t0 = virtual_now(&fc);

    let mut after = d.clone();
    after.pools[0].algorithm = "least_connections".into();
    let (ran, _) = apply_with(&c, &after, Some(lb), opts).await;
    assert_eq!(
        kinds(&ran),
        [
            "create-pool",
            "create-member",
            "create-member",
            "create-monitor",
            "wait",
            "delete-listener",
            "create-listener",
            "delete-pool"
        ]
    );
    let actual = assert_converged(&c, &after, lb).await;
    let old_pool = before.pools[0].uuid;
    assert!(
        actual.pools.iter().all(|p| p.uuid != old_pool),
        "old pool gone"
    );
    let new = actual
        .pools
        .iter()
        .find(|p| p.name == "tcp/http")
        .expect("new pool");
    assert_eq!(new.algorithm, "least_connections");
    assert_ne!(new.listeners[0].uuid, before.pools[0].listeners[0].uuid);
    assert!(
        c.get_pool(&old_pool.to_string())
            .await
            .expect("get")
            .is_none()
    );

    settle(&c, lb).await;
    let down = downtime(&fc, lb, &t0, 80).await;
    eprintln!(
        "algorithm change (wait between writes: {}): port 80 down {down} virtual s ({:?})",
        opts.wait_between_writes,
        down_intervals(&fc, lb, &t0, 80).await
    );
    assert!(down <= 15.0, "at most one listener recreation: {down} s");
    assert!(down < 60.0, "better than the reference's pool recreation");
    assert_eq!(
        downtime(&fc, lb, &t0, 443).await,
        0.0,
        "other port untouched"
    );
    fc.shutdown().await;
    down
}

#[tokio::test]
async fn a_node_port_change_replaces_members_make_before_break() {
    let fc = start().await;
    let c = client(&fc);
    let sub = subnet(&c).await;
    let d = desired(sub);
    let lb = converged_lb(&c, &d).await;
    let t0 = virtual_now(&fc);

    let mut after = d.clone();
    after.pools[1] = pool(sub, "tcp/https", 443, 31443);
    let (ran, _) = apply_once(&c, &after, Some(lb)).await;
    assert_eq!(
        kinds(&ran),
        [
            "create-member",
            "create-member",
            "wait",
            "delete-member",
            "delete-member"
        ]
    );
    let actual = assert_converged(&c, &after, lb).await;
    assert!(
        actual.pools[1]
            .members
            .iter()
            .all(|m| m.member.protocol_port == 31443)
    );
    settle(&c, lb).await;
    let down = downtime(&fc, lb, &t0, 443).await;
    eprintln!("node port change: port 443 down {down} virtual s");
    assert_eq!(down, 0.0);
    assert_eq!(downtime(&fc, lb, &t0, 80).await, 0.0);
    fc.shutdown().await;
}

#[tokio::test]
async fn fetch_finds_by_name_and_uuid_and_never_guesses() {
    let fc = start().await;
    let c = client(&fc);
    let d = desired(subnet(&c).await);
    assert!(
        apply::fetch(&c, &d.name, None)
            .await
            .expect("fetch")
            .is_none()
    );
    assert!(
        apply::fetch(&c, &d.name, Some(Uuid::new_v4()))
            .await
            .expect("fetch")
            .is_none(),
        "unknown uuid (404) and no name match: none"
    );
    let lb = converged_lb(&c, &d).await;

    let (by_name, _) = apply::fetch(&c, &d.name, None)
        .await
        .expect("fetch")
        .expect("by name");
    assert_eq!(by_name.uuid, lb.to_string());
    let (by_uuid, actual) = apply::fetch(&c, "renamed-meanwhile", Some(lb))
        .await
        .expect("fetch")
        .expect("by uuid");
    assert_eq!(by_uuid.uuid, lb.to_string());
    assert_eq!(actual.name, d.name);

    // The shared snapshot gives the same actual state.
    let snap = Snapshot::fetch(&c).await.expect("snapshot");
    let (_, from_snap) = apply::fetch_in(&c, &snap, &d.name, Some(lb))
        .await
        .expect("fetch_in")
        .expect("found");
    assert_eq!(from_snap, actual);

    // A second load balancer with the same name: an error naming both.
    let other = c
        .create_load_balancer(
            &CreateLoadBalancer {
                name: d.name.clone(),
                flavor: "lb-standard".into(),
                zone: Some("rma1".into()),
                ..CreateLoadBalancer::default()
            },
            Idempotency::Never,
        )
        .await
        .expect("second lb");
    for uuid in [None, Some(lb)] {
        let err = apply::fetch(&c, &d.name, uuid)
            .await
            .expect_err("ambiguous");
        assert!(matches!(err, ApplyError::Ambiguous { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&lb.to_string()) && msg.contains(&other.uuid),
            "{msg}"
        );
        let err = snap_find(&c, &d.name, uuid).await;
        assert!(matches!(err, ApplyError::Ambiguous { .. }), "{err}");
    }
    // The uuid points at one, the name matches the other.
    c.update_load_balancer(
        &other.uuid,
        &UpdateLoadBalancer {
            name: Some("someone-else".into()),
            tags: None,
        },
    )
    .await
    .expect("rename");
    let err = apply::fetch(&c, "someone-else", Some(lb))
        .await
        .expect_err("ambiguous");
    assert!(matches!(err, ApplyError::Ambiguous { .. }), "{err}");
    assert!(apply::fetch(&c, &d.name, Some(lb)).await.is_ok());
    c.delete_load_balancer(&other.uuid).await.expect("delete");

    // An API failure is an error, never "absent".
    fc.faults()
        .add(FaultRule::new(
            Some("GET"),
            "/v1/load-balancers",
            FaultEffect::status(500),
        ))
        .expect("fault");
    let err = apply::fetch(&c, &d.name, None).await.expect_err("500");
    assert_eq!(err.status(), Some(500), "{err}");
    let err = apply::fetch(&c, &d.name, Some(lb)).await.expect_err("500");
    assert_eq!(err.status(), Some(500), "{err}");
    fc.faults().clear();
    fc.faults()
        .add(FaultRule::new(
            Some("GET"),
            "/v1/load-balancers/*",
            FaultEffect::status(500),
        ))
        .expect("fault");
    let err = apply::fetch(&c, "no-such-name", Some(lb))
        .await
        .expect_err("500 on the uuid GET");
    assert_eq!(err.status(), Some(500), "{err}");
    fc.faults().clear();
    fc.faults()
        .add(FaultRule::new(
            Some("GET"),
            "/v1/load-balancers/pools/*/members",
            FaultEffect::status(500),
        ))
        .expect("fault");
    let err = apply::fetch(&c, &d.name, Some(lb))
        .await
        .expect_err("500 on members");
    assert_eq!(err.status(), Some(500), "{err}");
    fc.faults().clear();
    fc.shutdown().await;
}

async fn snap_find(c: &Client, name: &str, uuid: Option<Uuid>) -> ApplyError {
    let snap = Snapshot::fetch(c).await.expect("snapshot");
    snap.find(name, uuid).map(|_| ()).expect_err("ambiguous")
}

#[tokio::test]
async fn execute_stops_at_the_first_failure_and_the_next_pass_converges() {
    let fc = start().await;
    let c = client(&fc);
    let d = desired(subnet(&c).await);
    fc.faults()
        .add(FaultRule::new(
            Some("POST"),
            "/v1/load-balancers/listeners",
            FaultEffect::status(500),
        ))
        .expect("fault");
    let p = plan(&d, None);
    let err = apply::execute(&c, &d, None, &p, &opts(), &tags())
        .await
        .expect_err("listener POST fails");
    assert_eq!(err.status(), Some(500), "{err}");
    assert!(err.to_string().contains("create listener tcp/80"), "{err}");
    // Nothing after the failing step ran: the second port's pool does not exist.
    let pools = c.list_pools(&Filter::all()).await.expect("pools");
    assert_eq!(
        pools.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["tcp/http"]
    );
    assert!(
        c.list_listeners(&Filter::all())
            .await
            .expect("listeners")
            .is_empty()
    );

    fc.faults().clear();
    let (ran, lb) = apply_once(&c, &d, None).await;
    assert_eq!(
        kinds(&ran),
        [
            "create-listener",
            "create-pool",
            "create-member",
            "create-member",
            "create-monitor",
            "create-listener"
        ],
        "the second pass does only what is missing"
    );
    assert_converged(&c, &d, lb).await;
    assert_eq!(
        c.list_load_balancers(&Filter::all())
            .await
            .expect("lbs")
            .len(),
        1
    );
    fc.shutdown().await;
}

#[tokio::test]
async fn waits_time_out_with_the_pool_and_members_named() {
    let fc = start().await;
    let c = client(&fc);
    let d = desired(subnet(&c).await);
    let lb = converged_lb(&c, &d).await;
    // New members whose backend never answers stay down.
    admin(
        &fc,
        reqwest::Method::POST,
        "/backends",
        Some(json!({"address": "10.100.0.11", "port": 31443, "tcp": false})),
    )
    .await;
    let mut after = d.clone();
    let sub = after.pools[1].members[0].subnet;
    after.pools[1] = pool(sub, "tcp/https", 443, 31443);
    let (_, actual) = apply::fetch(&c, &d.name, Some(lb))
        .await
        .expect("fetch")
        .expect("lb");
    let p = plan(&after, Some(&actual));
    let lb_obj = c
        .get_load_balancer(&lb.to_string())
        .await
        .expect("get")
        .expect("lb");
    let short = ApplyOptions {
        members_timeout: Duration::from_millis(300),
        ..opts()
    };
    let err = apply::execute(&c, &after, Some(&lb_obj), &p, &short, &tags())
        .await
        .expect_err("timeout");
    let msg = err.to_string();
    assert!(matches!(err, ApplyError::Timeout { .. }), "{msg}");
    assert!(
        msg.contains(&actual.pools[1].uuid.to_string()) && msg.contains("10.100.0.11:31443"),
        "{msg}"
    );
    // Make-before-break: the old members were not deleted.
    let (_, now) = apply::fetch(&c, &d.name, Some(lb))
        .await
        .expect("fetch")
        .expect("lb");
    assert_eq!(now.pools[1].members.len(), 4);
    assert!(matches!(
        p.steps.last().map(|s| s.impact),
        Some(Impact::Minimal)
    ));
    fc.shutdown().await;
}

#[tokio::test]
async fn in_place_updates_renames_and_http_monitors_converge() {
    let fc = start().await;
    let c = client(&fc);
    let mut d = desired(subnet(&c).await);
    d.pools[0].monitor = Monitor {
        kind: "http".into(),
        delay_s: 2,
        timeout_s: 1,
        up_threshold: 2,
        down_threshold: 3,
        http: Some(model::HttpCheck {
            method: "GET".into(),
            url_path: "/healthz".into(),
            version: "1.1".into(),
            host: Some("svc.example".into()),
            expected_codes: vec!["200".into()],
        }),
    };
    d.pools[0].listener.allowed_cidrs = vec!["10.0.0.0/8".into()];
    let lb = converged_lb(&c, &d).await;
    let before = assert_converged(&c, &d, lb).await;
    let t0 = virtual_now(&fc);

    let mut after = d.clone();
    after.name = "k8s-service-renamed".into();
    after.pools[0].name = "tcp/web".into();
    after.pools[0].monitor.delay_s = 3;
    if let Some(h) = after.pools[0].monitor.http.as_mut() {
        h.url_path = "/ready".into();
        h.expected_codes = vec!["200".into(), "204".into()];
    }
    after.pools[0].listener.allowed_cidrs = vec![];
    after.pools[1].listener.timeout_member_data_ms = 60000;
    let (ran, _) = apply_once(&c, &after, Some(lb)).await;
    let mut k = kinds(&ran);
    k.sort();
    assert_eq!(
        k,
        [
            "rename-lb",
            "rename-pool",
            "update-listener",
            "update-listener",
            "update-monitor"
        ]
    );
    let actual = assert_converged(&c, &after, lb).await;
    assert_eq!(actual.pools[0].uuid, before.pools[0].uuid);
    assert_eq!(
        actual.pools[0].monitors[0].uuid,
        before.pools[0].monitors[0].uuid
    );
    settle(&c, lb).await;
    wait_all_members_up(&c, lb).await;
    // A client allowed before and after the CIDR change never notices anything.
    for port in [80, 443] {
        let down = downtime_for(&fc, lb, &t0, port, "10.1.2.3").await;
        assert_eq!(down, 0.0, "port {port}");
    }
    fc.shutdown().await;
}
