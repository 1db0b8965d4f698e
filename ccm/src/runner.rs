//! The controllers' runtime: a work queue of object keys and a runner that reconciles them
//! with bounded concurrency, fed by watches that keep a reflector cache.
//!
//! kube-runtime's `Controller` picks among keys that are due at the same time, and among
//! reconciles that finish together, in hash-map order, which differs from run to run. This
//! runtime decides in one order only (the time a key is due, then the order it was asked
//! for), so a simulation replayed from its seed takes the same steps, and a burst of work is
//! served first come, first served. The rules are the usual ones: a key is never reconciled
//! twice at once; asking for a key that is running runs it again once it is done; asking for
//! a key that is already due earlier keeps the earlier time.

use crate::ambient::Ambient;
use crate::metrics::{Metrics, QueueGauges, Workqueue};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use kube::runtime::reflector::{self, Store};
use kube::runtime::utils::{Backoff, WatchStreamExt};
use kube::runtime::watcher;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// A key of the queue: `namespace/name` (an empty namespace for cluster-scoped objects).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub fn of<K: kube::Resource>(obj: &K) -> Key {
        let meta = obj.meta();
        Key {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }

    /// The same key as kube-runtime's cache uses.
    pub fn object_ref<K>(&self) -> reflector::ObjectRef<K>
    where
        K: kube::Resource,
        K::DynamicType: Default,
    {
        let r = reflector::ObjectRef::new(&self.name);
        if self.namespace.is_empty() {
            r
        } else {
            r.within(&self.namespace)
        }
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// (due, order asked, key): the queue in the one order it is served.
    due: BTreeSet<(Instant, u64, Key)>,
    /// When each queued key is due.
    queued: BTreeMap<Key, (Instant, u64)>,
    /// The keys being reconciled, each with the time a worker took it.
    running: BTreeMap<Key, Instant>,
    asked: u64,
    /// Keys served before the others that are due (see [`Queue::prefer`]).
    /// Each preferred key's rank: the order in which it was first preferred.
    preferred: BTreeMap<Key, u64>,
    /// The preferred keys by rank.
    ranked: BTreeSet<(u64, Key)>,
    ranks: u64,
}

/// Keys waiting to be reconciled, each at a time.
#[derive(Debug, Default)]
pub struct Queue {
    state: Mutex<State>,
    wake: Notify,
    /// Its `workqueue_*` counters, once [`Queue::count_in`] registered it.
    counts: std::sync::OnceLock<Arc<Workqueue>>,
}

impl Queue {
    /// Asks for `key` to be reconciled `after` from now (or earlier, if it already is).
    pub fn schedule(&self, key: Key, after: Duration) {
        let at = Instant::now() + after;
        {
            let mut s = self.state.lock();
            if let Some(&(t, n)) = s.queued.get(&key) {
                if t <= at {
                    return;
                }
                s.due.remove(&(t, n, key.clone()));
            } else if let Some(c) = self.counts.get() {
                c.added();
            }
            s.asked += 1;
            let n = s.asked;
            s.due.insert((at, n, key.clone()));
            s.queued.insert(key, (at, n));
        }
        self.wake.notify_one();
    }

    /// Serves `key` (`yes`) before the keys that are not preferred whenever both are due,
    /// or no longer. Among preferred keys due at once, the one first preferred goes first
    /// (its rank stays while it is preferred): the service controller prefers the Services
    /// not yet published, so in a burst each new load balancer is made to serve and
    /// published in turn (the first Services after their own few requests) before the
    /// others take their remaining members.
    pub fn prefer(&self, key: &Key, yes: bool) {
        let mut s = self.state.lock();
        if yes {
            if !s.preferred.contains_key(key) {
                s.ranks += 1;
                let rank = s.ranks;
                s.preferred.insert(key.clone(), rank);
                s.ranked.insert((rank, key.clone()));
            }
        } else if let Some(rank) = s.preferred.remove(key) {
            s.ranked.remove(&(rank, key.clone()));
        }
    }

