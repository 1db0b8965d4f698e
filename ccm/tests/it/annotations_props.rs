//! Property tests of the parse step (`ccm::service::pure::annotations`): no input panics, errors
//! always name the annotation at fault, parsing is deterministic, and normalised networks
//! round-trip.

use ccm::service::pure::annotations::*;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

fn service(annotations: BTreeMap<String, String>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("6c1f6d0e-2f7b-4a3e-9d43-0b7f0c1a2b3c".into()),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            ports: Some(vec![
                ServicePort {
                    name: Some("http".into()),
                    protocol: Some("TCP".into()),
                    port: 80,
                    node_port: Some(30080),
                    ..Default::default()
                },
                ServicePort {
                    name: Some("dns".into()),
                    protocol: Some("UDP".into()),
                    port: 53,
                    node_port: Some(30053),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn one(key: &str, value: &str) -> Service {
    service(BTreeMap::from([(key.to_string(), value.to_string())]))
}

/// Arbitrary text, plus text made of the characters that matter to the parsers (JSON,
/// CIDRs, selectors), so the interesting branches are reached often.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\\[\\]{}\",:. a-z0-9/=!()<>-]{0,40}",
        "\\[(\"[0-9a-f:./]{0,20}\",? ?){0,4}\\]",
        "\\{(\"(method|url_path|version|host|expected_codes|x)\": ?(\"[A-Za-z0-9./-]{0,8}\"|null|\\[\\]|1),? ?){0,4}\\}",
        "[a-z]{1,3}(=|!=|==| in | notin |>|<)?[a-z0-9(),]{0,6}(,!?[a-z]{1,3})?",
        "-?[0-9]{0,12}",
    ]
}

fn key() -> impl Strategy<Value = &'static str> {
    prop::sample::select(ALL_ANNOTATIONS.to_vec())
}

fn ipv4_net() -> impl Strategy<Value = IpNet> {
    (any::<u32>(), 0u8..=32).prop_map(|(a, len)| {
        IpNet::V4(
            Ipv4Net::new(Ipv4Addr::from(a), len).map_or_else(|_| Ipv4Net::default(), |n| n.trunc()),
        )
    })
}

fn ipv6_net() -> impl Strategy<Value = IpNet> {
    (any::<u128>(), 0u8..=128).prop_map(|(a, len)| {
        IpNet::V6(
            Ipv6Net::new(Ipv6Addr::from(a), len).map_or_else(|_| Ipv6Net::default(), |n| n.trunc()),
        )
    })
}

fn nets() -> impl Strategy<Value = Vec<IpNet>> {
    prop::collection::vec(prop_oneof![ipv4_net(), ipv6_net()], 0..6).prop_map(|v| {
        let mut out: Vec<IpNet> = Vec::new();
        for n in v {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    })
}

/// One way of writing a network that must normalise to it: canonical, bare address for
/// single-address networks, upper-case IPv6, or fully expanded IPv6.
fn spelled(net: &IpNet, style: u8) -> String {
    let single = net.prefix_len() == net.max_prefix_len();
    match (style % 4, net) {
        (1, _) if single => net.addr().to_string(),
        (2, IpNet::V6(_)) => net.to_string().to_uppercase(),
        (3, IpNet::V6(n)) => {
            let segs = n.addr().segments();
            let parts: Vec<String> = segs.iter().map(|s| format!("{s:04x}")).collect();
            format!("{}/{}", parts.join(":"), n.prefix_len())
        }
        _ => net.to_string(),
    }
}

fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_default()
}

/// A random valid annotation set.
fn valid_annotations() -> impl Strategy<Value = BTreeMap<String, String>> {
    let choice = |key: &'static str, values: &'static [&'static str]| {
        prop::option::of(prop::sample::select(values.to_vec()))
            .prop_map(move |v| v.map(|v| (key.to_string(), v.to_string())))
    };
    let number = |key: &'static str| {
        prop::option::of(1i64..=4_294_967_295)
            .prop_map(move |v| v.map(|v| (key.to_string(), v.to_string())))
    };
    let parts = (
        (
            choice(
                LOADBALANCER_POOL_ALGORITHM,
                &["round_robin", "least_connections", "source_ip"],
            ),
            choice(LOADBALANCER_POOL_PROTOCOL, &["tcp", "proxy", "proxyv2"]),
            choice(
                LOADBALANCER_HEALTH_MONITOR_TYPE,
                &["ping", "tcp", "http", "https", "tls-hello", "udp-connect"],
            ),
            choice(LOADBALANCER_IP_MODE, &["Proxy", "VIP"]),
            choice(LOADBALANCER_LISTENER_PROTOCOL, &["tcp"]),
            choice(
                LOADBALANCER_HEALTH_MONITOR_HTTP,
                &[
                    "{}",
                    "{ }",
                    r#"{"url_path": "/healthz", "expected_codes": ["200-204"]}"#,
                    r#"{"version": "1.0", "method": "HEAD"}"#,
                    r#"{"host": "example.com"}"#,
                ],
            ),
            choice(
                LOADBALANCER_NODE_SELECTOR,
                &["", "role=lb", "a in (x,y),!b", "k notin (v),k2", "n>3"],
            ),
            choice(LOADBALANCER_ZONE, &["", "rma1", "lpg1"]),
        ),
        (
            number(LOADBALANCER_HEALTH_MONITOR_DELAY_S),
            number(LOADBALANCER_HEALTH_MONITOR_TIMEOUT_S),
            number(LOADBALANCER_HEALTH_MONITOR_UP_THRESHOLD),
            number(LOADBALANCER_HEALTH_MONITOR_DOWN_THRESHOLD),
            number(LOADBALANCER_TIMEOUT_CLIENT_DATA_MS),
            number(LOADBALANCER_TIMEOUT_MEMBER_CONNECT_MS),
            number(LOADBALANCER_TIMEOUT_MEMBER_DATA_MS),
        ),
        (
            prop::option::of(nets()),
            prop::option::of(nets()),
            prop::option::of(prop::collection::vec(any::<u128>(), 0..3)),
            prop::option::of(prop::collection::vec(
                (any::<u128>(), any::<Option<u32>>()),
                0..3,
            )),
            prop::option::of("[a-z][a-z0-9-]{0,20}"),
            prop::option::of("[a-z][a-z0-9]{0,10}(\\.[a-z][a-z0-9]{0,10}){0,3}"),
        ),
    );
    parts.prop_map(
        |(choices, numbers, (fips, cidrs, subnets, vips, name, hostname))| {
            let mut out = BTreeMap::new();
            let (a, b, c, d, e, f, g, h) = choices;
            for kv in [a, b, c, d, e, f, g, h].into_iter().flatten() {
                out.insert(kv.0, kv.1);
            }
            let (a, b, c, d, e, f, g) = numbers;
            for kv in [a, b, c, d, e, f, g].into_iter().flatten() {
                out.insert(kv.0, kv.1);
            }
            let strings =
                |v: &[IpNet]| json_list(&v.iter().map(ToString::to_string).collect::<Vec<_>>());
            if let Some(v) = fips {
                out.insert(LOADBALANCER_FLOATING_IPS.into(), strings(&v));
            }
            if let Some(v) = cidrs {
                out.insert(LOADBALANCER_LISTENER_ALLOWED_CIDRS.into(), strings(&v));
            }
            if let Some(v) = subnets {
                let ids: Vec<String> = v
                    .iter()
                    .map(|u| uuid::Uuid::from_u128(*u).to_string())
                    .collect();
                out.insert(
                    LOADBALANCER_LISTENER_ALLOWED_SUBNETS.into(),
                    json_list(&ids),
                );
            }
            if let Some(v) = vips {
                let items: Vec<serde_json::Value> = v
                    .iter()
                    .map(|(u, a)| {
                        let mut o = serde_json::Map::new();
                        o.insert(
                            "subnet".into(),
                            uuid::Uuid::from_u128(*u).to_string().into(),
                        );
                        if let Some(a) = a {
                            o.insert("address".into(), Ipv4Addr::from(*a).to_string().into());
                        }
                        serde_json::Value::Object(o)
                    })
                    .collect();
                out.insert(
                    LOADBALANCER_VIP_ADDRESSES.into(),
                    serde_json::Value::Array(items).to_string(),
                );
            }
            if let Some(v) = name {
                out.insert(LOADBALANCER_NAME.into(), v);
            }
            if let Some(v) = hostname {
                out.insert(LOADBALANCER_FORCE_HOSTNAME.into(), v);
            }
            out
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any string under any key: no panic, and every error is about that key and names it.
    #[test]
    fn any_value_never_panics_and_errors_name_the_key(key in key(), value in text()) {
        match parse_service(&one(key, &value)) {
            Ok(Some(_)) => {}
            Ok(None) => prop_assert!(false, "a LoadBalancer Service must not be skipped"),
            Err(e) => {
                prop_assert!(!e.errors.is_empty());
                for err in &e.errors {
                    prop_assert_eq!(err.field.as_str(), key);
                    prop_assert!(err.is_annotation());
                    let msg = err.to_string();
                    prop_assert!(msg.contains(key), "{}", msg);
                    prop_assert!(err.value.is_some(), "{}", msg);
                    prop_assert!(!err.hint.is_empty(), "{}", msg);
                }
                prop_assert!(e.to_string().contains(key));
            }
        }
        // The helpers used on deletion never panic either.
        let _ = lb_name(&one(key, &value));
        let _ = lb_uuid(&one(key, &value));
    }

    /// Several arbitrary annotations at once: no panic, and the errors are exactly about the
    /// keys that were set.
    #[test]
    fn many_values_never_panic(
        pairs in prop::collection::btree_map(key(), text(), 0..8)
    ) {
        let ann: BTreeMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        if let Err(e) = parse_service(&service(ann)) {
            for err in &e.errors {
                prop_assert!(pairs.contains_key(err.field.as_str()), "{}", err);
            }
        }
    }

    /// Valid configurations parse, and parsing is deterministic.
    #[test]
    fn valid_configs_parse_deterministically(ann in valid_annotations()) {
        let svc = service(ann);
        let first = parse_service(&svc);
        prop_assert!(matches!(first, Ok(Some(_))), "{:?}", first);
        prop_assert_eq!(&first, &parse_service(&svc.clone()));
        prop_assert_eq!(&first, &parse_service(&svc));
        if let Ok(Some(c)) = first {
            prop_assert_eq!(c.lb_name, lb_name(&svc));
            prop_assert_eq!(c.ports.len(), 2);
        }
    }

    /// Normalised Floating IPs round-trip: parse(format(x)) == x, whatever the spelling.
    #[test]
    fn floating_ips_round_trip(nets in nets(), styles in prop::collection::vec(any::<u8>(), 6)) {
        let canonical: Vec<String> = nets.iter().map(ToString::to_string).collect();
        let c = parse_service(&one(LOADBALANCER_FLOATING_IPS, &json_list(&canonical)));
        prop_assert_eq!(c.map(|c| c.map(|c| c.floating_ips)), Ok(Some(nets.clone())));

        let written: Vec<String> = nets
            .iter()
            .zip(styles.iter().cycle())
            .map(|(n, s)| spelled(n, *s))
            .collect();
        let c = parse_service(&one(LOADBALANCER_FLOATING_IPS, &json_list(&written)));
        prop_assert_eq!(c.map(|c| c.map(|c| c.floating_ips)), Ok(Some(nets.clone())));

        // And the same for allowed CIDRs.
        let c = parse_service(&one(LOADBALANCER_LISTENER_ALLOWED_CIDRS, &json_list(&written)));
        prop_assert_eq!(c.map(|c| c.map(|c| c.allowed_cidrs)), Ok(Some(nets)));
    }

    /// Every normalised network prints in a form that parses back to itself.
    #[test]
    fn parse_network_is_idempotent(net in prop_oneof![ipv4_net(), ipv6_net()]) {
        prop_assert_eq!(parse_network(&net.to_string()), Ok(net));
    }

    /// A parsed selector prints in a form that parses back to the same selector.
    #[test]
    fn selector_display_round_trips(s in "[a-z]{1,3}(=|!=|==| in | notin |>|<)?[a-z0-9(),]{0,6}(,!?[a-z]{1,3}(=[a-z]{0,2})?){0,3}") {
        if let Ok(sel) = Selector::parse(&s) {
            prop_assert_eq!(Selector::parse(&sel.to_string()), Ok(sel));
        }
    }
}
