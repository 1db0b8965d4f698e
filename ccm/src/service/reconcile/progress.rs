//! What the reconcile's parts (`controller.rs`, `ensure.rs`, `wait.rs`) say to each other:
//! where a reconcile left a Service, and the finalizer that holds a Service until its load
//! balancer is gone. A leaf, so that none of them imports another for these.

/// The finalizer the upstream service controller puts on a LoadBalancer Service, so that
/// its load balancer is deleted before the Service is.
pub const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

/// Where a reconcile left the Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Converged, status written; `Some`: members of a deleted Node were kept, look again
    /// then (`prepare::Prepared::kept_until`).
    Done(Option<tokio::time::Instant>),
    /// Waiting for the load balancer or for new members: look again shortly.
    Pending,
    /// The Service changed while its plan ran: plan again at once.
    Superseded,
    /// A new load balancer serves (or will, once its first members are up); its other
    /// members come once the Services queued before this one came back had their turn.
    Yielded,
}
