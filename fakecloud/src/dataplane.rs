//! The load-balancer data-plane model: what the load balancers *do*, as opposed to what the
//! API *shows*. See `fakecloud/MODEL.md` for the model, its rules and its assumptions.
//!
//! The API view changes the moment a request is answered; the data plane sees each change
//! only once the load balancer has applied it. Every change is kept as an [`AppliedOp`] with
//! the configuration the load balancer runs from its `effective_at` on, so that any past
//! moment can be asked: would a new connection from this client to this address and port
//! have succeeded?
//!
//! Everything here is a pure function of the recorded history and a point in virtual time.
//! History at or before "now" never changes (new records are effective now or later), so
//! repeated queries agree and a manual clock gives identical answers run after run.

use crate::clock::{Time, delta_from_secs};
use indexmap::IndexMap;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;
use uuid::Uuid;

/// All history the data plane needs; part of the state dump.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct DataPlane {
    pub lbs: IndexMap<Uuid, LbHistory>,
    /// Per server: its addresses and when it answered (running) or not.
    pub hosts: IndexMap<Uuid, HostHistory>,
    /// Backend behaviour declared through `/_fake/backends`.
    pub backends: Backends,
    /// Floating IP assignments, in time order.
    pub floating: Vec<FloatingEvent>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LbHistory {
    pub name: String,
    /// Its tags when created, and when deleted: a deleted load balancer's view still says
    /// whose it was (the console shows the Service a CCM tagged it for).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    pub created_at: Time,
    /// Provisioning done: VIPs answer (with an empty configuration) from here on.
    pub ready_at: Time,
    pub deleted_at: Option<Time>,
    pub vips: Vec<IpAddr>,
    /// Applied operations in the order the load balancer applies them.
    pub ops: Vec<AppliedOp>,
}

/// One API write as the load balancer applies it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppliedOp {
    pub requested_at: Time,
    pub effective_at: Time,
    /// e.g. `create listener "tcp/80" (tcp 80)`.
    pub operation: String,
    /// The configuration the data plane runs from `effective_at` on.
    pub config: LbConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LbConfig {
    pub listeners: Vec<ListenerCfg>,
    /// Sorted by UUID (see [`LbConfig::member`]).
    #[serde(deserialize_with = "sorted_members")]
    pub members: Vec<MemberCfg>,
    pub monitors: Vec<MonitorCfg>,
}

impl LbConfig {
    /// The configuration with its members sorted by UUID, as [`LbConfig::member`] needs.
    pub fn new(
        listeners: Vec<ListenerCfg>,
        mut members: Vec<MemberCfg>,
        monitors: Vec<MonitorCfg>,
    ) -> LbConfig {
        members.sort_by_key(|m| m.uuid);
        LbConfig {
            listeners,
            members,
            monitors,
        }
    }

    /// The member `uuid`: a binary search, since a member's health is followed through
    /// every configuration a load balancer ran (a hundred members in a hundred
    /// configurations for each of a pool's members).
    pub fn member(&self, uuid: Uuid) -> Option<&MemberCfg> {
        self.members
            .binary_search_by_key(&uuid, |m| m.uuid)
            .ok()
            .map(|i| &self.members[i])
    }
}

