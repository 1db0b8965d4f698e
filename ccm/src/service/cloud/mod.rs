//! The cloud edge of the service controller: what it reads from the cloudscale.ch API (fetch,
//! and the account-wide reads shared between Services) and what it writes (apply), with
//! the edge's error type.

pub mod apply;
pub mod cloud_error;
pub mod fetch;
pub mod shared;
