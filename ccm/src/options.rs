//! Command-line flags and environment, named as operators of Kubernetes cloud controller
//! managers expect.

use clap::Parser;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Parses `30s`, `5m`, `1h`, `250ms` or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{s}\" is not a duration (e.g. 30s, 5m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "\"{s}\": unknown unit \"{unit}\" (use ms, s, m or h)"
            ));
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("\"{s}\" is not a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The controllers this binary runs.
pub const CONTROLLERS: &[&str] = &["cloud-node", "cloud-node-lifecycle", "service"];

#[derive(Debug, Clone, Parser)]
#[command(
    name = "cloudscale-cloud-controller-manager",
    version,
    about = "Kubernetes cloud controller manager for cloudscale.ch"
)]
pub struct Options {
    /// kubeconfig file (default: in-cluster configuration, else KUBECONFIG).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,

    /// Elect a leader on a Lease; only the leader runs controllers.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    #[arg(long, default_value = "cloud-controller-manager")]
    pub leader_elect_resource_name: String,
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,

    /// Name of this cluster, tagged on every cloud resource the CCM creates.
    #[arg(long, default_value = "kubernetes")]
    pub cluster_name: String,

    /// Converged Services are checked again this often (repairs out-of-band changes).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub service_resync_period: Duration,

    /// Services reconciled within this window share one read of the account-wide lists
    /// (load balancers, pools, listeners, monitors, floating IPs, servers); writes refresh it.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub api_read_sharing_window: Duration,

    /// How often a load balancer being changed is polled (status, member health).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub load_balancer_poll_interval: Duration,

    /// A change that waits this long for new members to come up is reported as held (a
    /// Warning Event); the members that serve stay until the new ones are up.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub load_balancer_members_timeout: Duration,

    /// A Service whose sync failed is retried after this long, doubling per further
    /// failure up to --service-sync-max-retry-delay.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub service_sync_retry_delay: Duration,
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub service_sync_max_retry_delay: Duration,

    /// Attempts per cloudscale API request (the first included) on connection errors, 5xx
    /// and 429; a create whose outcome is unknown is looked up before it is repeated.
    #[arg(long, default_value_t = 5)]
    pub api_max_attempts: u32,
    /// Backoff before the n-th retry: random up to this times 2^(n-1) (at most 10 s).
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub api_retry_base_delay: Duration,

    /// Services reconciled at the same time.
    #[arg(long, default_value_t = 2)]
    pub concurrent_service_syncs: usize,

    /// Address of the health and metrics server (plain HTTP: /healthz, /readyz, /metrics).
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// Port of the health and metrics server (0 picks a free one).
    #[arg(long, default_value_t = 10258)]
    pub secure_port: u16,

    /// Controllers to run: `*` (all), names to add, `-name` to leave out
    /// (cloud-node, cloud-node-lifecycle, service).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// File holding the API token, re-read on every request (token rotation without
    /// restart). Default: the CLOUDSCALE_ACCESS_TOKEN environment variable.
    #[arg(long)]
    pub token_file: Option<PathBuf>,

    /// How often initialized Nodes get their addresses refreshed.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub node_status_update_frequency: Duration,
    /// How often the lifecycle controller looks at every Node.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub node_monitor_period: Duration,

    /// Client-side limit of cloudscale API requests per second (burst: twice as many). Node
    /// requests go ahead of load-balancer work (an allowance of a quarter of the rate).
    #[arg(long, default_value_t = 20.0)]
    pub api_rate_limit: f64,

    /// Log format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

impl Options {
    /// Whether `name` is enabled by `--controllers`.
    pub fn controller_enabled(&self, name: &str) -> bool {
        let mut enabled = false;
        for c in &self.controllers {
            let c = c.trim();
            if c == "*" || c == name {
                enabled = true;
            } else if c.strip_prefix('-') == Some(name) {
                return false;
            }
        }
        enabled
    }

    /// Checks what clap cannot: unknown controller names, lease timing order.
    pub fn validate(&self) -> Result<(), String> {
        for c in &self.controllers {
            let name = c.trim().trim_start_matches('-');
            if name != "*" && !CONTROLLERS.contains(&name) {
                return Err(format!(
                    "--controllers: unknown controller \"{name}\" (known: {})",
                    CONTROLLERS.join(", ")
                ));
            }
        }
        if self.leader_elect && self.leader_elect_renew_deadline >= self.leader_elect_lease_duration
        {
            return Err(
                "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
                    .into(),
            );
        }
        if self.service_sync_retry_delay.is_zero()
            || self.service_sync_retry_delay > self.service_sync_max_retry_delay
        {
            return Err("--service-sync-retry-delay must be positive and at most --service-sync-max-retry-delay".into());
        }
        if self.api_max_attempts == 0 {
            return Err("--api-max-attempts must be at least 1".into());
        }
        if self.concurrent_service_syncs == 0 {
            return Err("--concurrent-service-syncs must be at least 1".into());
        }
        if !(self.api_rate_limit.is_finite() && self.api_rate_limit > 0.0) {
            return Err("--api-rate-limit must be a positive number".into());
        }
        Ok(())
    }
}

/// The API root from `CLOUDSCALE_API_URL` (default `https://api.cloudscale.ch`).
pub fn api_url(env: Option<String>) -> String {
    env.filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "https://api.cloudscale.ch".to_string())
}

/// The request timeout from `CLOUDSCALE_API_TIMEOUT` (integer seconds, default 20; anything
/// else falls back to the default, as the reference does, with a warning by the caller).
pub fn api_timeout(env: Option<String>) -> (Duration, bool) {
    match env.as_deref().map(str::trim).map(str::parse::<u64>) {
        None => (Duration::from_secs(20), true),
        Some(Ok(n)) if n > 0 => (Duration::from_secs(n), true),
        Some(_) => (Duration::from_secs(20), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("x").is_err());
    }

    #[test]
    fn controller_selection() {
        let o = Options::parse_from(["ccm", "--controllers", "*,-service"]);
        assert!(o.controller_enabled("cloud-node"));
        assert!(!o.controller_enabled("service"));
        let o = Options::parse_from(["ccm", "--controllers", "cloud-node"]);
        assert!(o.controller_enabled("cloud-node"));
        assert!(!o.controller_enabled("cloud-node-lifecycle"));
        let bad = Options::parse_from(["ccm", "--controllers", "route"]);
        assert!(bad.validate().expect_err("unknown").contains("route"));
    }

    #[test]
    fn defaults_are_the_usual_ones() {
        let o = Options::parse_from(["ccm"]);
        assert!(o.leader_elect);
        assert_eq!(o.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(o.secure_port, 10258);
        assert_eq!(o.concurrent_service_syncs, 2);
        assert!(o.validate().is_ok());
        let o = Options::parse_from(["ccm", "--leader-elect=false"]);
        assert!(!o.leader_elect);
    }

    #[test]
    fn api_environment() {
        assert_eq!(api_url(None), "https://api.cloudscale.ch");
        assert_eq!(
            api_url(Some("http://127.0.0.1:8080".into())),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            api_timeout(Some("5".into())),
            (Duration::from_secs(5), true)
        );
        assert_eq!(
            api_timeout(Some("five".into())),
            (Duration::from_secs(20), false)
        );
        assert_eq!(api_timeout(None), (Duration::from_secs(20), true));
    }
}
