//! The listener of each desired pool: kept (moved to its number or changed in place) or
//! created, and the listeners its pool no longer needs.

use super::*;

/// `Outage` when the port loses its last member, `ListenerRecreate` when its traffic
/// moves from another listener, else `otherwise`.
fn listener_impact(outage: bool, recreate: bool, otherwise: Impact) -> Impact {
    if outage {
        Impact::Outage
    } else if recreate {
        Impact::ListenerRecreate
    } else {
        otherwise
    }
}

/// Whether `l`, named for `d`'s listener, serves another number: outside hands (or a pass
/// that stopped between its two PATCHes) moved the port's own listener off it. A port
/// renumbered in the Service has a listener named for its old number instead.
fn moved_off_its_number(l: &ActualListener, d: &DesiredPool) -> bool {
    l.listener.name == d.listener.name && l.listener.key() != d.listener.key()
}

impl<'a> Build<'a> {
    /// The listener of target `i`: kept (moved or changed in place) or created.
    pub(super) fn listener(&mut self, i: usize) {
        let actual = self.actual;
        let t = &self.targets[i];
        let key = t.desired.listener.key();
        let held_by_other = self.holders.get(&key).is_some_and(|(j, _)| {
            j.is_none_or(|j| t.home.is_none_or(|h| h.uuid != actual.pools[j].uuid))
        });
        // The port had members and keeps none.
        let outage = t.desired.members.is_empty()
            && self
                .holders
                .get(&key)
                .and_then(|(j, _)| *j)
                .is_some_and(|j| !actual.pools[j].members.is_empty());
        let (reused, declined) = self.reusable_listener(i);
        match reused {
            Some(l) => self.keep_listener(i, l, outage, held_by_other),
            None => self.create_listener(i, outage, held_by_other, declined),
        }
    }

    /// The listener of its home that target `i` keeps: the one on its number, else the
    /// first (moved to its number); and whether the one found is declined.
    fn reusable_listener(&self, i: usize) -> (Option<&'a ActualListener>, bool) {
        let t = &self.targets[i];
        let key = t.desired.listener.key();
        let reused = t.home.and_then(|h| {
            h.listeners
                .iter()
                .find(|l| l.listener.key() == key)
                .or_else(|| h.listeners.first())
        });
        // A broken port (Kubernetes moved it off the node port its holder serves) whose
        // pool's listener serves a number a port on a new pool takes: moving that listener
        // would take the number before the new pool is built, so the move waits for it and
        // the broken port with it. A listener made anew restores the port at once; the
        // old one serves its number until the new pool takes it over.
        let declined = reused.is_some_and(|l| {
            let old = l.listener.key();
            old != key
                && self.urgent.contains(&i)
                && self
                    .desired_keys
                    .get(&old)
                    .is_some_and(|&j| j != i && self.targets[j].home.is_none())
        });
        (reused.filter(|_| !declined), declined)
    }

    /// Target `i` gets a new listener; the one its home has goes when it was `declined`.
    fn create_listener(&mut self, i: usize, outage: bool, held_by_other: bool, declined: bool) {
        self.note_unserved_port(i);
        let t = &self.targets[i];
        let d = t.desired;
        let key = d.listener.key();
        let impact = listener_impact(outage, held_by_other, Impact::None);
        let mut op = Op::new(
            Action::CreateListener {
                pool: t.pool.clone(),
                listener: d.listener.clone(),
            },
            impact,
            t.name(),
            Rank::Occupy,
        );
        op.occupies = Some(key);
        self.ops.push(op);
        let home = t.home.map_or(&[][..], |h| &h.listeners[..]);
        for old in home.iter().filter(|_| declined) {
            let op = leave_listener(old, &self.desired_keys, &self.barrier_of_key, t.name());
            self.ops.push(op);
        }
    }

    /// Marks target `i` urgent when its port, which gets a listener anew, serves nothing
    /// now.
    fn note_unserved_port(&mut self, i: usize) {
        let actual = self.actual;
        let t = &self.targets[i];
        let d = t.desired;
        let key = d.listener.key();
        // A pool kept (or built by an earlier pass that stopped) whose port has no
        // listener at all: the port is down until it is made, so it goes before any
        // clean-up or other port's make phase. So is a new pool's port when the old
        // pool of its name has no listener left but on ports other ports now take, or
        // its own moved off its number: an earlier pass removed its listener to move
        // the port (or to swap numbers with another) and stopped, or outside hands
        // moved it, so the port served before and serves nothing now.
        // A port only renumbered still serves its old number: it is not urgent.
        let lost_listener = t.home.is_none()
            && actual.pools.iter().any(|a| {
                a.name == d.name
                    && a.listeners.iter().all(|l| {
                        self.desired_keys.contains_key(&l.listener.key())
                            || moved_off_its_number(l, d)
                    })
            });
        // On a load balancer that listens nowhere (a new one) nothing serves: every
        // port is restored as a broken one would be, so the load balancer serves as
        // soon as each port has a member up, and takes its other members after.
        let fresh = self.holders.is_empty();
        // A port with no pool of its name serves nothing: a new port, or one whose
        // pool outside hands deleted (its listener with it), which served until the
        // load balancer applied that. One snapshot cannot tell them apart, and a new
        // port built first delays no other port's service, so both are.
        let unbuilt = t.home.is_none() && !actual.pools.iter().any(|a| a.name == d.name);
        if !self.holders.contains_key(&key)
            && (t.home.is_some() || lost_listener || fresh || unbuilt)
        {
            self.urgent.push(i);
            if unbuilt && !fresh && !lost_listener {
                self.unbuilt.push(i);
            }
        }
    }

    /// Target `i` keeps its home's listener `l`: moved to its number, or changed in
    /// place; its home's other listeners go.
    fn keep_listener(&mut self, i: usize, l: &ActualListener, outage: bool, held_by_other: bool) {
        let t = &self.targets[i];
        let d = t.desired;
        let key = d.listener.key();
        let changes = ListenerChanges::between(&l.listener, &d.listener);
        let (moves, cidrs, empty) = (
            changes.moves(),
            changes.allowed_cidrs.is_some(),
            changes.is_empty(),
        );
        let update = Action::UpdateListener {
            uuid: l.uuid,
            from: l.listener.clone(),
            changes,
        };
        if moves {
            let old_key = l.listener.key();
            // Its own listener moved off its number: nothing serves the port, so moving
            // it back goes first.
            if moved_off_its_number(l, d) && !self.holders.contains_key(&key) {
                self.urgent.push(i);
            }
            let recreate = self.desired_keys.contains_key(&old_key) || held_by_other;
            let impact = listener_impact(outage, recreate, Impact::Minimal);
            let mut op = Op::new(update, impact, t.name(), Rank::Move);
            op.occupies = Some(key);
            op.leaves.push(old_key.clone());
            op.after.extend(self.barrier_of_key.get(&old_key));
            op.split = Some(Split {
                listener: l.uuid,
                old_name: l.listener.name.clone(),
                pool: t.pool.clone(),
                desired: d.listener.clone(),
            });
            self.ops.push(op);
        } else if !empty {
            let impact = if cidrs { Impact::Minimal } else { Impact::None };
            self.front.push(make(update, impact, t.name()));
        }
        let home = t.home.map_or(&[][..], |h| &h.listeners[..]);
        for extra in home.iter().filter(|x| x.uuid != l.uuid) {
            let op = leave_listener(extra, &self.desired_keys, &self.barrier_of_key, t.name());
            self.ops.push(op);
        }
    }
}