    /// How many keys due now and not running will be taken before `key` (`None`: it is
    /// not queued, or not due yet).
    pub fn ahead_of(&self, key: &Key) -> Option<usize> {
        let now = Instant::now();
        let s = self.state.lock();
        let &(at, n) = s.queued.get(key)?;
        if at > now {
            return None;
        }
        let waiting = |k: &Key| {
            k != key
                && !s.running.contains_key(k)
                && s.queued.get(k).is_some_and(|(t, _)| *t <= now)
        };
        let ahead = match s.preferred.get(key) {
            Some(&rank) => s
                .ranked
                .range(..(rank, key.clone()))
                .filter(|(_, k)| waiting(k))
                .count(),
            None => {
                let preferred = s.ranked.iter().filter(|(_, k)| waiting(k)).count();
                let others = s
                    .due
                    .iter()
                    .take_while(|(t, m, _)| (*t, *m) < (at, n))
                    .filter(|(_, _, k)| waiting(k) && !s.preferred.contains_key(k))
                    .count();
                preferred + others
            }
        };
        Some(ahead)
    }

    /// How many keys are preferred (for a long run to judge growth).
    pub fn preferred(&self) -> usize {
        self.state.lock().preferred.len()
    }

    /// Asks for every key of `keys` now, in their order.
    pub fn schedule_all(&self, keys: impl IntoIterator<Item = Key>) {
        for k in keys {
            self.schedule(k, Duration::ZERO);
        }
    }

    /// How many keys wait.
    pub fn len(&self) -> usize {
        self.state.lock().queued.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many keys are due now and not running: the backlog (`workqueue_depth`), not
    /// the keys scheduled for a later resync.
    pub fn due_now(&self) -> usize {
        let now = Instant::now();
        let s = self.state.lock();
        s.due
            .iter()
            .take_while(|(at, _, _)| *at <= now)
            .filter(|(_, _, k)| !s.running.contains_key(k))
            .count()
    }

    /// The first key due now that is not running, marked running; else when the next one
    /// not running is due.
    fn take(&self) -> Result<Key, Option<Instant>> {
        let now = Instant::now();
        let mut s = self.state.lock();
        let preferred = s.ranked.iter().find_map(|(_, k)| {
            let &(at, n) = s.queued.get(k)?;
            (at <= now && !s.running.contains_key(k)).then(|| (at, n, k.clone()))
        });
        let first = preferred.or_else(|| {
            s.due
                .iter()
                .find(|(_, _, k)| !s.running.contains_key(k))
                .cloned()
        });
        match first {
            Some((at, n, key)) if at <= now => {
                s.due.remove(&(at, n, key.clone()));
                s.queued.remove(&key);
                s.running.insert(key.clone(), now);
                if let Some(c) = self.counts.get() {
                    c.taken(now.saturating_duration_since(at));
                }
                Ok(key)
            }
            Some((at, _, _)) => Err(Some(at)),
            None => Err(None),
        }
    }

    fn finish(&self, key: &Key) {
        let started = self.state.lock().running.remove(key);
        if let (Some(c), Some(started)) = (self.counts.get(), started) {
            c.done(started.elapsed());
        }
        self.wake.notify_one();
    }

    /// Reports this queue's `workqueue_*` series to `metrics` under `name` from now on.
    pub fn count_in(self: &Arc<Self>, name: &str, metrics: &Metrics) {
        let gauges: Weak<dyn QueueGauges> = Arc::downgrade(self) as Weak<dyn QueueGauges>;
        let _ = self.counts.set(metrics.workqueue(name, gauges));
    }

    /// A key goes back on the queue after a failed reconcile (`workqueue_retries_total`).
    pub fn note_retry(&self) {
        if let Some(c) = self.counts.get() {
            c.retried();
        }
    }
}

impl QueueGauges for Queue {
    fn depth(&self) -> usize {
        self.due_now()
    }

