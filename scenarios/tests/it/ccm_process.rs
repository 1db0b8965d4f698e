//! The CCM process against the testbed: health, readiness and metrics, two instances
//! under leader election, and the binary (built from `ccm::cli`, as the released one)
//! stopping cleanly on SIGTERM and releasing its lease. Start-up errors are tested in
//! `ccm/tests/it/process.rs`.

use ccm::node::metadata::is_initialized;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use scenarios::testbed::KubeletConfig;
use scenarios::testbed::TestbedConfig;
use scenarios::testbed::eventually;
use scenarios::testbed::{CcmBed as Bed, CcmBedConfig, InProcessCcm};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

/// `ccm::cli::main` as a binary of this package (`src/bin/ccm-under-test.rs`).
const BIN: &str = env!("CARGO_BIN_EXE_ccm-under-test");

async fn bed(nodes: usize) -> Bed {
    Bed::start(CcmBedConfig {
        testbed: TestbedConfig {
            nodes,
            cloud: fakecloud::Config::for_tests(),
            kubelet: KubeletConfig {
                heartbeat: Duration::from_millis(100),
                ..KubeletConfig::default()
            },
            ..TestbedConfig::default()
        },
        // Each test starts its own CCMs.
        ccm_flags: None,
        api_timeout_s: 2,
    })
    .await
}

/// A CCM in-process with the fast node monitor and `extra` flags.
fn start_ccm(bed: &Bed, extra: &[&str]) -> InProcessCcm {
    let mut flags = vec!["--node-monitor-period", "200ms"];
    flags.extend_from_slice(extra);
    InProcessCcm::start(&bed.kubeconfig, &bed.tb.cloud, 2, &flags)
}

