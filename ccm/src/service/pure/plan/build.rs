//! The pools, members, monitors and listeners of a plan: the make phase in order, the
//! barriers and the switch-and-break phase handed to [`schedule`] for ordering.

use super::super::model::*;
use super::matching::match_pools;
use super::schedule::{self, Op, Rank, Split};
use super::{Action, Impact, ListenerChanges, MonitorChanges, PoolRef, Replaced, Step};
use std::collections::HashMap;

mod listener;

/// Where a desired pool lives while the plan runs.
struct Target<'a> {
    desired: &'a DesiredPool,
    pool: PoolRef,
    /// The existing pool it reuses.
    home: Option<&'a ActualPool>,
    /// Names of members the make phase creates in it.
    created: Vec<String>,
    /// Its monitor is created or replaced by the make phase (members re-checked).
    monitor_reset: bool,
}

impl Target<'_> {
    /// Whether every member it will have already serves (nothing new to wait for).
    fn all_serving(&self) -> bool {
        if !self.created.is_empty() || self.monitor_reset {
            return false;
        }
        let Some(home) = self.home else {
            return self.desired.members.is_empty();
        };
        self.desired.members.iter().all(|m| {
            home.members
                .iter()
                .any(|am| am.member.identity() == m.identity() && am.serving())
        })
    }

    /// The members to wait for: new ones, and kept ones that do not serve yet.
    fn pending_members(&self) -> Vec<String> {
        self.desired
            .members
            .iter()
            .filter(|m| {
                self.created.contains(&m.name)
                    || self.monitor_reset
                    || !self.home.is_some_and(|h| {
                        h.members
                            .iter()
                            .any(|am| am.member.identity() == m.identity() && am.serving())
                    })
            })
            .map(|m| m.name.clone())
            .collect()
    }

    fn name(&self) -> &str {
        &self.desired.name
    }
}

fn replaced(pool: &ActualPool, members: &[&ActualMember]) -> Vec<Replaced> {
    members
        .iter()
        .map(|m| Replaced {
            pool: pool.uuid,
            member: m.uuid,
            address: m.member.address,
        })
        .collect()
}

fn make(action: Action, impact: Impact, port: &str) -> Step {
    Step {
        action,
        impact,
        port: Some(port.to_string()),
        group: None,
    }
}

/// Who holds a listener key now: the index of its pool (`None`: a listener without pool)
/// and the listener.
type Holder<'a> = (Option<usize>, &'a ActualListener);

/// The pool-level part of one plan while it is being built.
struct Build<'a> {
    actual: &'a ActualLb,
    /// For each desired pool, the actual pool that becomes it.
    homes: Vec<Option<usize>>,
    /// The listener key of each desired pool.
    desired_keys: HashMap<ListenerKey, usize>,
    holders: HashMap<ListenerKey, Holder<'a>>,
    targets: Vec<Target<'a>>,
    /// First of all: pools no port wants that have no listener (they route nothing, so
    /// they go before anything is built next to them).
    clear: Vec<Step>,
    /// Make phase: pool-level steps, member creations per pool, renames.
    front: Vec<Step>,
    member_creates: Vec<Vec<Step>>,
    back: Vec<Step>,
    /// Wait and switch-and-break phases, ordered by [`schedule`].
    ops: Vec<Op>,
    /// Barrier op per listener key whose traffic moves to another pool.
    barrier_of_key: HashMap<ListenerKey, usize>,
    /// Node ports of the desired TCP pools checked by `tcp` (see [`keeps_tcp_check`]).
    tcp_checked: Vec<u16>,
    /// Ports (by desired index) Kubernetes already moved off the node port their
    /// listener's pool serves: nothing is left to protect there, so their new pool's make
    /// phase and their switch go before other ports' make phase. Also ports whose pool is
    /// kept but that have no listener at all.
    urgent: Vec<usize>,
    /// Of [`Build::urgent`], the ports with no pool of their name on a load balancer that
    /// serves other ports: built after the ports known to be broken.
    unbuilt: Vec<usize>,
    /// First of all: one member on the port's new node port in the pool that holds its
    /// listener while a replacement is built ([`bridge`]).
    bridges: Vec<Step>,
}

