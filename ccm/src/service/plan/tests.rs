use super::*;
use crate::service::fixtures::Sample;
use crate::service::sim::{MemberRule, Sim};
use std::net::IpAddr;

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
    let mut sim = Sim::new(Some(before), rule);
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
    let mut sim = Sim::new(None, MemberRule::Strict);
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
    let mut sim = Sim::new(Some(&start), MemberRule::Strict);
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
        [ANNOTATION_FLAVOR, ANNOTATION_ZONE, ANNOTATION_VIPS]
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
    assert_eq!(p.refusals[0].annotation, ANNOTATION_FLOATING_IPS);
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
        tags: crate::service::ownership::tags("c1", "uid-1"),
        labels: crate::service::ownership::labels("default", "web"),
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
    let tags = crate::service::ownership::tags("c1", "uid-1");
    let mine = Ownership {
        tags: tags.clone(),
        labels: crate::service::ownership::labels("default", "web"),
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

/// A pass that created a pool and was interrupted before its members (a failure, a crash, a
/// wait) left an empty pool without listeners: the next pass takes it up again instead of
/// building another next to it (found by the simulation: up to four pools of one name).
#[test]
fn an_empty_pool_left_by_an_interrupted_pass_is_taken_up_again() {
    let d = desired();
    let mut actual = converged(&d, &owner());
    let leftover = actual.pools[0].clone();
    let name = leftover.name.clone();
    // The port's pool as a fresh one: created, nothing in it yet, no listener.
    actual.pools[0].members.clear();
    actual.pools[0].monitors.clear();
    actual.pools[0].listeners.clear();
    let p = plan_of(&d, Some(&actual));
    assert!(
        !kinds(&p).contains(&"create-pool"),
        "no further pool for {name}:\n{}",
        p.describe()
    );
    assert!(kinds(&p).contains(&"create-member"), "{}", p.describe());
    assert_eq!(leftover.name, name);
}

/// A replacement pool whose change was superseded (it has no listener) is deleted before
/// anything is built, so a port never has more than its pool and one replacement (found by
/// the simulation: an algorithm changed twice in a row left three pools of one name).
#[test]
fn a_superseded_replacement_pool_goes_before_the_next_one_is_built() {
    let d = desired();
    let mut actual = converged(&d, &owner());
    let mut abandoned = actual.pools[0].clone();
    abandoned.uuid = Uuid::from_u128(0xabad_0000_0000_4000_8000_0000_0000_0001);
    abandoned.listeners.clear();
    abandoned.algorithm = PoolAlgorithm::LeastConnections;
    actual.pools.push(abandoned.clone());
    let mut next = d.clone();
    next.pools[0].algorithm = PoolAlgorithm::SourceIp;
    let p = plan_of(&next, Some(&actual));
    let first = p
        .steps
        .iter()
        .position(|s| s.action.kind() == "create-pool");
    let removal = p.steps.iter().position(
        |s| matches!(&s.action, Action::DeletePool { uuid, .. } if *uuid == abandoned.uuid),
    );
    assert!(
        matches!((removal, first), (Some(r), Some(c)) if r < c),
        "the abandoned pool goes first:\n{}",
        p.describe()
    );
}

/// Found by the simulation (seed 1469): the port's listener was moved by hand to a port
/// the Service does not have, a replacement pool of the same name took the port over, and
/// the Service then asked for another replacement. The pool that routes only the stray
/// port goes before the new one is built: three pools of one name would be ambiguous.
#[test]
fn a_pool_routing_only_an_unwanted_port_goes_before_a_pool_of_its_name_is_built() {
    let d = desired();
    let mut actual = converged(&d, &owner());
    let mut stray = actual.pools[0].clone();
    stray.uuid = Uuid::from_u128(0x5742_0000_0000_4000_8000_0000_0000_0001);
    stray.algorithm = PoolAlgorithm::SourceIp;
    for l in &mut stray.listeners {
        l.uuid = Uuid::from_u128(0x5742_0000_0000_4000_8000_0000_0000_0002);
        l.listener.port = 9999;
    }
    actual.pools.push(stray.clone());
    let mut next = d.clone();
    next.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let p = plan_of(&next, Some(&actual));
    let built = first(&p, "create-pool", None);
    let removal = p
        .steps
        .iter()
        .position(|s| matches!(&s.action, Action::DeletePool { uuid, .. } if *uuid == stray.uuid));
    assert!(
        removal.is_some_and(|r| r < built),
        "the stray port's pool goes first:\n{}",
        p.describe()
    );
}

/// Found by the simulation (seed 25014738): a port list change gave one kept port a new node
/// port and added two ports. Kubernetes stopped serving the kept port's old node port at
/// once: its new members go before the new ports' pools, monitors and members.
#[test]
fn a_port_kubernetes_moved_to_another_node_port_gets_its_members_before_new_ports_are_built() {
    let before = two_ports(tcp("web", 80, 30000), tcp("tls", 443, 30001));
    let mut after = two_ports(tcp("web", 80, 30000), tcp("tls", 443, 30005));
    after.pools.push(tcp("api", 9000, 30006));
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    let member = first(&p, "create-member", Some("tcp/tls"));
    let built = first(&p, "create-pool", Some("tcp/api"));
    assert!(member < built, "{}", p.describe());
}

/// Found by the simulation: a port list replaced so that one port's number went to another
/// port (with that port's node port) and got a new node port itself. Kubernetes stopped
/// serving the old backends at once, so the old pools carry nothing of theirs: waiting for
/// a busy load balancer before switching only kept the ports down (over a minute on a load
/// balancer applying one write after another).
#[test]
fn a_port_whose_node_port_went_elsewhere_switches_without_waiting_for_a_busy_load_balancer() {
    let before = two_ports(tcp("web", 8080, 30000), tcp("tls", 8443, 30001));
    let after = two_ports(tcp("tls", 8080, 30001), tcp("api", 8443, 30003));
    let mut busy = converged(&before, &owner());
    busy.status = LoadBalancerStatus::Changing;
    let p = plan_of(&after, Some(&busy));
    assert!(!kinds(&p).contains(&"wait"), "{}", p.describe());
    let (p, _) = apply(&busy, &after, MemberRule::Strict);
    assert!(!kinds(&p).contains(&"wait"), "{}", p.describe());
    // Where the old pool still serves the port's own backend, the switch waits as before.
    let mut algorithm = before.clone();
    algorithm.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let p = plan_of(&algorithm, Some(&busy));
    assert!(kinds(&p).contains(&"wait"), "{}", p.describe());
}

/// A port Kubernetes moved to another node port while its pool is replaced (here its
/// algorithm changed) serves nobody: one member on the new node port in the pool that holds
/// its listener serves it again after one write, before anything else; the replacement
/// then goes make before break (found by the sweep, seed 109016789: two such ports built
/// one after the other, five writes each, kept the second down 194 s).
#[test]
fn a_port_kubernetes_broke_while_its_pool_is_replaced_gets_a_member_in_the_old_pool_first() {
    let before = DesiredLb {
        pools: vec![tcp("web", 5000, 30000)],
        ..desired()
    };
    let mut after = two_ports(tcp("web", 5000, 30003), tcp("api", 8443, 30004));
    after.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let actual = converged(&before, &owner());
    let old = actual.pools[0].uuid;
    let (p, _) = apply(&actual, &after, MemberRule::Strict);
    assert!(
        matches!(&p.steps[0].action, Action::CreateMember { pool: PoolRef::Existing(u), member }
            if *u == old && member.protocol_port == 30003),
        "{}",
        p.describe()
    );
    assert_eq!(p.steps[0].impact, Impact::MemberRecreate);
    assert_eq!(
        kinds(&p).iter().filter(|k| **k == "create-member").count(),
        after.pools.iter().map(|d| d.members.len()).sum::<usize>() + 1,
        "one member more than the new pools hold: {}",
        p.describe()
    );
    // The replacement waits for its members before the switch, as any other.
    assert!(kinds(&p).contains(&"wait"), "{}", p.describe());
}

/// Where the old pool checks its members another way than the new one will (the traffic
/// policy changed: a health-check node port), a member there would not be found up: the
/// port's new pool, monitor, first member and listener go first instead, before a port
/// added at the same time, each write being one more reconfiguration it would wait behind.
#[test]
fn a_port_kubernetes_already_broke_is_restored_before_new_ports_are_built() {
    let before = DesiredLb {
        pools: vec![tcp("web", 5000, 30000)],
        ..desired()
    };
    let mut after = two_ports(tcp("web", 5000, 30003), tcp("api", 8443, 30004));
    after.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    for m in &mut after.pools[0].members {
        m.monitor_port = 32100;
    }
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    let restored = first(&p, "create-listener", Some("tcp/web"));
    assert!(
        restored < first(&p, "create-pool", Some("tcp/api")),
        "web is restored first:\n{}",
        p.describe()
    );
    // Its pool, monitor and first member and the old listener's removal come before it,
    // nothing else; its second member right after.
    assert_eq!(
        kinds(&p)[..=restored + 1],
        [
            "create-pool",
            "create-monitor",
            "create-member",
            "delete-listener",
            "create-listener",
            "create-member"
        ],
        "{}",
        p.describe()
    );
    assert!(!kinds(&p).contains(&"wait"), "{}", p.describe());
}

/// The same for a port whose listener moves to a pool that already serves its new node
/// port: the move goes before a new port's pool is built.
#[test]
fn a_listener_move_that_restores_a_broken_port_goes_before_new_ports_are_built() {
    let before = two_ports(tcp("web", 80, 30000), tcp("api", 8080, 30001));
    let after = two_ports(tcp("web", 80, 30001), tcp("new", 9090, 30002));
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    let (moved, built) = (
        first(&p, "update-listener", None),
        first(&p, "create-pool", None),
    );
    assert!(moved < built, "{}", p.describe());
    assert!(!kinds(&p).contains(&"wait"), "{}", p.describe());
}

/// But a broken port whose listener would free a port a new pool takes gets a listener
/// made anew at once (the move would wait for that pool): the freed port's old listener
/// serves on until the new pool is built, and its own listener follows its removal at
/// once (found by the sweep, seed 57018448).
#[test]
fn a_broken_port_gets_a_new_listener_rather_than_one_a_new_pool_takes_over() {
    let before = two_ports(tcp("web", 80, 30000), tcp("tls", 8443, 30001));
    let after = two_ports(tcp("web", 8443, 30000), tcp("new", 80, 30002));
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    let kinds = kinds(&p);
    assert!(!kinds.contains(&"update-listener"), "{}", p.describe());
    assert!(
        first(&p, "create-listener", Some("tcp/web")) <= 1,
        "{}",
        p.describe()
    );
    let freed = first(&p, "delete-listener", Some("tcp/web"));
    assert!(
        kinds[..freed].contains(&"create-member"),
        "{}",
        p.describe()
    );
    let made = first(&p, "create-listener", Some("tcp/new"));
    assert_eq!(made, freed + 1, "{}", p.describe());
}

/// A chain of moves between kept pools, every port in it broken (each moved to the node
/// port of another): restored as one, before a new port's make phase, since no new pool
/// has to be built for any port in it.
#[test]
fn a_chain_of_moves_between_kept_pools_goes_before_a_new_ports_make_phase() {
    let before = DesiredLb {
        pools: vec![
            tcp("web", 80, 30000),
            tcp("tls", 8443, 30001),
            tcp("api", 9000, 30002),
        ],
        ..desired()
    };
    let after = DesiredLb {
        pools: vec![
            tcp("web", 8443, 30000),
            tcp("api", 80, 30002),
            tcp("new", 7000, 30003),
        ],
        ..desired()
    };
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    let moved = first(&p, "update-listener", Some("tcp/api"));
    let built = first(&p, "create-pool", Some("tcp/new"));
    assert!(moved < built, "{}", p.describe());
}

/// Found by the sweep (seeds 61004156, 61007800): outside hands set a listener's port to
/// 9999 while the load balancer still lacked other ports (their POSTs had failed). Moving
/// it back waited behind their whole make phase, 180 s without a listener. The port's own
/// listener (named for it) moved off its number goes back first; a port renumbered in the
/// Service is not brought forward.
#[test]
fn a_listener_moved_off_its_port_by_hand_goes_back_before_other_ports_are_built() {
    let before = two_ports(tcp("web", 80, 30000), tcp("api", 8080, 30001));
    let mut after = before.clone();
    after.pools.push(tcp("new", 7000, 30002));
    let mut actual = converged(&before, &owner());
    actual.pools[0].listeners[0].listener.port = 9999;
    let p = plan_of(&after, Some(&actual));
    let back = first(&p, "update-listener", Some("tcp/web"));
    let built = first(&p, "create-pool", Some("tcp/new"));
    assert!(back < built, "{}", p.describe());
    // The same while every pool is replaced (a protocol change): the port's listener is
    // made on its new pool before the other ports' pools are built.
    let mut proxy = after.clone();
    for pool in &mut proxy.pools {
        pool.protocol = PoolProtocol::Proxy;
    }
    let p = plan_of(&proxy, Some(&actual));
    let made = first(&p, "create-listener", Some("tcp/web"));
    let built = first(&p, "create-pool", Some("tcp/api"));
    assert!(made < built, "{}", p.describe());
    // Renumbered in the Service (80 to 81): its listener serves 80 until the move.
    let mut renumbered = after.clone();
    renumbered.pools[0] = tcp("web", 81, 30000);
    let p = plan_of(&renumbered, Some(&converged(&before, &owner())));
    let moved = first(&p, "update-listener", Some("tcp/web"));
    let built = first(&p, "create-pool", Some("tcp/new"));
    assert!(built < moved, "{}", p.describe());
}

/// Found by the sweep (seed 63019557): a port moved to a kept pool whose monitor type was
/// also changing; the monitor's replacement went before the switch and delayed every broken
/// port behind it. A pool that routes a port already keeps its monitor until after the
/// restores.
#[test]
fn a_broken_port_switching_to_a_serving_pool_does_not_wait_for_its_new_monitor() {
    let before = two_ports(tcp("web", 80, 30000), tcp("api", 443, 30001));
    let mut after = two_ports(tcp("web", 443, 30000), tcp("new", 80, 30002));
    after.pools[0].monitor.kind = HealthMonitorType::Http;
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    let switched = first(&p, "create-listener", Some("tcp/web"));
    let replaced = first(&p, "delete-monitor", Some("tcp/web"));
    assert!(switched < replaced, "{}", p.describe());
}

/// Found by the simulation (seed 33000443): a pool-algorithm switch's pass removed the
/// port's listener, then stopped because the Service changed. The next plan found the new
/// pool built but without a listener, and the old pool routing nothing: the port is down
/// until its listener is made, so that goes before the old pool's removal.
#[test]
fn a_built_pool_without_its_listener_gets_it_before_anything_is_cleared() {
    let d = desired();
    let old = converged(&d, &owner());
    let mut next = d.clone();
    next.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let mut actual = converged(&next, &owner());
    actual.pools[0].listeners.clear();
    let mut retired = old.pools[0].clone();
    retired.uuid = Uuid::from_u128(0x5742_0000_0000_4000_8000_0000_0000_0003);
    retired.listeners.clear();
    actual.pools.push(retired.clone());
    let p = plan_of(&next, Some(&actual));
    let listener = first(&p, "create-listener", None);
    let removal = p.steps.iter().position(
        |s| matches!(&s.action, Action::DeletePool { uuid, .. } if *uuid == retired.uuid),
    );
    assert!(
        removal.is_some_and(|r| listener < r),
        "the listener goes first:\n{}",
        p.describe()
    );
}

/// Found by the simulation (seed 45003234): a pass removed a port's listener to move it and
/// stopped for a change that replaces every pool (another pool protocol). The port's new
/// pool, monitor, first member and listener go before the other port's make phase; a port
/// only renumbered, whose old listener still serves, waits its turn.
#[test]
fn a_port_whose_listener_a_stopped_pass_removed_is_restored_first_on_a_new_pool() {
    let before = two_ports(tcp("web", 80, 30000), tcp("dns", 53, 30001));
    let mut after = before.clone();
    for pool in &mut after.pools {
        pool.protocol = PoolProtocol::Proxy;
    }
    let mut actual = converged(&before, &owner());
    actual.pools[1].listeners.clear();
    let p = plan_of(&after, Some(&actual));
    let listener = first(&p, "create-listener", Some("tcp/dns"));
    let other = first(&p, "create-pool", Some("tcp/web"));
    assert!(
        listener < other,
        "the lost port goes first:\n{}",
        p.describe()
    );
    // Renumbered instead (53 to 54), its old listener still serving: not ahead of web.
    let mut renumbered = after.clone();
    renumbered.pools[1].listener.port = 54;
    renumbered.pools[1].listener.name = "tcp/54".into();
    let actual = converged(&before, &owner());
    let p = plan_of(&renumbered, Some(&actual));
    let listener = first(&p, "create-listener", Some("tcp/dns"));
    let other = first(&p, "create-pool", Some("tcp/web"));
    assert!(
        other < listener,
        "a renumbered port waits:\n{}",
        p.describe()
    );
}

/// Found by the simulation (seed 45003234): two ports swapped numbers; a pass deleted the
/// listener of one (`web` on 80) to give 80 to the other, and stopped for a pool protocol
/// change. Every pool is new in the next plan, and port 80, now `dns`'s, is held by no
/// listener although it served before: it goes first, not behind `web`'s make phase.
#[test]
fn a_port_left_without_listener_by_a_stopped_swap_is_restored_first() {
    let before = two_ports(tcp("web", 80, 30000), tcp("dns", 53, 30001));
    // The node ports go with the numbers: only the names swap.
    let mut after = two_ports(tcp("web", 53, 30001), tcp("dns", 80, 30000));
    for pool in &mut after.pools {
        pool.protocol = PoolProtocol::Proxy;
    }
    let mut actual = converged(&before, &owner());
    actual.pools[0].listeners.clear();
    let p = plan_of(&after, Some(&actual));
    let restored = first(&p, "create-listener", Some("tcp/dns"));
    let other = first(&p, "create-pool", Some("tcp/web"));
    assert!(restored < other, "port 80 goes first:\n{}", p.describe());
    // The same change with every listener in place: `dns` takes 80 from `web`, a switch
    // with nothing lost, and is not brought forward.
    let p = plan_of(&after, Some(&converged(&before, &owner())));
    let switched = first(&p, "create-listener", Some("tcp/dns"));
    let other = first(&p, "create-pool", Some("tcp/web"));
    assert!(other < switched, "nothing to restore:\n{}", p.describe());
}

/// Two ports down at once (both listeners lost, both pools replaced): each gets its pool,
/// monitor, first member and listener before either gets its other members, since one
/// member up serves a port (seed 45003234 needed this too).
#[test]
fn ports_restored_together_get_their_first_member_before_any_gets_more() {
    let before = two_ports(tcp("web", 80, 30000), tcp("dns", 53, 30001));
    let mut after = before.clone();
    for pool in &mut after.pools {
        pool.protocol = PoolProtocol::Proxy;
    }
    let mut actual = converged(&before, &owner());
    for pool in &mut actual.pools {
        pool.listeners.clear();
    }
    let p = plan_of(&after, Some(&actual));
    let second_member = |port: &str| {
        p.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.action.kind() == "create-member" && s.port.as_deref() == Some(port))
            .nth(1)
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no second member for {port}:\n{}", p.describe()))
    };
    let web = first(&p, "create-listener", Some("tcp/web"));
    let dns = first(&p, "create-listener", Some("tcp/dns"));
    assert!(
        web.max(dns) < second_member("tcp/web").min(second_member("tcp/dns")),
        "{}",
        p.describe()
    );
}

