//! Node initialization and lifecycle end to end: the CCM's node controllers against fakecloud
//! and the embedded Kubernetes API server with simulated kubelets.

use ccm::cloudscale::{Client, ClientConfig, RetryPolicy};
use ccm::events::Events;
use ccm::metrics::Metrics;
use ccm::node::ServerDirectory;
use ccm::node::controller::{self, NodeContext};
use ccm::node::lifecycle::{self, LifecycleContext};
use ccm::node::metadata::is_initialized;
use ccm::node::metadata::{SHUTDOWN_TAINT, UNINITIALIZED_TAINT};
use ccm::runner::Informer;
use ccm::secret::{Token, TokenSource};
use fakecloud::{FaultEffect, FaultRule};
use k8s_openapi::api::core::v1::{Event, Node};
use kube::api::{Api, ListParams};
use scenarios::testbed::Cluster;
use scenarios::testbed::KubeletConfig;
use scenarios::testbed::{Testbed, TestbedConfig};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::oneshot;

async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    scenarios::testbed::eventually(what, Duration::from_secs(20), check).await
}

/// Everything any test logged, to prove tokens never appear in logs.
fn log_buffer() -> Arc<Mutex<Vec<u8>>> {
    static BUF: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    BUF.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = buf.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter("debug,hyper=info,h2=info,rustls=info,tower=info")
            .with_writer(move || LogWriter(writer.clone()))
            .try_init();
        buf
    })
    .clone()
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(b);
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs_contain(needle: &str) -> bool {
    let buf = log_buffer();
    let text = buf
        .lock()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    text.contains(needle)
}

struct Harness {
    tb: Testbed,
    client: Client,
    metrics: Arc<Metrics>,
    stop: Vec<oneshot::Sender<()>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        for s in self.stop.drain(..) {
            let _ = s.send(());
        }
    }
}

fn cloud_config(tokens: &[&str]) -> fakecloud::Config {
    fakecloud::Config {
        tokens: tokens.iter().map(|t| t.to_string()).collect(),
        timing: fakecloud::Timing {
            server_create_s: 1.0,
            server_action_s: 1.0,
            ..fakecloud::Timing::default()
        },
        ..fakecloud::Config::for_tests()
    }
}

async fn harness_with(nodes: usize, cloud: fakecloud::Config, token: TokenSource) -> Harness {
    log_buffer();
    let cluster = Cluster::embedded().await.expect("cluster");
    let tb = Testbed::start(
        cluster,
        TestbedConfig {
            nodes,
            cloud,
            kubelet: KubeletConfig {
                heartbeat: Duration::from_millis(100),
                ..KubeletConfig::default()
            },
            proxy_interval: Duration::from_millis(200),
            ..TestbedConfig::default()
        },
    )
    .await
    .expect("testbed");
    let metrics = Arc::new(Metrics::new());
    let client = Client::new(ClientConfig {
        timeout: Duration::from_millis(500),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
            max_retry_after: Duration::from_millis(200),
            settle_before_lookup: Duration::from_millis(50),
        },
        metrics: Some(metrics.clone()),
        ..ClientConfig::new(tb.cloud.base_url(), Arc::new(token))
    })
    .expect("client");
    let mut h = Harness {
        tb,
        client,
        metrics,
        stop: Vec::new(),
    };
    h.start_controllers();
    h
}

async fn harness(nodes: usize) -> Harness {
    harness_with(
        nodes,
        cloud_config(&["test-token"]),
        TokenSource::Static(Token::new("test-token").expect("token")),
    )
    .await
}

impl Harness {
    fn start_controllers(&mut self) {
        let client = self.client.clone();
        self.start_controllers_with(client);
    }

    /// Stops the controllers, as a CCM that exits.
    fn stop_controllers(&mut self) {
        for s in self.stop.drain(..) {
            let _ = s.send(());
        }
    }

