//! Property tests of the planner. Services are generated as Kubernetes would store them
//! (1-4 ports, named or not, TCP and UDP, distinct and shared node ports, either traffic
//! policy), then changed: port names, numbers and node ports permuted, protocols flipped,
//! ports added and removed, the traffic policy and pool settings toggled, nodes joining and
//! leaving. Each plan is carried out in a model of the API (`ccm::service::testkit::lb_api`), under the
//! strict and the lenient member rule, and must:
//!
//! - be accepted by the API at every step (one listener per protocol and port, one monitor
//!   per pool, one member per address and port under the strict rule);
//! - never route a listener to another port's backend, even for a moment (a route that
//!   existed before the change may stay until the plan removes it, no new one may appear);
//! - converge in one pass: planning again finds nothing to do.

use ccm::service::pure::annotations::parse_service;
use ccm::service::pure::map::{self, NodeView, ServerView};
use ccm::service::pure::model::*;
use ccm::service::pure::plan::{Account, Impact, Ownership, Plan, plan};
use ccm::service::testkit::converged;
use ccm::service::testkit::lb_api::{LbApi, MemberRule};
use k8s_openapi::api::core::v1::Service;
use proptest::prelude::*;
use serde_json::json;
use std::net::IpAddr;
use uuid::Uuid;

fn subnet() -> Uuid {
    Uuid::parse_str("0b4e4b9a-9d1b-4bd3-9a39-6b2c1a8b3c6d").expect("uuid")
}

/// One `spec.ports` entry.
#[derive(Debug, Clone, PartialEq)]
struct PortDef {
    name: String,
    udp: bool,
    port: u16,
    node_port: u16,
}

/// What the generated Service sets beyond its ports.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    local: bool,
    health_check_node_port: u16,
    algorithm: &'static str,
    monitor: Option<&'static str>,
    /// Nodes (of 4) that carry the exclusion label.
    excluded: Vec<bool>,
}

#[derive(Debug, Clone, PartialEq)]
struct Svc {
    ports: Vec<PortDef>,
    settings: Settings,
}

impl Svc {
    /// Whether Kubernetes would store it: unique (protocol, port), unique (protocol, node
    /// port), unique names, and names on every port when there are several.
    fn valid(&self) -> bool {
        let n = self.ports.len();
        let distinct = |key: &dyn Fn(&PortDef) -> (bool, u16)| {
            let mut v: Vec<_> = self.ports.iter().map(key).collect();
            v.sort();
            v.dedup();
            v.len() == n
        };
        let mut names: Vec<&str> = self.ports.iter().map(|p| p.name.as_str()).collect();
        names.sort();
        names.dedup();
        n > 0
            && distinct(&|p| (p.udp, p.port))
            && distinct(&|p| (p.udp, p.node_port))
            && names.len() == n
            && (n == 1 || self.ports.iter().all(|p| !p.name.is_empty()))
    }

    fn service(&self) -> Service {
        let mut annotations = serde_json::Map::new();
        annotations.insert(
            "k8s.cloudscale.ch/loadbalancer-pool-algorithm".into(),
            json!(self.settings.algorithm),
        );
        if let Some(m) = self.settings.monitor {
            annotations.insert(
                "k8s.cloudscale.ch/loadbalancer-health-monitor-type".into(),
                json!(m),
            );
        }
        let ports: Vec<_> = self
            .ports
            .iter()
            .map(|p| {
                json!({"name": p.name, "protocol": if p.udp { "UDP" } else { "TCP" },
                       "port": p.port, "nodePort": p.node_port})
            })
            .collect();
        let mut spec = json!({"type": "LoadBalancer", "ports": ports});
        if self.settings.local {
            spec["externalTrafficPolicy"] = json!("Local");
            spec["healthCheckNodePort"] = json!(self.settings.health_check_node_port);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u-1",
                         "annotations": annotations},
            "spec": spec,
        }))
        .expect("a Service")
    }

    fn desired(&self) -> DesiredLb {
        let cfg = parse_service(&self.service())
            .expect("valid")
            .expect("handled");
        let (nodes, servers) = cluster(&self.settings.excluded);
        map::desired(&cfg, &nodes, &servers)
            .expect("mapped")
            .desired
    }
}

