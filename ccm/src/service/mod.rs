//! The LoadBalancer service controller, built as pure steps: parse (Service + annotations →
//! typed, validated configuration), map (configuration + nodes → desired load balancer),
//! ownership (which load balancer is the Service's), plan (desired × actual → actions), and
//! the I/O edges: fetch and apply (cloudscale API), controller and ensure (Kubernetes).

pub mod annotations;
pub mod apply;
pub mod claims;
pub mod cloud_error;
pub mod context;
pub mod controller;
pub mod ensure;
pub mod error;
pub mod fetch;
pub mod map;
pub mod model;
pub mod ownership;
pub mod plan;
pub mod prepare;
pub mod progress;
pub mod reference;
pub mod shared;
pub mod state;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod wait;
