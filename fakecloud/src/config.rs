//! Configuration of a fakecloud instance.

use crate::clock::{ClockMode, Timestamps};
use crate::rules::ApiRules;
use std::net::SocketAddr;

/// The token accepted when no `--token` is given (printed at start-up, documented in the
/// README).
pub const DEFAULT_TOKEN: &str = "fakecloud-token";

/// Virtual durations (seconds) of the transitions fakecloud simulates.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// A new server is `changing` this long before it is `running`.
    pub server_create_s: f64,
    /// start/stop/reboot and flavor changes keep a server `changing` this long.
    pub server_action_s: f64,
    /// A new load balancer is `changing` this long before it is `running`.
    pub lb_provision_s: f64,
    /// Each write on a load balancer or anything under it keeps it `changing` this long
    /// (changes queue, one at a time); the data plane sees the change when it is over.
    pub lb_reconfigure_s: f64,
    /// A floating IP carries traffic to its new target this long after the assignment.
    pub floating_ip_propagation_s: f64,
}

impl Default for Timing {
    fn default() -> Self {
        // Calibrated against the reference CCM's call sequences: see fakecloud/MODEL.md.
        Timing {
            server_create_s: 30.0,
            server_action_s: 10.0,
            lb_provision_s: 60.0,
            lb_reconfigure_s: 10.0,
            floating_ip_propagation_s: 10.0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// Read-write tokens.
    pub tokens: Vec<String>,
    /// Tokens that may only GET.
    pub read_only_tokens: Vec<String>,
    /// Base of every `href` (e.g. `https://fake.example`); `None` takes it from the request's
    /// `Host` header, so a fake behind a port-forward still hands out reachable URLs.
    pub public_url: Option<String>,
    /// Zone used when a zonal resource is created without one.
    pub default_zone: String,
    pub clock: ClockMode,
    /// What API timestamps show under a scaled clock (wall time by default).
    pub timestamps: Timestamps,
    pub timing: Timing,
    /// How many requests the admin request log keeps (oldest dropped first).
    pub request_log_capacity: usize,
    /// Switches for undocumented API behaviour, as at start and after `/_fake/reset`
    /// (`/_fake/rules` changes them at run time).
    pub rules: ApiRules,
    /// Draw new UUIDs from this seed (the same run hands out the same UUIDs); `None`:
    /// random ones.
    pub id_seed: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            tokens: vec![DEFAULT_TOKEN.to_string()],
            read_only_tokens: Vec::new(),
            public_url: None,
            default_zone: "rma1".to_string(),
            clock: ClockMode::Scaled { scale: 1.0 },
            timestamps: Timestamps::Wall,
            timing: Timing::default(),
            request_log_capacity: 10_000,
            rules: ApiRules::default(),
            id_seed: None,
        }
    }
}

impl Config {
    /// For in-process tests: an ephemeral loopback port, token `test-token`, read-only token
    /// `read-only-token`, and a manual clock so nothing moves unless the test advances it.
    pub fn for_tests() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tokens: vec!["test-token".to_string()],
            read_only_tokens: vec!["read-only-token".to_string()],
            clock: ClockMode::Manual,
            timing: Timing {
                server_create_s: 5.0,
                server_action_s: 5.0,
                lb_provision_s: 30.0,
                ..Timing::default()
            },
            ..Config::default()
        }
    }
}
