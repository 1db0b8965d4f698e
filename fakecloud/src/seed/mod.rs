//! Seed documents: networks, subnets, servers, floating IPs, objects users with their
//! buckets, volumes, volume snapshots, custom images and routers to preload (from
//! `--seed FILE`, JSON or YAML, or `POST /_fake/seed`). The format and the order in which
//! the sections apply are described in `fakecloud/README.md`, "Seed files";
//! `fakecloud/examples/seed.yaml` is a complete example.
//!
//! Seeded resources are settled (servers `running` or `stopped`, snapshots `available`,
//! images imported, routers `active`) but go through the model's rules like API requests.

mod routers;
mod storage;

pub use routers::{SeedRouter, SeedRouterInterface};
pub use storage::{SeedCustomImage, SeedVolume, SeedVolumeSnapshot};

use crate::catalogue::{find_flavor, find_image, region_exists, region_of_zone, zone_exists};
use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::model::buckets::{NewBucket, create_bucket, parse_created_at};
use crate::model::custom_images::may_name_custom_image;
use crate::model::floating_ips::{NewFloatingIp, insert_floating_ip};
use crate::model::networks::{NewNetwork, insert_network};
use crate::model::objects_users::create_objects_user;
use crate::model::servers::{AddressSpec, InterfaceSpec, NewServer, Power, insert_server};
use crate::model::store::{State, Tags};
use ipnet::IpNet;
use serde::Deserialize;
use std::net::IpAddr;
use uuid::Uuid;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seed {
    #[serde(default)]
    pub networks: Vec<SeedNetwork>,
    #[serde(default)]
    pub servers: Vec<SeedServer>,
    #[serde(default)]
    pub floating_ips: Vec<SeedFloatingIp>,
    #[serde(default)]
    pub objects_users: Vec<SeedObjectsUser>,
    #[serde(default)]
    pub custom_images: Vec<SeedCustomImage>,
    #[serde(default)]
    pub volumes: Vec<SeedVolume>,
    #[serde(default)]
    pub volume_snapshots: Vec<SeedVolumeSnapshot>,
    #[serde(default)]
    pub routers: Vec<SeedRouter>,
}

/// An objects user with the buckets it owns (buckets are what `/v1/metrics/buckets`
/// reports on).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedObjectsUser {
    pub display_name: String,
    #[serde(default)]
    pub tags: Tags,
    #[serde(default)]
    pub buckets: Vec<SeedBucket>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedBucket {
    pub name: String,
    /// RFC 3339, or `YYYY-MM-DD` for midnight Europe/Zurich (default: now).
    pub created_at: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedNetwork {
    pub uuid: Option<Uuid>,
    pub name: String,
    pub zone: Option<String>,
    pub mtu: Option<i64>,
    #[serde(default)]
    pub tags: Tags,
    /// Without subnets, the network gets the automatic IPv4 subnet.
    pub subnets: Option<Vec<SeedSubnet>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedSubnet {
    pub uuid: Option<Uuid>,
    pub cidr: IpNet,
    pub gateway_address: Option<IpAddr>,
    pub dns_servers: Option<Vec<String>>,
    #[serde(default)]
    pub tags: Tags,
}

fn yes() -> bool {
    true
}

/// A server as seeds and `POST /_fake/servers` describe it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedServer {
    pub uuid: Option<Uuid>,
    pub name: String,
    pub flavor: Option<String>,
    pub image: Option<String>,
    pub zone: Option<String>,
    /// `running` (default) or `stopped`; the server is settled, never `changing`.
    pub status: Option<Power>,
    #[serde(default)]
    pub tags: Tags,
    /// A public interface (default true).
    #[serde(default = "yes")]
    pub public: bool,
    /// An IPv6 address on the public interface (default true).
    #[serde(default = "yes")]
    pub ipv6: bool,
    pub public_ipv4: Option<IpAddr>,
    pub public_ipv6: Option<IpAddr>,
    #[serde(default)]
    pub private: Vec<SeedPrivate>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedPrivate {
    /// Network name or UUID.
    pub network: String,
    pub address: Option<IpAddr>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedFloatingIp {
    #[serde(default = "four")]
    pub ip_version: u8,
    pub address: Option<IpAddr>,
    pub prefix_length: Option<u8>,
    /// `regional` (default) or `global`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub region: Option<String>,
    /// Server name or UUID.
    pub server: Option<String>,
    pub reverse_ptr: Option<String>,
    #[serde(default)]
    pub tags: Tags,
}

fn four() -> u8 {
    4
}

/// Parses a seed from JSON or YAML text (YAML is a superset, but JSON errors read better).
pub fn parse_seed(text: &str) -> Result<Seed, String> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| format!("invalid seed (JSON): {e}"))
    } else {
        serde_yaml_ng::from_str(text).map_err(|e| format!("invalid seed (YAML): {e}"))
    }
}