/// A port renamed (`dns` to `dns2`) and given another node port and algorithm (so its old
/// pool cannot be kept), after a pass built its new pool (without members and listener;
/// with its monitor if `monitor`) and stopped: the state found, and what is wanted.
fn dns_renamed_with_its_pool_built(monitor: bool) -> (ActualLb, DesiredLb) {
    let before = two_ports(tcp("web", 80, 30000), tcp("dns", 53, 30001));
    let mut after = two_ports(tcp("web", 80, 30000), tcp("dns2", 53, 30005));
    after.pools[1].algorithm = PoolAlgorithm::LeastConnections;
    let mut actual = converged(&before, &owner());
    let mut built = converged(&after, &owner()).pools[1].clone();
    built.uuid = Uuid::from_u128(0x5742_0000_0000_4000_8000_0000_0000_0004);
    built.members.clear();
    built.listeners.clear();
    if !monitor {
        built.monitors.clear();
    }
    actual.pools.push(built);
    (actual, after)
}

/// Found by the simulation (seed 25011587): a port list change gave a port a new name and
/// node port; a pass built the new pool, then stopped for the next change. The next plan
/// found that pool empty and the port on its old pool, whose members serve a node port
/// Kubernetes no longer gives it. The switch is urgent, but the new pool's monitor and
/// first member go before it: switching first left the port without a member for 86 s,
/// behind the rest of the plan.
#[test]
fn an_urgent_switch_to_a_pool_built_earlier_gives_it_a_member_first() {
    let (actual, after) = dns_renamed_with_its_pool_built(false);
    let (p, _) = apply(&actual, &after, MemberRule::Strict);
    let listener = first(&p, "create-listener", Some("tcp/dns2"));
    let member = first(&p, "create-member", Some("tcp/dns2"));
    let monitor = first(&p, "create-monitor", Some("tcp/dns2"));
    assert!(monitor < listener && member < listener, "{}", p.describe());
    // Still urgent: before the other port's make phase and any clean-up.
    assert!(listener < 4, "{}", p.describe());
}

