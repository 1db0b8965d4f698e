//! Reads shared across Services: one snapshot of the account-wide lists (load balancers,
//! pools, listeners, monitors, floating IPs), of the servers and of the subnets serves every
//! Service reconciled within `ttl`, instead of each Service listing everything again.
//!
//! Safety: the CCM's own writes are logged as [`Edit`]s, numbered, and a snapshot is
//! served with every logged edit newer than the start of its fetch applied, so a Service
//! never plans against a state that lacks its own last write, and a thousand Services
//! creating their load balancers share one read per window instead of one per write.
//! Writes no edit describes (renames, PATCHes, pool deletions, floating IP assignments,
//! tags, a failure whose effect is unknown) invalidate everything instead, and a snapshot
//! whose fetch began before an invalidation is never stored (a generation counter). Member
//! writes (a node joining or leaving) change nothing the lists hold but the load balancer's
//! status: their edit shows it `changing`. A load balancer missing from a snapshot is looked
//! up in a fresh one before anything is created, so staleness can never cause a duplicate.

use super::cloud_error::{ApplyError, api_err};
use super::fetch::{self, Edit, Found, Lookup, Snapshot};
use crate::cloudscale::{Client, Filter};
use crate::service::pure::map::ServerView;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;
use uuid::Uuid;

type Slot<T> = Mutex<Option<(Instant, u64, Arc<T>)>>;

/// How long an edit is kept for snapshots fetched before it: far longer than a fetch lasts
/// (five attempts of at most 20 s with backoff); a snapshot older than the oldest edit kept
/// is fetched again rather than patched.
const KEEP_EDITS: Duration = Duration::from_secs(300);

/// The numbered edits of the CCM's own writes.
#[derive(Default)]
struct Log {
    /// The number of the newest edit (0: none yet).
    last: u64,
    entries: VecDeque<(u64, Instant, Edit)>,
    /// The number of the newest edit dropped.
    dropped: u64,
}

impl Log {
    /// The edits after `since`, or `None` when some of them were dropped already.
    fn after(&self, since: u64) -> Option<Vec<Edit>> {
        (self.dropped <= since).then(|| {
            self.entries
                .iter()
                .filter(|(n, _, _)| *n > since)
                .map(|(_, _, e)| e.clone())
                .collect()
        })
    }
}

pub struct SharedReads {
    ttl: Duration,
    generation: AtomicU64,
    log: parking_lot::Mutex<Log>,
    /// The snapshot, with the number of the newest edit it includes.
    snapshot: Slot<(u64, Arc<Snapshot>)>,
    servers: Slot<Vec<ServerView>>,
    subnets: Slot<Vec<Uuid>>,
}

impl SharedReads {
    pub fn new(ttl: Duration) -> SharedReads {
        SharedReads {
            ttl,
            generation: AtomicU64::new(0),
            log: Default::default(),
            snapshot: Mutex::new(None),
            servers: Mutex::new(None),
            subnets: Mutex::new(None),
        }
    }

    /// How many edits are kept for snapshots fetched before them.
    pub fn edits_kept(&self) -> usize {
        self.log.lock().entries.len()
    }

    /// Forgets everything read so far (after a write no [`Edit`] describes).
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The CCM's own successful writes, as edits of the account-wide lists.
    pub fn record(&self, edits: &[Edit]) {
        let now = Instant::now();
        let mut log = self.log.lock();
        for edit in edits {
            // A plan of a dozen writes marks its load balancer `changing` a dozen times.
            if log.entries.back().is_some_and(|(_, _, e)| e == edit) {
                continue;
            }
            log.last += 1;
            let n = log.last;
            log.entries.push_back((n, now, edit.clone()));
        }
        while let Some(&(n, at, _)) = log.entries.front() {
            if now.duration_since(at) < KEEP_EDITS {
                break;
            }
            log.entries.pop_front();
            log.dropped = n;
        }
    }