fn cluster(excluded: &[bool]) -> (Vec<NodeView>, Vec<ServerView>) {
    let mut nodes = Vec::new();
    let mut servers = Vec::new();
    for (i, ex) in excluded.iter().enumerate() {
        let uuid = Uuid::from_u128(1000 + i as u128);
        let mut labels = std::collections::BTreeMap::new();
        if *ex {
            labels.insert(map::EXCLUDE_LABEL.to_string(), String::new());
        }
        nodes.push(NodeView {
            name: format!("node-{i}"),
            labels,
            provider_id: Some(uuid),
            deleting: false,
            ready: true,
        });
        servers.push(ServerView {
            uuid,
            name: format!("node-{i}"),
            zone: "rma1".into(),
            private: vec![(IpAddr::from([10, 0, 0, 11 + i as u8]), subnet())],
        });
    }
    (nodes, servers)
}

const NAMES: [&str; 4] = ["http", "https", "dns", "admin"];
const NUMBERS: [u16; 5] = [53, 80, 443, 8080, 8443];
const NODE_PORTS: [u16; 6] = [30000, 30001, 30002, 30003, 30004, 30005];

fn arb_svc() -> impl Strategy<Value = Svc> {
    (1usize..=4)
        .prop_flat_map(|n| {
            (
                Just(n),
                Just(NAMES.to_vec()).prop_shuffle(),
                Just(NUMBERS.to_vec()).prop_shuffle(),
                Just(NODE_PORTS.to_vec()).prop_shuffle(),
                prop::collection::vec(any::<bool>(), n),
                any::<bool>(),
                arb_settings(),
            )
        })
        .prop_map(
            |(n, names, numbers, node_ports, udp, unnamed, settings)| Svc {
                ports: (0..n)
                    .map(|i| PortDef {
                        name: if n == 1 && unnamed {
                            String::new()
                        } else {
                            names[i].to_string()
                        },
                        udp: udp[i],
                        port: numbers[i],
                        node_port: node_ports[i],
                    })
                    .collect(),
                settings,
            },
        )
        .prop_filter("Kubernetes would refuse it", Svc::valid)
}

fn arb_settings() -> impl Strategy<Value = Settings> {
    (
        any::<bool>(),
        prop::sample::select(vec![32000u16, 32001]),
        prop::sample::select(vec!["round_robin", "least_connections", "source_ip"]),
        prop::sample::select(vec![None, Some("tcp"), Some("ping"), Some("udp-connect")]),
        prop::collection::vec(prop::bool::weighted(0.2), 4),
    )
        .prop_map(
            |(local, health_check_node_port, algorithm, monitor, excluded)| Settings {
                local,
                health_check_node_port,
                algorithm,
                monitor,
                excluded,
            },
        )
}

/// One edit of a Service.
#[derive(Debug, Clone)]
enum Edit {
    /// Names, numbers or node ports handed round among the ports (a rotation by `by`).
    RotateNames(usize),
    RotateNumbers(usize),
    RotateNodePorts(usize),
    FlipProtocol(usize),
    NewNodePort(usize, u16),
    NewNumber(usize, u16),
    Remove(usize),
    Add(PortDef),
    TogglePolicy,
    NewHealthCheckNodePort(u16),
    Algorithm(&'static str),
    Monitor(Option<&'static str>),
    Nodes(Vec<bool>),
}

fn arb_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (1usize..4).prop_map(Edit::RotateNames),
        (1usize..4).prop_map(Edit::RotateNumbers),
        (1usize..4).prop_map(Edit::RotateNodePorts),
        (0usize..4).prop_map(Edit::FlipProtocol),
        (0usize..4, 30006u16..30009).prop_map(|(i, p)| Edit::NewNodePort(i, p)),
        (0usize..4, prop::sample::select(vec![81u16, 444, 9090]))
            .prop_map(|(i, p)| Edit::NewNumber(i, p)),
        (0usize..4).prop_map(Edit::Remove),
        (
            any::<bool>(),
            prop::sample::select(vec![81u16, 444, 8080]),
            30009u16..30011
        )
            .prop_map(|(udp, port, node_port)| Edit::Add(PortDef {
                name: "extra".into(),
                udp,
                port,
                node_port
            })),
        Just(Edit::TogglePolicy),
        prop::sample::select(vec![32000u16, 32002]).prop_map(Edit::NewHealthCheckNodePort),
        prop::sample::select(vec!["round_robin", "source_ip"]).prop_map(Edit::Algorithm),
        prop::sample::select(vec![None, Some("http"), Some("udp-connect")]).prop_map(Edit::Monitor),
        prop::collection::vec(prop::bool::weighted(0.3), 4).prop_map(Edit::Nodes),
    ]
}

