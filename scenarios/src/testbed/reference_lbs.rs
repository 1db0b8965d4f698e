//! What the Go reference CCM (github.com/cloudscale-ch/cloudscale-cloud-controller-manager)
//! leaves behind for a cluster, rebuilt on fakecloud so that adoption by this CCM can be
//! tested: [`Reference`] initializes the Nodes as the reference's node controller does,
//! and builds a Service's load balancer through fakecloud's public API with the
//! reference's own call sequence, then writes back what the reference (and the upstream
//! service controller it plugs into) writes to the Service: the cleanup finalizer, the
//! `loadbalancer-uuid`, `loadbalancer-config-version` and `loadbalancer-zone` annotations
//! (one JSON patch), and the status ingress.
//!
//! Sources: the reference's behaviour specification (node metadata, naming, desired state,
//! actual-state fetch, pass structure and wire bodies) and its public source
//! (`pkg/cloudscale_ccm/reconcile.go`, `loadbalancer.go`, `pkg/internal/actions`). What is
//! replayed of one EnsureLoadBalancer:
//!
//! - every pass: the desired state (`GET /v1/servers/<uuid>` per Node, by provider ID), the
//!   actual state (`GET /v1/load-balancers/<uuid>` when the uuid annotation is set, `GET
//!   /v1/load-balancers` filtered by name, then every health monitor, listener and pool of
//!   the account, the members of this load balancer's pools, the floating IPs);
//! - the plan: create the load balancer (name, flavor, `vip_addresses`, zone; no tags) and
//!   refetch; wait while it is `changing`; create missing pools and refetch; then members,
//!   listeners and monitors (each kind pool by pool) and refetch; then floating IPs;
//! - 6 virtual seconds between passes (the reference sleeps 5-7.5 s);
//! - one more actual fetch, then the annotations and the status.
//!
//! Only construction is replayed: a difference the reference would repair by deleting or
//! patching (an extra pool, a changed listener) is reported as an error instead, since
//! this builder exists to produce the reference's converged state, not to compare plans.
//! No node selector, no allowed subnets (every private address is a member).

use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// The annotation prefix every reference annotation shares.
pub const PREFIX: &str = "k8s.cloudscale.ch/";
pub const UUID_ANNOTATION: &str = "k8s.cloudscale.ch/loadbalancer-uuid";
pub const CONFIG_VERSION_ANNOTATION: &str = "k8s.cloudscale.ch/loadbalancer-config-version";
pub const ZONE_ANNOTATION: &str = "k8s.cloudscale.ch/loadbalancer-zone";
/// The finalizer the upstream service controller adds before it ensures a load balancer.
pub const CLEANUP_FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";
const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";
const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
/// Virtual seconds between two passes (the reference: uniform 5-7.5 s).
const PASS_SLEEP_S: f64 = 6.0;
/// Passes before the builder gives up (provisioning takes 60 virtual s, about 10 passes).
const MAX_PASSES: usize = 60;

/// The value of annotation `suffix` (after [`PREFIX`]) with the reference's default.
pub fn annotation(svc: &Service, suffix: &str) -> String {
    let set = svc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(&format!("{PREFIX}{suffix}")))
        .cloned();
    if let Some(v) = set {
        return v;
    }
    let uid = svc.metadata.uid.clone().unwrap_or_default();
    match suffix {
        "loadbalancer-name" => format!("k8s-service-{uid}"),
        "loadbalancer-flavor" => "lb-standard".into(),
        "loadbalancer-config-version" => "1".into(),
        "loadbalancer-vip-addresses"
        | "loadbalancer-floating-ips"
        | "loadbalancer-listener-allowed-cidrs"
        | "loadbalancer-listener-allowed-subnets" => "[]".into(),
        "loadbalancer-pool-algorithm" => "round_robin".into(),
        "loadbalancer-pool-protocol" | "loadbalancer-listener-protocol" => "tcp".into(),
        "loadbalancer-health-monitor-delay-s" => "2".into(),
        "loadbalancer-health-monitor-timeout-s" => "1".into(),
        "loadbalancer-health-monitor-up-threshold" => "2".into(),
        "loadbalancer-health-monitor-down-threshold" => "3".into(),
        "loadbalancer-health-monitor-type" => "tcp".into(),
        "loadbalancer-health-monitor-http" => "{}".into(),
        "loadbalancer-timeout-client-data-ms" => "50000".into(),
        "loadbalancer-timeout-member-connect-ms" => "5000".into(),
        "loadbalancer-timeout-member-data-ms" => "50000".into(),
        _ => String::new(),
    }
}

