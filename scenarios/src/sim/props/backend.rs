//! Where a case runs: the simulation's world (one process, one virtual clock; thousands of
//! cases) or the socket testbed (the CCM over real HTTP, fakecloud's clock scaled 100×; a
//! few cases, to show the same definitions hold there). Both have fakecloud in-process,
//! which is where the oracle, the request log and the state are read.

use crate::sim::trace::Trace;
use crate::sim::world::World;
use crate::testbed::{CcmBed, CcmBedConfig};
use fakecloud::clock::Time;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;
use uuid::Uuid;

/// What the runner needs of a backend.
pub trait Backend {
    fn kube(&self) -> kube::Client;
    fn cloud(&self) -> &fakecloud::App;
    /// The `--cluster-name` the CCM runs with (the preview needs it).
    fn cluster_name(&self) -> &str;
    /// Where notes and the CCM's "service converged" lines go.
    fn trace(&self) -> &Trace;
    /// Lets `d` of fakecloud's time pass.
    fn pass(&self, d: Duration) -> impl Future<Output = ()>;
    fn add_node(&mut self, name: &str) -> impl Future<Output = Result<(), String>>;
    fn server_of(&self, name: &str) -> Option<Uuid>;
    /// A request to fakecloud's API by outside hands; the JSON answer.
    fn outside(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> impl Future<Output = Result<Value, String>>;
    /// A client of fakecloud's API as the `plan` preview uses one.
    fn preview_client(&self) -> Result<ccm::cloudscale::Client, String>;
    /// The CCM's `--service-resync-period` plus its `--api-read-sharing-window`, in
    /// fakecloud's time: a change the CCM only notices on a resync (a deleted server's
    /// node, whose kubelet falls silent) is applied within it.
    fn resync(&self) -> Duration;
    /// Seconds of downtime the judgement forgives (rounding on the virtual clock; real
    /// scheduling delay times the scale on a scaled one).
    fn slack(&self) -> f64;
    /// Sends the CCM's cloud requests where `misconfig` says (`None`: right again);
    /// `false` where the backend cannot.
    fn misconfigure(&self, misconfig: Option<crate::sim::transport::Misconfig>) -> bool;
}

/// The simulation's world.
pub struct Sim<'a>(pub &'a mut World);

impl Backend for Sim<'_> {
    fn kube(&self) -> kube::Client {
        self.0.kube.clone()
    }
    fn cloud(&self) -> &fakecloud::App {
        &self.0.cloud
    }
    fn cluster_name(&self) -> &str {
        "sim"
    }
    fn trace(&self) -> &Trace {
        &self.0.trace
    }
    async fn pass(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }
    async fn add_node(&mut self, name: &str) -> Result<(), String> {
        self.0
            .add_node(name)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn server_of(&self, name: &str) -> Option<Uuid> {
        self.0.server_of(name)
    }
    async fn outside(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        self.0.outside_with(method, path, body).await
    }
    fn preview_client(&self) -> Result<ccm::cloudscale::Client, String> {
        self.0.cloud_client("preview")
    }
    fn resync(&self) -> Duration {
        // `WorldConfig::new`'s `--service-resync-period`, and the default sharing window.
        Duration::from_secs(62)
    }
    fn slack(&self) -> f64 {
        0.5
    }
    fn misconfigure(&self, misconfig: Option<crate::sim::transport::Misconfig>) -> bool {
        self.0.misconfigure(misconfig);
        true
    }
}

/// The socket testbed: [`CcmBed`] with the CCM's convergence lines in a trace.
pub struct Socket {
    pub bed: CcmBed,
    trace: Trace,
}

impl Socket {
    /// A socket testbed of `nodes` nodes (fakecloud at 100×); the CCM's "service
    /// converged" lines go to the returned backend's trace through the process-wide
    /// subscriber the simulation installs (`global_converged` in `src/sim/run.rs`).
    pub async fn start(nodes: usize) -> Socket {
        let trace = Trace::new();
        crate::sim::run::global_converged().to(&trace);
        let mut config = CcmBedConfig::default();
        config.testbed.nodes = nodes;
        // The cases write the Service's EndpointSlice themselves (the model's endpoints)
        // and run no Pods: no EndpointSlice controller may say its backends are down.
        config.testbed.workloads = None;
        Socket {
            bed: CcmBed::start(config).await,
            trace,
        }
    }

    fn scale(&self) -> f64 {
        match self.bed.tb.cloud.app().config().clock {
            fakecloud::ClockMode::Scaled { scale } => scale.max(1.0),
            _ => 1.0,
        }
    }
}

