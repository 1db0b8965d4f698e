//! Property-based proof of the downtime class of every Service change: proptest draws a
//! valid LoadBalancer Service, the nodes it runs on and a sequence of changes
//! (`strategy::case`); `play::play` runs the real CCM against fakecloud and the embedded
//! API server on the simulation's virtual clock and checks, after every change, what
//! fakecloud's data-plane oracle saw against the CCM's own prediction and the documented
//! class (`model`); `report` sums many cases up per change type.
//!
//! The properties (each violation names one):
//! 1. `class-bound`: the downtime on each port stays within the bound of the class the CCM
//!    predicted (its `PlannedChange` Event, and the `plan` preview before the change), and
//!    `class-documented`: the predicted class is never worse than the documented one;
//!    `prediction`: the preview and the Event agree.
//! 2. `unconcerned`: ports (and clients) a change does not concern see 0 s.
//! 3. `refused`: a refused aspect makes no cloud write, emits its Warning naming the
//!    annotation, and the other aspects of the same edit still apply.
//! 4. `from-scratch`: after the sequence converged, the cloud state equals the one a Service
//!    created with the final spec gets (UUIDs, addresses and creation order aside), and
//!    `quiet`: a further reconcile writes nothing.
//! 5. `deletion`: deleting the Service (or turning it into ClusterIP) leaves no cloud
//!    resource of it, and its floating IPs stay in the account, unassigned.
//!
//! Changes made by others count as changes of the Service that concern none of its ports:
//! another Service claiming its floating IPs, and a minute of wrong cloud settings (another
//! project's token, a wrong API root, a revoked token) are judged by property 2 (0 s on
//! every port and every floating IP it held), and nothing of it is deleted meanwhile.
//!
//! A case may hold up to two neighbours ([`Neighbour`]): other Services in the same or
//! another namespace sharing the nodes, or in a second cluster on the same account. Claims
//! across them are drawn (a floating IP claimed twice or handed over in either order, a
//! load balancer name taken, a copy carrying another's UUID annotation, a claimant
//! deleted), and `neighbours` checks after every change:
//! 6. `neighbour-untouched`: a neighbour the change does not concern sees 0 s and its load
//!    balancer's configuration stays as it was (a refusal touches only what it refuses; no
//!    Service loses service through another's edit; clusters never change each other's
//!    resources);
//! 7. `conflict-resolved`: a floating IP given up by its holder reaches the Service that
//!    claims it within `neighbours::HAND_OVER_S`; a copy gets no load balancer and a
//!    Warning; a held floating IP stays with its holder.
//!
//! What it offers, all from here: the [`Case`] and what it is drawn from, the drawing
//! ([`cases`]), playing one ([`run`], or [`play_on`] another backend such as [`Socket`]),
//! the documented classes ([`classify`], [`ROWS`]) and the report ([`run_all`],
//! [`summarize`], [`shrink`]).

mod backend;
mod measure;
mod model;
mod neighbours;
mod play;
mod report;
mod scratch;
mod state;
mod strategy;
mod verdict;

pub use backend::Socket;
pub use model::{Kind, ROWS, classify};
pub use play::{Outcome, play_on, run};
pub use report::{CASES, SEED, Summary, run_all, shrink, summarize};
pub use strategy::cases;

use serde::{Deserialize, Serialize};

/// The annotation prefix every key below carries.
pub const A: &str = "k8s.cloudscale.ch/loadbalancer-";

/// One node of a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeDraw {
    /// Labelled `tier=edge` (else `tier=core`): the node selector `tier=edge` keeps only
    /// these.
    pub edge: bool,
    /// A ready endpoint of the Service runs there (what `externalTrafficPolicy: Local`
    /// health checks follow).
    pub endpoint: bool,
}

/// One port of a drawn Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortDraw {
    /// `None` only for a Service's single port.
    pub name: Option<String>,
    pub port: u16,
    pub udp: bool,
}

/// A floating IP a Service claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FipDraw {
    pub v6: bool,
    pub global: bool,
}

