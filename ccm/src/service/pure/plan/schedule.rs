//! Ordering the switch-and-break phase: listeners move, appear and disappear in an order
//! the API accepts (one listener per protocol and port on a load balancer), every removal
//! of serving capacity comes after the barrier that makes it safe, and barriers get the
//! group ids the executor uses to skip what depends on a barrier that does not hold yet.
//!
//! Moves (a listener PATCHed to another port) can form cycles (two ports swapped); a cycle
//! is broken by deleting one of its listeners first and creating it again at its new port
//! once the port is free: that port is without listener in between (listener-recreate), and
//! no listener ever points at another port's backend.

use super::super::model::{Listener, ListenerKey};
use super::{Action, Impact, PoolRef, Step};
use std::collections::{BTreeSet, HashMap};
use uuid::Uuid;

/// How an op is placed among the ready ones: barriers first, then what frees ports, what
/// moves, what takes ports, member removals and pool removals last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rank {
    Barrier,
    Leave,
    Move,
    Occupy,
    RemoveMembers,
    RemovePool,
}

/// A move that can be split into a delete and a create to break a cycle.
#[derive(Debug, Clone)]
pub(super) struct Split {
    pub listener: Uuid,
    pub old_name: String,
    pub pool: PoolRef,
    pub desired: Listener,
}

#[derive(Debug, Clone)]
pub(super) struct Op {
    pub action: Action,
    pub impact: Impact,
    pub port: Option<String>,
    pub rank: Rank,
    pub leaves: Vec<ListenerKey>,
    pub occupies: Option<ListenerKey>,
    /// Ops (by index) it must follow.
    pub after: Vec<usize>,
    pub split: Option<Split>,
    /// Goes right after the urgent ports' steps when everything it follows is among them
    /// (a pool whose listeners all move there, and whose name a new pool takes).
    pub early: bool,
}

impl Op {
    pub fn new(action: Action, impact: Impact, port: &str, rank: Rank) -> Op {
        Op {
            action,
            impact,
            port: Some(port.to_string()),
            rank,
            leaves: Vec::new(),
            occupies: None,
            after: Vec::new(),
            split: None,
            early: false,
        }
    }
}

/// Adds the edges "takes a port after its holder left", breaks cycles of moves.
fn link(ops: &mut Vec<Op>) {
    loop {
        let mut leavers: HashMap<&ListenerKey, Vec<usize>> = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            for k in &op.leaves {
                leavers.entry(k).or_default().push(i);
            }
        }
        let occupy_deps: Vec<Vec<usize>> = ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                op.occupies
                    .as_ref()
                    .and_then(|k| leavers.get(k))
                    .map(|v| v.iter().copied().filter(|j| *j != i).collect())
                    .unwrap_or_default()
            })
            .collect();
        let deps = |i: usize| -> Vec<usize> {
            let mut d = ops[i].after.clone();
            d.extend(&occupy_deps[i]);
            d
        };
        match find_cycle(ops.len(), deps) {
            None => {
                for (op, extra) in ops.iter_mut().zip(occupy_deps) {
                    for e in extra {
                        if !op.after.contains(&e) {
                            op.after.push(e);
                        }
                    }
                }
                return;
            }
            Some(cycle) => split_one(ops, &cycle),
        }
    }
}

/// A cycle in the dependency graph, if any (indices of its ops).
fn find_cycle(n: usize, deps: impl Fn(usize) -> Vec<usize>) -> Option<Vec<usize>> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; n];
    let mut stack: Vec<usize> = Vec::new();
    fn visit(
        i: usize,
        state: &mut [u8],
        stack: &mut Vec<usize>,
        deps: &dyn Fn(usize) -> Vec<usize>,
    ) -> Option<Vec<usize>> {
        state[i] = 1;
        stack.push(i);
        for d in deps(i) {
            if state[d] == 1 {
                let from = stack.iter().position(|x| *x == d).unwrap_or(0);
                return Some(stack[from..].to_vec());
            }
            if state[d] == 0
                && let Some(c) = visit(d, state, stack, deps)
            {
                return Some(c);
            }
        }
        stack.pop();
        state[i] = 2;
        None
    }
    for i in 0..n {
        if state[i] == 0
            && let Some(c) = visit(i, &mut state, &mut stack, &deps)
        {
            return Some(c);
        }
    }
    None
}

