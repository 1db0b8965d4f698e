//! Changes that wait (for the load balancer to apply, for new members to come up): what a
//! Service waits for, said once per thing awaited, a Warning when a wait is held too long,
//! and the cheap poll of a wait ([`recheck_waiting`]) that asks only the waits' own checks.

use super::context::ServiceContext;
use super::progress::Progress;
use super::state::Waiting;
use crate::runner::Key;
use crate::service::cloud::apply::{Cause, Pending};
use crate::service::pure::model::DesiredLb;
use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use std::time::Duration;
use tokio::time::Instant;

/// Records that the Service's change waits (`planned`: found by a whole pass, not by a
/// recheck), and says so once per thing it waits for (not per member that comes up); a
/// wait longer than the members timeout gets one Warning.
pub(super) async fn note_waiting(
    svc: &Service,
    ctx: &ServiceContext,
    desired: &DesiredLb,
    pending: &[Pending],
    planned: bool,
) {
    let (what, reason) = clauses(pending);
    let reason = reason.as_str();
    let key = Key::of(svc);
    let (announce, warn) = {
        let mut states = ctx.states.lock();
        let w = states.wait_for(&key, desired);
        if w.desired != *desired {
            *w = Waiting::new(desired.clone());
        }
        w.pending = pending.to_vec();
        if planned {
            w.planned = Instant::now();
        }
        let announce = w.reason != what;
        w.reason = what;
        let cause = held_by(pending, w.queued, w.since.elapsed());
        let warn = w.since.elapsed() >= ctx.apply.members_timeout && warn_again(w.warned, cause);
        if warn {
            w.warned = Some(cause);
        }
        (announce, warn.then(|| (w.since.elapsed(), cause)))
    };
    let reference = svc.object_ref(&());
    if announce {
        ctx.events
            .publish(
                &reference,
                false,
                "WaitingForLoadBalancer",
                "EnsureLoadBalancer",
                format!("Waiting for {reason}; the current configuration keeps serving"),
            )
            .await;
    }
    if let Some((after, cause)) = warn {
        ctx.events
            .publish(
                &reference,
                true,
                "ChangeHeld",
                "EnsureLoadBalancer",
                held_message(after, reason, cause),
            )
            .await;
    }
}

/// Whether a change held past the members timeout by `cause` gets a Warning, after the one
/// it got for `warned` (pure): the first, and one more each time the cause found says more
/// than the one warned of (in their first checks, new members are neither up nor down yet;
/// a published Service's other members may then wait in this CCM's queue).
fn warn_again(warned: Option<Cause>, cause: Cause) -> bool {
    // The load balancer's queue, then this CCM's, then the backends: each says more about
    // what to do (wait, wait for this CCM, fix the backends) than the one before.
    let weight = |c: Cause| match c {
        Cause::LoadBalancer => 0,
        Cause::Budget => 1,
        Cause::MembersDown => 2,
    };
    warned.is_none_or(|before| weight(cause) > weight(before))
}

/// What holds a change that has waited `waited`, `queued` of it in this CCM's own queue
/// (pure): members found down, if any pending wait has them; else this CCM's budget when
/// most of the wait was spent queued behind other Services; else the load balancer's
/// queue.
fn held_by(pending: &[Pending], queued: Duration, waited: Duration) -> Cause {
    if pending.iter().any(|p| p.cause == Cause::MembersDown) {
        Cause::MembersDown
    } else if queued * 2 >= waited && !queued.is_zero() {
        Cause::Budget
    } else {
        Cause::LoadBalancer
    }
}

/// The Warning of a change held `after` by `cause` (pure): the advice follows whose turn it is. Members
/// found down point at their backends; otherwise the load balancer is still working through
/// the operations queued on it (a large Service's members are created one after another),
/// and nothing outside needs fixing.
pub(super) fn held_message(after: std::time::Duration, reason: &str, cause: Cause) -> String {
    let secs = after.as_secs();
    if cause == Cause::MembersDown {
        format!(
            "The change has waited {secs}s for {reason}: the members that serve now stay until then. New members found down usually mean their backend does not answer on its node port; revert the change or fix the backends"
        )
    } else if cause == Cause::Budget {
        format!(
            "The change has waited {secs}s for {reason}, most of it in this controller's queue behind other Services' work (its API request budget, --api-rate-limit): the load balancer serves meanwhile. Nothing needs fixing; the change goes on by itself"
        )
    } else {
        format!(
            "The change has waited {secs}s for {reason}: the load balancer is still working through the operations queued on it, and the members that serve now stay until it is done. Nothing needs fixing; the change goes on by itself"
        )
    }
}

