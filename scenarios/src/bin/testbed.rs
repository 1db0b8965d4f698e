//! The testbed: fakecloud with N servers, an embedded Kubernetes API server with a simulated
//! kubelet per server (also for servers created later through fakecloud), and the
//! kube-proxy view, until Ctrl-C.

use anyhow::Context;
use clap::Parser;
use scenarios::apiserver::ApiServerConfig;
use scenarios::testbed::Cluster;
use scenarios::testbed::InProcessCcm;
use scenarios::testbed::{Testbed, TestbedConfig};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Parser)]
#[command(name = "testbed", version)]
struct Args {
    /// Servers (and Nodes) to start with.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "target/testbed/kubeconfig")]
    kubeconfig: PathBuf,
    /// Address of the embedded Kubernetes API server.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Address of fakecloud.
    #[arg(long, default_value = "127.0.0.1:0")]
    cloud_listen: SocketAddr,
    /// fakecloud's API token.
    #[arg(long, default_value = fakecloud::DEFAULT_TOKEN)]
    cloud_token: String,
    /// Virtual seconds per real second in fakecloud. The default, 10, provisions a load
    /// balancer in 6 s instead of 60 so a first Service is served within seconds; 1 gives
    /// the real API's delays. API timestamps follow the wall clock either way.
    #[arg(long, default_value_t = DEFAULT_TIME_SCALE)]
    time_scale: f64,
    /// Do not run the cloud controller manager (it runs in-process by default).
    #[arg(long)]
    without_ccm: bool,
    /// Where the in-process cloud controller manager logs, at info (`RUST_LOG` sets what
    /// goes to the terminal: warnings by default).
    #[arg(long, default_value = "target/testbed/ccm.log")]
    ccm_log: PathBuf,
}