/// Replaces the first splittable move of `cycle` by a delete now and a create later.
fn split_one(ops: &mut Vec<Op>, cycle: &[usize]) {
    let Some(&i) = cycle.iter().filter(|i| ops[**i].split.is_some()).min() else {
        // Only moves take and free ports at once, so every cycle has one; if not, drop
        // the newest edge rather than loop forever (the executor then meets the API's
        // refusal and reports it).
        if let Some(&last) = cycle.last() {
            ops[last].after.clear();
            ops[last].occupies = None;
        }
        return;
    };
    let Some(split) = ops[i].split.take() else {
        return;
    };
    let occupies = ops[i].occupies.take();
    let after = ops[i].after.clone();
    let port = ops[i].port.clone();
    ops[i].action = Action::DeleteListener {
        uuid: split.listener,
        name: split.old_name,
    };
    ops[i].rank = Rank::Leave;
    ops[i].impact = ops[i].impact.max(Impact::ListenerRecreate);
    ops.push(Op {
        action: Action::CreateListener {
            pool: split.pool,
            listener: split.desired,
        },
        impact: Impact::ListenerRecreate,
        port,
        rank: Rank::Occupy,
        leaves: Vec::new(),
        occupies,
        after: {
            let mut a = after;
            a.push(i);
            a
        },
        split: None,
        early: false,
    });
}

fn find(parent: &mut [usize], x: usize) -> usize {
    let mut r = x;
    while parent[r] != r {
        r = parent[r];
    }
    let mut y = x;
    while parent[y] != r {
        let next = parent[y];
        parent[y] = r;
        y = next;
    }
    r
}

/// The switch-and-break phase in three parts (see [`order_urgent_first`]).
pub(super) struct Switch {
    /// Per urgent port, the steps that give it its listener.
    pub first: Vec<Vec<Step>>,
    /// The [`Op::early`] steps whose every predecessor is in `first`.
    pub after_urgent: Vec<Step>,
    pub rest: Vec<Step>,
}

/// Orders `ops` (dependencies first; among ready ops by rank, then as given), turns them
/// into steps with their barrier groups, and splits them: for each port of `urgent` in
/// turn, the steps that give it its listener (and what they follow) when none of them waits
/// for a barrier; the early ops those steps free; then the rest, in order. A port's part
/// depends on nothing after it, so it can run right after its own make phase, before
/// other ports'.
pub(super) fn order_urgent_first(ops: Vec<Op>, urgent: &[ListenerKey]) -> Switch {
    let (steps, marks) = order_marked(ops, urgent);
    let mut split = Switch {
        first: vec![Vec::new(); urgent.len()],
        after_urgent: Vec::new(),
        rest: Vec::new(),
    };
    for (step, mark) in steps.into_iter().zip(marks) {
        match mark {
            Some(k) if k < urgent.len() => split.first[k].push(step),
            Some(_) => split.after_urgent.push(step),
            None => split.rest.push(step),
        }
    }
    split
}

