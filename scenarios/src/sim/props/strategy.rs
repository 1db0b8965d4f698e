//! The proptest generators: a valid LoadBalancer Service (1-4 ports, named or not, TCP and
//! UDP, shared and distinct node ports; any valid value of the annotations; either traffic
//! policy; node selector or none; floating IPs regional and global, v4 and v6, or none),
//! 1-6 nodes (some excluded by labels), and 1-4 changes drawn from every row of the
//! impact table, another Service claiming the floating IPs, and wrong cloud settings; half
//! the cases 1-2 neighbours (in `default`, in `team`, or in a second cluster on the same
//! account, some holding a floating IP) and claims across them. Everything shrinks towards
//! fewer ports, nodes, annotations, neighbours and changes.

use super::{Case, Change, End, FipDraw, Neighbour, NodeDraw, Place, PortDraw, SUBNET, Spec};
use proptest::prelude::*;
use proptest::sample::select;

const PORTS: &[u16] = &[80, 443, 53, 8080, 8443, 5000, 9000];
const WORDS: &[&str] = &["http", "https", "dns", "web", "api", "metrics"];
const ALGORITHMS: &[&str] = &["round_robin", "least_connections", "source_ip"];
const POOL_PROTOCOLS: &[&str] = &["tcp", "proxy", "proxyv2"];
const MONITOR_TYPES: &[&str] = &["tcp", "ping", "tls-hello", "http", "https"];
/// Every path answers 200 on a node port the kube-proxy view serves.
const MONITOR_HTTP: &[&str] = &[
    r#"{"url_path": "/healthz"}"#,
    r#"{"method": "HEAD", "expected_codes": ["200-204"]}"#,
    r#"{"version": "1.1", "host": "health.example.com"}"#,
    r#"{}"#,
];
/// Allowed CIDRs: the first client of `play` (10.1.2.3) is inside the first two, the
/// second (203.0.113.9) inside the last two, the third (198.51.100.7) in none.
const CIDRS: &[&str] = &[
    r#"["10.0.0.0/8"]"#,
    r#"["10.0.0.0/8", "203.0.113.0/24"]"#,
    r#"["203.0.113.0/24"]"#,
];
/// Every selector keeps the nodes labelled `tier=edge` (the first node always is).
const SELECTORS: &[&str] = &["tier=edge", "tier!=core", "tier in (edge)"];

fn secs(range: std::ops::RangeInclusive<u32>) -> impl Strategy<Value = String> {
    range.prop_map(|n| n.to_string())
}

fn millis() -> impl Strategy<Value = String> {
    (1u32..=60).prop_map(|n| (n * 1000).to_string())
}

fn pick(values: &'static [&'static str]) -> impl Strategy<Value = String> {
    select(values).prop_map(str::to_string)
}

