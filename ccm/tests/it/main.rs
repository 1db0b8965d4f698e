//! The ccm crate's integration tests, one binary (one binary links the crate once instead
//! of once per file). `tests/token_logs.rs` stands apart: it captures the process's logs.

mod annotations_props;
mod api_client;
mod plan_props;
mod process;
mod readme;
mod service_apply;
mod support;
