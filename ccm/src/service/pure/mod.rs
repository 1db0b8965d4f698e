//! The pure core of the service controller (no I/O): parse (Service and annotations into a
//! typed, validated configuration), map (configuration and Nodes into the desired load
//! balancer), ownership (which load balancer is the Service's), plan (desired against actual
//! into steps), and the reference the documentation tables are generated from.

pub mod annotations;
pub mod map;
pub mod model;
pub mod ownership;
pub mod plan;
pub mod reference;
