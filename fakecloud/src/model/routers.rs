//! Routers (`/v1/routers`) and their interfaces (`/v1/routers/{uuid}/interfaces`).
//!
//! A router is `creating` for `ROUTER_CREATE_S` virtual seconds, then `active` (readers
//! compare the stored time with the clock). With `internet_gateway` on it holds exactly one
//! public IPv4 address; its interfaces each hold addresses in subnets of one private network
//! of its zone. Addresses are derived from the records, so deleting a router or an
//! interface frees them. Rules: fakecloud/MODEL.md, "Routers".

use crate::clock::{Time, delta_from_secs};
use crate::error::{ApiError, ApiResult};
use crate::model::networks::Subnet;
use crate::model::servers::ZoneStub;
use crate::model::store::{
    CidrText, Ctx, Href, Keyed, NamedStub, State, SubnetStub, Tags, TimeText, ranges,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;
use uuid::Uuid;

/// Virtual seconds a new router is `creating` before it is `active` [INF: the Go SDK waits
/// up to 5 minutes].
pub const ROUTER_CREATE_S: f64 = 3.0;

/// The public IPv4 address of an internet gateway.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GatewayAddress {
    pub address: IpAddr,
    /// The router's name when the address was allocated, if that was an FQDN.
    pub reverse_ptr: Option<String>,
}

/// One address of a router interface.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InterfaceAddress {
    pub subnet: Uuid,
    pub address: IpAddr,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RouterInterface {
    pub uuid: Uuid,
    pub network: Uuid,
    pub addresses: Vec<InterfaceAddress>,
    pub mac_address: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Router {
    pub uuid: Uuid,
    pub name: String,
    pub zone: String,
    /// Set exactly while `internet_gateway` is on.
    pub gateway: Option<GatewayAddress>,
    pub interfaces: Vec<RouterInterface>,
    pub tags: Tags,
    pub created_at: Time,
    /// `creating` until then, `active` after.
    pub active_at: Time,
}

impl Keyed for Router {
    type Key = Uuid;
    fn key(&self) -> Uuid {
        self.uuid
    }
}

/// The synthetic subnet the gateway addresses of routers in `zone` live in.
pub fn gateway_subnet_uuid(zone: &str) -> Uuid {
    Uuid::new_v5(
        &Uuid::NAMESPACE_URL,
        format!("fakecloud:router-gateway:{zone}:v4").as_bytes(),
    )
}

#[derive(Serialize)]
pub struct AddressView<'a> {
    pub address: IpAddr,
    pub subnet: SubnetStub<'a>,
    pub version: u8,
    pub reverse_ptr: Option<&'a str>,
}

#[derive(Serialize)]
pub struct InterfaceView<'a> {
    pub uuid: Uuid,
    pub network: NamedStub<'a>,
    pub addresses: Vec<AddressView<'a>>,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub mac_address: &'a str,
}

#[derive(Serialize)]
pub struct RouterView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub zone: ZoneStub<'a>,
    pub status: &'static str,
    pub internet_gateway: bool,
    pub internet_gateway_addresses: Vec<AddressView<'a>>,
    pub interfaces: Vec<InterfaceView<'a>>,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

fn version_of(a: IpAddr) -> u8 {
    if a.is_ipv4() { 4 } else { 6 }
}

