//! The in-memory store: every resource kind in insertion order, plus address allocation and
//! the rendering context shared by all resource modules.

use crate::clock::{Time, format_time};
use crate::model::{
    buckets::Bucket,
    custom_images::{CustomImage, CustomImageImport, Download},
    floating_ips::FloatingIp,
    load_balancers::{HealthMonitor, Listener, LoadBalancer, Member, Pool},
    networks::{Network, Subnet},
    objects_users::ObjectsUser,
    routers::Router,
    server_groups::ServerGroup,
    servers::Server,
    volume_snapshots::VolumeSnapshot,
    volumes::Volume,
};
use indexmap::IndexMap;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use uuid::Uuid;

pub type Tags = BTreeMap<String, String>;

/// Public address ranges fakecloud hands out. They do not overlap, so an address tells
/// what it belongs to when a human reads a dump. The operator's real ranges are not known
/// to us; these only look alike.
pub mod ranges {
    pub const SERVER_V4: &str = "185.98.120.0/22";
    pub const SERVER_V6: &str = "2a06:c01:1:1::/64";
    pub const VIP_V4: &str = "5.102.148.0/22";
    pub const VIP_V6: &str = "2a06:c01:1:2::/64";
    pub const FLOATING_V4: &str = "45.132.236.0/22";
    pub const FLOATING_V6: &str = "2a06:c01:1:3::/64";
    /// /56 floating networks are carved out of this /40.
    pub const FLOATING_V6_NETWORKS: &str = "2a06:c02::/40";
    /// Internet gateway addresses of routers (one IPv4 address each).
    pub const ROUTER_GATEWAY_V4: &str = "185.98.124.0/22";
    /// Subnet of automatically created private networks (every network is isolated, so
    /// the same CIDR can be reused).
    pub const AUTO_SUBNET: &str = "172.16.0.0/24";
    /// Resolvers a subnet gets when `dns_servers` is omitted or null (the real ones are not
    /// documented; two entries is what the SDK tests assert).
    pub const DEFAULT_DNS: [&str; 2] = ["5.102.144.101", "5.102.144.102"];
}

/// Fixed identities of the per-zone public network and its two subnets. They appear in
/// server interfaces but not in `/v1/networks`, as on the real API.
pub fn public_network_uuid(zone: &str) -> Uuid {
    Uuid::new_v5(
        &Uuid::NAMESPACE_URL,
        format!("fakecloud:public:{zone}").as_bytes(),
    )
}

pub fn public_subnet_uuid(zone: &str, version: u8) -> Uuid {
    Uuid::new_v5(
        &Uuid::NAMESPACE_URL,
        format!("fakecloud:public:{zone}:v{version}").as_bytes(),
    )
}

/// The synthetic subnet public VIPs of load balancers in `zone` live in.
pub fn vip_subnet_uuid(zone: &str, version: u8) -> Uuid {
    Uuid::new_v5(
        &Uuid::NAMESPACE_URL,
        format!("fakecloud:vip:{zone}:v{version}").as_bytes(),
    )
}