    fn running_for(&self) -> Vec<Duration> {
        let now = Instant::now();
        self.state
            .lock()
            .running
            .values()
            .map(|t| now.saturating_duration_since(*t))
            .collect()
    }
}

/// Reconciles the keys of `queue`, at most `concurrency` at once, until `shutdown`
/// completes; then lets the reconciles in flight finish. `reconcile` answers when to look
/// at the key again (`None`: only when asked).
pub async fn run<F, Fut>(
    queue: Arc<Queue>,
    concurrency: usize,
    shutdown: impl Future<Output = ()>,
    reconcile: F,
) where
    F: Fn(Key) -> Fut,
    Fut: Future<Output = Option<Duration>>,
{
    let concurrency = concurrency.max(1);
    let mut running = FuturesUnordered::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let mut next_due = None;
        while running.len() < concurrency {
            match queue.take() {
                Ok(key) => {
                    // Boxed: a reconcile's state is kilobytes, and every move of it
                    // (into the set, on each poll of the select below) was a copy.
                    let work = Box::pin(reconcile(key.clone()));
                    running.push(async move { (key, work.await) });
                }
                Err(at) => {
                    next_due = at;
                    break;
                }
            }
        }
        let free = running.len() < concurrency;
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some((key, again)) = running.next(), if !running.is_empty() => {
                queue.finish(&key);
                if let Some(after) = again {
                    queue.schedule(key, after);
                }
            }
            () = queue.wake.notified(), if free => {}
            () = sleep_until(next_due), if free && next_due.is_some() => {}
        }
    }
    while let Some((key, _)) = running.next().await {
        queue.finish(&key);
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Backoff of a failing watch: 0.8 s doubling to 30 s, with up to 50 % jitter drawn from
/// the [`Ambient`] (client-go's watch backoff, reproducible in a simulation).
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    ambient: Ambient,
    failures: u32,
}

impl WatchBackoff {
    pub fn new(ambient: Ambient) -> Self {
        WatchBackoff {
            ambient,
            failures: 0,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        self.failures = self.failures.saturating_add(1);
        let base = crate::cloudscale::doubling(
            self.failures,
            Duration::from_millis(800),
            Duration::from_secs(30),
        );
        Some(base.mul_f64(1.0 + 0.5 * self.ambient.unit()))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.failures = 0;
    }
}

/// What a watch tells its controller.
#[derive(Debug, Clone)]
pub enum Change<K> {
    /// The object was added, changed or deleted (its last state).
    Touched(Arc<K>),
    /// The cache holds the whole list (after the first list and after each re-list).
    Synced,
}

/// Watches `api`, keeping `writer`'s cache, and hands every change to `on_change` until the
/// stream ends (it does not: failures are retried with [`WatchBackoff`]).
pub async fn watch<K>(
    api: kube::Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    ambient: Ambient,
    mut on_change: impl FnMut(Change<K>),
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Default,
{
    let kind = K::kind(&K::DynamicType::default()).to_string();
    let stream = reflector::reflector(
        writer,
        watcher::watcher(api, config).backoff(WatchBackoff::new(ambient)),
    );
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o)) => {
                on_change(Change::Touched(Arc::new(o)));
            }
            Ok(watcher::Event::InitApply(o)) => on_change(Change::Touched(Arc::new(o))),
            Ok(watcher::Event::InitDone) => on_change(Change::Synced),
            Ok(watcher::Event::Init) => {}
            Err(e) => {
                tracing::warn!(kind = %kind, error = %crate::kube_text::WatchText(&e), "watch failed; retrying")
            }
        }
    }
}

/// One watch and its cache, shared by every controller that reads the kind: each
/// subscriber hears every change, and a subscriber that comes late first hears the cache as
/// it is (every object, then `Synced` if the cache is synced), so no controller needs a
/// watch or a LIST of its own.
pub struct Informer<K>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store: Store<K>,
    writer: Mutex<Option<reflector::store::Writer<K>>>,
    subscribers: Mutex<Vec<Subscriber<K>>>,
    synced: tokio::sync::watch::Sender<bool>,
}

type Subscriber<K> = Box<dyn FnMut(&Change<K>) + Send>;

