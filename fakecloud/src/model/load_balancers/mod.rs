//! Load balancers and everything under them: pools, pool members (nested under pools),
//! listeners and health monitors, one submodule each.
//!
//! Every change of a load balancer's configuration goes through [`change`] (private to
//! this module and its submodules): it mutates the records and queues the resulting
//! configuration on the data plane in one step, so the API view and the data plane cannot
//! drift apart. The collections it changes are private to `crate::model`.
//!
//! Choices where the reference marks the real behaviour as unknown (documented in
//! `fakecloud/README.md`):
//! - deleting a pool deletes its members, its health monitor and the listeners that use it
//!   (what the official CCM assumes of the real API);
//! - a second listener with the same protocol and port on one load balancer is refused;
//! - a UDP listener needs a UDP pool and a TCP listener a non-UDP pool;
//! - a second health monitor on one pool is refused;
//! - a member with the same address and port as another member of its pool is refused
//!   (`ApiRules::duplicate_members` lenient accepts it);
//! - `http` on a non-HTTP monitor is ignored (`ApiRules::non_http_monitor_http` lenient
//!   stores it).

pub mod health_monitors;
pub mod listeners;
pub mod load_balancer;
pub mod members;
pub mod pools;

pub use crate::dataplane::HttpCheck;
pub use health_monitors::HealthMonitor;
pub use listeners::Listener;
pub use load_balancer::{LoadBalancer, Vip};
pub use members::Member;
pub use pools::Pool;

use crate::clock::{Time, delta_from_secs};
use crate::config::Timing;
use crate::dataplane::{AppliedOp, LbConfig, ListenerCfg, MemberCfg, MonitorCfg};
use crate::error::ApiResult;
use crate::model::store::State;
use uuid::Uuid;

pub const ALGORITHMS: &[&str] = &["round_robin", "least_connections", "source_ip"];
pub const POOL_PROTOCOLS: &[&str] = &["tcp", "proxy", "proxyv2", "udp"];
pub const LISTENER_PROTOCOLS: &[&str] = &["tcp", "udp"];
pub const MONITOR_TYPES: &[&str] = &["ping", "tcp", "http", "https", "tls-hello", "udp-connect"];
pub const HTTP_METHODS: &[&str] = &[
    "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
];
pub const HTTP_VERSIONS: &[&str] = &["1.0", "1.1"];

/// What a change does to the object it names, for the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Create,
    Update,
    Delete,
    /// Names and tags only: applied at once, nothing queued, the load balancer stays
    /// `running` (fakecloud/MODEL.md §4, "Which writes reconfigure").
    Relabel,
}

impl Verb {
    /// `Update` when a PATCH sets anything the load balancer runs on, else `Relabel`.
    fn update_if(reconfigures: bool) -> Verb {
        if reconfigures {
            Verb::Update
        } else {
            Verb::Relabel
        }
    }
}

/// How an object is named on the timeline: its load balancer and a description.
type Describe = fn(&State, Uuid) -> Option<(Uuid, String)>;

/// The one path from a load-balancer write to the data plane: `apply` changes the records
/// of object `id`, then the configuration of its load balancer is queued as one operation
/// ("create pool \"web\" (tcp round_robin)"). The description is taken before a delete and
/// after anything else; nothing is queued when `apply` fails.
fn change<R>(
    st: &mut State,
    now: Time,
    timing: &Timing,
    verb: Verb,
    describe: Describe,
    id: Uuid,
    apply: impl FnOnce(&mut State) -> ApiResult<R>,
) -> ApiResult<R> {
    let before = if verb == Verb::Delete {
        describe(st, id)
    } else {
        None
    };
    let out = apply(st)?;
    let described = match verb {
        Verb::Delete => before,
        Verb::Create | Verb::Update | Verb::Relabel => describe(st, id),
    };
    if let Some((lb, what)) = described {
        let verb = match verb {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Delete => "delete",
            Verb::Relabel => {
                // The history keeps the load balancer's name as it is called now.
                if let (Some(rec), Some(h)) =
                    (st.load_balancers.get(&lb), st.dataplane.lbs.get_mut(&lb))
                {
                    h.name = rec.name.clone();
                }
                return Ok(out);
            }
        };
        record_lb_op(st, lb, now, timing, format!("{verb} {what}"));
    }
    Ok(out)
}

