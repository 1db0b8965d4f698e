use super::*;

#[test]
fn backends_answer_the_last_declaration_at_or_before_a_time_and_dump_as_a_list() {
    let t0 = chrono::DateTime::UNIX_EPOCH;
    let at = |s: f64| t0 + delta_from_secs(s);
    let a: IpAddr = "10.0.0.1".parse().expect("ip");
    let b = |tcp: bool| Behaviour {
        tcp,
        udp: false,
        http_status: if tcp { 200 } else { 0 },
    };
    let decl = |t: f64, port: Option<u16>, behaviour: Option<Behaviour>| BackendDecl {
        at: at(t),
        address: a,
        port,
        behaviour,
    };
    let mut dp = DataPlane::default();
    dp.backends.push(decl(1.0, Some(80), Some(b(false))));
    dp.backends.push(decl(2.0, None, Some(b(false))));
    dp.backends.push(decl(3.0, Some(80), None));
    // Two at one moment: the later one counts, as it did in a flat list.
    dp.backends.push(decl(3.0, Some(443), Some(b(false))));
    dp.backends.push(decl(3.0, Some(443), Some(b(true))));
    assert_eq!(dp.behaviour(a, 80, at(0.5)), Behaviour::default());
    assert_eq!(dp.behaviour(a, 80, at(1.0)), b(false));
    // Port 80 back to the default: the address-wide declaration applies.
    assert_eq!(dp.behaviour(a, 80, at(3.0)), b(false));
    assert_eq!(dp.behaviour(a, 443, at(3.0)), b(true));
    assert_eq!(dp.behaviour(a, 22, at(1.5)), Behaviour::default());
    let mut points = Vec::new();
    dp.backends.change_points(a, &[80], &mut points);
    points.sort();
    assert_eq!(points, [at(1.0), at(2.0), at(3.0)]);

    let dumped = serde_json::to_value(&dp.backends).expect("json");
    assert_eq!(dumped.as_array().map(Vec::len), Some(5));
    let back: Backends = serde_json::from_value(dumped).expect("restore");
    assert_eq!(back.latest(a, Some(443), at(3.0)), Some(Some(b(true))));
}

/// A load balancer provisioning for 60 s, down 10 s while it served, deleted at 200 s
/// and asked about until 500 s: 60 s before serving, 10 s serving, 300 s after deletion.
#[test]
fn downtime_splits_into_before_serving_serving_and_after_deletion() {
    let t0 = chrono::DateTime::UNIX_EPOCH;
    let at = |s: f64| t0 + delta_from_secs(s);
    let down = |a: f64, b: f64, reason| DownInterval {
        from: at(a),
        to: at(b),
        reason,
    };
    let intervals = [
        down(0.0, 60.0, "load balancer not provisioned"),
        down(100.0, 110.0, "no listener"),
        down(200.0, 500.0, "load balancer deleted"),
    ];
    let [before, serving, after] = split_by_life(&intervals, Some(at(60.0)), Some(at(200.0)));
    assert_eq!((before, serving, after), (60.0, 10.0, 300.0));
    // Still alive: nothing after deletion.
    let [_, serving, after] = split_by_life(&intervals[..2], Some(at(60.0)), None);
    assert_eq!((serving, after), (10.0, 0.0));
    // Never served: everything before the deletion counts as before serving.
    let never = [
        down(0.0, 200.0, "no member up"),
        down(200.0, 500.0, "load balancer deleted"),
    ];
    let [before, serving, after] = split_by_life(&never, None, Some(at(200.0)));
    assert_eq!((before, serving, after), (200.0, 0.0, 300.0));
    // An interval across the first service is cut there.
    let [before, serving, _] =
        split_by_life(&[down(50.0, 70.0, "no listener")], Some(at(60.0)), None);
    assert_eq!((before, serving), (10.0, 10.0));
    assert!(!split_by_life(&[], None, None)[0].is_sign_negative());
}

