//! What the service controller remembers of each Service between its reconciles, as one
//! record per Service with pure transitions: its failures (for the backoff), the change that
//! waits, whether it was touched since its last reconcile began, whether a change was
//! announced and not yet reported done, and the annotations this CCM last wrote on it.
//! A record that holds nothing is dropped, so the memory follows the Services, not time.

use crate::runner::Key;
use crate::service::cloud::apply::{Cause, Pending};
use crate::service::pure::model::DesiredLb;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// A failed Service is retried after `min`, doubling per further failure up to `max` (the
/// upstream service controller's 5 s and 5 min by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub min: Duration,
    pub max: Duration,
}

impl Backoff {
    /// The pause before retrying after the `failures`-th consecutive failure (1-based).
    pub fn delay(&self, failures: u32) -> Duration {
        crate::cloudscale::doubling(failures, self.min, self.max)
    }
}

/// A change in progress that waits (see [`super::progress::Progress::Pending`]).
#[derive(Debug, Clone)]
pub struct Waiting {
    /// The desired state it works towards (a different one is a new change).
    pub desired: DesiredLb,
    pub since: Instant,
    /// What it waits for (announced once).
    pub reason: String,
    /// A Warning said it is held, and what held it then (one more is said if members are
    /// found down after a Warning that blamed the load balancer's queue).
    pub warned: Option<Cause>,
    /// What it waits for, with the checks that tell when to plan again.
    pub pending: Vec<Pending>,
    /// When a whole pass last planned it (not a recheck).
    pub planned: Instant,
    /// Its ingress was published while it still waits (a new load balancer serves before
    /// it has all its members).
    pub published: bool,
    /// When it last yielded its turn to the Services queued behind it (see
    /// `progress::Progress::Yielded`), until its next reconcile.
    pub yielded: Option<Instant>,
    /// How long it waited in this CCM's queue after yielding, and its requests for the
    /// rate limit: time its change spent on this CCM's request budget, not on the load
    /// balancer.
    pub queued: Duration,
}

impl Waiting {
    /// A change that starts waiting now.
    pub fn new(desired: DesiredLb) -> Waiting {
        Waiting {
            desired,
            since: Instant::now(),
            reason: String::new(),
            warned: None,
            pending: Vec::new(),
            planned: Instant::now(),
            published: false,
            yielded: None,
            queued: Duration::ZERO,
        }
    }

    /// A reconcile begins: the time since it yielded was spent in this CCM's queue.
    pub fn resume(&mut self, now: Instant) {
        if let Some(at) = self.yielded.take() {
            self.queued += now.saturating_duration_since(at);
        }
    }
}

/// One Service's memory.
#[derive(Debug, Default)]
pub struct ServiceState {
    /// Consecutive failures, for the backoff.
    pub failures: u32,
    /// The change that waits for new members or for the load balancer to apply.
    pub waiting: Option<Waiting>,
    /// Changed, or a Node that can alter its members changed, since its last reconcile
    /// began: a waiting Service among these is planned again rather than only polled.
    pub touched: bool,
    /// Told `EnsuringLoadBalancer` and not yet `EnsuredLoadBalancer`: the pair frames each
    /// change for a user watching `kubectl describe`, however many reconciles it takes.
    pub ensuring: bool,
    /// The annotations this CCM last wrote on it, recorded before the write: the watch
    /// event of its own write is no change to reconcile for.
    pub written: Option<BTreeMap<String, String>>,
}

impl ServiceState {
    fn is_empty(&self) -> bool {
        self.failures == 0
            && self.waiting.is_none()
            && !self.touched
            && !self.ensuring
            && self.written.is_none()
    }
}

/// Every Service's memory, by key.
#[derive(Debug, Default)]
pub struct ServiceStates {
    by_key: BTreeMap<Key, ServiceState>,
}

