//! Trouble with the API, per endpoint class, and its end.
//!
//! A Service whose reconcile fails is retried after a delay that doubles up to
//! `--service-sync-max-retry-delay` (5 minutes). During a long outage the delays grow, and
//! without more the Service would wait out the last one after the API answers again, while
//! a listener someone deleted stays gone. So the client notes when requests of an endpoint
//! class (`servers`, `load-balancers`, ...) stop getting answers, and counts a recovery when
//! that class answers again after at least [`LONG`]; the service controller then tries its
//! failed Services at once. Short hiccups (a request or two lost among answered ones) are no
//! trouble: an answer in between ends them.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long a class must have gone without answers for its next answer to count as a
/// recovery.
pub const LONG: Duration = Duration::from_secs(30);

/// Which endpoint classes are in trouble since when, and how many recoveries there were.
#[derive(Debug)]
pub struct Trouble {
    since: Mutex<BTreeMap<String, Instant>>,
    recovered: watch::Sender<u64>,
}

impl Default for Trouble {
    fn default() -> Self {
        Trouble {
            since: Mutex::new(BTreeMap::new()),
            recovered: watch::channel(0).0,
        }
    }
}

impl Trouble {
    /// A request of `class` got no usable answer (no answer, 5xx, 429, 401, 403, not the
    /// API) at `now`.
    pub fn failed(&self, class: &str, now: Instant) {
        self.since.lock().entry(class.to_string()).or_insert(now);
    }

    /// A request of `class` got an answer at `now`; `true` when that ends a trouble of at
    /// least [`LONG`] (subscribers of [`Trouble::recoveries`] hear of it).
    pub fn answered(&self, class: &str, now: Instant) -> bool {
        let Some(from) = self.since.lock().remove(class) else {
            return false;
        };
        let long = now.duration_since(from) >= LONG;
        if long {
            self.recovered.send_modify(|n| *n += 1);
        }
        long
    }

    /// Changes once per recovery.
    pub fn recoveries(&self) -> watch::Receiver<u64> {
        self.recovered.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn only_an_answer_after_a_long_trouble_is_a_recovery() {
        let t = Trouble::default();
        let mut rx = t.recoveries();
        let t0 = Instant::now();
        // A lost request among answered ones: no trouble worth a recovery.
        t.failed("servers", t0);
        assert!(!t.answered("servers", t0 + Duration::from_secs(2)));
        // Load balancers unanswered for a minute while servers answer.
        t.failed("load-balancers", t0);
        t.failed("load-balancers", t0 + Duration::from_secs(40));
        assert!(!t.answered("servers", t0 + Duration::from_secs(50)));
        assert!(!rx.has_changed().expect("open"));
        assert!(t.answered("load-balancers", t0 + Duration::from_secs(60)));
        assert!(rx.has_changed().expect("open"));
        assert_eq!(*rx.borrow_and_update(), 1);
        // Over: the next answer is ordinary.
        assert!(!t.answered("load-balancers", t0 + Duration::from_secs(61)));
    }
}
