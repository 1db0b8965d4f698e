//! At most two pools of one name at any point of a plan: the pool that serves a port and
//! the replacement made next to it. Pools are found again by name after a lost answer
//! (`besides` in [`Action::CreatePool`]) and by the next pass; a third of a name would
//! leave that to chance.
//!
//! A third arises when a pool still bears another port's name (an earlier pass's rename
//! failed) while the port of that name gets a new pool: the stray pool is renamed first,
//! to the name of the port whose listener it holds (its planned rename moves there, or
//! one is added). Renames disturb no traffic; the plan otherwise puts them last because
//! they serve nobody.

use super::{Action, Impact, Step};
use crate::service::pure::model::{ActualLb, DesiredLb};
use std::collections::HashMap;
use uuid::Uuid;

/// A pool as the plan goes: one of the load balancer's, or the plan's `new`-th.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum PoolId {
    Old(Uuid),
    New(usize),
}

/// Reorders or adds pool renames in `steps` so that no step makes a third pool of a name;
/// keeps `serves_after` (an index into `steps`) on the same step.
pub(super) fn at_most_two_of_a_name(
    steps: &mut Vec<Step>,
    serves_after: &mut Option<usize>,
    desired: &DesiredLb,
    actual: &ActualLb,
) {
    let mut names: HashMap<PoolId, String> = actual
        .pools
        .iter()
        .map(|p| (PoolId::Old(p.uuid), p.name.clone()))
        .collect();
    let mut k = 0;
    while k < steps.len() {
        if let Action::CreatePool { name, .. } = &steps[k].action {
            let holders: Vec<Uuid> = old_pools_named(&names, name);
            let total = names.values().filter(|n| *n == name).count();
            if total >= 2
                && let Some(rename) = rename_first(steps, k, &holders, name, desired, actual)
            {
                place(steps, serves_after, k, rename);
                // The rename is walked next, then this creation again.
                continue;
            }
            if let Action::CreatePool { besides, .. } = &mut steps[k].action {
                // What a lookup after a lost answer must not take for the new pool: every
                // pool of its name at this point of the plan.
                for uuid in holders {
                    if !besides.contains(&uuid) {
                        besides.push(uuid);
                    }
                }
            }
        }
        if let Action::DeletePool { uuid, name } = &mut steps[k].action
            && let Some(now) = names.get(&PoolId::Old(*uuid))
        {
            // Messages name the pool as it is called by then.
            name.clone_from(now);
        }
        walk(&mut names, &steps[k].action);
        k += 1;
    }
}

fn old_pools_named(names: &HashMap<PoolId, String>, name: &str) -> Vec<Uuid> {
    let mut out: Vec<Uuid> = names
        .iter()
        .filter(|(_, n)| *n == name)
        .filter_map(|(id, _)| match id {
            PoolId::Old(u) => Some(*u),
            PoolId::New(_) => None,
        })
        .collect();
    out.sort();
    out
}

/// Where a rename goes: moved from later in the plan, or a new step.
enum Placement {
    Move(usize),
    Add(Box<Step>),
}

/// A rename that takes one of `holders` (pools named `name`) off that name before step `k`:
/// its rename planned later, or a new one to the name of the port whose listener it holds.
fn rename_first(
    steps: &[Step],
    k: usize,
    holders: &[Uuid],
    name: &str,
    desired: &DesiredLb,
    actual: &ActualLb,
) -> Option<Placement> {
    let later = steps.iter().enumerate().skip(k + 1).find(|(_, s)| {
        matches!(&s.action, Action::RenamePool { uuid, from, .. }
            if holders.contains(uuid) && from == name)
    });
    if let Some((r, _)) = later {
        return Some(Placement::Move(r));
    }
    holders.iter().find_map(|uuid| {
        let pool = actual.pools.iter().find(|p| p.uuid == *uuid)?;
        let to = desired.pools.iter().find_map(|d| {
            let holds = pool
                .listeners
                .iter()
                .any(|l| l.listener.key() == d.listener.key());
            (holds && d.name != name).then(|| d.name.clone())
        })?;
        Some(Placement::Add(Box::new(Step {
            action: Action::RenamePool {
                uuid: *uuid,
                from: name.to_string(),
                to: to.clone(),
            },
            impact: Impact::None,
            port: Some(to),
            group: None,
        })))
    })
}

