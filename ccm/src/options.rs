//! Command-line flags and environment, named as operators of Kubernetes cloud controller
//! managers expect.

use clap::Parser;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Parses a duration as Kubernetes components write them (Go's `time.ParseDuration`):
/// one or more numbers each with a unit, `ms`, `s`, `m` or `h` (`30s`, `1m30s`, `1.5h`,
/// `250ms`). A bare number is refused: it is not clear which unit was meant.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    if text.is_empty() {
        return Err("an empty duration (write e.g. 30s or 5m)".into());
    }
    if text.starts_with('-') {
        return Err(format!(
            "\"{text}\" is negative: a duration must be positive"
        ));
    }
    let mut rest = text;
    let mut secs = 0.0_f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(digits);
        let n: f64 = num
            .parse()
            .map_err(|_| format!("\"{text}\" is not a duration (write e.g. 30s, 5m or 1m30s)"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let factor = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => {
                return Err(format!(
                    "\"{text}\" has no unit: write {num}s, {num}m or {num}ms"
                ));
            }
            other => {
                return Err(format!(
                    "\"{text}\": unknown unit \"{other}\" (use ms, s, m or h)"
                ));
            }
        };
        secs += n * factor;
        rest = next;
    }
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("\"{text}\" is not a usable duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// [`parse_duration`], refusing zero: every period, delay and timeout of this CCM must be
/// positive (a zero period would turn its loop into a busy loop).
pub fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("\"{}\" is zero: it must be positive", s.trim()));
    }
    Ok(d)
}

/// A fraction from 0 to 1 (`0.55`).
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("\"{s}\" is not a number (write e.g. 0.55)"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{v} is not between 0 and 1"));
    }
    Ok(v)
}

/// A rate per second: zero or positive (`0.1`).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("\"{s}\" is not a number (write e.g. 0.1)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{v} is not a rate: it must be zero or positive"));
    }
    Ok(v)
}

/// The controllers this binary runs.
pub const CONTROLLERS: &[&str] = &["cloud-node", "cloud-node-lifecycle", "service"];

/// What the binary does besides running the controllers.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Preview the load balancer changes for a Service (writes nothing).
    Plan(PlanArgs),
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "cloudscale-cloud-controller-manager",
    version,
    about = "Kubernetes cloud controller manager for cloudscale.ch",
    long_about = "Kubernetes cloud controller manager for cloudscale.ch: without a command it runs the controllers until SIGTERM.",
    args_conflicts_with_subcommands = true
)]
pub struct Options {
    #[command(subcommand)]
    pub command: Option<Command>,

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
    #[arg(long, default_value = "15s", value_parser = positive_duration)]
    pub leader_elect_lease_duration: Duration,
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub leader_elect_renew_deadline: Duration,
    #[arg(long, default_value = "2s", value_parser = positive_duration)]
    pub leader_elect_retry_period: Duration,

    /// Name of this cluster, tagged on every cloud resource the CCM creates.
    #[arg(long, default_value = "kubernetes")]
    pub cluster_name: String,

    /// Converged Services are checked again this often (repairs out-of-band changes).
    #[arg(long, default_value = "5m", value_parser = positive_duration)]
    pub service_resync_period: Duration,

    /// Services reconciled within this window share one read of the account-wide lists
    /// (load balancers, pools, listeners, monitors, floating IPs, servers); writes refresh it.
    #[arg(long, default_value = "2s", value_parser = positive_duration)]
    pub api_read_sharing_window: Duration,

    /// How often a load balancer being changed is polled (status, member health).
    #[arg(long, default_value = "2s", value_parser = positive_duration)]
    pub load_balancer_poll_interval: Duration,

    /// A change that waits this long for new members to come up is reported as held (a
    /// Warning Event); the members that serve stay until the new ones are up.
    #[arg(long, default_value = "5m", value_parser = positive_duration)]
    pub load_balancer_members_timeout: Duration,

    /// A Service whose sync failed is retried after this long, doubling per further
    /// failure up to --service-sync-max-retry-delay.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub service_sync_retry_delay: Duration,
    #[arg(long, default_value = "5m", value_parser = positive_duration)]
    pub service_sync_max_retry_delay: Duration,

    /// Attempts per cloudscale API request (the first included) on connection errors, 5xx
    /// and 429; a create whose outcome is unknown is looked up before it is repeated.
    #[arg(long, default_value_t = 5)]
    pub api_max_attempts: u32,
    /// Backoff before the n-th retry: random up to this times 2^(n-1) (at most 10 s).
    #[arg(long, default_value = "500ms", value_parser = positive_duration)]
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
    /// (cloud-node, cloud-node-lifecycle, service); `--controllers -service` and
    /// `--controllers=-service` both work.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "*",
        allow_hyphen_values = true
    )]
    pub controllers: Vec<String>,

    /// File holding the API token, re-read on every request (token rotation without
    /// restart). Default: the CLOUDSCALE_ACCESS_TOKEN environment variable.
    #[arg(long)]
    pub token_file: Option<PathBuf>,

    /// How often initialized Nodes get their addresses refreshed.
    #[arg(long, default_value = "5m", value_parser = positive_duration)]
    pub node_status_update_frequency: Duration,
    /// How often the lifecycle controller looks at every Node.
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub node_monitor_period: Duration,
    /// Nodes deleted per second at most, their servers gone (kube-controller-manager's
    /// --node-eviction-rate); 0 never deletes a Node.
    #[arg(long, default_value = "0.1", value_parser = parse_rate)]
    pub node_deletion_rate: f64,
    /// No Node is deleted while more than this fraction of the cluster's Nodes (and at
    /// least 3) look gone (kube-controller-manager's --unhealthy-zone-threshold).
    #[arg(long, default_value = "0.55", value_parser = parse_fraction)]
    pub node_deletion_threshold: f64,

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