/// Appends the pool-level steps of the plan to `steps`. On a load balancer that listens
/// nowhere yet, answers how many steps of `steps` make it serve (every port its listener
/// and a first member), when more follow.
pub(super) fn pools(
    desired: &DesiredLb,
    actual: &ActualLb,
    steps: &mut Vec<Step>,
) -> Option<usize> {
    let b = Build::planned(desired, actual);
    // A port Kubernetes already broke is restored first, one after the other: its pool,
    // monitor, first member and listener; then every such port's other members, then the
    // rest (even the removal of pools that route nothing): each write is one
    // reconfiguration of the load balancer, so every write put before them prolongs an
    // outage, and one member up serves a port.
    // The port's pool may be one an earlier pass built and left (it stopped for a newer
    // change): its first member goes before the switch all the same ([`restores`]).
    let urgent_keys: Vec<ListenerKey> = b
        .urgent
        .iter()
        .map(|&i| b.targets[i].desired.listener.key())
        .collect();
    let broken_kept = b.serving_nobody();
    let fresh = b.holders.is_empty();
    let schedule::Switch {
        first: switch_first,
        after_urgent,
        rest: switch,
    } = schedule::order_urgent_first(b.ops, &urgent_keys);
    let (mut front, mut members) = (b.front, b.member_creates);
    // Ports whose kept pool serves nobody (Kubernetes moved the port to another node
    // port, or no member is up: deleted by hand, nodes stopped): one write (a member on a
    // node that serves) restores each, so their first new members go before anything
    // else, the ports that need a listener restored next (fewest writes first keeps the
    // most ports down the shortest), and then every restored port's other members in
    // turn, before any other port's make phase.
    let rest = first_members_of(&broken_kept, &mut members, steps);
    steps.extend(b.bridges);
    // A pool that routes nothing goes first when it bears a name an urgent new pool takes
    // (two pools of one name would be ambiguous to the next reader).
    let (clear_first, clear): (Vec<Step>, Vec<Step>) = b
        .clear
        .into_iter()
        .partition(|step| name_taken_by_urgent(step, &front, &b.urgent));
    steps.extend(clear_first);
    // The broken port that needs the fewest writes goes first (its pool, monitor, first
    // member and the steps that give it its listener): that keeps the most ports down the
    // shortest.
    // Then the ports with no pool at all (new, or their pool deleted by outside hands),
    // the same way, after every broken port's members.
    let (unbuilt, broken): (Vec<_>, Vec<_>) = b
        .urgent
        .iter()
        .copied()
        .zip(switch_first)
        .partition(|(i, _)| b.unbuilt.contains(i));
    let serves_after = restore_tiers(
        &b.targets,
        [broken, unbuilt],
        fresh,
        (&mut front, &mut members),
        rest,
        steps,
    );
    // A pool whose listeners all moved to urgent ports routes nothing now: it goes before
    // a new pool of its name is made, which would be the third of that name otherwise
    // (the one it replaces still serves until the switch).
    steps.extend(after_urgent);
    steps.extend(clear);
    steps.extend(front);
    steps.extend(interleave(members));
    steps.extend(b.back);
    steps.extend(switch);
    serves_after.filter(|n| *n < steps.len())
}

/// Whether `step` deletes a pool that bears the name of a new pool of an `urgent` port.
fn name_taken_by_urgent(step: &Step, front: &[Step], urgent: &[usize]) -> bool {
    match &step.action {
        Action::DeletePool { name, .. } => front.iter().any(|f| {
            matches!(&f.action, Action::CreatePool { new, name: n, .. }
                if n == name && urgent.contains(new))
        }),
        _ => false,
    }
}

