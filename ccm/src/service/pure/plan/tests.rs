use super::*;
use crate::service::testkit::converged;
use crate::service::testkit::fixtures::Sample;
use crate::service::testkit::lb_api::{LbApi, MemberRule};
use std::net::IpAddr;

mod recovery;

fn sample() -> Sample {
    Sample {
        subnet: Uuid::from_u128(0x0b4e4b9a_9d1b_4bd3_9a39_6b2c1a8b3c6d),
        nodes: vec![ip("10.0.0.11"), ip("10.0.0.12")],
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

fn member(address: &str, node_port: u16) -> Member {
    sample().member(ip(address), node_port)
}

fn pool(name: &str, port: u16, node_port: u16) -> DesiredPool {
    sample().pool(name, port, node_port)
}

fn tcp(name: &str, port: u16, node_port: u16) -> DesiredPool {
    sample().port(name, Family::Tcp, port, node_port)
}

fn desired() -> DesiredLb {
    sample().desired()
}

fn owner() -> Ownership {
    Ownership::default()
}

fn plan_of(d: &DesiredLb, a: Option<&ActualLb>) -> Plan {
    plan(d, a, &Account::default(), &owner())
}

fn kinds(p: &Plan) -> Vec<&'static str> {
    p.steps.iter().map(|s| s.action.kind()).collect()
}

/// Where the first step of `kind` (for `port`, if given) stands in the plan.
fn first(p: &Plan, kind: &str, port: Option<&str>) -> usize {
    p.steps
        .iter()
        .position(|s| s.action.kind() == kind && port.is_none_or(|n| s.port.as_deref() == Some(n)))
        .unwrap_or_else(|| panic!("no {kind}:\n{}", p.describe()))
}

/// Applies the plan in the API model (strict member rule), checks that no step routes a
/// port to another port's backend, and that planning again finds nothing to do.
fn apply(before: &ActualLb, after: &DesiredLb, rule: MemberRule) -> (Plan, ActualLb) {
    let p = plan_of(after, Some(before));
    let mut sim = LbApi::new(Some(before), rule);
    let initial = sim.routes();
    let violations = sim
        .run_routed(&initial, after, &p)
        .unwrap_or_else(|e| panic!("{e}\n{}", p.describe()));
    assert!(
        violations.is_empty(),
        "misrouted: {violations:?}\n{}",
        p.describe()
    );
    let result = sim.lb.clone().expect("a load balancer");
    let again = plan_of(after, Some(&result));
    assert!(
        again.is_converged(),
        "not converged in one pass:\nfirst:\n{}\nthen:\n{}",
        p.describe(),
        again.describe()
    );
    (p, result)
}

#[test]
fn a_converged_load_balancer_plans_nothing() {
    let d = desired();
    let p = plan_of(&d, Some(&converged(&d, &owner())));
    assert!(p.is_converged(), "{}", p.describe());
    assert_eq!(p.impact(), Impact::None);
}

#[test]
fn a_new_service_builds_everything_once_after_provisioning() {
    let p = plan_of(&desired(), None);
    let k = kinds(&p);
    assert_eq!(k[..2], ["create-lb", "wait-lb"]);
    assert_eq!(k.iter().filter(|k| **k == "create-pool").count(), 2);
    assert_eq!(k.iter().filter(|k| **k == "create-member").count(), 4);
    assert_eq!(k.iter().filter(|k| **k == "create-listener").count(), 2);
    assert_eq!(k.iter().filter(|k| **k == "create-monitor").count(), 2);
    assert_eq!(p.impact(), Impact::None);
    let mut sim = LbApi::new(None, MemberRule::Strict);
    sim.run(&desired(), &p, |_| {}).expect("applies");
    let again = plan_of(&desired(), sim.lb.as_ref());
    assert!(again.is_converged(), "{}", again.describe());
}

#[test]
fn a_renamed_port_renames_the_pool_in_place() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].name = "tcp/web".into();
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(kinds(&p), ["rename-pool"], "{}", p.describe());
    assert_eq!(p.impact(), Impact::None);
}

