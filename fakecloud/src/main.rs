//! The `fakecloud` binary: serves the fake cloudscale.ch API until SIGINT or SIGTERM.

use anyhow::{Context, bail};
use clap::Parser;
use fakecloud::{
    ApiRules, App, ClockMode, Config, DEFAULT_TOKEN, FakeCloud, Strictness, Timestamps, Timing,
    apply_seed, parse_seed,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// In-memory fake of the cloudscale.ch API, for tests and demos.
#[derive(Debug, Parser)]
#[command(name = "fakecloud", version)]
struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Read-write API token (repeatable). Without any, the default token is accepted.
    #[arg(long = "token")]
    tokens: Vec<String>,
    /// Read-only API token (repeatable): GET only, writes get 403.
    #[arg(long = "read-only-token")]
    read_only_tokens: Vec<String>,
    /// Base URL used in `href`s (default: scheme and Host of each request).
    #[arg(long)]
    public_url: Option<String>,
    /// Zone for zonal resources created without one.
    #[arg(long, default_value = "rma1")]
    default_zone: String,
    /// Seed file (JSON or YAML) with networks, servers, floating IPs, objects users, custom
    /// images, volumes, volume snapshots and routers to preload.
    #[arg(long)]
    seed: Option<PathBuf>,
    /// Virtual seconds a new load balancer stays `changing`.
    #[arg(long, default_value_t = Timing::default().lb_provision_s)]
    lb_provision_delay: f64,
    /// Virtual seconds each change of a load balancer (or anything under it) takes to apply.
    #[arg(long, default_value_t = Timing::default().lb_reconfigure_s)]
    lb_reconfigure_delay: f64,
    /// Virtual seconds before a floating IP carries traffic to its new target.
    #[arg(long, default_value_t = Timing::default().floating_ip_propagation_s)]
    floating_ip_delay: f64,
    /// Virtual seconds a server stays `changing` after create, start, stop or reboot.
    #[arg(long)]
    server_delay: Option<f64>,
    /// Virtual seconds per real second (100 makes 120 s of delays pass in 1.2 s).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// What API timestamps (`created_at`, …) show under `--time-scale`: `wall` maps virtual
    /// instants onto the wall clock (clients that compare them with their own clock accept
    /// them; delays still run scaled), `virtual` shows virtual time, which runs ahead.
    #[arg(long, default_value = "wall", value_parser = parse_timestamps)]
    timestamps: Timestamps,
    /// Virtual time moves only on `POST /_fake/clock/advance` (deterministic runs).
    #[arg(long, conflicts_with = "time_scale")]
    manual_clock: bool,
    /// Log format: `text` or `json`.
    #[arg(long, default_value = "text")]
    log_format: String,
    /// A member with the same address and port as another of its pool: `strict` refuses it
    /// (400 under `address`), `lenient` creates it.
    #[arg(long, default_value = "strict")]
    duplicate_members: String,
    /// `http` sent for a non-HTTP health monitor: `strict` ignores it (`http: null`),
    /// `lenient` stores and reports it.
    #[arg(long, default_value = "strict")]
    non_http_monitor_http: String,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fakecloud: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line, the whole chain of causes, no backtrace.
            eprintln!("fakecloud: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    init_logging(&args.log_format)?;
    let config = config_from_args(&args)?;
    let app = App::new(config);
    if let Some(path) = &args.seed {
        load_seed(&app, path, &args.default_zone)?;
    }
    let fc = FakeCloud::start_app(app)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    // Before the banner: a script that signals once it has read it must not meet the
    // default action (an exit that is not success).
    let signals = Signals::install()?;
    print_banner(&args, &fc);
    signals.wait().await;
    tracing::info!("shutting down");
    fc.shutdown().await;
    Ok(())
}

/// The server's configuration, every flag checked (the first bad one reported).
fn config_from_args(args: &Args) -> anyhow::Result<Config> {
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        bail!(
            "--time-scale must be a positive number, got {}",
            args.time_scale
        );
    }
    let timing = timing_from_args(args)?;
    if let Some(url) = &args.public_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        bail!("--public-url must start with http:// or https://, got {url}");
    }
    if !fakecloud::catalogue::zone_exists(&args.default_zone) {
        bail!(
            "--default-zone {} is not a zone (use lpg1 or rma1)",
            args.default_zone
        );
    }
    // Parsed here rather than by clap so a bad value is one line naming the flag, as for
    // the other flags.
    let strictness = |flag: &str, value: &str| {
        value
            .parse::<Strictness>()
            .map_err(|e| anyhow::anyhow!("{flag} {e}"))
    };
    let rules = ApiRules {
        duplicate_members: strictness("--duplicate-members", &args.duplicate_members)?,
        non_http_monitor_http: strictness("--non-http-monitor-http", &args.non_http_monitor_http)?,
    };
    Ok(Config {
        listen: args.listen,
        tokens: if args.tokens.is_empty() {
            vec![DEFAULT_TOKEN.to_string()]
        } else {
            args.tokens.clone()
        },
        read_only_tokens: args.read_only_tokens.clone(),
        public_url: args.public_url.clone(),
        default_zone: args.default_zone.clone(),
        clock: if args.manual_clock {
            ClockMode::Manual
        } else {
            ClockMode::Scaled {
                scale: args.time_scale,
            }
        },
        timestamps: args.timestamps,
        timing,
        rules,
        ..Config::default()
    })
}

