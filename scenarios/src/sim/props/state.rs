//! What a case has made of its Service and nodes so far, and the Service manifest that
//! follows from it: the runner plays each change on this state first, to skip one that
//! cannot apply (or would leave no node to serve), then writes the result.

use super::{A, Change, NodeDraw, PortDraw, Spec};
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct NodeState {
    pub name: String,
    pub edge: bool,
    pub endpoint: bool,
    pub running: bool,
    pub gone: bool,
}

#[derive(Debug, Clone)]
pub struct State {
    pub ports: Vec<PortDraw>,
    /// Node ports asked for explicitly, by port index.
    pub node_ports: BTreeMap<usize, i32>,
    pub local: bool,
    /// Annotation suffixes and values (the subnet placeholder filled in).
    pub annotations: BTreeMap<String, String>,
    /// Refused annotations the spec carries (their effective value is the previous one).
    pub refused: BTreeMap<String, String>,
    /// Floating IP networks claimed.
    pub fips: Vec<String>,
    /// Other Services (in namespace `rival`) that claim floating IPs of this one (the runner
    /// deletes them before the end).
    pub rivals: Vec<String>,
    pub nodes: Vec<NodeState>,
}

impl State {
    pub fn new(spec: &Spec, nodes: &[NodeDraw], subnet: &str) -> State {
        State {
            ports: spec.ports.clone(),
            node_ports: BTreeMap::new(),
            local: spec.local,
            annotations: spec
                .annotations
                .iter()
                .map(|(k, v)| (k.clone(), v.replace(super::SUBNET, subnet)))
                .collect(),
            refused: BTreeMap::new(),
            fips: Vec::new(),
            rivals: Vec::new(),
            nodes: nodes
                .iter()
                .enumerate()
                .map(|(i, d)| NodeState {
                    name: format!("node-{}", i + 1),
                    edge: d.edge,
                    endpoint: d.endpoint,
                    running: true,
                    gone: false,
                })
                .collect(),
        }
    }

    /// Whether some node would carry the Service's traffic: running, kept by the node
    /// selector, and (under `Local`) running an endpoint.
    pub fn serving(&self) -> bool {
        let selector = self.annotations.contains_key("node-selector");
        self.nodes
            .iter()
            .any(|n| !n.gone && n.running && (!selector || n.edge) && (!self.local || n.endpoint))
    }

    /// The index of a node `i` names (modulo the nodes still there).
    pub fn node(&self, i: usize) -> Option<usize> {
        let live: Vec<usize> = (0..self.nodes.len())
            .filter(|j| !self.nodes[*j].gone)
            .collect();
        (!live.is_empty()).then(|| live[i % live.len()])
    }

    fn port(&self, i: usize) -> Option<usize> {
        (!self.ports.is_empty()).then(|| i % self.ports.len())
    }

    fn annotate(&mut self, edits: &[(String, Option<String>)], subnet: &str) {
        for (k, v) in edits {
            match v {
                Some(v) => self
                    .annotations
                    .insert(k.clone(), v.replace(super::SUBNET, subnet)),
                None => self.annotations.remove(k),
            };
        }
    }

    /// Applies `change` to the state (world-side effects are the runner's); `false` when it
    /// does not apply and the state is unchanged.
    pub fn apply(&mut self, change: &Change, subnet: &str, step: usize) -> bool {
        let before = self.clone();
        let applied = match change {
            Change::Annotate(edits) => {
                self.annotate(edits, subnet);
                true
            }
            Change::Refused { key, value, with } => {
                self.annotate(with, subnet);
                self.refused
                    .insert(key.clone(), value.replace(super::SUBNET, subnet));
                true
            }
            Change::RenamePort(i) => self.rename_port(*i, step),
            Change::RenumberPort(i, to) => self.renumber_port(*i, *to),
            Change::NodePort(i) => self.set_node_port(*i, step),
            Change::AddPort(p) => self.add_port(p),
            Change::RemovePort(i) => self.remove_port(*i),
            Change::Policy(local) => {
                self.local = *local;
                true
            }
            Change::NodeJoin(d) => self.join_node(d),
            Change::NodeRelabel(i) => self.node(*i).map(|i| self.nodes[i].edge ^= true).is_some(),
            Change::NodeStop(i) => self.set_running(*i, false),
            Change::NodeStart(i) => self.set_running(*i, true),
            Change::NodeDelete(i) => self.node(*i).map(|i| self.nodes[i].gone = true).is_some(),
            // The networks are the runner's to fill in.
            Change::FipAdd(_) | Change::FipMove(_) => true,
            Change::FipRemove => {
                let had = !self.fips.is_empty();
                self.fips.clear();
                had
            }
            Change::RivalClaim(_) => {
                self.rivals.push(format!("rival-{step}"));
                !self.fips.is_empty()
            }
            Change::Misconfigured(_) => true,
            // The runner looks whether there is a neighbour to play them with, and fills in
            // the floating IPs and names they take from it.
            Change::ClaimOf(_)
            | Change::Hand { .. }
            | Change::NameOf(_)
            | Change::CopyOf(_)
            | Change::DeleteNeighbour(_) => true,
        };
        if !applied || !self.serving() {
            *self = before;
            return false;
        }
        true
    }

    fn rename_port(&mut self, i: usize, step: usize) -> bool {
        let Some(i) = self.port(i) else {
            return false;
        };
        let base = self.ports[i].name.clone().unwrap_or_else(|| "port".into());
        self.ports[i].name = Some(format!("r{step}-{base}"));
        true
    }

