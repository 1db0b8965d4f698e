//! The load balancer itself: VIP allocation, provisioning, renaming, deletion.

use super::{Verb, change, describe_lb};
use crate::catalogue::{LB_FLAVOR_NAME, LB_FLAVOR_SLUG};
use crate::clock::{Time, delta_from_secs};
use crate::config::Timing;
use crate::dataplane::{AppliedOp, LbConfig, LbHistory};
use crate::error::{ApiError, ApiResult};
use crate::model::servers::ZoneStub;
use crate::model::store::{Ctx, Href, State, SubnetStub, Tags, TimeText, ranges, vip_subnet_uuid};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;
use uuid::Uuid;

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

    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> LoadBalancerView<'a> {
        LoadBalancerView {
            href: ctx.href_of("load-balancers", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            flavor: LbFlavorStub {
                slug: LB_FLAVOR_SLUG,
                name: LB_FLAVOR_NAME,
            },
            zone: ZoneStub { slug: &self.zone },
            status: self.status(ctx.now),
            vip_addresses: self
                .vip_addresses
                .iter()
                .map(|v| VipView {
                    version: v.version,
                    address: v.address,
                    subnet: ctx.subnet_ref(v.subnet),
                })
                .collect(),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// A load balancer as the API shows it, serialized from borrows.
#[derive(Serialize)]
pub struct LoadBalancerView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub flavor: LbFlavorStub,
    pub zone: ZoneStub<'a>,
    pub status: &'static str,
    pub vip_addresses: Vec<VipView<'a>>,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

#[derive(Serialize)]
pub struct LbFlavorStub {
    pub slug: &'static str,
    pub name: &'static str,
}

#[derive(Serialize)]
pub struct VipView<'a> {
    pub version: u8,
    pub address: IpAddr,
    pub subnet: SubnetStub<'a>,
}

/// A load balancer to create; `vips` are `(subnet, optional address)`, empty for two
/// public VIPs.
pub struct NewLoadBalancer {
    pub name: String,
    pub zone: String,
    pub vips: Vec<(Uuid, Option<IpAddr>)>,
    pub tags: Tags,
}

/// Allocates the VIPs and starts provisioning: the data plane answers on the VIPs once
/// `lb_provision_s` has passed.
pub fn create_load_balancer(
    st: &mut State,
    now: Time,
    timing: &Timing,
    new: NewLoadBalancer,
) -> ApiResult<Uuid> {
    let ready_at = now + delta_from_secs(timing.lb_provision_s);
    let NewLoadBalancer {
        name,
        zone,
        vips,
        tags,
    } = new;
    let vip_addresses = if vips.is_empty() {
        public_vips(st, &zone)?
    } else {
        let mut vip_addresses = Vec::new();
        for (subnet_id, address) in vips {
            let vip = private_vip(st, &zone, subnet_id, address, &vip_addresses)?;
            vip_addresses.push(vip);
        }
        vip_addresses
    };
    let uuid = st.ids.new_uuid();
    st.dataplane.lbs.insert(
        uuid,
        LbHistory {
            name: name.clone(),
            tags: tags.clone(),
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
}

/// Two public VIPs, IPv4 first, as the API assigns them.
fn public_vips(st: &State, zone: &str) -> ApiResult<Vec<Vip>> {
    let mut vip_addresses = Vec::new();
    for (version, range) in [(4u8, ranges::VIP_V4), (6, ranges::VIP_V6)] {
        let taken: Vec<IpAddr> = vip_addresses.iter().map(|v: &Vip| v.address).collect();
        let address = st
            .allocate_public(range, &taken)
            .ok_or_else(|| ApiError::detail("No public address left."))?;
        vip_addresses.push(Vip {
            version,
            address,
            subnet: vip_subnet_uuid(zone, version),
        });
    }
    Ok(vip_addresses)
}

/// One VIP asked for on a private subnet, the given address or a free one; `earlier` are the
/// VIPs of the same request before it.
fn private_vip(
    st: &State,
    zone: &str,
    subnet_id: Uuid,
    address: Option<IpAddr>,
    earlier: &[Vip],
) -> ApiResult<Vip> {
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
    used.extend(earlier.iter().map(|v| v.address));
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
            let chosen: Vec<IpAddr> = earlier.iter().map(|v| v.address).collect();
            st.allocate_private(subnet, &chosen).ok_or_else(|| {
                ApiError::field("vip_addresses", "The subnet has no free address.")
            })?
        }
    };
    Ok(Vip {
        version: if address.is_ipv4() { 4 } else { 6 },
        address,
        subnet: subnet_id,
    })
}

/// The changeable fields of a load balancer (`None`: unchanged).
#[derive(Debug, Default)]
pub struct LoadBalancerPatch {
    pub name: Option<String>,
    pub tags: Option<Tags>,
}

pub fn update_load_balancer(
    st: &mut State,
    id: Uuid,
    now: Time,
    timing: &Timing,
    patch: LoadBalancerPatch,
) -> ApiResult<()> {
    change(st, now, timing, Verb::Relabel, describe_lb, id, |st| {
        let lb = st.load_balancers.get_mut(&id).ok_or(ApiError::NotFound)?;
        if let Some(n) = patch.name {
            lb.name = n;
        }
        if let Some(t) = patch.tags {
            lb.tags = t;
        }
        Ok(())
    })
}

/// Everything under a load balancer is removed with it; floating IPs stay, unassigned.
/// The data plane stops at once.
pub fn delete_load_balancer(st: &mut State, id: Uuid, now: Time) -> ApiResult<()> {
    let gone = st
        .load_balancers
        .shift_remove(&id)
        .ok_or(ApiError::NotFound)?;
    if let Some(h) = st.dataplane.lbs.get_mut(&id) {
        h.deleted_at = Some(now);
        h.tags = gone.tags;
    }
    let pools: Vec<Uuid> = st
        .pools
        .values()
        .filter(|p| p.load_balancer == id)
        .map(|p| p.uuid)
        .collect();
    for p in pools {
        super::remove_pool(st, p);
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