/// Puts the rename at `k`, ahead of the creation there. It waits for no barrier: a rename
/// disturbs nothing.
fn place(steps: &mut Vec<Step>, serves_after: &mut Option<usize>, k: usize, rename: Placement) {
    let mut step = match rename {
        Placement::Move(r) => {
            if let Some(n) = serves_after.as_mut()
                && *n > r
            {
                *n -= 1;
            }
            steps.remove(r)
        }
        Placement::Add(step) => *step,
    };
    step.group = None;
    if let Some(n) = serves_after.as_mut()
        && *n > k
    {
        *n += 1;
    }
    steps.insert(k, step);
}

/// The pools' names after `action`.
fn walk(names: &mut HashMap<PoolId, String>, action: &Action) {
    match action {
        Action::CreatePool { new, name, .. } => {
            names.insert(PoolId::New(*new), name.clone());
        }
        Action::RenamePool { uuid, to, .. } => {
            names.insert(PoolId::Old(*uuid), to.clone());
        }
        Action::DeletePool { uuid, .. } => {
            names.remove(&PoolId::Old(*uuid));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Account, Ownership, plan};
    use crate::service::pure::model::PoolAlgorithm;
    use crate::service::pure::plan::Action;
    use crate::service::testkit::converged;
    use crate::service::testkit::fixtures::Sample;
    use crate::service::testkit::lb_api::{LbApi, MemberRule};
    use uuid::Uuid;

    /// The simulation found this (seed 95033634): the rename that should have given the
    /// pool serving 443 its port's name failed, so two pools were named `tcp/http`; an
    /// algorithm change then made a third `tcp/http` before either old one went.
    #[test]
    fn a_pool_left_with_another_ports_name_is_renamed_before_that_port_gets_a_new_pool() {
        let sample = Sample {
            subnet: Uuid::from_u128(0x0b4e4b9a_9d1b_4bd3_9a39_6b2c1a8b3c6d),
            nodes: vec![
                "10.0.0.11".parse().expect("ip"),
                "10.0.0.12".parse().expect("ip"),
            ],
        };
        let before = sample.desired();
        let owner = Ownership::default();
        let mut actual = converged(&before, &owner);
        actual.pools[1].name = "tcp/http".into();
        let stray = actual.pools[1].uuid;
        let mut after = before.clone();
        for p in &mut after.pools {
            p.algorithm = PoolAlgorithm::LeastConnections;
        }
        let p = plan(&after, Some(&actual), &Account::default(), &owner);
        let renamed = p.steps.iter().position(|s| {
            matches!(&s.action, Action::RenamePool { uuid, to, .. }
                if *uuid == stray && to == "tcp/https")
        });
        let created = p.steps.iter().position(
            |s| matches!(&s.action, Action::CreatePool { name, .. } if name == "tcp/http"),
        );
        assert!(
            matches!((renamed, created), (Some(r), Some(c)) if r < c),
            "the stray pool is renamed first:\n{}",
            p.describe()
        );
        // The new pool of the stray's name knows the stray for what it is after a lost
        // answer; the API model refuses a third pool of a name at any step.
        assert!(p.steps.iter().any(|s| matches!(&s.action,
            Action::CreatePool { name, besides, .. } if name == "tcp/https" && besides.contains(&stray))));
        let mut sim = LbApi::new(Some(&actual), MemberRule::Strict);
        sim.run(&after, &p, |_| {})
            .unwrap_or_else(|e| panic!("{e}\n{}", p.describe()));
        let again = plan(&after, sim.lb.as_ref(), &Account::default(), &owner);
        assert!(again.is_converged(), "{}", again.describe());
    }
}
