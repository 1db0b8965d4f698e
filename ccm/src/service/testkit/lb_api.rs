//! A model of the load-balancer API that carries out plans in memory, for tests and
//! property checks of the planner: it refuses what the API refuses (a second listener on a
//! protocol and port, a second monitor on a pool, and, with [`MemberRule::Strict`], a second
//! member on one address and port), cascades pool deletion as the API does, and brings
//! every member up at once (so barriers hold). It also refuses a third pool of one name,
//! which the API accepts but the planner must never make. Pure: no I/O.

use crate::service::pure::model::*;
use crate::service::pure::plan::{Action, ListenerChanges, MonitorChanges, Plan, PoolRef};
use uuid::Uuid;

/// Whether a pool may hold two members on one address and port (the API does not say;
/// fakecloud refuses by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberRule {
    Strict,
    Lenient,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {step} ({action}) refused: {reason}")]
pub struct Refused {
    pub step: usize,
    pub action: &'static str,
    pub reason: String,
}

/// The API's view of one load balancer, changed action by action.
#[derive(Debug, Clone)]
pub struct LbApi {
    pub lb: Option<ActualLb>,
    pub rule: MemberRule,
    new_pools: Vec<Option<Uuid>>,
    next: u128,
}

/// Who a listener sends traffic to: (listener key, protocol family and node port of one
/// enabled member of its pool).
pub type Route = (ListenerKey, Family, u16);

impl LbApi {
    pub fn new(actual: Option<&ActualLb>, rule: MemberRule) -> LbApi {
        LbApi {
            lb: actual.cloned(),
            rule,
            new_pools: Vec::new(),
            next: 1,
        }
    }

    fn id(&mut self) -> Uuid {
        self.next += 1;
        Uuid::from_u128(0xfeed_0000_0000_0000_0000_0000_0000_0000 | self.next)
    }

    fn lb(&mut self) -> Result<&mut ActualLb, String> {
        self.lb
            .as_mut()
            .ok_or_else(|| "no load balancer".to_string())
    }

    fn pool_uuid(&self, r: &PoolRef) -> Result<Uuid, String> {
        match r {
            PoolRef::Existing(u) => Ok(*u),
            PoolRef::New(i) => self
                .new_pools
                .get(*i)
                .copied()
                .flatten()
                .ok_or_else(|| format!("new pool #{i} was not created")),
        }
    }

    fn pool(&mut self, uuid: Uuid) -> Result<&mut ActualPool, String> {
        self.lb()?
            .pools
            .iter_mut()
            .find(|p| p.uuid == uuid)
            .ok_or_else(|| format!("no pool {uuid}"))
    }

