//! How much the CCM holds in its caches and bookkeeping, for a long run to judge whether
//! anything grows with time rather than with the cluster (`scenarios/src/sim/soak.rs`). Read
//! only: asking changes nothing the controllers do.

use parking_lot::Mutex;
use std::sync::Arc;

/// Entry counts of the CCM's caches and per-object bookkeeping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheSizes {
    /// Services in the service controller's reflector cache.
    pub services_cached: usize,
    /// Nodes in the shared reflector cache.
    pub nodes_cached: usize,
    /// Services holding each kind of the service controller's per-Service memory
    /// (`service/reconcile/state.rs`).
    pub failures: usize,
    pub waiting: usize,
    pub touched: usize,
    pub ensuring: usize,
    pub written: usize,
    /// Edits of the CCM's own writes kept for the shared snapshot (`service/cloud/shared.rs`).
    pub shared_edits: usize,
    /// Per-Node maps of the node controller (`node/controller.rs`), by Node name.
    pub node_last_sync: usize,
    pub node_initialized: usize,
    /// Event series remembered by the Event recorders (`events.rs`).
    pub event_series: usize,
}

impl CacheSizes {
    /// Every count with its name, in a fixed order (for tables and checks).
    pub fn named(&self) -> [(&'static str, usize); 11] {
        [
            ("services_cached", self.services_cached),
            ("nodes_cached", self.nodes_cached),
            ("failures", self.failures),
            ("waiting", self.waiting),
            ("touched", self.touched),
            ("ensuring", self.ensuring),
            ("written", self.written),
            ("shared_edits", self.shared_edits),
            ("node_last_sync", self.node_last_sync),
            ("node_initialized", self.node_initialized),
            ("event_series", self.event_series),
        ]
    }
}

type Part = Box<dyn Fn(&mut CacheSizes) + Send + Sync>;

/// Reads [`CacheSizes`] from a running CCM: each controller's context adds the part it
/// holds (through a weak reference, so the probe keeps nothing alive after the CCM ends).
#[derive(Default)]
pub struct Probe {
    parts: Mutex<Vec<Part>>,
}

impl Probe {
    pub fn new() -> Arc<Probe> {
        Arc::new(Probe::default())
    }

    /// Adds a part: `fill` writes its counts into the sizes.
    pub fn add(&self, fill: impl Fn(&mut CacheSizes) + Send + Sync + 'static) {
        self.parts.lock().push(Box::new(fill));
    }

    /// The sizes now (zero for the parts not there yet, or gone).
    pub fn sizes(&self) -> CacheSizes {
        let mut sizes = CacheSizes::default();
        for part in self.parts.lock().iter() {
            part(&mut sizes);
        }
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_and_a_dropped_one_counts_nothing() {
        let probe = Probe::new();
        let held = Arc::new(7usize);
        let weak = Arc::downgrade(&held);
        probe.add(move |s| {
            if let Some(n) = weak.upgrade() {
                s.failures += *n;
            }
        });
        probe.add(|s| s.event_series += 2);
        assert_eq!(probe.sizes().failures, 7);
        assert_eq!(probe.sizes().event_series, 2);
        drop(held);
        assert_eq!(probe.sizes().failures, 0);
        assert_eq!(probe.sizes().named()[10], ("event_series", 2));
    }
}