/// Everything fakecloud knows about the account.
///
/// The collections a load balancer's data plane depends on (servers, floating IPs, load
/// balancers and what is under them, the data-plane history) are private to
/// `crate::model`, whose functions record every change on the data plane: the handlers,
/// the admin API and other crates (`scenarios`) read them through the accessors below and
/// cannot change them any other way (backend declarations have `backends_mut`).
///
/// Each collection is dumped as a JSON array in creation order (not an object keyed by ID):
/// tools that sort object keys would otherwise reorder lists on a dump/restore round trip.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct State {
    #[serde(with = "as_list")]
    pub(in crate::model) servers: IndexMap<Uuid, Server>,
    #[serde(with = "as_list")]
    pub server_groups: IndexMap<Uuid, ServerGroup>,
    #[serde(with = "as_list")]
    pub networks: IndexMap<Uuid, Network>,
    #[serde(with = "as_list")]
    pub subnets: IndexMap<Uuid, Subnet>,
    #[serde(with = "as_list")]
    pub(in crate::model) floating_ips: IndexMap<IpAddr, FloatingIp>,
    #[serde(with = "as_list")]
    pub(in crate::model) load_balancers: IndexMap<Uuid, LoadBalancer>,
    #[serde(with = "as_list")]
    pub(in crate::model) pools: IndexMap<Uuid, Pool>,
    pub(in crate::model) members: Members,
    #[serde(with = "as_list")]
    pub(in crate::model) listeners: IndexMap<Uuid, Listener>,
    #[serde(with = "as_list")]
    pub(in crate::model) health_monitors: IndexMap<Uuid, HealthMonitor>,
    /// Volumes, root volumes of servers included (absent from dumps made before volumes
    /// were modelled: empty).
    #[serde(default, with = "as_list")]
    pub(in crate::model) volumes: IndexMap<Uuid, Volume>,
    #[serde(default, with = "as_list")]
    pub(in crate::model) volume_snapshots: IndexMap<Uuid, VolumeSnapshot>,
    /// Objects users, keyed by their hex `id` (absent from older dumps: empty).
    #[serde(with = "as_list", default)]
    pub(in crate::model) objects_users: IndexMap<String, ObjectsUser>,
    /// Routers with their interfaces (absent from older dumps: empty).
    #[serde(default, with = "as_list")]
    pub(in crate::model) routers: IndexMap<Uuid, Router>,
    /// Object storage buckets, registered through the admin API and keyed by name (absent
    /// from older dumps: empty).
    #[serde(default, with = "as_list")]
    pub(in crate::model) buckets: IndexMap<String, Bucket>,
    /// Custom image imports, failed ones included (absent from older dumps: empty).
    #[serde(default, with = "as_list")]
    pub(in crate::model) custom_image_imports: IndexMap<Uuid, CustomImageImport>,
    /// Custom images, also those whose import is still running (see `CustomImage::visible`).
    #[serde(default, with = "as_list")]
    pub(in crate::model) custom_images: IndexMap<Uuid, CustomImage>,
    /// How URLs answer the simulated image downloads (`/_fake/downloads`), keyed by URL.
    #[serde(default, with = "as_list")]
    pub(in crate::model) downloads: IndexMap<String, Download>,
    /// The project log, oldest first (absent from older dumps: empty).
    #[serde(default)]
    pub(in crate::model) project_log: Vec<crate::model::project_logs::Entry>,
    #[serde(default)]
    pub(in crate::model) dataplane: crate::dataplane::DataPlane,
    /// Where new UUIDs come from (not part of a dump: a restore keeps the running one).
    #[serde(skip)]
    pub ids: Ids,
}

/// The source of new resource UUIDs: random, or a sequence drawn from a seed so that a run
/// hands out the same UUIDs each time (`Config::id_seed`).
#[derive(Debug, Clone, Default)]
pub struct Ids(Option<u64>);

impl Ids {
    pub fn seeded(seed: u64) -> Ids {
        Ids(Some(seed))
    }

    /// A new version 4 UUID.
    pub fn new_uuid(&mut self) -> Uuid {
        let Some(state) = &mut self.0 else {
            return Uuid::new_v4();
        };
        let mut draw = || {
            // SplitMix64.
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let bytes = (u128::from(draw()) << 64 | u128::from(draw())).to_be_bytes();
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }
}

/// A record that knows its own key in the store.
pub trait Keyed {
    type Key: std::hash::Hash + Eq;
    fn key(&self) -> Self::Key;
}

macro_rules! keyed_by_uuid {
    ($($t:ty),*) => {$(
        impl Keyed for $t {
            type Key = Uuid;
            fn key(&self) -> Uuid {
                self.uuid
            }
        }
    )*};
}
keyed_by_uuid!(
    Server,
    ServerGroup,
    Network,
    Subnet,
    LoadBalancer,
    Pool,
    Member,
    Listener,
    HealthMonitor,
    Volume,
    VolumeSnapshot,
    CustomImageImport,
    CustomImage
);

impl Keyed for Download {
    type Key = String;
    fn key(&self) -> String {
        self.url.clone()
    }
}

impl Keyed for ObjectsUser {
    type Key = String;
    fn key(&self) -> String {
        self.id.clone()
    }
}

impl Keyed for FloatingIp {
    type Key = IpAddr;
    fn key(&self) -> IpAddr {
        self.address()
    }
}

/// Serde adapter: an `IndexMap` of records as a list of records.
mod as_list {
    use super::Keyed;
    use indexmap::IndexMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<K, V: Serialize, S: Serializer>(
        map: &IndexMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.values())
    }