/// The testbed's default `--time-scale`: brisk enough for a demo, slow enough that every
/// transition (provisioning, members coming up) stays visible in `kubectl describe`.
const DEFAULT_TIME_SCALE: f64 = 10.0;

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if let Err(e) = init_logging((!args.without_ccm).then_some(args.ccm_log.as_path())) {
        eprintln!("testbed: {e:#}");
        return std::process::ExitCode::FAILURE;
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("testbed: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("testbed: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Warnings (or `RUST_LOG`) to the terminal; the in-process CCM's log at info to `ccm_log`,
/// so that what it did can be read without drowning the terminal.
fn init_logging(ccm_log: Option<&Path>) -> anyhow::Result<()> {
    use tracing_subscriber::{EnvFilter, Layer, fmt, prelude::*};
    let terminal = fmt::layer()
        .with_ansi(ccm::cli::colour_wanted())
        .with_writer(std::io::stderr)
        .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")));
    let file = match ccm_log {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            let f = std::fs::File::create(path)
                .with_context(|| format!("--ccm-log: cannot write {}", path.display()))?;
            Some(
                fmt::layer()
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(f))
                    .with_filter(EnvFilter::new("ccm=info")),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(terminal)
        .with(file)
        .init();
    Ok(())
}

async fn run(args: Args) -> anyhow::Result<()> {
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        anyhow::bail!(
            "--time-scale must be a positive number, got {}",
            args.time_scale
        );
    }
    let cluster = Cluster::embedded_with(ApiServerConfig {
        listen: args.listen,
        ..ApiServerConfig::default()
    })
    .await
    .with_context(|| format!("cannot start the API server on {}", args.listen))?;
    let api_url = cluster.api_server().map(|a| a.url()).unwrap_or_default();
    let config = TestbedConfig {
        nodes: args.nodes,
        cloud: fakecloud::Config {
            listen: args.cloud_listen,
            tokens: vec![args.cloud_token.clone()],
            clock: fakecloud::ClockMode::Scaled {
                scale: args.time_scale,
            },
            ..fakecloud::Config::default()
        },
        // A server created at run time boots into a Node, as a real machine would.
        kubelets_for_new_servers: true,
        ..TestbedConfig::default()
    };
    let testbed = Testbed::start(cluster, config)
        .await
        .context("cannot start the testbed")?;
    if let Some(dir) = args
        .kubeconfig
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&args.kubeconfig, testbed.cluster.kubeconfig_yaml())
        .with_context(|| format!("cannot write {}", args.kubeconfig.display()))?;
    print_ready(&args, &testbed, &api_url);
    // The CCM runs as the ServiceAccount of deploy/config.yml, its RBAC enforced.
    let ccm_kubeconfig = args.kubeconfig.with_extension("ccm");
    std::fs::write(&ccm_kubeconfig, testbed.cluster.ccm_kubeconfig_yaml())
        .with_context(|| format!("cannot write {}", ccm_kubeconfig.display()))?;
    let (sa_namespace, sa_name) = scenarios::testbed::service_account()?;
    println!(
        "CCM kubeconfig (ServiceAccount {sa_namespace}/{sa_name}, RBAC of deploy/config.yml): {}; or a token: kubectl -n {sa_namespace} create token {sa_name}",
        ccm_kubeconfig.display()
    );
    let ccm = if args.without_ccm {
        println!("cloud controller manager: not started (--without-ccm)");
        None
    } else {
        start_ccm(&ccm_kubeconfig, &testbed, &args.ccm_log).await
    };
    println!("Ctrl-C to stop");
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    if let Some(mut ccm) = ccm {
        ccm.stop();
        if let Ok(Ok(Err(e))) =
            tokio::time::timeout(std::time::Duration::from_secs(10), &mut ccm.task).await
        {
            eprintln!("testbed: the CCM stopped with an error: {e}");
        }
    }
    Ok(())
}

/// Where everything is, and how to add a node.
fn print_ready(args: &Args, testbed: &Testbed, api_url: &str) {
    println!("testbed ready: {} nodes", testbed.kubelet_count());
    println!("Kubernetes API server: {api_url}");
    println!(
        "kubeconfig: {} (kubectl --kubeconfig {} get nodes)",
        args.kubeconfig.display(),
        args.kubeconfig.display()
    );
    println!(
        "fakecloud: {} token {}",
        testbed.cloud.base_url(),
        args.cloud_token
    );
    println!("console: {}/_fake/ui/", testbed.cloud.base_url());
    println!(
        "time scale: {} virtual seconds per second (a load balancer is provisioned in {:.1} s; --time-scale 1 for the real API's delays)",
        args.time_scale,
        fakecloud::Timing::default().lb_provision_s / args.time_scale
    );
    println!(
        "add a node: curl -X POST {}/_fake/servers -H 'content-type: application/json' -d '{{\"name\":\"node-{}\",\"private\":[{{\"network\":\"{}\"}}]}}'",
        testbed.cloud.base_url(),
        args.nodes + 1,
        scenarios::testbed::NETWORK_NAME
    );
}

/// Starts the in-process CCM and says where it serves once it runs, or why it did not
/// start (then `None`).
async fn start_ccm(kubeconfig: &Path, testbed: &Testbed, log: &Path) -> Option<InProcessCcm> {
    // With leader election, as deployed: a CCM started beside it (deploy/README.md, "Run it
    // outside the cluster") stands by instead of reconciling the same objects.
    let mut ccm = InProcessCcm::start(kubeconfig, &testbed.cloud, 20, &[]);
    loop {
        if let Some((Some(addr), _)) = ccm.started() {
            println!(
                "cloud controller manager: running in-process, health and metrics on http://{addr}; its log (info): {}",
                log.display()
            );
            println!(
                "  it holds the Lease kube-system/cloud-controller-manager: another CCM started beside it stands by (--without-ccm to run your own)"
            );
            return Some(ccm);
        }
        if ccm.task.is_finished() {
            if let Ok(Err(e)) = (&mut ccm.task).await {
                eprintln!("testbed: the CCM did not start: {e}");
            }
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
