//! Faults injected mid-plan, for every kind of action the service controller takes: a whole
//! CCM in-process on the testbed, fakecloud failing the request that one action makes.
//!
//! Each case runs twice:
//! - the request fails with 500 on every attempt the client makes, so the error reaches the
//!   reconcile and the plan stops half-way (a Warning Event says so); the next reconcile
//!   must finish it from whatever state the first left;
//! - the request runs but its answer is lost (`lose_answer`; a read is dropped instead), so
//!   the client cannot tell whether it happened.
//!
//! Either way the Service must converge to exactly the desired load balancer (the same one,
//! no duplicate pool, listener, monitor or member), the ports that stay must see no more
//! downtime than the change costs without a fault, and a reconcile afterwards must write
//! nothing.

use ccm::service::reconcile::controller::FINALIZER;
use fakecloud::faults::{FaultEffect, FaultRule};
use kube::api::DeleteParams;
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, CcmBedConfig, LIMIT, Snap, downtime, web_service as web};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

/// Client attempts per request: a rule hitting this many times fails the reconcile.
const ATTEMPTS: u64 = 3;

/// A bed whose CCM only reconciles when told (no periodic resync or node monitor), retries
/// quickly, and reads the account afresh each time: the test decides when a fault is
/// installed and which reconcile meets it.
async fn bed() -> Bed {
    let config = CcmBedConfig {
        ccm_flags: Some(
            [
                "--leader-elect=false",
                "--cluster-name",
                "test-cluster",
                "--load-balancer-poll-interval",
                "20ms",
                "--service-resync-period",
                "1h",
                "--node-monitor-period",
                "1h",
                "--api-read-sharing-window",
                "1ms",
                "--service-sync-retry-delay",
                "100ms",
                "--service-sync-max-retry-delay",
                "1s",
                "--api-max-attempts",
                &ATTEMPTS.to_string(),
                "--api-retry-base-delay",
                "10ms",
            ]
            .map(String::from)
            .to_vec(),
        ),
        ..CcmBedConfig::default()
    };
    Bed::start(config).await
}

fn ann(suffix: &str, value: &str) -> Value {
    json!({"metadata": {"annotations": {format!("k8s.cloudscale.ch/loadbalancer-{suffix}"): value}}})
}

/// The Service's ports as `kubectl apply` of a manifest without node ports leaves them: its
/// patch merges ports by number, so a port whose number stays keeps its node port.
async fn ports(bed: &Bed, list: &[(&str, u16)]) -> Value {
    let live = bed.services().get("web").await.expect("web");
    let live_ports = live.spec.and_then(|s| s.ports).unwrap_or_default();
    let ports: Vec<Value> = list
        .iter()
        .map(|(name, port)| {
            let node_port = live_ports
                .iter()
                .find(|p| p.port == i32::from(*port))
                .and_then(|p| p.node_port);
            json!({"name": name, "port": port, "targetPort": port, "nodePort": node_port})
        })
        .collect();
    json!({"spec": {"ports": ports}})
}

/// What makes the controller take the faulted action.
enum Trigger {
    /// The Service is created with the fault in place.
    Create,
    /// A merge patch of the converged Service.
    Patch(Value),
    /// New `spec.ports` (name, number), applied as [`ports`] says.
    Ports(&'static [(&'static str, u16)]),
    /// A fourth node joins.
    NodeJoin,
    /// The Service is deleted.
    Delete,
    /// A member changed out of band (this JSON PATCHed onto one member), then a resync.
    MemberDrift(Value),
    /// A new floating IP, then the annotation naming it.
    FloatingIp,
}

struct Case {
    /// The [`ccm::service::pure::plan::Action::kind`] whose request is faulted.
    action: &'static str,
    method: &'static str,
    path: &'static str,
    trigger: Trigger,
    /// Ports that exist before and after, and the downtime they may see (virtual s): what
    /// the change costs without a fault.
    steady_ports: &'static [u16],
    bound: f64,
    /// The converged end state: number of ports and a check.
    end_ports: usize,
    end: fn(&Snap) -> bool,
    /// Initial annotations of the Service.
    initial: Value,
    /// Install the fault only once a new pool appears, and only for requests naming it.
    on_new_pool: bool,
    /// What the failure Event of the 500 run must name: the step that failed.
    step: &'static str,
}

