//! Servers, their power actions, and the interface/address model shared with admin seeds.

//!
//! A server's power history is the data plane's view of whether its addresses answer: every
//! change of power or addresses is recorded there by the functions of this module.

use crate::catalogue::{find_flavor, find_image};
use crate::clock::{Time, delta_from_secs};
use crate::error::{ApiError, ApiResult};
use crate::model::project_logs;
use crate::model::store::{
    Ctx, Href, NamedStub, State, SubnetStub, Tags, TimeText, public_network_uuid,
    public_subnet_uuid, ranges,
};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Address {
    pub version: u8,
    pub address: IpAddr,
    pub prefix_length: u8,
    pub gateway: Option<IpAddr>,
    pub reverse_ptr: String,
    pub subnet: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Interface {
    pub public: bool,
    pub network: Uuid,
    pub addresses: Vec<Address>,
}

/// Reads `Server::volumes` from a dump: UUIDs, or the stub objects dumps held before
/// volumes were records of their own (their UUIDs then name no volume and are not shown).
fn volume_ids<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Uuid>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum VolumeRef {
        Id(Uuid),
        Stub { uuid: Uuid },
    }
    let refs = Vec::<VolumeRef>::deserialize(d)?;
    Ok(refs
        .into_iter()
        .map(|r| match r {
            VolumeRef::Id(u) | VolumeRef::Stub { uuid: u } => u,
        })
        .collect())
}

/// The state a server settles in once a transition is over.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Power {
    Running,
    Stopped,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Server {
    pub uuid: Uuid,
    pub name: String,
    pub zone: String,
    pub flavor: String,
    /// A catalogue slug, or for a custom image the slug its stub shows (its UUID without one).
    pub image: String,
    /// The custom image the server was made from, as it was then (`None`: catalogue image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_image: Option<crate::model::custom_images::ServerImage>,
    pub interfaces: Vec<Interface>,
    /// The attached volumes (records in `State::volumes`), root volume first, then in the
    /// order they were attached. Written only by `model::volumes`.
    #[serde(deserialize_with = "volume_ids")]
    pub volumes: Vec<Uuid>,
    pub server_groups: Vec<Uuid>,
    pub tags: Tags,
    pub created_at: Time,
    pub power: Power,
    /// While set and in the future, the server reports `changing`.
    pub changing_until: Option<Time>,
}