/// A queued Service's wait is told when its turn is at least this far off.
pub const QUEUED_NOTICE: Duration = Duration::from_secs(10);

/// What a Service queued behind `ahead` others is told (pure): how many API requests are
/// likely sent before its turn (`per_reconcile` each) at the client's limit of `rate`
/// per second, so that a user does not blame the load balancer for this CCM's own
/// budget; `None` when its turn is less than [`QUEUED_NOTICE`] away.
pub fn queued_message(ahead: usize, per_reconcile: f64, rate: f64) -> Option<String> {
    if ahead == 0 || rate.is_nan() || rate <= 0.0 || !per_reconcile.is_finite() {
        return None;
    }
    let requests = (ahead as f64 * per_reconcile.max(1.0)).round();
    let secs = requests / rate;
    if secs < QUEUED_NOTICE.as_secs_f64() {
        return None;
    }
    let services = if ahead == 1 {
        "Service is"
    } else {
        "Services are"
    };
    Some(format!(
        "Queued: about {requests:.0} requests ahead at {rate}/s (about {secs:.0}s): {ahead} {services} ahead of it in this controller's queue; its load balancer is not the cause of this wait"
    ))
}

/// A poll of a waiting Service that nothing has touched since it started waiting (neither
/// the Service nor a Node that can alter its members): asks only the waits' own checks
/// (the load balancer's status, the members of the pools waited for) instead of fetching,
/// mapping and planning everything again. `Some(Pending)` while any still waits; `None`
/// when the Service must be planned again.
pub(super) async fn recheck_waiting(svc: &Service, ctx: &ServiceContext) -> Option<Progress> {
    let key = Key::of(svc);
    let w = {
        let mut states = ctx.states.lock();
        if states.take_touched(&key) {
            return None;
        }
        states.waiting(&key).cloned()?
    };
    // A long wait is planned again once per resync period all the same, so drift
    // (outside hands) is repaired while a change is held.
    if w.pending.is_empty()
        || w.pending.iter().any(|p| p.recheck.is_none())
        || w.planned.elapsed() >= ctx.resync.period
    {
        return None;
    }
    let mut still = Vec::new();
    for p in &w.pending {
        let r = p.recheck.as_ref()?;
        match r.ask(&ctx.cloud).await {
            Ok(None) => {}
            Ok(Some(now)) => still.push(Pending {
                what: p.what.clone(),
                recheck: p.recheck.clone(),
                ..now
            }),
            // Whatever failed (the load balancer or a pool vanished, the API erred), the
            // whole pipeline knows what to make of it.
            Err(_) => return None,
        }
    }
    if still.is_empty() {
        return None;
    }
    note_waiting(svc, ctx, &w.desired, &still, false).await;
    Some(Progress::Pending)
}

/// Whether this reconcile continues a change already announced.
pub(super) fn continues(ctx: &ServiceContext, svc: &Service, desired: &DesiredLb) -> bool {
    ctx.states
        .lock()
        .waiting(&Key::of(svc))
        .is_some_and(|w| w.desired == *desired)
}

