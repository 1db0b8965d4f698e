//! Simulated kubelets: for each fakecloud server, a Node registered as a kubelet started with
//! `--cloud-provider=external` registers it (uninitialized taint, no provider ID), heartbeats
//! on its Lease while the server runs, posts its status as a kubelet does (at once on a
//! change, and unchanged every `nodeStatusReportFrequency` with new heartbeat times), may
//! flap NotReady when asked to, goes NotReady when the server stops and falls silent when
//! the server is deleted. They talk to the cluster through kube-rs, so they work with
//! every cluster backend.

use ccm::ambient::Ambient;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// The taint a kubelet with `--cloud-provider=external` registers its Node with.
pub const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
const FIELD_MANAGER: &str = "simulated-kubelet";

#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    #[error("server {0} does not exist in fakecloud")]
    NoSuchServer(Uuid),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

#[derive(Debug, Clone)]
pub struct KubeletConfig {
    /// How often the Lease is renewed and the server's state looked at (the kubelet's
    /// `nodeLeaseDurationSeconds / 4`: 10 s for its default lease).
    pub heartbeat: Duration,
    pub lease_duration_s: i32,
    /// Whether the Lease is renewed every heartbeat (a real kubelet's way) or only written
    /// once. The simulation writes it once: nothing there reads node Leases (the CCM reads
    /// Node conditions), and their renewals were a fifth of its API requests.
    pub renew_lease: bool,
    /// How often an unchanged Node status is posted anyway, with new heartbeat times in
    /// its conditions (the kubelet's `nodeStatusReportFrequency`, 5 minutes by default; a
    /// change is posted at once). `None`: only changes are posted.
    pub status_report: Option<Duration>,
    /// NotReady flaps, if any: see [`Flaps`].
    pub flaps: Option<Flaps>,
    pub kubelet_version: String,
    /// The clock of status and Lease times (the simulated one in a simulation).
    pub ambient: Ambient,
}

/// A kubelet that reports NotReady for `down` every `every` (a network blip, a busy
/// node), while its server keeps running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flaps {
    pub every: Duration,
    pub down: Duration,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            heartbeat: Duration::from_secs(2),
            lease_duration_s: 40,
            renew_lease: true,
            status_report: Some(Duration::from_secs(300)),
            flaps: None,
            kubelet_version: "v1.32.0".to_string(),
            ambient: Ambient::system(),
        }
    }
}

/// What a kubelet knows about its VM, read from fakecloud.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub name: String,
    pub status: String,
    pub vcpus: u32,
    pub memory_gb: u32,
    /// The first private address, the kubelet's `--node-ip`.
    pub private_ip: Option<String>,
}

/// Reads a server from an in-process fakecloud (`None`: it is gone).
pub fn machine(cloud: &fakecloud::App, server: Uuid) -> Option<Machine> {
    cloud.read("", |ctx| {
        let s = ctx.st.servers().get(&server)?;
        let flavor = fakecloud::catalogue::find_flavor(&s.flavor);
        let private_ip = s
            .interfaces
            .iter()
            .filter(|i| !i.public)
            .flat_map(|i| i.addresses.iter())
            .find(|a| a.version == 4)
            .map(|a| a.address.to_string());
        Some(Machine {
            name: s.name.clone(),
            status: s.status(ctx.now).to_string(),
            vcpus: flavor.map_or(1, |f| f.vcpu_count),
            memory_gb: flavor.map_or(1, |f| f.memory_gb),
            private_ip,
        })
    })
}