    /// Starts the node controllers on `client`'s account.
    fn start_controllers_with(&mut self, client: Client) {
        let kube = self.tb.cluster.ccm_client();
        let dir = Arc::new(client);
        let events = Events::new(kube.clone(), Some("test".into()), Default::default());
        let (tx1, rx1) = oneshot::channel::<()>();
        let ctx = Arc::new(NodeContext {
            client: kube.clone(),
            directory: dir.clone(),
            events: events.clone(),
            metrics: self.metrics.clone(),
            refresh: Duration::from_millis(300),
            retry: Duration::from_millis(200),
            last_sync: Default::default(),
            initialized_from: Default::default(),
        });
        // One shared Node cache for both controllers, as the CCM runs them.
        let nodes = Informer::<Node>::new();
        let (tx0, rx0) = oneshot::channel::<()>();
        tokio::spawn({
            let (nodes, kube) = (nodes.clone(), kube.clone());
            async move {
                tokio::select! {
                    () = nodes.run(Api::all(kube), Default::default(), Default::default()) => {}
                    _ = rx0 => {}
                }
            }
        });
        tokio::spawn(controller::run(ctx, nodes.clone(), async move {
            let _ = rx1.await;
        }));
        let (tx2, rx2) = oneshot::channel::<()>();
        let lctx = Arc::new(LifecycleContext {
            recheck: Duration::from_millis(50),
            ..LifecycleContext::new(
                kube,
                dir,
                events,
                self.metrics.clone(),
                Duration::from_millis(100),
            )
        });
        tokio::spawn(lifecycle::run(lctx, nodes, async move {
            let _ = rx2.await;
        }));
        self.stop.push(tx0);
        self.stop.push(tx1);
        self.stop.push(tx2);
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.tb.cluster.client())
    }

    async fn server_action(&self, node: &str, action: &str) {
        let server = self.tb.server_of(node).expect("server");
        let http = reqwest::Client::new();
        let (method, url) = match action {
            "delete" => (
                reqwest::Method::DELETE,
                format!("{}/servers/{server}", self.tb.cloud.api_url()),
            ),
            a => (
                reqwest::Method::POST,
                format!("{}/servers/{server}/{a}", self.tb.cloud.api_url()),
            ),
        };
        let token = self.tb.cloud.token().to_string();
        let r = http
            .request(method, url)
            .bearer_auth(token)
            .send()
            .await
            .expect("action");
        assert_eq!(r.status(), 204, "{action}");
        // Let the transition finish in fakecloud's (manual) clock.
        self.tb.cloud.advance(Duration::from_secs(5));
    }

    async fn events_for(&self, node: &str) -> Vec<Event> {
        let events: Api<Event> = Api::namespaced(self.tb.cluster.client(), "default");
        events
            .list(&ListParams::default().fields(&format!("involvedObject.name={node}")))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }
}

fn taints(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| t.iter().map(|t| t.key.clone()).collect())
        .unwrap_or_default()
}