/// Restores the urgent ports tier by tier (`tiers`: ports with their steps that give them
/// their listener), in each the port that needs the fewest writes first, then the tier's
/// other members (with those of `rest` before the first tier's). On a load balancer that
/// listens nowhere yet, answers how many steps make every urgent port serve.
fn restore_tiers(
    targets: &[Target],
    tiers: [Vec<(usize, Vec<Step>)>; 2],
    fresh: bool,
    (front, members): (&mut Vec<Step>, &mut Vec<Vec<Step>>),
    mut rest: Vec<Vec<Step>>,
    steps: &mut Vec<Step>,
) -> Option<usize> {
    let of = |i: usize| move |step: &Step| restores(&targets[i], i, step);
    // The tiers hold every urgent port.
    let any_urgent = tiers.iter().any(|tier| !tier.is_empty());
    let mut serves_after = None;
    for mut tier in tiers {
        tier.sort_by_key(|(i, first)| {
            let own = front.iter().filter(|s| of(*i)(s)).count();
            let member = members.iter().any(|m| m.first().is_some_and(of(*i)));
            own + usize::from(member) + first.len()
        });
        for (i, first) in tier {
            let port = restore_port(of(i), first, fresh, (&mut *front, &mut *members), steps);
            rest.push(port);
        }
        // One member up serves a port: every restored port gets its first before any
        // gets its others.
        if fresh && any_urgent && serves_after.is_none() {
            serves_after = Some(steps.len());
        }
        steps.extend(interleave(std::mem::take(&mut rest)));
    }
    serves_after
}

/// Restores one urgent port: takes the steps that restore it (`own`) out of the make
/// phase's pool-level steps and member creations, and appends them with its first member
/// and the steps that give it its listener (`first`). Returns its other members.
fn restore_port(
    own: impl Fn(&Step) -> bool,
    first: Vec<Step>,
    fresh: bool,
    (front, members): (&mut Vec<Step>, &mut Vec<Vec<Step>>),
    steps: &mut Vec<Step>,
) -> Vec<Step> {
    let pool_level: Vec<Step>;
    (pool_level, *front) = std::mem::take(front).into_iter().partition(&own);
    steps.extend(pool_level);
    let created: Vec<Vec<Step>>;
    (created, *members) = std::mem::take(members)
        .into_iter()
        .partition(|m| m.first().is_some_and(&own));
    let mut created = created.into_iter().flatten();
    if fresh {
        // Nothing listens yet, so a listener early costs nothing; queued before the first
        // member, it is in place once that member is found up (the load balancer applies
        // one change after another), which is what tells the reconcile that the port
        // serves.
        steps.extend(first);
        steps.extend(created.next());
    } else {
        steps.extend(created.next());
        steps.extend(first);
    }
    created.collect()
}

/// Whether `step` restores target `i` before its switch: its new pool, its members, and a
/// monitor if its pool has none (a monitor of another type is replaced after the restores:
/// the old one checks the members as well).
fn restores(t: &Target, i: usize, step: &Step) -> bool {
    match &step.action {
        Action::CreatePool { new, .. } => *new == i,
        Action::CreateMember { pool, .. } => *pool == t.pool,
        Action::CreateMonitor { pool, .. } => {
            *pool == t.pool && t.home.is_none_or(|h| h.monitors.is_empty())
        }
        _ => false,
    }
}

/// Takes the member creations of the kept pools in `broken` out of `members`, appends the
/// first of each pool to `steps` and returns the others, one list per pool.
fn first_members_of(
    broken: &[uuid::Uuid],
    members: &mut Vec<Vec<Step>>,
    steps: &mut Vec<Step>,
) -> Vec<Vec<Step>> {
    let restoring: Vec<Vec<Step>>;
    (restoring, *members) = std::mem::take(members).into_iter().partition(|m| {
        m.first().is_some_and(|s| {
            matches!(&s.action, Action::CreateMember { pool: PoolRef::Existing(u), .. }
                if broken.contains(u))
        })
    });
    let mut rest = Vec::new();
    for mut port in restoring {
        if !port.is_empty() {
            steps.push(port.remove(0));
        }
        rest.push(port);
    }
    rest
}

