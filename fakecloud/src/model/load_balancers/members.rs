//! Pool members.

use super::{Verb, change, describe_member};
use crate::clock::Time;
use crate::config::Timing;
use crate::dataplane::{Health, health_at, member_health};
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, NamedStub, State, SubnetStub, Tags, TimeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub uuid: Uuid,
    pub pool: Uuid,
    pub name: String,
    pub enabled: bool,
    pub protocol_port: u16,
    pub monitor_port: Option<u16>,
    pub address: IpAddr,
    pub subnet: Uuid,
    pub tags: Tags,
    pub created_at: Time,
}

impl Member {
    /// `no_monitor` without a health monitor on the pool; `changing` until `up_threshold`
    /// checks at `delay_s` have run since the member or the monitor appeared; then `up` when
    /// the backend answers, `down` when it does not.
    pub fn monitor_status(&self, st: &State, now: Time) -> &'static str {
        let has_monitor = st.health_monitors.values().any(|m| m.pool == self.pool);
        let lb = st.pools.get(&self.pool).map(|p| p.load_balancer);
        let health = lb
            .and_then(|lb| st.dataplane.lbs.get(&lb))
            .map(|h| health_at(&member_health(&st.dataplane, h, self.uuid, now), now))
            .unwrap_or(Health::Absent);
        health.api_status(has_monitor)
    }

    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> MemberView<'a> {
        let lb = ctx.st.pools.get(&self.pool).map(|p| p.load_balancer);
        MemberView {
            href: MemberHref {
                base: ctx.base,
                pool: self.pool,
                member: self.uuid,
            },
            uuid: self.uuid,
            name: &self.name,
            enabled: self.enabled,
            pool: ctx.pool_ref(self.pool),
            load_balancer: lb.map(|l| ctx.load_balancer_ref(l)),
            protocol_port: self.protocol_port,
            monitor_port: self.monitor_port,
            address: self.address,
            subnet: ctx.subnet_ref(self.subnet),
            monitor_status: self.monitor_status(ctx.st, ctx.now),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// A member as the API shows it, serialized from borrows (the CCM lists every pool's
/// members on each reconcile).
#[derive(Serialize)]
pub struct MemberView<'a> {
    pub href: MemberHref<'a>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub enabled: bool,
    pub pool: NamedStub<'a>,
    pub load_balancer: Option<NamedStub<'a>>,
    pub protocol_port: u16,
    pub monitor_port: Option<u16>,
    pub address: IpAddr,
    pub subnet: SubnetStub<'a>,
    pub monitor_status: &'static str,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

/// A member's URL, under its pool's.
pub struct MemberHref<'a> {
    pub base: &'a str,
    pub pool: Uuid,
    pub member: Uuid,
}

impl Serialize for MemberHref<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use crate::model::store::HrefId as _;
        let mut url = String::with_capacity(self.base.len() + 110);
        url.push_str(self.base);
        url.push_str("/v1/load-balancers/pools/");
        self.pool.push_to(&mut url);
        url.push_str("/members/");
        self.member.push_to(&mut url);
        s.serialize_str(&url)
    }
}

/// Why `address` cannot be a member of `pool` on `subnet` and `port`: outside the subnet,
/// or (unless `allow_duplicates`) a second member for the same address and port.
pub fn member_address_error(
    st: &State,
    pool: Uuid,
    address: IpAddr,
    subnet: Option<Uuid>,
    port: Option<u16>,
    allow_duplicates: bool,
) -> Option<String> {
    if let Some(s) = subnet.and_then(|s| st.subnets.get(&s))
        && !s.cidr.contains(&address)
    {
        return Some(format!(
            "{address} is not a valid IP for the specified subnet."
        ));
    }
    if let Some(port) = port
        && !allow_duplicates
        && st
            .members
            .of_pool(pool)
            .any(|m| m.address == address && m.protocol_port == port)
    {
        return Some(format!(
            "The pool already has a member for {address} port {port}."
        ));
    }
    None
}

/// A member to create; pool and subnet are known to exist.
pub struct NewMember {
    pub pool: Uuid,
    pub name: String,
    pub enabled: bool,
    pub protocol_port: u16,
    pub monitor_port: Option<u16>,
    pub address: IpAddr,
    pub subnet: Uuid,
    pub tags: Tags,
}

pub fn create_member(
    st: &mut State,
    now: Time,
    timing: &Timing,
    new: NewMember,
) -> ApiResult<Uuid> {
    let uuid = st.ids.new_uuid();
    change(st, now, timing, Verb::Create, describe_member, uuid, |st| {
        st.members.insert(Member {
            uuid,
            pool: new.pool,
            name: new.name,
            enabled: new.enabled,
            protocol_port: new.protocol_port,
            monitor_port: new.monitor_port,
            address: new.address,
            subnet: new.subnet,
            tags: new.tags,
            created_at: now,
        });
        Ok(uuid)
    })
}

/// The changeable fields of a member (`None`: unchanged).
#[derive(Debug, Default)]
pub struct MemberPatch {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub tags: Option<Tags>,
}

/// Member `id` of `pool`, if it is one.
pub fn member_of(st: &State, pool: Uuid, id: Uuid) -> Option<&Member> {
    st.members.get(&id).filter(|m| m.pool == pool)
}

pub fn update_member(
    st: &mut State,
    pool: Uuid,
    id: Uuid,
    now: Time,
    timing: &Timing,
    patch: MemberPatch,
) -> ApiResult<()> {
    let verb = Verb::update_if(patch.enabled.is_some());
    change(st, now, timing, verb, describe_member, id, |st| {
        let member = st
            .members
            .get_mut(&id)
            .filter(|m| m.pool == pool)
            .ok_or(ApiError::NotFound)?;
        if let Some(n) = patch.name {
            member.name = n;
        }
        if let Some(e) = patch.enabled {
            member.enabled = e;
        }
        if let Some(t) = patch.tags {
            member.tags = t;
        }
        Ok(())
    })
}

pub fn delete_member(
    st: &mut State,
    pool: Uuid,
    id: Uuid,
    now: Time,
    timing: &Timing,
) -> ApiResult<()> {
    change(st, now, timing, Verb::Delete, describe_member, id, |st| {
        if member_of(st, pool, id).is_none() {
            return Err(ApiError::NotFound);
        }
        st.members.remove(&id);
        Ok(())
    })
}
