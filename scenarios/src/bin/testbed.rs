//! The testbed: fakecloud plus an embedded Kubernetes API server, until Ctrl-C.

use anyhow::Context;
use clap::Parser;
use scenarios::apiserver::{ApiServer, ApiServerConfig};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "testbed")]
struct Args {
    /// Servers (and Nodes) to start with.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "target/testbed/kubeconfig")]
    kubeconfig: PathBuf,
    /// Address of the embedded API server.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
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

async fn run(args: Args) -> anyhow::Result<()> {
    let api = ApiServer::start(ApiServerConfig {
        listen: args.listen,
        ..ApiServerConfig::default()
    })
    .await
    .with_context(|| format!("cannot listen on {}", args.listen))?;
    if let Some(dir) = args.kubeconfig.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    api.write_kubeconfig(&args.kubeconfig)
        .with_context(|| format!("cannot write {}", args.kubeconfig.display()))?;
    println!("Kubernetes API server: {}", api.url());
    println!("kubeconfig: {}", args.kubeconfig.display());
    let _ = args.nodes;
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    api.shutdown().await;
    Ok(())
}
