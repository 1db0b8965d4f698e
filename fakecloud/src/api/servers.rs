//! `/v1/servers` handlers and actions.

use super::common::{
    created, existing_ref, list_answer, no_content, parse_body, path_uuid, show_answer,
};
use crate::app::{App, Base};
use crate::catalogue::{find_flavor, find_image, zone_choices, zone_exists};
use crate::error::{ApiError, ApiResult};
use crate::model::servers::{
    AddressSpec, InterfaceSpec, NewServer, PowerAction, ServerPatch, build_interfaces,
    delete_server, insert_server, power_action, update_server,
};
use crate::model::store::State;
use crate::request::Body;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use std::net::IpAddr;
use uuid::Uuid;

/// Reads the `interfaces` request field.
fn parse_interfaces(body: &mut Body) -> Option<Vec<InterfaceSpec>> {
    let items = body.object_list("interfaces")?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match parse_interface(&item) {
            Ok(spec) => out.push(spec),
            Err(msg) => {
                body.error("interfaces", msg);
                return None;
            }
        }
    }
    Some(out)
}

fn parse_interface(item: &Map<String, Value>) -> Result<InterfaceSpec, String> {
    let network = match item.get("network") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "public" => {
            return Ok(InterfaceSpec::Public { v4: None, v6: None });
        }
        Some(Value::String(s)) => Some(crate::request::parse_uuid(s).ok_or_else(|| {
            format!("\"{s}\" is not a valid network: use \"public\" or a network UUID.")
        })?),
        Some(_) => return Err("network: Not a valid string.".to_string()),
    };
    let addresses = match item.get("addresses") {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => {
            let mut specs = Vec::with_capacity(list.len());
            for a in list {
                let Value::Object(a) = a else {
                    return Err("addresses: Expected a dictionary.".to_string());
                };
                let subnet = match a.get("subnet") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(
                        crate::request::parse_uuid(s)
                            .ok_or_else(|| "subnet: Must be a valid UUID.".to_string())?,
                    ),
                    Some(_) => return Err("subnet: Must be a valid UUID.".to_string()),
                };
                let address = match a.get("address") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(
                        s.parse::<IpAddr>()
                            .map_err(|_| format!("address: \"{s}\" is not a valid IP address."))?,
                    ),
                    Some(_) => return Err("address: Not a valid string.".to_string()),
                };
                specs.push(AddressSpec { subnet, address });
            }
            Some(specs)
        }
        Some(_) => return Err("addresses: Expected a list of items.".to_string()),
    };
    if network.is_none()
        && addresses
            .as_ref()
            .is_none_or(|a| a.iter().all(|s| s.subnet.is_none()))
    {
        return Err("Each interface needs a network or an address with a subnet.".to_string());
    }
    Ok(InterfaceSpec::Private { network, addresses })
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/servers", get(list).post(create))
        .route("/servers/{uuid}", get(show).patch(update).delete(delete))
        .route("/servers/{uuid}/{action}", post(action))
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.servers().values(), q.as_deref(), |r| r.view(ctx))
    })
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.servers().get(&id).map(|r| r.view(ctx)))
    })
}