    fn fresh<T>(&self, slot: &Option<(Instant, u64, Arc<T>)>) -> Option<Arc<T>> {
        let generation = self.generation.load(Ordering::SeqCst);
        slot.as_ref()
            .filter(|(at, g, _)| *g == generation && at.elapsed() < self.ttl)
            .map(|(_, _, v)| v.clone())
    }

    /// The value in `slot` if fresh, else fetched (others wait for the fetch in flight and
    /// share it), kept unless an invalidation happened meanwhile.
    async fn shared<T, E, F>(&self, slot: &Slot<T>, fetch: F) -> Result<Arc<T>, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        let mut slot = slot.lock().await;
        if let Some(s) = self.fresh(&slot) {
            return Ok(s);
        }
        let generation = self.generation.load(Ordering::SeqCst);
        let fetched = Arc::new(fetch.await?);
        if self.generation.load(Ordering::SeqCst) == generation {
            *slot = Some((Instant::now(), generation, fetched.clone()));
        }
        Ok(fetched)
    }

    /// The account-wide lists, fetched at most once per `ttl`, with the CCM's own writes
    /// since the fetch began applied.
    pub async fn snapshot(&self, client: &Client) -> Result<Arc<Snapshot>, ApplyError> {
        let started = self.log.lock().last;
        let fetched = self
            .shared(&self.snapshot, async {
                Ok::<_, ApplyError>((started, Arc::new(Snapshot::fetch(client).await?)))
            })
            .await?;
        let (since, snapshot) = &*fetched;
        let (edits, last) = {
            let log = self.log.lock();
            (log.after(*since), log.last)
        };
        let Some(edits) = edits else {
            // Older than the edits kept: read again.
            return Ok(Arc::new(Snapshot::fetch(client).await?));
        };
        if edits.is_empty() {
            return Ok(snapshot.clone());
        }
        let mut patched = (**snapshot).clone();
        for edit in &edits {
            patched.apply(edit);
        }
        let patched = Arc::new(patched);
        // The next reader takes the patched one, unless the slot moved on meanwhile; it
        // keeps the time of its fetch, so patching never extends its life.
        if let Ok(mut slot) = self.snapshot.try_lock()
            && let Some((at, generation, v)) = slot.as_ref()
            && Arc::ptr_eq(v, &fetched)
        {
            *slot = Some((*at, *generation, Arc::new((last, patched.clone()))));
        }
        Ok(patched)
    }

    /// Every server, as mapping needs them, at most once per `ttl`.
    pub async fn servers(
        &self,
        client: &Client,
        view: impl Fn(&crate::cloudscale::Server) -> Option<ServerView>,
    ) -> Result<Arc<Vec<ServerView>>, crate::cloudscale::ClientError> {
        self.shared(&self.servers, async {
            Ok(client
                .list_servers(&Filter::all())
                .await?
                .iter()
                .filter_map(view)
                .collect())
        })
        .await
    }

    /// The UUIDs of every subnet of the account, at most once per `ttl`.
    pub async fn subnets(&self, client: &Client) -> Result<Arc<Vec<Uuid>>, ApplyError> {
        self.shared(&self.subnets, async {
            Ok(client
                .list_subnets(&Filter::all())
                .await
                .map_err(api_err("list subnets"))?
                .iter()
                .map(|s| s.uuid)
                .collect())
        })
        .await
    }

    /// The Service's load balancer and the snapshot it was found in: from the shared
    /// snapshot, or, when that has none, from a fresh one, so that a stale snapshot can
    /// never make a load balancer look absent.
    pub async fn fetch(
        &self,
        client: &Client,
        lookup: &Lookup<'_>,
    ) -> Result<(Arc<Snapshot>, Found), ApplyError> {
        let snapshot = self.snapshot(client).await?;
        match fetch::fetch_in(client, &snapshot, lookup).await? {
            Found::Absent => {
                let fresh = Arc::new(Snapshot::fetch(client).await?);
                let found = fetch::fetch_in(client, &fresh, lookup).await?;
                Ok((fresh, found))
            }
            found => Ok((snapshot, found)),
        }
    }
}