    pub fn deserialize<'de, V, D>(d: D) -> Result<IndexMap<V::Key, V>, D::Error>
    where
        V: Keyed + Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let list = Vec::<V>::deserialize(d)?;
        Ok(list.into_iter().map(|v| (v.key(), v)).collect())
    }
}

/// Pool members in creation order, with an index by pool, so that a pool's member list and
/// a load balancer's configuration (taken at every write) cost that pool's members, not
/// every member of the account (100,000 at 1,000 Services on 100 nodes). Dumped as a list.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(from = "Vec<Member>", into = "Vec<Member>")]
pub struct Members {
    by_uuid: IndexMap<Uuid, Member>,
    by_pool: BTreeMap<Uuid, indexmap::IndexSet<Uuid>>,
}

impl Members {
    pub fn get(&self, id: &Uuid) -> Option<&Member> {
        self.by_uuid.get(id)
    }

    /// For changes of anything but the member's pool, which never changes.
    pub fn get_mut(&mut self, id: &Uuid) -> Option<&mut Member> {
        self.by_uuid.get_mut(id)
    }

    pub fn insert(&mut self, m: Member) {
        self.by_pool.entry(m.pool).or_default().insert(m.uuid);
        self.by_uuid.insert(m.uuid, m);
    }

    pub fn remove(&mut self, id: &Uuid) -> Option<Member> {
        let m = self.by_uuid.shift_remove(id)?;
        if let Some(of) = self.by_pool.get_mut(&m.pool) {
            of.shift_remove(id);
        }
        Some(m)
    }

    /// Removes every member of `pool`.
    pub fn remove_pool(&mut self, pool: &Uuid) {
        if let Some(ids) = self.by_pool.remove(pool) {
            self.by_uuid.retain(|id, _| !ids.contains(id));
        }
    }

    /// Every member, in creation order.
    pub fn values(&self) -> impl Iterator<Item = &Member> {
        self.by_uuid.values()
    }

    /// The members of `pool`, in creation order.
    pub fn of_pool(&self, pool: Uuid) -> impl Iterator<Item = &Member> {
        self.by_pool
            .get(&pool)
            .into_iter()
            .flatten()
            .filter_map(|id| self.by_uuid.get(id))
    }
}

impl From<Vec<Member>> for Members {
    fn from(list: Vec<Member>) -> Members {
        let mut members = Members::default();
        for m in list {
            members.insert(m);
        }
        members
    }
}

impl From<Members> for Vec<Member> {
    fn from(m: Members) -> Vec<Member> {
        m.by_uuid.into_values().collect()
    }
}

impl State {
    /// An empty store that keeps `ids` (a reset must not restart a seeded ID sequence).
    pub fn empty_with_ids(ids: Ids) -> State {
        State {
            ids,
            ..State::default()
        }
    }

    pub fn servers(&self) -> &IndexMap<Uuid, Server> {
        &self.servers
    }

    pub fn floating_ips(&self) -> &IndexMap<IpAddr, FloatingIp> {
        &self.floating_ips
    }

    pub fn load_balancers(&self) -> &IndexMap<Uuid, LoadBalancer> {
        &self.load_balancers
    }

    pub fn pools(&self) -> &IndexMap<Uuid, Pool> {
        &self.pools
    }

    pub fn members(&self) -> &Members {
        &self.members
    }

    pub fn listeners(&self) -> &IndexMap<Uuid, Listener> {
        &self.listeners
    }

    pub fn health_monitors(&self) -> &IndexMap<Uuid, HealthMonitor> {
        &self.health_monitors
    }

    pub fn volumes(&self) -> &IndexMap<Uuid, Volume> {
        &self.volumes
    }

    /// Every snapshot record, also those whose deletion is over but not purged yet (see
    /// `VolumeSnapshot::gone`).
    pub fn volume_snapshots(&self) -> &IndexMap<Uuid, VolumeSnapshot> {
        &self.volume_snapshots
    }

    pub fn objects_users(&self) -> &IndexMap<String, ObjectsUser> {
        &self.objects_users
    }