/// The delays of the `--*-delay` flags, each a non-negative number of seconds.
fn timing_from_args(args: &Args) -> anyhow::Result<Timing> {
    let defaults = Timing::default();
    let timing = Timing {
        server_create_s: args.server_delay.unwrap_or(defaults.server_create_s),
        server_action_s: args.server_delay.unwrap_or(defaults.server_action_s),
        lb_provision_s: args.lb_provision_delay,
        lb_reconfigure_s: args.lb_reconfigure_delay,
        floating_ip_propagation_s: args.floating_ip_delay,
    };
    for (flag, v) in [
        ("--lb-provision-delay", timing.lb_provision_s),
        ("--lb-reconfigure-delay", timing.lb_reconfigure_s),
        ("--floating-ip-delay", timing.floating_ip_propagation_s),
        ("--server-delay", timing.server_create_s),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            bail!("{flag} must be a non-negative number of seconds, got {v}");
        }
    }
    Ok(timing)
}

/// Loads the `--seed` file into the store, as `POST /_fake/seed` would.
fn load_seed(app: &App, path: &Path, default_zone: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read seed file {}", path.display()))?;
    let seed = parse_seed(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let summary = app
        .write(|st, now| apply_seed(st, now, default_zone, &seed))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    // The counts as `POST /_fake/seed` answers them: kinds the seed has none of left out.
    let counts = serde_json::to_string(&summary).unwrap_or_default();
    tracing::info!(%counts, seed = %path.display(), "seed loaded");
    Ok(())
}

/// What a person starting the server needs: where it listens and how to reach it.
fn print_banner(args: &Args, fc: &FakeCloud) {
    // The first line is machine-readable: scripts wait for it to learn the port.
    println!("fakecloud listening on http://{}", fc.addr());
    if args.public_url.is_some() {
        println!("public URL (hrefs): {}", fc.base_url());
    }
    println!(
        "API base URL: {} (Go SDK: CLOUDSCALE_API_URL={})",
        fc.api_url(),
        fc.base_url()
    );
    if args.tokens.is_empty() {
        println!("token: {DEFAULT_TOKEN} (default; set your own with --token)");
    } else {
        println!(
            "tokens: {} read-write, {} read-only",
            args.tokens.len(),
            args.read_only_tokens.len()
        );
    }
    println!("admin API: {}/_fake/", fc.base_url());
    println!("console: {}/_fake/ui/", fc.base_url());
}

fn parse_timestamps(s: &str) -> Result<Timestamps, String> {
    Timestamps::parse(s).ok_or_else(|| format!("expected `wall` or `virtual`, got `{s}`"))
}

fn init_logging(format: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only for a person at a terminal: a log written to a file or a pipe stays
    // plain text; NO_COLOR (no-color.org) turns it off everywhere.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        "text" => builder.init(),
        "json" => builder.json().init(),
        other => bail!("--log-format must be text or json, got {other}"),
    }
    Ok(())
}

/// SIGTERM and SIGINT handlers, installed before they are awaited.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("cannot install SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("cannot install SIGINT handler")?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
