//! Listeners: a protocol and port of a load balancer, forwarded to a pool.

use super::{Verb, change, describe_listener};
use crate::clock::Time;
use crate::config::Timing;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, Href, NamedStub, State, Tags, TimeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listener {
    pub uuid: Uuid,
    pub name: String,
    pub pool: Option<Uuid>,
    pub load_balancer: Uuid,
    pub protocol: String,
    pub protocol_port: u16,
    pub allowed_cidrs: Vec<String>,
    pub timeout_client_data_ms: i64,
    pub timeout_member_connect_ms: i64,
    pub timeout_member_data_ms: i64,
    pub tags: Tags,
    pub created_at: Time,
}

impl Listener {
    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> ListenerView<'a> {
        ListenerView {
            href: ctx.href_of("load-balancers/listeners", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            pool: self.pool.map(|p| ctx.pool_ref(p)),
            load_balancer: ctx.load_balancer_ref(self.load_balancer),
            protocol: &self.protocol,
            protocol_port: self.protocol_port,
            allowed_cidrs: &self.allowed_cidrs,
            timeout_client_data_ms: self.timeout_client_data_ms,
            timeout_member_connect_ms: self.timeout_member_connect_ms,
            timeout_member_data_ms: self.timeout_member_data_ms,
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// A listener as the API shows it, serialized from borrows (lists render every listener).
#[derive(Serialize)]
pub struct ListenerView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub pool: Option<NamedStub<'a>>,
    pub load_balancer: NamedStub<'a>,
    pub protocol: &'a str,
    pub protocol_port: u16,
    pub allowed_cidrs: &'a [String],
    pub timeout_client_data_ms: i64,
    pub timeout_member_connect_ms: i64,
    pub timeout_member_data_ms: i64,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

/// Refuses a second listener with the same protocol and port on one load balancer, and
/// a protocol that does not fit the pool: `(field, message)` for each problem.
pub fn listener_errors(
    st: &State,
    lb: Uuid,
    pool: Option<Uuid>,
    protocol: &str,
    port: u16,
    except: Option<Uuid>,
) -> Vec<(&'static str, String)> {
    let mut errors = Vec::new();
    if st.listeners.values().any(|l| {
        Some(l.uuid) != except
            && l.load_balancer == lb
            && l.protocol == protocol
            && l.protocol_port == port
    }) {
        errors.push((
            "protocol_port",
            format!("The load balancer already has a {protocol} listener on port {port}."),
        ));
    }
    if let Some(p) = pool.and_then(|p| st.pools.get(&p))
        && (protocol == "udp") != (p.protocol == "udp")
    {
        errors.push((
            "protocol",
            format!("A {protocol} listener cannot use a {} pool.", p.protocol),
        ));
    }
    errors
}

/// A listener to create; the pool is known to exist and `load_balancer` is its.
pub struct NewListener {
    pub name: String,
    pub pool: Uuid,
    pub load_balancer: Uuid,
    pub protocol: String,
    pub protocol_port: u16,
    pub allowed_cidrs: Vec<String>,
    pub timeout_client_data_ms: i64,
    pub timeout_member_connect_ms: i64,
    pub timeout_member_data_ms: i64,
    pub tags: Tags,
}

pub fn create_listener(
    st: &mut State,
    now: Time,
    timing: &Timing,
    new: NewListener,
) -> ApiResult<Uuid> {
    let uuid = st.ids.new_uuid();
    change(
        st,
        now,
        timing,
        Verb::Create,
        describe_listener,
        uuid,
        |st| {
            st.listeners.insert(
                uuid,
                Listener {
                    uuid,
                    name: new.name,
                    pool: Some(new.pool),
                    load_balancer: new.load_balancer,
                    protocol: new.protocol,
                    protocol_port: new.protocol_port,
                    allowed_cidrs: new.allowed_cidrs,
                    timeout_client_data_ms: new.timeout_client_data_ms,
                    timeout_member_connect_ms: new.timeout_member_connect_ms,
                    timeout_member_data_ms: new.timeout_member_data_ms,
                    tags: new.tags,
                    created_at: now,
                },
            );
            Ok(uuid)
        },
    )
}

/// The changeable fields of a listener (`None`: unchanged).
#[derive(Debug, Default)]
pub struct ListenerPatch {
    pub name: Option<String>,
    pub protocol: Option<String>,
    pub protocol_port: Option<u16>,
    pub allowed_cidrs: Option<Vec<String>>,
    pub timeout_client_data_ms: Option<i64>,
    pub timeout_member_connect_ms: Option<i64>,
    pub timeout_member_data_ms: Option<i64>,
    pub tags: Option<Tags>,
}

pub fn update_listener(
    st: &mut State,
    id: Uuid,
    now: Time,
    timing: &Timing,
    patch: ListenerPatch,
) -> ApiResult<()> {
    let verb = Verb::update_if(
        patch.protocol.is_some()
            || patch.protocol_port.is_some()
            || patch.allowed_cidrs.is_some()
            || patch.timeout_client_data_ms.is_some()
            || patch.timeout_member_connect_ms.is_some()
            || patch.timeout_member_data_ms.is_some(),
    );
    change(st, now, timing, verb, describe_listener, id, |st| {
        let l = st.listeners.get_mut(&id).ok_or(ApiError::NotFound)?;
        if let Some(v) = patch.name {
            l.name = v;
        }
        if let Some(v) = patch.protocol {
            l.protocol = v;
        }
        if let Some(v) = patch.protocol_port {
            l.protocol_port = v;
        }
        if let Some(v) = patch.allowed_cidrs {
            l.allowed_cidrs = v;
        }
        if let Some(v) = patch.timeout_client_data_ms {
            l.timeout_client_data_ms = v;
        }
        if let Some(v) = patch.timeout_member_connect_ms {
            l.timeout_member_connect_ms = v;
        }
        if let Some(v) = patch.timeout_member_data_ms {
            l.timeout_member_data_ms = v;
        }
        if let Some(t) = patch.tags {
            l.tags = t;
        }
        Ok(())
    })
}

pub fn delete_listener(st: &mut State, id: Uuid, now: Time, timing: &Timing) -> ApiResult<()> {
    change(st, now, timing, Verb::Delete, describe_listener, id, |st| {
        st.listeners.shift_remove(&id).ok_or(ApiError::NotFound)?;
        Ok(())
    })
}
