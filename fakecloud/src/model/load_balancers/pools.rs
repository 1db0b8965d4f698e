//! Pools of a load balancer.

use super::{Verb, change, describe_pool, remove_pool};
use crate::clock::Time;
use crate::config::Timing;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, Href, NamedStub, State, Tags, TimeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pool {
    pub uuid: Uuid,
    pub name: String,
    pub load_balancer: Uuid,
    pub algorithm: String,
    pub protocol: String,
    pub tags: Tags,
    pub created_at: Time,
}

impl Pool {
    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> PoolView<'a> {
        PoolView {
            href: ctx.href_of("load-balancers/pools", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            load_balancer: ctx.load_balancer_ref(self.load_balancer),
            algorithm: &self.algorithm,
            protocol: &self.protocol,
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// A pool as the API shows it, serialized from borrows (lists render every pool).
#[derive(Serialize)]
pub struct PoolView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub load_balancer: NamedStub<'a>,
    pub algorithm: &'a str,
    pub protocol: &'a str,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

/// A pool to create; the load balancer is known to exist.
pub struct NewPool {
    pub name: String,
    pub load_balancer: Uuid,
    pub algorithm: String,
    pub protocol: String,
    pub tags: Tags,
}

pub fn create_pool(st: &mut State, now: Time, timing: &Timing, new: NewPool) -> ApiResult<Uuid> {
    let uuid = st.ids.new_uuid();
    change(st, now, timing, Verb::Create, describe_pool, uuid, |st| {
        st.pools.insert(
            uuid,
            Pool {
                uuid,
                name: new.name,
                load_balancer: new.load_balancer,
                algorithm: new.algorithm,
                protocol: new.protocol,
                tags: new.tags,
                created_at: now,
            },
        );
        Ok(uuid)
    })
}

/// The changeable fields of a pool (`None`: unchanged).
#[derive(Debug, Default)]
pub struct PoolPatch {
    pub name: Option<String>,
    pub tags: Option<Tags>,
}

pub fn update_pool(
    st: &mut State,
    id: Uuid,
    now: Time,
    timing: &Timing,
    patch: PoolPatch,
) -> ApiResult<()> {
    change(st, now, timing, Verb::Relabel, describe_pool, id, |st| {
        let pool = st.pools.get_mut(&id).ok_or(ApiError::NotFound)?;
        if let Some(n) = patch.name {
            pool.name = n;
        }
        if let Some(t) = patch.tags {
            pool.tags = t;
        }
        Ok(())
    })
}

/// Deletes a pool with its members, its health monitor and the listeners that use it.
pub fn delete_pool(st: &mut State, id: Uuid, now: Time, timing: &Timing) -> ApiResult<()> {
    change(st, now, timing, Verb::Delete, describe_pool, id, |st| {
        if !st.pools.contains_key(&id) {
            return Err(ApiError::NotFound);
        }
        remove_pool(st, id);
        Ok(())
    })
}
