//! What the other parts of the simulation report to the checks: a broken invariant, and
//! the invariants checked as each create happens (by the transports, as the request
//! passes). A leaf, so that the world and the transports do not import the checks.

use std::collections::BTreeMap;
use uuid::Uuid;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// A short, stable name (`two-load-balancers`, `orphan`, ...).
    pub invariant: &'static str,
    pub detail: String,
}

pub(super) fn violation(invariant: &'static str, detail: String) -> Violation {
    Violation { invariant, detail }
}

/// What must hold at every moment, checked after each create for what a create request to
/// `path` can have broken (a scan of the whole account per create would cost 10^10 steps at
/// 1,000 Services on 100 nodes): never two load balancers for one Service, never a third
/// pool of one name on a load balancer (make-before-break keeps two while it switches),
/// never two members with one address and port in a pool.
pub fn after_create(cloud: &fakecloud::App, path: &str) -> Vec<Violation> {
    let path = path.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    cloud.read("", |ctx| match segments.as_slice() {
        ["v1", "load-balancers"] => load_balancers_once(ctx.st),
        ["v1", "load-balancers", "pools"] => pools_at_most_twice(ctx.st),
        ["v1", "load-balancers", "pools", pool, "members"] => Uuid::parse_str(pool)
            .map(|pool| members_once(ctx.st, pool))
            .unwrap_or_default(),
        _ => Vec::new(),
    })
}

fn load_balancers_once(st: &fakecloud::state::State) -> Vec<Violation> {
    let uid_tag = ccm::service::reconcile::controller::TAG_SERVICE_UID;
    let mut per_service: BTreeMap<&str, Vec<Uuid>> = BTreeMap::new();
    for lb in st.load_balancers().values() {
        if let Some(uid) = lb.tags.get(uid_tag) {
            per_service.entry(uid).or_default().push(lb.uuid);
        }
    }
    per_service
        .iter()
        .filter(|(_, l)| l.len() > 1)
        .map(|(uid, lbs)| {
            violation(
                "two-load-balancers",
                format!(
                    "Service uid {uid} had {} load balancers at once: {lbs:?}",
                    lbs.len()
                ),
            )
        })
        .collect()
}

fn pools_at_most_twice(st: &fakecloud::state::State) -> Vec<Violation> {
    let mut pools: BTreeMap<(Uuid, &str), usize> = BTreeMap::new();
    for p in st.pools().values() {
        *pools.entry((p.load_balancer, p.name.as_str())).or_default() += 1;
    }
    pools
        .iter()
        .filter(|(_, n)| **n > 2)
        .map(|((lb, name), n)| {
            violation(
                "duplicate",
                format!("{n} pools named {name} on {lb} at once"),
            )
        })
        .collect()
}

fn members_once(st: &fakecloud::state::State, pool: Uuid) -> Vec<Violation> {
    let mut members: BTreeMap<(std::net::IpAddr, u16), usize> = BTreeMap::new();
    for m in st.members().of_pool(pool) {
        *members.entry((m.address, m.protocol_port)).or_default() += 1;
    }
    members
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|((address, port), n)| {
            violation(
                "duplicate",
                format!("{n} members {address}:{port} in pool {pool} at once"),
            )
        })
        .collect()
}