impl RouterInterface {
    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> InterfaceView<'a> {
        InterfaceView {
            uuid: self.uuid,
            network: ctx.network_ref(self.network),
            addresses: self
                .addresses
                .iter()
                .map(|a| AddressView {
                    address: a.address,
                    subnet: ctx.subnet_ref(a.subnet),
                    version: version_of(a.address),
                    reverse_ptr: None,
                })
                .collect(),
            kind: "private",
            mac_address: &self.mac_address,
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

impl Router {
    pub fn status(&self, now: Time) -> &'static str {
        if now < self.active_at {
            "creating"
        } else {
            "active"
        }
    }

    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> RouterView<'a> {
        let gateway_subnet = gateway_subnet_uuid(&self.zone);
        RouterView {
            href: ctx.href_of("routers", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            zone: ZoneStub { slug: &self.zone },
            status: self.status(ctx.now),
            internet_gateway: self.gateway.is_some(),
            internet_gateway_addresses: self
                .gateway
                .iter()
                .map(|g| AddressView {
                    address: g.address,
                    subnet: SubnetStub {
                        href: ctx.href_of("subnets", gateway_subnet),
                        uuid: gateway_subnet,
                        cidr: CidrText::Static(ranges::ROUTER_GATEWAY_V4),
                    },
                    version: 4,
                    reverse_ptr: g.reverse_ptr.as_deref(),
                })
                .collect(),
            interfaces: self.interfaces.iter().map(|i| i.view(ctx)).collect(),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }

    /// Every address the router holds in `subnet` (what allocation must skip).
    pub fn addresses_in(&self, subnet: Uuid) -> impl Iterator<Item = IpAddr> + '_ {
        self.interfaces
            .iter()
            .flat_map(|i| i.addresses.iter())
            .filter(move |a| a.subnet == subnet)
            .map(|a| a.address)
    }

    /// The gateway address, if any (a public address in use).
    pub fn gateway_address(&self) -> Option<IpAddr> {
        self.gateway.as_ref().map(|g| g.address)
    }
}

/// Whether `name` is a fully qualified domain name: at least two dot-separated labels of
/// letters, digits and inner hyphens, at most 63 characters each and 253 in all, the last
/// one not all digits (one trailing dot allowed).
pub fn is_fqdn(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels: Vec<&str> = name.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    labels.len() >= 2
        && labels.iter().all(label_ok)
        && labels
            .last()
            .is_some_and(|l| l.bytes().any(|c| c.is_ascii_alphabetic()))
}

/// A new gateway address for a router called `name`; nothing changes on error.
fn allocate_gateway(st: &State, name: &str) -> ApiResult<GatewayAddress> {
    let address = st
        .allocate_public(ranges::ROUTER_GATEWAY_V4, &[])
        .ok_or_else(|| ApiError::field("internet_gateway", "No public IPv4 address left."))?;
    Ok(GatewayAddress {
        address,
        reverse_ptr: is_fqdn(name).then(|| name.to_string()),
    })
}

/// What a router is created from.
#[derive(Debug, Clone)]
pub struct NewRouter {
    pub name: String,
    pub zone: String,
    pub internet_gateway: bool,
    pub tags: Tags,
    /// `true`: `active` at once (seed files: the router already existed, as for settled
    /// servers); `false`: `creating` first, like an API-created one.
    pub settled: bool,
}

/// `POST /v1/routers`: `creating`, then `active` (at once if `new.settled`).
pub fn create_router(st: &mut State, now: Time, new: NewRouter) -> ApiResult<Uuid> {
    let gateway = if new.internet_gateway {
        Some(allocate_gateway(st, &new.name)?)
    } else {
        None
    };
    let uuid = st.ids.new_uuid();
    st.routers.insert(
        uuid,
        Router {
            uuid,
            name: new.name,
            zone: new.zone,
            gateway,
            interfaces: Vec::new(),
            tags: new.tags,
            created_at: now,
            active_at: if new.settled {
                now
            } else {
                now + delta_from_secs(ROUTER_CREATE_S)
            },
        },
    );
    Ok(uuid)
}

/// The changeable fields of a router (`None`: unchanged).
#[derive(Debug, Default)]
pub struct RouterPatch {
    pub name: Option<String>,
    pub internet_gateway: Option<bool>,
    pub tags: Option<Tags>,
}

/// `PATCH /v1/routers/{uuid}`: turning the gateway on allocates its address (named after
/// the new name if both come together), turning it off frees it; nothing changes on error.
pub fn update_router(st: &mut State, id: Uuid, patch: RouterPatch) -> ApiResult<()> {
    let r = st.routers.get(&id).ok_or(ApiError::NotFound)?;
    let name = patch.name.clone().unwrap_or_else(|| r.name.clone());
    let gateway = match (patch.internet_gateway, &r.gateway) {
        (Some(true), None) => Some(Some(allocate_gateway(st, &name)?)),
        (Some(false), Some(_)) => Some(None),
        _ => None,
    };
    let r = st.routers.get_mut(&id).ok_or(ApiError::NotFound)?;
    r.name = name;
    if let Some(g) = gateway {
        r.gateway = g;
    }
    if let Some(t) = patch.tags {
        r.tags = t;
    }
    Ok(())
}

/// `DELETE /v1/routers/{uuid}`: the router goes with its interfaces; their addresses and
/// the gateway address are free again.
pub fn delete_router(st: &mut State, id: Uuid) -> ApiResult<()> {
    st.routers
        .shift_remove(&id)
        .map(|_| ())
        .ok_or(ApiError::NotFound)
}

/// One requested interface address: either part may be left to fakecloud.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AddressRequest {
    pub subnet: Option<Uuid>,
    pub address: Option<IpAddr>,
}

