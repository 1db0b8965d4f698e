//! The cloudscale.ch cloud controller manager: node initialization and lifecycle, and (with
//! its own issue) load balancers for `Service` type `LoadBalancer`.

pub mod ambient;
pub mod app;
pub mod cli;
pub mod cloudscale;
pub mod events;
pub mod health;
pub mod kube_text;
pub mod leader;
pub mod metrics;
pub mod node;
pub mod options;
pub mod preview;
pub mod runner;
pub mod secret;
pub mod service;
pub mod sizes;

/// The component name in Events, the field manager and the default user agent.
pub const COMPONENT: &str = "cloudscale-cloud-controller-manager";
