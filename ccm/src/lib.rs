//! The cloudscale.ch cloud controller manager: node initialization and lifecycle, and (with
//! its own issue) load balancers for `Service` type `LoadBalancer`.

pub mod cloudscale;
pub mod leader;
pub mod metrics;
pub mod secret;
