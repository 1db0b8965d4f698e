//! The guards in front of every Node deletion. Pure.
//!
//! A Node is deleted when its server no longer exists, and "no longer exists" is only as
//! good as the account that says so: a token of another project, or an API root that is not
//! the API, makes every server look deleted. So before anything is deleted:
//!
//! - the complete server list must answer as the API does (a JSON list), and hold at least
//!   one server of the cluster's Nodes (by provider ID, or by name for a Node not yet
//!   initialized): an account that holds none of them is not this cluster's
//!   ([`Hold::ForeignAccount`]);
//! - at most `--node-deletion-threshold` of the cluster's Nodes may look gone at once (when
//!   at least three do): above that, something is more likely wrong with the account than
//!   with the servers, as kube-controller-manager stops evicting when a large share of a
//!   zone is unhealthy (`--unhealthy-zone-threshold`) ([`Hold::TooMany`]);
//! - deletions are paced at `--node-deletion-rate` per second, one at a time (its
//!   `--node-eviction-rate`); a rate of 0 never deletes ([`Hold::Disabled`]).

use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// Below this many Nodes looking gone at once, the share is not judged (as upstream does
/// not call a zone unhealthy for fewer than three NotReady Nodes).
pub const MIN_GONE_FOR_THRESHOLD: usize = 3;

/// Why no Node is deleted now.
#[derive(Debug, Clone, PartialEq)]
pub enum Hold {
    /// The server list could not be read as the API's (a wrong API root, or an error).
    NoServerList(String),
    /// The account lists none of the cluster's servers (or none at all).
    ForeignAccount { cluster_servers: usize },
    /// Too large a share of the cluster looks gone.
    TooMany {
        gone: usize,
        nodes: usize,
        threshold: f64,
    },
    /// `--node-deletion-rate 0`.
    Disabled,
}

impl Hold {
    /// The `reason` label of `cloudscale_ccm_node_deletions_held`.
    pub fn label(&self) -> &'static str {
        match self {
            Hold::NoServerList(_) => "no-server-list",
            Hold::ForeignAccount { .. } => "foreign-account",
            Hold::TooMany { .. } => "threshold",
            Hold::Disabled => "disabled",
        }
    }

    /// Every label, for the metric's series.
    pub const LABELS: [&'static str; 4] =
        ["no-server-list", "foreign-account", "threshold", "disabled"];

    /// The Warning Event's message for the Node `node` (stable while the cause lasts, so
    /// that repeats count on one Event).
    pub fn message(&self, node: &str) -> String {
        let head = format!("Not deleting node {node}, although its server looks gone");
        match self {
            Hold::NoServerList(e) => format!(
                "{head}: the server list cannot be read as the cloudscale.ch API's, so nothing proves it ({e})"
            ),
            Hold::ForeignAccount { cluster_servers } => format!(
                "{head}: the account the API token reaches holds none of the {cluster_servers} servers of this cluster's Nodes; check that CLOUDSCALE_ACCESS_TOKEN (or --token-file) is a token of this cluster's project"
            ),
            Hold::TooMany {
                gone,
                nodes,
                threshold,
            } => format!(
                "{head}: {gone} of {nodes} Nodes look gone, more than --node-deletion-threshold {threshold} of the cluster; check the account and the servers, then delete the Nodes by hand (kubectl delete node) or raise the threshold"
            ),
            Hold::Disabled => format!("{head}: --node-deletion-rate is 0"),
        }
    }
}

/// Servers by what a Node knows of its own: the provider IDs of initialized Nodes, the
/// names of the others (until it is initialized, a Node's server is found by its name).
/// For the server list, every server's UUID and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Servers {
    pub uuids: BTreeSet<Uuid>,
    pub names: BTreeSet<String>,
}

impl Servers {
    /// How many servers are known (an uninitialized Node's name stands for one).
    pub fn len(&self) -> usize {
        self.uuids.len() + self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.uuids.is_empty() && self.names.is_empty()
    }

    /// Whether `listed` holds any of these servers.
    fn any_in(&self, listed: &Servers) -> bool {
        !self.uuids.is_disjoint(&listed.uuids) || !self.names.is_disjoint(&listed.names)
    }
}

/// Whether Nodes may be deleted now. `cluster`: the servers of the cluster's Nodes (see
/// [`Servers`]); `listed`: every server of the complete list; `gone`: the Nodes whose
/// server looks gone; `nodes`: every Node of the cluster. A cluster whose Nodes are all
/// uninitialized is judged by their names: with another project's token no Node gets
/// initialized, and a Node registered anew would otherwise be judged by no evidence at all.
pub fn judge(
    cluster: &Servers,
    listed: &Servers,
    gone: usize,
    nodes: usize,
    threshold: f64,
) -> Option<Hold> {
    if listed.uuids.is_empty() || (!cluster.is_empty() && !cluster.any_in(listed)) {
        return Some(Hold::ForeignAccount {
            cluster_servers: cluster.len(),
        });
    }
    if gone >= MIN_GONE_FOR_THRESHOLD && gone as f64 > threshold * nodes as f64 {
        return Some(Hold::TooMany {
            gone,
            nodes,
            threshold,
        });
    }
    None
}