#[test]
fn a_renumbered_port_patches_the_listener() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].listener.port = 8080;
    after.pools[0].listener.name = "tcp/8080".into();
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(kinds(&p), ["update-listener"], "{}", p.describe());
    let Action::UpdateListener { changes, .. } = &p.steps[0].action else {
        panic!("not an update")
    };
    assert_eq!(changes.port, Some(8080));
    assert_eq!(changes.name.as_deref(), Some("tcp/8080"));
    assert!(p.impact() <= Impact::Minimal);
    assert!(
        p.describe().contains("port 80 → 8080"),
        "plain words: {}",
        p.describe()
    );
}

#[test]
fn an_algorithm_change_builds_a_new_pool_before_switching_the_listener() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(
        kinds(&p),
        [
            "create-pool",
            "create-monitor",
            "create-member",
            "create-member",
            "wait",
            "delete-listener",
            "create-listener",
            "delete-pool"
        ],
        "{}",
        p.describe()
    );
    assert_eq!(p.impact(), Impact::ListenerRecreate);
}

#[test]
fn a_retry_reuses_the_replacement_pool_and_a_revert_removes_it() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].algorithm = PoolAlgorithm::SourceIp;
    let start = converged(&before, &owner());
    let p = plan_of(&after, Some(&start));
    // Carry out the make phase only: the barrier did not hold, the controller comes back.
    let wait = p
        .steps
        .iter()
        .position(|s| s.action.kind() == "wait")
        .expect("a barrier");
    let mut sim = LbApi::new(Some(&start), MemberRule::Strict);
    let partial = Plan {
        steps: p.steps[..wait].to_vec(),
        ..Plan::default()
    };
    sim.run(&after, &partial, |_| {}).expect("make phase");
    let halfway = sim.lb.clone().expect("lb");
    assert_eq!(halfway.pools.len(), 3);

    let retry = plan_of(&after, Some(&halfway));
    assert!(
        !kinds(&retry).contains(&"create-pool"),
        "the replacement is reused: {}",
        retry.describe()
    );
    let (_, done) = apply(&halfway, &after, MemberRule::Strict);
    assert_eq!(done.pools.len(), 2);

    let revert = plan_of(&before, Some(&halfway));
    assert_eq!(
        kinds(&revert),
        ["delete-pool"],
        "back to the old pool: {}",
        revert.describe()
    );
}

#[test]
fn a_node_port_change_adds_new_members_before_removing_old_ones() {
    let before = desired();
    let mut after = before.clone();
    after.pools[1] = pool("tcp/https", 443, 31443);
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(
        kinds(&p),
        [
            "create-member",
            "create-member",
            "wait",
            "delete-member",
            "delete-member"
        ],
        "{}",
        p.describe()
    );
    assert_eq!(p.impact(), Impact::MemberRecreate);
}

#[test]
fn node_port_changes_of_several_ports_create_one_member_per_port_in_turn() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0] = pool("tcp/http", 80, 31080);
    after.pools[1] = pool("tcp/https", 443, 31443);
    let p = plan_of(&after, Some(&converged(&before, &owner())));
    let ports: Vec<&str> = p
        .steps
        .iter()
        .filter(|s| s.action.kind() == "create-member")
        .filter_map(|s| s.port.as_deref())
        .collect();
    assert_eq!(ports, ["tcp/http", "tcp/https", "tcp/http", "tcp/https"]);
}

#[test]
fn a_joining_node_costs_only_its_members() {
    let before = desired();
    let mut after = before.clone();
    for p in &mut after.pools {
        let np = p.members[0].protocol_port;
        p.members.push(member("10.0.0.13", np));
    }
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(kinds(&p), ["create-member", "create-member"]);
    assert_eq!(p.impact(), Impact::Minimal);
}

