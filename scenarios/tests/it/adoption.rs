//! Adoption from the Go reference CCM: a cluster whose load balancers the reference built
//! (rebuilt here with its own call sequence, `scenarios::testbed::reference_lbs`) switches to this
//! CCM. The same load balancers must stay, nothing may be recreated that works, and no
//! port may lose a second of availability for any client it admits (fakecloud's
//! data-plane oracle, from before this CCM starts until after it has converged).
//!
//! Services, as an operator of the reference would have them:
//! - `web`: two named TCP ports (`tcp/http`, `tcp/https`), defaults;
//! - `local`: `externalTrafficPolicy: Local`, one unnamed port (pool `tcp`), the HTTP
//!   `/livez` check on the health-check node port, one endpoint (node-2);
//! - `tuned`: pool algorithm, the three timeouts, allowed CIDRs and monitor numbers set;
//! - `dns`: TCP and UDP on port 53 (the reference's dual-protocol example: one node port,
//!   the default `tcp` check on both pools);
//! - `syslog`: UDP only, with the `udp-connect` check the reference needs for it.

use ccm::service::reconcile::controller::{TAG_CLUSTER, TAG_SERVICE_UID};
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::Api;
use scenarios::testbed::eventually;
use scenarios::testbed::{Call, Reference, UUID_ANNOTATION};
use scenarios::testbed::{CcmBed as Bed, CcmBedConfig, FAST_FLAGS, InProcessCcm, lb_service};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const A: &str = "k8s.cloudscale.ch/loadbalancer-";
/// The oracle's default client, outside every allowed CIDR of `tuned`.
const OUTSIDE: &str = "203.0.113.10";
/// Clients inside `tuned`'s allowed CIDRs.
const INSIDE: [&str; 2] = ["198.51.100.7", "192.0.2.10"];
const TUNED_CIDRS: &str = r#"["198.51.100.0/24", "192.0.2.10/32"]"#;
/// The node with `local`'s only endpoint.
const ENDPOINT_NODE: &str = "node-2";
/// The longest the switch may take to converge (wall time; fakecloud runs at 100×).
const CONVERGE: Duration = Duration::from_secs(60);

fn key(suffix: &str) -> String {
    format!("{A}{suffix}")
}

/// The Services of the cluster the reference ran.
fn services() -> Vec<Service> {
    let mut local = lb_service(
        "local",
        json!([{"port": 80, "targetPort": 8080}]),
        json!({}),
    );
    if let Some(spec) = local.spec.as_mut() {
        spec.external_traffic_policy = Some("Local".into());
    }
    vec![
        lb_service(
            "web",
            json!([
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "https", "port": 443, "targetPort": 8443},
            ]),
            json!({}),
        ),
        local,
        lb_service(
            "tuned",
            json!([{"name": "api", "port": 6443, "targetPort": 6443}]),
            json!({
                key("pool-algorithm"): "least_connections",
                key("timeout-client-data-ms"): "60000",
                key("timeout-member-connect-ms"): "3000",
                key("timeout-member-data-ms"): "120000",
                key("listener-allowed-cidrs"): TUNED_CIDRS,
                key("health-monitor-delay-s"): "3",
                key("health-monitor-up-threshold"): "3",
            }),
        ),
        lb_service(
            "dns",
            json!([
                {"name": "dns-udp", "protocol": "UDP", "port": 53, "targetPort": 53},
                {"name": "dns-tcp", "protocol": "TCP", "port": 53, "targetPort": 53},
            ]),
            json!({}),
        ),
        lb_service(
            "syslog",
            json!([{"name": "syslog", "protocol": "UDP", "port": 514, "targetPort": 514}]),
            json!({
                key("health-monitor-type"): "udp-connect",
                key("health-monitor-delay-s"): "3",
                key("health-monitor-timeout-s"): "2",
            }),
        ),
    ]
}