/// One annotation (suffix, valid value) a Service may be created with or changed to.
pub fn annotation() -> impl Strategy<Value = (String, String)> {
    let pair = |key: &'static str, s: BoxedStrategy<String>| s.prop_map(move |v| (key.into(), v));
    prop_oneof![
        pair("pool-algorithm", pick(ALGORITHMS).boxed()),
        pair("pool-protocol", pick(POOL_PROTOCOLS).boxed()),
        pair("health-monitor-type", pick(MONITOR_TYPES).boxed()),
        pair("health-monitor-delay-s", secs(1..=5).boxed()),
        pair("health-monitor-timeout-s", secs(1..=3).boxed()),
        pair("health-monitor-up-threshold", secs(2..=10).boxed()),
        pair("health-monitor-down-threshold", secs(1..=5).boxed()),
        pair("health-monitor-http", pick(MONITOR_HTTP).boxed()),
        pair("timeout-client-data-ms", millis().boxed()),
        pair("timeout-member-connect-ms", millis().boxed()),
        pair("timeout-member-data-ms", millis().boxed()),
        pair("listener-allowed-cidrs", pick(CIDRS).boxed()),
        pair(
            "listener-allowed-subnets",
            Just(format!(r#"["{SUBNET}"]"#)).boxed()
        ),
        pair("node-selector", pick(SELECTORS).boxed()),
        pair(
            "name",
            (0u8..10).prop_map(|n| format!("renamed-{n}")).boxed()
        ),
        pair("ip-mode", pick(&["Proxy", "VIP"]).boxed()),
        pair(
            "force-hostname",
            (0u8..10).prop_map(|n| format!("lb{n}.example.com")).boxed()
        ),
        pair("listener-protocol", Just("tcp".to_string()).boxed()),
    ]
}

/// Ports as drawn (index into [`PORTS`], UDP when the port is 53, a name), made valid:
/// unique per protocol and number, unique names, and a single port may go unnamed.
fn ports() -> impl Strategy<Value = Vec<PortDraw>> {
    (
        prop::collection::vec((0..PORTS.len(), any::<bool>(), 0..WORDS.len()), 1..=4),
        any::<bool>(),
    )
        .prop_map(|(raw, unnamed)| {
            let mut out: Vec<PortDraw> = Vec::new();
            for (p, udp, w) in raw {
                let port = PORTS[p];
                let udp = udp && port == 53;
                if out.iter().any(|o| o.port == port && o.udp == udp) {
                    continue;
                }
                let mut name = WORDS[w].to_string();
                if out.iter().any(|o| o.name.as_deref() == Some(&name)) {
                    name = format!("{name}{}", out.len());
                }
                out.push(PortDraw {
                    name: Some(name),
                    port,
                    udp,
                });
            }
            if out.len() == 1 && unnamed {
                out[0].name = None;
            }
            out
        })
}

fn fip() -> impl Strategy<Value = FipDraw> {
    (any::<bool>(), any::<bool>()).prop_map(|(v6, global)| FipDraw { v6, global })
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        ports(),
        prop::bool::weighted(0.25),
        prop::collection::vec(annotation(), 0..=4),
        prop::bool::weighted(0.3),
        prop::collection::vec(fip(), 0..=1),
    )
        .prop_map(|(ports, local, drawn, selector, floating_ips)| {
            let mut annotations: Vec<(String, String)> = Vec::new();
            if selector {
                annotations.push(("node-selector".into(), "tier=edge".into()));
            }
            for (k, v) in drawn {
                if !annotations.iter().any(|(o, _)| *o == k) {
                    annotations.push((k, v));
                }
            }
            Spec {
                ports,
                local,
                annotations,
                floating_ips,
            }
        })
}

fn node() -> impl Strategy<Value = NodeDraw> {
    (prop::bool::weighted(0.7), prop::bool::weighted(0.7))
        .prop_map(|(edge, endpoint)| NodeDraw { edge, endpoint })
}

/// 1-6 nodes; the first is selected by every selector and runs an endpoint.
fn nodes() -> impl Strategy<Value = Vec<NodeDraw>> {
    prop::collection::vec(node(), 0..=5).prop_map(|rest| {
        let mut all = vec![NodeDraw {
            edge: true,
            endpoint: true,
        }];
        all.extend(rest);
        all
    })
}

/// An annotation set to another valid value, or (a tenth of the time) removed.
fn annotation_edit() -> impl Strategy<Value = (String, Option<String>)> {
    (annotation(), prop::bool::weighted(0.1))
        .prop_map(|((k, v), remove)| (k, (!remove).then_some(v)))
}

fn refused() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        Just(("flavor".to_string(), "lb-large".to_string())),
        Just(("zone".to_string(), "lpg1".to_string())),
        Just((
            "vip-addresses".to_string(),
            format!(r#"[{{"subnet": "{SUBNET}"}}]"#)
        )),
    ]
}

