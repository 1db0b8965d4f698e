//! Load balancers and everything under them: pools, pool members (nested under pools),
//! listeners and health monitors.
//!
//! Choices where the reference marks the real behaviour as unknown (documented in
//! `fakecloud/README.md`):
//! - deleting a pool deletes its members, its health monitor and the listeners that use it
//!   (what the official CCM assumes of the real API);
//! - a second listener with the same protocol and port on one load balancer is refused;
//! - a UDP listener needs a UDP pool and a TCP listener a non-UDP pool;
//! - a second health monitor on one pool is refused;
//! - a member with the same address and port as another member of its pool is refused
//!   (`ApiRules::duplicate_members` lenient accepts it);
//! - `http` on a non-HTTP monitor is ignored (`ApiRules::non_http_monitor_http` lenient
//!   stores it).

use super::{ListQuery, choice, created, existing_ref, no_content, ok, parse_body, path_uuid};
use crate::app::{App, Base};
use crate::catalogue::{LB_FLAVOR_SLUG, lb_flavor_stub, zone_choices, zone_exists};
use crate::clock::{Time, delta_from_secs};
use crate::config::Timing;
use crate::dataplane::{
    AppliedOp, Health, LbConfig, LbHistory, ListenerCfg, MemberCfg, MonitorCfg, health_at,
    member_health,
};
use crate::error::{ApiError, ApiResult};
use crate::request::{Body, REQUIRED};
use crate::state::{Ctx, State, Tags, ranges, vip_subnet_uuid};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as AxState};
use axum::response::Response;
use axum::routing::get;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::net::IpAddr;
use uuid::Uuid;

