//! Property tests of the planner: a converged state plans nothing; applying a plan (here
//! with a small interpreter of the actions) converges in one pass from any starting point;
//! each kind of change gets the impact class of the change table.

use ccm::service::model::*;
use ccm::service::plan::{Action, Impact, PoolRef, converged, plan};
use proptest::prelude::*;
use std::net::IpAddr;
use uuid::Uuid;

fn subnet() -> Uuid {
    Uuid::parse_str("0b4e4b9a-9d1b-4bd3-9a39-6b2c1a8b3c6d").expect("uuid")
}

prop_compose! {
    fn arb_member()(host in 10u8..40, node_port in 30000u16..30010, hc in prop::option::of(31000u16..31002)) -> Member {
        let address = IpAddr::from([10, 0, 0, host]);
        Member {
            name: format!("{address}:{node_port}"),
            address,
            subnet: subnet(),
            protocol_port: node_port,
            monitor_port: hc.unwrap_or(node_port),
        }
    }
}

prop_compose! {
    fn arb_monitor()(kind in prop::sample::select(vec!["tcp", "http", "ping"]), delay in 1i64..5, up in 1i64..4) -> Monitor {
        Monitor {
            kind: kind.to_string(),
            delay_s: delay,
            timeout_s: 1,
            up_threshold: up,
            down_threshold: 3,
            http: (kind == "http").then(|| HttpCheck {
                method: "GET".into(),
                url_path: "/".into(),
                version: "1.1".into(),
                host: None,
                expected_codes: vec!["200".into()],
            }),
        }
    }
}

prop_compose! {
    fn arb_pool(index: usize)(
        port_name in prop::sample::select(vec!["", "http", "web", "api"]),
        port in prop::sample::select(vec![80u16, 443, 8080]),
        algorithm in prop::sample::select(vec!["round_robin", "least_connections", "source_ip"]),
        protocol in prop::sample::select(vec!["tcp", "proxy", "proxyv2"]),
        members in prop::collection::vec(arb_member(), 0..4),
        monitor in arb_monitor(),
        cidrs in prop::sample::select(vec![vec![], vec!["10.0.0.0/8".to_string()]]),
        timeout in prop::sample::select(vec![50000i64, 60000]),
    ) -> DesiredPool {
        let mut members = members;
        members.sort_by_key(|m| m.identity());
        members.dedup_by_key(|m| m.identity());
        // Distinct ports per pool index, so listeners never collide.
        let port = port + index as u16;
        DesiredPool {
            name: if port_name.is_empty() { format!("tcp{index}") } else { format!("tcp/{port_name}{index}") },
            algorithm: algorithm.into(),
            protocol: protocol.into(),
            members,
            listener: Listener {
                name: format!("tcp/{port}"),
                protocol: "tcp".into(),
                port,
                allowed_cidrs: cidrs,
                timeout_client_data_ms: timeout,
                timeout_member_connect_ms: 5000,
                timeout_member_data_ms: 50000,
            },
            monitor,
        }
    }
}

fn arb_desired() -> impl Strategy<Value = DesiredLb> {
    (
        prop::sample::select(vec!["lb-a", "lb-b"]),
        arb_pool(0),
        arb_pool(1),
        0usize..=2,
        prop::collection::vec(
            prop::sample::select(vec!["45.132.236.10/32", "45.132.236.11/32"]),
            0..2,
        ),
    )
        .prop_map(|(name, p0, p1, n, fips)| {
            let mut fips: Vec<String> = fips.into_iter().map(String::from).collect();
            fips.sort();
            fips.dedup();
            DesiredLb {
                name: name.into(),
                flavor: "lb-standard".into(),
                zone: Some("rma1".into()),
                vips: None,
                pools: vec![p0, p1].into_iter().take(n).collect(),
                floating_ips: fips,
            }
        })
}