/// Paces deletions: a token bucket of one, refilled at `rate` per second (full at start).
#[derive(Debug, Clone)]
pub struct Pace {
    rate: f64,
    /// When the next deletion may go (`None`: now).
    next: Option<Instant>,
}

impl Pace {
    pub fn new(rate: f64) -> Pace {
        Pace { rate, next: None }
    }

    /// Takes the one token if it is there at `now`; `Err(None)` when deletions are off,
    /// `Err(Some(when))` when the next one may go.
    pub fn take(&mut self, now: Instant) -> Result<(), Option<Instant>> {
        if self.rate <= 0.0 || !self.rate.is_finite() {
            return Err(None);
        }
        match self.next {
            Some(at) if at > now => Err(Some(at)),
            _ => {
                let gap = Duration::from_secs_f64((1.0 / self.rate).min(1e9));
                self.next = Some(now + gap);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u128]) -> Servers {
        Servers {
            uuids: ids.iter().map(|i| Uuid::from_u128(*i)).collect(),
            names: BTreeSet::new(),
        }
    }

    #[test]
    fn an_account_holding_none_of_the_clusters_servers_deletes_nothing() {
        // Another project's token: its list has servers, none of this cluster's.
        let hold = judge(&set(&[1, 2, 3]), &set(&[7, 8]), 1, 3, 0.55);
        assert_eq!(hold, Some(Hold::ForeignAccount { cluster_servers: 3 }));
        assert!(
            hold.expect("hold")
                .message("n1")
                .contains("CLOUDSCALE_ACCESS_TOKEN")
        );
        // An empty account, even for a cluster with no initialized Node.
        assert!(matches!(
            judge(&set(&[]), &set(&[]), 1, 1, 0.55),
            Some(Hold::ForeignAccount { .. })
        ));
        // One of the cluster's servers is there: the account is the cluster's.
        assert_eq!(judge(&set(&[1, 2, 3]), &set(&[1, 2, 9]), 1, 3, 0.55), None);
    }

    #[test]
    fn a_cluster_of_uninitialized_nodes_is_judged_by_their_names() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        let cluster = Servers {
            uuids: BTreeSet::new(),
            names: names(&["node-2", "node-3"]),
        };
        // Another project's servers, other names: nothing proves node-3's server gone.
        let foreign = Servers {
            names: names(&["other-1", "other-2"]),
            ..set(&[7, 8])
        };
        assert_eq!(
            judge(&cluster, &foreign, 1, 2, 0.55),
            Some(Hold::ForeignAccount { cluster_servers: 2 })
        );
        // node-2's server is there by name: the account is the cluster's.
        let own = Servers {
            names: names(&["node-2", "other-1"]),
            ..set(&[7, 8])
        };
        assert_eq!(judge(&cluster, &own, 1, 2, 0.55), None);
    }

    #[test]
    fn more_than_the_threshold_gone_at_once_deletes_nothing() {
        let all = set(&[1, 2, 3, 4, 5]);
        let listed = set(&[1, 2]);
        assert!(matches!(
            judge(&all, &listed, 3, 5, 0.55),
            Some(Hold::TooMany {
                gone: 3,
                nodes: 5,
                ..
            })
        ));
        assert_eq!(judge(&all, &listed, 3, 6, 0.55), None, "3 of 6 is 50 %");
        // Fewer than three gone is never judged by share.
        assert_eq!(judge(&set(&[1, 2]), &set(&[1]), 1, 2, 0.55), None);
        assert_eq!(judge(&set(&[1, 2, 3]), &set(&[1]), 2, 3, 0.55), None);
        let message = Hold::TooMany {
            gone: 3,
            nodes: 5,
            threshold: 0.55,
        }
        .message("n1");
        assert!(
            message.contains("--node-deletion-threshold 0.55"),
            "{message}"
        );
        assert!(message.contains("kubectl delete node"), "{message}");
    }

    #[tokio::test(start_paused = true)]
    async fn deletions_are_paced_one_per_period() {
        let mut p = Pace::new(0.1);
        let t0 = Instant::now();
        assert_eq!(p.take(t0), Ok(()));
        assert_eq!(p.take(t0), Err(Some(t0 + Duration::from_secs(10))));
        assert!(p.take(t0 + Duration::from_secs(9)).is_err());
        assert_eq!(p.take(t0 + Duration::from_secs(10)), Ok(()));
        assert_eq!(Pace::new(0.0).take(t0), Err(None));
    }
}
