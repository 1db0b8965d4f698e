//! `/v1/load-balancers/…` handlers: load balancers, pools, members, listeners, health
//! monitors. They parse and check request fields, then call `model::load_balancers`, which
//! alone changes the records and keeps the data plane in step.

use super::common::{
    ListQuery, choice, created, existing_ref, no_content, ok, parse_body, path_uuid,
};
use crate::app::{App, Base};
use crate::catalogue::{LB_FLAVOR_SLUG, zone_choices, zone_exists};
use crate::error::{ApiError, ApiResult};
use crate::model::load_balancers as lbm;
use crate::model::load_balancers::health_monitors::{
    HealthMonitorPatch, NewHealthMonitor, create_health_monitor, delete_health_monitor, is_http,
    pool_has_monitor, update_health_monitor,
};
use crate::model::load_balancers::listeners::{ListenerPatch, NewListener, listener_errors};
use crate::model::load_balancers::load_balancer::{
    LoadBalancerPatch, NewLoadBalancer, create_load_balancer, delete_load_balancer,
    update_load_balancer,
};
use crate::model::load_balancers::members::{
    MemberPatch, NewMember, member_address_error, member_of,
};
use crate::model::load_balancers::pools::{NewPool, PoolPatch};
use crate::model::load_balancers::{
    ALGORITHMS, HTTP_METHODS, HTTP_VERSIONS, HealthMonitor, HttpCheck, LISTENER_PROTOCOLS,
    Listener, LoadBalancer, MONITOR_TYPES, Member, POOL_PROTOCOLS, Pool, Vip,
};
use crate::model::store::{Ctx, State, Tags};
use crate::request::{Body, REQUIRED};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as AxState};
use axum::response::Response;
use axum::routing::get;
use ipnet::IpNet;
use serde_json::{Map, Value, json};
use std::net::IpAddr;
use uuid::Uuid;

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
            ctx.st.load_balancers().values(),
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
        ctx.st.load_balancers().get(&id).map(|l| ok(l.render(ctx)))
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
    let timing = app.config().timing.clone();
    let id = app.write(|st, now| {
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
        create_load_balancer(
            st,
            now,
            &timing,
            NewLoadBalancer {
                name,
                zone,
                vips,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .load_balancers()
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
        ctx.st.load_balancers().get(&id).map(|l| l.render(ctx))
    });
    let current = current.ok_or(ApiError::NotFound)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let lb = st.load_balancers().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("zone", &current["zone"]);
        body.immutable("flavor", &current["flavor"]);
        if body.has("vip_addresses") && !same_vips(body.raw("vip_addresses"), &lb.vip_addresses) {
            body.error("vip_addresses", crate::request::IMMUTABLE);
        }
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        update_load_balancer(st, id, now, &timing, LoadBalancerPatch { name, tags })?;
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
            ctx.st.pools().values(),
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
        ctx.st.pools().get(&id).map(|p| ok(p.render(ctx)))
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
            st.load_balancers().contains_key(&l)
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
        lbm::pools::create_pool(
            st,
            now,
            &timing,
            NewPool {
                name,
                load_balancer: lb,
                algorithm,
                protocol,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.pools().get(&id).map(|p| created(p.render(ctx)))
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
        let pool = st.pools().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("algorithm", &json!(pool.algorithm));
        body.immutable("protocol", &json!(pool.protocol));
        body.immutable(
            "load_balancer",
            &json!({"uuid": pool.load_balancer.to_string()}),
        );
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        lbm::pools::update_pool(st, id, now, &timing, PoolPatch { name, tags })?;
        Ok(no_content())
    })
}

async fn delete_pool_handler(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| lbm::pools::delete_pool(st, id, now, &timing))?;
    Ok(no_content())
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
        if !ctx.st.pools().contains_key(&pool) {
            return Err(ApiError::NotFound);
        }
        Ok(ok(list_of(
            ctx,
            ctx.st.members().of_pool(pool),
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
            .members()
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
        if !st.pools().contains_key(&pool) {
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
        if let Some(ip) = address
            && let Some(msg) =
                member_address_error(st, pool, ip, subnet, protocol_port, !refuse_duplicates)
        {
            body.error("address", msg);
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
        lbm::members::create_member(
            st,
            now,
            &timing,
            NewMember {
                pool,
                name,
                enabled,
                protocol_port,
                monitor_port,
                address,
                subnet,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.members().get(&id).map(|m| created(m.render(ctx)))
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
        let member = member_of(st, pool, id).ok_or(ApiError::NotFound)?;
        body.immutable("protocol_port", &json!(member.protocol_port));
        body.immutable("monitor_port", &json!(member.monitor_port));
        body.immutable("address", &json!(member.address.to_string()));
        body.immutable("subnet", &json!({"uuid": member.subnet.to_string()}));
        let name = body.string("name", false);
        let enabled = body.boolean("enabled");
        let tags = body.tags();
        body.finish()?;
        lbm::members::update_member(
            st,
            pool,
            id,
            now,
            &timing,
            MemberPatch {
                name,
                enabled,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

async fn delete_member(
    AxState(app): AxState<App>,
    Path((pool, id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let (pool, id) = (path_uuid(&pool)?, path_uuid(&id)?);
    let timing = app.config().timing.clone();
    app.write(|st, now| lbm::members::delete_member(st, pool, id, now, &timing))?;
    Ok(no_content())
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

/// Records the model's objections to a listener's protocol and port.
fn check_listener(
    body: &mut Body,
    st: &State,
    lb: Uuid,
    pool: Option<Uuid>,
    protocol: &str,
    port: u16,
    except: Option<Uuid>,
) {
    for (key, msg) in listener_errors(st, lb, pool, protocol, port, except) {
        body.error(key, msg);
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
            ctx.st.listeners().values(),
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
        ctx.st.listeners().get(&id).map(|l| ok(l.render(ctx)))
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
        let pool = existing_ref(&mut body, "pool", true, |p| st.pools().contains_key(&p));
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
            .pools()
            .get(&pool)
            .map(|p| p.load_balancer)
            .ok_or(ApiError::NotFound)?;
        check_listener(&mut body, st, lb, Some(pool), &protocol, port, None);
        body.finish()?;
        lbm::listeners::create_listener(
            st,
            now,
            &timing,
            NewListener {
                name,
                pool,
                load_balancer: lb,
                protocol,
                protocol_port: port,
                allowed_cidrs: cidrs,
                timeout_client_data_ms: client,
                timeout_member_connect_ms: connect,
                timeout_member_data_ms: data,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.listeners().get(&id).map(|l| created(l.render(ctx)))
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
        let current = st.listeners().get(&id).ok_or(ApiError::NotFound)?.clone();
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
        lbm::listeners::update_listener(
            st,
            id,
            now,
            &timing,
            ListenerPatch {
                name,
                protocol,
                protocol_port: port,
                allowed_cidrs: cidrs,
                timeout_client_data_ms: client,
                timeout_member_connect_ms: connect,
                timeout_member_data_ms: data,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

async fn delete_listener(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| lbm::listeners::delete_listener(st, id, now, &timing))?;
    Ok(no_content())
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

async fn list_monitors(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    let q = ListQuery::parse(q.as_deref());
    ok(app.read(&base, |ctx| {
        list_of(
            ctx,
            ctx.st.health_monitors().values(),
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
        ctx.st.health_monitors().get(&id).map(|m| ok(m.render(ctx)))
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
        let pool = existing_ref(&mut body, "pool", true, |p| st.pools().contains_key(&p));
        let kind = choice(&mut body, "type", true, MONITOR_TYPES);
        let delay = positive(&mut body, "delay_s").unwrap_or(2);
        let timeout = positive(&mut body, "timeout_s").unwrap_or(1);
        let up = positive(&mut body, "up_threshold").unwrap_or(2);
        let down = positive(&mut body, "down_threshold").unwrap_or(3);
        let http_req = body.nullable_object("http").flatten();
        let tags = body.tags().unwrap_or_default();
        if let Some(p) = pool
            && pool_has_monitor(st, p)
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
        create_health_monitor(
            st,
            now,
            &timing,
            NewHealthMonitor {
                pool,
                kind,
                delay_s: delay,
                timeout_s: timeout,
                up_threshold: up,
                down_threshold: down,
                http,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .health_monitors()
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
        let m = st.health_monitors().get(&id).ok_or(ApiError::NotFound)?;
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
        update_health_monitor(
            st,
            id,
            now,
            &timing,
            HealthMonitorPatch {
                delay_s: delay,
                timeout_s: timeout,
                up_threshold: up,
                down_threshold: down,
                http,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

async fn delete_monitor(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| delete_health_monitor(st, id, now, &timing))?;
    Ok(no_content())
}