/// For each op, the first port of `urgent` whose listener it gives or precedes, where
/// nothing the port's listener op follows is a barrier (a switch that waits for members is
/// no shortcut) or frees another port a listener is made for (a listener moved from it:
/// that port's own listener comes right after, once its pool is built, so its gap stays one
/// reconfiguration), unless a move within the same closure takes it: a chain of moves
/// (numbers swapped, node ports moved) is restored as one with the port that ends it,
/// after that port's make phase, not behind other ports' barriers.
fn urgent_closure(ops: &[Op], urgent: &[ListenerKey]) -> Vec<Option<usize>> {
    let wanted: Vec<&ListenerKey> = ops.iter().filter_map(|o| o.occupies.as_ref()).collect();
    let mut marked = vec![None; ops.len()];
    for (k, key) in urgent.iter().enumerate() {
        for (seed, op) in ops.iter().enumerate() {
            if op.occupies.as_ref() != Some(key) {
                continue;
            }
            let mut closure = vec![seed];
            let mut i = 0;
            while let Some(&at) = closure.get(i) {
                for &d in &ops[at].after {
                    if !closure.contains(&d) {
                        closure.push(d);
                    }
                }
                i += 1;
            }
            let retaken =
                |l: &ListenerKey| closure.iter().any(|&c| ops[c].occupies.as_ref() == Some(l));
            let shortcut = closure.iter().all(|&c| {
                !ops[c].action.is_barrier()
                    && ops[c]
                        .leaves
                        .iter()
                        .all(|l| l == key || !wanted.contains(&l) || retaken(l))
            });
            if shortcut {
                for c in closure {
                    marked[c].get_or_insert(k);
                }
            }
        }
    }
    // Marked `urgent.len()`: after every urgent port's part.
    for (i, op) in ops.iter().enumerate() {
        if op.early
            && marked[i].is_none()
            && !op.after.is_empty()
            && op.after.iter().all(|&d| marked[d].is_some())
        {
            marked[i] = Some(urgent.len());
        }
    }
    marked
}

/// The steps in order, each marked when it belongs to [`urgent_closure`].
fn order_marked(mut ops: Vec<Op>, urgent: &[ListenerKey]) -> (Vec<Step>, Vec<Option<usize>>) {
    link(&mut ops);
    let marked = urgent_closure(&ops, urgent);
    let n = ops.len();
    let mut waiting: Vec<usize> = ops.iter().map(|o| o.after.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, op) in ops.iter().enumerate() {
        for &d in &op.after {
            dependents[d].push(i);
        }
    }
    // Among ready ops: barriers first (each is checked before anything of this phase
    // writes, while the load balancer may still be idle), then what the op just placed
    // made ready (a port's listener is taken over right after it was freed, so the gap is
    // one reconfiguration, not one per port), then by rank and order.
    let key = |ops: &[Op], i: usize, enabled_by: usize| {
        (
            !ops[i].action.is_barrier(),
            std::cmp::Reverse(enabled_by),
            ops[i].rank,
            i,
        )
    };
    let mut ready: BTreeSet<_> = (0..n)
        .filter(|i| waiting[*i] == 0)
        .map(|i| key(&ops, i, 0))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(first) = ready.pop_first() {
        let i = first.3;
        order.push(i);
        for &d in &dependents[i] {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.insert(key(&ops, d, order.len()));
            }
        }
    }
    // `link` leaves no cycle; should one remain, its ops still run (last), so nothing of the
    // plan is dropped unnoticed: the API's refusal would say what went wrong.
    if order.len() < n {
        let placed: std::collections::HashSet<usize> = order.iter().copied().collect();
        order.extend((0..n).filter(|i| !placed.contains(i)));
    }
    // Groups: a barrier starts one; an op joins the groups of everything it follows.
    let mut parent: Vec<usize> = (0..n).collect();
    let mut group: Vec<Option<usize>> = vec![None; n];
    for &i in &order {
        let mut g = ops[i].action.is_barrier().then_some(i);
        for &d in &ops[i].after {
            if let Some(dg) = group[d] {
                g = Some(match g {
                    None => dg,
                    Some(x) => {
                        let (rx, rd) = (find(&mut parent, x), find(&mut parent, dg));
                        parent[rd] = rx;
                        rx
                    }
                });
            }
        }
        group[i] = g;
    }
    let mut steps = Vec::with_capacity(n);
    let mut first = Vec::with_capacity(n);
    let mut slots: Vec<Option<Op>> = ops.into_iter().map(Some).collect();
    for i in order {
        let g = group[i].map(|g| find(&mut parent, g) as u32);
        if let Some(op) = slots[i].take() {
            steps.push(Step {
                action: op.action,
                impact: op.impact,
                port: op.port,
                group: g,
            });
            first.push(marked[i]);
        }
    }
    (steps, first)
}