/// What an interface is created from. Empty `addresses`: one from the network's first
/// IPv4 subnet.
#[derive(Debug, Clone)]
pub struct NewInterface {
    pub network: Uuid,
    pub addresses: Vec<AddressRequest>,
}

fn bad_address(msg: impl Into<String>) -> ApiError {
    ApiError::field("addresses", msg)
}

/// A MAC address for an interface: locally administered, from the interface's UUID (so a
/// seeded run repeats it).
fn mac_for(uuid: Uuid) -> String {
    let b = uuid.as_bytes();
    format!(
        "02:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        b[11], b[12], b[13], b[14], b[15]
    )
}

/// Checks the network of a new interface of `router`.
fn check_network(st: &State, router: &Router, network: Uuid) -> ApiResult<()> {
    let net = st.networks.get(&network).ok_or_else(|| {
        ApiError::field(
            "network",
            format!("Invalid pk \"{network}\" - object does not exist."),
        )
    })?;
    if net.zone != router.zone {
        return Err(ApiError::field(
            "network",
            format!(
                "Network \"{network}\" is in zone {}, the router in {}.",
                net.zone, router.zone
            ),
        ));
    }
    if router.interfaces.iter().any(|i| i.network == network) {
        return Err(ApiError::field(
            "network",
            format!("The router already has an interface on network \"{network}\"."),
        ));
    }
    Ok(())
}

/// The subnet an address request refers to (given, or found in `network`).
fn subnet_for<'a>(st: &'a State, network: Uuid, req: &AddressRequest) -> ApiResult<&'a Subnet> {
    let subnet = match (req.subnet, req.address) {
        (Some(s), _) => st
            .subnets
            .get(&s)
            .ok_or_else(|| bad_address(format!("Invalid pk \"{s}\" - object does not exist.")))?,
        (None, Some(ip)) => st
            .subnets_of(network)
            .find(|s| s.cidr.contains(&ip))
            .ok_or_else(|| bad_address(format!("No subnet of the network contains {ip}.")))?,
        (None, None) => st
            .subnets_of(network)
            .find(|s| s.cidr.addr().is_ipv4())
            .ok_or_else(|| {
                bad_address("The network has no IPv4 subnet to take an address from.")
            })?,
    };
    if subnet.network != network {
        return Err(bad_address(format!(
            "Subnet \"{}\" is not part of network \"{network}\".",
            subnet.uuid
        )));
    }
    Ok(subnet)
}

/// Whether `ip` is a host address of `subnet` (not its network or IPv4 broadcast address).
fn is_host_of(subnet: &Subnet, ip: IpAddr) -> bool {
    subnet.cidr.contains(&ip)
        && ip != subnet.cidr.network()
        && (ip.is_ipv6() || ip != subnet.cidr.broadcast())
}