/// Every load-balancer resource of the account, by UUID, without what only says how it
/// runs (`status`, `monitor_status`).
#[derive(Debug, Clone, Default)]
struct State {
    /// kind (`load balancer`, `pool`, `member`, `listener`, `health monitor`) → UUID → JSON.
    by_kind: BTreeMap<&'static str, BTreeMap<String, Value>>,
    /// Member UUID → `monitor_status`.
    health: BTreeMap<String, String>,
    lb_status: BTreeMap<String, String>,
}

impl State {
    async fn read(bed: &Bed) -> State {
        let mut s = State::default();
        let keyed = |list: Vec<Value>| -> BTreeMap<String, Value> {
            list.into_iter()
                .map(|mut v| {
                    let uuid = v["uuid"].as_str().unwrap_or_default().to_string();
                    if let Some(o) = v.as_object_mut() {
                        o.remove("status");
                        o.remove("monitor_status");
                    }
                    (uuid, v)
                })
                .collect()
        };
        let lbs = bed.cloud_list("/load-balancers").await;
        for lb in &lbs {
            s.lb_status.insert(
                lb["uuid"].as_str().unwrap_or_default().into(),
                lb["status"].as_str().unwrap_or_default().into(),
            );
        }
        let pools = bed.cloud_list("/load-balancers/pools").await;
        let mut members = Vec::new();
        for p in &pools {
            let path = format!(
                "/load-balancers/pools/{}/members",
                p["uuid"].as_str().unwrap_or_default()
            );
            for m in bed.cloud_list(&path).await {
                s.health.insert(
                    m["uuid"].as_str().unwrap_or_default().into(),
                    m["monitor_status"].as_str().unwrap_or_default().into(),
                );
                members.push(m);
            }
        }
        s.by_kind.insert("load balancer", keyed(lbs));
        s.by_kind.insert("pool", keyed(pools));
        s.by_kind.insert("member", keyed(members));
        s.by_kind.insert(
            "listener",
            keyed(bed.cloud_list("/load-balancers/listeners").await),
        );
        s.by_kind.insert(
            "health monitor",
            keyed(bed.cloud_list("/load-balancers/health-monitors").await),
        );
        s
    }

    fn of(&self, kind: &str) -> &BTreeMap<String, Value> {
        self.by_kind
            .get(kind)
            .unwrap_or_else(|| panic!("no {kind} in the state"))
    }

    /// Whether every load balancer runs and every member is as the Services want it:
    /// up, except `local`'s members on nodes without its endpoint (kube-proxy answers 503
    /// there), which are down.
    fn settled(&self, local_lb: &str, endpoint_ip: &str) -> bool {
        self.lb_status.len() == 5
            && self.lb_status.values().all(|s| s == "running")
            && self.of("member").iter().all(|(uuid, m)| {
                let want = if m["load_balancer"]["uuid"] == local_lb && m["address"] != endpoint_ip
                {
                    "down"
                } else {
                    "up"
                };
                self.health.get(uuid).map(String::as_str) == Some(want)
            })
    }
}

/// What changed between two states: created and deleted resources, and changed fields.
fn changes(before: &State, after: &State) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, old) in &before.by_kind {
        let new = after.of(kind);
        let label = |v: &Value| {
            format!(
                "{kind} {} ({})",
                v["name"].as_str().or(v["type"].as_str()).unwrap_or("?"),
                v["uuid"].as_str().unwrap_or_default()
            )
        };
        for (uuid, v) in old {
            match new.get(uuid) {
                None => out.push(format!("deleted {}", label(v))),
                Some(n) if n != v => {
                    let fields: BTreeSet<&String> = v
                        .as_object()
                        .into_iter()
                        .flat_map(|o| o.keys())
                        .chain(n.as_object().into_iter().flat_map(|o| o.keys()))
                        .collect();
                    for f in fields {
                        if v[f.as_str()] != n[f.as_str()] {
                            out.push(format!(
                                "changed {}: {f} {} -> {}",
                                label(v),
                                v[f.as_str()],
                                n[f.as_str()]
                            ));
                        }
                    }
                }
                Some(_) => {}
            }
        }
        for (uuid, v) in new {
            if !old.contains_key(uuid) {
                out.push(format!("created {}", label(v)));
            }
        }
    }
    out
}

