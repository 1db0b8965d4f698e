//! Conformance check 61: the official Python CLI (`cloudscale-cli`) completes list, create,
//! show, update and delete for servers, server groups, networks, subnets and floating IPs
//! against an in-process fakecloud, driven by `ci/cli_acceptance.py` (which also covers load
//! balancers over raw HTTP, since the CLI has none).
//!
//! Needs the CLI: `ci/test` installs it into a venv and sets `CLOUDSCALE_CLI` to its
//! `cloudscale` executable. Without that variable the test says so and passes, so a plain
//! `cargo test` works offline; CI always runs it.

use fakecloud::{ClockMode, Config, FakeCloud, Timing};
use std::path::PathBuf;
use std::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_61_python_cli_completes_crud_on_every_resource() {
    let Some(cli) = std::env::var_os("CLOUDSCALE_CLI") else {
        eprintln!(
            "check_61 skipped: set CLOUDSCALE_CLI to a cloudscale-cli executable (ci/test does)"
        );
        return;
    };
    // Real time with short delays: the CLI's --wait and the script's polling see servers
    // and load balancers go through `changing`.
    let config = Config {
        clock: ClockMode::Scaled { scale: 1.0 },
        timing: Timing {
            server_create_s: 0.2,
            server_action_s: 0.2,
            lb_provision_s: 1.0,
            lb_reconfigure_s: 0.2,
            floating_ip_propagation_s: 0.2,
        },
        ..Config::for_tests()
    };
    let fc = FakeCloud::start(config).await.expect("fakecloud starts");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ci/cli_acceptance.py");
    let base = fc.base_url();
    let token = fc.token().to_string();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .arg("--cli")
            .arg(cli)
            .args(["--base-url", &base, "--token", &token])
            .output()
    })
    .await
    .expect("join")
    .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && failures.is_empty(),
        "CLI acceptance failed ({summary}):\n{}\nstderr:\n{}",
        failures.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    // A run that checked nothing must not pass.
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed > 300, "too few checks ran: {summary}");
    fc.shutdown().await;
}