/// The configuration of `lb` as the API shows it now: what the data plane will run once
/// the change just made is applied.
fn snapshot(st: &State, lb: Uuid) -> LbConfig {
    let pools: Vec<Uuid> = st
        .pools
        .values()
        .filter(|p| p.load_balancer == lb)
        .map(|p| p.uuid)
        .collect();
    LbConfig::new(
        st.listeners
            .values()
            .filter(|l| l.load_balancer == lb)
            .map(|l| ListenerCfg {
                uuid: l.uuid,
                name: l.name.clone(),
                protocol: l.protocol.clone(),
                port: l.protocol_port,
                allowed_cidrs: l
                    .allowed_cidrs
                    .iter()
                    .filter_map(|c| c.parse().ok())
                    .collect(),
                pool: l.pool,
            })
            .collect(),
        pools
            .iter()
            .flat_map(|p| st.members.of_pool(*p))
            .map(|m| MemberCfg {
                uuid: m.uuid,
                pool: m.pool,
                address: m.address,
                protocol_port: m.protocol_port,
                monitor_port: m.monitor_port,
                enabled: m.enabled,
            })
            .collect(),
        st.health_monitors
            .values()
            .filter(|m| m.load_balancer == lb)
            .map(|m| MonitorCfg {
                uuid: m.uuid,
                pool: m.pool,
                kind: m.kind.clone(),
                delay_s: m.delay_s,
                up_threshold: m.up_threshold,
                down_threshold: m.down_threshold,
                http: m.http.clone(),
            })
            .collect(),
    )
}

/// Queues a change on `lb`: it is applied after the changes before it, each taking
/// `lb_reconfigure_s`, and the load balancer reports `changing` until the last is done.
fn record_lb_op(st: &mut State, lb: Uuid, now: Time, timing: &Timing, operation: String) {
    let config = snapshot(st, lb);
    let Some(rec) = st.load_balancers.get_mut(&lb) else {
        return;
    };
    let effective_at = rec.busy_until.max(now) + delta_from_secs(timing.lb_reconfigure_s);
    rec.busy_until = effective_at;
    if let Some(history) = st.dataplane.lbs.get_mut(&lb) {
        history.name = rec.name.clone();
        history.ops.push(AppliedOp {
            requested_at: now,
            effective_at,
            operation,
            config,
        });
    }
}

/// `(load balancer, "load balancer \"name\"")` for the timeline.
fn describe_lb(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let l = st.load_balancers.get(&id)?;
    Some((id, format!("load balancer \"{}\"", l.name)))
}

fn describe_pool(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let p = st.pools.get(&id)?;
    Some((
        p.load_balancer,
        format!("pool \"{}\" ({} {})", p.name, p.protocol, p.algorithm),
    ))
}

fn describe_member(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let m = st.members.get(&id)?;
    let p = st.pools.get(&m.pool)?;
    let enabled = if m.enabled { "" } else { ", disabled" };
    Some((
        p.load_balancer,
        format!(
            "member \"{}\" of pool \"{}\" ({}:{}{enabled})",
            m.name, p.name, m.address, m.protocol_port
        ),
    ))
}

fn describe_listener(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let l = st.listeners.get(&id)?;
    Some((
        l.load_balancer,
        format!(
            "listener \"{}\" ({} {})",
            l.name, l.protocol, l.protocol_port
        ),
    ))
}

fn describe_monitor(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let m = st.health_monitors.get(&id)?;
    let pool = st
        .pools
        .get(&m.pool)
        .map(|p| p.name.as_str())
        .unwrap_or("?");
    Some((
        m.load_balancer,
        format!("health monitor of pool \"{pool}\" ({})", m.kind),
    ))
}

/// Removes a pool with its members, its health monitor and the listeners that use it.
fn remove_pool(st: &mut State, id: Uuid) {
    st.pools.shift_remove(&id);
    st.members.remove_pool(&id);
    st.health_monitors.retain(|_, m| m.pool != id);
    st.listeners.retain(|_, l| l.pool != Some(id));
}

/// Detaches a listener from its pool, which the API cannot do (deleting a pool deletes its
/// listeners): for tests of a listener without pool. Recorded like any change.
#[doc(hidden)]
pub fn detach_listener_for_tests(
    st: &mut State,
    id: Uuid,
    now: Time,
    timing: &Timing,
    operation: &str,
) -> ApiResult<()> {
    let lb = st
        .listeners
        .get_mut(&id)
        .map(|l| {
            l.pool = None;
            l.load_balancer
        })
        .ok_or(crate::error::ApiError::NotFound)?;
    record_lb_op(st, lb, now, timing, operation.to_string());
    Ok(())
}
