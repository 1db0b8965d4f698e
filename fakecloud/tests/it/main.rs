//! fakecloud's integration tests, one binary (one binary links the crate once instead of
//! once per file).

mod admin;
mod ansible;
mod binary;
mod conformance;
mod conformance_custom_images;
mod conformance_objects_users;
mod conformance_routers_metrics;
mod conformance_transport;
mod conformance_volumes;
mod console;
mod dataplane;
mod faults;
mod module_graph;
mod python_cli;
mod seed_resources;
mod support;
