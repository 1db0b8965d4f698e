//! What the service controller's reconciles share: clients, options, the shared caches and
//! reads, and what is remembered of each Service (`state.rs`).

use super::state::{Backoff, ServiceStates};
use crate::cloudscale::Client as Cloud;
use crate::events::Events;
use crate::metrics::Metrics;
use crate::runner;
use crate::service::cloud::apply::ApplyOptions;
use crate::service::cloud::fetch::node_view;
use crate::service::pure::map::NodeView;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a deleted Node still stands for the Services that select no other Node. A
/// kubelet restarted after its Node was deleted registers it again (uninitialized, found by
/// name) within moments; emptying the pools meanwhile queues member deletions on the load
/// balancer, which applies one write after another, and the members' return waits behind
/// them: every port down for both (the `ReregisterNode` step of `scenarios/src/sim/`). A
/// Node that stays gone loses its members when the grace ends; one whose server is gone
/// loses them at once (nothing of it serves).
pub const RETURN_GRACE: Duration = Duration::from_secs(30);

pub struct ServiceContext {
    pub kube: kube::Client,
    pub cloud: Cloud,
    pub events: Events,
    pub metrics: Arc<Metrics>,
    pub cluster_name: String,
    pub apply: ApplyOptions,
    /// When converged Services are looked at again (drift repair).
    pub resync: Resync,
    /// How failed Services are retried.
    pub retry: Backoff,
    /// What is remembered of each Service between its reconciles.
    pub states: parking_lot::Mutex<ServiceStates>,
    /// Account-wide reads shared by the Services reconciled within a short window.
    pub shared: crate::service::cloud::shared::SharedReads,
    /// The shared cache of Services (set when the controller starts).
    pub services: parking_lot::RwLock<Option<Store<Service>>>,
    /// The shared cache of Nodes (set when the controller starts).
    pub nodes: parking_lot::RwLock<Option<Store<Node>>>,
    /// Nodes deleted within [`RETURN_GRACE`] and not registered again, by name: their last
    /// view and when they went.
    pub returning: parking_lot::Mutex<BTreeMap<String, (NodeView, Instant)>>,
}

impl ServiceContext {
    /// Every Service in the controller's cache, by namespace and name (empty before the
    /// controller starts).
    pub fn services(&self) -> Vec<Arc<Service>> {
        self.services
            .read()
            .as_ref()
            .map(runner::sorted)
            .unwrap_or_default()
    }

    /// How many entries its caches and per-Service maps hold (for a long run to judge
    /// growth; `crate::sizes`).
    pub fn sizes(&self, out: &mut crate::sizes::CacheSizes) {
        out.services_cached += self.services.read().as_ref().map_or(0, |s| s.state().len());
        out.nodes_cached += self.nodes.read().as_ref().map_or(0, |s| s.state().len());
        self.states.lock().sizes(out);
        out.shared_edits += self.shared.edits_kept();
        out.event_series += self.events.series();
    }

    /// Every Node in the shared cache, as the mapping sees them, by name.
    pub fn node_views(&self) -> Vec<NodeView> {
        self.nodes
            .read()
            .as_ref()
            .map(|s| runner::sorted(s).iter().map(|n| node_view(n)).collect())
            .unwrap_or_default()
    }

    /// Records that the Node `view` was deleted now (forgetting those whose grace ended).
    pub fn node_gone(&self, view: NodeView) {
        let mut returning = self.returning.lock();
        let now = Instant::now();
        returning.retain(|_, (_, at)| now < *at + RETURN_GRACE);
        returning.insert(view.name.clone(), (view, now));
    }

    /// The Node `name` exists (again).
    pub fn node_present(&self, name: &str) {
        self.returning.lock().remove(name);
    }

    /// The Nodes deleted less than [`RETURN_GRACE`] ago, by name, each with when its grace
    /// ends.
    pub fn returning_nodes(&self) -> Vec<(NodeView, Instant)> {
        let now = Instant::now();
        let mut returning = self.returning.lock();
        returning.retain(|_, (_, at)| now < *at + RETURN_GRACE);
        returning
            .values()
            .map(|(v, at)| (v.clone(), *at + RETURN_GRACE))
            .collect()
    }
}

/// Drift repair of converged Services, every `period`, on a grid of slots of a tenth of it
/// from `origin`: Services converging at different moments are looked at again together,
/// so that they share the reads of the account-wide lists (one snapshot per slot instead of
/// one per Service), without all of them falling at once into a queue that new changes
/// wait behind.
#[derive(Debug, Clone, Copy)]
pub struct Resync {
    pub period: Duration,
    pub origin: Instant,
}

impl Resync {
    /// How long from `now` until the slot boundary at or after one period from now.
    pub fn after(&self, now: Instant) -> Duration {
        let slot = (self.period / 10).max(Duration::from_secs(1)).as_nanos();
        let due = (now + self.period).duration_since(self.origin).as_nanos();
        let aligned = due.div_ceil(slot) * slot;
        self.period + Duration::from_nanos((aligned - due) as u64)
    }
}

pub fn service_key(svc: &Service) -> String {
    format!("{}/{}", svc.namespace().unwrap_or_default(), svc.name_any())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resyncs_fall_on_slots_of_a_tenth_of_the_period() {
        let origin = Instant::now();
        let r = Resync {
            period: Duration::from_secs(300),
            origin,
        };
        let at = |s: f64| origin + Duration::from_secs_f64(s);
        // Converged at 0, 7.5 and 29.9 s: all looked at again at 330 s.
        assert_eq!(r.after(at(0.0)), Duration::from_secs(300));
        assert_eq!(at(7.5) + r.after(at(7.5)), at(330.0));
        assert_eq!(at(29.9) + r.after(at(29.9)), at(330.0));
        // Never sooner than a period, never later than a period and a slot.
        for s in [0.1, 12.0, 30.0, 31.0, 299.0] {
            let d = r.after(at(s));
            assert!(
                d >= r.period && d <= r.period + Duration::from_secs(30),
                "{s}: {d:?}"
            );
        }
        // Short periods: slots of at least a second.
        let short = Resync {
            period: Duration::from_secs(5),
            origin,
        };
        assert_eq!(at(0.2) + short.after(at(0.2)), at(6.0));
    }
}