fn rotate<T: Clone>(values: &[T], by: usize) -> Vec<T> {
    let n = values.len();
    (0..n).map(|i| values[(i + by) % n].clone()).collect()
}

fn edit(s: &Svc, e: &Edit) -> Svc {
    let mut s = s.clone();
    let n = s.ports.len();
    match e {
        Edit::RotateNames(by) => {
            let v = rotate(
                &s.ports.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
                *by,
            );
            for (p, x) in s.ports.iter_mut().zip(v) {
                p.name = x;
            }
        }
        Edit::RotateNumbers(by) => {
            let v = rotate(&s.ports.iter().map(|p| p.port).collect::<Vec<_>>(), *by);
            for (p, x) in s.ports.iter_mut().zip(v) {
                p.port = x;
            }
        }
        Edit::RotateNodePorts(by) => {
            let v = rotate(
                &s.ports.iter().map(|p| p.node_port).collect::<Vec<_>>(),
                *by,
            );
            for (p, x) in s.ports.iter_mut().zip(v) {
                p.node_port = x;
            }
        }
        Edit::FlipProtocol(i) => s.ports[i % n].udp = !s.ports[i % n].udp,
        Edit::NewNodePort(i, np) => s.ports[i % n].node_port = *np,
        Edit::NewNumber(i, port) => s.ports[i % n].port = *port,
        Edit::Remove(i) => {
            if n > 1 {
                s.ports.remove(i % n);
            }
        }
        Edit::Add(p) => {
            if s.ports.len() == 1 && s.ports[0].name.is_empty() {
                s.ports[0].name = "main".into();
            }
            s.ports.push(p.clone());
        }
        Edit::TogglePolicy => s.settings.local = !s.settings.local,
        Edit::NewHealthCheckNodePort(hc) => s.settings.health_check_node_port = *hc,
        Edit::Algorithm(a) => s.settings.algorithm = a,
        Edit::Monitor(m) => s.settings.monitor = *m,
        Edit::Nodes(ex) => s.settings.excluded = ex.clone(),
    }
    s
}

fn arb_change() -> impl Strategy<Value = (Svc, Svc, Vec<Edit>)> {
    (arb_svc(), prop::collection::vec(arb_edit(), 1..=3))
        .prop_map(|(before, edits)| {
            let after = edits.iter().fold(before.clone(), |s, e| edit(&s, e));
            (before, after, edits)
        })
        .prop_filter("Kubernetes would refuse the edit", |(_, after, _)| {
            after.valid()
        })
}

fn owner() -> Ownership {
    Ownership::default()
}

fn plan_of(d: &DesiredLb, a: Option<&ActualLb>) -> Plan {
    plan(d, a, &Account::default(), &owner())
}

