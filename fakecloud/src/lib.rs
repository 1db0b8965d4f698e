//! fakecloud: an in-memory fake of the cloudscale.ch API.
//!
//! It serves `/v1` as the real API does (shapes, status codes, flat error bodies, `href`s
//! pointing at itself) and an admin API under `/_fake/`. Run it as the `fakecloud` binary or
//! in-process:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let fc = fakecloud::FakeCloud::start(fakecloud::Config::for_tests()).await?;
//! println!("API at {} with token {}", fc.api_url(), fc.token());
//! fc.advance(std::time::Duration::from_secs(60)); // manual clock: time moves on demand
//! fc.shutdown().await;
//! # Ok(()) }
//! ```

pub mod admin;
pub mod api;
pub mod app;
pub mod catalogue;
pub mod clock;
pub mod config;
pub mod console;
pub mod dataplane;
pub mod error;
pub mod faults;
pub mod model;
pub mod request;
pub mod rules;
pub mod seed;
pub mod server;
pub mod state;

/// The resource modules under their former path (records, model functions).
pub mod resources {
    pub use crate::model::{floating_ips, load_balancers, networks, server_groups, servers};
}

pub use app::App;
pub use clock::{Clock, ClockMode, Timestamps};
pub use config::{Config, DEFAULT_TOKEN, Timing};
pub use error::ApiError;
pub use faults::{FaultEffect, FaultRule, Faults};
pub use rules::{ApiRules, Strictness};
pub use seed::{Seed, apply_seed, parse_seed};
pub use server::{FakeCloud, InProcess, router};
