//! The CCM binary's start-up errors: one clear line, exit code 2, never the token. (The
//! process with a cluster, health, metrics, leader election and SIGTERM is tested against
//! the testbed in `scenarios/tests/ccm_process.rs`.)

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cloudscale-cloud-controller-manager");

fn run_binary(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("CLOUDSCALE_ACCESS_TOKEN")
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the binary");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_token_exits_with_one_clear_line() {
    let (code, _, stderr) = run_binary(&["--kubeconfig", "/nonexistent"], &[]);
    assert_ne!(code, 0);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("CLOUDSCALE_ACCESS_TOKEN"), "{stderr}");
}

#[test]
fn an_unreadable_kubeconfig_exits_with_one_clear_line_without_the_token() {
    let secret = "tok-3d7f9a0c5b-never-print";
    let (code, _, stderr) = run_binary(
        &["--kubeconfig", "/nonexistent/kubeconfig"],
        &[("CLOUDSCALE_ACCESS_TOKEN", secret)],
    );
    assert_ne!(code, 0);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
    assert!(!stderr.contains(secret));
}

#[test]
fn bad_flags_exit_with_one_clear_line() {
    for (args, needle) in [
        (vec!["--no-such-flag"], "--no-such-flag"),
        (vec!["--controllers", "route"], "route"),
        (
            vec![
                "--leader-elect-lease-duration",
                "5s",
                "--leader-elect-renew-deadline",
                "10s",
            ],
            "renew-deadline",
        ),
        (vec!["--node-monitor-period", "soon"], "soon"),
        (vec!["--api-max-attempts", "0"], "--api-max-attempts"),
        (
            vec!["--service-sync-retry-delay", "10m"],
            "--service-sync-retry-delay",
        ),
    ] {
        let (code, _, stderr) = run_binary(&args, &[("CLOUDSCALE_ACCESS_TOKEN", "t")]);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
