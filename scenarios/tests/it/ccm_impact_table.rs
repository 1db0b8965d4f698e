//! Every kind of Service change on the socket testbed (CCM in-process over real HTTP,
//! fakecloud's clock at 100×): a Service goes through a fixed walk of changes (two walks,
//! each on a testbed of its own), fakecloud's data-plane oracle measures the downtime of each
//! for new connections, and every change must stay within its class. The generated cases of `tests/it/props.rs` prove the same classes
//! by search on the simulation's virtual clock (and give `ccm/README.md` its table); this
//! walk shows they hold over real sockets and a scaled wall clock too.

use scenarios::testbed::eventually;
use scenarios::testbed::{
    CcmBed as Bed, LIMIT, Snap, downtime, downtime_at, unreachable_on_both, web_service as web,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

fn key(suffix: &str) -> String {
    format!("k8s.cloudscale.ch/loadbalancer-{suffix}")
}

fn ann(suffix: &str, value: &str) -> Value {
    json!({"metadata": {"annotations": {key(suffix): value}}})
}

fn all(values: &[Value], f: impl Fn(&Value) -> bool) -> bool {
    !values.is_empty() && values.iter().all(f)
}

/// One kind of change, with this CCM's class and the downtime it allows.
struct Row {
    change: &'static str,
    class: &'static str,
    /// Downtime this CCM may cost (virtual s).
    bound: f64,
}

const ROWS: &[Row] = &[
    Row {
        change: "timeouts (3 annotations), load balancer name",
        class: "none",
        bound: 0.0,
    },
    Row {
        change: "ip mode, forced hostname (status only)",
        class: "none",
        bound: 0.0,
    },
    Row {
        change: "allowed CIDRs (for allowed clients)",
        class: "minimal",
        bound: 0.0,
    },
    Row {
        change: "health monitor delay / timeout / thresholds / HTTP fields",
        class: "minimal",
        bound: 0.0,
    },
    Row {
        change: "health monitor type",
        class: "minimal (monitor replaced: members checked anew, delay × up threshold)",
        bound: 4.0,
    },
    Row {
        change: "floating IP added",
        class: "minimal",
        bound: 0.0,
    },
    Row {
        change: "node joins or leaves, node selector",
        class: "minimal (members added before removed)",
        bound: 0.0,
    },
    Row {
        change: "node port (Kubernetes closes the old one at once; from the CCM's first write)",
        class: "member-recreate (new members first, one per port in turn: down until the port's first new member is up)",
        bound: 30.0,
    },
    Row {
        change: "allowed subnets",
        class: "minimal",
        bound: 0.0,
    },
    Row {
        change: "port number (time on neither port)",
        class: "minimal (listener PATCH)",
        bound: 0.0,
    },
    Row {
        change: "port name",
        class: "none (pool renamed in place)",
        bound: 0.0,
    },
    Row {
        change: "pool algorithm, pool protocol",
        class: "listener-recreate",
        bound: 15.0,
    },
    Row {
        change: "flavor, zone, VIP addresses",
        class: "refused (Warning Event; other changes still apply)",
        bound: 0.0,
    },
];

fn row(change: &str) -> usize {
    ROWS.iter()
        .position(|r| r.change == change)
        .unwrap_or_else(|| panic!("no row {change}"))
}

enum Step {
    /// A merge patch of the Service.
    Patch(Value),
    /// Port `http` renamed `web`, its node port kept (as `kubectl apply` of a manifest
    /// without node ports does: its patch merges ports by number).
    Rename,
    /// A node joins (`node-4`).
    NodeJoin,
    /// `node-4`'s server is deleted.
    NodeLeave,
    /// A new floating IP named in the annotation.
    FloatingIp,
}

struct Change {
    what: &'static str,
    row: usize,
    step: Step,
    expect: Box<dyn Fn(&Snap) -> bool>,
}

fn change(
    what: &'static str,
    row_name: &str,
    step: Step,
    expect: impl Fn(&Snap) -> bool + 'static,
) -> Change {
    Change {
        what,
        row: row(row_name),
        step,
        expect: Box::new(expect),
    }
}

/// The settings the CCM changes in place: timeouts, name, status, allowed CIDRs, the
/// health monitor and the pool.
fn settings_walk() -> Vec<Change> {
    vec![
        change(
            "timeout-client-data-ms",
            "timeouts (3 annotations), load balancer name",
            Step::Patch(ann("timeout-client-data-ms", "40000")),
            |s| all(&s.listeners, |l| l["timeout_client_data_ms"] == 40000),
        ),
        change(
            "timeout-member-connect-ms",
            "timeouts (3 annotations), load balancer name",
            Step::Patch(ann("timeout-member-connect-ms", "4000")),
            |s| all(&s.listeners, |l| l["timeout_member_connect_ms"] == 4000),
        ),
        change(
            "timeout-member-data-ms",
            "timeouts (3 annotations), load balancer name",
            Step::Patch(ann("timeout-member-data-ms", "40000")),
            |s| all(&s.listeners, |l| l["timeout_member_data_ms"] == 40000),
        ),
        change(
            "loadbalancer-name",
            "timeouts (3 annotations), load balancer name",
            Step::Patch(ann("name", "renamed-web")),
            |s| s.lbs[0]["name"] == "renamed-web",
        ),
        change(
            "ip-mode Proxy→VIP",
            "ip mode, forced hostname (status only)",
            Step::Patch(ann("ip-mode", "VIP")),
            |_| true,
        ),
        change(
            "force-hostname",
            "ip mode, forced hostname (status only)",
            Step::Patch(ann("force-hostname", "web.example.com")),
            |_| true,
        ),
        change(
            "listener-allowed-cidrs",
            "allowed CIDRs (for allowed clients)",
            Step::Patch(ann("listener-allowed-cidrs", r#"["203.0.113.0/24"]"#)),
            |s| {
                all(&s.listeners, |l| {
                    l["allowed_cidrs"] == json!(["203.0.113.0/24"])
                })
            },
        ),
        change(
            "health-monitor-type tcp→http",
            "health monitor type",
            Step::Patch(ann("health-monitor-type", "http")),
            |s| all(&s.monitors, |m| m["type"] == "http"),
        ),
        change(
            "health-monitor-http fields",
            "health monitor delay / timeout / thresholds / HTTP fields",
            Step::Patch(ann(
                "health-monitor-http",
                r#"{"url_path": "/healthz", "expected_codes": ["200", "204"]}"#,
            )),
            |s| all(&s.monitors, |m| m["http"]["url_path"] == "/healthz"),
        ),
        change(
            "health-monitor-delay-s",
            "health monitor delay / timeout / thresholds / HTTP fields",
            Step::Patch(ann("health-monitor-delay-s", "3")),
            |s| all(&s.monitors, |m| m["delay_s"] == 3),
        ),
        change(
            "health-monitor-timeout-s",
            "health monitor delay / timeout / thresholds / HTTP fields",
            Step::Patch(ann("health-monitor-timeout-s", "2")),
            |s| all(&s.monitors, |m| m["timeout_s"] == 2),
        ),
        change(
            "health-monitor-up-threshold",
            "health monitor delay / timeout / thresholds / HTTP fields",
            Step::Patch(ann("health-monitor-up-threshold", "3")),
            |s| all(&s.monitors, |m| m["up_threshold"] == 3),
        ),
        change(
            "health-monitor-down-threshold",
            "health monitor delay / timeout / thresholds / HTTP fields",
            Step::Patch(ann("health-monitor-down-threshold", "4")),
            |s| all(&s.monitors, |m| m["down_threshold"] == 4),
        ),
        change(
            "pool-algorithm",
            "pool algorithm, pool protocol",
            Step::Patch(ann("pool-algorithm", "least_connections")),
            |s| all(&s.pools, |p| p["algorithm"] == "least_connections"),
        ),
        change(
            "pool-protocol tcp→proxy",
            "pool algorithm, pool protocol",
            Step::Patch(ann("pool-protocol", "proxy")),
            |s| all(&s.pools, |p| p["protocol"] == "proxy"),
        ),
    ]
}

/// What moves traffic: port names and numbers, node ports, nodes, subnets, a floating IP,
/// and the changes the CCM refuses. `subnet` is the nodes' only subnet.
fn topology_walk(subnet: &str) -> Vec<Change> {
    vec![
        change("port rename http→web", "port name", Step::Rename, |s| {
            s.pool_names() == ["tcp/https", "tcp/web"]
        }),
        change(
            "port number 443→8443",
            "port number (time on neither port)",
            Step::Patch(json!({"spec": {"ports": [
                {"name": "web", "port": 80, "targetPort": 8080},
                {"name": "https", "port": 8443, "targetPort": 8443},
            ]}})),
            |s| s.listener_names() == ["tcp/80", "tcp/8443"],
        ),
        change(
            "node port 80→31080, 8443→31443",
            "node port (Kubernetes closes the old one at once; from the CCM's first write)",
            Step::Patch(json!({"spec": {"ports": [
                {"name": "web", "port": 80, "targetPort": 8080, "nodePort": 31080},
                {"name": "https", "port": 8443, "targetPort": 8443, "nodePort": 31443},
            ]}})),
            |s| {
                let ports: Vec<u64> = s
                    .members
                    .values()
                    .flatten()
                    .filter_map(|m| m["protocol_port"].as_u64())
                    .collect();
                !ports.is_empty() && ports.iter().all(|p| *p == 31080 || *p == 31443)
            },
        ),
        change(
            "node-4 joins",
            "node joins or leaves, node selector",
            Step::NodeJoin,
            |s| s.member_counts() == [4, 4],
        ),
        change(
            "node-4 leaves (server deleted)",
            "node joins or leaves, node selector",
            Step::NodeLeave,
            |s| s.member_counts() == [3, 3],
        ),
        change(
            "node-selector (subset)",
            "node joins or leaves, node selector",
            Step::Patch(ann(
                "node-selector",
                "kubernetes.io/hostname in (node-1,node-2)",
            )),
            |s| s.member_counts() == [2, 2],
        ),
        change(
            "listener-allowed-subnets (the nodes' only subnet)",
            "allowed subnets",
            Step::Patch(ann(
                "listener-allowed-subnets",
                &serde_json::to_string(&[&subnet]).unwrap_or_default(),
            )),
            |s| s.member_counts() == [2, 2],
        ),
        change(
            "floating IP added",
            "floating IP added",
            Step::FloatingIp,
            |_| true,
        ),
        change(
            "flavor lb-standard→lb-large",
            "flavor, zone, VIP addresses",
            Step::Patch(ann("flavor", "lb-large")),
            |s| s.lbs[0]["flavor"]["slug"] == "lb-standard",
        ),
        change(
            "zone rma1→lpg1",
            "flavor, zone, VIP addresses",
            Step::Patch(ann("zone", "lpg1")),
            |s| s.lbs[0]["zone"]["slug"] == "rma1",
        ),
    ]
}

/// The two walks run in parallel, each on a testbed of its own (one walk took most of the
/// suite's wall time); together they cover every row.
#[test]
fn the_two_walks_cover_every_row() {
    let walked: BTreeSet<usize> = settings_walk()
        .iter()
        .chain(&topology_walk("a-subnet"))
        .map(|c| c.row)
        .collect();
    let missing: Vec<&str> = (0..ROWS.len())
        .filter(|r| !walked.contains(r))
        .map(|r| ROWS[r].change)
        .collect();
    assert!(missing.is_empty(), "rows no walk changes: {missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_changes_stay_within_their_class_over_real_sockets() {
    walk(|_| settings_walk()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_node_and_refused_changes_stay_within_their_class_over_real_sockets() {
    walk(topology_walk).await;
}

/// One Service through `changes` (given the nodes' subnet), each measured by the oracle.
async fn walk(changes: impl FnOnce(&str) -> Vec<Change>) {
    let mut bed = Bed::start_default().await;
    let start = bed.create_converged(&web(json!({})), 2).await;
    let lb = start.lb_uuid();
    eventually("uuid annotation", LIMIT, || async {
        let s = bed.services().get("web").await.ok()?;
        s.metadata
            .annotations?
            .contains_key(&key("uuid"))
            .then_some(())
    })
    .await;
    let subnet = bed.subnet_uuid().await;
    let changes = changes(&subnet);

    // Worst downtime per row.
    let mut worst: BTreeMap<usize, f64> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut ports: Vec<u16> = vec![80, 443];
    for c in &changes {
        let t0 = bed.now();
        // The log is bounded: start each change with an empty one.
        bed.clear_request_log().await;
        let mut fip_address = None;
        match &c.step {
            Step::Patch(p) => bed.patch("web", p).await,
            Step::Rename => {
                let live = bed.services().get("web").await.expect("web");
                let np = |i: usize| {
                    live.spec
                        .as_ref()
                        .and_then(|s| s.ports.as_ref())
                        .and_then(|p| p.get(i))
                        .and_then(|p| p.node_port)
                        .expect("a node port")
                };
                let ports = json!({"spec": {"ports": [
                    {"name": "web", "port": 80, "targetPort": 8080, "nodePort": np(0)},
                    {"name": "https", "port": 443, "targetPort": 8443, "nodePort": np(1)},
                ]}});
                bed.patch("web", &ports).await
            }
            Step::NodeJoin => {
                bed.tb.add_node("node-4").await.expect("node-4");
            }
            Step::NodeLeave => bed.delete_server_of("node-4").await,
            Step::FloatingIp => {
                let (network, address) = bed.create_floating_ip().await;
                bed.patch("web", &ann("floating-ips", &format!("[\"{network}\"]")))
                    .await;
                fip_address = Some(address);
            }
        }
        let after = bed.converge(c.what, 2, |s| (c.expect)(s)).await;
        // The expectation may hold already (a refused change, subnets keeping every member):
        // wait for two more reconciles so the change had its chance. Each lists the
        // floating IPs, which nothing else here does.
        eventually("two reconciles after the change", LIMIT, || async {
            let log = bed.request_log().await;
            let fetches = log
                .iter()
                .filter(|r| r["method"] == "GET" && r["path"] == "/v1/floating-ips")
                .count();
            (fetches >= 2).then_some(())
        })
        .await;
        let again = bed.converge(c.what, 2, |s| (c.expect)(s)).await;
        assert_eq!(again.lb_uuid(), after.lb_uuid());
        assert_eq!(after.lb_uuid(), lb, "{}: the same load balancer", c.what);

        let mut measured = Vec::new();
        if c.what.starts_with("port number") {
            // The service moves from 443 to 8443: what counts is a moment on neither.
            let av = bed.availability(&lb, &t0).await;
            measured.push(downtime(&av, 80));
            measured.push(unreachable_on_both(&av, 443, 8443));
            ports = vec![80, 8443];
        } else if let Some(address) = &fip_address {
            bed.wait_floating_ip_on(address, &lb).await;
            // Measured from the assigning request on, as the reference's figure is.
            let assigned = bed
                .request_log()
                .await
                .iter()
                .find(|r| {
                    r["method"] == "PATCH"
                        && r["path"]
                            .as_str()
                            .is_some_and(|p| p.starts_with("/v1/floating-ips/"))
                })
                .and_then(|r| r["time"].as_str().map(str::to_string))
                .expect("the assigning PATCH in the request log");
            // It carries traffic once propagated; look 15 virtual s past the assignment.
            let t_end = fakecloud::clock::parse_time(&assigned).expect("log time")
                + fakecloud::clock::delta_from_secs(15.0);
            eventually("15 virtual s", LIMIT, || async {
                (bed.tb.cloud.app().now() >= t_end).then_some(())
            })
            .await;
            let on_fip = downtime_at(&bed.availability(&lb, &assigned).await, address, 80);
            let av = bed.availability(&lb, &t0).await;
            let on_vips = ports.iter().map(|p| downtime(&av, *p)).fold(0.0, f64::max);
            // The address itself answers once fakecloud propagated it (10 s, not the CCM's
            // doing); a CCM reassigning or moving it would show here.
            if on_fip > 11.0 {
                // Say what happened: every write of a floating IP and the oracle's entry.
                let fips: Vec<Value> = bed
                    .request_log()
                    .await
                    .into_iter()
                    .filter(|r| {
                        r["path"]
                            .as_str()
                            .is_some_and(|p| p.starts_with("/v1/floating-ips"))
                            && r["method"] != "GET"
                    })
                    .collect();
                let entry: Vec<Value> = bed
                    .availability(&lb, &assigned)
                    .await
                    .into_iter()
                    .filter(|e| e["address"] == address.as_str())
                    .collect();
                panic!(
                    "{on_fip} s on the floating IP (at most 11): writes {:#}, oracle {:#}",
                    Value::Array(fips),
                    Value::Array(entry)
                );
            }
            measured.push(on_vips);
            eprintln!(
                "floating IP: {on_fip:.1} s on that address (until propagated), {on_vips:.1} s on the VIPs"
            );
        } else if c.what.starts_with("node port") {
            // Kubernetes stops serving the old node port the moment the Service changes;
            // on the scaled clock the CCM's own reaction time (real milliseconds) would
            // count a hundred times over, so the figure starts at the CCM's first write.
            let first = bed
                .writes()
                .await
                .first()
                .and_then(|r| r["time"].as_str().map(str::to_string))
                .expect("the change's first write in the request log");
            let av = bed.availability(&lb, &first).await;
            for p in &ports {
                measured.push(downtime(&av, *p));
            }
        } else {
            let av = bed.availability(&lb, &t0).await;
            for p in &ports {
                measured.push(downtime(&av, *p));
            }
        }
        if c.what.starts_with("listener-allowed-cidrs") {
            // The restriction took effect in the data plane: others are refused now.
            let av = bed
                .availability_for(&lb, &bed.now_minus(1.0), "198.51.100.7")
                .await;
            assert!(
                downtime(&av, 80) > 0.0,
                "a client outside the allowed CIDRs is refused: {av:#?}"
            );
        }
        for refused in ["flavor", "zone"] {
            if c.what.starts_with(refused) {
                let named = bed.events("web").await.into_iter().any(|e| {
                    e.reason.as_deref() == Some("ChangeRefused")
                        && e.message.unwrap_or_default().contains(&key(refused))
                });
                assert!(named, "a ChangeRefused Event naming {}", key(refused));
            }
        }
        if c.what.starts_with("ip-mode") || c.what.starts_with("force-hostname") {
            let hostname = c.what.starts_with("force-hostname");
            eventually("the status to follow", LIMIT, || async {
                let svc = bed.services().get("web").await.ok()?;
                let ingress = scenarios::testbed::ingress(&svc);
                let ok = if hostname {
                    ingress == [json!({"hostname": "web.example.com"})]
                } else {
                    !ingress.is_empty() && ingress.iter().all(|i| i["ipMode"] == "VIP")
                };
                ok.then_some(())
            })
            .await;
        }
        let w = measured.iter().copied().fold(0.0, f64::max);
        eprintln!("{}: {measured:?} virtual s", c.what);
        let bound = ROWS[c.row].bound;
        if w > bound {
            failures.push(format!(
                "{}: {w} s > {bound} s ({})",
                c.what, ROWS[c.row].class
            ));
        }
        let e = worst.entry(c.row).or_insert(0.0);
        *e = e.max(w);
    }
    assert!(failures.is_empty(), "{failures:#?}");
    for (row, w) in &worst {
        eprintln!(
            "{}: {w:.1} virtual s (allowed {})",
            ROWS[*row].change, ROWS[*row].bound
        );
    }
}