impl<'a> Build<'a> {
    /// The kept pools of ports whose listener they hold but that serve nobody: their
    /// members all serve a node port Kubernetes no longer gives the port, or none of them
    /// is up nor about to be (deleted by hand, their nodes stopped). One new member up
    /// restores such a port, so its first goes before other ports are built.
    fn serving_nobody(&self) -> Vec<uuid::Uuid> {
        self.targets
            .iter()
            .filter_map(|t| {
                let home = t.home?;
                let key = t.desired.listener.key();
                let moved = !home.members.is_empty()
                    && home
                        .members
                        .iter()
                        .all(|m| m.member.protocol_port != t.desired.node_port);
                let none_up = !home
                    .members
                    .iter()
                    .any(|m| m.serving() || (m.enabled && m.health == MonitorStatus::Changing));
                let holds = home.listeners.iter().any(|l| l.listener.key() == key);
                (holds && (moved || none_up)).then_some(home.uuid)
            })
            .collect()
    }

    /// Every pool's make phase, the barriers, listeners and retired pools, yet to be
    /// put in order.
    fn planned(desired: &'a DesiredLb, actual: &'a ActualLb) -> Build<'a> {
        let mut b = Build::new(desired, actual);
        for (i, d) in desired.pools.iter().enumerate() {
            b.target(i, d);
        }
        b.switch_barriers();
        for i in 0..b.targets.len() {
            b.listener(i);
        }
        b.retire_pools();
        b
    }

    fn new(desired: &'a DesiredLb, actual: &'a ActualLb) -> Build<'a> {
        let mut holders: HashMap<ListenerKey, Holder<'a>> = HashMap::new();
        for (j, a) in actual.pools.iter().enumerate() {
            for l in &a.listeners {
                holders.entry(l.listener.key()).or_insert((Some(j), l));
            }
        }
        for l in &actual.orphan_listeners {
            holders.entry(l.listener.key()).or_insert((None, l));
        }
        Build {
            actual,
            homes: match_pools(&desired.pools, &actual.pools),
            desired_keys: desired
                .pools
                .iter()
                .enumerate()
                .map(|(i, d)| (d.listener.key(), i))
                .collect(),
            holders,
            targets: Vec::new(),
            clear: Vec::new(),
            front: Vec::new(),
            member_creates: Vec::new(),
            back: Vec::new(),
            ops: Vec::new(),
            barrier_of_key: HashMap::new(),
            tcp_checked: desired
                .pools
                .iter()
                .filter(|d| d.family() == Family::Tcp && d.monitor.kind == HealthMonitorType::Tcp)
                .map(|d| d.node_port)
                .collect(),
            urgent: Vec::new(),
            unbuilt: Vec::new(),
            bridges: Vec::new(),
        }
    }

    /// The make phase of desired pool `i`: a new pool, or its home brought in line.
    fn target(&mut self, i: usize, d: &'a DesiredPool) {
        let actual = self.actual;
        let target = match self.homes[i].map(|j| &actual.pools[j]) {
            None => {
                // A replacement for a port that is served now is part of a listener switch.
                let impact = if self.holders.contains_key(&d.listener.key()) {
                    Impact::ListenerRecreate
                } else {
                    Impact::None
                };
                let besides = actual
                    .pools
                    .iter()
                    .filter(|a| a.name == d.name)
                    .map(|a| a.uuid)
                    .collect();
                new_pool(
                    (i, d),
                    impact,
                    besides,
                    &mut self.front,
                    &mut self.member_creates,
                );
                Target {
                    desired: d,
                    pool: PoolRef::New(i),
                    home: None,
                    created: d.members.iter().map(|m| m.name.clone()).collect(),
                    monitor_reset: true,
                }
            }
            Some(a) => {
                let (created, monitor_reset) = self.sync_pool(d, a);
                Target {
                    desired: d,
                    pool: PoolRef::Existing(a.uuid),
                    home: Some(a),
                    created,
                    monitor_reset,
                }
            }
        };
        self.targets.push(target);
    }

    /// Barriers before a port's traffic moves from the pool that serves it to another.
    fn switch_barriers(&mut self) {
        let actual = self.actual;
        let mut unmonitor: Vec<Step> = Vec::new();
        for (i, t) in self.targets.iter().enumerate() {
            let key = t.desired.listener.key();
            let Some((Some(j), _)) = self.holders.get(&key) else {
                continue;
            };
            let source = &actual.pools[*j];
            if t.home.is_some_and(|h| h.uuid == source.uuid) || source.members.is_empty() {
                continue;
            }
            // The source carries this port's traffic only while its members' node port is
            // the port's. When Kubernetes moved the port to another node port (or gave the
            // old one to another port), it stopped serving the old one for this port at
            // once: holding the switch would keep the port down, or on another port's
            // backend, for as long as the load balancer stays busy.
            if !source
                .members
                .iter()
                .any(|m| m.member.protocol_port == t.desired.node_port)
            {
                // Only into a pool no port keeps (it goes once the switch is done), for a
                // port whose new pool is still to be built (a pool that exists takes the
                // listener in as few writes), and when no port has the old node port now:
                // otherwise the old members would send this port's clients to another
                // port's backends for the whole make phase.
                let retired = !self.targets.iter().any(|o| {
                    o.home.is_some_and(|h| h.uuid == source.uuid)
                        || source
                            .members
                            .iter()
                            .any(|m| m.member.protocol_port == o.desired.node_port)
                });
                match bridge(source, t.desired).filter(|_| retired && t.home.is_none()) {
                    // Served again after one write: the replacement then goes make
                    // before break like any other.
                    Some(step) => self.bridges.push(step),
                    None => {
                        self.urgent.push(i);
                        continue;
                    }
                }
            }
            unmonitor_if_unchecked(source, t.desired, &mut unmonitor);
            let source_serves = actual.changing() || source.members.iter().any(|m| m.serving());
            if source_serves && (actual.changing() || !t.all_serving()) {
                self.barrier_of_key.insert(key, self.ops.len());
                let all: Vec<&ActualMember> = source.members.iter().collect();
                self.ops.push(Op::new(
                    Action::WaitMembersUp {
                        pool: t.pool.clone(),
                        members: t.pending_members(),
                        replacing: replaced(source, &all),
                    },
                    Impact::None,
                    t.name(),
                    Rank::Barrier,
                ));
            }
        }
        for step in unmonitor {
            if !self.clear.iter().any(|s| s.action == step.action) {
                self.clear.push(step);
            }
        }
    }

    /// Pools no port wants any more (their listeners first, when another pool takes the
    /// port), and listeners without a pool.
    fn retire_pools(&mut self) {
        let actual = self.actual;
        for (j, a) in actual.pools.iter().enumerate() {
            if self.homes.contains(&Some(j)) {
                continue;
            }
            // A new pool of its name is about to be made.
            let name_taken = self
                .front
                .iter()
                .any(|f| matches!(&f.action, Action::CreatePool { name, .. } if *name == a.name));
            let stray = !a.listeners.is_empty()
                && a.listeners
                    .iter()
                    .all(|l| !self.desired_keys.contains_key(&l.listener.key()))
                && name_taken;
            if a.listeners.is_empty() || stray {
                // An abandoned replacement (its change was superseded) or a leftover:
                // removing it costs nothing and keeps one spare pool per port at most.
                // So does one that routes only ports no longer wanted (a listener moved
                // by hand) when a pool of its name is about to be made.
                self.clear.push(make(
                    Action::DeletePool {
                        uuid: a.uuid,
                        name: a.name.clone(),
                    },
                    Impact::None,
                    &a.name,
                ));
                continue;
            }
            let mut explicit = Vec::new();
            let mut cascaded = Vec::new();
            for l in &a.listeners {
                if self.desired_keys.contains_key(&l.listener.key()) {
                    explicit.push(self.ops.len());
                    let op = leave_listener(l, &self.desired_keys, &self.barrier_of_key, &a.name);
                    self.ops.push(op);
                } else {
                    cascaded.push(l.listener.key());
                }
            }
            let mut op = Op::new(
                Action::DeletePool {
                    uuid: a.uuid,
                    name: a.name.clone(),
                },
                Impact::None,
                &a.name,
                Rank::RemovePool,
            );
            op.leaves = cascaded;
            op.after = explicit;
            op.early = name_taken;
            self.ops.push(op);
        }
        for l in &actual.orphan_listeners {
            let op = leave_listener(
                l,
                &self.desired_keys,
                &self.barrier_of_key,
                &l.listener.name,
            );
            self.ops.push(op);
        }
    }
}

