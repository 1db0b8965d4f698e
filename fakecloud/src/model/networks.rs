//! Private networks (`/v1/networks`) and their subnets (`/v1/subnets`).

use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, State, Tags, ranges};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::net::IpAddr;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Network {
    pub uuid: Uuid,
    pub name: String,
    pub zone: String,
    pub mtu: i64,
    pub tags: Tags,
    pub created_at: Time,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Subnet {
    pub uuid: Uuid,
    pub network: Uuid,
    pub cidr: IpNet,
    pub gateway_address: Option<IpAddr>,
    pub dns_servers: Vec<String>,
    pub tags: Tags,
    pub created_at: Time,
}

impl Network {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("networks", self.uuid),
            "uuid": self.uuid.to_string(),
            "name": self.name,
            "zone": Ctx::zone_stub(&self.zone),
            "mtu": self.mtu,
            "subnets": ctx.st.subnets_of(self.uuid).map(|s| ctx.subnet_stub(s.uuid)).collect::<Vec<_>>(),
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

impl Subnet {
    pub fn render(&self, ctx: &Ctx) -> Value {
        json!({
            "href": ctx.href("subnets", self.uuid),
            "uuid": self.uuid.to_string(),
            "cidr": self.cidr.to_string(),
            "network": ctx.network_stub(self.network),
            "gateway_address": self.gateway_address.map(|g| g.to_string()),
            "dns_servers": self.dns_servers,
            "tags": self.tags,
            "created_at": ctx.time(self.created_at),
        })
    }
}

pub fn default_dns() -> Vec<String> {
    ranges::DEFAULT_DNS.iter().map(|s| s.to_string()).collect()
}

/// What a network is created from (API or seed).
#[derive(Debug, Clone)]
pub struct NewNetwork {
    pub uuid: Option<Uuid>,
    pub name: String,
    pub zone: String,
    pub mtu: i64,
    /// Create the automatic IPv4 subnet.
    pub auto_subnet: bool,
    pub tags: Tags,
}

/// Inserts a network (and, if asked, its automatic IPv4 subnet).
pub fn insert_network(st: &mut State, now: Time, new: NewNetwork) -> ApiResult<Uuid> {
    let uuid = new.uuid.unwrap_or_else(|| st.ids.new_uuid());
    if st.networks.contains_key(&uuid) {
        return Err(ApiError::field(
            "uuid",
            "A network with this UUID already exists.",
        ));
    }
    st.networks.insert(
        uuid,
        Network {
            uuid,
            name: new.name,
            zone: new.zone,
            mtu: new.mtu,
            tags: new.tags,
            created_at: now,
        },
    );
    if new.auto_subnet {
        let cidr: IpNet = ranges::AUTO_SUBNET
            .parse()
            .map_err(|_| ApiError::detail("bad built-in subnet"))?;
        let id = st.ids.new_uuid();
        st.subnets.insert(
            id,
            Subnet {
                uuid: id,
                network: uuid,
                cidr,
                gateway_address: None,
                dns_servers: default_dns(),
                tags: Tags::new(),
                created_at: now,
            },
        );
    }
    Ok(uuid)
}

/// The network `use_private_network: true` attaches: the zone's network named
/// `default-network`, created on first use (the real project default is not documented).
pub fn default_network(st: &mut State, now: Time, zone: &str) -> Uuid {
    if let Some(n) = st
        .networks
        .values()
        .find(|n| n.zone == zone && n.name == "default-network")
    {
        return n.uuid;
    }
    insert_network(
        st,
        now,
        NewNetwork {
            uuid: None,
            name: "default-network".into(),
            zone: zone.into(),
            mtu: 9000,
            auto_subnet: true,
            tags: Tags::new(),
        },
    )
    .unwrap_or_else(|_| Uuid::nil())
}

/// Whether anything still uses addresses of `subnet` (server or router interfaces, VIPs).
pub fn subnet_in_use(st: &State, subnet: Uuid) -> Option<String> {
    if let Some(s) = st.servers.values().find(|s| {
        s.interfaces
            .iter()
            .any(|i| i.addresses.iter().any(|a| a.subnet == subnet))
    }) {
        return Some(format!(
            "The subnet is still used by server \"{}\".",
            s.name
        ));
    }
    if let Some(l) = st
        .load_balancers
        .values()
        .find(|l| l.vip_addresses.iter().any(|v| v.subnet == subnet))
    {
        return Some(format!(
            "The subnet is still used by load balancer \"{}\".",
            l.name
        ));
    }
    crate::model::routers::subnet_used_by_router(st, subnet)
}

/// Deletes a network with its subnets (conformance check 35); refused while a server is
/// attached or an address of one of its subnets is in use.
/// The changeable fields of a network (`None`: unchanged); validated by the caller.
#[derive(Debug, Default)]
pub struct NetworkPatch {
    pub name: Option<String>,
    pub mtu: Option<i64>,
    pub tags: Option<Tags>,
}

/// `PATCH /v1/networks/{uuid}`: name, MTU and tags; the zone never changes.
pub fn update_network(st: &mut State, id: Uuid, patch: NetworkPatch) -> ApiResult<()> {
    let network = st.networks.get_mut(&id).ok_or(ApiError::NotFound)?;
    if let Some(n) = patch.name {
        network.name = n;
    }
    if let Some(m) = patch.mtu {
        network.mtu = m;
    }
    if let Some(t) = patch.tags {
        network.tags = t;
    }
    Ok(())
}

/// The changeable fields of a subnet (`None`: unchanged); validated by the caller.
#[derive(Debug, Default)]
pub struct SubnetPatch {
    /// `Some(None)`: no gateway.
    pub gateway_address: Option<Option<IpAddr>>,
    /// `Some(None)`: back to the default resolvers.
    pub dns_servers: Option<Option<Vec<String>>>,
    pub tags: Option<Tags>,
}

/// `PATCH /v1/subnets/{uuid}`: gateway, resolvers and tags; CIDR and network never change.
pub fn update_subnet(st: &mut State, id: Uuid, patch: SubnetPatch) -> ApiResult<()> {
    let subnet = st.subnets.get_mut(&id).ok_or(ApiError::NotFound)?;
    if let Some(g) = patch.gateway_address {
        subnet.gateway_address = g;
    }
    match patch.dns_servers {
        Some(None) => subnet.dns_servers = default_dns(),
        Some(Some(list)) => subnet.dns_servers = list,
        None => {}
    }
    if let Some(t) = patch.tags {
        subnet.tags = t;
    }
    Ok(())
}

pub fn delete_network(st: &mut State, id: Uuid) -> ApiResult<()> {
    if !st.networks.contains_key(&id) {
        return Err(ApiError::NotFound);
    }
    // Refused while attached (inferred: the real API's behaviour is not documented).
    if let Some(s) = st
        .servers
        .values()
        .find(|s| s.interfaces.iter().any(|i| i.network == id))
    {
        return Err(ApiError::detail(format!(
            "The network is still attached to server \"{}\".",
            s.name
        )));
    }
    let subnets: Vec<Uuid> = st.subnets_of(id).map(|s| s.uuid).collect();
    for s in &subnets {
        if let Some(msg) = subnet_in_use(st, *s) {
            return Err(ApiError::detail(msg));
        }
    }
    for s in subnets {
        st.subnets.shift_remove(&s);
    }
    st.networks.shift_remove(&id);
    Ok(())
}

/// Deletes a subnet nothing uses.
pub fn delete_subnet(st: &mut State, id: Uuid) -> ApiResult<()> {
    if !st.subnets.contains_key(&id) {
        return Err(ApiError::NotFound);
    }
    if let Some(msg) = subnet_in_use(st, id) {
        return Err(ApiError::detail(msg));
    }
    st.subnets.shift_remove(&id);
    Ok(())
}

/// Whether `cidr` overlaps a subnet of `network`.
pub fn overlaps_subnet(st: &State, network: Uuid, cidr: IpNet) -> bool {
    st.subnets_of(network)
        .any(|s| s.cidr.contains(&cidr.network()) || cidr.contains(&s.cidr.network()))
}

pub struct NewSubnet {
    pub network: Uuid,
    pub cidr: IpNet,
    pub gateway_address: Option<IpAddr>,
    /// `None`: the default resolvers.
    pub dns_servers: Option<Vec<String>>,
    pub tags: Tags,
}

pub fn insert_subnet(st: &mut State, now: Time, new: NewSubnet) -> Uuid {
    let uuid = st.ids.new_uuid();
    st.subnets.insert(
        uuid,
        Subnet {
            uuid,
            network: new.network,
            cidr: new.cidr,
            gateway_address: new.gateway_address,
            dns_servers: new.dns_servers.unwrap_or_else(default_dns),
            tags: new.tags,
            created_at: now,
        },
    );
    uuid
}