pub const ALGORITHMS: &[&str] = &["round_robin", "least_connections", "source_ip"];
pub const POOL_PROTOCOLS: &[&str] = &["tcp", "proxy", "proxyv2", "udp"];
pub const LISTENER_PROTOCOLS: &[&str] = &["tcp", "udp"];
pub const MONITOR_TYPES: &[&str] = &["ping", "tcp", "http", "https", "tls-hello", "udp-connect"];
pub const HTTP_METHODS: &[&str] = &[
    "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE",
];
pub const HTTP_VERSIONS: &[&str] = &["1.0", "1.1"];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Vip {
    pub version: u8,
    pub address: IpAddr,
    pub subnet: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadBalancer {
    pub uuid: Uuid,
    pub name: String,
    pub zone: String,
    pub flavor: String,
    pub vip_addresses: Vec<Vip>,
    pub tags: Tags,
    pub created_at: Time,
    /// The load balancer reports `changing` until this time: provisioning, then every
    /// queued change.
    pub busy_until: Time,
}

impl LoadBalancer {
    pub fn status(&self, now: Time) -> &'static str {
        if now < self.busy_until {
            "changing"
        } else {
            "running"
        }
    }

    pub fn vip(&self, version: u8) -> Option<IpAddr> {
        self.vip_addresses
            .iter()
            .find(|v| v.version == version)
            .map(|v| v.address)
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("load-balancers", self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "flavor": lb_flavor_stub(),
            "zone": Ctx::zone_stub(&self.zone),
            "status": self.status(ctx.now),
            "vip_addresses": self.vip_addresses.iter().map(|v| json!({
                "version": v.version,
                "address": v.address.to_string(),
                "subnet": ctx.subnet_stub(v.subnet),
            })).collect::<Vec<_>>(),
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pool {
    pub uuid: Uuid,
    pub name: String,
    pub load_balancer: Uuid,
    pub algorithm: String,
    pub protocol: String,
    pub tags: Tags,
    pub created_at: Time,
}

impl Pool {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("load-balancers/pools", self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "load_balancer": ctx.load_balancer_stub(self.load_balancer),
            "algorithm": self.algorithm,
            "protocol": self.protocol,
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub uuid: Uuid,
    pub pool: Uuid,
    pub name: String,
    pub enabled: bool,
    pub protocol_port: u16,
    pub monitor_port: Option<u16>,
    pub address: IpAddr,
    pub subnet: Uuid,
    pub tags: Tags,
    pub created_at: Time,
}

impl Member {
    /// `no_monitor` without a health monitor on the pool; `changing` until `up_threshold`
    /// checks at `delay_s` have run since the member or the monitor appeared; then `up` when
    /// the backend answers, `down` when it does not.
    pub fn monitor_status(&self, st: &State, now: Time) -> &'static str {
        let has_monitor = st.health_monitors.values().any(|m| m.pool == self.pool);
        let lb = st.pools.get(&self.pool).map(|p| p.load_balancer);
        let health = lb
            .and_then(|lb| st.dataplane.lbs.get(&lb))
            .map(|h| health_at(&member_health(&st.dataplane, h, self.uuid, now), now))
            .unwrap_or(Health::Absent);
        health.api_status(has_monitor)
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        let lb = ctx.st.pools.get(&self.pool).map(|p| p.load_balancer);
        json!({
            "href": format!("{}/v1/load-balancers/pools/{}/members/{}", ctx.base, self.pool, self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "enabled": self.enabled,
            "pool": ctx.pool_stub(self.pool),
            "load_balancer": lb.map(|l| ctx.load_balancer_stub(l)),
            "protocol_port": self.protocol_port,
            "monitor_port": self.monitor_port,
            "address": self.address.to_string(),
            "subnet": ctx.subnet_stub(self.subnet),
            "monitor_status": self.monitor_status(ctx.st, ctx.now),
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listener {
    pub uuid: Uuid,
    pub name: String,
    pub pool: Option<Uuid>,
    pub load_balancer: Uuid,
    pub protocol: String,
    pub protocol_port: u16,
    pub allowed_cidrs: Vec<String>,
    pub timeout_client_data_ms: i64,
    pub timeout_member_connect_ms: i64,
    pub timeout_member_data_ms: i64,
    pub tags: Tags,
    pub created_at: Time,
}

impl Listener {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("load-balancers/listeners", self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "pool": self.pool.map(|p| ctx.pool_stub(p)),
            "load_balancer": ctx.load_balancer_stub(self.load_balancer),
            "protocol": self.protocol,
            "protocol_port": self.protocol_port,
            "allowed_cidrs": self.allowed_cidrs,
            "timeout_client_data_ms": self.timeout_client_data_ms,
            "timeout_member_connect_ms": self.timeout_member_connect_ms,
            "timeout_member_data_ms": self.timeout_member_data_ms,
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HealthMonitor {
    pub uuid: Uuid,
    pub pool: Uuid,
    pub load_balancer: Uuid,
    #[serde(rename = "type")]
    pub kind: String,
    pub delay_s: i64,
    pub timeout_s: i64,
    pub up_threshold: i64,
    pub down_threshold: i64,
    pub http: Option<HttpCheck>,
    pub tags: Tags,
    pub created_at: Time,
}

impl HealthMonitor {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("load-balancers/health-monitors", self.uuid),
            "uuid": self.uuid.to_string(),
            "pool": ctx.pool_stub(self.pool),
            "load_balancer": ctx.load_balancer_stub(self.load_balancer),
            "type": self.kind,
            "delay_s": self.delay_s,
            "timeout_s": self.timeout_s,
            "up_threshold": self.up_threshold,
            "down_threshold": self.down_threshold,
            "http": self.http,
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

/// The configuration of `lb` as the API shows it now: what the data plane will run once
/// the change just made is applied.
fn snapshot(st: &State, lb: Uuid) -> LbConfig {
    let pools: Vec<Uuid> = st
        .pools
        .values()
        .filter(|p| p.load_balancer == lb)
        .map(|p| p.uuid)
        .collect();
    LbConfig::new(
        st.listeners
            .values()
            .filter(|l| l.load_balancer == lb)
            .map(|l| ListenerCfg {
                uuid: l.uuid,
                name: l.name.clone(),
                protocol: l.protocol.clone(),
                port: l.protocol_port,
                allowed_cidrs: l
                    .allowed_cidrs
                    .iter()
                    .filter_map(|c| c.parse().ok())
                    .collect(),
                pool: l.pool,
            })
            .collect(),
        pools
            .iter()
            .flat_map(|p| st.members.of_pool(*p))
            .map(|m| MemberCfg {
                uuid: m.uuid,
                pool: m.pool,
                address: m.address,
                protocol_port: m.protocol_port,
                monitor_port: m.monitor_port,
                enabled: m.enabled,
            })
            .collect(),
        st.health_monitors
            .values()
            .filter(|m| m.load_balancer == lb)
            .map(|m| MonitorCfg {
                uuid: m.uuid,
                pool: m.pool,
                kind: m.kind.clone(),
                delay_s: m.delay_s,
                up_threshold: m.up_threshold,
                down_threshold: m.down_threshold,
                http: m.http.clone(),
            })
            .collect(),
    )
}

/// Queues a change on `lb`: it is applied after the changes before it, each taking
/// `lb_reconfigure_s`, and the load balancer reports `changing` until the last is done.
pub fn record_lb_op(st: &mut State, lb: Uuid, now: Time, timing: &Timing, operation: String) {
    let config = snapshot(st, lb);
    let Some(rec) = st.load_balancers.get_mut(&lb) else {
        return;
    };
    let effective_at = rec.busy_until.max(now) + delta_from_secs(timing.lb_reconfigure_s);
    rec.busy_until = effective_at;
    if let Some(history) = st.dataplane.lbs.get_mut(&lb) {
        history.name = rec.name.clone();
        history.ops.push(AppliedOp {
            requested_at: now,
            effective_at,
            operation,
            config,
        });
    }
}

/// Everything under a load balancer is removed with it; floating IPs stay, unassigned.
/// The data plane stops at once.
pub fn delete_load_balancer(st: &mut State, id: Uuid, now: Time) -> ApiResult<()> {
    st.load_balancers
        .shift_remove(&id)
        .ok_or(ApiError::NotFound)?;
    if let Some(h) = st.dataplane.lbs.get_mut(&id) {
        h.deleted_at = Some(now);
    }
    let pools: Vec<Uuid> = st
        .pools
        .values()
        .filter(|p| p.load_balancer == id)
        .map(|p| p.uuid)
        .collect();
    for p in pools {
        delete_pool(st, p);
    }
    st.listeners.retain(|_, l| l.load_balancer != id);
    st.health_monitors.retain(|_, m| m.load_balancer != id);
    for fip in st.floating_ips.values_mut() {
        if fip.load_balancer == Some(id) {
            fip.load_balancer = None;
            st.dataplane.record_floating(fip.address(), None, now);
        }
    }
    Ok(())
}

/// `(load balancer, "load balancer \"name\"")` for the timeline.
fn describe_lb(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let l = st.load_balancers.get(&id)?;
    Some((id, format!("load balancer \"{}\"", l.name)))
}

fn describe_pool(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let p = st.pools.get(&id)?;
    Some((
        p.load_balancer,
        format!("pool \"{}\" ({} {})", p.name, p.protocol, p.algorithm),
    ))
}

fn describe_member(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let m = st.members.get(&id)?;
    let p = st.pools.get(&m.pool)?;
    let enabled = if m.enabled { "" } else { ", disabled" };
    Some((
        p.load_balancer,
        format!(
            "member \"{}\" of pool \"{}\" ({}:{}{enabled})",
            m.name, p.name, m.address, m.protocol_port
        ),
    ))
}

fn describe_listener(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let l = st.listeners.get(&id)?;
    Some((
        l.load_balancer,
        format!(
            "listener \"{}\" ({} {})",
            l.name, l.protocol, l.protocol_port
        ),
    ))
}

fn describe_monitor(st: &State, id: Uuid) -> Option<(Uuid, String)> {
    let m = st.health_monitors.get(&id)?;
    let pool = st
        .pools
        .get(&m.pool)
        .map(|p| p.name.as_str())
        .unwrap_or("?");
    Some((
        m.load_balancer,
        format!("health monitor of pool \"{pool}\" ({})", m.kind),
    ))
}

fn delete_pool(st: &mut State, id: Uuid) {
    st.pools.shift_remove(&id);
    st.members.remove_pool(&id);
    st.health_monitors.retain(|_, m| m.pool != id);
    st.listeners.retain(|_, l| l.pool != Some(id));
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/load-balancers", get(list_lbs).post(create_lb))
        .route(
            "/load-balancers/{uuid}",
            get(show_lb).patch(update_lb).delete(delete_lb),
        )
        .route("/load-balancers/pools", get(list_pools).post(create_pool))
        .route(
            "/load-balancers/pools/{uuid}",
            get(show_pool)
                .patch(update_pool)
                .delete(delete_pool_handler),
        )
        .route(
            "/load-balancers/pools/{pool}/members",
            get(list_members).post(create_member),
        )
        .route(
            "/load-balancers/pools/{pool}/members/{uuid}",
            get(show_member).patch(update_member).delete(delete_member),
        )
        .route(
            "/load-balancers/listeners",
            get(list_listeners).post(create_listener),
        )
        .route(
            "/load-balancers/listeners/{uuid}",
            get(show_listener)
                .patch(update_listener)
                .delete(delete_listener),
        )
        .route(
            "/load-balancers/health-monitors",
            get(list_monitors).post(create_monitor),
        )
        .route(
            "/load-balancers/health-monitors/{uuid}",
            get(show_monitor)
                .patch(update_monitor)
                .delete(delete_monitor),
        )
}

/// List handler over one collection.
fn list_of<'a, T: 'a>(
    ctx: &'a Ctx,
    items: impl Iterator<Item = &'a T>,
    q: &ListQuery,
    name: impl Fn(&T) -> Option<&str>,
    tags: impl Fn(&T) -> &Tags,
    render: impl Fn(&T, &Ctx) -> Value,
) -> Value {
    Value::Array(
        items
            .filter(|i| q.matches(name(i), tags(i)))
            .map(|i| render(i, ctx))
            .collect(),
    )
}

// ---- load balancers -------------------------------------------------------------------

async fn list_lbs(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    let q = ListQuery::parse(q.as_deref());
    ok(app.read(&base, |ctx| {
        list_of(
            ctx,
            ctx.st.load_balancers.values(),
            &q,
            |l| Some(&l.name),
            |l| &l.tags,
            LoadBalancer::render,
        )
    }))
}

async fn show_lb(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        ctx.st.load_balancers.get(&id).map(|l| ok(l.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

/// Reads `vip_addresses` entries: `(subnet, optional address)`; errors go under
/// `vip_addresses`, flat.
fn vip_requests(body: &mut Body) -> Option<Vec<(Uuid, Option<IpAddr>)>> {
    let items = body.object_list("vip_addresses")?;
    let mut out = Vec::new();
    for item in items {
        let subnet = match item.get("subnet") {
            Some(Value::String(s)) => match crate::request::parse_uuid(s) {
                Some(u) => u,
                None => {
                    body.error("vip_addresses", crate::request::NOT_UUID);
                    return None;
                }
            },
            None | Some(Value::Null) => {
                body.error("vip_addresses", format!("subnet: {REQUIRED}"));
                return None;
            }
            Some(_) => {
                body.error("vip_addresses", crate::request::NOT_UUID);
                return None;
            }
        };
        let address = match item.get("address") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => match s.parse::<IpAddr>() {
                Ok(a) => Some(a),
                Err(_) => {
                    body.error(
                        "vip_addresses",
                        format!("\"{s}\" is not a valid IP for the specified subnet."),
                    );
                    return None;
                }
            },
            Some(_) => {
                body.error("vip_addresses", crate::request::NOT_STRING);
                return None;
            }
        };
        out.push((subnet, address));
    }
    Some(out)
}

async fn create_lb(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let provision = app.config().timing.lb_provision_s;
    let id = app.write(|st, now| {
        let ready_at = now + delta_from_secs(provision);
        let name = body.string("name", true);
        let flavor = body.string("flavor", true);
        if let Some(f) = &flavor
            && f != LB_FLAVOR_SLUG
        {
            body.error("flavor", format!("\"{f}\" is not a valid choice."));
        }
        let zone = body.string("zone", true);
        if let Some(z) = &zone
            && !zone_exists(z)
        {
            body.error(
                "zone",
                format!(
                    "\"{z}\" is not a valid choice. Choose one of {}.",
                    zone_choices()
                ),
            );
        }
        let vips = vip_requests(&mut body).unwrap_or_default();
        let tags = body.tags().unwrap_or_default();
        let (Some(name), Some(zone)) = (name, zone) else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        let mut vip_addresses = Vec::new();
        if vips.is_empty() {
            // Two public VIPs, IPv4 first, as the API assigns them.
            for (version, range) in [(4u8, ranges::VIP_V4), (6, ranges::VIP_V6)] {
                let taken: Vec<IpAddr> = vip_addresses.iter().map(|v: &Vip| v.address).collect();
                let address = st
                    .allocate_public(range, &taken)
                    .ok_or_else(|| ApiError::detail("No public address left."))?;
                vip_addresses.push(Vip {
                    version,
                    address,
                    subnet: vip_subnet_uuid(&zone, version),
                });
            }
        } else {
            for (subnet_id, address) in vips {
                let subnet = st.subnets.get(&subnet_id).ok_or_else(|| {
                    ApiError::field(
                        "vip_addresses",
                        format!("Invalid pk \"{subnet_id}\" - object does not exist."),
                    )
                })?;
                if st
                    .networks
                    .get(&subnet.network)
                    .is_some_and(|n| n.zone != zone)
                {
                    return Err(ApiError::field(
                        "vip_addresses",
                        "The subnet is in another zone than the load balancer.",
                    ));
                }
                let mut used = st.subnet_addresses_in_use(subnet_id);
                used.extend(vip_addresses.iter().map(|v| v.address));
                let address = match address {
                    Some(a) => {
                        if !subnet.cidr.contains(&a)
                            || a == subnet.cidr.network()
                            || Some(a) == subnet.gateway_address
                        {
                            return Err(ApiError::field(
                                "vip_addresses",
                                format!("{a} is not a valid IP for the specified subnet."),
                            ));
                        }
                        if used.contains(&a) {
                            return Err(ApiError::field(
                                "vip_addresses",
                                format!("The address {a} is already in use."),
                            ));
                        }
                        a
                    }
                    None => {
                        let chosen: Vec<IpAddr> = vip_addresses.iter().map(|v| v.address).collect();
                        st.allocate_private(subnet, &chosen).ok_or_else(|| {
                            ApiError::field("vip_addresses", "The subnet has no free address.")
                        })?
                    }
                };
                vip_addresses.push(Vip {
                    version: if address.is_ipv4() { 4 } else { 6 },
                    address,
                    subnet: subnet_id,
                });
            }
        }
        let uuid = st.ids.new_uuid();
        st.dataplane.lbs.insert(
            uuid,
            LbHistory {
                name: name.clone(),
                created_at: now,
                ready_at,
                deleted_at: None,
                vips: vip_addresses.iter().map(|v| v.address).collect(),
                ops: vec![AppliedOp {
                    requested_at: now,
                    effective_at: ready_at,
                    operation: format!("provision load balancer \"{name}\""),
                    config: LbConfig::default(),
                }],
            },
        );
        st.load_balancers.insert(
            uuid,
            LoadBalancer {
                uuid,
                name,
                zone,
                flavor: LB_FLAVOR_SLUG.to_string(),
                vip_addresses,
                tags,
                created_at: now,
                busy_until: ready_at,
            },
        );
        Ok(uuid)
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .load_balancers
            .get(&id)
            .map(|l| created(l.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update_lb(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let current = app.read(&base, |ctx| {
        ctx.st.load_balancers.get(&id).map(|l| l.render(ctx))
    });
    let current = current.ok_or(ApiError::NotFound)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let lb = st.load_balancers.get_mut(&id).ok_or(ApiError::NotFound)?;
        body.immutable("zone", &current["zone"]);
        body.immutable("flavor", &current["flavor"]);
        if body.has("vip_addresses") && !same_vips(body.raw("vip_addresses"), &lb.vip_addresses) {
            body.error("vip_addresses", crate::request::IMMUTABLE);
        }
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        if let Some(n) = name {
            lb.name = n;
        }
        if let Some(t) = tags {
            lb.tags = t;
        }
        if let Some((lb, what)) = describe_lb(st, id) {
            record_lb_op(st, lb, now, &timing, format!("update {what}"));
        }
        Ok(no_content())
    })
}

/// Whether a PATCH's `vip_addresses` repeats the current VIPs (subnet and address).
fn same_vips(sent: Option<&Value>, current: &[Vip]) -> bool {
    let Some(Value::Array(items)) = sent else {
        return false;
    };
    items.len() == current.len()
        && items.iter().zip(current).all(|(item, vip)| {
            let subnet_ok = match item.get("subnet") {
                Some(Value::String(s)) => *s == vip.subnet.to_string(),
                Some(Value::Object(o)) => {
                    o.get("uuid").and_then(Value::as_str) == Some(&vip.subnet.to_string())
                }
                _ => false,
            };
            let address_ok = match item.get("address") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.parse::<IpAddr>().ok() == Some(vip.address),
                _ => false,
            };
            subnet_ok && address_ok
        })
}

async fn delete_lb(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, now| delete_load_balancer(st, id, now))?;
    Ok(no_content())
}

// ---- pools ------------------------------------------------------------------------------

async fn list_pools(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    let q = ListQuery::parse(q.as_deref());
    ok(app.read(&base, |ctx| {
        list_of(
            ctx,
            ctx.st.pools.values(),
            &q,
            |p| Some(&p.name),
            |p| &p.tags,
            Pool::render,
        )
    }))
}

async fn show_pool(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        ctx.st.pools.get(&id).map(|p| ok(p.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn create_pool(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let id = app.write(|st, now| {
        let name = body.string("name", true);
        let lb = existing_ref(&mut body, "load_balancer", true, |l| {
            st.load_balancers.contains_key(&l)
        });
        let algorithm = choice(&mut body, "algorithm", true, ALGORITHMS);
        let protocol = choice(&mut body, "protocol", true, POOL_PROTOCOLS);
        let tags = body.tags().unwrap_or_default();
        let (Some(name), Some(lb), Some(algorithm), Some(protocol)) =
            (name, lb, algorithm, protocol)
        else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        let uuid = st.ids.new_uuid();
        st.pools.insert(
            uuid,
            Pool {
                uuid,
                name,
                load_balancer: lb,
                algorithm,
                protocol,
                tags,
                created_at: now,
            },
        );
        if let Some((lb, what)) = describe_pool(st, uuid) {
            record_lb_op(st, lb, now, &timing, format!("create {what}"));
        }
        Ok(uuid)
    })?;
    app.read(&base, |ctx| {
        ctx.st.pools.get(&id).map(|p| created(p.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update_pool(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let pool = st.pools.get_mut(&id).ok_or(ApiError::NotFound)?;
        body.immutable("algorithm", &json!(pool.algorithm));
        body.immutable("protocol", &json!(pool.protocol));
        body.immutable(
            "load_balancer",
            &json!({"uuid": pool.load_balancer.to_string()}),
        );
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        if let Some(n) = name {
            pool.name = n;
        }
        if let Some(t) = tags {
            pool.tags = t;
        }
        if let Some((lb, what)) = describe_pool(st, id) {
            record_lb_op(st, lb, now, &timing, format!("update {what}"));
        }
        Ok(no_content())
    })
}

async fn delete_pool_handler(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        if !st.pools.contains_key(&id) {
            return Err(ApiError::NotFound);
        }
        let described = describe_pool(st, id);
        delete_pool(st, id);
        if let Some((lb, what)) = described {
            record_lb_op(st, lb, now, &timing, format!("delete {what}"));
        }
        Ok(no_content())
    })
}

// ---- members ----------------------------------------------------------------------------

fn port_field(body: &mut Body, key: &str, required: bool) -> Option<u16> {
    let p = body.int(key, required)?;
    if (1..=65535).contains(&p) {
        Some(p as u16)
    } else {
        body.error(key, format!("The {key} must be between 1 and 65535."));
        None
    }
}

async fn list_members(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(pool): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<Response> {
    let pool = path_uuid(&pool)?;
    let q = ListQuery::parse(q.as_deref());
    app.read(&base, |ctx| {
        if !ctx.st.pools.contains_key(&pool) {
            return Err(ApiError::NotFound);
        }
        Ok(ok(list_of(
            ctx,
            ctx.st.members.of_pool(pool),
            &q,
            |m| Some(&m.name),
            |m| &m.tags,
            Member::render,
        )))
    })
}

async fn show_member(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path((pool, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (pool, id) = (path_uuid(&pool)?, path_uuid(&id)?);
    app.read(&base, |ctx| {
        ctx.st
            .members
            .get(&id)
            .filter(|m| m.pool == pool)
            .map(|m| ok(m.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn create_member(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(pool): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let pool = path_uuid(&pool)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let refuse_duplicates = !app.rules().duplicate_members.is_lenient();
    let id = app.write(|st, now| {
        if !st.pools.contains_key(&pool) {
            return Err(ApiError::NotFound);
        }
        let name = body.string("name", true);
        let enabled = body.boolean("enabled").unwrap_or(true);
        let protocol_port = port_field(&mut body, "protocol_port", true);
        let monitor_port = match body.nullable_int("monitor_port") {
            Some(Some(_)) => port_field(&mut body, "monitor_port", false),
            _ => None,
        };
        let address = body.string("address", true);
        let subnet = existing_ref(&mut body, "subnet", true, |s| st.subnets.contains_key(&s));
        let tags = body.tags().unwrap_or_default();
        let address = address.and_then(|a| match a.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                body.error("address", "Enter a valid IPv4 or IPv6 address.");
                None
            }
        });
        if let (Some(ip), Some(s)) = (address, subnet.and_then(|s| st.subnets.get(&s)))
            && !s.cidr.contains(&ip)
        {
            body.error(
                "address",
                format!("{ip} is not a valid IP for the specified subnet."),
            );
        }
        if let (Some(ip), Some(port)) = (address, protocol_port)
            && refuse_duplicates
            && st
                .members
                .of_pool(pool)
                .any(|m| m.address == ip && m.protocol_port == port)
        {
            body.error(
                "address",
                format!("The pool already has a member for {ip} port {port}."),
            );
        }
        let (Some(name), Some(protocol_port), Some(address), Some(subnet)) =
            (name, protocol_port, address, subnet)
        else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        let uuid = st.ids.new_uuid();
        st.members.insert(Member {
            uuid,
            pool,
            name,
            enabled,
            protocol_port,
            monitor_port,
            address,
            subnet,
            tags,
            created_at: now,
        });
        if let Some((lb, what)) = describe_member(st, uuid) {
            record_lb_op(st, lb, now, &timing, format!("create {what}"));
        }
        Ok(uuid)
    })?;
    app.read(&base, |ctx| {
        ctx.st.members.get(&id).map(|m| created(m.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update_member(
    AxState(app): AxState<App>,
    Path((pool, id)): Path<(String, String)>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let (pool, id) = (path_uuid(&pool)?, path_uuid(&id)?);
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let member = st
            .members
            .get_mut(&id)
            .filter(|m| m.pool == pool)
            .ok_or(ApiError::NotFound)?;
        body.immutable("protocol_port", &json!(member.protocol_port));
        body.immutable("monitor_port", &json!(member.monitor_port));
        body.immutable("address", &json!(member.address.to_string()));
        body.immutable("subnet", &json!({"uuid": member.subnet.to_string()}));
        let name = body.string("name", false);
        let enabled = body.boolean("enabled");
        let tags = body.tags();
        body.finish()?;
        if let Some(n) = name {
            member.name = n;
        }
        if let Some(e) = enabled {
            member.enabled = e;
        }
        if let Some(t) = tags {
            member.tags = t;
        }
        if let Some((lb, what)) = describe_member(st, id) {
            record_lb_op(st, lb, now, &timing, format!("update {what}"));
        }
        Ok(no_content())
    })
}

async fn delete_member(
    AxState(app): AxState<App>,
    Path((pool, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (pool, id) = (path_uuid(&pool)?, path_uuid(&id)?);
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        if st.members.get(&id).is_none_or(|m| m.pool != pool) {
            return Err(ApiError::NotFound);
        }
        let described = describe_member(st, id);
        st.members.remove(&id);
        if let Some((lb, what)) = described {
            record_lb_op(st, lb, now, &timing, format!("delete {what}"));
        }
        Ok(no_content())
    })
}

// ---- listeners --------------------------------------------------------------------------

/// Validates `allowed_cidrs`: network addresses in CIDR notation (a bare IP is refused).
fn cidrs_field(body: &mut Body) -> Option<Vec<String>> {
    let list = body.string_list("allowed_cidrs")?;
    for entry in &list {
        let valid = entry.contains('/') && entry.parse::<IpNet>().is_ok_and(|n| n.trunc() == n);
        if !valid {
            body.error(
                "allowed_cidrs",
                format!("\"{entry}\": Enter a valid network address in CIDR notation."),
            );
            return None;
        }
    }
    Some(list)
}

fn timeout_field(body: &mut Body, key: &str) -> Option<i64> {
    let t = body.int(key, false)?;
    if t >= 1 {
        Some(t)
    } else {
        body.error(key, "Ensure this value is greater than or equal to 1.");
        None
    }
}

/// Refuses a second listener with the same protocol and port on one load balancer, and
/// a protocol that does not fit the pool.
fn check_listener(
    body: &mut Body,
    st: &State,
    lb: Uuid,
    pool: Option<Uuid>,
    protocol: &str,
    port: u16,
    except: Option<Uuid>,
) {
    if st.listeners.values().any(|l| {
        Some(l.uuid) != except
            && l.load_balancer == lb
            && l.protocol == protocol
            && l.protocol_port == port
    }) {
        body.error(
            "protocol_port",
            format!("The load balancer already has a {protocol} listener on port {port}."),
        );
    }
    if let Some(p) = pool.and_then(|p| st.pools.get(&p))
        && (protocol == "udp") != (p.protocol == "udp")
    {
        body.error(
            "protocol",
            format!("A {protocol} listener cannot use a {} pool.", p.protocol),
        );
    }
}

async fn list_listeners(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    let q = ListQuery::parse(q.as_deref());
    ok(app.read(&base, |ctx| {
        list_of(
            ctx,
            ctx.st.listeners.values(),
            &q,
            |l| Some(&l.name),
            |l| &l.tags,
            Listener::render,
        )
    }))
}

async fn show_listener(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        ctx.st.listeners.get(&id).map(|l| ok(l.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn create_listener(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let id = app.write(|st, now| {
        let name = body.string("name", true);
        let pool = existing_ref(&mut body, "pool", true, |p| st.pools.contains_key(&p));
        let protocol = choice(&mut body, "protocol", true, LISTENER_PROTOCOLS);
        let port = port_field(&mut body, "protocol_port", true);
        let cidrs = cidrs_field(&mut body).unwrap_or_default();
        let client = timeout_field(&mut body, "timeout_client_data_ms").unwrap_or(50_000);
        let connect = timeout_field(&mut body, "timeout_member_connect_ms").unwrap_or(5_000);
        let data = timeout_field(&mut body, "timeout_member_data_ms").unwrap_or(50_000);
        let tags = body.tags().unwrap_or_default();
        let (Some(name), Some(pool), Some(protocol), Some(port)) = (name, pool, protocol, port)
        else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        let lb = st
            .pools
            .get(&pool)
            .map(|p| p.load_balancer)
            .ok_or(ApiError::NotFound)?;
        check_listener(&mut body, st, lb, Some(pool), &protocol, port, None);
        body.finish()?;
        let uuid = st.ids.new_uuid();
        st.listeners.insert(
            uuid,
            Listener {
                uuid,
                name,
                pool: Some(pool),
                load_balancer: lb,
                protocol,
                protocol_port: port,
                allowed_cidrs: cidrs,
                timeout_client_data_ms: client,
                timeout_member_connect_ms: connect,
                timeout_member_data_ms: data,
                tags,
                created_at: now,
            },
        );
        if let Some((lb, what)) = describe_listener(st, uuid) {
            record_lb_op(st, lb, now, &timing, format!("create {what}"));
        }
        Ok(uuid)
    })?;
    app.read(&base, |ctx| {
        ctx.st.listeners.get(&id).map(|l| created(l.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update_listener(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let current = st.listeners.get(&id).ok_or(ApiError::NotFound)?.clone();
        body.immutable(
            "pool",
            &current
                .pool
                .map(|p| json!({"uuid": p.to_string()}))
                .unwrap_or(Value::Null),
        );
        let name = body.string("name", false);
        let protocol = choice(&mut body, "protocol", false, LISTENER_PROTOCOLS);
        let port = port_field(&mut body, "protocol_port", false);
        let cidrs = cidrs_field(&mut body);
        let client = timeout_field(&mut body, "timeout_client_data_ms");
        let connect = timeout_field(&mut body, "timeout_member_connect_ms");
        let data = timeout_field(&mut body, "timeout_member_data_ms");
        let tags = body.tags();
        if body.ok_so_far() && (protocol.is_some() || port.is_some()) {
            let protocol = protocol.clone().unwrap_or_else(|| current.protocol.clone());
            let port = port.unwrap_or(current.protocol_port);
            check_listener(
                &mut body,
                st,
                current.load_balancer,
                current.pool,
                &protocol,
                port,
                Some(id),
            );
        }
        body.finish()?;
        let l = st.listeners.get_mut(&id).ok_or(ApiError::NotFound)?;
        if let Some(v) = name {
            l.name = v;
        }
        if let Some(v) = protocol {
            l.protocol = v;
        }
        if let Some(v) = port {
            l.protocol_port = v;
        }
        if let Some(v) = cidrs {
            l.allowed_cidrs = v;
        }
        if let Some(v) = client {
            l.timeout_client_data_ms = v;
        }
        if let Some(v) = connect {
            l.timeout_member_connect_ms = v;
        }
        if let Some(v) = data {
            l.timeout_member_data_ms = v;
        }
        if let Some(t) = tags {
            l.tags = t;
        }
        if let Some((lb, what)) = describe_listener(st, id) {
            record_lb_op(st, lb, now, &timing, format!("update {what}"));
        }
        Ok(no_content())
    })
}

async fn delete_listener(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let described = describe_listener(st, id);
        st.listeners.shift_remove(&id).ok_or(ApiError::NotFound)?;
        if let Some((lb, what)) = described {
            record_lb_op(st, lb, now, &timing, format!("delete {what}"));
        }
        Ok(no_content())
    })
}

// ---- health monitors --------------------------------------------------------------------

fn positive(body: &mut Body, key: &str) -> Option<i64> {
    let v = body.int(key, false)?;
    if v >= 1 {
        Some(v)
    } else {
        body.error(key, "Ensure this value is greater than or equal to 1.");
        None
    }
}

/// Merges an `http` request object over `base` key by key (PATCH keeps what is not sent).
/// `version_fixed` refuses a version change (it is immutable after create).
fn merge_http(
    body: &mut Body,
    obj: &Map<String, Value>,
    mut base: HttpCheck,
    version_fixed: bool,
) -> Option<HttpCheck> {
    let mut sub = Body::from_map(obj.clone());
    if let Some(codes) = sub.string_list("expected_codes") {
        let valid = !codes.is_empty()
            && codes.iter().all(|c| {
                let mut parts = c.splitn(2, '-');
                let ok = |p: Option<&str>| {
                    p.is_some_and(|p| p.len() == 3 && p.bytes().all(|b| b.is_ascii_digit()))
                };
                let first = parts.next();
                match parts.next() {
                    None => ok(first),
                    Some(second) => ok(first) && ok(Some(second)),
                }
            });
        if valid {
            base.expected_codes = codes;
        } else {
            sub.error(
                "expected_codes",
                "Enter status codes like \"200\" or a range like \"200-204\".",
            );
        }
    }
    if let Some(m) = choice(&mut sub, "method", false, HTTP_METHODS) {
        base.method = m;
    }
    if let Some(p) = sub.string("url_path", false) {
        if p.starts_with('/') {
            base.url_path = p;
        } else {
            sub.error("url_path", "The url_path must start with \"/\".");
        }
    }
    if let Some(v) = choice(&mut sub, "version", false, HTTP_VERSIONS) {
        if version_fixed && v != base.version {
            sub.error("version", crate::request::IMMUTABLE);
        } else {
            base.version = v;
        }
    }
    if let Some(h) = sub.nullable_string("host") {
        base.host = h;
    }
    if base.host.is_some() && base.version == "1.0" {
        sub.error(
            "host",
            "The host argument can not be used with HTTP version 1.0.",
        );
    }
    match sub.finish() {
        Ok(()) => Some(base),
        Err(ApiError::BadRequest(errors)) => {
            // Flattened under `http`, since error values must stay strings.
            let msg = errors
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(" ");
            body.error("http", msg);
            None
        }
        Err(_) => None,
    }
}

fn is_http(kind: &str) -> bool {
    kind == "http" || kind == "https"
}

async fn list_monitors(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    let q = ListQuery::parse(q.as_deref());
    ok(app.read(&base, |ctx| {
        list_of(
            ctx,
            ctx.st.health_monitors.values(),
            &q,
            |_| None,
            |m| &m.tags,
            HealthMonitor::render,
        )
    }))
}

async fn show_monitor(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        ctx.st.health_monitors.get(&id).map(|m| ok(m.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn create_monitor(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let keep_any_http = app.rules().non_http_monitor_http.is_lenient();
    let id = app.write(|st, now| {
        let pool = existing_ref(&mut body, "pool", true, |p| st.pools.contains_key(&p));
        let kind = choice(&mut body, "type", true, MONITOR_TYPES);
        let delay = positive(&mut body, "delay_s").unwrap_or(2);
        let timeout = positive(&mut body, "timeout_s").unwrap_or(1);
        let up = positive(&mut body, "up_threshold").unwrap_or(2);
        let down = positive(&mut body, "down_threshold").unwrap_or(3);
        let http_req = body.nullable_object("http").flatten();
        let tags = body.tags().unwrap_or_default();
        if let Some(p) = pool
            && st.health_monitors.values().any(|m| m.pool == p)
        {
            body.error("pool", "The pool already has a health monitor.");
        }
        // The `http` object only means something for HTTP checks; other types report null
        // (the official CCM sends the object for every type), unless the lenient rule keeps
        // what was sent, validated and defaulted as for HTTP checks.
        let http = match (&kind, http_req) {
            (Some(k), req) if is_http(k) => merge_http(
                &mut body,
                &req.unwrap_or_default(),
                HttpCheck::default(),
                false,
            ),
            (Some(_), Some(req)) if keep_any_http => {
                merge_http(&mut body, &req, HttpCheck::default(), false)
            }
            _ => None,
        };
        let (Some(pool), Some(kind)) = (pool, kind) else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        let lb = st
            .pools
            .get(&pool)
            .map(|p| p.load_balancer)
            .ok_or(ApiError::NotFound)?;
        let uuid = st.ids.new_uuid();
        st.health_monitors.insert(
            uuid,
            HealthMonitor {
                uuid,
                pool,
                load_balancer: lb,
                kind,
                delay_s: delay,
                timeout_s: timeout,
                up_threshold: up,
                down_threshold: down,
                http,
                tags,
                created_at: now,
            },
        );
        if let Some((lb, what)) = describe_monitor(st, uuid) {
            record_lb_op(st, lb, now, &timing, format!("create {what}"));
        }
        Ok(uuid)
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .health_monitors
            .get(&id)
            .map(|m| created(m.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update_monitor(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let keep_any_http = app.rules().non_http_monitor_http.is_lenient();
    app.write(|st, now| {
        let m = st.health_monitors.get_mut(&id).ok_or(ApiError::NotFound)?;
        body.immutable("type", &json!(m.kind));
        body.immutable("pool", &json!({"uuid": m.pool.to_string()}));
        let delay = positive(&mut body, "delay_s");
        let timeout = positive(&mut body, "timeout_s");
        let up = positive(&mut body, "up_threshold");
        let down = positive(&mut body, "down_threshold");
        let http = match body.nullable_object("http").flatten() {
            Some(obj) if is_http(&m.kind) || keep_any_http => {
                // The version is fixed once an `http` object was stored; a non-HTTP monitor
                // created without one has no version yet.
                let fixed = m.http.is_some();
                merge_http(&mut body, &obj, m.http.clone().unwrap_or_default(), fixed)
            }
            _ => None,
        };
        let tags = body.tags();
        body.finish()?;
        if let Some(v) = delay {
            m.delay_s = v;
        }
        if let Some(v) = timeout {
            m.timeout_s = v;
        }
        if let Some(v) = up {
            m.up_threshold = v;
        }
        if let Some(v) = down {
            m.down_threshold = v;
        }
        if let Some(h) = http {
            m.http = Some(h);
        }
        if let Some(t) = tags {
            m.tags = t;
        }
        if let Some((lb, what)) = describe_monitor(st, id) {
            record_lb_op(st, lb, now, &timing, format!("update {what}"));
        }
        Ok(no_content())
    })
}

async fn delete_monitor(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let described = describe_monitor(st, id);
        st.health_monitors
            .shift_remove(&id)
            .ok_or(ApiError::NotFound)?;
        if let Some((lb, what)) = described {
            record_lb_op(st, lb, now, &timing, format!("delete {what}"));
        }
        Ok(no_content())
    })
}
