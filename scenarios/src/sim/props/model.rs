//! The reference model: for every change, its type (a row of the impact table), the class
//! the documentation gives it, and how much downtime a class allows.
//!
//! The reference's classes are those of the Go reference CCM's README and behaviour (see
//! `ccm/README.md`, "Impact of Service changes"); its figures on fakecloud come from
//! replaying its own call sequences in `fakecloud/tests/it/dataplane.rs`, which asserts them.

use super::{A, Change};
use ccm::service::pure::plan::Impact;

/// A type of change: one row of the impact table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Timeouts,
    StatusOnly,
    AllowedCidrs,
    MonitorFields,
    MonitorType,
    FloatingIp,
    Nodes,
    NodeSelector,
    NodePort,
    AllowedSubnets,
    PortNumber,
    PortName,
    PortAddRemove,
    Policy,
    PoolSettings,
    Refused,
    Several,
    /// Others' doing: another Service's claim, the CCM's cloud settings wrong a while.
    Others,
    /// Claims across the Services of a case and a second cluster: another's floating IP
    /// or load balancer name claimed, a copy of another, another deleted.
    Neighbours,
    Removal,
}

/// A row's documented facts.
pub struct Row {
    pub kind: Kind,
    pub change: &'static str,
    /// The reference's class, in its words.
    pub reference_class: &'static str,
    /// The same as an impact class (what the CCM's prediction may not exceed).
    pub documented: Impact,
    /// The reference's own call sequence replayed on fakecloud (`-`: not replayed).
    pub reference_on_fakecloud: &'static str,
}

pub const ROWS: &[Row] = &[
    Row {
        kind: Kind::Timeouts,
        change: "timeouts (3 annotations), load balancer name",
        reference_class: "none",
        documented: Impact::None,
        reference_on_fakecloud: "0",
    },
    Row {
        kind: Kind::StatusOnly,
        change: "ip mode, forced hostname (status only)",
        reference_class: "none",
        documented: Impact::None,
        reference_on_fakecloud: "0",
    },
    Row {
        kind: Kind::AllowedCidrs,
        change: "allowed CIDRs (for clients allowed before and after)",
        reference_class: "minimal",
        documented: Impact::Minimal,
        reference_on_fakecloud: "0",
    },
    Row {
        kind: Kind::MonitorFields,
        change: "health monitor delay / timeout / thresholds / HTTP fields",
        reference_class: "minimal",
        documented: Impact::Minimal,
        reference_on_fakecloud: "0",
    },
    Row {
        kind: Kind::MonitorType,
        change: "health monitor type",
        reference_class: "minimal",
        documented: Impact::Minimal,
        reference_on_fakecloud: "4",
    },
    Row {
        kind: Kind::FloatingIp,
        change: "floating IP added, moved or removed (on the VIPs)",
        reference_class: "minimal",
        documented: Impact::Minimal,
        reference_on_fakecloud: "10 on that address (until propagated)",
    },
    Row {
        kind: Kind::Nodes,
        change: "node joins, stops, starts, is deleted or relabelled",
        reference_class: "minimal",
        documented: Impact::Minimal,
        reference_on_fakecloud: "0",
    },
    Row {
        kind: Kind::NodeSelector,
        change: "node selector",
        reference_class: "minimal",
        documented: Impact::Minimal,
        reference_on_fakecloud: "0",
    },
    Row {
        kind: Kind::NodePort,
        change: "node port",
        reference_class: "not listed (member recreation)",
        documented: Impact::MemberRecreate,
        reference_on_fakecloud: "44",
    },
    Row {
        kind: Kind::AllowedSubnets,
        change: "allowed subnets",
        reference_class: "pool recreation",
        documented: Impact::PoolRecreate,
        reference_on_fakecloud: "0-14",
    },
    Row {
        kind: Kind::PortNumber,
        change: "port number (time on neither number)",
        reference_class: "listener recreation (≤ 15)",
        documented: Impact::ListenerRecreate,
        reference_on_fakecloud: "10",
    },
    Row {
        kind: Kind::PortName,
        change: "port name",
        reference_class: "pool recreation (60-120)",
        documented: Impact::PoolRecreate,
        reference_on_fakecloud: "66-68.5",
    },
    Row {
        kind: Kind::PortAddRemove,
        change: "port added or removed (the other ports)",
        reference_class: "none for other ports",
        documented: Impact::None,
        reference_on_fakecloud: "-",
    },
    Row {
        kind: Kind::Policy,
        change: "external traffic policy",
        reference_class: "pool recreation (members and monitor re-created)",
        documented: Impact::PoolRecreate,
        reference_on_fakecloud: "-",
    },
    Row {
        kind: Kind::PoolSettings,
        change: "pool algorithm, pool protocol",
        reference_class: "pool recreation (60-120)",
        documented: Impact::PoolRecreate,
        reference_on_fakecloud: "66-68.5",
    },
    Row {
        kind: Kind::Refused,
        change: "flavor, zone, VIP addresses (with other changes in the same edit)",
        reference_class: "refused",
        documented: Impact::Refused,
        reference_on_fakecloud: "-",
    },
    Row {
        kind: Kind::Several,
        change: "several annotations at once",
        reference_class: "the worst of their classes",
        documented: Impact::PoolRecreate,
        reference_on_fakecloud: "-",
    },
    Row {
        kind: Kind::Others,
        change: "another Service claims its floating IPs; the CCM's cloud settings wrong a minute",
        reference_class: "(the reference freezes both claimants; deletes Nodes on a wrong account)",
        documented: Impact::None,
        reference_on_fakecloud: "-",
    },
    Row {
        kind: Kind::Neighbours,
        change: "another Service's floating IP or load balancer name claimed, a copy of another Service, another deleted (same or another namespace, another cluster)",
        reference_class: "(the reference freezes both claimants of a floating IP; a copy takes over the load balancer)",
        // A deleted neighbour's floating IP the Service claimed too is assigned to it then.
        documented: Impact::Minimal,
        reference_on_fakecloud: "-",
    },
    Row {
        kind: Kind::Removal,
        change: "deletion, type away from LoadBalancer",
        reference_class: "(load balancer deleted)",
        documented: Impact::Refused,
        reference_on_fakecloud: "-",
    },
];