impl ServiceStates {
    /// Applies `change` to `key`'s record (a new one if it has none), dropping the record
    /// if it then holds nothing.
    fn update<R>(&mut self, key: &Key, change: impl FnOnce(&mut ServiceState) -> R) -> R {
        let state = self.by_key.entry(key.clone()).or_default();
        let result = change(state);
        if state.is_empty() {
            self.by_key.remove(key);
        }
        result
    }

    /// The Service (or a Node that can alter its members) changed.
    pub fn touch(&mut self, key: &Key) {
        self.update(key, |s| s.touched = true);
    }

    /// Whether it was touched since the last call, which forgets it.
    pub fn take_touched(&mut self, key: &Key) -> bool {
        self.update(key, |s| std::mem::take(&mut s.touched))
    }

    /// A reconcile failed: the consecutive failures so far, this one included.
    pub fn failed(&mut self, key: &Key) -> u32 {
        self.update(key, |s| {
            s.failures = s.failures.saturating_add(1);
            s.failures
        })
    }

    /// A reconcile made progress: the backoff starts again from its minimum.
    pub fn progressed(&mut self, key: &Key) {
        self.update(key, |s| s.failures = 0);
    }

    /// The Service converged: no failure and nothing waits.
    pub fn converged(&mut self, key: &Key) {
        self.update(key, |s| {
            s.failures = 0;
            s.waiting = None;
        });
    }

    /// Its load balancer was cleaned up: nothing waits and no change is announced.
    pub fn cleaned_up(&mut self, key: &Key) {
        self.update(key, |s| {
            s.waiting = None;
            s.ensuring = false;
        });
    }

    /// The Service left the cache (deleted): what its next watch event is compared with.
    pub fn gone(&mut self, key: &Key) {
        self.update(key, |s| {
            s.touched = false;
            s.written = None;
        });
    }

    /// The change that waits, if any.
    pub fn waiting(&self, key: &Key) -> Option<&Waiting> {
        self.by_key.get(key)?.waiting.as_ref()
    }

    /// The change that waits, to update, if any.
    pub fn waiting_mut(&mut self, key: &Key) -> Option<&mut Waiting> {
        self.by_key.get_mut(key)?.waiting.as_mut()
    }

    /// The change that waits, started now towards `desired` if none waits.
    pub fn wait_for(&mut self, key: &Key, desired: &DesiredLb) -> &mut Waiting {
        self.by_key
            .entry(key.clone())
            .or_default()
            .waiting
            .get_or_insert_with(|| Waiting::new(desired.clone()))
    }

    /// A change was announced (`EnsuringLoadBalancer`).
    pub fn begin_ensuring(&mut self, key: &Key) {
        self.update(key, |s| s.ensuring = true);
    }

    /// Whether a change was announced and not yet reported done, which it now is.
    pub fn end_ensuring(&mut self, key: &Key) -> bool {
        self.update(key, |s| std::mem::take(&mut s.ensuring))
    }

    /// Records the annotations about to be written on the Service.
    pub fn wrote(&mut self, key: &Key, annotations: BTreeMap<String, String>) {
        self.update(key, |s| s.written = Some(annotations));
    }

    /// The annotations this CCM last wrote on the Service.
    pub fn written(&self, key: &Key) -> Option<&BTreeMap<String, String>> {
        self.by_key.get(key)?.written.as_ref()
    }