/// Found by the sweep once the urgent switch above brought a pool's monitor forward: the
/// pool an earlier pass built kept a monitor of the type asked before. Its removal goes
/// with the new monitor, ahead of it (the API refuses a second monitor on a pool). Since
/// the sweep found a restore waiting for such a replacement (seed 63019557), both follow
/// the switch: the old monitor checks the members as well.
#[test]
fn an_urgent_switch_replaces_the_monitor_of_a_pool_built_earlier_in_order() {
    let (actual, mut after) = dns_renamed_with_its_pool_built(true);
    after.pools[1].monitor.kind = HealthMonitorType::Http;
    let (p, _) = apply(&actual, &after, MemberRule::Strict);
    let removed = first(&p, "delete-monitor", Some("tcp/dns2"));
    let made = first(&p, "create-monitor", Some("tcp/dns2"));
    let listener = first(&p, "create-listener", Some("tcp/dns2"));
    assert!(listener < removed && removed < made, "{}", p.describe());
}

/// Found by the sweep (seed 41012568): a node excluded from a Service whose members were all
/// still in their first checks (a load balancer made moments before, up after 10 × 4 s).
/// The excluded node's member came up first; removing it left the port without a member
/// until the others passed. A member in its checks is about to serve: the removal waits
/// for the kept members as it does for one that serves.
#[test]
fn a_member_still_in_its_first_checks_is_removed_only_once_the_kept_ones_are_up() {
    let d = desired();
    let mut actual = converged(&d, &owner());
    for p in &mut actual.pools {
        for m in &mut p.members {
            m.health = MonitorStatus::Changing;
        }
    }
    let mut next = d.clone();
    for p in &mut next.pools {
        p.members.remove(0);
    }
    let p = plan_of(&next, Some(&actual));
    let wait = first(&p, "wait", None);
    let removal = first(&p, "delete-member", None);
    assert!(wait < removal, "{}", p.describe());
}