    pub fn project_log(&self) -> &[crate::model::project_logs::Entry] {
        &self.project_log
    }

    pub fn custom_image_imports(&self) -> &IndexMap<Uuid, CustomImageImport> {
        &self.custom_image_imports
    }

    /// Every image record, also those whose import has not succeeded yet (see
    /// `CustomImage::visible`).
    pub fn custom_images(&self) -> &IndexMap<Uuid, CustomImage> {
        &self.custom_images
    }

    pub fn downloads(&self) -> &IndexMap<String, Download> {
        &self.downloads
    }

    pub fn routers(&self) -> &IndexMap<Uuid, Router> {
        &self.routers
    }

    pub fn buckets(&self) -> &IndexMap<String, Bucket> {
        &self.buckets
    }

    pub fn dataplane(&self) -> &crate::dataplane::DataPlane {
        &self.dataplane
    }

    /// Forgets the data-plane history before `t` (see
    /// [`crate::dataplane::DataPlane::forget_before`]).
    pub fn forget_history_before(&mut self, t: Time) {
        self.dataplane.forget_before(t);
    }

    /// Backend behaviour declarations (`/_fake/backends`): how addresses answer, which is
    /// not a load-balancer change.
    pub fn backends_mut(&mut self) -> &mut crate::dataplane::Backends {
        &mut self.dataplane.backends
    }

    /// Every public address in use (servers, VIPs, floating IPs, router gateways), for
    /// allocation.
    pub fn public_addresses_in_use(&self) -> HashSet<IpAddr> {
        let mut used = HashSet::new();
        for s in self.servers.values() {
            for i in &s.interfaces {
                used.extend(i.addresses.iter().map(|a| a.address));
            }
        }
        for lb in self.load_balancers.values() {
            used.extend(lb.vip_addresses.iter().map(|v| v.address));
        }
        used.extend(self.floating_ips.keys().copied());
        used.extend(self.routers.values().filter_map(Router::gateway_address));
        used
    }

    /// Addresses taken inside one private subnet (server and router interfaces, VIPs).
    pub fn subnet_addresses_in_use(&self, subnet: Uuid) -> HashSet<IpAddr> {
        let mut used = HashSet::new();
        for s in self.servers.values() {
            for i in &s.interfaces {
                used.extend(
                    i.addresses
                        .iter()
                        .filter(|a| a.subnet == subnet)
                        .map(|a| a.address),
                );
            }
        }
        for lb in self.load_balancers.values() {
            used.extend(
                lb.vip_addresses
                    .iter()
                    .filter(|v| v.subnet == subnet)
                    .map(|v| v.address),
            );
        }
        for r in self.routers.values() {
            used.extend(r.addresses_in(subnet));
        }
        used
    }

    /// Picks a free public address in `range`; `also_taken` are addresses chosen earlier in
    /// the same request and not stored yet.
    pub fn allocate_public(&self, range: &str, also_taken: &[IpAddr]) -> Option<IpAddr> {
        let net: IpNet = range.parse().ok()?;
        let used = self.public_addresses_in_use();
        first_free(net, 10, |a| used.contains(&a) || also_taken.contains(&a))
    }

    /// Picks a free /56 for a global or regional IPv6 floating network.
    pub fn allocate_v6_network(&self) -> Option<IpNet> {
        let parent: IpNet = ranges::FLOATING_V6_NETWORKS.parse().ok()?;
        let taken: HashSet<IpAddr> = self.floating_ips.keys().copied().collect();
        parent
            .subnets(56)
            .ok()?
            .skip(1)
            .take(65_536)
            .find(|n| !taken.contains(&n.network()))
    }

    /// Picks a free host address in a private subnet, skipping the gateway and `also_taken`
    /// (addresses chosen earlier in the same request).
    pub fn allocate_private(&self, subnet: &Subnet, also_taken: &[IpAddr]) -> Option<IpAddr> {
        let mut used = self.subnet_addresses_in_use(subnet.uuid);
        used.extend(also_taken.iter().copied());
        if let Some(gw) = subnet.gateway_address {
            used.insert(gw);
        }
        first_free(subnet.cidr, 1, |a| used.contains(&a))
    }

