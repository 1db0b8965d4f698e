//! Floating IPs (`/v1/floating-ips/{ip}`), addressed by IP (IPv6 colons in the path), regional
//! or global, assigned to a server or a load balancer, never unassigned.

use super::{ListQuery, choice, created, existing_ref, no_content, ok, parse_body};
use crate::app::{App, Base};
use crate::catalogue::{region_exists, region_of_zone};
use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::request::Body;
use crate::state::{Ctx, State, Tags, ranges};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as AxState};
use axum::response::Response;
use axum::routing::get;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::net::IpAddr;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloatingIp {
    pub network: IpNet,
    /// `regional` or `global`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `None` for global IPs.
    pub region: Option<String>,
    pub server: Option<Uuid>,
    pub load_balancer: Option<Uuid>,
    pub reverse_ptr: String,
    pub tags: Tags,
    pub created_at: Time,
    /// When the current assignment was made (the data plane needs it to model propagation).
    pub assigned_at: Option<Time>,
}

impl FloatingIp {
    pub fn address(&self) -> IpAddr {
        self.network.network()
    }

    pub fn version(&self) -> u8 {
        if self.network.addr().is_ipv4() { 4 } else { 6 }
    }

    /// The target's address of the same family: a server's public address, a load
    /// balancer's VIP.
    pub fn next_hop(&self, st: &State) -> Option<IpAddr> {
        if let Some(s) = self.server.and_then(|s| st.servers.get(&s)) {
            return s.public_address(self.version());
        }
        if let Some(l) = self.load_balancer.and_then(|l| st.load_balancers.get(&l)) {
            return l.vip(self.version());
        }
        None
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("floating-ips", self.address()),
            "network": self.network.to_string(),
            "ip_version": self.version(),
            "server": self.server.filter(|s| ctx.st.servers.contains_key(s)).map(|s| ctx.server_stub(s)),
            "load_balancer": self.load_balancer.filter(|l| ctx.st.load_balancers.contains_key(l)).map(|l| ctx.load_balancer_stub(l)),
            "region": self.region.as_ref().map(|r| json!({"slug": r})),
            "type": self.kind,
            "next_hop": self.next_hop(ctx.st).map(|a| a.to_string()),
            "reverse_ptr": self.reverse_ptr,
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

/// The region a target lives in, for the "regional IPs stay in their region" rule.
fn target_region(st: &State, server: Option<Uuid>, lb: Option<Uuid>) -> Option<&'static str> {
    if let Some(s) = server.and_then(|s| st.servers.get(&s)) {
        return Some(region_of_zone(&s.zone));
    }
    lb.and_then(|l| st.load_balancers.get(&l))
        .map(|l| region_of_zone(&l.zone))
}

/// Checks that the target has an address of the IP's family and sits in its region.
fn check_target(
    body: &mut Body,
    st: &State,
    version: u8,
    region: Option<&str>,
    server: Option<Uuid>,
    lb: Option<Uuid>,
) {
    let key = if server.is_some() {
        "server"
    } else {
        "load_balancer"
    };
    if let (Some(region), Some(target)) = (region, target_region(st, server, lb))
        && region != target
    {
        body.error(
            key,
            format!(
                "A regional Floating IP in {region} cannot be assigned to a target in {target}."
            ),
        );
        return;
    }
    let has_family = match (server, lb) {
        (Some(s), _) => st
            .servers
            .get(&s)
            .and_then(|s| s.public_address(version))
            .is_some(),
        (_, Some(l)) => st
            .load_balancers
            .get(&l)
            .and_then(|l| l.vip(version))
            .is_some(),
        _ => true,
    };
    if !has_family {
        body.error(
            key,
            format!("The target has no IPv{version} address to route to."),
        );
    }
}

/// Parses the `{ip}` path segment: an address, optionally with a prefix the CLI strips
/// anyway (`192.0.2.1%2F32`).
fn path_ip(raw: &str) -> ApiResult<IpAddr> {
    let addr = raw.split('/').next().unwrap_or(raw);
    addr.parse().map_err(|_| ApiError::NotFound)
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/floating-ips", get(list).post(create))
        .route("/floating-ips/{ip}", get(show).patch(update).delete(delete))
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    let q = ListQuery::parse(q.as_deref());
    ok(app.read(&base, |ctx| {
        Value::Array(
            ctx.st
                .floating_ips
                .values()
                .filter(|f| q.matches(None, &f.tags))
                .map(|f| f.render(ctx))
                .collect(),
        )
    }))
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(ip): Path<String>,
) -> ApiResult<Response> {
    let ip = path_ip(&ip)?;
    app.read(&base, |ctx| {
        ctx.st.floating_ips.get(&ip).map(|f| ok(f.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

/// What a seed or the API asks for when creating a floating IP.
#[derive(Debug, Clone, Default)]
pub struct NewFloatingIp {
    pub ip_version: u8,
    pub prefix_length: Option<u8>,
    pub global: bool,
    pub region: Option<String>,
    pub server: Option<Uuid>,
    pub load_balancer: Option<Uuid>,
    pub reverse_ptr: Option<String>,
    pub tags: Tags,
    /// A fixed address (seeds only).
    pub address: Option<IpAddr>,
}

/// Allocates and inserts a floating IP; validation of references is the caller's.
pub fn insert_floating_ip(st: &mut State, now: Time, new: NewFloatingIp) -> ApiResult<IpAddr> {
    let network = match (new.ip_version, new.prefix_length, new.address) {
        (_, _, Some(a)) => {
            let prefix = new
                .prefix_length
                .unwrap_or(if a.is_ipv4() { 32 } else { 128 });
            IpNet::new(a, prefix)
                .map_err(|_| ApiError::field("prefix_length", "Invalid prefix length."))?
                .trunc()
        }
        (6, Some(56), None) => st
            .allocate_v6_network()
            .ok_or_else(|| ApiError::detail("No IPv6 network left."))?,
        (4, _, None) => {
            let a = st
                .allocate_public(ranges::FLOATING_V4, &[])
                .ok_or_else(|| ApiError::detail("No IPv4 address left."))?;
            IpNet::new(a, 32).map_err(|_| ApiError::detail("allocation failed"))?
        }
        (_, _, None) => {
            let a = st
                .allocate_public(ranges::FLOATING_V6, &[])
                .ok_or_else(|| ApiError::detail("No IPv6 address left."))?;
            IpNet::new(a, 128).map_err(|_| ApiError::detail("allocation failed"))?
        }
    };
    if st.floating_ips.contains_key(&network.network()) {
        return Err(ApiError::detail(format!(
            "{} is already in use.",
            network.network()
        )));
    }
    let assigned = new.server.is_some() || new.load_balancer.is_some();
    st.floating_ips.insert(
        network.network(),
        FloatingIp {
            network,
            kind: if new.global { "global" } else { "regional" }.to_string(),
            region: new.region,
            server: new.server,
            load_balancer: new.load_balancer,
            reverse_ptr: new.reverse_ptr.unwrap_or_default(),
            tags: new.tags,
            created_at: now,
            assigned_at: assigned.then_some(now),
        },
    );
    if new.load_balancer.is_some() {
        st.dataplane
            .record_floating(network.network(), new.load_balancer, now);
    }
    Ok(network.network())
}

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let default_region = region_of_zone(&app.config().default_zone).to_string();
    let ip = app.write(|st, now| {
        let version = match body.int("ip_version", true) {
            Some(v @ (4 | 6)) => Some(v as u8),
            Some(v) => {
                body.error("ip_version", format!("\"{v}\" is not a valid choice."));
                None
            }
            None => None,
        };
        let prefix = body.int("prefix_length", false);
        let kind = choice(&mut body, "type", false, &["regional", "global"])
            .unwrap_or_else(|| "regional".into());
        let region = body.string("region", false);
        let server = existing_ref(&mut body, "server", false, |s| st.servers.contains_key(&s));
        let lb = existing_ref(&mut body, "load_balancer", false, |l| {
            st.load_balancers.contains_key(&l)
        });
        let reverse_ptr = body.string("reverse_ptr", false);
        let tags = body.tags().unwrap_or_default();
        let Some(version) = version else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        let prefix = match (version, prefix) {
            (_, None) => None,
            (4, Some(32)) => Some(32),
            (6, Some(p @ (56 | 128))) => Some(p as u8),
            (_, Some(p)) => {
                body.error(
                    "prefix_length",
                    format!("\"{p}\" is not a valid prefix length for IPv{version}."),
                );
                None
            }
        };
        let global = kind == "global";
        let region = match (global, region) {
            (true, Some(_)) => {
                body.error("region", "A global Floating IP has no region.");
                None
            }
            (true, None) => None,
            (false, Some(r)) if region_exists(&r) => Some(r),
            (false, Some(r)) => {
                body.error("region", format!("\"{r}\" is not a valid choice."));
                None
            }
            (false, None) => Some(default_region.clone()),
        };
        if server.is_some() && lb.is_some() {
            body.error(
                "load_balancer",
                "Assign either a server or a load balancer, not both.",
            );
        }
        if prefix == Some(56) && reverse_ptr.is_some() {
            body.error(
                "reverse_ptr",
                "A reverse pointer can only be set on single addresses.",
            );
        }
        if body.ok_so_far() {
            check_target(&mut body, st, version, region.as_deref(), server, lb);
        }
        body.finish()?;
        insert_floating_ip(
            st,
            now,
            NewFloatingIp {
                ip_version: version,
                prefix_length: prefix,
                global,
                region,
                server,
                load_balancer: lb,
                reverse_ptr,
                tags,
                address: None,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.floating_ips.get(&ip).map(|f| created(f.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update(
    AxState(app): AxState<App>,
    Path(ip): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let ip = path_ip(&ip)?;
    let mut body = parse_body(&bytes)?;
    app.write(|st, now| {
        let fip = st.floating_ips.get(&ip).ok_or(ApiError::NotFound)?;
        body.immutable("ip_version", &json!(fip.version()));
        body.immutable("prefix_length", &json!(fip.network.prefix_len()));
        body.immutable("type", &json!(fip.kind));
        body.immutable(
            "region",
            &fip.region
                .as_ref()
                .map(|r| json!({"slug": r}))
                .unwrap_or(Value::Null),
        );
        body.immutable("network", &json!(fip.network.to_string()));
        // `null` is refused: the API cannot unassign (the API has no unassignment).
        let server = existing_ref(&mut body, "server", false, |s| st.servers.contains_key(&s));
        let lb = existing_ref(&mut body, "load_balancer", false, |l| {
            st.load_balancers.contains_key(&l)
        });
        let reverse_ptr = body.string("reverse_ptr", false);
        let tags = body.tags();
        if server.is_some() && lb.is_some() {
            body.error(
                "load_balancer",
                "Assign either a server or a load balancer, not both.",
            );
        }
        if reverse_ptr.is_some() && fip.network.prefix_len() == 56 {
            body.error(
                "reverse_ptr",
                "A reverse pointer can only be set on single addresses.",
            );
        }
        if body.ok_so_far() && (server.is_some() || lb.is_some()) {
            check_target(
                &mut body,
                st,
                fip.version(),
                fip.region.as_deref(),
                server,
                lb,
            );
        }
        body.finish()?;
        let fip = st.floating_ips.get_mut(&ip).ok_or(ApiError::NotFound)?;
        if server.is_some() || lb.is_some() {
            let moved = (server, lb) != (fip.server, fip.load_balancer);
            if moved {
                fip.assigned_at = Some(now);
            }
            fip.server = server;
            fip.load_balancer = lb;
            if moved {
                let address = fip.address();
                st.dataplane.record_floating(address, lb, now);
            }
        }
        if let Some(p) = reverse_ptr {
            fip.reverse_ptr = p;
        }
        if let Some(t) = tags {
            fip.tags = t;
        }
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(ip): Path<String>) -> ApiResult<Response> {
    let ip = path_ip(&ip)?;
    app.write(|st, now| {
        st.floating_ips
            .shift_remove(&ip)
            .ok_or(ApiError::NotFound)?;
        st.dataplane.record_floating(ip, None, now);
        Ok(no_content())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_accepts_ipv6_and_a_stripped_prefix() {
        assert_eq!(
            path_ip("2001:db8::cafe").ok(),
            "2001:db8::cafe".parse().ok()
        );
        assert_eq!(path_ip("192.0.2.1/32").ok(), "192.0.2.1".parse().ok());
        assert_eq!(path_ip("not-an-ip"), Err(ApiError::NotFound));
    }
}