/// Carries out a plan on an actual state, as the API would (deleting a pool deletes what is
/// in it; waits do nothing here).
fn simulate(actual: &ActualLb, desired: &DesiredLb, steps: &[Action]) -> ActualLb {
    let mut a = actual.clone();
    let mut new_pools: Vec<(usize, Uuid)> = Vec::new();
    let pool_uuid = |r: &PoolRef, new_pools: &[(usize, Uuid)]| match r {
        PoolRef::Existing(u) => *u,
        PoolRef::New(i) => new_pools
            .iter()
            .find(|(j, _)| j == i)
            .map(|(_, u)| *u)
            .expect("created earlier"),
    };
    for step in steps {
        match step {
            Action::CreateLb => {}
            Action::RenameLb { name, .. } => a.name = name.clone(),
            Action::CreatePool {
                new,
                name,
                algorithm,
                protocol,
            } => {
                let uuid = Uuid::new_v4();
                new_pools.push((*new, uuid));
                a.pools.push(ActualPool {
                    uuid,
                    name: name.clone(),
                    algorithm: algorithm.clone(),
                    protocol: protocol.clone(),
                    members: vec![],
                    listeners: vec![],
                    monitors: vec![],
                });
            }
            Action::RenamePool { uuid, name } => {
                if let Some(p) = a.pools.iter_mut().find(|p| p.uuid == *uuid) {
                    p.name = name.clone();
                }
            }
            Action::DeletePool { uuid, .. } => a.pools.retain(|p| p.uuid != *uuid),
            Action::CreateMember { pool, member } => {
                let u = pool_uuid(pool, &new_pools);
                if let Some(p) = a.pools.iter_mut().find(|p| p.uuid == u) {
                    p.members.push(ActualMember {
                        uuid: Uuid::new_v4(),
                        member: member.clone(),
                        enabled: true,
                    });
                }
            }
            Action::EnableMember { pool, uuid } | Action::RenameMember { pool, uuid, .. } => {
                if let Some(m) = a
                    .pools
                    .iter_mut()
                    .find(|p| p.uuid == *pool)
                    .and_then(|p| p.members.iter_mut().find(|m| m.uuid == *uuid))
                {
                    if let Action::RenameMember { name, .. } = step {
                        m.member.name = name.clone();
                    } else {
                        m.enabled = true;
                    }
                }
            }
            Action::DeleteMember { pool, uuid, .. } => {
                if let Some(p) = a.pools.iter_mut().find(|p| p.uuid == *pool) {
                    p.members.retain(|m| m.uuid != *uuid);
                }
            }
            Action::CreateListener { pool, listener } => {
                let u = pool_uuid(pool, &new_pools);
                if let Some(p) = a.pools.iter_mut().find(|p| p.uuid == u) {
                    p.listeners.push(ActualListener {
                        uuid: Uuid::new_v4(),
                        listener: listener.clone(),
                    });
                }
            }
            Action::UpdateListener { uuid, changes } => {
                for p in &mut a.pools {
                    for l in p.listeners.iter_mut().filter(|l| l.uuid == *uuid) {
                        let l = &mut l.listener;
                        if let Some(v) = &changes.name {
                            l.name = v.clone();
                        }
                        if let Some(v) = &changes.protocol {
                            l.protocol = v.clone();
                        }
                        if let Some(v) = changes.port {
                            l.port = v;
                        }
                        if let Some(v) = &changes.allowed_cidrs {
                            l.allowed_cidrs = v.clone();
                        }
                        if let Some(v) = changes.timeout_client_data_ms {
                            l.timeout_client_data_ms = v;
                        }
                        if let Some(v) = changes.timeout_member_connect_ms {
                            l.timeout_member_connect_ms = v;
                        }
                        if let Some(v) = changes.timeout_member_data_ms {
                            l.timeout_member_data_ms = v;
                        }
                    }
                }
            }
            Action::DeleteListener { uuid, .. } => {
                for p in &mut a.pools {
                    p.listeners.retain(|l| l.uuid != *uuid);
                }
            }
            Action::CreateMonitor { pool, monitor } => {
                let u = pool_uuid(pool, &new_pools);
                if let Some(p) = a.pools.iter_mut().find(|p| p.uuid == u) {
                    p.monitors.push(ActualMonitor {
                        uuid: Uuid::new_v4(),
                        monitor: monitor.clone(),
                    });
                }
            }
            Action::UpdateMonitor { uuid, changes } => {
                for p in &mut a.pools {
                    for m in p.monitors.iter_mut().filter(|m| m.uuid == *uuid) {
                        let m = &mut m.monitor;
                        if let Some(v) = changes.delay_s {
                            m.delay_s = v;
                        }
                        if let Some(v) = changes.timeout_s {
                            m.timeout_s = v;
                        }
                        if let Some(v) = changes.up_threshold {
                            m.up_threshold = v;
                        }
                        if let Some(v) = changes.down_threshold {
                            m.down_threshold = v;
                        }
                        if let Some(v) = &changes.http {
                            m.http = Some(v.clone());
                        }
                    }
                }
            }
            Action::DeleteMonitor { uuid } => {
                for p in &mut a.pools {
                    p.monitors.retain(|m| m.uuid != *uuid);
                }
            }
            Action::WaitMembersUp { .. } => {}
            Action::AssignFloatingIp { network } => a.floating_ips.push(network.clone()),
        }
    }
    let _ = desired;
    a
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_converged_state_plans_nothing(d in arb_desired()) {
        let p = plan(&d, Some(&converged(&d)));
        prop_assert!(p.is_converged(), "{}", p.describe());
        prop_assert_eq!(p.impact(), Impact::None);
    }

    #[test]
    fn planning_is_deterministic(a in arb_desired(), d in arb_desired()) {
        let actual = converged(&a);
        prop_assert_eq!(plan(&d, Some(&actual)), plan(&d, Some(&actual)));
    }

    #[test]
    fn one_pass_converges_from_any_state(a in arb_desired(), d in arb_desired()) {
        let actual = converged(&a);
        let p = plan(&d, Some(&actual));
        prop_assert!(p.refusals.is_empty());
        let steps: Vec<Action> = p.steps.iter().map(|s| s.action.clone()).collect();
        let after = simulate(&actual, &d, &steps);
        let again = plan(&d, Some(&after));
        prop_assert!(again.is_converged(), "first:\n{}\nthen:\n{}", p.describe(), again.describe());
    }

    #[test]
    fn new_members_are_always_up_before_old_ones_go(a in arb_desired(), d in arb_desired()) {
        let p = plan(&d, Some(&converged(&a)));
        // In every pool, a member deletion never precedes a creation of that pool's members
        // unless no member is created at all.
        for (i, s) in p.steps.iter().enumerate() {
            if let Action::DeleteMember { pool, .. } = &s.action {
                let created_later = p.steps[i..].iter().any(|t| matches!(&t.action, Action::CreateMember { pool: PoolRef::Existing(u), .. } if u == pool));
                prop_assert!(!created_later, "delete before create:\n{}", p.describe());
            }
        }
    }

    #[test]
    fn impact_classes_follow_the_change_table(d in arb_desired(), change in 0usize..6) {
        prop_assume!(!d.pools.is_empty());
        let actual = converged(&d);
        let mut after = d.clone();
        let expected = match change {
            0 => { after.name = format!("{}-renamed", d.name); Impact::None }
            1 => { after.pools[0].listener.timeout_member_data_ms += 1; Impact::None }
            2 => {
                after.pools[0].algorithm = if d.pools[0].algorithm == "round_robin" { "source_ip".into() } else { "round_robin".into() };
                Impact::ListenerRecreate
            }
            3 => { after.pools[0].monitor.delay_s += 1; Impact::Minimal }
            4 => { after.flavor = "lb-bigger".into(); Impact::Refused }
            _ => { after.pools[0].listener.port += 1000; after.pools[0].listener.name = format!("tcp/{}", after.pools[0].listener.port); Impact::Minimal }
        };
        prop_assert_eq!(plan(&after, Some(&actual)).impact(), expected);
    }
}