impl Backend for Socket {
    fn kube(&self) -> kube::Client {
        self.bed.tb.cluster.client()
    }
    fn cloud(&self) -> &fakecloud::App {
        self.bed.tb.cloud.app()
    }
    fn cluster_name(&self) -> &str {
        "test-cluster"
    }
    fn trace(&self) -> &Trace {
        &self.trace
    }
    async fn pass(&self, d: Duration) {
        tokio::time::sleep(d.div_f64(self.scale())).await;
    }
    async fn add_node(&mut self, name: &str) -> Result<(), String> {
        self.bed
            .tb
            .add_node(name)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn server_of(&self, name: &str) -> Option<Uuid> {
        self.bed.tb.server_of(name)
    }
    async fn outside(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let cloud = &self.bed.tb.cloud;
        let mut request = self
            .bed
            .http
            .request(
                method.parse().map_err(|_| format!("bad method {method}"))?,
                format!("{}{path}", cloud.base_url()),
            )
            .bearer_auth(cloud.token());
        if let Some(b) = body {
            request = request.json(&b);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!("{status}: {body}"))
        }
    }
    fn preview_client(&self) -> Result<ccm::cloudscale::Client, String> {
        let cloud = &self.bed.tb.cloud;
        let token = ccm::secret::Token::new(cloud.token()).ok_or("an empty token")?;
        ccm::cloudscale::install_crypto_provider();
        ccm::cloudscale::Client::new(ccm::cloudscale::ClientConfig::new(
            cloud.api_url(),
            std::sync::Arc::new(ccm::secret::TokenSource::Static(token)),
        ))
        .map_err(|e| e.to_string())
    }
    fn resync(&self) -> Duration {
        // `ccm_bed::FAST_FLAGS`' 1 s and the default sharing window of 2 s (the CCM's
        // clock is the real one), scaled.
        Duration::from_secs(3).mul_f64(self.scale())
    }
    fn slack(&self) -> f64 {
        // 20 ms of real scheduling delay at 100×.
        2.0
    }
    fn misconfigure(&self, _: Option<crate::sim::transport::Misconfig>) -> bool {
        // The CCM talks to fakecloud over HTTP here: its settings are its own.
        false
    }
}

/// Whether a logged request is a write the CCM makes (the runner itself writes only
/// floating IPs and servers, never load balancers or assignments).
fn ccm_write(e: &fakecloud::app::LogEntry) -> bool {
    e.method != "GET"
        && (e.path.starts_with("/v1/load-balancers")
            || (e.method == "PATCH" && e.path.starts_with("/v1/floating-ips/")))
}

/// The CCM's cloud writes at or after `since`, as `METHOD path status`.
pub fn ccm_writes(cloud: &fakecloud::App, since: Time) -> Vec<String> {
    let log = cloud.0.log.lock();
    log.entries
        .iter()
        .filter(|e| ccm_write(e))
        .filter(|e| fakecloud::clock::parse_time(&e.time).is_some_and(|t| t >= since))
        .map(|e| format!("{} {} {} {}", e.time, e.method, e.path, e.status))
        .collect()
}

/// When the CCM last wrote.
pub fn last_ccm_write(cloud: &fakecloud::App) -> Option<Time> {
    let log = cloud.0.log.lock();
    log.entries
        .iter()
        .rev()
        .find(|e| ccm_write(e))
        .and_then(|e| fakecloud::clock::parse_time(&e.time))
}

/// The resourceVersions of every "service converged" line of `default/web` in `trace` from
/// line `from` on.
pub fn converged_since(trace: &Trace, from: usize) -> Vec<Option<u64>> {
    let lines = trace.lines();
    lines[from.min(lines.len())..]
        .iter()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (_, word, key, v) = (f.next(), f.next(), f.next(), f.next());
            (word == Some("converged") && key == Some("default/web"))
                .then(|| v.and_then(|v| v.parse::<u64>().ok()))
        })
        .collect()
}

/// The load balancer fakecloud holds for the Service `name` (by its ownership tag).
pub async fn load_balancer_of(b: &impl Backend, name: &str) -> Option<Uuid> {
    let api: kube::Api<k8s_openapi::api::core::v1::Service> =
        kube::Api::namespaced(b.kube(), "default");
    let uid = api.get_opt(name).await.ok()??.metadata.uid?;
    crate::sim::world::load_balancers_of(b.cloud(), &uid)
        .into_iter()
        .next()
}