/// A replacement pool names the pools it is made beside (the API client's lookup after a
/// lost answer must not take the old one for it: found by the simulation, seed 43016960).
#[test]
fn a_replacement_pool_names_the_pool_of_its_name_it_is_made_beside() {
    let d = desired();
    let actual = converged(&d, &owner());
    let mut next = d.clone();
    next.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let p = plan_of(&next, Some(&actual));
    let besides: Vec<&Vec<Uuid>> = p
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::CreatePool { besides, .. } => Some(besides),
            _ => None,
        })
        .collect();
    assert_eq!(besides, [&vec![actual.pools[0].uuid]], "{}", p.describe());
}

/// Found by the sweep (seed 57018448): a port list change during a cloud outage moved
/// 8443 from one port to another (its node port with it), 80 to a new port and 9000 to a
/// new node port; all three were broken by Kubernetes at once. The chain of listener moves
/// (8443 freed, 80 moved to 8443, 80 made anew) waited behind another port's barrier, 207 s
/// without a listener on 8443. Now the port one member restores goes first, then 8443 on a
/// listener made anew, then the new port's make phase and 80.
#[test]
fn a_chain_of_moves_between_broken_ports_is_restored_before_other_barriers() {
    let s = sample();
    let before = DesiredLb {
        pools: vec![
            s.port("p10", Family::Tcp, 8443, 30001),
            s.port("p21", Family::Tcp, 8080, 30002),
            s.port("p32", Family::Tcp, 80, 30003),
            s.port("p33", Family::Tcp, 9000, 30004),
        ],
        ..desired()
    };
    let after = DesiredLb {
        pools: vec![
            s.port("p00", Family::Tcp, 80, 30006),
            s.port("p11", Family::Tcp, 9000, 30007),
            s.port("p32", Family::Tcp, 8443, 30003),
            s.port("p33", Family::Udp, 53, 30004),
        ],
        ..desired()
    };
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    assert_eq!(
        first(&p, "create-member", Some("tcp/p11")),
        0,
        "{}",
        p.describe()
    );
    // 8443 on p32's pool at once (its old holder removed first), 80 after p00's pool.
    let restored = first(&p, "create-listener", Some("tcp/p32"));
    let made = first(&p, "create-listener", Some("tcp/p00"));
    let barrier = p
        .steps
        .iter()
        .position(|s| s.action.is_barrier())
        .expect("a barrier");
    let other = first(&p, "create-pool", Some("udp/p33"));
    assert_eq!(restored, 2, "{}", p.describe());
    assert!(made < barrier.min(other), "{}", p.describe());
}

