//! Floating IPs (`/v1/floating-ips/{ip}`), addressed by IP (IPv6 colons in the path), regional
//! or global, assigned to a server or a load balancer, never unassigned.

//!
//! Every change of what an address points to is recorded on the data plane here, and only
//! here: the fields that say so are written by this module alone.

use crate::catalogue::region_of_zone;
use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, State, Tags, ranges};
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

/// Checks that the target has an address of the IP's family and sits in its region: the
/// field to blame and why, if not.
pub fn target_error(
    st: &State,
    version: u8,
    region: Option<&str>,
    server: Option<Uuid>,
    lb: Option<Uuid>,
) -> Option<(&'static str, String)> {
    let key = if server.is_some() {
        "server"
    } else {
        "load_balancer"
    };
    if let (Some(region), Some(target)) = (region, target_region(st, server, lb))
        && region != target
    {
        return Some((
            key,
            format!(
                "A regional Floating IP in {region} cannot be assigned to a target in {target}."
            ),
        ));
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
    (!has_family).then(|| {
        (
            key,
            format!("The target has no IPv{version} address to route to."),
        )
    })
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

/// The changeable fields of a floating IP (`None`: unchanged). The API cannot unassign.
#[derive(Debug, Clone, Default)]
pub struct FloatingIpPatch {
    pub server: Option<Uuid>,
    pub load_balancer: Option<Uuid>,
    pub reverse_ptr: Option<String>,
    pub tags: Option<Tags>,
}

/// Applies a PATCH; a new target is recorded on the data plane.
pub fn update_floating_ip(
    st: &mut State,
    ip: IpAddr,
    now: Time,
    patch: FloatingIpPatch,
) -> ApiResult<()> {
    let fip = st.floating_ips.get_mut(&ip).ok_or(ApiError::NotFound)?;
    let (server, lb) = (patch.server, patch.load_balancer);
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
    if let Some(p) = patch.reverse_ptr {
        fip.reverse_ptr = p;
    }
    if let Some(t) = patch.tags {
        fip.tags = t;
    }
    Ok(())
}

/// Deletes a floating IP; the data plane stops routing it.
pub fn delete_floating_ip(st: &mut State, ip: IpAddr, now: Time) -> ApiResult<()> {
    st.floating_ips
        .shift_remove(&ip)
        .ok_or(ApiError::NotFound)?;
    st.dataplane.record_floating(ip, None, now);
    Ok(())
}
