//! The ccm crate's integration tests, one binary (each module was a test target of its own;
//! one binary links the crate once instead of once per file).

mod annotations_props;
mod api_client;
mod plan_props;
mod process;
mod readme;
mod service_apply;
mod support;