/// The request timeout from `CLOUDSCALE_API_TIMEOUT`: whole seconds above zero, as the
/// reference reads it; default 20 when unset or empty. Anything else is refused, like a
/// bad flag.
pub fn api_timeout(env: Option<String>) -> Result<Duration, String> {
    match env.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(crate::cloudscale::DEFAULT_TIMEOUT),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Duration::from_secs(n)),
            _ => Err(format!(
                "CLOUDSCALE_API_TIMEOUT=\"{v}\" is not a whole number of seconds above zero (e.g. 20)"
            )),
        },
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
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn a_duration_without_unit_or_not_positive_is_refused_naming_the_flag() {
        let bare = parse_duration("15").expect_err("no unit");
        assert!(bare.contains("no unit") && bare.contains("15s"), "{bare}");
        assert!(
            parse_duration("-5s")
                .expect_err("negative")
                .contains("negative")
        );
        assert!(positive_duration("0s").expect_err("zero").contains("zero"));
        assert!(positive_duration("0ms").is_err());
        assert_eq!(positive_duration("1ms"), Ok(Duration::from_millis(1)));
        for flag in [
            "--service-resync-period",
            "--node-monitor-period",
            "--node-status-update-frequency",
            "--load-balancer-poll-interval",
            "--leader-elect-lease-duration",
            "--api-read-sharing-window",
            "--api-retry-base-delay",
        ] {
            for value in ["0s", "0", "-1s"] {
                let e = Options::try_parse_from(["ccm", &format!("{flag}={value}")])
                    .expect_err(&format!("{flag} {value}"))
                    .to_string();
                assert!(e.contains(flag), "{flag} {value}: {e}");
            }
        }
        assert!(Options::try_parse_from(["ccm", "--leader-elect-lease-duration", "15"]).is_err());
    }

    #[test]
    fn deletion_guards_take_a_rate_and_a_fraction() {
        let o = Options::parse_from(["ccm"]);
        assert_eq!(o.node_deletion_rate, 0.1);
        assert_eq!(o.node_deletion_threshold, 0.55);
        assert!(Options::try_parse_from(["ccm", "--node-deletion-threshold", "1.5"]).is_err());
        assert!(Options::try_parse_from(["ccm", "--node-deletion-rate", "-1"]).is_err());
        let off = Options::parse_from(["ccm", "--node-deletion-rate", "0"]);
        assert_eq!(off.node_deletion_rate, 0.0);
    }

    #[test]
    fn controllers_take_the_hyphen_form_with_or_without_equals() {
        for argv in [
            vec!["ccm", "--controllers", "-service,-cloud-node"],
            vec!["ccm", "--controllers=-service,-cloud-node"],
        ] {
            let o = Options::try_parse_from(&argv).expect("parses");
            assert!(o.validate().is_ok(), "{argv:?}");
            assert!(!o.controller_enabled("service"), "{argv:?}");
            assert!(!o.controller_enabled("cloud-node"), "{argv:?}");
        }
        let o = Options::parse_from(["ccm", "--controllers", "*,-service"]);
        assert!(o.controller_enabled("cloud-node-lifecycle"));
    }

    #[test]
    fn plan_is_a_command_listed_in_the_help() {
        use clap::CommandFactory;
        let help = Options::command().render_help().to_string();
        assert!(help.contains("plan"), "{help}");
        let o = Options::try_parse_from(["ccm", "plan", "--service", "web"]).expect("plan");
        assert!(matches!(o.command, Some(Command::Plan(ref a)) if a.service == "web"));
        let e = Options::try_parse_from(["ccm", "help"]).expect_err("help prints");
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
        let plan_help = Options::try_parse_from(["ccm", "plan", "--help"])
            .expect_err("help")
            .to_string();
        assert!(plan_help.contains("ccm plan"), "{plan_help}");
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
        assert_eq!(api_timeout(Some("5".into())), Ok(Duration::from_secs(5)));
        for bad in ["five", "0", "-3", "1.5", "20s"] {
            let e = api_timeout(Some(bad.into())).expect_err(bad);
            assert!(
                e.contains("CLOUDSCALE_API_TIMEOUT") && e.contains(bad),
                "{e}"
            );
        }
        assert_eq!(api_timeout(None), Ok(Duration::from_secs(20)));
        assert_eq!(api_timeout(Some(" ".into())), Ok(Duration::from_secs(20)));
    }
}

/// The arguments of `plan` (a command of [`Options`]).
#[derive(Debug, Clone, clap::Args)]
pub struct PlanArgs {
    /// The Service, as NAMESPACE/NAME, or NAME in the kubeconfig context's namespace
    /// (`default` if it names none), as kubectl reads it.
    #[arg(long)]
    pub service: String,
    /// A proposed version of the Service (YAML or JSON) instead of the live one.
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// kubeconfig file (default: in-cluster configuration, else KUBECONFIG).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// File holding the API token (default: CLOUDSCALE_ACCESS_TOKEN). A read-only token is
    /// enough.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// The cluster name the running CCM was given (`--cluster-name`): it is part of the
    /// tags that mark a load balancer as a Service's.
    #[arg(long, default_value = "kubernetes")]
    pub cluster_name: String,
}
