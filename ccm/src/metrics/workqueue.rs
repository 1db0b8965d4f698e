//! The `workqueue_*` families of a controller's queue (`runner::Queue`): the queue reports
//! what happens to it here, and answers the gauges that depend on the time they are read.

use super::Histogram;
use parking_lot::Mutex;
use std::time::Duration;

/// What a queue answers when `/metrics` is read.
pub trait QueueGauges: Send + Sync {
    /// Keys due and waiting for a worker.
    fn depth(&self) -> usize;
    /// How long each reconcile in progress has run.
    fn running_for(&self) -> Vec<Duration>;
}

/// The counters and histograms of one named queue.
#[derive(Debug, Default)]
pub struct Workqueue {
    pub(super) inner: Mutex<Counts>,
}

#[derive(Debug, Default)]
pub(super) struct Counts {
    pub adds: u64,
    pub retries: u64,
    pub queued: Histogram,
    pub work: Histogram,
}

impl Workqueue {
    /// A key was put on the queue.
    pub fn added(&self) {
        self.inner.lock().adds += 1;
    }

    /// A worker took a key that had been due for `waited`.
    pub fn taken(&self, waited: Duration) {
        self.inner
            .lock()
            .queued
            .observe(super::families::WORKQUEUE_QUEUE_DURATION.buckets, waited);
    }

    /// A worker finished a key after `took`.
    pub fn done(&self, took: Duration) {
        self.inner
            .lock()
            .work
            .observe(super::families::WORKQUEUE_WORK_DURATION.buckets, took);
    }

    /// A key was scheduled again after a failure.
    pub fn retried(&self) {
        self.inner.lock().retries += 1;
    }
}