impl Server {
    pub fn status(&self, now: Time) -> &'static str {
        match self.changing_until {
            Some(t) if now < t => "changing",
            _ => match self.power {
                Power::Running => "running",
                Power::Stopped => "stopped",
            },
        }
    }

    /// Running and not in a transition.
    pub fn is_running(&self, now: Time) -> bool {
        self.status(now) == "running"
    }

    /// Every address of every interface (what the data plane knows the host by).
    pub fn addresses(&self) -> Vec<IpAddr> {
        self.interfaces
            .iter()
            .flat_map(|i| i.addresses.iter().map(|a| a.address))
            .collect()
    }

    /// The first address of `version` on the public interface (what `next_hop` uses).
    pub fn public_address(&self, version: u8) -> Option<IpAddr> {
        self.interfaces
            .iter()
            .filter(|i| i.public)
            .flat_map(|i| i.addresses.iter())
            .find(|a| a.version == version)
            .map(|a| a.address)
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }

    /// The other servers of its anti-affinity server groups, in the account's order: the
    /// API keeps this legacy field in step with the groups (servers joining with their
    /// creation, leaving with their deletion), and client tests read it.
    fn anti_affine<'a>(&self, ctx: &'a Ctx) -> Vec<ServerStubView<'a>> {
        let groups: Vec<Uuid> = self
            .server_groups
            .iter()
            .filter(|g| {
                ctx.st
                    .server_groups
                    .get(*g)
                    .is_some_and(|g| g.kind == "anti-affinity")
            })
            .copied()
            .collect();
        if groups.is_empty() {
            return Vec::new();
        }
        ctx.st
            .servers
            .values()
            .filter(|s| s.uuid != self.uuid && s.server_groups.iter().any(|g| groups.contains(g)))
            .map(|s| ServerStubView {
                href: ctx.href_of("servers", s.uuid),
                uuid: s.uuid,
            })
            .collect()
    }

    /// The API representation, borrowed from the record and serialized directly (server
    /// lists are the hottest read path).
    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> ServerView<'a> {
        let booted = self.created_at + delta_from_secs(ctx.timing.server_create_s) <= ctx.now;
        // Host keys are only known once the first boot is over, as on the real API.
        let fingerprints = booted.then(|| {
            let id = self.uuid.simple().to_string();
            vec![format!("ssh-ed25519 SHA256:{}", &id[..22])]
        });
        let host_keys = booted.then(|| {
            let id = self.uuid.simple().to_string();
            vec![format!(
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{id} root@{}",
                self.name
            )]
        });
        ServerView {
            href: ctx.href_of("servers", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            status: self.status(ctx.now),
            zone: ZoneStub { slug: &self.zone },
            flavor: find_flavor(&self.flavor).map(|f| FlavorStub {
                slug: f.slug,
                name: f.name,
                vcpu_count: f.vcpu_count,
                memory_gb: f.memory_gb,
            }),
            image: match &self.custom_image {
                // Custom images have no OS metadata: empty strings, not null.
                Some(c) => Some(ImageStub {
                    slug: c.slug.as_deref(),
                    name: &c.name,
                    operating_system: "",
                    default_username: "",
                }),
                None => find_image(&self.image).map(|i| ImageStub {
                    slug: Some(i.slug),
                    name: i.name,
                    operating_system: i.operating_system,
                    default_username: i.default_username,
                }),
            },
            volumes: self
                .volumes
                .iter()
                .filter_map(|v| ctx.st.volumes.get(v))
                .map(|v| VolumeView {
                    href: ctx.href_of("volumes", v.uuid),
                    uuid: v.uuid,
                    name: &v.name,
                    kind: &v.kind,
                    size_gb: v.size_gb,
                    device_path: None,
                })
                .collect(),
            interfaces: self
                .interfaces
                .iter()
                .map(|i| InterfaceView {
                    kind: if i.public { "public" } else { "private" },
                    network: ctx.network_ref(i.network),
                    addresses: i
                        .addresses
                        .iter()
                        .map(|a| AddressView {
                            version: a.version,
                            address: a.address,
                            prefix_length: a.prefix_length,
                            gateway: a.gateway,
                            reverse_ptr: &a.reverse_ptr,
                            subnet: ctx.subnet_ref(a.subnet),
                        })
                        .collect(),
                })
                .collect(),
            ssh_fingerprints: fingerprints,
            ssh_host_keys: host_keys,
            anti_affinity_with: self.anti_affine(ctx),
            server_groups: self
                .server_groups
                .iter()
                .filter_map(|g| ctx.st.server_groups.get(g))
                .map(|g| NamedStub {
                    href: ctx.href_of("server-groups", g.uuid),
                    uuid: g.uuid,
                    name: &g.name,
                })
                .collect(),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }
}

/// A server as another resource names it (`{href, uuid}`, the Go SDK's `ServerStub`).
#[derive(Serialize)]
pub struct ServerStubView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
}

#[derive(Serialize)]
pub struct ZoneStub<'a> {
    pub slug: &'a str,
}

#[derive(Serialize)]
pub struct FlavorStub {
    pub slug: &'static str,
    pub name: &'static str,
    pub vcpu_count: u32,
    pub memory_gb: u32,
}

#[derive(Serialize)]
pub struct ImageStub<'a> {
    pub slug: Option<&'a str>,
    pub name: &'a str,
    pub operating_system: &'a str,
    pub default_username: &'a str,
}

#[derive(Serialize)]
pub struct VolumeView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub size_gb: i64,
    pub device_path: Option<&'a str>,
}

#[derive(Serialize)]
pub struct AddressView<'a> {
    pub version: u8,
    pub address: IpAddr,
    pub prefix_length: u8,
    pub gateway: Option<IpAddr>,
    pub reverse_ptr: &'a str,
    pub subnet: SubnetStub<'a>,
}

#[derive(Serialize)]
pub struct InterfaceView<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub network: NamedStub<'a>,
    pub addresses: Vec<AddressView<'a>>,
}

#[derive(Serialize)]
pub struct ServerView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub status: &'static str,
    pub zone: ZoneStub<'a>,
    pub flavor: Option<FlavorStub>,
    pub image: Option<ImageStub<'a>>,
    pub volumes: Vec<VolumeView<'a>>,
    pub interfaces: Vec<InterfaceView<'a>>,
    pub ssh_fingerprints: Option<Vec<String>>,
    pub ssh_host_keys: Option<Vec<String>>,
    pub anti_affinity_with: Vec<ServerStubView<'a>>,
    pub server_groups: Vec<NamedStub<'a>>,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

