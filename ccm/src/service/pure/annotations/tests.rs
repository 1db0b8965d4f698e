use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const UID: &str = "abc-123";
const SUBNET: &str = "0f3f2e6c-0000-4000-8000-000000000001";

fn port(name: &str, protocol: &str, port: i32, node_port: Option<i32>) -> ServicePort {
    ServicePort {
        name: (!name.is_empty()).then(|| name.to_string()),
        protocol: Some(protocol.to_string()),
        port,
        node_port,
        ..Default::default()
    }
}

fn svc(annotations: &[(&str, &str)]) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some(UID.into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            ports: Some(vec![port("http", "TCP", 80, Some(30080))]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ok(annotations: &[(&str, &str)]) -> ServiceConfig {
    match parse_service(&svc(annotations)) {
        Ok(Some(c)) => c,
        other => panic!("expected a config, got {other:?}"),
    }
}

fn errs(s: &Service) -> ConfigErrors {
    match parse_service(s) {
        Err(e) => e,
        other => panic!("expected errors, got {other:?}"),
    }
}

/// Exactly one error, on `key`, whose message names the key and the value.
fn bad(key: &str, value: &str) -> ConfigError {
    let e = errs(&svc(&[(key, value)]));
    assert_eq!(e.errors.len(), 1, "{key}={value:?}: {e}");
    let err = e.errors[0].clone();
    assert_eq!(err.field, key);
    let msg = err.to_string();
    assert!(msg.contains(key), "{msg}");
    assert!(msg.contains(&format!("{value:?}")), "{msg}");
    assert!(!err.hint.is_empty());
    err
}

#[test]
fn defaults_match_the_reference() {
    let c = ok(&[]);
    assert_eq!(c.lb_name, "k8s-service-abc-123");
    assert_eq!(c.flavor, "lb-standard");
    assert_eq!(c.zone, None);
    assert_eq!(c.lb_uuid, None);
    assert_eq!(c.config_version, 1);
    assert_eq!(c.vip_addresses, None);
    assert!(c.floating_ips.is_empty());
    assert_eq!(c.pool_algorithm, PoolAlgorithm::RoundRobin);
    assert_eq!(c.pool_protocol, PoolProtocol::Tcp);
    assert_eq!(c.listener_protocol, ListenerProtocol::Tcp);
    assert!(c.allowed_cidrs.is_empty());
    assert!(c.allowed_subnets.is_empty());
    assert_eq!(c.timeout_client_data_ms, 50000);
    assert_eq!(c.timeout_member_connect_ms, 5000);
    assert_eq!(c.timeout_member_data_ms, 50000);
    assert_eq!(c.monitor, MonitorConfig::default());
    assert_eq!(c.monitor.kind, MonitorType::Tcp);
    assert!(!c.monitor.kind_explicit);
    assert_eq!(
        (
            c.monitor.delay_s,
            c.monitor.timeout_s,
            c.monitor.up_threshold,
            c.monitor.down_threshold
        ),
        (2, 1, 2, 3)
    );
    assert_eq!(c.monitor.http, None);
    assert!(c.node_selector.is_empty());
    assert_eq!(c.force_hostname, None);
    assert_eq!(c.ip_mode, IpMode::Proxy);
    assert_eq!(
        c.ports,
        vec![PortSpec {
            name: "http".into(),
            protocol: PortProtocol::Tcp,
            port: 80,
            node_port: 30080
        }]
    );
    assert_eq!(c.external_traffic_policy, ExternalTrafficPolicy::Cluster);
    assert_eq!(c.health_check_node_port, None);
    assert!(c.source_ranges.is_empty());
    assert_eq!((c.namespace.as_str(), c.name.as_str()), ("default", "web"));
    assert_eq!(c.uid, UID);
}

#[test]
fn key_list_is_complete_and_distinct() {
    let set: BTreeSet<_> = ALL_ANNOTATIONS.iter().collect();
    assert_eq!(set.len(), 24);
    assert!(
        ALL_ANNOTATIONS
            .iter()
            .all(|k| k.starts_with(ANNOTATION_PREFIX))
    );
    assert!(
        CCM_WRITTEN_ANNOTATIONS
            .iter()
            .all(|k| ALL_ANNOTATIONS.contains(k))
    );
    // Byte-identical to the reference, spot-checked where it is easy to slip.
    assert_eq!(
        LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
        "k8s.cloudscale.ch/loadbalancer-timeout-member-connect-ms"
    );
    assert_eq!(
        LOADBALANCER_NODE_SELECTOR,
        "k8s.cloudscale.ch/loadbalancer-node-selector"
    );
}

#[test]
fn not_handled_services_are_skipped() {
    let mut s = svc(&[(LOADBALANCER_POOL_ALGORITHM, "bogus")]);
    if let Some(sp) = s.spec.as_mut() {
        sp.type_ = Some("ClusterIP".into());
    }
    assert_eq!(parse_service(&s), Ok(None));
    if let Some(sp) = s.spec.as_mut() {
        sp.type_ = None;
    }
    assert_eq!(parse_service(&s), Ok(None));
    let mut s = svc(&[(LOADBALANCER_POOL_ALGORITHM, "bogus")]);
    if let Some(sp) = s.spec.as_mut() {
        sp.load_balancer_class = Some("example.com/other".into());
    }
    assert_eq!(parse_service(&s), Ok(None));
    assert!(!is_handled(&s));
    let mut s = svc(&[]);
    s.spec = None;
    assert_eq!(parse_service(&s), Ok(None));
}

#[test]
fn lb_name_and_uuid_helpers() {
    assert_eq!(lb_name(&svc(&[])), "k8s-service-abc-123");
    assert_eq!(lb_name(&svc(&[(LOADBALANCER_NAME, "my-lb")])), "my-lb");
    assert_eq!(
        lb_name(&svc(&[(LOADBALANCER_NAME, "  ")])),
        "k8s-service-abc-123"
    );
    assert_eq!(ok(&[(LOADBALANCER_NAME, "my-lb")]).lb_name, "my-lb");
    bad(LOADBALANCER_NAME, "");
    bad(LOADBALANCER_NAME, " ");
    let u = "5e3b0e2f-8c7a-4a52-9a0f-6f6a1d0f1e2d";
    assert_eq!(
        lb_uuid(&svc(&[(LOADBALANCER_UUID, u)])),
        Ok(Some(Uuid::parse_str(u).unwrap_or_default()))
    );
    assert_eq!(lb_uuid(&svc(&[(LOADBALANCER_UUID, "")])), Ok(None));
    assert!(lb_uuid(&svc(&[(LOADBALANCER_UUID, "nope")])).is_err());
}

#[test]
fn uuid_and_config_version() {
    let u = "5E3B0E2F-8C7A-4A52-9A0F-6F6A1D0F1E2D";
    let c = ok(&[(LOADBALANCER_UUID, u), (LOADBALANCER_CONFIG_VERSION, "1")]);
    assert_eq!(
        c.lb_uuid.map(|u| u.to_string()).as_deref(),
        Some("5e3b0e2f-8c7a-4a52-9a0f-6f6a1d0f1e2d")
    );
    assert_eq!(c.config_version, 1);
    assert_eq!(ok(&[(LOADBALANCER_UUID, "")]).lb_uuid, None);
    bad(LOADBALANCER_UUID, "not-a-uuid");
    bad(LOADBALANCER_CONFIG_VERSION, "2");
    bad(LOADBALANCER_CONFIG_VERSION, "");
}

#[test]
fn flavor_and_zone() {
    assert_eq!(ok(&[(LOADBALANCER_FLAVOR, "lb-large")]).flavor, "lb-large");
    bad(LOADBALANCER_FLAVOR, "");
    bad(LOADBALANCER_FLAVOR, " lb-standard");
    assert_eq!(
        ok(&[(LOADBALANCER_ZONE, "rma1")]).zone.as_deref(),
        Some("rma1")
    );
    assert_eq!(ok(&[(LOADBALANCER_ZONE, "")]).zone, None);
    bad(LOADBALANCER_ZONE, "rma 1");
}

#[test]
fn vip_addresses_keep_absent_and_empty_apart() {
    assert_eq!(ok(&[]).vip_addresses, None);
    assert_eq!(
        ok(&[(LOADBALANCER_VIP_ADDRESSES, "[]")]).vip_addresses,
        Some(vec![])
    );
    let v =
        format!(r#"[{{"subnet": "{SUBNET}", "address": "10.0.0.10"}}, {{"subnet": "{SUBNET}"}}]"#);
    let subnet = Uuid::parse_str(SUBNET).unwrap_or_default();
    assert_eq!(
        ok(&[(LOADBALANCER_VIP_ADDRESSES, &v)]).vip_addresses,
        Some(vec![
            VipRequest {
                subnet,
                address: Some("10.0.0.10".parse().unwrap_or(IpAddr::from([0, 0, 0, 0])))
            },
            VipRequest {
                subnet,
                address: None
            },
        ])
    );
    // Empty string: a JSON parser's error (3.1).
    bad(LOADBALANCER_VIP_ADDRESSES, "");
    bad(LOADBALANCER_VIP_ADDRESSES, "{}");
    bad(LOADBALANCER_VIP_ADDRESSES, r#"[{"subnet": "nope"}]"#);
    bad(LOADBALANCER_VIP_ADDRESSES, r#"[{"address": "10.0.0.1"}]"#);
    bad(
        LOADBALANCER_VIP_ADDRESSES,
        &format!(r#"[{{"subnet": "{SUBNET}", "address": "10.0.0.1/24"}}]"#),
    );
    bad(
        LOADBALANCER_VIP_ADDRESSES,
        &format!(r#"[{{"subnet": "{SUBNET}", "adress": "10.0.0.1"}}]"#),
    );
    bad(LOADBALANCER_VIP_ADDRESSES, r#"["10.0.0.1"]"#);
}

#[test]
fn floating_ips_are_normalised() {
    let c = ok(&[(
        LOADBALANCER_FLOATING_IPS,
        r#"["5.102.150.123", "2A06:C01:0:0::123", "5.102.150.123/32", "2a06:c01::/56"]"#,
    )]);
    let shown: Vec<String> = c.floating_ips.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        ["5.102.150.123/32", "2a06:c01::123/128", "2a06:c01::/56"]
    );
    assert!(
        ok(&[(LOADBALANCER_FLOATING_IPS, "")])
            .floating_ips
            .is_empty()
    );
    assert!(
        ok(&[(LOADBALANCER_FLOATING_IPS, "  ")])
            .floating_ips
            .is_empty()
    );
    assert!(
        ok(&[(LOADBALANCER_FLOATING_IPS, "[]")])
            .floating_ips
            .is_empty()
    );
    let e = bad(LOADBALANCER_FLOATING_IPS, r#"["5.102.150.123/24"]"#);
    assert!(e.problem.contains("5.102.150.0/24"), "{e}");
    bad(LOADBALANCER_FLOATING_IPS, r#"["example.com"]"#);
    bad(LOADBALANCER_FLOATING_IPS, "5.102.150.123/32");
    bad(LOADBALANCER_FLOATING_IPS, r#"[1]"#);
}

#[test]
fn pool_settings() {
    let c = ok(&[
        (LOADBALANCER_POOL_ALGORITHM, "least_connections"),
        (LOADBALANCER_POOL_PROTOCOL, "proxyv2"),
    ]);
    assert_eq!(c.pool_algorithm, PoolAlgorithm::LeastConnections);
    assert_eq!(c.pool_protocol, PoolProtocol::ProxyV2);
    assert_eq!(
        ok(&[(LOADBALANCER_POOL_ALGORITHM, "source_ip")]).pool_algorithm,
        PoolAlgorithm::SourceIp
    );
    assert_eq!(
        ok(&[(LOADBALANCER_POOL_PROTOCOL, "proxy")]).pool_protocol,
        PoolProtocol::Proxy
    );
    let e = bad(LOADBALANCER_POOL_ALGORITHM, "roundrobin");
    assert!(e.hint.contains("round_robin"));
    bad(LOADBALANCER_POOL_ALGORITHM, "");
    bad(LOADBALANCER_POOL_PROTOCOL, "udp");
    bad(LOADBALANCER_POOL_PROTOCOL, "TCP");
    bad(LOADBALANCER_POOL_PROTOCOL, "");
    assert_eq!(
        crate::cloudscale::PoolAlgorithm::from(PoolAlgorithm::SourceIp),
        crate::cloudscale::PoolAlgorithm::SourceIp
    );
    assert_eq!(
        crate::cloudscale::PoolProtocol::from(PoolProtocol::ProxyV2),
        crate::cloudscale::PoolProtocol::ProxyV2
    );
}

#[test]
fn listener_settings() {
    assert_eq!(
        ok(&[(LOADBALANCER_LISTENER_PROTOCOL, "tcp")]).listener_protocol,
        ListenerProtocol::Tcp
    );
    bad(LOADBALANCER_LISTENER_PROTOCOL, "udp");
    bad(LOADBALANCER_LISTENER_PROTOCOL, "");
    let c = ok(&[
        (LOADBALANCER_TIMEOUT_CLIENT_DATA_MS, "+1"),
        (LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS, "4294967295"),
        (LOADBALANCER_TIMEOUT_MEMBER_DATA_MS, "007"),
    ]);
    assert_eq!(
        (
            c.timeout_client_data_ms,
            c.timeout_member_connect_ms,
            c.timeout_member_data_ms
        ),
        (1, 4_294_967_295, 7)
    );
    for key in [
        LOADBALANCER_TIMEOUT_CLIENT_DATA_MS,
        LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS,
        LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
    ] {
        bad(key, "");
        bad(key, "5s");
        bad(key, " 5");
        bad(key, "0");
        bad(key, "-1");
        bad(key, "4294967296");
    }
}

#[test]
fn allowed_cidrs_and_subnets() {
    let c = ok(&[(
        LOADBALANCER_LISTENER_ALLOWED_CIDRS,
        r#"["1.2.3.4", "10.0.0.0/8", "2001:DB8::/32", "1.2.3.4/32"]"#,
    )]);
    let shown: Vec<String> = c.allowed_cidrs.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["1.2.3.4/32", "10.0.0.0/8", "2001:db8::/32"]);
    assert!(
        ok(&[(LOADBALANCER_LISTENER_ALLOWED_CIDRS, "")])
            .allowed_cidrs
            .is_empty()
    );
    bad(LOADBALANCER_LISTENER_ALLOWED_CIDRS, r#"["10.0.0.1/8"]"#);
    bad(LOADBALANCER_LISTENER_ALLOWED_CIDRS, r#"["10.0.0.0/33"]"#);
    bad(LOADBALANCER_LISTENER_ALLOWED_CIDRS, r#"{"a": 1}"#);

    let upper = SUBNET.to_uppercase();
    let v = format!(r#"["{upper}", "{SUBNET}"]"#);
    let c = ok(&[(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, &v)]);
    assert_eq!(c.allowed_subnets.len(), 1);
    assert_eq!(c.allowed_subnets[0].to_string(), SUBNET);
    assert!(
        ok(&[(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, "")])
            .allowed_subnets
            .is_empty()
    );
    bad(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, r#"["subnet-a"]"#);
    bad(LOADBALANCER_LISTENER_ALLOWED_SUBNETS, "[");
}

#[test]
fn monitor_numbers_and_type() {
    let c = ok(&[
        (LOADBALANCER_HEALTH_MONITOR_DELAY_S, "10"),
        (LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S, "5"),
        (LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD, "1"),
        (LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD, "9"),
        (LOADBALANCER_HEALTH_MONITOR_TYPE, "udp-connect"),
    ]);
    assert_eq!(
        (
            c.monitor.delay_s,
            c.monitor.timeout_s,
            c.monitor.up_threshold,
            c.monitor.down_threshold
        ),
        (10, 5, 1, 9)
    );
    assert_eq!(c.monitor.kind, MonitorType::UdpConnect);
    assert!(c.monitor.kind_explicit);
    for (name, kind) in [
        ("ping", MonitorType::Ping),
        ("tcp", MonitorType::Tcp),
        ("http", MonitorType::Http),
        ("https", MonitorType::Https),
        ("tls-hello", MonitorType::TlsHello),
    ] {
        assert_eq!(
            ok(&[(LOADBALANCER_HEALTH_MONITOR_TYPE, name)]).monitor.kind,
            kind
        );
    }
    assert_eq!(
        crate::cloudscale::HealthMonitorType::from(MonitorType::TlsHello),
        crate::cloudscale::HealthMonitorType::TlsHello
    );
    bad(LOADBALANCER_HEALTH_MONITOR_TYPE, "HTTP");
    bad(LOADBALANCER_HEALTH_MONITOR_TYPE, "");
    for key in [
        LOADBALANCER_HEALTH_MONITOR_DELAY_S,
        LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S,
        LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
        LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD,
    ] {
        let e = bad(key, "two");
        // Gap 25: the key at fault, not always the delay annotation.
        assert_eq!(e.field, key);
        bad(key, "");
        bad(key, "0");
        bad(key, "1.5");
    }
}

#[test]
fn http_options() {
    assert_eq!(
        ok(&[(LOADBALANCER_HEALTH_MONITOR_HTTP, "{}")]).monitor.http,
        None
    );
    // Only exactly `{}` means "none"; other spellings are options with defaults.
    assert_eq!(
        ok(&[(LOADBALANCER_HEALTH_MONITOR_HTTP, "{ }")])
            .monitor
            .http,
        Some(HttpOptions::default())
    );
    let c = ok(&[(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"method": "HEAD", "url_path": "/healthz", "version": "1.1",
            "host": "example.com", "expected_codes": ["200", "301-302"]}"#,
    )]);
    assert_eq!(
        c.monitor.http,
        Some(HttpOptions {
            method: HttpMethod::Head,
            url_path: "/healthz".into(),
            version: HttpVersion::V1_1,
            host: Some("example.com".into()),
            expected_codes: vec!["200".into(), "301-302".into()],
        })
    );
    let c = ok(&[(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"version": "1.0", "host": null}"#,
    )]);
    assert_eq!(
        c.monitor.http.map(|h| (h.version, h.url_path, h.host)),
        Some((HttpVersion::V1_0, "/".to_string(), None))
    );
    assert_eq!(HttpOptions::livez().url_path, "/livez");
    assert_eq!(HttpOptions::livez().version, HttpVersion::V1_0);

    bad(LOADBALANCER_HEALTH_MONITOR_HTTP, "");
    bad(LOADBALANCER_HEALTH_MONITOR_HTTP, "[]");
    bad(LOADBALANCER_HEALTH_MONITOR_HTTP, "{url_path: /}");
    bad(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"version": "1.0", "host": "example.com"}"#,
    );
    bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"version": "2"}"#);
    bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"method": "get"}"#);
    bad(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"url_path": "healthz"}"#,
    );
    bad(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"expected_codes": []}"#,
    );
    bad(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"expected_codes": "200"}"#,
    );
    bad(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"expected_codes": ["2xx"]}"#,
    );
    bad(
        LOADBALANCER_HEALTH_MONITOR_HTTP,
        r#"{"expected_codes": ["204-200"]}"#,
    );
    bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"host": ""}"#);
    bad(LOADBALANCER_HEALTH_MONITOR_HTTP, r#"{"path": "/"}"#);
}

#[test]
fn status_settings() {
    assert_eq!(
        ok(&[(LOADBALANCER_FORCE_HOSTNAME, "lb.example.com")])
            .force_hostname
            .as_deref(),
        Some("lb.example.com")
    );
    assert_eq!(
        ok(&[(LOADBALANCER_FORCE_HOSTNAME, "")]).force_hostname,
        None
    );
    bad(LOADBALANCER_FORCE_HOSTNAME, "LB.example.com");
    bad(LOADBALANCER_FORCE_HOSTNAME, "5.102.150.1");
    bad(LOADBALANCER_FORCE_HOSTNAME, "lb..example.com");
    assert_eq!(ok(&[(LOADBALANCER_IP_MODE, "VIP")]).ip_mode, IpMode::Vip);
    assert_eq!(
        ok(&[(LOADBALANCER_IP_MODE, "Proxy")]).ip_mode,
        IpMode::Proxy
    );
    bad(LOADBALANCER_IP_MODE, "vip");
    bad(LOADBALANCER_IP_MODE, "");
}

#[test]
fn node_selector_annotation() {
    let c = ok(&[(LOADBALANCER_NODE_SELECTOR, "role=lb,!excluded")]);
    let mut labels = BTreeMap::from([("role".to_string(), "lb".to_string())]);
    assert!(c.node_selector.matches(&labels));
    labels.insert("excluded".into(), "".into());
    assert!(!c.node_selector.matches(&labels));
    assert!(
        ok(&[(LOADBALANCER_NODE_SELECTOR, "")])
            .node_selector
            .is_empty()
    );
    assert_eq!(
        ok(&[(LOADBALANCER_NODE_SELECTOR, "role==")])
            .node_selector
            .to_string(),
        "role=="
    );
    bad(LOADBALANCER_NODE_SELECTOR, "role=(");
    let e = bad(LOADBALANCER_NODE_SELECTOR, "a in b");
    assert!(e.to_string().contains("unable to parse selector"), "{e}");
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn selector_grammar() {
    let m = |sel: &str, l: &[(&str, &str)]| match Selector::parse(sel) {
        Ok(s) => s.matches(&labels(l)),
        Err(e) => panic!("{sel:?}: {e}"),
    };
    assert!(m("", &[]));
    assert!(m("  ", &[("a", "b")]));
    assert!(m("a=b", &[("a", "b")]));
    assert!(!m("a=b", &[("a", "c")]));
    assert!(!m("a=b", &[]));
    assert!(m("a==b", &[("a", "b")]));
    assert!(m("a!=b", &[]));
    assert!(m("a!=b", &[("a", "c")]));
    assert!(!m("a!=b", &[("a", "b")]));
    assert!(m("a in (x, y)", &[("a", "y")]));
    assert!(!m("a in (x,y)", &[("a", "z")]));
    assert!(!m("a in (x,y)", &[]));
    assert!(m("a notin (x,y)", &[]));
    assert!(m("a notin (x,y)", &[("a", "z")]));
    assert!(!m("a notin (x,y)", &[("a", "x")]));
    assert!(m("a", &[("a", "")]));
    assert!(!m("a", &[]));
    assert!(m("!a", &[]));
    assert!(!m("!a", &[("a", "x")]));
    assert!(m("a>5", &[("a", "6")]));
    assert!(!m("a>5", &[("a", "5")]));
    assert!(!m("a>5", &[("a", "x")]));
    assert!(m("a<5", &[("a", "-1")]));
    assert!(m("a=", &[("a", "")]));
    assert!(m("a in ()", &[("a", "")]));
    assert!(m("a in (,x)", &[("a", "")]));
    assert!(m("in=notin", &[("in", "notin")]));
    assert!(m("a in (in,notin)", &[("a", "notin")]));
    assert!(m(
        "node-role.kubernetes.io/worker,topology.kubernetes.io/zone in (rma1,lpg1),x!=y",
        &[
            ("node-role.kubernetes.io/worker", ""),
            ("topology.kubernetes.io/zone", "lpg1")
        ]
    ));

    for bad_sel in [
        "a=b=c",
        "a in b",
        ",a",
        "a,",
        "a,,b",
        "!a=b",
        "a b",
        "=b",
        "a in (x",
        "a in (x y)",
        "-a=b",
        "a/b/c",
        "A.B/c",
        "a=-b",
        "a>x",
        "a>",
        "a in (x,(",
        "a=(b)",
        "a!",
        "a=>b",
        "!",
        "()",
        "a notin x",
    ] {
        assert!(Selector::parse(bad_sel).is_err(), "{bad_sel:?} should fail");
    }

    let s = Selector::parse("z=1, a in (y,x), !m, k").unwrap_or_default();
    assert_eq!(s.to_string(), "a in (x,y),k,!m,z=1");
    assert_eq!(
        Selector::parse(&s.to_string()).map(|t| t.to_string()),
        Ok(s.to_string())
    );
    assert_eq!(s.requirements().len(), 4);
}

#[test]
fn spec_fields() {
    let mut s = svc(&[]);
    if let Some(sp) = s.spec.as_mut() {
        sp.ports = Some(vec![
            port("", "TCP", 53, Some(30053)),
            port("dns", "UDP", 53, Some(30054)),
        ]);
        sp.external_traffic_policy = Some("Local".into());
        sp.health_check_node_port = Some(32000);
        sp.load_balancer_source_ranges = Some(vec![" 10.1.2.3/8".into(), "1.2.3.4".into()]);
    }
    let c = match parse_service(&s) {
        Ok(Some(c)) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(c.ports[0].name, "");
    assert_eq!(c.ports[1].protocol, PortProtocol::Udp);
    assert_eq!(c.ports[1].node_port, 30054);
    assert_eq!(c.external_traffic_policy, ExternalTrafficPolicy::Local);
    assert_eq!(c.health_check_node_port, Some(32000));
    let ranges: Vec<String> = c.source_ranges.iter().map(ToString::to_string).collect();
    assert_eq!(ranges, ["10.0.0.0/8", "1.2.3.4/32"]);

    // Protocol defaults to TCP.
    let mut s = svc(&[]);
    if let Some(p) = s
        .spec
        .as_mut()
        .and_then(|sp| sp.ports.as_mut())
        .and_then(|p| p.first_mut())
    {
        p.protocol = None;
    }
    assert!(matches!(parse_service(&s), Ok(Some(c)) if c.ports[0].protocol == PortProtocol::Tcp));
}

#[test]
fn spec_errors_name_the_field() {
    let mut s = svc(&[]);
    if let Some(sp) = s.spec.as_mut() {
        sp.ports = Some(vec![
            port("a", "TCP", 80, None),
            port("b", "SCTP", 81, Some(30081)),
            port("c", "UDP", 0, Some(30082)),
            port("d", "TCP", 83, Some(70000)),
        ]);
        sp.external_traffic_policy = Some("Global".into());
        sp.health_check_node_port = Some(-1);
        sp.load_balancer_source_ranges = Some(vec!["nope".into()]);
    }
    let e = errs(&s);
    assert_eq!(
        e.fields(),
        [
            "spec.ports[0].nodePort",
            "spec.ports[1].protocol",
            "spec.ports[2].port",
            "spec.ports[3].nodePort",
            "spec.externalTrafficPolicy",
            "spec.healthCheckNodePort",
            "spec.loadBalancerSourceRanges[0]",
        ]
    );
    let msg = e.to_string();
    assert!(msg.contains("\"SCTP\""), "{msg}");
    assert!(
        !msg.contains("allocateLoadBalancerNodePorts"),
        "the Service does not set it: {msg}"
    );
    if let Some(sp) = s.spec.as_mut() {
        sp.allocate_load_balancer_node_ports = Some(false);
    }
    let msg = errs(&s).to_string();
    assert!(msg.contains("allocateLoadBalancerNodePorts"), "{msg}");

    let mut s = svc(&[]);
    if let Some(sp) = s.spec.as_mut() {
        sp.ports = None;
    }
    assert_eq!(errs(&s).fields(), ["spec.ports"]);
    let mut s = svc(&[]);
    s.metadata.uid = None;
    assert_eq!(errs(&s).fields(), ["metadata.uid"]);
}

#[test]
fn all_errors_are_collected() {
    let mut s = svc(&[
        (LOADBALANCER_POOL_ALGORITHM, "fastest"),
        (LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD, "x"),
        (LOADBALANCER_TIMEOUT_MEMBER_DATA_MS, "-5"),
        (
            LOADBALANCER_FLOATING_IPS,
            r#"["1.2.3.4/33", "::1", "nope"]"#,
        ),
        (LOADBALANCER_NODE_SELECTOR, "a in"),
        (LOADBALANCER_IP_MODE, "proxy"),
    ]);
    if let Some(sp) = s.spec.as_mut() {
        sp.ports = Some(vec![port("x", "SCTP", 80, Some(30080))]);
    }
    let e = errs(&s);
    assert_eq!(e.errors.len(), 8, "{e}");
    let fields = e.fields();
    for key in [
        LOADBALANCER_POOL_ALGORITHM,
        LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD,
        LOADBALANCER_TIMEOUT_MEMBER_DATA_MS,
        LOADBALANCER_FLOATING_IPS,
        LOADBALANCER_NODE_SELECTOR,
        LOADBALANCER_IP_MODE,
        "spec.ports[0].protocol",
    ] {
        assert!(fields.contains(&key), "{key} missing in {fields:?}");
    }
    let msg = e.to_string();
    assert!(
        msg.starts_with("Service default/web has 8 invalid settings: "),
        "{msg}"
    );
    assert!(msg.contains("\"fastest\""));
    assert!(e.errors.iter().filter(|e| e.is_annotation()).count() == 7);
}

#[test]
fn long_values_are_shortened() {
    let long = "x".repeat(500);
    let e = errs(&svc(&[(LOADBALANCER_POOL_ALGORITHM, &long)]));
    let v = e.errors[0].value.clone().unwrap_or_default();
    assert!(v.len() < 110 && v.ends_with("..."), "{v}");
    assert_eq!(shown("ä\"b"), "\"ä\\\"b\"");
}

#[test]
fn parse_network_forms() {
    let s = |x: &str| parse_network(x).map(|n| n.to_string());
    assert_eq!(s("1.2.3.4"), Ok("1.2.3.4/32".into()));
    assert_eq!(s("::FFFF:1.2.3.4"), Ok("::ffff:1.2.3.4/128".into()));
    assert_eq!(s("2a06:0c01::0123/128"), Ok("2a06:c01::123/128".into()));
    assert_eq!(s("0.0.0.0/0"), Ok("0.0.0.0/0".into()));
    assert!(s("1.2.3.4/").is_err());
    assert!(s("1.2.3.4/24").is_err());
    assert!(s("").is_err());
}