#[test]
fn a_leaving_node_is_removed_at_once() {
    let before = desired();
    let mut after = before.clone();
    for p in &mut after.pools {
        p.members.truncate(1);
    }
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(kinds(&p), ["delete-member", "delete-member"]);
}

#[test]
fn removing_every_member_is_announced_as_an_outage() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].members.clear();
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(p.impact(), Impact::Outage, "{}", p.describe());
}

#[test]
fn a_monitor_type_change_replaces_the_monitor_and_fields_update_in_place() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].monitor.delay_s = 5;
    after.pools[1].monitor.kind = HealthMonitorType::Http;
    after.pools[1].monitor.http = Some(HttpCheck {
        method: "GET".into(),
        url_path: "/".into(),
        version: "1.1".into(),
        host: None,
        expected_codes: vec!["200".into()],
    });
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(
        kinds(&p),
        ["update-monitor", "delete-monitor", "create-monitor"],
        "{}",
        p.describe()
    );
    assert_eq!(p.impact(), Impact::Minimal);
}

#[test]
fn http_options_of_a_non_http_monitor_never_differ() {
    let d = desired();
    let mut actual = converged(&d, &owner());
    // An API that echoes the options it was sent for a TCP check, or reports some.
    actual.pools[0].monitors[0].monitor.http = Some(HttpCheck {
        method: "GET".into(),
        url_path: "/x".into(),
        version: "1.0".into(),
        host: Some("example.com".into()),
        expected_codes: vec!["200".into()],
    });
    let p = plan_of(&d, Some(&actual));
    assert!(p.is_converged(), "{}", p.describe());
}

#[test]
fn a_removed_http_host_is_patched_away() {
    let before = {
        let mut d = desired();
        d.pools[0].monitor.kind = HealthMonitorType::Http;
        d.pools[0].monitor.http = Some(HttpCheck {
            method: "GET".into(),
            url_path: "/".into(),
            version: "1.1".into(),
            host: Some("Example.COM".into()),
            expected_codes: vec!["200".into()],
        });
        d
    };
    let mut after = before.clone();
    if let Some(h) = &mut after.pools[0].monitor.http {
        h.host = None;
    }
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(kinds(&p), ["update-monitor"]);
}

#[test]
fn timeouts_and_names_are_impact_free() {
    let before = desired();
    let mut after = before.clone();
    after.name = "renamed".into();
    after.pools[0].listener.timeout_client_data_ms = 60000;
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    // The rename, which serves nobody, goes last.
    assert_eq!(kinds(&p), ["update-listener", "rename-lb"]);
    assert_eq!(p.impact(), Impact::None);
}

#[test]
fn flavor_zone_and_vip_changes_are_refused_but_the_rest_applies() {
    let before = desired();
    let mut after = before.clone();
    after.flavor = "lb-large".into();
    after.zone = Some("lpg1".into());
    after.vips = Some(vec![Vip {
        subnet: sample().subnet,
        address: None,
    }]);
    after.pools[0].listener.timeout_member_data_ms = 1;
    let p = plan_of(&after, Some(&converged(&before, &owner())));
    let refused: Vec<&str> = p.refusals.iter().map(|r| r.annotation).collect();
    assert_eq!(
        refused,
        [
            LOADBALANCER_FLAVOR,
            LOADBALANCER_ZONE,
            LOADBALANCER_VIP_ADDRESSES
        ]
    );
    assert_eq!(kinds(&p), ["update-listener"], "safe changes still apply");
    assert_eq!(p.impact(), Impact::Refused);
    assert!(p.describe().contains("re-create the Service"));
}

#[test]
fn removed_ports_and_foreign_pools_are_deleted_floating_ips_assigned() {
    let before = desired();
    let mut after = before.clone();
    after.pools.truncate(1);
    let fip: IpNet = "45.132.236.10/32".parse().expect("net");
    after.floating_ips = vec![fip];
    let account = Account {
        floating_ips: vec![AccountFloatingIp::free(fip)],
        ..Account::default()
    };
    let p = plan(
        &after,
        Some(&converged(&before, &owner())),
        &account,
        &owner(),
    );
    assert_eq!(kinds(&p), ["delete-pool", "assign-fip"]);
}