fn any(_: &Snap) -> bool {
    true
}

/// No two pools or listeners with one name, one monitor per pool, no two members of a pool
/// with one name.
fn no_duplicates(s: &Snap) -> Result<(), String> {
    let unique = |v: &[String]| v.iter().collect::<BTreeSet<_>>().len() == v.len();
    if !unique(&s.pool_names()) || !unique(&s.listener_names()) {
        return Err(format!(
            "duplicate pools or listeners: {:?} {:?}",
            s.pool_names(),
            s.listener_names()
        ));
    }
    if s.monitors.len() != s.pools.len() {
        return Err(format!(
            "{} monitors for {} pools",
            s.monitors.len(),
            s.pools.len()
        ));
    }
    for (pool, members) in &s.members {
        let names: Vec<String> = members
            .iter()
            .filter_map(|m| m["name"].as_str().map(str::to_string))
            .collect();
        if !unique(&names) {
            return Err(format!("duplicate members in {pool}: {names:?}"));
        }
    }
    Ok(())
}

/// API requests fakecloud has served since its log was last cleared (its counters only
/// grow, unlike the bounded log).
async fn served(bed: &Bed) -> u64 {
    let counters = bed.fake("/counters").await;
    counters
        .as_object()
        .unwrap_or_else(|| panic!("counters: {counters}"))
        .iter()
        .filter(|(route, _)| !route.contains("/_fake"))
        .filter_map(|(_, n)| n.as_u64())
        .sum()
}

/// Waits until fakecloud has served no API request for 300 ms: the controller is idle.
async fn quiet(bed: &Bed) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut last = served(bed).await;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = served(bed).await;
        if now == last {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the controller never went idle"
        );
        last = now;
    }
}

/// Makes the controller reconcile `web` once more (a harmless annotation).
async fn touch(bed: &Bed, n: u32) {
    bed.patch(
        "web",
        &json!({"metadata": {"annotations": {"test/touch": n.to_string()}}}),
    )
    .await;
}

fn hits(bed: &Bed, id: u64) -> u64 {
    bed.tb
        .cloud
        .faults()
        .list()
        .iter()
        .find(|r| r.id == id)
        .map_or(0, |r| r.hits)
}