/// A drawn LoadBalancer Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    pub ports: Vec<PortDraw>,
    pub local: bool,
    /// Annotation suffixes (after [`A`]) and values; [`SUBNET`] stands for the nodes'
    /// subnet.
    pub annotations: Vec<(String, String)>,
    pub floating_ips: Vec<FipDraw>,
}

/// Stands for the UUID of the nodes' subnet in an annotation value.
pub const SUBNET: &str = "{subnet}";

/// One change of a sequence. Node and port indexes are taken modulo what exists when the
/// change is played; a change that does not apply then (stopping the last running node
/// the Service has, removing its only port) is played as nothing and reported so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    /// Annotations set (`Some`) or removed (`None`), one or several at once.
    Annotate(Vec<(String, Option<String>)>),
    /// A refused change (`flavor`, `zone` or `vip-addresses`) in the same edit as allowed
    /// annotation changes.
    Refused {
        key: String,
        value: String,
        with: Vec<(String, Option<String>)>,
    },
    RenamePort(usize),
    RenumberPort(usize, u16),
    /// The port gets another node port.
    NodePort(usize),
    AddPort(PortDraw),
    RemovePort(usize),
    /// `externalTrafficPolicy`: `true` for `Local`.
    Policy(bool),
    NodeJoin(NodeDraw),
    /// The node's `tier` label flips (it leaves or joins the node selector's set).
    NodeRelabel(usize),
    NodeStop(usize),
    NodeStart(usize),
    /// The node's server is deleted (the CCM then deletes the Node).
    NodeDelete(usize),
    FipAdd(FipDraw),
    /// A floating IP assigned to a server elsewhere is claimed instead of the ones held.
    FipMove(FipDraw),
    /// The Service claims no floating IP any more.
    FipRemove,
    /// Another Service (namespace `rival`) names the Service's floating IPs: one that can
    /// be served (`true`), or one that cannot (an SCTP port). The Service keeps them.
    RivalClaim(bool),
    /// The CCM's cloud settings are wrong for a minute, then right again.
    Misconfigured(crate::sim::transport::Misconfig),
    /// The Service claims neighbour `i`'s floating IP as well: it is refused that address
    /// alone, the neighbour keeps it.
    ClaimOf(usize),
    /// A floating IP moves between the Service and neighbour `of` (same cluster):
    /// `to_web` gives the direction; `release_first` whether the giver lets go before the
    /// taker claims it (else the taker claims it while the giver holds it, then the giver
    /// lets go).
    Hand {
        of: usize,
        to_web: bool,
        release_first: bool,
    },
    /// The Service's `loadbalancer-name` becomes neighbour `i`'s load balancer name.
    NameOf(usize),
    /// A copy of neighbour `i` (its annotations, the CCM-written UUID annotation among
    /// them) is created beside it: it is refused the load balancer it names.
    CopyOf(usize),
    /// Neighbour `i` is deleted.
    DeleteNeighbour(usize),
}

/// Where a neighbour lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Place {
    /// Namespace `default`, beside the Service.
    Default,
    /// Namespace `team` of the same cluster.
    Team,
    /// A second cluster (its own API server, nodes and CCM with another `--cluster-name`)
    /// on the same cloud account.
    OtherCluster,
}

/// Another LoadBalancer Service of a case: one TCP port, on the same nodes as the Service
/// (or on its own cluster's), perhaps holding a floating IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbour {
    pub place: Place,
    /// It claims a floating IP (a regional IPv4) of its own from the start.
    pub fip: bool,
}

/// How a case ends after its changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum End {
    /// The Service stays: its state is compared with a Service created from scratch.
    Keep,
    Delete,
    ToClusterIp,
}

/// One generated case: the world's seed, the nodes, the Service and what happens to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    pub seed: u64,
    pub nodes: Vec<NodeDraw>,
    pub service: Spec,
    /// 0-2 other Services (a case without is the one-Service case of before).
    #[serde(default)]
    pub neighbours: Vec<Neighbour>,
    pub changes: Vec<Change>,
    pub end: End,
}

impl Case {
    /// The one-line command that plays this case again, with its trace.
    pub fn replay_command(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("cargo run --release -p scenarios --bin sim -- case '{json}'")
    }
}