/// A new load balancer serves once every port has its listener and a first member: the
/// plan says where that prefix ends, and only other members follow it.
#[test]
fn a_new_load_balancer_serves_after_each_port_s_first_member() {
    let after = two_ports(tcp("web", 80, 30000), tcp("api", 8080, 30001));
    let p = plan_of(&after, None);
    let at = p.serves_after.expect("a prefix that serves");
    let prefix = &kinds(&p)[..at];
    for kind in [
        "create-pool",
        "create-monitor",
        "create-listener",
        "create-member",
    ] {
        assert_eq!(
            prefix.iter().filter(|k| **k == kind).count(),
            2,
            "{kind} per port:\n{}",
            p.describe()
        );
    }
    assert!(
        kinds(&p)[at..].iter().all(|k| *k == "create-member"),
        "{}",
        p.describe()
    );
}

/// Found by the sweep (seed 75035229): outside hands deleted a port's pool (its listener
/// with it) while its load balancer was still being built. The planner sees a port with
/// no pool, as a new one: it is built pool, monitor, first member and listener before any
/// other port's make phase (here another port's new pool, for a new algorithm), not with
/// the listeners at the end, where its listener came 17 writes late.
#[test]
fn a_port_whose_pool_is_gone_is_built_before_other_ports_make_phase() {
    let before = two_ports(tcp("web", 80, 30000), tcp("api", 8080, 30001));
    let mut actual = converged(&before, &owner());
    actual.pools.retain(|p| p.name != "tcp/api");
    let mut after = before.clone();
    after.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let p = plan_of(&after, Some(&actual));
    let restored = first(&p, "create-listener", Some("tcp/api"));
    assert_eq!(
        kinds(&p)[..=restored],
        [
            "create-pool",
            "create-monitor",
            "create-member",
            "create-listener"
        ],
        "{}",
        p.describe()
    );
    assert!(restored < first(&p, "create-pool", Some("tcp/web")));
    assert_eq!(
        p.serves_after, None,
        "the load balancer serves another port"
    );
}

