//! Floating IPs several Services claim, and who holds each floating IP now. Pure.
//!
//! A floating IP points at one target at a time, so two claimants must not take it from
//! each other at every pass. The rule, for an address several LoadBalancer Services of the
//! cluster claim (`k8s.cloudscale.ch/loadbalancer-floating-ips`):
//!
//! 1. the Service whose load balancer holds it keeps it;
//! 2. when none of them holds it, the Service created first gets it (then the one first by
//!    `namespace/name`);
//! 3. every other claimant is refused that address alone (a `FloatingIPConflict` Warning
//!    naming the Service that has it); every other setting still applies to both.
//!
//! Only Services that can be served count as claimants: of type LoadBalancer, handled by
//! this CCM, not being deleted, with a valid configuration. An address nobody else claims
//! is taken from wherever it points (a server, a load balancer made by hand, one whose
//! Service no longer claims it), and the change names that previous holder; it is never
//! taken from another cluster's load balancer (two clusters would take it from each other
//! at every resync).

use super::context::service_key;
use crate::service::cloud::fetch::{FipTarget, FloatingIpView};
use crate::service::pure::annotations;
use crate::service::pure::ownership::{TAG_CLUSTER, TAG_SERVICE_UID};
use crate::service::pure::plan::{Account, AccountFloatingIp, Holder, LbOwner};
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// One Service's claim on floating IPs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// `namespace/name`.
    pub service: String,
    pub uid: String,
    /// `metadata.creationTimestamp` as written (RFC 3339 sorts as time).
    pub created: String,
    pub addresses: Vec<IpAddr>,
}

impl Claim {
    /// Which of two claimants came first: created first, then by `namespace/name`.
    fn order(&self) -> (&str, &str) {
        (&self.created, &self.service)
    }
}

/// The addresses a Service's annotation names, whatever the Service's state (an entry that
/// does not parse is that Service's own error to report).
pub fn annotated_addresses(svc: &Service) -> Vec<IpAddr> {
    let Some(raw) = svc
        .annotations()
        .get(annotations::LOADBALANCER_FLOATING_IPS)
    else {
        return Vec::new();
    };
    serde_json::from_str::<Vec<String>>(raw)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| annotations::parse_network(e).ok())
        .map(|n| n.addr())
        .collect()
}

/// The claim of `svc`, if it is a claimant at all: handled, not being deleted, valid, and
/// naming floating IPs.
pub fn claim_of(svc: &Service) -> Option<Claim> {
    if svc.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let addresses = annotated_addresses(svc);
    if addresses.is_empty() || !matches!(annotations::parse_service(svc), Ok(Some(_))) {
        return None;
    }
    Some(Claim {
        service: service_key(svc),
        uid: svc.metadata.uid.clone().unwrap_or_default(),
        created: svc
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
        addresses,
    })
}

/// The claims of the Services other than `uid` that name any of `addresses` (only those
/// are parsed in full: most Services claim nothing).
pub fn rivals(services: &[Arc<Service>], uid: &str, addresses: &[IpAddr]) -> Vec<Claim> {
    if addresses.is_empty() {
        return Vec::new();
    }
    services
        .iter()
        .filter(|s| s.metadata.uid.as_deref() != Some(uid))
        .filter(|s| annotated_addresses(s).iter().any(|a| addresses.contains(a)))
        .filter_map(|s| claim_of(s))
        .collect()
}

/// Why `me` may not take `address` now, or `None` when it may. `holder`: the UID of the
/// Service whose load balancer holds the address, if one of this cluster's does.
pub fn refusal(
    me: &Claim,
    address: IpAddr,
    rivals: &[Claim],
    holder: Option<&str>,
) -> Option<String> {
    let rivals: Vec<&Claim> = rivals
        .iter()
        .filter(|r| r.uid != me.uid && r.addresses.contains(&address))
        .collect();
    if rivals.is_empty() || holder == Some(me.uid.as_str()) {
        return None;
    }
    if let Some(h) = rivals.iter().find(|r| Some(r.uid.as_str()) == holder) {
        return Some(format!(
            "floating IP {address} is also claimed by Service {}, whose load balancer holds it: it stays there, so that it does not flap between load balancers; remove it from one of the two Services",
            h.service
        ));
    }
    let first = rivals
        .iter()
        .copied()
        .min_by(|a, b| a.order().cmp(&b.order()))?;
    (first.order() < me.order()).then(|| {
        format!(
            "floating IP {address} is also claimed by Service {}, created earlier: it goes to that one, so that it does not flap between load balancers; remove it from one of the two Services",
            first.service
        )
    })
}

