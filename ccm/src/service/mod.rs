//! The LoadBalancer service controller, in three layers that only call downwards:
//! - [`pure`]: parse, map, ownership and plan, with no I/O;
//! - [`cloud`]: fetch and apply against the cloudscale.ch API;
//! - [`reconcile`]: the controller and each Service's pipeline (Kubernetes).
//!
//! [`testkit`] holds what tests build on (never in the binary).

pub mod cloud;
pub mod pure;
pub mod reconcile;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