#[test]
fn a_floating_ip_written_with_another_prefix_is_assigned_once_with_a_note() {
    let d = {
        let mut d = desired();
        d.floating_ips = vec!["2a06:c02:0:100::/64".parse().expect("net")];
        d
    };
    let real: IpNet = "2a06:c02:0:100::/56".parse().expect("net");
    let account = Account {
        floating_ips: vec![AccountFloatingIp::free(real)],
        ..Account::default()
    };
    let mut actual = converged(&d, &owner());
    actual.floating_ips = vec![];
    let p = plan(&d, Some(&actual), &account, &owner());
    assert_eq!(kinds(&p), ["assign-fip"]);
    assert!(
        matches!(&p.steps[0].action, Action::AssignFloatingIp { network, from: None } if *network == real)
    );
    assert!(p.notes[0].message.contains("2a06:c02:0:100::/56"));
    actual.floating_ips = vec![real];
    let p = plan(&d, Some(&actual), &account, &owner());
    assert!(p.is_converged(), "assigned already: {}", p.describe());
}

#[test]
fn a_floating_ip_missing_from_the_account_is_refused() {
    let mut d = desired();
    d.floating_ips = vec!["45.132.236.99/32".parse().expect("net")];
    let p = plan(
        &d,
        Some(&converged(&desired(), &owner())),
        &Account::default(),
        &owner(),
    );
    assert!(p.steps.is_empty());
    assert_eq!(p.refusals[0].annotation, LOADBALANCER_FLOATING_IPS);
}

fn with_fip(holder: Option<Holder>, region: Option<&str>) -> (DesiredLb, Account) {
    let fip: IpNet = "45.132.236.14/32".parse().expect("net");
    let mut d = desired();
    d.floating_ips = vec![fip];
    let account = Account {
        floating_ips: vec![AccountFloatingIp {
            network: fip,
            region: region.map(str::to_string),
            holder,
        }],
        ..Account::default()
    };
    (d, account)
}

#[test]
fn a_floating_ip_taken_from_a_server_or_a_load_balancer_names_it() {
    let by_hand = Holder::LoadBalancer {
        name: "foreign-lb".into(),
        uuid: Uuid::from_u128(5),
        owner: LbOwner::Unknown,
    };
    for (holder, words) in [
        (
            Holder::Server {
                name: "node-1".into(),
            },
            "taking it from server node-1",
        ),
        (by_hand, "load balancer foreign-lb"),
        (
            Holder::LoadBalancer {
                name: "k8s-service-a".into(),
                uuid: Uuid::from_u128(6),
                owner: LbOwner::Service("default/a".into()),
            },
            "of Service default/a, which no longer claims it",
        ),
    ] {
        let (d, account) = with_fip(Some(holder), Some("rma"));
        let p = plan(
            &d,
            Some(&converged(&desired(), &owner())),
            &account,
            &owner(),
        );
        assert_eq!(kinds(&p), ["assign-fip"]);
        let text = p.describe();
        assert!(text.contains(words), "{text}");
        assert_eq!(p.impact(), Impact::Minimal);
        // The Event's one line names the holder too.
        let line = p.summary("default/web");
        assert!(line.contains(words) && !line.contains('\n'), "{line}");
        assert!(line.ends_with("; 1 step (`cloudscale-cloud-controller-manager plan --service default/web` lists them)"), "{line}");
    }
}