/// Runs `case` once with `effect`. A 500 hits every request matching the rule until the
/// failure is seen (then the rule is removed); a lost answer or drop hits one request.
async fn run(case: &Case, effect: FaultEffect) {
    let failing = matches!(effect, FaultEffect::Status { .. });
    let times = if failing { ATTEMPTS } else { 1 };
    let label = format!("{} / {effect:?}", case.action);
    let mut bed = bed().await;
    let before = match case.trigger {
        Trigger::Create => None,
        _ => {
            let s = bed.create_converged(&web(case.initial.clone()), 2).await;
            quiet(&bed).await;
            Some(s)
        }
    };
    let t0 = bed.now();

    // Out-of-band preparation, before the fault so it is not hit by it.
    let mut fip = None;
    match &case.trigger {
        Trigger::MemberDrift(change) => {
            let s = before.as_ref().expect("converged");
            let pool = s.pools[0]["uuid"].as_str().expect("pool uuid");
            let member = s.members[s.pools[0]["name"].as_str().expect("pool name")][0]["uuid"]
                .as_str()
                .expect("member uuid");
            bed.cloud(
                reqwest::Method::PATCH,
                &format!("/load-balancers/pools/{pool}/members/{member}"),
                Some(change.clone()),
            )
            .await;
        }
        Trigger::FloatingIp => fip = Some(bed.create_floating_ip().await),
        _ => {}
    }

    let install = |bed: &Bed, resource: Option<String>| {
        let mut r = FaultRule::new(Some(case.method), case.path, effect.clone());
        if !failing {
            r = r.times(1);
        }
        if let Some(id) = resource {
            r = r.resource(&id);
        }
        bed.tb.cloud.faults().add(r).expect("fault rule")
    };
    let rule = if case.on_new_pool {
        None
    } else {
        Some(install(&bed, None))
    };

    match &case.trigger {
        Trigger::Create => bed.create(&web(case.initial.clone())).await,
        Trigger::Patch(p) => bed.patch("web", p).await,
        Trigger::Ports(list) => {
            let p = ports(&bed, list).await;
            bed.patch("web", &p).await
        }
        Trigger::NodeJoin => {
            bed.tb.add_node("node-4").await.expect("node-4");
        }
        Trigger::Delete => {
            bed.services()
                .delete("web", &DeleteParams::default())
                .await
                .expect("delete");
        }
        Trigger::MemberDrift(_) => touch(&bed, 1).await,
        Trigger::FloatingIp => {
            let (network, _) = fip.clone().expect("floating IP");
            bed.patch("web", &ann("floating-ips", &format!("[\"{network}\"]")))
                .await;
        }
    }

    let rule = match rule {
        Some(r) => r,
        None => {
            let old: Vec<Value> = before
                .as_ref()
                .map(|s| s.pools.iter().map(|p| p["uuid"].clone()).collect())
                .unwrap_or_default();
            let new = eventually(&format!("{label}: a new pool"), LIMIT, || async {
                bed.cloud_list("/load-balancers/pools")
                    .await
                    .into_iter()
                    .find(|p| !old.contains(&p["uuid"]))
                    .and_then(|p| p["uuid"].as_str().map(str::to_string))
            })
            .await;
            install(&bed, Some(new))
        }
    };
    eventually(
        &format!("{label}: the fault hit {times}×"),
        LIMIT,
        || async { (hits(&bed, rule) >= times).then_some(()) },
    )
    .await;
    if failing {
        // Every attempt failed: the reconcile gave up at that step and said so.
        let event = bed
            .wait_event("web", "SyncLoadBalancerFailed", case.step)
            .await;
        assert_eq!(event.type_.as_deref(), Some("Warning"), "{label}");
        let message = event.message.unwrap_or_default();
        assert!(
            !message.contains(bed.tb.cloud.token()),
            "{label}: the token in an Event"
        );
        if matches!(case.trigger, Trigger::Delete) {
            // The load balancer is still there, so the finalizer must be too.
            let svc = bed.services().get("web").await.expect("still there");
            assert!(
                svc.metadata
                    .finalizers
                    .unwrap_or_default()
                    .contains(&FINALIZER.to_string()),
                "{label}: finalizer dropped before the load balancer was deleted"
            );
            assert_eq!(bed.cloud_list("/load-balancers").await.len(), 1, "{label}");
        }
        assert!(bed.tb.cloud.faults().remove(rule), "{label}: rule gone");
    }

    if matches!(case.trigger, Trigger::Delete) {
        bed.wait_service_gone("web").await;
        let s = bed.snap().await;
        assert!(
            s.lbs.is_empty() && s.pools.is_empty() && s.listeners.is_empty(),
            "{label}: left behind {s:?}"
        );
        return;
    }

    // Every pool with as many members as the others (each port selects the same nodes):
    // a port added to a serving load balancer gets its listener after its first member,
    // and its other members after that.
    let after = bed
        .converge(&format!("{label}: converged"), case.end_ports, |s| {
            (case.end)(s) && s.member_counts().windows(2).all(|w| w[0] == w[1])
        })
        .await;
    if let Err(e) = no_duplicates(&after) {
        panic!("{label}: {e}");
    }
    if let Some(before) = &before {
        assert_eq!(
            after.lb_uuid(),
            before.lb_uuid(),
            "{label}: the load balancer was replaced"
        );
        let av = bed.availability(&before.lb_uuid(), &t0).await;
        for port in case.steady_ports {
            let d = downtime(&av, *port);
            assert!(
                d <= case.bound,
                "{label}: {d} s down on port {port}, allowed {} s",
                case.bound
            );
        }
    }
    if let Some((_, address)) = &fip {
        bed.wait_floating_ip_on(address, &after.lb_uuid()).await;
    }

    // Converged for good: one more reconcile writes nothing.
    quiet(&bed).await;
    bed.clear_request_log().await;
    let reconciles = bed.ccm.as_ref().map_or(0, |c| c.service_reconciles());
    touch(&bed, 2).await;
    eventually(&format!("{label}: a reconcile after"), LIMIT, || async {
        let fetched = bed
            .request_log()
            .await
            .iter()
            .any(|r| r["method"] == "GET" && r["path"] == "/v1/floating-ips");
        let counted = bed.ccm.as_ref().map_or(0, |c| c.service_reconciles()) > reconciles;
        (fetched && counted).then_some(())
    })
    .await;
    quiet(&bed).await;
    let writes: Vec<String> = bed
        .request_log()
        .await
        .iter()
        .filter(|r| r["method"] != "GET")
        .map(|r| format!("{} {}", r["method"], r["path"]))
        .collect();
    assert!(
        writes.is_empty(),
        "{label}: still writing after convergence: {writes:?}"
    );
    bed.tb.cloud.faults().clear();
    drop(bed.ccm.take());
}

