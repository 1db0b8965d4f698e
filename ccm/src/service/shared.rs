//! Reads shared across Services: one snapshot of the account-wide lists (load balancers,
//! pools, listeners, monitors, floating IPs), of the servers and of the subnets serves every
//! Service reconciled within `ttl`, instead of each Service listing everything again.
//!
//! Safety: any write of what the lists hold invalidates the snapshot, and a snapshot whose
//! fetch began before an invalidation is never stored (a generation counter), so a Service
//! never plans against a state older than its own last write. Member writes (a node joining
//! or leaving: one per Service) change nothing the lists hold but the load balancer's
//! status: they only mark that load balancer `changing` in every snapshot fetched before
//! them, so a thousand Services gaining a member share one snapshot. A load balancer missing
//! from a snapshot is looked up in a fresh one before anything is created, so staleness can
//! never cause a duplicate.

use super::apply::{ApplyError, api_err};
use super::fetch::{self, Found, Lookup, Snapshot};
use super::map::ServerView;
use crate::cloudscale::{Client, Filter};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;
use uuid::Uuid;

type Slot<T> = Mutex<Option<(Instant, u64, Arc<T>)>>;

pub struct SharedReads {
    ttl: Duration,
    generation: AtomicU64,
    /// Member writes so far, and per load balancer the count when it was last written.
    member_writes: AtomicU64,
    written: parking_lot::Mutex<std::collections::BTreeMap<String, u64>>,
    /// The snapshot, with the member write count when its fetch began.
    snapshot: Slot<(u64, Arc<Snapshot>)>,
    servers: Slot<Vec<ServerView>>,
    subnets: Slot<Vec<Uuid>>,
}

impl SharedReads {
    pub fn new(ttl: Duration) -> SharedReads {
        SharedReads {
            ttl,
            generation: AtomicU64::new(0),
            member_writes: AtomicU64::new(0),
            written: Default::default(),
            snapshot: Mutex::new(None),
            servers: Mutex::new(None),
            subnets: Mutex::new(None),
        }
    }

    /// Forgets everything read so far (call after any write but of members).
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Members of the load balancer `lb` were written: snapshots fetched before show it
    /// `changing` (it is applying them), the rest of them stays good.
    pub fn members_written(&self, lb: &str) {
        let n = self.member_writes.fetch_add(1, Ordering::SeqCst) + 1;
        self.written.lock().insert(lb.to_string(), n);
    }

    fn fresh<T>(&self, slot: &Option<(Instant, u64, Arc<T>)>) -> Option<Arc<T>> {
        let generation = self.generation.load(Ordering::SeqCst);
        slot.as_ref()
            .filter(|(at, g, _)| *g == generation && at.elapsed() < self.ttl)
            .map(|(_, _, v)| v.clone())
    }

    /// The value in `slot` if fresh, else fetched (others wait for the fetch in flight and
    /// share it), kept unless a write happened meanwhile.
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

    /// The account-wide lists, fetched at most once per `ttl`, with the load balancers whose
    /// members were written since the fetch began shown `changing`.
    pub async fn snapshot(&self, client: &Client) -> Result<Arc<Snapshot>, ApplyError> {
        let started = self.member_writes.load(Ordering::SeqCst);
        let fetched = self
            .shared(&self.snapshot, async {
                Ok::<_, ApplyError>((started, Arc::new(Snapshot::fetch(client).await?)))
            })
            .await?;
        let (since, snapshot) = &*fetched;
        let stale: Vec<String> = self
            .written
            .lock()
            .iter()
            .filter(|(_, n)| **n > *since)
            .map(|(lb, _)| lb.clone())
            .collect();
        if stale.is_empty() {
            return Ok(snapshot.clone());
        }
        let mut marked = (**snapshot).clone();
        for lb in marked
            .load_balancers
            .iter_mut()
            .filter(|lb| stale.contains(&lb.uuid))
        {
            lb.status = crate::cloudscale::LoadBalancerStatus::Changing;
        }
        Ok(Arc::new(marked))
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
                .filter_map(|s| Uuid::parse_str(&s.uuid).ok())
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