#[test]
fn forgetting_keeps_every_answer_about_later_times() {
    let t0 = chrono::DateTime::UNIX_EPOCH;
    let at = |s: f64| t0 + delta_from_secs(s);
    let a: IpAddr = "10.0.0.1".parse().expect("ip");
    let (pool, member) = (Uuid::from_u128(1), Uuid::from_u128(2));
    let monitor = MonitorCfg {
        uuid: Uuid::from_u128(3),
        pool,
        kind: "tcp".into(),
        delay_s: 2,
        up_threshold: 3,
        down_threshold: 2,
        http: None,
    };
    let config = |port: u16| {
        let m = MemberCfg {
            uuid: member,
            pool,
            address: a,
            protocol_port: port,
            monitor_port: None,
            enabled: true,
        };
        LbConfig::new(Vec::new(), vec![m], vec![monitor.clone()])
    };
    let op = |t: f64, port: u16| AppliedOp {
        requested_at: at(t),
        effective_at: at(t),
        operation: format!("member port {port}"),
        config: config(port),
    };
    let lb = |deleted: Option<f64>| LbHistory {
        name: "lb".into(),
        tags: BTreeMap::new(),
        created_at: at(0.0),
        ready_at: at(5.0),
        deleted_at: deleted.map(at),
        vips: Vec::new(),
        ops: vec![op(10.0, 80), op(20.0, 81), op(400.0, 82)],
    };
    let mut dp = DataPlane::default();
    for (i, deleted) in [None, Some(250.0), Some(350.0)].into_iter().enumerate() {
        dp.lbs.insert(Uuid::from_u128(10 + i as u128), lb(deleted));
    }
    let host = Uuid::from_u128(20);
    dp.record_host(host, "node-1", vec![a], at(0.0), &[(at(0.0), true)]);
    dp.record_host(host, "node-1", vec![a], at(100.0), &[(at(100.0), false)]);
    dp.record_host(host, "node-1", vec![a], at(200.0), &[(at(200.0), true)]);
    dp.record_host(host, "node-1", vec![a], at(500.0), &[(at(500.0), false)]);
    for (t, port, default) in [
        (1.0, 80, false),
        (2.0, 80, false),
        (450.0, 80, false),
        (3.0, 81, false),
        (4.0, 82, false),
        (6.0, 82, true),
    ] {
        dp.backends.push(BackendDecl {
            at: at(t),
            address: a,
            port: Some(port),
            behaviour: (!default).then_some(Behaviour {
                http_status: 204,
                ..Behaviour::default()
            }),
        });
    }
    let fip: IpAddr = "192.0.2.1".parse().expect("ip");
    for (t, lb) in [(5.0, 10), (12.0, 11), (420.0, 10)] {
        dp.record_floating(fip, Some(Uuid::from_u128(lb)), at(t));
    }
    let live = Uuid::from_u128(10);
    let health = |dp: &DataPlane, t: f64| {
        let lb = &dp.lbs[&live];
        health_at(&member_health(dp, lb, member, at(t)), at(t))
    };
    // What the data plane answers at times after the cut-off.
    let answers = |dp: &DataPlane| -> Vec<_> {
        [300.0, 405.0, 420.0, 600.0]
            .iter()
            .map(|t| {
                (
                    health(dp, *t),
                    dp.behaviour(a, 80, at(*t)),
                    dp.lbs[&live].config_at(at(*t)).cloned(),
                )
            })
            .collect()
    };
    let before = answers(&dp);

    dp.forget_before(at(300.0));
    assert_eq!(
        dp.lbs.len(),
        2,
        "the load balancer deleted at 250 s is forgotten"
    );
    let ops: Vec<_> = dp.lbs[&live].ops.iter().map(|o| o.effective_at).collect();
    assert_eq!(ops, [at(20.0), at(400.0)]);
    assert_eq!(dp.hosts[&host].log, [(at(200.0), true), (at(500.0), false)]);
    // Port 80's last two and 81's one; 82 was back to the default long before.
    assert_eq!(dp.backends.iter().count(), 3);
    let floating: Vec<_> = dp.floating.iter().map(|e| e.at).collect();
    assert_eq!(floating, [at(12.0), at(420.0)]);
    let after = answers(&dp);
    assert_eq!(after, before);
    assert_eq!(before[2].0, Health::Up);
}

#[test]
fn expected_codes_accept_single_codes_and_ranges() {
    let codes = vec!["200".to_string(), "300-302".to_string()];
    assert!(code_matches(&codes, 200));
    assert!(code_matches(&codes, 301));
    assert!(!code_matches(&codes, 204));
    assert!(!code_matches(&["x-y".to_string()], 200));
}