fn conditions(ambient: &Ambient, ready: &str, reason: &str, message: &str) -> Value {
    let now = ambient.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let pressure = |t: &str, r: &str| {
        json!({"type": t, "status": if ready == "True" { "False" } else { "Unknown" }, "reason": r,
               "message": "", "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    json!([
        {"type": "Ready", "status": ready, "reason": reason, "message": message,
         "lastHeartbeatTime": now, "lastTransitionTime": now},
        pressure("MemoryPressure", "KubeletHasSufficientMemory"),
        pressure("DiskPressure", "KubeletHasNoDiskPressure"),
        pressure("PIDPressure", "KubeletHasSufficientPID"),
    ])
}

/// The Node object a kubelet registers for `m`.
pub fn node_object(m: &Machine, cfg: &KubeletConfig) -> Value {
    let memory_ki = u64::from(m.memory_gb) * 1024 * 1024;
    let capacity = json!({"cpu": m.vcpus.to_string(), "memory": format!("{memory_ki}Ki"),
                          "pods": "110", "ephemeral-storage": "10255636Ki"});
    let mut addresses = Vec::new();
    let mut annotations = json!({});
    if let Some(ip) = &m.private_ip {
        addresses.push(json!({"type": "InternalIP", "address": ip}));
        annotations["alpha.kubernetes.io/provided-node-ip"] = json!(ip);
    }
    addresses.push(json!({"type": "Hostname", "address": m.name}));
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": m.name,
            "labels": {"kubernetes.io/hostname": m.name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "beta.kubernetes.io/arch": "amd64"},
            "annotations": annotations,
        },
        "spec": {"taints": [{"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}]},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": conditions(&cfg.ambient, "True", "KubeletReady", "kubelet is posting ready status"),
            "addresses": addresses,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"kubeletVersion": cfg.kubelet_version, "kubeProxyVersion": cfg.kubelet_version,
                         "operatingSystem": "linux", "architecture": "amd64",
                         "containerRuntimeVersion": "containerd://1.7.0", "osImage": "Debian GNU/Linux 13",
                         "kernelVersion": "6.1.0", "machineID": "", "systemUUID": "", "bootID": ""},
        },
    })
}

/// A running simulated kubelet; dropping the handle stops it.
pub struct Kubelet {
    pub node: String,
    pub server: Uuid,
    task: JoinHandle<()>,
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Kubelet {
    /// Whether it still runs (it stops for good once its server is deleted).
    pub fn is_running(&self) -> bool {
        !self.task.is_finished()
    }

    /// Registers the Node of `server` and starts heartbeating.
    pub async fn start(
        client: kube::Client,
        cloud: fakecloud::App,
        server: Uuid,
        cfg: KubeletConfig,
    ) -> Result<Kubelet, KubeletError> {
        let m = machine(&cloud, server).ok_or(KubeletError::NoSuchServer(server))?;
        let nodes: Api<Node> = Api::all(client.clone());
        let obj: Node =
            serde_json::from_value(node_object(&m, &cfg)).map_err(kube::Error::SerdeError)?;
        match nodes.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            // A restarted kubelet finds its Node already there.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        // Real kubelets post status separately; servers that reset status on create keep it.
        let status = json!({"status": obj_status(&m, &cfg)});
        nodes
            .patch_status(&m.name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        let node = m.name.clone();
        let task = tokio::spawn(heartbeat(client, cloud, server, node.clone(), cfg));
        Ok(Kubelet { node, server, task })
    }
}

fn obj_status(m: &Machine, cfg: &KubeletConfig) -> Value {
    node_object(m, cfg)["status"].clone()
}

/// Renews the node's Lease: created (server-side apply) the first time, after that only
/// its renew time is written (a merge patch), as a kubelet updates the Lease it holds
/// rather than sending it whole; a Lease deleted meanwhile is created again.
async fn renew_lease(
    leases: &Api<Lease>,
    node: &str,
    cfg: &KubeletConfig,
    held: &mut bool,
) -> Result<(), kube::Error> {
    let now = cfg
        .ambient
        .now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    if *held {
        let renewed = leases
            .patch(
                node,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"renewTime": now}})),
            )
            .await;
        match renewed {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => *held = false,
            Err(e) => return Err(e),
        }
    }
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": node, "namespace": NODE_LEASE_NAMESPACE},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": cfg.lease_duration_s, "renewTime": now},
    });
    leases
        .patch(
            node,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&lease),
        )
        .await?;
    *held = true;
    Ok(())
}

async fn set_ready(
    cfg: &KubeletConfig,
    nodes: &Api<Node>,
    node: &str,
    ready: &str,
    reason: &str,
    message: &str,
) -> Result<(), kube::Error> {
    let patch = json!({"status": {"conditions": conditions(&cfg.ambient, ready, reason, message)}});
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .map(|_| ())
}

/// The status a running kubelet reports now: Ready, or NotReady during a flap.
fn reported_ready(cfg: &KubeletConfig, started: tokio::time::Instant) -> bool {
    let Some(f) = cfg.flaps else {
        return true;
    };
    let every = f.every.as_millis().max(1);
    let into = started.elapsed().as_millis() % every;
    // The flap comes at the end of each period, so a Node starts Ready.
    into < every.saturating_sub(f.down.as_millis())
}

/// Posts the same conditions again with new heartbeat times only (a strategic merge by
/// condition type keeps their transition times), as a kubelet's periodic status report.
async fn report_status(
    cfg: &KubeletConfig,
    nodes: &Api<Node>,
    node: &str,
) -> Result<(), kube::Error> {
    let now = cfg.ambient.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let conditions: Vec<Value> = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]
        .iter()
        .map(|t| json!({"type": t, "lastHeartbeatTime": now}))
        .collect();
    let patch = json!({"status": {"conditions": conditions}});
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .map(|_| ())
}

