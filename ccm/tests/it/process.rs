//! The CCM binary's start-up errors: one clear line, exit code 2, never the token. (The
//! process with a cluster, health, metrics, leader election and SIGTERM is tested against
//! the testbed in `scenarios/tests/it/ccm_process.rs`.)

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
        (vec!["--node-monitor-period", "0s"], "--node-monitor-period"),
        (
            vec!["--service-resync-period=0ms"],
            "--service-resync-period",
        ),
        (
            vec!["--load-balancer-poll-interval=-1s"],
            "--load-balancer-poll-interval",
        ),
        (vec!["--leader-elect-lease-duration", "15"], "15s"),
        (
            vec!["--node-deletion-threshold", "2"],
            "--node-deletion-threshold",
        ),
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

#[test]
fn a_bad_api_timeout_is_refused_like_a_bad_flag() {
    for value in ["abc", "0", "1.5"] {
        let (code, _, stderr) = run_binary(
            &["--kubeconfig", "/nonexistent"],
            &[
                ("CLOUDSCALE_ACCESS_TOKEN", "t"),
                ("CLOUDSCALE_API_TIMEOUT", value),
            ],
        );
        assert_ne!(code, 0, "{value}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{value}: {stderr}");
        assert!(stderr.contains("CLOUDSCALE_API_TIMEOUT"), "{stderr}");
        assert!(
            !stderr.contains("/nonexistent"),
            "refused before the kubeconfig: {stderr}"
        );
    }
}

#[test]
fn the_help_lists_plan_and_help_works() {
    let (code, stdout, _) = run_binary(&["--help"], &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("plan"), "{stdout}");
    let (code, stdout, stderr) = run_binary(&["help"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("Usage: cloudscale-cloud-controller-manager"),
        "{stdout}"
    );
    let (code, stdout, _) = run_binary(&["plan", "--help"], &[]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("Usage: cloudscale-cloud-controller-manager plan"),
        "{stdout}"
    );
}

#[test]
fn controllers_take_the_documented_hyphen_form() {
    // The flag parses; what stops the start is the missing kubeconfig.
    for args in [
        vec![
            "--controllers",
            "-service,-cloud-node",
            "--kubeconfig",
            "/nonexistent",
        ],
        vec!["--controllers", "-service", "--kubeconfig", "/nonexistent"],
    ] {
        let (code, _, stderr) = run_binary(&args, &[("CLOUDSCALE_ACCESS_TOKEN", "t")]);
        assert_ne!(code, 0);
        assert!(stderr.contains("/nonexistent"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("unexpected argument"),
            "{args:?}: {stderr}"
        );
    }
}

/// A kubeconfig for a cluster nobody serves: the start-up gets as far as the cloud check.
fn kubeconfig() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("ccm-process-{}.yaml", uuid::Uuid::new_v4()));
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    )
    .expect("kubeconfig");
    path
}

/// The binary against a running fakecloud with the token `token` and API URL `url`: its
/// exit code and the last line on stderr (the logs come before it), which must be the only
/// line of its kind.
fn start_against(url: &str, token: &str) -> (i32, String) {
    let kc = kubeconfig();
    let kc = kc.to_string_lossy().into_owned();
    let (code, _, stderr) = run_binary(
        &[
            "--kubeconfig",
            &kc,
            "--leader-elect=false",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            "0",
        ],
        &[
            ("CLOUDSCALE_ACCESS_TOKEN", token),
            ("CLOUDSCALE_API_URL", url),
            ("CLOUDSCALE_API_TIMEOUT", "5"),
        ],
    );
    let _ = std::fs::remove_file(&kc);
    let last = stderr.trim().lines().last().unwrap_or_default().to_string();
    assert!(
        last.starts_with("cloudscale-cloud-controller-manager: "),
        "the reason comes last: {stderr}"
    );
    assert_eq!(
        stderr
            .matches("cloudscale-cloud-controller-manager: ")
            .count(),
        1,
        "{stderr}"
    );
    (code, last)
}

#[test]
fn a_wrong_api_root_or_a_refused_token_stops_the_start_with_one_line() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let fc = rt
        .block_on(fakecloud::FakeCloud::start(fakecloud::Config {
            tokens: vec!["right-token-5e1c".into()],
            ..fakecloud::Config::for_tests()
        }))
        .expect("fakecloud");
    let base = fc.base_url();
    let (code, stderr) = start_against(&format!("{base}/foo"), "right-token-5e1c");
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("{base}/foo/v1/servers")),
        "the full URL: {stderr}"
    );
    assert!(stderr.contains("CLOUDSCALE_API_URL"), "{stderr}");
    assert!(!stderr.contains("right-token-5e1c"), "{stderr}");
    let (code, stderr) = start_against(&base, "wrong-token-77aa");
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("refused the token (401)"), "{stderr}");
    assert!(!stderr.contains("wrong-token-77aa"), "{stderr}");
    drop(fc);
}