/// What holds each floating IP: a server, or a load balancer and whose it is.
fn holder(
    fip: &FloatingIpView,
    cluster: &str,
    services: &BTreeMap<String, String>,
) -> Option<Holder> {
    match fip.target? {
        FipTarget::Server { uuid, name } => Some(Holder::Server {
            name: name.map_or_else(|| uuid.to_string(), str::to_string),
        }),
        FipTarget::LoadBalancer { uuid, name, lb } => {
            let tag = |k: &str| lb.and_then(|l| l.tags.get(k));
            let owner = match (tag(TAG_CLUSTER), tag(TAG_SERVICE_UID)) {
                (Some(c), _) if c != cluster => LbOwner::OtherCluster(c.clone()),
                (_, Some(uid)) => match services.get(uid) {
                    Some(svc) => LbOwner::Service(svc.clone()),
                    None => LbOwner::Unknown,
                },
                _ => LbOwner::Unknown,
            };
            Some(Holder::LoadBalancer {
                name: lb.map_or(name, |l| l.name).to_string(),
                uuid,
                owner,
            })
        }
    }
}

/// The UID of the Service of this cluster whose load balancer holds `fip`, if any.
fn holding_service<'a>(fip: &FloatingIpView<'a>, cluster: &str) -> Option<&'a str> {
    let Some(FipTarget::LoadBalancer { lb: Some(lb), .. }) = fip.target else {
        return None;
    };
    if lb.tags.get(TAG_CLUSTER).is_some_and(|c| c != cluster) {
        return None;
    }
    lb.tags.get(TAG_SERVICE_UID).map(String::as_str)
}

/// What the planner needs to know of the account's floating IPs for the Service `me`
/// (`None`: it claims none): each floating IP's region and holder, and the addresses other
/// claimants keep.
pub fn account(
    fips: &[FloatingIpView],
    cluster: &str,
    me: Option<&Claim>,
    rivals: &[Claim],
    services: &BTreeMap<String, String>,
) -> Account {
    let mut account = Account::default();
    for f in fips {
        let address = f.network.addr();
        account.floating_ips.push(AccountFloatingIp {
            network: f.network,
            region: f.region.map(str::to_string),
            holder: holder(f, cluster, services),
        });
        if let Some(me) = me.filter(|m| m.addresses.contains(&address))
            && let Some(why) = refusal(me, address, rivals, holding_service(f, cluster))
        {
            account.claimed_elsewhere.insert(address, why);
        }
    }
    account
}