/// What a client asks for one interface.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct AddressSpec {
    pub subnet: Option<Uuid>,
    pub address: Option<IpAddr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum InterfaceSpec {
    /// The public network; fixed addresses only come from admin seeds.
    Public {
        v4: Option<IpAddr>,
        v6: Option<IpAddr>,
    },
    Private {
        network: Option<Uuid>,
        /// `None`: one address from the network's first subnet; `Some([])`: layer 2 only.
        addresses: Option<Vec<AddressSpec>>,
    },
}

/// Turns interface requests into interfaces, allocating addresses. `existing` are the
/// server's current interfaces (on PATCH): an interface on the same network keeps its
/// addresses unless new ones are asked for. `server` is the server being changed, whose own
/// addresses do not count as taken.
pub fn build_interfaces(
    st: &State,
    zone: &str,
    name: &str,
    specs: &[InterfaceSpec],
    use_ipv6: bool,
    existing: &[Interface],
    server: Option<Uuid>,
) -> Result<Vec<Interface>, String> {
    let mut b = InterfaceBuilder {
        st,
        zone,
        name,
        use_ipv6,
        existing,
        server,
        out: Vec::new(),
        chosen: Vec::new(),
    };
    for spec in specs {
        match spec {
            InterfaceSpec::Public { v4, v6 } => b.public(*v4, *v6)?,
            InterfaceSpec::Private { network, addresses } => {
                b.private(*network, addresses.as_deref())?
            }
        }
    }
    Ok(b.out)
}

/// The state of one `build_interfaces` call: the interfaces built so far and the addresses
/// they hold.
struct InterfaceBuilder<'a> {
    st: &'a State,
    zone: &'a str,
    name: &'a str,
    use_ipv6: bool,
    existing: &'a [Interface],
    server: Option<Uuid>,
    out: Vec<Interface>,
    /// Addresses chosen in this call, so two interfaces cannot get the same one.
    chosen: Vec<IpAddr>,
}