#[test]
fn a_floating_ip_of_another_cluster_is_never_taken() {
    let (d, account) = with_fip(
        Some(Holder::LoadBalancer {
            name: "theirs".into(),
            uuid: Uuid::from_u128(5),
            owner: LbOwner::OtherCluster("prod-2".into()),
        }),
        None,
    );
    let p = plan(
        &d,
        Some(&converged(&desired(), &owner())),
        &account,
        &owner(),
    );
    assert!(p.steps.is_empty(), "{}", p.describe());
    assert_eq!(p.refusals[0].reason(), "FloatingIPConflict");
    assert!(p.refusals[0].message.contains("cluster prod-2"));
    assert_eq!(p.impact(), Impact::Refused);
}

#[test]
fn a_regional_floating_ip_of_another_region_is_refused_before_any_write() {
    let (d, account) = with_fip(None, Some("lpg"));
    let actual = converged(&desired(), &owner());
    assert_eq!(actual.zone, "rma1");
    let p = plan(&d, Some(&actual), &account, &owner());
    assert!(p.steps.is_empty(), "{}", p.describe());
    assert_eq!(
        p.impact(),
        Impact::Refused,
        "announced as refused, not minimal"
    );
    let r = &p.refusals[0];
    assert_eq!(r.reason(), "ChangeRefused");
    assert!(r.message.contains("regional in lpg"), "{}", r.message);
    assert!(r.message.contains("zone rma1"), "{}", r.message);
    // The same region, or a global one: assigned.
    for region in [Some("rma"), None] {
        let (d, account) = with_fip(None, region);
        assert_eq!(
            kinds(&plan(&d, Some(&actual), &account, &owner())),
            ["assign-fip"]
        );
    }
}

#[test]
fn a_floating_ip_another_service_keeps_is_refused_alone() {
    let (mut d, mut account) = with_fip(None, None);
    account.claimed_elsewhere.insert(
        "45.132.236.14".parse().expect("ip"),
        "also claimed by Service default/s4".into(),
    );
    d.pools[0].listener.timeout_client_data_ms = 1234;
    let p = plan(
        &d,
        Some(&converged(&desired(), &owner())),
        &account,
        &owner(),
    );
    assert_eq!(kinds(&p), ["update-listener"], "everything else applies");
    assert_eq!(p.refusals.len(), 1);
    assert_eq!(p.refusals[0].reason(), "FloatingIPConflict");
}

#[test]
fn disabled_members_are_enabled_in_place() {
    let d = desired();
    let mut actual = converged(&d, &owner());
    actual.pools[0].members[0].enabled = false;
    let p = plan_of(&d, Some(&actual));
    assert_eq!(kinds(&p), ["enable-member"]);
}

#[test]
fn an_untagged_load_balancer_gets_the_owner_tags() {
    let d = desired();
    let actual = converged(&d, &Ownership::default());
    let mine = Ownership {
        tags: crate::service::pure::ownership::tags("c1", "uid-1"),
        labels: crate::service::pure::ownership::labels("default", "web"),
    };
    let p = plan(&d, Some(&actual), &Account::default(), &mine);
    assert_eq!(kinds(&p), ["tag-lb"]);
    // Tagging anyway, it names the Service too.
    let Action::TagLb { tags, .. } = &p.steps[0].action else {
        unreachable!("a tag-lb step")
    };
    assert_eq!(tags, &mine.created_tags());
}

/// A load balancer made before the CCM named Services in a tag (or whose tag someone
/// removed) is not written to for it: the name is for people, the UID decides.
#[test]
fn a_missing_service_name_tag_alone_writes_nothing() {
    let d = desired();
    let tags = crate::service::pure::ownership::tags("c1", "uid-1");
    let mine = Ownership {
        tags: tags.clone(),
        labels: crate::service::pure::ownership::labels("default", "web"),
    };
    let actual = converged(
        &d,
        &Ownership {
            tags,
            ..Ownership::default()
        },
    );
    let p = plan(&d, Some(&actual), &Account::default(), &mine);
    assert!(p.steps.is_empty(), "{}", p.describe());
}

fn two_ports(a: DesiredPool, b: DesiredPool) -> DesiredLb {
    DesiredLb {
        pools: vec![a, b],
        ..desired()
    }
}

