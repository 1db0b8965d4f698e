//! The LoadBalancer service controller, built as pure steps: parse (Service + annotations →
//! typed, validated configuration), map (configuration + nodes → desired load balancer), plan
//! (desired × actual → actions), and apply (the only step that does I/O).

pub mod annotations;
pub mod apply;
pub mod controller;
pub mod fixtures;
pub mod map;
pub mod model;
pub mod plan;
pub mod shared;
