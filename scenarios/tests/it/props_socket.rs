//! The case definitions of `tests/it/props.rs` on the socket testbed: the CCM over real HTTP
//! against fakecloud's scaled clock (100×) and the embedded API server, the same generator,
//! runner and properties as on the simulation's virtual clock, with a small count
//! (`PROPS_SOCKET_CASES`, 3 by default; seed `PROPS_SOCKET_SEED`, 11). Downtime figures
//! carry the scaled clock's jitter: the judgement forgives 2 virtual s (20 ms of real
//! scheduling) where the simulation forgives 0.5.

use scenarios::sim::props;
use scenarios::sim::props::Socket;
use scenarios::sim::props::{Outcome, play_on};

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_cases_hold_on_the_socket_testbed() {
    let count = env_number("PROPS_SOCKET_CASES", 3);
    let seed = env_number("PROPS_SOCKET_SEED", 11);
    for (i, case) in props::cases(seed, count).into_iter().enumerate() {
        let mut bed = Socket::start(case.nodes.len()).await;
        let mut out = Outcome::new(&case);
        play_on(&mut bed, &case, false, &mut out).await;
        let played = out.steps.iter().filter(|s| s.played).count();
        eprintln!(
            "case {i}: {played} changes played, {} checks, {} violations",
            out.checks,
            out.violations.len()
        );
        assert!(
            out.violations.is_empty(),
            "seed {seed}, case {i} on the socket testbed: {:#?}\nthe same case in the simulation: {}",
            out.violations,
            case.replay_command()
        );
        // At least the end's properties (quiet, deletion; from scratch when kept), and
        // those of every change that applied.
        assert!(
            out.checks >= 2 + played,
            "the properties were checked: {}",
            out.checks
        );
    }
}