/// Runs `case` with every attempt failing, then with the answer lost (a read: dropped).
async fn check(case: Case) {
    run(&case, FaultEffect::status(500)).await;
    let second = if case.method == "GET" {
        FaultEffect::Drop
    } else {
        FaultEffect::LoseAnswer
    };
    run(&case, second).await;
}

fn case(
    action: &'static str,
    step: &'static str,
    method: &'static str,
    path: &'static str,
    trigger: Trigger,
) -> Case {
    Case {
        action,
        step,
        method,
        path,
        trigger,
        steady_ports: &[80, 443],
        bound: 0.0,
        end_ports: 2,
        end: any,
        initial: json!({}),
        on_new_pool: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_account_before_creating() {
    // A failed lookup must never be taken for "absent": no load balancer is created while
    // the list fails, exactly one afterwards.
    check(case(
        "fetch",
        "/v1/load-balancers",
        "GET",
        "/v1/load-balancers",
        Trigger::Create,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_existing_load_balancer_before_changing_it() {
    // The load balancer (or its pools and listeners) cannot be read: that is no reason to
    // build a second one.
    check(Case {
        end: |s| {
            s.listeners
                .iter()
                .all(|l| l["timeout_member_data_ms"] == 40000)
        },
        ..case(
            "fetch",
            "/v1/load-balancers",
            "GET",
            "/v1/load-balancers",
            Trigger::Patch(ann("timeout-member-data-ms", "40000")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_lb() {
    check(case(
        "create-lb",
        "create load balancer",
        "POST",
        "/v1/load-balancers",
        Trigger::Create,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_new_load_balancer_after_creating_it() {
    // The create succeeds, then the load balancer (and everything under it) cannot be read:
    // the next reconcile must find it by name instead of creating another.
    check(case(
        "wait for the load balancer",
        "/v1/load-balancers/",
        "GET",
        "/v1/load-balancers/*",
        Trigger::Create,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_lb() {
    check(Case {
        end: |s| s.lbs[0]["name"] == "renamed-web",
        ..case(
            "rename-lb",
            "rename load balancer",
            "PATCH",
            "/v1/load-balancers/*",
            Trigger::Patch(ann("name", "renamed-web")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_pool_for_an_algorithm_change() {
    // Make-before-break: the old pool serves until the new one is complete.
    check(Case {
        bound: 15.0,
        end: |s| {
            s.pools
                .iter()
                .all(|p| p["algorithm"] == "least_connections")
        },
        ..case(
            "create-pool",
            "create pool",
            "POST",
            "/v1/load-balancers/pools",
            Trigger::Patch(ann("pool-algorithm", "least_connections")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_pool_for_a_renamed_port() {
    check(Case {
        end: |s| s.pool_names() == ["tcp/https", "tcp/web"],
        ..case(
            "rename-pool",
            "rename pool",
            "PATCH",
            "/v1/load-balancers/pools/*",
            Trigger::Ports(&[("web", 80), ("https", 443)]),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_pool_for_a_removed_port() {
    check(Case {
        steady_ports: &[80],
        end_ports: 1,
        end: |s| s.pool_names() == ["tcp/http"],
        ..case(
            "delete-pool",
            "delete pool",
            "DELETE",
            "/v1/load-balancers/pools/*",
            Trigger::Ports(&[("http", 80)]),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_member_for_a_joining_node() {
    check(Case {
        end: |s| s.member_counts() == [4, 4],
        ..case(
            "create-member",
            "add member",
            "POST",
            "/v1/load-balancers/pools/*/members",
            Trigger::NodeJoin,
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enable_member_disabled_out_of_band() {
    check(Case {
        end: |s| s.members.values().flatten().all(|m| m["enabled"] == true),
        ..case(
            "enable-member",
            "enable member",
            "PATCH",
            "/v1/load-balancers/pools/*/members/*",
            Trigger::MemberDrift(json!({"enabled": false})),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_member_renamed_out_of_band() {
    check(Case {
        end: |s| {
            s.members
                .values()
                .flatten()
                .all(|m| m["name"] != "renamed-out-of-band")
        },
        ..case(
            "rename-member",
            "rename member",
            "PATCH",
            "/v1/load-balancers/pools/*/members/*",
            Trigger::MemberDrift(json!({"name": "renamed-out-of-band"})),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_member_for_a_narrower_node_selector() {
    check(Case {
        end: |s| s.member_counts() == [2, 2],
        ..case(
            "delete-member",
            "remove member",
            "DELETE",
            "/v1/load-balancers/pools/*/members/*",
            Trigger::Patch(ann(
                "node-selector",
                "kubernetes.io/hostname in (node-1,node-2)",
            )),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_listener_for_an_added_port() {
    check(Case {
        end_ports: 3,
        end: |s| s.listener_names() == ["tcp/443", "tcp/80", "tcp/8080"],
        ..case(
            "create-listener",
            "create listener",
            "POST",
            "/v1/load-balancers/listeners",
            Trigger::Ports(&[("http", 80), ("https", 443), ("alt", 8080)]),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_listener_for_a_timeout() {
    check(Case {
        end: |s| {
            s.listeners
                .iter()
                .all(|l| l["timeout_client_data_ms"] == 40000)
        },
        ..case(
            "update-listener",
            "update listener",
            "PATCH",
            "/v1/load-balancers/listeners/*",
            Trigger::Patch(ann("timeout-client-data-ms", "40000")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_listener_when_switching_to_a_new_pool() {
    // A protocol change builds the new pool, waits until its members are up, then replaces
    // the listener: the fault falls between the new pool being ready and the switch.
    check(Case {
        bound: 15.0,
        end: |s| s.pools.iter().all(|p| p["protocol"] == "proxy"),
        ..case(
            "delete-listener",
            "delete listener",
            "DELETE",
            "/v1/load-balancers/listeners/*",
            Trigger::Patch(ann("pool-protocol", "proxy")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_monitor_for_an_added_port() {
    check(Case {
        end_ports: 3,
        end: |s| s.pool_names() == ["tcp/alt", "tcp/http", "tcp/https"],
        ..case(
            "create-monitor",
            "create tcp health monitor",
            "POST",
            "/v1/load-balancers/health-monitors",
            Trigger::Ports(&[("http", 80), ("https", 443), ("alt", 8080)]),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_monitor_for_a_delay() {
    check(Case {
        end: |s| s.monitors.iter().all(|m| m["delay_s"] == 3),
        ..case(
            "update-monitor",
            "health monitor: delay",
            "PATCH",
            "/v1/load-balancers/health-monitors/*",
            Trigger::Patch(ann("health-monitor-delay-s", "3")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_monitor_for_a_type_change() {
    // A monitor type cannot be changed in place: it is replaced, and members are checked
    // anew (4 virtual s with the defaults, as without a fault).
    check(Case {
        bound: 4.0,
        end: |s| s.monitors.iter().all(|m| m["type"] == "http"),
        ..case(
            "delete-monitor",
            "delete tcp health monitor",
            "DELETE",
            "/v1/load-balancers/health-monitors/*",
            Trigger::Patch(ann("health-monitor-type", "http")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_new_members_to_come_up() {
    // The reads of the barrier (new members up before the listener switches) fail: the
    // switch must not happen blind, and must happen once the reads work again. A slow
    // monitor (20 s between checks) keeps the wait open long enough to meet the fault.
    check(Case {
        bound: 15.0,
        end: |s| s.pools.iter().all(|p| p["algorithm"] == "source_ip"),
        initial: ann("health-monitor-delay-s", "20")["metadata"]["annotations"].clone(),
        on_new_pool: true,
        ..case(
            "wait",
            "members of pool",
            "GET",
            "/v1/load-balancers/pools/*/members",
            Trigger::Patch(ann("pool-algorithm", "source_ip")),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assign_floating_ip() {
    check(case(
        "assign-fip",
        "assign floating IP",
        "PATCH",
        "/v1/floating-ips/*",
        Trigger::FloatingIp,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_lb_when_the_service_is_deleted() {
    check(case(
        "delete-lb",
        "/v1/load-balancers/",
        "DELETE",
        "/v1/load-balancers/*",
        Trigger::Delete,
    ))
    .await;
}