impl InterfaceBuilder<'_> {
    /// Held by an interface built in this call, another server, a load balancer or a router.
    fn taken_by_other(&self, addr: IpAddr) -> bool {
        let st = self.st;
        self.chosen.contains(&addr)
            || st.servers.values().any(|s| {
                Some(s.uuid) != self.server
                    && s.interfaces
                        .iter()
                        .any(|i| i.addresses.iter().any(|a| a.address == addr))
            })
            || st
                .load_balancers
                .values()
                .any(|l| l.vip_addresses.iter().any(|v| v.address == addr))
            || crate::model::routers::holds_address(st, addr)
    }

    fn public(&mut self, v4: Option<IpAddr>, v6: Option<IpAddr>) -> Result<(), String> {
        if self.out.iter().any(|i| i.public) {
            return Err("Only one public interface is allowed.".to_string());
        }
        if let Some(keep) = self.existing.iter().find(|i| i.public) {
            self.out.push(keep.clone());
            return Ok(());
        }
        let mut addresses = Vec::new();
        let v4 = self.public_ip(v4, ranges::SERVER_V4, "No public IPv4 address left.")?;
        addresses.push(public_address(self.zone, self.name, v4));
        if self.use_ipv6 || v6.is_some() {
            let v6 = self.public_ip(v6, ranges::SERVER_V6, "No public IPv6 address left.")?;
            addresses.push(public_address(self.zone, self.name, v6));
        }
        self.out.push(Interface {
            public: true,
            network: public_network_uuid(self.zone),
            addresses,
        });
        Ok(())
    }

    /// The fixed address asked for, or the next free one of `range`; it is then chosen.
    fn public_ip(
        &mut self,
        fixed: Option<IpAddr>,
        range: &str,
        exhausted: &str,
    ) -> Result<IpAddr, String> {
        let ip = match fixed {
            Some(a) => a,
            None => self
                .st
                .allocate_public(range, &self.chosen)
                .ok_or(exhausted)?,
        };
        if self.taken_by_other(ip) {
            return Err(format!("The address {ip} is already in use."));
        }
        self.chosen.push(ip);
        Ok(ip)
    }

    fn private(
        &mut self,
        network: Option<Uuid>,
        addresses: Option<&[AddressSpec]>,
    ) -> Result<(), String> {
        let network = self.private_network(network, addresses)?;
        let keep = self.existing.iter().find(|i| i.network == network);
        let addrs = match (addresses, keep) {
            (None, Some(keep)) => keep.addresses.clone(),
            (None, None) => self.default_private_address(network)?,
            (Some(specs), _) => {
                let mut addrs = Vec::new();
                for a in specs {
                    addrs.push(self.requested_address(network, keep, a)?);
                }
                addrs
            }
        };
        self.out.push(Interface {
            public: false,
            network,
            addresses: addrs,
        });
        Ok(())
    }

    /// The network of a private interface, checked: from the request or from the first
    /// address's subnet.
    fn private_network(
        &self,
        network: Option<Uuid>,
        addresses: Option<&[AddressSpec]>,
    ) -> Result<Uuid, String> {
        let st = self.st;
        let zone = self.zone;
        let network = match network {
            Some(n) => n,
            None => {
                let subnet = addresses
                    .into_iter()
                    .flatten()
                    .find_map(|a| a.subnet)
                    .ok_or("Each interface needs a network or a subnet.")?;
                st.subnets
                    .get(&subnet)
                    .map(|s| s.network)
                    .ok_or_else(|| format!("Subnet \"{subnet}\" does not exist."))?
            }
        };
        let net = st
            .networks
            .get(&network)
            .ok_or_else(|| format!("Network \"{network}\" does not exist."))?;
        if net.zone != zone {
            return Err(format!(
                "Network \"{network}\" is in zone {}, the server in {zone}.",
                net.zone
            ));
        }
        if self.out.iter().any(|i| i.network == network) {
            return Err(format!("Network \"{network}\" is attached twice."));
        }
        Ok(network)
    }

    /// No addresses asked for on a new interface: one from the network's first IPv4 subnet,
    /// none if it has no such subnet.
    fn default_private_address(&mut self, network: Uuid) -> Result<Vec<Address>, String> {
        let st = self.st;
        match st.subnets_of(network).find(|s| s.cidr.addr().is_ipv4()) {
            Some(subnet) => {
                let a = st
                    .allocate_private(subnet, &self.chosen)
                    .ok_or_else(|| format!("Subnet {} is full.", subnet.cidr))?;
                self.chosen.push(a);
                Ok(vec![private_address(subnet, a)])
            }
            None => Ok(Vec::new()),
        }
    }

    /// One address asked for on a private interface; `keep` is the interface the server has
    /// on this network already, whose addresses stay its own.
    fn requested_address(
        &mut self,
        network: Uuid,
        keep: Option<&Interface>,
        a: &AddressSpec,
    ) -> Result<Address, String> {
        let st = self.st;
        let subnet = match (a.subnet, a.address) {
            (Some(s), _) => st
                .subnets
                .get(&s)
                .ok_or_else(|| format!("Subnet \"{s}\" does not exist."))?,
            (None, Some(ip)) => st
                .subnets_of(network)
                .find(|s| s.cidr.contains(&ip))
                .ok_or_else(|| format!("No subnet of the network contains {ip}."))?,
            (None, None) => st
                .subnets_of(network)
                .next()
                .ok_or("The network has no subnet.")?,
        };
        if subnet.network != network {
            return Err(format!(
                "Subnet \"{}\" is not part of network \"{network}\".",
                subnet.uuid
            ));
        }
        let ip = match a.address {
            Some(ip) => {
                if !subnet.cidr.contains(&ip)
                    || ip == subnet.cidr.network()
                    || Some(ip) == subnet.gateway_address
                {
                    return Err(format!("{ip} is not a valid IP for the specified subnet."));
                }
                let mine = keep.is_some_and(|k| k.addresses.iter().any(|x| x.address == ip));
                if !mine && self.taken_by_other(ip) {
                    return Err(format!("The address {ip} is already in use."));
                }
                ip
            }
            None => keep
                .and_then(|k| k.addresses.iter().find(|x| x.subnet == subnet.uuid))
                .map(|x| x.address)
                .or_else(|| st.allocate_private(subnet, &self.chosen))
                .ok_or_else(|| format!("Subnet {} is full.", subnet.cidr))?,
        };
        self.chosen.push(ip);
        Ok(private_address(subnet, ip))
    }
}