fn int(svc: &Service, suffix: &str) -> Result<i64, String> {
    let v = annotation(svc, suffix);
    v.parse()
        .map_err(|_| format!("{PREFIX}{suffix}: {v:?} is not an integer"))
}

fn list(svc: &Service, suffix: &str) -> Result<Vec<String>, String> {
    let v = annotation(svc, suffix);
    if v.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(&v).map_err(|e| format!("{PREFIX}{suffix}: {e}"))
}

/// One pool of the desired state, with the bodies the reference sends to create what is
/// under it (without the pool UUID, added when sent).
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredPool {
    pub name: String,
    pub algorithm: String,
    pub protocol: String,
    /// `POST /v1/load-balancers/pools/<uuid>/members` bodies, node by node.
    pub members: Vec<Value>,
    /// `POST /v1/load-balancers/listeners` body without `pool`.
    pub listener: Value,
    /// `POST /v1/load-balancers/health-monitors` body without `pool`.
    pub monitor: Value,
}

/// The reference's desired load balancer for a Service.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    pub name: String,
    pub flavor: String,
    /// `""`: left to the API.
    pub zone: String,
    /// `vip_addresses` as sent on create (`[]` for the public pair).
    pub vip_addresses: Value,
    pub floating_ips: Vec<String>,
    pub pools: Vec<DesiredPool>,
}

/// The pool name: lowercase protocol, then `/` and the port name when it has one.
pub fn pool_name(protocol: &str, port_name: &str) -> String {
    let p = protocol.to_lowercase();
    if port_name.is_empty() {
        p
    } else {
        format!("{p}/{port_name}")
    }
}

/// The member name: `<address>:<node port>`, IPv6 in brackets.
pub fn member_name(address: &str, node_port: i64) -> String {
    if address.contains(':') {
        format!("[{address}]:{node_port}")
    } else {
        format!("{address}:{node_port}")
    }
}

/// The monitor body (without `pool`): one for every pool of the Service. The `http`
/// object is always sent, empty without HTTP options; zero numbers are omitted (the Go
/// SDK's `omitempty`).
fn monitor(svc: &Service) -> Result<Value, String> {
    let local = svc
        .spec
        .as_ref()
        .and_then(|s| s.external_traffic_policy.as_deref())
        == Some("Local");
    let mut kind = annotation(svc, "loadbalancer-health-monitor-type");
    let raw = annotation(svc, "loadbalancer-health-monitor-http");
    let mut http = if raw == "{}" {
        json!({})
    } else {
        let mut h: serde_json::Map<String, Value> = serde_json::from_str(&raw)
            .map_err(|e| format!("{PREFIX}loadbalancer-health-monitor-http: {e}"))?;
        h.entry("method").or_insert(json!("GET"));
        h.entry("url_path").or_insert(json!("/"));
        h.entry("expected_codes").or_insert(json!(["200"]));
        h.entry("version").or_insert(json!("1.1"));
        Value::Object(h)
    };
    if local {
        kind = "http".into();
        if raw == "{}" {
            http = json!({"method": "GET", "url_path": "/livez", "version": "1.0",
                          "expected_codes": ["200"]});
        }
    }
    let mut body = json!({"type": kind, "http": http});
    for (key, suffix) in [
        ("delay_s", "loadbalancer-health-monitor-delay-s"),
        ("timeout_s", "loadbalancer-health-monitor-timeout-s"),
        ("up_threshold", "loadbalancer-health-monitor-up-threshold"),
        (
            "down_threshold",
            "loadbalancer-health-monitor-down-threshold",
        ),
    ] {
        let n = int(svc, suffix)?;
        if n != 0 {
            body[key] = json!(n);
        }
    }
    Ok(body)
}