impl<K> Informer<K>
where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Default,
{
    pub fn new() -> Arc<Informer<K>> {
        let (store, writer) = reflector::store::<K>();
        Arc::new(Informer {
            store,
            writer: Mutex::new(Some(writer)),
            subscribers: Mutex::new(Vec::new()),
            synced: tokio::sync::watch::channel(false).0,
        })
    }

    /// The cache (empty until the first list arrives).
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// Whether the cache has held the whole list at least once.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Completes once the cache holds the whole list.
    pub async fn synced(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Hands every change to `on_change` from now on, after the cache as it is.
    pub fn subscribe(&self, mut on_change: impl FnMut(&Change<K>) + Send + 'static) {
        let mut subscribers = self.subscribers.lock();
        for o in sorted(&self.store) {
            on_change(&Change::Touched(o));
        }
        if self.is_synced() {
            on_change(&Change::Synced);
        }
        subscribers.push(Box::new(on_change));
    }

    /// Runs the watch (see [`watch`]); a second call returns at once.
    pub async fn run(&self, api: kube::Api<K>, config: watcher::Config, ambient: Ambient) {
        let Some(writer) = self.writer.lock().take() else {
            return;
        };
        watch(api, config, writer, ambient, |change| {
            if matches!(change, Change::Synced) {
                self.synced.send_replace(true);
            }
            for s in self.subscribers.lock().iter_mut() {
                s(&change);
            }
        })
        .await;
    }
}

/// A cache's objects, in key order (a reflector's own order differs from run to run).
pub fn sorted<K>(store: &Store<K>) -> Vec<Arc<K>>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let mut all = store.state();
    all.sort_by_cached_key(|o| Key::of(o.as_ref()));
    all
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

    #[tokio::test(start_paused = true)]
    async fn keys_are_served_by_due_time_then_by_the_order_asked() {
        let q = Queue::default();
        q.schedule(key("c"), Duration::from_secs(1));
        q.schedule(key("b"), Duration::ZERO);
        q.schedule(key("a"), Duration::ZERO);
        assert_eq!(q.take(), Ok(key("b")));
        assert_eq!(q.take(), Ok(key("a")));
        assert!(matches!(q.take(), Err(Some(_))), "c is not due yet");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(q.take(), Ok(key("c")));
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_key_is_not_taken_again_until_it_is_done() {
        let q = Queue::default();
        q.schedule(key("a"), Duration::ZERO);
        assert_eq!(q.take(), Ok(key("a")));
        q.schedule(key("a"), Duration::ZERO);
        q.schedule(key("b"), Duration::ZERO);
        assert_eq!(q.take(), Ok(key("b")), "a runs: b goes first");
        assert_eq!(q.take(), Err(None));
        q.finish(&key("a"));
        assert_eq!(q.take(), Ok(key("a")), "asked while running: runs again");
    }

    #[tokio::test(start_paused = true)]
    async fn the_backlog_counts_keys_due_now_and_not_running() {
        let q = Queue::default();
        q.schedule(key("a"), Duration::ZERO);
        q.schedule(key("b"), Duration::ZERO);
        q.schedule(key("later"), Duration::from_secs(60));
        assert_eq!(q.due_now(), 2, "a resync a minute away is no backlog");
        assert_eq!(q.take(), Ok(key("a")));
        q.schedule(key("a"), Duration::ZERO);
        assert_eq!(q.due_now(), 1, "a runs: only b waits");
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(q.due_now(), 2, "b and later");
    }

    #[tokio::test(start_paused = true)]
    async fn a_counted_queue_reports_adds_waits_work_and_retries() {
        let metrics = Metrics::new();
        let q = Arc::new(Queue::default());
        q.count_in("service", &metrics);
        q.schedule(key("a"), Duration::ZERO);
        q.schedule(key("a"), Duration::ZERO);
        q.schedule(key("b"), Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(q.take(), Ok(key("a")));
        tokio::time::advance(Duration::from_secs(3)).await;
        let series = |name: &str| {
            metrics
                .render()
                .lines()
                .find(|l| l.starts_with(name))
                .map(|l| l.rsplit(' ').next().unwrap_or_default().to_string())
        };
        assert_eq!(
            series("workqueue_adds_total{").as_deref(),
            Some("2"),
            "a asked twice: added once"
        );
        assert_eq!(
            series("workqueue_depth{").as_deref(),
            Some("0"),
            "b is not due yet"
        );
        assert_eq!(
            series("workqueue_longest_running_processor_seconds{").as_deref(),
            Some("3")
        );
        q.finish(&key("a"));
        q.note_retry();
        let text = metrics.render();
        for line in [
            "workqueue_queue_duration_seconds_bucket{name=\"service\",le=\"1\"} 0",
            "workqueue_queue_duration_seconds_bucket{name=\"service\",le=\"10\"} 1",
            "workqueue_work_duration_seconds_sum{name=\"service\"} 3",
            "workqueue_retries_total{name=\"service\"} 1",
            "workqueue_unfinished_work_seconds{name=\"service\"} 0",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(
            series("workqueue_depth{").as_deref(),
            Some("1"),
            "b is due now"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_request_wins_over_a_later_one() {
        let q = Queue::default();
        q.schedule(key("a"), Duration::from_secs(300));
        q.schedule(key("a"), Duration::ZERO);
        q.schedule(key("a"), Duration::from_secs(60));
        assert_eq!(q.len(), 1);
        assert_eq!(q.take(), Ok(key("a")));
    }

    #[tokio::test(start_paused = true)]
    async fn preferred_keys_go_before_the_others_due_and_wait_their_time() {
        let q = Queue::default();
        q.schedule_all(["a", "b"].map(key));
        q.schedule(key("c"), Duration::from_secs(5));
        q.prefer(&key("c"), true);
        q.schedule(key("d"), Duration::ZERO);
        q.prefer(&key("d"), true);
        // d is preferred and due: before a and b; c is preferred but not due yet.
        assert_eq!(q.take(), Ok(key("d")));
        assert_eq!(q.take(), Ok(key("a")));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(q.take(), Ok(key("c")));
        assert_eq!(q.take(), Ok(key("b")));
        // No longer preferred: back in the order it came due.
        q.schedule_all(["e", "f"].map(key));
        q.prefer(&key("f"), true);
        q.prefer(&key("f"), false);
        assert_eq!(q.take(), Ok(key("e")));
        assert_eq!(q.take(), Ok(key("f")));
        assert_eq!(
            q.preferred(),
            2,
            "c and d stay preferred until told otherwise"
        );

        // Among preferred keys due together, the first preferred goes first, whenever it
        // came due: a burst's first Service comes back from its wait before the later
        // ones take their first turn.
        let q = Queue::default();
        q.prefer(&key("first"), true);
        q.schedule(key("first"), Duration::from_secs(10));
        q.prefer(&key("second"), true);
        q.schedule(key("second"), Duration::ZERO);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(q.take(), Ok(key("first")));
        assert_eq!(q.take(), Ok(key("second")));

        // Who is ahead of whom: the preferred keys due, then the others in their order.
        let q = Queue::default();
        q.schedule_all(["a", "b", "c"].map(key));
        q.prefer(&key("c"), true);
        q.schedule(key("later"), Duration::from_secs(60));
        assert_eq!(q.ahead_of(&key("c")), Some(0));
        assert_eq!(q.ahead_of(&key("a")), Some(1));
        assert_eq!(q.ahead_of(&key("b")), Some(2));
        assert_eq!(q.ahead_of(&key("later")), None, "not due yet");
        assert_eq!(q.take(), Ok(key("c")));
        assert_eq!(q.ahead_of(&key("b")), Some(1), "running keys are not ahead");
    }

    #[tokio::test(start_paused = true)]
    async fn the_runner_bounds_concurrency_and_requeues() {
        let q = Arc::new(Queue::default());
        q.schedule_all(["a", "b", "c"].map(key));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let task = {
            let (q, seen, live) = (q.clone(), seen.clone(), live.clone());
            tokio::spawn(run(
                q,
                2,
                async move {
                    let _ = stop_rx.await;
                },
                move |k| {
                    let (seen, live) = (seen.clone(), live.clone());
                    async move {
                        let n = live.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        assert!(n <= 2, "at most two at once");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        live.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        let again = (seen.lock().len() < 3).then_some(Duration::from_secs(10));
                        seen.lock().push((k.name.clone(), Instant::now()));
                        again
                    }
                },
            ))
        };
        tokio::time::sleep(Duration::from_secs(30)).await;
        let _ = stop_tx.send(());
        task.await.expect("runner");
        let names: Vec<String> = seen.lock().iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names[..3], ["a", "b", "c"]);
        assert_eq!(
            names.len(),
            6,
            "the first three asked to come back: {names:?}"
        );
    }
}