fn public_address(zone: &str, name: &str, a: IpAddr) -> Address {
    match a {
        IpAddr::V4(v4) => {
            let net = IpNet::new(IpAddr::V4(v4), 22).map(|n| n.trunc()).ok();
            let gateway = net.and_then(|n| match n.network() {
                IpAddr::V4(base) => Some(IpAddr::V4(std::net::Ipv4Addr::from(u32::from(base) + 1))),
                IpAddr::V6(_) => None,
            });
            Address {
                version: 4,
                address: a,
                prefix_length: 22,
                gateway,
                reverse_ptr: name.to_string(),
                subnet: public_subnet_uuid(zone, 4),
            }
        }
        IpAddr::V6(_) => Address {
            version: 6,
            address: a,
            prefix_length: 64,
            gateway: "fe80::1".parse().ok(),
            reverse_ptr: name.to_string(),
            subnet: public_subnet_uuid(zone, 6),
        },
    }
}

fn private_address(subnet: &crate::resources::networks::Subnet, a: IpAddr) -> Address {
    Address {
        version: if a.is_ipv4() { 4 } else { 6 },
        address: a,
        prefix_length: subnet.cidr.prefix_len(),
        gateway: subnet.gateway_address,
        reverse_ptr: String::new(),
        subnet: subnet.uuid,
    }
}

/// Everything needed to insert a server, from the API or from an admin seed.
#[derive(Debug, Clone)]
pub struct NewServer {
    pub uuid: Option<Uuid>,
    pub name: String,
    pub flavor: String,
    pub image: String,
    pub zone: String,
    pub interfaces: Vec<InterfaceSpec>,
    pub use_ipv6: bool,
    pub volume_size_gb: i64,
    pub extra_volumes: Vec<(String, i64)>,
    pub server_groups: Vec<Uuid>,
    pub tags: Tags,
    /// `None`: boot through `changing` like an API-created server; `Some`: settled already.
    pub settled: Option<Power>,
}

/// Inserts a server after checking its references; nothing changes on error.
pub fn insert_server(st: &mut State, now: Time, timing_s: f64, new: NewServer) -> ApiResult<Uuid> {
    let custom_image = crate::model::custom_images::server_image(st, now, &new.image, &new.zone)?;
    let interfaces = build_interfaces(
        st,
        &new.zone,
        &new.name,
        &new.interfaces,
        new.use_ipv6,
        &[],
        None,
    )
    .map_err(|m| ApiError::field("interfaces", m))?;
    let uuid = new.uuid.unwrap_or_else(|| st.ids.new_uuid());
    if st.servers.contains_key(&uuid) {
        return Err(ApiError::field(
            "uuid",
            "A server with this UUID already exists.",
        ));
    }
    if 1 + new.extra_volumes.len() > crate::model::volumes::MAX_VOLUMES_PER_SERVER {
        return Err(ApiError::detail(crate::model::volumes::ATTACH_LIMIT));
    }
    let (power, changing_until) = match new.settled {
        Some(p) => (p, None),
        None => (Power::Running, Some(now + delta_from_secs(timing_s))),
    };
    st.servers.insert(
        uuid,
        Server {
            uuid,
            name: new.name,
            zone: new.zone,
            flavor: new.flavor,
            image: match &custom_image {
                Some(c) => c.slug.clone().unwrap_or_else(|| c.uuid.to_string()),
                None => new.image,
            },
            custom_image,
            interfaces,
            volumes: Vec::new(),
            server_groups: new.server_groups,
            tags: new.tags,
            created_at: now,
            power,
            changing_until,
        },
    );
    if let Some(s) = st.servers.get(&uuid) {
        let (name, zone) = (s.name.clone(), s.zone.clone());
        crate::model::volumes::create_server_volumes(
            st,
            now,
            uuid,
            &name,
            &zone,
            new.volume_size_gb,
            &new.extra_volumes,
        );
    }
    let transitions: Vec<(Time, bool)> = match changing_until {
        Some(ready) => vec![(now, false), (ready, power == Power::Running)],
        None => vec![(now, power == Power::Running)],
    };
    if let Some(s) = st.servers.get(&uuid) {
        let (name, addresses) = (s.name.clone(), s.addresses());
        st.dataplane
            .record_host(uuid, &name, addresses, now, &transitions);
        // A settled server (seed file, admin API) already existed: nobody created it now.
        if changing_until.is_some() {
            project_logs::record(st, now, project_logs::Action::ServerCreate, uuid, &name);
        }
    }
    Ok(uuid)
}

