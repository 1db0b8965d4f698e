//! Which existing pool becomes which Service port.
//!
//! A pool can become a port in place only when its immutable attributes (algorithm,
//! protocol) are the port's and none of its members would have to be re-created on the
//! same address and node port with another monitor port (the API may refuse two members on
//! one address and port, so that member could only be replaced break-before-make). Among
//! such pools, the one that already serves the port's backend wins (same protocol family
//! and node port: its members can stay), then the one with a listener on the port's
//! protocol and port (no listener move), then the one with the port's name (a rename is
//! free). A pool with neither the backend nor the listener port is not reused: changing
//! its members while its listener still serves another port would route that port to
//! this port's backend. The exception is an empty pool without listeners (left by an
//! interrupted pass): it routes nothing, and is taken up again by its name.

use super::super::model::*;

/// Why a pool fits a port, compared lexicographically.
type Affinity = (bool, bool, bool);

fn compatible(d: &DesiredPool, a: &ActualPool) -> bool {
    a.algorithm == d.algorithm
        && a.protocol == d.protocol
        && a.members.iter().all(|am| {
            d.members.iter().all(|m| {
                m.endpoint() != am.member.endpoint() || m.identity() == am.member.identity()
            })
        })
}

fn affinity(d: &DesiredPool, a: &ActualPool) -> Option<Affinity> {
    let backend = a.family() == d.family()
        && !a.members.is_empty()
        && a.members
            .iter()
            .all(|m| m.member.protocol_port == d.node_port);
    let port = a
        .listeners
        .iter()
        .any(|l| l.listener.key() == d.listener.key());
    let name = a.name == d.name;
    // A pool that shares only the name would change backend while its listener still
    // serves its old port: that port would be routed to another port's backend meanwhile.
    // A pool with neither members nor listeners routes nothing: one a pass created before
    // it was interrupted (a failure, a crash, a wait) is taken up again by its name
    // instead of a further pool being built next to it.
    let fresh = a.members.is_empty() && a.listeners.is_empty();
    (backend || port || (fresh && name)).then_some((backend, port, name))
}

/// For each desired pool, the index of the actual pool that becomes it (`None`: a new pool
/// is built). Each actual pool serves at most one desired pool; ties go to the earlier
/// desired pool, then the earlier actual pool, so the result is deterministic.
pub(super) fn match_pools(desired: &[DesiredPool], actual: &[ActualPool]) -> Vec<Option<usize>> {
    let mut candidates: Vec<(Affinity, usize, usize)> = Vec::new();
    for (i, d) in desired.iter().enumerate() {
        for (j, a) in actual.iter().enumerate() {
            if compatible(d, a)
                && let Some(score) = affinity(d, a)
            {
                candidates.push((score, i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut out = vec![None; desired.len()];
    let mut taken = vec![false; actual.len()];
    for (_, i, j) in candidates {
        if out[i].is_none() && !taken[j] {
            out[i] = Some(j);
            taken[j] = true;
        }
    }
    out
}