/// Port `b` left two pools behind (an algorithm change held by an outage): the old one
/// still holds 8080, which a renamed port `a` now takes on a new node port, and the newer
/// one holds `b`'s 80. A pool-protocol change then needs a third pool named `tcp/b`: the
/// old one, routing nothing once 8080 moved to `a`, goes first (the API model refuses a
/// third pool of one name).
#[test]
fn a_pool_whose_listeners_moved_to_urgent_ports_goes_before_a_third_pool_of_its_name() {
    let old = two_ports(tcp("b", 8080, 30004), tcp("c", 5000, 30003));
    let mut actual = converged(&old, &owner());
    let mut newer = tcp("b", 80, 30004);
    newer.algorithm = PoolAlgorithm::LeastConnections;
    let mut held = converged(&two_ports(newer, tcp("c", 5000, 30003)), &owner()).pools[0].clone();
    let fresh = |n: u128| Uuid::from_u128(0x4e1d_0000_0000_4000_8000_0000_0000_0000 | n);
    held.uuid = fresh(1);
    held.listeners[0].uuid = fresh(2);
    held.monitors[0].uuid = fresh(3);
    for (m, n) in held.members.iter_mut().zip(4..) {
        m.uuid = fresh(n);
    }
    actual.pools.push(held.clone());
    let old_b = actual.pools[0].uuid;
    let mut next = two_ports(tcp("a", 8080, 30006), tcp("b", 80, 30004));
    for p in &mut next.pools {
        p.algorithm = PoolAlgorithm::LeastConnections;
        p.protocol = PoolProtocol::Proxy;
    }
    let (p, _) = apply(&actual, &next, MemberRule::Strict);
    let removal = p
        .steps
        .iter()
        .position(|s| matches!(&s.action, Action::DeletePool { uuid, .. } if *uuid == old_b));
    let built = p
        .steps
        .iter()
        .position(|s| matches!(&s.action, Action::CreatePool { name, .. } if name == "tcp/b"));
    assert!(
        removal.is_some() && built.is_some() && removal < built,
        "the old tcp/b goes before the new one is made:\n{}",
        p.describe()
    );
}