    /// Subnets of a network, in creation order.
    pub fn subnets_of(&self, network: Uuid) -> impl Iterator<Item = &Subnet> {
        self.subnets.values().filter(move |s| s.network == network)
    }
}

/// The first host address of `net` at or after `offset` that `taken` rejects not,
/// excluding the network and (IPv4) broadcast addresses. Bounded, never loops forever.
pub fn first_free(net: IpNet, offset: u128, taken: impl Fn(IpAddr) -> bool) -> Option<IpAddr> {
    const MAX_SCAN: u128 = 1 << 20;
    match net {
        IpNet::V4(n) => {
            let base = u32::from(n.network()) as u128;
            let size = 1u128 << (32 - n.prefix_len());
            (offset.max(1)..size.saturating_sub(1).min(MAX_SCAN))
                .map(|i| IpAddr::from(std::net::Ipv4Addr::from((base + i) as u32)))
                .find(|a| !taken(*a))
        }
        IpNet::V6(n) => {
            let base = u128::from(n.network());
            let host_bits = 128 - n.prefix_len() as u32;
            let size = if host_bits >= 128 {
                u128::MAX
            } else {
                1u128 << host_bits
            };
            (offset.max(1)..size.min(MAX_SCAN))
                .map(|i| IpAddr::from(std::net::Ipv6Addr::from(base + i)))
                .find(|a| !taken(*a))
        }
    }
}

/// `{base}/v1/{collection}/{id}`, serialized straight into the output (lists render many).
pub struct Href<'a, I> {
    pub base: &'a str,
    pub collection: &'static str,
    pub id: I,
}

/// An id that goes into an href as it is (a UUID in its hyphenated lower-case form).
pub trait HrefId {
    fn push_to(&self, out: &mut String);
}

impl HrefId for Uuid {
    fn push_to(&self, out: &mut String) {
        out.push_str(self.hyphenated().encode_lower(&mut Uuid::encode_buffer()));
    }
}

impl HrefId for &str {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl<I: HrefId> Serialize for Href<'_, I> {
    // One string built by pushes: answers render an href per resource and per stub, and
    // `collect_str` over `format_args!` went through the formatter piece by piece.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut url = String::with_capacity(self.base.len() + self.collection.len() + 42);
        url.push_str(self.base);
        url.push_str("/v1/");
        url.push_str(self.collection);
        url.push('/');
        self.id.push_to(&mut url);
        s.serialize_str(&url)
    }
}

/// The stub of a named resource (`href`, `uuid`, `name`).
#[derive(Serialize)]
pub struct NamedStub<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
}

/// A CIDR held either by a subnet record or by a built-in range.
pub enum CidrText {
    Net(IpNet),
    Static(&'static str),
}

impl Serialize for CidrText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CidrText::Net(n) => s.collect_str(n),
            CidrText::Static(t) => s.serialize_str(t),
        }
    }
}

#[derive(Serialize)]
pub struct SubnetStub<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub cidr: CidrText,
}

/// A timestamp in the API's format, serialized without an intermediate String.
pub struct TimeText(Time);