fn bad(key: &str, msg: impl Into<String>) -> ApiError {
    ApiError::field(key, msg)
}

/// How errors name a seed entry: `volumes[2] (name "data")` (README, "Seed files").
fn entry(section: &str, index: usize, name: &str) -> String {
    format!("{section}[{index}] (name \"{name}\")")
}

/// Puts an error under the entry it is about, keeping the field it names:
/// `volumes[2] (name "data"): server: …`.
fn in_entry(label: &str, e: ApiError) -> ApiError {
    let text = match e {
        ApiError::BadRequest(fields) => fields
            .iter()
            .map(|(k, v)| {
                if k == "detail" {
                    v.clone()
                } else {
                    format!("{k}: {v}")
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    };
    bad(label, text)
}

/// A zone given or defaulted, which must exist.
fn known_zone(zone: String) -> ApiResult<String> {
    if zone_exists(&zone) {
        Ok(zone)
    } else {
        Err(bad("zone", format!("\"{zone}\" is not a valid zone")))
    }
}

/// Finds a `kind` among `(uuid, name)` pairs by UUID or name; names must be unambiguous.
fn find_by_ref<'a>(
    kind: &str,
    r: &str,
    items: impl IntoIterator<Item = (Uuid, &'a str)>,
) -> Result<Uuid, String> {
    let items: Vec<(Uuid, &str)> = items.into_iter().collect();
    if let Some(id) = crate::request::parse_uuid(r)
        && items.iter().any(|(u, _)| *u == id)
    {
        return Ok(id);
    }
    let named: Vec<Uuid> = items
        .iter()
        .filter(|(_, n)| *n == r)
        .map(|(u, _)| *u)
        .collect();
    match named.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!("{kind} \"{r}\" does not exist")),
        _ => Err(format!("{kind} name \"{r}\" is ambiguous; use its UUID")),
    }
}

/// Finds a network by UUID or name (names must be unambiguous).
fn network_by_ref(st: &State, r: &str) -> Result<Uuid, String> {
    let networks = st.networks.values().map(|n| (n.uuid, n.name.as_str()));
    find_by_ref("network", r, networks)
}

/// Finds a server by UUID or name (names must be unambiguous).
fn server_by_ref(st: &State, r: &str) -> Result<Uuid, String> {
    let servers = st.servers().values().map(|s| (s.uuid, s.name.as_str()));
    find_by_ref("server", r, servers)
}

/// Inserts one seed server (also what `POST /_fake/servers` does).
pub fn add_server(
    st: &mut State,
    now: Time,
    default_zone: &str,
    s: &SeedServer,
) -> ApiResult<Uuid> {
    let zone = s.zone.clone().unwrap_or_else(|| default_zone.to_string());
    if !zone_exists(&zone) {
        return Err(bad("zone", format!("\"{zone}\" is not a valid zone")));
    }
    let flavor = s.flavor.clone().unwrap_or_else(|| "flex-4-2".to_string());
    if find_flavor(&flavor).is_none() {
        return Err(bad("flavor", format!("\"{flavor}\" is not a valid flavor")));
    }
    let image = s.image.clone().unwrap_or_else(|| "debian-12".to_string());
    // A custom image (`custom:<slug>` or a UUID) is resolved by `insert_server`, which
    // names the image if it does not exist in the zone (fakecloud/MODEL.md, "Custom images").
    if find_image(&image).is_none() && !may_name_custom_image(&image) {
        return Err(bad("image", format!("\"{image}\" is not a valid image")));
    }
    if s.name.is_empty() {
        return Err(bad("name", "must not be empty"));
    }
    let mut interfaces = Vec::new();
    if s.public {
        interfaces.push(InterfaceSpec::Public {
            v4: s.public_ipv4,
            v6: s.public_ipv6,
        });
    }
    for p in &s.private {
        let network = network_by_ref(st, &p.network).map_err(|m| bad("private", m))?;
        interfaces.push(InterfaceSpec::Private {
            network: Some(network),
            addresses: p.address.map(|a| {
                vec![AddressSpec {
                    subnet: None,
                    address: Some(a),
                }]
            }),
        });
    }
    insert_server(
        st,
        now,
        0.0,
        NewServer {
            uuid: s.uuid,
            name: s.name.clone(),
            flavor,
            image,
            zone,
            interfaces,
            use_ipv6: s.ipv6,
            volume_size_gb: 10,
            extra_volumes: Vec::new(),
            server_groups: Vec::new(),
            tags: s.tags.clone(),
            settled: Some(s.status.unwrap_or(Power::Running)),
        },
    )
}

/// Counts of what a seed created: networks, subnets, servers and floating IPs always, the
/// other kinds only when not zero (README, "Seed files").
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SeedSummary {
    pub networks: usize,
    pub subnets: usize,
    pub servers: usize,
    pub floating_ips: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub objects_users: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub buckets: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub custom_images: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub volumes: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub volume_snapshots: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub routers: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub router_interfaces: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Adds the seed's networks and their subnets to `work`.
fn add_networks(
    work: &mut State,
    now: Time,
    default_zone: &str,
    networks: &[SeedNetwork],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for n in networks {
        let zone = n.zone.clone().unwrap_or_else(|| default_zone.to_string());
        if !zone_exists(&zone) {
            return Err(bad(
                "networks",
                format!("network \"{}\": \"{zone}\" is not a valid zone", n.name),
            ));
        }
        let id = insert_network(
            work,
            now,
            NewNetwork {
                uuid: n.uuid,
                name: n.name.clone(),
                zone,
                mtu: n.mtu.unwrap_or(9000),
                auto_subnet: n.subnets.is_none(),
                tags: n.tags.clone(),
            },
        )?;
        summary.networks += 1;
        summary.subnets += usize::from(n.subnets.is_none());
        for s in n.subnets.iter().flatten() {
            add_subnet(work, now, id, s)?;
            summary.subnets += 1;
        }
    }
    Ok(())
}

fn add_subnet(work: &mut State, now: Time, network: Uuid, s: &SeedSubnet) -> ApiResult<()> {
    // Drawn from `work`: its ids are the ones kept when the seed applies.
    let uuid = s.uuid.unwrap_or_else(|| work.ids.new_uuid());
    if s.cidr.trunc() != s.cidr {
        return Err(bad(
            "networks",
            format!("subnet {}: host bits set; use {}", s.cidr, s.cidr.trunc()),
        ));
    }
    if let Some(gw) = s.gateway_address
        && !s.cidr.contains(&gw)
    {
        return Err(bad(
            "networks",
            format!("subnet {}: gateway {gw} lies outside", s.cidr),
        ));
    }
    work.subnets.insert(
        uuid,
        crate::model::networks::Subnet {
            uuid,
            network,
            cidr: s.cidr,
            gateway_address: s.gateway_address,
            dns_servers: s.dns_servers.clone().unwrap_or_else(|| {
                crate::model::store::ranges::DEFAULT_DNS
                    .iter()
                    .map(|d| d.to_string())
                    .collect()
            }),
            tags: s.tags.clone(),
            created_at: now,
        },
    );
    Ok(())
}

/// Adds the seed's servers to `work`.
fn add_servers(
    work: &mut State,
    now: Time,
    default_zone: &str,
    servers: &[SeedServer],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for s in servers {
        add_server(work, now, default_zone, s).map_err(|e| match e {
            ApiError::BadRequest(m) => {
                let text = m
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                bad("servers", format!("server \"{}\": {text}", s.name))
            }
            other => other,
        })?;
        summary.servers += 1;
    }
    Ok(())
}

/// Adds the seed's floating IPs to `work`.
fn add_floating_ips(
    work: &mut State,
    now: Time,
    default_zone: &str,
    floating_ips: &[SeedFloatingIp],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for f in floating_ips {
        let global = match f.kind.as_deref() {
            None | Some("regional") => false,
            Some("global") => true,
            Some(other) => {
                return Err(bad(
                    "floating_ips",
                    format!("type \"{other}\" is not regional or global"),
                ));
            }
        };
        let server = match &f.server {
            None => None,
            Some(r) => Some(server_by_ref(work, r).map_err(|m| bad("floating_ips", m))?),
        };
        let region = if global {
            None
        } else {
            let r = f.region.clone().unwrap_or_else(|| {
                server
                    .and_then(|s| work.servers().get(&s))
                    .map(|s| region_of_zone(&s.zone).to_string())
                    .unwrap_or_else(|| region_of_zone(default_zone).to_string())
            });
            if !region_exists(&r) {
                return Err(bad(
                    "floating_ips",
                    format!("region \"{r}\" does not exist"),
                ));
            }
            Some(r)
        };
        if !matches!(f.ip_version, 4 | 6) {
            return Err(bad("floating_ips", "ip_version must be 4 or 6"));
        }
        insert_floating_ip(
            work,
            now,
            NewFloatingIp {
                ip_version: f.ip_version,
                prefix_length: f.prefix_length,
                global,
                region,
                server,
                load_balancer: None,
                reverse_ptr: f.reverse_ptr.clone(),
                tags: f.tags.clone(),
                address: f.address,
            },
        )?;
        summary.floating_ips += 1;
    }
    Ok(())
}

/// Adds the seed's objects users and their buckets to `work`.
fn add_objects_users(
    work: &mut State,
    now: Time,
    users: &[SeedObjectsUser],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for u in users {
        if u.display_name.is_empty() {
            return Err(bad("objects_users", "display_name must not be empty"));
        }
        let id = create_objects_user(work, now, u.display_name.clone(), u.tags.clone());
        summary.objects_users += 1;
        for b in &u.buckets {
            let created_at = match b.created_at.as_deref() {
                None => None,
                Some(t) => Some(parse_created_at(t).ok_or_else(|| {
                    bad(
                        "objects_users",
                        format!(
                            "bucket \"{}\": \"{t}\" is no RFC 3339 time or YYYY-MM-DD",
                            b.name
                        ),
                    )
                })?),
            };
            let new = NewBucket {
                name: b.name.clone(),
                objects_user_id: id.clone(),
                created_at,
            };
            create_bucket(work, now, new)
                .map_err(|e| bad("objects_users", format!("bucket \"{}\": {e}", b.name)))?;
            summary.buckets += 1;
        }
    }
    Ok(())
}

/// Applies a seed all or nothing: on error the state is left as it was. Sections apply in
/// the order README "Seed files" gives, so that an entry can refer to entries of the
/// sections before it (a server to a network or a custom image, a volume to a server, a
/// snapshot to a volume, a router interface to a network).
pub fn apply_seed(
    st: &mut State,
    now: Time,
    default_zone: &str,
    seed: &Seed,
) -> ApiResult<SeedSummary> {
    let mut work = st.clone();
    let mut summary = SeedSummary::default();
    let sum = &mut summary;
    add_networks(&mut work, now, default_zone, &seed.networks, sum)?;
    storage::add_custom_images(&mut work, now, &seed.custom_images, sum)?;
    add_servers(&mut work, now, default_zone, &seed.servers, sum)?;
    storage::add_volumes(&mut work, now, default_zone, &seed.volumes, sum)?;
    storage::add_volume_snapshots(&mut work, now, &seed.volume_snapshots, sum)?;
    add_floating_ips(&mut work, now, default_zone, &seed.floating_ips, sum)?;
    routers::add_routers(&mut work, now, default_zone, &seed.routers, sum)?;
    add_objects_users(&mut work, now, &seed.objects_users, sum)?;
    *st = work;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    #[test]
    fn example_seed_applies() {
        let text = include_str!("../../examples/seed.yaml");
        let seed = parse_seed(text).expect("example parses");
        let mut st = State::default();
        let summary = apply_seed(&mut st, Utc::now(), "rma1", &seed).expect("applies");
        assert_eq!(summary.servers, st.servers().len());
        assert!(summary.servers >= 3);
        for s in st.servers().values() {
            assert!(
                s.interfaces.iter().any(|i| !i.public),
                "{} has a private interface",
                s.name
            );
        }
        assert_eq!(summary.floating_ips, st.floating_ips().len());
        assert_eq!(summary.objects_users, st.objects_users().len());
        assert_eq!(summary.buckets, st.buckets().len());
        assert!(summary.buckets >= 1);
        assert_eq!(summary.custom_images, st.custom_images().len());
        assert!(summary.custom_images >= 1);
        assert!(summary.volumes >= 1);
        assert_eq!(summary.volume_snapshots, st.volume_snapshots().len());
        assert!(summary.volume_snapshots >= 1);
        assert_eq!(summary.routers, st.routers().len());
        assert!(summary.routers >= 1 && summary.router_interfaces >= 1);
    }

    #[test]
    fn bad_seed_changes_nothing_and_names_the_server() {
        let seed = parse_seed(
            r#"{"servers": [{"name": "a"}, {"name": "b", "private": [{"network": "nope"}]}]}"#,
        )
        .expect("parses");
        let mut st = State::default();
        let err = apply_seed(&mut st, Utc::now(), "rma1", &seed).expect_err("unknown network");
        assert!(format!("{err:?}").contains("server \\\"b\\\""), "{err:?}");
        assert!(st.servers().is_empty());
    }

    #[test]
    fn unknown_fields_are_refused_with_their_name() {
        let err = parse_seed("servers:\n  - name: a\n    flavour: flex-4-2\n").expect_err("typo");
        assert!(err.contains("flavour"), "{err}");
    }
}