async fn all_initialized(bed: &Bed) -> bool {
    let nodes: Api<Node> = Api::all(bed.tb.cluster.client());
    match nodes.list(&Default::default()).await {
        Ok(l) => !l.items.is_empty() && l.items.iter().all(is_initialized),
        Err(_) => false,
    }
}

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let r = reqwest::get(format!("http://{addr}{path}"))
        .await
        .expect("health server");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ccm_without_leader_election_initializes_nodes_and_serves_health_and_metrics() {
    let bed = bed(3).await;
    let mut ccm = start_ccm(&bed, &["--leader-elect=false"]);
    let (addr, _) = eventually("the health server", Duration::from_secs(10), || async {
        ccm.started()
    })
    .await;
    let addr = addr.expect("the binary's wiring serves health");
    assert_eq!(get(addr, "/healthz").await, (200, "ok".to_string()));
    eventually("nodes initialized", Duration::from_secs(20), || async {
        all_initialized(&bed).await.then_some(())
    })
    .await;
    eventually("ready", Duration::from_secs(10), || async {
        (get(addr, "/readyz").await.0 == 200).then_some(())
    })
    .await;
    let (code, text) = get(addr, "/metrics").await;
    assert_eq!(code, 200);
    for needle in [
        "cloudscale_api_requests_total{endpoint=\"/v1/servers\",method=\"GET\",code=\"200\"}",
        "cloudscale_api_request_duration_seconds_bucket",
        "cloudscale_ccm_reconcile_total{controller=\"node\",result=\"ok\"}",
        "cloudscale_ccm_api_calls_total{controller=\"node\",kind=\"read\"}",
        "workqueue_depth{name=\"node\"}",
        "workqueue_adds_total{name=\"node\"}",
        "rest_client_requests_total{code=\"200\",method=\"GET\"",
        "leader_election_master_status{name=\"cloud-controller-manager\"} 1",
        "process_resident_memory_bytes ",
        "cloudscale_ccm_build_info{version=",
    ] {
        assert!(text.contains(needle), "{needle} in:\n{text}");
    }
    // Graceful shutdown on request.
    ccm.stop();
    let done = tokio::time::timeout(Duration::from_secs(10), &mut ccm.task).await;
    assert!(matches!(done, Ok(Ok(Ok(())))), "clean stop: {done:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_only_one_acts_and_the_other_takes_over_when_it_dies() {
    let bed = bed(1).await;
    let lease = [
        "--leader-elect-lease-duration",
        "2s",
        "--leader-elect-renew-deadline",
        "1500ms",
        "--leader-elect-retry-period",
        "200ms",
    ];
    let a = start_ccm(&bed, &lease);
    let b = start_ccm(&bed, &lease);
    let (_, ma) = eventually("a started", Duration::from_secs(10), || async {
        a.started()
    })
    .await;
    let (_, mb) = eventually("b started", Duration::from_secs(10), || async {
        b.started()
    })
    .await;
    eventually("a leader", Duration::from_secs(10), || async {
        (ma.is_leader() || mb.is_leader()).then_some(())
    })
    .await;
    eventually("nodes initialized", Duration::from_secs(20), || async {
        all_initialized(&bed).await.then_some(())
    })
    .await;
    // Only one acts: the follower made no node reconciles and no API calls of its own.
    let (leader, follower, leader_task, follower_task) = if ma.is_leader() {
        (ma, mb, a, b)
    } else {
        (mb, ma, b, a)
    };
    for _ in 0..20 {
        assert!(!(leader.is_leader() && follower.is_leader()), "two leaders");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // Beyond the start-up check of the API root (one server list), nothing.
    assert_eq!(
        follower.api_requests_by_endpoint(),
        [(("/v1/servers".to_string(), "GET".to_string()), 1)].into(),
        "the follower talks to the cloud"
    );
    assert!(leader.api_request_total() > 0);
    // Kill the leader without releasing its lease.
    leader_task.task.abort();
    let killed = tokio::time::Instant::now();
    eventually("take-over", Duration::from_secs(5), || async {
        follower.is_leader().then_some(())
    })
    .await;
    let took = killed.elapsed();
    assert!(
        took <= Duration::from_millis(2_800),
        "took over after {took:?}, lease is 2 s"
    );
    // The new leader acts: a Node registered after the take-over gets initialized.
    let r = reqwest::Client::new()
        .post(format!("{}/_fake/servers", bed.tb.cloud.base_url()))
        .json(&serde_json::json!({"name": "late-node"}))
        .send()
        .await
        .expect("server");
    assert_eq!(r.status(), 201);
    let nodes: Api<Node> = Api::all(bed.tb.cluster.client());
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "late-node"},
        "spec": {"taints": [{"key": ccm::node::metadata::UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}]},
    }))
    .expect("node");
    nodes
        .create(&Default::default(), &node)
        .await
        .expect("create");
    eventually(
        "late-node initialized by the new leader",
        Duration::from_secs(10),
        || async {
            nodes
                .get("late-node")
                .await
                .ok()
                .filter(is_initialized)
                .map(|_| ())
        },
    )
    .await;
    assert!(!leader.is_leader() || leader_task.task.is_finished());
    drop(follower_task);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_binary_cleanly_and_releases_the_lease() {
    use k8s_openapi::api::coordination::v1::Lease;
    let bed = bed(1).await;
    // Its logs go to a file, as a pod's do.
    let log = std::env::temp_dir().join(format!("ccm-log-{}.txt", uuid::Uuid::new_v4()));
    /// Kills the child if the test fails before it exits.
    struct Guard(std::process::Child);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Guard(
        Command::new(BIN)
            .args([
                "--kubeconfig",
                &bed.kubeconfig.display().to_string(),
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                "0",
                "--leader-elect-lease-duration",
                "4s",
                "--leader-elect-renew-deadline",
                "3s",
                "--leader-elect-retry-period",
                "500ms",
            ])
            .env("CLOUDSCALE_ACCESS_TOKEN", bed.tb.cloud.token())
            .env("CLOUDSCALE_API_URL", bed.tb.cloud.base_url())
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start"),
    );
    let leases: Api<Lease> = Api::namespaced(bed.tb.cluster.client(), "kube-system");
    let holder = |l: Option<Lease>| {
        l.and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .unwrap_or_default()
    };
    eventually("the binary to lead", Duration::from_secs(20), || async {
        (!holder(
            leases
                .get_opt("cloud-controller-manager")
                .await
                .ok()
                .flatten(),
        )
        .is_empty())
        .then_some(())
    })
    .await;
    eventually("nodes initialized", Duration::from_secs(20), || async {
        all_initialized(&bed).await.then_some(())
    })
    .await;
    let pid = child.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = eventually("exit after SIGTERM", Duration::from_secs(15), || {
        let s = child.0.try_wait().ok().flatten();
        async move { s }
    })
    .await;
    assert!(status.success(), "exit status {status:?}");
    let lease = leases.get("cloud-controller-manager").await.expect("lease");
    assert_eq!(holder(Some(lease)), "", "the lease is released on shutdown");
    let text = std::fs::read_to_string(&log).expect("read the log");
    let _ = std::fs::remove_file(&log);
    assert!(text.contains("starting"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "no terminal colour codes in a log file: {text}"
    );
}
