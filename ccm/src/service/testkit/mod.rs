//! What tests and property checks of the service controller build on, compiled only for
//! tests and with the `testkit` feature (never into the CCM binary): sample load balancers
//! ([`fixtures`]), the state a desired load balancer converges to ([`converged`]), and an
//! in-memory model of the load-balancer API that carries out plans ([`lb_api`]).

mod converged;
pub mod fixtures;
pub mod lb_api;

pub use converged::converged;