async fn heartbeat(
    client: kube::Client,
    cloud: fakecloud::App,
    server: Uuid,
    node: String,
    cfg: KubeletConfig,
) {
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client, NODE_LEASE_NAMESPACE);
    let started = tokio::time::Instant::now();
    let mut reported: Option<String> = Some("True".to_string());
    let mut last_report = started;
    let mut lease_held = false;
    loop {
        let state = machine(&cloud, server).map(|m| m.status);
        let result = match state.as_deref() {
            Some("running") => {
                let mut r = if cfg.renew_lease || !lease_held {
                    renew_lease(&leases, &node, &cfg, &mut lease_held).await
                } else {
                    Ok(())
                };
                let (ready, reason, message) = if reported_ready(&cfg, started) {
                    ("True", "KubeletReady", "kubelet is posting ready status")
                } else {
                    (
                        "False",
                        "KubeletNotReady",
                        "container runtime network not ready",
                    )
                };
                if r.is_ok() && reported.as_deref() != Some(ready) {
                    r = set_ready(&cfg, &nodes, &node, ready, reason, message).await;
                    if r.is_ok() {
                        reported = Some(ready.into());
                        last_report = tokio::time::Instant::now();
                    }
                } else if r.is_ok()
                    && cfg
                        .status_report
                        .is_some_and(|every| last_report.elapsed() >= every)
                {
                    r = report_status(&cfg, &nodes, &node).await;
                    if r.is_ok() {
                        last_report = tokio::time::Instant::now();
                    }
                }
                r
            }
            // Stopped or in transition: no kubelet posts status; the node lifecycle
            // controller marks the Node as unknown.
            Some(_) | None => {
                let mut r = Ok(());
                if reported.as_deref() != Some("Unknown") {
                    r = set_ready(
                        &cfg,
                        &nodes,
                        &node,
                        "Unknown",
                        "NodeStatusUnknown",
                        "Kubelet stopped posting node status.",
                    )
                    .await;
                    if r.is_ok() {
                        reported = Some("Unknown".into());
                    }
                }
                if state.is_none() && r.is_ok() {
                    // The VM is gone: this kubelet will never speak again.
                    return;
                }
                r
            }
        };
        if let Err(e) = result {
            // The Node may have been deleted (by the CCM): keep trying, as a kubelet would.
            tracing::debug!(node = %node, error = %e, "kubelet heartbeat failed");
        }
        tokio::time::sleep(cfg.heartbeat).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_flapping_kubelet_reports_not_ready_at_the_end_of_each_period() {
        let cfg = KubeletConfig {
            flaps: Some(Flaps {
                every: Duration::from_secs(60),
                down: Duration::from_secs(10),
            }),
            ..KubeletConfig::default()
        };
        let started = tokio::time::Instant::now();
        let mut seen = Vec::new();
        for at in [0, 49, 50, 59, 60, 115] {
            tokio::time::sleep_until(started + Duration::from_secs(at)).await;
            seen.push(reported_ready(&cfg, started));
        }
        assert_eq!(seen, [true, true, false, false, true, false]);
        assert!(
            reported_ready(&KubeletConfig::default(), started),
            "no flaps: always Ready"
        );
    }

    #[test]
    fn node_object_looks_like_an_external_cloud_kubelets() {
        let m = Machine {
            name: "node-1".into(),
            status: "running".into(),
            vcpus: 4,
            memory_gb: 8,
            private_ip: Some("10.0.0.11".into()),
        };
        let n = node_object(&m, &KubeletConfig::default());
        assert_eq!(n["spec"]["taints"][0]["key"], UNINITIALIZED_TAINT);
        assert!(n["spec"].get("providerID").is_none());
        assert_eq!(n["status"]["capacity"]["cpu"], "4");
        assert_eq!(n["status"]["capacity"]["memory"], "8388608Ki");
        assert_eq!(
            n["status"]["addresses"][0],
            json!({"type": "InternalIP", "address": "10.0.0.11"})
        );
        assert_eq!(
            n["metadata"]["annotations"]["alpha.kubernetes.io/provided-node-ip"],
            "10.0.0.11"
        );
        assert_eq!(n["status"]["conditions"][0]["type"], "Ready");
        let parsed: Node = serde_json::from_value(n).expect("a valid Node");
        assert_eq!(parsed.metadata.name.as_deref(), Some("node-1"));
    }
}