fn sorted_members<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<MemberCfg>, D::Error> {
    let mut members = Vec::<MemberCfg>::deserialize(d)?;
    members.sort_by_key(|m| m.uuid);
    Ok(members)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListenerCfg {
    pub uuid: Uuid,
    pub name: String,
    pub protocol: String,
    pub port: u16,
    pub allowed_cidrs: Vec<IpNet>,
    pub pool: Option<Uuid>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberCfg {
    pub uuid: Uuid,
    pub pool: Uuid,
    pub address: IpAddr,
    pub protocol_port: u16,
    pub monitor_port: Option<u16>,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorCfg {
    pub uuid: Uuid,
    pub pool: Uuid,
    pub kind: String,
    pub delay_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    pub http: Option<HttpCheck>,
}

/// The HTTP check of a health monitor: part of its record and of the configuration the
/// data plane runs, so it lives here, below the model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HttpCheck {
    pub expected_codes: Vec<String>,
    pub method: String,
    pub url_path: String,
    pub version: String,
    pub host: Option<String>,
}

impl Default for HttpCheck {
    fn default() -> Self {
        HttpCheck {
            expected_codes: vec!["200".to_string()],
            method: "GET".to_string(),
            url_path: "/".to_string(),
            version: "1.1".to_string(),
            host: None,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostHistory {
    pub name: String,
    pub addresses: Vec<IpAddr>,
    /// `(since, answering)`, in time order; entries may lie in the future (a boot in
    /// progress) and are cut back when a later action overrides them.
    pub log: Vec<(Time, bool)>,
}

/// How a backend address (and optionally port) answers, from `at` on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackendDecl {
    pub at: Time,
    pub address: IpAddr,
    /// `None`: every port of the address.
    pub port: Option<u16>,
    /// `None`: back to the default (answers while its server runs).
    pub behaviour: Option<Behaviour>,
}

/// The backend declarations, per address and port in time order, so that asking how one
/// address and port behaves costs two map lookups and a binary search however many are
/// declared (a simulated kube-proxy declares every node port on every node: 100,000 at
/// 1,000 Services on 100 nodes). Serialized as the flat list of declarations.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(from = "Vec<BackendDecl>", into = "Vec<BackendDecl>")]
pub struct Backends {
    by_address: BTreeMap<IpAddr, BTreeMap<Option<u16>, Declared>>,
}

/// The declarations of one address and port (`None`: the whole address), in time order:
/// from when on, and how it answers (`None`: back to the default).
type Declared = Vec<(Time, Option<Behaviour>)>;

impl Backends {
    pub fn push(&mut self, d: BackendDecl) {
        let list = self
            .by_address
            .entry(d.address)
            .or_default()
            .entry(d.port)
            .or_default();
        // Declarations come in time order; one from the past still lands in its place.
        let at = list.partition_point(|(t, _)| *t <= d.at);
        list.insert(at, (d.at, d.behaviour));
    }

    /// The last declaration for exactly `address` and `port` at or before `t`: `Some(None)`
    /// when it put the default back, `None` when there is none.
    pub fn latest(&self, address: IpAddr, port: Option<u16>, t: Time) -> Option<Option<Behaviour>> {
        let list = self.by_address.get(&address)?.get(&port)?;
        let n = list.partition_point(|(at, _)| *at <= t);
        n.checked_sub(1).map(|i| list[i].1)
    }

    /// The times of the declarations for `address` as a whole or on one of `ports`.
    fn change_points(&self, address: IpAddr, ports: &[u16], out: &mut Vec<Time>) {
        let Some(by_port) = self.by_address.get(&address) else {
            return;
        };
        let wanted = std::iter::once(None).chain(ports.iter().map(|p| Some(*p)));
        for port in wanted {
            out.extend(by_port.get(&port).into_iter().flatten().map(|(t, _)| *t));
        }
    }

    /// Forgets every declaration but the last one in force at `t` for each address and
    /// port (see [`DataPlane::forget_before`]).
    /// One that only put the default back by then is as good as none (a node port of a
    /// Service long deleted): it goes too.
    fn forget_before(&mut self, t: Time) {
        for by_port in self.by_address.values_mut() {
            for list in by_port.values_mut() {
                let n = list.partition_point(|(at, _)| *at <= t);
                list.drain(..n.saturating_sub(1));
            }
            by_port.retain(|_, list| !matches!(list.as_slice(), [(at, None)] if *at <= t));
        }
        self.by_address.retain(|_, by_port| !by_port.is_empty());
    }

    /// Every declaration, by address and port, each in time order.
    pub fn iter(&self) -> impl Iterator<Item = BackendDecl> + '_ {
        self.by_address.iter().flat_map(|(address, by_port)| {
            by_port.iter().flat_map(move |(port, list)| {
                list.iter().map(move |(at, behaviour)| BackendDecl {
                    at: *at,
                    address: *address,
                    port: *port,
                    behaviour: *behaviour,
                })
            })
        })
    }
}

impl From<Vec<BackendDecl>> for Backends {
    fn from(list: Vec<BackendDecl>) -> Backends {
        let mut b = Backends::default();
        for d in list {
            b.push(d);
        }
        b
    }
}

impl From<Backends> for Vec<BackendDecl> {
    fn from(b: Backends) -> Vec<BackendDecl> {
        let mut list: Vec<BackendDecl> = b.iter().collect();
        list.sort_by_key(|d| d.at);
        list
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behaviour {
    /// A TCP connect succeeds.
    pub tcp: bool,
    /// A UDP probe is answered.
    pub udp: bool,
    /// Status of an HTTP check (only when `tcp`).
    pub http_status: u16,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            tcp: true,
            udp: true,
            http_status: 200,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloatingEvent {
    pub at: Time,
    pub address: IpAddr,
    /// The load balancer the IP points to from `at` on (`None`: a server, or deleted).
    pub load_balancer: Option<Uuid>,
}

// ---- recording ------------------------------------------------------------------------

impl DataPlane {
    pub fn record_host(
        &mut self,
        server: Uuid,
        name: &str,
        addresses: Vec<IpAddr>,
        now: Time,
        transitions: &[(Time, bool)],
    ) {
        let host = self.hosts.entry(server).or_default();
        host.name = name.to_string();
        host.addresses = addresses;
        // A new action overrides whatever was scheduled after now.
        host.log.retain(|(t, _)| *t < now);
        host.log.extend_from_slice(transitions);
    }

    /// Updates a host's addresses without touching its power history.
    pub fn set_host_addresses(&mut self, server: Uuid, name: &str, addresses: Vec<IpAddr>) {
        let host = self.hosts.entry(server).or_default();
        host.name = name.to_string();
        host.addresses = addresses;
    }

    pub fn record_floating(&mut self, address: IpAddr, load_balancer: Option<Uuid>, now: Time) {
        self.floating.push(FloatingEvent {
            at: now,
            address,
            load_balancer,
        });
    }

    /// Whether the host owning `address` at `t` answers (`None`: no server owned it then).
    /// A server owns its addresses from its first power record on; when an address passed
    /// from a deleted server to a new one, the newest owner counts.
    fn host_answers(&self, address: IpAddr, t: Time) -> Option<bool> {
        let host = self
            .hosts
            .values()
            .filter(|h| h.addresses.contains(&address))
            .filter_map(|h| h.log.first().map(|(since, _)| (*since, h)))
            .filter(|(since, _)| *since <= t)
            .max_by_key(|(since, _)| *since)
            .map(|(_, h)| h)?;
        Some(
            host.log
                .iter()
                .take_while(|(since, _)| *since <= t)
                .last()
                .is_some_and(|(_, up)| *up),
        )
    }

    /// How `address:port` behaves at `t`: declarations first (port over address-wide), then
    /// the default; a server that is not running never answers.
    pub fn behaviour(&self, address: IpAddr, port: u16, t: Time) -> Behaviour {
        if self.host_answers(address, t) == Some(false) {
            return Behaviour {
                tcp: false,
                udp: false,
                http_status: 0,
            };
        }
        match self.backends.latest(address, Some(port), t) {
            Some(Some(b)) => b,
            _ => self
                .backends
                .latest(address, None, t)
                .flatten()
                .unwrap_or_default(),
        }
    }

    /// Times at which anything about `address` on one of `ports` may change.
    fn address_change_points(&self, address: IpAddr, ports: &[u16], out: &mut Vec<Time>) {
        if let Some(host) = self.hosts.values().find(|h| h.addresses.contains(&address)) {
            out.extend(host.log.iter().map(|(t, _)| *t));
        }
        self.backends.change_points(address, ports, out);
    }
}

// ---- forgetting -----------------------------------------------------------------------

impl DataPlane {
    /// Forgets the history before `t` that no question about `t` or later needs, for a
    /// process that runs for days (`scenarios/src/sim/soak.rs`: a week of churn would
    /// otherwise keep every configuration every load balancer ever ran, and every health
    /// question would walk through all of them): load balancers deleted by `t`, and of
    /// every other record (applied operations, server power records, backend declarations,
    /// floating IP assignments) all but the last one in force at `t`.
    ///
    /// Answers about times before `t` are no longer the recorded ones. A member's checks
    /// start again from the configuration in force at `t`, so its health may differ for
    /// up to `up_threshold` × `delay_s` after that (50 s at most); callers forget only what
    /// lies far further back.
    pub fn forget_before(&mut self, t: Time) {
        self.lbs.retain(|_, lb| lb.deleted_at.is_none_or(|d| d > t));
        for lb in self.lbs.values_mut() {
            let n = lb.ops.partition_point(|op| op.effective_at <= t);
            lb.ops.drain(..n.saturating_sub(1));
        }
        for host in self.hosts.values_mut() {
            let n = host.log.partition_point(|(at, _)| *at <= t);
            host.log.drain(..n.saturating_sub(1));
        }
        self.backends.forget_before(t);
        let mut last: BTreeMap<IpAddr, usize> = BTreeMap::new();
        for (i, e) in self.floating.iter().enumerate().filter(|(_, e)| e.at <= t) {
            last.insert(e.address, i);
        }
        let mut i = 0;
        self.floating.retain(|e| {
            let keep = e.at > t || last.get(&e.address) == Some(&i);
            i += 1;
            keep
        });
    }
}

impl LbHistory {
    /// The configuration running at `t`, if the load balancer is up then.
    pub fn config_at(&self, t: Time) -> Option<&LbConfig> {
        if t < self.ready_at || self.deleted_at.is_some_and(|d| t >= d) {
            return None;
        }
        // Effective times never decrease (changes apply in order), so binary search works.
        let applied = self.ops.partition_point(|op| op.effective_at <= t);
        applied.checked_sub(1).map(|i| &self.ops[i].config)
    }

    fn boundaries(&self, out: &mut Vec<Time>) {
        out.push(self.ready_at);
        out.extend(self.deleted_at);
        out.extend(self.ops.iter().map(|o| o.effective_at));
    }
}

// ---- member health --------------------------------------------------------------------

/// A member's health as its monitor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Not (yet) part of the applied configuration.
    Absent,
    NoMonitor,
    /// Checked, but not yet `up_threshold` successes in a row.
    Changing,
    Up,
    Down,
}

impl Health {
    pub fn api_status(self, pending_with_monitor: bool) -> &'static str {
        match self {
            Health::Absent if pending_with_monitor => "changing",
            Health::Absent | Health::NoMonitor => "no_monitor",
            Health::Changing => "changing",
            Health::Up => "up",
            Health::Down => "down",
        }
    }

    /// Whether the load balancer sends new connections to the member.
    pub fn routable(self) -> bool {
        matches!(self, Health::Up | Health::NoMonitor)
    }
}

/// Whether one check of `monitor` against `member` succeeds at `t`.
fn check_succeeds(dp: &DataPlane, member: &MemberCfg, monitor: &MonitorCfg, t: Time) -> bool {
    let port = member.monitor_port.unwrap_or(member.protocol_port);
    let b = dp.behaviour(member.address, port, t);
    match monitor.kind.as_str() {
        "udp-connect" => b.udp,
        "http" | "https" => {
            let codes = monitor
                .http
                .as_ref()
                .map(|h| h.expected_codes.clone())
                .unwrap_or_else(|| vec!["200".to_string()]);
            b.tcp && code_matches(&codes, b.http_status)
        }
        "ping" => b.tcp || b.udp,
        _ => b.tcp,
    }
}

/// `expected_codes` entries are single codes (`"200"`) or ranges (`"200-204"`).
pub fn code_matches(codes: &[String], status: u16) -> bool {
    codes.iter().any(|c| match c.split_once('-') {
        Some((lo, hi)) => match (lo.parse::<u16>(), hi.parse::<u16>()) {
            (Ok(lo), Ok(hi)) => (lo..=hi).contains(&status),
            _ => false,
        },
        None => c.parse::<u16>().ok() == Some(status),
    })
}

/// The health of `member` over time up to `until`, as `(since, health)` changes.
///
/// Checks run every `delay_s` from the moment the member and its monitor are both applied;
/// `up_threshold` successes in a row make it `Up`, `down_threshold` failures in a row make it
/// `Down`. Between two change points (configuration applied, server started or stopped,
/// backend declared) every check has the same outcome, so whole runs of checks are counted
/// arithmetically instead of being simulated one by one.
pub fn member_health(
    dp: &DataPlane,
    lb: &LbHistory,
    member: Uuid,
    until: Time,
) -> Vec<(Time, Health)> {
    let points = member_change_points(dp, lb, member, until);
    let mut run = HealthRun {
        events: Vec::new(),
        monitor_id: None,
        delay: delta_from_secs(2.0),
        next_check: None,
        state: Health::Absent,
        ok_run: 0,
        fail_run: 0,
    };
    for (i, &start) in points.iter().enumerate() {
        let last = i + 1 == points.len();
        let end = points.get(i + 1).copied().unwrap_or(until);
        let cfg = lb.config_at(start);
        let m = cfg.and_then(|c| c.member(member));
        let Some(m) = m else {
            run.unchecked(start, Health::Absent);
            continue;
        };
        let mon = cfg.and_then(|c| c.monitors.iter().find(|x| x.pool == m.pool));
        let Some(mon) = mon else {
            run.unchecked(start, Health::NoMonitor);
            continue;
        };
        run.monitor(start, mon);
        let Some(check) = run.next_check else {
            continue;
        };
        if check > end || (check == end && !last) {
            continue;
        }
        let outcome = check_succeeds(dp, m, mon, start);
        run.checks(check, end, last, outcome, mon);
    }
    run.events
}

/// The moments up to `until` at which a member's checks may change outcome: the load
/// balancer's configuration changes and the changes of what its address answers.
fn member_change_points(dp: &DataPlane, lb: &LbHistory, member: Uuid, until: Time) -> Vec<Time> {
    let mut points: Vec<Time> = Vec::new();
    lb.boundaries(&mut points);
    let configs = lb.ops.iter().filter_map(|o| o.config.member(member));
    let mut ports = Vec::new();
    let mut address = None;
    for m in configs {
        address = Some(m.address);
        ports.extend(
            [Some(m.protocol_port), m.monitor_port]
                .into_iter()
                .flatten(),
        );
    }
    if let Some(a) = address {
        dp.address_change_points(a, &ports, &mut points);
    }
    points.retain(|t| *t <= until);
    points.sort();
    points.dedup();
    points
}

/// The check state of one member, carried across the segments between change points, and
/// the health changes found so far.
struct HealthRun {
    events: Vec<(Time, Health)>,
    monitor_id: Option<Uuid>,
    delay: chrono::TimeDelta,
    next_check: Option<Time>,
    state: Health,
    ok_run: i64,
    fail_run: i64,
}

impl HealthRun {
    /// Records `h` at `t` unless it is the current health already.
    fn push(&mut self, t: Time, h: Health) {
        if self.events.last().map(|(_, last)| *last) != Some(h) {
            self.events.push((t, h));
        }
    }

    /// From `start` the member is not checked (`Absent` or `NoMonitor`).
    fn unchecked(&mut self, start: Time, health: Health) {
        self.state = health;
        self.monitor_id = None;
        self.next_check = None;
        self.push(start, health);
    }

    /// From `start` the member is under `mon`.
    fn monitor(&mut self, start: Time, mon: &MonitorCfg) {
        let new_delay = delta_from_secs(mon.delay_s.max(1) as f64);
        if self.monitor_id != Some(mon.uuid)
            || matches!(self.state, Health::Absent | Health::NoMonitor)
        {
            // A new monitor (or a member newly under one) starts from scratch.
            self.monitor_id = Some(mon.uuid);
            self.state = Health::Changing;
            self.ok_run = 0;
            self.fail_run = 0;
            self.delay = new_delay;
            self.next_check = Some(start + self.delay);
            self.push(start, self.state);
        } else if new_delay != self.delay {
            // A changed interval takes effect from the change on.
            self.delay = new_delay;
            self.next_check = Some(start + self.delay);
        }
    }

    /// Counts the checks from `check` to `end`, all with `outcome`, and the health they
    /// reach; `last`: the segment is the last one.
    fn checks(&mut self, check: Time, end: Time, last: bool, outcome: bool, mon: &MonitorCfg) {
        let step = self.delay.num_microseconds().unwrap_or(1).max(1);
        let span = (end - check).num_microseconds().unwrap_or(0);
        // Checks at check, check+delay, ... strictly before `end`; the last segment also
        // counts a check falling exactly on `until`, so "now" sees its own check.
        let count = match (span, last) {
            (s, _) if s < 0 => 0,
            (s, true) => s / step + 1,
            (0, false) => 0,
            (s, false) => (s - 1) / step + 1,
        };
        if outcome {
            self.fail_run = 0;
            let need = mon.up_threshold.max(1) - self.ok_run;
            self.reach(Health::Up, need, count, check, step);
            self.ok_run += count;
        } else {
            self.ok_run = 0;
            let need = mon.down_threshold.max(1) - self.fail_run;
            self.reach(Health::Down, need, count, check, step);
            self.fail_run += count;
        }
        self.next_check = Some(check + chrono::TimeDelta::microseconds(step * count));
    }

    /// Turns to `health` at the `need`th of `count` checks `step` µs apart from `check`,
    /// if there are that many and it is not the health already.
    fn reach(&mut self, health: Health, need: i64, count: i64, check: Time, step: i64) {
        if self.state != health && need <= count {
            let at = check + chrono::TimeDelta::microseconds(step * (need - 1).max(0));
            self.state = health;
            self.push(at, health);
        }
    }
}

/// The health at `t` from a list of changes.
pub fn health_at(events: &[(Time, Health)], t: Time) -> Health {
    events
        .iter()
        .take_while(|(since, _)| *since <= t)
        .last()
        .map(|(_, h)| *h)
        .unwrap_or(Health::Absent)
}

// ---- availability ---------------------------------------------------------------------

/// One way into a load balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Vip,
    FloatingIp,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DownInterval {
    #[serde(serialize_with = "crate::clock::ser_time")]
    pub from: Time,
    #[serde(serialize_with = "crate::clock::ser_time")]
    pub to: Time,
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryAvailability {
    pub address: IpAddr,
    pub kind: EntryKind,
    pub protocol: String,
    pub port: u16,
    pub down: Vec<DownInterval>,
    /// The sum of `down` (within the window asked for).
    pub downtime_s: f64,
    /// When a new connection first succeeded, since the load balancer was created
    /// (`None`: never, up to the end of the window). The serving life runs from here to
    /// the deletion: `downtime_s` split by it, below, tells provisioning and the first
    /// configuration, and the time after deletion, from outages while it served.
    #[serde(serialize_with = "crate::clock::ser_opt_time")]
    pub first_served_at: Option<Time>,
    pub downtime_before_serving_s: f64,
    pub downtime_serving_s: f64,
    pub downtime_after_deletion_s: f64,
}

/// Seconds of `down` before `served` (all of it before `deleted` if it never served),
/// between them, and from `deleted` on.
fn split_by_life(down: &[DownInterval], served: Option<Time>, deleted: Option<Time>) -> [f64; 3] {
    let secs = |d: chrono::TimeDelta| d.num_microseconds().unwrap_or(0).max(0) as f64 / 1e6;
    let overlap = |d: &DownInterval, a: Option<Time>, b: Option<Time>| {
        let from = a.map_or(d.from, |a| a.max(d.from));
        let to = b.map_or(d.to, |b| b.min(d.to));
        if to > from { secs(to - from) } else { 0.0 }
    };
    // An empty f64 sum is -0.0, which reads oddly in JSON: folds from +0.0.
    let sum =
        |a: Option<Time>, b: Option<Time>| down.iter().fold(0.0, |acc, d| acc + overlap(d, a, b));
    let life_starts = served.or(deleted);
    let before = sum(None, life_starts);
    let serving = match served {
        Some(s) => sum(Some(s), deleted),
        None => 0.0,
    };
    let after = match deleted {
        Some(d) => sum(Some(d), None),
        None => 0.0,
    };
    [before, serving, after]
}

/// Whether the floating IP `address` delivers to `lb` at `t` (assignment propagated).
fn floating_active(dp: &DataPlane, address: IpAddr, lb: Uuid, t: Time, propagation: f64) -> bool {
    let mut since: Option<Time> = None;
    for e in dp
        .floating
        .iter()
        .filter(|e| e.address == address && e.at <= t)
    {
        if e.load_balancer == Some(lb) {
            since.get_or_insert(e.at);
        } else {
            since = None;
        }
    }
    since.is_some_and(|s| s + delta_from_secs(propagation) <= t)
}

/// Why a new connection fails at `t`, or `None` if it succeeds.
#[allow(clippy::too_many_arguments)]
fn failure_at(
    dp: &DataPlane,
    lb_id: Uuid,
    lb: &LbHistory,
    entry: (IpAddr, EntryKind),
    protocol: &str,
    port: u16,
    client: IpAddr,
    health: &[(Uuid, Vec<(Time, Health)>)],
    propagation: f64,
    t: Time,
) -> Option<&'static str> {
    let Some(cfg) = lb.config_at(t) else {
        return Some(if lb.deleted_at.is_some_and(|d| t >= d) {
            "load balancer deleted"
        } else {
            "load balancer not provisioned"
        });
    };
    if entry.1 == EntryKind::FloatingIp && !floating_active(dp, entry.0, lb_id, t, propagation) {
        return Some("floating IP not assigned or not propagated");
    }
    let Some(listener) = cfg
        .listeners
        .iter()
        .find(|l| l.protocol == protocol && l.port == port)
    else {
        return Some("no listener");
    };
    if !listener.allowed_cidrs.is_empty()
        && !listener.allowed_cidrs.iter().any(|c| c.contains(&client))
    {
        return Some("client not in allowed_cidrs");
    }
    let Some(pool) = listener.pool else {
        return Some("listener has no pool");
    };
    let mut routable = false;
    for m in cfg.members.iter().filter(|m| m.pool == pool && m.enabled) {
        let h = health
            .iter()
            .find(|(id, _)| *id == m.uuid)
            .map(|(_, ev)| health_at(ev, t))
            .unwrap_or(Health::Absent);
        if !h.routable() {
            continue;
        }
        routable = true;
        let b = dp.behaviour(m.address, m.protocol_port, t);
        let serves = if protocol == "udp" { b.udp } else { b.tcp };
        if serves {
            return None;
        }
    }
    Some(if routable {
        "no member answers"
    } else {
        "no member up"
    })
}

/// Every (protocol, port) any applied configuration listened on, in first-seen order.
fn listener_keys(lb: &LbHistory) -> Vec<(String, u16)> {
    let mut keys: Vec<(String, u16)> = Vec::new();
    for l in lb.ops.iter().flat_map(|o| o.config.listeners.iter()) {
        if !keys.iter().any(|(p, n)| *p == l.protocol && *n == l.port) {
            keys.push((l.protocol.clone(), l.port));
        }
    }
    keys
}

/// Down intervals and total downtime per entry address and listener port within
/// `[from, to)`, for new connections from `client`.
pub fn availability(
    dp: &DataPlane,
    lb_id: Uuid,
    from: Time,
    to: Time,
    client: IpAddr,
    propagation: f64,
) -> Option<Vec<EntryAvailability>> {
    let lb = dp.lbs.get(&lb_id)?;
    let entries = entry_addresses(dp, lb_id, lb);
    let health: Vec<(Uuid, Vec<(Time, Health)>)> = member_ids(lb)
        .iter()
        .map(|m| (*m, member_health(dp, lb, *m, to)))
        .collect();
    let mut points = availability_change_points(dp, lb, from, &health, propagation);
    // The whole life, for when each entry first served (`first_served_at`).
    let life: Vec<Time> = points
        .iter()
        .copied()
        .filter(|t| *t >= lb.created_at && *t < to)
        .collect();
    points.retain(|t| *t >= from && *t < to);

    let probe = Probe {
        dp,
        lb_id,
        lb,
        client,
        health: &health,
        propagation,
        points: &points,
        life: &life,
        to,
    };
    let mut out = Vec::new();
    for entry in &entries {
        for (protocol, port) in listener_keys(lb) {
            out.push(probe.entry(*entry, protocol, port));
        }
    }
    Some(out)
}

/// The ways into `lb`: its VIPs, then every floating IP ever assigned to it.
fn entry_addresses(dp: &DataPlane, lb_id: Uuid, lb: &LbHistory) -> Vec<(IpAddr, EntryKind)> {
    let mut entries: Vec<(IpAddr, EntryKind)> =
        lb.vips.iter().map(|a| (*a, EntryKind::Vip)).collect();
    for e in &dp.floating {
        if e.load_balancer == Some(lb_id) && !entries.iter().any(|(a, _)| *a == e.address) {
            entries.push((e.address, EntryKind::FloatingIp));
        }
    }
    entries
}

/// Every member any applied configuration had, in first-seen order.
fn member_ids(lb: &LbHistory) -> Vec<Uuid> {
    let mut members: Vec<Uuid> = Vec::new();
    for m in lb.ops.iter().flat_map(|o| o.config.members.iter()) {
        if !members.contains(&m.uuid) {
            members.push(m.uuid);
        }
    }
    members
}

/// Every moment at which the answer may change, sorted and without repeats.
fn availability_change_points(
    dp: &DataPlane,
    lb: &LbHistory,
    from: Time,
    health: &[(Uuid, Vec<(Time, Health)>)],
    propagation: f64,
) -> Vec<Time> {
    let mut points = vec![from, lb.created_at];
    lb.boundaries(&mut points);
    for (_, ev) in health {
        points.extend(ev.iter().map(|(t, _)| *t));
    }
    let mut ports: BTreeMap<IpAddr, Vec<u16>> = BTreeMap::new();
    for m in lb.ops.iter().flat_map(|o| o.config.members.iter()) {
        let of = ports.entry(m.address).or_default();
        of.extend(
            [Some(m.protocol_port), m.monitor_port]
                .into_iter()
                .flatten(),
        );
    }
    for (a, ports) in &ports {
        dp.address_change_points(*a, ports, &mut points);
    }
    for e in &dp.floating {
        points.push(e.at);
        points.push(e.at + delta_from_secs(propagation));
    }
    points.sort();
    points.dedup();
    points
}

/// What one `availability` call asks every entry and listener about: `points` are the
/// change points within the window, `life` those since the load balancer was created.
struct Probe<'a> {
    dp: &'a DataPlane,
    lb_id: Uuid,
    lb: &'a LbHistory,
    client: IpAddr,
    health: &'a [(Uuid, Vec<(Time, Health)>)],
    propagation: f64,
    points: &'a [Time],
    life: &'a [Time],
    to: Time,
}

impl Probe<'_> {
    /// The availability of one entry address and listener.
    fn entry(&self, entry: (IpAddr, EntryKind), protocol: String, port: u16) -> EntryAvailability {
        let fails = |t: Time| {
            failure_at(
                self.dp,
                self.lb_id,
                self.lb,
                entry,
                &protocol,
                port,
                self.client,
                self.health,
                self.propagation,
                t,
            )
        };
        let down = self.down_intervals(fails);
        // A fold from +0.0: an empty f64 sum is -0.0, which reads oddly in JSON.
        let downtime_s = down.iter().fold(0.0, |acc, d| {
            acc + (d.to - d.from).num_microseconds().unwrap_or(0) as f64 / 1e6
        });
        let first_served_at = self.life.iter().copied().find(|t| fails(*t).is_none());
        let [before, serving, after] = split_by_life(&down, first_served_at, self.lb.deleted_at);
        EntryAvailability {
            address: entry.0,
            kind: entry.1,
            protocol,
            port,
            down,
            downtime_s,
            first_served_at,
            downtime_before_serving_s: before,
            downtime_serving_s: serving,
            downtime_after_deletion_s: after,
        }
    }

    /// The window's down intervals, adjacent ones of the same reason merged.
    fn down_intervals(&self, fails: impl Fn(Time) -> Option<&'static str>) -> Vec<DownInterval> {
        let mut down: Vec<DownInterval> = Vec::new();
        for (i, &t) in self.points.iter().enumerate() {
            let end = self.points.get(i + 1).copied().unwrap_or(self.to);
            if let Some(reason) = fails(t) {
                match down.last_mut() {
                    Some(last) if last.to == t && last.reason == reason => last.to = end,
                    _ => down.push(DownInterval {
                        from: t,
                        to: end,
                        reason,
                    }),
                }
            }
        }
        down
    }
}

#[cfg(test)]
mod tests;
