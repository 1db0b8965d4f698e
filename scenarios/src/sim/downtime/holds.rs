//! The periods in which faults held the CCM up (failed requests until their retry, crashes,
//! stops and cut watches, wrong cloud settings, an API server cut off, delayed requests),
//! read from the trace: the time a port may stay down on top of its change's bound.

use crate::sim::trace::Request;
use std::collections::BTreeMap;

/// The longest a failed request holds its Service up: its reconcile retries within the
/// service retry ceiling (`--service-sync-max-retry-delay`, 5 minutes) plus one chain of
/// client retries (5 attempts, backoff at most 10 s each).
pub(super) const FAILURE_HOLD_MS: u128 = 330_000;
/// The longest a crash, stop or cut watch holds the CCM up: a new instance starts (10 s in
/// the simulation) or the other takes the lease over (15 s lease, 2 s retry), fills its
/// caches and reconciles what is pending.
pub(super) const HALT_HOLD_MS: u128 = 120_000;

/// Where a failed request is retried (`any`: by any method): a POST whose answer was lost
/// is looked up first (a GET of its collection) and a PATCH read back (a GET of the
/// resource), which ends the hold when it finds the change made (else the read or the
/// repeated request holds on); any other failure holds until the request succeeds again
/// as such.
fn retry_key<'a>(r: &Request<'a>, any: bool) -> RetryKey<'a> {
    RetryKey {
        actor: r.actor,
        api: r.api,
        method: if any { "*" } else { r.method },
        path: r.bare_path(),
    }
}

/// Who retries what where ([`retry_key`]), borrowed from the trace line: the judgement
/// keys a map by it for every request of a run, so it is not formatted into a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct RetryKey<'a> {
    actor: &'a str,
    api: &'a str,
    /// The method, or `*` for any.
    method: &'a str,
    path: &'a str,
}

/// Whether a failed request can hold up load-balancer work: any cloud request, and
/// Kubernetes requests on Services and Nodes (the leader-election Lease and Events cannot).
fn holds_up(r: &Request) -> bool {
    match r.api {
        "cloud" => {
            matches!(r.status, "lost" | "429" | "401" | "403")
                || r.status.starts_with('5')
                || r.path.starts_with("/typo/")
        }
        _ => {
            (r.path.contains("/services") || r.path.contains("/nodes"))
                && (matches!(r.status, "409" | "410" | "refused") || r.status.starts_with('5'))
        }
    }
}

/// How many load-balancer writes the CCM had been retrying since before `a` (the API
/// refused them or lost their answer) and got through in `[a, b)`: a change made while
/// such a write waits for the API cannot take it back, so the load balancer applies it
/// ahead of the change's own writes, like the backlog queued before the change.
pub(super) fn carried_over(lines: &[String], a: u128, b: u128) -> u128 {
    let mut failing: BTreeMap<RetryKey, u128> = BTreeMap::new();
    let mut carried = 0;
    for line in lines {
        let Some(r) = Request::parse(line) else {
            continue;
        };
        if r.millis >= b {
            break;
        }
        if !r.by_ccm()
            || r.api != "cloud"
            || r.method == "GET"
            || !r.path.starts_with("/v1/load-balancers")
        {
            continue;
        }
        let key = retry_key(&r, false);
        if holds_up(&r) {
            failing.entry(key).or_insert(r.millis);
        } else if let Some(since) = failing.remove(&key)
            && r.status.starts_with('2')
            && since < a
            && r.millis >= a
        {
            carried += 1;
        }
    }
    carried
}

/// Periods (trace milliseconds) in which faults held the CCM up: see the comment of the
/// `downtime` module. None lasts for good: a failure holds until its retry succeeds, at most
/// [`FAILURE_HOLD_MS`] after it (a later failure starts a hold of its own), and a crash,
/// stop or cut watch until the next load-balancer write, at most [`HALT_HOLD_MS`].
pub(super) fn blocked(lines: &[String]) -> Vec<(u128, u128)> {
    let mut holds = Holds::default();
    for line in lines {
        if let Some(r) = Request::parse(line) {
            if r.by_ccm() {
                holds.request(&r);
            }
            continue;
        }
        let mut f = line.splitn(3, ' ');
        let (Some(at), Some(what)) = (f.next().and_then(|t| t.parse::<u128>().ok()), f.next())
        else {
            continue;
        };
        holds.note(at, what, f.next().unwrap_or_default());
    }
    holds.finish()
}