impl Serialize for TimeText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&api_time(self.0))
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`, written digit by digit: every resource in every answer
/// carries a timestamp, and chrono's `format` parses its pattern on each call.
pub fn api_time(t: Time) -> String {
    use chrono::{Datelike, Timelike};
    fn digits(out: &mut String, n: u32, width: u32) {
        for k in (0..width).rev() {
            let d = (n / 10u32.pow(k)) % 10;
            out.push(char::from(b'0' + d as u8));
        }
    }
    let mut out = String::with_capacity(27);
    digits(&mut out, u32::try_from(t.year()).unwrap_or(0), 4);
    for (n, before) in [
        (t.month(), '-'),
        (t.day(), '-'),
        (t.hour(), 'T'),
        (t.minute(), ':'),
        (t.second(), ':'),
    ] {
        out.push(before);
        digits(&mut out, n, 2);
    }
    out.push('.');
    // A leap second shows as second 59 with 1 000 000+ µs in chrono: keep six digits.
    digits(&mut out, (t.nanosecond() / 1_000) % 1_000_000, 6);
    out.push('Z');
    out
}

/// What rendering a resource needs: the externally visible base URL, the virtual time, and
/// the store (stubs embed names of other resources, which may change).
pub struct Ctx<'a> {
    pub base: &'a str,
    pub now: Time,
    pub st: &'a State,
    pub timing: &'a crate::config::Timing,
    /// How timestamps in answers show virtual instants (wall-clock mapping under a scaled
    /// clock, see `crate::clock::Timestamps`).
    pub stamp: crate::clock::Stamp,
}

impl Ctx<'_> {
    pub fn href(&self, collection: &str, id: impl std::fmt::Display) -> String {
        format!("{}/v1/{collection}/{id}", self.base)
    }

    pub fn href_of<I>(&self, collection: &'static str, id: I) -> Href<'_, I> {
        Href {
            base: self.base,
            collection,
            id,
        }
    }

    pub fn network_ref(&self, uuid: Uuid) -> NamedStub<'_> {
        NamedStub {
            href: self.href_of("networks", uuid),
            uuid,
            name: self
                .st
                .networks
                .get(&uuid)
                .map(|n| n.name.as_str())
                .unwrap_or("public"),
        }
    }

    pub fn subnet_ref(&self, uuid: Uuid) -> SubnetStub<'_> {
        SubnetStub {
            href: self.href_of("subnets", uuid),
            uuid,
            cidr: match self.st.subnets.get(&uuid) {
                Some(s) => CidrText::Net(s.cidr),
                None => CidrText::Static(public_subnet_cidr(uuid)),
            },
        }
    }

    /// A pool as other resources name it (an empty name once it is gone).
    pub fn pool_ref(&self, uuid: Uuid) -> NamedStub<'_> {
        NamedStub {
            href: self.href_of("load-balancers/pools", uuid),
            uuid,
            name: self.st.pools.get(&uuid).map_or("", |p| p.name.as_str()),
        }
    }

    /// A load balancer as other resources name it (an empty name once it is gone).
    pub fn load_balancer_ref(&self, uuid: Uuid) -> NamedStub<'_> {
        NamedStub {
            href: self.href_of("load-balancers", uuid),
            uuid,
            name: self
                .st
                .load_balancers
                .get(&uuid)
                .map_or("", |l| l.name.as_str()),
        }
    }

    pub fn zone_stub(zone: &str) -> Value {
        json!({"slug": zone})
    }

    pub fn network_stub(&self, uuid: Uuid) -> Value {
        match self.st.networks.get(&uuid) {
            Some(n) => {
                json!({"href": self.href("networks", uuid), "uuid": uuid.to_string(), "name": n.name})
            }
            None => {
                json!({"href": self.href("networks", uuid), "uuid": uuid.to_string(), "name": "public"})
            }
        }
    }

    pub fn subnet_stub(&self, uuid: Uuid) -> Value {
        serde_json::to_value(self.subnet_ref(uuid)).unwrap_or(Value::Null)
    }

    pub fn server_stub(&self, uuid: Uuid) -> Value {
        let mut v = json!({"href": self.href("servers", uuid), "uuid": uuid.to_string()});
        if let Some(s) = self.st.servers.get(&uuid) {
            v["name"] = json!(s.name);
        }
        v
    }

    pub fn load_balancer_stub(&self, uuid: Uuid) -> Value {
        serde_json::to_value(self.load_balancer_ref(uuid)).unwrap_or(Value::Null)
    }

    /// A timestamp of an answer, as JSON.
    pub fn time(&self, t: Time) -> Value {
        Value::String(format_time(self.stamp.apply(t)))
    }

    /// A timestamp of an answer, serialized without an intermediate String.
    pub fn stamp(&self, t: Time) -> TimeText {
        TimeText(self.stamp.apply(t))
    }
}

/// The CIDR of a synthetic public subnet, found by its UUID. The table is built once: these
/// stubs are rendered for every address of every server in every list.
fn public_subnet_cidr(uuid: Uuid) -> &'static str {
    static TABLE: std::sync::LazyLock<Vec<(Uuid, &'static str)>> = std::sync::LazyLock::new(|| {
        let mut t = Vec::new();
        for (zone, _) in crate::catalogue::ZONES {
            t.push((public_subnet_uuid(zone, 4), ranges::SERVER_V4));
            t.push((public_subnet_uuid(zone, 6), ranges::SERVER_V6));
            t.push((vip_subnet_uuid(zone, 4), ranges::VIP_V4));
            t.push((vip_subnet_uuid(zone, 6), ranges::VIP_V6));
        }
        t
    });
    TABLE
        .iter()
        .find(|(u, _)| *u == uuid)
        .map(|(_, c)| *c)
        .unwrap_or("")
}

/// Whether `tags` satisfies every `tag:` filter (an empty value means "key present").
pub fn tags_match(tags: &Tags, filters: &[(String, String)]) -> bool {
    filters.iter().all(|(k, v)| match tags.get(k) {
        Some(actual) => v.is_empty() || actual == v,
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_hrefs_render_as_the_formatter_did() {
        use chrono::{TimeZone, Utc};
        for (secs, nanos) in [
            (0, 0),
            (1_767_225_600, 1_000),
            (1_767_225_600 + 86_399, 999_999_999),
            (4_102_444_799, 123_456_789),
        ] {
            let t = Utc.timestamp_opt(secs, nanos).single().expect("a time");
            let old = t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
            assert_eq!(api_time(t), old);
        }
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let href = Href {
            base: "http://fake",
            collection: "servers",
            id,
        };
        assert_eq!(
            serde_json::to_value(&href).expect("json"),
            json!(format!("http://fake/v1/servers/{id}"))
        );
    }

    #[test]
    fn members_are_listed_per_pool_in_creation_order_and_dump_as_a_list() {
        let member = |n: u128, pool: u128| -> Member {
            serde_json::from_value(json!({
                "uuid": Uuid::from_u128(n), "pool": Uuid::from_u128(pool), "name": format!("m{n}"),
                "enabled": true, "protocol_port": 80, "monitor_port": null,
                "address": "10.0.0.1", "subnet": Uuid::from_u128(99), "tags": {},
                "created_at": "2026-01-01T00:00:00Z",
            }))
            .expect("member")
        };
        let mut m = Members::default();
        for (n, pool) in [(1, 10), (2, 20), (3, 10), (4, 20), (5, 10)] {
            m.insert(member(n, pool));
        }
        let of = |m: &Members, pool: u128| -> Vec<u128> {
            m.of_pool(Uuid::from_u128(pool))
                .map(|x| x.uuid.as_u128())
                .collect()
        };
        assert_eq!(of(&m, 10), [1, 3, 5]);
        assert!(m.remove(&Uuid::from_u128(3)).is_some());
        assert_eq!(of(&m, 10), [1, 5]);
        m.remove_pool(&Uuid::from_u128(20));
        assert_eq!(of(&m, 20), Vec::<u128>::new());
        let all: Vec<u128> = m.values().map(|x| x.uuid.as_u128()).collect();
        assert_eq!(all, [1, 5]);
        let back: Members =
            serde_json::from_value(serde_json::to_value(&m).expect("dump")).expect("restore");
        assert_eq!(of(&back, 10), [1, 5]);
    }

    #[test]
    fn first_free_skips_network_and_taken() {
        let net: IpNet = "10.0.0.0/30".parse().expect("cidr");
        let a = first_free(net, 1, |_| false).expect("free");
        assert_eq!(a.to_string(), "10.0.0.1");
        let b = first_free(net, 1, |a| a.to_string() == "10.0.0.1").expect("free");
        assert_eq!(b.to_string(), "10.0.0.2");
        // .3 is broadcast: nothing left once .1 and .2 are taken.
        assert!(first_free(net, 1, |a| a.to_string() != "10.0.0.3").is_none());
    }

    #[test]
    fn tag_filters_and_semantics() {
        let tags: Tags = [("env".to_string(), "prod".to_string())].into();
        assert!(tags_match(&tags, &[("env".into(), "prod".into())]));
        assert!(tags_match(&tags, &[("env".into(), "".into())]));
        assert!(!tags_match(&tags, &[("env".into(), "dev".into())]));
        assert!(!tags_match(
            &tags,
            &[("env".into(), "".into()), ("team".into(), "".into())]
        ));
        assert!(tags_match(&tags, &[]));
    }

    #[test]
    fn v6_network_allocation_is_a_56() {
        let st = State::default();
        let net = st.allocate_v6_network().expect("free /56");
        assert_eq!(net.prefix_len(), 56);
    }
}