    /// A new number, unless another port of the protocol has it.
    fn renumber_port(&mut self, i: usize, to: u16) -> bool {
        match self.port(i) {
            Some(i)
                if !self
                    .ports
                    .iter()
                    .any(|p| p.port == to && p.udp == self.ports[i].udp) =>
            {
                self.ports[i].port = to;
                true
            }
            _ => false,
        }
    }

    fn set_node_port(&mut self, i: usize, step: usize) -> bool {
        let Some(i) = self.port(i) else {
            return false;
        };
        // From the top of the range down: the API server allocates from the bottom.
        self.node_ports
            .insert(i, 32_700 - (step as i32) * 8 - i as i32);
        true
    }

    /// A port of its own number and name, among at most four named ports.
    fn add_port(&mut self, p: &PortDraw) -> bool {
        let clash = self
            .ports
            .iter()
            .any(|o| (o.port == p.port && o.udp == p.udp) || o.name.is_none() || o.name == p.name);
        if clash || self.ports.len() >= 4 {
            return false;
        }
        self.ports.push(p.clone());
        true
    }

    /// Removes a port, unless it is the last.
    fn remove_port(&mut self, i: usize) -> bool {
        match self.port(i) {
            Some(i) if self.ports.len() > 1 => {
                self.ports.remove(i);
                // Explicit node ports follow their ports' indexes.
                self.node_ports = self
                    .node_ports
                    .iter()
                    .filter(|(j, _)| **j != i)
                    .map(|(j, n)| (if *j > i { j - 1 } else { *j }, *n))
                    .collect();
                true
            }
            _ => false,
        }
    }

    fn join_node(&mut self, d: &NodeDraw) -> bool {
        self.nodes.push(NodeState {
            name: format!("node-{}", self.nodes.len() + 1),
            edge: d.edge,
            endpoint: d.endpoint,
            running: true,
            gone: false,
        });
        true
    }

    /// Starts (`running`) or stops a node, unless it already is so.
    fn set_running(&mut self, i: usize, running: bool) -> bool {
        match self.node(i) {
            Some(i) if self.nodes[i].running != running => {
                self.nodes[i].running = running;
                true
            }
            _ => false,
        }
    }

    /// The annotations the Service carries (refused ones included when `with_refused`).
    pub fn annotation_map(&self, with_refused: bool) -> serde_json::Map<String, Value> {
        let mut map: serde_json::Map<String, Value> = self
            .annotations
            .iter()
            .map(|(k, v)| (format!("{A}{k}"), json!(v)))
            .collect();
        if with_refused {
            for (k, v) in &self.refused {
                map.insert(format!("{A}{k}"), json!(v));
            }
        }
        if !self.fips.is_empty() {
            map.insert(
                format!("{A}floating-ips"),
                json!(serde_json::to_string(&self.fips).unwrap_or_default()),
            );
        }
        map
    }

    /// Keeps every port on the node port `live` gave it (by index: the state's ports are the
    /// live Service's, in order), so that a change moves node ports only where it means to.
    pub fn pin_node_ports(&mut self, live: &[Option<i32>]) {
        for (i, n) in live.iter().enumerate().take(self.ports.len()) {
            if let Some(n) = n {
                self.node_ports.entry(i).or_insert(*n);
            }
        }
    }

    /// The Service's ports, with the node ports pinned or asked for (the others are
    /// allocated).
    pub fn ports_json(&self) -> Vec<Value> {
        self.ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut v = json!({"port": p.port, "targetPort": p.port,
                                   "protocol": if p.udp { "UDP" } else { "TCP" }});
                if let Some(n) = &p.name {
                    v["name"] = json!(n);
                }
                if let Some(n) = self.node_ports.get(&i) {
                    v["nodePort"] = json!(n);
                }
                v
            })
            .collect()
    }

    /// The EndpointSlice of the Service: a ready endpoint on every node that runs one.
    pub fn endpoint_slice(&self) -> Value {
        let endpoints: Vec<Value> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.endpoint && !n.gone)
            .map(|(i, n)| {
                json!({"addresses": [format!("10.244.{}.10", i + 1)],
                       "conditions": {"ready": true}, "nodeName": n.name})
            })
            .collect();
        let ports: Vec<Value> = self
            .ports
            .iter()
            .map(|p| {
                json!({"name": p.name.clone().unwrap_or_default(), "port": p.port,
                       "protocol": if p.udp { "UDP" } else { "TCP" }})
            })
            .collect();
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-props", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": endpoints, "ports": ports,
        })
    }

    /// The monitor's recheck time (delay × up threshold).
    pub fn recheck_s(&self) -> f64 {
        use ccm::service::pure::annotations::{
            DEFAULT_HEALTH_MONITOR_DELAY_S as DELAY, DEFAULT_HEALTH_MONITOR_UP_THRESHOLD as UP,
        };
        let get = |k: &str, d: i64| {
            self.annotations
                .get(k)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(d as f64)
        };
        get("health-monitor-delay-s", DELAY) * get("health-monitor-up-threshold", UP)
    }

    /// The allowed CIDRs (empty: everyone).
    pub fn cidrs(&self) -> Vec<String> {
        self.annotations
            .get("listener-allowed-cidrs")
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default()
    }
}

/// Whether `client` is inside one of `cidrs` (IPv4; empty: everyone is).
pub fn allowed(client: std::net::Ipv4Addr, cidrs: &[String]) -> bool {
    cidrs.is_empty()
        || cidrs.iter().any(|c| {
            let (net, len) = c.split_once('/').unwrap_or((c, "32"));
            match (net.parse::<std::net::Ipv4Addr>(), len.parse::<u32>()) {
                (Ok(net), Ok(len)) if len <= 32 => {
                    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                    u32::from(client) & mask == u32::from(net) & mask
                }
                _ => false,
            }
        })
}