/// Deleting a listener: a gap for its port when another pool takes the port over (after
/// that pool's barrier), nothing when the port is no longer wanted.
fn leave_listener(
    l: &ActualListener,
    desired_keys: &HashMap<ListenerKey, usize>,
    barrier_of_key: &HashMap<ListenerKey, usize>,
    port: &str,
) -> Op {
    let key = l.listener.key();
    let taken = desired_keys.contains_key(&key);
    let mut op = Op::new(
        Action::DeleteListener {
            uuid: l.uuid,
            name: l.listener.name.clone(),
        },
        if taken {
            Impact::ListenerRecreate
        } else {
            Impact::None
        },
        port,
        Rank::Leave,
    );
    if let Some(&b) = barrier_of_key.get(&key) {
        op.after.push(b);
    }
    op.leaves.push(key);
    op
}

/// A whole new pool: the pool, its monitor (so members are checked as soon as they are
/// applied), its members; its listener is placed by the schedule.
fn new_pool(
    (i, d): (usize, &DesiredPool),
    impact: Impact,
    besides: Vec<uuid::Uuid>,
    front: &mut Vec<Step>,
    member_creates: &mut Vec<Vec<Step>>,
) {
    front.push(make(
        Action::CreatePool {
            new: i,
            name: d.name.clone(),
            algorithm: d.algorithm.clone(),
            protocol: d.protocol.clone(),
            besides,
        },
        impact,
        &d.name,
    ));
    front.push(make(
        Action::CreateMonitor {
            pool: PoolRef::New(i),
            monitor: d.monitor.clone(),
        },
        impact,
        &d.name,
    ));
    member_creates.push(
        d.members
            .iter()
            .map(|m| {
                make(
                    Action::CreateMember {
                        pool: PoolRef::New(i),
                        member: m.clone(),
                    },
                    impact,
                    &d.name,
                )
            })
            .collect(),
    );
}