#[test]
fn swapping_two_port_numbers_goes_through_a_deleted_listener() {
    let before = two_ports(tcp("web", 80, 30000), tcp("https", 8443, 30001));
    let after = two_ports(tcp("web", 8443, 30000), tcp("https", 80, 30001));
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(
        kinds(&p),
        ["delete-listener", "update-listener", "create-listener"],
        "{}",
        p.describe()
    );
    assert_eq!(p.impact(), Impact::ListenerRecreate);
}

#[test]
fn swapping_two_port_names_renames_the_pools() {
    let before = two_ports(tcp("web", 80, 30000), tcp("https", 8443, 30001));
    let after = two_ports(tcp("https", 80, 30000), tcp("web", 8443, 30001));
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(
        kinds(&p),
        ["rename-pool", "rename-pool"],
        "{}",
        p.describe()
    );
    assert_eq!(p.impact(), Impact::None);
}

#[test]
fn a_cut_over_moves_the_surviving_port_after_the_removed_one_is_gone() {
    let before = two_ports(tcp("old", 80, 30006), tcp("new", 8080, 30007));
    let after = DesiredLb {
        pools: vec![tcp("new", 80, 30007)],
        ..desired()
    };
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(
        kinds(&p),
        ["delete-listener", "update-listener", "delete-pool"],
        "{}",
        p.describe()
    );
}

#[test]
fn swapping_two_node_ports_swaps_the_listeners() {
    let before = two_ports(tcp("web", 80, 30000), tcp("https", 443, 30001));
    let after = two_ports(tcp("web", 80, 30001), tcp("https", 443, 30000));
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert!(
        !kinds(&p).contains(&"create-member"),
        "the members stay with their node port: {}",
        p.describe()
    );
}

#[test]
fn a_traffic_policy_switch_replaces_the_pool_under_the_strict_member_rule() {
    let before = desired();
    let mut after = before.clone();
    for p in &mut after.pools {
        for m in &mut p.members {
            m.monitor_port = 32000;
        }
        p.monitor.kind = HealthMonitorType::Http;
        p.monitor.http = Some(HttpCheck {
            method: "GET".into(),
            url_path: "/livez".into(),
            version: "1.0".into(),
            host: None,
            expected_codes: vec!["200".into()],
        });
    }
    for rule in [MemberRule::Strict, MemberRule::Lenient] {
        let (p, _) = apply(&converged(&before, &owner()), &after, rule);
        assert_eq!(p.impact(), Impact::ListenerRecreate, "{}", p.describe());
    }
}

#[test]
fn leaving_local_first_takes_the_monitor_off_the_members_kubernetes_stopped_checking() {
    // Local: members checked on the health-check node port (32000) with an HTTP monitor.
    let mut local = desired();
    for p in &mut local.pools {
        for m in &mut p.members {
            m.monitor_port = 32000;
        }
        p.monitor.kind = HealthMonitorType::Http;
    }
    let cluster = desired();
    for rule in [MemberRule::Strict, MemberRule::Lenient] {
        let (p, _) = apply(&converged(&local, &owner()), &cluster, rule);
        // Kubernetes closed port 32000 with the change: the old members would be down
        // until the new pool takes over, unless their monitor goes first.
        assert_eq!(
            p.steps[0].action.kind(),
            "delete-monitor",
            "{}",
            p.describe()
        );
        assert_eq!(p.steps[0].impact, Impact::MemberRecreate);
        assert_eq!(p.impact(), Impact::MemberRecreate, "{}", p.describe());
    }
    // Entering Local keeps the old monitor: the node port it checks still answers.
    let (p, _) = apply(&converged(&cluster, &owner()), &local, MemberRule::Strict);
    assert!(
        !p.steps
            .iter()
            .take(1)
            .any(|s| s.action.kind() == "delete-monitor"),
        "{}",
        p.describe()
    );
}