/// The worst downtime (virtual s) over the VIPs of `(protocol, port)` in oracle entries,
/// and the reasons of its down intervals.
fn vip_downtime(entries: &[Value], protocol: &str, port: u64) -> (f64, BTreeSet<String>) {
    let selected: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "vip" && e["protocol"] == protocol && e["port"] == port)
        .collect();
    assert!(
        !selected.is_empty(),
        "the oracle has no VIP entry for {protocol}/{port}: {entries:#?}"
    );
    let worst = selected
        .iter()
        .map(|e| e["downtime_s"].as_f64().unwrap_or(f64::INFINITY))
        .fold(0.0, f64::max);
    let reasons = selected
        .iter()
        .flat_map(|e| e["down"].as_array().cloned().unwrap_or_default())
        .filter_map(|d| d["reason"].as_str().map(str::to_string))
        .collect();
    (worst, reasons)
}

/// `(protocol, port)` of every listener of load balancer `lb` in `state`.
fn listener_ports(state: &State, lb: &str) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = state
        .of("listener")
        .values()
        .filter(|l| l["load_balancer"]["uuid"] == lb)
        .map(|l| {
            (
                l["protocol"].as_str().unwrap_or_default().to_string(),
                l["protocol_port"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    v.sort();
    v
}

/// Writes in fakecloud's request log, as `METHOD route` → count.
fn writes_by_route(log: &[Value]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in log.iter().filter(|r| r["method"] != "GET") {
        let route = r["route"]
            .as_str()
            .or(r["path"].as_str())
            .unwrap_or_default();
        *out.entry(format!(
            "{} {route}",
            r["method"].as_str().unwrap_or_default()
        ))
        .or_insert(0) += 1;
    }
    out
}

/// The oracle's entries for `lb` within `[from, to)`, for new connections from `client`.
async fn availability(bed: &Bed, lb: &str, from: &str, to: &str, client: &str) -> Vec<Value> {
    let av = bed
        .fake(&format!(
            "/load-balancers/{lb}/availability?from={from}&to={to}&client={client}"
        ))
        .await;
    av["entries"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("availability of {lb}: no entries in {av}"))
}

/// Virtual seconds from `from` to `to`.
fn seconds(from: &str, to: &str) -> f64 {
    let t = |s: &str| fakecloud::clock::parse_time(s).unwrap_or_else(|| panic!("not a time: {s}"));
    (t(to) - t(from)).num_microseconds().unwrap_or(0) as f64 / 1e6
}

fn print_calls(name: &str, calls: &[Call]) {
    let reads = calls.iter().filter(|c| c.method == "GET").count();
    eprintln!("reference calls for {name}: {reads} GETs, writes:");
    for c in calls.iter().filter(|c| c.method != "GET") {
        eprintln!(
            "  {} {} -> {} {}",
            c.method,
            c.path,
            c.status,
            c.body.as_ref().map(Value::to_string).unwrap_or_default()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_references_load_balancers_are_adopted_as_they_are_without_downtime() {
    let mut bed = Bed::start(CcmBedConfig {
        ccm_flags: None,
        ..Default::default()
    })
    .await;
    let client = bed.tb.cluster.client();

    // ---- the cluster as the reference left it ------------------------------------------
    let mut reference = Reference::new(&bed.tb.cloud.base_url(), bed.tb.cloud.token());
    reference
        .initialize_nodes(&client)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let svcs = services();
    for svc in &svcs {
        bed.create(svc).await;
    }
    bed.endpoint_on("local", ENDPOINT_NODE).await;
    let mut lbs: BTreeMap<String, String> = BTreeMap::new();
    for svc in &svcs {
        let name = svc.metadata.name.clone().unwrap_or_default();
        let first = reference.calls.len();
        let lb = reference
            .ensure(&client, "default", &name)
            .await
            .unwrap_or_else(|e| panic!("the reference on {name}: {e}"));
        print_calls(&name, &reference.calls[first..]);
        lbs.insert(name, lb["uuid"].as_str().unwrap_or_default().to_string());
    }
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let mut uids = BTreeMap::new();
    for (name, lb) in &lbs {
        let s = services.get(name).await.expect("service");
        let ann = s.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(ann.get(UUID_ANNOTATION), Some(lb), "{name}");
        assert_eq!(
            ann.get(&key("config-version")).map(String::as_str),
            Some("1")
        );
        assert_eq!(ann.get(&key("zone")).map(String::as_str), Some("rma1"));
        assert_eq!(scenarios::testbed::ingress(&s).len(), 2, "{name}: two VIPs");
        uids.insert(name.clone(), s.metadata.uid.clone().unwrap_or_default());
    }
    let built = State::read(&bed).await;
    for lb in built.of("load balancer").values() {
        assert_eq!(lb["tags"], json!({}), "the reference does not tag");
    }
    let endpoint_ip = bed.node_ip(ENDPOINT_NODE).await;
    let local_lb = lbs["local"].clone();

    // Traffic flows before the switch: every member up (but `local`'s without endpoint),
    // then 10 virtual s without a gap on any port.
    eventually("the reference's members up", CONVERGE, || async {
        State::read(&bed)
            .await
            .settled(&local_lb, &endpoint_ip)
            .then_some(())
    })
    .await;
    let t_flow = bed.now();
    let flow_end = bed.tb.cloud.app().now() + fakecloud::clock::delta_from_secs(10.0);
    eventually("10 virtual s", CONVERGE, || async {
        (bed.tb.cloud.app().now() >= flow_end).then_some(())
    })
    .await;
    let before = State::read(&bed).await;
    assert!(before.settled(&local_lb, &endpoint_ip), "still settled");
    let now = bed.now();
    for (name, lb) in &lbs {
        let entries = availability(&bed, lb, &t_flow, &now, INSIDE[0]).await;
        for (protocol, port) in listener_ports(&before, lb) {
            let (d, reasons) = vip_downtime(&entries, &protocol, port);
            assert_eq!(
                d, 0.0,
                "{name} {protocol}/{port} before the switch: {reasons:?}"
            );
        }
    }

    // ---- the switch ------------------------------------------------------------------------
    bed.clear_request_log().await;
    let t0 = bed.now();
    bed.ccm = Some(InProcessCcm::start(
        &bed.kubeconfig,
        &bed.tb.cloud,
        5,
        FAST_FLAGS,
    ));
    // Converged: every load balancer carries its Service's tags, then every Service has been
    // reconciled twice more without a write, and everything runs as before.
    eventually("every load balancer tagged", CONVERGE, || async {
        let lbs_now = bed.cloud_list("/load-balancers").await;
        uids.iter()
            .all(|(name, uid)| {
                lbs_now.iter().any(|lb| {
                    lb["uuid"] == lbs[name].as_str()
                        && lb["tags"][TAG_SERVICE_UID] == uid.as_str()
                        && lb["tags"][TAG_CLUSTER] == "test-cluster"
                })
            })
            .then_some(())
    })
    .await;
    let reconciles = || bed.ccm.as_ref().map_or(0, InProcessCcm::service_reconciles);
    eventually(
        "quiet: two reconciles per Service without a write",
        CONVERGE,
        || async {
            let writes = bed.writes().await.len();
            let from = reconciles();
            eventually("two reconciles per Service", CONVERGE, || async {
                (reconciles() >= from + 2 * lbs.len() as u64).then_some(())
            })
            .await;
            let quiet = bed.writes().await.len() == writes;
            let s = State::read(&bed).await;
            (quiet && s.settled(&local_lb, &endpoint_ip)).then_some(())
        },
    )
    .await;
    let after = State::read(&bed).await;
    let log = bed.request_log().await;

    // ---- what this CCM did -------------------------------------------------------------------
    let reads = log.iter().filter(|r| r["method"] == "GET").count();
    let writes = writes_by_route(&log);
    eprintln!("this CCM on adoption: {reads} GETs; writes: {writes:#?}");
    for w in log.iter().filter(|r| r["method"] != "GET") {
        eprintln!("  {} {} -> {}", w["method"], w["path"], w["status"]);
    }
    let changed = changes(&before, &after);
    eprintln!("changes to the reference's resources:");
    for c in &changed {
        eprintln!("  {c}");
    }
    for name in lbs.keys() {
        let events: Vec<String> = bed
            .events(name)
            .await
            .into_iter()
            .map(|e| {
                format!(
                    "{} {}: {}",
                    e.type_.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.message.unwrap_or_default()
                )
            })
            .collect();
        eprintln!("events of {name}: {events:#?}");
    }

    // ---- downtime ------------------------------------------------------------------------------
    let t_end = bed.now();
    eprintln!(
        "downtime (virtual s): before the switch {t_flow} .. {t0} ({} s), switch window {t0} .. {t_end} ({} s)",
        seconds(&t_flow, &t0),
        seconds(&t0, &t_end)
    );
    eprintln!(
        "{:<8} {:<9} {:<24} {:>14} {:>14}",
        "service", "port", "client", "before switch", "switch window"
    );
    let mut worst: f64 = 0.0;
    for (name, lb) in &lbs {
        let clients: Vec<&str> = if name == "tuned" {
            INSIDE.to_vec()
        } else {
            vec![OUTSIDE]
        };
        for client in clients {
            let pre = availability(&bed, lb, &t_flow, &t0, client).await;
            let window = availability(&bed, lb, &t0, &t_end, client).await;
            for (protocol, port) in listener_ports(&after, lb) {
                let (p, _) = vip_downtime(&pre, &protocol, port);
                let (w, reasons) = vip_downtime(&window, &protocol, port);
                eprintln!(
                    "{name:<8} {:<9} {client:<24} {p:>14} {w:>14} {}",
                    format!("{protocol}/{port}"),
                    if reasons.is_empty() {
                        String::new()
                    } else {
                        format!("{reasons:?}")
                    }
                );
                worst = worst.max(p).max(w);
            }
        }
    }
    // A client outside `tuned`'s CIDRs is refused all along, never let in meanwhile.
    let refused = availability(&bed, &lbs["tuned"], &t_flow, &t_end, OUTSIDE).await;
    let (d, reasons) = vip_downtime(&refused, "tcp", 6443);
    let span = seconds(&t_flow, &t_end);
    eprintln!("tuned    tcp/6443  {OUTSIDE:<24} refused {d} of {span} s: {reasons:?}");
    assert!(
        (d - span).abs() < 1e-3,
        "refused for the whole window: {d} of {span}"
    );
    assert_eq!(
        reasons,
        BTreeSet::from(["client not in allowed_cidrs".to_string()])
    );

    // ---- assertions --------------------------------------------------------------------------
    assert_eq!(worst, 0.0, "0 s of downtime on every port");
    assert!(
        !writes.keys().any(|w| w.starts_with("DELETE ")),
        "nothing deleted: {writes:#?}"
    );
    assert!(
        !writes.contains_key("POST /v1/load-balancers"),
        "no load balancer created: {writes:#?}"
    );
    let ids = |s: &State, kind: &str| s.of(kind).keys().cloned().collect::<BTreeSet<_>>();
    for kind in [
        "load balancer",
        "pool",
        "member",
        "listener",
        "health monitor",
    ] {
        assert_eq!(
            ids(&before, kind),
            ids(&after, kind),
            "the same {kind}s: {changed:#?}"
        );
    }
    // What changed is the ownership tags, nothing else.
    let unexpected: Vec<&String> = changed
        .iter()
        .filter(|c| !(c.starts_with("changed load balancer") && c.contains(": tags ")))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");
    for (name, lb) in &lbs {
        let s = services.get(name).await.expect("service");
        assert_eq!(
            s.metadata
                .annotations
                .unwrap_or_default()
                .get(UUID_ANNOTATION),
            Some(lb),
            "{name}"
        );
    }
    let nodes: Api<Node> = Api::all(client);
    assert_eq!(
        nodes
            .list(&Default::default())
            .await
            .expect("nodes")
            .items
            .len(),
        3
    );
}