/// The type and documented class of one annotation change (its suffix after [`A`]).
pub fn annotation(suffix: &str) -> (Kind, Impact) {
    match suffix {
        "timeout-client-data-ms"
        | "timeout-member-connect-ms"
        | "timeout-member-data-ms"
        | "name"
        | "listener-protocol" => (Kind::Timeouts, Impact::None),
        "ip-mode" | "force-hostname" => (Kind::StatusOnly, Impact::None),
        "listener-allowed-cidrs" => (Kind::AllowedCidrs, Impact::Minimal),
        "health-monitor-type" => (Kind::MonitorType, Impact::Minimal),
        "health-monitor-delay-s"
        | "health-monitor-timeout-s"
        | "health-monitor-up-threshold"
        | "health-monitor-down-threshold"
        | "health-monitor-http" => (Kind::MonitorFields, Impact::Minimal),
        "floating-ips" => (Kind::FloatingIp, Impact::Minimal),
        "node-selector" => (Kind::NodeSelector, Impact::Minimal),
        "listener-allowed-subnets" => (Kind::AllowedSubnets, Impact::PoolRecreate),
        "pool-algorithm" | "pool-protocol" => (Kind::PoolSettings, Impact::PoolRecreate),
        _ => (Kind::Refused, Impact::Refused),
    }
}

fn suffix(key: &str) -> &str {
    key.strip_prefix(A).unwrap_or(key)
}

/// The type of a change and its documented class (the worst of its aspects).
pub fn classify(change: &Change) -> (Kind, Impact) {
    let several = |keys: &mut dyn Iterator<Item = &str>| {
        let parts: Vec<(Kind, Impact)> = keys.map(|k| annotation(suffix(k))).collect();
        let worst = parts.iter().map(|(_, i)| *i).max().unwrap_or(Impact::None);
        let mut kinds: Vec<Kind> = parts.iter().map(|(k, _)| *k).collect();
        kinds.dedup();
        match kinds.as_slice() {
            [one] => (*one, worst),
            _ => (Kind::Several, worst),
        }
    };
    match change {
        Change::Annotate(a) => several(&mut a.iter().map(|(k, _)| k.as_str())),
        Change::Refused { with, .. } => {
            let (_, worst) = several(&mut with.iter().map(|(k, _)| k.as_str()));
            (Kind::Refused, worst)
        }
        Change::RenamePort(_) => (Kind::PortName, Impact::PoolRecreate),
        Change::RenumberPort(..) => (Kind::PortNumber, Impact::ListenerRecreate),
        Change::NodePort(_) => (Kind::NodePort, Impact::MemberRecreate),
        Change::AddPort(_) | Change::RemovePort(_) => (Kind::PortAddRemove, Impact::None),
        Change::Policy(_) => (Kind::Policy, Impact::PoolRecreate),
        Change::NodeJoin(_)
        | Change::NodeRelabel(_)
        | Change::NodeStop(_)
        | Change::NodeStart(_)
        | Change::NodeDelete(_) => (Kind::Nodes, Impact::Minimal),
        Change::FipAdd(_) | Change::FipMove(_) | Change::FipRemove | Change::Hand { .. } => {
            (Kind::FloatingIp, Impact::Minimal)
        }
        Change::ClaimOf(_) | Change::NameOf(_) | Change::CopyOf(_) => {
            (Kind::Neighbours, Impact::None)
        }
        Change::DeleteNeighbour(_) => (Kind::Neighbours, Impact::Minimal),
        Change::RivalClaim(_) | Change::Misconfigured(_) => (Kind::Others, Impact::None),
    }
}

/// Reconfigurations of fakecloud's load balancers take this long each (its default
/// calibration, `fakecloud/MODEL.md`).
pub const RECONFIGURE_S: f64 = 10.0;

/// The downtime (virtual s) a port may see under `class`, for a port whose monitor checks
/// every `delay_s` and needs `up_threshold` successes, on a load balancer with `ports`
/// ports, when `replaces_monitor` says the step re-creates this port's monitor or members
/// (checked anew before they carry traffic).
pub fn bound(class: Impact, recheck_s: f64, ports: usize, replaces_monitor: bool) -> f64 {
    match class {
        Impact::None => 0.0,
        // A replaced monitor checks its members anew (delay × up threshold); nothing else
        // in the class costs a moment.
        Impact::Minimal if replaces_monitor => recheck_s,
        Impact::Minimal => 0.0,
        // One reconfiguration without a listener.
        Impact::ListenerRecreate => RECONFIGURE_S + 5.0,
        // New members are created one port after another (one reconfiguration each), and a
        // port is served again once its first new member passed its checks.
        Impact::MemberRecreate => RECONFIGURE_S * (ports as f64 + 1.0) + recheck_s,
        Impact::PoolRecreate => 120.0,
        Impact::Outage | Impact::Refused => f64::INFINITY,
    }
}
