//! A burst of Services on the CCM's production flags (20 requests/s, two Services at
//! once) and fakecloud's default delays (a load balancer provisioned in 60 s, each write
//! under it applied 10 s after the one before): each new load balancer is made to serve
//! (its listener and a first member per port) and published before any takes its other
//! members, so Services are served one after another within a few minutes instead of all
//! together once every member is in place; an ingress is never published before the load
//! balancer serves.

use super::claims::events_of;
use scenarios::sim::runtime;
use scenarios::sim::{self, Burst};
use std::time::Duration;

const SERVICES: usize = 40;
const NODES: usize = 30;

#[test]
fn a_burst_serves_the_first_services_first_and_publishes_each_when_it_serves() {
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let world = sim::production_world(26, NODES, &[]).await.expect("world");

        let mut b = Burst::create(&world, "burst-", SERVICES).await;
        assert!(
            b.run_until_published(&world, Duration::from_secs(900))
                .await,
            "every Service is published within 15 minutes: {} of {SERVICES}",
            b.ingress.len()
        );
        let mut waited = Duration::ZERO;
        while !sim::complete(&world, SERVICES * NODES) && waited < Duration::from_secs(3600) {
            world.run_for(Duration::from_secs(1)).await;
            waited += Duration::from_secs(1);
        }
        let complete = b.started.elapsed().as_secs_f64();
        assert!(
            sim::complete(&world, SERVICES * NODES),
            "every member is in place within an hour"
        );
        let [first, median, _, last] = sim::quantiles(&b.ingress_times()).expect("times");
        let report = format!(
            "ingress {}; every member in place after {complete:.0} s",
            sim::spread(&b.ingress_times())
        );
        // Provisioning (60 s), then the pool, monitor, listener and first member applied one
        // after another (10 s each) and the member's first checks: the first Service is
        // served after its own writes, not after everyone's.
        assert!(first <= 120.0, "{report}");
        // Before: every ingress came once all members were in place (first 404 s, median
        // 441 s, last 480 s, every member after 476 s).
        assert!(first <= 0.25 * complete, "{report}");
        assert!(median <= 0.5 * complete, "{report}");
        assert!(last <= 0.5 * complete, "{report}");
        // Taking the members after publishing costs the whole burst no more than before.
        assert!(complete <= 500.0, "{report}");

        // The last Services created are told that this CCM's own budget holds them, and
        // how much is ahead; the first is not.
        let queued = |name: &str| {
            events_of(&world, "default", name)
                .into_iter()
                .filter(|(_, reason, _)| reason == "Queued")
                .map(|(_, _, message)| message)
                .collect::<Vec<_>>()
        };
        let last = format!("burst-{}", SERVICES - 1);
        let told = queued(&last);
        assert!(
            told.iter()
                .any(|m| m.starts_with("Queued: about ") && m.contains(" requests ahead at 20/s")),
            "{last}: {told:?}"
        );
        assert_eq!(queued("burst-0"), Vec::<String>::new());

        // Published when it serves, not before: the oracle finds every port of every
        // address answering at or before the ingress was seen (sampled each second).
        let served = b.first_served(&world);
        assert_eq!(served.len(), SERVICES, "every load balancer served");
        for (name, at) in &b.ingress {
            let from = served[name];
            assert!(
                from <= at.as_secs_f64(),
                "{name}: ingress seen at {:.0} s, served only from {from:.1} s",
                at.as_secs_f64()
            );
        }
    });
}

/// With a small request budget, a published Service's other members wait in this CCM's
/// queue behind the Services not yet served: the Warning of its held change names this
/// CCM's queue and budget, not the load balancer's queue or the backends.
#[test]
fn a_change_held_by_this_ccms_budget_says_so() {
    let rt = runtime().expect("runtime");
    rt.block_on(async {
        let flags = [
            "--api-rate-limit",
            "1",
            "--load-balancer-members-timeout",
            "60s",
        ];
        let world = sim::production_world(27, 10, &flags).await.expect("world");
        let mut b = Burst::create(&world, "slow-", 20).await;
        assert!(
            b.run_until_published(&world, Duration::from_secs(3600))
                .await,
            "published within an hour: {} of 20",
            b.ingress.len()
        );
        let mut waited = Duration::ZERO;
        while !sim::complete(&world, 20 * 10) && waited < Duration::from_secs(3600) {
            world.run_for(Duration::from_secs(5)).await;
            waited += Duration::from_secs(5);
        }
        let held: Vec<String> = (0..20)
            .flat_map(|i| events_of(&world, "default", &format!("slow-{i}")))
            .filter(|(_, reason, _)| reason == "ChangeHeld")
            .map(|(_, _, message)| message)
            .collect();
        assert!(
            held.iter().any(|m| m.contains("in this controller's queue")
                && m.contains("--api-rate-limit")),
            "{held:#?}"
        );
        assert!(
            held.iter().all(|m| !m.contains("fix the backends")),
            "no backend is down: {held:#?}"
        );
    });
}
