//! Reads shared across Services: one snapshot of the account-wide lists (load balancers,
//! pools, listeners, monitors, floating IPs) and of the servers serves every Service
//! reconciled within `ttl`, instead of each Service listing everything again.
//!
//! Safety: any write invalidates the snapshot, and a snapshot whose fetch began before an
//! invalidation is never stored (a generation counter), so a Service never plans against a
//! state older than its own last write. A load balancer missing from a snapshot is looked up
//! directly before anything is created, so staleness can never cause a duplicate.

use super::apply::{self, ApplyError, Snapshot};
use super::map::ServerView;
use crate::cloudscale::{Client, Filter};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

type Slot<T> = Mutex<Option<(Instant, u64, Arc<T>)>>;

pub struct SharedReads {
    ttl: Duration,
    generation: AtomicU64,
    snapshot: Slot<Snapshot>,
    servers: Slot<Vec<ServerView>>,
}

impl SharedReads {
    pub fn new(ttl: Duration) -> SharedReads {
        SharedReads {
            ttl,
            generation: AtomicU64::new(0),
            snapshot: Mutex::new(None),
            servers: Mutex::new(None),
        }
    }

    /// Forgets everything read so far (call after any write).
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn fresh<T>(&self, slot: &Option<(Instant, u64, Arc<T>)>) -> Option<Arc<T>> {
        let generation = self.generation.load(Ordering::SeqCst);
        slot.as_ref()
            .filter(|(at, g, _)| *g == generation && at.elapsed() < self.ttl)
            .map(|(_, _, v)| v.clone())
    }

    /// The account-wide lists, fetched at most once per `ttl` (others wait for the fetch in
    /// flight and share it).
    pub async fn snapshot(&self, client: &Client) -> Result<Arc<Snapshot>, ApplyError> {
        let mut slot = self.snapshot.lock().await;
        if let Some(s) = self.fresh(&slot) {
            return Ok(s);
        }
        let generation = self.generation.load(Ordering::SeqCst);
        let fetched = Arc::new(Snapshot::fetch(client).await?);
        if self.generation.load(Ordering::SeqCst) == generation {
            *slot = Some((Instant::now(), generation, fetched.clone()));
        }
        Ok(fetched)
    }

    /// Every server, as mapping needs them, at most once per `ttl`.
    pub async fn servers(
        &self,
        client: &Client,
        view: impl Fn(&crate::cloudscale::Server) -> Option<ServerView>,
    ) -> Result<Arc<Vec<ServerView>>, crate::cloudscale::ClientError> {
        let mut slot = self.servers.lock().await;
        if let Some(s) = self.fresh(&slot) {
            return Ok(s);
        }
        let generation = self.generation.load(Ordering::SeqCst);
        let fetched: Arc<Vec<ServerView>> = Arc::new(
            client
                .list_servers(&Filter::all())
                .await?
                .iter()
                .filter_map(view)
                .collect(),
        );
        if self.generation.load(Ordering::SeqCst) == generation {
            *slot = Some((Instant::now(), generation, fetched.clone()));
        }
        Ok(fetched)
    }

    /// The actual state of one load balancer: from the shared snapshot (plus its member
    /// lists), or, when the snapshot does not have it, by a direct lookup, so that a stale
    /// snapshot can never make a load balancer look absent.
    pub async fn fetch(
        &self,
        client: &Client,
        name: &str,
        uuid: Option<uuid::Uuid>,
    ) -> Result<Option<(crate::cloudscale::LoadBalancer, super::model::ActualLb)>, ApplyError> {
        let snapshot = self.snapshot(client).await?;
        match apply::fetch_in(client, &snapshot, name, uuid).await? {
            Some(found) => Ok(Some(found)),
            None => apply::fetch(client, name, uuid).await,
        }
    }
}