/// One change, from every row of the impact table.
pub fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        6 => annotation_edit().prop_map(|a| Change::Annotate(vec![a])),
        2 => prop::collection::vec(annotation_edit(), 2..=3).prop_map(Change::Annotate),
        1 => (refused(), prop::collection::vec(annotation_edit(), 0..=2))
            .prop_map(|((key, value), with)| Change::Refused { key, value, with }),
        1 => (0usize..4).prop_map(Change::RenamePort),
        1 => ((0usize..4), select(PORTS)).prop_map(|(i, p)| Change::RenumberPort(i, p)),
        1 => (0usize..4).prop_map(Change::NodePort),
        1 => ((0..PORTS.len()), (0..WORDS.len())).prop_map(|(p, w)| Change::AddPort(PortDraw {
            name: Some(format!("{}-new", WORDS[w])),
            port: PORTS[p],
            udp: false,
        })),
        1 => (0usize..4).prop_map(Change::RemovePort),
        1 => any::<bool>().prop_map(Change::Policy),
        1 => node().prop_map(Change::NodeJoin),
        1 => (0usize..6).prop_map(Change::NodeRelabel),
        1 => (0usize..6).prop_map(Change::NodeStop),
        1 => (0usize..6).prop_map(Change::NodeStart),
        1 => (0usize..6).prop_map(Change::NodeDelete),
        1 => fip().prop_map(Change::FipAdd),
        1 => fip().prop_map(Change::FipMove),
        1 => Just(Change::FipRemove),
        1 => any::<bool>().prop_map(Change::RivalClaim),
        1 => select(crate::sim::transport::Misconfig::ALL.to_vec()).prop_map(Change::Misconfigured),
        1 => (0usize..2).prop_map(Change::ClaimOf),
        2 => ((0usize..2), any::<bool>(), any::<bool>()).prop_map(|(of, to_web, release_first)| {
            Change::Hand { of, to_web, release_first }
        }),
        1 => (0usize..2).prop_map(Change::NameOf),
        1 => (0usize..2).prop_map(Change::CopyOf),
        1 => (0usize..2).prop_map(Change::DeleteNeighbour),
    ]
}

fn neighbour() -> impl Strategy<Value = Neighbour> {
    (
        prop_oneof![
            2 => Just(Place::Default),
            2 => Just(Place::Team),
            1 => Just(Place::OtherCluster),
        ],
        prop::bool::weighted(0.6),
    )
        .prop_map(|(place, fip)| Neighbour { place, fip })
}

/// 0-2 neighbours: half the cases hold none (the one-Service case).
fn neighbours() -> impl Strategy<Value = Vec<Neighbour>> {
    prop_oneof![
        1 => Just(Vec::new()),
        1 => prop::collection::vec(neighbour(), 1..=2),
    ]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        14 => Just(End::Keep),
        3 => Just(End::Delete),
        3 => Just(End::ToClusterIp),
    ]
}

/// A whole case.
pub fn case() -> impl Strategy<Value = Case> {
    (
        any::<u64>(),
        nodes(),
        spec(),
        neighbours(),
        prop::collection::vec(change(), 1..=4),
        end(),
    )
        .prop_map(|(seed, nodes, service, neighbours, changes, end)| Case {
            seed,
            nodes,
            service,
            neighbours,
            changes,
            end,
        })
}

/// The value trees of the first `count` cases of a seeded run (the report and the test
/// draw them alike; a tree shrinks its case).
pub fn case_trees(
    seed: u64,
    count: usize,
) -> Vec<Box<dyn proptest::strategy::ValueTree<Value = Case>>> {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = case().boxed();
    (0..count)
        .filter_map(|_| strategy.new_tree(&mut runner).ok())
        .map(|t| Box::new(t) as Box<dyn proptest::strategy::ValueTree<Value = Case>>)
        .collect()
}

/// The first `count` cases of a seeded run.
pub fn cases(seed: u64, count: usize) -> Vec<Case> {
    case_trees(seed, count)
        .iter()
        .map(|t| t.current())
        .collect()
}