/// What the waits are for, and the same with their details (pure): each thing awaited
/// once, in the order first met, the details of every wait on it together (two waits on
/// one pool, from two steps of a plan, read as one clause).
fn clauses(pending: &[Pending]) -> (String, String) {
    let mut merged: Vec<(&str, Vec<&str>)> = Vec::new();
    for p in pending {
        let i = match merged.iter().position(|(what, _)| *what == p.what) {
            Some(i) => i,
            None => {
                merged.push((&p.what, Vec::new()));
                merged.len() - 1
            }
        };
        let details = &mut merged[i].1;
        for d in p.detail.split(", ").filter(|d| !d.is_empty()) {
            if !details.contains(&d) {
                details.push(d);
            }
        }
    }
    let what = merged
        .iter()
        .map(|(w, _)| *w)
        .collect::<Vec<_>>()
        .join("; ");
    let reason = merged
        .iter()
        .map(|(w, d)| {
            if d.is_empty() {
                w.to_string()
            } else {
                format!("{w} ({})", d.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    (what, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_thing_awaited_is_said_once_with_all_its_details() {
        let p = |what: &str, detail: &str| Pending::new(what, detail);
        let (what, reason) = clauses(&[
            p("new members of pool tcp/hi to be up", "10.0.0.1:30001"),
            p("new members of pool tcp/lo to be up", "10.0.0.1:30002"),
            p(
                "new members of pool tcp/hi to be up",
                "10.0.0.1:30001, 10.0.0.2:30001",
            ),
            p("the load balancer to apply the changes", ""),
            p("new members of pool tcp/lo to be up", ""),
        ]);
        assert_eq!(
            what,
            "new members of pool tcp/hi to be up; new members of pool tcp/lo to be up; \
             the load balancer to apply the changes"
        );
        assert_eq!(
            reason,
            "new members of pool tcp/hi to be up (10.0.0.1:30001, 10.0.0.2:30001); \
             new members of pool tcp/lo to be up (10.0.0.1:30002); \
             the load balancer to apply the changes"
        );
    }

    fn pending(cause: Cause) -> Pending {
        Pending {
            cause,
            ..Pending::new("new members of pool tcp/80 to be up", "")
        }
    }

    #[test]
    fn a_held_change_blames_the_backends_only_when_a_member_is_down() {
        let after = Duration::from_secs(306);
        let none = Duration::ZERO;
        let queued = held_message(
            after,
            "r",
            held_by(&[pending(Cause::LoadBalancer)], none, after),
        );
        assert!(
            queued.starts_with("The change has waited 306s for r: "),
            "{queued}"
        );
        assert!(
            queued.contains("the load balancer is still working through the operations queued"),
            "{queued}"
        );
        assert!(!queued.contains("backend"), "{queued}");
        let down = held_message(
            after,
            "r",
            held_by(
                &[pending(Cause::LoadBalancer), pending(Cause::MembersDown)],
                after,
                after,
            ),
        );
        assert!(down.contains("fix the backends"), "{down}");
        assert!(!down.contains("queued"), "{down}");
        // Most of the wait spent in this CCM's own queue: its budget is named, not the
        // load balancer.
        let cause = held_by(&[pending(Cause::LoadBalancer)], after / 2, after);
        assert_eq!(cause, Cause::Budget);
        let budget = held_message(after, "r", cause);
        assert!(budget.contains("this controller's queue"), "{budget}");
        assert!(budget.contains("--api-rate-limit"), "{budget}");
        assert!(
            !budget.contains("working through the operations"),
            "{budget}"
        );
        assert_eq!(
            held_by(&[pending(Cause::LoadBalancer)], after / 3, after),
            Cause::LoadBalancer
        );
    }

    #[test]
    fn a_queued_service_is_told_how_much_work_is_ahead_of_it() {
        let m = queued_message(30, 8.0, 20.0).expect("12 s away");
        assert!(
            m.starts_with(
                "Queued: about 240 requests ahead at 20/s (about 12s): 30 Services are ahead"
            ),
            "{m}"
        );
        assert!(m.contains("load balancer is not the cause"), "{m}");
        assert_eq!(
            queued_message(20, 8.0, 20.0),
            None,
            "8 s away: not worth a word"
        );
        assert_eq!(queued_message(0, 8.0, 20.0), None);
        assert_eq!(queued_message(100, 8.0, 0.0), None, "no limit, no queue");
        let one = queued_message(1, 300.0, 20.0).expect("15 s away");
        assert!(one.contains(": 1 Service is ahead"), "{one}");
    }

    #[test]
    fn a_held_change_is_warned_once_more_when_its_members_are_found_down() {
        use Cause::{Budget, LoadBalancer, MembersDown};
        assert!(warn_again(Some(Budget), MembersDown));
        assert!(!warn_again(Some(Budget), LoadBalancer));
        assert!(warn_again(Some(LoadBalancer), Budget));
        assert!(!warn_again(Some(MembersDown), Budget));
        assert!(!warn_again(Some(Budget), Budget));
        assert!(warn_again(None, LoadBalancer));
        assert!(warn_again(None, MembersDown));
        assert!(warn_again(Some(LoadBalancer), MembersDown));
        assert!(!warn_again(Some(LoadBalancer), LoadBalancer));
        assert!(!warn_again(Some(MembersDown), MembersDown));
        assert!(!warn_again(Some(MembersDown), LoadBalancer));
    }
}
