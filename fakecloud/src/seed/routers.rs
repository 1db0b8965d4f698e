//! Seed entries for routers and their interfaces (fakecloud/README.md, "Seed files"). The
//! model checks them as it checks API requests (fakecloud/MODEL.md, "Routers").

use super::{SeedSummary, bad, entry, in_entry, known_zone, network_by_ref};
use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::model::routers::{
    AddressRequest, NewInterface, NewRouter, create_interface, create_router,
};
use crate::model::store::{State, Tags};
use serde::Deserialize;
use std::net::IpAddr;
use uuid::Uuid;

/// A router, `active` at once.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRouter {
    pub name: String,
    /// Default: the zone of the first interface's network, else `--default-zone`.
    pub zone: Option<String>,
    #[serde(default)]
    pub internet_gateway: bool,
    #[serde(default)]
    pub tags: Tags,
    #[serde(default)]
    pub interfaces: Vec<SeedRouterInterface>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRouterInterface {
    /// Network name or UUID.
    pub network: String,
    /// Default: the gateway address of the network's first IPv4 subnet if free, else its
    /// first free address.
    pub address: Option<IpAddr>,
}

/// Puts the model's interface errors under the seed's keys: `interfaces[1].address`.
fn in_interface(index: usize, e: ApiError) -> ApiError {
    match e {
        ApiError::BadRequest(fields) => ApiError::BadRequest(
            fields
                .into_iter()
                .map(|(k, v)| {
                    let key = match k.as_str() {
                        "addresses" => "address",
                        other => other,
                    };
                    (format!("interfaces[{index}].{key}"), v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// Adds one router and its interfaces; returns how many interfaces it has.
fn add_router(st: &mut State, now: Time, default_zone: &str, r: &SeedRouter) -> ApiResult<usize> {
    if r.name.is_empty() {
        return Err(bad("name", "must not be empty"));
    }
    let mut networks: Vec<Uuid> = Vec::with_capacity(r.interfaces.len());
    for (j, iface) in r.interfaces.iter().enumerate() {
        let network = network_by_ref(st, &iface.network)
            .map_err(|m| bad(&format!("interfaces[{j}].network"), m))?;
        networks.push(network);
    }
    let first_zone = networks
        .first()
        .and_then(|n| st.networks.get(n))
        .map(|n| n.zone.clone());
    let zone = r
        .zone
        .clone()
        .or(first_zone)
        .unwrap_or_else(|| default_zone.to_string());
    let new = NewRouter {
        name: r.name.clone(),
        zone: known_zone(zone)?,
        internet_gateway: r.internet_gateway,
        tags: r.tags.clone(),
        settled: true,
    };
    let router = create_router(st, now, new)?;
    for (j, (iface, network)) in r.interfaces.iter().zip(networks).enumerate() {
        let addresses = iface
            .address
            .map(|a| {
                vec![AddressRequest {
                    subnet: None,
                    address: Some(a),
                }]
            })
            .unwrap_or_default();
        // Zone of the network, one interface per network, address inside a subnet and free.
        create_interface(st, router, NewInterface { network, addresses })
            .map_err(|e| in_interface(j, e))?;
    }
    Ok(r.interfaces.len())
}

/// Adds the seed's routers to `work`, `active` at once.
pub(super) fn add_routers(
    work: &mut State,
    now: Time,
    default_zone: &str,
    routers: &[SeedRouter],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for (i, r) in routers.iter().enumerate() {
        let interfaces = add_router(work, now, default_zone, r)
            .map_err(|e| in_entry(&entry("routers", i, &r.name), e))?;
        summary.routers += 1;
        summary.router_interfaces += interfaces;
    }
    Ok(())
}