    /// The Services whose last reconcile failed, in key order.
    pub fn failed_keys(&self) -> Vec<Key> {
        self.by_key
            .iter()
            .filter(|(_, s)| s.failures > 0)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// How many Services hold each kind of memory (`crate::sizes`).
    pub fn sizes(&self, out: &mut crate::sizes::CacheSizes) {
        for s in self.by_key.values() {
            out.failures += usize::from(s.failures > 0);
            out.waiting += usize::from(s.waiting.is_some());
            out.touched += usize::from(s.touched);
            out.ensuring += usize::from(s.ensuring);
            out.written += usize::from(s.written.is_some());
        }
    }

    /// Whether no Service has a record.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        Key {
            namespace: "default".into(),
            name: name.into(),
        }
    }

    fn desired(name: &str) -> DesiredLb {
        let sample = crate::service::testkit::fixtures::Sample {
            subnet: uuid::Uuid::nil(),
            nodes: vec![],
        };
        DesiredLb {
            name: name.into(),
            ..sample.desired()
        }
    }

    #[test]
    fn failures_count_up_and_progress_resets_them() {
        let mut s = ServiceStates::default();
        let k = key("a");
        assert_eq!(s.failed(&k), 1);
        assert_eq!(s.failed(&k), 2);
        assert_eq!(s.failed_keys(), vec![k.clone()]);
        s.progressed(&k);
        assert!(s.failed_keys().is_empty());
        assert!(s.is_empty(), "a record holding nothing is dropped");
        assert_eq!(
            s.failed(&k),
            1,
            "the backoff starts again from its first step"
        );
    }

    #[test]
    fn a_wait_lasts_until_the_service_converges_or_is_cleaned_up() {
        let mut s = ServiceStates::default();
        let (a, b) = (key("a"), key("b"));
        s.wait_for(&a, &desired("one")).published = true;
        // The same wait is found again, whatever desired state the next call names.
        assert!(s.wait_for(&a, &desired("two")).published);
        assert_eq!(s.waiting(&a).map(|w| w.desired.name.as_str()), Some("one"));
        s.failed(&a);
        s.converged(&a);
        assert!(s.waiting(&a).is_none());
        assert!(s.is_empty());

        s.wait_for(&b, &desired("one"));
        s.begin_ensuring(&b);
        s.cleaned_up(&b);
        assert!(s.waiting(&b).is_none());
        assert!(!s.end_ensuring(&b));
        assert!(s.is_empty());
    }

    #[test]
    fn touched_and_ensuring_are_taken_once() {
        let mut s = ServiceStates::default();
        let k = key("a");
        assert!(!s.take_touched(&k));
        s.touch(&k);
        assert!(s.take_touched(&k));
        assert!(!s.take_touched(&k));
        s.begin_ensuring(&k);
        assert!(s.end_ensuring(&k));
        assert!(!s.end_ensuring(&k));
        assert!(s.is_empty());
    }

    #[test]
    fn a_deleted_service_forgets_its_touch_and_its_writes_but_not_its_wait() {
        let mut s = ServiceStates::default();
        let k = key("a");
        s.touch(&k);
        s.wrote(&k, [("k".to_string(), "v".to_string())].into());
        s.wait_for(&k, &desired("one"));
        assert_eq!(s.written(&k).map(|w| w.len()), Some(1));
        s.gone(&k);
        assert!(s.written(&k).is_none());
        assert!(!s.take_touched(&k));
        assert!(
            s.waiting(&k).is_some(),
            "its cleanup or convergence forgets the wait"
        );
        s.cleaned_up(&k);
        assert!(s.is_empty());
    }

    #[test]
    fn sizes_count_each_kind_of_memory() {
        let mut s = ServiceStates::default();
        s.failed(&key("a"));
        s.touch(&key("a"));
        s.wait_for(&key("b"), &desired("one"));
        s.begin_ensuring(&key("c"));
        s.wrote(&key("c"), BTreeMap::new());
        let mut out = crate::sizes::CacheSizes::default();
        s.sizes(&mut out);
        assert_eq!(
            (
                out.failures,
                out.waiting,
                out.touched,
                out.ensuring,
                out.written
            ),
            (1, 1, 1, 1, 1)
        );
    }

    #[test]
    fn failed_services_back_off_exponentially_up_to_the_maximum() {
        let b = Backoff {
            min: Duration::from_secs(5),
            max: Duration::from_secs(300),
        };
        let delays: Vec<u64> = (1..=9).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(b.delay(u32::MAX), b.max, "no overflow");
    }
}