#[test]
fn the_event_summary_is_one_line_naming_each_touched_port_once() {
    let before = desired();
    let mut after = before.clone();
    after.pools[0].algorithm = PoolAlgorithm::LeastConnections;
    let (p, _) = apply(&converged(&before, &owner()), &after, MemberRule::Strict);
    let port = p.steps[0].port.clone().expect("the pool's port");
    let line = p.summary("default/web");
    assert!(!line.contains('\n'), "{line}");
    assert!(
        line.starts_with(&format!(
            "impact {}: {port} {} (health monitor replaced);",
            p.impact(),
            p.impact()
        )),
        "{line}"
    );
    assert_eq!(line.matches(port.as_str()).count(), 1, "{line}");
    assert!(
        line.contains(&format!(
            "; {} steps (`cloudscale-cloud-controller-manager plan --service default/web` lists them)",
            p.steps.len()
        )),
        "{line}"
    );
}

/// A kept pool whose members were all deleted by hand serves nobody: its first new member
/// goes before a new port is built (each write is one reconfiguration of the load
/// balancer, and one member up restores the port).
#[test]
fn a_port_whose_members_were_deleted_is_restored_before_a_new_port_is_built() {
    let before = desired();
    let mut actual = converged(&before, &owner());
    let emptied = actual
        .pools
        .iter_mut()
        .find(|p| p.name == "tcp/http")
        .expect("tcp/http");
    emptied.members.clear();
    let mut after = before.clone();
    after.pools.push(pool("tcp/alt", 8080, 30080));
    let (p, _) = apply(&actual, &after, MemberRule::Strict);
    assert_eq!(
        p.steps[0].action.kind(),
        "create-member",
        "{}",
        p.describe()
    );
    assert_eq!(p.steps[0].port.as_deref(), Some("tcp/http"));
    assert!(
        first(&p, "create-member", Some("tcp/http")) < first(&p, "create-pool", Some("tcp/alt")),
        "{}",
        p.describe()
    );
    // Members that are down (their nodes stopped) serve nobody either.
    let mut down = converged(&before, &owner());
    for m in &mut down
        .pools
        .iter_mut()
        .find(|p| p.name == "tcp/http")
        .expect("tcp/http")
        .members
    {
        m.health = MonitorStatus::Down;
    }
    // The stopped nodes left the cluster; another one joined.
    let mut moved = before.clone();
    let http = moved
        .pools
        .iter_mut()
        .find(|p| p.name == "tcp/http")
        .expect("tcp/http");
    http.members = vec![member("10.0.0.13", http.node_port)];
    moved.pools.push(pool("tcp/alt", 8080, 30080));
    let p = plan_of(&moved, Some(&down));
    assert!(
        first(&p, "create-member", Some("tcp/http")) < first(&p, "create-pool", Some("tcp/alt")),
        "{}",
        p.describe()
    );
}