/// The reference's desired state for `svc` on `servers` (the API's server objects, in
/// Node order).
pub fn desired(svc: &Service, servers: &[Value]) -> Result<Desired, String> {
    let spec = svc.spec.clone().unwrap_or_default();
    let mut zone = annotation(svc, "loadbalancer-zone");
    if zone.is_empty() {
        for s in servers {
            let z = s["zone"]["slug"].as_str().unwrap_or_default();
            if !zone.is_empty() && zone != z {
                return Err("no loadbalancer zone set and nodes in multiple zones".into());
            }
            zone = z.to_string();
        }
    }
    let vip_addresses: Value = serde_json::from_str(&annotation(svc, "loadbalancer-vip-addresses"))
        .map_err(|e| format!("{PREFIX}loadbalancer-vip-addresses: {e}"))?;
    if !list(svc, "loadbalancer-listener-allowed-subnets")?.is_empty()
        || !annotation(svc, "loadbalancer-node-selector").is_empty()
    {
        return Err("allowed subnets and node selectors are not replayed".into());
    }
    let local = spec.external_traffic_policy.as_deref() == Some("Local");
    let health_port = spec.health_check_node_port.unwrap_or(0);
    let monitor = monitor(svc)?;
    let mut pools = Vec::new();
    for port in spec.ports.iter().flatten() {
        let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".into());
        if protocol != "TCP" && protocol != "UDP" {
            return Err(format!("cannot use {protocol}, only TCP and UDP"));
        }
        let node_port = i64::from(port.node_port.unwrap_or(0));
        if node_port == 0 {
            return Err(format!("unknown port: {node_port}"));
        }
        let monitor_port = if local && health_port > 0 {
            i64::from(health_port)
        } else {
            node_port
        };
        let udp = protocol == "UDP";
        let mut members = Vec::new();
        for s in servers {
            for iface in s["interfaces"].as_array().into_iter().flatten() {
                if iface["type"] == "public" {
                    continue;
                }
                for a in iface["addresses"].as_array().into_iter().flatten() {
                    let Some(subnet) = a["subnet"]["uuid"].as_str().filter(|u| !u.is_empty())
                    else {
                        continue;
                    };
                    let address = a["address"].as_str().unwrap_or_default();
                    members.push(json!({
                        "name": member_name(address, node_port),
                        "protocol_port": node_port,
                        "monitor_port": monitor_port,
                        "address": address,
                        "subnet": subnet,
                    }));
                }
            }
        }
        let listener_protocol = if udp {
            "udp".to_string()
        } else {
            annotation(svc, "loadbalancer-listener-protocol")
        };
        pools.push(DesiredPool {
            name: pool_name(&protocol, port.name.as_deref().unwrap_or_default()),
            algorithm: annotation(svc, "loadbalancer-pool-algorithm"),
            protocol: if udp {
                "udp".into()
            } else {
                annotation(svc, "loadbalancer-pool-protocol")
            },
            members,
            listener: json!({
                "name": format!("{listener_protocol}/{}", port.port).to_lowercase(),
                "protocol": listener_protocol,
                "protocol_port": port.port,
                "allowed_cidrs": list(svc, "loadbalancer-listener-allowed-cidrs")?,
                "timeout_client_data_ms": int(svc, "loadbalancer-timeout-client-data-ms")?,
                "timeout_member_connect_ms": int(svc, "loadbalancer-timeout-member-connect-ms")?,
                "timeout_member_data_ms": int(svc, "loadbalancer-timeout-member-data-ms")?,
            }),
            monitor: monitor.clone(),
        });
    }
    Ok(Desired {
        name: annotation(svc, "loadbalancer-name"),
        flavor: annotation(svc, "loadbalancer-flavor"),
        zone,
        vip_addresses,
        floating_ips: list(svc, "loadbalancer-floating-ips")?,
        pools,
    })
}

fn pool_key(p: &Value) -> (String, String, String) {
    let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
    (s("name"), s("algorithm"), s("protocol"))
}

/// Member identity as the reference compares it (`enabled` is always true here; the
/// subnet by UUID: the builder reads the same API for both sides).
fn member_key(m: &Value) -> (String, i64, i64, String, String) {
    let subnet = m["subnet"]
        .as_str()
        .or_else(|| m["subnet"]["uuid"].as_str())
        .unwrap_or_default();
    (
        m["name"].as_str().unwrap_or_default().to_string(),
        m["protocol_port"].as_i64().unwrap_or(0),
        m["monitor_port"].as_i64().unwrap_or(0),
        m["address"].as_str().unwrap_or_default().to_string(),
        subnet.to_string(),
    )
}

fn listener_key(l: &Value) -> (String, String, i64) {
    (
        l["name"].as_str().unwrap_or_default().to_string(),
        l["protocol"].as_str().unwrap_or_default().to_string(),
        l["protocol_port"].as_i64().unwrap_or(0),
    )
}

/// Monitor identity: type and HTTP version (`1.1` when there is none).
fn monitor_key(m: &Value) -> (String, String) {
    let version = m["http"]["version"]
        .as_str()
        .filter(|v| !v.is_empty())
        .unwrap_or("1.1");
    (
        m["type"].as_str().unwrap_or_default().to_string(),
        version.to_string(),
    )
}