    /// Every listener with the members its pool sends traffic to.
    pub fn routes(&self) -> Vec<Route> {
        let mut out = Vec::new();
        for p in self.lb.iter().flat_map(|lb| &lb.pools) {
            for l in &p.listeners {
                for m in p.members.iter().filter(|m| m.enabled) {
                    out.push((l.listener.key(), p.family(), m.member.protocol_port));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Carries out `plan` and returns every route some step added that sends a port where
    /// it must not go ([`wrong_routes`] against `initial`, the routes before the change
    /// started; routes wrong already then do not count).
    pub fn run_routed(
        &mut self,
        initial: &[Route],
        desired: &DesiredLb,
        plan: &Plan,
    ) -> Result<Vec<Route>, Refused> {
        let wrong_at_start = wrong_routes(initial, desired, initial);
        let mut misrouted = Vec::new();
        self.run(desired, plan, |s| {
            for w in wrong_routes(initial, desired, &s.routes()) {
                if !wrong_at_start.contains(&w) && !misrouted.contains(&w) {
                    misrouted.push(w);
                }
            }
        })?;
        Ok(misrouted)
    }

    /// Carries out `plan`, calling `after_each` with the state after every step.
    pub fn run(
        &mut self,
        desired: &DesiredLb,
        plan: &Plan,
        mut after_each: impl FnMut(&LbApi),
    ) -> Result<(), Refused> {
        self.new_pools = vec![None; desired.pools.len()];
        for (i, s) in plan.steps.iter().enumerate() {
            self.apply(&s.action)
                .and_then(|()| self.pools_at_most_twice())
                .map_err(|reason| Refused {
                    step: i + 1,
                    action: s.action.kind(),
                    reason,
                })?;
            after_each(self);
        }
        Ok(())
    }

    /// Not the API's rule but the planner's: a pool and its replacement may share a name
    /// while traffic moves between them, a third of that name never (the next reader could
    /// not tell which one a port is moving to; the simulation checks the same).
    fn pools_at_most_twice(&self) -> Result<(), String> {
        let Some(lb) = &self.lb else { return Ok(()) };
        for p in &lb.pools {
            let n = lb.pools.iter().filter(|q| q.name == p.name).count();
            if n > 2 {
                return Err(format!("{n} pools named {} at once", p.name));
            }
        }
        Ok(())
    }

    /// One action as the API carries it out.
    fn apply(&mut self, a: &Action) -> Result<(), String> {
        match a {
            Action::CreateLb { name, flavor, zone } => self.create_lb(name, flavor, zone)?,
            Action::WaitLbReady | Action::WaitMembersUp { .. } => {}
            Action::RenameLb { to, .. } => self.lb()?.name = to.clone(),
            Action::TagLb { tags, .. } => self.lb()?.tags = tags.clone(),
            Action::CreatePool {
                new,
                name,
                algorithm,
                protocol,
                ..
            } => {
                let uuid = self.id();
                self.lb()?.pools.push(ActualPool {
                    uuid,
                    name: name.clone(),
                    algorithm: algorithm.clone(),
                    protocol: protocol.clone(),
                    members: Vec::new(),
                    listeners: Vec::new(),
                    monitors: Vec::new(),
                });
                let slot = self
                    .new_pools
                    .get_mut(*new)
                    .ok_or_else(|| format!("no desired pool #{new}"))?;
                *slot = Some(uuid);
            }
            Action::RenamePool { uuid, to, .. } => self.pool(*uuid)?.name = to.clone(),
            Action::DeletePool { uuid, .. } => {
                let lb = self.lb()?;
                let before = lb.pools.len();
                lb.pools.retain(|p| p.uuid != *uuid);
                if lb.pools.len() == before {
                    return Err(format!("no pool {uuid}"));
                }
            }
            Action::CreateMember { pool, member } => self.create_member(pool, member)?,
            Action::EnableMember { pool, uuid, .. } => self.member(*pool, *uuid)?.enabled = true,
            Action::RenameMember { pool, uuid, to, .. } => {
                self.member(*pool, *uuid)?.member.name = to.clone()
            }
            Action::DeleteMember { pool, uuid, .. } => {
                let p = self.pool(*pool)?;
                let before = p.members.len();
                p.members.retain(|m| m.uuid != *uuid);
                if p.members.len() == before {
                    return Err(format!("no member {uuid}"));
                }
            }
            Action::CreateListener { pool, listener } => self.create_listener(pool, listener)?,
            Action::UpdateListener { uuid, changes, .. } => {
                let l = changed_listener(self.listener(*uuid)?.clone(), changes);
                self.check_free(&l.key(), Some(*uuid))?;
                *self.listener(*uuid)? = l;
            }
            Action::DeleteListener { uuid, .. } => self.delete_listener(*uuid)?,
            Action::CreateMonitor { pool, monitor } => self.create_monitor(pool, monitor)?,
            Action::UpdateMonitor { uuid, changes, .. } => {
                change_monitor(self.monitor(*uuid)?, changes)
            }
            Action::DeleteMonitor { uuid, .. } => {
                let lb = self.lb()?;
                for p in &mut lb.pools {
                    p.monitors.retain(|m| m.uuid != *uuid);
                }
            }
            Action::AssignFloatingIp { network, .. } => {
                let lb = self.lb()?;
                if !lb.floating_ips.contains(network) {
                    lb.floating_ips.push(*network);
                }
            }
        }
        Ok(())
    }

    fn create_lb(&mut self, name: &str, flavor: &str, zone: &Option<String>) -> Result<(), String> {
        if self.lb.is_some() {
            return Err("a load balancer exists already".into());
        }
        let uuid = self.id();
        self.lb = Some(ActualLb {
            uuid,
            name: name.to_string(),
            flavor: flavor.to_string(),
            zone: zone.clone().unwrap_or_else(|| "rma1".into()),
            status: LoadBalancerStatus::Running,
            vips: Vec::new(),
            pools: Vec::new(),
            orphan_listeners: Vec::new(),
            floating_ips: Vec::new(),
            tags: Tags::new(),
        });
        Ok(())
    }

    fn create_member(&mut self, pool: &PoolRef, member: &Member) -> Result<(), String> {
        let pool = self.pool_uuid(pool)?;
        let uuid = self.id();
        let rule = self.rule;
        let p = self.pool(pool)?;
        if rule == MemberRule::Strict
            && p.members
                .iter()
                .any(|m| m.member.endpoint() == member.endpoint())
        {
            return Err(format!(
                "address: the pool already has a member for {} port {}",
                member.address, member.protocol_port
            ));
        }
        p.members.push(ActualMember {
            uuid,
            member: member.clone(),
            enabled: true,
            health: MonitorStatus::Up,
        });
        Ok(())
    }

    fn create_listener(&mut self, pool: &PoolRef, listener: &Listener) -> Result<(), String> {
        let pool = self.pool_uuid(pool)?;
        self.check_free(&listener.key(), None)?;
        let uuid = self.id();
        let p = self.pool(pool)?;
        let udp_pool = p.family() == Family::Udp;
        if udp_pool != (listener.protocol == ListenerProtocol::Udp) {
            return Err("protocol: the listener protocol does not fit the pool".into());
        }
        p.listeners.push(ActualListener {
            uuid,
            listener: listener.clone(),
        });
        Ok(())
    }

    fn delete_listener(&mut self, uuid: Uuid) -> Result<(), String> {
        let lb = self.lb()?;
        let before = count_listeners(lb);
        for p in &mut lb.pools {
            p.listeners.retain(|l| l.uuid != uuid);
        }
        lb.orphan_listeners.retain(|l| l.uuid != uuid);
        if count_listeners(lb) == before {
            return Err(format!("no listener {uuid}"));
        }
        Ok(())
    }

    fn create_monitor(&mut self, pool: &PoolRef, monitor: &Monitor) -> Result<(), String> {
        let pool = self.pool_uuid(pool)?;
        let uuid = self.id();
        let p = self.pool(pool)?;
        if !p.monitors.is_empty() {
            return Err("pool: the pool already has a health monitor".into());
        }
        p.monitors.push(ActualMonitor {
            uuid,
            monitor: monitor.clone(),
        });
        Ok(())
    }

    fn member(&mut self, pool: Uuid, uuid: Uuid) -> Result<&mut ActualMember, String> {
        self.pool(pool)?
            .members
            .iter_mut()
            .find(|m| m.uuid == uuid)
            .ok_or_else(|| format!("no member {uuid}"))
    }

    fn listener(&mut self, uuid: Uuid) -> Result<&mut Listener, String> {
        let lb = self.lb()?;
        lb.pools
            .iter_mut()
            .flat_map(|p| p.listeners.iter_mut())
            .chain(lb.orphan_listeners.iter_mut())
            .find(|l| l.uuid == uuid)
            .map(|l| &mut l.listener)
            .ok_or_else(|| format!("no listener {uuid}"))
    }

    fn monitor(&mut self, uuid: Uuid) -> Result<&mut Monitor, String> {
        self.lb()?
            .pools
            .iter_mut()
            .flat_map(|p| p.monitors.iter_mut())
            .find(|m| m.uuid == uuid)
            .map(|m| &mut m.monitor)
            .ok_or_else(|| format!("no health monitor {uuid}"))
    }

    /// The API refuses a second listener on a protocol and port.
    fn check_free(&mut self, key: &ListenerKey, except: Option<Uuid>) -> Result<(), String> {
        let lb = self.lb()?;
        let taken = lb
            .pools
            .iter()
            .flat_map(|p| &p.listeners)
            .chain(&lb.orphan_listeners)
            .any(|l| Some(l.uuid) != except && l.listener.key() == *key);
        if taken {
            Err(format!(
                "protocol_port: the load balancer already has a {} listener on port {}",
                key.protocol, key.port
            ))
        } else {
            Ok(())
        }
    }
}

/// The routes of `now` that send a port somewhere it must not go: to a backend that is
/// neither the port's own in `desired` nor one it had in `initial`, or to one that
/// `desired` gives to another port. A plan may keep such a route that existed before it
/// started (Kubernetes moved the backend; the plan removes the route), never add one.
pub fn wrong_routes(initial: &[Route], desired: &DesiredLb, now: &[Route]) -> Vec<Route> {
    let backend_of = |k: &ListenerKey| {
        desired
            .pools
            .iter()
            .find(|p| p.listener.key() == *k)
            .map(|p| (p.family(), p.node_port))
    };
    let owned_by_other = |k: &ListenerKey, b: (Family, u16)| {
        desired
            .pools
            .iter()
            .any(|p| p.listener.key() != *k && (p.family(), p.node_port) == b)
    };
    now.iter()
        .filter(|(k, family, port)| {
            let b = (*family, *port);
            backend_of(k) != Some(b)
                && (!initial.contains(&(k.clone(), b.0, b.1)) || owned_by_other(k, b))
        })
        .cloned()
        .collect()
}

fn count_listeners(lb: &ActualLb) -> usize {
    lb.pools.iter().map(|p| p.listeners.len()).sum::<usize>() + lb.orphan_listeners.len()
}

/// `l` with `changes` made to it.
fn changed_listener(mut l: Listener, changes: &ListenerChanges) -> Listener {
    if let Some(v) = &changes.name {
        l.name = v.clone();
    }
    if let Some(v) = &changes.protocol {
        l.protocol = v.clone();
    }
    if let Some(v) = changes.port {
        l.port = v;
    }
    if let Some(v) = &changes.allowed_cidrs {
        l.allowed_cidrs = v.clone();
    }
    if let Some(v) = changes.timeout_client_data_ms {
        l.timeout_client_data_ms = v;
    }
    if let Some(v) = changes.timeout_member_connect_ms {
        l.timeout_member_connect_ms = v;
    }
    if let Some(v) = changes.timeout_member_data_ms {
        l.timeout_member_data_ms = v;
    }
    l
}

/// Makes `changes` to the monitor `m`.
fn change_monitor(m: &mut Monitor, changes: &MonitorChanges) {
    if let Some(v) = changes.delay_s {
        m.delay_s = v;
    }
    if let Some(v) = changes.timeout_s {
        m.timeout_s = v;
    }
    if let Some(v) = changes.up_threshold {
        m.up_threshold = v;
    }
    if let Some(v) = changes.down_threshold {
        m.down_threshold = v;
    }
    if let Some(h) = &changes.http {
        m.http = Some(h.clone());
    }
}
