//! `/v1/networks` and `/v1/subnets` handlers.

use super::common::{
    created, existing_ref, list_answer, no_content, parse_body, path_uuid, show_answer,
};
use super::servers::zone_field;
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::networks;
use crate::model::networks::{
    NetworkPatch, NewNetwork, NewSubnet, SubnetPatch, insert_network, insert_subnet,
    overlaps_subnet,
};
use crate::request::Body;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::get;
use ipnet::IpNet;
use serde_json::json;
use std::net::IpAddr;

/// Validates `mtu`.
fn mtu_field(body: &mut Body) -> Option<i64> {
    let mtu = body.int("mtu", false)?;
    if (1280..=9000).contains(&mtu) {
        Some(mtu)
    } else {
        body.error("mtu", "Ensure this value is between 1280 and 9000.");
        None
    }
}

/// Validates `dns_servers`: `Some(None)` for null (defaults), `Some(Some(list))` otherwise.
fn dns_field(body: &mut Body) -> Option<Option<Vec<String>>> {
    let value = body.nullable_string_list("dns_servers")?;
    if let Some(list) = &value {
        for entry in list {
            match entry.parse::<IpAddr>() {
                Ok(ip) if !ip.is_unspecified() && !ip.is_multicast() => {}
                _ => {
                    body.error(
                        "dns_servers",
                        format!("\"{entry}\" is not a valid DNS server address."),
                    );
                    return None;
                }
            }
        }
    }
    Some(value)
}

fn gateway_field(body: &mut Body, cidr: Option<IpNet>) -> Option<Option<IpAddr>> {
    let value = body.nullable_string("gateway_address")?;
    match value {
        None => Some(None),
        Some(s) => match s.parse::<IpAddr>() {
            Ok(ip) if cidr.is_none_or(|c| c.contains(&ip) && ip != c.network()) => Some(Some(ip)),
            Ok(_) => {
                body.error(
                    "gateway_address",
                    "The gateway address must lie inside the subnet.",
                );
                None
            }
            Err(_) => {
                body.error("gateway_address", "Enter a valid IPv4 or IPv6 address.");
                None
            }
        },
    }
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/networks", get(list_networks).post(create_network))
        .route(
            "/networks/{uuid}",
            get(show_network)
                .patch(update_network)
                .delete(delete_network),
        )
        .route("/subnets", get(list_subnets).post(create_subnet))
        .route(
            "/subnets/{uuid}",
            get(show_subnet).patch(update_subnet).delete(delete_subnet),
        )
}

async fn list_networks(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.networks.values(), q.as_deref(), |r| r.render(ctx))
    })
}

async fn show_network(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.networks.get(&id).map(|r| r.render(ctx)))
    })
}

async fn create_network(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let name = body.string("name", true);
    let zone = zone_field(&mut body).unwrap_or_else(|| app.config().default_zone.clone());
    let mtu = mtu_field(&mut body).unwrap_or(9000);
    let auto = body.boolean("auto_create_ipv4_subnet").unwrap_or(true);
    let tags = body.tags().unwrap_or_default();
    let Some(name) = name.filter(|_| body.ok_so_far()) else {
        return Err(body
            .finish()
            .err()
            .unwrap_or_else(|| ApiError::detail("invalid request")));
    };
    let id = app.write(|st, now| {
        insert_network(
            st,
            now,
            NewNetwork {
                uuid: None,
                name,
                zone,
                mtu,
                auto_subnet: auto,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.networks.get(&id).map(|n| created(n.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update_network(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    app.write(|st, _| {
        let network = st.networks.get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("zone", &json!({"slug": network.zone}));
        let patch = NetworkPatch {
            name: body.string("name", false),
            mtu: mtu_field(&mut body),
            tags: body.tags(),
        };
        body.finish()?;
        networks::update_network(st, id, patch)?;
        Ok(no_content())
    })
}

async fn delete_network(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, _| networks::delete_network(st, id))?;
    Ok(no_content())
}

async fn list_subnets(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.subnets.values(), q.as_deref(), |r| r.render(ctx))
    })
}

async fn show_subnet(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.subnets.get(&id).map(|r| r.render(ctx)))
    })
}

/// Parses a subnet CIDR: a network address (host bits clear) with a prefix of /24 or
/// shorter for IPv4.
fn cidr_field(body: &mut Body) -> Option<IpNet> {
    let raw = body.string("cidr", true)?;
    let Ok(net) = raw.parse::<IpNet>() else {
        body.error("cidr", "Enter a valid network address in CIDR notation.");
        return None;
    };
    if net.trunc() != net {
        body.error("cidr", "Enter a valid network address in CIDR notation.");
        return None;
    }
    let too_small = match net {
        IpNet::V4(n) => n.prefix_len() > 24,
        IpNet::V6(n) => n.prefix_len() > 64,
    };
    if too_small {
        body.error("cidr", "The prefix length must be /24 or shorter.");
        return None;
    }
    Some(net)
}

async fn create_subnet(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let id = app.write(|st, now| {
        let cidr = cidr_field(&mut body);
        let network = existing_ref(&mut body, "network", true, |n| st.networks.contains_key(&n));
        let gateway = gateway_field(&mut body, cidr).flatten();
        let dns = dns_field(&mut body);
        let tags = body.tags().unwrap_or_default();
        if let (Some(cidr), Some(network)) = (cidr, network)
            && overlaps_subnet(st, network, cidr)
        {
            body.error(
                "cidr",
                "The subnet overlaps with another subnet of the network.",
            );
        }
        let (Some(cidr), Some(network)) = (cidr, network) else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        Ok(insert_subnet(
            st,
            now,
            NewSubnet {
                network,
                cidr,
                gateway_address: gateway,
                dns_servers: dns.flatten(),
                tags,
            },
        ))
    })?;
    app.read(&base, |ctx| {
        ctx.st.subnets.get(&id).map(|s| created(s.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update_subnet(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    app.write(|st, _| {
        let subnet = st.subnets.get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("cidr", &json!(subnet.cidr.to_string()));
        body.immutable("network", &json!({"uuid": subnet.network.to_string()}));
        let cidr = subnet.cidr;
        let patch = SubnetPatch {
            gateway_address: gateway_field(&mut body, Some(cidr)),
            dns_servers: dns_field(&mut body),
            tags: body.tags(),
        };
        body.finish()?;
        networks::update_subnet(st, id, patch)?;
        Ok(no_content())
    })
}

async fn delete_subnet(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, _| networks::delete_subnet(st, id))?;
    Ok(no_content())
}