#[test]
fn a_protocol_switch_builds_a_udp_pool_next_to_the_tcp_one() {
    let before = DesiredLb {
        pools: vec![tcp("dns", 53, 30053)],
        ..desired()
    };
    let after = DesiredLb {
        pools: vec![sample().port("dns", Family::Udp, 53, 30053)],
        ..desired()
    };
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert!(kinds(&p).contains(&"delete-pool"), "{}", p.describe());
}

/// The Go reference checks every pool of a Service by one type, `tcp` by default: on a
/// dual-protocol Service it made (DNS: TCP and UDP 53 on one node port) the UDP pool has a
/// `tcp` check. That check works (the shared node port answers TCP): adopting the load
/// balancer keeps it rather than replacing it by the `udp-connect` default, which would
/// take the UDP port's members out of rotation until they passed the new check.
#[test]
fn a_working_tcp_check_the_reference_put_on_a_udp_pool_is_kept() {
    let reference = |d: &DesiredLb| {
        let mut a = converged(d, &owner());
        for p in &mut a.pools {
            p.monitors[0].monitor.kind = HealthMonitorType::Tcp;
        }
        a
    };
    let udp = sample().port("dns-udp", Family::Udp, 53, 30053);
    let dns = DesiredLb {
        pools: vec![udp.clone(), tcp("dns-tcp", 53, 30053)],
        ..desired()
    };
    let p = plan_of(&dns, Some(&reference(&dns)));
    assert!(p.is_converged(), "{}", p.describe());
    // Its numbers still follow the annotations, in place.
    let mut slower = dns.clone();
    slower.pools[0].monitor.delay_s = 5;
    let p = plan_of(&slower, Some(&reference(&dns)));
    assert_eq!(kinds(&p), ["update-monitor"], "{}", p.describe());

    // Replaced where a `tcp` check cannot work or is not what the Service asks for: a
    // UDP-only Service, a TCP port on another node port, `udp-connect` set for every pool.
    let udp_only = DesiredLb {
        pools: vec![udp.clone()],
        ..desired()
    };
    let apart = DesiredLb {
        pools: vec![udp.clone(), tcp("dns-tcp", 53, 30054)],
        ..desired()
    };
    let mut explicit = dns.clone();
    explicit.pools[1].monitor.kind = HealthMonitorType::UdpConnect;
    for d in [udp_only, apart, explicit] {
        let p = plan_of(&d, Some(&reference(&d)));
        let replaced = p
            .steps
            .iter()
            .filter(|s| {
                s.action.kind() == "create-monitor" && s.port.as_deref() == Some("udp/dns-udp")
            })
            .count();
        assert_eq!(replaced, 1, "{}", p.describe());
    }
}

#[test]
fn describe_speaks_plain_words() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].listener.allowed_cidrs = vec!["10.0.0.0/8".into()];
    after.pools[0].monitor.delay_s = 5;
    let text = plan_of(&after, Some(&converged(&before, &owner()))).describe();
    assert!(!text.contains("Some("), "{text}");
    assert!(!text.contains("Changes {"), "{text}");
    assert!(
        text.contains("allowed clients everyone → 10.0.0.0/8"),
        "{text}"
    );
    assert!(text.contains("delay 2 → 5 s"), "{text}");
}

/// The step list of an error message (a load balancer that did not converge) is one line
/// holding every step the preview lists, so its Event stays one row of `kubectl describe`.
#[test]
fn the_inline_description_is_the_step_list_on_one_line() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].listener.allowed_cidrs = vec!["10.0.0.0/8".into()];
    after.pools[0].monitor.delay_s = 5;
    let p = plan_of(&after, Some(&converged(&before, &owner())));
    let (lines, inline) = (p.describe(), p.describe_inline());
    assert!(lines.lines().count() >= 2, "{lines}");
    assert!(!inline.contains('\n'), "{inline}");
    assert_eq!(
        inline.split("; ").collect::<Vec<_>>(),
        lines.lines().collect::<Vec<_>>()
    );
}