/// Resolves the address requests of a new interface: each address inside its subnet and
/// free; an address left out is the subnet's gateway address when that is free, else the
/// first free one.
fn resolve_addresses(
    st: &State,
    network: Uuid,
    requests: &[AddressRequest],
) -> ApiResult<Vec<InterfaceAddress>> {
    let wanted = if requests.is_empty() {
        vec![AddressRequest::default()]
    } else {
        requests.to_vec()
    };
    let mut out: Vec<InterfaceAddress> = Vec::new();
    for req in &wanted {
        let subnet = subnet_for(st, network, req)?;
        if out.iter().any(|a| a.subnet == subnet.uuid) {
            return Err(bad_address(format!(
                "Only one address per subnet: \"{}\" is named twice.",
                subnet.uuid
            )));
        }
        let used = st.subnet_addresses_in_use(subnet.uuid);
        let address = match req.address {
            Some(ip) if !is_host_of(subnet, ip) => {
                return Err(bad_address(format!(
                    "{ip} is not a valid IP for the specified subnet."
                )));
            }
            Some(ip) if used.contains(&ip) => {
                return Err(bad_address(format!("The address {ip} is already in use.")));
            }
            Some(ip) => ip,
            None => subnet
                .gateway_address
                .filter(|g| !used.contains(g))
                .or_else(|| st.allocate_private(subnet, &[]))
                .ok_or_else(|| bad_address(format!("Subnet {} is full.", subnet.cidr)))?,
        };
        out.push(InterfaceAddress {
            subnet: subnet.uuid,
            address,
        });
    }
    Ok(out)
}

/// `POST /v1/routers/{uuid}/interfaces`: an interface on a private network of the router's
/// zone, at most one per network; nothing changes on error.
pub fn create_interface(st: &mut State, router: Uuid, new: NewInterface) -> ApiResult<Uuid> {
    let r = st.routers.get(&router).ok_or(ApiError::NotFound)?;
    check_network(st, r, new.network)?;
    let addresses = resolve_addresses(st, new.network, &new.addresses)?;
    let uuid = st.ids.new_uuid();
    let r = st.routers.get_mut(&router).ok_or(ApiError::NotFound)?;
    r.interfaces.push(RouterInterface {
        uuid,
        network: new.network,
        addresses,
        mac_address: mac_for(uuid),
    });
    Ok(uuid)
}

/// `DELETE /v1/routers/{uuid}/interfaces/{interface uuid}`: its addresses are free again.
pub fn delete_interface(st: &mut State, router: Uuid, interface: Uuid) -> ApiResult<()> {
    let r = st.routers.get_mut(&router).ok_or(ApiError::NotFound)?;
    let at = r
        .interfaces
        .iter()
        .position(|i| i.uuid == interface)
        .ok_or(ApiError::NotFound)?;
    r.interfaces.remove(at);
    Ok(())
}

/// Whether a router holds `addr` (on an interface or as its gateway address).
pub fn holds_address(st: &State, addr: IpAddr) -> bool {
    st.routers.values().any(|r| {
        r.gateway_address() == Some(addr)
            || r.interfaces
                .iter()
                .any(|i| i.addresses.iter().any(|a| a.address == addr))
    })
}

/// Why `subnet` cannot be deleted now: a router interface holds an address in it.
pub fn subnet_used_by_router(st: &State, subnet: Uuid) -> Option<String> {
    st.routers
        .values()
        .find(|r| r.addresses_in(subnet).next().is_some())
        .map(|r| format!("The subnet is still used by router \"{}\".", r.name))
}

/// Why `network` cannot be deleted now: a router has an interface on it.
pub fn network_used_by_router(st: &State, network: Uuid) -> Option<String> {
    st.routers
        .values()
        .find(|r| r.interfaces.iter().any(|i| i.network == network))
        .map(|r| format!("The network is still attached to router \"{}\".", r.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fqdn_detection() {
        for yes in [
            "router.example.com",
            "a.b",
            "go-sdk-test-x-router.example.com.",
            "r1.example.ch",
        ] {
            assert!(is_fqdn(yes), "{yes}");
        }
        for no in [
            "router",
            "",
            ".example.com",
            "a..b",
            "-a.example.com",
            "a-.example.com",
            "1.2.3.4",
            "under_score.example.com",
            "a.b c",
        ] {
            assert!(!is_fqdn(no), "{no}");
        }
        assert!(!is_fqdn(&format!("{}.com", "a".repeat(64))));
    }

    #[test]
    fn macs_are_locally_administered_and_follow_the_uuid() {
        let u = Uuid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        assert_eq!(mac_for(u), "02:33:44:55:66:77");
    }
}