/// Carries out the plan from `before` to `after` and checks the three properties.
fn check(before: &ActualLb, after: &DesiredLb, rule: MemberRule) -> Result<Plan, TestCaseError> {
    let p = plan_of(after, Some(before));
    prop_assert!(p.refusals.is_empty(), "{}", p.describe());
    let mut sim = LbApi::new(Some(before), rule);
    let initial = sim.routes();
    let run = sim.run_routed(&initial, after, &p);
    prop_assert!(run.is_ok(), "{:?}\n{}", run, p.describe());
    let misrouted = run.unwrap_or_default();
    prop_assert!(
        misrouted.is_empty(),
        "a listener was routed to another port's backend: {:?}\n{}",
        misrouted,
        p.describe()
    );
    let result = sim.lb.clone().expect("a load balancer");
    let again = plan_of(after, Some(&result));
    prop_assert!(
        again.is_converged(),
        "not converged in one pass:\nfirst:\n{}\nthen:\n{}",
        p.describe(),
        again.describe()
    );
    Ok(p)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn every_edit_is_carried_out_safely_in_one_pass((before, after, edits) in arb_change()) {
        let from = converged(&before.desired(), &owner());
        for rule in [MemberRule::Strict, MemberRule::Lenient] {
            check(&from, &after.desired(), rule)
                .map_err(|e| TestCaseError::fail(format!("{e}\nedits: {edits:?}\nrule: {rule:?}")))?;
        }
    }

    #[test]
    fn an_interrupted_plan_is_finished_by_the_next(
        (before, after, edits) in arb_change(),
        cut in 0.0f64..1.0,
    ) {
        // The CCM stopped (crash, failed request, a barrier that did not hold) after some
        // steps; the next plan starts from there and must still never misroute and converge.
        let from = converged(&before.desired(), &owner());
        let d = after.desired();
        let first = plan_of(&d, Some(&from));
        let k = (first.steps.len() as f64 * cut) as usize;
        let mut sim = LbApi::new(Some(&from), MemberRule::Strict);
        let initial = sim.routes();
        let partial = Plan { steps: first.steps[..k].to_vec(), ..Plan::default() };
        let run = sim.run(&d, &partial, |_| ());
        prop_assert!(run.is_ok(), "{:?}", run);
        let halfway = sim.lb.clone().expect("a load balancer");
        let second = plan_of(&d, Some(&halfway));
        let run = sim.run_routed(&initial, &d, &second);
        prop_assert!(run.is_ok(), "{:?}\nedits: {:?}\nafter {} steps of\n{}\nthen\n{}", run, edits, k, first.describe(), second.describe());
        let misrouted = run.unwrap_or_default();
        prop_assert!(misrouted.is_empty(), "misrouted {:?}\nedits: {:?}\nthen\n{}", misrouted, edits, second.describe());
        let again = plan_of(&d, sim.lb.as_ref());
        prop_assert!(again.is_converged(), "{}", again.describe());
    }

    #[test]
    fn a_new_service_is_built_in_one_pass(s in arb_svc()) {
        let d = s.desired();
        let p = plan_of(&d, None);
        let mut sim = LbApi::new(None, MemberRule::Strict);
        let run = sim.run(&d, &p, |_| ());
        prop_assert!(run.is_ok(), "{:?}", run);
        let again = plan_of(&d, sim.lb.as_ref());
        prop_assert!(again.is_converged(), "{}", again.describe());
    }

    #[test]
    fn a_converged_state_plans_nothing(s in arb_svc()) {
        let d = s.desired();
        let p = plan_of(&d, Some(&converged(&d, &owner())));
        prop_assert!(p.is_converged(), "{}", p.describe());
        prop_assert_eq!(p.impact(), Impact::None);
    }

    #[test]
    fn planning_is_deterministic((before, after, _) in arb_change()) {
        let actual = converged(&before.desired(), &owner());
        let d = after.desired();
        prop_assert_eq!(plan_of(&d, Some(&actual)), plan_of(&d, Some(&actual)));
    }

    #[test]
    fn plans_only_wait_where_members_are_replaced((before, after, _) in arb_change()) {
        // A barrier always guards the removal of members or of a listener's pool: nothing
        // that serves goes before it.
        let p = plan_of(&after.desired(), Some(&converged(&before.desired(), &owner())));
        for (i, s) in p.steps.iter().enumerate() {
            if s.action.kind() == "wait" {
                let guarded = p.steps[i + 1..].iter().any(|t| t.group == s.group && matches!(t.action.kind(), "delete-member" | "delete-listener" | "delete-pool" | "update-listener"));
                prop_assert!(guarded, "a barrier that guards nothing:\n{}", p.describe());
            }
        }
    }

    #[test]
    fn impact_classes_follow_the_change_table(s in arb_svc(), change in 0usize..5) {
        let d = s.desired();
        let actual = converged(&d, &owner());
        let mut after = d.clone();
        let expected = match change {
            0 => { after.name = format!("{}-renamed", d.name); Impact::None }
            1 => { after.pools[0].listener.timeout_member_data_ms += 1; Impact::None }
            2 => {
                prop_assume!(!d.pools[0].members.is_empty());
                after.pools[0].algorithm = if d.pools[0].algorithm == PoolAlgorithm::RoundRobin { PoolAlgorithm::SourceIp } else { PoolAlgorithm::RoundRobin };
                Impact::ListenerRecreate
            }
            3 => { after.pools[0].monitor.delay_s += 1; Impact::Minimal }
            _ => { after.flavor = "lb-bigger".into(); Impact::Refused }
        };
        prop_assert_eq!(plan_of(&after, Some(&actual)).impact(), expected);
    }
}