/// One request the reference made.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: String,
    /// Under the API root, e.g. `/v1/load-balancers`.
    pub path: String,
    pub body: Option<Value>,
    pub status: u16,
}

/// A pool of the actual state: the pool, its members, listeners and monitors.
type ActualPool = (Value, Vec<Value>, Vec<Value>, Vec<Value>);

/// The actual state of one pass.
#[derive(Debug, Default)]
struct Actual {
    lb: Option<Value>,
    pools: Vec<ActualPool>,
    floating_ips: Vec<String>,
}

/// The pool `name` of the actual state.
fn pool_of<'a>(actual: &'a Actual, name: &str) -> Result<&'a ActualPool, String> {
    actual
        .pools
        .iter()
        .find(|(a, ..)| a["name"] == name)
        .ok_or_else(|| format!("no existing pool found for {name}"))
}

/// What the reference refuses or does not replay: another flavor or zone, a rename, a pool
/// to delete.
fn check_replayable(
    lb: &Value,
    lb_uuid: &str,
    want: &Desired,
    actual: &Actual,
) -> Result<(), String> {
    if lb["flavor"]["slug"] != want.flavor.as_str() || lb["zone"]["slug"] != want.zone.as_str() {
        return Err(format!("flavor or zone of {lb_uuid} differ (refused)"));
    }
    if lb["name"] != want.name.as_str() {
        return Err("a rename is not replayed".into());
    }
    let desired_keys: Vec<_> = want
        .pools
        .iter()
        .map(|p| (p.name.clone(), p.algorithm.clone(), p.protocol.clone()))
        .collect();
    if let Some((extra, ..)) = actual
        .pools
        .iter()
        .find(|(p, ..)| !desired_keys.contains(&pool_key(p)))
    {
        return Err(format!(
            "pool {} would be deleted (not replayed)",
            extra["name"]
        ));
    }
    Ok(())
}

/// Listener and monitor settings the reference does not update in place: a difference is
/// not replayed.
fn check_settings(want: &Desired, actual: &Actual) -> Result<(), String> {
    for p in &want.pools {
        let (_, _, listeners, monitors) = pool_of(actual, &p.name)?;
        for key in [
            "allowed_cidrs",
            "timeout_client_data_ms",
            "timeout_member_connect_ms",
            "timeout_member_data_ms",
        ] {
            if listeners[0][key] != p.listener[key] {
                return Err(format!("pool {}: listener {key} differs", p.name));
            }
        }
        for key in ["delay_s", "timeout_s", "up_threshold", "down_threshold"] {
            if !p.monitor[key].is_null() && monitors[0][key] != p.monitor[key] {
                return Err(format!("pool {}: monitor {key} differs", p.name));
            }
        }
    }
    Ok(())
}

/// A client that acts as the reference CCM against fakecloud's public API, and records
/// every request.
pub struct Reference {
    http: reqwest::Client,
    /// fakecloud's root (`http://host:port`, the API under `/v1`).
    base: String,
    token: String,
    pub calls: Vec<Call>,
}

impl Reference {
    pub fn new(base_url: &str, token: &str) -> Reference {
        Reference {
            http: reqwest::Client::new(),
            base: base_url.trim_end_matches('/').to_string(),
            token: token.to_string(),
            calls: Vec::new(),
        }
    }

    async fn send(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), String> {
        let mut rb = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = &body {
            rb = rb.json(b);
        }
        let r = rb
            .send()
            .await
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let status = r.status().as_u16();
        let text = r
            .text()
            .await
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let value = serde_json::from_str(&text).unwrap_or(Value::Null);
        self.calls.push(Call {
            method: method.to_string(),
            path: path.to_string(),
            body,
            status,
        });
        let absent = method == reqwest::Method::GET && status == 404;
        if !(200..300).contains(&status) && !absent {
            return Err(format!("{method} {path}: HTTP {status}: {text}"));
        }
        Ok((status, value))
    }

    /// A GET; `Null` for a 404.
    async fn get(&mut self, path: &str) -> Result<Value, String> {
        let (status, v) = self.send(reqwest::Method::GET, path, None).await?;
        Ok(if status == 404 { Value::Null } else { v })
    }

    async fn get_list(&mut self, path: &str) -> Result<Vec<Value>, String> {
        match self.get(path).await? {
            Value::Array(v) => Ok(v),
            other => Err(format!("GET {path}: not a list: {other}")),
        }
    }

    async fn post(&mut self, path: &str, body: Value) -> Result<Value, String> {
        Ok(self.send(reqwest::Method::POST, path, Some(body)).await?.1)
    }