impl Build<'_> {
    /// Brings a reused pool's name, members and monitor in line. Returns the names of the
    /// members it creates and whether the monitor is created or replaced.
    fn sync_pool(&mut self, d: &DesiredPool, a: &ActualPool) -> (Vec<String>, bool) {
        // A rename changes no traffic: it goes after the member creations, which may be
        // what brings a port back (a port renamed is given another node port, and
        // Kubernetes stops serving the old one at once), each write costing a load
        // balancer reconfiguration.
        if a.name != d.name {
            self.back.push(make(
                Action::RenamePool {
                    uuid: a.uuid,
                    from: a.name.clone(),
                    to: d.name.clone(),
                },
                Impact::None,
                &d.name,
            ));
        }
        let members = self.sync_members(d, a);
        let monitor_reset = sync_monitor(d, a, &self.tcp_checked, &mut self.front);
        self.retire_members(d, a, &members);
        (members.created, monitor_reset)
    }

    /// Members: those whose immutable identity matches are kept (renamed and enabled in
    /// place), the missing ones created.
    fn sync_members(&mut self, d: &DesiredPool, a: &ActualPool) -> Members {
        let port = d.name.as_str();
        let mut out = Members {
            kept: vec![false; a.members.len()],
            created: Vec::new(),
            not_serving: Vec::new(),
        };
        let mut creates = Vec::new();
        // The node port changed: Kubernetes no longer serves the old one.
        let node_port_moved = !a.members.is_empty()
            && a.members
                .iter()
                .all(|m| m.member.protocol_port != d.node_port);
        for m in &d.members {
            let found = a
                .members
                .iter()
                .enumerate()
                .find(|(j, am)| !out.kept[*j] && am.member.identity() == m.identity());
            let Some((j, am)) = found else {
                out.created.push(m.name.clone());
                out.not_serving.push(m.name.clone());
                creates.push(make(
                    Action::CreateMember {
                        pool: PoolRef::Existing(a.uuid),
                        member: m.clone(),
                    },
                    if node_port_moved {
                        Impact::MemberRecreate
                    } else {
                        Impact::Minimal
                    },
                    port,
                ));
                continue;
            };
            out.kept[j] = true;
            if !am.serving() {
                out.not_serving.push(m.name.clone());
            }
            if am.member.name != m.name {
                self.back.push(make(
                    Action::RenameMember {
                        pool: a.uuid,
                        uuid: am.uuid,
                        from: am.member.name.clone(),
                        to: m.name.clone(),
                    },
                    Impact::None,
                    port,
                ));
            }
            if !am.enabled {
                self.back.push(make(
                    Action::EnableMember {
                        pool: a.uuid,
                        uuid: am.uuid,
                        name: m.name.clone(),
                    },
                    Impact::Minimal,
                    port,
                ));
            }
        }
        // Members on nodes that serve now (or are being checked anew) first: when the node
        // port moved, the port is back as soon as one of them is up, and one on a stopped
        // node never comes up.
        let serving_at: Vec<std::net::IpAddr> = a
            .members
            .iter()
            .filter(|m| m.serving() || (m.enabled && m.health == MonitorStatus::Changing))
            .map(|m| m.member.address)
            .collect();
        creates.sort_by_key(|s| match &s.action {
            Action::CreateMember { member, .. } => !serving_at.contains(&member.address),
            _ => true,
        });
        self.member_creates.push(creates);
        out
    }

    /// The members no longer wanted go once the new ones serve (a barrier first when some
    /// of them serve now, or are about to, and kept ones do not yet).
    fn retire_members(&mut self, d: &DesiredPool, a: &ActualPool, members: &Members) {
        let port = d.name.as_str();
        let surplus: Vec<&ActualMember> = a
            .members
            .iter()
            .zip(&members.kept)
            .filter(|(_, k)| !**k)
            .map(|(m, _)| m)
            .collect();
        if surplus.is_empty() {
            return;
        }
        // A member in its checks (health `changing`) is about to serve: by the time the
        // load balancer applies its removal it may be the only one up.
        let serving = self.actual.changing()
            || surplus
                .iter()
                .any(|m| m.serving() || (m.enabled && m.health == MonitorStatus::Changing));
        let barrier = (!members.not_serving.is_empty() && serving).then(|| {
            self.ops.push(Op::new(
                Action::WaitMembersUp {
                    pool: PoolRef::Existing(a.uuid),
                    members: members.not_serving.clone(),
                    replacing: replaced(a, &surplus),
                },
                Impact::None,
                port,
                Rank::Barrier,
            ));
            self.ops.len() - 1
        });
        let impact = if d.members.is_empty() {
            Impact::Outage
        } else {
            Impact::Minimal
        };
        for m in surplus {
            let mut op = Op::new(
                Action::DeleteMember {
                    pool: a.uuid,
                    uuid: m.uuid,
                    name: m.member.name.clone(),
                },
                impact,
                port,
                Rank::RemoveMembers,
            );
            op.after.extend(barrier);
            self.ops.push(op);
        }
    }
}