/// `namespace/name` by UID, of the Services whose load balancers may hold floating IPs.
pub fn names_by_uid(services: &[Arc<Service>]) -> BTreeMap<String, String> {
    services
        .iter()
        .filter_map(|s| Some((s.metadata.uid.clone()?, service_key(s))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(service: &str, uid: &str, created: &str, ips: &[&str]) -> Claim {
        Claim {
            service: service.into(),
            uid: uid.into(),
            created: created.into(),
            addresses: ips.iter().map(|i| i.parse().expect("ip")).collect(),
        }
    }

    const IP: &str = "45.132.236.10";

    fn ip() -> IpAddr {
        IP.parse().expect("ip")
    }

    #[test]
    fn the_holder_keeps_its_address_and_only_the_other_is_refused() {
        let holder = claim("default/s4", "u4", "2026-01-01T00:00:00Z", &[IP]);
        let newcomer = claim("other-team/s6", "u6", "2025-01-01T00:00:00Z", &[IP]);
        // The holder is younger, and still keeps it.
        assert_eq!(
            refusal(&holder, ip(), std::slice::from_ref(&newcomer), Some("u4")),
            None
        );
        let why =
            refusal(&newcomer, ip(), std::slice::from_ref(&holder), Some("u4")).expect("refused");
        assert!(why.contains("default/s4") && why.contains(IP), "{why}");
        assert!(why.contains("holds it"), "{why}");
    }

    #[test]
    fn of_two_new_claimants_exactly_one_wins_the_first_created() {
        let a = claim("default/a", "ua", "2026-01-01T00:00:00Z", &[IP]);
        let b = claim("default/b", "ub", "2026-01-02T00:00:00Z", &[IP]);
        for holder in [None, Some("a server's or another load balancer's")] {
            assert_eq!(refusal(&a, ip(), std::slice::from_ref(&b), holder), None);
            let why = refusal(&b, ip(), std::slice::from_ref(&a), holder).expect("b refused");
            assert!(
                why.contains("default/a") && why.contains("created earlier"),
                "{why}"
            );
        }
        // Created in the same second: by namespace/name.
        let a2 = claim("default/a", "ua", "2026-01-01T00:00:00Z", &[IP]);
        let b2 = claim("default/b", "ub", "2026-01-01T00:00:00Z", &[IP]);
        assert_eq!(refusal(&a2, ip(), std::slice::from_ref(&b2), None), None);
        assert!(refusal(&b2, ip(), &[a2], None).is_some());
    }

    #[test]
    fn an_address_nobody_else_claims_is_never_refused() {
        let me = claim("default/a", "ua", "2026-01-01T00:00:00Z", &[IP]);
        let other = claim(
            "default/b",
            "ub",
            "2025-01-01T00:00:00Z",
            &["45.132.236.11"],
        );
        assert_eq!(refusal(&me, ip(), &[other], Some("ub")), None);
    }

    fn service(
        name: &str,
        uid: &str,
        annotations: serde_json::Value,
        ports: serde_json::Value,
    ) -> Arc<Service> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "uid": uid,
                             "creationTimestamp": "2026-01-01T00:00:00Z",
                             "annotations": annotations},
                "spec": {"type": "LoadBalancer", "ports": ports},
            }))
            .expect("service"),
        )
    }

    #[test]
    fn a_service_that_cannot_be_served_is_no_claimant() {
        let fips = json!({annotations::LOADBALANCER_FLOATING_IPS: format!("[\"{IP}/32\"]")});
        let good = service(
            "good",
            "u1",
            fips.clone(),
            json!([{"port": 80, "nodePort": 30080}]),
        );
        let sctp = service(
            "sctp",
            "u2",
            fips,
            json!([{"port": 80, "nodePort": 30080, "protocol": "SCTP"}]),
        );
        assert!(claim_of(&good).is_some());
        assert_eq!(claim_of(&sctp), None);
        let found = rivals(&[good.clone(), sctp], "u9", &[ip()]);
        assert_eq!(
            found.iter().map(|c| c.service.as_str()).collect::<Vec<_>>(),
            ["default/good"]
        );
        // Itself is never its own rival.
        assert!(rivals(&[good], "u1", &[ip()]).is_empty());
    }

    use crate::cloudscale::{FloatingIp, LoadBalancer};
    use crate::service::cloud::fetch::floating_ip_views;
    use crate::service::testkit::fixtures::load_balancer as lb;
    use uuid::Uuid;

    /// [`account`] over the wire values, through the cloud edge's views.
    fn account_of(
        fips: &[FloatingIp],
        lbs: &[LoadBalancer],
        me: Option<&Claim>,
        rivals: &[Claim],
        names: &BTreeMap<String, String>,
    ) -> Account {
        account(&floating_ip_views(fips, lbs), "c1", me, rivals, names)
    }

    fn fip(on_lb: Option<u128>, on_server: Option<&str>) -> FloatingIp {
        let mut v = json!({"href": "x", "network": format!("{IP}/32"), "ip_version": 4,
                           "region": {"slug": "rma"}});
        if let Some(u) = on_lb {
            v["load_balancer"] =
                json!({"href": "x", "uuid": Uuid::from_u128(u).to_string(), "name": "?"});
        }
        if let Some(s) = on_server {
            v["server"] = json!({"href": "x", "uuid": Uuid::from_u128(9).to_string(), "name": s});
        }
        serde_json::from_value(v).expect("floating ip")
    }

    #[test]
    fn holders_are_named_and_another_clusters_is_recognised() {
        let lbs = [
            lb(
                1,
                "k8s-service-a",
                json!({TAG_CLUSTER: "c1", TAG_SERVICE_UID: "ua"}),
            ),
            lb(
                2,
                "theirs",
                json!({TAG_CLUSTER: "other", TAG_SERVICE_UID: "zz"}),
            ),
            lb(3, "by-hand", json!({})),
        ];
        let names: BTreeMap<String, String> = [("ua".to_string(), "default/a".to_string())].into();
        let holder_of = |f: FloatingIp| {
            account_of(&[f], &lbs, None, &[], &names).floating_ips[0]
                .holder
                .clone()
        };
        assert_eq!(
            holder_of(fip(Some(1), None)),
            Some(Holder::LoadBalancer {
                name: "k8s-service-a".into(),
                uuid: Uuid::from_u128(1),
                owner: LbOwner::Service("default/a".into())
            })
        );
        assert!(matches!(
            holder_of(fip(Some(2), None)),
            Some(Holder::LoadBalancer { owner: LbOwner::OtherCluster(c), .. }) if c == "other"
        ));
        assert!(matches!(
            holder_of(fip(Some(3), None)),
            Some(Holder::LoadBalancer {
                owner: LbOwner::Unknown,
                ..
            })
        ));
        assert_eq!(
            holder_of(fip(None, Some("node-1"))),
            Some(Holder::Server {
                name: "node-1".into()
            })
        );
        assert_eq!(holder_of(fip(None, None)), None);
    }

    #[test]
    fn the_account_lists_the_addresses_another_claimant_keeps() {
        let lbs = [lb(
            1,
            "k8s-service-a",
            json!({TAG_CLUSTER: "c1", TAG_SERVICE_UID: "ua"}),
        )];
        let a = claim("default/a", "ua", "2026-01-02T00:00:00Z", &[IP]);
        let b = claim("default/b", "ub", "2026-01-01T00:00:00Z", &[IP]);
        let names = BTreeMap::new();
        let for_b = account_of(
            &[fip(Some(1), None)],
            &lbs,
            Some(&b),
            std::slice::from_ref(&a),
            &names,
        );
        assert!(for_b.claimed_elsewhere.contains_key(&ip()), "a holds it");
        let for_a = account_of(&[fip(Some(1), None)], &lbs, Some(&a), &[b], &names);
        assert!(for_a.claimed_elsewhere.is_empty(), "the holder keeps it");
    }
}