async fn node_named(h: &Harness, name: &str) -> Option<Node> {
    h.nodes().get(name).await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_node_cluster_initializes_fully() {
    let h = harness(3).await;
    for name in ["node-1", "node-2", "node-3"] {
        let node = eventually(name, || async {
            node_named(&h, name).await.filter(is_initialized)
        })
        .await;
        let server = h.tb.server_of(name).expect("server");
        let spec = node.spec.clone().expect("spec");
        assert_eq!(spec.provider_id, Some(format!("cloudscale://{server}")));
        let labels = node.metadata.labels.clone().expect("labels");
        assert_eq!(labels["node.kubernetes.io/instance-type"], "flex-8-4");
        assert_eq!(labels["topology.kubernetes.io/zone"], "rma1");
        assert_eq!(labels["topology.kubernetes.io/region"], "rma");
        let addresses: Vec<(String, String)> = node
            .status
            .and_then(|s| s.addresses)
            .expect("addresses")
            .into_iter()
            .map(|a| (a.type_, a.address))
            .collect();
        // The kubelet's node IP first (as upstream does), then Hostname and the public
        // addresses in the API's order.
        let facts = h.client.get(server).await.expect("lookup").expect("server");
        let private = facts
            .interfaces
            .iter()
            .find(|(p, _)| !p)
            .map(|(_, a)| a[0].clone())
            .expect("private");
        let public: Vec<String> = facts
            .interfaces
            .iter()
            .filter(|(p, _)| *p)
            .flat_map(|(_, a)| a.clone())
            .collect();
        assert_eq!(addresses[0], ("InternalIP".to_string(), private));
        assert_eq!(addresses[1], ("Hostname".to_string(), name.to_string()));
        assert_eq!(
            addresses[2..]
                .iter()
                .map(|(_, a)| a.clone())
                .collect::<Vec<_>>(),
            public
        );
        assert!(addresses[2..].iter().all(|(k, _)| k == "ExternalIP"));
        let events = eventually("Synced event", || async {
            let ev = h.events_for(name).await;
            ev.iter()
                .any(|e| e.reason.as_deref() == Some("Synced"))
                .then_some(ev)
        })
        .await;
        assert!(
            events.iter().all(|e| e.type_.as_deref() == Some("Normal")),
            "no warnings: {events:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_gets_the_shutdown_taint_and_loses_it_on_start() {
    let h = harness(2).await;
    eventually("node-1 initialized", || async {
        node_named(&h, "node-1").await.filter(is_initialized)
    })
    .await;
    h.server_action("node-1", "stop").await;
    eventually("shutdown taint", || async {
        node_named(&h, "node-1")
            .await
            .filter(|n| taints(n).iter().any(|k| k == SHUTDOWN_TAINT))
    })
    .await;
    let other = node_named(&h, "node-2").await.expect("node-2");
    assert!(
        !taints(&other).iter().any(|k| k == SHUTDOWN_TAINT),
        "only the stopped one"
    );
    h.server_action("node-1", "start").await;
    eventually("shutdown taint removed", || async {
        node_named(&h, "node-1")
            .await
            .filter(|n| !taints(n).iter().any(|k| k == SHUTDOWN_TAINT))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_server_deletes_its_node() {
    let h = harness(2).await;
    eventually("node-2 initialized", || async {
        node_named(&h, "node-2").await.filter(is_initialized)
    })
    .await;
    h.server_action("node-2", "delete").await;
    eventually("node-2 deleted", || async {
        node_named(&h, "node-2").await.is_none().then_some(())
    })
    .await;
    assert!(
        node_named(&h, "node-1").await.is_some(),
        "the other node stays"
    );
}

/// Waits until `node-1` … `node-N` are initialized.
async fn initialized(h: &Harness, n: usize) {
    for i in 1..=n {
        let name = format!("node-{i}");
        eventually(&name, || async {
            node_named(h, &name).await.filter(is_initialized)
        })
        .await;
    }
}

/// Stops `node`'s server and waits for its shutdown taint.
async fn stopped_and_tainted(h: &Harness, node: &str) {
    h.server_action(node, "stop").await;
    eventually("tainted as shut down", || async {
        node_named(h, node)
            .await
            .filter(|n| taints(n).iter().any(|k| k == SHUTDOWN_TAINT))
    })
    .await;
}

/// The lifecycle reconciles counted so far.
fn lifecycle_checks(metrics: &Metrics) -> u64 {
    metrics.reconciles(lifecycle::CONTROLLER)
}

/// Waits until the lifecycle controller has looked at the Nodes `n` more times.
async fn sweeps(h: &Harness, n: u64) {
    let base = lifecycle_checks(&h.metrics);
    eventually("lifecycle sweeps", || async {
        (lifecycle_checks(&h.metrics) >= base + n).then_some(())
    })
    .await;
}

/// A Warning `NodeDeletionHeld` on `node` whose message contains `text`.
async fn deletion_held(h: &Harness, node: &str, text: &str) -> Event {
    eventually("NodeDeletionHeld", || async {
        h.events_for(node).await.into_iter().find(|e| {
            e.reason.as_deref() == Some("NodeDeletionHeld")
                && e.message.as_deref().unwrap_or_default().contains(text)
        })
    })
    .await
}

/// A mistyped API path behind a proxy that answers in the API's own words: every request
/// answers 404 `{"detail": ...}`, so a stopped server looks deleted. The server list's 404
/// shows the root is wrong: the Node stays, readiness would fail, the metric names the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_api_root_deletes_no_node_and_names_the_url() {
    let h = harness(2).await;
    initialized(&h, 2).await;
    stopped_and_tainted(&h, "node-2").await;
    h.tb.cloud
        .faults()
        .add(FaultRule::new(None, "/v1/**", FaultEffect::status(404)))
        .expect("fault");
    let ev = deletion_held(&h, "node-2", "server list").await;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    sweeps(&h, 20).await;
    let node = node_named(&h, "node-2")
        .await
        .expect("node-2 is never deleted");
    assert!(
        taints(&node).iter().any(|k| k == SHUTDOWN_TAINT),
        "taint kept"
    );
    let url = format!("{}/v1/servers", h.tb.cloud.base_url());
    let wrong = h
        .client
        .root_health()
        .wrong()
        .expect("the root is known wrong");
    assert_eq!(wrong.url, url);
    assert!(
        wrong.message.contains("CLOUDSCALE_API_URL"),
        "{}",
        wrong.message
    );
    let text = h.metrics.render();
    assert!(
        text.contains(&format!("cloudscale_api_root_wrong{{url=\"{url}\"}} 1")),
        "{text}"
    );
    assert!(
        text.contains("cloudscale_ccm_node_deletions_held{reason=\"no-server-list\"} 1"),
        "{text}"
    );
    // The API answers again: the root is right, the stopped server's Node stays.
    h.tb.cloud.faults().clear();
    eventually("the root right again", || async {
        h.client.root_health().wrong().is_none().then_some(())
    })
    .await;
    sweeps(&h, 5).await;
    assert!(node_named(&h, "node-2").await.is_some());
    assert!(!h.metrics.render().contains("cloudscale_api_root_wrong{"));
}

/// The CCM restarted with another project's token (an account that holds servers, none of
/// this cluster's): every NotReady Node's server looks deleted, none is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_projects_account_deletes_no_node() {
    let mut h = harness(3).await;
    initialized(&h, 3).await;
    stopped_and_tainted(&h, "node-2").await;
    let other = fakecloud::FakeCloud::start(cloud_config(&["test-token"]))
        .await
        .expect("the other project's API");
    let zone = other.app().config().default_zone.clone();
    let network = scenarios::testbed::network_seed().expect("network");
    let spec = scenarios::testbed::server_spec("their-server", "flex-4-2", None, None);
    other
        .app()
        .write(|st, now| {
            fakecloud::apply_seed(st, now, &zone, &network)?;
            fakecloud::seed::add_server(st, now, &zone, &spec)
        })
        .expect("a server of theirs");
    let theirs = Client::new(ClientConfig {
        timeout: Duration::from_millis(500),
        metrics: Some(h.metrics.clone()),
        ..ClientConfig::new(
            other.base_url(),
            Arc::new(TokenSource::Static(
                Token::new("test-token").expect("token"),
            )),
        )
    })
    .expect("client");
    h.stop_controllers();
    h.start_controllers_with(theirs);
    let ev = deletion_held(&h, "node-2", "none of the 3 servers").await;
    assert!(
        ev.message
            .unwrap_or_default()
            .contains("CLOUDSCALE_ACCESS_TOKEN"),
        "says what to check"
    );
    sweeps(&h, 20).await;
    assert!(
        node_named(&h, "node-2").await.is_some(),
        "node-2 is never deleted"
    );
    let text = h.metrics.render();
    assert!(
        text.contains("cloudscale_ccm_node_deletions_held{reason=\"foreign-account\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("cloudscale_ccm_node_deletions_total 0"),
        "{text}"
    );
}

/// Three of four servers deleted at once: more than the 55 % of the cluster that may look
/// gone before any Node is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_the_threshold_of_nodes_gone_at_once_deletes_none() {
    let mut h = harness(4).await;
    initialized(&h, 4).await;
    // No CCM runs while the servers go, so that its first sweep finds all three gone.
    h.stop_controllers();
    for name in ["node-2", "node-3", "node-4"] {
        h.server_action(name, "delete").await;
    }
    for name in ["node-2", "node-3", "node-4"] {
        eventually("NotReady", || async {
            node_named(&h, name).await.filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                    .is_some_and(|c| c.status != "True")
            })
        })
        .await;
    }
    h.start_controllers();
    let ev = deletion_held(&h, "node-2", "3 of 4 Nodes").await;
    assert!(
        ev.message
            .unwrap_or_default()
            .contains("--node-deletion-threshold"),
        "names the flag"
    );
    sweeps(&h, 20).await;
    for name in ["node-2", "node-3", "node-4"] {
        assert!(node_named(&h, name).await.is_some(), "{name} kept");
    }
    assert!(
        h.metrics
            .render()
            .contains("cloudscale_ccm_node_deletions_held{reason=\"threshold\"} 3")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_errors_and_timeouts_delay_but_never_delete_or_corrupt() {
    let h = harness(2).await;
    // Half of all server lookups fail with 500 or take longer than the client's timeout
    // while nodes initialize.
    let faults = h.tb.cloud.faults();
    faults
        .add(
            FaultRule::new(Some("GET"), "/v1/servers**", FaultEffect::status(500))
                .probability(0.5, 7),
        )
        .expect("fault");
    faults
        .add(
            FaultRule::new(
                Some("GET"),
                "/v1/servers**",
                FaultEffect::Latency { ms: 800 },
            )
            .probability(0.2, 11),
        )
        .expect("fault");
    for name in ["node-1", "node-2"] {
        eventually(name, || async {
            node_named(&h, name).await.filter(is_initialized)
        })
        .await;
    }
    let before = node_named(&h, "node-1").await.expect("node-1");
    // Now every lookup fails while node-1 is NotReady because its server stopped.
    faults.clear();
    faults
        .add(FaultRule::new(
            Some("GET"),
            "/v1/servers**",
            FaultEffect::status(503),
        ))
        .expect("fault");
    h.server_action("node-1", "stop").await;
    // Many lifecycle sweeps run against failing lookups.
    let start = h.metrics.render();
    let count = |text: &str| {
        text.lines()
            .find(|l| {
                l.starts_with("cloudscale_ccm_reconcile_total{controller=\"node-lifecycle\",result=\"error\"}")
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let base = count(&start);
    eventually("failing lifecycle sweeps", || async {
        (count(&h.metrics.render()) >= base + 5).then_some(())
    })
    .await;
    let after = node_named(&h, "node-1")
        .await
        .expect("node-1 never deleted on API errors");
    assert_eq!(
        after.metadata.labels, before.metadata.labels,
        "labels untouched"
    );
    assert_eq!(
        after.spec.as_ref().and_then(|s| s.provider_id.clone()),
        before.spec.as_ref().and_then(|s| s.provider_id.clone())
    );
    assert!(
        !taints(&after).iter().any(|k| k == SHUTDOWN_TAINT),
        "no taint on a guess"
    );
    // Once the API answers again the shutdown taint follows.
    faults.clear();
    eventually("shutdown taint", || async {
        node_named(&h, "node-1")
            .await
            .filter(|n| taints(n).iter().any(|k| k == SHUTDOWN_TAINT))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_name_gives_an_event_and_keeps_the_taint() {
    let h = harness(1).await;
    eventually("node-1 initialized", || async {
        node_named(&h, "node-1").await.filter(is_initialized)
    })
    .await;
    // A second server named like the node, and a node without provider ID for that name.
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/_fake/servers", h.tb.cloud.base_url()))
        .json(&serde_json::json!({"name": "twin"}))
        .send()
        .await
        .expect("server");
    assert_eq!(r.status(), 201);
    let r = http
        .post(format!("{}/_fake/servers", h.tb.cloud.base_url()))
        .json(&serde_json::json!({"name": "twin"}))
        .send()
        .await
        .expect("server");
    assert_eq!(r.status(), 201);
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "twin"},
        "spec": {"taints": [{"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}]},
    }))
    .expect("node");
    h.nodes()
        .create(&Default::default(), &node)
        .await
        .expect("create twin");
    let events = eventually("AmbiguousServerName", || async {
        let ev = h.events_for("twin").await;
        ev.iter()
            .any(|e| e.reason.as_deref() == Some("AmbiguousServerName"))
            .then_some(ev)
    })
    .await;
    let ev = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("AmbiguousServerName"))
        .expect("event");
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert!(
        ev.message
            .as_deref()
            .unwrap_or_default()
            .contains("2 servers are named \"twin\""),
        "{ev:?}"
    );
    let twin = node_named(&h, "twin").await.expect("twin");
    assert!(!is_initialized(&twin), "still tainted");
    assert!(twin.spec.and_then(|s| s.provider_id).is_none(), "no guess");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_token_file_is_used_for_the_next_request_and_never_logged() {
    let dir = std::env::temp_dir().join(format!("ccm-rotate-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("token");
    let old = format!("old-secret-{}", uuid::Uuid::new_v4().simple());
    let new = format!("new-secret-{}", uuid::Uuid::new_v4().simple());
    std::fs::write(&path, &old).expect("write");
    // fakecloud only knows the new token: with the old one every request is a 401.
    let h = harness_with(
        1,
        cloud_config(&[&new]),
        TokenSource::from_file(&path).expect("source"),
    )
    .await;
    eventually("a failed sync", || async {
        let ev = h.events_for("node-1").await;
        ev.iter()
            .any(|e| e.reason.as_deref() == Some("SyncFailed"))
            .then_some(())
    })
    .await;
    assert!(!is_initialized(
        &node_named(&h, "node-1").await.expect("node")
    ));
    std::fs::write(&path, &new).expect("rotate");
    eventually("initialized with the new token", || async {
        node_named(&h, "node-1").await.filter(is_initialized)
    })
    .await;
    for secret in [&old, &new] {
        assert!(!logs_contain(secret), "a token leaked into the logs");
        for e in h.events_for("node-1").await {
            assert!(
                !e.message.unwrap_or_default().contains(secret.as_str()),
                "a token leaked into an Event"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_nodes_cost_the_lifecycle_controller_no_server_reads() {
    use scenarios::testbed::CcmBed;
    let bed = CcmBed::start_default().await;
    for name in ["node-1", "node-2", "node-3"] {
        scenarios::testbed::eventually(name, Duration::from_secs(30), || async {
            let nodes: Api<Node> = Api::all(bed.tb.cluster.client());
            nodes.get(name).await.ok().filter(is_initialized)
        })
        .await;
    }
    let ccm = bed.ccm.as_ref().expect("a CCM");
    bed.clear_request_log().await;
    let before = ccm.reconciles("node-lifecycle");
    // Ten looks at every Node.
    scenarios::testbed::eventually("30 lifecycle checks", Duration::from_secs(30), || async {
        (ccm.reconciles("node-lifecycle") >= before + 30).then_some(())
    })
    .await;
    let lookups = || async {
        bed.request_log()
            .await
            .into_iter()
            .filter(|r| r["method"] == "GET" && r["route"] == "/v1/servers/{uuid}")
            .filter_map(|r| r["path"].as_str().map(str::to_string))
            .collect::<Vec<String>>()
    };
    assert!(lookups().await.is_empty(), "{:#?}", lookups().await);
    // A NotReady Node is looked up.
    let server = bed.tb.server_of("node-3").expect("node-3's server");
    bed.cloud(
        reqwest::Method::POST,
        &format!("/servers/{server}/stop"),
        None,
    )
    .await;
    scenarios::testbed::eventually(
        "node-3's server looked up",
        Duration::from_secs(30),
        || async {
            lookups()
                .await
                .iter()
                .any(|p| p.ends_with(&server.to_string()))
                .then_some(())
        },
    )
    .await;
}