/// What [`Build::sync_members`] found: which actual members stay, the names of those it
/// creates, and the names of the wanted members that do not serve yet.
struct Members {
    kept: Vec<bool>,
    created: Vec<String>,
    not_serving: Vec<String>,
}

/// Whether the actual check `actual` of the desired UDP pool `d` stays although `d` wants
/// the `udp-connect` default: a `tcp` check (the Go reference's one type for every pool)
/// on a node port the Service also serves over TCP, where its TCP pool is checked by `tcp`
/// too. The check works there (kube-proxy answers TCP on that node port, the TCP pool's
/// check relies on it); replacing it would take every member of the pool out of rotation
/// until it passed the new check: an adopted dual-protocol Service (DNS on TCP and UDP 53)
/// would lose its UDP port for seconds for nothing. An explicit other type (`udp-connect`
/// or `ping` on every pool) or a node port no longer shared with a `tcp`-checked TCP port
/// still replaces it.
fn keeps_tcp_check(d: &DesiredPool, actual: &Monitor, tcp_checked: &[u16]) -> bool {
    d.family() == Family::Udp
        && d.monitor.kind == HealthMonitorType::UdpConnect
        && actual.kind == HealthMonitorType::Tcp
        && tcp_checked.contains(&d.node_port)
}

/// One monitor per pool: created when missing, replaced when its type (or HTTP version)
/// changes (but see [`keeps_tcp_check`]), PATCHed otherwise; extras go. Returns whether
/// members are checked anew.
fn sync_monitor(
    d: &DesiredPool,
    a: &ActualPool,
    tcp_checked: &[u16],
    front: &mut Vec<Step>,
) -> bool {
    let port = d.name.as_str();
    let mut monitors = a.monitors.iter();
    let reset = match monitors.next() {
        None => true,
        Some(m)
            if m.monitor.identity() != d.monitor.identity()
                && !keeps_tcp_check(d, &m.monitor, tcp_checked) =>
        {
            front.push(make(
                Action::DeleteMonitor {
                    uuid: m.uuid,
                    kind: m.monitor.kind.clone(),
                },
                Impact::Minimal,
                port,
            ));
            true
        }
        Some(m) => {
            let changes = MonitorChanges::between(&m.monitor, &d.monitor);
            if !changes.is_empty() {
                front.push(make(
                    Action::UpdateMonitor {
                        uuid: m.uuid,
                        from: m.monitor.clone(),
                        changes,
                    },
                    Impact::Minimal,
                    port,
                ));
            }
            false
        }
    };
    if reset {
        front.push(make(
            Action::CreateMonitor {
                pool: PoolRef::Existing(a.uuid),
                monitor: d.monitor.clone(),
            },
            Impact::Minimal,
            port,
        ));
    }
    for extra in monitors {
        front.push(make(
            Action::DeleteMonitor {
                uuid: extra.uuid,
                kind: extra.monitor.kind.clone(),
            },
            Impact::Minimal,
            port,
        ));
    }
    reset
}