/// Validates a zone field; `None` when absent.
pub fn zone_field(body: &mut Body) -> Option<String> {
    let zone = body.string("zone", false)?;
    if zone_exists(&zone) {
        Some(zone)
    } else {
        body.error(
            "zone",
            format!(
                "\"{zone}\" is not a valid choice. Choose one of {}.",
                zone_choices()
            ),
        );
        None
    }
}

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let body = parse_body(&bytes)?;
    let mut new = read_new_server(body, &app.config().default_zone)?;
    let timing = app.config().timing.server_create_s;
    let id = app.write(|st, now| {
        check_server_groups(st, &new.server_groups, &new.zone)?;
        new.interfaces = with_default_network(st, now, &new.zone, new.interfaces);
        insert_server(st, now, timing, new)
    })?;
    app.read(&base, |ctx| {
        ctx.st.servers().get(&id).map(|s| created(s.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

/// Reads and checks a creation request, field by field in the order the API reports them;
/// the interfaces may still name the default private network by the nil UUID.
fn read_new_server(mut body: Body, default_zone: &str) -> ApiResult<NewServer> {
    let name = body.string("name", true);
    let flavor = body.string("flavor", true);
    let image = body.string("image", true);
    let zone = zone_field(&mut body).unwrap_or_else(|| default_zone.to_string());
    let volume_size_gb = body.int("volume_size_gb", false).unwrap_or(10);
    let bulk = body.int("bulk_volume_size_gb", false);
    let volumes = body.object_list("volumes");
    let interfaces = parse_interfaces(&mut body);
    if body.has("ssh_keys") {
        let _ = body.nullable_string_list("ssh_keys");
    }
    let _ = body.string("password", false);
    let _ = body.string("user_data", false);
    let use_public = body.boolean("use_public_network").unwrap_or(true);
    let use_private = body.boolean("use_private_network").unwrap_or(false);
    let use_ipv6 = body.boolean("use_ipv6").unwrap_or(true);
    let _ = body.nullable_uuid("anti_affinity_with");
    let groups = body.string_list("server_groups").unwrap_or_default();
    let tags = body.tags().unwrap_or_default();

    check_flavor(&mut body, flavor.as_deref(), &zone);
    check_image(&mut body, image.as_deref());
    check_volume_sizes(&mut body, volume_size_gb, bulk);
    let extra_volumes = extra_volumes(&mut body, volumes.unwrap_or_default(), bulk);
    let group_ids = server_group_ids(&mut body, &groups);
    let (name, flavor, image) = match (name, flavor, image) {
        (Some(n), Some(f), Some(i)) if body.ok_so_far() => (n, f, i),
        _ => {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        }
    };
    Ok(NewServer {
        uuid: None,
        name,
        flavor,
        image,
        zone,
        interfaces: interfaces.unwrap_or_else(|| default_interfaces(use_public, use_private)),
        use_ipv6,
        volume_size_gb,
        extra_volumes,
        server_groups: group_ids,
        tags,
        settled: None,
    })
}

fn check_flavor(body: &mut Body, flavor: Option<&str>, zone: &str) {
    if let Some(f) = flavor {
        match find_flavor(f) {
            None => body.error("flavor", format!("\"{f}\" is not a valid choice.")),
            Some(fl) if !fl.zones.contains(&zone) => body.error(
                "flavor",
                format!("Flavor \"{f}\" is not available in zone {zone}."),
            ),
            Some(_) => {}
        }
    }
}

fn check_image(body: &mut Body, image: Option<&str>) {
    // Custom images (UUID or `custom:<slug>`) are resolved against the store on insert.
    if let Some(i) = image
        && find_image(i).is_none()
        && !crate::model::custom_images::may_name_custom_image(i)
    {
        body.error("image", format!("\"{i}\" is not a valid choice."));
    }
}

fn check_volume_sizes(body: &mut Body, volume_size_gb: i64, bulk: Option<i64>) {
    if volume_size_gb < 10 {
        body.error(
            "volume_size_gb",
            "Ensure this value is greater than or equal to 10.",
        );
    }
    if let Some(b) = bulk
        && (b < 0 || b % 100 != 0)
    {
        body.error("bulk_volume_size_gb", "The size must be a multiple of 100.");
    }
}

/// The volumes besides the root volume, as `(type, size_gb)`: those of the `volumes` field,
/// then the bulk volume of `bulk_volume_size_gb`.
fn extra_volumes(
    body: &mut Body,
    volumes: Vec<Map<String, Value>>,
    bulk: Option<i64>,
) -> Vec<(String, i64)> {
    let mut extra_volumes = Vec::new();
    for v in volumes {
        let size = v.get("size_gb").and_then(Value::as_i64);
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ssd")
            .to_string();
        match size {
            Some(s) if s > 0 && (kind == "ssd" || kind == "bulk") => {
                match crate::model::volumes::size_error(&kind, s, false) {
                    None => extra_volumes.push((kind, s)),
                    Some(msg) => body.error("volumes", format!("size_gb: {msg}")),
                }
            }
            _ => body.error(
                "volumes",
                "Each volume needs a positive \"size_gb\" and a \"type\" of ssd or bulk.",
            ),
        }
    }
    if let Some(b) = bulk.filter(|b| *b > 0) {
        extra_volumes.push(("bulk".to_string(), b));
    }
    extra_volumes
}

fn server_group_ids(body: &mut Body, groups: &[String]) -> Vec<Uuid> {
    let mut group_ids = Vec::new();
    for g in groups {
        match crate::request::parse_uuid(g) {
            Some(id) => group_ids.push(id),
            None => body.error("server_groups", crate::request::NOT_UUID),
        }
    }
    group_ids
}

/// The interfaces of a request without an `interfaces` field, from its
/// `use_public_network` and `use_private_network` flags.
fn default_interfaces(use_public: bool, use_private: bool) -> Vec<InterfaceSpec> {
    let mut specs = Vec::new();
    if use_public {
        specs.push(InterfaceSpec::Public { v4: None, v6: None });
    }
    if use_private {
        // Stands in for the project's default private network (not documented).
        specs.push(InterfaceSpec::Private {
            network: Some(Uuid::nil()),
            addresses: None,
        });
    }
    specs
}

/// Every server group asked for exists and is in the server's zone.
fn check_server_groups(st: &State, group_ids: &[Uuid], zone: &str) -> ApiResult<()> {
    for g in group_ids {
        match st.server_groups.get(g) {
            None => {
                return Err(ApiError::field(
                    "server_groups",
                    format!("Invalid pk \"{g}\" - object does not exist."),
                ));
            }
            Some(sg) if sg.zone != zone => {
                return Err(ApiError::field(
                    "server_groups",
                    "The server group is in another zone.",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Replaces the nil-UUID stand-in by the zone's default private network, made if need be.
fn with_default_network(
    st: &mut State,
    now: crate::clock::Time,
    zone: &str,
    specs: Vec<InterfaceSpec>,
) -> Vec<InterfaceSpec> {
    specs
        .into_iter()
        .map(|s| match s {
            InterfaceSpec::Private {
                network: Some(n),
                addresses,
            } if n.is_nil() => InterfaceSpec::Private {
                network: Some(crate::resources::networks::default_network(st, now, zone)),
                addresses,
            },
            other => other,
        })
        .collect()
}

async fn update(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.server_action_s;
    app.write(|st, now| {
        let server = st.servers().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("zone", &json!({"slug": server.zone}));
        body.immutable("image", &json!({"slug": server.image}));
        body.immutable("status", &json!(server.status(now)));
        let name = body.string("name", false);
        let flavor = body.string("flavor", false);
        let interfaces = parse_interfaces(&mut body);
        let tags = body.tags();
        if flavor.is_some() && (body.has("name") || body.has("interfaces") || body.has("tags")) {
            return Err(ApiError::detail(
                "Only one attribute can be changed at a time when changing the flavor.",
            ));
        }
        if let Some(f) = &flavor
            && f != &server.flavor
        {
            match find_flavor(f) {
                None => body.error("flavor", format!("\"{f}\" is not a valid choice.")),
                Some(_) if server.status(now) != "stopped" => {
                    body.error("flavor", "The server must be stopped to change its flavor.")
                }
                Some(_) => {}
            }
        }
        let new_interfaces = match &interfaces {
            Some(specs) if body.ok_so_far() => Some(
                build_interfaces(
                    st,
                    &server.zone,
                    &server.name,
                    specs,
                    true,
                    &server.interfaces,
                    Some(id),
                )
                .map_err(|m| ApiError::field("interfaces", m))?,
            ),
            _ => None,
        };
        body.finish()?;
        update_server(
            st,
            id,
            now,
            timing,
            ServerPatch {
                name,
                flavor,
                interfaces: new_interfaces,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(id): Path<String>) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.write(|st, now| delete_server(st, id, now))?;
    Ok(no_content())
}

async fn action(
    AxState(app): AxState<App>,
    Path((id, action)): Path<(String, String)>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let action = PowerAction::parse(&action).ok_or(ApiError::NotFound)?;
    // The body is ignored (Go sends none, the CLI sends `{}`), but must not be garbage.
    parse_body(&bytes)?;
    let timing = app.config().timing.server_action_s;
    app.write(|st, now| {
        power_action(st, id, now, timing, action)?;
        Ok(no_content())
    })
}

/// Checks a reference to a server in a body.
pub fn server_ref(body: &mut Body, st: &State, key: &str) -> Option<Uuid> {
    existing_ref(body, key, false, |id| st.servers().contains_key(&id))
}