/// The holds [`blocked`] finds, and those still open as it reads the trace.
#[derive(Default)]
struct Holds<'a> {
    out: Vec<(u128, u128)>,
    /// Per retry key, the failures not retried with success yet.
    failed: BTreeMap<RetryKey<'a>, Vec<u128>>,
    /// Per retry key of a lost POST, when its lookup found nothing: the CCM backs off and
    /// sends it again, still held up by the fault until that request is answered.
    looked_up: BTreeMap<RetryKey<'a>, u128>,
    halted: Vec<u128>,
    /// Since when the cloud settings are wrong.
    misconfigured: Option<u128>,
    /// Since when the API server is cut off.
    kube_down: Option<u128>,
}

impl<'a> Holds<'a> {
    /// A hold from `from` ends at `at`, or `hold` after it if that is sooner.
    fn close(&mut self, from: u128, at: u128, hold: u128) {
        self.out.push((from, at.min(from + hold)));
    }

    /// A CCM's request: a failure opens a hold, a success ends those it retries.
    fn request(&mut self, r: &Request<'a>) {
        if holds_up(r) {
            // A POST whose answer was lost is looked up, a PATCH read back (a GET of
            // its collection, of the resource): any method ends the hold.
            let key = retry_key(
                r,
                matches!(r.method, "POST" | "PATCH") && r.status == "lost",
            );
            if let Some(at) = self.looked_up.remove(&retry_key(r, true)) {
                self.close(at, r.millis, FAILURE_HOLD_MS);
            }
            self.failed.entry(key).or_default().push(r.millis);
        } else if r.status.starts_with('2') {
            self.succeeded(r);
        }
    }

    fn succeeded(&mut self, r: &Request<'a>) {
        let any = retry_key(r, true);
        if r.method == "POST"
            && let Some(at) = self.looked_up.remove(&any)
        {
            self.close(at, r.millis, FAILURE_HOLD_MS);
        }
        for key in [retry_key(r, false), any] {
            let lost = key.method == "*" && self.failed.contains_key(&key);
            for from in self.failed.remove(&key).unwrap_or_default() {
                self.close(from, r.millis, FAILURE_HOLD_MS);
            }
            if lost && r.method == "GET" {
                self.looked_up.insert(key, r.millis);
            }
        }
        if r.api == "cloud" && r.method != "GET" && r.path.starts_with("/v1/load-balancers") {
            for from in std::mem::take(&mut self.halted) {
                self.close(from, r.millis, HALT_HOLD_MS);
            }
        }
    }

    /// A line the harness noted at `at`: `what` and the `rest` of it.
    fn note(&mut self, at: u128, what: &str, rest: &str) {
        match what {
            "slow" => {
                // `slow ACTOR SENT`: in flight from SENT to now.
                if let Some(sent) = rest.split(' ').nth(1).and_then(|s| s.parse().ok()) {
                    self.out.push((sent, at));
                }
            }
            "crash" => self.halted.push(at),
            // Wrong cloud settings hold every Service up while they last, and their
            // failures' backoff after.
            "misconfig" if rest.starts_with("Some") => {
                self.misconfigured.get_or_insert(at);
            }
            "misconfig" => {
                if let Some(from) = self.misconfigured.take() {
                    self.out.push((from, at + FAILURE_HOLD_MS));
                }
            }
            // The API server cut off holds every Service up until the cut ends, and the
            // failures' backoff after.
            "step" if rest.starts_with("CutKube") => {
                self.kube_down.get_or_insert(at);
            }
            "step" | "faults"
                if (rest.starts_with("ClearCloudFaults") || rest == "end")
                    && self.kube_down.is_some() =>
            {
                if let Some(from) = self.kube_down.take() {
                    self.out.push((from, at + FAILURE_HOLD_MS));
                }
            }
            "step"
                if rest.starts_with("StopLeader")
                    || rest.starts_with("CutWatches")
                    || rest.starts_with("GoneOnRewatch") =>
            {
                self.halted.push(at);
            }
            _ => {}
        }
    }

    /// Every hold, those still open at the end of the trace at their longest.
    fn finish(mut self) -> Vec<(u128, u128)> {
        for from in self.failed.into_values().flatten() {
            self.out.push((from, from + FAILURE_HOLD_MS));
        }
        for from in self.halted {
            self.out.push((from, from + HALT_HOLD_MS));
        }
        if let Some(from) = self.misconfigured.or(self.kube_down) {
            self.out.push((from, u128::MAX / 2));
        }
        self.out.sort_unstable();
        self.out
    }
}