/// The changeable fields of a server (`None`: unchanged); interfaces already built.
#[derive(Debug, Default)]
pub struct ServerPatch {
    pub name: Option<String>,
    pub flavor: Option<String>,
    pub interfaces: Option<Vec<Interface>>,
    pub tags: Option<Tags>,
}

/// Applies a PATCH. A flavor change passes through `changing` for `action_s`.
pub fn update_server(
    st: &mut State,
    id: Uuid,
    now: Time,
    action_s: f64,
    patch: ServerPatch,
) -> ApiResult<()> {
    let server = st.servers.get_mut(&id).ok_or(ApiError::NotFound)?;
    if let Some(n) = patch.name {
        server.name = n;
    }
    if let Some(f) = patch.flavor
        && f != server.flavor
    {
        server.flavor = f;
        server.changing_until = Some(now + delta_from_secs(action_s));
    }
    if let Some(i) = patch.interfaces {
        server.interfaces = i;
    }
    if let Some(t) = patch.tags {
        server.tags = t;
    }
    let (name, addresses, changing) = (
        server.name.clone(),
        server.addresses(),
        server.changing_until,
    );
    // A flavor change passes through `changing` (the server is stopped anyway).
    let transitions: Vec<(Time, bool)> = match changing {
        Some(t) if t > now => vec![(now, false)],
        _ => Vec::new(),
    };
    if transitions.is_empty() {
        st.dataplane.set_host_addresses(id, &name, addresses);
    } else {
        st.dataplane
            .record_host(id, &name, addresses, now, &transitions);
    }
    Ok(())
}

/// Deletes a server: its addresses stop answering at once; its root volume is deleted, its
/// other volumes are detached. Refused while its root volume has snapshots [INF].
pub fn delete_server(st: &mut State, id: Uuid, now: Time) -> ApiResult<()> {
    if !st.servers.contains_key(&id) {
        return Err(ApiError::NotFound);
    }
    crate::model::volumes::check_server_delete(st, id, now)?;
    let server = st.servers.shift_remove(&id).ok_or(ApiError::NotFound)?;
    // The root volume goes with the server, the other volumes stay, detached [INF].
    crate::model::volumes::release_server_volumes(st, id);
    st.dataplane
        .record_host(id, &server.name, server.addresses(), now, &[(now, false)]);
    project_logs::record(
        st,
        now,
        project_logs::Action::ServerDelete,
        id,
        &server.name,
    );
    // Floating IPs stay, unassigned (they outlive their target).
    for fip in st.floating_ips.values_mut() {
        if fip.server == Some(id) {
            fip.server = None;
        }
    }
    Ok(())
}

/// A power action of `POST /v1/servers/{uuid}/{start,stop,reboot}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerAction {
    Start,
    Stop,
    Reboot,
}

impl PowerAction {
    pub fn parse(s: &str) -> Option<PowerAction> {
        match s {
            "start" => Some(PowerAction::Start),
            "stop" => Some(PowerAction::Stop),
            "reboot" => Some(PowerAction::Reboot),
            _ => None,
        }
    }

    /// The power state the server ends in.
    fn target(self) -> Power {
        match self {
            PowerAction::Start | PowerAction::Reboot => Power::Running,
            PowerAction::Stop => Power::Stopped,
        }
    }

    fn logged(self) -> project_logs::Action {
        match self {
            PowerAction::Start => project_logs::Action::ServerStart,
            PowerAction::Stop => project_logs::Action::ServerStop,
            PowerAction::Reboot => project_logs::Action::ServerReboot,
        }
    }
}

/// Start, stop or reboot: `changing` for `action_s`, then the action's power state.
pub fn power_action(
    st: &mut State,
    id: Uuid,
    now: Time,
    action_s: f64,
    action: PowerAction,
) -> ApiResult<()> {
    let target = action.target();
    let server = st.servers.get_mut(&id).ok_or(ApiError::NotFound)?;
    server.power = target;
    let ready = now + delta_from_secs(action_s);
    server.changing_until = Some(ready);
    let (name, addresses) = (server.name.clone(), server.addresses());
    // Stop, start and reboot all interrupt service at once; start and reboot answer again
    // once the transition is over.
    st.dataplane.record_host(
        id,
        &name,
        addresses,
        now,
        &[(now, false), (ready, target == Power::Running)],
    );
    project_logs::record(st, now, action.logged(), id, &name);
    Ok(())
}