/// A member on the port's node port for the pool that holds its listener but is being
/// replaced, when Kubernetes moved the port to another node port (a port renamed or
/// renumbered while its pool is rebuilt for another change): nothing serves the port, and
/// building its new pool, monitor and members and switching its listener takes five
/// writes or more (per port, one port after another), where this one write serves it
/// again, checked by the monitor already in place. `None` when the source checks its
/// members another way than the new pool will (the traffic policy changed: its monitor
/// would look at a port the member does not have) or no node is selected.
fn bridge(source: &ActualPool, desired: &DesiredPool) -> Option<Step> {
    let first = desired.members.first()?;
    let on_own_port = |m: &Member| m.monitor_port == m.protocol_port;
    let same_checks = source
        .members
        .iter()
        .all(|m| on_own_port(&m.member) == on_own_port(first));
    same_checks.then(|| {
        make(
            Action::CreateMember {
                pool: PoolRef::Existing(source.uuid),
                member: first.clone(),
            },
            Impact::MemberRecreate,
            &desired.name,
        )
    })
}

/// A source pool whose members are checked on a health-check node port the Service no
/// longer has (it left `externalTrafficPolicy: Local`, or Kubernetes moved that port)
/// loses every member the moment Kubernetes closed the port, long before the new pool
/// takes over. Deleting its monitor first keeps its members in rotation unchecked (a
/// pool without monitor routes to every member) while the new pool comes up: a gap of
/// the first write's reconfiguration at most, instead of the whole make phase. Their
/// node port still serves: only the monitor port changed.
fn unmonitor_if_unchecked(source: &ActualPool, desired: &DesiredPool, out: &mut Vec<Step>) {
    let unchecked = !source.members.is_empty()
        && source.members.iter().all(|m| {
            let m = &m.member;
            m.monitor_port != m.protocol_port
                && m.protocol_port == desired.node_port
                && !desired
                    .members
                    .iter()
                    .any(|d| d.monitor_port == m.monitor_port)
        });
    if !unchecked {
        return;
    }
    for m in &source.monitors {
        let action = Action::DeleteMonitor {
            uuid: m.uuid,
            kind: m.monitor.kind.clone(),
        };
        out.push(make(action, Impact::MemberRecreate, &desired.name));
    }
}

/// Member creations of several pools, one per pool in turn: the load balancer applies one
/// change at a time, so every port gets its first new member as early as possible.
fn interleave(per_pool: Vec<Vec<Step>>) -> Vec<Step> {
    let mut iters: Vec<_> = per_pool.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        for it in &mut iters {
            out.extend(it.next());
        }
        if out.len() == before {
            return out;
        }
    }
}