    /// fakecloud's virtual clock, in seconds (its admin API: pacing only, not a reference
    /// call).
    async fn virtual_now(&self) -> Result<f64, String> {
        let v: Value = self
            .http
            .get(format!("{}/_fake/clock", self.base))
            .send()
            .await
            .map_err(|e| format!("clock: {e}"))?
            .json()
            .await
            .map_err(|e| format!("clock: {e}"))?;
        let now = v["now"].as_str().unwrap_or_default();
        chrono::DateTime::parse_from_rfc3339(now)
            .map(|t| t.timestamp_micros() as f64 / 1e6)
            .map_err(|e| format!("clock {now:?}: {e}"))
    }

    /// Sleeps `secs` of fakecloud's virtual time.
    async fn sleep_virtual(&self, secs: f64) -> Result<(), String> {
        let until = self.virtual_now().await? + secs;
        while self.virtual_now().await? < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// Initializes every Node as the reference's node controller (with the upstream cloud
    /// node controller) does: matched to its server by name, `spec.providerID`
    /// `cloudscale://<uuid>`, instance type, zone and region labels (current and legacy),
    /// addresses (the kubelet's node IP first, then Hostname and the public addresses),
    /// the uninitialized taint removed.
    pub async fn initialize_nodes(&mut self, client: &kube::Client) -> Result<(), String> {
        let nodes: Api<Node> = Api::all(client.clone());
        let servers = self.get_list("/v1/servers").await?;
        let list = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("list Nodes: {e}"))?;
        for node in list.items {
            let name = node.metadata.name.clone().unwrap_or_default();
            let matches: Vec<&Value> = servers.iter().filter(|s| s["name"] == name).collect();
            let [server] = matches.as_slice() else {
                return Err(format!("Node {name}: {} servers", matches.len()));
            };
            let zone = server["zone"]["slug"].as_str().unwrap_or_default();
            let region = zone.trim_end_matches(|c: char| c.is_ascii_digit());
            let flavor = server["flavor"]["slug"].as_str().unwrap_or_default();
            let mut addresses = Vec::new();
            let node_ip = node
                .status
                .as_ref()
                .and_then(|s| s.addresses.as_ref())
                .into_iter()
                .flatten()
                .find(|a| a.type_ == "InternalIP")
                .map(|a| a.address.clone());
            if let Some(ip) = &node_ip {
                addresses.push(json!({"type": "InternalIP", "address": ip}));
            }
            addresses.push(json!({"type": "Hostname", "address": name}));
            for iface in server["interfaces"].as_array().into_iter().flatten() {
                let kind = if iface["type"] == "public" {
                    "ExternalIP"
                } else {
                    "InternalIP"
                };
                for a in iface["addresses"].as_array().into_iter().flatten() {
                    let address = a["address"].as_str().unwrap_or_default();
                    if node_ip.as_deref() != Some(address) {
                        addresses.push(json!({"type": kind, "address": address}));
                    }
                }
            }
            let taints: Vec<_> = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.key != UNINITIALIZED_TAINT)
                .collect();
            let patch = json!({
                "metadata": {"labels": {
                    "node.kubernetes.io/instance-type": flavor,
                    "beta.kubernetes.io/instance-type": flavor,
                    "topology.kubernetes.io/zone": zone,
                    "failure-domain.beta.kubernetes.io/zone": zone,
                    "topology.kubernetes.io/region": region,
                    "failure-domain.beta.kubernetes.io/region": region,
                }},
                "spec": {"providerID": format!("cloudscale://{}", server["uuid"].as_str().unwrap_or_default()),
                         "taints": taints},
            });
            nodes
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| format!("initialize Node {name}: {e}"))?;
            let status = json!({"status": {"addresses": addresses}});
            nodes
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(|e| format!("addresses of Node {name}: {e}"))?;
        }
        Ok(())
    }

    /// The servers of the Nodes the upstream service controller passes (not excluded by
    /// label), in Node name order, each read by its provider ID.
    async fn servers(&mut self, client: &kube::Client) -> Result<Vec<Value>, String> {
        let nodes: Api<Node> = Api::all(client.clone());
        let mut list = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("list Nodes: {e}"))?
            .items;
        list.sort_by_key(|n| n.metadata.name.clone());
        let mut out = Vec::new();
        for n in list {
            if n.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(EXCLUDE_LABEL))
                || n.metadata.deletion_timestamp.is_some()
            {
                continue;
            }
            let id = n
                .spec
                .as_ref()
                .and_then(|s| s.provider_id.as_deref())
                .and_then(|p| p.strip_prefix("cloudscale://"))
                .ok_or_else(|| format!("Node {:?} has no provider ID", n.metadata.name))?
                .to_string();
            let s = self.get(&format!("/v1/servers/{id}")).await?;
            if s.is_null() {
                return Err(format!("server {id} not found"));
            }
            out.push(s);
        }
        Ok(out)
    }

    /// One actual-state fetch, in the reference's order.
    async fn actual(&mut self, uuid: &str, name: &str) -> Result<Actual, String> {
        let mut found: Vec<Value> = Vec::new();
        if !uuid.is_empty() {
            let lb = self.get(&format!("/v1/load-balancers/{uuid}")).await?;
            if !lb.is_null() {
                found.push(lb);
            }
        }
        for lb in self.get_list("/v1/load-balancers").await? {
            if lb["name"] == name && !found.iter().any(|f| f["uuid"] == lb["uuid"]) {
                found.push(lb);
            }
        }
        let lb = match found.len() {
            0 => return Ok(Actual::default()),
            1 => found.remove(0),
            n => return Err(format!("found {n} load balancers")),
        };
        let monitors = self.get_list("/v1/load-balancers/health-monitors").await?;
        let listeners = self.get_list("/v1/load-balancers/listeners").await?;
        let mut pools = Vec::new();
        for p in self.get_list("/v1/load-balancers/pools").await? {
            if p["load_balancer"]["uuid"] != lb["uuid"] {
                continue;
            }
            let pool_uuid = p["uuid"].as_str().unwrap_or_default().to_string();
            let members = self
                .get_list(&format!("/v1/load-balancers/pools/{pool_uuid}/members"))
                .await?;
            let of = |x: &&Value| x["pool"]["uuid"] == pool_uuid.as_str();
            let ls = listeners.iter().filter(of).cloned().collect();
            let ms = monitors.iter().filter(of).cloned().collect();
            pools.push((p, members, ls, ms));
        }
        let floating_ips = self
            .get_list("/v1/floating-ips")
            .await?
            .into_iter()
            .filter(|f| f["load_balancer"]["uuid"] == lb["uuid"])
            .filter_map(|f| f["network"].as_str().map(str::to_string))
            .collect();
        Ok(Actual {
            lb: Some(lb),
            pools,
            floating_ips,
        })
    }

    /// EnsureLoadBalancer for the Service `name` in `namespace`, as the reference and the
    /// upstream service controller do it: finalizer, passes until converged, a final
    /// fetch, the annotations and the status. Returns the load balancer as the API shows
    /// it then.
    pub async fn ensure(
        &mut self,
        client: &kube::Client,
        namespace: &str,
        name: &str,
    ) -> Result<Value, String> {
        let services: Api<Service> = Api::namespaced(client.clone(), namespace);
        let svc = services
            .get(name)
            .await
            .map_err(|e| format!("get Service {name}: {e}"))?;
        let mut finalizers = svc.metadata.finalizers.clone().unwrap_or_default();
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_string());
            let patch = json!({"metadata": {"finalizers": finalizers}});
            services
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| format!("finalizer of {name}: {e}"))?;
        }
        let uuid = annotation(&svc, "loadbalancer-uuid");
        let mut converged = false;
        for _ in 0..MAX_PASSES {
            let servers = self.servers(client).await?;
            let want = desired(&svc, &servers)?;
            let actual = self.actual(&uuid, &want.name).await?;
            if self.pass(&want, &actual).await? {
                self.sleep_virtual(PASS_SLEEP_S).await?;
                continue;
            }
            converged = true;
            break;
        }
        if !converged {
            return Err(format!("{name}: not converged after {MAX_PASSES} passes"));
        }
        let want_name = annotation(&svc, "loadbalancer-name");
        let lb = self
            .actual(&uuid, &want_name)
            .await?
            .lb
            .ok_or_else(|| format!("{name}: no load balancer after ensure"))?;
        self.record(&services, &svc, &lb).await?;
        Ok(lb)
    }

    /// One pass of the reference's plan; true when it ends with a refetch.
    async fn pass(&mut self, want: &Desired, actual: &Actual) -> Result<bool, String> {
        let Some(lb) = &actual.lb else {
            let mut body = json!({"name": want.name, "flavor": want.flavor,
                                  "vip_addresses": want.vip_addresses});
            if !want.zone.is_empty() {
                body["zone"] = json!(want.zone);
            }
            self.post("/v1/load-balancers", body).await?;
            return Ok(true);
        };
        if lb["status"] == "changing" {
            return Ok(true);
        }
        let lb_uuid = lb["uuid"].as_str().unwrap_or_default().to_string();
        check_replayable(lb, &lb_uuid, want, actual)?;
        if self.create_pools(&lb_uuid, want, actual).await? {
            return Ok(true);
        }
        // Members of every pool, then listeners, then monitors.
        let mut wrote = self.create_members(want, actual).await?;
        wrote |= self.create_listeners(want, actual).await?;
        wrote |= self.create_monitors(want, actual).await?;
        if wrote {
            return Ok(true);
        }
        check_settings(want, actual)?;
        self.attach_floating_ips(&lb_uuid, want, actual).await?;
        Ok(false)
    }

    /// Creates the pools the load balancer lacks; true if it created one.
    async fn create_pools(
        &mut self,
        lb_uuid: &str,
        want: &Desired,
        actual: &Actual,
    ) -> Result<bool, String> {
        let mut created = false;
        for p in &want.pools {
            let key = (p.name.clone(), p.algorithm.clone(), p.protocol.clone());
            if !actual.pools.iter().any(|(a, ..)| pool_key(a) == key) {
                self.post(
                    "/v1/load-balancers/pools",
                    json!({"name": p.name, "load_balancer": lb_uuid,
                           "algorithm": p.algorithm, "protocol": p.protocol}),
                )
                .await?;
                created = true;
            }
        }
        Ok(created)
    }

    /// Creates the members every pool lacks; true if it created one.
    async fn create_members(&mut self, want: &Desired, actual: &Actual) -> Result<bool, String> {
        let mut wrote = false;
        for p in &want.pools {
            let (pool, members, ..) = pool_of(actual, &p.name)?;
            let wanted: Vec<_> = p.members.iter().map(member_key).collect();
            if members.iter().any(|m| !wanted.contains(&member_key(m))) {
                return Err(format!("pool {}: a member would be deleted", p.name));
            }
            let pool_uuid = pool["uuid"].as_str().unwrap_or_default();
            for m in &p.members {
                if !members.iter().any(|a| member_key(a) == member_key(m)) {
                    self.post(
                        &format!("/v1/load-balancers/pools/{pool_uuid}/members"),
                        m.clone(),
                    )
                    .await?;
                    wrote = true;
                }
            }
        }
        Ok(wrote)
    }

    /// Creates the listener of every pool without one; true if it created one.
    async fn create_listeners(&mut self, want: &Desired, actual: &Actual) -> Result<bool, String> {
        let mut wrote = false;
        for p in &want.pools {
            let (pool, _, listeners, _) = pool_of(actual, &p.name)?;
            match listeners.as_slice() {
                [] => {
                    let mut body = p.listener.clone();
                    body["pool"] = pool["uuid"].clone();
                    self.post("/v1/load-balancers/listeners", body).await?;
                    wrote = true;
                }
                [l] if listener_key(l) == listener_key(&p.listener) => {}
                _ => return Err(format!("pool {}: listeners differ", p.name)),
            }
        }
        Ok(wrote)
    }

    /// Creates the monitor of every pool without one; true if it created one.
    async fn create_monitors(&mut self, want: &Desired, actual: &Actual) -> Result<bool, String> {
        let mut wrote = false;
        for p in &want.pools {
            let (pool, _, _, monitors) = pool_of(actual, &p.name)?;
            match monitors.as_slice() {
                [] => {
                    let mut body = p.monitor.clone();
                    body["pool"] = pool["uuid"].clone();
                    self.post("/v1/load-balancers/health-monitors", body)
                        .await?;
                    wrote = true;
                }
                [m] if monitor_key(m) == monitor_key(&p.monitor) => {}
                _ => return Err(format!("pool {}: monitors differ", p.name)),
            }
        }
        Ok(wrote)
    }

    /// Assigns the floating IPs the load balancer does not hold yet.
    async fn attach_floating_ips(
        &mut self,
        lb_uuid: &str,
        want: &Desired,
        actual: &Actual,
    ) -> Result<(), String> {
        for ip in &want.floating_ips {
            if !actual.floating_ips.contains(ip) {
                let address = ip.split('/').next().unwrap_or_default();
                self.send(
                    reqwest::Method::PATCH,
                    &format!("/v1/floating-ips/{address}"),
                    Some(json!({"load_balancer": lb_uuid})),
                )
                .await?;
            }
        }
        Ok(())
    }

    /// What the reference writes to the Service after a successful ensure: the three
    /// annotations (one JSON patch of `add` operations, only those that differ), and the
    /// status (one ingress entry per VIP, ipMode `Proxy` on Kubernetes 1.30+).
    async fn record(
        &self,
        services: &Api<Service>,
        svc: &Service,
        lb: &Value,
    ) -> Result<(), String> {
        let name = svc.metadata.name.clone().unwrap_or_default();
        let current: BTreeMap<String, String> = svc
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let mut ops = Vec::new();
        if svc.metadata.annotations.is_none() {
            ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
        }
        for (key, value) in [
            (UUID_ANNOTATION, lb["uuid"].as_str().unwrap_or_default()),
            (CONFIG_VERSION_ANNOTATION, "1"),
            (
                ZONE_ANNOTATION,
                lb["zone"]["slug"].as_str().unwrap_or_default(),
            ),
        ] {
            if current.get(key).map(String::as_str) != Some(value) {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                ops.push(
                    json!({"op": "add", "path": format!("/metadata/annotations/{escaped}"),
                                "value": value}),
                );
            }
        }
        if ops.iter().any(|o| o["path"] != "/metadata/annotations") {
            // Typed by kube's own JSON patch type (the workspace has two versions).
            let patch =
                serde_json::from_value(Value::Array(ops)).map_err(|e| format!("patch: {e}"))?;
            services
                .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
                .await
                .map_err(|e| format!("annotate {name}: {e}"))?;
        }
        let ingress: Vec<Value> = lb["vip_addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| json!({"ip": v["address"], "ipMode": "Proxy"}))
            .collect();
        let status = json!({"status": {"loadBalancer": {"ingress": ingress}}});
        services
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(|e| format!("status of {name}: {e}"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(v: Value) -> Service {
        serde_json::from_value(v).expect("service")
    }

    fn server(name: &str, private: &str) -> Value {
        json!({"uuid": format!("uuid-{name}"), "name": name, "zone": {"slug": "rma1"},
        "interfaces": [
            {"type": "public", "addresses": [{"address": "5.102.1.1", "subnet": {"uuid": "pub"}}]},
            {"type": "private", "addresses": [{"address": private, "subnet": {"uuid": "s1"}}]},
        ]})
    }

    #[test]
    fn the_worked_example_of_the_reference() {
        let svc = service(json!({
            "metadata": {"name": "web", "uid": "abc"},
            "spec": {"type": "LoadBalancer", "ports": [
                {"name": "http", "port": 80, "nodePort": 30080, "protocol": "TCP"},
                {"name": "https", "port": 443, "nodePort": 30443, "protocol": "TCP"},
            ]},
        }));
        let d =
            desired(&svc, &[server("w1", "10.0.0.1"), server("w2", "10.0.0.2")]).expect("desired");
        assert_eq!(d.name, "k8s-service-abc");
        assert_eq!(d.zone, "rma1");
        assert_eq!(d.vip_addresses, json!([]));
        let names: Vec<&str> = d.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["tcp/http", "tcp/https"]);
        assert_eq!(d.pools[0].members[1]["name"], "10.0.0.2:30080");
        assert_eq!(d.pools[0].members[1]["monitor_port"], 30080);
        assert_eq!(d.pools[1].listener["name"], "tcp/443");
        assert_eq!(d.pools[1].listener["allowed_cidrs"], json!([]));
        assert_eq!(
            d.pools[0].monitor,
            json!({"type": "tcp", "http": {}, "delay_s": 2, "timeout_s": 1,
                   "up_threshold": 2, "down_threshold": 3})
        );
    }

    #[test]
    fn local_policy_checks_livez_on_the_health_check_node_port() {
        let svc = service(json!({
            "metadata": {"name": "web", "uid": "abc"},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                     "healthCheckNodePort": 31000,
                     "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"},
                               {"name": "dns", "port": 53, "nodePort": 30053, "protocol": "UDP"}]},
        }));
        let d = desired(&svc, &[server("w1", "10.0.0.1")]).expect("desired");
        assert_eq!(d.pools[0].name, "tcp");
        assert_eq!(d.pools[1].name, "udp/dns");
        assert_eq!(d.pools[1].protocol, "udp");
        assert_eq!(d.pools[1].listener["name"], "udp/53");
        assert_eq!(d.pools[0].members[0]["monitor_port"], 31000);
        assert_eq!(d.pools[0].monitor["type"], "http");
        assert_eq!(
            d.pools[1].monitor["type"], "http",
            "one monitor type for all pools"
        );
        assert_eq!(d.pools[0].monitor["http"]["url_path"], "/livez");
        assert_eq!(d.pools[0].monitor["http"]["version"], "1.0");
    }
}
